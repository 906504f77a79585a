#!/usr/bin/env bash
# Steady-state instructions per request (callgrind), CRS PL1: the difference of two
# runs, so start-up, compilation and warm-up cancel out. For each standard request
# alone: (I(450 iterations) - I(150)) / 300. For a corpus file given as the second
# argument: (I(4) - I(2)) / 2 / its request count.
# Usage: scripts/instructions-steady.sh [OPTIMIZATIONS] [CORPUS]
#   OPTIMIZATIONS as `bench engine --optimizations` (default all; the RuleCache
#   issue's "without the result cache" is prune,memo,prefilter,order).
#   `order` (in `all`) is learned from a timed, profiled pass, so its plan, and
#   counts with it, may change from run to run when the timings do; for
#   comparisons, prune,memo,prefilter,cache leaves it out.
#   The result cache's table is rebuilt on the benchmark thread
#   (--synchronous-cache), so its contents, and the counts, do not depend on
#   thread scheduling; its rebuilds are counted with the requests.
# PALISADE_BIN=PATH uses that binary instead of building one; CRS=DIR another CRS
# tree (a copy with a rule removed, to count what the rule costs). WHOLE=1 counts each
# whole transaction (`run_one_profiled`: its creation and drop too, where the
# buffers go back to the pool), as a proxy pays for it; by default only the
# phases are counted. KEEP_CG=DIR copies the callgrind outputs there
# (NAME.150 and NAME.450 per request, CORPUS.2 and CORPUS.4 for a corpus), for
# `scripts/callgrind-diff.py` (per function, call and source line).
set -euo pipefail
cd "$(dirname "$0")/.."
opts=${1:-all}
corpus=${2:-}
. scripts/lib.sh
bin=$(palisade_bin)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if [ "${WHOLE:-0}" = 1 ]; then
  toggles=(bench::engine_bench::run_one_profiled)
else
  toggles=(bench::engine_bench::drive_request bench::engine_bench::drive_response)
fi
# refs FILE ITERATIONS: instructions inside the engine bench's replay loop.
refs() {
  engine_refs "$bin" "$tmp/cg.out.$2" "$1" "$opts" "$2" "${toggles[@]}"
  if [ -n "${KEEP_CG:-}" ]; then
    mkdir -p "$KEEP_CG" && cp "$tmp/cg.out.$2" "$KEEP_CG/$(basename "$1" | sed 's/\.[^.]*$//').$2"
  fi
}
if [ -n "$corpus" ]; then
  n=$(corpus_count "$corpus")
  a=$(refs "$corpus" 2)
  b=$(refs "$corpus" 4)
  printf '%s (%d requests, %s): %d instructions/request\n' "$(basename "$corpus")" "$n" "$opts" $(((b - a) / 2 / n))
  exit 0
fi
python3 - "$tmp" <<'PY'
import json, sys
reqs = json.load(open("../shared/bench/standard-requests.json"))
for r in reqs:
    json.dump([r], open(f"{sys.argv[1]}/{r['name']}.json", "w"))
PY
printf '%-8s %14s   (%s)\n' request instructions/req "$opts"
for f in "$tmp"/*.json; do
  a=$(refs "$f" 150)
  b=$(refs "$f" 450)
  printf '%-8s %14d\n' "$(basename "$f" .json)" $(((b - a) / 300))
done
