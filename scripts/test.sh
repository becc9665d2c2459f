#!/usr/bin/env bash
# Quick start, part 2: sets up, then runs every check and test: formatting,
# clippy, the architecture invariants (scripts/check-architecture.sh), cargo
# test, the lit suite with LLVM 22's lit and FileCheck, the Python package's
# tests (pytest), the NumPy cross-checks of the interpreter and of compiled
# code, and the fuzz smoke
# (scripts/fuzz.sh: every libFuzzer target for a fixed, seeded number of runs).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh

step() { echo "==> $*" >&2; }

# Every test process shares one fresh disk cache of compiled code, so no
# run reads what an earlier one left, and ~/.cache/jitc is left alone.
cache_dir=$(mktemp -d)
export JITC_CACHE_DIR="$cache_dir"
log=
trap 'rm -rf "$cache_dir" ${log:+"$log"}' EXIT

step "cargo fmt --check"
cargo fmt --all -- --check
cargo fmt --manifest-path python/Cargo.toml -- --check

step "cargo clippy --all-targets -- -D warnings"
cargo clippy --locked --workspace --all-targets --quiet -- -D warnings
PYO3_PYTHON="$PWD/.venv/bin/python" cargo clippy --locked --manifest-path python/Cargo.toml --quiet -- -D warnings

step "architecture invariants"
bash scripts/check-architecture.sh

step "cargo test"
cargo test --locked --workspace

step "lit test/"
# `cargo test` above built target/debug/jitc for the CLI tests; a separate
# `cargo build -p jitc` would resolve features differently and rebuild.
target_dir=${CARGO_TARGET_DIR:-target}
log=$(mktemp)
status=0
JITC_BIN_DIR="$target_dir/debug" /usr/lib/llvm-22/bin/lit -v test/ 2>&1 | tee "$log" || status=$?
passed=$(sed -n 's/^ *Passed *: *\([0-9]*\).*/\1/p' "$log")
failed=$(sed -n 's/^ *Failed *: *\([0-9]*\).*/\1/p' "$log")
echo "lit: ${passed:-0} passed, ${failed:-0} failed"
if [ "$status" -ne 0 ]; then exit "$status"; fi

step "python tests (pytest)"
JITC_BIN_DIR="$target_dir/debug" .venv/bin/python -m pytest -q python/tests

step "numpy cross-check of the interpreter"
.venv/bin/python test/numpy/crosscheck.py "$target_dir/debug/jitc" --backend interp

step "numpy cross-check of compiled code"
.venv/bin/python test/numpy/crosscheck.py "$target_dir/debug/jitc" --backend cpu --cases 100

step "fuzz smoke"
bash scripts/fuzz.sh smoke
