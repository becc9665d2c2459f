// RUN: jitc opt %s --split-input-file --meta-unroll | FileCheck %s
// RUN: jitc opt %s --split-input-file --meta-unroll=max-ops=4 | FileCheck %s --check-prefix=LIMIT
// RUN: not jitc opt %s --meta-unroll=max-ops=many 2>&1 | FileCheck %s --check-prefix=BAD
// BAD: jitc opt: error: invalid pass pipeline: pass 'meta-unroll': option max-ops must be a whole number, got 'many'

// Dynamic bounds: the trip count max(ceildiv(ub - lb, step), 0) is guarded
// to be 3, then each iteration is a copy of the body fed by the previous one.
// CHECK-LABEL: func.func @dynamic_bounds
//       CHECK:   %[[SPAN:.+]] = arith.subi %arg1, %{{.+}} : index
//       CHECK:   %[[N:.+]] = arith.ceildivsi %[[SPAN]], %{{.+}} : index
//       CHECK:   %[[M:.+]] = arith.maxsi %[[N]], %{{.+}} : index
//       CHECK:   %[[OK:.+]] = arith.cmpi eq, %[[M]], %{{.+}} : index
//       CHECK:   "meta.guard"(%{{.+}}) {id = 1 : i64, reason = "trip count of the loop at 7:3 == 3", site = "7:3"}
//       CHECK:   %[[A:.+]] = "meta.unary"(%arg0) {kind = "tanh"}
//       CHECK:   %[[B:.+]] = "meta.unary"(%[[A]]) {kind = "tanh"}
//       CHECK:   %[[C:.+]] = "meta.unary"(%[[B]]) {kind = "tanh"}
//   CHECK-NOT:   scf.for
//       CHECK:   return %[[C]]
// LIMIT-LABEL: func.func @dynamic_bounds
//       LIMIT:   scf.for
//   LIMIT-NOT:   meta.unroll
//       LIMIT:   return
func.func @dynamic_bounds(%x: tensor<4xf32>, %n: index) -> tensor<4xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%a = %x) -> (tensor<4xf32>) {
    %t = "meta.unary"(%a) {kind = "tanh"} : (tensor<4xf32>) -> tensor<4xf32>
    scf.yield %t : tensor<4xf32>
  } {meta.unroll = 3 : i64, meta.site = "7:3"}
  return %r : tensor<4xf32>
}

// -----

// Constant bounds that give the marked count need no guard; the induction
// variable becomes a constant per iteration (here a map symbol), and a guard
// in the body is cloned with fresh ids.
// CHECK-LABEL: func.func @constant_bounds
//   CHECK-NOT:   trip count
//       CHECK:   arith.constant dense<0.000000e+00> : tensor<8xf32>
//  CHECK-NEXT:   %[[I0:.+]] = arith.constant 1 : index
//       CHECK:   "meta.reindex"(%arg0, %[[I0]])
//       CHECK:   "meta.guard"(%arg1) {id = 2 : i64, reason = "in body"}
//       CHECK:   %[[I1:.+]] = arith.constant 3 : index
//       CHECK:   "meta.reindex"(%arg0, %[[I1]])
//       CHECK:   "meta.guard"(%arg1) {id = 3 : i64, reason = "in body"}
//   CHECK-NOT:   scf.for
func.func @constant_bounds(%xs: tensor<4x8xf32>, %ok: tensor<i1>) -> tensor<8xf32> {
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c4 = arith.constant 4 : index
  %zero = arith.constant dense<0.0> : tensor<8xf32>
  %r = scf.for %i = %c1 to %c4 step %c2 iter_args(%a = %zero) -> (tensor<8xf32>) {
    %row = "meta.reindex"(%xs, %i) {indices = affine_map<(d0)[s0] -> (s0, d0)>} : (tensor<4x8xf32>, index) -> tensor<8xf32>
    "meta.guard"(%ok) {id = 1 : i64, reason = "in body"} : (tensor<i1>) -> ()
    %s = "meta.binary"(%a, %row) {kind = "add"} : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
    scf.yield %s : tensor<8xf32>
  } {meta.unroll = 2 : i64}
  return %r : tensor<8xf32>
}

// -----

// scf.while: the condition is guarded true for each of the 2 iterations,
// then false once more.
// CHECK-LABEL: func.func @while_loop
//       CHECK:   %[[TRUE:.+]] = arith.constant true
//       CHECK:   "meta.guard"(%{{.+}}) {id = 1 : i64, reason = "trip count of the loop at w:1 == 2", site = "w:1"}
//       CHECK:   "meta.unary"(%arg0) {kind = "neg"}
//       CHECK:   "meta.guard"(%{{.+}}) {id = 2 : i64, reason = "trip count of the loop at w:1 == 2"
//       CHECK:   %[[LAST:.+]] = "meta.unary"(%{{.+}}) {kind = "neg"}
//       CHECK:   %[[STOP:.+]] = arith.xori %{{.+}}, %[[TRUE]] : i1
//       CHECK:   "meta.guard"(%{{.+}}) {id = 3 : i64, reason = "trip count of the loop at w:1 == 2"
//   CHECK-NOT:   scf.while
//       CHECK:   return %[[LAST]]
func.func @while_loop(%x: tensor<4xf32>) -> tensor<4xf32> {
  %c0 = arith.constant 0 : index
  %zero = arith.constant 0.0 : f32
  %r = scf.while (%a = %x) : (tensor<4xf32>) -> tensor<4xf32> {
    %first = tensor.extract %a[%c0] : tensor<4xf32>
    %go = arith.cmpf ogt, %first, %zero : f32
    scf.condition(%go) %a : tensor<4xf32>
  } do {
  ^bb0(%b: tensor<4xf32>):
    %n = "meta.unary"(%b) {kind = "neg"} : (tensor<4xf32>) -> tensor<4xf32>
    scf.yield %n : tensor<4xf32>
  } attributes {meta.unroll = 2 : i64, meta.site = "w:1"}
  return %r : tensor<4xf32>
}
