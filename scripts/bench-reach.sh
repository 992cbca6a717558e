#!/usr/bin/env bash
# Network reach beside libcurl: pocket-bench and curl-bench (libcurl's multi
# interface) against nginx from Debian over its Unix socket, through
# Debian's tinyproxy (forwarded http, CONNECT-tunnelled https), and new
# connections through the proxy against direct ones (the CONNECT setup
# cost). nginx and tinyproxy pinned to core 0, the clients to core 1;
# interleaved, REPS repetitions, medians. Everything it starts it stops by PID.
#
#   scripts/bench-reach.sh            # REPS=3 DUR=3
#   scripts/bench-reach.sh --quick    # REPS=1 DUR=2
#
# Environment: REPS, DUR seconds per run, PORT (18090; PORT+1 TLS, PORT+2
# tinyproxy), SERVER_CPU (0), CLIENT_CPU (1), SCRATCH (a swift build --scratch-path),
# ONLY=connect (only the CONNECT setup times: N=30 new https connections
# each with the pocket and curl commands, through the proxy and direct;
# POCKET names the pocket binary, default: the release build's).
set -euo pipefail

cd "$(dirname "$0")/.."
. scripts/lib/nginx-conf.sh
. scripts/lib/bench-common.sh

if [[ " $* " != *" --quick "* ]]; then
  REPS="${REPS:-3}" # brief by default: the machine is shared
  DUR="${DUR:-3}"
fi
bench_args bench-reach 2,14p "$@"
PORT="${PORT:-18090}"
TLS_PORT=$((PORT + 1))
PROXY_PORT=$((PORT + 2))
SERVER_CPU="${SERVER_CPU:-0}"
CLIENT_CPU="${CLIENT_CPU:-1}"
REQUESTS=1000000000

log() { echo "bench-reach: $*" >&2; }

need=()
bench_need_base
bench_need_libcurl
command -v tinyproxy >/dev/null 2>&1 || need+=(tinyproxy)
command -v openssl >/dev/null 2>&1 || need+=(openssl)
bench_install "${need[@]}"
bench_check_cpus

TMP="$(mktemp -d /tmp/pocket-bench-reach.XXXXXX)"
PROXY_PID=""
cleanup() {
  bench_stop_nginx
  if [ -n "$PROXY_PID" ]; then stop_pids "$PROXY_PID"; fi
  rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

BIN="$(bench_build_pocket_bench)" || exit 1
CURL_BENCH="$TMP/curl-bench"
log "building curl-bench"
cc -O2 Benchmarks/curl-bench/curl_bench.c -o "$CURL_BENCH" -lcurl

# nginx: the 13-byte answer on TCP, on a Unix socket, and over TLS (a
# certificate for localhost made here).
openssl req -x509 -newkey rsa:2048 -nodes -keyout "$TMP/key.pem" -out "$TMP/cert.pem" -days 1 \
  -subj /CN=localhost -addext subjectAltName=DNS:localhost >/dev/null 2>&1
SOCK="$TMP/nginx.sock"
{
  nginx_conf_prelude "$NGINX" "$TMP" "$SERVER_CPU"
  cat <<EOF2
    server {
        listen 127.0.0.1:$PORT;
        listen unix:$SOCK;
        listen 127.0.0.1:$TLS_PORT ssl;
        ssl_certificate $TMP/cert.pem;
        ssl_certificate_key $TMP/key.pem;
        location / {
            default_type text/plain;
            return 200 "Hello, World!";
        }
    }
}
EOF2
} >"$TMP/nginx.conf"
bench_start_nginx "$NGINX" "$TMP/nginx.conf" "$PORT" "$SERVER_CPU" || exit 1

cat >"$TMP/tinyproxy.conf" <<EOF2
Port $PROXY_PORT
Listen 127.0.0.1
Timeout 60
PidFile "$TMP/tinyproxy.pid"
LogFile "$TMP/tinyproxy.log"
LogLevel Warning
MaxClients 512
Allow 127.0.0.1
DisableViaHeader Yes
EOF2
log "starting tinyproxy on 127.0.0.1:$PROXY_PORT (core $SERVER_CPU)"
spawn_bg taskset -c "$SERVER_CPU" tinyproxy -d -c "$TMP/tinyproxy.conf" >"$TMP/tinyproxy.out" 2>&1
PROXY_PID=$SPAWNED_PID
for _ in $(seq 100); do
  (exec 3<>"/dev/tcp/127.0.0.1/$PROXY_PORT") 2>/dev/null && break
  sleep 0.1
done
PROXY="http://127.0.0.1:$PROXY_PORT"

# The CONNECT exchange from the command-line tools: time_appconnect -
# time_connect is TLS direct and CONNECT + TLS through the proxy (curl's
# definitions; pocket -w follows them); the medians' difference is CONNECT.
connect_setup() {
  local pocket="${POCKET:-$(dirname "$BIN")/pocket}" n="${N:-30}" tool via
  [ -x "$pocket" ] || { log "no pocket binary at $pocket (set POCKET)"; return 1; }
  echo
  echo "| tool | direct: TLS (ms, median of $n) | through tinyproxy: CONNECT + TLS | CONNECT |"
  echo "|---|---:|---:|---:|"
  for tool in pocket curl; do
    local cmd=("$pocket")
    [ "$tool" = curl ] && cmd=(curl)
    declare -A med=()
    for via in direct proxy; do
      local extra=(--noproxy '*')
      [ "$via" = proxy ] && extra=(-x "$PROXY")
      for _ in $(seq "$n"); do
        taskset -c "$CLIENT_CPU" "${cmd[@]}" -s -o /dev/null --cacert "$TMP/cert.pem" "${extra[@]}" \
          -w '%{time_connect} %{time_appconnect}\n' "https://localhost:$TLS_PORT/"
      done | awk '{printf "%.3f\n", ($2 - $1) * 1000}' | sort -n >"$TMP/$tool-$via.ms"
      med[$via]="$(awk '{a[NR]=$1} END {print a[int((NR + 1) / 2)]}' "$TMP/$tool-$via.ms")"
    done
    echo "| $tool | ${med[direct]} | ${med[proxy]} | $(awk -v a="${med[proxy]}" -v b="${med[direct]}" 'BEGIN {printf "%.3f", a - b}') |"
  done
}
if [ "${ONLY:-}" = connect ]; then
  connect_setup
  exit 0
fi

# "rps p50_us p99_us errors" of one run.
run() { # client connections args...
  local client="$1" c="$2" out="$TMP/run.out"
  shift 2
  local cmd
  if [ "$client" = pocket ]; then cmd=("$BIN" --json --requests "$REQUESTS"); else cmd=("$CURL_BENCH" --requests "$REQUESTS"); fi
  taskset -c "$CLIENT_CPU" "${cmd[@]}" --connections "$c" --warmup $((c * 16)) --max-seconds "$DUR" "$@" \
    >"$out" 2>"$TMP/run.err" || { cat "$out" "$TMP/run.err" >&2; return 1; }
  local bad=0
  [ "$client" = pocket ] && bad=$(jget bad_status "$out")
  echo "$(jget rps "$out") $(jget p50_us "$out") $(jget p99_us "$out") $(($(jget errors "$out") + bad))"
}

SCENARIOS=(
  "unix|--url http://localhost/ --unix-socket $SOCK"
  "proxy-http|--url http://127.0.0.1:$PORT/ --proxy $PROXY"
  "proxy-https|--url https://localhost:$TLS_PORT/ --proxy $PROXY --cacert $TMP/cert.pem"
  "new-tls-direct|--url https://localhost:$TLS_PORT/ --cacert $TMP/cert.pem --close"
  "new-tls-proxy|--url https://localhost:$TLS_PORT/ --proxy $PROXY --cacert $TMP/cert.pem --close"
)
declare -A RPS P50 P99 ERR
for rep in $(seq "$REPS"); do
  for s in "${SCENARIOS[@]}"; do
    name="${s%%|*}"
    read -r -a args <<<"${s#*|}"
    conns=(1 64)
    case "$name" in new-*) conns=(1) ;; esac
    for c in "${conns[@]}"; do
      for client in pocket curl; do
        key="$name $c $client"
        read -r rps p50 p99 err < <(run "$client" "$c" "${args[@]}")
        RPS[$key]+="$rps "
        P50[$key]+="$p50 "
        P99[$key]+="$p99 "
        ERR[$key]=$((${ERR[$key]:-0} + err))
        log "rep $rep: $key: $rps req/s, p50 ${p50} us, errors $err"
      done
    done
  done
done

echo
echo "| scenario | c | client | req/s (median of $REPS) | p50 µs | p99 µs | errors |"
echo "|---|---:|---|---:|---:|---:|---:|"
for s in "${SCENARIOS[@]}"; do
  name="${s%%|*}"
  for c in 1 64; do
    for client in pocket curl; do
      key="$name $c $client"
      [ -n "${RPS[$key]:-}" ] || continue
      # shellcheck disable=SC2086
      echo "| $name | $c | $client | $(median ${RPS[$key]}) | $(median ${P50[$key]}) | $(median ${P99[$key]}) | ${ERR[$key]} |"
    done
  done
done
connect_setup || true
echo
echo "nginx 1 worker and tinyproxy on core $SERVER_CPU, clients on core $CLIENT_CPU, DUR=${DUR}s, $(nproc) cores;" \
  "new-* rows: a new connection per request (TCP + CONNECT + TLS through the proxy; TCP + TLS direct)."
