#!/usr/bin/env bash
# Runs the soak (tests/soak/README.md): the Python package at full speed against a fault-scheduled loopback
# upstream, then its invariants. Exits non-zero if any fails.
#
#   scripts/soak.sh [--duration S] [--seed N] [--python PY] [--selftest] [--http2]
#
# By default the package is built from this checkout into a virtual environment of its own (SOAK_VENV,
# default build/soak-venv, with the test server's and the tests' pinned requirements), so it replaces no other
# humus_http and leaves the system's Python untouched. --python PY uses an interpreter that already has
# humus_http and the test server's packages (scripts/test.sh: build/venv's) and installs nothing. --selftest
# also runs tests/soak/test_soak_selftest.py first.
# --http2 (or --protocol h2): the upstream speaks HTTP/2 over TLS and injects HTTP/2's own faults.
set -euo pipefail
cd "$(dirname "$0")/.."

duration=90
seed=1
python=""
selftest=0
protocol=http1
while [ $# -gt 0 ]; do
  case "$1" in
    --duration) duration="$2"; shift 2 ;;
    --duration=*) duration="${1#*=}"; shift ;;
    --seed) seed="$2"; shift 2 ;;
    --seed=*) seed="${1#*=}"; shift ;;
    --python) python="$2"; shift 2 ;;
    --python=*) python="${1#*=}"; shift ;;
    --selftest) selftest=1; shift ;;
    --http2) protocol=h2; shift ;;
    --protocol) protocol="$2"; shift 2 ;;
    --protocol=*) protocol="${1#*=}"; shift ;;
    -h|--help) sed -n '2,12p' "$0"; exit 0 ;;
    *) echo "soak.sh: unknown argument: $1" >&2; exit 2 ;;
  esac
done

if [ -z "$python" ]; then
  venv="${SOAK_VENV:-build/soak-venv}"
  if [ ! -x "$venv/bin/python" ]; then
    python3 -m venv "$venv"
  fi
  echo "=== soak: build the package into $venv"
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check \
    -r tests/server/requirements.txt -r python/requirements-test.txt
  CMAKE_BUILD_PARALLEL_LEVEL="${CMAKE_BUILD_PARALLEL_LEVEL:-2}" "$venv/bin/python" -m pip install --quiet \
    --disable-pip-version-check .
  python="$venv/bin/python"
fi

if [ "$selftest" = 1 ]; then
  echo "=== soak: self-test"
  "$python" -m pytest -q tests/soak/test_soak_selftest.py
fi

echo "=== soak: ${duration}s, $protocol"
exec "$python" tests/soak/soak.py --duration "$duration" --seed "$seed" --protocol "$protocol"
