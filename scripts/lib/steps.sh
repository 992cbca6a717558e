# Sourced by .ci/run and scripts/ci.sh: each step runs under a time limit of
# its own and prints its time.
#
#   step NAME LIMIT CMD ARG...   runs CMD with `timeout`: past LIMIT seconds
#                                the step gets SIGTERM, then SIGKILL 20 s
#                                later, and whatever it started is ended
#                                (steps_run), and the run fails
#                                with "TIMED OUT", naming the step. A failing
#                                step ends the run with its exit status.
#   step_bg NAME LIMIT CMD ARG...  the same, in the background, its output
#                                kept in a file and printed when it ends:
#                                for the work that fills a core the
#                                foreground steps leave free
#   steps_poll                   fails the run now, naming it, if a
#                                background step has already failed (call
#                                it between foreground steps: a broken build
#                                in the background fails CI in minutes)
#   steps_wait                   waits for the background steps, prints
#                                each one's output and time; fails, naming
#                                it, as soon as one has failed or passed its
#                                limit, and stops the others
#   steps_summary                each step's time, one line each, and the total
#                                (wall and CPU)
#
# STEPS_LIMIT_FACTOR (default 1) multiplies every limit: for a rehearsal on
# a machine that other work keeps busy. STEPS_TIMES_FILE, when set, gets
# each step's time line as well (.ci/run lists the steps of scripts/ci.sh
# with its own at the end).
#
# A step's time is its wall time and its CPU time (user + system of every
# process it ran): on a shared machine the wall time grows with the load,
# the CPU time much less.
STEP_TIMES=()
STEPS_T0=$SECONDS

# steps_run LIMIT CMD ARG...: CMD under `timeout`, in a session of its own;
# once it has ended (done, failed, timed out or stopped), every process of
# that session still running is ended too. `timeout` signals its process
# group only, and swift-build starts each compiler in a group of its own: a
# step stopped mid-build left its compilers running, and a compiler left
# behind by a foreground step would hold the run's output open. With
# STEPS_SID_FILE set, the session's number (`timeout`'s PID) is written there.
steps_run() {
  local limit=$1 rc=0 sid
  shift
  # A background job of a script is no process group leader, so setsid(1)
  # does not fork: $! is `timeout`, the session's leader.
  setsid timeout --kill-after=20 "$limit" "$@" &
  sid=$!
  if [ -n "${STEPS_SID_FILE:-}" ]; then echo "$sid" >"$STEPS_SID_FILE"; fi
  wait "$sid" || rc=$?
  steps_end_session "$sid"
  return "$rc"
}

# Sends SIGKILL to every process left in session $1 (found in /proc, by PID).
steps_end_session() {
  local sid=$1 stat line pid
  for stat in /proc/[0-9]*/stat; do
    read -r line <"$stat" 2>/dev/null || continue
    line=${line##*) }   # "pid (comm) state ppid pgrp session ..." -> "state ppid pgrp session ..."
    # shellcheck disable=SC2086 # split into fields on purpose
    set -- $line
    [ "${4:-}" = "$sid" ] || continue
    pid=${stat#/proc/}
    kill -KILL "${pid%/stat}" 2>/dev/null || true
  done
}

# The CPU seconds (user + system) in the `times` output file $1: the
# finished children of the subshell that wrote it. Each step runs in a
# subshell of its own, so a step's CPU time is its own even while a
# background step finishes (and is counted by this shell) meanwhile.
steps_cpu() {
  local _self children
  { read -r _self; read -r children; } <"$1"
  # "0m12.345s 0m1.230s" -> 13 (rounded)
  echo "$children" | awk '{ t = 0; for (i = 1; i <= 2; i++) { split($i, a, /[ms]/); t += a[1] * 60 + a[2] }; printf "%d\n", t + 0.5 }'
}

steps_record() {
  STEP_TIMES+=("$1")
  if [ -n "${STEPS_TIMES_FILE:-}" ]; then echo "$1" >>"$STEPS_TIMES_FILE"; fi
}

step() {
  local name=$1 limit=$(($2 * ${STEPS_LIMIT_FACTOR:-1}))
  shift 2
  local t0=$SECONDS rc=0 cpu timesfile
  timesfile=$(mktemp /tmp/pocket-step.XXXXXX)
  echo "== $name (time limit ${limit} s)"
  (
    rc=0
    steps_run "$limit" "$@" || rc=$?
    times >"$timesfile"
    exit "$rc"
  ) || rc=$?
  local took=$((SECONDS - t0))
  cpu=$(steps_cpu "$timesfile")
  rm -f "$timesfile"
  steps_record "$(printf '%6d s %6d s  %s' "$took" "$cpu" "$name")"
  if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
    echo "== $name: TIMED OUT after $took s (limit $limit s): stopped, the run fails"
    steps_stop_bg
    steps_summary
    exit 1
  fi
  if [ "$rc" -ne 0 ]; then
    echo "== $name: FAILED (exit $rc) after $took s"
    steps_stop_bg
    steps_summary
    exit "$rc"
  fi
  echo "== $name: ok in $took s (CPU $cpu s)"
  steps_poll
}

STEPS_BG=()
step_bg() {
  local name=$1 limit=$(($2 * ${STEPS_LIMIT_FACTOR:-1}))
  shift 2
  local dir
  dir=$(mktemp -d /tmp/pocket-step.XXXXXX)
  echo "== $name (in the background, time limit ${limit} s)"
  # The subshell times its command (`times`: CPU of its finished children)
  # and records the exit status and the wall time.
  # `timeout` leads a session of its own (steps_run): its PID (in tpid) is
  # what steps_stop_bg signals to stop the step and all it started.
  (
    t0=$SECONDS
    rc=0
    STEPS_SID_FILE="$dir/tpid" steps_run "$limit" "$@" >"$dir/out" 2>&1 </dev/null || rc=$?
    times >"$dir/times"
    echo "$rc $((SECONDS - t0))" >"$dir/rc.tmp"
    mv "$dir/rc.tmp" "$dir/rc"
  ) &
  STEPS_BG+=("$!|$limit|$dir|$name")
}

# Stops the background steps still running (SIGTERM to each one's `timeout`,
# which passes it to the step's process group; steps_run then ends the rest
# of its session), for a run that fails.
steps_stop_bg() {
  local entry pid limit dir name
  for entry in "${STEPS_BG[@]}"; do
    IFS='|' read -r pid limit dir name <<<"$entry"
    if [ ! -e "$dir/rc" ] && [ -s "$dir/tpid" ]; then
      echo "== $name (background): stopped, the run fails"
      kill -TERM "$(cat "$dir/tpid")" 2>/dev/null || true
    fi
  done
  for entry in "${STEPS_BG[@]}"; do
    IFS='|' read -r pid limit dir name <<<"$entry"
    wait "$pid" 2>/dev/null || true
  done
  STEPS_BG=()
}

steps_poll() {
  local entry pid limit dir name rc took
  for entry in "${STEPS_BG[@]}"; do
    IFS='|' read -r pid limit dir name <<<"$entry"
    [ -e "$dir/rc" ] || continue
    read -r rc took <"$dir/rc"
    [ "$rc" -ne 0 ] || continue
    echo "== $name (background) output:"
    cat "$dir/out"
    if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
      echo "== $name: TIMED OUT after $took s (limit $limit s): stopped, the run fails"
    else
      echo "== $name: FAILED (exit $rc) after $took s"
    fi
    steps_record "$(printf '%6d s %6s    %s (background, failed)' "$took" "" "$name")"
    steps_stop_bg
    steps_summary
    exit 1
  done
}

steps_wait() {
  local entry pid limit dir name rc took cpu failed=0 running
  # Until all have ended; the first to fail ends the run at once.
  while :; do
    running=0
    for entry in "${STEPS_BG[@]}"; do
      IFS='|' read -r pid limit dir name <<<"$entry"
      [ -e "$dir/rc" ] || running=1
    done
    [ "$running" = 1 ] || break
    steps_poll
    sleep 2
  done
  for entry in "${STEPS_BG[@]}"; do
    IFS='|' read -r pid limit dir name <<<"$entry"
    wait "$pid" || true
    echo "== $name (background) output:"
    cat "$dir/out"
    read -r rc took <"$dir/rc"
    cpu=$(steps_cpu "$dir/times")
    rm -rf "$dir"
    steps_record "$(printf '%6d s %6d s  %s (background)' "$took" "$cpu" "$name")"
    if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
      echo "== $name: TIMED OUT after $took s (limit $limit s): stopped, the run fails"
      failed=1
    elif [ "$rc" -ne 0 ]; then
      echo "== $name: FAILED (exit $rc) after $took s"
      failed=$rc
    else
      echo "== $name: ok in $took s (CPU $cpu s)"
    fi
  done
  STEPS_BG=()
  if [ "$failed" -ne 0 ]; then
    steps_summary
    exit "$failed"
  fi
}

# steps_summary: this script's steps. With STEPS_TIMES_FILE set, the caller
# that set it prints every step instead, with `steps_summary --all`.
steps_summary() {
  if [ "${1:-}" = --all ]; then
    echo "== step times (wall, CPU)"
    cat "$STEPS_TIMES_FILE"
  elif [ -n "${STEPS_TIMES_FILE:-}" ]; then
    return 0
  else
    echo "== step times (wall, CPU)"
    printf '%s\n' "${STEP_TIMES[@]}"
  fi
  local f
  f=$(mktemp /tmp/pocket-step.XXXXXX)
  times >"$f"
  printf '%6d s %6d s  total\n' "$((SECONDS - STEPS_T0))" "$(steps_cpu "$f")"
  rm -f "$f"
}
