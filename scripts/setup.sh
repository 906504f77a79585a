#!/usr/bin/env bash
# Installs what a fresh machine lacks for building and testing Palisade.
set -euo pipefail
if ! command -v cargo >/dev/null 2>&1; then
  echo "cargo is missing: install Rust (stable) with rustup first" >&2
  exit 1
fi
for component in rustfmt clippy; do
  if ! rustup component list --installed 2>/dev/null | grep -q "^$component"; then
    rustup component add "$component"
  fi
done
# rustls' `ring` provider compiles a little C and assembly: a C compiler is needed.
if ! command -v cc >/dev/null 2>&1; then
  if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
    apt-get update && apt-get install -y --no-install-recommends build-essential
  else
    echo "a C compiler (cc) is missing: install build-essential (or gcc/clang)" >&2
    exit 1
  fi
fi
# @validateDTD / @validateSchema link the system libxml2 (crate `xmlcheck`), found
# with pkg-config.
if ! pkg-config --exists libxml-2.0 >/dev/null 2>&1; then
  if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
    apt-get update && apt-get install -y --no-install-recommends libxml2-dev pkg-config
  else
    echo "libxml2 development files are missing: install libxml2-dev and pkg-config" >&2
    exit 1
  fi
fi
if [ ! -d ../shared/crs/rules ]; then
  echo "../shared/crs is missing: Palisade's tests and quick start use the OWASP CRS beside the repository" >&2
  exit 1
fi
