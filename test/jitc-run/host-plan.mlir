// The cpu backend runs a function's host code (calls, loops, branches,
// guards, state) as a host plan, with no interpreter on the path. A
// function that cannot (here a reduction over a dynamic domain, not
// compiled yet) runs in the interpreter and says so, on `jitc run` and in
// `jitc explain --host`. The interpreter backend never notes anything.
// RUN: jitc run %examples/rnn.mlir --input 5x4x6xf32=0.1 --input 6x8xf32=0.2 --input 8x8xf32=0.1 --state rnn.h=4x8xf32=0 --backend cpu 2>&1 | FileCheck %s --check-prefix=NATIVE
// NATIVE-NOT: note
// NATIVE: result[0]: 4x8xf32=[0.36786553 0.36786553
// RUN: jitc run %S/Inputs/dynamic-reduction.mlir --input "3xf32=1 2 3" --backend cpu 2>&1 | FileCheck %s --check-prefix=FALLBACK
// FALLBACK: jitc run: note: @main runs its host code in the interpreter: kernel @main_fused_0 runs in the interpreter: dynamic shapes are not lowered yet, except in element-wise kernels
// FALLBACK: result[0]: f32=6
// RUN: jitc run %S/Inputs/dynamic-reduction.mlir --input "3xf32=1 2 3" --backend interp 2>&1 | FileCheck %s --check-prefix=INTERP
// INTERP-NOT: note
// RUN: jitc explain %examples/mlp.mlir --host | FileCheck %s --check-prefix=EXPLAIN
// EXPLAIN:      host code on the cpu backend:
// EXPLAIN-NEXT:   @main: native (host plan)
// EXPLAIN-NEXT:   @relu: native (host plan)
// RUN: jitc explain %S/Inputs/dynamic-reduction.mlir --host | FileCheck %s --check-prefix=EXPLAIN-DYNAMIC
// EXPLAIN-DYNAMIC: host code on the cpu backend:
// EXPLAIN-DYNAMIC-NEXT: @main: interpreter: kernel @main_fused_0 runs in the interpreter: dynamic shapes are not lowered yet, except in element-wise kernels
