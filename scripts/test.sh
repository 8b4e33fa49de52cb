#!/usr/bin/env bash
# Runs every test suite: the C++ core and C ABI tests in a debug build, under AddressSanitizer+UBSan, and
# under ThreadSanitizer; every libFuzzer target for a few seconds (clang); then the Python package: its wheel
# built and repaired once (scripts/wheel.sh), installed, its pytest suite, that wheel in a fresh venv without
# a compiler (tests/wheel), and a one-minute soak (tests/soak); then the Go and Rust bindings against the
# installed library. Each language runs the conformance vectors (tests/vectors) through its own API and prints
# a line per vector. Installs missing system packages first.
set -euo pipefail
cd "$(dirname "$0")/.."

# Each stage's wall and CPU time (its processes' user+sys), printed at the end — also when a stage fails: CI
# has a budget, and on a shared machine the CPU time says what a stage costs when the wall time is inflated.
timings=()
stage_name="" stage_start=$SECONDS stage_cpu=0
ticks=$(getconf CLK_TCK)
children_cpu_seconds() {  # user+sys of every child this shell has waited for: cutime and cstime of its stat
  awk -v ticks="$ticks" '{ printf "%d", ($16 + $17) / ticks }' "/proc/$$/stat"
}
stage() {
  local cpu
  cpu=$(children_cpu_seconds)
  if [ -n "$stage_name" ]; then
    timings+=("$(printf '%5ds wall %5ds cpu  %s' $((SECONDS - stage_start)) $((cpu - stage_cpu)) "$stage_name")")
  fi
  stage_name="$1" stage_start=$SECONDS stage_cpu=$cpu
  if [ -n "$1" ]; then echo "=== $1"; fi
}
print_timings() {
  stage ""
  echo "=== time per stage (total ${SECONDS}s wall)"
  printf '%s\n' "${timings[@]}"
}
trap print_timings EXIT

stage "install: missing system and Python packages"
scripts/install-deps.sh

for preset in dev asan-ubsan tsan; do
  stage "${preset}: build"
  scripts/build.sh "$preset"
  stage "${preset}: test"
  ctest --preset "$preset"
done

stage "fuzz: every libFuzzer target of tests/fuzz for a few seconds (their corpora replay in ctest above)"
HUMUS_FUZZ_SECONDS=5 scripts/fuzz-ci.sh

# The Python suite tests what ships: the wheel scripts/wheel.sh builds once and repairs (libcurl, OpenSSL and
# nghttp2 inside it), installed over any earlier humus_http; then that same file in a fresh venv without a
# compiler (tests/wheel/check_wheel.py).
stage "python: build and repair the wheel (scripts/wheel.sh), install it, test it"
scripts/wheel.sh build/wheel
PIP_BREAK_SYSTEM_PACKAGES=1 python3 -m pip install --quiet --disable-pip-version-check --root-user-action=ignore \
  --force-reinstall --no-deps build/wheel/humus_http-*.whl
python3 -m pytest -q python/tests

stage "wheel: the repaired wheel in a fresh venv, no compiler on PATH, an HTTPS call through its own libcurl"
python3 tests/wheel/check_wheel.py build/wheel

stage "soak: the installed package through a fault-scheduled upstream, its invariants checked"
scripts/soak.sh --python python3 --selftest --duration 60

stage "go: the binding, go vet and go test -race"
scripts/test-go.sh

stage "rust: the -sys and safe crates, cargo test"
scripts/test-rust.sh
