#!/usr/bin/env bash
# `make image-check`: builds the container images of infra/Dockerfile with
# podman from the release in $DIST (make release), then runs
# tests/image_test.go against them: what each image holds (user, labels,
# files, architectures) and, where this machine can run containers, a
# smoke test of each (a tools/call through the minimal image on Redis; an
# npx server as a stdio backend in the stdio image).
#
# No Docker engine is needed: podman (rootful here, vfs storage kept in
# .cache/podman) builds `FROM scratch` without a registry. Base images
# that would come from a registry (python, node, uv for the stdio image)
# are pulled when the registry answers; when it does not, the stdio image
# is built up to the layers that need no registry (stage stdio-node) on
# stand-in bases made from this machine's files: Node.js from npm
# (.cache/interop), npm from the npm registry, the C libraries from the
# host. The uv layer then cannot be built, and the script says so.
#
# Without podman: as root on Debian/Ubuntu it is installed (podman, runc);
# otherwise the script says what to install and exits 0 (CI sets
# MCPGW_IMAGE_CHECK_REQUIRED=1, which makes that an error).
set -euo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
VERSION=${VERSION:?VERSION is required (the release in DIST to build from)}
COMMIT=${COMMIT:-unknown}
DIST=${DIST:-dist}
CACHE=${MCPGW_IMAGE_CACHE:-$PWD/.cache/podman}
REQUIRED=${MCPGW_IMAGE_CHECK_REQUIRED:-${CI:-}}
say() { echo "image-check: $*" >&2; }
skip() {
  say "$*"
  if [ -n "$REQUIRED" ] && [ "$REQUIRED" != "false" ]; then exit 1; fi
  exit 0
}

[ -f "$DIST/mcpgw_${VERSION}_linux_amd64.tar.gz" ] || { say "no $DIST/mcpgw_${VERSION}_linux_amd64.tar.gz: run make release VERSION=$VERSION first"; exit 1; }
if ! command -v podman >/dev/null 2>&1 || ! command -v runc >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    say "installing podman and runc (Debian packages)"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq podman runc >/dev/null
  else
    skip "podman and runc are not installed: install them (Debian/Ubuntu: apt-get install podman runc) to build and test the images"
  fi
fi

# One storage of our own, vfs (works on any file system, no fuse-overlayfs
# or kernel overlay needed), cgroupfs and a file for events (no systemd).
# runc, not crun: crun refuses hosts whose cgroup v2 hierarchy is mounted
# beside v1 with controllers ("cgroups in hybrid mode not supported").
mkdir -p "$CACHE/root" "$CACHE/run" "$CACHE/tmp"
export TMPDIR=$CACHE/tmp
PODMAN="podman --root $CACHE/root --runroot $CACHE/run --storage-driver vfs --cgroup-manager cgroupfs --events-backend file --runtime runc"
P() { $PODMAN "$@"; }

build() { # build TARGET TAG ARCH [extra args]
  local target=$1 tag=$2 arch=$3; shift 3
  say "building $tag (target $target, linux/$arch)"
  P build --quiet -f infra/Dockerfile --target "$target" --platform "linux/$arch" \
    --build-arg BINARIES=dist --build-arg VERSION="$VERSION" --build-arg COMMIT="$COMMIT" \
    -t "$tag" "$@" . >/dev/null
}

IMG=localhost/mcpgw/gateway
for arch in amd64 arm64; do
  build gateway "$IMG:$VERSION-$arch" "$arch"
done
P manifest rm "$IMG:$VERSION" >/dev/null 2>&1 || true
P manifest create "$IMG:$VERSION" "containers-storage:$IMG:$VERSION-amd64" "containers-storage:$IMG:$VERSION-arm64" >/dev/null
say "multi-arch manifest $IMG:$VERSION: linux/amd64, linux/arm64"

# The stdio image: real bases where the registry answers, else stand-ins.
STDIO_TARGET=stdio
STDIO_ARGS=()
STDIO_NOTE="built whole"
if ! timeout 60 $PODMAN pull -q docker.io/library/python:3.13-slim-bookworm >/dev/null 2>&1; then
  arch=$("$GO" env GOARCH)
  say "docker.io cannot be reached: building the stdio image's stage stdio-node on stand-in bases (linux/$arch only); the uv layer (ghcr.io/astral-sh/uv) cannot be built here"
  ./scripts/image-standins.sh "$PODMAN"
  STDIO_TARGET=stdio-node
  STDIO_ARGS=(--build-arg PYTHON_IMAGE=localhost/mcpgw-standin/base:1 --build-arg NODE_IMAGE=localhost/mcpgw-standin/node:1)
  STDIO_NOTE="stage stdio-node on stand-in bases; uv not built (registry unreachable)"
  build "$STDIO_TARGET" "$IMG:$VERSION-stdio-$arch" "$arch" "${STDIO_ARGS[@]}"
  STDIO_TAGS="$IMG:$VERSION-stdio-$arch"
else
  STDIO_TAGS=""
  for arch in amd64 arm64; do
    build stdio "$IMG:$VERSION-stdio-$arch" "$arch"
    STDIO_TAGS="$STDIO_TAGS $IMG:$VERSION-stdio-$arch"
  done
fi

say "testing the images (tests/image_test.go)"
MCPGW_PODMAN="$PODMAN" MCPGW_IMAGE_VERSION="$VERSION" \
MCPGW_IMAGE_GATEWAY="$IMG:$VERSION-amd64 $IMG:$VERSION-arm64" \
MCPGW_IMAGE_STDIO="${STDIO_TAGS# }" MCPGW_IMAGE_STDIO_TARGET="$STDIO_TARGET" \
  "$GO" test -count=1 -v -run '^TestImage' ./tests/ 2>&1 | grep -E '^(=== RUN|--- |\s+image_test|PASS|FAIL|ok|panic)' || { say "image tests failed"; exit 1; }
say "done: minimal image built for amd64 and arm64; stdio image: $STDIO_NOTE"
