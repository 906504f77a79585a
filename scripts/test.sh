#!/usr/bin/env bash
# The project's test command: formatting, lints (warnings are errors) and every test
# of the workspace, including the whole-CRS tests that read ../shared.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo fmt --all -- --check
cargo clippy --workspace --all-targets -- -D warnings
cargo test --workspace
