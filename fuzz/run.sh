#!/usr/bin/env bash
# Builds and runs a libFuzzer harness of the C engine.
#
#   fuzz/run.sh TARGET SECONDS    fuzz for SECONDS over a copy of the corpus
#   fuzz/run.sh TARGET --replay   run corpus + crashers once (regression check;
#                                 a Swift harness without optimization)
#   fuzz/run.sh TARGET --coverage line coverage of the engine over the grown
#                                 corpus (fuzz/out/TARGET/corpus, else the
#                                 seeds) with llvm-cov: a plain build with
#                                 -fprofile-instr-generate -fcoverage-mapping
#   fuzz/run.sh all SECONDS|--replay|--coverage   every target in turn
#   fuzz/run.sh list              the targets' names
#
# Targets: h1_parse (response head parser), chunked (chunked decoder),
# inflate (gzip/deflate), h1_write (request writer), pool (the pool's
# decision function, random event sequences, its invariants), dns (the DNS
# response reader of DNS replica sets: RCODEs, records, truncation), engine (the whole
# engine against a socketpair server fed the input as its response), connect
# (the same engine through a proxy: the input answers CONNECT first); in
# Swift: multipart (the multipart/form-data encoder), schema (JSON parser and
# writer, schema validator), cookies (Set-Cookie, the cookie store with the
# public suffix list, the Netscape cookie file), auth (WWW-Authenticate and
# Proxy-Authenticate challenges, Digest), cache_headers (Cache-Control, Vary,
# Age, Expires, ETag, HTTP dates, Retry-After) and reach (redirect Location
# resolution, proxy variables and NO_PROXY with CIDR).
# Every fuzzing run of a C target uses the HTTP dictionary fuzz/http.dict; a
# Swift target uses fuzz/swift/TARGET.dict.
#
# A C harness is fuzz/fuzz_TARGET.c, linked with the engine sources listed in
# SOURCES_TARGET below. A Swift harness is the executable FuzzTARGET of the
# package fuzz/swift (depends on Pocket by path), built with SwiftPM and
# `-sanitize=fuzzer,address` (release, `-enable-testing`).
# Seeds: fuzz/corpus/TARGET/. Inputs that once crashed:
# fuzz/crashers/TARGET/ (add every finding there). Output: fuzz/build/ (the
# binary) and fuzz/out/TARGET/ (the growing corpus and crash artifacts).
# Exits non-zero when the harness crashes.
# Environment: CLANG (default /opt/swift/usr/bin/clang), FUZZ_MAX_LEN (16384),
# FUZZ_QUICK=1 (a Swift harness fuzzes on the replay's build, without
# optimization: for runs of a few seconds).
set -euo pipefail

# Engine sources (in Sources/CHTTPEngine) each harness needs.
SOURCES_h1_parse="pk_h1_parse.c pk_error.c"
SOURCES_inflate="pk_inflate.c pk_error.c"
SOURCES_chunked="pk_h1_parse.c pk_error.c"
SOURCES_h1_write="pk_h1_write.c pk_h1_parse.c pk_error.c"
SOURCES_pool="pk_pool.c pk_error.c"
SOURCES_dns="pk_dns_records.c"
SOURCES_engine="pk_conn.c pk_conn_connect.c pk_conn_read.c pk_conn_tunnel.c pk_conn_wait.c pk_conn_write.c pk_dns.c pk_engine.c pk_error.c pk_h1_parse.c pk_h1_write.c pk_inflate.c pk_loop.c pk_origin.c pk_pool.c pk_request.c pk_tls.c"
SOURCES_connect=$SOURCES_engine
TARGETS="h1_parse chunked inflate h1_write pool dns engine connect multipart schema cookies auth cache_headers reach"
# Swift targets: the executable in fuzz/swift, and the Pocket sources its
# coverage is reported for.
SWIFT_multipart="FuzzMultipart Sources/Pocket/Model/PocketMultipartForm+Encoding.swift Sources/Pocket/Model/PocketMultipartForm.swift"
SWIFT_schema="FuzzSchema Sources/Pocket/Schema"
SWIFT_cookies="FuzzCookies Sources/Pocket/Cookies"
SWIFT_auth="FuzzAuth Sources/Pocket/Auth/AuthChallenge.swift"
SWIFT_cache_headers="FuzzCacheHeaders Sources/Pocket/Cache/CacheRules.swift Sources/Pocket/Policies/Backoff.swift Sources/Pocket/Model/CivilDate.swift"
SWIFT_reach="FuzzReach Sources/Pocket/Proxy/PocketProxy.swift Sources/Pocket/RequestPath/RedirectFollower.swift"

usage() {
  echo "usage: $0 TARGET|all SECONDS|--replay|--coverage | $0 list" >&2
  exit 2
}

# `fuzz/run.sh list`: the targets, one per line (scripts/test.sh replays each).
if [ "${1:-}" = list ] && [ $# -eq 1 ]; then
  printf '%s\n' $TARGETS
  exit 0
fi

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

corpus="fuzz/corpus/${target}"
crashers="fuzz/crashers/${target}"

# Runs a built harness over the corpus and crashers once, or fuzzes it for
# $mode seconds over a copy of them (fuzz/out/TARGET), extra libFuzzer flags after.
run_harness() {
  local bin=$1
  shift
  if [ "$mode" = "--replay" ]; then
    local inputs=()
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
  local out="fuzz/out/${target}"
  mkdir -p "$out/corpus" "$out/artifacts"
  [ -d "$corpus" ] && cp -n "$corpus"/* "$out/corpus/" 2>/dev/null || true
  [ -d "$crashers" ] && cp -n "$crashers"/* "$out/corpus/" 2>/dev/null || true
  echo "fuzzing $target for $mode s (corpus $out/corpus)"
  set +e
  "$bin" -max_total_time="$mode" -max_len="${FUZZ_MAX_LEN:-16384}" -print_final_stats=1 \
    -artifact_prefix="$out/artifacts/" "$@" "$out/corpus"
  local rc=$?
  set -e
  if [ $rc -ne 0 ]; then
    echo "$0: $target crashed (exit $rc); the input is in $out/artifacts/." >&2
    echo "Fix it, then copy the input to $crashers/ so --replay keeps checking it." >&2
  fi
  exit $rc
}

# Runs the coverage build $1 over the grown corpus (else the seeds) and the
# crashers once, then reports line coverage of the files after it.
report_coverage() {
  local cov=$1
  shift
  local dirs=()
  if [ -d "fuzz/out/${target}/corpus" ]; then dirs+=("fuzz/out/${target}/corpus"); else dirs+=("$corpus"); fi
  [ -d "$crashers" ] && dirs+=("$crashers")
  rm -f "fuzz/build/cov_${target}.profraw"
  LLVM_PROFILE_FILE="fuzz/build/cov_${target}.profraw" "$cov" -runs=0 "${dirs[@]}" > /dev/null 2>&1
  local bindir
  bindir=$(dirname "$CLANG")
  "$bindir/llvm-profdata" merge -sparse "fuzz/build/cov_${target}.profraw" -o "fuzz/build/cov_${target}.profdata"
  "$bindir/llvm-cov" report "$cov" -instr-profile="fuzz/build/cov_${target}.profdata" "$@"
}

CLANG=${CLANG:-/opt/swift/usr/bin/clang}

svar="SWIFT_${target}"
if [ -n "${!svar:-}" ]; then
  read -r product covered <<< "${!svar}"
  # A failed Swift check is a fatalError: no interactive backtracer, a plain trap.
  export SWIFT_BACKTRACE=enable=no
  mkdir -p fuzz/build
  # Release with -enable-testing (the harnesses reach internal API). Linked
  # with lld: gold cannot export ASan's local symbols.
  swift_build() {
    # fuzz/swift depends on Pocket alone: not on the targets CI adds to the
    # package (the gateway example, the doc snippets).
    if ! env -u POCKET_GATEWAY_EXAMPLE -u POCKET_DOC_SNIPPETS swift build --package-path fuzz/swift --product "$product" -c release -Xswiftc -enable-testing \
      -Xswiftc -parse-as-library -Xswiftc -use-ld=lld "$@" > "fuzz/build/swift-$target.log" 2>&1; then
      grep -vE "Cannot export local symbol" "fuzz/build/swift-$target.log" | tail -40
      echo "$0: building $product failed" >&2
      exit 1
    fi
  }
  if [ "$mode" = "--coverage" ]; then
    scratch=fuzz/build/swift-cov
    echo "building $product with coverage"
    # With ASan as well: FuzzDriver calls LeakSanitizer's interface.
    swift_build --scratch-path "$scratch" -Xswiftc -sanitize=fuzzer,address \
      -Xswiftc -profile-generate -Xswiftc -profile-coverage-mapping
    bin="$scratch/release/$product"
    files=()
    for c in $covered; do
      if [ -d "$c" ]; then files+=("$c"/*.swift); else files+=("$c"); fi
    done
    report_coverage "$bin" "${files[@]}"
    exit 0
  fi
  # A replay (and a fuzzing run with FUZZ_QUICK=1, as CI's few seconds per
  # harness) takes a build without optimization, in a scratch path of its
  # own: it compiles in parallel in a fraction of the optimized build's
  # time (whole-module optimization of Pocket under the sanitizers takes
  # one core for minutes) and runs each input a few times slower, which a
  # replay does not notice. Fuzzing for longer takes the optimized build.
  if [ "$mode" = "--replay" ] || [ "${FUZZ_QUICK:-0}" = 1 ]; then
    echo "building $product (no optimization)"
    scratch=fuzz/swift/.build-quick
    swift_build --scratch-path "$scratch" -Xswiftc -Onone -Xswiftc -no-whole-module-optimization \
      -Xswiftc -sanitize=fuzzer,address
    bin="$scratch/release/$product"
  else
    echo "building $product"
    swift_build -Xswiftc -sanitize=fuzzer,address
    bin="fuzz/swift/.build/release/$product"
  fi
  run_harness "$bin" -dict="fuzz/swift/$target.dict"
fi

var="SOURCES_${target}"
sources=${!var:-}
harness="fuzz/fuzz_${target}.c"
if [ -z "$sources" ] || [ ! -f "$harness" ]; then
  echo "$0: unknown target '$target' (need $harness and SOURCES_${target} in this script)" >&2
  exit 2
fi

engine=Sources/CHTTPEngine
bin="fuzz/build/fuzz_${target}"
mkdir -p fuzz/build

files=()
for s in $sources; do files+=("$engine/$s"); done

if [ "$mode" = "--coverage" ]; then
  # A plain build (no sanitizers): libFuzzer's own driver runs each input once.
  cov="fuzz/build/cov_${target}"
  "$CLANG" -g -O0 -std=c11 -D_GNU_SOURCE -fsanitize=fuzzer \
    -fprofile-instr-generate -fcoverage-mapping -fuse-ld=lld \
    -I "$engine/include" -I "$engine" \
    "$harness" "${files[@]}" -o "$cov" -lpthread -lresolv -lz -ldeflate -lssl -lcrypto -luring
  report_coverage "$cov" "${files[@]}"
  exit 0
fi

# Built once for the replay and the fuzzing run alike: rebuilt only when the
# harness, an engine source or header, or this script is newer than it.
if [ -x "$bin" ] && [ -z "$(find "$harness" "${files[@]}" "$engine/include" "$engine"/*.h "$0" -newer "$bin" -print -quit)" ]; then
  echo "$bin is up to date"
  run_harness "$bin" -dict=fuzz/http.dict
fi
echo "building $bin"
"$CLANG" -g -O1 -std=c11 -D_GNU_SOURCE -Wall -Wextra \
  -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all -fuse-ld=lld -DPK_STATE_CHECKS \
  -I "$engine/include" -I "$engine" \
  "$harness" "${files[@]}" -o "$bin" -lpthread -lresolv -lz -ldeflate -lssl -lcrypto -luring

run_harness "$bin" -dict=fuzz/http.dict
