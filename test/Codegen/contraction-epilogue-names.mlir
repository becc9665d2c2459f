// An epilogue's tile function is named after it (`@<epilogue>_tile`); a
// kernel that already has that name keeps it, and the epilogue takes the
// next free pair of names (lower::epilogue).
// RUN: jitc compile %s --emit mlir | FileCheck %s

// CHECK-DAG:  func.func @mm_epilogue_tile(
// CHECK-DAG:  func.func private @mm_epilogue__tile(
// CHECK-DAG:  func.func @mm_epilogue_(
// CHECK-DAG:  func.call @mm_epilogue__tile(
func.func @main(%a: tensor<4x8xf32>, %b: tensor<8x16xf32>, %c: tensor<4x16xf32>) -> (tensor<4x16xf32>, tensor<4x16xf32>) {
  %z = call @mm(%a, %b) : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %y = call @act(%z) : (tensor<4x16xf32>) -> tensor<4x16xf32>
  %w = call @mm_epilogue_tile(%c) : (tensor<4x16xf32>) -> tensor<4x16xf32>
  return %y, %w : tensor<4x16xf32>, tensor<4x16xf32>
}
func.func private @mm(%a: tensor<4x8xf32>, %b: tensor<8x16xf32>) -> tensor<4x16xf32> attributes {meta.domain = array<i64: 4, 16, 8>, meta.fused} {
  %ab = "meta.reindex"(%a) {indices = affine_map<(d0, d1, d2) -> (d0, d2)>} : (tensor<4x8xf32>) -> tensor<4x16x8xf32>
  %bb = "meta.reindex"(%b) {indices = affine_map<(d0, d1, d2) -> (d2, d1)>} : (tensor<8x16xf32>) -> tensor<4x16x8xf32>
  %p = "meta.binary"(%ab, %bb) {kind = "mul"} : (tensor<4x16x8xf32>, tensor<4x16x8xf32>) -> tensor<4x16x8xf32>
  %z = "meta.reindex_reduce"(%p) {kind = "add", indices = affine_map<(d0, d1, d2) -> (d0, d1)>} : (tensor<4x16x8xf32>) -> tensor<4x16xf32>
  return %z : tensor<4x16xf32>
}
func.func private @act(%z: tensor<4x16xf32>) -> tensor<4x16xf32> attributes {meta.domain = array<i64: 4, 16>, meta.fused} {
  %y = "meta.unary"(%z) {kind = "tanh"} : (tensor<4x16xf32>) -> tensor<4x16xf32>
  return %y : tensor<4x16xf32>
}
func.func private @mm_epilogue_tile(%c: tensor<4x16xf32>) -> tensor<4x16xf32> attributes {meta.domain = array<i64: 4, 16>, meta.fused} {
  %y = "meta.unary"(%c) {kind = "exp"} : (tensor<4x16xf32>) -> tensor<4x16xf32>
  return %y : tensor<4x16xf32>
}
