#!/bin/sh
# Build the component {{tool}}.wasm in this directory with componentize-py
# 0.25.1, installed in .venv on first use (set COMPONENTIZE_PY to the path of
# another componentize-py to use that one).
set -eu
cd "$(dirname "$0")"
cpy="${COMPONENTIZE_PY:-}"
if [ -z "$cpy" ]; then
    if [ ! -x .venv/bin/componentize-py ]; then
        python3 -m venv .venv
        .venv/bin/pip install --disable-pip-version-check --quiet componentize-py==0.25.1
    fi
    cpy=.venv/bin/componentize-py
fi
# The module (tool.py) must not be named like the world (plugin).
"$cpy" -d wit -w plugin componentize tool -o {{tool}}.wasm
echo "built {{tool}}.wasm"
