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
