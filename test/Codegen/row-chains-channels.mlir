// Row chains along a dimension that is not the outermost: instance norm's
// statistics keep the channels (dim 1 of (2, 8, 128, 128)), so the chain's
// rows are the channels. The element-wise normalization would split along
// the batch by itself; the chain gives it the channels (`meta.split`), so
// its loop over [begin, end) is the channels' and the batch loop is inside
// it. A channel of x is 2 x 128 x 128 f32 = 128 KiB, read by the
// statistics and again by the normalization: a block holds 4 channels
// (512 KiB, `REREAD_BYTES`), which the second stage finds in cache. The
// statistics (1x8x1x1, the channels after dimensions of extent 1) live in
// scratch of 16 bytes per block.
// RUN: jitc compile %s --emit mlir | FileCheck %s
// RUN: jitc compile %s --emit mlir --jittor-rules | FileCheck %s --check-prefix=JITTOR
// RUN: jitc explain %s | FileCheck %s --check-prefix=EXPLAIN

func.func @main(%x: tensor<2x8x128x128xf32>) -> tensor<2x8x128x128xf32> {
  %count = arith.constant dense<32768.0> : tensor<f32>
  %eps = arith.constant dense<1.0e-5> : tensor<f32>
  %n = "meta.reindex"(%count) {indices = affine_map<(n, c, h, w) -> ()>} : (tensor<f32>) -> tensor<1x8x1x1xf32>
  %e = "meta.reindex"(%eps) {indices = affine_map<(n, c, h, w) -> ()>} : (tensor<f32>) -> tensor<1x8x1x1xf32>

  %xsum = "meta.reindex_reduce"(%x) {kind = "add", indices = affine_map<(n, c, h, w) -> (0, c, 0, 0)>}
          : (tensor<2x8x128x128xf32>) -> tensor<1x8x1x1xf32>
  %xmean = "meta.binary"(%xsum, %n) {kind = "div"} : (tensor<1x8x1x1xf32>, tensor<1x8x1x1xf32>) -> tensor<1x8x1x1xf32>
  %xx = "meta.binary"(%x, %x) {kind = "mul"} : (tensor<2x8x128x128xf32>, tensor<2x8x128x128xf32>) -> tensor<2x8x128x128xf32>
  %x2sum = "meta.reindex_reduce"(%xx) {kind = "add", indices = affine_map<(n, c, h, w) -> (0, c, 0, 0)>}
           : (tensor<2x8x128x128xf32>) -> tensor<1x8x1x1xf32>
  %x2mean = "meta.binary"(%x2sum, %n) {kind = "div"} : (tensor<1x8x1x1xf32>, tensor<1x8x1x1xf32>) -> tensor<1x8x1x1xf32>
  %sq = "meta.binary"(%xmean, %xmean) {kind = "mul"} : (tensor<1x8x1x1xf32>, tensor<1x8x1x1xf32>) -> tensor<1x8x1x1xf32>
  %xvar = "meta.binary"(%x2mean, %sq) {kind = "sub"} : (tensor<1x8x1x1xf32>, tensor<1x8x1x1xf32>) -> tensor<1x8x1x1xf32>
  %ve = "meta.binary"(%xvar, %e) {kind = "add"} : (tensor<1x8x1x1xf32>, tensor<1x8x1x1xf32>) -> tensor<1x8x1x1xf32>
  %std = "meta.unary"(%ve) {kind = "sqrt"} : (tensor<1x8x1x1xf32>) -> tensor<1x8x1x1xf32>

  %mean_b = "meta.reindex"(%xmean) {indices = affine_map<(n, c, h, w) -> (0, c, 0, 0)>}
            : (tensor<1x8x1x1xf32>) -> tensor<2x8x128x128xf32>
  %std_b = "meta.reindex"(%std) {indices = affine_map<(n, c, h, w) -> (0, c, 0, 0)>}
           : (tensor<1x8x1x1xf32>) -> tensor<2x8x128x128xf32>
  %centered = "meta.binary"(%x, %mean_b) {kind = "sub"} : (tensor<2x8x128x128xf32>, tensor<2x8x128x128xf32>) -> tensor<2x8x128x128xf32>
  %y = "meta.binary"(%centered, %std_b) {kind = "div"} : (tensor<2x8x128x128xf32>, tensor<2x8x128x128xf32>) -> tensor<2x8x128x128xf32>
  return %y : tensor<2x8x128x128xf32>
}

// The statistics: over the block's channels, the batch, then h x w as one
// loop.
// CHECK: func.func @main_fused_0(
// CHECK: scf.for %{{.*}} = %{{.*}} to %{{.*}} step %c1 {
// CHECK: scf.for %{{.*}} = %c0{{.*}} to %c2 step
// CHECK: scf.for %{{.*}} = %c0{{.*}} to %c16384 step
// The normalization, split along the channels too.
// CHECK: func.func @main_fused_2(
// CHECK: scf.for %{{.*}} = %{{.*}} to %{{.*}} step %c1 {
// CHECK-NEXT: %{{.*}} = arith.constant 0 : index
// CHECK-NEXT: %{{.*}} = arith.constant 2 : index
// CHECK: scf.for %{{.*}} = %c0{{.*}} to %c16384 step
// CHECK-LABEL: func.func @main_fused_0_rows(
// CHECK: scf.for %{{.*}} = %{{.*}} to %{{.*}} step %c4 {
// CHECK: func.call @main_fused_0(
// CHECK: func.call @main_fused_1(
// CHECK: func.call @main_fused_2(

// JITTOR-NOT: _rows

// EXPLAIN: @main: 16 ops in 3 groups
// EXPLAIN: row chains on the cpu backend (fused past rule 2; --jittor-rules makes none):
// EXPLAIN-NEXT: @main_fused_0_rows in @main runs @main_fused_0, @main_fused_1, @main_fused_2 one block of 4 of its 8 rows at a time: rows of 16 bytes stay in cache; 131072 bytes of each row of its inputs are read again from cache
