#!/usr/bin/env bash
# retcount.sh BIN [pocket-bench arguments]: swift_retain and swift_allocObject
# calls per request of a pocket-bench binary against its embedded server,
# grouped by the calling function (fifteenth session; needs root and perf).
# Adds two uprobes on the binary's libswiftCore (kept: `perf probe -d
# 'probe_libswiftCore:*'` removes them) and counts over every request,
# warmup included. TOP: how many callers to print (30).
set -euo pipefail
B=$1; shift
LIB=$(ldd "$B" | awk '/libswiftCore/ { print $3 }')
for f in swift_retain swift_allocObject; do
  perf probe -l 2>/dev/null | grep -q "probe_libswiftCore:$f " || perf probe -q -x "$LIB" "$f"
done
DATA=$(mktemp /tmp/retcount.XXXX)
trap 'rm -f "$DATA"' EXIT
N=20000 W=2000
timeout 300 perf record -q -e probe_libswiftCore:swift_retain -e probe_libswiftCore:swift_allocObject -g -o "$DATA" -- \
  "$B" --requests $N --warmup $W --connections 64 --server-cpu 1 "$@" >/dev/null 2>&1
perf script -i "$DATA" -F event,ip,sym 2>/dev/null | awk -v n=$((N + W)) 'BEGIN { RS = "" }
  { split($0, L, "\n"); ev = L[1]; sub(/^ */, "", ev); split(ev, e, ":"); split(L[3], f, " ");
    c[e[2] " " f[2]]++; t[e[2]]++ }
  END { for (k in t) printf "%8.2f TOTAL %s\n", t[k] / n, k
        for (k in c) if (c[k] / n > 0.5) printf "%8.2f %s\n", c[k] / n, k }' |
  sort -rn | head -"${TOP:-30}" | swift demangle --simplified | cut -c1-160
