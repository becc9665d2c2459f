// jitc bench --kernels on a function that runs no kernel says so.
// RUN: jitc bench %s --input 4xf32=1 --repetitions 2 --kernels | FileCheck %s
// CHECK: kernels, the mean per call of the function (2 timed calls):
// CHECK: (no kernel ran natively)
// CHECK-NEXT: kernels in all: 0.000 ms of the mean call's
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}
