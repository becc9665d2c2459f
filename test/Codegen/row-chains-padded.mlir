// A value a chain's stage reads with padding (`e` shifted by one column,
// zero where the shift leaves the row) is checked, and a failed check
// loads offset 0 of the buffer and drops the value: offset 0 of a block's
// scratch pointer lies outside the block, so such a value keeps a buffer
// of its own. The row maxima and sums still live in scratch (8 bytes a
// row, not 8 + 128), and the result is the interpreter's, bit for bit.
// RUN: jitc explain %s | FileCheck %s
// RUN: %python %S/../jitc-run/Inputs/ramp-npy.py 64x32 %t.x.npy
// RUN: jitc run %s --math exact --input @%t.x.npy --output @%t.cpu.npy
// RUN: jitc run %s --backend interp --input @%t.x.npy --output @%t.interp.npy
// RUN: cmp %t.cpu.npy %t.interp.npy

func.func @main(%x: tensor<64x32xf32>) -> tensor<64x32xf32> {
  %max = "meta.reindex_reduce"(%x) {kind = "max", indices = affine_map<(i, j) -> (i)>}
         : (tensor<64x32xf32>) -> tensor<64xf32>
  %max_b = "meta.reindex"(%max) {indices = affine_map<(i, j) -> (i)>} : (tensor<64xf32>) -> tensor<64x32xf32>
  %shifted = "meta.binary"(%x, %max_b) {kind = "sub"} : (tensor<64x32xf32>, tensor<64x32xf32>) -> tensor<64x32xf32>
  %e = "meta.unary"(%shifted) {kind = "exp"} : (tensor<64x32xf32>) -> tensor<64x32xf32>
  %sum = "meta.reindex_reduce"(%e) {kind = "add", indices = affine_map<(i, j) -> (i)>}
         : (tensor<64x32xf32>) -> tensor<64xf32>
  %sum_b = "meta.reindex"(%sum) {indices = affine_map<(i, j) -> (i)>} : (tensor<64xf32>) -> tensor<64x32xf32>
  %e_left = "meta.reindex"(%e) {indices = affine_map<(i, j) -> (i, j - 1)>, overflow_value = 0.0 : f32}
            : (tensor<64x32xf32>) -> tensor<64x32xf32>
  %y = "meta.binary"(%e_left, %sum_b) {kind = "div"} : (tensor<64x32xf32>, tensor<64x32xf32>) -> tensor<64x32xf32>
  return %y : tensor<64x32xf32>
}

// CHECK: row chains on the cpu backend
// CHECK-NEXT: @main_fused_0_rows in @main runs @main_fused_0, @main_fused_1, @main_fused_2 one block of 64 of its 64 rows at a time: rows of 8 bytes stay in cache
