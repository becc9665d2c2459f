// An Elman RNN over a sequence of 5 steps: h = tanh(x_t W + h U), starting
// from the state `rnn.h` and writing the final h back to it. x_t is read
// with a reindex whose index depends on the loop variable (a map
// symbol), broadcast straight into the (i, j, k) domain of x_t W. The state
// write is committed only if the whole run succeeds.
func.func @main(%xs: tensor<5x4x6xf32>, %w: tensor<6x8xf32>, %u: tensor<8x8xf32>) -> tensor<4x8xf32> {
  %h0 = "meta.state_read"() {name = "rnn.h"} : () -> tensor<4x8xf32>
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %steps = arith.constant 5 : index
  %h = scf.for %t = %c0 to %steps step %c1 iter_args(%hp = %h0) -> (tensor<4x8xf32>) {
    %xb = "meta.reindex"(%xs, %t) {indices = affine_map<(i, j, k)[t] -> (t, i, k)>}
          : (tensor<5x4x6xf32>, index) -> tensor<4x8x6xf32>
    %wb = "meta.reindex"(%w) {indices = affine_map<(i, j, k) -> (k, j)>} : (tensor<6x8xf32>) -> tensor<4x8x6xf32>
    %xw_p = "meta.binary"(%xb, %wb) {kind = "mul"} : (tensor<4x8x6xf32>, tensor<4x8x6xf32>) -> tensor<4x8x6xf32>
    %xw = "meta.reindex_reduce"(%xw_p) {kind = "add", indices = affine_map<(i, j, k) -> (i, j)>}
          : (tensor<4x8x6xf32>) -> tensor<4x8xf32>
    %hb = "meta.reindex"(%hp) {indices = affine_map<(i, j, k) -> (i, k)>} : (tensor<4x8xf32>) -> tensor<4x8x8xf32>
    %ub = "meta.reindex"(%u) {indices = affine_map<(i, j, k) -> (k, j)>} : (tensor<8x8xf32>) -> tensor<4x8x8xf32>
    %hu_p = "meta.binary"(%hb, %ub) {kind = "mul"} : (tensor<4x8x8xf32>, tensor<4x8x8xf32>) -> tensor<4x8x8xf32>
    %hu = "meta.reindex_reduce"(%hu_p) {kind = "add", indices = affine_map<(i, j, k) -> (i, j)>}
          : (tensor<4x8x8xf32>) -> tensor<4x8xf32>
    %pre = "meta.binary"(%xw, %hu) {kind = "add"} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
    %hn = "meta.unary"(%pre) {kind = "tanh"} : (tensor<4x8xf32>) -> tensor<4x8xf32>
    scf.yield %hn : tensor<4x8xf32>
  }
  "meta.state_write"(%h) {name = "rnn.h"} : (tensor<4x8xf32>) -> ()
  return %h : tensor<4x8xf32>
}
