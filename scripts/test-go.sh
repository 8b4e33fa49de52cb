#!/usr/bin/env bash
# What CI runs for the Go binding (bindings/go): stages the library (scripts/stage.sh dev: the dev preset,
# installed into build/stage-dev), then, against that prefix through pkg-config as a user's program would,
# checks gofmt, runs go vet and `go test -race` — the conformance vectors, the integration tests against the
# local test server (tests/server, needs `python3 -m pip install -r tests/server/requirements.txt`), the leak
# check; the humushttp package twice, the second time with the test server's runtime on the netpoller
# (LoopOnNetpoller) — then does the same for the OpenTelemetry adapter (bindings/go/otelhumus, a module of its
# own whose go.mod replaces humushttp by the checkout; its dependencies come through Go's module download,
# GOPROXY and GOFLAGS as the environment sets them, checked against its committed go.sum). Go's caches stay
# in their default locations.
#
#   scripts/test-go.sh [go test flags...]        e.g. -run TestVectors
#
# Environment:
#   HUMUS_PREFIX=dir   use a library already installed there instead of running scripts/stage.sh dev
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

fail() {
  echo "test-go: $*" >&2
  exit 1
}

command -v go >/dev/null 2>&1 ||
  fail "the go command is missing: install Go >= 1.24 (https://go.dev/dl/) and put it on PATH"
command -v pkg-config >/dev/null 2>&1 || fail "pkg-config is missing (cgo finds libhumus_http through it)"
command -v python3 >/dev/null 2>&1 || fail "python3 is missing (the integration tests spawn tests/server)"

if [ -n "${HUMUS_PREFIX:-}" ]; then
  prefix=$HUMUS_PREFIX
else
  prefix=$(scripts/stage.sh dev | tail -n 1)
fi
[ -f "$prefix/lib/pkgconfig/humus_http.pc" ] || fail "no humus_http.pc under $prefix/lib/pkgconfig"

export PKG_CONFIG_PATH="$prefix/lib/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
libdir=$(pkg-config --variable=libdir humus_http)
export LD_LIBRARY_PATH="$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export CGO_ENABLED=1 # -race and the binding itself need cgo

cd "$root/bindings/go"
echo "test-go: $(go version), libhumus_http $(pkg-config --modversion humus_http) from $prefix"

unformatted=$(gofmt -l .) # bindings/go/otelhumus included
[ -z "$unformatted" ] || fail "not gofmt-formatted: $unformatted"
go vet ./...
# -v: every vector prints its "vector <name>: ok" line, as the C++ runner does.
go test -race -count=1 -p 2 -v "$@" ./...
# Again with the test server's runtime on the netpoller (RuntimeOptions.LoopOnNetpoller): every integration
# test then runs on a loop its goroutine drives, the other design of the Go boundary.
echo "test-go: again, the test server's runtime with LoopOnNetpoller"
HUMUSGO_TEST_LOOP=netpoller go test -race -count=1 -v "$@" ./humushttp

# The adapter module: ./... of bindings/go stops at its go.mod. The test flags given apply here too.
cd "$root/bindings/go/otelhumus"
go vet ./...
go test -race -count=1 -v "$@" ./...
