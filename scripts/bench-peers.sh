#!/usr/bin/env bash
# Pocket and its peers on the same machine, in the same run, on the same
# workload: nginx from Debian on loopback (one worker pinned to core 0)
# answering a 13-byte body, every client pinned to core 1: wrk, curl-bench
# (libcurl's multi interface), AsyncHTTPClient 1.37.0 and URLSession
# (Benchmarks/Peers, run by pocket-bench's own loop and report) and
# pocket-bench. c=64 and c=1, REPS repetitions interleaved (every other one in
# reverse order), medians, one table with ratios to wrk and to libcurl.
#
#   scripts/bench-peers.sh            # REPS=5 DUR=5
#   scripts/bench-peers.sh --quick    # REPS=1 DUR=2 (smoke test)
#   REPS=9 DUR=10 scripts/bench-peers.sh
#   scripts/bench-peers.sh --json docs/results/peers.json   # also every run as JSON
#                                     # for the charts (scripts/bench-charts.sh)
#   TLS=1 scripts/bench-peers.sh --json docs/results/tls.json  # (or --tls) over TLS:
#                                     # nginx with a certificate of a CA made in the
#                                     # temp dir, every client trusting that CA (wrk
#                                     # does not verify; URLSession through libcurl's
#                                     # CA bundle path in a private mount namespace)
#
# Environment: REPS (5), DUR seconds per run (5), TLS (0), PORT (18085; 18443
# with TLS), SERVER_CPU (0), CLIENT_CPU (1), CONNECTIONS ("64 1"), SCRATCH (a
# swift build --scratch-path for the main package), PEERS_SCRATCH (the same
# for Benchmarks/Peers). Installs nginx-light, wrk, time, util-linux, gcc,
# libcurl4-openssl-dev (and openssl with TLS) with apt-get when missing. Not
# part of CI: the first build of Benchmarks/Peers (SwiftNIO, BoringSSL) takes
# many minutes.
set -euo pipefail

cd "$(dirname "$0")/.."
. scripts/lib/nginx-conf.sh
. scripts/lib/bench-common.sh

. scripts/lib/bench-json.sh

JSON_OUT=""
args=()
while (($#)); do
  case "$1" in
    --json) JSON_OUT="${2:?--json needs a file}"; shift 2 ;;
    --json=*) JSON_OUT="${1#--json=}"; shift ;;
    --tls) TLS=1; shift ;;
    *) args+=("$1"); shift ;;
  esac
done
bench_args bench-peers 2,27p "${args[@]}"
TLS="${TLS:-0}"
case "$TLS" in 0|1) ;; *) echo "bench-peers: TLS is 0 or 1, not '$TLS'" >&2; exit 2 ;; esac
if [ "$TLS" = 1 ]; then
  SCENARIO="TLS"
  PORT="${PORT:-18443}"
  URL="https://127.0.0.1:${PORT}/"
else
  SCENARIO="plain HTTP"
  PORT="${PORT:-18085}"
  URL="http://127.0.0.1:${PORT}/"
fi
SERVER_CPU="${SERVER_CPU:-0}"
CLIENT_CPU="${CLIENT_CPU:-1}"
CONNECTIONS="${CONNECTIONS:-64 1}"
# The Swift clients and curl-bench run for DUR seconds: a budget they cannot reach.
BUDGET=1000000000

log() { echo "bench-peers: $*" >&2; }

# ------------------------------------------------------------------ packages
need=()
bench_need_base
bench_need_libcurl
if [ "$TLS" = 1 ]; then command -v openssl >/dev/null 2>&1 || need+=(openssl); fi
bench_install "${need[@]}"

bench_check_cpus

# ------------------------------------------------------------------ temp dir, cleanup
TMP="$(mktemp -d /tmp/pocket-bench-peers.XXXXXX)"
cleanup() {
  bench_stop_nginx
  rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# ------------------------------------------------------------------ build
POCKET="$(bench_build_pocket_bench)" || exit 1
PEERS_ARGS=()
[ -n "${PEERS_SCRATCH:-}" ] && PEERS_ARGS=(--scratch-path "$PEERS_SCRATCH")
log "building Benchmarks/Peers (release; the first build takes many minutes)"
(cd Benchmarks/Peers && swift build -c release "${PEERS_ARGS[@]}") >"$TMP/peers-build.log" 2>&1 || {
  cat "$TMP/peers-build.log" >&2
  exit 1
}
PEERS_BIN="$(cd Benchmarks/Peers && swift build -c release "${PEERS_ARGS[@]}" --show-bin-path)"
AHC="$PEERS_BIN/ahc-bench"
URLSESSION="$PEERS_BIN/urlsession-bench"
CURL_BENCH="$TMP/curl-bench"
log "building curl-bench"
cc -O2 Benchmarks/curl-bench/curl_bench.c -o "$CURL_BENCH" -lcurl
for b in "$POCKET" "$AHC" "$URLSESSION" "$CURL_BENCH"; do
  [ -x "$b" ] || { log "no binary at $b"; exit 1; }
done

# ------------------------------------------------------------------ TLS
# Writes $TMP/nginx.conf: bench_hello_conf's server with TLS 1.2 and 1.3, the
# certificate of tls_setup, a session cache and tickets (as bench-tls.sh).
tls_hello_conf() {
  local nginx="$1" port="$2" cpu="$3"
  {
    nginx_conf_prelude "$nginx" "$TMP" "$cpu"
    cat <<EOF2
    ssl_protocols TLSv1.2 TLSv1.3;
    ssl_session_cache shared:SSL:10m;
    ssl_session_tickets on;
    server {
        listen 127.0.0.1:$port ssl;
        ssl_certificate $TMP/srv.pem;
        ssl_certificate_key $TMP/srv.key;
        location / {
            default_type text/plain;
            return 200 "Hello, World!";
        }
    }
}
EOF2
  } >"$TMP/nginx.conf"
}

# A CA and a server certificate for 127.0.0.1 and localhost (EC P-256, as
# bench-tls.sh), made in the temp dir; every client that can trusts the CA.
TLS_ARGS=()      # what curl-bench, pocket-bench and ahc-bench add
URLSESSION_RUN=() # what urlsession-bench runs under
URLSESSION_SKIP="" # why URLSession is left out, when it is
WRK_NOTE=""
URLSESSION_NOTE=""
URLSESSION_BUNDLE=""
tls_setup() {
  (
    cd "$TMP"
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout ca.key -out ca.pem -days 2 \
      -subj "/CN=Pocket bench CA" -addext "basicConstraints=critical,CA:true" \
      -addext "keyUsage=critical,keyCertSign" 2>/dev/null
    openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout srv.key -out srv.csr \
      -subj "/CN=localhost" 2>/dev/null
    printf "subjectAltName=DNS:localhost,IP:127.0.0.1\n" >ext.txt
    openssl x509 -req -in srv.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out srv.pem -days 2 \
      -extfile ext.txt 2>/dev/null
  ) || { log "openssl could not make the test CA"; return 1; }
  TLS_ARGS=(--cacert "$TMP/ca.pem")
  WRK_NOTE="does not verify the certificate (wrk has no CA option)"
  # URLSession on Linux (FoundationNetworking over libcurl) has no API for a
  # CA file: swift-corelibs-foundation reads URLSessionCertificateAuthorityInfoFile
  # on Android only (EasyHandle.setCARootBundlePath) and elsewhere leaves libcurl's
  # default CA bundle. So urlsession-bench runs in a mount namespace of its own
  # (unshare --user --mount: no root needed, nothing changes outside it) where
  # that bundle path shows the system bundle plus the test CA.
  local bundle
  bundle="$(curl-config --ca 2>/dev/null || true)"
  [ -f "$bundle" ] || bundle=/etc/ssl/certs/ca-certificates.crt
  if [ ! -f "$bundle" ]; then
    URLSESSION_SKIP="no CA bundle file for libcurl (curl-config --ca: '$(curl-config --ca 2>/dev/null)') to stand in for"
    return 0
  fi
  cat "$bundle" "$TMP/ca.pem" >"$TMP/bundle.pem"
  URLSESSION_RUN=(unshare --user --map-root-user --mount
    sh -c 'mount --bind "$1" "$2" && shift 2 && exec "$@"' urlsession-tls "$TMP/bundle.pem" "$bundle")
  local probe
  if ! probe="$("${URLSESSION_RUN[@]}" grep -c "BEGIN CERTIFICATE" "$bundle" 2>&1)" \
    || [ "$probe" != "$(grep -c "BEGIN CERTIFICATE" "$TMP/bundle.pem")" ]; then
    URLSESSION_SKIP="URLSession on Linux trusts only libcurl's CA bundle ($bundle; URLSessionCertificateAuthorityInfoFile is read on Android only), and it could not be replaced in a private mount namespace here (unshare --user --mount: ${probe:-failed})"
    URLSESSION_RUN=()
    return 0
  fi
  URLSESSION_NOTE="trusts the CA through libcurl's CA bundle path, bind-mounted in a mount namespace of its own (no CA-file setting on Linux)"
  URLSESSION_BUNDLE="$bundle"
}

# ------------------------------------------------------------------ nginx
if [ "$TLS" = 1 ]; then
  tls_setup || exit 1
  tls_hello_conf "$NGINX" "$PORT" "$SERVER_CPU"
else
  bench_hello_conf "$NGINX" "$PORT" "$SERVER_CPU"
fi
bench_start_nginx "$NGINX" "$TMP/nginx.conf" "$PORT" "$SERVER_CPU" || exit 1

# ------------------------------------------------------------------ runners
# Each prints "rps p50_us p99_us cpu_us_per_req requests errors" ("-" where a
# client does not measure it), or "fail".

run_wrk() { # connections
  local c="$1" out="$TMP/wrk.out" tf="$TMP/wrk.time"
  /usr/bin/time -f '%U %S' -o "$tf" \
    taskset -c "$CLIENT_CPU" "$WRK" -t1 -c"$c" -d"${DUR}s" --latency "$URL" >"$out" 2>&1 || { echo fail; return; }
  wrk_stats "$out" "$tf"
}

run_curl() { # connections: libcurl multi; CPU of the whole process (time), no latency
  local c="$1" out="$TMP/curl.out" tf="$TMP/curl.time"
  /usr/bin/time -f '%U %S' -o "$tf" \
    taskset -c "$CLIENT_CPU" "$CURL_BENCH" --url "$URL" "${TLS_ARGS[@]}" --connections "$c" --requests "$BUDGET" \
    --warmup "$((c * 16))" --max-seconds "$DUR" >"$out" 2>"$TMP/curl.err" || { echo fail; return; }
  local reqs cpu
  reqs="$(jget requests "$out")"
  cpu="$(awk -v r="$reqs" -v w="$((c * 16))" '{ printf "%.3f", ($1 + $2) * 1e6 / (r + w > 0 ? r + w : 1) }' "$tf")"
  echo "$(jget rps "$out") - - $cpu $reqs $(jget errors "$out")"
}

run_swift() { # binary connections [prefix...]: pocket-bench's JSON (the peers print the same)
  local bin="$1" c="$2" out="$TMP/swift.out" tls=("${TLS_ARGS[@]}")
  shift 2
  # urlsession-bench takes no --cacert: its runner (URLSESSION_RUN) makes it trust the CA.
  (($#)) && tls=()
  taskset -c "$CLIENT_CPU" "$@" "$bin" --url "$URL" "${tls[@]}" --connections "$c" --requests "$BUDGET" \
    --max-seconds "$DUR" --json >"$out" 2>"$TMP/swift.err" || { echo fail; return; }
  echo "$(jget rps "$out") $(jget p50_us "$out") $(jget p99_us "$out") $(jget cpu_us_per_req "$out")" \
    "$(jget requests "$out") $(($(jget errors "$out") + $(jget bad_status "$out")))"
}

run_one() { # client connections
  case "$1" in
    wrk) run_wrk "$2" ;;
    libcurl) run_curl "$2" ;;
    pocket) run_swift "$POCKET" "$2" ;;
    ahc) run_swift "$AHC" "$2" ;;
    urlsession) run_swift "$URLSESSION" "$2" "${URLSESSION_RUN[@]}" ;;
  esac
}

# The last run of a client as one JSON run object (--json): the Swift
# clients' own line, wrk's and curl-bench's output with what they lack.
json_line() { # client connections rep cpu_us_per_req
  local name=$1 c=$2 rep=$3 cpu=$4 tag="\"scenario\":$(json_str "$SCENARIO"),\"rep\":$3" cacert=""
  [ "$TLS" = 1 ] && cacert=" --cacert ca.pem"
  local common="\"connections\":$c,\"cpu_us_per_req\":$cpu,\"machine\":$(json_machine)"
  case "$name" in
    wrk)
      json_tag "$(wrk_json "$TMP/wrk.out")" "$tag,$common,\"label\":$(json_str "wrk $WRK_VERSION"),\
\"versions\":{\"wrk\":$(json_str "$WRK_VERSION"),\"nginx\":$(json_str "$NGINX_VERSION")},$(json_note "$WRK_NOTE")\
\"command\":$(json_str "wrk -t1 -c$c -d${DUR}s --latency $URL")" ;;
    libcurl)
      json_tag "$(cat "$TMP/curl.out")" "$tag,$common,\"client\":\"libcurl\",\"label\":$(json_str "libcurl $CURL_VERSION (multi)"),\
\"versions\":{\"libcurl\":$(json_str "$CURL_VERSION"),\"nginx\":$(json_str "$NGINX_VERSION")},\
\"command\":$(json_str "curl-bench --url $URL$cacert --connections $c --warmup $((c * 16)) --max-seconds $DUR")" ;;
    urlsession) json_tag "$(cat "$TMP/swift.out")" "$tag$(json_note "$URLSESSION_NOTE" ,)" ;;
    *) json_tag "$(cat "$TMP/swift.out")" "$tag" ;;
  esac
}

json_note() { # text [separator]: '"note":"text",' (the separator first, none after, when given), or nothing
  [ -n "$1" ] || return 0
  if [ -n "${2:-}" ]; then printf '%s"note":%s' "$2" "$(json_str "$1")"; else printf '"note":%s,' "$(json_str "$1")"; fi
}

ratio() { # a b
  awk -v a="$1" -v b="$2" 'BEGIN { if (a == "-" || b == "-" || b + 0 == 0) print "-"; else printf "%.2f", a / b }'
}

# ------------------------------------------------------------------ the run
CLIENTS=(wrk libcurl pocket ahc urlsession)
if [ -n "$URLSESSION_SKIP" ]; then
  CLIENTS=(wrk libcurl pocket ahc)
  log "URLSession left out: $URLSESSION_SKIP"
fi
CONFIGS=()
for c in $CONNECTIONS; do for client in "${CLIENTS[@]}"; do CONFIGS+=("$client $c"); done; done
declare -A RPS P50 P99 CPU
NGINX_VERSION="$("$NGINX" -v 2>&1 | sed 's/.*nginx\///')"
# wrk --version exits 1; "wrk debian/4.1.0-3+b2 [epoll] ..." -> 4.1.0
WRK_VERSION="$({ "$WRK" --version 2>&1 || true; } | head -1 | awk '{ print $2 }' | sed 's|.*/||; s/-.*//')"
CURL_VERSION="$(curl-config --version | awk '{ print $2 }')"
if [ -n "$JSON_OUT" ]; then
  mkdir -p "$(dirname "$JSON_OUT")"
  : >"$JSON_OUT"
  if [ -n "$URLSESSION_SKIP" ]; then # the charts say who is missing, and why
    for c in $CONNECTIONS; do
      printf '{"client":"urlsession","scenario":%s,"connections":%s,"rps":0,"skipped":%s}\n' \
        "$(json_str "$SCENARIO")" "$c" "$(json_str "$URLSESSION_SKIP")" >>"$JSON_OUT"
    done
  fi
fi

log "machine: $NCPU CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'), kernel $(uname -r)"
log "$REPS repetitions x ${#CONFIGS[@]} runs x ${DUR}s"
printf '%-4s %-16s %12s %10s %10s %12s %10s %7s\n' rep run rps p50_us p99_us cpu_us/req requests errors
for rep in $(seq "$REPS"); do
  order=("${CONFIGS[@]}")
  if ((rep % 2 == 0)); then
    order=()
    for ((i = ${#CONFIGS[@]} - 1; i >= 0; i--)); do order+=("${CONFIGS[i]}"); done
  fi
  for cfg in "${order[@]}"; do
    read -r name c <<<"$cfg"
    line="$(run_one "$name" "$c")"
    if [ "$line" = fail ]; then
      printf '%-4s %-16s %12s\n' "$rep" "$name/$c" fail
      continue
    fi
    read -r rps p50 p99 cpu reqs errs <<<"$line"
    [ -n "$JSON_OUT" ] && json_line "$name" "$c" "$rep" "$cpu" >>"$JSON_OUT"
    key="$name/$c"
    RPS[$key]+="$rps "
    P50[$key]+="$p50 "
    P99[$key]+="$p99 "
    CPU[$key]+="$cpu "
    printf '%-4s %-16s %12s %10s %10s %12s %10s %7s\n' "$rep" "$key" "$rps" "$p50" "$p99" "$cpu" "$reqs" "$errs"
  done
done

echo
tls_what=""
[ "$TLS" = 1 ] && tls_what=" with TLS 1.2/1.3 (EC P-256, session cache and tickets)"
echo "Medians of $REPS repetitions of ${DUR} s, nginx $("$NGINX" -v 2>&1 | sed 's/.*nginx\///')$tls_what on core $SERVER_CPU, clients on core $CLIENT_CPU:"
echo
echo "| c | client | req/s | p50 µs | p99 µs | CPU µs/req | req/s ÷ wrk | req/s ÷ libcurl | CPU ÷ libcurl |"
echo "|---|---|---:|---:|---:|---:|---:|---:|---:|"
for c in $CONNECTIONS; do
  wrk_rps="$(median ${RPS[wrk/$c]:-})"
  curl_rps="$(median ${RPS[libcurl/$c]:-})"
  curl_cpu="$(median ${CPU[libcurl/$c]:-})"
  for client in "${CLIENTS[@]}"; do
    key="$client/$c"
    rps="$(median ${RPS[$key]:-})"
    cpu="$(median ${CPU[$key]:-})"
    printf '| %s | %s | %s | %s | %s | %s | %s | %s | %s |\n' "$c" "$client" \
      "$(awk -v v="$rps" 'BEGIN { if (v == "-") print "-"; else printf "%.0f", v }')" \
      "$(median ${P50[$key]:-})" "$(median ${P99[$key]:-})" "$cpu" \
      "$(ratio "$rps" "$wrk_rps")" "$(ratio "$rps" "$curl_rps")" "$(ratio "$cpu" "$curl_cpu")"
  done
done
echo
echo "Machine: $NCPU CPUs ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //')), kernel $(uname -r)," \
  "$(swift --version 2>/dev/null | head -1), $("$WRK" --version 2>&1 | head -1 | awk '{print $1, $2}'), $(curl-config --version 2>/dev/null || echo libcurl)"
echo "Date: $(date -u '+%Y-%m-%d %H:%M UTC'), commit $(git rev-parse --short HEAD 2>/dev/null || echo '?')"
tls_env=""
[ "$TLS" = 1 ] && tls_env="TLS=1 "
echo "Command: ${tls_env}REPS=$REPS DUR=$DUR scripts/bench-peers.sh"
[ -n "$JSON_OUT" ] && echo "Results: $JSON_OUT (draw: scripts/bench-charts.sh $JSON_OUT)"
echo "Clients: wrk -t1 -cC -dDUR --latency; curl-bench --connections C --warmup 16C --max-seconds DUR;" \
  "pocket-bench / ahc-bench / urlsession-bench --url URL --connections C --max-seconds DUR --json"
if [ "$TLS" = 1 ]; then
  echo "TLS: $URL, a CA made for the run; curl-bench, pocket-bench and ahc-bench --cacert ca.pem (they verify the" \
    "certificate); wrk $WRK_NOTE; $(openssl version)."
  if [ -n "$URLSESSION_SKIP" ]; then
    echo "URLSession: left out of the TLS rows: $URLSESSION_SKIP"
  else
    echo "URLSession: $URLSESSION_NOTE: $URLSESSION_BUNDLE shows the system bundle plus the test CA" \
      "(FoundationNetworking reads URLSessionCertificateAuthorityInfoFile on Android only)."
  fi
fi
