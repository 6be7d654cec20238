#!/bin/sh
# Build the component {{tool}}.wasm in this directory. Needs the wasm32-wasip2
# target once: rustup target add wasm32-wasip2. Extra arguments go to cargo.
set -eu
cd "$(dirname "$0")"
cargo build --release --target wasm32-wasip2 "$@"
cp "${CARGO_TARGET_DIR:-target}/wasm32-wasip2/release/{{tool}}.wasm" {{tool}}.wasm
echo "built {{tool}}.wasm"
