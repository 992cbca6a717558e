#!/usr/bin/env bash
# Pocket and its peers on the same machine, in the same run, on the same
# workload: nginx from Debian on loopback (one worker pinned to core 0)
# answering a 13-byte body, every client pinned to core 1: wrk, curl-bench
# (libcurl's multi interface), AsyncHTTPClient 1.37.0 and URLSession
# (Benchmarks/Peers, run by pocket-bench's own loop and report) and
# pocket-bench. c=64 and c=1, REPS repetitions interleaved (every other one in
# reverse order), medians, one table with ratios to wrk and to libcurl.
#
#   scripts/bench-peers.sh            # REPS=5 DUR=5
#   scripts/bench-peers.sh --quick    # REPS=1 DUR=2 (smoke test)
#   REPS=9 DUR=10 scripts/bench-peers.sh
#   scripts/bench-peers.sh --json docs/results/peers.json   # also every run as JSON
#                                     # for the charts (scripts/bench-charts.sh)
#
# Environment: REPS (5), DUR seconds per run (5), PORT (18085), SERVER_CPU
# (0), CLIENT_CPU (1), CONNECTIONS ("64 1"), SCRATCH (a swift build
# --scratch-path for the main package), PEERS_SCRATCH (the same for
# Benchmarks/Peers). Installs nginx-light, wrk, time, util-linux, gcc and
# libcurl4-openssl-dev with apt-get when missing. Not part of CI: the first
# build of Benchmarks/Peers (SwiftNIO, BoringSSL) takes many minutes.
set -euo pipefail

cd "$(dirname "$0")/.."
. scripts/lib/nginx-conf.sh
. scripts/lib/bench-common.sh

. scripts/lib/bench-json.sh

JSON_OUT=""
args=()
while (($#)); do
  case "$1" in
    --json) JSON_OUT="${2:?--json needs a file}"; shift 2 ;;
    --json=*) JSON_OUT="${1#--json=}"; shift ;;
    *) args+=("$1"); shift ;;
  esac
done
bench_args bench-peers 2,21p "${args[@]}"
PORT="${PORT:-18085}"
SERVER_CPU="${SERVER_CPU:-0}"
CLIENT_CPU="${CLIENT_CPU:-1}"
CONNECTIONS="${CONNECTIONS:-64 1}"
URL="http://127.0.0.1:${PORT}/"
# The Swift clients and curl-bench run for DUR seconds: a budget they cannot reach.
BUDGET=1000000000

log() { echo "bench-peers: $*" >&2; }

# ------------------------------------------------------------------ packages
need=()
bench_need_base
bench_need_libcurl
bench_install "${need[@]}"

bench_check_cpus

# ------------------------------------------------------------------ temp dir, cleanup
TMP="$(mktemp -d /tmp/pocket-bench-peers.XXXXXX)"
cleanup() {
  bench_stop_nginx
  rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# ------------------------------------------------------------------ build
POCKET="$(bench_build_pocket_bench)" || exit 1
PEERS_ARGS=()
[ -n "${PEERS_SCRATCH:-}" ] && PEERS_ARGS=(--scratch-path "$PEERS_SCRATCH")
log "building Benchmarks/Peers (release; the first build takes many minutes)"
(cd Benchmarks/Peers && swift build -c release "${PEERS_ARGS[@]}") >"$TMP/peers-build.log" 2>&1 || {
  cat "$TMP/peers-build.log" >&2
  exit 1
}
PEERS_BIN="$(cd Benchmarks/Peers && swift build -c release "${PEERS_ARGS[@]}" --show-bin-path)"
AHC="$PEERS_BIN/ahc-bench"
URLSESSION="$PEERS_BIN/urlsession-bench"
CURL_BENCH="$TMP/curl-bench"
log "building curl-bench"
cc -O2 Benchmarks/curl-bench/curl_bench.c -o "$CURL_BENCH" -lcurl
for b in "$POCKET" "$AHC" "$URLSESSION" "$CURL_BENCH"; do
  [ -x "$b" ] || { log "no binary at $b"; exit 1; }
done

# ------------------------------------------------------------------ nginx
bench_hello_conf "$NGINX" "$PORT" "$SERVER_CPU"
bench_start_nginx "$NGINX" "$TMP/nginx.conf" "$PORT" "$SERVER_CPU" || exit 1

# ------------------------------------------------------------------ runners
# Each prints "rps p50_us p99_us cpu_us_per_req requests errors" ("-" where a
# client does not measure it), or "fail".

run_wrk() { # connections
  local c="$1" out="$TMP/wrk.out" tf="$TMP/wrk.time"
  /usr/bin/time -f '%U %S' -o "$tf" \
    taskset -c "$CLIENT_CPU" "$WRK" -t1 -c"$c" -d"${DUR}s" --latency "$URL" >"$out" 2>&1 || { echo fail; return; }
  wrk_stats "$out" "$tf"
}

run_curl() { # connections: libcurl multi; CPU of the whole process (time), no latency
  local c="$1" out="$TMP/curl.out" tf="$TMP/curl.time"
  /usr/bin/time -f '%U %S' -o "$tf" \
    taskset -c "$CLIENT_CPU" "$CURL_BENCH" --url "$URL" --connections "$c" --requests "$BUDGET" \
    --warmup "$((c * 16))" --max-seconds "$DUR" >"$out" 2>"$TMP/curl.err" || { echo fail; return; }
  local reqs cpu
  reqs="$(jget requests "$out")"
  cpu="$(awk -v r="$reqs" -v w="$((c * 16))" '{ printf "%.3f", ($1 + $2) * 1e6 / (r + w > 0 ? r + w : 1) }' "$tf")"
  echo "$(jget rps "$out") - - $cpu $reqs $(jget errors "$out")"
}

run_swift() { # binary connections: pocket-bench's JSON (the peers print the same)
  local bin="$1" c="$2" out="$TMP/swift.out"
  taskset -c "$CLIENT_CPU" "$bin" --url "$URL" --connections "$c" --requests "$BUDGET" \
    --max-seconds "$DUR" --json >"$out" 2>"$TMP/swift.err" || { echo fail; return; }
  echo "$(jget rps "$out") $(jget p50_us "$out") $(jget p99_us "$out") $(jget cpu_us_per_req "$out")" \
    "$(jget requests "$out") $(($(jget errors "$out") + $(jget bad_status "$out")))"
}

run_one() { # client connections
  case "$1" in
    wrk) run_wrk "$2" ;;
    libcurl) run_curl "$2" ;;
    pocket) run_swift "$POCKET" "$2" ;;
    ahc) run_swift "$AHC" "$2" ;;
    urlsession) run_swift "$URLSESSION" "$2" ;;
  esac
}

# The last run of a client as one JSON run object (--json): the Swift
# clients' own line, wrk's and curl-bench's output with what they lack.
json_line() { # client connections rep cpu_us_per_req
  local name=$1 c=$2 rep=$3 cpu=$4 tag="\"scenario\":\"plain HTTP\",\"rep\":$3"
  local common="\"connections\":$c,\"cpu_us_per_req\":$cpu,\"machine\":$(json_machine)"
  case "$name" in
    wrk)
      json_tag "$(wrk_json "$TMP/wrk.out")" "$tag,$common,\"label\":$(json_str "wrk $WRK_VERSION"),\
\"versions\":{\"wrk\":$(json_str "$WRK_VERSION"),\"nginx\":$(json_str "$NGINX_VERSION")},\
\"command\":$(json_str "wrk -t1 -c$c -d${DUR}s --latency $URL")" ;;
    libcurl)
      json_tag "$(cat "$TMP/curl.out")" "$tag,$common,\"client\":\"libcurl\",\"label\":$(json_str "libcurl $CURL_VERSION (multi)"),\
\"versions\":{\"libcurl\":$(json_str "$CURL_VERSION"),\"nginx\":$(json_str "$NGINX_VERSION")},\
\"command\":$(json_str "curl-bench --url $URL --connections $c --warmup $((c * 16)) --max-seconds $DUR")" ;;
    *) json_tag "$(cat "$TMP/swift.out")" "$tag" ;;
  esac
}

ratio() { # a b
  awk -v a="$1" -v b="$2" 'BEGIN { if (a == "-" || b == "-" || b + 0 == 0) print "-"; else printf "%.2f", a / b }'
}

# ------------------------------------------------------------------ the run
CLIENTS=(wrk libcurl pocket ahc urlsession)
CONFIGS=()
for c in $CONNECTIONS; do for client in "${CLIENTS[@]}"; do CONFIGS+=("$client $c"); done; done
declare -A RPS P50 P99 CPU
NGINX_VERSION="$("$NGINX" -v 2>&1 | sed 's/.*nginx\///')"
# wrk --version exits 1; "wrk debian/4.1.0-3+b2 [epoll] ..." -> 4.1.0
WRK_VERSION="$({ "$WRK" --version 2>&1 || true; } | head -1 | awk '{ print $2 }' | sed 's|.*/||; s/-.*//')"
CURL_VERSION="$(curl-config --version | awk '{ print $2 }')"
if [ -n "$JSON_OUT" ]; then
  mkdir -p "$(dirname "$JSON_OUT")"
  : >"$JSON_OUT"
fi

log "machine: $NCPU CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'), kernel $(uname -r)"
log "$REPS repetitions x ${#CONFIGS[@]} runs x ${DUR}s"
printf '%-4s %-16s %12s %10s %10s %12s %10s %7s\n' rep run rps p50_us p99_us cpu_us/req requests errors
for rep in $(seq "$REPS"); do
  order=("${CONFIGS[@]}")
  if ((rep % 2 == 0)); then
    order=()
    for ((i = ${#CONFIGS[@]} - 1; i >= 0; i--)); do order+=("${CONFIGS[i]}"); done
  fi
  for cfg in "${order[@]}"; do
    read -r name c <<<"$cfg"
    line="$(run_one "$name" "$c")"
    if [ "$line" = fail ]; then
      printf '%-4s %-16s %12s\n' "$rep" "$name/$c" fail
      continue
    fi
    read -r rps p50 p99 cpu reqs errs <<<"$line"
    [ -n "$JSON_OUT" ] && json_line "$name" "$c" "$rep" "$cpu" >>"$JSON_OUT"
    key="$name/$c"
    RPS[$key]+="$rps "
    P50[$key]+="$p50 "
    P99[$key]+="$p99 "
    CPU[$key]+="$cpu "
    printf '%-4s %-16s %12s %10s %10s %12s %10s %7s\n' "$rep" "$key" "$rps" "$p50" "$p99" "$cpu" "$reqs" "$errs"
  done
done

echo
echo "Medians of $REPS repetitions of ${DUR} s, nginx $("$NGINX" -v 2>&1 | sed 's/.*nginx\///') on core $SERVER_CPU, clients on core $CLIENT_CPU:"
echo
echo "| c | client | req/s | p50 µs | p99 µs | CPU µs/req | req/s ÷ wrk | req/s ÷ libcurl | CPU ÷ libcurl |"
echo "|---|---|---:|---:|---:|---:|---:|---:|---:|"
for c in $CONNECTIONS; do
  wrk_rps="$(median ${RPS[wrk/$c]:-})"
  curl_rps="$(median ${RPS[libcurl/$c]:-})"
  curl_cpu="$(median ${CPU[libcurl/$c]:-})"
  for client in "${CLIENTS[@]}"; do
    key="$client/$c"
    rps="$(median ${RPS[$key]:-})"
    cpu="$(median ${CPU[$key]:-})"
    printf '| %s | %s | %s | %s | %s | %s | %s | %s | %s |\n' "$c" "$client" \
      "$(awk -v v="$rps" 'BEGIN { if (v == "-") print "-"; else printf "%.0f", v }')" \
      "$(median ${P50[$key]:-})" "$(median ${P99[$key]:-})" "$cpu" \
      "$(ratio "$rps" "$wrk_rps")" "$(ratio "$rps" "$curl_rps")" "$(ratio "$cpu" "$curl_cpu")"
  done
done
echo
echo "Machine: $NCPU CPUs ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //')), kernel $(uname -r)," \
  "$(swift --version 2>/dev/null | head -1), $("$WRK" --version 2>&1 | head -1 | awk '{print $1, $2}'), $(curl-config --version 2>/dev/null || echo libcurl)"
echo "Date: $(date -u '+%Y-%m-%d %H:%M UTC'), commit $(git rev-parse --short HEAD 2>/dev/null || echo '?')"
echo "Command: REPS=$REPS DUR=$DUR scripts/bench-peers.sh"
[ -n "$JSON_OUT" ] && echo "Results: $JSON_OUT (draw: scripts/bench-charts.sh $JSON_OUT)"
echo "Clients: wrk -t1 -cC -dDUR --latency; curl-bench --connections C --warmup 16C --max-seconds DUR;" \
  "pocket-bench / ahc-bench / urlsession-bench --url URL --connections C --max-seconds DUR --json"
