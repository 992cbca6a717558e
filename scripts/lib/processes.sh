# Sourced by scripts/test.sh and the benchmark scripts: processes are
# started with default signal dispositions and stopped by the PID recorded at
# their start, never by name (no pkill, killall or systemctl stop).
#
#   spawn_bg CMD ARG...   runs CMD in the background with every signal at its
#                         default disposition (bash makes SIGINT and SIGQUIT
#                         ignored in a non-interactive shell's background
#                         jobs; `trap -` in the subshell undoes it before the
#                         exec); its PID in SPAWNED_PID. Redirect as usual:
#                         spawn_bg nginx -c conf >log 2>&1
#   stop_pids PID...      SIGTERM to these PIDs, up to 5 s, then SIGKILL
#   leftovers_scan ID     prints "PID COMMAND" for each live process (not a
#                         zombie) whose environment holds POCKET_TEST_RUN=ID,
#                         other than this shell: test.sh exports the marker,
#                         every process of the run inherits it (the XCTest
#                         process, nginx, openssl, curl, python3, pocket...),
#                         even one orphaned and re-parented. Bash builtins
#                         only, so the scan starts no process of its own.
#   leftovers_guard NAME  exports a fresh POCKET_TEST_RUN and, at exit
#                         (whatever the outcome), reports the processes that
#                         still carry it, stops them by PID and fails (test.sh,
#                         ci.sh)

spawn_bg() {
  ( trap - INT QUIT TERM HUP; exec "$@" ) &
  SPAWNED_PID=$!
}

leftovers_scan() {
  local id="$1" dir pid entry state cmd rest
  local -a env argv
  for dir in /proc/[0-9]*; do
    pid="${dir#/proc/}"
    [ "$pid" = "$$" ] || [ "$pid" = "${BASHPID:-$$}" ] && continue
    mapfile -d '' env 2>/dev/null <"$dir/environ" || continue
    for entry in "${env[@]}"; do
      if [ "$entry" = "POCKET_TEST_RUN=$id" ]; then
        state=""
        if read -r rest 2>/dev/null <"$dir/stat"; then
          rest="${rest##*) }"
          state="${rest%% *}"
        fi
        [ "$state" = "Z" ] && break
        mapfile -d '' argv 2>/dev/null <"$dir/cmdline" || argv=()
        cmd="${argv[*]}"
        echo "$pid ${cmd:-?}"
        break
      fi
    done
  done
}

leftovers_guard() {
  LEFTOVERS_NAME="$1"
  POCKET_TEST_RUN="$$-$(date +%s%N)"
  export POCKET_TEST_RUN
  trap leftovers_check EXIT
}

leftovers_check() {
  local rc=$? left
  left="$(leftovers_scan "$POCKET_TEST_RUN")"
  if [ -n "$left" ]; then
    echo "$LEFTOVERS_NAME: processes started by this run are still alive:"
    echo "$left" | sed 's/^/  /'
    # shellcheck disable=SC2046
    stop_pids $(echo "$left" | cut -d' ' -f1)
    rc=1
  else
    echo "$LEFTOVERS_NAME: no process started by this run is left"
  fi
  exit "$rc"
}

stop_pids() {
  local pid
  for pid in "$@"; do kill -TERM "$pid" 2>/dev/null || true; done
  for _ in $(seq 50); do
    local alive=0
    for pid in "$@"; do kill -0 "$pid" 2>/dev/null && alive=1; done
    [ "$alive" = 0 ] && return 0
    sleep 0.1
  done
  for pid in "$@"; do kill -KILL "$pid" 2>/dev/null || true; done
}
