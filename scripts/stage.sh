#!/usr/bin/env bash
# Builds one CMake preset (default: dev) and installs the library into build/stage-<preset>: the header,
# libhumus_http.so, the CMake package and humus_http.pc. The Go and Rust bindings build against this prefix
# through pkg-config, as a user's program would against an installed package. Prints the prefix.
set -euo pipefail
cd "$(dirname "$0")/.."
preset="${1:-dev}"
prefix="$PWD/build/stage-$preset"
scripts/build.sh "$preset" >&2
cmake --install "build/$preset" --prefix "$prefix" >/dev/null
echo "$prefix"
