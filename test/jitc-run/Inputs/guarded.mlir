func.func @main(%x: tensor<f32>) -> tensor<f32> {
  %zero = arith.constant dense<0.0> : tensor<f32>
  %ok = "meta.binary"(%x, %zero) {kind = "gt"} : (tensor<f32>, tensor<f32>) -> tensor<i1>
  "meta.guard"(%ok) {id = 3 : i64, reason = "x > 0"} : (tensor<i1>) -> ()
  %h = "meta.state_read"() {name = "h"} : () -> tensor<f32>
  "meta.state_write"(%x) {name = "h"} : (tensor<f32>) -> ()
  return %x : tensor<f32>
}
