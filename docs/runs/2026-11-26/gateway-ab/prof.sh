#!/usr/bin/env bash
# The gateway A/B harness of docs/BENCHMARKS.md (gateway section, 2026-11-26):
# nginx on core 1, one gateway on core 0, wrk on core 1 (ports 18490/18491),
# one wrk run while perf watches the gateway; prints wrk's figures, each
# thread's CPU seconds and µs per request (from /proc/PID/task/*/stat), the
# gateway's, and perf's output.
# prof.sh VARIANT CONNS DUR MODE(stat|record|sched|strace|trecord|ttrace|none) [BIN]
# trecord: perf record of one thread (TCOMM, a part of its name: default-qos,
# Swift's pool); ttrace: system calls and context switches per request of
# the threads named in TCOMMS (perf stat -t).
# Environment: EXTRA (gateway arguments), PREFIX (a command before taskset),
# PEV (more perf stat events), OUT (where perf data goes, /tmp), FREQ
# (trecord's sampling rate, 1999).
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
for t in /proc/$GW/task/*; do echo "$(basename $t) $(cat $t/comm | tr " " _) $(awk "{ sub(/^.*\\) /, \"\"); print \$12 + \$13 }" $t/stat)"; done > $TMP/t0
case $MODE in
 stat) perf stat -e context-switches,cpu-migrations,task-clock${PEV:-} -p $GW -- sleep $D 2>$TMP/perf.txt & PP=$! ;;
 record) perf record -F ${FREQ:-2000} ${PGRAPH--g} -p $GW -o ${OUT:-/tmp}/perf-$V.data -- sleep $D 2>$TMP/perf.txt & PP=$! ;;
 sched) perf record -e sched:sched_switch -e sched:sched_wakeup -g -p $GW -o ${OUT:-/tmp}/sched-$V${TAG:-}.data -- sleep $D 2>$TMP/perf.txt & PP=$! ;;
 strace) timeout $D strace -c -f -p $GW -o $TMP/perf.txt & PP=$! ;;
 trecord) TID=$(grep -l "${TCOMM:-default-qos}" /proc/$GW/task/*/comm | head -1 | cut -d/ -f5); perf record -F ${FREQ:-1999} -g -t $TID -o ${OUT:-/tmp}/perf-$V-t.data -- sleep $D 2>$TMP/perf.txt & PP=$! ;;
 ttrace) for TC in ${TCOMMS:-default-qos pocket-loop floor-loop SGLTN-1-#1}; do TID=$(grep -l -- "$TC" /proc/$GW/task/*/comm | head -1 | cut -d/ -f5); [ -n "$TID" ] && perf stat -e 'syscalls:sys_enter_write,syscalls:sys_enter_read,syscalls:sys_enter_futex,syscalls:sys_enter_epoll_wait,syscalls:sys_enter_sendto,syscalls:sys_enter_recvfrom,syscalls:sys_enter_writev,syscalls:sys_enter_io_uring_enter,context-switches' -t $TID -- sleep $D 2>$TMP/perf-$TC.txt & done; PP=$! ;;
 *) PP="" ;;
esac
taskset -c 1 wrk -t1 -c$C -d${D}s --latency http://127.0.0.1:$GP/ >$TMP/wrk.out 2>&1
[ -n "$PP" ] && wait $PP
for t in /proc/$GW/task/*; do echo "$(basename $t) $(cat $t/comm | tr " " _) $(awk "{ sub(/^.*\\) /, \"\"); print \$12 + \$13 }" $t/stat)"; done > $TMP/t1
grep -E "Requests/sec|  99%|  50%|Non-2xx|errors" $TMP/wrk.out
rps=$(awk '/^Requests\/sec:/ { print $2 }' $TMP/wrk.out)
awk -v r=$rps -v d=$D 'NR==FNR{a[$1]=$3;next}{dt=($3-a[$1])/100; tot+=dt; if (dt>0) printf "  %-22s %.2f s  %.2f us/req\n",$2,dt,dt*1e6/(r*d)} END{printf "cpu_s=%.2f us/req=%.1f\n",tot,tot*1e6/(r*d)}' $TMP/t0 $TMP/t1
echo "threads: $(ls /proc/$GW/task | wc -l)"
[ "$MODE" = ttrace ] && { sleep 0.5; for f in $TMP/perf-*.txt; do echo "-- $f"; grep -E "syscalls|context" $f | awk -v r=$rps -v d=$D '{ printf "   %-40s %8.3f /req\n", $2, $1/(r*d) }'; done; }
[ "$MODE" != none ] && [ "$MODE" != ttrace ] && cat $TMP/perf.txt | grep -v '^$' | head -40
stop_pids $GW
bench_stop_nginx
rm -rf $TMP
