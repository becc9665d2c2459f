// Ops with effects (guards, loops, calls, state) keep their order, and
// that order is a path for rule 3: the division's group feeds the guard,
// the loop runs after the guard, so the sibling that reads the loop's
// result cannot join the division's group even though both read %n.
// meta-fuse used to merge them and fail with "a block it cannot order"
// (found by the random host programs of runtime/tests/host_plan.rs).
// RUN: jitc opt %s --pass-pipeline='builtin.module(meta-fuse)' | FileCheck %s
// RUN: jitc run %s --input "4xf32=1 2 3 4" --input index=1 --input "2x4xf32=1 1 1 1 2 2 2 2" --backend cpu | FileCheck %s --check-prefix=OUT
// RUN: jitc run %s --input "4xf32=1 2 3 4" --input index=1 --input "2x4xf32=1 1 1 1 2 2 2 2" --backend interp | FileCheck %s --check-prefix=OUT
// OUT: result[0]: 4xf32=3 4 5 6

// CHECK-LABEL: func.func @main
// CHECK:         "meta.guard"
// CHECK:         %[[L:.+]] = scf.for
// CHECK:         call @main_fused_{{[0-9]}}({{.*}}%[[L]]
func.func @main(%x: tensor<4xf32>, %n: index, %seq: tensor<?x4xf32>) -> tensor<4xf32> {
  %num = arith.constant dense<7> : tensor<4xi32>
  %tab = arith.constant dense<[1, 2, 3, 0]> : tensor<4xi32>
  %den = "meta.reindex"(%tab, %n) {indices = affine_map<(d0)[s0] -> (s0)>} : (tensor<4xi32>, index) -> tensor<4xi32>
  %q = "meta.binary"(%num, %den) {kind = "div"} : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi32>
  %s = "meta.reindex_reduce"(%q) {kind = "add", indices = affine_map<(d0) -> ()>} : (tensor<4xi32>) -> tensor<i32>
  %zero = arith.constant dense<0> : tensor<i32>
  %ok = "meta.binary"(%s, %zero) {kind = "ge"} : (tensor<i32>, tensor<i32>) -> tensor<i1>
  "meta.guard"(%ok) {id = 1 : i64, reason = "quotients >= 0"} : (tensor<i1>) -> ()
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %l = scf.for %i = %c0 to %n step %c1 iter_args(%a = %x) -> (tensor<4xf32>) {
    %b = "meta.unary"(%a) {kind = "abs"} : (tensor<4xf32>) -> tensor<4xf32>
    scf.yield %b : tensor<4xf32>
  }
  %row = "meta.reindex"(%seq, %n) {indices = affine_map<(d0)[s0] -> (s0, d0)>} : (tensor<?x4xf32>, index) -> tensor<4xf32>
  %m = "meta.binary"(%l, %row) {kind = "add"} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %m : tensor<4xf32>
}
