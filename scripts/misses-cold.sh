#!/usr/bin/env bash
# Cold-cache cost per request (callgrind's cache simulation), CRS PL1: a proxy's
# network path evicts the engine's working set between requests, so each request
# fetches its rules, plan, automata and code again from the shared cache. This
# replays a corpus with `bench engine --evict-kib 4096` (4 MiB written over between
# requests, untimed) under a simulated core (48 KiB L1d, 32 KiB L1i, a 1 MiB
# last-level cache standing for the private L2) and prints, per request, the
# instructions and the misses of that 1 MiB cache (instruction fetches, data
# reads, data writes): the difference of 2 and 1 passes over the corpus, so
# start-up, compilation and the warm-up pass cancel out.
# Usage: scripts/misses-cold.sh CORPUS [OPTIMIZATIONS]   (default all)
# EVICT_KIB=N writes over N KiB instead of 4096 (0: the warm figures, for
# comparison).
# PALISADE_BIN=PATH uses that binary instead of building one.
set -euo pipefail
cd "$(dirname "$0")/.."
corpus=$1
opts=${2:-all}
evict=${EVICT_KIB:-4096}
. scripts/lib.sh
bin=$(palisade_bin)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
run() {
  valgrind --tool=callgrind --cache-sim=yes --D1=49152,12,64 --I1=32768,8,64 \
    --LL=1048576,16,64 --callgrind-out-file="$tmp/cg.$1" \
    --toggle-collect=bench::engine_bench::drive_request \
    --toggle-collect=bench::engine_bench::drive_response \
    "$bin" bench engine --crs ../shared/crs --corpus "$corpus" --optimizations "$opts" \
    --synchronous-cache --evict-kib "$evict" --iterations "$1" >/dev/null 2>&1
  # Totals: Ir Dr Dw I1mr D1mr D1mw ILmr DLmr DLmw
  sed -n 's/^totals: //p;s/^summary: //p' "$tmp/cg.$1" | head -1
}
run 1 >"$tmp/a" &
run 2 >"$tmp/b"
wait
n=$(corpus_count "$corpus")
python3 - "$n" "$(cat "$tmp/a")" "$(cat "$tmp/b")" "$(basename "$corpus")" "$opts" "$evict" <<'PY'
import sys
n = int(sys.argv[1])
a = [int(x) for x in sys.argv[2].split()]
b = [int(x) for x in sys.argv[3].split()]
d = [(y - x) / n for x, y in zip(a, b)]
print(f"{sys.argv[4]} ({n} requests, {sys.argv[5]}), per request, {sys.argv[6]} KiB evicted between requests:")
print(f"  instructions {d[0]:.0f}; 1 MiB cache misses: {d[6] + d[7] + d[8]:.0f}"
      f" (instructions {d[6]:.0f}, data reads {d[7]:.0f}, data writes {d[8]:.0f})")
PY
