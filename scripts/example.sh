#!/usr/bin/env bash
# Quick start, part 1: sets up, builds jitc, and runs it on the bundled
# convolution example (Listing 1 of the Jittor paper), printing verified IR.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
echo "example: building jitc (the first build takes a few minutes)" >&2
cargo build --locked --quiet -p jitc
target_dir=${CARGO_TARGET_DIR:-target}
"$target_dir/debug/jitc" opt examples/conv.mlir --meta-cse --meta-dce
