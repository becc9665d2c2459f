// Softmax over the last dimension of a (4, 8) tensor, stabilized by the row
// maximum: y = exp(x - max(x)) / sum(exp(x - max(x))).
func.func @main(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %max = "meta.reindex_reduce"(%x) {kind = "max", indices = affine_map<(i, j) -> (i)>}
         : (tensor<4x8xf32>) -> tensor<4xf32>
  %max_b = "meta.reindex"(%max) {indices = affine_map<(i, j) -> (i)>} : (tensor<4xf32>) -> tensor<4x8xf32>
  %shifted = "meta.binary"(%x, %max_b) {kind = "sub"} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %e = "meta.unary"(%shifted) {kind = "exp"} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %sum = "meta.reindex_reduce"(%e) {kind = "add", indices = affine_map<(i, j) -> (i)>}
         : (tensor<4x8xf32>) -> tensor<4xf32>
  %sum_b = "meta.reindex"(%sum) {indices = affine_map<(i, j) -> (i)>} : (tensor<4xf32>) -> tensor<4x8xf32>
  %y = "meta.binary"(%e, %sum_b) {kind = "div"} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}
