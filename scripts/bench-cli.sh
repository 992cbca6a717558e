#!/usr/bin/env bash
# The `pocket` command beside the curl CLI, side by side in one run, against
# the C bench server on loopback (Benchmarks/bench-server, built here; it
# answers 13 bytes and reads every request body to its end):
#   - peak RSS (/usr/bin/time -f %M) of `pocket -s -o /dev/null URL` and of
#     `curl -s -o /dev/null URL` (a small GET), the same over HTTPS (a second
#     server with TLS on PORT+1, its certificate given with --cacert), and of
#     `pocket --help` and `curl --help`;
#   - a 1 GiB multipart upload, `pocket -F file=@big URL` and `curl -F
#     file=@big URL`: peak RSS and wall time (speed = bytes / time).
# REPS repetitions, interleaved (pocket, curl, pocket, ...); medians. With two
# CPUs or more, the server runs on CPU 0 and the clients on CPU 1 (taskset).
#   REPS=7 POCKET=.build/release/pocket scripts/bench-cli.sh
# POCKET defaults to the command as shipped: a release build with the Swift
# runtime linked statically (STATIC=0: shared; scripts/lib/bench-common.sh).
# Environment: REPS (7), UPLOAD_REPS (7), PORT (18095), UPLOAD_MIB (1024).
set -euo pipefail
cd "$(dirname "$0")/.."
REPS="${REPS:-7}"; UPLOAD_REPS="${UPLOAD_REPS:-7}"; PORT="${PORT:-18095}"; UPLOAD_MIB="${UPLOAD_MIB:-1024}"
. scripts/lib/processes.sh
. scripts/lib/bench-common.sh
log() { echo "bench-cli: $*" >&2; }
TMP="$(mktemp -d /tmp/pocket-bench-cli.XXXXXX)"
SERVER_PID=""; TLS_SERVER_PID=""
cleanup() { if [ -n "$SERVER_PID$TLS_SERVER_PID" ]; then stop_pids $SERVER_PID $TLS_SERVER_PID; fi; rm -rf "$TMP"; }
trap cleanup EXIT

if [ -z "${POCKET:-}" ]; then
  STATIC="${STATIC:-1}"
  POCKET="$(bench_build_product pocket)" || exit 1
fi
cc -O2 -D_GNU_SOURCE -pthread -IBenchmarks/CPocketBenchServer/include Benchmarks/CPocketBenchServer/pkbs_server.c \
  Benchmarks/CPocketBenchServer/pkbs_tls.c Benchmarks/bench-server/main.c -o "$TMP/bench-server" -lssl -lcrypto
PIN_SERVER=(); PIN_CLIENT=()
if [ "$(nproc)" -ge 2 ] && command -v taskset >/dev/null 2>&1; then PIN_SERVER=(taskset -c 0); PIN_CLIENT=(taskset -c 1); fi
spawn_bg "${PIN_SERVER[@]}" "$TMP/bench-server" --port "$PORT" >"$TMP/server.out" 2>&1
SERVER_PID=$SPAWNED_PID
spawn_bg "${PIN_SERVER[@]}" "$TMP/bench-server" --port "$((PORT + 1))" --tls "$TMP/ca.pem" >"$TMP/tls-server.out" 2>&1
TLS_SERVER_PID=$SPAWNED_PID
for port in "$PORT" "$((PORT + 1))"; do
  for _ in $(seq 100); do (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break; sleep 0.05; done
done
URL="http://127.0.0.1:$PORT/"
TLS_URL="https://127.0.0.1:$((PORT + 1))/"
log "pocket: $POCKET ($(ldd "$POCKET" | grep -c '=>') shared libraries; Foundation: $(ldd "$POCKET" | awk '{ print $1 }' | grep -E '^lib_?Foundation' | tr '\n' ' '))"
log "curl: $(curl --version | head -1)"

median() { printf '%s\n' "$@" | sort -g | awk '{ a[NR] = $1 } END { print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }
rss() { /usr/bin/time -f %M -o "$TMP/rss" "${PIN_CLIENT[@]}" "$@" >/dev/null 2>&1 || true; tail -1 "$TMP/rss"; }

declare -a P_GET C_GET P_TLS C_TLS P_HELP C_HELP
# Each command must succeed once before it is measured.
for client in "$POCKET" curl; do
  "$client" -sS -f -o /dev/null "$URL" && "$client" -sS -f -o /dev/null --cacert "$TMP/ca.pem" "$TLS_URL" || {
    log "a GET failed: $client"; exit 1; }
done
for _ in $(seq "$REPS"); do
  P_GET+=("$(rss "$POCKET" -s -o /dev/null "$URL")")
  C_GET+=("$(rss curl -s -o /dev/null "$URL")")
  P_TLS+=("$(rss "$POCKET" -s -o /dev/null --cacert "$TMP/ca.pem" "$TLS_URL")")
  C_TLS+=("$(rss curl -s -o /dev/null --cacert "$TMP/ca.pem" "$TLS_URL")")
  P_HELP+=("$(rss "$POCKET" --help)")
  C_HELP+=("$(rss curl --help)")
done
printf '%-34s %10s %10s %7s\n' "peak RSS (KiB), median of $REPS" pocket curl ratio
row() { printf '%-34s %10s %10s %7.2f\n' "$1" "$2" "$3" "$(awk -v a="$2" -v b="$3" 'BEGIN { print a / b }')"; }
row "GET 13 B, -s -o /dev/null" "$(median "${P_GET[@]}")" "$(median "${C_GET[@]}")"
row "the same over HTTPS" "$(median "${P_TLS[@]}")" "$(median "${C_TLS[@]}")"
row "--help" "$(median "${P_HELP[@]}")" "$(median "${C_HELP[@]}")"
echo "  each run (pocket GET): ${P_GET[*]}"
echo "  each run (curl GET):   ${C_GET[*]}"

head -c "$((UPLOAD_MIB << 20))" /dev/urandom >"$TMP/big"
declare -a P_UP_RSS C_UP_RSS P_UP_S C_UP_S
upload() { # client -> "rss_kib seconds"
  local start end
  start=$(date +%s.%N)
  /usr/bin/time -f %M -o "$TMP/rss" "${PIN_CLIENT[@]}" "$@" -s -o /dev/null -F "file=@$TMP/big" "${URL}upload" >/dev/null 2>"$TMP/err" || {
    log "upload failed: $*"; cat "$TMP/err" >&2; exit 1; }
  end=$(date +%s.%N)
  echo "$(tail -1 "$TMP/rss") $(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.3f", b - a }')"
}
for _ in $(seq "$UPLOAD_REPS"); do
  read -r r s <<<"$(upload "$POCKET")"; P_UP_RSS+=("$r"); P_UP_S+=("$s")
  read -r r s <<<"$(upload curl)"; C_UP_RSS+=("$r"); C_UP_S+=("$s")
done
pm=$(median "${P_UP_S[@]}"); cm=$(median "${C_UP_S[@]}")
printf '%-34s %10s %10s %7s\n' "$UPLOAD_MIB MiB -F upload, median of $UPLOAD_REPS" pocket curl ratio
row "peak RSS (KiB)" "$(median "${P_UP_RSS[@]}")" "$(median "${C_UP_RSS[@]}")"
printf '%-34s %10.1f %10.1f %7.2f\n' "MB/s (speed ratio pocket/curl)" \
  "$(awk -v s="$pm" -v m="$UPLOAD_MIB" 'BEGIN { print m * 1.048576 / s }')" \
  "$(awk -v s="$cm" -v m="$UPLOAD_MIB" 'BEGIN { print m * 1.048576 / s }')" \
  "$(awk -v p="$pm" -v c="$cm" 'BEGIN { print c / p }')"
echo "  each run (pocket s): ${P_UP_S[*]}   (curl s): ${C_UP_S[*]}"
echo "  each run (pocket RSS): ${P_UP_RSS[*]}   (curl RSS): ${C_UP_RSS[*]}"

# The same medians as a Markdown table (scripts/bench-page.py puts it in
# docs/BENCHMARKS.md). RSS in MB of 10^6 bytes, as curl's figures are usually given.
mb() { awk -v k="$1" 'BEGIN { printf "%.1f MB", k * 1024 / 1e6 }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }
mdrow() { echo "| $1 | $(mb "$2") | $(mb "$3") | $(ratio "$2" "$3") |"; }
echo
echo "| | pocket | curl | ÷ curl |"
echo "|---|---:|---:|---:|"
mdrow "\`-s -o /dev/null URL\` (13 bytes), peak RSS" "$(median "${P_GET[@]}")" "$(median "${C_GET[@]}")"
mdrow "the same over HTTPS (\`--cacert\`), peak RSS" "$(median "${P_TLS[@]}")" "$(median "${C_TLS[@]}")"
mdrow "\`--help\`, peak RSS" "$(median "${P_HELP[@]}")" "$(median "${C_HELP[@]}")"
mdrow "\`-F file=@big\` ($UPLOAD_MIB MiB), peak RSS" "$(median "${P_UP_RSS[@]}")" "$(median "${C_UP_RSS[@]}")"
echo "| \`-F file=@big\` ($UPLOAD_MIB MiB), MB/s | $(awk -v s="$pm" -v m="$UPLOAD_MIB" 'BEGIN { printf "%.0f", m * 1.048576 / s }') | $(awk -v s="$cm" -v m="$UPLOAD_MIB" 'BEGIN { printf "%.0f", m * 1.048576 / s }') | $(ratio "$cm" "$pm") |"
