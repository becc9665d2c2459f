// Speculation's bookkeeping never overflows.
// RUN: rm -f %t.json
//
// A guard id of i64::MAX already in the function: the guard
// meta-specialize adds takes the smallest free positive id, and the output
// reads back.
// RUN: jitc run %S/Inputs/max-guard-id.mlir --input 4xf32=1 --profile-out %t.json > /dev/null
// RUN: jitc opt %S/Inputs/max-guard-id.mlir --meta-specialize=profile=%t.json | FileCheck %s --check-prefix=IDS
// RUN: jitc opt %S/Inputs/max-guard-id.mlir --meta-specialize=profile=%t.json | jitc opt - --meta-verify > /dev/null
// IDS: "meta.guard"({{.+}}) {id = 1 : i64, reason = "shape(%arg0)[0] == 4", site = "@main(%arg0)"}
// IDS: "meta.guard"({{.+}}) {id = 9223372036854775807 : i64, reason = "always"}
//
// A profile claiming a size of 2^63+5 and a trip count as large (edited by
// hand; no run can record them): the sizes no tensor can have are not
// assumed, and fusion runs as on the generic program.
// RUN: jitc opt %examples/indrnn.mlir --meta-specialize=profile=%S/Inputs/huge-size-profile.json --meta-unroll --meta-fuse | FileCheck %s --check-prefix=HUGE
// RUN: jitc run %examples/indrnn.mlir --input 3x16x64xf32=0.1 --input 64x64xf32=0.01 --input 64xf32=0.5 --state rnn.h=16x64xf32=0 --speculate %S/Inputs/huge-size-profile.json --print-max-elements 0 2>&1 | FileCheck %s --check-prefix=SERVED
// HUGE-LABEL: func.func @main
// HUGE-NOT: meta.guard
// HUGE: scf.for
// SERVED: result[0]: tensor<16x64xf32>
// SERVED-NOT: internal compiler error
