#!/usr/bin/env bash
# waitquiet.sh [max_seconds]: returns once both CPUs were >= 93% idle over 2 s (or after max_seconds)
max=${1:-300}; t=0
while [ $t -lt $max ]; do
  a=($(awk '/^cpu /{print $5+$6, $2+$3+$4+$5+$6+$7+$8}' /proc/stat)); sleep 2
  b=($(awk '/^cpu /{print $5+$6, $2+$3+$4+$5+$6+$7+$8}' /proc/stat))
  idle=$(( 100 * (b[0]-a[0]) / (b[1]-a[1]) ))
  [ $idle -ge 93 ] && { echo "quiet (idle $idle%) after ${t}s" >&2; exit 0; }
  t=$((t+2))
done
echo "not quiet after ${max}s (idle $idle%)" >&2
