#!/usr/bin/env bash
# Failover and retry storms, with pocket-bench's embedded replicas
# (Benchmarks/CPocketBenchServer, in its process) at a fixed rate:
#
#  (a) a replica killed mid-run: three replicas, replica 2 killed 3 s into
#      the measured phase (--kill-replica 2:3: its port refuses connections,
#      its open connections are reset), Pocket balancing by power of two
#      choices (--balance p2c), ejecting a replica after 3 failures in a row
#      (--eject-after 3), and retrying each GET twice (--retries 2: three
#      attempts, backoff exponential from 100 ms with full jitter, each retry
#      to another replica); once more with no retries. REPS runs each, medians:
#      the failed requests that started before and after the first ejection,
#      and the milliseconds from the kill to that ejection.
#  (b) a retry storm: every replica answers 503 (--failing-replica K:503),
#      each GET may be tried 3 times (--retries 2), without a retry budget,
#      with Pocket's default one (20 %), and with --retry-budget 10 and 20:
#      the requests the replicas received (retries included) per request
#      offered, beside the bound: 1 + budget, plus the budget's floor (10
#      retries a second over a sliding 10-s window: at most 10 x (DUR + 10)
#      retries more).
#  (c) a deadline: --deadline 100ms with --retries 2, replica 2 holding
#      every answer a second; once more with hedges after 20 ms and power
#      of two choices; once more with all three replicas holding theirs:
#      the longest call, from when it was made to its end, against 105 ms.
#      The replicas here are bench-server's (Benchmarks/bench-server, a
#      process of its own on core SERVER_CPU, the client on CLIENT_CPU): a
#      bound of a few milliseconds is measured without the replicas'
#      thousands of held connections sharing the client's core.
#
#   scripts/bench-failover.sh            # DUR=10, RATE=2000
#   scripts/bench-failover.sh --quick    # DUR=4, REPS=1 (smoke test)
#   RATE=5000 DUR=20 scripts/bench-failover.sh
#
# Environment: DUR seconds per run (10; at least 4: the kill is at 3 s),
# RATE requests/s (2000), REPS runs of (a) (3), CONNECTIONS (64: the most in
# flight in (a)), STORM_CONNECTIONS (512 in (b) and (c): room for the retries'
# backoffs, so the storm is not cut short by the client), POCKET_BENCH (a
# built pocket-bench instead of the release build), SCRATCH (swift build
# --scratch-path), PORT (19300: (c)'s replicas on PORT..PORT+5), SERVER_CPU
# (1) and CLIENT_CPU (0) for (c). (a) and (b) use pocket-bench's own
# replicas; (c) starts bench-server and stops it by its PID.
set -euo pipefail

cd "$(dirname "$0")/.."
. scripts/lib/bench-common.sh

quick=0
for a in "$@"; do
  case "$a" in
    --quick) quick=1 ;;
    -h|--help) sed -n 2,31p "$0"; exit 0 ;;
    *) echo "bench-failover: unknown argument '$a'" >&2; exit 2 ;;
  esac
done
DUR="${DUR:-$([ "$quick" = 1 ] && echo 4 || echo 10)}"
REPS="${REPS:-$([ "$quick" = 1 ] && echo 1 || echo 3)}"
RATE="${RATE:-2000}"
CONNECTIONS="${CONNECTIONS:-64}"
STORM_CONNECTIONS="${STORM_CONNECTIONS:-512}"
if [ "$DUR" -lt 4 ]; then echo "bench-failover: DUR must be at least 4 (the kill is at 3 s)" >&2; exit 2; fi

log() { echo "bench-failover: $*" >&2; }

PORT="${PORT:-19300}"
SERVER_CPU="${SERVER_CPU:-1}"
CLIENT_CPU="${CLIENT_CPU:-0}"
bench_check_cpus

TMP="$(mktemp -d /tmp/pocket-bench-failover.XXXXXX)"
PIDS=()
cleanup() {
  if ((${#PIDS[@]})); then stop_pids "${PIDS[@]}"; fi
  rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

if [ -n "${POCKET_BENCH:-}" ]; then POCKET="$POCKET_BENCH"; else POCKET="$(bench_build_pocket_bench)" || exit 1; fi
OFFERED=$((RATE * DUR))

# One pocket-bench run: NAME ARG... -> $TMP/NAME.json (its JSON line).
# With ALL_FAIL=1 every request may fail (pocket-bench then exits 1 after
# writing its JSON): only a missing JSON line fails the script.
bench() {
  local name=$1
  shift
  log "$name"
  local pin=()
  [ -n "${POCKET_PIN:-}" ] && pin=(taskset -c "$POCKET_PIN")
  "${pin[@]}" "$POCKET" --rate "$RATE" --max-seconds "$DUR" --json "$@" >"$TMP/$name.json" 2>"$TMP/$name.err" \
    || { [ "${ALL_FAIL:-0}" = 1 ] && [ -s "$TMP/$name.json" ]; } || {
    log "$name failed:"
    cat "$TMP/$name.err" >&2
    exit 1
  }
}

# ------------------------------------------------------------------ (a) a replica killed
KILL_ROWS=()
for retries in 2 0; do
  sent=() before=() after=() ejected=()
  for rep in $(seq "$REPS"); do
    name="kill-r$retries-$rep"
    bench "$name" --replicas 3 --kill-replica 2:3 --eject-after 3 --balance p2c --retries "$retries" \
      --connections "$CONNECTIONS"
    f="$TMP/$name.json"
    sent+=("$(jget sent "$f")")
    before+=("$(jget errors_before_ejection "$f")")
    after+=("$(jget errors_after_ejection "$f")")
    ejected+=("$(jget ejected_after_kill_ms "$f")")
    log "  sent ${sent[-1]}, errors ${before[-1]} before the ejection and ${after[-1]} after, ejected ${ejected[-1]} ms after the kill"
  done
  largest() { printf '%s\n' "$@" | grep -E '^[0-9.]+$' | sort -g | tail -1; }
  unejected="$(printf '%s\n' "${ejected[@]}" | grep -c null || true)"
  note=""
  [ "$unejected" -gt 0 ] && note=", $unejected not ejected"
  KILL_ROWS+=("| $retries | $OFFERED | $(median "${sent[@]}") | $(median "${before[@]}") | $(median "${after[@]}") ($(largest "${after[@]}")) | $(median "${ejected[@]}") ($(largest "${ejected[@]}")$note) |")
done

# ------------------------------------------------------------------ (b) a retry storm
STORM_ROWS=()
budget_bound() { # PERCENT -> "1.20 + 0.010": 1 + budget, + the floor per request offered
  awk -v b="$1" -v d="$DUR" -v o="$OFFERED" 'BEGIN { printf "%.2f + %.3f", 1 + b / 100, 10 * (d + 10) / o }'
}
for budget in off default 10 20; do
  args=(--replicas 3 --failing-replica 1:503 --failing-replica 2:503 --failing-replica 3:503 --retries 2 --warmup 0
        --connections "$STORM_CONNECTIONS")
  case "$budget" in
    off) args+=(--retry-budget off); label="none (--retry-budget off)"; bound="3 (attempts)" ;;
    default) label="Pocket's default (20 %)"; bound="$(budget_bound 20)" ;;
    *) args+=(--retry-budget "$budget"); label="--retry-budget $budget"; bound="$(budget_bound "$budget")" ;;
  esac
  bench "storm-$budget" "${args[@]}"
  f="$TMP/storm-$budget.json"
  sent="$(jget sent "$f")"
  served="$(jget server_requests "$f")"
  ratio="$(awk -v s="$served" -v o="$OFFERED" 'BEGIN { printf "%.3f", s / o }')"
  STORM_ROWS+=("| $label | $OFFERED | $sent | $served | $ratio | $bound |")
done

# ------------------------------------------------------------------ (c) a deadline
# Replicas that hold every answer a second (ten times the deadline): the
# longest call, from when it was made to its end, answered or failed, over
# retries and hedges, against the deadline plus 5 ms.
log "building bench-server"
cc -D_GNU_SOURCE -O2 -pthread -IBenchmarks/CPocketBenchServer/include Benchmarks/CPocketBenchServer/pkbs_server.c \
  Benchmarks/CPocketBenchServer/pkbs_tls.c Benchmarks/CPocketBenchServer/pkbs_gzip.c Benchmarks/bench-server/main.c \
  -o "$TMP/bench-server" -lssl -lcrypto -lz
# Replica 2 silent on PORT..PORT+2; all three on PORT+3..PORT+5.
spawn_bg taskset -c "$SERVER_CPU" "$TMP/bench-server" --port "$PORT" --replicas 3 --slow-replica 2:1:1s >"$TMP/bs-one.log" 2>&1
PIDS+=("$SPAWNED_PID")
spawn_bg taskset -c "$SERVER_CPU" "$TMP/bench-server" --port "$((PORT + 3))" --replicas 3 \
  --slow-replica 1:1:1s --slow-replica 2:1:1s --slow-replica 3:1:1s >"$TMP/bs-all.log" 2>&1
PIDS+=("$SPAWNED_PID")
for port in "$PORT" "$((PORT + 3))"; do
  for _ in $(seq 100); do
    if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then break; fi
    sleep 0.1
  done
done
urls() { local base=$1; echo "--url http://127.0.0.1:$base/ --url http://127.0.0.1:$((base + 1))/ --url http://127.0.0.1:$((base + 2))/"; }
DEADLINE_ROWS=()
for kind in one one-hedged all-hedged; do
  args=(--deadline 100ms --retries 2 --warmup 0 --connections "$STORM_CONNECTIONS")
  case "$kind" in
    one) read -ra u <<<"$(urls "$PORT")"; label="replica 2 | --retries 2" ;;
    one-hedged) read -ra u <<<"$(urls "$PORT")"; args+=(--hedge-after 20ms --balance p2c)
      label="replica 2 | --retries 2 --hedge-after 20ms --balance p2c" ;;
    all-hedged) read -ra u <<<"$(urls "$((PORT + 3))")"; args+=(--hedge-after 20ms --max-hedges 2)
      label="all three | --retries 2 --hedge-after 20ms --max-hedges 2" ;;
  esac
  POCKET_PIN="$CLIENT_CPU" ALL_FAIL=1 bench "deadline-$kind" "${u[@]}" "${args[@]}"
  f="$TMP/deadline-$kind.json"
  longest="$(awk -v v="$(jget longest_call_us "$f")" 'BEGIN { printf "%.1f", v / 1000 }')"
  verdict="$(awk -v l="$longest" 'BEGIN { print (l <= 105 ? "yes" : "**no**") }')"
  DEADLINE_ROWS+=("| $label | $OFFERED | $(jget sent "$f") | $(jget errors "$f") | $(jget hedges_fired "$f") | $longest | $verdict |")
done

echo
echo "$RATE requests/s for $DUR s ($OFFERED offered); (a) and (b) on pocket-bench's embedded replicas (in its process)."
echo "$(date -u +%F), $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'), Linux $(uname -r)"
echo
echo "(a) Three replicas, replica 2 killed at 3 s; --balance p2c --eject-after 3, at most $CONNECTIONS in flight;"
echo "medians of $REPS runs, the largest in parentheses."
echo
echo "| retries | offered | sent | failed, started before the ejection | failed, started after it | ms from the kill to the ejection |"
echo "|---:|---:|---:|---:|---:|---:|"
printf '%s\n' "${KILL_ROWS[@]}"
echo
echo "(b) Three replicas answering 503 to everything; --retries 2 (3 attempts), at most $STORM_CONNECTIONS in flight."
echo
echo "| retry budget | offered | sent | requests the replicas received | received / offered | bound: 1 + budget + floor |"
echo "|---|---:|---:|---:|---:|---:|"
printf '%s\n' "${STORM_ROWS[@]}"
echo
echo "(c) A deadline of 100 ms (--deadline 100ms), bench-server replicas (core $SERVER_CPU; the client on core $CLIENT_CPU)"
echo "that hold every answer 1 s; at most $STORM_CONNECTIONS in flight."
echo "The longest call: from when it was made to its end, answered or failed, in ms."
echo
echo "| never answers | flags | offered | sent | failed | hedges | longest call | within 105 ms |"
echo "|---|---|---:|---:|---:|---:|---:|---|"
printf '%s\n' "${DEADLINE_ROWS[@]}"
