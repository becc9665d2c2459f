func.func @f(%x: tensor<4xf32>) -> tensor<3x4xf32> {
  %0 = "meta.reindex"(%x) {indices = affine_map<(d0, d1) -> (d1, d0)>} : (tensor<4xf32>) -> tensor<3x4xf32>
  return %0 : tensor<3x4xf32>
}
