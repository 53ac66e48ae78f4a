#!/usr/bin/env bash
# The first step of `make test`: what the tests need besides Go, so the
# README's `make test` works on a fresh machine. Tests start their own
# redis-server (and use redis-cli for a Redis Cluster), the interop tests
# install MCP servers with npm, and scripts/hydra.sh builds Ory Hydra with
# cgo (a C compiler).
#
# All there: it says nothing. Missing, as root on Debian or Ubuntu: it
# installs them with apt-get, as .ci/run does. Otherwise it stops at once
# and names exactly what to install.
#
# MCPGW_OS_RELEASE names the os-release file read (default
# /etc/os-release): tests/test_deps_test.go checks the decisions with a
# PATH of its own, fake id and apt-get.
set -euo pipefail

missing=() debs=() brews=()
need() { # need COMMAND DEBIAN_PACKAGES HOMEBREW_FORMULA
  command -v "$1" >/dev/null 2>&1 && return 0
  missing+=("$1")
  for p in $2; do
    case " ${debs[*]-} " in *" $p "*) ;; *) debs+=("$p") ;; esac
  done
  case " ${brews[*]-} " in *" $3 "*) ;; *) brews+=("$3") ;; esac
}
need redis-server redis-server redis
need redis-cli redis-tools redis
need npm "nodejs npm" node
need gcc gcc gcc
[ ${#missing[@]} -eq 0 ] && exit 0

os_release=${MCPGW_OS_RELEASE:-/etc/os-release}
debian=false
if [ -r "$os_release" ] && grep -Eqi '^(ID|ID_LIKE)="?[^"]*(debian|ubuntu)' "$os_release"; then
  debian=true
fi

if $debian && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "test-deps: installing ${debs[*]} (${missing[*]} not on PATH)" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq "${debs[@]}" >/dev/null
  still=()
  for c in "${missing[@]}"; do
    command -v "$c" >/dev/null 2>&1 || still+=("$c")
  done
  if [ ${#still[@]} -gt 0 ]; then
    echo "test-deps: apt-get installed ${debs[*]}, but ${still[*]} is still not on PATH ($PATH)" >&2
    exit 1
  fi
  exit 0
fi

{
  echo "make test needs ${missing[*]}, not found on PATH. Install, then run make test again:"
  if $debian; then
    echo "  apt-get install ${debs[*]}    (as root; or run make test as root, which installs them)"
  else
    echo "  Debian/Ubuntu:    apt-get install ${debs[*]}"
    echo "  macOS (Homebrew): brew install ${brews[*]}"
    echo "  elsewhere:        your package manager's redis (server and cli), Node.js with npm, and gcc or clang"
  fi
} >&2
exit 1
