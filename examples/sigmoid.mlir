// sigmoid(x) = exp(x) / (exp(x) + 1), written with element-wise meta ops and
// a broadcast of the scalar 1 (a reindex of a rank-0 tensor).
func.func @main(%x: tensor<1024xf32>) -> tensor<1024xf32> {
  %one = arith.constant dense<1.0> : tensor<f32>
  %ones = "meta.reindex"(%one) {indices = affine_map<(d0) -> ()>} : (tensor<f32>) -> tensor<1024xf32>
  %e = "meta.unary"(%x) {kind = "exp"} : (tensor<1024xf32>) -> tensor<1024xf32>
  %d = "meta.binary"(%e, %ones) {kind = "add"} : (tensor<1024xf32>, tensor<1024xf32>) -> tensor<1024xf32>
  %y = "meta.binary"(%e, %d) {kind = "div"} : (tensor<1024xf32>, tensor<1024xf32>) -> tensor<1024xf32>
  return %y : tensor<1024xf32>
}
