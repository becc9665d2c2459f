// RUN: jitc opt %s --split-input-file --meta-fast-math | FileCheck %s
// `jitc explain` names each rewrite, as the default build (fast math) makes it.
// RUN: jitc explain %s --function gelu | FileCheck %s --check-prefix=EXPLAIN

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
