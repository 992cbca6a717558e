#!/usr/bin/env bash
# CI, hardening part (issue #10), after scripts/test.sh:
#   1. the engine's C tests under ASan+UBSan (make check, clang outside SwiftPM),
#      then the Swift suite again on the epoll backend (test.sh ran it on the
#      default, io_uring where the kernel allows it);
#   2. every libFuzzer harness (C and Swift) for FUZZ_SECONDS (default 60)
#      from its corpus and crashers;
#   3. the Swift suite under AddressSanitizer, then ThreadSanitizer, each in
#      its own scratch path (.build-asan, .build-tsan) so the normal build
#      stays warm;
#   4. the gateway example (Examples/Gateway, a package of its own with
#      Hummingbird and AsyncHTTPClient): built once, one request through
#      each variant (scripts/gateway-smoke.sh; its first release build took
#      16 minutes on the loaded 2-core machine; GATEWAY=0 skips it);
#   5. the DocC catalog (Sources/Pocket/Pocket.docc) with swift-docc-plugin,
#      warnings as errors (about a minute), then scripts/check-doc-coverage.sh:
#      every public declaration of the library products has a doc comment.
# Prints the time of each step; the whole script takes about 20 minutes on
# the 2-core CI machine (see docs/FUZZING.md for a measured run).
set -euo pipefail
cd "$(dirname "$0")/.."
# As in test.sh: a process this run starts and leaves behind fails it.
. scripts/lib/processes.sh
leftovers_guard ci-extra.sh
FUZZ_SECONDS=${FUZZ_SECONDS:-60}
mkdir -p .build

step() {
  local name=$1
  shift
  local t0=$SECONDS
  echo "== $name"
  "$@"
  echo "== $name: ok in $((SECONDS - t0)) s"
}

swift_sanitized() {
  local sanitizer=$1
  local scratch=.build-${sanitizer/address/asan}
  scratch=${scratch/thread/tsan}
  swift build --build-tests --sanitize="$sanitizer" --scratch-path "$scratch"
  # Suppressions: scripts/lsan-swift.supp and scripts/tsan.supp say what and why.
  # A small ASan quarantine: the suite's memory-bound assertions measure RSS,
  # and the default 256 MB quarantine of freed blocks would count against them.
  TSAN_OPTIONS="suppressions=$PWD/scripts/tsan.supp halt_on_error=1" \
  ASAN_OPTIONS="detect_leaks=1 quarantine_size_mb=16" \
  LSAN_OPTIONS="suppressions=$PWD/scripts/lsan-swift.supp" \
    swift test --skip-build --disable-swift-testing --sanitize="$sanitizer" --scratch-path "$scratch" \
    2>&1 | tee ".build/test-$sanitizer.txt"
  grep -qE "Executed [0-9]+ tests?, with 0 failures" ".build/test-$sanitizer.txt"
}

swift_on_epoll() {
  POCKET_IO_BACKEND=epoll swift test --skip-build --disable-swift-testing 2>&1 | tee .build/test-epoll.txt
  grep -qE "Executed [0-9]+ tests?, with 0 failures" .build/test-epoll.txt
}

total0=$SECONDS
step "make check (ASan+UBSan C tests)" make check
# test.sh ran the suite on the default backend (io_uring where the kernel
# allows it); here it runs again on epoll alone, on test.sh's build.
step "swift test on epoll (POCKET_IO_BACKEND=epoll)" swift_on_epoll
step "fuzz every harness for ${FUZZ_SECONDS}s" fuzz/run.sh all "$FUZZ_SECONDS"
step "swift test --sanitize=address" swift_sanitized address
step "swift test --sanitize=thread" swift_sanitized thread
if [ "${GATEWAY:-1}" = 1 ]; then
  step "gateway example: build, one request per variant" scripts/gateway-smoke.sh
fi
step "documentation (DocC, warnings are errors)" \
  swift package --disable-sandbox generate-documentation --target Pocket --warnings-as-errors
step "documentation coverage (every public declaration has ///)" scripts/check-doc-coverage.sh
echo "ci-extra: all clean in $((SECONDS - total0)) s"
