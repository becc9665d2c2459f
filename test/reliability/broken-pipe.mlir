// Standard output closed before jitc writes (`jitc ... | head -c1`): each
// subcommand exits 1 with one sentence, never a panic. `jitc run` writes
// its --output and --state-output files before printing, so a closed pipe
// loses no committed state.
// RUN: rm -rf %t && mkdir -p %t
// RUN: not %python %S/Inputs/closed-stdout.py jitc explain %examples/instance_norm.mlir --format dot 2>&1 | FileCheck %s --check-prefix=EXPLAIN
// EXPLAIN: jitc explain: error: standard output was closed before all output was written
// EXPLAIN-NOT: panicked
// RUN: not %python %S/Inputs/closed-stdout.py jitc opt %s 2>&1 | FileCheck %s --check-prefix=OPT
// OPT: jitc opt: error: standard output was closed before all output was written
// RUN: not %python %S/Inputs/closed-stdout.py jitc opt --list-passes 2>&1 | FileCheck %s --check-prefix=OPT
// RUN: not %python %S/Inputs/closed-stdout.py jitc compile %s 2>&1 | FileCheck %s --check-prefix=COMPILE
// COMPILE: jitc compile: error: standard output was closed before all output was written
// RUN: not %python %S/Inputs/closed-stdout.py jitc bench %s --input 4xf32=1 --state acc=4xf32=0 --repetitions 1 --warmup 0 2>&1 | FileCheck %s --check-prefix=BENCH
// BENCH: jitc bench: error: standard output was closed before all output was written
//
// RUN: not %python %S/Inputs/closed-stdout.py jitc run %s --input 4xf32=1 --state acc=4xf32=10 --state-output acc=@%t/state.npy --output @%t/out.npy 2>&1 | FileCheck %s --check-prefix=STATE
// RUN: not %python %S/Inputs/closed-stdout.py jitc run %s --backend interp --input 4xf32=1 --state acc=4xf32=10 --state-output acc=@%t/state.npy --output @%t/out.npy 2>&1 | FileCheck %s --check-prefix=STATE
// RUN: jitc run %s --input @%t/out.npy --state acc=@%t/state.npy | FileCheck %s --check-prefix=SAVED
// STATE: jitc run: error: standard output was closed before all output was written
// STATE-NOT: panicked
// SAVED: result[0]: 4xf32=22 22 22 22
// SAVED: state[acc]: 4xf32=22 22 22 22

func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %acc = "meta.state_read"() {name = "acc"} : () -> tensor<4xf32>
  %sum = "meta.binary"(%acc, %x) {kind = "add"} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  "meta.state_write"(%sum) {name = "acc"} : (tensor<4xf32>) -> ()
  return %sum : tensor<4xf32>
}
