// Kernels that are the same code under other names are compiled once
// (an unrolled loop makes one copy per iteration): every call goes to the
// first. Locations do not keep copies apart, except in kernels that report
// a line when they fail: an integer division (a zero divisor is reported
// at its op) stays at each of its places, and so does every kernel in the
// bounds-checked mode.
// RUN: jitc compile %s --emit mlir | FileCheck %s
// RUN: jitc compile %s --emit mlir --check-bounds | FileCheck %s --check-prefix=CHECKED
// RUN: not jitc run %s --input 4xf32=1 --input 4xf32=2 --input 4xi32=6 --input 4xi32=0 --input 4xi32=5 --input 4xi32=7 2>&1 | FileCheck %s --check-prefix=FAIL

// Two exponentials on two lines: one kernel. Two divisions: two kernels.
// CHECK-COUNT-3: func.func @main_fused_
// CHECK-NOT: func.func @main_fused_
// CHECKED-COUNT-4: func.func @main_fused_
// CHECKED-NOT: func.func @main_fused_

// The second division's zero divisor is reported at its own line, not at
// the first's.
// FAIL-NOT: result
// FAIL: 'meta.binary' at line [[# @LINE + 5]]: integer division by zero
func.func @main(%x: tensor<4xf32>, %y: tensor<4xf32>, %a: tensor<4xi32>, %b: tensor<4xi32>, %c: tensor<4xi32>, %d: tensor<4xi32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xi32>, tensor<4xi32>) {
  %e1 = "meta.unary"(%x) {kind = "exp"} : (tensor<4xf32>) -> tensor<4xf32>
  %e2 = "meta.unary"(%y) {kind = "exp"} : (tensor<4xf32>) -> tensor<4xf32>
  %q1 = "meta.binary"(%c, %d) {kind = "div"} : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi32>
  %q2 = "meta.binary"(%a, %b) {kind = "div"} : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi32>
  return %e1, %e2, %q1, %q2 : tensor<4xf32>, tensor<4xf32>, tensor<4xi32>, tensor<4xi32>
}
