// Processes profiling into one file at once each merge their run under a
// file lock: no update is lost, and the lengths that differ relax to null.
// RUN: rm -f %t.json %t.json.lock
// RUN: bash -c 'for n in 3 5 3 5; do jitc run %examples/indrnn.mlir --backend interp --input ${n}x16x64xf32=0.1 --input 64x64xf32=0.01 --input 64xf32=0.5 --state rnn.h=16x64xf32=0 --profile-out %t.json --print-max-elements 0 > /dev/null & pids+=($!); done; for p in ${pids[@]}; do wait $p || exit 1; done'
// RUN: FileCheck %s < %t.json
// CHECK: "runs": 4,
// CHECK: "calls": 4,
// CHECK: "shape": [
// CHECK-NEXT: null,
// CHECK-NEXT: 16,
// CHECK-NEXT: 64
// CHECK: "trips": null,
// CHECK-NEXT: "runs": 4
