// RUN: jitc opt %s --split-input-file --meta-verify | FileCheck %s
// RUN: jitc opt %s --split-input-file --pass-pipeline='builtin.module(meta-verify)' | FileCheck %s

// The pass leaves valid IR as it is.
// CHECK-LABEL: func.func @verify_valid
//       CHECK:   "meta.unary"(%{{.+}}) {kind = "exp"}
func.func @verify_valid(%x: tensor<4xf32>) -> tensor<4xf32> {
  %e = "meta.unary"(%x) {kind = "exp"} : (tensor<4xf32>) -> tensor<4xf32>
  return %e : tensor<4xf32>
}
