// RUN: jitc opt %s --split-input-file --meta-fast-math | FileCheck %s
// `jitc explain` names each rewrite, as the default build (fast math) makes it.
// RUN: jitc explain %s --function gelu | FileCheck %s --check-prefix=EXPLAIN
// RUN: jitc explain %s --function gelu_tanh | FileCheck %s --check-prefix=EXPLAIN-TANH

// GELU's 1 + tanh(u): 2 sigmoid(2u), the doublings as additions of a value
// to itself; the tanh and the broadcast 1.0 are gone.
// CHECK-LABEL: func.func @gelu
//   CHECK-NOT:   arith.constant
//       CHECK:   %[[U2:.+]] = "meta.binary"(%arg0, %arg0) {kind = "add"}
//       CHECK:   %[[S:.+]] = "meta.unary"(%[[U2]]) {kind = "sigmoid"}
//       CHECK:   %[[P:.+]] = "meta.binary"(%[[S]], %[[S]]) {kind = "add"}
//   CHECK-NOT:   tanh
//       CHECK:   "meta.binary"(%arg1, %[[P]]) {kind = "mul"}
//   CHECK-NOT:   tanh
// EXPLAIN: @gelu: meta-fast-math computes 1 + tanh(u) as 2 sigmoid(2u) (fast math)
// EXPLAIN: @gelu: 4 ops in 1 group
func.func @gelu(%u: tensor<4x8xf32>, %half_x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %one_s = arith.constant dense<1.0> : tensor<f32>
  %one = "meta.reindex"(%one_s) {indices = affine_map<(i, j) -> ()>} : (tensor<f32>) -> tensor<4x8xf32>
  %t = "meta.unary"(%u) {kind = "tanh"} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %p = "meta.binary"(%one, %t) {kind = "add"} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %g = "meta.binary"(%half_x, %p) {kind = "mul"} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  return %g : tensor<4x8xf32>
}

// -----

// tanh(u) + 1 (the constant on the right, a splat of the full shape) and
// 1 - tanh(u) = 2 sigmoid(-2u).
// CHECK-LABEL: func.func @orders
//       CHECK:   %[[A:.+]] = "meta.binary"(%arg0, %arg0) {kind = "add"}
//       CHECK:   %[[SA:.+]] = "meta.unary"(%[[A]]) {kind = "sigmoid"}
//       CHECK:   %[[RA:.+]] = "meta.binary"(%[[SA]], %[[SA]]) {kind = "add"}
//       CHECK:   %[[B:.+]] = "meta.binary"(%arg1, %arg1) {kind = "add"}
//       CHECK:   %[[NB:.+]] = "meta.unary"(%[[B]]) {kind = "neg"}
//       CHECK:   %[[SB:.+]] = "meta.unary"(%[[NB]]) {kind = "sigmoid"}
//       CHECK:   %[[RB:.+]] = "meta.binary"(%[[SB]], %[[SB]]) {kind = "add"}
//       CHECK:   return %[[RA]], %[[RB]]
func.func @orders(%u: tensor<8xf32>, %v: tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>) {
  %one = arith.constant dense<1.0> : tensor<8xf32>
  %t = "meta.unary"(%u) {kind = "tanh"} : (tensor<8xf32>) -> tensor<8xf32>
  %p = "meta.binary"(%t, %one) {kind = "add"} : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  %tv = "meta.unary"(%v) {kind = "tanh"} : (tensor<8xf32>) -> tensor<8xf32>
  %m = "meta.binary"(%one, %tv) {kind = "sub"} : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  return %p, %m : tensor<8xf32>, tensor<8xf32>
}

// -----

// A tanh before a loop whose body adds 1: the sigmoid is built where the
// tanh was, outside the loop, not once per iteration.
// CHECK-LABEL: func.func @hoisted
//       CHECK:   %[[S:.+]] = "meta.unary"(%{{.+}}) {kind = "sigmoid"}
//       CHECK:   %[[R:.+]] = "meta.binary"(%[[S]], %[[S]]) {kind = "add"}
//       CHECK:   scf.for
//   CHECK-NOT:   sigmoid
//       CHECK:   "meta.binary"(%{{.+}}, %[[R]]) {kind = "mul"}
func.func @hoisted(%u: tensor<4xf32>, %n: index) -> tensor<4xf32> {
  %one = arith.constant dense<1.0> : tensor<4xf32>
  %t = "meta.unary"(%u) {kind = "tanh"} : (tensor<4xf32>) -> tensor<4xf32>
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%x = %u) -> tensor<4xf32> {
    %p = "meta.binary"(%one, %t) {kind = "add"} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    %q = "meta.binary"(%x, %p) {kind = "mul"} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    scf.yield %q : tensor<4xf32>
  }
  return %r : tensor<4xf32>
}

// -----

// Dynamic shapes are left alone: the op checks its operands' sizes at run
// time (here 4 against %x's), and the broadcast its own; dropping the
// constant would drop those errors.
// CHECK-LABEL: func.func @dynamic
//   CHECK-NOT:   sigmoid
//   CHECK-NOT:   "mul"
//       CHECK:   return
func.func @dynamic(%x: tensor<?xf32>, %v: tensor<?xf32>) -> (tensor<?xf32>, tensor<?xf32>) {
  %two = arith.constant dense<2.0> : tensor<4xf32>
  %p = "meta.binary"(%x, %two) {kind = "pow"} : (tensor<?xf32>, tensor<4xf32>) -> tensor<?xf32>
  %one_s = arith.constant dense<1.0> : tensor<f32>
  %c0 = arith.constant 0 : index
  %n = tensor.dim %x, %c0 : tensor<?xf32>
  %one = "meta.reindex"(%one_s, %n) {indices = affine_map<(i) -> ()>} : (tensor<f32>, index) -> tensor<?xf32>
  %t = "meta.unary"(%v) {kind = "tanh"} : (tensor<?xf32>) -> tensor<?xf32>
  %m = "meta.binary"(%one, %t) {kind = "add"} : (tensor<?xf32>, tensor<?xf32>) -> tensor<?xf32>
  return %p, %m : tensor<?xf32>, tensor<?xf32>
}

// -----

// pow(x, 2) is x * x, f32 and f64; other exponents stay pow.
// CHECK-LABEL: func.func @squares
//       CHECK:   %[[A:.+]] = "meta.binary"(%arg0, %arg0) {kind = "mul"} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
//       CHECK:   %[[B:.+]] = "meta.binary"(%arg1, %arg1) {kind = "mul"} : (tensor<4xf64>, tensor<4xf64>) -> tensor<4xf64>
//       CHECK:   %[[C:.+]] = "meta.binary"(%arg0, %{{.+}}) {kind = "pow"}
//       CHECK:   return %[[A]], %[[B]], %[[C]]
func.func @squares(%x: tensor<4xf32>, %y: tensor<4xf64>) -> (tensor<4xf32>, tensor<4xf64>, tensor<4xf32>) {
  %two = arith.constant dense<2.0> : tensor<f32>
  %two_b = "meta.reindex"(%two) {indices = affine_map<(i) -> ()>} : (tensor<f32>) -> tensor<4xf32>
  %a = "meta.binary"(%x, %two_b) {kind = "pow"} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %two_d = arith.constant dense<2.0> : tensor<4xf64>
  %b = "meta.binary"(%y, %two_d) {kind = "pow"} : (tensor<4xf64>, tensor<4xf64>) -> tensor<4xf64>
  %three = arith.constant dense<3.0> : tensor<4xf32>
  %c = "meta.binary"(%x, %three) {kind = "pow"} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %a, %b, %c : tensor<4xf32>, tensor<4xf64>, tensor<4xf32>
}

// -----

// Left alone: a tanh with another use (computed anyway), f64 (no fast
// polynomial: libm either way), a constant that is not 1, a broadcast 1.0
// with an overflow condition (not 1 everywhere), tanh(u) - 1, and
// 2 ** x (the constant is the base).
// CHECK-LABEL: func.func @kept
//   CHECK-NOT:   sigmoid
//   CHECK-NOT:   "mul"
//       CHECK:   return
func.func @kept(%u: tensor<4xf32>, %d: tensor<4xf64>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf64>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
  %one = arith.constant dense<1.0> : tensor<4xf32>
  %t = "meta.unary"(%u) {kind = "tanh"} : (tensor<4xf32>) -> tensor<4xf32>
  %p = "meta.binary"(%one, %t) {kind = "add"} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %one_d = arith.constant dense<1.0> : tensor<4xf64>
  %td = "meta.unary"(%d) {kind = "tanh"} : (tensor<4xf64>) -> tensor<4xf64>
  %pd = "meta.binary"(%one_d, %td) {kind = "add"} : (tensor<4xf64>, tensor<4xf64>) -> tensor<4xf64>
  %other = arith.constant dense<1.5> : tensor<4xf32>
  %t2 = "meta.unary"(%u) {kind = "tanh"} : (tensor<4xf32>) -> tensor<4xf32>
  %q = "meta.binary"(%other, %t2) {kind = "add"} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %one_s = arith.constant dense<1.0> : tensor<f32>
  %masked = "meta.reindex"(%one_s) {indices = affine_map<(i) -> ()>, overflow_value = 0.0 : f32,
                                    overflow_conditions = [affine_set<(d0) : (d0 - 2 >= 0)>]} : (tensor<f32>) -> tensor<4xf32>
  %t3 = "meta.unary"(%u) {kind = "tanh"} : (tensor<4xf32>) -> tensor<4xf32>
  %r = "meta.binary"(%masked, %t3) {kind = "add"} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %t4 = "meta.unary"(%u) {kind = "tanh"} : (tensor<4xf32>) -> tensor<4xf32>
  %s = "meta.binary"(%t4, %one) {kind = "sub"} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %two = arith.constant dense<2.0> : tensor<4xf32>
  %e = "meta.binary"(%two, %u) {kind = "pow"} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %t, %p, %pd, %q, %r, %s, %e : tensor<4xf32>, tensor<4xf32>, tensor<4xf64>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}

// -----

// GELU as written (0.5 y (1 + tanh(k (y + a y^3)))): the argument as
// y (2k + 2ka y^2), built negated (-2k, -2ka) under a neg that cancels
// sigmoid's own; the halving and the doubling cancel (y sigmoid(2u)).
// The whole body is checked: every op of the old argument, the tanh and
// every old constant are gone.
// CHECK-LABEL: func.func @gelu_tanh
//  CHECK-NEXT:   %[[Y2:.+]] = "meta.binary"(%arg0, %arg0) {kind = "mul"}
//  CHECK-NEXT:   %[[KA:.+]] = arith.constant dense<-0.0713548{{[0-9]*}}> : tensor<4x8xf32>
//  CHECK-NEXT:   %[[H:.+]] = "meta.binary"(%[[KA]], %[[Y2]]) {kind = "mul"}
//  CHECK-NEXT:   %[[K:.+]] = arith.constant dense<-1.595769{{[0-9]*}}> : tensor<4x8xf32>
//  CHECK-NEXT:   %[[S:.+]] = "meta.binary"(%[[K]], %[[H]]) {kind = "add"}
//  CHECK-NEXT:   %[[W:.+]] = "meta.binary"(%arg0, %[[S]]) {kind = "mul"}
//  CHECK-NEXT:   %[[N:.+]] = "meta.unary"(%[[W]]) {kind = "neg"}
//  CHECK-NEXT:   %[[SIG:.+]] = "meta.unary"(%[[N]]) {kind = "sigmoid"}
//  CHECK-NEXT:   %[[G:.+]] = "meta.binary"(%arg0, %[[SIG]]) {kind = "mul"}
//  CHECK-NEXT:   return %[[G]]
// EXPLAIN-TANH: @gelu_tanh: meta-fast-math computes 1 + tanh(k (y + a y^3)) as 2 sigmoid(y (2k + 2ka y^2)) (fast math)
// EXPLAIN-TANH: @gelu_tanh: meta-fast-math computes (x / 2) (2 sigmoid(v)) as x sigmoid(v) (fast math)
func.func @gelu_tanh(%y: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %k_s = arith.constant dense<0.797884583> : tensor<f32>
  %k = "meta.reindex"(%k_s) {indices = affine_map<(i, j) -> ()>} : (tensor<f32>) -> tensor<4x8xf32>
  %a_s = arith.constant dense<0.044715> : tensor<f32>
  %a = "meta.reindex"(%a_s) {indices = affine_map<(i, j) -> ()>} : (tensor<f32>) -> tensor<4x8xf32>
  %half_s = arith.constant dense<0.5> : tensor<f32>
  %half = "meta.reindex"(%half_s) {indices = affine_map<(i, j) -> ()>} : (tensor<f32>) -> tensor<4x8xf32>
  %one_s = arith.constant dense<1.0> : tensor<f32>
  %one = "meta.reindex"(%one_s) {indices = affine_map<(i, j) -> ()>} : (tensor<f32>) -> tensor<4x8xf32>
  %y2 = "meta.binary"(%y, %y) {kind = "mul"} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %y3 = "meta.binary"(%y2, %y) {kind = "mul"} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %ay3 = "meta.binary"(%a, %y3) {kind = "mul"} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %in = "meta.binary"(%y, %ay3) {kind = "add"} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %u = "meta.binary"(%k, %in) {kind = "mul"} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %t = "meta.unary"(%u) {kind = "tanh"} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %p = "meta.binary"(%one, %t) {kind = "add"} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %h = "meta.binary"(%half, %y) {kind = "mul"} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %g = "meta.binary"(%h, %p) {kind = "mul"} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  return %g : tensor<4x8xf32>
}

// -----

// The other orders of each product and sum, with 1 - tanh(u): the
// argument is -2u, built as the negation of y (2k + 2ka y^2); the product
// with another value than 0.5 y stays.
// CHECK-LABEL: func.func @gelu_orders
//  CHECK-NEXT:   %[[Y2:.+]] = "meta.binary"(%arg0, %arg0) {kind = "mul"}
//  CHECK-NEXT:   %[[KA:.+]] = arith.constant dense<0.0713548{{[0-9]*}}>
//  CHECK-NEXT:   %[[H:.+]] = "meta.binary"(%[[KA]], %[[Y2]]) {kind = "mul"}
//  CHECK-NEXT:   %[[K:.+]] = arith.constant dense<1.595769{{[0-9]*}}>
//  CHECK-NEXT:   %[[S:.+]] = "meta.binary"(%[[K]], %[[H]]) {kind = "add"}
//  CHECK-NEXT:   %[[W:.+]] = "meta.binary"(%arg0, %[[S]]) {kind = "mul"}
//  CHECK-NEXT:   %[[N:.+]] = "meta.unary"(%[[W]]) {kind = "neg"}
//  CHECK-NEXT:   %[[SIG:.+]] = "meta.unary"(%[[N]]) {kind = "sigmoid"}
//  CHECK-NEXT:   %[[D:.+]] = "meta.binary"(%[[SIG]], %[[SIG]]) {kind = "add"}
//  CHECK-NEXT:   %[[G:.+]] = "meta.binary"(%arg1, %[[D]]) {kind = "mul"}
//  CHECK-NEXT:   return %[[G]]
func.func @gelu_orders(%y: tensor<4x8xf32>, %x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %k = arith.constant dense<0.797884583> : tensor<4x8xf32>
  %a = arith.constant dense<0.044715> : tensor<4x8xf32>
  %one = arith.constant dense<1.0> : tensor<4x8xf32>
  %y2 = "meta.binary"(%y, %y) {kind = "mul"} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %y3 = "meta.binary"(%y, %y2) {kind = "mul"} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %ay3 = "meta.binary"(%y3, %a) {kind = "mul"} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %in = "meta.binary"(%ay3, %y) {kind = "add"} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %u = "meta.binary"(%in, %k) {kind = "mul"} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %t = "meta.unary"(%u) {kind = "tanh"} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %m = "meta.binary"(%one, %t) {kind = "sub"} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %g = "meta.binary"(%x, %m) {kind = "mul"} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  return %g : tensor<4x8xf32>
}

// -----

// tanh(c v): 2c v (here 3 v), negated under a neg that cancels sigmoid's.
// When an op of the cubic has another use, the argument is still c v
// (the cube stays); when c v has another use, or 2c is past the largest
// f32, u + u as before.
// CHECK-LABEL: func.func @scaled
//       CHECK:   %[[C:.+]] = arith.constant dense<-3.000000e+00> : tensor<4x8xf32>
//  CHECK-NEXT:   %[[W:.+]] = "meta.binary"(%[[C]], %arg0) {kind = "mul"}
//  CHECK-NEXT:   %[[N:.+]] = "meta.unary"(%[[W]]) {kind = "neg"}
//  CHECK-NEXT:   %[[S1:.+]] = "meta.unary"(%[[N]]) {kind = "sigmoid"}
//  CHECK-NEXT:   %[[P1:.+]] = "meta.binary"(%[[S1]], %[[S1]]) {kind = "add"}
//  CHECK-NEXT:   %[[Y2:.+]] = "meta.binary"(%arg0, %arg0) {kind = "mul"}
//  CHECK-NEXT:   %[[Y3:.+]] = "meta.binary"(%[[Y2]], %arg0) {kind = "mul"}
//  CHECK-NEXT:   %[[AY3:.+]] = "meta.binary"(%{{.+}}, %[[Y3]]) {kind = "mul"}
//  CHECK-NEXT:   %[[IN:.+]] = "meta.binary"(%arg0, %[[AY3]]) {kind = "add"}
//  CHECK-NEXT:   %[[C2:.+]] = arith.constant dense<-1.595769{{[0-9]*}}> : tensor<4x8xf32>
//  CHECK-NEXT:   %[[W2:.+]] = "meta.binary"(%[[C2]], %[[IN]]) {kind = "mul"}
//  CHECK-NEXT:   %[[N2:.+]] = "meta.unary"(%[[W2]]) {kind = "neg"}
//  CHECK-NEXT:   %[[S2:.+]] = "meta.unary"(%[[N2]]) {kind = "sigmoid"}
//  CHECK-NEXT:   %[[P2:.+]] = "meta.binary"(%[[S2]], %[[S2]]) {kind = "add"}
//  CHECK-NEXT:   %[[U:.+]] = "meta.binary"(%{{.+}}, %arg0) {kind = "mul"}
//  CHECK-NEXT:   %[[U2:.+]] = "meta.binary"(%[[U]], %[[U]]) {kind = "add"}
//  CHECK-NEXT:   %[[S3:.+]] = "meta.unary"(%[[U2]]) {kind = "sigmoid"}
//  CHECK-NEXT:   %[[P3:.+]] = "meta.binary"(%[[S3]], %[[S3]]) {kind = "add"}
//  CHECK-NEXT:   %[[HUGE:.+]] = "meta.binary"(%{{.+}}, %arg0) {kind = "mul"}
//  CHECK-NEXT:   %[[HUGE2:.+]] = "meta.binary"(%[[HUGE]], %[[HUGE]]) {kind = "add"}
//  CHECK-NEXT:   %[[S4:.+]] = "meta.unary"(%[[HUGE2]]) {kind = "sigmoid"}
//  CHECK-NEXT:   %[[P4:.+]] = "meta.binary"(%[[S4]], %[[S4]]) {kind = "add"}
//  CHECK-NEXT:   return %[[P1]], %[[P2]], %[[Y3]], %[[P3]], %[[U]], %[[P4]]
func.func @scaled(%v: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) {
  %c_s = arith.constant dense<1.5> : tensor<f32>
  %c = "meta.reindex"(%c_s) {indices = affine_map<(i, j) -> ()>} : (tensor<f32>) -> tensor<4x8xf32>
  %k_s = arith.constant dense<0.797884583> : tensor<f32>
  %k = "meta.reindex"(%k_s) {indices = affine_map<(i, j) -> ()>} : (tensor<f32>) -> tensor<4x8xf32>
  %a_s = arith.constant dense<0.044715> : tensor<f32>
  %a = "meta.reindex"(%a_s) {indices = affine_map<(i, j) -> ()>} : (tensor<f32>) -> tensor<4x8xf32>
  %one_s = arith.constant dense<1.0> : tensor<f32>
  %one = "meta.reindex"(%one_s) {indices = affine_map<(i, j) -> ()>} : (tensor<f32>) -> tensor<4x8xf32>
  %huge_s = arith.constant dense<3.0e38> : tensor<f32>
  %huge = "meta.reindex"(%huge_s) {indices = affine_map<(i, j) -> ()>} : (tensor<f32>) -> tensor<4x8xf32>
  %u = "meta.binary"(%c, %v) {kind = "mul"} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %t = "meta.unary"(%u) {kind = "tanh"} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %p = "meta.binary"(%one, %t) {kind = "add"} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %y2 = "meta.binary"(%v, %v) {kind = "mul"} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %y3 = "meta.binary"(%y2, %v) {kind = "mul"} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %ay3 = "meta.binary"(%a, %y3) {kind = "mul"} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %in = "meta.binary"(%v, %ay3) {kind = "add"} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %u2 = "meta.binary"(%k, %in) {kind = "mul"} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %t2 = "meta.unary"(%u2) {kind = "tanh"} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %p2 = "meta.binary"(%one, %t2) {kind = "add"} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %u3 = "meta.binary"(%c, %v) {kind = "mul"} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %t3 = "meta.unary"(%u3) {kind = "tanh"} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %p3 = "meta.binary"(%one, %t3) {kind = "add"} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %u4 = "meta.binary"(%huge, %v) {kind = "mul"} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %t4 = "meta.unary"(%u4) {kind = "tanh"} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %p4 = "meta.binary"(%one, %t4) {kind = "add"} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  return %p, %p2, %y3, %p3, %u3, %p4 : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>
}

// -----

// (x / 2) (s + s) is x s only for a sigmoid s (in [0, 1], so s + s is
// exact), a halving by exactly 0.5, and neither product used elsewhere:
// a quarter, an exp, and a halving returned too are each kept.
// CHECK-LABEL: func.func @halved
//       CHECK:   %[[S:.+]] = "meta.unary"(%arg1) {kind = "sigmoid"}
//  CHECK-NEXT:   %[[R:.+]] = "meta.binary"(%arg0, %[[S]]) {kind = "mul"}
//  CHECK-NEXT:   %[[T2:.+]] = "meta.binary"(%[[S]], %[[S]]) {kind = "add"}
//  CHECK-NEXT:   %[[Q:.+]] = "meta.binary"(%{{.+}}, %arg0) {kind = "mul"}
//  CHECK-NEXT:   %[[R2:.+]] = "meta.binary"(%[[Q]], %[[T2]]) {kind = "mul"}
//  CHECK-NEXT:   %[[E:.+]] = "meta.unary"(%arg1) {kind = "exp"}
//  CHECK-NEXT:   %[[TE:.+]] = "meta.binary"(%[[E]], %[[E]]) {kind = "add"}
//  CHECK-NEXT:   %[[H3:.+]] = "meta.binary"(%{{.+}}, %arg0) {kind = "mul"}
//  CHECK-NEXT:   %[[R3:.+]] = "meta.binary"(%[[H3]], %[[TE]]) {kind = "mul"}
//  CHECK-NEXT:   %[[T4:.+]] = "meta.binary"(%[[S]], %[[S]]) {kind = "add"}
//  CHECK-NEXT:   %[[H4:.+]] = "meta.binary"(%{{.+}}, %arg0) {kind = "mul"}
//  CHECK-NEXT:   %[[R4:.+]] = "meta.binary"(%[[H4]], %[[T4]]) {kind = "mul"}
//  CHECK-NEXT:   return %[[R]], %[[R2]], %[[R3]], %[[R4]], %[[H4]]
func.func @halved(%x: tensor<4x8xf32>, %v: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) {
  %half_s = arith.constant dense<0.5> : tensor<f32>
  %half = "meta.reindex"(%half_s) {indices = affine_map<(i, j) -> ()>} : (tensor<f32>) -> tensor<4x8xf32>
  %quarter_s = arith.constant dense<0.25> : tensor<f32>
  %quarter = "meta.reindex"(%quarter_s) {indices = affine_map<(i, j) -> ()>} : (tensor<f32>) -> tensor<4x8xf32>
  %s = "meta.unary"(%v) {kind = "sigmoid"} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %two_s = "meta.binary"(%s, %s) {kind = "add"} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %h = "meta.binary"(%x, %half) {kind = "mul"} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %r = "meta.binary"(%two_s, %h) {kind = "mul"} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %two_s2 = "meta.binary"(%s, %s) {kind = "add"} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %q = "meta.binary"(%quarter, %x) {kind = "mul"} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %r2 = "meta.binary"(%q, %two_s2) {kind = "mul"} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %e = "meta.unary"(%v) {kind = "exp"} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %two_e = "meta.binary"(%e, %e) {kind = "add"} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %h3 = "meta.binary"(%half, %x) {kind = "mul"} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %r3 = "meta.binary"(%h3, %two_e) {kind = "mul"} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %two_s4 = "meta.binary"(%s, %s) {kind = "add"} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %h4 = "meta.binary"(%half, %x) {kind = "mul"} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %r4 = "meta.binary"(%h4, %two_s4) {kind = "mul"} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  return %r, %r2, %r3, %r4, %h4 : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>
}

// -----

// The argument is built where u was made: before a loop whose body takes
// the tanh, not in it.
// CHECK-LABEL: func.func @outside
//       CHECK:   %[[S:.+]] = "meta.binary"(%cst{{.*}}) {kind = "add"}
//  CHECK-NEXT:   %[[W:.+]] = "meta.binary"(%arg0, %[[S]]) {kind = "mul"}
//  CHECK-NEXT:   %[[N:.+]] = "meta.unary"(%[[W]]) {kind = "neg"}
//       CHECK:   scf.for
//  CHECK-NEXT:     "meta.unary"(%[[N]]) {kind = "sigmoid"}
//   CHECK-NOT:     "meta.binary"(%arg0, %arg0)
//       CHECK:     scf.yield
func.func @outside(%y: tensor<4x8xf32>, %n: index) -> tensor<4x8xf32> {
  %k_s = arith.constant dense<0.797884583> : tensor<f32>
  %k = "meta.reindex"(%k_s) {indices = affine_map<(i, j) -> ()>} : (tensor<f32>) -> tensor<4x8xf32>
  %a_s = arith.constant dense<0.044715> : tensor<f32>
  %a = "meta.reindex"(%a_s) {indices = affine_map<(i, j) -> ()>} : (tensor<f32>) -> tensor<4x8xf32>
  %half_s = arith.constant dense<0.5> : tensor<f32>
  %half = "meta.reindex"(%half_s) {indices = affine_map<(i, j) -> ()>} : (tensor<f32>) -> tensor<4x8xf32>
  %one_s = arith.constant dense<1.0> : tensor<f32>
  %one = "meta.reindex"(%one_s) {indices = affine_map<(i, j) -> ()>} : (tensor<f32>) -> tensor<4x8xf32>
  %y2 = "meta.binary"(%y, %y) {kind = "mul"} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %y3 = "meta.binary"(%y2, %y) {kind = "mul"} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %ay3 = "meta.binary"(%a, %y3) {kind = "mul"} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %in = "meta.binary"(%y, %ay3) {kind = "add"} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %u = "meta.binary"(%k, %in) {kind = "mul"} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %y) -> tensor<4x8xf32> {
    %t = "meta.unary"(%u) {kind = "tanh"} : (tensor<4x8xf32>) -> tensor<4x8xf32>
    %p = "meta.binary"(%one, %t) {kind = "add"} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
    %g = "meta.binary"(%acc, %p) {kind = "mul"} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
    scf.yield %g : tensor<4x8xf32>
  }
  return %r : tensor<4x8xf32>
}

// -----

// One constant as both k and a (here 0.5, CSE's doing): erased once. A
// constant whose 2ka is not a normal f32 (a = 1e-45) leaves the cubic
// alone (0 times an infinite y^2 would be NaN): the argument is c v.
// CHECK-LABEL: func.func @shared
//   CHECK-NOT:   tanh
//       CHECK:   arith.constant dense<-5.000000e-01>
//       CHECK:   arith.constant dense<-1.000000e+00>
//       CHECK:   "meta.unary"(%{{.+}}) {kind = "sigmoid"}
//       CHECK:   %[[CUBE:.+]] = "meta.binary"(%{{[0-9]+}}, %arg0) {kind = "mul"}
//       CHECK:   "meta.binary"(%{{.+}}, %[[CUBE]]) {kind = "mul"}
//       CHECK:   arith.constant dense<-5.000000e-01>
//       CHECK:   "meta.unary"(%{{.+}}) {kind = "sigmoid"}
//   CHECK-NOT:   tanh
//       CHECK:   return
func.func @shared(%y: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %c_s = arith.constant dense<0.5> : tensor<f32>
  %c = "meta.reindex"(%c_s) {indices = affine_map<(i, j) -> ()>} : (tensor<f32>) -> tensor<4x8xf32>
  %one_s = arith.constant dense<1.0> : tensor<f32>
  %one = "meta.reindex"(%one_s) {indices = affine_map<(i, j) -> ()>} : (tensor<f32>) -> tensor<4x8xf32>
  %tiny_s = arith.constant dense<1.0e-45> : tensor<f32>
  %tiny = "meta.reindex"(%tiny_s) {indices = affine_map<(i, j) -> ()>} : (tensor<f32>) -> tensor<4x8xf32>
  %k_s = arith.constant dense<0.25> : tensor<f32>
  %k = "meta.reindex"(%k_s) {indices = affine_map<(i, j) -> ()>} : (tensor<f32>) -> tensor<4x8xf32>
  %y2 = "meta.binary"(%y, %y) {kind = "mul"} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %y3 = "meta.binary"(%y2, %y) {kind = "mul"} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %ay3 = "meta.binary"(%c, %y3) {kind = "mul"} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %in = "meta.binary"(%y, %ay3) {kind = "add"} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %u = "meta.binary"(%c, %in) {kind = "mul"} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %t = "meta.unary"(%u) {kind = "tanh"} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %p = "meta.binary"(%one, %t) {kind = "add"} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %z2 = "meta.binary"(%y, %y) {kind = "mul"} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %z3 = "meta.binary"(%z2, %y) {kind = "mul"} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %az3 = "meta.binary"(%tiny, %z3) {kind = "mul"} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %in2 = "meta.binary"(%y, %az3) {kind = "add"} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %u2 = "meta.binary"(%k, %in2) {kind = "mul"} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %t2 = "meta.unary"(%u2) {kind = "tanh"} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %p2 = "meta.binary"(%one, %t2) {kind = "add"} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  return %p, %p2 : tensor<4x8xf32>, tensor<4x8xf32>
}

// -----

// Blocks out of dominance order (a CFG region): u is made in a block
// printed after the one with the tanh. The ops the rewrite erases there
// come later in the pass's list, which skips them.
// CHECK-LABEL: func.func @blocks
//       CHECK:   ^bb1:
//       CHECK:     "meta.unary"(%{{.+}}) {kind = "sigmoid"}
//       CHECK:   ^bb2:
//       CHECK:     arith.constant dense<-3.000000e+00>
//   CHECK-NOT:   tanh
func.func @blocks(%v: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %one = arith.constant dense<1.0> : tensor<4x8xf32>
  %c = arith.constant dense<1.5> : tensor<4x8xf32>
  cf.br ^bb2
^bb1:
  %t = "meta.unary"(%u) {kind = "tanh"} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %p = "meta.binary"(%one, %t) {kind = "add"} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  return %p : tensor<4x8xf32>
^bb2:
  %u = "meta.binary"(%c, %v) {kind = "mul"} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  cf.br ^bb1
}

// -----

// The cubic needs a > 0 (a negative a lets y + a y^3 cancel) and a normal
// 2k (here 2e-39 is subnormal): both become (2c) v instead, the cube
// kept.
// CHECK-LABEL: func.func @not_cubic
//       CHECK:   %[[IN:.+]] = "meta.binary"(%arg0, %{{.+}}) {kind = "add"}
//       CHECK:   arith.constant dense<-1.595769{{[0-9]*}}>
//  CHECK-NEXT:   "meta.binary"(%{{.+}}, %[[IN]]) {kind = "mul"}
//       CHECK:   %[[IN2:.+]] = "meta.binary"(%arg0, %{{.+}}) {kind = "add"}
//       CHECK:   arith.constant dense<-2.000000e-39>
//  CHECK-NEXT:   "meta.binary"(%{{.+}}, %[[IN2]]) {kind = "mul"}
//   CHECK-NOT:   tanh
func.func @not_cubic(%y: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %k_s = arith.constant dense<0.797884583> : tensor<f32>
  %k = "meta.reindex"(%k_s) {indices = affine_map<(i, j) -> ()>} : (tensor<f32>) -> tensor<4x8xf32>
  %neg_a_s = arith.constant dense<-0.044715> : tensor<f32>
  %neg_a = "meta.reindex"(%neg_a_s) {indices = affine_map<(i, j) -> ()>} : (tensor<f32>) -> tensor<4x8xf32>
  %tiny_k_s = arith.constant dense<1.0e-39> : tensor<f32>
  %tiny_k = "meta.reindex"(%tiny_k_s) {indices = affine_map<(i, j) -> ()>} : (tensor<f32>) -> tensor<4x8xf32>
  %a_s = arith.constant dense<0.044715> : tensor<f32>
  %a = "meta.reindex"(%a_s) {indices = affine_map<(i, j) -> ()>} : (tensor<f32>) -> tensor<4x8xf32>
  %one_s = arith.constant dense<1.0> : tensor<f32>
  %one = "meta.reindex"(%one_s) {indices = affine_map<(i, j) -> ()>} : (tensor<f32>) -> tensor<4x8xf32>
  %y2 = "meta.binary"(%y, %y) {kind = "mul"} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %y3 = "meta.binary"(%y2, %y) {kind = "mul"} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %ay3 = "meta.binary"(%neg_a, %y3) {kind = "mul"} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %in = "meta.binary"(%y, %ay3) {kind = "add"} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %u = "meta.binary"(%k, %in) {kind = "mul"} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %t = "meta.unary"(%u) {kind = "tanh"} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %p = "meta.binary"(%one, %t) {kind = "add"} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %z2 = "meta.binary"(%y, %y) {kind = "mul"} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %z3 = "meta.binary"(%z2, %y) {kind = "mul"} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %az3 = "meta.binary"(%a, %z3) {kind = "mul"} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %in2 = "meta.binary"(%y, %az3) {kind = "add"} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %u2 = "meta.binary"(%tiny_k, %in2) {kind = "mul"} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %t2 = "meta.unary"(%u2) {kind = "tanh"} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %p2 = "meta.binary"(%one, %t2) {kind = "add"} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  return %p, %p2 : tensor<4x8xf32>, tensor<4x8xf32>
}

// -----

// Rank 0: a scalar that is both c and, under an identity broadcast, the 1
// (one op listed twice for erasure, once itself and once as the
// broadcast's input): erased once.
// CHECK-LABEL: func.func @rank0
//       CHECK:   %[[C:.+]] = arith.constant dense<-2.000000e+00> : tensor<f32>
//  CHECK-NEXT:   %[[W:.+]] = "meta.binary"(%[[C]], %arg0) {kind = "mul"}
//  CHECK-NEXT:   %[[N:.+]] = "meta.unary"(%[[W]]) {kind = "neg"}
//  CHECK-NEXT:   %[[S:.+]] = "meta.unary"(%[[N]]) {kind = "sigmoid"}
//  CHECK-NEXT:   %[[P:.+]] = "meta.binary"(%[[S]], %[[S]]) {kind = "add"}
//  CHECK-NEXT:   return %[[P]]
func.func @rank0(%v: tensor<f32>) -> tensor<f32> {
  %s = arith.constant dense<1.0> : tensor<f32>
  %one = "meta.reindex"(%s) {indices = affine_map<() -> ()>} : (tensor<f32>) -> tensor<f32>
  %u = "meta.binary"(%s, %v) {kind = "mul"} : (tensor<f32>, tensor<f32>) -> tensor<f32>
  %t = "meta.unary"(%u) {kind = "tanh"} : (tensor<f32>) -> tensor<f32>
  %p = "meta.binary"(%one, %t) {kind = "add"} : (tensor<f32>, tensor<f32>) -> tensor<f32>
  return %p : tensor<f32>
}
