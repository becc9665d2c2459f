// Without a CUDA driver, `--backend cuda` fails with one sentence, before
// compiling anything, and the CPU backend still runs the same program.
// UNSUPPORTED: cuda-driver
// RUN: not jitc run --backend cuda %s --input 4xf32=1 2>&1 | FileCheck %s
// RUN: jitc run --backend cpu %s --input 4xf32=1 | FileCheck %s --check-prefix=CPU
// RUN: not jitc bench --backend cuda %s --input 4xf32=1 2>&1 | FileCheck %s --check-prefix=BENCH
// CHECK: jitc run: error: no CUDA driver was found (libcuda.so is not installed), so the cuda backend cannot run; use --backend cpu
// CHECK-EMPTY:
// CPU: result[0]: 4xf32=2 2 2 2
// BENCH: jitc bench: error: no CUDA driver was found
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %y = "meta.binary"(%x, %x) {kind = "add"} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %y : tensor<4xf32>
}
