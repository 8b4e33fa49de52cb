#!/usr/bin/env bash
# Runs bench/engine_bench (humus_http against raw libcurl) against a local nginx: builds the release preset,
# makes a throw-away CA and a certificate for "payments", starts nginx on free loopback ports (HTTP/1.1 plain,
# HTTP/2 over TLS), runs the benchmark and stops nginx on exit. Not part of CI: it prints ratios, never
# passes or fails on time (STYLE.md).
#
#   bench/run_engine_bench.sh [engine_bench flags...]     e.g. --rounds 9 --requests 20000 --only h1
#
# Environment:
#   BENCH_CPU=N        the CPU the client and nginx share (default: the last one); "none" to leave both unpinned
#   BENCH_BUILD=0      skip the build (use build/release/bench/engine_bench as it is)
#   BENCH_CXXFLAGS=... extra compiler flags for the release build (default "-g -Wno-error=restrict": symbols
#                      for profilers, and GCC 12's false -Wrestrict at -O3 in std::string code not fatal)
#   BENCH_BIN=path    run this engine_bench binary instead of build/release/bench/engine_bench (implies no build)
#   BENCH_WRAP="..."   a command to run engine_bench under, e.g. "valgrind --tool=callgrind --callgrind-out-file=x"
#
# Pinning: client and server share ONE CPU for every scenario. For sequential runs that is the issue's rule
# (a request hopping between two cores costs ~60 us here and makes the results bimodal). For the concurrent
# rows (curl_multi, later humus async) it is the fair and stable choice on a shared 2-core machine too: both
# sides are measured under the same constraint, the other core's noise stays out, and the CPU us per request
# of the client — the number the goals are about — does not depend on where the server ran.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

# --- nginx from Debian's packages, only when missing.
if ! command -v nginx >/dev/null 2>&1; then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  echo "run_engine_bench: installing nginx-light"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends nginx-light >/dev/null
fi
for tool in openssl taskset python3; do
  command -v "$tool" >/dev/null 2>&1 || { echo "run_engine_bench: $tool is needed" >&2; exit 1; }
done

# --- Build.
if [ "${BENCH_BUILD:-1}" != 0 ] && [ -z "${BENCH_BIN:-}" ]; then
  cmake --preset release -DCMAKE_CXX_FLAGS="${BENCH_CXXFLAGS--g -Wno-error=restrict}" >/dev/null
  cmake --build --preset release --target engine_bench
fi
bench="${BENCH_BIN:-$root/build/release/bench/engine_bench}"
[ -x "$bench" ] || { echo "run_engine_bench: $bench is missing" >&2; exit 1; }

# --- Pinning.
cpu="${BENCH_CPU:-$(($(nproc) - 1))}"
pin=()
[ "$cpu" = none ] || pin=(taskset -c "$cpu")

# --- A temp dir with the CA, the server certificate and nginx's config; removed on exit.
tmp=$(mktemp -d -t humus-engine-bench.XXXXXX)
nginx_pid=""
cleanup() {
  if [ -n "$nginx_pid" ] && kill -0 "$nginx_pid" 2>/dev/null; then
    kill -QUIT "$nginx_pid" 2>/dev/null || true
    wait "$nginx_pid" 2>/dev/null || true
  fi
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

openssl ecparam -name prime256v1 -genkey -noout -out "$tmp/ca.key" 2>/dev/null
openssl req -x509 -new -key "$tmp/ca.key" -sha256 -days 2 -subj "/CN=humus bench CA" \
  -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" \
  -out "$tmp/ca.pem" 2>/dev/null
openssl ecparam -name prime256v1 -genkey -noout -out "$tmp/server.key" 2>/dev/null
openssl req -new -key "$tmp/server.key" -subj "/CN=payments" -out "$tmp/server.csr" 2>/dev/null
printf 'subjectAltName=DNS:payments\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n' >"$tmp/ext.cnf"
openssl x509 -req -in "$tmp/server.csr" -CA "$tmp/ca.pem" -CAkey "$tmp/ca.key" -CAcreateserial -days 2 \
  -sha256 -extfile "$tmp/ext.cnf" -out "$tmp/server.pem" 2>/dev/null

read -r h1_port h2_port < <(python3 -c '
import socket
socks = [socket.socket() for _ in range(2)]
for s in socks: s.bind(("127.0.0.1", 0))
print(*[s.getsockname()[1] for s in socks])')

mkdir -p "$tmp/nginx"
cat >"$tmp/nginx.conf" <<EOF
worker_processes 1;
daemon off;
pid $tmp/nginx.pid;
error_log $tmp/error.log warn;
events { worker_connections 4096; }
http {
  access_log off;
  default_type text/plain;
  keepalive_requests 1000000000;
  keepalive_timeout 600s;
  client_body_temp_path $tmp/nginx/body;
  proxy_temp_path $tmp/nginx/proxy;
  fastcgi_temp_path $tmp/nginx/fastcgi;
  uwsgi_temp_path $tmp/nginx/uwsgi;
  scgi_temp_path $tmp/nginx/scgi;
  server {
    listen 127.0.0.1:$h1_port;
    location / { return 200 "ok"; }
  }
  server {
    listen 127.0.0.1:$h2_port ssl http2;
    server_name payments;
    ssl_certificate $tmp/server.pem;
    ssl_certificate_key $tmp/server.key;
    ssl_protocols TLSv1.2 TLSv1.3;
    http2_max_concurrent_streams 256;
    location / { return 200 "ok"; }
  }
}
EOF
nginx -t -q -p "$tmp" -c "$tmp/nginx.conf"
"${pin[@]}" nginx -p "$tmp" -c "$tmp/nginx.conf" &
nginx_pid=$!

for _ in $(seq 100); do
  if curl -s -o /dev/null --noproxy '*' "http://127.0.0.1:$h1_port/" &&
    curl -s -o /dev/null --noproxy '*' --cacert "$tmp/ca.pem" --resolve "payments:$h2_port:127.0.0.1" \
      "https://payments:$h2_port/"; then
    break
  fi
  kill -0 "$nginx_pid" 2>/dev/null || { cat "$tmp/error.log" >&2; exit 1; }
  sleep 0.1
done

echo "run_engine_bench: nginx $(nginx -v 2>&1 | sed 's/.*\///') on 127.0.0.1:$h1_port (h1) and :$h2_port (h2, TLS);" \
  "client and server on CPU ${cpu}"
# shellcheck disable=SC2086 # BENCH_WRAP is a command line on purpose
"${pin[@]}" ${BENCH_WRAP:-} "$bench" \
  --h1-url "http://127.0.0.1:$h1_port/" \
  --h2-url "https://payments:$h2_port/" --ca "$tmp/ca.pem" --resolve "payments:$h2_port:127.0.0.1" \
  "$@"
