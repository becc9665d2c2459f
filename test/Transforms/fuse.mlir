// RUN: jitc opt %s --split-input-file --meta-fuse | FileCheck %s

// The convolution of Listing 1 becomes one kernel over its 7-D domain.
// CHECK-LABEL: func.func @fuse_conv_listing1
//       CHECK:   %[[Y:.+]] = call @fuse_conv_listing1_fused_0(%{{.+}}, %{{.+}})
//   CHECK-NOT:   call
//       CHECK:   return %[[Y]]
//       CHECK: func.func private @fuse_conv_listing1_fused_0({{.*}}) -> tensor<2x4x5x5xf32> attributes {meta.domain = array<i64: 2, 4, 5, 5, 3, 3, 3>, meta.fused}
//  CHECK-NEXT:   "meta.reindex"
//  CHECK-NEXT:   "meta.reindex"
//  CHECK-NEXT:   "meta.binary"{{.*}}kind = "mul"
//  CHECK-NEXT:   "meta.reindex_reduce"{{.*}}kind = "add"
//  CHECK-NEXT:   return
func.func @fuse_conv_listing1(%x: tensor<2x3x5x5xf32>, %p: tensor<4x3x3x3xf32>) -> tensor<2x4x5x5xf32> {
  %xx = "meta.reindex"(%x) {indices = affine_map<(n, o, h, w, i, kh, kw) -> (n, i, h + kh - 1, w + kw - 1)>, overflow_value = 0.0 : f32} : (tensor<2x3x5x5xf32>) -> tensor<2x4x5x5x3x3x3xf32>
  %pp = "meta.reindex"(%p) {indices = affine_map<(n, o, h, w, i, kh, kw) -> (o, i, kh, kw)>} : (tensor<4x3x3x3xf32>) -> tensor<2x4x5x5x3x3x3xf32>
  %yy = "meta.binary"(%xx, %pp) {kind = "mul"} : (tensor<2x4x5x5x3x3x3xf32>, tensor<2x4x5x5x3x3x3xf32>) -> tensor<2x4x5x5x3x3x3xf32>
  %y = "meta.reindex_reduce"(%yy) {kind = "add", indices = affine_map<(n, o, h, w, i, kh, kw) -> (n, o, h, w)>} : (tensor<2x4x5x5x3x3x3xf32>) -> tensor<2x4x5x5xf32>
  return %y : tensor<2x4x5x5xf32>
}

// -----

// sigmoid = exp(x) / (exp(x) + 1) is one kernel; the scalar 1 enters it and
// is broadcast inside.
// CHECK-LABEL: func.func @fuse_sigmoid_chain
//       CHECK:   %[[ONE:.+]] = arith.constant dense<1.000000e+00> : tensor<f32>
//       CHECK:   %[[Y:.+]] = call @fuse_sigmoid_chain_fused_0(%[[ONE]], %{{.+}}) : (tensor<f32>, tensor<1024xf32>) -> tensor<1024xf32>
//   CHECK-NOT:   call
//       CHECK:   return %[[Y]]
//       CHECK: func.func private @fuse_sigmoid_chain_fused_0{{.*}} attributes {meta.domain = array<i64: 1024>, meta.fused}
//   CHECK-COUNT-1: kind = "exp"
func.func @fuse_sigmoid_chain(%x: tensor<1024xf32>) -> tensor<1024xf32> {
  %one = arith.constant dense<1.0> : tensor<f32>
  %ones = "meta.reindex"(%one) {indices = affine_map<(d0) -> ()>} : (tensor<f32>) -> tensor<1024xf32>
  %e = "meta.unary"(%x) {kind = "exp"} : (tensor<1024xf32>) -> tensor<1024xf32>
  %d = "meta.binary"(%e, %ones) {kind = "add"} : (tensor<1024xf32>, tensor<1024xf32>) -> tensor<1024xf32>
  %y = "meta.binary"(%e, %d) {kind = "div"} : (tensor<1024xf32>, tensor<1024xf32>) -> tensor<1024xf32>
  return %y : tensor<1024xf32>
}

// -----

// Rule 1: add, then broadcast, stays two kernels.
// CHECK-LABEL: func.func @no_fuse_reindex_after_add
//       CHECK:   %[[A:.+]] = call @no_fuse_reindex_after_add_fused_0
//       CHECK:   call @no_fuse_reindex_after_add_fused_1(%[[A]])
//       CHECK: func.func private @no_fuse_reindex_after_add_fused_0{{.*}}meta.domain = array<i64: 4>
//  CHECK-NEXT:   "meta.binary"
//  CHECK-NEXT:   return
//       CHECK: func.func private @no_fuse_reindex_after_add_fused_1{{.*}}meta.domain = array<i64: 3, 4>
//  CHECK-NEXT:   "meta.reindex"
//  CHECK-NEXT:   return
func.func @no_fuse_reindex_after_add(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<3x4xf32> {
  %c = "meta.binary"(%a, %b) {kind = "add"} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %d = "meta.reindex"(%c) {indices = affine_map<(d0, d1) -> (d1)>} : (tensor<4xf32>) -> tensor<3x4xf32>
  return %d : tensor<3x4xf32>
}

// -----

// Rule 2: sum, then add, stays two kernels.
// CHECK-LABEL: func.func @no_fuse_add_after_sum
//       CHECK:   %[[S:.+]] = call @no_fuse_add_after_sum_fused_0
//       CHECK:   call @no_fuse_add_after_sum_fused_1(%[[S]]
//       CHECK: func.func private @no_fuse_add_after_sum_fused_0{{.*}}meta.domain = array<i64: 3, 4>
//  CHECK-NEXT:   "meta.reindex_reduce"
//  CHECK-NEXT:   return
//       CHECK: func.func private @no_fuse_add_after_sum_fused_1{{.*}}meta.domain = array<i64: 3>
//  CHECK-NEXT:   "meta.binary"
//  CHECK-NEXT:   return
func.func @no_fuse_add_after_sum(%a: tensor<3x4xf32>, %c: tensor<3xf32>) -> tensor<3xf32> {
  %b = "meta.reindex_reduce"(%a) {kind = "add", indices = affine_map<(d0, d1) -> (d0)>} : (tensor<3x4xf32>) -> tensor<3xf32>
  %d = "meta.binary"(%b, %c) {kind = "add"} : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  return %d : tensor<3xf32>
}

// -----

// Rule 3: with edges 1->2, 2->3 and 1->3, where 2 keeps to itself
// (stop_fuse), fusing 1 with 3 around 2 would make a cycle: three kernels.
// CHECK-LABEL: func.func @no_fuse_diamond_around_stopped_op
//       CHECK:   %[[ONE:.+]] = call @no_fuse_diamond_around_stopped_op_fused_0(
//       CHECK:   %[[TWO:.+]] = call @no_fuse_diamond_around_stopped_op_fused_1(%[[ONE]])
//       CHECK:   call @no_fuse_diamond_around_stopped_op_fused_2(%[[ONE]], %[[TWO]])
func.func @no_fuse_diamond_around_stopped_op(%x: tensor<8xf32>) -> tensor<8xf32> {
  %one = "meta.unary"(%x) {kind = "exp"} : (tensor<8xf32>) -> tensor<8xf32>
  %two = "meta.unary"(%one) {kind = "neg", stop_fuse} : (tensor<8xf32>) -> tensor<8xf32>
  %three = "meta.binary"(%one, %two) {kind = "add"} : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  return %three : tensor<8xf32>
}

// -----

// Rule 3 with a reduction in the middle: exp fuses with the sum (the
// heaviest edge, first in order); exp cannot then also join the add, which
// depends on the sum through a broadcast.
// CHECK-LABEL: func.func @no_fuse_diamond_around_reduction
//       CHECK:   %[[G:.+]]:2 = call @no_fuse_diamond_around_reduction_fused_0(
//       CHECK:   call @no_fuse_diamond_around_reduction_fused_1(%[[G]]#1, %[[G]]#0)
//       CHECK: func.func private @no_fuse_diamond_around_reduction_fused_0
//  CHECK-NEXT:   "meta.unary"
//  CHECK-NEXT:   "meta.reindex_reduce"
//       CHECK: func.func private @no_fuse_diamond_around_reduction_fused_1
//  CHECK-NEXT:   "meta.reindex"
//  CHECK-NEXT:   "meta.binary"
func.func @no_fuse_diamond_around_reduction(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %a = "meta.unary"(%x) {kind = "exp"} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %s = "meta.reindex_reduce"(%a) {kind = "add", indices = affine_map<(i, j) -> (i)>} : (tensor<4x8xf32>) -> tensor<4xf32>
  %sb = "meta.reindex"(%s) {indices = affine_map<(i, j) -> (i)>} : (tensor<4xf32>) -> tensor<4x8xf32>
  %y = "meta.binary"(%a, %sb) {kind = "add"} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// -----

// A broadcast used by two ops is duplicated, one copy per user, rather than
// materialized; here both users then share a kernel, since they read the
// same input over the same domain (a sibling merge), and only the reduction
// and the product leave it.
// CHECK-LABEL: func.func @duplicate_shared_broadcast
//       CHECK:   %[[G:.+]]:2 = call @duplicate_shared_broadcast_fused_0({{.*}}) : (tensor<4xf32>, tensor<3x4xf32>) -> (tensor<3xf32>, tensor<3x4xf32>)
//       CHECK:   call @duplicate_shared_broadcast_fused_1(%[[G]]#0)
//       CHECK: func.func private @duplicate_shared_broadcast_fused_0
//  CHECK-NEXT:   "meta.reindex"
//  CHECK-NEXT:   "meta.reindex"
//  CHECK-NEXT:   "meta.reindex_reduce"
//  CHECK-NEXT:   "meta.binary"
func.func @duplicate_shared_broadcast(%w: tensor<4xf32>, %x: tensor<3x4xf32>) -> (tensor<3xf32>, tensor<3x4xf32>) {
  %wb = "meta.reindex"(%w) {indices = affine_map<(i, j) -> (j)>} : (tensor<4xf32>) -> tensor<3x4xf32>
  %s = "meta.reindex_reduce"(%wb) {kind = "max", indices = affine_map<(i, j) -> (i)>} : (tensor<3x4xf32>) -> tensor<3xf32>
  %p = "meta.binary"(%wb, %x) {kind = "mul"} : (tensor<3x4xf32>, tensor<3x4xf32>) -> tensor<3x4xf32>
  %q = "meta.unary"(%s) {kind = "neg"} : (tensor<3xf32>) -> tensor<3xf32>
  return %q, %p : tensor<3xf32>, tensor<3x4xf32>
}

// -----

// A group nothing outside reads (a reindex left dead, here to an empty
// shape, as specializing a length-0 sequence leaves one) is erased, not
// outlined into a kernel that returns nothing.
// CHECK-LABEL: func.func @dead_group
//       CHECK:   call @dead_group_fused_0(%arg0) : (tensor<4xf32>) -> tensor<4xf32>
//   CHECK-NOT:   call
//       CHECK:   return
//   CHECK-NOT: func.func private @dead_group_fused_1
func.func @dead_group(%x: tensor<4xf32>) -> tensor<4xf32> {
  %d = "meta.reindex"(%x) {indices = affine_map<(d0, d1) -> (d1)>} : (tensor<4xf32>) -> tensor<0x4xf32>
  %e = "meta.unary"(%d) {kind = "exp"} : (tensor<0x4xf32>) -> tensor<0x4xf32>
  %y = "meta.unary"(%x) {kind = "neg"} : (tensor<4xf32>) -> tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

// A dead group that may divide by zero stays: the interpreter reports the
// division even though nothing reads the quotient.
// CHECK-LABEL: func.func @dead_division
//       CHECK:   call @dead_division_fused_0(%arg0) : (tensor<4xi32>) -> ()
func.func @dead_division(%x: tensor<4xi32>) -> tensor<4xi32> {
  %q = "meta.binary"(%x, %x) {kind = "div"} : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi32>
  return %x : tensor<4xi32>
}
