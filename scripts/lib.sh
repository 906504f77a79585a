# Shared by the measuring scripts (sourced, from the repository's root).
# palisade_bin: the binary to measure, $PALISADE_BIN or a release build.
palisade_bin() {
  if [ -n "${PALISADE_BIN:-}" ]; then
    printf '%s\n' "$PALISADE_BIN"
    return
  fi
  cargo build --release --bin palisade >/dev/null 2>&1
  printf '%s\n' "${CARGO_TARGET_DIR:-target}/release/palisade"
}
# corpus_count FILE: the requests in a corpus (a JSON array or JSON Lines).
corpus_count() {
  python3 -c "import json,sys;d=open(sys.argv[1]).read().strip();print(len(json.loads(d)) if d.startswith('[') else len(d.splitlines()))" "$1"
}
# engine_refs BIN OUT CORPUS OPTIMIZATIONS ITERATIONS TOGGLE...: the instructions
# callgrind collects inside the functions named (--toggle-collect: on entering and
# off leaving each, so one named inside another is left out of it) while BIN's
# `bench engine` replays CORPUS ITERATIONS times, CRS PL1 (the result cache's
# table rebuilt on the bench thread: counts do not depend on thread scheduling).
# The callgrind output is left at OUT.
engine_refs() {
  local bin=$1 out=$2 corpus=$3 opts=$4 iterations=$5
  shift 5
  local toggles=() f
  for f in "$@"; do
    toggles+=("--toggle-collect=$f")
  done
  valgrind --tool=callgrind --callgrind-out-file="$out" "${toggles[@]}" \
    "$bin" bench engine --crs "${CRS:-../shared/crs}" --corpus "$corpus" --optimizations "$opts" \
    --synchronous-cache --iterations "$iterations" 2>&1 | sed -n 's/.*I *refs: *//p' | tr -d ','
}
