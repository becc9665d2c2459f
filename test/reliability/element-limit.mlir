// One element limit (2^28 by default, JITC_MAX_ELEMENTS to change it) for
// every place that makes a tensor. A result past it is an error on every
// backend before anything is allocated, never an allocation abort.
// RUN: not jitc run %s --input f32=1 --backend cpu 2>&1 | FileCheck %s
// RUN: not jitc run %s --input f32=1 --backend interp 2>&1 | FileCheck %s
// CHECK: error: {{.*}}a tensor of shape [100000, 100000] has more than 268435456 elements, jitc's limit (JITC_MAX_ELEMENTS)
// CHECK-NOT: memory allocation
//
// The limit is configurable, and inline literals obey it too.
// RUN: env JITC_MAX_ELEMENTS=8 not jitc run %s --input 9xf32=1 --backend interp 2>&1 | FileCheck %s --check-prefix=LIMIT
// LIMIT: error: input 0 (`9xf32=1`): a tensor of shape [9] has more than 8 elements, jitc's limit (JITC_MAX_ELEMENTS)

func.func @main(%x: tensor<f32>) -> tensor<100000x100000xf32> {
  %b = "meta.reindex"(%x) {indices = affine_map<(d0, d1) -> ()>} : (tensor<f32>) -> tensor<100000x100000xf32>
  %e = "meta.unary"(%b) {kind = "exp"} : (tensor<100000x100000xf32>) -> tensor<100000x100000xf32>
  return %e : tensor<100000x100000xf32>
}
