// --verify-diagnostics reads expectations as mlir-opt 22 does (spaces
// before `@`, `@above`/`@below` skipping other expectation lines, `-re`
// with `{{regex}}` blocks) and reports what does not match in its words,
// with its source ranges; a chunk whose passes ran prints its output. The
// output and the messages are the system mlir-opt's, byte for byte.
// RUN: not jitc opt %s -split-input-file -verify-diagnostics -canonicalize > %t.jitc.out 2> %t.jitc.err
// RUN: not %mlir_opt %s -split-input-file -verify-diagnostics -canonicalize > %t.mlir.out 2> %t.mlir.err
// RUN: diff %t.jitc.out %t.mlir.out
// RUN: diff %t.jitc.err %t.mlir.err
// RUN: FileCheck %s --input-file %t.jitc.err
// The chunks whose expectations all hold pass on their own.
// RUN: jitc opt %S/Inputs/verify-upstream-ok.mlir -split-input-file -verify-diagnostics > %t.ok.jitc
// RUN: %mlir_opt %S/Inputs/verify-upstream-ok.mlir -split-input-file -verify-diagnostics > %t.ok.mlir
// RUN: diff %t.ok.jitc %t.ok.mlir

// CHECK: [[# @LINE + 21]]:6: error: 'error' diagnostic emitted when expecting a 'warning'
// CHECK: [[# @LINE + 26]]:4: error: expected warning "never produced" was not produced
// CHECK-NEXT: expected-warning @below
// CHECK-NEXT: {{^ *\^~{13}$}}

func.func @ok(%a: i32) -> i32 {
  %c = arith.constant 0 : i32
  %b = arith.addi %a, %c : i32
  return %b : i32
}

// -----

func.func @undeclared() -> i32 {
  // expected-error @+1 {{use of undeclared SSA value name}}
  return %nope : i32
}

// -----

func.func @mismatch(%a: i32, %b: i64) -> i32 {
  // expected-warning @+1 {{doesn't match function result type}}
  return %b : i64
}

// -----

// expected-warning @below {{never produced}}
func.func @after() {
  return
}
