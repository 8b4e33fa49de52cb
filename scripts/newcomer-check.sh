#!/usr/bin/env bash
# The README's two commands, run as a newcomer would: in a bare Debian 12 root made with debootstrap from
# Debian's packages (no Go, no Rust, no pip beyond Debian's), on a clone of this repository's HEAD, each timed.
#
#   scripts/newcomer-check.sh [ROOT]     # as root; ROOT defaults to build/newcomer-root
#
# The root gets only what a bare install has plus `git` and `ca-certificates`, as the README asks; everything
# else is the scripts' own doing. Mounts live in a private mount namespace, so nothing is left mounted after.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
root=${1:-build/newcomer-root}
mirror=${HUMUS_DEBIAN_MIRROR:-http://deb.debian.org/debian}
[ "$(id -u)" = 0 ] || { echo "newcomer-check: needs root (debootstrap, chroot, mounts)" >&2; exit 2; }
command -v debootstrap >/dev/null || apt-get install -y -q debootstrap

if [ ! -x "$root/usr/bin/apt-get" ]; then
  echo "== debootstrap bookworm into $root"
  debootstrap --variant=minbase bookworm "$root" "$mirror"
  cat > "$root/etc/apt/sources.list" <<LIST
deb $mirror bookworm main
deb $mirror bookworm-updates main
deb ${mirror%/debian}/debian-security bookworm-security main
LIST
  cp /etc/resolv.conf "$root/etc/resolv.conf"
fi
# The host's own trust anchors, if it has any: on a network that inspects TLS, the root reaches the registries
# as the host does.
if compgen -G "/usr/local/share/ca-certificates/*.crt" >/dev/null; then
  mkdir -p "$root/usr/local/share/ca-certificates"
  cp /usr/local/share/ca-certificates/*.crt "$root/usr/local/share/ca-certificates/"
fi
rm -rf "$root/src/humus_http"
mkdir -p "$root/src"
git clone -q "$repo" "$root/src/humus_http"

# Inside: the README's own words, nothing more.
cat > "$root/src/newcomer.sh" <<'INNER'
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive
apt-get update -q && apt-get install -y -q git ca-certificates >/dev/null
update-ca-certificates >/dev/null
cd /src/humus_http
start=$(date +%s)
scripts/bootstrap.sh
echo "newcomer-check: scripts/bootstrap.sh passed in $(($(date +%s) - start)) s"
start=$(date +%s)
scripts/test.sh
echo "newcomer-check: scripts/test.sh passed in $(($(date +%s) - start)) s"
INNER

unshare --mount --propagation private bash -euo pipefail -c '
  root=$1
  mount -t proc proc "$root/proc"
  mount -t sysfs sys "$root/sys"
  mount --rbind /dev "$root/dev"
  mount -t tmpfs -o mode=1777 shm "$root/dev/shm"   # its own, not the host'"'"'s shared segments
  mount -t tmpfs -o mode=1777 tmp "$root/tmp"
  exec chroot "$root" /usr/bin/env -i HOME=/root TERM=dumb PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    bash /src/newcomer.sh
' _ "$root"
