// Row chains on the CPU keep a scratch row of up to 128 KiB
// (rows::SCRATCH_BYTES); the GPU's 48 KiB of shared memory bounds GPU
// chains only. Softmax over rows of 16384 f32: each row's exponentials
// take 64 KiB, so a block is one row, and the chain is made.
// RUN: jitc explain %s | FileCheck %s

func.func @main(%x: tensor<64x16384xf32>) -> tensor<64x16384xf32> {
  %max = "meta.reindex_reduce"(%x) {kind = "max", indices = affine_map<(i, j) -> (i)>}
         : (tensor<64x16384xf32>) -> tensor<64xf32>
  %max_b = "meta.reindex"(%max) {indices = affine_map<(i, j) -> (i)>} : (tensor<64xf32>) -> tensor<64x16384xf32>
  %shifted = "meta.binary"(%x, %max_b) {kind = "sub"} : (tensor<64x16384xf32>, tensor<64x16384xf32>) -> tensor<64x16384xf32>
  %e = "meta.unary"(%shifted) {kind = "exp"} : (tensor<64x16384xf32>) -> tensor<64x16384xf32>
  %sum = "meta.reindex_reduce"(%e) {kind = "add", indices = affine_map<(i, j) -> (i)>}
         : (tensor<64x16384xf32>) -> tensor<64xf32>
  %sum_b = "meta.reindex"(%sum) {indices = affine_map<(i, j) -> (i)>} : (tensor<64xf32>) -> tensor<64x16384xf32>
  %y = "meta.binary"(%e, %sum_b) {kind = "div"} : (tensor<64x16384xf32>, tensor<64x16384xf32>) -> tensor<64x16384xf32>
  return %y : tensor<64x16384xf32>
}

// CHECK: row chains on the cpu backend
// CHECK-NEXT: @main_fused_0_rows in @main runs @main_fused_0, @main_fused_1, @main_fused_2 one block of 1 of its 64 rows at a time: rows of 65544 bytes stay in cache;
