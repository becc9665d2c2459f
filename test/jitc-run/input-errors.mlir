// Every input error names the argument and exits 1 without a crash.
// RUN: rm -rf %t && mkdir -p %t

// RUN: not jitc run %s --input 2x3xf32=1 2>&1 | FileCheck %s --check-prefix=COUNT
// COUNT: jitc run: error: @main takes 2 arguments (tensor<2x3xf32>, tensor<3xi32>) but 1 --input was given

// RUN: not jitc run %s --input 3x2xf32=1 --input 3xi32=1 2>&1 | FileCheck %s --check-prefix=SHAPE
// SHAPE: jitc run: error: input 0 (`3x2xf32=1`) is tensor<3x2xf32> but argument 0 of @main is tensor<2x3xf32>

// RUN: not jitc run %s --input 2x3xf32=1 --input 3xf32=1 2>&1 | FileCheck %s --check-prefix=DTYPE
// DTYPE: jitc run: error: input 1 (`3xf32=1`) is tensor<3xf32> but argument 1 of @main is tensor<3xi32>

// RUN: not jitc run %s --input @%t/missing.npy --input 3xi32=1 2>&1 | FileCheck %s --check-prefix=MISSING
// MISSING: jitc run: error: input 0 (`@{{.*}}missing.npy`): cannot open '{{.*}}missing.npy': No such file or directory

// RUN: printf 'garbage' > %t/bad.npy
// RUN: not jitc run %s --input @%t/bad.npy --input 3xi32=1 2>&1 | FileCheck %s --check-prefix=MALFORMED
// MALFORMED: jitc run: error: input 0 (`@{{.*}}bad.npy`): '{{.*}}bad.npy' is not a .npy file

// RUN: not jitc run %s --input "2x3xf32=1 2" --input 3xi32=1 2>&1 | FileCheck %s --check-prefix=LITERAL
// LITERAL: jitc run: error: input 0 (`2x3xf32=1 2`): `2x3xf32` has 6 elements but 2 values were given

// RUN: not jitc run %s --input index=3 --input 3xi32=1 2>&1 | FileCheck %s --check-prefix=INDEX
// INDEX: jitc run: error: input 0 (`index=3`): the argument is tensor<2x3xf32>, not an index; give it as a literal such as `2x3xf32=1 2 3 4 5 6` or as `@file.npy`

// RUN: not jitc run %s --function nope 2>&1 | FileCheck %s --check-prefix=FUNCTION
// FUNCTION: jitc run: error: no function @nope; the module has @main

// RUN: not jitc run %s --input 2x3xf32=1 --input 3xi32=1 --output %t/y.npy 2>&1 | FileCheck %s --check-prefix=OUTPUT
// OUTPUT: jitc run: error: --output takes `@file.npy`, got `{{.*}}y.npy`

// RUN: not jitc run %s --input 2x3xf32=1 --input 3xi32=1 --output @%t/a.npy --output @%t/b.npy 2>&1 | FileCheck %s --check-prefix=OUTPUTS
// OUTPUTS: jitc run: error: @main has 1 results but 2 --output paths were given

// RUN: not jitc run %s --input 2x3xf32=1 --input 3xi32=1 --backend tpu 2>&1 | FileCheck %s --check-prefix=BACKEND
// BACKEND: error: invalid value 'tpu' for '--backend <BACKEND>'
// BACKEND: [possible values: interp, cpu, cuda]

// RUN: not jitc run %S/Inputs/guarded.mlir --input f32=-1 --state h=f32=0 2>&1 | FileCheck %s --check-prefix=GUARD
// GUARD: jitc run: error: guard 3 failed at line 4: x > 0

// RUN: not jitc run %S/Inputs/guarded.mlir --input f32=1 2>&1 | FileCheck %s --check-prefix=STATE
// STATE: jitc run: error: state 'h' is read at line 5 but the state store has no value for it

// RUN: not jitc run %S/../jitc-opt/Inputs/rank-mismatch.mlir 2>&1 | FileCheck %s --check-prefix=INVALID
// INVALID: rank-mismatch.mlir:2:8: error: 'meta.reindex' op indices map has 2 results
// INVALID: jitc run: error: '{{.*}}rank-mismatch.mlir' is not a valid module

func.func @main(%x: tensor<2x3xf32>, %i: tensor<3xi32>) -> tensor<2x3xf32> {
  return %x : tensor<2x3xf32>
}
