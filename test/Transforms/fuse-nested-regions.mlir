// Kernels outlined inside a nested region (here an `scf.if`) are calls
// the block may reorder around a guard like any kernel call: meta-fuse
// used to look for the module's kernels one level up, found none inside
// nested regions, and failed with "a block it cannot order" (found by the
// random host programs of runtime/tests/host_plan.rs).
// RUN: jitc opt %s --pass-pipeline='builtin.module(meta-fuse)' | FileCheck %s
// RUN: jitc run %s --input "4xf32=1 -2 3 -4" --input i1=1 --backend cpu | FileCheck %s --check-prefix=OUT
// RUN: jitc run %s --input "4xf32=1 -2 3 -4" --input i1=1 --backend interp | FileCheck %s --check-prefix=OUT
// OUT: result[0]: 4xf32=1 2 3 4

// CHECK-LABEL: func.func @main
// CHECK:         scf.if
// CHECK-NEXT:      %[[K:.+]]:2 = func.call @main_fused_{{[0-9]}}(%{{.+}})
// CHECK-NEXT:      %[[OK:.+]] = func.call @main_fused_{{[0-9]}}(%[[K]]#0)
// CHECK-NEXT:      "meta.guard"(%[[OK]])
// CHECK-NEXT:      scf.yield %[[K]]#1
func.func @main(%x: tensor<4xf32>, %c: i1) -> tensor<4xf32> {
  %a = "meta.unary"(%x) {kind = "neg"} : (tensor<4xf32>) -> tensor<4xf32>
  %r = scf.if %c -> (tensor<4xf32>) {
    %m = "meta.reindex_reduce"(%a) {kind = "max", indices = affine_map<(d0) -> ()>} : (tensor<4xf32>) -> tensor<f32>
    %b = arith.constant dense<50.0> : tensor<f32>
    %ok = "meta.binary"(%m, %b) {kind = "lt"} : (tensor<f32>, tensor<f32>) -> tensor<i1>
    "meta.guard"(%ok) {id = 1 : i64, reason = "max < 50"} : (tensor<i1>) -> ()
    %y = "meta.unary"(%a) {kind = "abs"} : (tensor<4xf32>) -> tensor<4xf32>
    scf.yield %y : tensor<4xf32>
  } else {
    scf.yield %a : tensor<4xf32>
  }
  return %r : tensor<4xf32>
}
