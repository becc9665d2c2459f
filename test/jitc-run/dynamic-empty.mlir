// A kernel over a static domain that reads an argument of dynamic shape
// through a reindex takes the overflow value where an index is past the
// argument's size: with an empty argument, everywhere. The bounds-checked
// mode once reported that read (at offset 0 of no elements) as a compiler
// bug; it checks only the reads whose indices are in bounds, and the
// kernel reads nothing of the empty buffer.
// RUN: jitc run %s --backend cpu --input "0x4xf32=" | FileCheck %s
// RUN: jitc run %s --backend cpu --check-bounds --input "0x4xf32=" | FileCheck %s
// RUN: jitc run %s --backend interp --input "0x4xf32=" | FileCheck %s
// CHECK: result[0]: 3x4xf32=[1 1 1 1][1 1 1 1][1 1 1 1]
// Rows 1 and 2 of a 2-row argument: row 2 is past it (exp(0) = 1).
// RUN: jitc run %s --backend cpu --check-bounds --input "2x4xf32=0 0 0 0 1 1 1 1" | FileCheck %s --check-prefix=TWO
// RUN: jitc run %s --backend interp --input "2x4xf32=0 0 0 0 1 1 1 1" | FileCheck %s --check-prefix=TWO
// TWO: result[0]: 3x4xf32=[2.7182817 2.7182817 2.7182817 2.7182817][1 1 1 1][1 1 1 1]

func.func @main(%x: tensor<?x4xf32>) -> tensor<3x4xf32> {
  %w = "meta.reindex"(%x) {indices = affine_map<(i, j) -> (i + 1, j)>} : (tensor<?x4xf32>) -> tensor<3x4xf32>
  %e = "meta.unary"(%w) {kind = "exp"} : (tensor<3x4xf32>) -> tensor<3x4xf32>
  return %e : tensor<3x4xf32>
}
