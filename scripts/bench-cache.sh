#!/usr/bin/env bash
# The response cache's figures: a fresh hit (memory and disk stores) and a
# 304 revalidation against a network GET of the same 16 KiB file, through
# `client.send`, sequentially on one keep-alive connection per client.
# nginx from Debian on loopback (one worker pinned to core 0) serves
# /fresh/body.bin with `expires 1h` and /revalidate/body.bin with
# `Cache-Control: no-cache` (nginx's ETag makes every request a 304);
# cache-bench runs pinned to core 1.
#
#   scripts/bench-cache.sh            # REQUESTS=5000 REPS=3
#   scripts/bench-cache.sh --quick    # REQUESTS=1000 REPS=1
#
# Environment: REQUESTS (5000), REPS (3), BYTES (16384), PORT (18090),
# SERVER_CPU (0), CLIENT_CPU (1), SCRATCH (a swift build --scratch-path).
set -euo pipefail

cd "$(dirname "$0")/.."
. scripts/lib/nginx-conf.sh
. scripts/lib/bench-common.sh

QUICK=0
for a in "$@"; do
  case "$a" in
    --quick) QUICK=1 ;;
    -h|--help) sed -n 2,15p "$0"; exit 0 ;;
    *) echo "bench-cache: unknown argument '$a'" >&2; exit 2 ;;
  esac
done
if [ "$QUICK" = 1 ]; then REQUESTS="${REQUESTS:-1000}"; REPS="${REPS:-1}"; fi
REQUESTS="${REQUESTS:-5000}"
REPS="${REPS:-3}"
BYTES="${BYTES:-16384}"
PORT="${PORT:-18090}"
SERVER_CPU="${SERVER_CPU:-0}"
CLIENT_CPU="${CLIENT_CPU:-1}"

log() { echo "bench-cache: $*" >&2; }

need=()
bench_need_base
bench_install "${need[@]}"
bench_check_cpus

TMP="$(mktemp -d /tmp/pocket-bench-cache.XXXXXX)"
cleanup() {
  bench_stop_nginx
  rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

args=()
[ -n "${SCRATCH:-}" ] && args=(--scratch-path "$SCRATCH")
log "building cache-bench (release)"
swift build -c release --product cache-bench "${args[@]}" >"$TMP/build.log" 2>&1 || { cat "$TMP/build.log" >&2; exit 1; }
BIN="$(swift build -c release "${args[@]}" --show-bin-path)/cache-bench"

mkdir -p "$TMP/www/fresh" "$TMP/www/revalidate"
# nginx's workers (nobody when started as root) read the files.
chmod 755 "$TMP"
head -c "$BYTES" /dev/urandom >"$TMP/www/fresh/body.bin"
cp "$TMP/www/fresh/body.bin" "$TMP/www/revalidate/body.bin"
{
  nginx_conf_prelude "$NGINX" "$TMP" "$SERVER_CPU"
  cat <<EOF2
    server {
        listen 127.0.0.1:$PORT;
        root $TMP/www;
        default_type application/octet-stream;
        location /fresh/ { expires 1h; }
        location /revalidate/ { add_header Cache-Control no-cache; }
    }
}
EOF2
} >"$TMP/nginx.conf"
bench_start_nginx "$NGINX" "$TMP/nginx.conf" "$PORT" "$SERVER_CPU" || exit 1

log "running (REQUESTS=$REQUESTS REPS=$REPS BYTES=$BYTES)"
taskset -c "$CLIENT_CPU" "$BIN" --url "http://127.0.0.1:$PORT" --requests "$REQUESTS" --reps "$REPS"
