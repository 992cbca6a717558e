#!/usr/bin/env bash
# Every benchmark scenario of docs/BENCHMARKS.md, one after another, then
# the charts. Each scenario is its own scripts/bench-*.sh (which builds what
# it runs, starts its servers on loopback ports of its own and stops them by
# PID); this script only runs them in order and keeps their output.
#
#   scripts/bench-all.sh                 # every scenario (about an hour)
#   scripts/bench-all.sh --quick         # each scenario's smoke mode
#   scripts/bench-all.sh --dry-run       # print the commands, run nothing
#   scripts/bench-all.sh --only "peers tls"   # some scenarios (names below)
#
# Scenarios: peers tls-peers nginx tls scaling bodies backends gateway reach
# cache cli schemas tail failover policies, then charts.
#
# Raw output: .bench-results/DATE/NAME.txt (ignored by git; never commit
# it). A full run writes the charted JSON to docs/results/ and redraws
# docs/charts/ (scripts/bench-charts.sh), then rewrites the page's tables
# and the README's summary (scripts/bench-page.py): commit those. A
# --quick run keeps its JSON and charts in .bench-results/DATE/ and leaves
# docs/ alone. Exits non-zero when any scenario failed, after running the
# rest; the summary names each scenario's status and time.
set -uo pipefail
cd "$(dirname "$0")/.."

QUICK=0; DRY=0; ONLY=""
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) QUICK=1 ;;
    --dry-run|-n) DRY=1 ;;
    --only) ONLY="${2:?--only needs scenario names}"; shift ;;
    --only=*) ONLY="${1#--only=}" ;;
    -h|--help) sed -n 2,20p "$0"; exit 0 ;;
    *) echo "bench-all: unknown argument: $1" >&2; exit 2 ;;
  esac
  shift
done

OUT=".bench-results/$(date -u +%Y-%m-%dT%H%M%SZ)"
if [ "$QUICK" = 1 ]; then RESULTS="$OUT/results"; else RESULTS="docs/results"; fi
Q=(); [ "$QUICK" = 1 ] && Q=(--quick)

# name | environment | command (the full run's settings are the tables')
scenarios=(
  "peers|REPS=5 DUR=5|scripts/bench-peers.sh ${Q[*]} --json $RESULTS/peers.json"
  "tls-peers|TLS=1 REPS=5 DUR=5|scripts/bench-peers.sh ${Q[*]} --json $RESULTS/tls.json"
  "nginx|REPS=5 DUR=3 EPOLL=1 PIPELINE=1|scripts/bench-nginx.sh ${Q[*]}"
  "tls|$([ "$QUICK" = 1 ] && echo 'REPS=1 DUR=2 N=200' || echo 'REPS=5 DUR=3 N=1000')|scripts/bench-tls.sh"
  "scaling|REPS=1 DUR=5 JSON=$RESULTS/scaling.json|scripts/bench-scaling.sh ${Q[*]}"
  "bodies|REPS=5|scripts/bench-bodies.sh ${Q[*]}"
  "backends|REPS=5 DUR=3|scripts/bench-backends.sh ${Q[*]}"
  "gateway|REPS=5 DUR=5 BARE=1 FLOOR=1|scripts/bench-gateway.sh ${Q[*]}"
  "reach|REPS=3 DUR=2|scripts/bench-reach.sh ${Q[*]}"
  "cache|REQUESTS=5000 REPS=3|scripts/bench-cache.sh ${Q[*]}"
  "cli|$([ "$QUICK" = 1 ] && echo 'REPS=1 UPLOAD_REPS=1 UPLOAD_MIB=64' || echo 'REPS=9 UPLOAD_REPS=7')|scripts/bench-cli.sh"
  "schemas|REPS=21|scripts/bench-schemas.sh ${Q[*]}"
  "tail|DUR=10|scripts/bench-tail.sh ${Q[*]} --json $RESULTS/tail.json"
  "failover|DUR=10 REPS=3|scripts/bench-failover.sh ${Q[*]}"
  "policies|REQUESTS=1000|scripts/bench-policies.sh ${Q[*]}"
)

selected() { [ -z "$ONLY" ] || [[ " $ONLY " == *" $1 "* ]]; }

if [ -n "$ONLY" ]; then
  for n in $ONLY; do
    case " peers tls-peers nginx tls scaling bodies backends gateway reach cache cli schemas tail failover policies charts " in
      *" $n "*) ;; *) echo "bench-all: unknown scenario: $n" >&2; exit 2 ;;
    esac
  done
fi

[ "$DRY" = 1 ] || mkdir -p "$OUT" "$RESULTS"
# run.txt: when, where and on which commit; each scenario's command (the
# page's "Measured ..." lines, scripts/bench-page.py).
if [ "$DRY" = 0 ]; then
  {
    echo "date: $(date -u +%Y-%m-%d)"
    echo "machine: $(nproc) vCPUs ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //')), kernel $(uname -r), Swift $(swift --version 2>/dev/null | grep -o 'Swift version [0-9.]*' | head -1 | awk '{ print $3 }')"
    echo "commit: $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- Sources Benchmarks scripts 2>/dev/null || echo ' (with local changes)')"
    for entry in "${scenarios[@]}"; do
      IFS='|' read -r name env cmd <<<"$entry"
      echo "command $name: $(echo "$env $cmd" | sed 's/^ *//; s/  */ /g')"
    done
  } >"$OUT/run.txt"
fi
summary=(); failed=0
for entry in "${scenarios[@]}"; do
  IFS='|' read -r name env cmd <<<"$entry"
  selected "$name" || continue
  # In quick mode a script's own smoke settings win over the full run's.
  if [ "$QUICK" = 1 ]; then case "$name" in tls|cli) ;; *)
    env=$(printf '%s\n' $env | grep -vE '^(REPS|DUR|REQUESTS)=' | tr '\n' ' ') ;; esac; fi
  line="env $env $cmd"
  if [ "$DRY" = 1 ]; then echo "$line > $OUT/$name.txt"; continue; fi
  echo "bench-all: $name: $line" >&2
  start=$(date +%s); load_before=$(cut -d' ' -f1 /proc/loadavg)
  # shellcheck disable=SC2086 # the environment and arguments are word lists
  if env $env $cmd >"$OUT/$name.txt" 2>&1; then status=ok; else status="FAILED (see $OUT/$name.txt)"; failed=1; fi
  summary+=("$(printf '%-10s %5ss  %s' "$name" "$(( $(date +%s) - start ))" "$status")")
  # The machine's load average just before and after the scenario, printed
  # under its table (the scenario's own processes count in it).
  echo "load $name: $load_before $(cut -d' ' -f1 /proc/loadavg)" >>"$OUT/run.txt"
done

if selected charts; then
  if [ "$QUICK" = 1 ]; then
    # Draw the quick run's JSON beside it, not over docs/charts.
    draw="for f in $RESULTS/*.json; do \$POCKET bench report \$f --svg-dir $OUT/charts/\$(basename \$f .json); done"
    if [ "$DRY" = 1 ]; then echo "$draw"
    else
      bin="$(swift build --show-bin-path)"
      if swift build --product pocket >"$OUT/charts.txt" 2>&1; then
        status=ok
        for f in "$RESULTS"/*.json; do
          [ -s "$f" ] || continue
          mkdir -p "$OUT/charts/$(basename "$f" .json)"
          "$bin/pocket" bench report "$f" --svg-dir "$OUT/charts/$(basename "$f" .json)" >>"$OUT/charts.txt" 2>&1 \
            || { status="FAILED (see $OUT/charts.txt)"; failed=1; }
        done
      else status="FAILED (see $OUT/charts.txt)"; failed=1; fi
      summary+=("$(printf '%-10s %5s   %s' charts - "$status")")
    fi
  elif [ "$DRY" = 1 ]; then echo "scripts/bench-charts.sh > $OUT/charts.txt"
  else
    if scripts/bench-charts.sh >"$OUT/charts.txt" 2>&1; then status=ok; else status="FAILED (see $OUT/charts.txt)"; failed=1; fi
    summary+=("$(printf '%-10s %5s   %s' charts - "$status")")
  fi
fi

[ "$DRY" = 1 ] && exit 0
# A full run of every scenario also rewrites the tables of docs/BENCHMARKS.md
# and the README's summary (scripts/bench-page.py): commit them with the charts.
if [ "$QUICK" = 0 ] && [ -z "$ONLY" ] && [ "$failed" = 0 ]; then
  if scripts/bench-page.py "$OUT"; then summary+=("$(printf '%-10s %5s   %s' page - ok)")
  else summary+=("$(printf '%-10s %5s   %s' page - FAILED)"); failed=1; fi
fi
echo "bench-all: raw output in $OUT/"
printf '%s\n' "${summary[@]}"
exit "$failed"
