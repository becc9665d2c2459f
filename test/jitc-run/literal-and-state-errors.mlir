// Inputs and state that used to be misread or silently accepted are
// errors that say what is wrong.
// RUN: not jitc run %s --input "2x3xindex=1" --input "f32=1" 2>&1 | FileCheck %s --check-prefix=INDEX
// INDEX: jitc run: error: input 0 (`2x3xindex=1`): a tensor cannot hold `index` elements (f32, f64, i32, i64 or i1); an `index` argument takes `index=N`

// RUN: not jitc run %s --input "2x3xf32=[1 2 3][4 5 6" --input "f32=1" 2>&1 | FileCheck %s --check-prefix=OPEN
// OPEN: jitc run: error: input 0 (`2x3xf32=[1 2 3][4 5 6`): `[1 2 3][4 5 6` leaves 1 bracket(s) open

// RUN: not jitc run %s --input "2x3xf32=1 2 3]" --input "f32=1" 2>&1 | FileCheck %s --check-prefix=CLOSE
// CLOSE: jitc run: error: input 0 (`2x3xf32=1 2 3]`): `1 2 3]` closes a bracket it never opened

// RUN: not jitc run %s --input "2x3xf32=1" --input "f32=1" --state "=f32=1" 2>&1 | FileCheck %s --check-prefix=NAMELESS
// NAMELESS: jitc run: error: --state `=f32=1` names no state (NAME=VALUE)

// RUN: not jitc run %s --input "2x3xf32=1" --input "f32=1" --state "a=f32=1" --state "a=f32=2" 2>&1 | FileCheck %s --check-prefix=TWICE
// TWICE: jitc run: error: --state gives 'a' twice

// A declaration is named as such before anything is compiled (no note
// about how its host code would run).
// RUN: not jitc run %s --function declared --input "f32=1" 2>&1 | FileCheck %s --check-prefix=DECLARATION
// DECLARATION-NOT: note
// DECLARATION: error: {{.*}}@declared is a declaration, with no body to run
// DECLARATION-NOT: note

// RUN: not jitc run /dev/null 2>&1 | FileCheck %s --check-prefix=EMPTY
// EMPTY: jitc run: error: no function @main: the module is empty

func.func @main(%x: tensor<2x3xf32>, %y: tensor<f32>) -> tensor<2x3xf32> {
  return %x : tensor<2x3xf32>
}
func.func private @declared(%x: tensor<f32>) -> tensor<f32>
