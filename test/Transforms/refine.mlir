// RUN: jitc opt %s --split-input-file --meta-refine | FileCheck %s

// After a cast to a static type, sizes spread: tensor.dim folds, element-wise
// results and reindex sizes become static (the size operand goes), and the
// return keeps the declared type through a cast back.
// CHECK-LABEL: func.func @spreads
//       CHECK:   %[[X:.+]] = tensor.cast %arg0 : tensor<?x8xf32> to tensor<4x8xf32>
//       CHECK:   %[[E:.+]] = "meta.unary"(%[[X]]) {kind = "exp"} : (tensor<4x8xf32>) -> tensor<4x8xf32>
//       CHECK:   %[[B:.+]] = "meta.reindex"(%[[E]]) {indices = #map} : (tensor<4x8xf32>) -> tensor<4x2x8xf32>
//       CHECK:   %[[S:.+]] = "meta.reindex_reduce"(%[[B]]) {{.+}} : (tensor<4x2x8xf32>) -> tensor<4x8xf32>
//       CHECK:   %[[BACK:.+]] = tensor.cast %[[S]] : tensor<4x8xf32> to tensor<?x8xf32>
//       CHECK:   return %[[BACK]] : tensor<?x8xf32>
func.func @spreads(%x: tensor<?x8xf32>) -> tensor<?x8xf32> {
  %c0 = arith.constant 0 : index
  %xs = tensor.cast %x : tensor<?x8xf32> to tensor<4x8xf32>
  %n = tensor.dim %xs, %c0 : tensor<4x8xf32>
  %e = "meta.unary"(%xs) {kind = "exp"} : (tensor<4x8xf32>) -> tensor<?x8xf32>
  %b = "meta.reindex"(%e, %n) {indices = affine_map<(d0, d1, d2) -> (d0, d2)>} : (tensor<?x8xf32>, index) -> tensor<?x2x8xf32>
  %s = "meta.reindex_reduce"(%b, %n) {kind = "add", indices = affine_map<(d0, d1, d2) -> (d0, d2)>} : (tensor<?x2x8xf32>, index) -> tensor<?x8xf32>
  return %s : tensor<?x8xf32>
}

// -----

// A size that stays unknown stays `?`.
// CHECK-LABEL: func.func @unknown
//       CHECK:   "meta.unary"(%arg0) {kind = "exp"} : (tensor<?x8xf32>) -> tensor<?x8xf32>
func.func @unknown(%x: tensor<?x8xf32>) -> tensor<?x8xf32> {
  %e = "meta.unary"(%x) {kind = "exp"} : (tensor<?x8xf32>) -> tensor<?x8xf32>
  return %e : tensor<?x8xf32>
}
