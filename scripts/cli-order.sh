#!/usr/bin/env bash
# Writes Sources/PocketCLI/pocket.order: the functions the `pocket` command
# runs for its common commands, each named once in the order first met,
# which scripts/build-cli.sh hands to the linker (--symbol-ordering-file)
# so that a command's code sits together (scripts/lib/bench-common.sh says
# why that is memory). Run it when the command's code changes much: a
# function missing from the file still works, it only sits elsewhere; the
# `cli` benchmark (scripts/bench-cli.sh) shows what the order is worth.
#
# The commands run under valgrind's callgrind (no hardware counter needed)
# against the C bench server on loopback, plain and TLS: --help, a GET to
# /dev/null, to stdout, to a file, with -i, over HTTPS, a form POST and a
# multipart upload.
#   scripts/cli-order.sh          (needs valgrind: apt-get install valgrind)
# Environment: PORT (18097; the TLS server takes PORT+1).
set -euo pipefail
cd "$(dirname "$0")/.."
PORT="${PORT:-18097}"
. scripts/lib/processes.sh
. scripts/lib/bench-common.sh
log() { echo "cli-order: $*" >&2; }
command -v valgrind >/dev/null || { log "needs valgrind (apt-get install valgrind)"; exit 1; }
TMP="$(mktemp -d /tmp/pocket-cli-order.XXXXXX)"
PIDS=()
cleanup() { if [ ${#PIDS[@]} -gt 0 ]; then stop_pids "${PIDS[@]}"; fi; rm -rf "$TMP"; }
trap cleanup EXIT

# The order does not change what runs: the profile of the unordered build
# serves. Valgrind cannot read the static binary's compressed DWARF, so it
# runs a copy without debug sections (the symbol table stays).
BIN="$(ORDER=0 STATIC=1 bench_build_product pocket)"
objcopy --strip-debug "$BIN" "$TMP/pocket"
cc -O2 -D_GNU_SOURCE -pthread -IBenchmarks/CPocketBenchServer/include Benchmarks/CPocketBenchServer/pkbs_server.c \
  Benchmarks/CPocketBenchServer/pkbs_tls.c Benchmarks/bench-server/main.c -o "$TMP/bench-server" -lssl -lcrypto
spawn_bg "$TMP/bench-server" --port "$PORT" >"$TMP/plain.log" 2>&1
PIDS+=("$SPAWNED_PID")
spawn_bg "$TMP/bench-server" --port "$((PORT + 1))" --tls "$TMP/ca.pem" >"$TMP/tls.log" 2>&1
PIDS+=("$SPAWNED_PID")
for port in "$PORT" "$((PORT + 1))"; do
  for _ in $(seq 100); do (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break; sleep 0.05; done
done
URL="http://127.0.0.1:$PORT/"
printf 'a small file\n' >"$TMP/small"

n=0
profile() {
  n=$((n + 1))
  valgrind --tool=callgrind --demangle=no --compress-strings=no --compress-pos=no \
    --callgrind-out-file="$TMP/cg.$n" "$TMP/pocket" "$@" >/dev/null 2>"$TMP/valgrind.$n" || {
    log "failed: pocket $*"; tail -n 20 "$TMP/valgrind.$n" >&2; exit 1; }
}
profile --help
profile -s -o /dev/null "$URL"
profile -s "$URL"
profile -s -o "$TMP/out" "$URL"
profile -s -i "$URL"
profile -s -o /dev/null --cacert "$TMP/ca.pem" "https://127.0.0.1:$((PORT + 1))/"
profile -s -o /dev/null -d 'a=1' "$URL"
profile -s -o /dev/null -F "file=@$TMP/small" "${URL}upload"

# callgrind names every function that ran as fn= (and each callee as cfn=);
# addresses without a symbol are left out.
out=Sources/PocketCLI/pocket.order
for i in $(seq "$n"); do cat "$TMP/cg.$i"; done \
  | sed -n 's/^c\{0,1\}fn=//p' | grep -v '^0x' | awk '!seen[$0]++' >"$TMP/order"
[ -s "$TMP/order" ] || { log "no function names in the profiles"; exit 1; }
mv "$TMP/order" "$out"
log "$out: $(wc -l <"$out") functions from $n commands"
