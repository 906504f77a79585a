#!/usr/bin/env bash
# The optimisations' equivalence check over generated corpora (issue #6): for each
# corpus, `palisade bench engine --verify` evaluates every request with the chosen
# optimisations (two passes in order, so value-cache hits are exercised) and with
# every optimisation off, and compares decisions, matched rules, anomaly scores, TX
# variables and audit records. 210,000 requests in nine corpora: benign-heavy (1%
# attacks), 10% and 50% attacks, attack distributions even / real / best / worst.
#
# Usage: scripts/verify-equivalence.sh [OPTIMIZATIONS] [PARANOIA]
#   (default: all 1). Corpora and logs go to $VERIFY_DIR (default
#   /tmp/palisade-verify), never into the repository. Exits 1 on any difference.
# PALISADE_BIN=PATH uses that binary instead of building one.
set -euo pipefail
cd "$(dirname "$0")/.."
opts=${1:-all}
pl=${2:-1}
dir=${VERIFY_DIR:-/tmp/palisade-verify}
crs=../shared/crs
bin=${PALISADE_BIN:-}
if [ -z "$bin" ]; then
  cargo build --release --bin palisade >&2
  bin=${CARGO_TARGET_DIR:-target}/release/palisade
fi
mkdir -p "$dir"
# name count attack-ratio distribution seed
corpora=(
  "benign-heavy 60000 0.01 real 101"
  "attacks10-real 40000 0.1 real 102"
  "attacks50-real 20000 0.5 real 103"
  "attacks10-even 20000 0.1 even 104"
  "attacks10-best 20000 0.1 best 105"
  "attacks10-worst 20000 0.1 worst 106"
  "attacks50-even 10000 0.5 even 107"
  "attacks50-best 10000 0.5 best 108"
  "attacks50-worst 10000 0.5 worst 109"
)
commit=$(git rev-parse --short HEAD)$(git diff --quiet HEAD -- crates Cargo.toml Cargo.lock || echo "-dirty")
echo "commit $commit, optimizations $opts, paranoia $pl, $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "| corpus | requests | attack ratio | distribution | evaluations compared | reference blocked | differences | seconds |"
echo "|---|---:|---:|---|---:|---:|---:|---:|"
status=0
total=0
start_all=$(date +%s)
for spec in "${corpora[@]}"; do
  read -r name count ratio dist seed <<<"$spec"
  corpus="$dir/$name.jsonl"
  if [ ! -s "$corpus" ]; then
    "$bin" traffic generate --count "$count" --attack-ratio "$ratio" --distribution "$dist" \
      --seed "$seed" --paranoia "$pl" --crs "$crs" --out "$corpus" >&2
  fi
  start=$(date +%s)
  rc=0
  "$bin" bench engine --verify --optimizations "$opts" --paranoia "$pl" --crs "$crs" \
    --corpus "$corpus" --json >"$dir/$name.verify.json" 2>"$dir/$name.verify.err" || rc=$?
  secs=$(( $(date +%s) - start ))
  # One line of figures from the JSON report.
  read -r checked blocked diffs < <(python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); print(r["requests_checked"], r["reference_blocked"], r["differences"])' "$dir/$name.verify.json" 2>/dev/null || echo "? ? ?")
  echo "| $name | $count | $ratio | $dist | $checked | $blocked | $diffs | $secs |"
  total=$((total + count))
  if [ "$rc" -ne 0 ]; then
    status=1
    # The first differences, readable.
    python3 - "$dir/$name.verify.json" >&2 <<'PY' || cat "$dir/$name.verify.err" >&2
import json, sys
r = json.load(open(sys.argv[1]))
for d in r["first"]:
    print(f"difference: request #{d['index']} ({d['name']}, {d['request']}), pass {d['pass']}")
    for f in d["findings"]:
        print(f"  {f['kind']} (rules {f['rule_ids']}):")
        for line in f["detail"].splitlines():
            print(f"    {line}")
print(f"by kind {r['by_kind']}, per pass {r['differences_by_pass']}")
PY
  fi
done
echo
echo "$total requests in total, $(( $(date +%s) - start_all )) s; load average after $(cut -d' ' -f1-3 /proc/loadavg)"
exit $status
