// A call of a function declared without a body, in a branch a run may not
// take: the host plan cannot hold it, the interpreter runs the branch it
// takes.
func.func private @external(tensor<2xf32>) -> tensor<2xf32>
func.func @main(%x: tensor<2xf32>, %b: i1) -> tensor<2xf32> {
  %y = scf.if %b -> (tensor<2xf32>) {
    %e = func.call @external(%x) : (tensor<2xf32>) -> tensor<2xf32>
    scf.yield %e : tensor<2xf32>
  } else {
    %n = "meta.unary"(%x) {kind = "neg"} : (tensor<2xf32>) -> tensor<2xf32>
    scf.yield %n : tensor<2xf32>
  }
  return %y : tensor<2xf32>
}
