// -o writes the result; on error it leaves the file as it was.
// RUN: jitc opt %s -o %t.out
// RUN: FileCheck %s --input-file=%t.out
// RUN: not jitc opt %S/Inputs/syntax-error.mlir -o %t.out
// RUN: FileCheck %s --input-file=%t.out

// CHECK: func.func @kept
func.func @kept() {
  return
}
