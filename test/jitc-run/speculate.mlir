// `jitc run --profile-out` records a profile; `--speculate` runs the
// function specialized for it, and falls back with a reason when a guard
// fails. The IndRNN example: sequence length 4 is profiled, unrolled and
// fused; length 3 breaks the shape guard, and the result is still right.
// RUN: rm -f %t.json
// RUN: jitc run %examples/indrnn.mlir --input 4x16x64xf32=0.1 --input 64x64xf32=0.01 --input 64xf32=0.5 --state rnn.h=16x64xf32=0 --profile-out %t.json --print-max-elements 0
// RUN: jitc run %examples/indrnn.mlir --input 4x16x64xf32=0.1 --input 64x64xf32=0.01 --input 64xf32=0.5 --state rnn.h=16x64xf32=0 --speculate %t.json --print-max-elements 0 2>&1 | FileCheck %s --check-prefix=SAME
// SAME: jitc: speculation: compiled a specialized executable (from the given profile) under 2 assumptions: shape(%arg0)[0] == 4; trip count of the loop at 17:8 == 4
// SAME-NOT: failed
//
// Cross-iteration fusion: after specializing and unrolling, the four steps'
// recurrences are one kernel (four tanh) and the four input projections
// another; the host calls just the two.
// RUN: jitc opt %examples/indrnn.mlir --meta-specialize=profile=%t.json --meta-unroll --meta-inline --canonicalize --meta-refine --canonicalize --cse --meta-dce --meta-fuse | FileCheck %s --check-prefix=FUSED
// FUSED-LABEL: func.func @main
// FUSED: "meta.guard"({{.+}}) {id = 1 : i64, reason = "shape(%arg0)[0] == 4", site = "@main(%arg0)"}
// FUSED-NOT: scf.for
// FUSED: call @main_fused_0(
// FUSED-NEXT: call @main_fused_1(
// FUSED-NOT: call
// FUSED: return
// FUSED: func.func private @main_fused_0
// FUSED-COUNT-4: "meta.reindex_reduce"
// FUSED: func.func private @main_fused_1
// FUSED-COUNT-4: {kind = "tanh"}
// FUSED: return
//
// RUN: jitc run %examples/indrnn.mlir --input 3x16x64xf32=0.1 --input 64x64xf32=0.01 --input 64xf32=0.5 --state rnn.h=16x64xf32=0 --speculate %t.json --math exact --print-max-elements 2 --output @%t.spec.npy 2>&1 | FileCheck %s --check-prefix=FALLBACK
// FALLBACK: guard 1 failed (shape(%arg0)[0] == 4, site @main(%arg0)); re-ran the call on the generic executable
// FALLBACK: relaxed site @main(%arg0): now shape (?, 16, 64); recompiling
// RUN: jitc run %examples/indrnn.mlir --input 3x16x64xf32=0.1 --input 64x64xf32=0.01 --input 64xf32=0.5 --state rnn.h=16x64xf32=0 --backend interp --output @%t.ref.npy
// RUN: cmp %t.spec.npy %t.ref.npy
//
// A bad profile is reported and never overwritten.
// RUN: echo '{"version": 7}' > %t.bad.json
// RUN: not jitc run %examples/indrnn.mlir --input 4x16x64xf32=0.1 --input 64x64xf32=0.01 --input 64xf32=0.5 --state rnn.h=16x64xf32=0 --profile-out %t.bad.json 2>&1 | FileCheck %s --check-prefix=BAD
// BAD: jitc run: error: {{.*}}bad.json: not a jitc profile
// RUN: FileCheck %s --check-prefix=UNTOUCHED < %t.bad.json
// UNTOUCHED: {"version": 7}
// RUN: not jitc run %examples/indrnn.mlir --input 4x16x64xf32=0.1 --input 64x64xf32=0.01 --input 64xf32=0.5 --state rnn.h=16x64xf32=0 --speculate %t.missing.json 2>&1 | FileCheck %s --check-prefix=MISSING
// MISSING: jitc run: error: cannot read profile {{.*}}missing.json
// RUN: not jitc run %examples/indrnn.mlir --input 4x16x64xf32=0.1 --speculate %t.json --profile-out %t.json 2>&1 | FileCheck %s --check-prefix=BOTH
// BOTH: cannot be used with
