#!/usr/bin/env bash
# Installs every system package jitc needs on Debian 12: LLVM/MLIR 22 (with
# lit and FileCheck) and the libraries its build links, then a Python venv
# (.venv) with NumPy for the cross-check, and the Python package `jitc`
# built into it (scripts/python.sh). Idempotent, and quiet when everything
# is already there.
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(
  llvm-22-dev libmlir-22-dev mlir-22-tools llvm-22-tools clang-22 libpolly-22-dev
  libzstd-dev zlib1g-dev libxml2-dev libz3-dev
  g++ python3 python3-venv
)

missing=()
for package in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$package")
  fi
done

if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}" >&2
  sudo=()
  if [ "$(id -u)" -ne 0 ]; then sudo=(sudo); fi
  "${sudo[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

if ! command -v cargo >/dev/null 2>&1; then
  echo "setup: error: cargo is not on PATH; jitc needs Rust 1.95 or newer (rustup)" >&2
  exit 1
fi
if [ ! -x /usr/lib/llvm-22/bin/mlir-opt ] || [ ! -x /usr/lib/llvm-22/bin/lit ]; then
  echo "setup: error: LLVM/MLIR 22 is not complete under /usr/lib/llvm-22 after installing" >&2
  exit 1
fi

# NumPy for test/numpy/crosscheck.py, in a venv of Debian's Python.
if ! .venv/bin/python -c 'import numpy' >/dev/null 2>&1; then
  echo "setup: creating .venv with numpy" >&2
  rm -rf .venv
  /usr/bin/python3 -m venv .venv
  .venv/bin/pip install --quiet --disable-pip-version-check 'numpy>=1.26,<3'
fi

# NVIDIA's PTX assembler, ptxas, from PyPI (nvidia-cuda-nvcc-cu12: the
# assembler alone, no driver, no GPU), linked as .venv/bin/ptxas: the test
# suite assembles the PTX jitc emits for sm_80 and sm_90 on every run.
if ! [ -x .venv/bin/ptxas ]; then
  echo "setup: installing ptxas (nvidia-cuda-nvcc-cu12) into .venv" >&2
  .venv/bin/pip install --quiet --disable-pip-version-check 'nvidia-cuda-nvcc-cu12==12.9.*'
  ptxas=$(.venv/bin/python -c 'import glob, sysconfig; print(*glob.glob(sysconfig.get_paths()["purelib"] + "/nvidia/cuda_nvcc/bin/ptxas"))')
  if [ -z "$ptxas" ]; then
    echo "setup: error: nvidia-cuda-nvcc-cu12 installed no ptxas" >&2
    exit 1
  fi
  ln -sf "$ptxas" .venv/bin/ptxas
fi

# The Python package `jitc` (python/), built and installed into the venv.
bash scripts/python.sh
