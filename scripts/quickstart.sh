#!/usr/bin/env bash
# Sets up what a fresh machine lacks, builds Palisade, and runs its main job on the
# OWASP CRS in ../shared/crs.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
cargo build --release --bin palisade
exec ./target/release/palisade check ../shared/crs/crs-setup.conf.example ../shared/crs/rules/*.conf
