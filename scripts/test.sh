#!/usr/bin/env bash
# Runs every test suite: the C++ core and C ABI tests in a debug build, under AddressSanitizer+UBSan, and
# under ThreadSanitizer; every libFuzzer target for a few seconds (clang); then the Python package: its wheel
# built and repaired once (scripts/wheel.sh), installed, its pytest suite, that wheel in a fresh venv without
# a compiler (tests/wheel), and a one-minute soak (tests/soak); then the Go and Rust bindings against the
# installed library. Each language runs the conformance vectors (tests/vectors) through its own API and prints
# a line per vector. Installs what is missing first (scripts/install-deps.sh); every Python step runs in the
# project's virtual environment build/venv (scripts/dev-env.sh puts it first on PATH), not the system's.
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
# Builds in the background (below): their process groups, ended if this script stops before it waits for them.
background_pids=()
stop_background() {
  local pid
  for pid in "${background_pids[@]}"; do kill -- "-$pid" 2>/dev/null || true; done
}
trap 'print_timings; stop_background' EXIT

stage "install: missing system packages, toolchains and build/venv's Python packages"
scripts/install-deps.sh
. scripts/dev-env.sh

# Two builds that no test stage needs, the fuzz preset's (clang) and the wheel's (scripts/wheel.sh, GCC
# Release), start here in the background at idle scheduling priority (chrt --idle 0): the kernel runs them
# only on a core that nothing else wants and preempts them as soon as a build or a test does, so they take
# the third or so of the two cores the test stages leave unused instead of adding their time after them, and
# no test waits for a core because of them. The fuzz and python stages wait for them (their CPU time counts
# there) and print their output. background NAME COMMAND...: output in build/ci-NAME.log, pid in
# background_NAME.
background() {
  local name=$1
  shift
  mkdir -p build
  setsid -w chrt --idle 0 bash -c 'TIMEFORMAT="$0: %0Rs wall, %0Us user, %0Ss sys"; time "$@"' "$name" "$@" \
    >"build/ci-$name.log" 2>&1 &
  background_pids+=($!)
  printf -v "background_$name" %s $!
}
await_background() {  # NAME: waits for it, prints its output, fails as it failed
  local pid_var="background_$1" rc=0
  wait "${!pid_var}" || rc=$?
  cat "build/ci-$1.log"
  return $rc
}
background fuzz_build bash -c 'cmake --preset fuzz >/dev/null && cmake --build --preset fuzz'
# A packager's build type, GCC -O2 -g with the tests (issue 39): built only, its code is the other presets'.
# File by file, as a packager builds, not in unity batches: the only build that finds a file missing an
# include a batch neighbour supplies (tests/transport/free_on_loop_test.cc was one), for about a quarter more
# CPU than batches, taken at idle priority.
background relwithdebinfo_build env -u HUMUS_UNITY_BUILD scripts/build.sh relwithdebinfo
# The Python module with warnings as errors too (HUMUS_WERROR: off for a packager's plain build).
background wheel env SKBUILD_CMAKE_ARGS=-DHUMUS_WERROR=ON scripts/wheel.sh build/wheel

for preset in dev asan-ubsan tsan; do
  stage "${preset}: build"
  scripts/build.sh "$preset"
  stage "${preset}: test"
  ctest --preset "$preset"
done

# GCC above -O0 (issue 39): some of its warnings come only from optimised code (inlining), and the tests run
# against the -O3 library (about 80 s). The CLI's pytest files (minutes), the install, docs and
# fault-catalogue checks and the netns faults run in the dev build only, to keep this stage to a few minutes.
stage "release: GCC -O3 build with tests and benchmarks (warnings are errors), its unit and wire tests"
scripts/build.sh release
ctest --preset release -E '^(cli|install|docs|faults)\.|^NetnsFaultTest\.'

stage "relwithdebinfo: GCC -O2 -g with tests, file by file, warnings as errors (built in the background)"
await_background relwithdebinfo_build

# Users of the bindings link whatever libcurl their system has (issue 35): the wire suites run again against
# Debian's libcurl 8.14.1, unpacked from bookworm-backports into build/libcurl-8.14 (an apt source is added,
# nothing installed: scripts/libcurl-backports.sh), built by the preset curl814 (Debug, only the test binary
# and the CLI) with an rpath to that prefix. First the proof that the binaries load that libcurl and no other.
stage "libcurl 8.14: the wire suites against Debian's backported libcurl"
scripts/libcurl-backports.sh build/libcurl-8.14
scripts/build.sh curl814
curl814_lib=$(readlink -f build/libcurl-8.14/lib/libcurl.so.4)
for binary in build/curl814/tests/humus_tests build/curl814/cli/humus-http; do
  loaded=$(ldd "$binary" | awk '$1 == "libcurl.so.4" { print $3 }')
  echo "$binary: libcurl.so.4 => $loaded"
  if [ "$(readlink -f "$loaded")" != "$curl814_lib" ]; then
    echo "libcurl 8.14: $binary loads $loaded, not build/libcurl-8.14's" >&2
    exit 1
  fi
done
build/curl814/cli/humus-http --version | grep -x 'libcurl 8\.14\.1'
# The suites by their gtest names (gtest_discover_tests names each test Suite.Test): hostile HTTP/1 peers, the
# HTTP/2 peers (h2 and hand-made frames), TLS peers, wire faults, the test server's faults, and connection
# lifetimes (a busy HTTP/2 connection's rests on what nghttp2 is asked through libcurl).
ctest --preset curl814 --no-tests=error \
  -R '^(HostilePeerTest|H2FaultPeerTest|H2HostilePeerTest|TlsPeerTest|WireFaultTest|ServerFaultTest|ConnectionLifetime|BusyConnectionLifetime)\.'

stage "fuzz: every libFuzzer target of tests/fuzz for a few seconds (their corpora replay in ctest above)"
await_background fuzz_build  # then fuzz-ci.sh finds the preset built
HUMUS_FUZZ_SECONDS=5 scripts/fuzz-ci.sh

# The Python suite tests what ships: the wheel scripts/wheel.sh builds once and repairs (libcurl, OpenSSL and
# nghttp2 inside it), installed into build/venv over any earlier humus_http; then that same file in a fresh
# venv without a compiler (tests/wheel/check_wheel.py).
stage "python: the wheel (scripts/wheel.sh, built and repaired in the background), installed and tested"
await_background wheel
build/venv/bin/python -m pip install --quiet --disable-pip-version-check --force-reinstall --no-deps \
  build/wheel/humus_http-*.whl
build/venv/bin/python -m pytest -q python/tests

stage "wheel: the repaired wheel in a fresh venv, no compiler on PATH, an HTTPS call through its own libcurl"
build/venv/bin/python tests/wheel/check_wheel.py build/wheel

stage "soak: the installed package through a fault-scheduled upstream, its invariants checked, HTTP/1.1 then HTTP/2"
scripts/soak.sh --python build/venv/bin/python --selftest --duration 60
scripts/soak.sh --python build/venv/bin/python --http2 --duration 60

stage "go: the binding, go vet and go test -race"
scripts/test-go.sh

stage "rust: the -sys and safe crates, cargo test"
scripts/test-rust.sh
