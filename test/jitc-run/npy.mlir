// Results saved with --output read back as inputs, state round-trips
// through --state-output and --state, and --function picks the entry point.
// RUN: rm -rf %t && mkdir -p %t
// RUN: jitc run %s --input "2x2xf32=1 2 3 4" --output @%t/y.npy --state-output acc=@%t/acc.npy | FileCheck %s --check-prefix=FIRST
// RUN: jitc run %s --function accumulate --input @%t/y.npy --state acc=@%t/acc.npy | FileCheck %s --check-prefix=SECOND
// A .npy file from a pipe (which cannot seek) reads as from a file.
// RUN: cat %t/y.npy | jitc run %s --function accumulate --input @/dev/stdin --state acc=@%t/acc.npy | FileCheck %s --check-prefix=SECOND

// FIRST: result[0]: 2x2xf32=[2 4][6 8]
// FIRST: state[acc]: 2x2xf32=[2 4][6 8]
// SECOND: result[0]: 2x2xf32=[4 8][12 16]
// SECOND: state[acc]: 2x2xf32=[4 8][12 16]

func.func @main(%x: tensor<2x2xf32>) -> tensor<2x2xf32> {
  %y = "meta.binary"(%x, %x) {kind = "add"} : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x2xf32>
  "meta.state_write"(%y) {name = "acc"} : (tensor<2x2xf32>) -> ()
  return %y : tensor<2x2xf32>
}

func.func @accumulate(%x: tensor<2x2xf32>) -> tensor<2x2xf32> {
  %acc = "meta.state_read"() {name = "acc"} : () -> tensor<2x2xf32>
  %sum = "meta.binary"(%acc, %x) {kind = "add"} : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x2xf32>
  "meta.state_write"(%sum) {name = "acc"} : (tensor<2x2xf32>) -> ()
  return %sum : tensor<2x2xf32>
}
