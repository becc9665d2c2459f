// RUN: jitc opt %s --split-input-file --meta-dce | FileCheck %s

// CHECK-LABEL: func.func @dce_dead_chain
//   CHECK-NOT:   "meta.
//       CHECK:   return %{{.+}} : tensor<4xf32>
func.func @dce_dead_chain(%x: tensor<4xf32>) -> tensor<4xf32> {
  %e = "meta.unary"(%x) {kind = "exp"} : (tensor<4xf32>) -> tensor<4xf32>
  %n = "meta.unary"(%e) {kind = "neg"} : (tensor<4xf32>) -> tensor<4xf32>
  %b = "meta.reindex"(%n) {indices = affine_map<(d0, d1) -> (d1)>} : (tensor<4xf32>) -> tensor<3x4xf32>
  %s = "meta.reindex_reduce"(%b) {kind = "add", indices = affine_map<(d0, d1) -> (d0)>} : (tensor<3x4xf32>) -> tensor<3xf32>
  return %x : tensor<4xf32>
}

// -----

// CHECK-LABEL: func.func @dce_keeps_used_values
//       CHECK:   %[[E:.+]] = "meta.unary"(%{{.+}}) {kind = "exp"}
//   CHECK-NOT:   "meta.unary"
//       CHECK:   return %[[E]]
func.func @dce_keeps_used_values(%x: tensor<4xf32>) -> tensor<4xf32> {
  %e = "meta.unary"(%x) {kind = "exp"} : (tensor<4xf32>) -> tensor<4xf32>
  %dead = "meta.unary"(%e) {kind = "neg"} : (tensor<4xf32>) -> tensor<4xf32>
  return %e : tensor<4xf32>
}

// -----

// Guards and state writes have effects and are never erased; the values they
// use stay alive with them.
// CHECK-LABEL: func.func @dce_keeps_guards_and_state_writes
//       CHECK:   "meta.binary"{{.*}}kind = "lt"
//       CHECK:   "meta.guard"
//       CHECK:   "meta.state_read"
//       CHECK:   "meta.state_write"
func.func @dce_keeps_guards_and_state_writes(%x: tensor<f32>, %y: tensor<f32>) {
  %ok = "meta.binary"(%x, %y) {kind = "lt"} : (tensor<f32>, tensor<f32>) -> tensor<i1>
  "meta.guard"(%ok) {id = 0 : i64, reason = "x < y"} : (tensor<i1>) -> ()
  %h = "meta.state_read"() {name = "h"} : () -> tensor<4xf32>
  "meta.state_write"(%h) {name = "h"} : (tensor<4xf32>) -> ()
  return
}

// -----

// Dead ops inside scf regions are erased too; the loop itself is upstream's.
// CHECK-LABEL: func.func @dce_inside_loops
//       CHECK:   scf.for
//   CHECK-NOT:   "meta.unary"
//       CHECK:   scf.yield
func.func @dce_inside_loops(%x: tensor<4xf32>) -> tensor<4xf32> {
  %c0 = arith.constant 0 : index
  %c4 = arith.constant 4 : index
  %c1 = arith.constant 1 : index
  %r = scf.for %i = %c0 to %c4 step %c1 iter_args(%acc = %x) -> (tensor<4xf32>) {
    %dead = "meta.unary"(%acc) {kind = "exp"} : (tensor<4xf32>) -> tensor<4xf32>
    scf.yield %acc : tensor<4xf32>
  }
  return %r : tensor<4xf32>
}
