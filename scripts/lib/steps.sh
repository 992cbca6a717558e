# Sourced by .ci/run and scripts/ci.sh: each step runs under a time limit of
# its own and prints its time.
#
#   step NAME LIMIT CMD ARG...   runs CMD with `timeout`: past LIMIT seconds
#                                the step's whole process group gets SIGTERM,
#                                then SIGKILL 20 s later, and the run fails
#                                with "TIMED OUT", naming the step. A failing
#                                step ends the run with its exit status.
#   steps_summary                each step's time, one line each, and the total
STEP_TIMES=()
STEPS_T0=$SECONDS

step() {
  local name=$1 limit=$2
  shift 2
  local t0=$SECONDS rc=0
  echo "== $name (time limit ${limit} s)"
  timeout --kill-after=20 "$limit" "$@" || rc=$?
  local took=$((SECONDS - t0))
  STEP_TIMES+=("$(printf '%6d s  %s' "$took" "$name")")
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
  echo "== $name: ok in $took s"
}

steps_summary() {
  echo "== step times"
  printf '%s\n' "${STEP_TIMES[@]}"
  printf '%6d s  total\n' "$((SECONDS - STEPS_T0))"
}
