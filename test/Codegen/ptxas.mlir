// The PTX of every example and of the GPU cases of test/Codegen (the row
// chains with and without --jittor-rules, contractions as tiles and with --no-gpu-tiles), for sm_80 and sm_90 in both math modes, assembles with NVIDIA's ptxas (CUDA 12.9,
// from the PyPI wheel nvidia-cuda-nvcc-cu12 that scripts/setup.sh
// installs into .venv): no GPU is needed, and a rejected PTX fails the test
// with ptxas's message.
// RUN: %ptxas --version | FileCheck %s --check-prefix=VERSION
// RUN: %python %S/Inputs/ptxas-all.py %ptxas %examples/conv.mlir %examples/indrnn.mlir %examples/instance_norm.mlir %examples/matmul.mlir %examples/mlp.mlir %examples/mlp_step.mlir %examples/rnn.mlir %examples/sigmoid.mlir %examples/softmax.mlir %S/nvptx-reductions.mlir %S/nvptx-coarsen.mlir %S/nvptx-fast-math.mlir %S/nvptx-dynamic.mlir %S/nvptx-row-chains.mlir %S/nvptx-row-chains.mlir::--jittor-rules %S/nvptx-tiles.mlir %S/nvptx-tiles.mlir::--no-gpu-tiles %examples/mlp_step.mlir::--no-gpu-tiles | FileCheck %s

// VERSION: Cuda compilation tools, release 12.9

// CHECK-DAG: ok conv.mlir sm_80 fast: 1 entries
// CHECK-DAG: ok mlp_step.mlir sm_90 exact:
// CHECK-DAG: ok nvptx-reductions.mlir sm_90 fast:
// CHECK-DAG: ok nvptx-coarsen.mlir sm_90 fast: 3 entries
// The GPU row chain (fast math only): the stages' five entries and the
// chain's; with exact math or --jittor-rules there is no chain.
// CHECK-DAG: ok nvptx-row-chains.mlir sm_90 fast: 6 entries
// CHECK-DAG: ok nvptx-row-chains.mlir sm_80 exact: 4 entries
// CHECK-DAG: ok nvptx-row-chains.mlir --jittor-rules sm_90 fast: 5 entries
// Kernels that read tensors of dynamic shape (IndRNN's projection; the
// window, the two-input kernel, a reduction with a fill entry and a split
// one with scratch memory), their sizes passed by value.
// CHECK-DAG: ok indrnn.mlir sm_90 fast: 3 entries
// CHECK-DAG: ok nvptx-dynamic.mlir sm_80 fast: 5 entries
// Contractions as shared-memory tiles (the default): the bench's matmul
// and convolution, a matmul too small to tile, and the MLP step's five;
// and the same with one thread per output (--no-gpu-tiles).
// CHECK-DAG: ok nvptx-tiles.mlir sm_80 fast: 3 entries
// CHECK-DAG: ok nvptx-tiles.mlir sm_90 exact: 3 entries
// CHECK-DAG: ok nvptx-tiles.mlir --no-gpu-tiles sm_90 fast: 3 entries
// CHECK-DAG: ok mlp_step.mlir --no-gpu-tiles sm_90 fast:
// CHECK: 72 passed, 0 failed
