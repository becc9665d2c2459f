// A kernel whose argument dies at its call gets two nests behind one
// pointer comparison: when the runtime passes the argument's buffer as
// the result's, the nest that reads and writes through one pointer runs.
// A kernel whose argument is read again later, or read at other points
// by a reindex, gets one nest and no comparison. (Each kernel here does
// something else: equal kernels are merged, and a merged kernel gets the
// comparison when any of its calls passes a dying argument.)
// RUN: jitc compile %s --emit mlir | FileCheck %s

// CHECK-LABEL: func.func @dies_fused_0
// CHECK: %[[X:.*]] = llvm.load %{{.*}} : !llvm.ptr -> !llvm.ptr
// CHECK: %[[Y:.*]] = llvm.load %{{.*}} : !llvm.ptr -> !llvm.ptr
// CHECK: %[[A:.*]] = llvm.ptrtoint %[[X]]
// CHECK: %[[B:.*]] = llvm.ptrtoint %[[Y]]
// CHECK: %[[SAME:.*]] = arith.cmpi eq, %[[A]], %[[B]]
// In the nest that writes the argument's buffer, its load claims nothing
// about aliasing; the other loads and every store carry the kernel's two
// alias scopes (arguments, writes), each not aliasing the other
// (alias-scopes.mlir).
// CHECK: scf.if %[[SAME]] {
// CHECK: llvm.getelementptr %[[X]]
// CHECK-NEXT: llvm.load %{{.*}} : !llvm.ptr -> f32
// CHECK: arith.negf
// CHECK: llvm.getelementptr %[[X]]
// CHECK-NEXT: llvm.store %{{.*}}, %{{.*}} {alias_scopes = [#[[WRITES:alias_scope[0-9]*]]], noalias_scopes = [#[[ARGS:alias_scope[0-9]*]]]} : f32, !llvm.ptr
// CHECK: scf.if
// CHECK: llvm.getelementptr %[[X]]
// CHECK-NEXT: llvm.load %{{.*}} {alias_scopes = [#[[ARGS]]], noalias_scopes = [#[[WRITES]]]} : !llvm.ptr -> f32
// CHECK: arith.negf
// CHECK: llvm.getelementptr %[[Y]]
// CHECK-NEXT: llvm.store %{{.*}}, %{{.*}} {alias_scopes = [#[[WRITES]]], noalias_scopes = [#[[ARGS]]]} : f32, !llvm.ptr
func.func @dies(%x: tensor<8xf32>) -> tensor<8xf32> {
  %y = "meta.unary"(%x) {kind = "neg"} : (tensor<8xf32>) -> tensor<8xf32>
  return %y : tensor<8xf32>
}

// CHECK-LABEL: func.func @lives_fused_0
// CHECK-NOT: llvm.ptrtoint
// CHECK: return
func.func @lives(%x: tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>) {
  %y = "meta.unary"(%x) {kind = "abs"} : (tensor<8xf32>) -> tensor<8xf32>
  %r = "meta.reindex"(%y) {indices = affine_map<(d0) -> (7 - d0)>} : (tensor<8xf32>) -> tensor<8xf32>
  %z = "meta.binary"(%r, %x) {kind = "add"} : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  return %z, %y : tensor<8xf32>, tensor<8xf32>
}

// CHECK-LABEL: func.func @reindexed_fused_0
// CHECK-NOT: llvm.ptrtoint
// CHECK: return
func.func @reindexed(%x: tensor<8xf32>) -> tensor<8xf32> {
  %r = "meta.reindex"(%x) {indices = affine_map<(d0) -> (7 - d0)>} : (tensor<8xf32>) -> tensor<8xf32>
  return %r : tensor<8xf32>
}
