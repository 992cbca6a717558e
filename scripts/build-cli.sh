#!/usr/bin/env bash
# Builds the `pocket` command as it ships and prints the binary's path:
# release, the Swift runtime linked statically, functions in the order of
# Sources/PocketCLI/pocket.order, packed relocations (lld from the
# toolchain). Why each: scripts/lib/bench-common.sh, bench_swift_build_args.
#
#   scripts/build-cli.sh               -> .build-static/release/pocket
#   SCRATCH=DIR scripts/build-cli.sh   another scratch path
#   ORDER=0 scripts/build-cli.sh       without the function order
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib/bench-common.sh
log() { echo "build-cli: $*" >&2; }
TMP="$(mktemp -d /tmp/pocket-build-cli.XXXXXX)"
trap 'rm -rf "$TMP"' EXIT
STATIC=1 bench_build_product pocket
