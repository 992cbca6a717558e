#!/usr/bin/env bash
# A/B TLS: nginx TLS on core 0 (own tmp dir, port 18444), binaries alternated on core 1.
# usage: [WRK=1] [CONNS="64 1"] REPS=4 DUR=3 run.sh binA binB   (pocket-bench binaries; prints req/s and CPU µs per request)
set -euo pipefail
REPS="${REPS:-4}"; DUR="${DUR:-3}"; PORT=18444; CONNS="${CONNS:-64 1}"
A="$1"; B="$2"
TMP="$(mktemp -d /tmp/tlsab.XXXXXX)"
cleanup() { if [ -f "$TMP/nginx.pid" ]; then kill "$(cat "$TMP/nginx.pid")"; fi; sleep 0.3; rm -rf "$TMP"; }
trap cleanup EXIT
. "$(dirname "$0")/../../../../scripts/lib/tls-nginx.sh"
tls_nginx_start "$TMP" "$PORT"
sleep 0.3
URL="https://localhost:$PORT/"
for rep in $(seq 1 "$REPS"); do
  for c in $CONNS; do
    if [ -n "${WRK:-}" ]; then
      w=$(taskset -c 1 wrk -t1 -c$c -d${DUR}s "$URL" | awk '/Requests\/sec/{print $2}')
      echo "rep $rep c=$c wrk $w"
    fi
    for name in A B; do
      bin=$A; [ $name = B ] && bin=$B
      out=$(taskset -c 1 perf stat -x, -e task-clock -- "$bin" --url "$URL" --cacert "$TMP/ca.pem" --connections $c --requests 1000000000 --max-seconds "$DUR" --json 2>"$TMP/perf.txt")
      python3 - "$rep" "$c" "$name" "$TMP/perf.txt" <<PY
import json,sys
d=json.loads('''$out''')
rep,c,name,perf=sys.argv[1:]
ms=float(open(perf).read().split(',')[0])
print(f"rep {rep} c={c} {name} {d['rps']:.0f} cpu_us/req {ms*1000/d['requests']:.2f}")
PY
    done
  done
done
