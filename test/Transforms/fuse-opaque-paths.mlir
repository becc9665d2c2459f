// Two siblings that share an index operand are not merged when one reaches
// the other's group through a chain of opaque ops (here two loops): the
// merged kernel would need its own result before it could run. meta-fuse
// used to drop the values between opaque ops from its graph, miss the
// path, merge, and fail with "a block it cannot order" (found by the
// random host programs of runtime/tests/host_plan.rs).
// RUN: jitc opt %s --pass-pipeline='builtin.module(meta-fuse)' | FileCheck %s
// RUN: jitc run %s --input "4xf32=1 4 9 16" --input index=2 --input "3x4xf32=1 1 1 1 2 2 2 2 3 3 3 3" --backend cpu --math exact | FileCheck %s --check-prefix=OUT
// RUN: jitc run %s --input "4xf32=1 4 9 16" --input index=2 --input "3x4xf32=1 1 1 1 2 2 2 2 3 3 3 3" --backend interp | FileCheck %s --check-prefix=OUT
// OUT: result[0]: 4xf32=

// CHECK-LABEL: func.func @main
// CHECK:         scf.for
// CHECK-NEXT:      %[[B:.+]] = func.call @main_fused_{{[0-9]}}(%{{.+}}, %{{.+}}) :
// CHECK:           %[[L1:.+]] = scf.for {{.+}} iter_args(%{{.+}} = %[[B]])
// CHECK:           %[[L2:.+]] = scf.for {{.+}} iter_args(%{{.+}} = %[[L1]])
// CHECK:           func.call @main_fused_{{[0-9]}}(%{{.+}}, %{{.+}}, %[[L2]])
func.func @main(%x: tensor<4xf32>, %n: index, %seq: tensor<?x4xf32>) -> tensor<4xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %r = scf.for %i = %c0 to %c3 step %c1 iter_args(%a = %x) -> (tensor<4xf32>) {
    %b = "meta.reindex"(%a, %i) {indices = affine_map<(d0)[s0] -> ((d0 + s0) mod 4)>} : (tensor<4xf32>, index) -> tensor<4xf32>
    %l1 = scf.for %j = %c0 to %n step %c1 iter_args(%c = %b) -> (tensor<4xf32>) {
      %d = "meta.unary"(%c) {kind = "sqrt"} : (tensor<4xf32>) -> tensor<4xf32>
      scf.yield %d : tensor<4xf32>
    }
    %l2 = scf.for %j = %c0 to %n step %c1 iter_args(%c = %l1) -> (tensor<4xf32>) {
      %d = "meta.unary"(%c) {kind = "abs"} : (tensor<4xf32>) -> tensor<4xf32>
      scf.yield %d : tensor<4xf32>
    }
    %row = "meta.reindex"(%seq, %i) {indices = affine_map<(d0)[s0] -> (s0, d0)>} : (tensor<?x4xf32>, index) -> tensor<4xf32>
    %m = "meta.binary"(%l2, %row) {kind = "mul"} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    scf.yield %m : tensor<4xf32>
  }
  return %r : tensor<4xf32>
}
