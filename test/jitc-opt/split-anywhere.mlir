// -split-input-file splits as mlir-opt 22 does: at the marker anywhere in
// a line (what follows it on the line begins the next chunk), with a
// "near miss" warning for a marker with too few dashes, which stays in its
// chunk. Output and diagnostics are those of mlir-opt, byte for byte.
// RUN: not jitc opt %s -split-input-file > %t.jitc.out 2> %t.jitc.err
// RUN: not %mlir_opt %s -split-input-file > %t.mlir.out 2> %t.mlir.err
// RUN: diff %t.jitc.out %t.mlir.out
// RUN: diff %t.jitc.err %t.mlir.err
// RUN: FileCheck %s --input-file %t.jitc.out
// RUN: FileCheck %s --check-prefix=ERR --input-file %t.jitc.err

// CHECK: func.func @before_a_trailing_marker
// CHECK: {{^}}// -{{----}}
// CHECK-NEXT: module
// CHECK-NEXT: func.func @after_a_near_miss
// CHECK-NEXT: return
// CHECK-NEXT: }
// CHECK-NEXT: func.func @in_the_same_chunk
// CHECK: {{^}}// -{{----}}
// CHECK-NOT: func
// ERR: split-anywhere.mlir:[[# @LINE + 9]]:7: warning: near miss with file split marker
// ERR: split-anywhere.mlir:[[# @LINE + 12]]:10: error: custom op 'trailing' is unknown

func.func @before_a_trailing_marker() {
  return
} // -----
func.func @after_a_near_miss() {
  return
}
// --- a near miss: one dash short
func.func @in_the_same_chunk() {
  return
}
// ----- trailing
