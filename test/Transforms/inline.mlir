// RUN: jitc opt %s --split-input-file --meta-inline | FileCheck %s

// A callee with meta ops (which upstream `inline` refuses) is inlined, its
// guard renumbered after the caller's; calls nested in the callee are
// inlined too.
// CHECK-LABEL: func.func @caller
//       CHECK:   "meta.guard"(%arg1) {id = 1 : i64, reason = "caller"}
//       CHECK:   %[[A:.+]] = "meta.unary"(%arg0) {kind = "tanh"}
//       CHECK:   "meta.guard"(%arg1) {id = 2 : i64, reason = "callee"}
//       CHECK:   %[[B:.+]] = "meta.unary"(%[[A]]) {kind = "neg"}
//   CHECK-NOT:   call
//       CHECK:   return %[[B]]
func.func @caller(%x: tensor<4xf32>, %ok: tensor<i1>) -> tensor<4xf32> {
  "meta.guard"(%ok) {id = 1 : i64, reason = "caller"} : (tensor<i1>) -> ()
  %y = func.call @cell(%x, %ok) : (tensor<4xf32>, tensor<i1>) -> tensor<4xf32>
  return %y : tensor<4xf32>
}
func.func private @cell(%a: tensor<4xf32>, %ok: tensor<i1>) -> tensor<4xf32> {
  %t = "meta.unary"(%a) {kind = "tanh"} : (tensor<4xf32>) -> tensor<4xf32>
  "meta.guard"(%ok) {id = 1 : i64, reason = "callee"} : (tensor<i1>) -> ()
  %n = func.call @negate(%t) : (tensor<4xf32>) -> tensor<4xf32>
  return %n : tensor<4xf32>
}
func.func private @negate(%a: tensor<4xf32>) -> tensor<4xf32> {
  %n = "meta.unary"(%a) {kind = "neg"} : (tensor<4xf32>) -> tensor<4xf32>
  return %n : tensor<4xf32>
}

// -----

// Fused kernels stay calls; recursion is never inlined.
// CHECK-LABEL: func.func @keeps
//       CHECK:   call @kernel(%arg0)
//       CHECK:   call @recurse(%{{.+}}, %arg1)
func.func @keeps(%x: tensor<4xf32>, %n: index) -> tensor<4xf32> {
  %y = func.call @kernel(%x) : (tensor<4xf32>) -> tensor<4xf32>
  %z = func.call @recurse(%y, %n) : (tensor<4xf32>, index) -> tensor<4xf32>
  return %z : tensor<4xf32>
}
func.func private @kernel(%a: tensor<4xf32>) -> tensor<4xf32> attributes {meta.fused, meta.domain = array<i64: 4>} {
  %e = "meta.unary"(%a) {kind = "exp"} : (tensor<4xf32>) -> tensor<4xf32>
  return %e : tensor<4xf32>
}
// CHECK-LABEL: func.func private @recurse
//       CHECK:   call @recurse
func.func private @recurse(%a: tensor<4xf32>, %n: index) -> tensor<4xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %done = arith.cmpi eq, %n, %c0 : index
  %r = scf.if %done -> (tensor<4xf32>) {
    scf.yield %a : tensor<4xf32>
  } else {
    %m = arith.subi %n, %c1 : index
    %t = "meta.unary"(%a) {kind = "tanh"} : (tensor<4xf32>) -> tensor<4xf32>
    %s = func.call @recurse(%t, %m) : (tensor<4xf32>, index) -> tensor<4xf32>
    scf.yield %s : tensor<4xf32>
  }
  return %r : tensor<4xf32>
}
