#!/usr/bin/env bash
# Tail latency across three replicas, one of them slow, at a fixed rate:
# Pocket (pocket-bench), AsyncHTTPClient 1.37.0 (Benchmarks/Peers' ahc-bench)
# and libcurl (Benchmarks/curl-bench), each sending the same open-loop load
# (--rate: latency from each request's due time, docs/BENCHMARKS.md) in turn
# to the three replicas, side by side; Pocket once as the peers go (round-
# robin, no hedges) and once with power-of-two-choices balancing and hedges
# after the p95 (`pocket-policies`; `pocket-embedded-policies` on its own
# embedded replicas).
#
#   scripts/bench-tail.sh             # DUR=10
#   scripts/bench-tail.sh --quick     # DUR=3 (smoke test)
#   RATE=5000 scripts/bench-tail.sh   # this rate instead of half the saturation
#   scripts/bench-tail.sh --json FILE # also each run on a slow set, one JSON line each
#
# The servers:
#   replicas  bench-server (Benchmarks/CPocketBenchServer) with three ports;
#             the slow set's replica 2 answers 5% of its requests 50 ms late
#             (--slow-replica 2:0.05:50ms)
#   nginx     three nginx instances; replica 2 behind a TCP proxy
#             (scripts/lib/delay-proxy.py) that holds 5% of its answers 50 ms,
#             and, for the healthy set, behind the same proxy holding none
#   embedded  pocket-bench's own --replicas 3 (Pocket only: in its process)
# The rate: half of what Pocket answers closed-loop (64 connections, 3 s)
# from the healthy nginx set (the proxy included), unless RATE is given.
# The second table holds the goals: with one replica slow, p99 and p99.9
# of each Pocket client over the same client's on the healthy set, and the
# hedges it sent over the requests.
#
# Environment: DUR seconds per run (10), RATE, CONNECTIONS (64: the most in
# flight per client), PORT (18090: the servers use PORT to PORT+15), SKIP_AHC=1
# (no Benchmarks/Peers build), POCKET_BENCH (a built pocket-bench instead of
# the release build), SCRATCH / PEERS_SCRATCH (swift build
# --scratch-path of the main package / of Benchmarks/Peers). Servers are
# started and stopped by their PID. Not part of CI: the first build of
# Benchmarks/Peers takes many minutes.
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
quick=0
for a in "${args[@]}"; do
  case "$a" in
    --quick) quick=1 ;;
    -h|--help) sed -n 2,29p "$0"; exit 0 ;;
    *) echo "bench-tail: unknown argument '$a'" >&2; exit 2 ;;
  esac
done
DUR="${DUR:-$([ "$quick" = 1 ] && echo 3 || echo 10)}"
CONNECTIONS="${CONNECTIONS:-64}"
PORT="${PORT:-18090}"
SKIP_AHC="${SKIP_AHC:-0}"

log() { echo "bench-tail: $*" >&2; }

need=()
bench_need_base
bench_need_libcurl
command -v python3 >/dev/null 2>&1 || need+=(python3)
bench_install "${need[@]}"

TMP="$(mktemp -d /tmp/pocket-bench-tail.XXXXXX)"
PIDS=()
cleanup() {
  if ((${#PIDS[@]})); then stop_pids "${PIDS[@]}"; fi
  rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# ------------------------------------------------------------------ build
if [ -n "${POCKET_BENCH:-}" ]; then POCKET="$POCKET_BENCH"; else POCKET="$(bench_build_pocket_bench)" || exit 1; fi
log "building curl-bench and bench-server"
cc -O2 -pthread Benchmarks/curl-bench/curl_bench.c -o "$TMP/curl-bench" -lcurl
cc -D_GNU_SOURCE -O2 -pthread -IBenchmarks/CPocketBenchServer/include Benchmarks/CPocketBenchServer/pkbs_server.c \
  Benchmarks/CPocketBenchServer/pkbs_tls.c Benchmarks/CPocketBenchServer/pkbs_gzip.c Benchmarks/bench-server/main.c \
  -o "$TMP/bench-server" -lssl -lcrypto -lz
CURL_BENCH="$TMP/curl-bench"
AHC=""
if [ "$SKIP_AHC" != 1 ]; then
  PEERS_ARGS=()
  [ -n "${PEERS_SCRATCH:-}" ] && PEERS_ARGS=(--scratch-path "$PEERS_SCRATCH")
  log "building Benchmarks/Peers' ahc-bench (release; the first build takes many minutes)"
  if (cd Benchmarks/Peers && swift build -c release --product ahc-bench "${PEERS_ARGS[@]}") >"$TMP/peers-build.log" 2>&1; then
    AHC="$(cd Benchmarks/Peers && swift build -c release "${PEERS_ARGS[@]}" --show-bin-path)/ahc-bench"
  else
    log "ahc-bench did not build; AsyncHTTPClient is left out (see below)"
    tail -5 "$TMP/peers-build.log" >&2
  fi
fi

# ------------------------------------------------------------------ servers
wait_port() {
  local port=$1
  for _ in $(seq 100); do
    if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then return 0; fi
    sleep 0.1
  done
  log "nothing listens on 127.0.0.1:$port"
  return 1
}

# bench-server replicas: healthy on PORT..PORT+2, slow on PORT+3..PORT+5.
spawn_bg "$TMP/bench-server" --port "$PORT" --replicas 3 >"$TMP/bs-healthy.log" 2>&1
PIDS+=("$SPAWNED_PID")
spawn_bg "$TMP/bench-server" --port "$((PORT + 3))" --replicas 3 --slow-replica 2:0.05:50ms >"$TMP/bs-slow.log" 2>&1
PIDS+=("$SPAWNED_PID")

# nginx on PORT+10..PORT+12, each in its own directory; the proxies in front
# of replica 2: PORT+13 holds 5% of the answers 50 ms, PORT+14 none.
for i in 0 1 2; do
  mkdir -p "$TMP/nginx$i"
  {
    nginx_conf_prelude "$NGINX" "$TMP/nginx$i" 0
    cat <<EOF2
    server {
        listen 127.0.0.1:$((PORT + 10 + i));
        location / {
            default_type text/plain;
            return 200 "Hello, World!";
        }
    }
}
EOF2
  } >"$TMP/nginx$i/nginx.conf"
  spawn_bg "$NGINX" -p "$TMP/nginx$i" -c "$TMP/nginx$i/nginx.conf" -e "$TMP/nginx$i/error.log" >"$TMP/nginx$i.out" 2>&1
  PIDS+=("$SPAWNED_PID")
done
spawn_bg python3 scripts/lib/delay-proxy.py "$((PORT + 13))" "$((PORT + 11))" 0.05 50 >"$TMP/proxy-slow.log" 2>&1
PIDS+=("$SPAWNED_PID")
spawn_bg python3 scripts/lib/delay-proxy.py "$((PORT + 14))" "$((PORT + 11))" 0 0 >"$TMP/proxy-healthy.log" 2>&1
PIDS+=("$SPAWNED_PID")
for p in $(seq "$PORT" "$((PORT + 5))") $(seq "$((PORT + 10))" "$((PORT + 14))"); do wait_port "$p"; done

urls() { local p; for p in "$@"; do printf -- '--url http://127.0.0.1:%s/ ' "$p"; done; }
declare -A SETS=(
  [replicas-healthy]="$(urls "$PORT" "$((PORT + 1))" "$((PORT + 2))")"
  [replicas-slow]="$(urls "$((PORT + 3))" "$((PORT + 4))" "$((PORT + 5))")"
  [nginx-healthy]="$(urls "$((PORT + 10))" "$((PORT + 14))" "$((PORT + 12))")"
  [nginx-slow]="$(urls "$((PORT + 10))" "$((PORT + 13))" "$((PORT + 12))")"
)

# ------------------------------------------------------------------ rate
# Half of what Pocket saturates at, closed-loop, on the set every request of
# which the slowest path can reach: nginx with the (delay-free) proxy in
# front of replica 2, requests in turn. The same rate holds for every set
# and client, so that their latencies compare.
if [ -z "${RATE:-}" ]; then
  # shellcheck disable=SC2086
  "$POCKET" ${SETS[nginx-healthy]} --connections "$CONNECTIONS" --max-seconds 3 --requests 100000000 --json \
    >"$TMP/saturation.json"
  SAT="$(jget rps "$TMP/saturation.json")"
  RATE="$(awk -v s="$SAT" 'BEGIN { r = int(s / 2 / 100) * 100; print (r < 100 ? 100 : r) }')"
  log "Pocket saturates at $SAT requests/s on nginx (replica 2 behind the proxy): the rate is $RATE/s"
fi
OFFERED=$((RATE * DUR))

# ------------------------------------------------------------------ runs
ROWS=()
declare -A P99=() P999=() HEDGES=() SENT=()
run() { # SET CLIENT
  local set=$1 client=$2 out="$TMP/$1-$2.json"
  local -a cmd
  case "$client" in
    # shellcheck disable=SC2206
    pocket) cmd=("$POCKET" ${SETS[$set]} --rate "$RATE" --max-seconds "$DUR" --connections "$CONNECTIONS" --json) ;;
    # shellcheck disable=SC2206
    pocket-policies) cmd=("$POCKET" ${SETS[$set]} --rate "$RATE" --max-seconds "$DUR" --connections "$CONNECTIONS" \
      --balance p2c --hedge-after p95 --json) ;;
    # shellcheck disable=SC2206
    ahc) cmd=("$AHC" ${SETS[$set]} --rate "$RATE" --max-seconds "$DUR" --connections "$CONNECTIONS" --json) ;;
    # shellcheck disable=SC2206
    libcurl) cmd=("$CURL_BENCH" ${SETS[$set]} --rate "$RATE" --requests "$OFFERED" --connections "$CONNECTIONS" \
      --warmup 1000) ;;
    pocket-embedded|pocket-embedded-policies)
      cmd=("$POCKET" --replicas 3 --rate "$RATE" --max-seconds "$DUR" --connections "$CONNECTIONS" --json)
      [ "$client" = pocket-embedded-policies ] && cmd+=(--balance p2c --hedge-after p95)
      [ "$set" = embedded-slow ] && cmd+=(--slow-replica 2:0.05:50ms) ;;
  esac
  log "$set: $client"
  "${cmd[@]}" >"$out" 2>"$TMP/$set-$client.err" || { log "$set $client failed:"; cat "$TMP/$set-$client.err" >&2; return 0; }
  # The JSON (charted: docs/charts/tail/) holds the slow sets the peers ran on.
  if [ -n "$JSON_OUT" ] && [[ "$set" == replicas-slow || "$set" == nginx-slow ]]; then
    # curl-bench's line names no client and no connection count: the
    # charts group runs by them.
    local tags="\"scenario\":\"$set\",\"label\":\"$client\""
    grep -q '"client":' "$out" || tags="$tags,\"client\":\"$client\""
    grep -q '"connections":' "$out" || tags="$tags,\"connections\":$CONNECTIONS"
    json_tag "$(head -1 "$out")" "$tags" >>"$JSON_OUT"
  fi
  ms() { awk -v v="$(jget "$1" "$out")" 'BEGIN { printf "%.2f", v / 1000 }'; }
  local hedges="–"
  case "$client" in pocket*) hedges="$(jget hedges_fired "$out")" ;; esac
  ROWS+=("| $set | $client | $(jget offered "$out") | $(jget sent "$out") | $hedges | $(ms p50_us) | $(ms p99_us) | $(ms p999_us) | $(ms p9999_us) |")
  P99["$set/$client"]="$(jget p99_us "$out")"
  P999["$set/$client"]="$(jget p999_us "$out")"
  HEDGES["$set/$client"]="$hedges"
  SENT["$set/$client"]="$(jget sent "$out")"
}
if [ -n "$JSON_OUT" ]; then : >"$JSON_OUT"; fi
clients=(pocket pocket-policies libcurl)
[ -n "$AHC" ] && clients=(pocket pocket-policies ahc libcurl)
for set in replicas-healthy replicas-slow nginx-healthy nginx-slow; do
  for client in "${clients[@]}"; do run "$set" "$client"; done
done
for set in embedded-healthy embedded-slow; do
  for client in pocket-embedded pocket-embedded-policies; do run "$set" "$client"; done
done

echo
echo "Three replicas, requests in turn, $RATE requests/s for $DUR s ($OFFERED offered), at most $CONNECTIONS in flight"
echo "per client; slow: replica 2 answers 5% of its requests 50 ms late. Latency in ms from each request's due time."
echo "pocket-policies (and pocket-embedded-policies): the same pocket-bench with --balance p2c --hedge-after p95 (the"
echo "others go round-robin, no hedges); hedges: the hedges Pocket sent."
echo "$(date -u +%F), $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'), Linux $(uname -r)"
[ -z "$AHC" ] && [ "$SKIP_AHC" != 1 ] && echo "AsyncHTTPClient: ahc-bench did not build here"
echo
echo "| servers | client | offered | sent | hedges | p50 | p99 | p99.9 | p99.99 |"
echo "|---|---|---:|---:|---:|---:|---:|---:|---:|"
printf '%s\n' "${ROWS[@]}"

# The goal: with one replica slow, Pocket with the policies keeps p99 and
# p99.9 within 2x of what three healthy replicas give at the same rate (the
# same client), with at most 5% more requests (hedges ÷ requests sent).
ratio() { awk -v a="${1:-}" -v b="${2:-}" 'BEGIN { if (a == "" || b == "" || b + 0 == 0) print "–"; else printf "%.2f", a / b }'; }
echo
echo "| servers | client | p99 ÷ healthy | p99.9 ÷ healthy | extra requests (hedges ÷ sent) |"
echo "|---|---|---:|---:|---:|"
for kind in replicas nginx embedded; do
  for client in pocket pocket-policies pocket-embedded pocket-embedded-policies; do
    key="$kind-slow/$client" base="$kind-healthy/$client"
    [ -n "${P99[$key]:-}" ] || continue
    extra="–"
    [[ "${HEDGES[$key]}" =~ ^[0-9]+$ ]] && extra="$(ratio "${HEDGES[$key]}" "${SENT[$key]}")"
    echo "| $kind-slow | $client | $(ratio "${P99[$key]}" "${P99[$base]:-}") | $(ratio "${P999[$key]}" "${P999[$base]:-}") | $extra |"
  done
done
