// jitc bench --kernels: each kernel's calls and time per call of the
// function, the costliest first (times vary; the calls and the report's
// shape are checked).
// RUN: jitc bench %s --input 4096xf32=0.5 --repetitions 3 --kernels | FileCheck %s
// RUN: not jitc bench %s --backend interp --input 4096xf32=0.5 --kernels 2>&1 | FileCheck %s --check-prefix=INTERP

// CHECK: bytes moved:
// CHECK-NEXT: kernels, the mean per call of the function (3 timed calls):
// CHECK-NEXT: kernel calls ms share
// The loop's body kernel runs 4 times a call, the sum once.
// CHECK-DAG: @{{[a-z_0-9]+}} 4.0 {{[0-9.]+}} {{[0-9.]+}}%
// CHECK-DAG: @{{[a-z_0-9]+}} 1.0 {{[0-9.]+}} {{[0-9.]+}}%
// CHECK: kernels in all: {{[0-9.]+}} ms of the mean call's {{[0-9.]+}} ms; the rest is host code
// INTERP: jitc bench: error: --kernels times the kernels of the cpu backend, not of interp

func.func @main(%x: tensor<4096xf32>) -> tensor<f32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %y = scf.for %i = %c0 to %c4 step %c1 iter_args(%a = %x) -> tensor<4096xf32> {
    %t = "meta.unary"(%a) {kind = "tanh"} : (tensor<4096xf32>) -> tensor<4096xf32>
    scf.yield %t : tensor<4096xf32>
  }
  %s = "meta.reindex_reduce"(%y) {kind = "add", indices = affine_map<(i) -> ()>} : (tensor<4096xf32>) -> tensor<f32>
  return %s : tensor<f32>
}
