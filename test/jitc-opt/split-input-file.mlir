// RUN: jitc opt %s --split-input-file | FileCheck %s
// RUN: jitc opt %s | FileCheck %s --check-prefix=WHOLE

// CHECK:      func.func @first
// CHECK:      // -----
// CHECK-NEXT: module
// CHECK:      func.func @second
// WHOLE:      func.func @first
// WHOLE-NOT:  // -----
// WHOLE:      func.func @second
func.func @first() {
  return
}

// -----

func.func @second() {
  return
}
