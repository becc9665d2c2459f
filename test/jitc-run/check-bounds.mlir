// --check-bounds checks every element load and store of the compiled
// kernels against its buffer's extent (a failed check is a compiler bug,
// reported with the op, the buffer and the offset). Correct kernels give
// the same results with and without it: the padded convolution (reindex
// with bounds checks and a peeled interior), a softmax (reductions in
// registers) and a matmul (a reduction over a broadcast).
// RUN: jitc run %examples/conv.mlir --input 2x3x5x5xf32=1 --input 4x3x3x3xf32=1 | FileCheck %s --check-prefix=CONV
// RUN: jitc run %examples/conv.mlir --check-bounds --input 2x3x5x5xf32=1 --input 4x3x3x3xf32=1 | FileCheck %s --check-prefix=CONV
// CONV: result[0]: 2x4x5x5xf32=[{{\[}}[12 18 18 18 12][18 27 27 27 18][18 27 27 27 18][18 27 27 27 18][12 18 18 18 12]]
// RUN: jitc run %examples/softmax.mlir --check-bounds --math exact --input 4x8xf32=1 | FileCheck %s --check-prefix=SOFTMAX
// SOFTMAX: result[0]: 4x8xf32=[0.125 0.125 0.125 0.125 0.125 0.125 0.125 0.125]
// RUN: jitc run %examples/matmul.mlir --check-bounds --input "4x3xf32=1 2 3 4 5 6 7 8 9 10 11 12" --input "3x5xf32=1 0 0 0 1 0 1 0 0 1 0 0 1 0 1" | FileCheck %s --check-prefix=MATMUL
// MATMUL: result[0]: 4x5xf32=[1 2 3 0 6][4 5 6 0 15][7 8 9 0 24][10 11 12 0 33]

// jitc bench takes the flag too.
// RUN: jitc bench %examples/sigmoid.mlir --check-bounds --input 1024xf32=0 --warmup 0 --repetitions 1 | FileCheck %s --check-prefix=BENCH
// BENCH: function: @main (cpu backend)

// A division by zero is still reported as one.
// RUN: not jitc run %s --check-bounds --input "4xi32=7 -7 1 2" --input "4xi32=2 2 0 -1" 2>&1 | FileCheck %s --check-prefix=DIV
// DIV: jitc run: error: 'meta.binary' at line [[# @LINE + 4]]: integer division by zero
// RUN: jitc run %s --check-bounds --input "4xi32=7 -7 1 2" --input "4xi32=2 2 3 -1" | FileCheck %s --check-prefix=OK
// OK: result[0]: 4xi32=3 -3 0 -2
func.func @main(%a: tensor<4xi32>, %b: tensor<4xi32>) -> tensor<4xi32> {
  %q = "meta.binary"(%a, %b) {kind = "div"} : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi32>
  return %q : tensor<4xi32>
}
