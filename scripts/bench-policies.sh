#!/usr/bin/env bash
# What each tail-latency policy adds to a request when it is configured and
# nothing is slow: `pocket-bench --count --json` (user-space instructions
# and heap allocations per request, as the counting gate counts them) with
# the policy's flag, minus the same without a flag, for send, the sink and
# --pipeline at one connection and send at 64; then all of them together.
# Then the same for the metrics and tracing middleware, with their
# packages' no-op backends bootstrapped, with in-memory ones (swift-
# distributed-tracing's InMemoryTracer and swift-metrics' TestMetrics, which
# keep every span and value), and with backends that record and keep
# nothing: the middleware's own work (`--integrations noop|memory|discard`).
#
#   scripts/bench-policies.sh            # REQUESTS=2000 per case
#   scripts/bench-policies.sh --quick    # REQUESTS=300
#
# Environment: REQUESTS (per case), POCKET_BENCH (a built pocket-bench;
# default: the release build). Counts, not times: the load of the machine
# does not change them.
set -euo pipefail
cd "$(dirname "$0")/.."

REQUESTS="${REQUESTS:-2000}"
for a in "$@"; do
  case "$a" in
    --quick) REQUESTS=300 ;;
    -h|--help) sed -n 2,16p "$0"; exit 0 ;;
    *) echo "bench-policies: unknown argument '$a'" >&2; exit 2 ;;
  esac
done

BIN="${POCKET_BENCH:-}"
if [ -z "$BIN" ]; then
  swift build -c release --product pocket-bench >/dev/null
  BIN="$(swift build -c release --show-bin-path)/pocket-bench"
fi
PRELOAD="$(scripts/malloc-count/build.sh)"
TMP="$(mktemp -d /tmp/pocket-bench-policies.XXXXXX)"
trap 'rm -rf "$TMP"' EXIT

CASES=(
  "none|"
  "\`--hedge-after 100ms\`|--hedge-after 100ms"
  "\`--deadline 10s\`|--deadline 10s"
  "\`--retry-budget 20\`|--retry-budget 20"
  "\`--balance p2c\` (a set of one)|--balance p2c"
  "\`--eject-after 5\`|--eject-after 5"
  "all of them|--hedge-after 100ms --deadline 10s --retry-budget 20 --balance p2c --eject-after 5"
  "\`--integrations noop\`|--integrations noop"
  "\`--integrations memory\`|--integrations memory"
  "\`--integrations discard\`|--integrations discard"
)
i=0
for entry in "${CASES[@]}"; do
  flags="${entry#*|}"
  # shellcheck disable=SC2086
  LD_PRELOAD="$PRELOAD" "$BIN" --count --json --requests "$REQUESTS" $flags >"$TMP/$i.json" 2>"$TMP/$i.err" \
    || { cat "$TMP/$i.err" >&2; echo "bench-policies: pocket-bench --count $flags failed" >&2; exit 1; }
  i=$((i + 1))
done

python3 - "$TMP" "${#CASES[@]}" "${CASES[@]}" <<'EOF'
import json, sys
tmp, n = sys.argv[1], int(sys.argv[2])
names = [c.split("|", 1)[0] for c in sys.argv[3:3 + n]]
runs = [json.load(open(f"{tmp}/{i}.json")) for i in range(n)]
cases = ["send_c1", "sink_c1", "pipeline_c1", "send_c64"]
base = runs[0]["counts"]
m = runs[0]["machine"]
print(f"{m['cpus']} CPUs, {m['cpu_model']}, Linux {m['kernel']}; instructions from {runs[0]['instructions_source']}; "
      f"{runs[0]['requests_per_case']['1']} requests per case")
print()
print("| flags | send, 1 conn. | sink, 1 conn. | `--pipeline`, 1 conn. | send, 64 conn. |")
print("|---|---:|---:|---:|---:|")
print("| none (instructions / allocations per request) | " + " | ".join(
    f"{base[c]['instructions_per_req']:,.0f} / {base[c]['heap_allocs_per_req']:.1f}" for c in cases) + " |")
def signed(v, fmt):
    s = format(abs(v), fmt)
    return ("+" if v >= 0 else "−") + s
for name, run in zip(names[1:], runs[1:]):
    cells = []
    for c in cases:
        di = run["counts"][c]["instructions_per_req"] - base[c]["instructions_per_req"]
        da = run["counts"][c]["heap_allocs_per_req"] - base[c]["heap_allocs_per_req"]
        cells.append(f"{signed(di, ',.0f')} / {signed(da, '.1f')}")
    print(f"| {name} | " + " | ".join(cells) + " |")
EOF
