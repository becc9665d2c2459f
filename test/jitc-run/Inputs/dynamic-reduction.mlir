// A reduction over a domain of dynamic shape: compiled, with the size read
// at run time.
func.func @main(%x: tensor<?xf32>) -> tensor<f32> {
  %s = "meta.reindex_reduce"(%x) {kind = "add", indices = affine_map<(d0) -> ()>} : (tensor<?xf32>) -> tensor<f32>
  return %s : tensor<f32>
}
