#!/usr/bin/env bash
# The installed package works for a C user: installs BUILD_DIR into a temporary prefix, builds
# bindings/c/examples/get.c (a) with pkg-config and (b) with CMake's find_package(humus_http), and runs both
# against the test server's https listener (HTTP/2, the test CA, a resolve override), expecting status 200;
# then runs the other examples (b) built (async, classify, stream, dlopen) and the example plugin through the
# installed CLI, each against the test server with its output checked.
#
#   check_install.sh BUILD_DIR SOURCE_DIR [CERTS_DIR]
#
# CERTS_DIR defaults to BUILD_DIR/tests/test-certs (the C++ harness's). $CC picks the compiler (default cc),
# $HUMUS_TEST_PYTHON the interpreter for the test server (default python3).
set -euo pipefail

if [[ $# -lt 2 || $# -gt 3 ]]; then
  echo "usage: $0 BUILD_DIR SOURCE_DIR [CERTS_DIR]" >&2
  exit 2
fi
build=$(cd "$1" && pwd)
src=$(cd "$2" && pwd)
certs=${3:-$build/tests/test-certs}
python=${HUMUS_TEST_PYTHON:-python3}
cc=${CC:-cc}

work=$(mktemp -d "${TMPDIR:-/tmp}/humus-install-check.XXXXXX")
trap 'rm -rf "$work"' EXIT
prefix=$work/prefix

step() { echo "== $*"; }
die() {
  echo "check_install: FAILED: $*" >&2
  exit 1
}

step "cmake --install $build --prefix $prefix"
cmake --install "$build" --prefix "$prefix"

# GNUInstallDirs may have chosen lib or lib/<multiarch>: the directory holding pkgconfig/humus_http.pc is it.
mapfile -t pcs < <(find "$prefix" -path '*/pkgconfig/humus_http.pc')
[[ ${#pcs[@]} -eq 1 ]] || die "expected one pkgconfig/humus_http.pc under $prefix, found ${#pcs[@]}"
pcdir=$(dirname "${pcs[0]}")
libdir=$(dirname "$pcdir")
[[ -e $libdir/libhumus_http.so ]] || die "libhumus_http.so is not in $libdir, beside pkgconfig/"
[[ -f $libdir/cmake/humus_http/humus_http-config.cmake ]] || die "no humus_http-config.cmake in $libdir/cmake"
[[ -f $prefix/include/humus_http.h ]] || die "no $prefix/include/humus_http.h"
echo "libdir: ${libdir#"$prefix"/}"

# The .pc file must point into the prefix it was installed to, not the prefix configured at build time.
pkg_config() { PKG_CONFIG_PATH=$pcdir pkg-config "$@"; }
pc_libdir=$(pkg_config --variable=libdir humus_http)
pc_includedir=$(pkg_config --variable=includedir humus_http)
[[ $(realpath -m "$pc_libdir") == "$(realpath "$libdir")" ]] ||
  die "humus_http.pc has libdir=$pc_libdir, but the library is in $libdir (the .pc file ignores --prefix)"
[[ $(realpath -m "$pc_includedir") == "$(realpath "$prefix/include")" ]] ||
  die "humus_http.pc has includedir=$pc_includedir, but the header is installed in $prefix/include"

step "(a) $cc get.c \$(pkg-config --cflags --libs humus_http)"
# shellcheck disable=SC2046  # the flags are meant to split
"$cc" -std=c99 -Wall -Wextra -pedantic -Werror -o "$work/get-pkgconfig" "$src/bindings/c/examples/get.c" \
  $(pkg_config --cflags --libs humus_http)

step "(b) cmake bindings/c/examples -DCMAKE_PREFIX_PATH=$prefix"
generator=()
if command -v ninja >/dev/null; then generator=(-G Ninja); fi
cmake -S "$src/bindings/c/examples" -B "$work/cmake-build" "${generator[@]}" -DCMAKE_BUILD_TYPE=Debug \
  -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_C_FLAGS=-Werror -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF
found=$(sed -n 's/^humus_http_DIR:PATH=//p' "$work/cmake-build/CMakeCache.txt")
[[ $(realpath -m "$found") == "$(realpath "$libdir/cmake/humus_http")" ]] ||
  die "find_package(humus_http) found $found, not the package installed in $libdir/cmake/humus_http"
cmake --build "$work/cmake-build"

for bin in "$work/get-pkgconfig" "$work/cmake-build/get"; do
  name=${bin#"$work"/}
  step "run $name against the test server (https, --ca, --resolve)"
  loaded=$(LD_LIBRARY_PATH=$libdir ldd "$bin" | awk '$1 ~ /^libhumus_http\.so/ {print $3}')
  [[ $(realpath -m "$loaded") == "$(realpath "$libdir")"/libhumus_http.so.* ]] ||
    die "$name loads libhumus_http from '${loaded:-nowhere}', not $libdir"
  rc=0
  out=$(LD_LIBRARY_PATH=$libdir "$python" "$src/tests/capi/run_with_server.py" --certs "$certs" -- "$bin" \
    '{https}/install-check' --ca '{ca}' --resolve 'payments:{https_port}:127.0.0.1:{https_port}') || rc=$?
  printf '%s\n' "$out"
  [[ $rc -eq 0 ]] || die "$name exited with $rc"
  grep -qx 'status: 200' <<<"$out" || die "$name did not print 'status: 200'"
  grep -q '"path": "/install-check"' <<<"$out" || die "$name did not print the server's echo of the request"
done

# The other examples, built by the same CMake project against the installed package, each run against the
# test server with its output checked (as ctest's c_examples.* do in the build tree).
with_server() { LD_LIBRARY_PATH=$libdir "$python" "$src/tests/capi/run_with_server.py" --certs "$certs" "$@"; }
ex=$work/cmake-build
step "run async, classify, stream and dlopen (installed package)"
with_server --script '/teapot=[{"status": 418}]' --expect '^/teapot: status 418' --expect '^calls: 2$' \
  -- "$ex/async" '{http}' /teapot /fast || die "async failed"
with_server --script '/ledger=[{"status": 409}, {"status": 200}]' --expect '^attempts: 2$' \
  -- "$ex/classify" '{http}' /ledger || die "classify failed"
with_server --expect '"body_size": 70000' -- "$ex/stream" '{http}' /upload 70000 || die "stream failed"
with_server --expect '^dlopen: ok$' -- "$ex/dlopen" "$libdir/libhumus_http.so.1" '{http}' || die "dlopen failed"

# The plugin, built against the installed header only, loaded by the installed CLI from a settings file.
step "humus-http --settings naming the plugin built against the installed package"
plugin=$(find "$ex" -name 'libretry_409_plugin.so' | head -n 1)
[[ -n $plugin ]] || die "the examples' build made no libretry_409_plugin.so"
printf '{"backoff_base": "1ms", "backoff_max": "5ms", "classify": {"plugin": "%s", "symbol": "retry_409_classifier"}}' \
  "$plugin" >"$work/plugin-settings.json"
with_server --script '/ledger=[{"status": 409}, {"status": 200}]' --expect '^200 2$' \
  -- "$prefix/bin/humus-http" '{http}/ledger' --settings "$work/plugin-settings.json" -s -o /dev/null \
  -w '%{http_code} %{attempts}\n' || die "the installed CLI did not retry the 409 through the plugin"

echo "install check: ok"
