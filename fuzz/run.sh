#!/usr/bin/env bash
# Builds and runs a libFuzzer harness of the C engine.
#
#   fuzz/run.sh TARGET SECONDS    fuzz for SECONDS over a copy of the corpus
#   fuzz/run.sh TARGET --replay   run corpus + crashers once (regression check)
#   fuzz/run.sh TARGET --coverage line coverage of the engine over the grown
#                                 corpus (fuzz/out/TARGET/corpus, else the
#                                 seeds) with llvm-cov: a plain build with
#                                 -fprofile-instr-generate -fcoverage-mapping
#   fuzz/run.sh all SECONDS|--replay|--coverage   every target in turn
#
# Targets: h1_parse (response head parser), chunked (chunked decoder),
# inflate (gzip/deflate), h1_write (request writer), engine (the whole
# engine against a loopback server fed the input as its response).
# Every fuzzing run uses the HTTP dictionary fuzz/http.dict.
#
# The harness is fuzz/fuzz_TARGET.c, linked with the engine sources listed in
# SOURCES_TARGET below. Seeds: fuzz/corpus/TARGET/. Inputs that once crashed:
# fuzz/crashers/TARGET/ (add every finding there). Output: fuzz/build/ (the
# binary) and fuzz/out/TARGET/ (the growing corpus and crash artifacts).
# Exits non-zero when the harness crashes.
# Environment: CLANG (default /opt/swift/usr/bin/clang), FUZZ_MAX_LEN (16384).
set -euo pipefail

# Engine sources (in Sources/CHTTPEngine) each harness needs.
SOURCES_h1_parse="pk_h1_parse.c pk_error.c"
SOURCES_inflate="pk_inflate.c pk_error.c"
SOURCES_chunked="pk_h1_parse.c pk_error.c"
SOURCES_h1_write="pk_h1_write.c pk_h1_parse.c pk_error.c"
SOURCES_engine="pk_conn.c pk_dns.c pk_error.c pk_h1_parse.c pk_h1_write.c pk_inflate.c pk_loop.c pk_pool.c pk_tls.c"
TARGETS="h1_parse chunked inflate h1_write engine"

usage() {
  echo "usage: $0 TARGET SECONDS | $0 TARGET --replay" >&2
  exit 2
}

[ $# -eq 2 ] || usage
target=$1
mode=$2
cd "$(dirname "$0")/.."

if [ "$target" = all ]; then
  failed=""
  for t in $TARGETS; do
    "$0" "$t" "$mode" || failed="$failed $t"
  done
  [ -z "$failed" ] || { echo "$0: failed:$failed" >&2; exit 1; }
  exit 0
fi

var="SOURCES_${target}"
sources=${!var:-}
harness="fuzz/fuzz_${target}.c"
if [ -z "$sources" ] || [ ! -f "$harness" ]; then
  echo "$0: unknown target '$target' (need $harness and SOURCES_${target} in this script)" >&2
  exit 2
fi

CLANG=${CLANG:-/opt/swift/usr/bin/clang}
engine=Sources/CHTTPEngine
bin="fuzz/build/fuzz_${target}"
mkdir -p fuzz/build

files=()
for s in $sources; do files+=("$engine/$s"); done
corpus="fuzz/corpus/${target}"
crashers="fuzz/crashers/${target}"

if [ "$mode" = "--coverage" ]; then
  # A plain build (no sanitizers): libFuzzer's own driver runs each input once.
  cov="fuzz/build/cov_${target}"
  "$CLANG" -g -O0 -std=c11 -D_GNU_SOURCE -fsanitize=fuzzer \
    -fprofile-instr-generate -fcoverage-mapping -fuse-ld=lld \
    -I "$engine/include" -I "$engine" \
    "$harness" "${files[@]}" -o "$cov" -lpthread -lz -ldeflate -ldl
  dirs=()
  if [ -d "fuzz/out/${target}/corpus" ]; then dirs+=("fuzz/out/${target}/corpus"); else dirs+=("$corpus"); fi
  [ -d "$crashers" ] && dirs+=("$crashers")
  rm -f "fuzz/build/cov_${target}.profraw"
  LLVM_PROFILE_FILE="fuzz/build/cov_${target}.profraw" "$cov" -runs=0 "${dirs[@]}" > /dev/null 2>&1
  bindir=$(dirname "$CLANG")
  "$bindir/llvm-profdata" merge -sparse "fuzz/build/cov_${target}.profraw" -o "fuzz/build/cov_${target}.profdata"
  "$bindir/llvm-cov" report "$cov" -instr-profile="fuzz/build/cov_${target}.profdata" "${files[@]}"
  exit 0
fi

echo "building $bin"
"$CLANG" -g -O1 -std=c11 -D_GNU_SOURCE -Wall -Wextra \
  -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all -fuse-ld=lld \
  -I "$engine/include" -I "$engine" \
  "$harness" "${files[@]}" -o "$bin" -lpthread -lz -ldeflate -ldl

if [ "$mode" = "--replay" ]; then
  inputs=()
  for d in "$corpus" "$crashers"; do
    [ -d "$d" ] || continue
    while IFS= read -r -d '' f; do inputs+=("$f"); done < <(find "$d" -type f -print0 | sort -z)
  done
  if [ ${#inputs[@]} -eq 0 ]; then
    echo "no inputs in $corpus or $crashers" >&2
    exit 1
  fi
  echo "replaying ${#inputs[@]} inputs"
  # Files (not directories) as arguments: libFuzzer runs each once and exits.
  exec "$bin" "${inputs[@]}"
fi

case "$mode" in
  '' | *[!0-9]*) usage ;;
esac

out="fuzz/out/${target}"
mkdir -p "$out/corpus" "$out/artifacts"
[ -d "$corpus" ] && cp -n "$corpus"/* "$out/corpus/" 2>/dev/null || true
[ -d "$crashers" ] && cp -n "$crashers"/* "$out/corpus/" 2>/dev/null || true

echo "fuzzing $target for $mode s (corpus $out/corpus)"
set +e
"$bin" -max_total_time="$mode" -max_len="${FUZZ_MAX_LEN:-16384}" -print_final_stats=1 \
  -dict=fuzz/http.dict -artifact_prefix="$out/artifacts/" "$out/corpus"
rc=$?
set -e
if [ $rc -ne 0 ]; then
  echo "$0: $target crashed (exit $rc); the input is in $out/artifacts/." >&2
  echo "Fix it, then copy the input to $crashers/ so --replay keeps checking it." >&2
fi
exit $rc
