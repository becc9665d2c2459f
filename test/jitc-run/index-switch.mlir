// scf.index_switch runs on every backend: the interpreter takes the case
// whose value equals the selector, else the default, and the CPU backend's
// host plan does the same natively, with each case's kernels compiled.
// RUN: jitc run %s --backend interp --input "4xf32=1 -1 0.5 2" --input "i32=7" | FileCheck %s --check-prefix=SEVEN
// RUN: jitc run %s --backend cpu --math exact --input "4xf32=1 -1 0.5 2" --input "i32=7" | FileCheck %s --check-prefix=SEVEN
// SEVEN: result[0]: 4xf32=-0.7615942 -0.7615942 -0.24491866 -0.9993293
// RUN: jitc run %s --backend interp --input "4xf32=1 -1 0.5 2" --input "i32=3" | FileCheck %s --check-prefix=DEFAULT
// RUN: jitc run %s --backend cpu --math exact --input "4xf32=1 -1 0.5 2" --input "i32=3" | FileCheck %s --check-prefix=DEFAULT
// DEFAULT: result[0]: 4xf32=0.7615942 -0.7615942 0.46211717 0.9640276
// RUN: jitc run %s --backend interp --input "4xf32=1 -1 0.5 2" --input "i32=0" > %t.interp
// RUN: jitc run %s --backend cpu --math exact --input "4xf32=1 -1 0.5 2" --input "i32=0" > %t.cpu
// RUN: diff %t.interp %t.cpu
// The cases' kernels are fused and outlined in place.
// RUN: jitc opt %s --meta-fuse | FileCheck %s --check-prefix=FUSED
// FUSED: scf.index_switch
// FUSED: case 0 {
// FUSED-NEXT: func.call @main_fused_0
// FUSED: case 7 {
// FUSED-NEXT: func.call @main_fused_1
// FUSED: default {

func.func @main(%x: tensor<4xf32>, %k: tensor<i32>) -> tensor<4xf32> {
  %ki = tensor.extract %k[] : tensor<i32>
  %s = arith.index_cast %ki : i32 to index
  %r = scf.index_switch %s -> tensor<4xf32>
  case 0 {
    %e = "meta.unary"(%x) {kind = "exp"} : (tensor<4xf32>) -> tensor<4xf32>
    scf.yield %e : tensor<4xf32>
  }
  case 7 {
    %n = "meta.unary"(%x) {kind = "neg"} : (tensor<4xf32>) -> tensor<4xf32>
    %a = "meta.binary"(%n, %x) {kind = "mul"} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    scf.yield %a : tensor<4xf32>
  }
  default {
    scf.yield %x : tensor<4xf32>
  }
  %t = "meta.unary"(%r) {kind = "tanh"} : (tensor<4xf32>) -> tensor<4xf32>
  return %t : tensor<4xf32>
}
