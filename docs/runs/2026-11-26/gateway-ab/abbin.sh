#!/usr/bin/env bash
# abbin.sh REPS "label|binary|variant|extra" ...: interleaved runs of
# gateway binaries (each under the benchmark lock, after waitquiet.sh), one
# line per run: req/s, p99, gateway CPU µs/request, context switches per
# request, the gateway's CPU seconds (C connections, DUR seconds).
cd "$(dirname "$0")"
R=$1; shift
for rep in $(seq $R); do
  for cfg in "$@"; do
    IFS='|' read -r label bin v e <<<"$cfg"
    ./waitquiet.sh 60 2>/dev/null
    out=$(EXTRA="$e" flock /work/tools/bench.lock ./prof.sh $v ${C:-64} ${DUR:-5} stat $bin 2>&1)
    rps=$(echo "$out" | awk '/Requests\/sec/{print $2}'); p99=$(echo "$out" | awk '/ 99%/{print $2}')
    us=$(echo "$out" | sed -n 's/.*us\/req=\([0-9.]*\).*/\1/p'); cpus=$(echo "$out" | sed -n "s/.*cpu_s=\([0-9.]*\).*/\1/p"); cs=$(echo "$out" | awk '/context-switches/{print $1}')
    echo "$rep $label c=${C:-64} rps=$rps p99=$p99 us/req=$us cs/req=$(awk -v c=$cs -v r=$rps -v d=${DUR:-5} 'BEGIN{printf "%.2f", c/(r*d)}') cpu_s=$cpus"
  done
done
