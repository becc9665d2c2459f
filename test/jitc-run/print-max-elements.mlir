// Values larger than --print-max-elements are summarized, not printed,
// with the flag that saves them: --output for a result, --state-output for
// state.
// RUN: jitc run %s --input 8xf32=1 --state s=8xf32=0 --print-max-elements 4 | FileCheck %s
// RUN: jitc run %s --input 8xf32=1 --state s=8xf32=0 | FileCheck %s --check-prefix=FULL
// CHECK: result[0]: tensor<8xf32> (8 elements, more than --print-max-elements=4; save it with --output)
// CHECK: state[s]: tensor<8xf32> (8 elements, more than --print-max-elements=4; save it with --state-output)
// FULL: result[0]: 8xf32=2 2 2 2 2 2 2 2
// FULL: state[s]: 8xf32=2 2 2 2 2 2 2 2
func.func @main(%x: tensor<8xf32>) -> tensor<8xf32> {
  %y = "meta.binary"(%x, %x) {kind = "add"} : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  "meta.state_write"(%y) {name = "s"} : (tensor<8xf32>) -> ()
  return %y : tensor<8xf32>
}
