// The cpu backend runs a function's host code (calls, loops, branches,
// guards, state) as a host plan, with no interpreter on the path. A
// function that cannot (here one that calls a function declared without a
// body) runs in the interpreter and says so, on `jitc run` and in `jitc
// explain --host`. The interpreter backend never notes anything. A kernel
// over a dynamic domain is native, with its sizes read at each call.
// RUN: jitc run %examples/rnn.mlir --input 5x4x6xf32=0.1 --input 6x8xf32=0.2 --input 8x8xf32=0.1 --state rnn.h=4x8xf32=0 --backend cpu 2>&1 | FileCheck %s --check-prefix=NATIVE
// NATIVE-NOT: note
// NATIVE: result[0]: 4x8xf32=[0.36786553 0.36786553
// RUN: jitc run %S/Inputs/declared-callee.mlir --input "2xf32=1 2" --input i1=0 --backend cpu 2>&1 | FileCheck %s --check-prefix=FALLBACK
// FALLBACK: jitc run: note: @main runs its host code in the interpreter: @external is a declaration
// FALLBACK: result[0]: 2xf32=-1 -2
// RUN: jitc run %S/Inputs/declared-callee.mlir --input "2xf32=1 2" --input i1=0 --backend interp 2>&1 | FileCheck %s --check-prefix=INTERP
// INTERP-NOT: note
// RUN: jitc run %S/Inputs/dynamic-reduction.mlir --input "3xf32=1 2 3" --backend cpu 2>&1 | FileCheck %s --check-prefix=DYNAMIC
// DYNAMIC-NOT: note
// DYNAMIC: result[0]: f32=6
// RUN: jitc explain %examples/mlp.mlir --host | FileCheck %s --check-prefix=EXPLAIN
// EXPLAIN:      host code on the cpu backend:
// EXPLAIN-NEXT:   @main: native (host plan)
// EXPLAIN-NEXT:   @relu: native (host plan)
// RUN: jitc explain %S/Inputs/dynamic-reduction.mlir --host | FileCheck %s --check-prefix=EXPLAIN-DYNAMIC
// EXPLAIN-DYNAMIC: host code on the cpu backend:
// EXPLAIN-DYNAMIC-NEXT: @main: native (host plan)
// EXPLAIN-DYNAMIC-NEXT: kernel @main_fused_0: sizes read at each call; a call whose sizes disagree (two values of the domain's type with different sizes) runs in the interpreter
// RUN: jitc explain %S/Inputs/declared-callee.mlir --host | FileCheck %s --check-prefix=EXPLAIN-DECLARED
// EXPLAIN-DECLARED: host code on the cpu backend:
// EXPLAIN-DECLARED-NEXT: @external: interpreter: @external is a declaration
// EXPLAIN-DECLARED-NEXT: @main: interpreter: @external is a declaration
