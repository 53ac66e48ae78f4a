#!/usr/bin/env bash
# Stand-in base images for the stdio image, for machines that cannot reach
# the container registries (scripts/image-check.sh): made from files
# already here, imported into podman's storage (no registry involved).
#
#   localhost/mcpgw-standin/base:1  for python:3.13-slim-bookworm: /bin/sh,
#                                   /usr/bin/env and the C libraries Node.js
#                                   needs, copied from this machine (no Python)
#   localhost/mcpgw-standin/node:1  for node:22-bookworm-slim: the official
#                                   Node.js 22 binary (npm package "node",
#                                   .cache/interop) and npm, laid out as that
#                                   image lays them out
#
# Usage: image-standins.sh "PODMAN COMMAND"
set -euo pipefail
cd "$(dirname "$0")/.."
PODMAN=$1
NPM_VERSION=10.9.8
CACHE=${MCPGW_IMAGE_CACHE:-$PWD/.cache/podman}/standins
NODE=.cache/interop/node_modules/node/bin/node
[ -x "$NODE" ] || ./scripts/npm-fixtures.sh
[ -x "$NODE" ] || { echo "image-standins: no Node.js in .cache/interop (npm-fixtures needs npm)" >&2; exit 1; }
mkdir -p "$CACHE"

# copy_with_libs ROOT FILE...: FILE at the same path under ROOT, with the
# shared libraries it loads (ldd).
copy_with_libs() {
  local root=$1; shift
  for f in "$@"; do
    mkdir -p "$root$(dirname "$f")"
    cp -L "$f" "$root$f"
    ldd "$f" 2>/dev/null | grep -o '/[^ ]*' | while read -r lib; do
      mkdir -p "$root$(dirname "$lib")"
      cp -L "$lib" "$root$lib"
    done
  done
}

base=$CACHE/base
rm -rf "$base" && mkdir -p "$base/tmp" "$base/etc"
chmod 1777 "$base/tmp"
copy_with_libs "$base" /bin/sh /usr/bin/env "$(readlink -f "$NODE")"
rm -f "$base$(readlink -f "$NODE")" # the libraries stay; node comes from the node stand-in
echo "root:x:0:0:root:/root:/bin/sh" >"$base/etc/passwd"
tar -C "$base" -cf "$CACHE/base.tar" .
$PODMAN import -q "$CACHE/base.tar" localhost/mcpgw-standin/base:1 >/dev/null

node=$CACHE/node
rm -rf "$node" && mkdir -p "$node/usr/local/bin" "$node/usr/local/lib/node_modules"
cp -L "$NODE" "$node/usr/local/bin/node"
if [ ! -f "$CACHE/npm-$NPM_VERSION.tgz" ]; then
  (cd "$CACHE" && npm pack -q "npm@$NPM_VERSION" >/dev/null)
fi
tar -C "$node/usr/local/lib/node_modules" -xzf "$CACHE/npm-$NPM_VERSION.tgz"
mv "$node/usr/local/lib/node_modules/package" "$node/usr/local/lib/node_modules/npm"
ln -s ../lib/node_modules/npm/bin/npm-cli.js "$node/usr/local/bin/npm"
ln -s ../lib/node_modules/npm/bin/npx-cli.js "$node/usr/local/bin/npx"
tar -C "$node" -cf "$CACHE/node.tar" .
$PODMAN import -q "$CACHE/node.tar" localhost/mcpgw-standin/node:1 >/dev/null
echo "image-standins: localhost/mcpgw-standin/base:1 and node:1 (Node.js $("$NODE" --version), npm $NPM_VERSION)" >&2
