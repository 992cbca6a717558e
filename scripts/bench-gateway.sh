#!/usr/bin/env bash
# The gateway benchmark: wrk -> a Hummingbird 2 gateway -> nginx,
# the gateway alone on one core, nginx and wrk on the other. Three variants
# of the same gateway (Examples/Gateway): `pocket` (each request calls
# nginx through Pocket, with tracing, metrics and a retry policy
# installed), `ahc` (the same through AsyncHTTPClient) and `static` (answers
# by itself: the floor, what Hummingbird alone costs). All variants back to
# back in the same run, at 64 and 1 connections, REPS repetitions (the
# order alternates), medians.
#
#   scripts/bench-gateway.sh            # REPS=5 DUR=5
#   scripts/bench-gateway.sh --quick    # REPS=1 DUR=2 (smoke test)
#   REPS=7 DUR=10 scripts/bench-gateway.sh
#
# Environment: REPS (5), DUR seconds per run (5), PORT of nginx (18390),
# GATEWAY_PORT (18391), GATEWAY_CPU (0), SERVER_CPU for nginx and wrk (1),
# BARE=1 to add `pocket-bare` (Pocket with no middleware and no retry
# policy: what the integrations cost is the difference), FLOOR=1 to add
# `floor` (a probe in C with the thread structure of Pocket's engine and no
# client code: what any client with its own I/O thread costs the handler,
# Examples/Gateway/Sources/CFloorClient) and `nio-floor` (the same probe
# on NIO's event loops, the framework's own: what a client hosted there
# costs); for the Pocket variants, POCKET_EXECUTOR (pool, the example's
# default, or loop: where the service's tasks run) and
# POCKET_LOOP_SCHEDULING (batch, the default, or standard: the client's
# loop thread's policy).
# Each repetition also times the downstream round trip alone at one
# connection from the gateway's core (Benchmarks/engine-bench/kernel_floor,
# epoll mode, built here with cc and liburing): `min_us` is the least a
# request took, so static's p99 plus it bounds any gateway's p99 at one
# connection from below; printed as `RESULT client=rtt c=1 min_us=…`.
# Prints a table per run, then one line per variant and concurrency:
#   RESULT client=pocket|pocket-bare|ahc|static|floor|nio-floor c=N rps=… p50_us=… p99_us=… cpu_s=…
# (cpu_s: the gateway's CPU seconds, user + system, during the DUR-second run).
set -euo pipefail

cd "$(dirname "$0")/.."
. scripts/lib/nginx-conf.sh
. scripts/lib/bench-common.sh

bench_args bench-gateway 2,24p "$@"
PORT="${PORT:-18390}"
GATEWAY_PORT="${GATEWAY_PORT:-18391}"
GATEWAY_CPU="${GATEWAY_CPU:-0}"
SERVER_CPU="${SERVER_CPU:-1}"
CLIENT_CPU="$SERVER_CPU"
VARIANTS=(pocket ahc static)
[ "${BARE:-0}" = 1 ] && VARIANTS=(pocket pocket-bare ahc static)
if [ "${FLOOR:-0}" = 1 ]; then VARIANTS+=(floor nio-floor); fi
CONNS=(64 1)

log() { echo "bench-gateway: $*" >&2; }

need=()
bench_need_base
command -v cc >/dev/null 2>&1 || need+=(gcc libc6-dev)
[ -f /usr/include/liburing.h ] || need+=(liburing-dev)
bench_install "${need[@]}"
bench_check_cpus
[ "$NCPU" -ge 2 ] || GATEWAY_CPU=0

TMP="$(mktemp -d /tmp/pocket-bench-gateway.XXXXXX)"
GATEWAY_PID=""
cleanup() {
  if [ -n "$GATEWAY_PID" ]; then stop_pids "$GATEWAY_PID"; fi
  bench_stop_nginx
  rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

log "building Examples/Gateway (release; the first build takes minutes)"
swift build -c release --package-path Examples/Gateway >"$TMP/build.log" 2>&1 || { cat "$TMP/build.log" >&2; exit 1; }
GATEWAY="$(swift build -c release --package-path Examples/Gateway --show-bin-path)/gateway"

FLOOR_PROBE="$TMP/kernel_floor"
cc -O2 Benchmarks/engine-bench/kernel_floor.c -luring -o "$FLOOR_PROBE" 2>"$TMP/cc.log" || { cat "$TMP/cc.log" >&2; exit 1; }

bench_hello_conf "$NGINX" "$PORT" "$SERVER_CPU"
bench_start_nginx "$NGINX" "$TMP/nginx.conf" "$PORT" "$SERVER_CPU" || exit 1

start_gateway() { # variant
  local extra=()
  case "$1" in pocket*)
    if [ -n "${POCKET_EXECUTOR:-}" ]; then extra+=(--executor "$POCKET_EXECUTOR"); fi
    if [ -n "${POCKET_LOOP_SCHEDULING:-}" ]; then extra+=(--loop-scheduling "$POCKET_LOOP_SCHEDULING"); fi ;;
  esac
  spawn_bg taskset -c "$GATEWAY_CPU" "$GATEWAY" --client "$1" --port "$GATEWAY_PORT" \
    --downstream "http://127.0.0.1:$PORT/" "${extra[@]}" >"$TMP/gateway.out" 2>&1
  GATEWAY_PID=$SPAWNED_PID
  for _ in $(seq 100); do
    kill -0 "$GATEWAY_PID" 2>/dev/null || break
    if curl -fsS -o /dev/null "http://127.0.0.1:$GATEWAY_PORT/" 2>/dev/null; then return 0; fi
    sleep 0.1
  done
  log "the $1 gateway did not answer"; cat "$TMP/gateway.out" >&2; return 1
}

stop_gateway() {
  stop_pids "$GATEWAY_PID"
  GATEWAY_PID=""
}

# The gateway's CPU time so far, in clock ticks (utime + stime of /proc/PID/stat).
gateway_ticks() {
  awk '{ sub(/^.*\) /, ""); print $12 + $13 }' "/proc/$GATEWAY_PID/stat"
}

run_wrk() { # connections seconds -> "rps p50 p99 cpu_s"
  local c="$1" d="$2" out="$TMP/wrk.out" t0 t1
  t0="$(gateway_ticks)"
  taskset -c "$CLIENT_CPU" "$WRK" -t1 -c"$c" -d"${d}s" --latency "http://127.0.0.1:$GATEWAY_PORT/" >"$out" 2>&1 || {
    cat "$out" >&2; return 1; }
  t1="$(gateway_ticks)"
  if grep -qE "Non-2xx|Socket errors" "$out"; then log "errors in a run:"; cat "$out" >&2; fi
  echo "$(awk '/^Requests\/sec:/ { print $2 }' "$out") $(to_us "$(awk '$1 == "50%" { print $2 }' "$out")")" \
    "$(to_us "$(awk '$1 == "99%" { print $2 }' "$out")") $(awk -v a="$t0" -v b="$t1" -v hz="$(getconf CLK_TCK)" 'BEGIN { printf "%.2f", (b - a) / hz }')"
}

command -v curl >/dev/null 2>&1 || { log "curl is needed to check the gateway"; exit 1; }
# The gateway's CPU per request of one run, in µs.
usreq() { awk -v cpu="$1" -v rps="$2" -v d="$DUR" 'BEGIN { if (rps + 0 == 0) print "-"; else printf "%.1f", cpu * 1e6 / (rps * d) }'; }
declare -A RPS P50 P99 CPU USREQ RTT
log "machine: $NCPU CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'), kernel $(uname -r)"
log "$REPS repetitions x ${#VARIANTS[@]} variants x ${#CONNS[@]} concurrencies x ${DUR}s; gateway on core $GATEWAY_CPU, nginx and wrk on core $SERVER_CPU"
printf '%-4s %-11s %4s %12s %10s %10s %8s %10s\n' rep client c rps p50_us p99_us cpu_s cpu_us/req
for rep in $(seq "$REPS"); do
  order=("${VARIANTS[@]}")
  if ((rep % 2 == 0)); then
    order=()
    for ((i = ${#VARIANTS[@]} - 1; i >= 0; i--)); do order+=("${VARIANTS[i]}"); done
  fi
  for v in "${order[@]}"; do
    start_gateway "$v"
    run_wrk 64 1 >/dev/null # warm-up: connections, pool, JIT-free but caches
    for c in "${CONNS[@]}"; do
      read -r rps p50 p99 cpu <<<"$(run_wrk "$c" "$DUR")"
      us="$(usreq "$cpu" "$rps")"
      RPS[$v/$c]+="$rps "; P50[$v/$c]+="$p50 "; P99[$v/$c]+="$p99 "; CPU[$v/$c]+="$cpu "; USREQ[$v/$c]+="$us "
      printf '%-4s %-11s %4s %12s %10s %10s %8s %10s\n' "$rep" "$v" "$c" "$rps" "$p50" "$p99" "$cpu" "$us"
    done
    stop_gateway
  done
  # The downstream round trip alone, from the gateway's core.
  json="$(taskset -c "$GATEWAY_CPU" "$FLOOR_PROBE" --mode epoll --connections 1 --seconds "$DUR" --port "$PORT")"
  declare -A trip=()
  for k in rps min_us p50_us p99_us; do trip[$k]="$(echo "$json" | sed -n "s/.*\"$k\":\([0-9.]*\).*/\1/p")"; done
  for k in min_us p50_us p99_us; do RTT[$k]+="${trip[$k]} "; done
  printf '%-4s %-11s %4s %12s %10s %10s  (min %s µs)\n' "$rep" rtt 1 "${trip[rps]}" "${trip[p50_us]}" "${trip[p99_us]}" \
    "${trip[min_us]}"
done

echo
m() { median ${1:-}; }
for c in "${CONNS[@]}"; do
  for v in "${VARIANTS[@]}"; do
    echo "RESULT client=$v c=$c rps=$(m "${RPS[$v/$c]}") p50_us=$(m "${P50[$v/$c]}") p99_us=$(m "${P99[$v/$c]}") cpu_s=$(m "${CPU[$v/$c]}")"
  done
done
echo "RESULT client=rtt c=1 min_us=$(m "${RTT[min_us]}") p50_us=$(m "${RTT[p50_us]}") p99_us=$(m "${RTT[p99_us]}")"
echo
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b + 0 == 0) print "-"; else printf "%.2f", a / b }'; }
echo "(gateway CPU µs/req: the median of the runs' own; the ratios compare medians)"
echo "| c | client | req/s | p50 µs | p99 µs | gateway CPU µs/req | req/s vs static | req/s vs ahc | p99 vs ahc |"
echo "|---|---|---:|---:|---:|---:|---:|---:|---:|"
for c in "${CONNS[@]}"; do
  for v in "${VARIANTS[@]}"; do
    r="$(m "${RPS[$v/$c]}")"
    echo "| $c | $v | $r | $(m "${P50[$v/$c]}") | $(m "${P99[$v/$c]}") | $(m "${USREQ[$v/$c]}") |" \
      "$(ratio "$r" "$(m "${RPS[static/$c]}")") | $(ratio "$r" "$(m "${RPS[ahc/$c]}")") | $(ratio "$(m "${P99[$v/$c]}")" "$(m "${P99[ahc/$c]}")") |"
  done
done
echo
# Per-repetition ratios: each variant against the ahc and static runs of the
# same repetition (minutes apart at most, so the host's slow and fast spells
# mostly cancel), then their median.
echo "(paired: the median of each repetition's own ratios)"
floor_head="" floor_rule=""
if [ "${FLOOR:-0}" = 1 ]; then floor_head=" req/s vs floor |" floor_rule="---:|"; fi
echo "| c | client | req/s vs static | req/s vs ahc | p99 vs ahc | rounds vs ahc |$floor_head"
echo "|---|---|---:|---:|---:|---|$floor_rule"
rounds() { # a-list b-list -> each repetition's a/b (repetitions without b left out)
  awk -v a="$1" -v b="$2" 'BEGIN { n = split(a, x, " "); split(b, y, " "); s = ""
    for (i = 1; i <= n; i++) if (y[i] + 0 > 0) { printf "%s%.2f", s, x[i] / y[i]; s = " " } }'
}
paired() { # a-list b-list -> the median of rounds
  local m
  m="$(median $(rounds "$1" "$2"))"
  if [ "$m" = - ]; then echo -; else printf '%.2f' "$m"; fi
}
for c in "${CONNS[@]}"; do
  for v in "${VARIANTS[@]}"; do
    case "$v" in ahc|static) continue ;; esac
    row="| $c | $v | $(paired "${RPS[$v/$c]}" "${RPS[static/$c]}") | $(paired "${RPS[$v/$c]}" "${RPS[ahc/$c]}") |"
    row+=" $(paired "${P99[$v/$c]}" "${P99[ahc/$c]}") | $(rounds "${RPS[$v/$c]}" "${RPS[ahc/$c]}") |"
    if [ -n "$floor_head" ]; then row+=" $(paired "${RPS[$v/$c]}" "${RPS[floor/$c]}") |"; fi
    echo "$row"
  done
done
# The one-connection p99 bound: static's p99 plus the downstream round
# trip's minimum, of the same repetition, against AsyncHTTPClient's p99.
bound="$(awk -v s="${P99[static/1]:-}" -v r="${RTT[min_us]}" -v a="${P99[ahc/1]:-}" 'BEGIN {
  n = split(s, x, " "); split(r, y, " "); split(a, z, " "); o = ""
  for (i = 1; i <= n; i++) if (z[i] + 0 > 0) { printf "%s%.2f", o, (x[i] + y[i]) / z[i]; o = " " } }')"
if [ -n "$bound" ]; then
  echo
  echo "one connection, the least any gateway's p99 can be: (static's p99 + the downstream round trip's minimum) ÷ ahc's p99:" \
    "median $(median $bound) (rounds: $bound)"
fi
echo
echo "versions: $("$NGINX" -v 2>&1 | sed 's/^nginx version: //'); $("$WRK" -v 2>&1 | head -1 | awk '{ print $1, $2 }'); $(swift --version 2>/dev/null | head -1)"
