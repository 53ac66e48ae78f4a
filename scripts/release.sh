#!/usr/bin/env bash
# `make release`: the release artifacts of one version into $DIST.
#
#   mcpgw_<V>_<os>_<arch>.tar.gz      the gateway for linux and darwin, amd64 and arm64
#   mcpgw-lambda_<V>_<arch>.zip       the Lambda bundle (bootstrap) for arm64 and x86_64
#   <artifact>.cdx.json               a CycloneDX SBOM of each artifact's binary
#   SHA256SUMS                        sha256sum -c / shasum -a 256 -c
#
# Reproducible: the same commit and Go toolchain give the same bytes
# (-trimpath, no VCS stamping, sorted archives dated SOURCE_DATE_EPOCH,
# the commit time by default). Offline once the modules are in the module
# cache (go mod download; cd tools && go mod download). Then run
#   go run ./scripts/release verify -version <V> $DIST
# to check it, as CI does (make release-check).
set -euo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
VERSION=${VERSION:-$(git describe --tags --always --dirty 2>/dev/null || echo devel)}
COMMIT=${COMMIT:-$(git rev-parse HEAD 2>/dev/null || echo unknown)}
SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || echo 0)}
DIST=${DIST:-dist}
case "$VERSION" in
  ""|*/*|*" "*) echo "release: VERSION=$VERSION: want a tag such as v1.2.0" >&2; exit 1 ;;
esac
export CGO_ENABLED=0 GOFLAGS=-buildvcs=false SOURCE_DATE_EPOCH
LDFLAGS="-s -w -X main.version=$VERSION -X main.commit=$COMMIT"

rm -rf "$DIST"
mkdir -p "$DIST/.work"
DIST=$(cd "$DIST" && pwd) # absolute: the SBOM step runs in tools/
work=$DIST/.work
artifacts=()

for p in linux/amd64 linux/arm64 darwin/amd64 darwin/arm64; do
  os=${p%/*} arch=${p#*/}
  name=mcpgw_${VERSION}_${os}_${arch}
  echo "release: $name"
  mkdir -p "$work/$name"
  GOOS=$os GOARCH=$arch "$GO" build -trimpath -ldflags "$LDFLAGS" -o "$work/$name/gateway" ./cmd/gateway
  cp README.md "$work/$name/"
  [ -f LICENSE ] && cp LICENSE "$work/$name/"
  "$GO" run ./scripts/release archive -o "$DIST/$name.tar.gz" -mtime "$SOURCE_DATE_EPOCH" "$work/$name"
  artifacts+=("$name.tar.gz:$work/$name/gateway")
done

# Lambda names its architectures arm64 and x86_64.
for a in arm64:arm64 x86_64:amd64; do
  larch=${a%:*} goarch=${a#*:}
  name=mcpgw-lambda_${VERSION}_${larch}
  echo "release: $name"
  mkdir -p "$work/$name"
  GOOS=linux GOARCH=$goarch "$GO" build -tags lambda.norpc -trimpath -ldflags "$LDFLAGS" -o "$work/$name/bootstrap" ./cmd/lambda
  "$GO" run ./cmd/lambda/zipbundle.go -o "$DIST/$name.zip" "$work/$name"
  artifacts+=("$name.zip:$work/$name/bootstrap")
done

# One SBOM per artifact, made from the binary itself: the modules it
# links, as the Go toolchain recorded them (cyclonedx-gomod, pinned in
# tools/go.mod). No serial number or timestamp, so it is reproducible.
files=()
for a in "${artifacts[@]}"; do
  art=${a%%:*} bin=${a#*:}
  (cd tools && "$GO" tool cyclonedx-gomod bin -json -noserial -notimestamp \
      -version "$VERSION" -output "$DIST/$art.cdx.json" "$bin")
  files+=("$DIST/$art" "$DIST/$art.cdx.json")
done
"$GO" run ./scripts/release sums -o "$DIST/SHA256SUMS" "${files[@]}"
rm -rf "$work"
echo "release: $VERSION in $DIST/ ($(wc -l <"$DIST/SHA256SUMS") files and SHA256SUMS)"
