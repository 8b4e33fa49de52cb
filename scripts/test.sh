#!/usr/bin/env bash
# Runs every test suite: the C++ core and C ABI tests in a debug build, under AddressSanitizer+UBSan, and
# under ThreadSanitizer; every libFuzzer target for a few seconds (clang); then the Python package, built with
# pip, its pytest suite and a one-minute soak (tests/soak); then the Go and Rust bindings against the installed
# library. Each language runs the conformance vectors (tests/vectors) through its own API and prints a line
# per vector. Installs missing system packages first.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh

for preset in dev asan-ubsan tsan; do
  echo "=== ${preset}: build"
  scripts/build.sh "$preset"
  echo "=== ${preset}: test"
  ctest --preset "$preset"
done

echo "=== fuzz: every libFuzzer target of tests/fuzz for a few seconds (their corpora replay in ctest above)"
HUMUS_FUZZ_SECONDS=5 scripts/fuzz-ci.sh

echo "=== python: build the package and test it"
PIP_BREAK_SYSTEM_PACKAGES=1 CMAKE_BUILD_PARALLEL_LEVEL=2 python3 -m pip install --quiet --disable-pip-version-check \
  --root-user-action=ignore .
python3 -m pytest -q python/tests

echo "=== soak: the installed package through a fault-scheduled upstream, its invariants checked"
scripts/soak.sh --python python3 --selftest --duration 60

echo "=== go: the binding, go vet and go test -race"
scripts/test-go.sh

echo "=== rust: the -sys and safe crates, cargo test"
scripts/test-rust.sh
