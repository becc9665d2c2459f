// An affine divisor that is a symbol (an index operand) can only be
// checked at run time: a value that is not positive is the same error on
// every backend (compiled kernels used to divide by it, which is undefined
// behaviour in LLVM), and a positive one computes the same.
// RUN: not jitc run %s --input 4xf32=1 --input index=0 --backend interp 2>&1 | FileCheck %s --check-prefix=ZERO
// RUN: not jitc run %s --input 4xf32=1 --input index=0 --backend cpu 2>&1 | FileCheck %s --check-prefix=ZERO
// RUN: not jitc run %s --input 4xf32=1 --input index=0 --backend cpu --check-bounds 2>&1 | FileCheck %s --check-prefix=ZERO
// ZERO: error: {{.*}}affine division by 0; divisors must be positive
// RUN: not jitc run %s --input 4xf32=1 --input index=-3 --backend interp 2>&1 | FileCheck %s --check-prefix=NEGATIVE
// RUN: not jitc run %s --input 4xf32=1 --input index=-3 --backend cpu 2>&1 | FileCheck %s --check-prefix=NEGATIVE
// NEGATIVE: error: {{.*}}affine division by -3; divisors must be positive
// RUN: jitc run %s --input "4xf32=1 2 3 4" --input index=3 --backend interp | FileCheck %s --check-prefix=THREE
// RUN: jitc run %s --input "4xf32=1 2 3 4" --input index=3 --backend cpu | FileCheck %s --check-prefix=THREE
// THREE: result[0]: 4xf32=1 2 3 1
// THREE: result[1]: 2xf32=3 7

func.func @main(%x: tensor<4xf32>, %n: index) -> (tensor<4xf32>, tensor<2xf32>) {
  %y = "meta.reindex"(%x, %n) {indices = affine_map<(d0)[s0] -> (d0 mod s0)>} : (tensor<4xf32>, index) -> tensor<4xf32>
  %s = "meta.reindex_reduce"(%x, %n) {kind = "add", indices = affine_map<(d0)[s0] -> (d0 floordiv (s0 - 1))>} : (tensor<4xf32>, index) -> tensor<2xf32>
  return %y, %s : tensor<4xf32>, tensor<2xf32>
}
