// The convolution of the Jittor paper's Listing 1, with padding 1:
//   xx[n,o,h,w,i,kh,kw] = x[n, i, h+kh-1, w+kw-1]   a reindex; 0 in the padding
//   pp[n,o,h,w,i,kh,kw] = p[o, i, kh, kw]            a broadcast (also a reindex)
//   y[n,o,h,w] = sum over (i,kh,kw) of xx * pp       an element-wise op and a reindex_reduce
func.func @main(%x: tensor<2x3x5x5xf32>, %p: tensor<4x3x3x3xf32>) -> tensor<2x4x5x5xf32> {
  %xx = "meta.reindex"(%x) {
          indices = affine_map<(n, o, h, w, i, kh, kw) -> (n, i, h + kh - 1, w + kw - 1)>,
          overflow_value = 0.0 : f32}
        : (tensor<2x3x5x5xf32>) -> tensor<2x4x5x5x3x3x3xf32>
  %pp = "meta.reindex"(%p) {
          indices = affine_map<(n, o, h, w, i, kh, kw) -> (o, i, kh, kw)>}
        : (tensor<4x3x3x3xf32>) -> tensor<2x4x5x5x3x3x3xf32>
  %yy = "meta.binary"(%xx, %pp) {kind = "mul"}
        : (tensor<2x4x5x5x3x3x3xf32>, tensor<2x4x5x5x3x3x3xf32>) -> tensor<2x4x5x5x3x3x3xf32>
  %y = "meta.reindex_reduce"(%yy) {
         kind = "add", indices = affine_map<(n, o, h, w, i, kh, kw) -> (n, o, h, w)>}
       : (tensor<2x4x5x5x3x3x3xf32>) -> tensor<2x4x5x5xf32>
  return %y : tensor<2x4x5x5xf32>
}
