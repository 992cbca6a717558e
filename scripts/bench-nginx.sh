#!/usr/bin/env bash
# The performance run: nginx from Debian on loopback (one worker pinned to
# core 0), the client pinned to core 1; wrk (Debian) and pocket-bench side by
# side in the same run, interleaved, REPS repetitions, medians.
#
#   scripts/bench-nginx.sh            # REPS=5 DUR=5
#   scripts/bench-nginx.sh --quick    # REPS=1 DUR=2 (smoke test)
#   REPS=9 DUR=10 PORT=18080 scripts/bench-nginx.sh
#
# Environment: REPS (5), DUR seconds per run (5), PORT (18080), SCRATCH (a
# swift build --scratch-path; default: SwiftPM's own .build), SERVER_CPU (0),
# CLIENT_CPU (1), ON_LOOP=1 to add pocket-bench --on-loop rows, PIPELINE=1 to
# add pocket-bench --pipeline rows (the whole request path engaged: a
# middleware, a retry policy, a live events() subscription), EPOLL=1 to add
# pocket-bench --io-backend epoll rows (the pocket rows use the default
# backend: io_uring where the kernel allows it), ALLOCS=0 to skip the
# allocation-count runs.
set -euo pipefail

cd "$(dirname "$0")/.."
. scripts/lib/nginx-conf.sh
. scripts/lib/bench-common.sh
ROOT="$PWD"

bench_args bench-nginx 2,15p "$@"
PORT="${PORT:-18080}"
SERVER_CPU="${SERVER_CPU:-0}"
CLIENT_CPU="${CLIENT_CPU:-1}"
ON_LOOP="${ON_LOOP:-0}"
PIPELINE="${PIPELINE:-0}"
EPOLL="${EPOLL:-0}"
ALLOCS="${ALLOCS:-1}"
URL="http://127.0.0.1:${PORT}/"
# pocket-bench runs for DUR seconds: a request budget it cannot reach.
POCKET_REQUESTS=1000000000

log() { echo "bench-nginx: $*" >&2; }

# ------------------------------------------------------------------ packages
need=()
bench_need_base
bench_install "${need[@]}"

bench_check_cpus

# ------------------------------------------------------------------ temp dir, cleanup
TMP="$(mktemp -d /tmp/pocket-bench-nginx.XXXXXX)"
cleanup() {
  bench_stop_nginx
  rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# ------------------------------------------------------------------ build
BIN="$(bench_build_pocket_bench)" || exit 1
MALLOC_LIB=""
if [ "$ALLOCS" = 1 ]; then
  MALLOC_LIB="$(scripts/malloc-count/build.sh "$TMP/libmalloccount.so")"
fi

# ------------------------------------------------------------------ nginx
bench_hello_conf "$NGINX" "$PORT" "$SERVER_CPU"
bench_start_nginx "$NGINX" "$TMP/nginx.conf" "$PORT" "$SERVER_CPU" || exit 1

# ------------------------------------------------------------------ runners
# Prints "rps p50_us p99_us cpu_us_per_req requests errors" for one run.

run_wrk() { # connections
  local c="$1" out="$TMP/wrk.out" tf="$TMP/wrk.time"
  /usr/bin/time -f '%U %S' -o "$tf" \
    taskset -c "$CLIENT_CPU" "$WRK" -t1 -c"$c" -d"${DUR}s" --latency "$URL" >"$out" 2>&1 || {
    cat "$out" >&2
    return 1
  }
  wrk_stats "$out" "$tf"
}

run_pocket() { # connections [extra args...]
  local c="$1"
  shift
  local out="$TMP/pocket.out"
  taskset -c "$CLIENT_CPU" "$BIN" --url "$URL" --connections "$c" \
    --requests "$POCKET_REQUESTS" --max-seconds "$DUR" --json "$@" >"$out" 2>"$TMP/pocket.err" || {
    cat "$out" "$TMP/pocket.err" >&2
    return 1
  }
  [ $# -eq 0 ] && jget io_backend "$out" | tr -d '"' >"$TMP/default-backend"
  echo "$(jget rps "$out") $(jget p50_us "$out") $(jget p99_us "$out") $(jget cpu_us_per_req "$out")" \
    "$(jget requests "$out") $(($(jget errors "$out") + $(jget bad_status "$out")))"
}

# ------------------------------------------------------------------ the run
CONFIGS=("wrk 64" "pocket 64" "wrk 1" "pocket 1")
[ "$ON_LOOP" = 1 ] && CONFIGS+=("pocket-loop 64" "pocket-loop 1")
[ "$PIPELINE" = 1 ] && CONFIGS+=("pocket-pipeline 64" "pocket-pipeline 1")
[ "$EPOLL" = 1 ] && CONFIGS+=("pocket-epoll 64" "pocket-epoll 1")
[ "$EPOLL" = 1 ] && [ "$PIPELINE" = 1 ] && CONFIGS+=("pocket-epoll-pipeline 64")
declare -A RPS P50 P99 CPU

run_one() { # name connections
  case "$1" in
    wrk) run_wrk "$2" ;;
    pocket) run_pocket "$2" ;;
    pocket-loop) run_pocket "$2" --on-loop ;;
    pocket-pipeline) run_pocket "$2" --pipeline ;;
    pocket-epoll) run_pocket "$2" --io-backend epoll ;;
    pocket-epoll-pipeline) run_pocket "$2" --io-backend epoll --pipeline ;;
  esac
}

log "machine: $NCPU CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'), kernel $(uname -r)"
log "$REPS repetitions x ${#CONFIGS[@]} runs x ${DUR}s"
printf '%-4s %-16s %12s %10s %10s %12s %10s %7s\n' rep run rps p50_us p99_us cpu_us/req requests errors
for rep in $(seq "$REPS"); do
  # Alternate the order each repetition so slow drift does not favour one client.
  order=("${CONFIGS[@]}")
  if ((rep % 2 == 0)); then
    order=()
    for ((i = ${#CONFIGS[@]} - 1; i >= 0; i--)); do order+=("${CONFIGS[i]}"); done
  fi
  for cfg in "${order[@]}"; do
    read -r name c <<<"$cfg"
    read -r rps p50 p99 cpu reqs errs <<<"$(run_one "$name" "$c")"
    key="$name/$c"
    RPS[$key]+="$rps "
    P50[$key]+="$p50 "
    P99[$key]+="$p99 "
    CPU[$key]+="$cpu "
    printf '%-4s %-16s %12s %10s %10s %12s %10s %7s\n' "$rep" "$name c=$c" "$rps" "$p50" "$p99" "$cpu" "$reqs" "$errs"
  done
done

# Allocation counts: separate runs with the counter preloaded (not timed).
ALLOC_LINES=()
if [ -n "$MALLOC_LIB" ]; then
  modes=("")
  [ "$PIPELINE" = 1 ] && modes+=(--pipeline)
  for mode in "${modes[@]}"; do
    for c in 64 1; do
      out="$TMP/alloc.out"
      if LD_PRELOAD="$MALLOC_LIB" taskset -c "$CLIENT_CPU" "$BIN" --url "$URL" --connections "$c" \
        --requests "$POCKET_REQUESTS" --max-seconds "$DUR" --json $mode >"$out" 2>/dev/null; then
        ALLOC_LINES+=("c=$c${mode:+ $mode}: engine $(jget engine_allocs_per_req "$out")/request, process heap $(jget heap_allocs_per_req "$out")/request")
      fi
    done
  done
fi

# ------------------------------------------------------------------ summary
m() { median ${1:-}; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b + 0 == 0 || a == "-") print "-"; else printf "%.2f", a / b }'; }
fmt() { awk -v v="$1" -v d="$2" 'BEGIN { if (v == "-") print "-"; else printf "%.*f", d, v }'; }

echo
echo "== medians of $REPS repetitions, ${DUR}s each =="
echo
echo "| c | client | req/s | p50 µs | p99 µs | CPU µs/req |"
echo "|---|---|---:|---:|---:|---:|"
for c in 64 1; do
  for name in wrk pocket pocket-loop pocket-pipeline pocket-epoll pocket-epoll-pipeline; do
    key="$name/$c"
    [ -n "${RPS[$key]:-}" ] || continue
    echo "| $c | $name | $(fmt "$(m "${RPS[$key]}")" 0) | $(fmt "$(m "${P50[$key]}")" 1) |" \
      "$(fmt "$(m "${P99[$key]}")" 1) | $(fmt "$(m "${CPU[$key]}")" 2) |"
  done
done
echo
echo "| c | pocket/wrk | req/s ratio | p99 ratio | CPU/req ratio |"
echo "|---|---|---:|---:|---:|"
for c in 64 1; do
  for name in pocket pocket-loop pocket-pipeline pocket-epoll pocket-epoll-pipeline; do
    key="$name/$c"
    [ -n "${RPS[$key]:-}" ] || continue
    echo "| $c | $name/wrk | $(ratio "$(m "${RPS[$key]}")" "$(m "${RPS[wrk/$c]}")") |" \
      "$(ratio "$(m "${P99[$key]}")" "$(m "${P99[wrk/$c]}")") |" \
      "$(ratio "$(m "${CPU[$key]}")" "$(m "${CPU[wrk/$c]}")") |"
  done
done
if ((${#ALLOC_LINES[@]})); then
  echo
  echo "allocations per measured request (separate runs, malloc-count preloaded):"
  for l in "${ALLOC_LINES[@]}"; do echo "  $l"; done
fi
echo
echo "machine: $NCPU CPUs; $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'); kernel $(uname -r)"
echo "versions: $("$NGINX" -v 2>&1 | sed 's/^nginx version: //'); $("$WRK" -v 2>&1 | head -1 | awk '{ print $1, $2 }');" \
  "$(swift --version 2>&1 | grep -m1 -o 'Swift version [^ ]*')"
echo "commands:"
echo "  server:  ${NGINX_CMD[*]}   (worker_processes 1; worker pinned to core $SERVER_CPU)"
echo "  wrk:     /usr/bin/time -f '%U %S' taskset -c $CLIENT_CPU $WRK -t1 -c{64,1} -d${DUR}s --latency $URL"
echo "  pocket:  taskset -c $CLIENT_CPU $BIN --url $URL --connections {64,1} --requests $POCKET_REQUESTS --max-seconds $DUR --json"
[ "$ON_LOOP" = 1 ] && echo "           (pocket-loop rows: the same with --on-loop)"
[ "$PIPELINE" = 1 ] && echo "           (pocket-pipeline rows: the same with --pipeline)"
[ "$EPOLL" = 1 ] && echo "           (pocket-epoll rows: the same with --io-backend epoll; pocket rows: the default, $(cat "$TMP/default-backend" 2>/dev/null || echo "?") here)"
[ -n "$MALLOC_LIB" ] && echo "  allocs:  LD_PRELOAD=libmalloccount.so (scripts/malloc-count) with the pocket command above"
echo "CPU/req: wrk = (user+sys of the whole wrk process) / requests; pocket = getrusage(RUSAGE_SELF) over the measured phase / requests"
