// An element-wise kernel over a domain of dynamic shape is compiled flat:
// one loop over the elements, its results allocated with the arguments'
// shape at run time. Every shape runs the same compiled code, and a run
// whose operands disagree is the interpreter's error in its words.
// RUN: jitc run %s --input "3xf32=1 -2 3" --input "3xf32=10 20 30" --backend cpu --math exact 2>&1 | FileCheck %s --check-prefix=THREE
// RUN: jitc run %s --input "3xf32=1 -2 3" --input "3xf32=10 20 30" --backend interp 2>&1 | FileCheck %s --check-prefix=THREE
// THREE-NOT: note
// THREE: result[0]: 3xf32=-9 -18 -27
// THREE: result[1]: 3xi1=true false true
// RUN: jitc run %s --input "0xf32=" --input "0xf32=" --backend cpu 2>&1 | FileCheck %s --check-prefix=EMPTY
// EMPTY: result[0]: 0xf32=
// Large enough to split across the worker threads; the files are the
// interpreter's, byte for byte:
// RUN: %python %S/Inputs/ramp-npy.py 40000 %t.x.npy
// RUN: jitc run %s --input @%t.x.npy --input "40000xf32=1.5" --backend cpu --math exact --check-bounds --output @%t.cpu.npy --output @%t.cpu.eq.npy --print-max-elements 0
// RUN: jitc run %s --input @%t.x.npy --input "40000xf32=1.5" --backend interp --output @%t.interp.npy --output @%t.interp.eq.npy --print-max-elements 0
// RUN: cmp %t.cpu.npy %t.interp.npy
// RUN: cmp %t.cpu.eq.npy %t.interp.eq.npy
// RUN: not jitc run %s --input "3xf32=1 2 3" --input "2xf32=1 2" --backend cpu 2>&1 | FileCheck %s --check-prefix=MISMATCH
// RUN: not jitc run %s --input "3xf32=1 2 3" --input "2xf32=1 2" --backend interp 2>&1 | FileCheck %s --check-prefix=MISMATCH
// MISMATCH: error: {{.*}}operands have shapes [3] and [2] at run time
// RUN: jitc explain %s --host | FileCheck %s --check-prefix=HOST
// HOST: @main: native (host plan)

func.func @main(%x: tensor<?xf32>, %y: tensor<?xf32>) -> (tensor<?xf32>, tensor<?xi1>) {
  %a = "meta.unary"(%x) {kind = "abs"} : (tensor<?xf32>) -> tensor<?xf32>
  %d = "meta.binary"(%a, %y) {kind = "sub"} : (tensor<?xf32>, tensor<?xf32>) -> tensor<?xf32>
  %p = "meta.binary"(%x, %a) {kind = "eq"} : (tensor<?xf32>, tensor<?xf32>) -> tensor<?xi1>
  return %d, %p : tensor<?xf32>, tensor<?xi1>
}
