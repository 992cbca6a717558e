#!/usr/bin/env bash
# Response schemas against JSONDecoder: Benchmarks/schema-bench decodes a
# 1 MB Redmine issues.json into the same model with each contender, in one
# process, contenders alternated, pinned to one CPU; medians of REPS.
#   REPS=21 scripts/bench-schemas.sh
# Environment: REPS (21), SCRATCH (a swift build --scratch-path).
set -euo pipefail
cd "$(dirname "$0")/.."
REPS="${REPS:-21}"
case "${1:-}" in
  --quick) REPS=3 ;;
  -h|--help) sed -n 2,7p "$0"; exit 0 ;;
  "") ;;
  *) echo "bench-schemas: unknown argument: $1" >&2; exit 2 ;;
esac
args=()
[ -n "${SCRATCH:-}" ] && args=(--scratch-path "$SCRATCH")
echo "bench-schemas: building schema-bench (release)" >&2
swift build -c release --product schema-bench "${args[@]}" >/dev/null
BIN="$(swift build -c release "${args[@]}" --show-bin-path)/schema-bench"
PIN=()
if [ "$(nproc)" -ge 2 ] && command -v taskset >/dev/null 2>&1; then PIN=(taskset -c 1); fi
"${PIN[@]}" "$BIN" --reps "$REPS"
