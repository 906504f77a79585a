#!/usr/bin/env bash
# The ablation table of issue #6: the engine benchmark with the optimisations
# switched on one after another (baseline; +prune; +memo; +prefilter; +cache;
# +order; all), CRS PL1 and PL2, on a realistic benign corpus and on 10% and 50%
# attack mixes. Steps the binary's --optimizations does not accept are skipped (the
# report lists them). Writes docs/perf/ablation/{report.md,results.json,*.svg,*.png}.
#
# Usage: scripts/ablation.sh [OUT_DIR] ; COUNT (requests per corpus, default 3000)
# and ITERATIONS (timed passes per run after one warm-up pass, default 4) can be
# set in the environment. Corpora go to a temporary directory, removed at the end.
# PALISADE_BIN=PATH uses that binary instead of building one.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-docs/perf/ablation}
count=${COUNT:-3000}
iterations=${ITERATIONS:-4}
crs=../shared/crs
bin=${PALISADE_BIN:-}
if [ -z "$bin" ]; then
  cargo build --release --bin palisade >&2
  bin=${CARGO_TARGET_DIR:-target}/release/palisade
fi
tmp=$(mktemp -d /tmp/palisade-ablation.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
gen() { "$bin" traffic generate --count "$count" --attack-ratio "$2" --distribution real \
  --seed "$3" --crs "$crs" --out "$tmp/$1.jsonl" >&2; }
gen benign 0 21
gen attacks10 0.1 22
gen attacks50 0.5 23
pin=()
if [ "$(nproc)" -gt 1 ]; then pin=(--cpus 0); fi
start=$(date +%s)
note() { echo "- \`$1\`: \`palisade traffic generate --count $count --attack-ratio $2 --distribution real --seed $3 --crs $crs\`"; }
"$bin" bench ablation --crs "$crs" --paranoia 1,2 --iterations "$iterations" "${pin[@]}" \
  --note="Made by \`scripts/ablation.sh\` (COUNT=$count, ITERATIONS=$iterations) on $(nproc) CPUs, load average before $(cut -d' ' -f1-3 /proc/loadavg); corpora:" \
  --note="$(note benign 0 21)" --note="$(note attacks10 0.1 22)" --note="$(note attacks50 0.5 23)" \
  --corpus "benign=$tmp/benign.jsonl" --corpus "attacks10=$tmp/attacks10.jsonl" \
  --corpus "attacks50=$tmp/attacks50.jsonl" --out "$out"
echo "ablation: $(( $(date +%s) - start )) s, load average $(cut -d' ' -f1-3 /proc/loadavg)" >&2
