#!/usr/bin/env bash
# The CRS proxy's memory under load (docs/PERFORMANCE.md, "Memory"): starts an nginx
# backend and `palisade serve` (CRS PL1, one thread on CPU 0), replays the realistic
# corpus (20,000 requests, 5% attacks) with `palisade bench http --requests` on CPU 1
# (32 connections) in segments of 100k, 100k, 300k and 500k requests, and prints the
# server's RSS and PSS idle and after each segment.
#
# Usage: scripts/proxy-memory.sh   (PALISADE_BIN=PATH uses that binary; needs nginx)
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${PALISADE_BIN:-}
if [ -z "$bin" ]; then
  cargo build --release --bin palisade >&2
  bin=${CARGO_TARGET_DIR:-target}/release/palisade
fi
bin=$(realpath "$bin")
crs=$(realpath ../shared/crs)
command -v nginx >/dev/null || { echo "nginx is needed (apt-get install nginx-light)" >&2; exit 1; }
dir=$(mktemp -d /tmp/palisade-memory.XXXXXX)
backend_port=18181
port=18180
cleanup() {
  [ -f "$dir/nginx.pid" ] && kill "$(cat "$dir/nginx.pid")" 2>/dev/null || true
  [ -n "${server:-}" ] && kill "$server" 2>/dev/null || true
  rm -rf "$dir"
}
trap cleanup EXIT
mkdir -p "$dir/tmp"
cat >"$dir/nginx.conf" <<CONF
daemon on;
worker_processes 1;
pid $dir/nginx.pid;
error_log $dir/error.log warn;
events { worker_connections 4096; }
http {
  access_log off;
  keepalive_requests 100000000;
  client_body_temp_path $dir/tmp;
  proxy_temp_path $dir/tmp;
  fastcgi_temp_path $dir/tmp;
  uwsgi_temp_path $dir/tmp;
  scgi_temp_path $dir/tmp;
  client_max_body_size 16m;
  server {
    listen 127.0.0.1:$backend_port;
    location / { default_type text/plain; return 200 "palisade memory backend\n"; }
  }
}
CONF
taskset -c 1 nginx -c "$dir/nginx.conf" -p "$dir"
cat >"$dir/palisade.toml" <<CONF
[[listener]]
address = "127.0.0.1:$port"

[[upstream]]
name = "backend"
addresses = ["127.0.0.1:$backend_port"]

[[route]]
path_prefix = "/"
upstream = "backend"
engine = "On"
crs = { dir = "$crs", paranoia = 1 }
CONF
"$bin" traffic generate --count 20000 --attack-ratio 0.05 --seed 5 --crs "$crs" \
  --out "$dir/corpus.jsonl" >&2
taskset -c 0 "$bin" serve --config "$dir/palisade.toml" --threads 1 >"$dir/serve.log" 2>&1 &
server=$!
for _ in $(seq 100); do
  curl -s -o /dev/null "http://127.0.0.1:$port/" && break
  sleep 0.2
done
read_mem() {
  echo "| $1 | $(awk '/VmRSS/ {printf "%.1f MB", $2 / 1024}' "/proc/$server/status") | $(awk '/^Pss:/ {printf "%.1f MB", $2 / 1024}' "/proc/$server/smaps_rollup") | $2 |"
}
echo "binary $bin, $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "| point | RSS | PSS | req/s of the segment |"
echo "|---|---:|---:|---:|"
read_mem "idle, after start" ""
total=0
for n in 100000 100000 300000 500000; do
  rate=$(taskset -c 1 "$bin" bench http --target "http://127.0.0.1:$port" --corpus "$dir/corpus.jsonl" \
    --connections 32 --requests "$n" --duration 1h --threads 1 2>&1 | sed -n 's/^Requests\/sec: *//p')
  total=$((total + n))
  read_mem "after $total requests" "$rate"
done
