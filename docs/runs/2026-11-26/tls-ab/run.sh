#!/usr/bin/env bash
# A/B TLS: nginx TLS on core 0 (own tmp dir, port 18444), binaries alternated on core 1.
# usage: [WRK=1] [CONNS="64 1"] REPS=4 DUR=3 run.sh binA binB   (pocket-bench binaries; prints req/s and CPU µs per request)
set -euo pipefail
REPS="${REPS:-4}"; DUR="${DUR:-3}"; PORT=18444; CONNS="${CONNS:-64 1}"
A="$1"; B="$2"
TMP="$(mktemp -d /tmp/tlsab.XXXXXX)"
cleanup() { if [ -f "$TMP/nginx.pid" ]; then kill "$(cat "$TMP/nginx.pid")"; fi; sleep 0.3; rm -rf "$TMP"; }
trap cleanup EXIT
cd "$TMP"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout ca.key -out ca.pem -days 2 \
  -subj "/CN=Pocket bench CA" -addext "basicConstraints=critical,CA:true" -addext "keyUsage=critical,keyCertSign" 2>/dev/null
openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout srv.key -out srv.csr -subj "/CN=localhost" 2>/dev/null
printf "subjectAltName=DNS:localhost,IP:127.0.0.1\n" > ext.txt
openssl x509 -req -in srv.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out srv.pem -days 2 -extfile ext.txt 2>/dev/null
cat > nginx.conf <<CONF
worker_processes 1;
worker_cpu_affinity 1;
daemon on;
pid $TMP/nginx.pid;
error_log $TMP/error.log;
events { worker_connections 4096; }
http {
  access_log off;
  client_body_temp_path $TMP/body; proxy_temp_path $TMP/proxy; fastcgi_temp_path $TMP/fcgi;
  uwsgi_temp_path $TMP/uwsgi; scgi_temp_path $TMP/scgi;
  keepalive_requests 1000000;
  server {
    listen 127.0.0.1:$PORT ssl;
    ssl_certificate $TMP/srv.pem; ssl_certificate_key $TMP/srv.key;
    ssl_protocols TLSv1.2 TLSv1.3;
    ssl_session_cache shared:SSL:10m; ssl_session_tickets on;
    default_type text/plain;
    location / { return 200 "Hello, World!"; }
  }
}
CONF
taskset -c 0 /usr/sbin/nginx -c "$TMP/nginx.conf" -p "$TMP"
sleep 0.3
URL="https://localhost:$PORT/"
for rep in $(seq 1 "$REPS"); do
  for c in $CONNS; do
    if [ -n "${WRK:-}" ]; then
      w=$(taskset -c 1 wrk -t1 -c$c -d${DUR}s "$URL" | awk '/Requests\/sec/{print $2}')
      echo "rep $rep c=$c wrk $w"
    fi
    for name in A B; do
      bin=$A; [ $name = B ] && bin=$B
      out=$(taskset -c 1 perf stat -x, -e task-clock -- "$bin" --url "$URL" --cacert "$TMP/ca.pem" --connections $c --requests 1000000000 --max-seconds "$DUR" --json 2>"$TMP/perf.txt")
      python3 - "$rep" "$c" "$name" "$TMP/perf.txt" <<PY
import json,sys
d=json.loads('''$out''')
rep,c,name,perf=sys.argv[1:]
ms=float(open(perf).read().split(',')[0])
print(f"rep {rep} c={c} {name} {d['rps']:.0f} cpu_us/req {ms*1000/d['requests']:.2f}")
PY
    done
  done
done
