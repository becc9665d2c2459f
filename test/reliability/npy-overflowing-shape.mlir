// A .npy header whose shape multiplies past 64 bits is refused in one
// sentence, before the reader computes with it.
// RUN: not jitc run %s --input @%S/Inputs/overflowing-shape.npy 2>&1 | FileCheck %s
// CHECK: jitc run: error: input 0 (`@{{.*}}overflowing-shape.npy`): '{{.*}}overflowing-shape.npy' has shape (4611686018427387904, 4611686018427387904), larger than a 64-bit index can address
// CHECK-NOT: panicked

func.func @main(%x: tensor<?x?xf32>) -> tensor<?x?xf32> {
  return %x : tensor<?x?xf32>
}
