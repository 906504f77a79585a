#!/usr/bin/env bash
# Steady-state instructions per request (callgrind), CRS PL1, by phase: where one
# request's instructions go between feeding the request data, the five phases and
# the rest of the replay. Each part is the difference of two runs, so start-up,
# compilation and warm-up cancel out: (I(N2) - I(N1)) / (N2 - N1).
# Usage: scripts/instructions-phases.sh [OPTIMIZATIONS] CORPUS [N1 N2]
#   OPTIMIZATIONS as `bench engine --optimizations` (default all); CORPUS a corpus
#   file (`bench engine --corpus`), usually one request (`R1.json`); N1 and N2 the
#   iteration counts (default 50 and 150; with the result cache, counts above its
#   first window, such as 5000 and 6000, give its steady state).
# The parts (see `engine_refs` in scripts/lib.sh for how the toggles nest):
#   data     `process_uri` and `add_request_header`
#   phase 1  the bench's `drive_request` without the data and phase 2 (the phase-1
#            call is inlined into it)
#   phase 2  `process_request_body` (the body's parsing with the phase)
#   phase 3  `process_response_headers`
#   phase 4  `process_response_body`
#   phase 5  `process_logging`
#   total    `drive_request` and `drive_response` (what instructions-steady.sh
#            counts), so the rest is what the bench's replay adds around them.
# PALISADE_BIN=PATH uses that binary instead of building one; CRS=DIR another CRS
# tree.
set -euo pipefail
cd "$(dirname "$0")/.."
opts=${1:-all}
corpus=${2:?usage: scripts/instructions-phases.sh [OPTIMIZATIONS] CORPUS [N1 N2]}
n1=${3:-50}
n2=${4:-150}
. scripts/lib.sh
bin=$(palisade_bin)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
n=$(corpus_count "$corpus")
# refs ITERATIONS TOGGLE...: instructions collected inside the functions named.
refs() {
  local iterations=$1
  shift
  engine_refs "$bin" "$tmp/cg.out" "$corpus" "$opts" "$iterations" "$@"
}
# part NAME TOGGLE...: one line of the table.
part() {
  local name=$1
  shift
  local a b
  a=$(refs "$n1" "$@")
  b=$(refs "$n2" "$@")
  printf '%-8s %12d\n' "$name" $(((b - a) / (n2 - n1) / n))
}
data=('engine::transaction::Transaction::process_uri'
  'engine::transaction::Transaction::add_request_header')
printf '%s (%d requests, %s): instructions per request\n' "$(basename "$corpus")" "$n" "$opts"
part data "${data[@]}"
part 'phase 1' 'bench::engine_bench::drive_request' "${data[@]}" \
  'engine::transaction::Transaction::process_request_body'
part 'phase 2' 'engine::transaction::Transaction::process_request_body'
part 'phase 3' 'engine::transaction::Transaction::process_response_headers'
part 'phase 4' 'engine::transaction::Transaction::process_response_body'
part 'phase 5' 'engine::transaction::Transaction::process_logging'
part total 'bench::engine_bench::drive_request' 'bench::engine_bench::drive_response'
