// RUN: jitc opt %s --meta-cse --canonicalize --print-ir-after-all 2>&1 >/dev/null | FileCheck %s

// CHECK: IR Dump After Cse (meta-cse)
// CHECK: IR Dump After Canonicalizer (canonicalize)
func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}
