#!/bin/sh
# Build the component {{tool}}.wasm in this directory with componentize-js
# (pinned in package.json), installed in node_modules on first use (set
# COMPONENTIZE_JS to the path of another componentize-js to use that one).
set -eu
cd "$(dirname "$0")"
cjs="${COMPONENTIZE_JS:-}"
if [ -z "$cjs" ]; then
    [ -x node_modules/.bin/componentize-js ] || npm install --no-audit --no-fund
    cjs=node_modules/.bin/componentize-js
fi
# -d http fetch-event: leave out the engine's wasi:http support (toolhost
# refuses wasi:http; the network is only through its pinned fetch).
"$cjs" tool.js --wit wit --world-name tool -d http fetch-event -o {{tool}}.wasm
echo "built {{tool}}.wasm"
