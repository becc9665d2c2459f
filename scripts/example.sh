#!/usr/bin/env bash
# Quick start, part 1: sets up, builds jitc, and runs the bundled convolution
# example (Listing 1 of the Jittor paper) in the reference interpreter on an
# all-ones image and all-halves weights: padding shows at the borders.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
echo "example: building jitc (the first build takes a few minutes)" >&2
cargo build --locked --quiet -p jitc
target_dir=${CARGO_TARGET_DIR:-target}
"$target_dir/debug/jitc" run examples/conv.mlir --input 2x3x5x5xf32=1 --input 4x3x3x3xf32=0.5
