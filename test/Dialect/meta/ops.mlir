// Round trip of every meta op: jitc prints what it parses, prints it again
// identically, and upstream mlir-opt accepts the same text with the IRDL file.
// RUN: jitc opt %s --split-input-file | FileCheck %s
// RUN: jitc opt %s --split-input-file | jitc opt --split-input-file | FileCheck %s
// RUN: mlir-opt --irdl-file=%irdl %s --split-input-file | FileCheck %s

// CHECK-LABEL: func.func @reindex_broadcast
//       CHECK:   "meta.reindex"(%{{.+}}) {indices = #{{.+}}, overflow_value = 0.000000e+00 : f32} : (tensor<4xf32>) -> tensor<3x4xf32>
func.func @reindex_broadcast(%x: tensor<4xf32>) -> tensor<3x4xf32> {
  %b = "meta.reindex"(%x) {indices = affine_map<(d0, d1) -> (d1)>, overflow_value = 0.0 : f32}
       : (tensor<4xf32>) -> tensor<3x4xf32>
  return %b : tensor<3x4xf32>
}

// -----

// CHECK-LABEL: func.func @reindex_pad_with_conditions
//       CHECK:   "meta.reindex"(%{{.+}}) {indices = #{{.+}}, overflow_conditions = [#{{.+}}], overflow_value = 0.000000e+00 : f32}
func.func @reindex_pad_with_conditions(%x: tensor<4x4xf32>) -> tensor<6x6xf32> {
  %p = "meta.reindex"(%x) {indices = affine_map<(d0, d1) -> (d0 - 1, d1 - 1)>,
                           overflow_value = 0.0 : f32,
                           overflow_conditions = [affine_set<(d0, d1) : (d0 - 5 >= 0)>]}
       : (tensor<4x4xf32>) -> tensor<6x6xf32>
  return %p : tensor<6x6xf32>
}

// -----

// CHECK-LABEL: func.func @reindex_symbol_and_dynamic_size
//       CHECK:   "meta.reindex"(%{{.+}}, %{{.+}}) {indices = #{{.+}}} : (tensor<32x16x256xf32>, index) -> tensor<16x256xf32>
//       CHECK:   tensor.dim
//       CHECK:   "meta.reindex"(%{{.+}}, %{{.+}}) {indices = #{{.+}}} : (tensor<?x8xf32>, index) -> tensor<?x4x8xf32>
func.func @reindex_symbol_and_dynamic_size(%xs: tensor<32x16x256xf32>, %t: index, %x: tensor<?x8xf32>)
    -> (tensor<16x256xf32>, tensor<?x4x8xf32>) {
  %xt = "meta.reindex"(%xs, %t) {indices = affine_map<(d0, d1)[s0] -> (s0, d0, d1)>}
        : (tensor<32x16x256xf32>, index) -> tensor<16x256xf32>
  %c0 = arith.constant 0 : index
  %n = tensor.dim %x, %c0 : tensor<?x8xf32>
  %bx = "meta.reindex"(%x, %n) {indices = affine_map<(d0, d1, d2) -> (d0, d2)>}
        : (tensor<?x8xf32>, index) -> tensor<?x4x8xf32>
  return %xt, %bx : tensor<16x256xf32>, tensor<?x4x8xf32>
}

// -----

// CHECK-LABEL: func.func @reindex_reduce_sum
//       CHECK:   "meta.reindex_reduce"(%{{.+}}) {indices = #{{.+}}, kind = "add"} : (tensor<3x4xf32>) -> tensor<3xf32>
func.func @reindex_reduce_sum(%y: tensor<3x4xf32>) -> tensor<3xf32> {
  %s = "meta.reindex_reduce"(%y) {kind = "add", indices = affine_map<(d0, d1) -> (d0)>}
       : (tensor<3x4xf32>) -> tensor<3xf32>
  return %s : tensor<3xf32>
}

// -----

// CHECK-LABEL: func.func @reindex_reduce_or_with_condition
//       CHECK:   "meta.reindex_reduce"(%{{.+}}) {indices = #{{.+}}, kind = "or", overflow_conditions = [#{{.+}}]} : (tensor<8xi1>) -> tensor<i1>
func.func @reindex_reduce_or_with_condition(%y: tensor<8xi1>) -> tensor<i1> {
  %s = "meta.reindex_reduce"(%y) {kind = "or", indices = affine_map<(d0) -> ()>,
                                  overflow_conditions = [affine_set<(d0) : (d0 - 4 >= 0)>]}
       : (tensor<8xi1>) -> tensor<i1>
  return %s : tensor<i1>
}

// -----

// CHECK-LABEL: func.func @elementwise
//       CHECK:   "meta.unary"(%{{.+}}) {kind = "exp"} : (tensor<4xf32>) -> tensor<4xf32>
//       CHECK:   "meta.unary"(%{{.+}}) {kind = "cast"} : (tensor<4xf32>) -> tensor<4xi32>
//       CHECK:   "meta.binary"(%{{.+}}, %{{.+}}) {kind = "add"} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
//       CHECK:   "meta.binary"(%{{.+}}, %{{.+}}) {kind = "lt"} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xi1>
//       CHECK:   "meta.ternary"(%{{.+}}, %{{.+}}, %{{.+}}) {kind = "select"} : (tensor<4xi1>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
func.func @elementwise(%x: tensor<4xf32>, %y: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xi32>) {
  %e = "meta.unary"(%x) {kind = "exp"} : (tensor<4xf32>) -> tensor<4xf32>
  %c = "meta.unary"(%x) {kind = "cast"} : (tensor<4xf32>) -> tensor<4xi32>
  %a = "meta.binary"(%e, %y) {kind = "add"} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %l = "meta.binary"(%x, %y) {kind = "lt"} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xi1>
  %z = "meta.ternary"(%l, %a, %y) {kind = "select"} : (tensor<4xi1>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %z, %c : tensor<4xf32>, tensor<4xi32>
}

// -----

// CHECK-LABEL: func.func @guard_and_state
//       CHECK:   "meta.guard"(%{{.+}}) {id = 3 : i64, reason = "trip count == 32"} : (tensor<i1>) -> ()
//       CHECK:   "meta.state_read"() {name = "rnn.h"} : () -> tensor<16x256xf32>
//       CHECK:   "meta.state_write"(%{{.+}}) {name = "rnn.h"} : (tensor<16x256xf32>) -> ()
func.func @guard_and_state(%ok: tensor<i1>) {
  "meta.guard"(%ok) {id = 3 : i64, reason = "trip count == 32"} : (tensor<i1>) -> ()
  %h = "meta.state_read"() {name = "rnn.h"} : () -> tensor<16x256xf32>
  "meta.state_write"(%h) {name = "rnn.h"} : (tensor<16x256xf32>) -> ()
  return
}
