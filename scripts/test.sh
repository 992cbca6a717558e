#!/usr/bin/env bash
# The test command: system packages, then the whole suite (XCTest) through
# real sockets on loopback (in-process test server and a real nginx), then a
# replay of the fuzz corpora and saved crashers.
set -euo pipefail
cd "$(dirname "$0")/.."
# Every process this run starts (setup, the XCTest process and what it
# spawns: nginx, openssl, curl, python3, pocket; the fuzz replays) inherits
# this marker. At the end, whatever the outcome, a process that still carries
# it is reported, stopped by its PID, and fails the run.
. scripts/lib/processes.sh
leftovers_guard test.sh
scripts/setup.sh
# POCKET_TEST_SANITIZER=address (CI): the build and the suite under
# AddressSanitizer (scripts/lib/sanitizer.sh).
. scripts/lib/sanitizer.sh
# Synchronization.Mutex parks on futexes ThreadSanitizer cannot see, so a
# contended one fails the TSan job as a data race: the package's pthread
# `Lock` (Sources/Pocket/Engine/Lock.swift) is the only lock.
if grep -rnE '\bMutex *[<(]' --include='*.swift' --exclude-dir='.build*' Sources Tests Benchmarks; then
  echo "Synchronization.Mutex is not used in this package: use Lock (see Sources/Pocket/Engine/Lock.swift)"; exit 1
fi
# What the suite needs: its test bundle and the two executables the CLI
# tests start; the two other benchmark executables are built to check that
# they compile. (`swift build --build-tests` would also compile the
# executables of every package in the graph: the documentation plugin's,
# hdrhistogram's examples.)
for product in PocketPackageTests pocket pocket-bench cache-bench schema-bench; do
  swift build --product "$product" ${SANITIZER_FLAGS[@]+"${SANITIZER_FLAGS[@]}"}
done
mkdir -p .build
# Fuzz regressions: every corpus input and saved crasher of every harness
# (C and Swift), once. The Swift harnesses need a build of Pocket with the
# sanitizers first (unoptimized; CI's fuzzing step reuses it). That build and
# the replays run beside the suite, at a lower priority: the suite keeps
# about one core busy, and they take the other.
replay_fuzz() {
  for target in $(fuzz/run.sh list); do
    fuzz/run.sh "$target" --replay > .build/fuzz-replay-"$target".txt 2>&1 \
      || { cat .build/fuzz-replay-"$target".txt; echo "fuzz replay of $target failed"; return 1; }
    echo "fuzz replay $target: ok"
  done
}
( renice -n 10 "$BASHPID" >/dev/null; replay_fuzz ) > .build/fuzz-replay.txt 2>&1 &
replay_pid=$!
suite_status=0
( [ ${#SANITIZER_FLAGS[@]} -eq 0 ] || sanitizer_env
  swift test --skip-build --disable-swift-testing ${SANITIZER_FLAGS[@]+"${SANITIZER_FLAGS[@]}"} ) 2>&1 \
  | tee .build/test-output.txt || suite_status=$?
# CI (scripts/ci.sh) starts the sanitized suites once this one has ended,
# while the replays may still run: it names a file to create then.
if [ -n "${POCKET_SUITE_DONE:-}" ]; then touch "$POCKET_SUITE_DONE"; fi
replay_status=0
wait "$replay_pid" || replay_status=$?
cat .build/fuzz-replay.txt
[ "$suite_status" -eq 0 ] || { echo "the suite failed"; exit "$suite_status"; }
[ "$replay_status" -eq 0 ] || exit "$replay_status"
# One plain closing line with the XCTest totals.
summary=$(grep -E "Executed [0-9]+ tests?, with [0-9]+ failures?" .build/test-output.txt | tail -1)
total=$(echo "$summary" | sed -E 's/.*Executed ([0-9]+) tests?.*/\1/')
failed=$(echo "$summary" | sed -E 's/.*with ([0-9]+) failures?.*/\1/')
echo "$((total - failed)) passed, $failed failed"
