// RUN: jitc opt %s --split-input-file --meta-grad | FileCheck %s
// RUN: jitc opt %s --split-input-file --meta-grad="wrt=0 name=dloss_dx" | FileCheck %s --check-prefix=WRT
// RUN: jitc opt %s --split-input-file --meta-grad | jitc opt --split-input-file --meta-fuse | FileCheck %s --check-prefix=FUSED

// The adjoint of each meta-op kind, as `meta-grad` writes it into
// @main_grad after a clone of @main's ops (the rules are in
// docs/semantics.md, "Gradients"). test/jitc-run/grad.mlir runs them.

// A reindex: a reindex_reduce add of the gradient with the same map and
// overflow conditions, so the padded border and the rows the condition
// drops get nothing. The seed is the constant 1 of the loss.
// CHECK-LABEL: func.func @main_grad
//  CHECK-SAME:   (%arg0: tensor<4x4xf32>) -> (tensor<f32>, tensor<4x4xf32>)
//       CHECK:   %[[P:.+]] = "meta.reindex"(%arg0) {indices = #map, overflow_conditions = [#set], overflow_value
//       CHECK:   %[[L:.+]] = "meta.reindex_reduce"(%[[P]])
//       CHECK:   %[[ONE:.+]] = arith.constant dense<1.000000e+00> : tensor<f32>
//       CHECK:   %[[G:.+]] = "meta.reindex"(%[[ONE]]) {indices = #map1} : (tensor<f32>) -> tensor<6x6xf32>
//       CHECK:   %[[D:.+]] = "meta.reindex_reduce"(%[[G]]) {indices = #map, kind = "add", overflow_conditions = [#set]} : (tensor<6x6xf32>) -> tensor<4x4xf32>
//       CHECK:   return %[[L]], %[[D]] : tensor<f32>, tensor<4x4xf32>
// The gradient function fuses like any other.
// FUSED-LABEL: func.func @main_grad
//       FUSED:   call @main_grad_fused
func.func @main(%x: tensor<4x4xf32>) -> tensor<f32> {
  %p = "meta.reindex"(%x) {indices = affine_map<(d0, d1) -> (d0 - 1, d1 - 1)>, overflow_value = 1.0 : f32, overflow_conditions = [affine_set<(d0, d1) : (d0 - 4 >= 0)>]} : (tensor<4x4xf32>) -> tensor<6x6xf32>
  %s = "meta.reindex_reduce"(%p) {kind = "add", indices = affine_map<(d0, d1) -> ()>} : (tensor<6x6xf32>) -> tensor<f32>
  return %s : tensor<f32>
}

// -----

// A reindex_reduce max: the gradient, spread back by a reindex with the
// same map, goes to the elements equal to the result, divided by how many
// tie (a count reduced with the same map).
// CHECK-LABEL: func.func @main_grad
//       CHECK:   %[[M:.+]] = "meta.reindex_reduce"(%arg0) {indices = #map, kind = "max"} : (tensor<3x4xf32>) -> tensor<3xf32>
//       CHECK:   %[[MB:.+]] = "meta.reindex"(%[[M]]) {indices = #map} : (tensor<3xf32>) -> tensor<3x4xf32>
//       CHECK:   %[[HIT:.+]] = "meta.binary"(%arg0, %[[MB]]) {kind = "eq"}
//       CHECK:   %[[HITF:.+]] = "meta.unary"(%[[HIT]]) {kind = "cast"} : (tensor<3x4xi1>) -> tensor<3x4xf32>
//       CHECK:   %[[TIES:.+]] = "meta.reindex_reduce"(%[[HITF]]) {indices = #map, kind = "add"} : (tensor<3x4xf32>) -> tensor<3xf32>
//       CHECK:   %[[TB:.+]] = "meta.reindex"(%[[TIES]]) {indices = #map, overflow_value = 1.000000e+00 : f32}
//       CHECK:   %[[GB:.+]] = "meta.reindex"(%{{.+}}) {indices = #map} : (tensor<3xf32>) -> tensor<3x4xf32>
//       CHECK:   %[[SHARE:.+]] = "meta.binary"(%[[GB]], %[[TB]]) {kind = "div"}
//       CHECK:   %[[Z:.+]] = arith.constant dense<0.000000e+00> : tensor<3x4xf32>
//       CHECK:   %[[D:.+]] = "meta.ternary"(%[[HIT]], %[[SHARE]], %[[Z]]) {kind = "select"}
//       CHECK:   return %{{.+}}, %[[D]]
func.func @main(%x: tensor<3x4xf32>) -> tensor<f32> {
  %m = "meta.reindex_reduce"(%x) {kind = "max", indices = affine_map<(d0, d1) -> (d0)>} : (tensor<3x4xf32>) -> tensor<3xf32>
  %s = "meta.reindex_reduce"(%m) {kind = "add", indices = affine_map<(d0) -> ()>} : (tensor<3xf32>) -> tensor<f32>
  return %s : tensor<f32>
}

// -----

// A reindex_reduce mul: the product of the nonzero elements and the count
// of zeros, each reduced with the same map, then spread back.
// CHECK-LABEL: func.func @main_grad
//       CHECK:   %[[ZERO:.+]] = "meta.binary"(%arg0, %{{.+}}) {kind = "eq"}
//       CHECK:   %[[NZ:.+]] = "meta.ternary"(%[[ZERO]], %{{.+}}, %arg0) {kind = "select"}
//       CHECK:   "meta.reindex_reduce"(%[[NZ]]) {indices = #map, kind = "mul"}
//       CHECK:   %[[ZF:.+]] = "meta.unary"(%[[ZERO]]) {kind = "cast"}
//       CHECK:   "meta.reindex_reduce"(%[[ZF]]) {indices = #map, kind = "add"}
//       CHECK:   return
func.func @main(%x: tensor<3xf32>) -> tensor<f32> {
  %p = "meta.reindex_reduce"(%x) {kind = "mul", indices = affine_map<(d0) -> ()>} : (tensor<3xf32>) -> tensor<f32>
  return %p : tensor<f32>
}

// -----

// Element-wise: tanh reads its result (1 - y^2), div its result (-y / b),
// select routes by its condition (the condition, an i1, gets nothing),
// floor gives nothing, casts between floats cast the gradient back.
// CHECK-LABEL: func.func @main_grad
//  CHECK-SAME:   -> (tensor<f32>, tensor<3xf32>, tensor<3xf32>)
//       CHECK:   %[[T:.+]] = "meta.unary"(%arg0) {kind = "tanh"}
//       CHECK:   %[[Q:.+]] = "meta.binary"(%[[T]], %arg1) {kind = "div"}
//       CHECK:   %[[C:.+]] = "meta.binary"(%arg0, %arg1) {kind = "lt"}
//       CHECK:   "meta.unary"(%{{.+}}) {kind = "cast"} : (tensor<f32>) -> tensor<f64>
//       CHECK:   %[[G:.+]] = "meta.unary"(%{{.+}}) {kind = "cast"} : (tensor<3xf64>) -> tensor<3xf32>
//       CHECK:   %[[GT:.+]] = "meta.ternary"(%[[C]], %[[G]], %{{.+}}) {kind = "select"}
//       CHECK:   %[[DT:.+]] = "meta.binary"(%[[GT]], %arg1) {kind = "div"}
//       CHECK:   %[[M:.+]] = "meta.binary"(%[[DT]], %[[Q]]) {kind = "mul"}
//       CHECK:   %[[DY:.+]] = "meta.unary"(%[[M]]) {kind = "neg"}
//       CHECK:   %[[SQ:.+]] = "meta.binary"(%[[T]], %[[T]]) {kind = "mul"}
//       CHECK:   %[[ONE_MINUS:.+]] = "meta.binary"(%{{.+}}, %[[SQ]]) {kind = "sub"}
//       CHECK:   %[[DX:.+]] = "meta.binary"(%[[DT]], %[[ONE_MINUS]]) {kind = "mul"}
//   CHECK-NOT:   kind = "floor"
//       CHECK:   return %{{.+}}, %[[DX]], %[[DY]]
// Only the gradient by %x, under the name given.
// WRT: func.func @dloss_dx(%arg0: tensor<3xf32>, %arg1: tensor<3xf32>) -> (tensor<f32>, tensor<3xf32>)
func.func @main(%x: tensor<3xf32>, %y: tensor<3xf32>) -> tensor<f32> {
  %t = "meta.unary"(%x) {kind = "tanh"} : (tensor<3xf32>) -> tensor<3xf32>
  %f = "meta.unary"(%x) {kind = "floor"} : (tensor<3xf32>) -> tensor<3xf32>
  %d = "meta.binary"(%t, %y) {kind = "div"} : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  %c = "meta.binary"(%x, %y) {kind = "lt"} : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xi1>
  %s = "meta.ternary"(%c, %d, %f) {kind = "select"} : (tensor<3xi1>, tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  %w = "meta.unary"(%s) {kind = "cast"} : (tensor<3xf32>) -> tensor<3xf64>
  %r = "meta.reindex_reduce"(%w) {kind = "add", indices = affine_map<(d0) -> ()>} : (tensor<3xf64>) -> tensor<f64>
  %n = "meta.unary"(%r) {kind = "cast"} : (tensor<f64>) -> tensor<f32>
  return %n : tensor<f32>
}
