// A reduction over a domain of dynamic shape: not compiled yet.
func.func @main(%x: tensor<?xf32>) -> tensor<f32> {
  %s = "meta.reindex_reduce"(%x) {kind = "add", indices = affine_map<(d0) -> ()>} : (tensor<?xf32>) -> tensor<f32>
  return %s : tensor<f32>
}
