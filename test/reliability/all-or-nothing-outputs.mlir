// `jitc run` writes its --output and --state-output files all-or-nothing:
// each is staged beside its destination and renamed only when every write
// has succeeded. An unwritable destination, or a file-size limit hit
// halfway, leaves every earlier file as it was, and no temporary behind.
// RUN: rm -rf %t && mkdir -p %t
// RUN: jitc run %s --input 4xf32=1 --state acc=4xf32=10 --state-output acc=@%t/state.npy --output @%t/out.npy > /dev/null
//
// The second destination's folder does not exist: nothing is written.
// RUN: not jitc run %s --input 4xf32=5 --state acc=4xf32=10 --output @%t/out.npy --state-output acc=@%t/missing/state.npy 2>&1 | FileCheck %s --check-prefix=MISSING
// MISSING: jitc run: error: cannot write '{{.*}}missing/state.npy': No such file or directory
//
// A file-size limit of 0 (`ulimit -f 0`): the write fails with an error
// (SIGXFSZ is ignored, so it does not kill jitc), and the state file that
// the run was to overwrite keeps its old content.
// RUN: not bash -c 'ulimit -f 0 && exec jitc run "$0" --input 4xf32=7 --state acc=@"$1"/state.npy --state-output acc=@"$1"/state.npy --output @"$1"/out.npy' %s %t 2>&1 | FileCheck %s --check-prefix=LIMIT
// LIMIT: jitc run: error: cannot write '{{.*}}': File too large
//
// Both files still hold the first run's values, and only they are there.
// RUN: jitc run %s --input @%t/out.npy --state acc=@%t/state.npy | FileCheck %s
// CHECK: result[0]: 4xf32=22 22 22 22
// CHECK: state[acc]: 4xf32=22 22 22 22
// RUN: ls -A %t | FileCheck %s --check-prefix=FILES --implicit-check-not=tmp
// FILES: out.npy
// FILES-NEXT: state.npy

func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %acc = "meta.state_read"() {name = "acc"} : () -> tensor<4xf32>
  %sum = "meta.binary"(%acc, %x) {kind = "add"} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  "meta.state_write"(%sum) {name = "acc"} : (tensor<4xf32>) -> ()
  return %sum : tensor<4xf32>
}
