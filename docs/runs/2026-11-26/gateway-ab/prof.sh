#!/usr/bin/env bash
# The gateway A/B harness of docs/BENCHMARKS.md (gateway section, 2026-11-26):
# nginx on core 1, one gateway on core 0, wrk on core 1 (ports 18490/18491),
# one wrk run while perf watches the gateway; prints wrk's figures, the
# gateway's CPU seconds and µs per request, and perf's output.
# prof.sh VARIANT CONNS DUR MODE(stat|record|sched|strace|none) [BIN]
# Environment: EXTRA (gateway arguments), PREFIX (a command before taskset),
# PEV (more perf stat events), OUT (where perf data goes, /tmp).
set -uo pipefail
cd "$(dirname "$0")/../../../.."
. scripts/lib/nginx-conf.sh
. scripts/lib/bench-common.sh
log() { echo "prof: $*" >&2; }
V=$1; C=$2; D=$3; MODE=$4; BIN=${5:-$PWD/Examples/Gateway/.build/release/gateway}
TMP=$(mktemp -d /tmp/gateway-ab.XXXX)
PORT=18490; GP=18491
bench_hello_conf /usr/sbin/nginx $PORT 1
bench_start_nginx /usr/sbin/nginx "$TMP/nginx.conf" $PORT 1 || exit 1
spawn_bg ${PREFIX:-} taskset -c 0 $BIN --client $V --port $GP --downstream http://127.0.0.1:$PORT/ ${EXTRA:-} >$TMP/gw.out 2>&1
GW=$SPAWNED_PID
for _ in $(seq 100); do curl -fsS -o /dev/null http://127.0.0.1:$GP/ 2>/dev/null && break; sleep 0.1; done
taskset -c 1 wrk -t1 -c64 -d1s http://127.0.0.1:$GP/ >/dev/null
t0=$(awk '{ sub(/^.*\) /, ""); print $12 + $13 }' /proc/$GW/stat)
case $MODE in
 stat) perf stat -e context-switches,cpu-migrations,task-clock${PEV:-} -p $GW -- sleep $D 2>$TMP/perf.txt & PP=$! ;;
 record) perf record -F 2000 -g -p $GW -o ${OUT:-/tmp}/perf-$V.data -- sleep $D 2>$TMP/perf.txt & PP=$! ;;
 sched) perf record -e sched:sched_switch -e sched:sched_wakeup -g -p $GW -o ${OUT:-/tmp}/sched-$V${TAG:-}.data -- sleep $D 2>$TMP/perf.txt & PP=$! ;;
 strace) timeout $D strace -c -f -p $GW -o $TMP/perf.txt & PP=$! ;;
 *) PP="" ;;
esac
taskset -c 1 wrk -t1 -c$C -d${D}s --latency http://127.0.0.1:$GP/ >$TMP/wrk.out 2>&1
[ -n "$PP" ] && wait $PP
t1=$(awk '{ sub(/^.*\) /, ""); print $12 + $13 }' /proc/$GW/stat)
grep -E "Requests/sec|  99%|  50%|Non-2xx|errors" $TMP/wrk.out
rps=$(awk '/^Requests\/sec:/ { print $2 }' $TMP/wrk.out)
awk -v a=$t0 -v b=$t1 -v r=$rps -v d=$D 'BEGIN{printf "cpu_s=%.2f us/req=%.1f\n",(b-a)/100,(b-a)/100*1e6/(r*d)}'
echo "threads: $(ls /proc/$GW/task | wc -l)"
[ "$MODE" != none ] && cat $TMP/perf.txt | grep -v '^$' | head -40
stop_pids $GW
bench_stop_nginx
rm -rf $TMP
