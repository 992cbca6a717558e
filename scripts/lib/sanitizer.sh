# Sourced by the scripts that build or run the package's own .build
# (scripts/test.sh, the documentation checks, scripts/gateway-smoke.sh,
# scripts/ci.sh) and by scripts/ci-sanitized.sh.
#
# POCKET_TEST_SANITIZER=address builds .build with AddressSanitizer, so that
# one build serves the test command's suite, the documentation checks, the
# gateway example and the differential checks: CI sets it, and its test
# command's suite is then its AddressSanitizer run. Unset (the default), the
# build is a plain debug build. Every `swift build`, `swift test` and
# `swift package` on .build passes "${SANITIZER_FLAGS[@]}": a build with other
# flags would rebuild everything.
SANITIZER_FLAGS=()
case "${POCKET_TEST_SANITIZER:-}" in
  "") ;;
  address|thread) SANITIZER_FLAGS=(--sanitize="$POCKET_TEST_SANITIZER") ;;
  *) echo "POCKET_TEST_SANITIZER is address or thread, not '$POCKET_TEST_SANITIZER'" >&2; exit 2 ;;
esac

# sanitizer_env: how a sanitized process reports. A report ends the process
# at once with an exit status (halt_on_error; no abort, so no crash handler
# runs). The Swift runtime's backtracer is off: on a sanitizer's abort it
# tried to suspend the process's threads forever ("failed to suspend thread
# ... while processing a crash"). Leaks are reported, but for the Swift
# runtime's own (scripts/lsan-swift.supp).
sanitizer_env() {
  local root
  root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
  export SWIFT_BACKTRACE=enable=no
  export TSAN_OPTIONS="suppressions=$root/scripts/tsan.supp halt_on_error=1 atexit_sleep_ms=100"
  export ASAN_OPTIONS="detect_leaks=1 quarantine_size_mb=16 halt_on_error=1"
  export LSAN_OPTIONS="suppressions=$root/scripts/lsan-swift.supp"
}
