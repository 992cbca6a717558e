#!/usr/bin/env bash
# Task-allocator frames per request (docs/BENCHMARKS.md, eleventh session):
# a uprobe on swift_task_alloc with its size, 200,000 requests of
# pocket-bench at 64 connections against nginx (started here, stopped by
# its PID), each allocation charged to its caller. Needs root (perf probe).
#   taskframes.sh /path/to/pocket-bench [--pipeline]
set -uo pipefail
BIN=$1; shift
cd "$(dirname "$0")/../../../.."
. scripts/lib/bench-common.sh
. scripts/lib/nginx-conf.sh
log() { echo "$*" >&2; }
TMP=$(mktemp -d /tmp/pocket-frames.XXXXXX)
NGINX=/usr/sbin/nginx; PORT=18190; N=200000
LIB=$(ldd "$BIN" | awk '/libswift_Concurrency/{print $3}')
perf probe -q -x "$LIB" -a 'swift_task_alloc size=%di:u64' 2>/dev/null || true
bench_hello_conf "$NGINX" "$PORT" 0
bench_start_nginx "$NGINX" "$TMP/nginx.conf" "$PORT" 0 || exit 1
trap 'bench_stop_nginx; perf probe -q -d probe_libswift_Concurrency:swift_task_alloc 2>/dev/null; rm -rf "$TMP"' EXIT
taskset -c 1 perf record -q -e probe_libswift_Concurrency:swift_task_alloc -g -o "$TMP/p.data" \
  "$BIN" --url "http://127.0.0.1:$PORT/" --connections 64 --requests $N --json "$@" >/dev/null 2>&1
perf script -i "$TMP/p.data" -F trace,ip,sym 2>/dev/null | N=$N python3 -c '
import collections, os, sys
n = int(os.environ["N"]); count = collections.Counter(); size = collections.Counter(); cur = None; depth = 0
for line in sys.stdin:
    t = line.strip()
    if not t: cur = None; continue
    if "size=" in t: cur = int(t.split("size=")[1].split()[0]); depth = 0; continue
    if cur is None: continue
    depth += 1
    if depth == 2:
        fn = t.split(None, 1)[1] if len(t.split(None, 1)) > 1 else "?"
        count[fn] += 1; size[fn] += cur
print("per request: %.2f frames, %.0f bytes" % (sum(count.values()) / n, sum(size.values()) / n))
for fn, c in count.most_common(12):
    if c / n > 0.5: print("%.2f x %5d B  allocated by %s" % (c / n, size[fn] // c, fn))
' | swift demangle --simplified
