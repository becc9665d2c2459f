// --verify-diagnostics fails on an unexpected diagnostic and on an
// expectation that was not produced, and says which.
// RUN: not jitc opt %s --split-input-file --verify-diagnostics 2>&1 | FileCheck %s

// CHECK: verify-diagnostics.mlir:[[# @LINE + 4]]:8: error: unexpected error: 'meta.unary' op kind 'sqrt' expects f32 or f64 operands but got 'i32'
// CHECK: verify-diagnostics.mlir:[[# @LINE + 2]]:6: error: expected error "expects f32 or f64" was not produced
func.func @unexpected(%x: tensor<4xi32>) -> tensor<4xi32> {
  // expected-error@+2 {{expects f32 or f64}}
  %0 = "meta.unary"(%x) {kind = "sqrt"} : (tensor<4xi32>) -> tensor<4xi32>
  return %0 : tensor<4xi32>
}

// -----

// Notes, remarks and warnings are matched by severity; the note below does
// not match the error.
func.func @wrong_severity(%x: tensor<4xi32>) -> tensor<4xi32> {
  // expected-note@+1 {{expects f32 or f64}}
  %0 = "meta.unary"(%x) {kind = "sqrt"} : (tensor<4xi32>) -> tensor<4xi32>
  return %0 : tensor<4xi32>
}
// CHECK: verify-diagnostics.mlir:[[# @LINE - 4]]:6: error: 'error' diagnostic emitted when expecting a 'note'
// CHECK: verify-diagnostics.mlir:[[# @LINE - 5]]:6: error: expected note "expects f32 or f64" was not produced

// -----

// A malformed expectation is an error in itself.
// CHECK: verify-diagnostics.mlir:[[# @LINE + 1]]:4: error: expected '@above', '@below', '@unknown', '@+N' or '@-N' naming a line of the input
// expected-error@sideways {{x}}
func.func @g() {
  return
}
