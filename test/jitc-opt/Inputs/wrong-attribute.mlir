func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = "meta.unary"(%x) {kind = 3 : i64} : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}
