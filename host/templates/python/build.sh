#!/bin/sh
# Build the component {{tool}}.wasm in this directory with componentize-py
# 0.25.1, installed in .venv on first use (set COMPONENTIZE_PY to the path of
# another componentize-py to use that one).
#
#   ./build.sh             world `plugin`: the log, the files interface, the work dir
#   ./build.sh --network   world `networked-plugin`: also toolhost's pinned fetch
#                          (`from wit_world.imports import fetch`); toolhost loads
#                          it only with hosts granted (--allow-host HOST, or the
#                          policy's network = ["HOST"])
set -eu
cd "$(dirname "$0")"
case "${1:-}" in
    "") world=plugin ;;
    --network) world=networked-plugin ;;
    *) echo "usage: ./build.sh [--network]" >&2; exit 2 ;;
esac
cpy="${COMPONENTIZE_PY:-}"
if [ -z "$cpy" ]; then
    if [ ! -x .venv/bin/componentize-py ]; then
        python3 -m venv .venv
        .venv/bin/pip install --disable-pip-version-check --quiet componentize-py==0.25.1
    fi
    cpy=.venv/bin/componentize-py
fi
# The module (tool.py) must not be named like the world.
"$cpy" -d wit -w "$world" componentize tool -o {{tool}}.wasm
echo "built {{tool}}.wasm"
