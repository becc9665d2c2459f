// An element-wise op may take an operand of dynamic shape beside one of
// static shape (meta-refine makes such ops): the kernel's domain is then
// static and the dynamic argument is read at its points, so it must have
// the domain's shape at run time. A call where it has another shape used
// to read past its buffer (or the first rows of a longer one) and return
// garbage; now it runs in the interpreter, whose error it gives word for
// word, and a call of the right shape runs natively.
// RUN: not jitc run %s --backend cpu --input "1x4xf32=1 2 3 4" --input "2x4xf32=1" 2>&1 | FileCheck %s --check-prefix=SHORT
// RUN: not jitc run %s --backend interp --input "1x4xf32=1 2 3 4" --input "2x4xf32=1" 2>&1 | FileCheck %s --check-prefix=SHORT
// RUN: not jitc run %s --backend cpu --check-bounds --input "1x4xf32=1 2 3 4" --input "2x4xf32=1" 2>&1 | FileCheck %s --check-prefix=SHORT
// SHORT: error: 'meta.binary' at line 29: operands have shapes [1, 4] and [2, 4] at run time
// RUN: not jitc run %s --backend cpu --input "3x4xf32=1 2 3 4 5 6 7 8 9 10 11 12" --input "2x4xf32=1" 2>&1 | FileCheck %s --check-prefix=LONG
// LONG: error: 'meta.binary' at line 29: operands have shapes [3, 4] and [2, 4] at run time
// RUN: not jitc run %s --backend cpu --input "0x4xf32=" --input "2x4xf32=1" 2>&1 | FileCheck %s --check-prefix=EMPTY
// EMPTY: error: 'meta.binary' at line 29: operands have shapes [0, 4] and [2, 4] at run time
// RUN: jitc run %s --backend cpu --input "2x4xf32=1 2 3 4 5 6 7 8" --input "2x4xf32=1" 2>&1 | FileCheck %s --check-prefix=FITS
// RUN: jitc run %s --backend cpu --check-bounds --input "2x4xf32=1 2 3 4 5 6 7 8" --input "2x4xf32=1" 2>&1 | FileCheck %s --check-prefix=FITS
// FITS-NOT: note
// FITS: result[0]: 2x4xf32=[2 3 4 5][6 7 8 9]
// The GPU cannot leave one call to the interpreter, so it leaves the
// kernel there; a kernel that reads the argument through a reindex (which
// checks its indices against the size) compiles (nvptx-dynamic.mlir).
// RUN: jitc compile --target nvptx --emit ptx %s -o /dev/null 2>&1 | FileCheck %s --check-prefix=GPU
// GPU: note: kernel @main_fused_0 is not compiled: an element-wise op reads an argument of dynamic shape, whose size only the interpreter checks on the GPU
// RUN: jitc explain %s --host | FileCheck %s --check-prefix=HOST
// HOST: @main: native (host plan)

func.func @main(%x: tensor<?x4xf32>, %y: tensor<2x4xf32>) -> tensor<2x4xf32> {
  %s = "meta.binary"(%x, %y) {kind = "add"} : (tensor<?x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  return %s : tensor<2x4xf32>
}
