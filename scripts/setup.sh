#!/usr/bin/env bash
# Installs the system packages Pocket builds and tests with, if missing:
# OpenSSL, zlib and liburing headers (the engine links ssl, crypto, z, uring), libpsl and
# the public suffix list (the cookie store), nginx-light
# (integration tests and benchmarks), wrk (benchmark peer), the openssl and
# curl command-line tools (TLS test certificates and fixture checks), python3
# (multipart tests), rsvg-convert (benchmark chart tests), tinyproxy (proxy
# tests and benchmarks).
set -euo pipefail
need=()
dpkg -s libssl-dev >/dev/null 2>&1 || need+=(libssl-dev)
dpkg -s zlib1g-dev >/dev/null 2>&1 || need+=(zlib1g-dev)
dpkg -s libdeflate-dev >/dev/null 2>&1 || need+=(libdeflate-dev)
# The cookie store refuses public-suffix domains with libpsl (as curl does),
# against the list Debian's publicsuffix package keeps current.
dpkg -s libpsl-dev >/dev/null 2>&1 || need+=(libpsl-dev)
# The engine's io_uring backend (docs/ENGINE.md, "I/O backends") links liburing.
dpkg -s liburing-dev >/dev/null 2>&1 || need+=(liburing-dev)
dpkg -s publicsuffix >/dev/null 2>&1 || need+=(publicsuffix)
command -v nginx >/dev/null 2>&1 || [ -x /usr/sbin/nginx ] || need+=(nginx-light)
command -v wrk >/dev/null 2>&1 || need+=(wrk)
# TLS tests generate their certificates with the openssl CLI and check the
# fixtures with curl.
command -v openssl >/dev/null 2>&1 || need+=(openssl)
command -v curl >/dev/null 2>&1 || need+=(curl)
# `make check` (scripts/ci.sh) builds the engine's C tests with make.
command -v make >/dev/null 2>&1 || need+=(make)
# Multipart tests parse uploaded forms with Python's email package (an
# independent parser).
command -v python3 >/dev/null 2>&1 || need+=(python3)
# The benchmark chart tests draw every SVG with a real renderer.
command -v rsvg-convert >/dev/null 2>&1 || need+=(librsvg2-bin)
# The authentication tests answer Digest and Basic challenges of a real
# Apache httpd (mod_auth_digest), run by the tests on a port of their own.
[ -x /usr/sbin/apache2 ] || need+=(apache2)
# Proxy tests and benchmarks run a real HTTP proxy (forwarding and CONNECT).
command -v tinyproxy >/dev/null 2>&1 || [ -x /usr/bin/tinyproxy ] || need+=(tinyproxy)
# The counting gate (scripts/perf-gate.sh) counts instructions under
# valgrind's callgrind where the machine has no hardware counters, on a copy
# of pocket-bench that objcopy strips of debug info.
command -v valgrind >/dev/null 2>&1 || need+=(valgrind)
command -v objcopy >/dev/null 2>&1 || need+=(binutils)
if ((${#need[@]})); then
  echo "setup: installing ${need[*]}"
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi
# Debian starts nginx (and apache2, tinyproxy) as a service on install: it is left
# alone (it may be the user's). The tests and benchmarks run their own nginx, on ports of
# their own with their own config and pid file, and stop it by its PID.
exit 0
