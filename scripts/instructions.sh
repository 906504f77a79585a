#!/usr/bin/env bash
# Instructions per request (callgrind) for each standard request through the engine
# with CRS at the given paranoia level: stable on a noisy machine, for before/after
# comparisons of hot paths. Counts every run_one call (warm-up pass included).
# Usage: scripts/instructions.sh [PARANOIA] [ITERATIONS]
set -euo pipefail
cd "$(dirname "$0")/.."
pl=${1:-1}
iters=${2:-20}
bin=${CARGO_TARGET_DIR:-target}/release/palisade
cargo build --release --bin palisade >/dev/null 2>&1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
python3 - "$tmp" <<'PY'
import json, sys
reqs = json.load(open("../shared/bench/standard-requests.json"))
for r in reqs:
    json.dump([r], open(f"{sys.argv[1]}/{r['name']}.json", "w"))
PY
printf '%-8s %14s\n' request instructions/req
for f in "$tmp"/*.json; do
  name=$(basename "$f" .json)
  total=$(valgrind --tool=callgrind --callgrind-out-file="$tmp/cg.out" \
    "--toggle-collect=bench::engine_bench::run_one*" \
    "$bin" bench engine --corpus "$f" --paranoia "$pl" --iterations "$iters" 2>&1 \
    | sed -n 's/.*I *refs: *//p' | tr -d ',')
  printf '%-8s %14d\n' "$name" $((total / (iters + 1)))
done
