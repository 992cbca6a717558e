#!/usr/bin/env bash
# The TLS performance run: nginx with TLS on loopback (one worker on core 0),
# clients on core 1, wrk and pocket-bench side by side, REPS repetitions,
# medians; then handshake CPU per new connection against a bare OpenSSL loop
# (scripts/tls-handshake/handshake_loop.c), both resuming sessions.
#   REPS=5 DUR=5 N=2000 scripts/bench-tls.sh
#   JSON=docs/results/tls.json scripts/bench-tls.sh   # also every wrk and pocket run as
#                                                    # JSON for the charts (scripts/bench-charts.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib/bench-common.sh
. scripts/lib/bench-json.sh
REPS="${REPS:-5}"; DUR="${DUR:-5}"; N="${N:-2000}"; PORT="${PORT:-18443}"; JSON="${JSON:-}"
scripts/setup.sh >/dev/null
TMP="$(mktemp -d /tmp/pocket-bench-tls.XXXXXX)"
# nginx daemonizes here: its master's PID is in its pid file; stopped by that PID.
. scripts/lib/processes.sh
cleanup() { if [ -f "$TMP/nginx.pid" ]; then stop_pids "$(cat "$TMP/nginx.pid")"; fi; rm -rf "$TMP"; }
trap cleanup EXIT
. scripts/lib/tls-nginx.sh
tls_nginx_start "$TMP" "$PORT"
swift build -c release --product pocket-bench >/dev/null
B="$(swift build -c release --show-bin-path)/pocket-bench"
clang -O2 scripts/tls-handshake/handshake_loop.c -lssl -lcrypto -o "$TMP/handshake_loop"
URL="https://localhost:$PORT/"
sleep 0.3
median() { sort -g | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
if [ -n "$JSON" ]; then
  mkdir -p "$(dirname "$JSON")"
  : >"$JSON"
  NGINX_VERSION="$("$(command -v nginx || echo /usr/sbin/nginx)" -v 2>&1 | sed 's/.*nginx\///')"
  WRK_VERSION="$({ wrk --version 2>&1 || true; } | head -1 | awk '{ print $2 }' | sed 's|.*/||; s/-.*//')"
fi
declare -A R
for rep in $(seq 1 "$REPS"); do
  for c in 64 1; do
    taskset -c 1 wrk -t1 -c$c -d${DUR}s --latency "$URL" >"$TMP/wrk.out"
    w=$(awk '/Requests\/sec/{print $2}' "$TMP/wrk.out")
    taskset -c 1 "$B" --url "$URL" --cacert "$TMP/ca.pem" --connections $c --requests 1000000000 --max-seconds "$DUR" --json \
      >"$TMP/pocket.json"
    p=$(python3 -c "import json,sys; print(json.load(sys.stdin)['rps'])" <"$TMP/pocket.json")
    if [ -n "$JSON" ]; then
      json_tag "$(wrk_json "$TMP/wrk.out")" "\"scenario\":\"TLS\",\"rep\":$rep,\"connections\":$c,\"machine\":$(json_machine),\
\"label\":$(json_str "wrk $WRK_VERSION"),\"versions\":{\"wrk\":$(json_str "$WRK_VERSION"),\"nginx\":$(json_str "$NGINX_VERSION")},\
\"command\":$(json_str "wrk -t1 -c$c -d${DUR}s --latency $URL")" >>"$JSON"
      json_tag "$(cat "$TMP/pocket.json")" "\"scenario\":\"TLS\",\"rep\":$rep" >>"$JSON"
    fi
    echo "rep $rep c=$c wrk $w pocket $p"
    R[w$c]+="$w "; R[p$c]+="$p "
  done
  h=$(taskset -c 1 "$TMP/handshake_loop" localhost "$PORT" "$TMP/ca.pem" "$N" | python3 -c "import json,sys; print(json.load(sys.stdin)['cpu_us_per_conn'])")
  q=$(taskset -c 1 "$B" --url "$URL" --cacert "$TMP/ca.pem" --close --on-loop --connections 1 --requests "$N" --warmup 100 --json \
      | python3 -c "import json,sys; print(json.load(sys.stdin)['cpu_us_per_req'])")
  echo "rep $rep handshake cpu µs/connection: openssl-loop $h pocket $q"
  R[h]+="$h "; R[q]+="$q "
done
echo
echo "Medians of $REPS repetitions of ${DUR} s (req/s) and of $N new connections each (handshake CPU):"
echo
echo "| measure | wrk, or a blocking OpenSSL loop | Pocket | Pocket ÷ |"
echo "|---|---:|---:|---:|"
for c in 64 1; do
  w=$(echo ${R[w$c]} | tr ' ' '\n' | median); p=$(echo ${R[p$c]} | tr ' ' '\n' | median)
  printf '| requests/s, %s connection%s | %.0f | %.0f | %.2f |\n' "$c" "$([ "$c" = 1 ] || echo s)" "$w" "$p" \
    "$(python3 -c "print($p/$w)")"
done
h=$(echo ${R[h]} | tr ' ' '\n' | median); q=$(echo ${R[q]} | tr ' ' '\n' | median)
printf '| CPU µs per new resumed connection | %.0f | %.0f | %.2f |\n' "$h" "$q" "$(python3 -c "print($q/$h)")"
echo
taskset -c 1 "$B" --url "$URL" --cacert "$TMP/ca.pem" --close --connections 1 --requests 1000 --warmup 0 --json \
  | python3 -c "import json,sys; d=json.load(sys.stdin); print(f\"1,000 successive new connections: {d['new_connections']} new, {d['tls_resumed']} resumed ({100*d['tls_resumed']/max(1,d['new_connections']):.1f}%)\")"
