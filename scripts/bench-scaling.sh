#!/usr/bin/env bash
# Pocket and libcurl as connections grow: requests/s, p99 latency and peak
# RSS at 64, 256, 1,024, 4,096 and 10,000 keep-alive connections against nginx from
# Debian on loopback (its own port, config and pid file, one worker pinned to
# core 0, started and stopped by its PID), each client pinned to core 1:
# pocket-bench (--json: its HDR latencies and VmHWM) and curl-bench (the
# multi interface; libcurl's per-request total time, ru_maxrss). Writes one
# JSON run a line for the charts (docs/charts/scaling, scripts/bench-charts.sh)
# and prints a table.
#
#   scripts/bench-scaling.sh                  # REPS=1 DUR=5, -> docs/results/scaling.json
#   scripts/bench-scaling.sh --quick          # REPS=1 DUR=2
#   REPS=3 DUR=10 scripts/bench-scaling.sh && scripts/bench-charts.sh docs/results/scaling.json
#
# Environment: REPS (1), DUR seconds per run (5), PORT (18086), SERVER_CPU
# (0), CLIENT_CPU (1), CONNECTIONS ("64 256 1024 4096 10000"), JSON (the results
# file, docs/results/scaling.json), STATIC (1: pocket-bench with the Swift
# runtime linked statically, in .build-static, as services deploy it; 0: the
# shared runtime), SCRATCH (a swift build --scratch-path).
# Installs nginx-light, wrk, time, util-linux, gcc and libcurl4-openssl-dev
# with apt-get when missing; raises the open-file limit to C + 1024 (it fails
# if the hard limit is lower).
set -euo pipefail

cd "$(dirname "$0")/.."
. scripts/lib/nginx-conf.sh
. scripts/lib/bench-common.sh
. scripts/lib/bench-json.sh

REPS="${REPS:-1}"
bench_args bench-scaling 2,20p "$@"
PORT="${PORT:-18086}"
SERVER_CPU="${SERVER_CPU:-0}"
CLIENT_CPU="${CLIENT_CPU:-1}"
CONNECTIONS="${CONNECTIONS:-64 256 1024 4096 10000}"
JSON="${JSON:-docs/results/scaling.json}"
URL="http://127.0.0.1:${PORT}/"
# Both clients stop after DUR seconds. pocket-bench counts latencies into
# one shared histogram (at most 272 KiB, whatever the number of requests),
# so its RSS is the client's, not the benchmark's bookkeeping.
BUDGET=2000000

log() { echo "bench-scaling: $*" >&2; }

need=()
bench_need_base
bench_need_libcurl
bench_install "${need[@]}"
bench_check_cpus

max_c=0
for c in $CONNECTIONS; do ((c > max_c)) && max_c=$c; done
# One descriptor per connection in each process (nginx and the client run
# apart), and room for the rest: 10,000 connections fit a hard limit of 20,000.
NOFILE=$((max_c + 1024))
ulimit -n "$NOFILE" || { log "cannot raise the open-file limit to $NOFILE"; exit 1; }

TMP="$(mktemp -d /tmp/pocket-bench-scaling.XXXXXX)"
cleanup() {
  bench_stop_nginx
  rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# The static build by default (STATIC=0: shared; scripts/lib/bench-common.sh).
STATIC="${STATIC:-1}"
POCKET="$(bench_build_pocket_bench)" || exit 1
CURL_BENCH="$TMP/curl-bench"
log "building curl-bench"
cc -O2 Benchmarks/curl-bench/curl_bench.c -o "$CURL_BENCH" -lcurl

# The hello config, with room for every connection in one worker.
bench_hello_conf "$NGINX" "$PORT" "$SERVER_CPU"
sed -i "s/worker_connections [0-9]*;/worker_connections $((2 * max_c + 64));/" "$TMP/nginx.conf"
sed -i "1i worker_rlimit_nofile $NOFILE;" "$TMP/nginx.conf"
bench_start_nginx "$NGINX" "$TMP/nginx.conf" "$PORT" "$SERVER_CPU" || exit 1

NGINX_VERSION="$("$NGINX" -v 2>&1 | sed 's/.*nginx\///')"
CURL_VERSION="$(curl-config --version | awk '{ print $2 }')"
MACHINE="$(json_machine)"
SCENARIO='"scenario":"scaling"'
mkdir -p "$(dirname "$JSON")"
: >"$JSON"

run_pocket() { # connections rep
  local c=$1 out="$TMP/pocket.out"
  taskset -c "$CLIENT_CPU" "$POCKET" --url "$URL" --connections "$c" --requests "$BUDGET" \
    --max-seconds "$DUR" --json >"$out" 2>"$TMP/pocket.err" || { log "pocket-bench c=$c failed: $(cat "$TMP/pocket.err")"; return 1; }
  json_tag "$(cat "$out")" "$SCENARIO,\"rep\":$2" >>"$JSON"
  echo "pocket $c $(jget rps "$out") $(jget p99_us "$out") $(jget peak_rss_kib "$out") $(jget errors "$out")"
}

run_curl() { # connections rep
  local c=$1 out="$TMP/curl.out"
  local cmd=("$CURL_BENCH" --url "$URL" --connections "$c" --requests "$BUDGET" --warmup "$((c * 16))" --max-seconds "$DUR")
  taskset -c "$CLIENT_CPU" "${cmd[@]}" >"$out" 2>"$TMP/curl.err" || { log "curl-bench c=$c failed: $(cat "$TMP/curl.err")"; return 1; }
  json_tag "$(cat "$out")" "\"client\":\"libcurl\",\"label\":\"libcurl $CURL_VERSION (multi)\",$SCENARIO,\"rep\":$2,\
\"connections\":$c,\"machine\":$MACHINE,\"versions\":{\"libcurl\":\"$CURL_VERSION\",\"nginx\":\"$NGINX_VERSION\"},\
\"command\":$(json_str "curl-bench --url $URL --connections $c --requests $BUDGET --warmup $((c * 16)) --max-seconds $DUR")" >>"$JSON"
  echo "libcurl $c $(jget rps "$out") $(jget p99_us "$out") $(jget peak_rss_kib "$out") $(jget errors "$out")"
}

log "machine: $NCPU CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'), kernel $(uname -r)"
log "$REPS repetition(s) x connections ($CONNECTIONS) x 2 clients x ${DUR}s -> $JSON"
printf '%-4s %-8s %6s %12s %10s %14s %7s\n' rep client c rps p99_us peak_rss_kib errors
for rep in $(seq "$REPS"); do
  for c in $CONNECTIONS; do
    # Every other repetition libcurl first, so slow drift favours neither.
    if ((rep % 2)); then order=(run_pocket run_curl); else order=(run_curl run_pocket); fi
    for run in "${order[@]}"; do
      line="$("$run" "$c" "$rep")" || continue
      read -r client cc rps p99 rss errs <<<"$line"
      printf '%-4s %-8s %6s %12s %10s %14s %7s\n' "$rep" "$client" "$cc" "$rps" "$p99" "$rss" "$errs"
      echo "$client $cc $rps $p99 $rss" >>"$TMP/rows"
    done
  done
done
# Medians per client and count as a Markdown table (scripts/bench-page.py
# puts it in docs/BENCHMARKS.md), then memory per connection between the
# smallest and the largest count.
echo
echo "| c | Pocket req/s | p99 | peak RSS | libcurl req/s | p99 | peak RSS | Pocket ÷ libcurl |"
echo "|---:|---:|---:|---:|---:|---:|---:|---:|"
[ -s "$TMP/rows" ] && awk '
  function median(list,   n, v, i, j, t) {
    n = split(list, v, " ")
    for (i = 2; i <= n; i++) for (j = i; j > 1 && v[j - 1] + 0 > v[j] + 0; j--) { t = v[j]; v[j] = v[j - 1]; v[j - 1] = t }
    return n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
  }
  function ms(us) { return us >= 10000 ? sprintf("%.0f ms", us / 1000) : sprintf("%.2f ms", us / 1000) }
  function commas(x,   s, out) { s = sprintf("%.0f", x); out = ""; while (length(s) > 3) { out = "," substr(s, length(s) - 2) out; s = substr(s, 1, length(s) - 3) }; return s out }
  { rps[$1, $2] = rps[$1, $2] " " $3; p99[$1, $2] = p99[$1, $2] " " $4; rss[$1, $2] = rss[$1, $2] " " $5
    if (!($2 in seen)) { seen[$2] = 1; order[++n] = $2 } }
  END {
    for (i = 1; i <= n; i++) {
      c = order[i]; pr = median(rps["pocket", c]); lr = median(rps["libcurl", c])
      pm[c] = median(rss["pocket", c]); lm[c] = median(rss["libcurl", c])
      printf "| %s | %s | %s | %.1f MiB | %s | %s | %.1f MiB | %.2f |\n", commas(c), commas(pr), ms(median(p99["pocket", c])),
        pm[c] / 1024, commas(lr), ms(median(p99["libcurl", c])), lm[c] / 1024, (lr > 0 ? pr / lr : 0)
    }
    if (n >= 2) {
      lo = order[1]; hi = order[n]
      printf "\nMemory per connection (peak RSS at %s minus at %s, over the %d connections between): Pocket %.1f KiB, libcurl %.1f KiB.\n",
        hi, lo, hi - lo, (pm[hi] - pm[lo]) / (hi - lo), (lm[hi] - lm[lo]) / (hi - lo)
    }
  }' "$TMP/rows"
echo
echo "Machine: $NCPU CPUs ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //')), kernel $(uname -r)," \
  "nginx $NGINX_VERSION, libcurl $CURL_VERSION, $(swift --version 2>/dev/null | head -1)"
echo "Date: $(date -u '+%Y-%m-%d %H:%M UTC'), commit $(git rev-parse --short HEAD 2>/dev/null || echo '?')"
echo "Command: REPS=$REPS DUR=$DUR CONNECTIONS=\"$CONNECTIONS\" scripts/bench-scaling.sh"
echo "Results: $JSON (draw: scripts/bench-charts.sh $JSON)"
