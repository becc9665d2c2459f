// A kernel the CPU runs as a register-tiled contraction is no stage of a
// row chain: it packs its operand's panels once per call, and a chain
// would call it once per block of rows (blocks of 61 rows against row
// tiles of 6 in the MLP step). Here logits = x W feed a softmax over their
// rows: the softmax's kernels chain, the contraction runs alone.
// RUN: jitc explain %s | FileCheck %s

// CHECK:      contractions on the cpu backend
// CHECK-NEXT:   @main_fused_0: rows d0 x vector d1
// CHECK:      row chains on the cpu backend
// CHECK-NEXT:   @main_fused_{{[0-9]+}}_rows in @main runs
// CHECK-NOT:  @main_fused_0,
// CHECK-SAME: one block of
func.func @main(%x: tensor<256x784xf32>, %w: tensor<784x64xf32>) -> tensor<256x64xf32> {
  %xb = "meta.reindex"(%x) {indices = affine_map<(i, j, k) -> (i, k)>} : (tensor<256x784xf32>) -> tensor<256x64x784xf32>
  %wb = "meta.reindex"(%w) {indices = affine_map<(i, j, k) -> (k, j)>} : (tensor<784x64xf32>) -> tensor<256x64x784xf32>
  %p = "meta.binary"(%xb, %wb) {kind = "mul"} : (tensor<256x64x784xf32>, tensor<256x64x784xf32>) -> tensor<256x64x784xf32>
  %z = "meta.reindex_reduce"(%p) {kind = "add", indices = affine_map<(i, j, k) -> (i, j)>} : (tensor<256x64x784xf32>) -> tensor<256x64xf32>
  %max = "meta.reindex_reduce"(%z) {kind = "max", indices = affine_map<(i, j) -> (i)>} : (tensor<256x64xf32>) -> tensor<256xf32>
  %max_b = "meta.reindex"(%max) {indices = affine_map<(i, j) -> (i)>} : (tensor<256xf32>) -> tensor<256x64xf32>
  %s = "meta.binary"(%z, %max_b) {kind = "sub"} : (tensor<256x64xf32>, tensor<256x64xf32>) -> tensor<256x64xf32>
  %e = "meta.unary"(%s) {kind = "exp"} : (tensor<256x64xf32>) -> tensor<256x64xf32>
  %sum = "meta.reindex_reduce"(%e) {kind = "add", indices = affine_map<(i, j) -> (i)>} : (tensor<256x64xf32>) -> tensor<256xf32>
  %sum_b = "meta.reindex"(%sum) {indices = affine_map<(i, j) -> (i)>} : (tensor<256xf32>) -> tensor<256x64xf32>
  %y = "meta.binary"(%e, %sum_b) {kind = "div"} : (tensor<256x64xf32>, tensor<256x64xf32>) -> tensor<256x64xf32>
  return %y : tensor<256x64xf32>
}
