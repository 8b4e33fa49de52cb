#!/usr/bin/env bash
# scripts/libcurl-backports.sh PREFIX: Debian's backported libcurl (the version in HUMUS_BACKPORTS_LIBCURL,
# default 8.14.1) unpacked into PREFIX, next to the system's own, for the CMake preset curl814 and the
# "libcurl 8.14" stage of scripts/test.sh: the wire suites run against both libcurls (issue 35).
#
# Idempotent. The only change to the system is an apt source for <codename>-backports main on the Debian
# mirror the machine already uses (/etc/apt/sources.list.d/<codename>-backports.sources, unless some source
# already names that suite), and that source's package lists. Nothing is installed: libcurl4 and
# libcurl4-openssl-dev are fetched with apt-get download, and so is every shared library libcurl4 depends on
# that the system's installed version cannot satisfy (dpkg-deb -f Depends, dpkg --compare-versions); each is
# unpacked with dpkg-deb -x into PREFIX. Then:
#   PREFIX/lib      -> usr/lib/<multiarch>      libcurl.so, libcurl.so.4, the libraries it needs, pkgconfig/
#   PREFIX/include  -> usr/include/<multiarch>  curl/*.h
# so CMake finds it with CMAKE_PREFIX_PATH=PREFIX whatever the architecture, libcurl.pc's prefix points into
# PREFIX (relative to the .pc file), and `ldd -r` proves libcurl.so.4 resolves every library and symbol
# from PREFIX/lib first and the system second. Debian 12 (bookworm) and later; runs as root or through sudo.
set -euo pipefail

if [ $# -ne 1 ] || [ -z "$1" ]; then
  echo "usage: $0 PREFIX   (e.g. build/libcurl-8.14)" >&2
  exit 2
fi
mkdir -p "$1"
prefix=$(cd "$1" && pwd)
want=${HUMUS_BACKPORTS_LIBCURL:-8.14.1}
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
say() { echo "libcurl-backports: $*"; }
die() { echo "libcurl-backports: $*" >&2; exit 1; }

# shellcheck disable=SC1091
codename=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")
[ -n "$codename" ] || die "no VERSION_CODENAME in /etc/os-release: not a Debian release with backports"
suite="${codename}-backports"
multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || gcc -dumpmachine)

# --- 1. The apt source. The mirror (and its keyring) are those of the source that serves "$codename" itself,
# in deb822 (.sources) or one-line (.list) form.
source_files=()
for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources; do
  [ -f "$f" ] && source_files+=("$f")
done
((${#source_files[@]})) || die "no apt sources in /etc/apt"
read -r mirror keyring < <(awk -v suite="$codename" '
  function flush() {
    if (enabled && types ~ /(^| )deb( |$)/ && (" " suites " ") ~ (" " suite " ") && uris != "" && !found) {
      split(uris, u, " "); print u[1], (signed == "" ? "-" : signed); found = 1
    }
    types = uris = suites = signed = ""; enabled = 1
  }
  BEGIN { enabled = 1 }
  FILENAME ~ /\.sources$/ {
    if (FNR == 1) flush()
    if ($0 ~ /^[ \t]*$/) { flush(); next }
    if ($0 ~ /^#/) next
    key = tolower($1)
    sub(/^[^:]*:[ \t]*/, "")
    if (key == "types:") types = $0
    else if (key == "uris:") uris = $0
    else if (key == "suites:") suites = $0
    else if (key == "signed-by:") signed = $0
    else if (key == "enabled:" && tolower($0) == "no") enabled = 0
    next
  }
  $1 == "deb" && !found {  # deb [options] URI suite components...
    line = $0; opts = ""
    if (match(line, /\[[^]]*\]/)) { opts = substr(line, RSTART + 1, RLENGTH - 2); line = substr(line, 1, RSTART - 1) substr(line, RSTART + RLENGTH) }
    n = split(line, w, /[ \t]+/)
    if (n >= 4 && w[3] == suite) {
      signed = "-"
      if (match(opts, /signed-by=[^ \t]+/)) signed = substr(opts, RSTART + 10, RLENGTH - 10)
      print w[2], signed; found = 1
    }
  }
  END { flush() }' "${source_files[@]}") || true
[ -n "${mirror:-}" ] || die "no apt source serves \"$codename\" in /etc/apt/sources.list*: which Debian mirror?"
mirror=${mirror%/}

stanza="Types: deb
URIs: $mirror
Suites: $suite
Components: main"
[ "$keyring" = "-" ] || stanza+=$'\n'"Signed-By: $keyring"
our_source="/etc/apt/sources.list.d/${suite}.sources"
if grep -qsE "^[^#]*[[:space:]]${suite}([[:space:]]|$)" "${source_files[@]}" \
   && ! [ -f "$our_source" ]; then
  say "apt already has a source for $suite"
elif [ "$(cat "$our_source" 2>/dev/null)" = "$stanza" ]; then
  say "apt source $our_source present"
else
  say "adding $our_source ($mirror $suite main)"
  printf '%s\n' "$stanza" | $sudo tee "$our_source" >/dev/null
fi

# Package lists: only the backports source is fetched (the others' lists stay as they are, List-Cleanup off),
# and only when apt does not know the backported libcurl yet.
backports_versions() {  # PACKAGE: the versions apt knows of it in $suite, newest first
  apt-cache madison "$1" 2>/dev/null | awk -F'|' -v s="$suite" '$3 ~ (" " s "/") { gsub(/ /, "", $2); print $2 }'
}
if ! backports_versions libcurl4 | grep -q "^${want}-"; then
  say "apt-get update of $suite alone"
  tmp_list=$(mktemp --suffix=.sources)
  trap 'rm -f "$tmp_list"' EXIT
  printf '%s\n' "$stanza" >"$tmp_list"
  chmod 644 "$tmp_list"
  $sudo apt-get update -qq -o Dir::Etc::SourceList="$tmp_list" -o Dir::Etc::SourceParts=/nonexistent \
    -o APT::Get::List-Cleanup=0
fi
curl_version=$(backports_versions libcurl4 | grep -m1 "^${want}-" || true)
[ -n "$curl_version" ] || die "$suite has no libcurl4 $want (it has: $(backports_versions libcurl4 | tr '\n' ' ')). \
Set HUMUS_BACKPORTS_LIBCURL to the version it has, and rename the curl814 preset if the minor changed."

# --- 2. The packages. .debs are kept in PREFIX/debs, so a second run downloads nothing.
debs="$prefix/debs"
mkdir -p "$debs"
download() {  # PACKAGE VERSION: its .deb in $debs; prints its path
  local f pass
  for pass in cached fetched; do
    for f in "$debs/${1}_"*.deb; do
      if [ -f "$f" ] && [ "$(dpkg-deb -f "$f" Version)" = "$2" ]; then echo "$f"; return 0; fi
    done
    [ "$pass" = fetched ] || (cd "$debs" && apt-get download -qq -o APT::Sandbox::User=root "$1=$2" </dev/null >&2)
  done
  die "apt-get download $1=$2 left no .deb"
}
satisfies() {  # VERSION OP WANTED (OP as in Depends: >= << <= >> =)
  local op=$2
  case $op in '>=') op=ge ;; '<=') op=le ;; '>>') op=gt ;; '<<') op=lt ;; '=') op=eq ;; *) return 1 ;; esac
  dpkg --compare-versions "$1" "$op" "$3"
}
declare -A chosen=()  # package -> version unpacked into PREFIX
queue=()
choose() {  # PACKAGE VERSION
  local deb
  deb=$(download "$1" "$2") || exit 1
  chosen[$1]=$2
  queue+=("$deb")
}
# One Depends alternative: "name[:arch] [(op version)]". Satisfied by the system's installed version or by a
# package already chosen; otherwise the newest version apt knows that satisfies it is chosen (backports first
# in madison's order when it is newer).
dependency_met() {
  local name=$1 op=$2 version=$3 have
  if [ -n "${chosen[$name]:-}" ]; then have=${chosen[$name]}
  else
    have=$(dpkg-query -W -f='${db:Status-Abbrev} ${Version}' "$name" 2>/dev/null | awk '$1 == "ii" { print $2 }')
  fi
  [ -n "$have" ] || return 1
  [ -z "$op" ] || satisfies "$have" "$op" "$version"
}
resolve() {  # DEB: every dependency the system cannot meet is chosen too
  local deb=$1 group alt name op version met candidate v
  local IFS_old=$IFS
  while IFS= read -r group; do
    [ -n "$group" ] || continue
    met=0 candidate=""
    IFS='|' read -ra alts <<<"$group"
    for alt in "${alts[@]}"; do
      read -r name op version < <(sed -E 's/^ *([^ (]+) *(\(([<>=]+) *([^) ]+)\))?.*$/\1 \3 \4/' <<<"$alt")
      name=${name%%:*}
      if dependency_met "$name" "$op" "$version"; then met=1; break; fi
      if [ -z "$candidate" ]; then
        for v in $(apt-cache madison "$name" 2>/dev/null | awk -F'|' '{ gsub(/ /, "", $2); print $2 }'); do
          if [ -z "$op" ] || satisfies "$v" "$op" "$version"; then candidate="$name $v"; break; fi
        done
      fi
    done
    if ((met == 0)); then
      [ -n "$candidate" ] || die "$(basename "$deb") needs ($group), which neither the system nor apt has"
      say "  $(dpkg-deb -f "$deb" Package) needs ($group): the system cannot, taking ${candidate/ /=}"
      choose $candidate
    fi
  done < <(dpkg-deb -f "$deb" Pre-Depends Depends | sed -E 's/^[A-Za-z-]+: //' | tr ',' '\n' | sed -E 's/^ +//')
  IFS=$IFS_old
}

say "libcurl4 and libcurl4-openssl-dev $curl_version from $suite"
choose libcurl4 "$curl_version"
dev_deb=$(download libcurl4-openssl-dev "$curl_version") || exit 1
# The runtime library's dependencies, and theirs, transitively. The -dev package's own Depends (libcurl4 and
# -dev packages for static linking) are not followed: only its headers, libcurl.so and libcurl.pc are used.
i=0
while ((i < ${#queue[@]})); do
  resolve "${queue[$i]}"
  i=$((i + 1))
done

# --- 3. Unpacked afresh into PREFIX (PREFIX/debs stays).
rm -rf "$prefix/usr" "$prefix/lib" "$prefix/include" "$prefix/etc"
for deb in "${queue[@]}" "$dev_deb"; do
  dpkg-deb -x "$deb" "$prefix"
done
ln -sfn "usr/lib/$multiarch" "$prefix/lib"
ln -sfn "usr/include/$multiarch" "$prefix/include"
libdir="$prefix/usr/lib/$multiarch"
[ -f "$prefix/include/curl/curl.h" ] || die "no curl/curl.h under usr/include/$multiarch in libcurl4-openssl-dev"

# The development symlink: relative, so it stays inside PREFIX.
dev_link="$libdir/libcurl.so"
target=$(readlink "$dev_link" || true)
if [ -z "$target" ] || [ "${target#/}" != "$target" ]; then
  real=$(cd "$libdir" && ls libcurl.so.4.* | sort -V | tail -n1)
  ln -sfn "$real" "$dev_link"
fi
[ -e "$dev_link" ] || die "libcurl.so in $libdir is dangling"

# libcurl.pc: its prefix is PREFIX/usr (absolute: CMake normalises a ${pcfiledir}/.. lexically, which the
# PREFIX/lib symlink would lead astray), and the variables that name /usr itself (Debian's
# includedir=/usr/include/<multiarch>) are made relative to that prefix. Any other /usr path is an error.
pc="$libdir/pkgconfig/libcurl.pc"
[ -f "$pc" ] || die "no libcurl.pc in libcurl4-openssl-dev"
sed -i -E -e "s|^prefix=/usr/?\$|prefix=$prefix/usr|" -e 's|^([a-z_]+)=/usr(/[^ ]*)?$|\1=${prefix}\2|' "$pc"
if grep -nE '^[a-z_]+=/usr' "$pc"; then die "libcurl.pc still names /usr (above)"; fi
# Its Requires.private names the .pc of every -dev package libcurl4-openssl-dev depends on (libzstd, libssh2,
# ...), which are not installed (nothing is), and pkgconf checks them even for a shared link, so that
# `pkg-config --cflags libcurl` would fail and CMake would ignore the file. Only a static link needs them,
# and this prefix is linked shared: the line becomes a comment.
sed -i -E 's|^Requires\.private:|# Requires.private (dropped by scripts/libcurl-backports.sh, shared links only):|' "$pc"
if ! out=$(PKG_CONFIG_PATH="$libdir/pkgconfig" pkg-config --cflags --libs libcurl 2>&1); then
  die "pkg-config cannot use $pc: $out"
fi
got=$(PKG_CONFIG_PATH="$libdir/pkgconfig" PKG_CONFIG_LIBDIR="$libdir/pkgconfig" pkg-config --modversion libcurl)
[ "$got" = "$want" ] || die "libcurl.pc says $got, not $want"
pc_includes=$(PKG_CONFIG_LIBDIR="$libdir/pkgconfig" pkg-config --variable=includedir libcurl)
[ "$(cd "$pc_includes" && pwd -P)" = "$(cd "$prefix/usr/include/$multiarch" && pwd -P)" ] ||
  die "libcurl.pc's includedir ($pc_includes) is not PREFIX's"

# --- 4. Proof: libcurl.so.4 from PREFIX/lib with PREFIX/lib searched first (as the rpath of the preset does)
# resolves every library and every symbol (ldd -r), and says which of them are PREFIX's.
ldd_out=$(LD_LIBRARY_PATH="$libdir" ldd -r "$libdir/libcurl.so.4" 2>&1)
if grep -qE 'not found|undefined symbol' <<<"$ldd_out"; then
  printf '%s\n' "$ldd_out" >&2
  die "libcurl.so.4 in $libdir does not resolve (above)"
fi
header_version=$(sed -nE 's/^#define LIBCURL_VERSION "([^"]+)".*/\1/p' "$prefix/include/curl/curlver.h")
[ "$header_version" = "$want" ] || die "curl/curlver.h says $header_version, not $want"
{
  for p in "${!chosen[@]}"; do echo "$p ${chosen[$p]}"; done | sort
  echo "libcurl4-openssl-dev $curl_version"
} >"$prefix/packages.txt"
say "$prefix: libcurl $want from $(paste -sd' ' <(cut -d' ' -f1 "$prefix/packages.txt"))"
from_prefix=$(grep -F "=> $libdir/" <<<"$ldd_out" | awk '{ print $1 }' | paste -sd' ' || true)
say "libraries libcurl.so.4 takes from PREFIX: ${from_prefix:-none, the system satisfies every dependency}"
