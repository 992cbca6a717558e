#!/usr/bin/env bash
# Everything CI checks (.ci/run runs this after `apt-get update`), step by
# step, each under its own time limit (scripts/lib/steps.sh):
#   1. the system packages (scripts/setup.sh) and the package graph resolved;
#   2. the README's test command (scripts/test.sh): the debug build, the
#      suite, a replay of every fuzz corpus; in CI under AddressSanitizer
#      and on the epoll backend (POCKET_TEST_SANITIZER=address,
#      scripts/lib/sanitizer.sh; POCKET_IO_BACKEND=epoll): the suite is
#      CI's AddressSanitizer run, and its build serves steps 6-8;
#   3. make check: the wording check, the engine's layering, the C tests
#      under ASan+UBSan;
#   4. every libFuzzer harness (C and Swift) for FUZZ_SECONDS (default 5;
#      the Swift ones on the replay's unoptimized build; fuzz for longer by
#      hand, fuzz/run.sh TARGET SECONDS);
#   5. the counting gate (scripts/perf-gate.sh): instructions and heap
#      allocations per request against Benchmarks/baseline.json, on a
#      release build of its own (.build-gate) made from the start;
#   6. the gateway example (Examples/Gateway): built, one request through
#      each variant (GATEWAY=0 skips it); under .ci/run
#      (POCKET_GATEWAY_EXAMPLE=1) it is a target of the package's own build;
#   7. the DocC catalog (warnings are errors), doc comment coverage, and
#      every Swift block of the README and the articles compiled, all three
#      on the debug build of step 2;
#   8. the differential checks of the debug build's pocket CLI against
#      curl (scripts/differential.py: cookies, NO_PROXY);
#   9. the Swift suite under ThreadSanitizer on the default backend,
#      io_uring (step 2's runs on epoll, so both backends run every test),
#      scripts/ci-sanitized.sh: built as soon as the packages are in, its
#      suite run once its build and step 2's suite are done.
# One build serves the test command and the AddressSanitizer run: a debug
# build of its own would be a fifth of CI's CPU. On two cores nothing waits
# for a free core. Only the two suites (step 2's and step 9's) measure time,
# so they run at normal priority, one after the other; every build and
# every other step runs beside them at nice 10 and takes what they leave.
# A background step's time limit allows for the wait: while the test
# command builds, the background gets little of the cores.
# A step runs alone as its command: `scripts/test.sh`, `make check`,
# `fuzz/run.sh all 5`, `scripts/perf-gate.sh`, `scripts/gateway-smoke.sh`,
# `swift package --disable-sandbox generate-documentation --target Pocket
# --warnings-as-errors`, `scripts/check-doc-coverage.sh`,
# `scripts/check-doc-snippets.sh`, `scripts/differential.py cookies|noproxy`,
# `scripts/ci-sanitized.sh thread` (or --build-only, then --skip-build),
# each with POCKET_TEST_SANITIZER=address in the environment (and
# `swift package --sanitize=address ...`).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib/steps.sh
# As in test.sh: a process this run starts and leaves behind fails it.
. scripts/lib/processes.sh
leftovers_guard ci.sh
# swift-build starts its compilers at nice 0: the keeper gives them their
# build's nice value back (scripts/lib/nice-keeper.sh).
. scripts/lib/nice-keeper.sh
nice_keeper_start
FUZZ_SECONDS=${FUZZ_SECONDS:-5}
export FUZZ_SECONDS
# The test command's build and suite under AddressSanitizer, and every step
# that runs what it built (the gateway, the CLI of the differential checks)
# with the sanitizers' report settings.
export POCKET_TEST_SANITIZER=address
. scripts/lib/sanitizer.sh
sanitizer_env
# Step 9's suites wait for step 2's suite to end: this file appears when
# it has (test.sh creates it; the step's end creates it too, should the
# test command fail before its suite).
POCKET_SUITE_DONE=$(mktemp -u /tmp/pocket-ci-suite-done.XXXXXX)
trap 'rc=$?; nice_keeper_stop; rm -f "$POCKET_SUITE_DONE"; (exit "$rc"); leftovers_check' EXIT
export POCKET_SUITE_DONE

step "system packages, package graph" 900 bash -c 'scripts/setup.sh && swift package resolve'
# The sanitizer builds below share Package.resolved: they do not resolve
# again (their graph is a part of this one). The gate's build may: the
# resolved file's hash covers the manifest's text, not the dependencies an
# environment variable adds (the gateway's), so a file resolved before
# without them looks current to `swift package resolve`.
export POCKET_RESOLVED=1
# ci_sanitized SANITIZER: its build (nice 10), then, once step 2's suite is done,
# its suite at normal priority; each phase's time is printed.
ci_sanitized() {
  local t0=$SECONDS
  nice -n 10 scripts/ci-sanitized.sh "$1" --build-only
  echo "== $1: built in $((SECONDS - t0)) s"
  until [ -e "$POCKET_SUITE_DONE" ]; do sleep 1; done
  t0=$SECONDS
  scripts/ci-sanitized.sh "$1" --skip-build
  echo "== $1: suite ran in $((SECONDS - t0)) s"
}
export -f ci_sanitized
step_bg "ThreadSanitizer: build, then the suite" 2700 bash -c 'ci_sanitized thread'
step_bg "make check (wording, layering, C tests under ASan+UBSan)" 2700 nice -n 10 make check
# The gate's release build has a scratch path of its own, so it runs beside
# the test command's debug build (SwiftPM locks a scratch path per build).
step_bg "counting gate: release build, then the count (scripts/perf-gate.sh)" 2700 nice -n 10 bash -c \
  'swift build -c release --product pocket-bench --scratch-path .build-gate \
     && POCKET_BENCH=.build-gate/release/pocket-bench scripts/perf-gate.sh'
step "README test command (scripts/test.sh), under AddressSanitizer, epoll backend" 2400 \
  env POCKET_IO_BACKEND=epoll scripts/test.sh
touch "$POCKET_SUITE_DONE"
# FUZZ_QUICK=1: the Swift harnesses fuzz on the build the test command's
# replay made (fuzz/run.sh).
step_bg "fuzz every harness for ${FUZZ_SECONDS} s" 1800 env FUZZ_QUICK=1 nice -n 10 fuzz/run.sh all "$FUZZ_SECONDS"
if [ "${GATEWAY:-1}" = 1 ]; then
  step "gateway example: build, one request per variant" 1800 nice -n 10 scripts/gateway-smoke.sh
fi
step "documentation (DocC, warnings are errors)" 900 nice -n 10 \
  swift package "${SANITIZER_FLAGS[@]}" --disable-sandbox generate-documentation --target Pocket --warnings-as-errors
step "documentation coverage (every public declaration has ///)" 300 nice -n 10 scripts/check-doc-coverage.sh
step "documentation examples compile" 900 nice -n 10 scripts/check-doc-snippets.sh
step "differential checks against curl (cookies, NO_PROXY)" 900 \
  nice -n 10 bash -c 'python3 scripts/differential.py cookies && python3 scripts/differential.py noproxy'
steps_wait
steps_summary
