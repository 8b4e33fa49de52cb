#!/usr/bin/env bash
# Builds bench/go_peers against a staged libhumus_http and runs it (its flags pass through): humushttp
# against net/http alone, net/http with failsafe-go, and net/http with gobreaker and go-retryablehttp, in one
# process against an nginx of its own (issue 38; bench/README.md). The modules come from Go's module
# download, checked against the committed go.sum.
#
#   bench/go_peers/run.sh [--rounds 5] [--seconds 1] [--conc 1,16,64] [--modes a,b,c,d] ...
#
# Environment:
#   HUMUS_PREFIX=dir   a library installed there (default: scripts/stage.sh release, build/stage-release)
#   GO_PEERS_BIN=file  where the binary is built (default: build/bench/go_peers)
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
if ! command -v nginx >/dev/null 2>&1 && [ ! -x /usr/sbin/nginx ]; then
  echo "go_peers: installing nginx-light" >&2
  sudo=""
  [ "$(id -u)" = 0 ] || sudo=sudo
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends nginx-light >/dev/null
fi
prefix=${HUMUS_PREFIX:-}
[ -n "$prefix" ] || prefix=$(scripts/stage.sh release | tail -n 1)
bin=${GO_PEERS_BIN:-$root/build/bench/go_peers}
mkdir -p "$(dirname "$bin")"
export PKG_CONFIG_PATH="$prefix/lib/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
export CGO_ENABLED=1
(cd bench/go_peers && go build -o "$bin" .)
LD_LIBRARY_PATH="$(pkg-config --variable=libdir humus_http)${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" exec "$bin" "$@"
