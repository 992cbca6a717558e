#!/usr/bin/env bash
# Streaming bodies: downloads (to /dev/null, to a file), gzip decoding,
# uploads and a multipart form upload (one 1 GiB file part), Pocket (pocket-bench) against libcurl (Benchmarks/curl-bench, a
# libcurl multi-interface client, and the curl CLI for the upload) in the same
# run. nginx from Debian serves the downloads (one worker pinned to core 0),
# Benchmarks/bench-server (Benchmarks/CPocketBenchServer) sinks the uploads on
# core 0, every client runs on core 1; REPS repetitions interleaved, medians.
#
#   scripts/bench-bodies.sh            # REPS=5
#   scripts/bench-bodies.sh --quick    # REPS=1 (smoke test)
#   REPS=9 PORT=18090 scripts/bench-bodies.sh
#   SCENARIOS="upload form" REPS=3 scripts/bench-bodies.sh   # some scenarios only
#
# Environment: REPS (5), PORT (nginx, 18090), UPLOAD_PORT (bench-server,
# PORT+1), SERVER_CPU (0), CLIENT_CPU (1), SCRATCH (a swift build
# --scratch-path; default: SwiftPM's own .build), POCKET_BENCH (a pocket-bench
# binary to use instead of building one), RUN_TIMEOUT (seconds a run may
# take before it is killed and marked fail, 60), STATIC (1: pocket-bench with
# --static-swift-stdlib in .build-static; 0: the shared runtime), SCENARIOS
# (dl-null dl-file gzip upload form: all).
set -euo pipefail

cd "$(dirname "$0")/.."
. scripts/lib/nginx-conf.sh
. scripts/lib/bench-common.sh
ROOT="$PWD"

QUICK=0
for a in "$@"; do
  case "$a" in
    --quick) QUICK=1 ;;
    -h|--help) sed -n '2,22p' "$0"; exit 0 ;;
    *) echo "bench-bodies: unknown argument '$a'" >&2; exit 2 ;;
  esac
done
[ "$QUICK" = 1 ] && REPS="${REPS:-1}"
REPS="${REPS:-5}"
PORT="${PORT:-18090}"
UPLOAD_PORT="${UPLOAD_PORT:-$((PORT + 1))}"
SERVER_CPU="${SERVER_CPU:-0}"
CLIENT_CPU="${CLIENT_CPU:-1}"
RUN_TIMEOUT="${RUN_TIMEOUT:-60}"
BASE="http://127.0.0.1:${PORT}"
UPLOAD_URL="http://127.0.0.1:${UPLOAD_PORT}/upload"

# Sizes of the test data and requests per run.
BIG_BYTES=$((100 * 1024 * 1024))    # /big.bin, incompressible
TEXT_BYTES=$((1024 * 1024))         # /text.txt, served as text.txt.gz
UPLOAD_BYTES=$((1024 * 1024 * 1024))
DL_REQUESTS=10
GZIP_REQUESTS=300
GZIP_WARMUP=10
UPLOAD_REQUESTS=3

log() { echo "bench-bodies: $*" >&2; }

# ------------------------------------------------------------------ packages
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
need=()
[ -x /usr/sbin/nginx ] || command -v nginx >/dev/null 2>&1 || need+=(nginx-light)
command -v wrk >/dev/null 2>&1 || need+=(wrk)
command -v curl >/dev/null 2>&1 || need+=(curl)
[ -f /usr/include/x86_64-linux-gnu/curl/curl.h ] || [ -f /usr/include/curl/curl.h ] ||
  [ -n "$(find /usr/include -path '*/curl/curl.h' -print -quit 2>/dev/null)" ] || need+=(libcurl4-openssl-dev)
[ -x /usr/bin/time ] || need+=(time)
command -v taskset >/dev/null 2>&1 || need+=(util-linux)
command -v python3 >/dev/null 2>&1 || need+=(python3)
command -v cc >/dev/null 2>&1 || need+=(gcc libc6-dev)
if ((${#need[@]})); then
  log "installing ${need[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi
NGINX="$(command -v nginx 2>/dev/null || echo /usr/sbin/nginx)"
CURL="$(command -v curl)"

NCPU="$(nproc)"
if [ "$NCPU" -lt 2 ]; then
  log "warning: $NCPU CPU: server and client share it"
  SERVER_CPU=0
  CLIENT_CPU=0
fi

# ------------------------------------------------------------------ temp dir, cleanup
TMP="$(mktemp -d /tmp/pocket-bench-bodies.XXXXXX)"
NGINX_PID=""
SINK_PID=""
cleanup() { # the servers this script started, by their PIDs
  # shellcheck disable=SC2086
  if [ -n "$NGINX_PID$SINK_PID" ]; then stop_pids $NGINX_PID $SINK_PID; fi
  rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# ------------------------------------------------------------------ build
CFLAGS_BENCH=(-O2 -Wall -Wextra)
CURL_BENCH="$TMP/curl-bench"
SINK_BIN="$TMP/bench-server"
log "building curl-bench and bench-server"
cc "${CFLAGS_BENCH[@]}" Benchmarks/curl-bench/curl_bench.c -o "$CURL_BENCH" -lcurl
cc "${CFLAGS_BENCH[@]}" -D_GNU_SOURCE -pthread -IBenchmarks/CPocketBenchServer/include \
  Benchmarks/CPocketBenchServer/pkbs_server.c Benchmarks/CPocketBenchServer/pkbs_tls.c Benchmarks/bench-server/main.c \
  -o "$SINK_BIN" -lssl -lcrypto

BIN="${POCKET_BENCH:-}"
if [ -z "$BIN" ]; then
  # The static build by default (STATIC=0: shared; bench_swift_build_args,
  # scripts/lib/bench-common.sh).
  STATIC="${STATIC:-1}"
  if ! BIN="$(bench_build_product pocket-bench)"; then
    log "pocket-bench did not build: its runs are marked fail"
    BIN="$TMP/no-pocket-bench"
  fi
fi

# ------------------------------------------------------------------ test data
WWW="$TMP/www"
mkdir -p "$WWW"
# nginx's worker runs as an unprivileged user: it must be able to read these.
chmod 755 "$TMP" "$WWW"
log "making test data in $TMP"
head -c "$BIG_BYTES" /dev/urandom >"$WWW/big.bin"
# Text that compresses like text: a generated service log (timestamps,
# levels, paths, addresses, sentences of common English words), seeded.
python3 - "$TEXT_BYTES" >"$WWW/text.txt" <<'EOF'
import random, sys, time
r = random.Random(20261122)
words = ("the of and to in is that for it as was with be by on not he this are or his from at which "
         "but have an they you were her she there been one all we their has would when if so no out what "
         "up said its about into than them can only other new some could time these two may then do first "
         "any my now such like our over man me even most made after also did many before must through back "
         "years where much your way well down should because each just those people how too little state "
         "good very make world still own see men work long get here between both life being under never day "
         "same another know while last might us great old year off come since against go came right used "
         "take three").split()
levels = ["INFO"] * 8 + ["DEBUG"] * 4 + ["WARN"] * 2 + ["ERROR"]
services = ["api.handler", "db.pool", "cache.lru", "auth.session", "queue.worker", "http.client"]
methods = ["GET"] * 6 + ["POST"] * 2 + ["PUT", "DELETE"]
users = ["alice", "bob", "carol", "dave", "erin", "frank", "grace", "heidi", "ivan", "judy"]
statuses = [200] * 20 + [201, 204, 301, 404, 500]
target = int(sys.argv[1])
lines, size, t = [], 0, 1700000000.0
while size < target:
    t += r.expovariate(50)
    kind = r.randrange(5)
    if kind == 0: path = "/v1/items/%d" % r.randrange(1 << 20)
    elif kind == 1: path = "/v1/users/%d/orders" % r.randrange(1 << 16)
    elif kind == 2: path = "/v1/search?q=%s" % r.choice(words)
    elif kind == 3: path = "/static/app.%x.js" % r.randrange(1 << 20)
    else: path = "/healthz"
    msg = " ".join(r.choice(words) for _ in range(r.randrange(4, 14)))
    line = "%s.%03dZ %-5s %s[%d]: %s %s from 10.%d.%d.%d took %.1f ms user=%s status=%d msg=\"%s\"\n" % (
        time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t)), int(t * 1000) % 1000, r.choice(levels),
        r.choice(services), r.randrange(1000, 1064), r.choice(methods), path, r.randrange(4),
        r.randrange(256), r.randrange(256), r.expovariate(0.05), r.choice(users), r.choice(statuses), msg)
    lines.append(line)
    size += len(line)
sys.stdout.write("".join(lines)[:target])
EOF
gzip -k -6 "$WWW/text.txt"
GZ_BYTES="$(stat -c %s "$WWW/text.txt.gz")"
UPLOAD_FILE="$TMP/upload.bin"
head -c "$UPLOAD_BYTES" /dev/urandom >"$UPLOAD_FILE"

# ------------------------------------------------------------------ servers
wait_port() { # pid port name
  for _ in $(seq 100); do
    kill -0 "$1" 2>/dev/null || break
    if (exec 3<>"/dev/tcp/127.0.0.1/$2") 2>/dev/null; then return 0; fi
    sleep 0.1
  done
  log "$3 did not start (port $2 busy?)"
  return 1
}

bench_files_conf "$NGINX" "$PORT" "$SERVER_CPU" "$WWW" '        location = /big.bin {
        }
        location = /text.txt {
            default_type text/plain;
            gzip_static on;
        }'
NGINX_CMD=(taskset -c "$SERVER_CPU" "$NGINX" -p "$TMP" -c "$TMP/nginx.conf" -e "$TMP/error.log")
log "starting nginx on 127.0.0.1:$PORT (core $SERVER_CPU)"
spawn_bg "${NGINX_CMD[@]}" >"$TMP/nginx.out" 2>&1
NGINX_PID=$SPAWNED_PID
wait_port "$NGINX_PID" "$PORT" nginx || {
  cat "$TMP/nginx.out" "$TMP/error.log" >&2 2>/dev/null || true
  exit 1
}
SINK_CMD=(taskset -c "$SERVER_CPU" "$SINK_BIN" --port "$UPLOAD_PORT" --cpu "$SERVER_CPU")
log "starting bench-server (upload sink) on 127.0.0.1:$UPLOAD_PORT (core $SERVER_CPU)"
spawn_bg "${SINK_CMD[@]}" >"$TMP/sink.out" 2>&1
SINK_PID=$SPAWNED_PID
wait_port "$SINK_PID" "$UPLOAD_PORT" bench-server || { cat "$TMP/sink.out" >&2; exit 1; }

# The gzip scenario must get the precompressed file, not the plain one.
head_out="$("$CURL" -sS --noproxy '*' -o /dev/null -D - -H 'Accept-Encoding: gzip, deflate' "$BASE/text.txt" | tr -d '\r')"
enc="$(awk -F': ' 'tolower($1) == "content-encoding" { print $2 }' <<<"$head_out")"
[ "$enc" = gzip ] || {
  log "nginx does not serve /text.txt gzip-encoded: $(head -n 1 <<<"$head_out"), Content-Encoding '$enc'"
  exit 1
}

# ------------------------------------------------------------------ runners
# Each run prints one line "mb_per_s rps bytes requests errors rss_kib" (or
# fails): the client under taskset on CLIENT_CPU, inside /usr/bin/time, killed
# (with everything it started) if it takes more than RUN_TIMEOUT seconds.

OUT="$TMP/run.out"
ERR="$TMP/run.err"
RSS="$TMP/run.rss"

timed() { # command...
  local rc=0
  timeout -k 5 "$RUN_TIMEOUT" /usr/bin/time -f '%M' -o "$RSS" taskset -c "$CLIENT_CPU" "$@" >"$OUT" 2>"$ERR" || rc=$?
  if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then echo "killed after RUN_TIMEOUT=${RUN_TIMEOUT}s" >>"$ERR"; fi
  return "$rc"
}

# Reads the client's JSON object (pocket-bench or curl-bench) from $OUT.
# pocket-bench's errors include bad_status when it reports one.
parse_json() {
  python3 - "$OUT" "$(tail -n 1 "$RSS")" <<'EOF'
import json, sys
obj = None
for line in open(sys.argv[1]):
    line = line.strip()
    if line.startswith("{"):
        try:
            obj = json.loads(line)
        except ValueError:
            pass
if obj is None:
    sys.exit("no JSON object in the output")
el = float(obj["elapsed_s"])
b = int(obj["bytes"])
errors = int(obj.get("errors", 0)) + int(obj.get("bad_status", 0))
print("%.1f %.1f %d %d %d %s" % (b / 1e6 / el if el > 0 else 0, float(obj["rps"]), b,
                                 int(obj["requests"]), errors, sys.argv[2]))
EOF
}

run_client() { # command...
  timed "$@" || {
    cat "$OUT" "$ERR" | head -n 8 >&2
    return 1
  }
  parse_json
}

# The curl CLI: one 1 GiB upload per run, `-T FILE` (a PUT of the file) or
# `-F file=@FILE` (a multipart POST with the file as a part named "file");
# speed_upload = body bytes (for -F the part's head and delimiters too) /
# total time.
run_curl_upload() { # curl arguments...
  timed "$CURL" -sS --noproxy '*' "$@" "$UPLOAD_URL" -o /dev/null \
    -w '%{http_code} %{speed_upload} %{size_upload} %{time_total}\n' || {
    cat "$OUT" "$ERR" | head -n 8 >&2
    return 1
  }
  local code speed size total
  read -r code speed size total <"$OUT"
  case "$code" in 2??) ;; *) echo "curl: HTTP status $code" >&2; return 1 ;; esac
  awk -v s="$speed" -v b="$size" -v t="$total" -v r="$(tail -n 1 "$RSS")" \
    'BEGIN { printf "%.1f %.2f %d 1 0 %s\n", s / 1e6, 1 / t, b, r }'
}

CB_DL=(--url "$BASE/big.bin" --connections 1 --requests "$DL_REQUESTS" --warmup 1)
PB_DL=(--url "$BASE/big.bin" --connections 1 --requests "$DL_REQUESTS" --warmup 1 --json)
CB_GZ=(--url "$BASE/text.txt" --connections 1 --requests "$GZIP_REQUESTS" --warmup "$GZIP_WARMUP")
PB_GZ=(--url "$BASE/text.txt" --connections 1 --requests "$GZIP_REQUESTS" --warmup "$GZIP_WARMUP" --json)
CB_UP=(--url "$UPLOAD_URL" --connections 1 --requests "$UPLOAD_REQUESTS" --warmup 0 --upload-file "$UPLOAD_FILE")
PB_UP=(--url "$UPLOAD_URL" --connections 1 --requests "$UPLOAD_REQUESTS" --warmup 0 --json --upload-file "$UPLOAD_FILE")
PB_FORM=(--url "$UPLOAD_URL" --connections 1 --requests "$UPLOAD_REQUESTS" --warmup 0 --json --upload-form "$UPLOAD_FILE")

run_one() { # scenario client
  case "$1/$2" in
    dl-null/curl) run_client "$CURL_BENCH" "${CB_DL[@]}" --sink discard ;;
    dl-null/pocket) run_client "$BIN" "${PB_DL[@]}" --body-sink discard ;;
    dl-file/curl) run_client "$CURL_BENCH" "${CB_DL[@]}" --sink "file:$TMP/out-curl" ;;
    dl-file/pocket) run_client "$BIN" "${PB_DL[@]}" --body-sink "file:$TMP/out-pocket" ;;
    gzip/curl) run_client "$CURL_BENCH" "${CB_GZ[@]}" --compressed --sink discard ;;
    gzip/pocket) run_client "$BIN" "${PB_GZ[@]}" --body-sink discard ;;
    upload/curl-cli) run_curl_upload -T "$UPLOAD_FILE" ;;
    upload/curl) run_client "$CURL_BENCH" "${CB_UP[@]}" ;;
    upload/pocket) run_client "$BIN" "${PB_UP[@]}" ;;
    form/curl-cli) run_curl_upload -F "file=@$UPLOAD_FILE" ;;
    form/pocket) run_client "$BIN" "${PB_FORM[@]}" ;;
  esac
}

# Body bytes one successful request must account for.
expected_bytes() {
  case "$1" in
    dl-null | dl-file) echo "$BIG_BYTES" ;;
    gzip) echo "$TEXT_BYTES" ;;
    upload | form) echo "$UPLOAD_BYTES" ;;
  esac
}

# Checks a run's bytes (and the file a file sink wrote): "ok" or what is wrong.
check_run() { # scenario client bytes requests errors
  local want=$(($(expected_bytes "$1") * ($4 - $5)))
  if [ "$1" = form ] && [ "$3" -ge "$want" ] && [ "$3" -le $((want + 1024 * $4)) ]; then
    want="$3" # curl -F counts the whole form: the part's head and the delimiters too
  fi
  if [ "$3" != "$want" ]; then echo "bytes!=$want"; return; fi
  if [ "$1" = dl-file ]; then
    local f="$TMP/out-$2" size
    size="$(stat -c %s "$f" 2>/dev/null || echo missing)"
    rm -f "$f"
    [ "$size" = "$BIG_BYTES" ] || { echo "file:$size"; return; }
  fi
  echo ok
}

median() { # numbers...
  printf '%s\n' "$@" | sort -g | awk 'NF { a[++n] = $1 } END {
    if (n == 0) { print "fail"; exit }
    if (n % 2) print a[(n + 1) / 2]; else print (a[n / 2] + a[n / 2 + 1]) / 2 }'
}

# ------------------------------------------------------------------ the run
ALL_RUNS=("dl-null curl" "dl-null pocket" "dl-file curl" "dl-file pocket" "gzip curl" "gzip pocket"
  "upload curl-cli" "upload curl" "upload pocket" "form curl-cli" "form pocket")
RUNS=()
for run in "${ALL_RUNS[@]}"; do
  case " ${SCENARIOS:-dl-null dl-file gzip upload form} " in *" ${run%% *} "*) RUNS+=("$run") ;; esac
done
((${#RUNS[@]})) || { log "SCENARIOS='$SCENARIOS' names none of: dl-null dl-file gzip upload form"; exit 2; }
declare -A MBPS=() RPS=() RSSK=() FAILS=()

MACHINE="$NCPU CPUs; $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'); kernel $(uname -r)"
log "machine: $MACHINE"
log "$REPS repetitions x ${#RUNS[@]} runs"
printf '%-4s %-18s %10s %10s %12s %6s %6s %9s  %s\n' rep run MB/s resp/s bytes reqs errors rss_MiB check
for rep in $(seq "$REPS"); do
  # Alternate the order each repetition so slow drift does not favour one client.
  order=("${RUNS[@]}")
  if ((rep % 2 == 0)); then
    order=()
    for ((i = ${#RUNS[@]} - 1; i >= 0; i--)); do order+=("${RUNS[i]}"); done
  fi
  for run in "${order[@]}"; do
    read -r scen client <<<"$run"
    key="$scen/$client"
    if line="$(run_one "$scen" "$client")" && [ -n "$line" ]; then
      read -r mbps rps bytes reqs errs rss <<<"$line"
      check="$(check_run "$scen" "$client" "$bytes" "$reqs" "$errs")"
      rss_mb="$(awk -v k="$rss" 'BEGIN { printf "%.1f", k / 1024 }')"
      printf '%-4s %-18s %10s %10s %12s %6s %6s %9s  %s\n' "$rep" "$key" "$mbps" "$rps" "$bytes" "$reqs" "$errs" "$rss_mb" "$check"
      if [ "$check" = ok ] && [ "$errs" = 0 ]; then
        MBPS[$key]+="$mbps "
        RPS[$key]+="$rps "
        RSSK[$key]+="$rss_mb "
      else
        FAILS[$key]=$((${FAILS[$key]:-0} + 1))
      fi
    else
      printf '%-4s %-18s %10s\n' "$rep" "$key" fail
      FAILS[$key]=$((${FAILS[$key]:-0} + 1))
    fi
    rm -f "$TMP"/out-*
  done
done

# ------------------------------------------------------------------ summary
m() { median ${1:-}; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "fail" || b == "fail" || b + 0 == 0) print "-"; else printf "%.2f", a / b }'; }
fmt() { awk -v v="$1" -v d="$2" 'BEGIN { if (v == "fail") print "fail"; else printf "%.*f", d, v }'; }

row() { # label scenario curl-client (nothing for a scenario not in SCENARIOS)
  [[ " ${RUNS[*]} " == *" $2 pocket "* ]] || return 0
  local c="$2/$3" p="$2/pocket"
  local cm pm
  cm="$(m "${MBPS[$c]:-}")"
  pm="$(m "${MBPS[$p]:-}")"
  echo "| $1 | $(fmt "$cm" 0) | $(fmt "$pm" 0) | $(ratio "$pm" "$cm") |" \
    "$(fmt "$(m "${RSSK[$c]:-}")" 1) | $(fmt "$(m "${RSSK[$p]:-}")" 1) |" \
    "$(fmt "$(m "${RPS[$c]:-}")" 1) | $(fmt "$(m "${RPS[$p]:-}")" 1) |"
}

echo
echo "== medians of $REPS repetitions (MB/s: 10^6 bytes a second; RSS: peak resident set of the client process in MiB, /usr/bin/time %M KiB / 1024) =="
echo
echo "| scenario | curl MB/s | pocket MB/s | pocket/curl | curl RSS MiB | pocket RSS MiB | curl resp/s | pocket resp/s |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|"
row "download 100 MiB to /dev/null (curl-bench)" dl-null curl
row "download 100 MiB to a file (curl-bench)" dl-file curl
row "gzip 1 MiB text, decoded (curl-bench --compressed)" gzip curl
row "upload 1 GiB (curl -T)" upload curl-cli
row "upload 1 GiB (curl-bench --upload-file)" upload curl
row "multipart form, one 1 GiB file part (curl -F)" form curl-cli
if ((${#FAILS[@]})); then
  echo
  echo "failed or rejected runs (not in the medians):"
  for k in "${!FAILS[@]}"; do echo "  $k: ${FAILS[$k]} of $REPS"; done | sort
fi
echo
echo "date: $(date -u '+%Y-%m-%d %H:%M UTC'); commit $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo '?')"
echo "machine: $MACHINE"
echo "versions: $("$NGINX" -v 2>&1 | sed 's/^nginx version: //'); $("$CURL" --version | head -1 | cut -d' ' -f1-5)"
echo "data: big.bin $BIG_BYTES bytes (urandom); text.txt $TEXT_BYTES bytes, text.txt.gz $GZ_BYTES bytes" \
  "(gzip -6, $(awk -v a="$TEXT_BYTES" -v b="$GZ_BYTES" 'BEGIN { printf "%.1f", a / b }')x); upload.bin $UPLOAD_BYTES bytes (urandom)"
echo "commands (every client under /usr/bin/time -f '%M' taskset -c $CLIENT_CPU):"
echo "  nginx:        ${NGINX_CMD[*]}   (worker_processes 1; worker pinned to core $SERVER_CPU; sendfile on; gzip_static on for /text.txt)"
echo "  upload sink:  ${SINK_CMD[*]}"
echo "  dl-null:      $CURL_BENCH ${CB_DL[*]} --sink discard"
echo "                $BIN ${PB_DL[*]} --body-sink discard"
echo "  dl-file:      $CURL_BENCH ${CB_DL[*]} --sink file:$TMP/out-curl"
echo "                $BIN ${PB_DL[*]} --body-sink file:$TMP/out-pocket"
echo "  gzip:         $CURL_BENCH ${CB_GZ[*]} --compressed --sink discard"
echo "                $BIN ${PB_GZ[*]} --body-sink discard"
echo "  upload:       $CURL -sS --noproxy '*' -T $UPLOAD_FILE $UPLOAD_URL -o /dev/null -w '%{http_code} %{speed_upload} %{size_upload} %{time_total}'"
echo "                $CURL_BENCH ${CB_UP[*]}"
echo "                $BIN ${PB_UP[*]}"
echo "  form:         $CURL -sS --noproxy '*' -F file=@$UPLOAD_FILE $UPLOAD_URL -o /dev/null -w '%{http_code} %{speed_upload} %{size_upload} %{time_total}'"
echo "                $BIN ${PB_FORM[*]}"
echo "MB/s = body bytes / elapsed of the measured requests (downloads and gzip: decoded bytes received;" \
  "uploads: bytes sent); curl -T, curl -F: its speed_upload (whole transfer incl. connect; -F: the" \
  "whole form body, pocket --upload-form: the file's bytes, ~200 bytes of 1 GiB fewer)"
