#!/usr/bin/env bash
# Builds one CMake preset (default: dev) with the machine's two cores.
set -euo pipefail
cd "$(dirname "$0")/.."
preset="${1:-dev}"
cmake --preset "$preset" >/dev/null
cmake --build --preset "$preset"
