// Pass flags run in the order given, mixing jitc's passes with upstream ones,
// and --pass-pipeline does the same with nesting.
// RUN: jitc opt %s --meta-cse --meta-dce --canonicalize | FileCheck %s
// RUN: jitc opt %s --pass-pipeline='builtin.module(func.func(meta-cse), meta-dce, canonicalize)' | FileCheck %s
// RUN: jitc opt %s --meta-dce | FileCheck %s --check-prefix=DCE-ONLY

// CHECK-LABEL: func.func @pipeline
//       CHECK:   %[[E:.+]] = "meta.unary"(%{{.+}}) {kind = "exp"}
//  CHECK-NEXT:   %[[S:.+]] = "meta.binary"(%[[E]], %[[E]])
//  CHECK-NEXT:   return %[[S]]

// DCE-ONLY-COUNT-2: {kind = "exp"}
func.func @pipeline(%x: tensor<4xf32>) -> tensor<4xf32> {
  %a = "meta.unary"(%x) {kind = "exp"} : (tensor<4xf32>) -> tensor<4xf32>
  %b = "meta.unary"(%x) {kind = "exp"} : (tensor<4xf32>) -> tensor<4xf32>
  %s = "meta.binary"(%a, %b) {kind = "add"} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %dead = "meta.unary"(%s) {kind = "neg"} : (tensor<4xf32>) -> tensor<4xf32>
  %unused = arith.constant 1.0 : f32
  return %s : tensor<4xf32>
}
