// Matrix multiplication as broadcast-multiply-sum: C[i,j] = sum_k A[i,k] B[k,j],
// with A (4x3) and B (3x5) both broadcast to the (i, j, k) domain 4x5x3.
func.func @main(%a: tensor<4x3xf32>, %b: tensor<3x5xf32>) -> tensor<4x5xf32> {
  %ab = "meta.reindex"(%a) {indices = affine_map<(i, j, k) -> (i, k)>} : (tensor<4x3xf32>) -> tensor<4x5x3xf32>
  %bb = "meta.reindex"(%b) {indices = affine_map<(i, j, k) -> (k, j)>} : (tensor<3x5xf32>) -> tensor<4x5x3xf32>
  %p = "meta.binary"(%ab, %bb) {kind = "mul"} : (tensor<4x5x3xf32>, tensor<4x5x3xf32>) -> tensor<4x5x3xf32>
  %c = "meta.reindex_reduce"(%p) {kind = "add", indices = affine_map<(i, j, k) -> (i, j)>}
       : (tensor<4x5x3xf32>) -> tensor<4x5xf32>
  return %c : tensor<4x5xf32>
}
