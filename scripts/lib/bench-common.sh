# Sourced by the benchmark scripts that drive nginx: what they share besides
# the nginx.conf prelude (nginx-conf.sh).
#
#   bench_args NAME LINES ARG...  --quick (REPS=1 DUR=2 unless set) and -h (LINES of
#                                 the script's header); then REPS (5) and DUR (5)
#   bench_need_base               add to the caller's `need` array what every
#                                 nginx benchmark runs: nginx, wrk, time, taskset
#   bench_install PKG...          apt-get install PKG... (nothing when none given),
#                                 then NGINX and WRK name the installed binaries
#   bench_start_nginx NGINX CONF PORT CPU   start nginx (pid in NGINX_PID), wait for PORT
#   bench_files_conf NGINX PORT CPU ROOT [EXTRA]   $TMP/nginx.conf serving ROOT
#   bench_stop_nginx              TERM to NGINX_PID, then KILL after 5 s (for the EXIT trap)
#   to_us VALUE                   wrk's "123.45us", "1.23ms", "2.00s" -> microseconds
#   wrk_stats OUT TIMEFILE        "rps p50_us p99_us cpu_us_per_req requests errors" of one wrk run
#   jget KEY FILE                 a number (or "string") from a one-line JSON object
#   median N...                   the median of the numeric arguments ("-" if none)
#   bench_swift_build_args        SWIFT_BUILD_ARGS for a release build (STATIC=1:
#                                 the Swift runtime linked statically)
#   bench_build_product NAME      builds release product NAME, prints its path
#   bench_build_pocket_bench      the same for pocket-bench
# The caller sets TMP (its temp dir) and log(). Processes are started and
# stopped through processes.sh: default signal dispositions, stopped by PID.
. "$(dirname "${BASH_SOURCE[0]}")/processes.sh"

bench_args() {
  local name=$1 lines=$2 a quick=0
  shift 2
  for a in "$@"; do
    case "$a" in
      --quick) quick=1 ;;
      -h|--help) sed -n "$lines" "$0"; exit 0 ;;
      *) echo "$name: unknown argument '$a'" >&2; exit 2 ;;
    esac
  done
  if [ "$quick" = 1 ]; then
    REPS="${REPS:-1}"
    DUR="${DUR:-2}"
  fi
  REPS="${REPS:-5}"
  DUR="${DUR:-5}"
}

bench_need_base() {
  [ -x /usr/sbin/nginx ] || command -v nginx >/dev/null 2>&1 || need+=(nginx-light)
  command -v wrk >/dev/null 2>&1 || need+=(wrk)
  [ -x /usr/bin/time ] || need+=(time)
  command -v taskset >/dev/null 2>&1 || need+=(util-linux)
}

# Adds to `need` what curl-bench (libcurl's multi interface) is built with.
bench_need_libcurl() {
  command -v cc >/dev/null 2>&1 || need+=(gcc libc6-dev)
  command -v curl-config >/dev/null 2>&1 || need+=(libcurl4-openssl-dev)
}

bench_install() {
  if (($#)); then
    local sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    log "installing $*"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "$@" >/dev/null
  fi
  NGINX="$(command -v nginx 2>/dev/null || echo /usr/sbin/nginx)"
  WRK="$(command -v wrk 2>/dev/null || true)"
}

NGINX_PID=""
bench_start_nginx() {
  local nginx="$1" conf="$2" port="$3" cpu="$4" ready=0
  NGINX_CMD=(taskset -c "$cpu" "$nginx" -p "$TMP" -c "$conf" -e "$TMP/error.log")
  log "starting nginx on 127.0.0.1:$port (core $cpu)"
  spawn_bg "${NGINX_CMD[@]}" >"$TMP/nginx.out" 2>&1
  NGINX_PID=$SPAWNED_PID
  for _ in $(seq 100); do
    if ! kill -0 "$NGINX_PID" 2>/dev/null; then break; fi
    if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then ready=1; break; fi
    sleep 0.1
  done
  if [ "$ready" != 1 ]; then
    log "nginx did not start (port $port busy?)"
    cat "$TMP/nginx.out" "$TMP/error.log" >&2 2>/dev/null || true
    return 1
  fi
}

bench_stop_nginx() {
  if [ -n "$NGINX_PID" ]; then stop_pids "$NGINX_PID"; fi
}

to_us() {
  awk -v v="$1" 'BEGIN {
    n = v + 0
    if (v ~ /us$/) print n; else if (v ~ /ms$/) print n * 1000;
    else if (v ~ /m$/) print n * 60e6; else if (v ~ /s$/) print n * 1e6; else print n }'
}

wrk_stats() {
  local out="$1" tf="$2" rps p50 p99 reqs errs cpu
  rps="$(awk '/^Requests\/sec:/ { print $2 }' "$out")"
  p50="$(to_us "$(awk '$1 == "50%" { print $2 }' "$out")")"
  p99="$(to_us "$(awk '$1 == "99%" { print $2 }' "$out")")"
  reqs="$(awk '/ requests in / { print $1 }' "$out")"
  errs="$(awk '/Non-2xx or 3xx responses:/ { n += $NF } /Socket errors:/ {
      for (i = 1; i <= NF; i++) if ($i ~ /^[0-9]+,?$/) { sub(",", "", $i); n += $i } } END { print n + 0 }' "$out")"
  cpu="$(awk -v r="$reqs" '{ printf "%.3f", ($1 + $2) * 1e6 / (r > 0 ? r : 1) }' "$tf")"
  echo "$rps $p50 $p99 $cpu $reqs $errs"
}

jget() {
  grep -o "\"$1\":[^,}]*" "$2" | head -1 | cut -d: -f2
}

median() {
  printf '%s\n' "$@" | grep -E '^[0-9.eE+-]+$' | sort -g | awk '{ a[NR] = $1 } END {
    if (NR == 0) { print "-"; exit }
    if (NR % 2) print a[(NR + 1) / 2]; else print (a[NR / 2] + a[NR / 2 + 1]) / 2 }'
}

# Two cores or more: server and clients on their own; one: they share it.
bench_check_cpus() {
  NCPU="$(nproc)"
  if [ "$NCPU" -lt 2 ]; then
    log "warning: $NCPU CPU: server and client share it"
    SERVER_CPU=0
    CLIENT_CPU=0
  fi
}

# Builds pocket-bench in release (SCRATCH: a --scratch-path) and prints its path.
# SWIFT_BUILD_ARGS: the release build's arguments. With STATIC=1 (the
# default of the scripts that measure memory: scaling, bodies, cli) the
# Swift runtime is linked statically, as Swift services and the `pocket`
# command are usually deployed on Linux: only the runtime pages
# a program touches count toward its RSS, as with curl's C libraries.
# Static binaries are linked with packed relative relocations (DT_RELR,
# glibc >= 2.36): a static Swift binary is position-independent and its
# ~40,000 RELATIVE relocations (0.9 MB of .rela.dyn, read in full at every
# start) would otherwise be about a megabyte of the peak RSS. Packed, they
# take 8 KB; nothing else about the code changes (gold, the default linker
# here, cannot pack them: lld from the toolchain). Any Swift program can
# link the same way (see docs/BENCHMARKS.md). The static runtime's link
# arguments also export every symbol of the program's own objects
# (-export-dynamic, for dlsym); nothing here looks them up, and their
# dynamic symbol table is another 0.3 MB read at start. The static build
# has a scratch path of its own (SCRATCH, default .build-static).
#
# Every function is compiled into a section of its own (Swift and C), and
# the `pocket` command is linked with its functions in the order of
# Sources/PocketCLI/pocket.order (scripts/cli-order.sh writes it from the
# functions the common commands run): the code a command runs then sits
# together instead of across 12.7 MB of text. The kernel maps a file-backed
# page fault's neighbours too (fault-around, 64 KiB), so scattered code
# costs RSS far beyond what runs: a small GET touched 6.9 MB of the
# binary's text unordered, 3.1 MB ordered. ORDER=0 links without the order.
# bench_swift_build_args [NAME]: the arguments for product NAME.
bench_swift_build_args() {
  SWIFT_BUILD_ARGS=()
  if [ "${STATIC:-0}" = 1 ]; then
    SWIFT_BUILD_ARGS=(--static-swift-stdlib --scratch-path "${SCRATCH:-.build-static}"
      -Xswiftc -Xfrontend -Xswiftc -function-sections -Xcc -ffunction-sections
      -Xswiftc -use-ld=lld -Xlinker -z -Xlinker pack-relative-relocs -Xlinker --no-export-dynamic)
    local order
    order="$(pwd)/Sources/PocketCLI/pocket.order"
    if [ "${1:-}" = pocket ] && [ "${ORDER:-1}" != 0 ] && [ -f "$order" ]; then
      SWIFT_BUILD_ARGS+=(-Xlinker "--symbol-ordering-file=$order" -Xlinker --no-warn-symbol-ordering)
    fi
  elif [ -n "${SCRATCH:-}" ]; then
    SWIFT_BUILD_ARGS=(--scratch-path "$SCRATCH")
  fi
}

# bench_build_product NAME: builds the release product NAME with
# SWIFT_BUILD_ARGS (its log in $TMP/build.log) and prints its path.
bench_build_product() {
  bench_swift_build_args "$1"
  log "building $1 (release ${SWIFT_BUILD_ARGS[*]})"
  swift build -c release --product "$1" ${SWIFT_BUILD_ARGS[@]+"${SWIFT_BUILD_ARGS[@]}"} >"$TMP/build.log" 2>&1 || {
    tail -n 30 "$TMP/build.log" >&2
    return 1
  }
  local bin
  bin="$(swift build -c release ${SWIFT_BUILD_ARGS[@]+"${SWIFT_BUILD_ARGS[@]}"} --show-bin-path)/$1"
  [ -x "$bin" ] || { log "no binary at $bin"; return 1; }
  echo "$bin"
}

bench_build_pocket_bench() { bench_build_product pocket-bench; }

# Writes $TMP/nginx.conf: one worker on core CPU, 127.0.0.1:PORT serving
# the files under ROOT with sendfile; EXTRA (optional) is added inside the
# server block (locations).
bench_files_conf() {
  local nginx="$1" port="$2" cpu="$3" root="$4" extra="${5:-}"
  {
    nginx_conf_prelude "$nginx" "$TMP" "$cpu"
    cat <<EOF2
    sendfile on;
    tcp_nopush on;
    default_type application/octet-stream;
    server {
        listen 127.0.0.1:$port;
        root $root;
$extra
    }
}
EOF2
  } >"$TMP/nginx.conf"
}

# Writes $TMP/nginx.conf: one worker on core CPU, 127.0.0.1:PORT answering
# every request with the 13-byte "Hello, World!".
bench_hello_conf() {
  local nginx="$1" port="$2" cpu="$3"
  {
    nginx_conf_prelude "$nginx" "$TMP" "$cpu"
    cat <<EOF2
    server {
        listen 127.0.0.1:$port;
        location / {
            default_type text/plain;
            return 200 "Hello, World!";
        }
    }
}
EOF2
  } >"$TMP/nginx.conf"
}
