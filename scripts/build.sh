#!/usr/bin/env bash
# Builds one CMake preset (default: dev) with the machine's two cores. HUMUS_UNITY_BUILD=1 (CI sets it in
# .ci/run) builds the core, the CLI and the test binary in unity batches, as the sanitizer presets do: less
# CPU time for a from-scratch build; a developer's incremental dev build stays file by file.
set -euo pipefail
cd "$(dirname "$0")/.."
preset="${1:-dev}"
unity=()
if [ -n "${HUMUS_UNITY_BUILD:-}" ]; then unity=(-DCMAKE_UNITY_BUILD=ON); fi
cmake --preset "$preset" "${unity[@]}" >/dev/null
cmake --build --preset "$preset"
