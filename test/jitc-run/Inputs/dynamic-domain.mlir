// A kernel whose domain has a dynamic dimension: not compiled yet.
func.func @main(%x: tensor<?xf32>) -> tensor<?xf32> {
  %y = "meta.unary"(%x) {kind = "neg"} : (tensor<?xf32>) -> tensor<?xf32>
  return %y : tensor<?xf32>
}
