#!/usr/bin/env bash
# Bodies on both I/O backends: pocket-bench downloads a 64 KiB body (64
# connections, DUR seconds a run) and a 100 MiB body (1 connection, BIG
# requests a run) from nginx, with --io-backend epoll and io_uring
# alternated in the same run, REPS repetitions, medians. Prints MB/s and
# client CPU per byte for each, and io_uring's ratios to epoll's.
# nginx (one worker) serves the files from memory-backed /tmp with sendfile
# on core SERVER_CPU (0); the client runs on core CLIENT_CPU (1).
#
#   scripts/bench-backends.sh            # REPS=5 DUR=3 BIG=5
#   scripts/bench-backends.sh --quick    # REPS=1 DUR=2 (smoke test)
#
# Environment: REPS (5), DUR (3), BIG (100 MiB requests a run, 5), PORT
# (18094), SCRATCH (a swift build --scratch-path), POCKET_BENCH (a binary
# to use instead of building one).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib/nginx-conf.sh
. scripts/lib/bench-common.sh
log() { echo "bench-backends: $*" >&2; }

DUR="${DUR:-3}"
bench_args bench-backends '2,15p' "$@"
BIG="${BIG:-5}"
PORT="${PORT:-18094}"
SERVER_CPU="${SERVER_CPU:-0}"
CLIENT_CPU="${CLIENT_CPU:-1}"
need=()
bench_need_base
command -v python3 >/dev/null 2>&1 || need+=(python3)
bench_install "${need[@]}"
bench_check_cpus

TMP="$(mktemp -d /tmp/pocket-bench-backends.XXXXXX)"
cleanup() {
  bench_stop_nginx
  rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

BIN="${POCKET_BENCH:-}"
[ -n "$BIN" ] || BIN="$(bench_build_pocket_bench)"

WWW="$TMP/www"
mkdir -p "$WWW"
chmod 755 "$TMP" "$WWW"
head -c $((64 * 1024)) /dev/urandom >"$WWW/64k.bin"
head -c $((100 * 1024 * 1024)) /dev/urandom >"$WWW/100m.bin"
bench_files_conf "$NGINX" "$PORT" "$SERVER_CPU" "$WWW"
bench_start_nginx "$NGINX" "$TMP/nginx.conf" "$PORT" "$SERVER_CPU"

# One run: prints "MB/s cpu_ns_per_byte requests errors" (or "fail").
run() { # backend body
  local out="$TMP/run.json" args
  if [ "$2" = 64k ]; then
    args=(--connections 64 --requests 1000000000 --max-seconds "$DUR")
  else
    args=(--connections 1 --requests "$BIG" --warmup 1 --body-sink discard)
  fi
  if ! taskset -c "$CLIENT_CPU" "$BIN" --url "http://127.0.0.1:$PORT/$2.bin" "${args[@]}" \
      --io-backend "$1" --json >"$out" 2>"$TMP/run.err"; then
    echo fail
    return
  fi
  python3 - "$out" <<'EOF'
import json, sys
d = json.loads(open(sys.argv[1]).read().strip().splitlines()[-1])
b = max(d["bytes"], 1)
print("%.1f %.3f %d %d" % (d["bytes_per_s"] / 1e6, d["cpu_s"] * 1e9 / b, d["requests"], d["errors"]))
EOF
}

log "$REPS repetitions; 64 KiB: 64 connections x ${DUR}s; 100 MiB: 1 connection x $BIG requests"
printf '%-4s %-9s %-9s %10s %14s %9s %7s\n' rep body backend MB/s cpu_ns/byte requests errors
declare -A rate cpu
for r in $(seq "$REPS"); do
  order=(epoll io_uring)
  [ $((r % 2)) = 0 ] && order=(io_uring epoll)
  for body in 64k 100m; do
    for backend in "${order[@]}"; do
      read -r mbs cpb n e <<<"$(run "$backend" "$body")"
      printf '%-4s %-9s %-9s %10s %14s %9s %7s\n' "$r" "$body" "$backend" "$mbs" "${cpb:--}" "${n:--}" "${e:--}"
      rate[$body.$backend]+=" $mbs"
      cpu[$body.$backend]+=" ${cpb:-}"
    done
  done
done

echo
echo "== medians of $REPS repetitions =="
echo "| body | backend | MB/s | client CPU ns/byte |"
echo "|---|---|---:|---:|"
for body in 64k 100m; do
  for backend in epoll io_uring; do
    # shellcheck disable=SC2086
    echo "| $body | $backend | $(median ${rate[$body.$backend]}) | $(median ${cpu[$body.$backend]}) |"
  done
done
echo
for body in 64k 100m; do
  # shellcheck disable=SC2086
  awk -v b="$body" -v ue="$(median ${rate[$body.io_uring]})" -v ee="$(median ${rate[$body.epoll]})" \
    -v uc="$(median ${cpu[$body.io_uring]})" -v ec="$(median ${cpu[$body.epoll]})" \
    'BEGIN { printf "%s: io_uring/epoll MB/s %.2f, CPU per byte %.2f\n", b, ue / ee, uc / ec }'
done
echo "machine: $(nproc) CPUs; kernel $(uname -r); $("$NGINX" -v 2>&1 | sed 's/.*: //')"
echo "command: taskset -c $CLIENT_CPU $BIN --url http://127.0.0.1:$PORT/{64k,100m}.bin {--connections 64 --max-seconds $DUR | --connections 1 --requests $BIG --body-sink discard} --io-backend {epoll,io_uring} --json"
