# The TLS nginx of the TLS benchmarks (scripts/bench-tls.sh): a CA (ca.pem)
# and a certificate for localhost and 127.0.0.1 made in DIR, and nginx with one
# worker pinned to core 0 on 127.0.0.1:PORT answering "Hello, World!" over
# TLS 1.2/1.3 with session resumption. nginx daemonizes: its master's PID
# is in DIR/nginx.pid, and the caller stops it by that PID.
#   . scripts/lib/tls-nginx.sh; tls_nginx_start DIR PORT
tls_nginx_start() {
  local dir="$1" port="$2"
  (
    cd "$dir"
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout ca.key -out ca.pem -days 2 \
      -subj "/CN=Pocket bench CA" -addext "basicConstraints=critical,CA:true" -addext "keyUsage=critical,keyCertSign" 2>/dev/null
    openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout srv.key -out srv.csr -subj "/CN=localhost" 2>/dev/null
    printf "subjectAltName=DNS:localhost,IP:127.0.0.1\n" > ext.txt
    openssl x509 -req -in srv.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out srv.pem -days 2 -extfile ext.txt 2>/dev/null
    cat > nginx.conf <<CONF
worker_processes 1;
worker_cpu_affinity 1;
daemon on;
pid $dir/nginx.pid;
error_log $dir/error.log;
events { worker_connections 4096; }
http {
  access_log off;
  client_body_temp_path $dir/body; proxy_temp_path $dir/proxy; fastcgi_temp_path $dir/fcgi;
  uwsgi_temp_path $dir/uwsgi; scgi_temp_path $dir/scgi;
  keepalive_requests 1000000;
  server {
    listen 127.0.0.1:$port ssl;
    ssl_certificate $dir/srv.pem; ssl_certificate_key $dir/srv.key;
    ssl_protocols TLSv1.2 TLSv1.3;
    ssl_session_cache shared:SSL:10m; ssl_session_tickets on;
    default_type text/plain;
    location / { return 200 "Hello, World!"; }
  }
}
CONF
  )
  taskset -c 0 "$(command -v nginx || echo /usr/sbin/nginx)" -c "$dir/nginx.conf" -p "$dir"
}
