#!/usr/bin/env bash
# Installs the MCP software from npm that the interop tests run behind the
# gateway (tests/interop/package.json: Node 22 and unmodified MCP servers)
# into $MCPGW_INTEROP_CACHE (default .cache/interop). Fast when cached: it
# installs only when the package list changed. Without npm it says so and
# exits 0: the tests then skip locally and fail under CI=true.
set -euo pipefail
cd "$(dirname "$0")/.."
CACHE=${MCPGW_INTEROP_CACHE:-.cache/interop}
SPEC=tests/interop/package.json
STAMP="$CACHE/installed.json"
if [ -f "$STAMP" ] && cmp -s "$SPEC" "$STAMP" && [ -x "$CACHE/node_modules/node/bin/node" ]; then
  exit 0
fi
if ! command -v npm >/dev/null 2>&1; then
  echo "npm-fixtures: npm not found: the interop tests will skip (install Node.js and npm to run them)" >&2
  exit 0
fi
mkdir -p "$CACHE"
cp "$SPEC" "$CACHE/package.json"
echo "npm-fixtures: installing $(tr -d '\n ' <"$SPEC" | grep -o '"dependencies":{[^}]*}') into $CACHE" >&2
npm install --prefix "$CACHE" --no-audit --no-fund --loglevel=error >&2
cp "$SPEC" "$STAMP"
