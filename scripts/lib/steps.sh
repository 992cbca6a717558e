# Sourced by .ci/run and scripts/ci.sh: each step runs under a time limit of
# its own and prints its time.
#
#   step NAME LIMIT CMD ARG...   runs CMD with `timeout`: past LIMIT seconds
#                                the step's whole process group gets SIGTERM,
#                                then SIGKILL 20 s later, and the run fails
#                                with "TIMED OUT", naming the step. A failing
#                                step ends the run with its exit status.
#   steps_summary                each step's time, one line each, and the total
#
# STEPS_LIMIT_FACTOR (default 1) multiplies every limit: for a rehearsal on
# a machine that other work keeps busy.
#
# A step's time is its wall time and its CPU time (user + system of every
# process it ran): on a shared machine the wall time grows with the load,
# the CPU time much less.
STEP_TIMES=()
STEPS_T0=$SECONDS

# STEPS_CPU: the CPU seconds (user + system) of this shell's finished
# children so far. `times` runs in this shell (in a subshell it would see
# only the subshell's own children), through a file of its own.
steps_cpu() {
  local f _self children
  f=$(mktemp /tmp/pocket-steps.XXXXXX)
  times >"$f"
  { read -r _self; read -r children; } <"$f"
  rm -f "$f"
  # "0m12.345s 0m1.230s" -> 13 (rounded)
  STEPS_CPU=$(echo "$children" | awk '{ t = 0; for (i = 1; i <= 2; i++) { split($i, a, /[ms]/); t += a[1] * 60 + a[2] }; printf "%d\n", t + 0.5 }')
}

step() {
  local name=$1 limit=$(($2 * ${STEPS_LIMIT_FACTOR:-1}))
  shift 2
  local t0=$SECONDS rc=0 cpu0
  steps_cpu
  cpu0=$STEPS_CPU
  echo "== $name (time limit ${limit} s)"
  timeout --kill-after=20 "$limit" "$@" || rc=$?
  local took=$((SECONDS - t0)) cpu
  steps_cpu
  cpu=$((STEPS_CPU - cpu0))
  STEP_TIMES+=("$(printf '%6d s %6d s  %s' "$took" "$cpu" "$name")")
  if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
    echo "== $name: TIMED OUT after $took s (limit $limit s): stopped, the run fails"
    steps_summary
    exit 1
  fi
  if [ "$rc" -ne 0 ]; then
    echo "== $name: FAILED (exit $rc) after $took s"
    steps_summary
    exit "$rc"
  fi
  echo "== $name: ok in $took s (CPU $cpu s)"
}

steps_summary() {
  echo "== step times (wall, CPU)"
  printf '%s\n' "${STEP_TIMES[@]}"
  steps_cpu
  printf '%6d s %6d s  total\n' "$((SECONDS - STEPS_T0))" "$STEPS_CPU"
}
