// -verify-diagnostics as mlir-opt 22: a diagnostic located in another file
// (loc("other.mlir":3:4)) matches no expectation of this one and is
// reported in its own file; a line that mentions expected-error before its
// real expectation still holds that expectation. Output and messages are
// the system mlir-opt's.
// RUN: not jitc opt %s -split-input-file -verify-diagnostics > %t.jitc.out 2> %t.jitc.err
// RUN: not %mlir_opt %s -split-input-file -verify-diagnostics > %t.mlir.out 2> %t.mlir.err
// RUN: diff %t.jitc.out %t.mlir.out
// RUN: diff %t.jitc.err %t.mlir.err
// RUN: FileCheck %s --input-file %t.jitc.err
// CHECK: other.mlir:3:4: error: unexpected error: {{.*}}doesn't match function result type
// CHECK: error: expected error "doesn't match" was not produced
// CHECK: error: expected warning "never" was not produced

func.func @g() -> i32 {
  %x = arith.constant 1 : i64
  return %x : i64 loc("other.mlir":3:4) // expected-error {{doesn't match}}
}

// -----

func.func @f() {
  return // was expected-error, now: expected-warning {{never}}
}
