#!/usr/bin/env bash
# Steady-state instructions per request through the proxy (callgrind): `palisade
# serve --threads 1` under callgrind, CRS PL1 (or the engine Off), in front of an
# nginx backend that answers as `bench compare`'s does (`return 200`, a 64-byte
# body), loaded by `palisade bench http` with 32 keep-alive connections. Two runs,
# each 2,000 warm-up requests and then N1 or N2 requests; the difference of their
# totals over N2 - N1 is the cost of one request, start-up, compilation and
# warm-up cancelled out. Every thread of the server is counted (the result
# cache's rebuilds too); the kernel is not.
# Usage: scripts/instructions-proxy.sh [CORPUS] [on|off] [N1 N2]
#   CORPUS: JSON Lines (default: R2 of the standard requests). Needs nginx and
#   valgrind. PALISADE_BIN=PATH uses that binary instead of building one;
#   KEEP_CG=DIR copies the two callgrind outputs there (cg.N1, cg.N2), for
#   `callgrind_annotate` or a function-by-function difference.
set -euo pipefail
cd "$(dirname "$0")/.."
corpus=${1:-}
engine=${2:-on}
n1=${3:-1000}
n2=${4:-3000}
bin=${PALISADE_BIN:-}
if [ -z "$bin" ]; then
  cargo build --release --bin palisade >/dev/null 2>&1
  bin=${CARGO_TARGET_DIR:-target}/release/palisade
fi
bin=$(realpath "$bin")
crs=$(realpath ../shared/crs)
tmp=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  if [ -n "${KEEP_CG:-}" ]; then
    mkdir -p "$KEEP_CG" && cp "$tmp"/cg.* "$KEEP_CG"/ 2>/dev/null || true
  fi
  rm -rf "$tmp"
}
trap cleanup EXIT
if [ -z "$corpus" ]; then
  python3 - "$tmp/R2.jsonl" <<'PY'
import json, sys
reqs = json.load(open("../shared/bench/standard-requests.json"))
open(sys.argv[1], "w").write(json.dumps(next(r for r in reqs if r["name"] == "R2")) + "\n")
PY
  corpus=$tmp/R2.jsonl
fi
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
backend=$(port)
mkdir -p "$tmp/backend"
cat >"$tmp/backend/nginx.conf" <<EOF
daemon off;
master_process off;
worker_processes 1;
pid $tmp/backend/nginx.pid;
error_log $tmp/backend/error.log warn;
events { worker_connections 4096; }
http {
access_log off;
keepalive_requests 100000000;
keepalive_timeout 120s;
client_body_temp_path $tmp/backend/body;
proxy_temp_path $tmp/backend/proxy;
fastcgi_temp_path $tmp/backend/fastcgi;
uwsgi_temp_path $tmp/backend/uwsgi;
scgi_temp_path $tmp/backend/scgi;
server {
listen 127.0.0.1:$backend default_server;
location / {
default_type text/plain;
return 200 "palisade bench compare backend: a 64-byte static response body.\n";
}
}
}
EOF
nginx -p "$tmp/backend" -e "$tmp/backend/error.log" -c "$tmp/backend/nginx.conf" &
pids+=($!)
# run N: the server's total instructions for warm-up + N requests.
run() {
  local listen
  listen=$(port)
  {
    printf '[[listener]]\naddress = "127.0.0.1:%s"\n\n' "$listen"
    printf '[[upstream]]\nname = "backend"\naddresses = ["127.0.0.1:%s"]\n\n' "$backend"
    printf '[[route]]\npath_prefix = "/"\nupstream = "backend"\n'
    if [ "$engine" = on ]; then
      printf 'engine = "On"\ncrs = { dir = "%s", paranoia = 1 }\n' "$crs"
    else
      printf 'engine = "Off"\n'
    fi
  } >"$tmp/palisade.toml"
  valgrind --tool=callgrind --callgrind-out-file="$tmp/cg.$1" "$bin" serve \
    --config "$tmp/palisade.toml" --threads 1 --log-level warn 2>"$tmp/serve.log" &
  local sv=$!
  for _ in $(seq 120); do
    curl -s -o /dev/null "http://127.0.0.1:$listen/" && break
    sleep 1
  done
  for n in 2000 "$1"; do
    "$bin" bench http --target "http://127.0.0.1:$listen" --corpus "$corpus" \
      --connections 32 --threads 1 --duration 600s --requests "$n" --quiet >/dev/null
  done
  kill -TERM "$sv"
  wait "$sv" || true
  sed -n 's/^totals: *\([0-9]*\).*/\1/p' "$tmp/cg.$1"
}
a=$(run "$n1")
b=$(run "$n2")
printf '%s (engine %s, 32 connections): %d instructions/request\n' \
  "$(basename "$corpus")" "$engine" $(((b - a) / (n2 - n1)))
