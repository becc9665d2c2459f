// With -split-input-file, a failing chunk in the middle does not hide the
// others: jitc opt prints the chunks before and after it and the error in
// its place, and exits 1, exactly as mlir-opt does.
// RUN: not jitc opt %s -split-input-file -canonicalize > %t.jitc.out 2> %t.jitc.err
// RUN: not %mlir_opt %s -split-input-file -canonicalize > %t.mlir.out 2> %t.mlir.err
// RUN: diff %t.jitc.out %t.mlir.out
// RUN: diff %t.jitc.err %t.mlir.err
// RUN: FileCheck %s --input-file %t.jitc.out
// RUN: FileCheck %s --check-prefix=ERR --input-file %t.jitc.err
// A file given with -o is left untouched when a chunk failed.
// RUN: echo untouched > %t.file
// RUN: not jitc opt %s -split-input-file -o %t.file
// RUN: FileCheck %s --check-prefix=FILE --input-file %t.file

// The separators are matched without writing them out whole: mlir-opt
// splits wherever the marker appears, even inside a comment.
// CHECK: func.func @first
// CHECK: {{^}}// -{{----}}
// CHECK-NEXT: {{^}}// -{{----}}
// CHECK: func.func @third
// ERR: split-independent.mlir:[[# @LINE + 10]]:19: error: use of undeclared SSA value name
// FILE: untouched

func.func @first() {
  return
}

// -----

func.func @second() {
  %0 = arith.addi %x, %x : i32
  return
}

// -----

func.func @third() {
  return
}
