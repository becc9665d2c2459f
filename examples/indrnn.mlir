// IndRNN (Li et al., 2018) over a sequence of any length, with its state
// carried across calls as in JANUS's Figure 1:
//   h_t = tanh(x_t W + u * h_{t-1})
// x_t W is a matmul per step; the recurrence itself is element-wise (u is a
// vector), so once the loop is unrolled the recurrences of all steps fuse
// into one kernel (Jittor's cross-iteration fusion). The sequence length
// is dynamic (tensor<?x16x64xf32>): generically, the loop runs step by step
// and the kernels that read %xs have a dynamic shape. `jitc run
// --profile-out` records the length; `meta-specialize` fixes it under a
// guard, `meta-unroll` unrolls, and a different length falls back.
func.func @main(%xs: tensor<?x16x64xf32>, %w: tensor<64x64xf32>, %u: tensor<64xf32>) -> tensor<16x64xf32> {
  %h0 = "meta.state_read"() {name = "rnn.h"} : () -> tensor<16x64xf32>
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %steps = tensor.dim %xs, %c0 : tensor<?x16x64xf32>
  %ub = "meta.reindex"(%u) {indices = affine_map<(i, j) -> (j)>} : (tensor<64xf32>) -> tensor<16x64xf32>
  %h = scf.for %t = %c0 to %steps step %c1 iter_args(%hp = %h0) -> (tensor<16x64xf32>) {
    %xb = "meta.reindex"(%xs, %t) {indices = affine_map<(i, j, k)[t] -> (t, i, k)>}
          : (tensor<?x16x64xf32>, index) -> tensor<16x64x64xf32>
    %wb = "meta.reindex"(%w) {indices = affine_map<(i, j, k) -> (k, j)>} : (tensor<64x64xf32>) -> tensor<16x64x64xf32>
    %p = "meta.binary"(%xb, %wb) {kind = "mul"} : (tensor<16x64x64xf32>, tensor<16x64x64xf32>) -> tensor<16x64x64xf32>
    %xw = "meta.reindex_reduce"(%p) {kind = "add", indices = affine_map<(i, j, k) -> (i, j)>}
          : (tensor<16x64x64xf32>) -> tensor<16x64xf32>
    %uh = "meta.binary"(%ub, %hp) {kind = "mul"} : (tensor<16x64xf32>, tensor<16x64xf32>) -> tensor<16x64xf32>
    %pre = "meta.binary"(%xw, %uh) {kind = "add"} : (tensor<16x64xf32>, tensor<16x64xf32>) -> tensor<16x64xf32>
    %hn = "meta.unary"(%pre) {kind = "tanh"} : (tensor<16x64xf32>) -> tensor<16x64xf32>
    scf.yield %hn : tensor<16x64xf32>
  }
  "meta.state_write"(%h) {name = "rnn.h"} : (tensor<16x64xf32>) -> ()
  return %h : tensor<16x64xf32>
}
