#!/usr/bin/env bash
# Builds the allocation counter: scripts/malloc-count/build.sh [OUTPUT.so]
# (default .build-bench/malloc-count/libmalloccount.so under the repo root)
# and prints the library's path. Use it as:
#   LD_PRELOAD=$(scripts/malloc-count/build.sh) .build-bench/release/pocket-bench
#   MALLOC_COUNT_REPORT=1 LD_PRELOAD=... any-program   # totals on stderr at exit
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
out="${1:-$root/.build-bench/malloc-count/libmalloccount.so}"
mkdir -p "$(dirname "$out")"
src="$here/malloccount.c"
if [ ! -f "$out" ] || [ "$src" -nt "$out" ]; then
  "${CC:-cc}" -O2 -fPIC -shared -fvisibility=hidden -Wall -Wextra -o "$out.tmp" "$src"
  mv "$out.tmp" "$out"
fi
echo "$out"
