# Sourced by the benchmark scripts: the part of an nginx.conf they share.
#
#   nginx_conf_prelude NGINX DIR CPU
#
# prints the main and events blocks and the opening of the http block (one
# worker pinned to core CPU, pid, logs and every temp path inside DIR,
# access log off, long keep-alive) for the caller to complete with its own
# directives, servers and the closing brace.
nginx_conf_prelude() {
  local nginx="$1" dir="$2" cpu="$3"
  local version temp_paths mask m
  version="$("$nginx" -V 2>&1)"
  temp_paths="    client_body_temp_path $dir/client_body;"
  for m in proxy fastcgi uwsgi scgi; do
    # nginx-light leaves some modules out; naming their paths would be an error.
    if ! grep -q -- "--without-http_${m}_module" <<<"$version"; then
      temp_paths+=$'\n'"    ${m}_temp_path $dir/${m};"
    fi
  done
  mask="$(printf '%s' "1$(printf '%*s' "$cpu" '' | tr ' ' 0)")"
  cat <<EOF2
worker_processes 1;
worker_cpu_affinity $mask;
daemon off;
master_process on;
pid $dir/nginx.pid;
error_log $dir/error.log warn;
events {
    worker_connections 4096;
}
http {
    access_log off;
    keepalive_requests 1000000;
    keepalive_timeout 300s;
$temp_paths
EOF2
}
