#!/usr/bin/env bash
# Issue 21's table: the epoll and io_uring backends side by side with wrk and
# libcurl (curl-bench, the multi interface), in one run. nginx from Debian
# (one worker) on core 0, every client on core 1; 64 and 1 connections; REPS
# repetitions interleaved (every other one in reverse order); medians; then
# system calls per request of each client from one `perf stat` run each.
# Two more rows since the thirteenth session (Benchmarks/engine-bench/): the C
# engine alone on io_uring (engine-bench, no Swift layer) and the kernel's
# floor (kernel_floor: a client doing nothing but the I/O, on a full ring and
# on epoll), so the table shows what the kernel leaves to win.
#   REPS=5 DUR=3 docs/runs/2026-11-26/backends-peers/run.sh [POCKET_BENCH]
# (POCKET_BENCH: a release pocket-bench; default .build-bench/release/pocket-bench)
set -euo pipefail
cd "$(dirname "$0")/../../../.."
REPS="${REPS:-5}"; DUR="${DUR:-3}"; PORT="${PORT:-18196}"
BIN="${1:-.build-bench/release/pocket-bench}"
[ -x "$BIN" ] || { echo "no pocket-bench at $BIN (swift build -c release --product pocket-bench --scratch-path .build-bench)" >&2; exit 2; }
TMP="$(mktemp -d /tmp/pocket-backends-peers.XXXXXX)"
log() { echo "backends-peers: $*" >&2; }
. scripts/lib/bench-common.sh
. scripts/lib/nginx-conf.sh
NGINX=/usr/sbin/nginx
cleanup() { bench_stop_nginx; rm -rf "$TMP"; }
trap cleanup EXIT
trap 'exit 130' INT TERM
cc -O2 Benchmarks/curl-bench/curl_bench.c -o "$TMP/curl-bench" -lcurl
cc -O2 -D_GNU_SOURCE -I Sources/CHTTPEngine/include -I Sources/CHTTPEngine Benchmarks/engine-bench/engine_bench.c \
  Sources/CHTTPEngine/*.c -lpthread -lz -ldeflate -lssl -lcrypto -luring -o "$TMP/engine-bench"
cc -O2 Benchmarks/engine-bench/kernel_floor.c -luring -o "$TMP/kernel_floor"
bench_hello_conf "$NGINX" "$PORT" 0
bench_start_nginx "$NGINX" "$TMP/nginx.conf" "$PORT" 0 || exit 1
URL="http://127.0.0.1:$PORT/"

# CLIENT's command line at C connections, in CMD.
client_cmd() {
  local client=$1 c=$2
  case "$client" in
    wrk) CMD=(wrk -t1 -c"$c" -d"${DUR}s" --latency "$URL") ;;
    libcurl) CMD=("$TMP/curl-bench" --url "$URL" --connections "$c" --requests 1000000000 --warmup $((c * 16)) --max-seconds "$DUR") ;;
    engine-*) CMD=("$TMP/engine-bench" --url "$URL" --connections "$c" --seconds "$DUR" --io-backend "${client#engine-}") ;;
    floor-*) CMD=("$TMP/kernel_floor" --port "$PORT" --connections "$c" --seconds "$DUR" --mode "${client#floor-}") ;;
    *) CMD=("$BIN" --url "$URL" --connections "$c" --requests 1000000000 --max-seconds "$DUR" --io-backend "${client#pocket-}" --json) ;;
  esac
}

# The requests CLIENT made at C connections (its warmup included), from its output OUT.
requests_made() {
  local client=$1 c=$2 out=$3
  case "$client" in
    wrk) awk '/ requests in / { print $1 }' "$out" ;;
    libcurl) echo $(( $(jget requests "$out") + c * 16 )) ;;
    engine-*|floor-*) jget requests_total "$out" ;;
    *) echo $(( $(jget requests "$out") + $(jget warmup "$out") )) ;;
  esac
}

# One run of CLIENT at C connections: "rps p99_us cpu_us_per_request".
run() {
  local client=$1 c=$2 out="$TMP/out" tf="$TMP/time"
  client_cmd "$client" "$c"
  /usr/bin/time -o "$tf" -f '%U %S' taskset -c 1 "${CMD[@]}" >"$out" 2>"$TMP/err"
  case "$client" in
    wrk) wrk_stats "$out" "$tf" | awk '{ print $1, $3, $4 }' ;;
    pocket-*|engine-*|floor-*) echo "$(jget rps "$out") $(jget p99_us "$out") $(jget cpu_us_per_req "$out")" ;;   # its measured phase
    libcurl) echo "$(jget rps "$out") $(jget p99_us "$out") $(awk -v n="$(requests_made "$client" "$c" "$out")" '{ printf "%.2f", ($1 + $2) * 1e6 / n }' "$tf")" ;;
  esac
}

CLIENTS=(wrk libcurl pocket-io_uring pocket-epoll engine-io_uring floor-uring floor-epoll)
echo "rep c client rps p99_us cpu_us_per_request"
for rep in $(seq "$REPS"); do
  order=("${CLIENTS[@]}")
  if [ $((rep % 2)) = 0 ]; then order=(); for ((i = ${#CLIENTS[@]} - 1; i >= 0; i--)); do order+=("${CLIENTS[i]}"); done; fi
  for c in 64 1; do
    for client in "${order[@]}"; do
      echo "$rep $c $client $(run "$client" "$c")" | tee -a "$TMP/all"
    done
  done
done

echo
echo "| c | client | req/s | ÷ wrk | ÷ libcurl | p99 µs | CPU µs/request | CPU ÷ wrk's |"
echo "|---|---|---:|---:|---:|---:|---:|---:|"
for c in 64 1; do
  declare -A R P U
  for client in "${CLIENTS[@]}"; do
    R[$client]=$(median $(awk -v c="$c" -v k="$client" '$2 == c && $3 == k { print $4 }' "$TMP/all"))
    P[$client]=$(median $(awk -v c="$c" -v k="$client" '$2 == c && $3 == k { print $5 }' "$TMP/all"))
    U[$client]=$(median $(awk -v c="$c" -v k="$client" '$2 == c && $3 == k { print $6 }' "$TMP/all"))
  done
  for client in "${CLIENTS[@]}"; do
    awk -v c="$c" -v k="$client" -v r="${R[$client]}" -v w="${R[wrk]}" -v l="${R[libcurl]}" -v p="${P[$client]}" \
        -v u="${U[$client]}" -v uw="${U[wrk]}" \
      'BEGIN { printf "| %s | %s | %.0f | %.2f | %.2f | %.0f | %.2f | %.2f |\n", c, k, r, (w > 0 ? r / w : 0), (l > 0 ? r / l : 0), p, u, (uw > 0 ? u / uw : 0) }'
  done
  unset R P U
done

echo
echo "system calls per request (perf stat -e 'syscalls:sys_enter_*', one run each, the counts over all requests made):"
for c in 64 1; do
  for client in "${CLIENTS[@]}"; do
    client_cmd "$client" "$c"
    taskset -c 1 perf stat -x, -e 'syscalls:sys_enter_*' -o "$TMP/stat" -- "${CMD[@]}" >"$TMP/out" 2>/dev/null
    n=$(requests_made "$client" "$c" "$TMP/out")
    printf '  c=%-3s %-16s' "$c" "$client"
    awk -F, -v n="$n" '$1 ~ /^[0-9]+$/ && $1 > 0 { sub("syscalls:sys_enter_", "", $3); if ($1 / n >= 0.005) { printf " %s %.3f", $3, $1 / n; t += $1 / n } }
                       END { printf "  (all %.2f)\n", t }' "$TMP/stat"
  done
done
