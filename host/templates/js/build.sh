#!/bin/sh
# Build the component {{tool}}.wasm in this directory with componentize-js
# (pinned in package.json), installed in node_modules on first use (set
# COMPONENTIZE_JS to the path of another componentize-js to use that one).
#
#   ./build.sh             without the engine's wasi:http client (-d http): the
#                          component needs no network grant, and fetch() in it
#                          traps (toolhost's error says so)
#   ./build.sh --network   with it: fetch() works, every request through
#                          toolhost's pinned client to the hosts granted
#                          (--allow-host HOST, or the policy's network = ["HOST"]);
#                          without any, toolhost refuses the component at load
#
# Both leave out fetch-event (serving HTTP): a tool is not a server.
set -eu
cd "$(dirname "$0")"
case "${1:-}" in
    "") disable="http fetch-event" ;;
    --network) disable="fetch-event" ;;
    *) echo "usage: ./build.sh [--network]" >&2; exit 2 ;;
esac
cjs="${COMPONENTIZE_JS:-}"
if [ -z "$cjs" ]; then
    [ -x node_modules/.bin/componentize-js ] || npm install --no-audit --no-fund
    cjs=node_modules/.bin/componentize-js
fi
# $disable is one or two feature names: split on purpose.
# shellcheck disable=SC2086
"$cjs" tool.js --wit wit --world-name tool -d $disable -o {{tool}}.wasm
echo "built {{tool}}.wasm"
