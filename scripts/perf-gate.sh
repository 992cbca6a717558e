#!/usr/bin/env bash
# The counting gate: `pocket-bench --count` (user-space instructions and heap
# allocations per request of send, sink, stream and --pipeline, at 1
# connection and at 64, against the embedded server) compared with
# Benchmarks/baseline.json. Fails, naming each count, its baseline, its value
# and the growth, when a count grows by more than the baseline's tolerance.
# Counts, unlike times, hold still on a shared machine; a count that falls
# is reported (record it with --update).
#
#   scripts/perf-gate.sh             build (release), count once, compare
#   scripts/perf-gate.sh --update    count RUNS times (default 10), write the
#                                    medians, each count's spread over the runs
#                                    and the tolerance into the baseline
#
# The tolerance is twice the largest spread ((max - min) / median) seen over
# the --update runs, or a quarter more than the largest shift one more run
# shows with glibc's AVX2 and ERMS string functions masked (GLIBC_TUNABLES:
# the functions another CPU makes glibc pick; a CI machine may differ from
# this one so, and another CPU may shift the counts further), whichever is
# larger; at least 0.5 % and at most 3 %. An allocation count may also grow
# by up to 0.05 per request (`allocations_slack_per_req`): how many
# connections a run at 64 opens anew, each allocating its buffers, depends
# on how they are scheduled (up to 0.03 per request more on a loaded
# machine), while one allocation more per request, or per 20, still fails.
# Instructions come from perf_event_open, or from callgrind where the kernel has no hardware counter
# (pocket-bench runs itself under valgrind then); where neither can count,
# the gate fails and says why: it never skips. A baseline recorded with
# another instruction source or I/O backend is not comparable: the gate fails
# and asks for --update on this machine.
# Environment: POCKET_BENCH (a built pocket-bench; default: swift build -c
# release --product pocket-bench), RUNS (--update: 10), BASELINE
# (Benchmarks/baseline.json), REQUESTS (per case; default pocket-bench's 2000).
set -euo pipefail
cd "$(dirname "$0")/.."
update=0
for a in "$@"; do
  case "$a" in
    --update) update=1 ;;
    -h|--help) sed -n '2,32p' "$0"; exit 0 ;;
    *) echo "perf-gate: unknown argument '$a'" >&2; exit 2 ;;
  esac
done
RUNS="${RUNS:-10}"
BASELINE="${BASELINE:-Benchmarks/baseline.json}"
log() { echo "perf-gate: $*" >&2; }
fail() { echo "perf-gate: FAIL: $*" >&2; exit 1; }
# What another CPU may make glibc pick: its AVX2 and ERMS string functions masked.
OTHER_CPU="glibc.cpu.hwcaps=-AVX2,-ERMS,-AVX_Fast_Unaligned_Load"
command -v python3 >/dev/null 2>&1 || fail "python3 is needed to compare the counts"
TMP="$(mktemp -d /tmp/pocket-perf-gate.XXXXXX)"
trap 'rm -rf "$TMP"' EXIT
t0=$SECONDS

if [ -z "${POCKET_BENCH:-}" ]; then
  log "building pocket-bench (release)"
  swift build -c release --product pocket-bench >"$TMP/build.log" 2>&1 || { cat "$TMP/build.log" >&2; fail "the build failed"; }
  POCKET_BENCH="$(swift build -c release --show-bin-path)/pocket-bench"
fi
[ -x "$POCKET_BENCH" ] || fail "no pocket-bench at $POCKET_BENCH"
MALLOC_COUNT="$(scripts/malloc-count/build.sh)" || fail "cannot build scripts/malloc-count"
args=(--count --json)
[ -n "${REQUESTS:-}" ] && args+=(--requests "$REQUESTS")

count() { # count OUT: one pocket-bench --count run, its JSON in OUT
  if ! LD_PRELOAD="$MALLOC_COUNT" "$POCKET_BENCH" "${args[@]}" >"$1" 2>"$1.err"; then
    cat "$1.err" >&2
    fail "pocket-bench --count could not count (above: why)"
  fi
}

if [ "$update" = 1 ]; then
  for i in $(seq "$RUNS"); do
    log "counting, run $i of $RUNS"
    count "$TMP/run$i.json"
  done
  log "counting once more with other string functions (GLIBC_TUNABLES=$OTHER_CPU)"
  GLIBC_TUNABLES="$OTHER_CPU" count "$TMP/other-cpu.json"
  python3 - "$BASELINE" "$TMP/other-cpu.json" "$TMP"/run*.json <<'EOF'
import json, statistics, sys, time
out, other_path, paths = sys.argv[1], sys.argv[2], sys.argv[3:]
runs = [json.load(open(p)) for p in paths]
other = json.load(open(other_path))
first = runs[0]
for r in runs[1:]:
    for k in ("instructions_source", "io_backend", "requests_per_case"):
        if r[k] != first[k]:
            sys.exit(f"perf-gate: FAIL: the runs disagree on {k}: {first[k]} and {r[k]}")
counts, spreads = {}, {}
for case in first["counts"]:
    for metric in ("instructions_per_req", "heap_allocs_per_req"):
        values = [r["counts"][case][metric] for r in runs]
        median = statistics.median(values)
        counts.setdefault(case, {})[metric] = round(median, 3)
        spreads.setdefault(case, {})[metric] = round(100 * (max(values) - min(values)) / median, 3) if median else 0.0
worst = max(s for c in spreads.values() for s in c.values())
shifts = [abs(100 * (other["counts"][case]["instructions_per_req"] - m["instructions_per_req"]) / m["instructions_per_req"])
          for case, m in counts.items() if m["instructions_per_req"]]
shift = round(max(shifts), 3)
tolerance = min(3.0, max(0.5, round(2 * worst, 2), round(1.25 * shift, 2)))
base = {k: v for k, v in first.items() if k != "counts"}
base["recorded"] = time.strftime("%Y-%m-%d", time.gmtime())
base["runs"] = len(runs)
base["tolerance_pct"] = tolerance
base["other_cpu_shift_pct"] = shift
base["allocations_slack_per_req"] = 0.05
base["tolerance_rule"] = ("twice the largest spread over the runs, or 1.25 times the largest shift with "
                          "glibc's AVX2 and ERMS string functions masked if larger; at least 0.5, at most 3")
base["counts"] = counts
base["spread_pct"] = spreads
with open(out, "w") as f:
    f.write("{\n")
    items = list(base.items())
    for i, (k, v) in enumerate(items):
        end = "," if i < len(items) - 1 else ""
        if isinstance(v, dict) and k in ("counts", "spread_pct"):
            f.write(f'  "{k}": {{\n')
            rows = list(v.items())
            for j, (case, m) in enumerate(rows):
                f.write(f'    "{case}": {json.dumps(m)}' + ("," if j < len(rows) - 1 else "") + "\n")
            f.write("  }" + end + "\n")
        else:
            f.write(f'  "{k}": {json.dumps(v)}{end}\n')
    f.write("}\n")
print(f"perf-gate: wrote {out}: {len(runs)} runs, largest spread {worst:.3f} %, largest shift with other "
      f"string functions {shift:.3f} %, tolerance {tolerance} %",
      file=sys.stderr)
for case, m in counts.items():
    s = spreads[case]
    print(f"  {case:<14} instructions {m['instructions_per_req']:>10.1f} (spread {s['instructions_per_req']:.2f} %)"
          f"   allocations {m['heap_allocs_per_req']:>7.3f} (spread {s['heap_allocs_per_req']:.2f} %)")
EOF
  log "done in $((SECONDS - t0)) s"
  exit 0
fi

[ -f "$BASELINE" ] || fail "no baseline at $BASELINE (record one: scripts/perf-gate.sh --update)"
log "counting"
count "$TMP/now.json"
python3 - "$BASELINE" "$TMP/now.json" <<'EOF'
import json, sys
base, now = (json.load(open(p)) for p in sys.argv[1:3])
for k in ("instructions_source", "io_backend", "requests_per_case"):
    if base.get(k) != now.get(k):
        sys.exit(f"perf-gate: FAIL: the baseline was counted with {k} {base.get(k)}, this run with {now.get(k)}: "
                 "not comparable (record a baseline on this machine: scripts/perf-gate.sh --update)")
tol = float(base["tolerance_pct"])
slack = float(base.get("allocations_slack_per_req", 0.0))
grown, fell = [], []
print(f"perf-gate: per request, against {sys.argv[1]} (tolerance {tol} %, instructions from {now['instructions_source']})")
for case, metrics in base["counts"].items():
    if case not in now["counts"]:
        grown.append(f"{case}: not counted in this run")
        continue
    for metric, b in metrics.items():
        v = now["counts"][case][metric]
        growth = 100 * (v - b) / b if b else (0.0 if v == 0 else float("inf"))
        line = f"{case} {metric}: baseline {b}, now {v}, {growth:+.2f} %"
        print("  " + line)
        allowed = max(b * tol / 100, slack) if metric == "heap_allocs_per_req" else b * tol / 100
        if v - b > allowed:
            grown.append(line)
        elif growth < -tol:
            fell.append(line)
for line in fell:
    print(f"perf-gate: below the baseline beyond the tolerance (record it: scripts/perf-gate.sh --update): {line}")
if grown:
    for line in grown:
        print(f"perf-gate: FAIL: grew beyond {tol} %: {line}", file=sys.stderr)
    sys.exit(1)
print("perf-gate: ok, no count above its baseline's tolerance")
EOF
log "done in $((SECONDS - t0)) s"
