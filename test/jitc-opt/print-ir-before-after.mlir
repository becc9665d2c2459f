// --mlir-print-ir-before=/--mlir-print-ir-after= print the IR around the
// passes named (comma-separated or repeated), with mlir-opt's other IR
// printing flags, exactly as the system's mlir-opt 22 does.
// RUN: jitc opt %s -cse -canonicalize -mlir-print-ir-after=cse -mlir-print-ir-before=canonicalize -o /dev/null 2> %t.jitc1
// RUN: %mlir_opt %s -cse -canonicalize -mlir-print-ir-after=cse -mlir-print-ir-before=canonicalize -o /dev/null 2> %t.mlir1
// RUN: diff %t.jitc1 %t.mlir1
// RUN: FileCheck %s --input-file %t.jitc1
// Nested passes print the op they ran on; module scope prints the module.
// RUN: jitc opt %s -pass-pipeline='builtin.module(func.func(cse,canonicalize),sccp)' -mlir-print-ir-after=cse,canonicalize -mlir-print-ir-after-change -mlir-print-debuginfo -o /dev/null 2> %t.jitc2
// RUN: %mlir_opt %s -pass-pipeline='builtin.module(func.func(cse,canonicalize),sccp)' -mlir-print-ir-after=cse,canonicalize -mlir-print-ir-after-change -mlir-print-debuginfo -o /dev/null 2> %t.mlir2
// RUN: diff %t.jitc2 %t.mlir2
// RUN: FileCheck %s --check-prefix=NESTED --input-file %t.jitc2
// RUN: jitc opt %s -pass-pipeline='builtin.module(func.func(cse),canonicalize)' -mlir-print-ir-before=cse -mlir-print-ir-module-scope -mlir-print-ir-after-all -mlir-print-op-generic -o /dev/null 2> %t.jitc3
// RUN: %mlir_opt %s -pass-pipeline='builtin.module(func.func(cse),canonicalize)' -mlir-print-ir-before=cse -mlir-print-ir-module-scope -mlir-print-ir-after-all -mlir-print-op-generic -mlir-disable-threading -o /dev/null 2> %t.mlir3
// RUN: diff %t.jitc3 %t.mlir3
// RUN: FileCheck %s --check-prefix=SCOPE --input-file %t.jitc3
// A pass name that does not exist is an error, before anything runs.
// RUN: not jitc opt %s -cse -mlir-print-ir-after=bogus 2>&1 | FileCheck %s --check-prefix=BOGUS

// CHECK: IR Dump After CSE (cse)
// CHECK-NOT: IR Dump After
// CHECK: IR Dump Before Canonicalizer (canonicalize)
// CHECK-NOT: IR Dump

// Only what changed: CSE and the canonicalizer change @twice, not @empty.
// NESTED: IR Dump After CSE (cse)
// NESTED-NEXT: func.func @twice
// NESTED-SAME: loc(
// NESTED: IR Dump After Canonicalizer (canonicalize)
// NESTED-NEXT: func.func @twice
// NESTED-NOT: @empty
// NESTED-NOT: SCCP

// SCOPE: IR Dump Before CSE (cse)
// SCOPE-NEXT: "builtin.module"
// SCOPE: IR Dump After CSE (cse)
// SCOPE: IR Dump After Canonicalizer (canonicalize)
// SCOPE-NOT: IR Dump Before

// BOGUS: jitc opt: error: --mlir-print-ir-after: there is no pass named 'bogus'

func.func @twice(%a: i32) -> i32 {
  %c = arith.constant 0 : i32
  %b = arith.addi %a, %c : i32
  %d = arith.addi %a, %c : i32
  %e = arith.muli %b, %d : i32
  return %e : i32
}

func.func @empty() {
  return
}
