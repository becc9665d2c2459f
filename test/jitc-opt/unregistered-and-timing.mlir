// -allow-unregistered-dialect keeps ops of unknown dialects, as mlir-opt
// does; without it, MLIR's own error names the flag, which jitc opt now
// has. -mlir-print-debuginfo prints locations. -mlir-timing reports each
// pass's time.
// RUN: jitc opt %s -allow-unregistered-dialect -canonicalize > %t.jitc
// RUN: %mlir_opt %s -allow-unregistered-dialect -canonicalize > %t.mlir
// RUN: diff %t.jitc %t.mlir
// RUN: not jitc opt %s 2>&1 | FileCheck %s --check-prefix=REFUSED
// RUN: jitc opt %s -allow-unregistered-dialect -mlir-print-debuginfo | FileCheck %s --check-prefix=DEBUG
// RUN: jitc opt %s -allow-unregistered-dialect -canonicalize -mlir-timing 2>&1 >/dev/null | FileCheck %s --check-prefix=TIMING

// REFUSED: error: operation being parsed with an unregistered dialect. If this is intended, please use -allow-unregistered-dialect
// DEBUG: "test.op"() : () -> () loc(
// TIMING: Execution time report
// TIMING: Canonicalizer
// TIMING: Total

func.func @f() {
  "test.op"() : () -> ()
  return
}
