#!/usr/bin/env bash
# Sets up what a fresh machine lacks, builds Palisade, checks the OWASP CRS in
# ../shared/crs and runs its main job: `palisade demo` (an echo backend with the WAF
# and CRS PL1 in front of it; it prints its URL and curl examples; Ctrl-C stops it).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
cargo build --release --bin palisade
./target/release/palisade check ../shared/crs/crs-setup.conf.example ../shared/crs/rules/*.conf
exec ./target/release/palisade demo --crs ../shared/crs "$@"
