func.func @f(%x: tensor<4xf32>) -> tensor<3x4xf32> {
  %0 = "meta.reindex"(%x) {overflow_value = 0.0 : f32} : (tensor<4xf32>) -> tensor<3x4xf32>
  return %0 : tensor<3x4xf32>
}
