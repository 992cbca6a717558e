#!/usr/bin/env bash
# Checks that the C engine's files call each other as a DAG (docs/ENGINE.md,
# "Layers"): compiles each Sources/CHTTPEngine/*.c alone, lists per file the
# pk_/pk__ symbols it uses that another file defines, and fails on a cycle
# (tsort) or on an edge the layering forbids: a leaf calling up, or a step
# of a connection (pk_conn_connect, _tunnel, _read, _write, _wait) calling the
# connection's top (pk_conn.c), the pool or the engine: a step reports up
# through conn->up (pk_conn.h).
#
#   scripts/engine-dag.sh          print the edges, fail on a cycle
#
# Inline functions in headers are not calls between files and do not count.
# Environment: CLANG (default /opt/swift/usr/bin/clang).
set -euo pipefail
cd "$(dirname "$0")/.."
CLANG=${CLANG:-/opt/swift/usr/bin/clang}
NM=$(dirname "$CLANG")/llvm-nm
[ -x "$NM" ] || NM=nm
engine=Sources/CHTTPEngine
out=.build-c/dag
mkdir -p "$out"

declare -A owner
for src in "$engine"/*.c; do
  f=$(basename "$src" .c)
  # The same defines as make check, so PK_STATE_CHECKS edges are seen too.
  "$CLANG" -c -std=c11 -D_GNU_SOURCE -DPK_STATE_CHECKS -I "$engine/include" -I "$engine" "$src" -o "$out/$f.o"
  for sym in $("$NM" --defined-only -g "$out/$f.o" | awk '$3 ~ /^pk_/ {print $3}'); do owner[$sym]=$f; done
done

edges=""
for obj in "$out"/*.o; do
  f=$(basename "$obj" .o)
  deps=$("$NM" -u "$obj" | awk '{print $NF}' | { grep '^pk_' || true; } | while read -r sym; do
    o=${owner[$sym]:-}
    [ -n "$o" ] && [ "$o" != "$f" ] && echo "$o"
  done | sort -u | tr '\n' ' ')
  printf '%-12s -> %s\n' "$f" "${deps:-(nothing)}"
  for d in $deps; do edges+="$f $d"$'\n'; done
done

# Leaves call nothing of the engine but the shared base (pk_error.c). The
# pool is one: it decides and never acts (pk_pool.h).
status=0
for leaf in pk_dns pk_dns_records pk_tls pk_h1_parse pk_inflate pk_error pk_loop pk_pool; do
  bad=$(printf '%s' "$edges" | awk -v l="$leaf" '$1 == l && $2 != "pk_error" {print $2}' | tr '\n' ' ')
  if [ -n "$bad" ]; then
    echo "engine-dag: $leaf must be a leaf but calls: $bad" >&2
    status=1
  fi
done
# The connection's steps call down only.
for step in pk_conn_connect pk_conn_tunnel pk_conn_read pk_conn_write pk_conn_wait; do
  bad=$(printf '%s' "$edges" | awk -v s="$step" '$1 == s && ($2 == "pk_conn" || $2 == "pk_pool" || $2 == "pk_engine") {print $2}' | tr '\n' ' ')
  if [ -n "$bad" ]; then
    echo "engine-dag: $step is a step of a connection but calls up: $bad" >&2
    status=1
  fi
done
if ! printf '%s' "$edges" | tsort > /dev/null 2> "$out/tsort.err"; then
  echo "engine-dag: the engine's files call each other in a circle:" >&2
  cat "$out/tsort.err" >&2
  status=1
fi
[ $status -eq 0 ] && echo "engine-dag: no cycle"
exit $status
