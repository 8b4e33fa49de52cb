#!/usr/bin/env bash
# Runs every test suite: the C++ core and C ABI tests in a debug build, under AddressSanitizer+UBSan, and
# under ThreadSanitizer. Installs missing system packages first.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh

for preset in dev asan-ubsan tsan; do
  echo "=== ${preset}: build"
  scripts/build.sh "$preset"
  echo "=== ${preset}: test"
  ctest --preset "$preset"
done
