#!/usr/bin/env bash
# What CI checks after the README's test command (scripts/test.sh, run
# first by .ci/run: packages, the debug build, the suite, a replay of every
# fuzz corpus, whose release fuzzing builds step 3 reuses), step by step,
# each under its own time limit (scripts/lib/steps.sh):
#   2. make check: the wording check, the engine's layering, the C tests
#      under ASan+UBSan;
#   3. every libFuzzer harness (C and Swift) for FUZZ_SECONDS (default 5,
#      the Swift ones on the replay's unoptimized build:
#      a short run of each on top of the replay; fuzz for longer by hand,
#      fuzz/run.sh TARGET SECONDS);
#   4. the counting gate (scripts/perf-gate.sh): instructions and heap
#      allocations per request against Benchmarks/baseline.json;
#   5. the gateway example (Examples/Gateway): built, one request through
#      each variant (GATEWAY=0 skips it); under .ci/run
#      (POCKET_GATEWAY_EXAMPLE=1) the test command's build has built it;
#   6. the DocC catalog (warnings are errors), doc comment coverage, and
#      every Swift block of the README and the articles compiled, all three
#      on the debug build of step 1;
#   7. the differential checks of the debug build's pocket CLI against
#      curl (scripts/differential.py: cookies, NO_PROXY);
#   8. the Swift suite under AddressSanitizer, on the epoll backend, and
#      under ThreadSanitizer (scripts/ci-sanitized.sh).
# Steps 2 and 3, and the two sanitizer builds of step 8, run in the
# background beside 4 to 7: none of them shares a build directory with the
# package's own steps, and on two cores a step that keeps one core busy
# leaves the other to the rest. The two sanitized suites then run last, side
# by side and alone: each takes about one core, and some of their tests
# measure memory and time.
# A step runs alone as its command: `make check`, `fuzz/run.sh all 5`,
# `scripts/perf-gate.sh`, `scripts/gateway-smoke.sh`, `swift package
# --disable-sandbox generate-documentation --target Pocket
# --warnings-as-errors`, `scripts/check-doc-coverage.sh`,
# `scripts/check-doc-snippets.sh`, `scripts/differential.py cookies|noproxy`,
# `scripts/ci-sanitized.sh address|thread` (--build-only, then --skip-build).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib/steps.sh
# As in test.sh: a process this run starts and leaves behind fails it.
. scripts/lib/processes.sh
leftovers_guard ci.sh
FUZZ_SECONDS=${FUZZ_SECONDS:-5}
export FUZZ_SECONDS

step_bg "sanitizer builds (ASan, then TSan)" 2400 \
  bash -c 'scripts/ci-sanitized.sh address --build-only && scripts/ci-sanitized.sh thread --build-only'
step_bg "make check (wording, layering, C tests under ASan+UBSan)" 900 make check
# FUZZ_QUICK=1: the Swift harnesses fuzz on the build the test command's
# replay made (fuzz/run.sh).
step_bg "fuzz every harness for ${FUZZ_SECONDS} s" 1200 env FUZZ_QUICK=1 fuzz/run.sh all "$FUZZ_SECONDS"
step "counting gate (scripts/perf-gate.sh)" 1800 scripts/perf-gate.sh
if [ "${GATEWAY:-1}" = 1 ]; then
  step "gateway example: build, one request per variant" 1800 scripts/gateway-smoke.sh
fi
step "documentation (DocC, warnings are errors)" 900 \
  swift package --disable-sandbox generate-documentation --target Pocket --warnings-as-errors
step "documentation coverage (every public declaration has ///)" 300 scripts/check-doc-coverage.sh
step "documentation examples compile" 900 scripts/check-doc-snippets.sh
step "differential checks against curl (cookies, NO_PROXY)" 900 \
  bash -c 'python3 scripts/differential.py cookies && python3 scripts/differential.py noproxy'
steps_wait
step_bg "swift test --sanitize=address (epoll backend)" 1500 scripts/ci-sanitized.sh address --skip-build
step_bg "swift test --sanitize=thread" 1500 scripts/ci-sanitized.sh thread --skip-build
steps_wait
steps_summary
