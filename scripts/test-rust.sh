#!/usr/bin/env bash
# What CI runs for the Rust binding (bindings/rust, docs/bindings.md §17.4): stages the dev build of the library
# (scripts/stage.sh: build/dev installed into build/stage-dev), then builds and tests both crates against it
# through pkg-config, as a user's crate would build against the installed library: rustfmt's check, cargo
# test (unit tests, the conformance vectors, integration tests against tests/server/, a built example run
# without LD_LIBRARY_PATH), and clippy when it is installed, each with every cargo feature (json, http) on;
# the crate is also built with none, as a user's default build is. Cargo's output goes to build/rust-target,
# so the source tree stays clean.
#
# Environment:
#   HUMUS_PREFIX=dir   use a library already installed there instead of running scripts/stage.sh dev
#                      (as scripts/test-go.sh does)
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v cargo >/dev/null 2>&1; then
  echo "test-rust.sh: cargo is not installed: install a Rust toolchain (https://rustup.rs, 1.77 or later)" >&2
  exit 1
fi

if [[ -n "${HUMUS_PREFIX:-}" ]]; then
  prefix="$HUMUS_PREFIX"
else
  prefix="$(scripts/stage.sh dev)"
fi
# GNUInstallDirs may choose lib64 or lib/<multiarch> for the prefix: take whichever holds humus_http.pc.
pc_dir="$(dirname "$(find "$prefix" -name humus_http.pc -print -quit)")"
if [[ ! -f "$pc_dir/humus_http.pc" ]]; then
  echo "test-rust.sh: no humus_http.pc under $prefix" >&2
  exit 1
fi
export PKG_CONFIG_PATH="$pc_dir${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
export CARGO_TARGET_DIR="$PWD/build/rust-target"
export CARGO_BUILD_JOBS=2

cd bindings/rust
if cargo fmt --version >/dev/null 2>&1; then
  echo "=== rust: cargo fmt --check"
  cargo fmt --all --check
fi
echo "=== rust: cargo test (all features)"
cargo test --locked --all-features
echo "=== rust: cargo build (no optional feature)"
cargo build --locked
if cargo clippy --version >/dev/null 2>&1; then
  echo "=== rust: cargo clippy"
  cargo clippy --locked --all-targets --all-features -- -D warnings
  cargo clippy --locked --all-targets -- -D warnings
else
  echo "=== rust: clippy is not installed: skipped"
fi
# Broken intra-doc links are warnings to rustdoc: refused here, so the crate's documentation stays whole.
echo "=== rust: cargo doc (broken links refused)"
RUSTDOCFLAGS="-D warnings" cargo doc --locked --no-deps --all-features
