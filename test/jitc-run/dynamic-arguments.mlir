// A kernel whose domain is static but which reads an argument of dynamic
// shape (the sequence of an RNN of any length) is compiled with the
// argument's sizes passed at run time: every index into a dynamic
// dimension is checked against the size read then, and the offset is
// computed from the sizes. The results are the interpreter's.
// RUN: jitc run %s --input "3x2xf32=1 2 3 4 5 6" --input index=1 --backend cpu --math exact 2>&1 | FileCheck %s --check-prefix=ONE
// RUN: jitc run %s --input "3x2xf32=1 2 3 4 5 6" --input index=1 --backend interp 2>&1 | FileCheck %s --check-prefix=ONE
// ONE-NOT: note
// ONE: result[0]: 2xf32=3 4
// ONE: result[1]: 2x2xf32=[5 6][-1 -1]
// The row past the end reads the overflow value, on both:
// RUN: jitc run %s --input "3x2xf32=1 2 3 4 5 6" --input index=3 --backend cpu --check-bounds 2>&1 | FileCheck %s --check-prefix=PAST
// RUN: jitc run %s --input "3x2xf32=1 2 3 4 5 6" --input index=3 --backend interp 2>&1 | FileCheck %s --check-prefix=PAST
// PAST: result[0]: 2xf32=-1 -1
// PAST: result[1]: 2x2xf32=[-1 -1][-1 -1]
// Another length, the same compiled kernels:
// RUN: jitc run %s --input "1x2xf32=7 8" --input index=0 --backend cpu 2>&1 | FileCheck %s --check-prefix=SHORT
// SHORT: result[0]: 2xf32=7 8
// SHORT: result[1]: 2x2xf32=[-1 -1][-1 -1]
// RUN: jitc explain %s --host | FileCheck %s --check-prefix=HOST
// HOST: @main: native (host plan)

func.func @main(%xs: tensor<?x2xf32>, %t: index) -> (tensor<2xf32>, tensor<2x2xf32>) {
  %row = "meta.reindex"(%xs, %t) {indices = affine_map<(j)[t] -> (t, j)>, overflow_value = -1.0 : f32} : (tensor<?x2xf32>, index) -> tensor<2xf32>
  %next = "meta.reindex"(%xs, %t) {indices = affine_map<(i, j)[t] -> (t + i + 1, j)>, overflow_value = -1.0 : f32} : (tensor<?x2xf32>, index) -> tensor<2x2xf32>
  return %row, %next : tensor<2xf32>, tensor<2x2xf32>
}
