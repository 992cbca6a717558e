# Sourced by scripts/ci.sh: keeps the background builds at the nice value
# they were started with.
#
#   nice_keeper_start   starts the keeper (its PID in NICE_KEEPER_PID)
#   nice_keeper_stop    stops it
#
# `nice -n 10 swift build` is not enough: swift-build starts each compiler
# (swiftc, swift-frontend) at nice 0, in a process group of its own, so a
# build would compete with the suites on equal terms. Every 2 s the keeper
# gives each process of the run's session that runs at a lower nice value than
# its parent (every thread of it) the parent's value: the inheritance the
# build tool undid. It touches no process outside the run's session and never
# raises a priority. Bash builtins only, but for `renice` when one is due.
nice_keeper_start() {
  local sid
  read -r _ _ _ _ _ sid _ </proc/$$/stat
  # Its own shell options: a process that ends between the scan and its
  # renice must not end the keeper (set -e).
  ( set +eu; nice_keeper_loop "$sid" ) </dev/null >/dev/null 2>&1 &
  NICE_KEEPER_PID=$!
}

nice_keeper_stop() {
  if [ -n "${NICE_KEEPER_PID:-}" ]; then
    kill "$NICE_KEEPER_PID" 2>/dev/null || true
    wait "$NICE_KEEPER_PID" 2>/dev/null || true
    NICE_KEEPER_PID=""
  fi
}

nice_keeper_loop() {
  local sid=$1 dir pid stat rest parent want task nap
  local -a fields tids
  local -A nice parent_of
  while :; do
    nice=(); parent_of=()
    for dir in /proc/[0-9]*; do
      read -r stat 2>/dev/null <"$dir/stat" || continue
      rest=${stat##*) }
      read -r -a fields <<<"$rest"
      # Fields from the third on: state ppid pgrp session ... nice (19th).
      [ "${fields[3]}" = "$sid" ] || continue
      pid=${dir#/proc/}
      nice[$pid]=${fields[16]}
      parent_of[$pid]=${fields[1]}
    done
    for pid in "${!nice[@]}"; do
      parent=${parent_of[$pid]}
      want=${nice[$parent]:-}
      [ -n "$want" ] && [ "$want" -gt "${nice[$pid]}" ] || continue
      tids=()
      for task in /proc/"$pid"/task/*; do tids+=("${task##*/}"); done
      if ((${#tids[@]})); then renice -n "$want" -p "${tids[@]}" >/dev/null 2>&1 || true; fi
      nice[$pid]=$want
    done
    # A stop (SIGTERM) during the wait ends the sleep with the keeper, so
    # nothing of it outlives nice_keeper_stop.
    sleep 2 &
    nap=$!
    trap 'kill "$nap" 2>/dev/null; exit 0' TERM
    wait "$nap"
    trap - TERM
  done
}
