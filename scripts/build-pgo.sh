#!/usr/bin/env bash
# A profile-guided (PGO) release build of `palisade`: an instrumented build is
# trained on generated traffic (not the standard requests nor the realistic
# corpus the benchmarks replay), the CRS regression suite and a proxy run, and
# the release build is then made with the merged profile, so that the compiler
# lays out and inlines the engine's code for the paths requests take.
# Output: target/pgo/release/palisade (the plain `cargo build --release` binary
# is left as it is). Measure it with PALISADE_BIN=target/pgo/release/palisade.
# Needs rustup's llvm-tools component (installed here when missing) for
# llvm-profdata. About two release builds' time plus half a minute of training.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! rustup component list --installed 2>/dev/null | grep -q '^llvm-tools'; then
  rustup component add llvm-tools
fi
sysroot=$(rustc --print sysroot)
host=$(rustc -vV | sed -n 's/^host: //p')
profdata="$sysroot/lib/rustlib/$host/bin/llvm-profdata"
[ -x "$profdata" ] || { echo "llvm-profdata not found at $profdata" >&2; exit 1; }
work=target/pgo-train
rm -rf "$work"
mkdir -p "$work/raw"
raw=$(cd "$work/raw" && pwd)

echo "== instrumented build" >&2
RUSTFLAGS="-Cprofile-generate=$raw" \
  cargo build --release --bin palisade --target-dir target/pgo-gen
gen=target/pgo-gen/release/palisade

echo "== training" >&2
# Generated traffic with its own seed (the benchmarks use seed 5 and the
# standard requests), 10% attacks.
"$gen" traffic generate --count 4000 --attack-ratio 0.1 --seed 17 \
  --crs ../shared/crs --out "$work/train.jsonl" >/dev/null
for opts in all prune,memo,prefilter,order; do
  "$gen" bench engine --crs ../shared/crs --corpus "$work/train.jsonl" \
    --optimizations "$opts" --iterations 2 >/dev/null
done
"$gen" bench engine --crs ../shared/crs --corpus "$work/train.jsonl" --paranoia 2 \
  --iterations 1 >/dev/null
"$gen" ftw --crs ../shared/crs --overrides tests/crs-overrides.yaml >/dev/null
# The proxy: the demo (echo backend, CRS PL1) under the load generator, stopped
# with SIGINT (a graceful exit writes the profile). Ready when it prints how to
# stop it; a demo that exits first (its port taken) is reported, not trained on.
port=18931
"$gen" demo --crs ../shared/crs --port "$port" >"$work/demo.log" 2>&1 &
demo=$!
for _ in $(seq 300); do
  if grep -q 'Stop with Ctrl-C' "$work/demo.log" || ! kill -0 "$demo" 2>/dev/null; then break; fi
  sleep 0.1
done
if kill -0 "$demo" 2>/dev/null; then
  "$gen" bench http --target "http://127.0.0.1:$port" --corpus "$work/train.jsonl" \
    --connections 8 --duration 5s >/dev/null
  kill -INT "$demo"
  wait "$demo"
else
  echo "the demo did not start (see $work/demo.log): the profile has no proxy run" >&2
fi

echo "== merge and optimised build" >&2
"$profdata" merge -o "$work/merged.profdata" "$raw"
RUSTFLAGS="-Cprofile-use=$(pwd)/$work/merged.profdata" \
  cargo build --release --bin palisade --target-dir target/pgo
echo "target/pgo/release/palisade"
