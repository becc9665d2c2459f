// meta-fast-math rewrites 1 + tanh(u) as 2 sigmoid(2u) under --math fast
// (the default) only: --math exact, --jittor-rules and the interpreter run
// the literal form. At u = -8, -9, -10 the literal sum cancels (glibc's
// tanhf is within an ulp of -1 there), while the sigmoid form keeps the real
// value, 2 / (1 + e^16) = 2.2507e-7 and so on.
// RUN: jitc run %s --input "3xf32=-8 -9 -10" | FileCheck %s --check-prefix=FAST
// RUN: jitc run %s --input "3xf32=-8 -9 -10" --math exact | FileCheck %s --check-prefix=LITERAL
// RUN: jitc run %s --input "3xf32=-8 -9 -10" --jittor-rules | FileCheck %s --check-prefix=LITERAL
// RUN: jitc run %s --input "3xf32=-8 -9 -10" --backend interp | FileCheck %s --check-prefix=LITERAL

// FAST: result[0]: 3xf32=2.250703{{[0-9]*}}e-7 3.04599{{[0-9]*}}e-8 4.122307{{[0-9]*}}e-9
// LITERAL: result[0]: 3xf32=2.3841858e-7 5.9604645e-8 0{{$}}
func.func @main(%u: tensor<3xf32>) -> tensor<3xf32> {
  %one_s = arith.constant dense<1.0> : tensor<f32>
  %one = "meta.reindex"(%one_s) {indices = affine_map<(i) -> ()>} : (tensor<f32>) -> tensor<3xf32>
  %t = "meta.unary"(%u) {kind = "tanh"} : (tensor<3xf32>) -> tensor<3xf32>
  %p = "meta.binary"(%one, %t) {kind = "add"} : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  return %p : tensor<3xf32>
}
