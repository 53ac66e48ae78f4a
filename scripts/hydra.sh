#!/usr/bin/env bash
# Builds Ory Hydra (the OAuth 2.0 / OpenID Connect server the user_oauth
# tests run twice: as the gateway's own issuer and as a third party) from
# the Go module proxy into $MCPGW_HYDRA_CACHE (default .cache/hydra), once:
# fast when the binary of this version is already there. Without a C
# compiler it says so and exits 0: the tests then fail in full mode and
# skip in -short mode (internal/testsupport/hydra).
set -euo pipefail
cd "$(dirname "$0")/.."
VERSION=v2.3.0
CACHE=${MCPGW_HYDRA_CACHE:-.cache/hydra}
GO=${GO:-go}
BIN="$CACHE/hydra-$VERSION"
if [ -x "$BIN" ]; then
  exit 0
fi
if ! command -v gcc >/dev/null 2>&1 && ! command -v cc >/dev/null 2>&1; then
  echo "hydra: no C compiler (Hydra's sqlite needs cgo): the user_oauth tests will fail in full mode" >&2
  exit 0
fi
mkdir -p "$CACHE"
CACHE=$(cd "$CACHE" && pwd)
BIN="$CACHE/hydra-$VERSION"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
echo "hydra: building Ory Hydra $VERSION into $CACHE (a few minutes, once)" >&2
cd "$work"
"$GO" mod init mcpgw.local/hydrabuild >/dev/null 2>&1
# Hydra's go.mod replaces pop with Ory's fork; a replace is not inherited
# by a module that requires Hydra, so it is repeated here.
"$GO" mod edit -replace github.com/gobuffalo/pop/v6=github.com/ory/pop/v6@v6.2.1-0.20241121111754-e5dfc0f3344b
"$GO" get -tool "github.com/ory/hydra/v2@$VERSION" >&2
"$GO" mod tidy >&2
CGO_ENABLED=1 "$GO" build -tags sqlite,sqlite_omit_load_extension -o "$BIN.tmp" github.com/ory/hydra/v2 >&2
mv "$BIN.tmp" "$BIN"
echo "hydra: built $BIN" >&2
