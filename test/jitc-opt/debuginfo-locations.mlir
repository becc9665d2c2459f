// -mlir-print-debuginfo names locations after the input file (or <stdin>),
// and a chunk's module after where the chunk starts, as mlir-opt does.
// RUN: jitc opt %s -split-input-file -mlir-print-debuginfo > %t.jitc
// RUN: %mlir_opt %s -split-input-file -mlir-print-debuginfo > %t.mlir
// RUN: diff %t.jitc %t.mlir
// RUN: FileCheck %s --input-file %t.jitc
// RUN: jitc opt -split-input-file -mlir-print-debuginfo < %s > %t.jitc.stdin
// RUN: %mlir_opt -split-input-file -mlir-print-debuginfo < %s > %t.mlir.stdin
// RUN: diff %t.jitc.stdin %t.mlir.stdin
// RUN: FileCheck %s --check-prefix=STDIN --input-file %t.jitc.stdin

// CHECK: #loc = loc("{{.*}}debuginfo-locations.mlir":0:0)
// CHECK: #loc1 = loc("{{.*}}debuginfo-locations.mlir":[[# @LINE + 8]]:1)
// CHECK: #loc = loc("{{.*}}debuginfo-locations.mlir":[[# @LINE + 11]]:9)
// CHECK: loc("given":1:2)
// An explicit module keeps where it is written.
// CHECK: #loc = loc("{{.*}}debuginfo-locations.mlir":[[# @LINE + 16]]:3)
// STDIN: #loc = loc("<stdin>":0:0)
// STDIN-NOT: loc("-"

func.func @first(%x: i32) -> i32 {
  return %x : i32
}

// -----

func.func @second(%x: i32) -> i32 {
  return %x : i32 loc("given":1:2)
}

// -----

  module {
  func.func @third() {
    return
  }
}
