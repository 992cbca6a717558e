#!/usr/bin/env bash
# Redraws the benchmark charts of docs/ from the JSON results of a run:
# every docs/results/NAME.json becomes docs/charts/NAME/<scenario>-<chart>.svg
# (requests/s bars, latency percentile curves, and for a scaling run p99 and
# peak RSS bars), drawn by `pocket bench report` (PocketBenchKit: the
# project's own Swift, no network, no plotting package).
#
#   scripts/bench-charts.sh                            # every docs/results/*.json
#   scripts/bench-charts.sh docs/results/scaling.json  # one of them
#   HTML=1 scripts/bench-charts.sh                     # also docs/charts/NAME.html (not checked in)
#
# A results file is what the scripts write with --json (bench-peers.sh,
# bench-scaling.sh), `pocket bench --json` output, or a transcription with
# notes and sources ({"title", "notes", "runs"}); see docs/BENCHMARKS.md,
# "Reproducing everything". Environment: POCKET (a built `pocket` binary: no build),
# SCRATCH (a swift build --scratch-path).
set -euo pipefail

cd "$(dirname "$0")/.."
case "${1:-}" in -h|--help) sed -n 2,17p "$0"; exit 0 ;; esac

if [ -z "${POCKET:-}" ]; then
  args=()
  [ -n "${SCRATCH:-}" ] && args=(--scratch-path "$SCRATCH")
  echo "bench-charts: building pocket" >&2
  swift build --product pocket "${args[@]}" >/dev/null
  POCKET="$(swift build "${args[@]}" --show-bin-path)/pocket"
fi

files=("$@")
((${#files[@]})) || files=(docs/results/*.json)
for f in "${files[@]}"; do
  name="$(basename "$f" .json)"
  dir="docs/charts/$name"
  mkdir -p "$dir"
  rm -f "$dir"/*.svg
  report=()
  [ "${HTML:-0}" = 1 ] && report=(--out "docs/charts/$name.html")
  "$POCKET" bench report "$f" --svg-dir "$dir" "${report[@]}"
  echo "bench-charts: $f -> $(ls "$dir"/*.svg | tr '\n' ' ')" >&2
done
