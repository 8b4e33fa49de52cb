#!/usr/bin/env bash
# A newcomer's first command: installs what is missing (scripts/install-deps.sh: system packages, Go and Rust
# when missing or too old, the Python test packages into build/venv), builds the library and the humus-http
# CLI, runs the C ABI checks, then the demo: a client riding out an outage of a built-in local upstream (about
# 30 s; arguments go to the demo, e.g. --duration 8 or --plot timeline.svg).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
. scripts/dev-env.sh
scripts/build.sh dev
ctest --preset dev -R '^capi\.' --output-on-failure
echo "built: build/dev/libhumus_http.so ($(ls build/dev/libhumus_http.so.* | head -n1 | xargs basename))"
build/dev/cli/humus-http demo "$@"
