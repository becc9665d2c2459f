// The groupings of the Jittor paper, reproduced by meta-fuse.
// RUN: jitc opt %s --split-input-file --meta-fuse | FileCheck %s

// Instance norm (Listing 5): the two reductions share one loop nest over x,
// and the normalization is the second loop nest, as in Listing 6. The
// per-channel arithmetic between them (mean, variance, sqrt on 1x3x1x1) is a
// third, tiny kernel: rule 2 keeps a reduction's consumers out of its loop
// nest, where Listing 6 computes them in the outer loop.
// CHECK-LABEL: func.func @instance_norm
//       CHECK:   %[[R:.+]]:2 = call @instance_norm_fused_0(%{{.+}})
//       CHECK:   %[[STATS:.+]]:2 = call @instance_norm_fused_1(
//       CHECK:   %[[Y:.+]] = call @instance_norm_fused_2(
//       CHECK:   return %[[Y]]
//       CHECK: func.func private @instance_norm_fused_0{{.*}}meta.domain = array<i64: 2, 3, 4, 4>
//   CHECK-NOT:   func.func
//   CHECK-COUNT-2: "meta.reindex_reduce"
//       CHECK: func.func private @instance_norm_fused_1{{.*}}meta.domain = array<i64: 1, 3, 1, 1>
//   CHECK-NOT:   "meta.reindex_reduce"
//       CHECK:   "meta.unary"{{.*}}"sqrt"
//       CHECK: func.func private @instance_norm_fused_2{{.*}}meta.domain = array<i64: 2, 3, 4, 4>
//   CHECK-NOT:   "meta.reindex_reduce"
//       CHECK:   return
func.func @instance_norm(%x: tensor<2x3x4x4xf32>) -> tensor<2x3x4x4xf32> {
  %count = arith.constant dense<32.0> : tensor<f32>
  %eps = arith.constant dense<1.0e-5> : tensor<f32>
  %n = "meta.reindex"(%count) {indices = affine_map<(n, c, h, w) -> ()>} : (tensor<f32>) -> tensor<1x3x1x1xf32>
  %e = "meta.reindex"(%eps) {indices = affine_map<(n, c, h, w) -> ()>} : (tensor<f32>) -> tensor<1x3x1x1xf32>
  %xsum = "meta.reindex_reduce"(%x) {kind = "add", indices = affine_map<(n, c, h, w) -> (0, c, 0, 0)>} : (tensor<2x3x4x4xf32>) -> tensor<1x3x1x1xf32>
  %xmean = "meta.binary"(%xsum, %n) {kind = "div"} : (tensor<1x3x1x1xf32>, tensor<1x3x1x1xf32>) -> tensor<1x3x1x1xf32>
  %xx = "meta.binary"(%x, %x) {kind = "mul"} : (tensor<2x3x4x4xf32>, tensor<2x3x4x4xf32>) -> tensor<2x3x4x4xf32>
  %x2sum = "meta.reindex_reduce"(%xx) {kind = "add", indices = affine_map<(n, c, h, w) -> (0, c, 0, 0)>} : (tensor<2x3x4x4xf32>) -> tensor<1x3x1x1xf32>
  %x2mean = "meta.binary"(%x2sum, %n) {kind = "div"} : (tensor<1x3x1x1xf32>, tensor<1x3x1x1xf32>) -> tensor<1x3x1x1xf32>
  %sq = "meta.binary"(%xmean, %xmean) {kind = "mul"} : (tensor<1x3x1x1xf32>, tensor<1x3x1x1xf32>) -> tensor<1x3x1x1xf32>
  %xvar = "meta.binary"(%x2mean, %sq) {kind = "sub"} : (tensor<1x3x1x1xf32>, tensor<1x3x1x1xf32>) -> tensor<1x3x1x1xf32>
  %ve = "meta.binary"(%xvar, %e) {kind = "add"} : (tensor<1x3x1x1xf32>, tensor<1x3x1x1xf32>) -> tensor<1x3x1x1xf32>
  %std = "meta.unary"(%ve) {kind = "sqrt"} : (tensor<1x3x1x1xf32>) -> tensor<1x3x1x1xf32>
  %mean_b = "meta.reindex"(%xmean) {indices = affine_map<(n, c, h, w) -> (0, c, 0, 0)>} : (tensor<1x3x1x1xf32>) -> tensor<2x3x4x4xf32>
  %std_b = "meta.reindex"(%std) {indices = affine_map<(n, c, h, w) -> (0, c, 0, 0)>} : (tensor<1x3x1x1xf32>) -> tensor<2x3x4x4xf32>
  %centered = "meta.binary"(%x, %mean_b) {kind = "sub"} : (tensor<2x3x4x4xf32>, tensor<2x3x4x4xf32>) -> tensor<2x3x4x4xf32>
  %y = "meta.binary"(%centered, %std_b) {kind = "div"} : (tensor<2x3x4x4xf32>, tensor<2x3x4x4xf32>) -> tensor<2x3x4x4xf32>
  return %y : tensor<2x3x4x4xf32>
}

// -----

// A ResNet block (§4.4): conv, batch norm, ReLU, conv, batch norm, residual
// add, ReLU. The first batch norm fuses with the first ReLU; the second
// batch norm, the addition and the second ReLU fuse together: 4 kernels
// where eager execution runs 7 operators.
// CHECK-LABEL: func.func @resnet_block
//       CHECK:   %[[C1:.+]] = call @resnet_block_fused_0(
//       CHECK:   %[[B1:.+]] = call @resnet_block_fused_1({{.*}}%[[C1]]
//       CHECK:   %[[C2:.+]] = call @resnet_block_fused_2({{.*}}%[[B1]]
//       CHECK:   %[[B2:.+]] = call @resnet_block_fused_3({{.*}}%[[C2]]
//   CHECK-NOT:   call
//       CHECK:   return %[[B2]]
//       CHECK: func.func private @resnet_block_fused_0{{.*}}meta.domain = array<i64: 1, 4, 6, 6, 4, 3, 3>
//       CHECK: func.func private @resnet_block_fused_1{{.*}}meta.domain = array<i64: 1, 4, 6, 6>
//       CHECK:   kind = "max"
//       CHECK: func.func private @resnet_block_fused_2{{.*}}meta.domain = array<i64: 1, 4, 6, 6, 4, 3, 3>
//       CHECK: func.func private @resnet_block_fused_3{{.*}}meta.domain = array<i64: 1, 4, 6, 6>
//       CHECK:   kind = "add"
//       CHECK:   kind = "max"
func.func @resnet_block(%x: tensor<1x4x6x6xf32>, %w1: tensor<4x4x3x3xf32>, %w2: tensor<4x4x3x3xf32>,
                        %m1: tensor<4xf32>, %v1: tensor<4xf32>, %g1: tensor<4xf32>, %b1: tensor<4xf32>,
                        %m2: tensor<4xf32>, %v2: tensor<4xf32>, %g2: tensor<4xf32>, %b2: tensor<4xf32>) -> tensor<1x4x6x6xf32> {
  %eps = arith.constant dense<1.0e-5> : tensor<f32>
  %zero = arith.constant dense<0.0> : tensor<f32>
  // conv 1
  %xx = "meta.reindex"(%x) {indices = affine_map<(n, o, h, w, i, kh, kw) -> (n, i, h + kh - 1, w + kw - 1)>} : (tensor<1x4x6x6xf32>) -> tensor<1x4x6x6x4x3x3xf32>
  %ww1 = "meta.reindex"(%w1) {indices = affine_map<(n, o, h, w, i, kh, kw) -> (o, i, kh, kw)>} : (tensor<4x4x3x3xf32>) -> tensor<1x4x6x6x4x3x3xf32>
  %p1 = "meta.binary"(%xx, %ww1) {kind = "mul"} : (tensor<1x4x6x6x4x3x3xf32>, tensor<1x4x6x6x4x3x3xf32>) -> tensor<1x4x6x6x4x3x3xf32>
  %c1 = "meta.reindex_reduce"(%p1) {kind = "add", indices = affine_map<(n, o, h, w, i, kh, kw) -> (n, o, h, w)>} : (tensor<1x4x6x6x4x3x3xf32>) -> tensor<1x4x6x6xf32>
  // batch norm 1 (inference) and ReLU
  %m1b = "meta.reindex"(%m1) {indices = affine_map<(n, c, h, w) -> (c)>} : (tensor<4xf32>) -> tensor<1x4x6x6xf32>
  %v1b = "meta.reindex"(%v1) {indices = affine_map<(n, c, h, w) -> (c)>} : (tensor<4xf32>) -> tensor<1x4x6x6xf32>
  %g1b = "meta.reindex"(%g1) {indices = affine_map<(n, c, h, w) -> (c)>} : (tensor<4xf32>) -> tensor<1x4x6x6xf32>
  %b1b = "meta.reindex"(%b1) {indices = affine_map<(n, c, h, w) -> (c)>} : (tensor<4xf32>) -> tensor<1x4x6x6xf32>
  %e1 = "meta.reindex"(%eps) {indices = affine_map<(n, c, h, w) -> ()>} : (tensor<f32>) -> tensor<1x4x6x6xf32>
  %z1 = "meta.reindex"(%zero) {indices = affine_map<(n, c, h, w) -> ()>} : (tensor<f32>) -> tensor<1x4x6x6xf32>
  %t1 = "meta.binary"(%c1, %m1b) {kind = "sub"} : (tensor<1x4x6x6xf32>, tensor<1x4x6x6xf32>) -> tensor<1x4x6x6xf32>
  %ve1 = "meta.binary"(%v1b, %e1) {kind = "add"} : (tensor<1x4x6x6xf32>, tensor<1x4x6x6xf32>) -> tensor<1x4x6x6xf32>
  %s1 = "meta.unary"(%ve1) {kind = "sqrt"} : (tensor<1x4x6x6xf32>) -> tensor<1x4x6x6xf32>
  %u1 = "meta.binary"(%t1, %s1) {kind = "div"} : (tensor<1x4x6x6xf32>, tensor<1x4x6x6xf32>) -> tensor<1x4x6x6xf32>
  %sc1 = "meta.binary"(%u1, %g1b) {kind = "mul"} : (tensor<1x4x6x6xf32>, tensor<1x4x6x6xf32>) -> tensor<1x4x6x6xf32>
  %bn1 = "meta.binary"(%sc1, %b1b) {kind = "add"} : (tensor<1x4x6x6xf32>, tensor<1x4x6x6xf32>) -> tensor<1x4x6x6xf32>
  %r1 = "meta.binary"(%bn1, %z1) {kind = "max"} : (tensor<1x4x6x6xf32>, tensor<1x4x6x6xf32>) -> tensor<1x4x6x6xf32>
  // conv 2
  %hh = "meta.reindex"(%r1) {indices = affine_map<(n, o, h, w, i, kh, kw) -> (n, i, h + kh - 1, w + kw - 1)>} : (tensor<1x4x6x6xf32>) -> tensor<1x4x6x6x4x3x3xf32>
  %ww2 = "meta.reindex"(%w2) {indices = affine_map<(n, o, h, w, i, kh, kw) -> (o, i, kh, kw)>} : (tensor<4x4x3x3xf32>) -> tensor<1x4x6x6x4x3x3xf32>
  %p2 = "meta.binary"(%hh, %ww2) {kind = "mul"} : (tensor<1x4x6x6x4x3x3xf32>, tensor<1x4x6x6x4x3x3xf32>) -> tensor<1x4x6x6x4x3x3xf32>
  %c2 = "meta.reindex_reduce"(%p2) {kind = "add", indices = affine_map<(n, o, h, w, i, kh, kw) -> (n, o, h, w)>} : (tensor<1x4x6x6x4x3x3xf32>) -> tensor<1x4x6x6xf32>
  // batch norm 2, residual add, ReLU
  %m2b = "meta.reindex"(%m2) {indices = affine_map<(n, c, h, w) -> (c)>} : (tensor<4xf32>) -> tensor<1x4x6x6xf32>
  %v2b = "meta.reindex"(%v2) {indices = affine_map<(n, c, h, w) -> (c)>} : (tensor<4xf32>) -> tensor<1x4x6x6xf32>
  %g2b = "meta.reindex"(%g2) {indices = affine_map<(n, c, h, w) -> (c)>} : (tensor<4xf32>) -> tensor<1x4x6x6xf32>
  %b2b = "meta.reindex"(%b2) {indices = affine_map<(n, c, h, w) -> (c)>} : (tensor<4xf32>) -> tensor<1x4x6x6xf32>
  %e2 = "meta.reindex"(%eps) {indices = affine_map<(n, c, h, w) -> ()>} : (tensor<f32>) -> tensor<1x4x6x6xf32>
  %z2 = "meta.reindex"(%zero) {indices = affine_map<(n, c, h, w) -> ()>} : (tensor<f32>) -> tensor<1x4x6x6xf32>
  %t2 = "meta.binary"(%c2, %m2b) {kind = "sub"} : (tensor<1x4x6x6xf32>, tensor<1x4x6x6xf32>) -> tensor<1x4x6x6xf32>
  %ve2 = "meta.binary"(%v2b, %e2) {kind = "add"} : (tensor<1x4x6x6xf32>, tensor<1x4x6x6xf32>) -> tensor<1x4x6x6xf32>
  %s2 = "meta.unary"(%ve2) {kind = "sqrt"} : (tensor<1x4x6x6xf32>) -> tensor<1x4x6x6xf32>
  %u2 = "meta.binary"(%t2, %s2) {kind = "div"} : (tensor<1x4x6x6xf32>, tensor<1x4x6x6xf32>) -> tensor<1x4x6x6xf32>
  %sc2 = "meta.binary"(%u2, %g2b) {kind = "mul"} : (tensor<1x4x6x6xf32>, tensor<1x4x6x6xf32>) -> tensor<1x4x6x6xf32>
  %bn2 = "meta.binary"(%sc2, %b2b) {kind = "add"} : (tensor<1x4x6x6xf32>, tensor<1x4x6x6xf32>) -> tensor<1x4x6x6xf32>
  %res = "meta.binary"(%bn2, %x) {kind = "add"} : (tensor<1x4x6x6xf32>, tensor<1x4x6x6xf32>) -> tensor<1x4x6x6xf32>
  %r2 = "meta.binary"(%res, %z2) {kind = "max"} : (tensor<1x4x6x6xf32>, tensor<1x4x6x6xf32>) -> tensor<1x4x6x6xf32>
  return %r2 : tensor<1x4x6x6xf32>
}

// -----

// Two unrolled RNN steps, h = tanh(x_t W + h U): the input projections x_1 W
// and x_2 W of both iterations share W and their domain and fuse into one
// kernel across the iteration boundary; each step's h U stays its own
// (rule 1: the broadcast of h never absorbs the tanh that made it).
// CHECK-LABEL: func.func @rnn_two_steps
//       CHECK:   %{{.+}}:2 = call @rnn_two_steps_fused_{{[0-9]+}}(%arg0, %arg1) : (tensor<2x4x6xf32>, tensor<6x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>)
//       CHECK: func.func private @rnn_two_steps_fused_{{[0-9]+}}(%arg0: tensor<2x4x6xf32>, %arg1: tensor<6x8xf32>) {{.*}}meta.domain = array<i64: 4, 8, 6>
//  CHECK-NEXT:   "meta.reindex"(%arg0) {{.*}} -> tensor<4x8x6xf32>
//  CHECK-NEXT:   "meta.reindex"(%arg1)
//  CHECK-NEXT:   "meta.binary"
//  CHECK-NEXT:   "meta.reindex_reduce"
//  CHECK-NEXT:   "meta.reindex"(%arg0) {{.*}} -> tensor<4x8x6xf32>
//  CHECK-NEXT:   "meta.reindex"(%arg1)
//  CHECK-NEXT:   "meta.binary"
//  CHECK-NEXT:   "meta.reindex_reduce"
//  CHECK-NEXT:   return
//   CHECK-NOT: meta.domain = array<i64: 4, 8, 6>
func.func @rnn_two_steps(%xs: tensor<2x4x6xf32>, %w: tensor<6x8xf32>, %u: tensor<8x8xf32>, %h0: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // step 1
  %x1b = "meta.reindex"(%xs) {indices = affine_map<(i, j, k) -> (0, i, k)>} : (tensor<2x4x6xf32>) -> tensor<4x8x6xf32>
  %w1b = "meta.reindex"(%w) {indices = affine_map<(i, j, k) -> (k, j)>} : (tensor<6x8xf32>) -> tensor<4x8x6xf32>
  %xw1p = "meta.binary"(%x1b, %w1b) {kind = "mul"} : (tensor<4x8x6xf32>, tensor<4x8x6xf32>) -> tensor<4x8x6xf32>
  %xw1 = "meta.reindex_reduce"(%xw1p) {kind = "add", indices = affine_map<(i, j, k) -> (i, j)>} : (tensor<4x8x6xf32>) -> tensor<4x8xf32>
  %h0b = "meta.reindex"(%h0) {indices = affine_map<(i, j, k) -> (i, k)>} : (tensor<4x8xf32>) -> tensor<4x8x8xf32>
  %u1b = "meta.reindex"(%u) {indices = affine_map<(i, j, k) -> (k, j)>} : (tensor<8x8xf32>) -> tensor<4x8x8xf32>
  %hu1p = "meta.binary"(%h0b, %u1b) {kind = "mul"} : (tensor<4x8x8xf32>, tensor<4x8x8xf32>) -> tensor<4x8x8xf32>
  %hu1 = "meta.reindex_reduce"(%hu1p) {kind = "add", indices = affine_map<(i, j, k) -> (i, j)>} : (tensor<4x8x8xf32>) -> tensor<4x8xf32>
  %pre1 = "meta.binary"(%xw1, %hu1) {kind = "add"} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %h1 = "meta.unary"(%pre1) {kind = "tanh"} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  // step 2
  %x2b = "meta.reindex"(%xs) {indices = affine_map<(i, j, k) -> (1, i, k)>} : (tensor<2x4x6xf32>) -> tensor<4x8x6xf32>
  %w2b = "meta.reindex"(%w) {indices = affine_map<(i, j, k) -> (k, j)>} : (tensor<6x8xf32>) -> tensor<4x8x6xf32>
  %xw2p = "meta.binary"(%x2b, %w2b) {kind = "mul"} : (tensor<4x8x6xf32>, tensor<4x8x6xf32>) -> tensor<4x8x6xf32>
  %xw2 = "meta.reindex_reduce"(%xw2p) {kind = "add", indices = affine_map<(i, j, k) -> (i, j)>} : (tensor<4x8x6xf32>) -> tensor<4x8xf32>
  %h1b = "meta.reindex"(%h1) {indices = affine_map<(i, j, k) -> (i, k)>} : (tensor<4x8xf32>) -> tensor<4x8x8xf32>
  %u2b = "meta.reindex"(%u) {indices = affine_map<(i, j, k) -> (k, j)>} : (tensor<8x8xf32>) -> tensor<4x8x8xf32>
  %hu2p = "meta.binary"(%h1b, %u2b) {kind = "mul"} : (tensor<4x8x8xf32>, tensor<4x8x8xf32>) -> tensor<4x8x8xf32>
  %hu2 = "meta.reindex_reduce"(%hu2p) {kind = "add", indices = affine_map<(i, j, k) -> (i, j)>} : (tensor<4x8x8xf32>) -> tensor<4x8xf32>
  %pre2 = "meta.binary"(%xw2, %hu2) {kind = "add"} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %h2 = "meta.unary"(%pre2) {kind = "tanh"} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return %h2 : tensor<4x8xf32>
}
