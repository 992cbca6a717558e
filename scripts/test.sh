#!/usr/bin/env bash
# The test command: system packages, then the whole suite (XCTest) through
# real sockets on loopback, plus a short replay of the fuzz corpora.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
swift build --build-tests
swift test --skip-build 2>&1 | tee .build/test-output.txt
# (fuzz regressions: crashers and corpus replayed once, fast)
if [ -x fuzz/run.sh ]; then fuzz/run.sh h1_parse --replay; fi
