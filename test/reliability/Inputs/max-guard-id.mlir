func.func @main(%x: tensor<?xf32>) -> tensor<?xf32> {
  %true = arith.constant dense<true> : tensor<i1>
  "meta.guard"(%true) {id = 9223372036854775807 : i64, reason = "always"} : (tensor<i1>) -> ()
  %y = "meta.unary"(%x) {kind = "neg"} : (tensor<?xf32>) -> tensor<?xf32>
  return %y : tensor<?xf32>
}
