#!/usr/bin/env bash
# Paired rounds of the eleventh session (docs/BENCHMARKS.md): nginx (1 worker,
# core 0, port 18190) started here and stopped by its PID; each round runs
# every client once, 3 s, on core 1; one line per client and round.
#   ROUNDS=8 DUR=3 C=64 paired.sh "wrk|wrk||" "name|/path/to/pocket-bench|ENV=..|--pipeline" ...
# engine-bench and kernel_floor (Benchmarks/engine-bench/) take the same
# command line: "engine|/path/to/engine-bench||--io-backend io_uring",
# "floor|/path/to/kernel_floor||--mode uring" (no p99 for the floor).
#   python3 summarize.py LOG     # medians of the per-round ratios to wrk
set -uo pipefail
cd "$(dirname "$0")/../../../.."
. scripts/lib/bench-common.sh
. scripts/lib/nginx-conf.sh
log() { echo "$*" >&2; }
TMP=$(mktemp -d /tmp/pocket-paired.XXXXXX)
NGINX=/usr/sbin/nginx; PORT=18190
bench_hello_conf "$NGINX" "$PORT" 0
bench_start_nginx "$NGINX" "$TMP/nginx.conf" "$PORT" 0 || exit 1
trap 'bench_stop_nginx; rm -rf "$TMP"' EXIT
C=${C:-64}
for r in $(seq "${ROUNDS:-5}"); do
  for spec in "$@"; do
    IFS='|' read -r name bin envs args <<<"$spec"
    if [ "$bin" = wrk ]; then
      out=$(/usr/bin/time -f '%U %S' taskset -c 1 wrk -t1 -c"$C" -d"${DUR:-3}"s --latency "http://127.0.0.1:$PORT/" 2>&1)
      rps=$(echo "$out" | awk '/Requests\/sec/{print $2}'); t=$(echo "$out" | tail -1)
      reqs=$(echo "$out" | awk '/requests in/{print $1}')
      p99=$(echo "$out" | awk '$1 == "99%" { v = $2; u = 1; if (v ~ /ms$/) u = 1000; else if (v ~ /us$/) u = 1; else if (v ~ /s$/) u = 1e6; sub(/[a-z]+$/, "", v); printf "%.1f", v * u }')
      echo "$r $name rps=$rps cpu=$(echo "$t $reqs" | awk '{printf "%.2f", ($1+$2)*1e6/$3}') p99=$p99"
    else
      j=$(env $envs taskset -c 1 "$bin" --url "http://127.0.0.1:$PORT/" --connections "$C" --requests 1000000000 \
            --max-seconds "${DUR:-3}" --json $args 2>/dev/null)
      echo "$r $name $(echo "$j" | python3 -c 'import json,sys; d=json.load(sys.stdin); print("rps=%.0f cpu=%.2f p99=%s" % (d["rps"], d["cpu_us_per_req"], d.get("p99_us") or ""))')"
    fi
  done
done
