#!/usr/bin/env bash
# run_in_netns.sh BINARY [ARGS...] — runs BINARY in a private network and mount namespace of its own
# (`unshare -n -m`, root needed; mounts stay private) with HUMUS_NETNS=1, so the tests inside may build a
# network with ip(8), bind-mount files over /etc and break things on purpose without touching
# the host's. Exits 77 (ctest: skipped, and says so) when no namespace can be made.
set -euo pipefail
if ! command -v unshare >/dev/null || ! command -v ip >/dev/null || ! unshare -n -m true 2>/dev/null; then
  echo "skipped: cannot create a network namespace here (needs root, unshare(1) and ip(8))"
  exit 77
fi
HUMUS_NETNS=1 exec unshare -n -m --propagation private "$@"
