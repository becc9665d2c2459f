// meta-specialize: each kind of assumption, from a profile recorded by
// `jitc run --profile-out` (the interpreter runs each function below).
// RUN: rm -f %t.json
// RUN: jitc run %s --backend interp --function shape --input 4x8xf32=1 --profile-out %t.json
// RUN: jitc run %s --backend interp --function scalars --input f32=0.5 --input index=7 --input f32=0 --profile-out %t.json
// RUN: jitc run %s --backend interp --function varied --input 3xf32=1 --profile-out %t.json
// RUN: jitc run %s --backend interp --function varied --input 5xf32=1 --profile-out %t.json
// RUN: jitc run %s --backend interp --function branch --input 4xf32=1 --profile-out %t.json
// RUN: jitc run %s --backend interp --function branch_else --input 4xf32=-1 --profile-out %t.json
// RUN: jitc run %s --backend interp --function loop --input 4xf32=1 --input 1xi64=3 --profile-out %t.json
// RUN: jitc opt %s --meta-specialize=profile=%t.json | FileCheck %s
//
// The profile itself: merged facts, `null` where they varied.
// RUN: FileCheck %s --check-prefix=PROFILE < %t.json
// PROFILE: "varied": {
// PROFILE: "shape": [
// PROFILE-NEXT: null
// PROFILE: "kind": "loop",
// PROFILE-NEXT: "trips": 3,

// A dynamic dimension always seen as 4: an entry guard, then a cast that
// every use takes.
// CHECK-LABEL: func.func @shape(%arg0: tensor<?x8xf32>)
//  CHECK-NEXT:   %[[C0:.+]] = arith.constant 0 : index
//  CHECK-NEXT:   %[[D:.+]] = tensor.dim %arg0, %[[C0]] : tensor<?x8xf32>
//  CHECK-NEXT:   %[[C4:.+]] = arith.constant 4 : index
//  CHECK-NEXT:   %[[OK:.+]] = arith.cmpi eq, %[[D]], %[[C4]] : index
//  CHECK-NEXT:   %[[T:.+]] = tensor.from_elements %[[OK]] : tensor<i1>
//  CHECK-NEXT:   "meta.guard"(%[[T]]) {id = 1 : i64, reason = "shape(%arg0)[0] == 4", site = "@shape(%arg0)"}
//  CHECK-NEXT:   %[[X:.+]] = tensor.cast %arg0 : tensor<?x8xf32> to tensor<4x8xf32>
//  CHECK-NEXT:   "meta.unary"(%[[X]]) {kind = "exp"} : (tensor<4x8xf32>) -> tensor<?x8xf32>
func.func @shape(%x: tensor<?x8xf32>) -> tensor<?x8xf32> {
  %e = "meta.unary"(%x) {kind = "exp"} : (tensor<?x8xf32>) -> tensor<?x8xf32>
  return %e : tensor<?x8xf32>
}

// Scalars always seen with one value become constants under a guard; a
// float zero does not (oeq cannot tell 0.0 from -0.0).
// CHECK-LABEL: func.func @scalars
//       CHECK:   %[[S:.+]] = tensor.extract %arg0[] : tensor<f32>
//       CHECK:   arith.cmpf oeq, %[[S]], %{{.+}} : f32
//       CHECK:   "meta.guard"(%{{.+}}) {id = 1 : i64, reason = "value(%arg0) == 0.5", site = "@scalars(%arg0)"}
//       CHECK:   %[[HALF:.+]] = arith.constant dense<5.000000e-01> : tensor<f32>
//       CHECK:   arith.cmpi eq, %arg1, %{{.+}} : index
//       CHECK:   "meta.guard"(%{{.+}}) {id = 2 : i64, reason = "value(%arg1) == 7", site = "@scalars(%arg1)"}
//       CHECK:   %[[SEVEN:.+]] = arith.constant 7 : index
//   CHECK-NOT:   value(%arg2)
//       CHECK:   "meta.reindex"(%[[HALF]], %[[SEVEN]])
//       CHECK:   "meta.reindex"(%arg2, %[[SEVEN]])
func.func @scalars(%s: tensor<f32>, %n: index, %z: tensor<f32>) -> tensor<?xf32> {
  %b = "meta.reindex"(%s, %n) {indices = affine_map<(d0) -> ()>} : (tensor<f32>, index) -> tensor<?xf32>
  %zb = "meta.reindex"(%z, %n) {indices = affine_map<(d0) -> ()>} : (tensor<f32>, index) -> tensor<?xf32>
  %y = "meta.binary"(%b, %zb) {kind = "add"} : (tensor<?xf32>, tensor<?xf32>) -> tensor<?xf32>
  %w = "meta.binary"(%y, %y) {kind = "mul"} : (tensor<?xf32>, tensor<?xf32>) -> tensor<?xf32>
  return %w : tensor<?xf32>
}

// A size seen as 3 and as 5 is not assumed.
// CHECK-LABEL: func.func @varied
//   CHECK-NOT:   meta.guard
//       CHECK:   return
func.func @varied(%x: tensor<?xf32>) -> tensor<?xf32> {
  %e = "meta.unary"(%x) {kind = "exp"} : (tensor<?xf32>) -> tensor<?xf32>
  return %e : tensor<?xf32>
}

// A branch always taken: a guard on its condition, then the branch's ops
// inline; the scf.if is gone.
// CHECK-LABEL: func.func @branch
//       CHECK:   %[[C:.+]] = arith.cmpf ogt
//       CHECK:   %[[T:.+]] = tensor.from_elements %[[C]] : tensor<i1>
//       CHECK:   "meta.guard"(%[[T]]) {id = 1 : i64, reason = "branch at [[#@LINE+10]]:8 taken", site = "[[#@LINE+10]]:8"}
//       CHECK:   %[[E:.+]] = "meta.unary"(%arg0) {kind = "exp"}
//   CHECK-NOT:   scf.if
//   CHECK-NOT:   "neg"
//       CHECK:   return %[[E]]
func.func @branch(%x: tensor<4xf32>) -> tensor<4xf32> {
  %c0 = arith.constant 0 : index
  %first = tensor.extract %x[%c0] : tensor<4xf32>
  %zero = arith.constant 0.0 : f32
  %positive = arith.cmpf ogt, %first, %zero : f32
  %y = scf.if %positive -> (tensor<4xf32>) {
    %e = "meta.unary"(%x) {kind = "exp"} : (tensor<4xf32>) -> tensor<4xf32>
    scf.yield %e : tensor<4xf32>
  } else {
    %n = "meta.unary"(%x) {kind = "neg"} : (tensor<4xf32>) -> tensor<4xf32>
    scf.yield %n : tensor<4xf32>
  }
  return %y : tensor<4xf32>
}

// A branch never taken: the guard is on the negated condition.
// CHECK-LABEL: func.func @branch_else
//       CHECK:   %[[C:.+]] = arith.cmpf ogt
//       CHECK:   %[[TRUE:.+]] = arith.constant true
//       CHECK:   %[[N:.+]] = arith.xori %[[C]], %[[TRUE]] : i1
//       CHECK:   %[[T:.+]] = tensor.from_elements %[[N]] : tensor<i1>
//       CHECK:   "meta.guard"(%[[T]]) {id = 1 : i64, reason = "branch at [[#@LINE+9]]:8 not taken"
//       CHECK:   %[[M:.+]] = "meta.unary"(%arg0) {kind = "neg"}
//   CHECK-NOT:   scf.if
//       CHECK:   return %[[M]]
func.func @branch_else(%x: tensor<4xf32>) -> tensor<4xf32> {
  %c0 = arith.constant 0 : index
  %first = tensor.extract %x[%c0] : tensor<4xf32>
  %zero = arith.constant 0.0 : f32
  %positive = arith.cmpf ogt, %first, %zero : f32
  %y = scf.if %positive -> (tensor<4xf32>) {
    %e = "meta.unary"(%x) {kind = "exp"} : (tensor<4xf32>) -> tensor<4xf32>
    scf.yield %e : tensor<4xf32>
  } else {
    %n = "meta.unary"(%x) {kind = "neg"} : (tensor<4xf32>) -> tensor<4xf32>
    scf.yield %n : tensor<4xf32>
  }
  return %y : tensor<4xf32>
}

// A loop that always ran 3 times is marked for meta-unroll, its site pinned.
// CHECK-LABEL: func.func @loop
//       CHECK:   scf.for
//       CHECK:   } {meta.site = "[[#@LINE+6]]:8", meta.unroll = 3 : i64}
func.func @loop(%x: tensor<4xf32>, %count: tensor<1xi64>) -> tensor<4xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %k = tensor.extract %count[%c0] : tensor<1xi64>
  %n = arith.index_cast %k : i64 to index
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%a = %x) -> (tensor<4xf32>) {
    %t = "meta.unary"(%a) {kind = "tanh"} : (tensor<4xf32>) -> tensor<4xf32>
    scf.yield %t : tensor<4xf32>
  }
  return %r : tensor<4xf32>
}
