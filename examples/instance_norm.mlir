// Instance norm, Listing 5 of the Jittor paper, on x of shape (N,C,H,W) =
// (2,3,4,4): mean and variance over dims 0, 2 and 3 (kept as size 1), then
//   norm_x = (x - xmean) / sqrt(x2mean - xmean^2 + eps).
// Reductions are reindex_reduce ops; broadcasts back are reindex ops.
func.func @main(%x: tensor<2x3x4x4xf32>) -> tensor<2x3x4x4xf32> {
  %count = arith.constant dense<32.0> : tensor<f32>
  %eps = arith.constant dense<1.0e-5> : tensor<f32>
  %n = "meta.reindex"(%count) {indices = affine_map<(n, c, h, w) -> ()>} : (tensor<f32>) -> tensor<1x3x1x1xf32>
  %e = "meta.reindex"(%eps) {indices = affine_map<(n, c, h, w) -> ()>} : (tensor<f32>) -> tensor<1x3x1x1xf32>

  %xsum = "meta.reindex_reduce"(%x) {kind = "add", indices = affine_map<(n, c, h, w) -> (0, c, 0, 0)>}
          : (tensor<2x3x4x4xf32>) -> tensor<1x3x1x1xf32>
  %xmean = "meta.binary"(%xsum, %n) {kind = "div"} : (tensor<1x3x1x1xf32>, tensor<1x3x1x1xf32>) -> tensor<1x3x1x1xf32>
  %xx = "meta.binary"(%x, %x) {kind = "mul"} : (tensor<2x3x4x4xf32>, tensor<2x3x4x4xf32>) -> tensor<2x3x4x4xf32>
  %x2sum = "meta.reindex_reduce"(%xx) {kind = "add", indices = affine_map<(n, c, h, w) -> (0, c, 0, 0)>}
           : (tensor<2x3x4x4xf32>) -> tensor<1x3x1x1xf32>
  %x2mean = "meta.binary"(%x2sum, %n) {kind = "div"} : (tensor<1x3x1x1xf32>, tensor<1x3x1x1xf32>) -> tensor<1x3x1x1xf32>
  %sq = "meta.binary"(%xmean, %xmean) {kind = "mul"} : (tensor<1x3x1x1xf32>, tensor<1x3x1x1xf32>) -> tensor<1x3x1x1xf32>
  %xvar = "meta.binary"(%x2mean, %sq) {kind = "sub"} : (tensor<1x3x1x1xf32>, tensor<1x3x1x1xf32>) -> tensor<1x3x1x1xf32>
  %ve = "meta.binary"(%xvar, %e) {kind = "add"} : (tensor<1x3x1x1xf32>, tensor<1x3x1x1xf32>) -> tensor<1x3x1x1xf32>
  %std = "meta.unary"(%ve) {kind = "sqrt"} : (tensor<1x3x1x1xf32>) -> tensor<1x3x1x1xf32>

  %mean_b = "meta.reindex"(%xmean) {indices = affine_map<(n, c, h, w) -> (0, c, 0, 0)>}
            : (tensor<1x3x1x1xf32>) -> tensor<2x3x4x4xf32>
  %std_b = "meta.reindex"(%std) {indices = affine_map<(n, c, h, w) -> (0, c, 0, 0)>}
           : (tensor<1x3x1x1xf32>) -> tensor<2x3x4x4xf32>
  %centered = "meta.binary"(%x, %mean_b) {kind = "sub"} : (tensor<2x3x4x4xf32>, tensor<2x3x4x4xf32>) -> tensor<2x3x4x4xf32>
  %y = "meta.binary"(%centered, %std_b) {kind = "div"} : (tensor<2x3x4x4xf32>, tensor<2x3x4x4xf32>) -> tensor<2x3x4x4xf32>
  return %y : tensor<2x3x4x4xf32>
}
