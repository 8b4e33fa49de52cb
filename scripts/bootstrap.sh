#!/usr/bin/env bash
# A newcomer's first command: installs what is missing, builds the library, and shows it working by running
# the C ABI's own checks (the demo joins here when the humus-http CLI lands).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh dev
ctest --preset dev -R '^capi\.' --output-on-failure
echo "built: build/dev/libhumus_http.so ($(ls build/dev/libhumus_http.so.* | head -n1 | xargs basename))"
