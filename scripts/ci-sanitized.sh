#!/usr/bin/env bash
# The Swift suite under a sanitizer, in a scratch path of its own:
#
#   scripts/ci-sanitized.sh address|thread [extra swift test args]
#   scripts/ci-sanitized.sh address|thread --build-only
#   scripts/ci-sanitized.sh address|thread --skip-build [extra swift test args]
#
# (CI builds the ThreadSanitizer one while its other steps run and runs
# its suite once the test command's suite is done; its AddressSanitizer
# run is the test command's own suite, POCKET_TEST_SANITIZER=address,
# scripts/lib/sanitizer.sh. POCKET_RESOLVED=1: the package graph is
# resolved already, and the build does not resolve it again.)
#
# It builds the library, the `pocket` tool and their tests
# (POCKET_SANITIZER_CORE=1, see the end of Package.swift). Under
# AddressSanitizer the suite runs on the epoll backend; under
# ThreadSanitizer on the default, io_uring where the kernel allows it. In CI
# the test command's suite is the AddressSanitizer run, on epoll, so both
# backends run every test.
# A sanitizer report ends the test process at once with an exit status and
# fails this script (scripts/lib/sanitizer.sh). The caller's time limit
# (scripts/lib/steps.sh) ends anything else that would hang.
set -euo pipefail
cd "$(dirname "$0")/.."
sanitizer=$1
shift
phase=all
case "${1:-}" in
  --build-only) phase=build; shift ;;
  --skip-build) phase=test; shift ;;
esac
case "$sanitizer" in
  address) scratch=.build-asan; backend=epoll ;;
  thread) scratch=.build-tsan; backend= ;;
  *) echo "usage: $0 address|thread" >&2; exit 2 ;;
esac
export POCKET_SANITIZER_CORE=1
mkdir -p .build
if [ "$phase" != test ]; then
  # Line tables are all a report needs (file:line in its stacks), and the
  # build is a tenth cheaper than with full debug information.
  resolution=()
  [ "${POCKET_RESOLVED:-}" != 1 ] || resolution=(--disable-automatic-resolution)
  swift build --build-tests --sanitize="$sanitizer" --scratch-path "$scratch" -Xswiftc -gline-tables-only \
    ${resolution[@]+"${resolution[@]}"}
fi
[ "$phase" != build ] || exit 0
# Suppressions: scripts/lsan-swift.supp and scripts/tsan.supp say what and why.
# TSan sleeps a whole second in every process's exit by default (its
# atexit_sleep_ms, for races at exit): the CLI tests start the TSan-built
# `pocket` hundreds of times, so that sleep alone cost six minutes. 100 ms
# still lets a thread that races the exit report.
# A small ASan quarantine: the suite's memory-bound assertions measure RSS,
# and the default 256 MB quarantine of freed blocks would count against them.
. scripts/lib/sanitizer.sh
sanitizer_env
POCKET_IO_BACKEND=$backend \
  swift test --skip-build --disable-swift-testing --sanitize="$sanitizer" --scratch-path "$scratch" "$@" \
  2>&1 | tee ".build/test-$sanitizer.txt"
grep -qE "Executed [0-9]+ tests?, with 0 failures" ".build/test-$sanitizer.txt"
