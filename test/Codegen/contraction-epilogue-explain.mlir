// `jitc explain` lists the contraction epilogues (lower::epilogue): the
// sums stay in a scratch tile when only the consumer reads them, and are
// still written when the function returns them too; a contraction whose
// fold runs in packed blocks (784 steps) keeps its consumer apart, and so
// does one whose sums pass 256 KiB (512x512 floats, 1 MiB)
// (contraction-epilogue.mlir checks Jittor's rules).
// RUN: jitc explain %s | FileCheck %s

// CHECK:      contraction epilogues on the cpu backend (fused past rule 2; --jittor-rules makes none):
// Equal contraction kernels merge first, so both epilogues may run the
// same one.
// CHECK-DAG:    _epilogue{{_*}} in @returned runs @returned_fused_{{[0-9]+}} on each tile of @[[R:[a-z]+_fused_[0-9]+]] as it finishes: @[[R]] still writes its sums, which more than @returned_fused_{{[0-9]+}} reads
// CHECK-DAG:    _epilogue{{_*}} in @step runs @step_fused_{{[0-9]+}} on each tile of @[[S:[a-z]+_fused_[0-9]+]] as it finishes: the sums of @[[S]] never reach memory
// CHECK-NOT:    in @long
// CHECK-NOT:    in @big
// CHECK:      contractions on the cuda backend
func.func @step(%h: tensor<16x256xf32>, %u: tensor<256x256xf32>, %x: tensor<16x256xf32>) -> tensor<16x256xf32> {
  %hb = "meta.reindex"(%h) {indices = affine_map<(i, j, k) -> (i, k)>} : (tensor<16x256xf32>) -> tensor<16x256x256xf32>
  %ub = "meta.reindex"(%u) {indices = affine_map<(i, j, k) -> (k, j)>} : (tensor<256x256xf32>) -> tensor<16x256x256xf32>
  %p = "meta.binary"(%hb, %ub) {kind = "mul"} : (tensor<16x256x256xf32>, tensor<16x256x256xf32>) -> tensor<16x256x256xf32>
  %z = "meta.reindex_reduce"(%p) {kind = "add", indices = affine_map<(i, j, k) -> (i, j)>} : (tensor<16x256x256xf32>) -> tensor<16x256xf32>
  %s = "meta.binary"(%z, %x) {kind = "add"} : (tensor<16x256xf32>, tensor<16x256xf32>) -> tensor<16x256xf32>
  %y = "meta.unary"(%s) {kind = "tanh"} : (tensor<16x256xf32>) -> tensor<16x256xf32>
  return %y : tensor<16x256xf32>
}
func.func @returned(%h: tensor<16x256xf32>, %u: tensor<256x256xf32>) -> (tensor<16x256xf32>, tensor<16x256xf32>) {
  %hb = "meta.reindex"(%h) {indices = affine_map<(i, j, k) -> (i, k)>} : (tensor<16x256xf32>) -> tensor<16x256x256xf32>
  %ub = "meta.reindex"(%u) {indices = affine_map<(i, j, k) -> (k, j)>} : (tensor<256x256xf32>) -> tensor<16x256x256xf32>
  %p = "meta.binary"(%hb, %ub) {kind = "mul"} : (tensor<16x256x256xf32>, tensor<16x256x256xf32>) -> tensor<16x256x256xf32>
  %z = "meta.reindex_reduce"(%p) {kind = "add", indices = affine_map<(i, j, k) -> (i, j)>} : (tensor<16x256x256xf32>) -> tensor<16x256xf32>
  %y = "meta.unary"(%z) {kind = "sigmoid"} : (tensor<16x256xf32>) -> tensor<16x256xf32>
  return %y, %z : tensor<16x256xf32>, tensor<16x256xf32>
}
func.func @long(%x: tensor<256x784xf32>, %w: tensor<784x512xf32>) -> tensor<256x512xf32> {
  %xb = "meta.reindex"(%x) {indices = affine_map<(i, j, k) -> (i, k)>} : (tensor<256x784xf32>) -> tensor<256x512x784xf32>
  %wb = "meta.reindex"(%w) {indices = affine_map<(i, j, k) -> (k, j)>} : (tensor<784x512xf32>) -> tensor<256x512x784xf32>
  %p = "meta.binary"(%xb, %wb) {kind = "mul"} : (tensor<256x512x784xf32>, tensor<256x512x784xf32>) -> tensor<256x512x784xf32>
  %z = "meta.reindex_reduce"(%p) {kind = "add", indices = affine_map<(i, j, k) -> (i, j)>} : (tensor<256x512x784xf32>) -> tensor<256x512xf32>
  %y = "meta.unary"(%z) {kind = "tanh"} : (tensor<256x512xf32>) -> tensor<256x512xf32>
  return %y : tensor<256x512xf32>
}
func.func @big(%x: tensor<512x256xf32>, %w: tensor<256x512xf32>) -> tensor<512x512xf32> {
  %xb = "meta.reindex"(%x) {indices = affine_map<(i, j, k) -> (i, k)>} : (tensor<512x256xf32>) -> tensor<512x512x256xf32>
  %wb = "meta.reindex"(%w) {indices = affine_map<(i, j, k) -> (k, j)>} : (tensor<256x512xf32>) -> tensor<512x512x256xf32>
  %p = "meta.binary"(%xb, %wb) {kind = "mul"} : (tensor<512x512x256xf32>, tensor<512x512x256xf32>) -> tensor<512x512x256xf32>
  %z = "meta.reindex_reduce"(%p) {kind = "add", indices = affine_map<(i, j, k) -> (i, j)>} : (tensor<512x512x256xf32>) -> tensor<512x512xf32>
  %y = "meta.unary"(%z) {kind = "tanh"} : (tensor<512x512xf32>) -> tensor<512x512xf32>
  return %y : tensor<512x512xf32>
}
