//! The host benches' RNN: an Elman RNN as an `scf.for` over a sequence,
//! its state carried across calls (`rnn.h`), shared by the `host` bench
//! (host plan against the interpreter, on the CPU) and the `cuda` bench
//! (the same host plan with its values on the GPU).

use jitc_interp::{Scalar, StateStore, Tensor, Value};

/// `@main`'s arguments: the sequence and the two weights, small constants.
pub fn inputs(steps: usize, batch: usize, hidden: usize) -> Vec<Value> {
    vec![
        Value::tensor(Tensor::splat(vec![steps, batch, hidden], Scalar::F32(0.01))),
        Value::tensor(Tensor::splat(vec![hidden, hidden], Scalar::F32(0.01))),
        Value::tensor(Tensor::splat(vec![hidden, hidden], Scalar::F32(0.02))),
    ]
}

/// The state `@main` starts from: `rnn.h` all zeros.
pub fn state(batch: usize, hidden: usize) -> StateStore {
    let mut state = StateStore::new();
    state.insert("rnn.h", Tensor::splat(vec![batch, hidden], Scalar::F32(0.0)));
    state
}

/// `@main(%xs: steps x batch x hidden, %w, %u)`, reading and writing the
/// state `rnn.h` (batch x hidden).
pub fn rnn(steps: usize, batch: usize, hidden: usize) -> String {
    let (b, h) = (batch, hidden);
    format!(
        r#"func.func @main(%xs: tensor<{steps}x{b}x{h}xf32>, %w: tensor<{h}x{h}xf32>, %u: tensor<{h}x{h}xf32>) -> tensor<{b}x{h}xf32> {{
  %h0 = "meta.state_read"() {{name = "rnn.h"}} : () -> tensor<{b}x{h}xf32>
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %steps = arith.constant {steps} : index
  %h = scf.for %t = %c0 to %steps step %c1 iter_args(%hp = %h0) -> (tensor<{b}x{h}xf32>) {{
    %xb = "meta.reindex"(%xs, %t) {{indices = affine_map<(i, j, k)[t] -> (t, i, k)>}} : (tensor<{steps}x{b}x{h}xf32>, index) -> tensor<{b}x{h}x{h}xf32>
    %wb = "meta.reindex"(%w) {{indices = affine_map<(i, j, k) -> (k, j)>}} : (tensor<{h}x{h}xf32>) -> tensor<{b}x{h}x{h}xf32>
    %xw_p = "meta.binary"(%xb, %wb) {{kind = "mul"}} : (tensor<{b}x{h}x{h}xf32>, tensor<{b}x{h}x{h}xf32>) -> tensor<{b}x{h}x{h}xf32>
    %xw = "meta.reindex_reduce"(%xw_p) {{kind = "add", indices = affine_map<(i, j, k) -> (i, j)>}} : (tensor<{b}x{h}x{h}xf32>) -> tensor<{b}x{h}xf32>
    %hb = "meta.reindex"(%hp) {{indices = affine_map<(i, j, k) -> (i, k)>}} : (tensor<{b}x{h}xf32>) -> tensor<{b}x{h}x{h}xf32>
    %ub = "meta.reindex"(%u) {{indices = affine_map<(i, j, k) -> (k, j)>}} : (tensor<{h}x{h}xf32>) -> tensor<{b}x{h}x{h}xf32>
    %hu_p = "meta.binary"(%hb, %ub) {{kind = "mul"}} : (tensor<{b}x{h}x{h}xf32>, tensor<{b}x{h}x{h}xf32>) -> tensor<{b}x{h}x{h}xf32>
    %hu = "meta.reindex_reduce"(%hu_p) {{kind = "add", indices = affine_map<(i, j, k) -> (i, j)>}} : (tensor<{b}x{h}x{h}xf32>) -> tensor<{b}x{h}xf32>
    %pre = "meta.binary"(%xw, %hu) {{kind = "add"}} : (tensor<{b}x{h}xf32>, tensor<{b}x{h}xf32>) -> tensor<{b}x{h}xf32>
    %hn = "meta.unary"(%pre) {{kind = "tanh"}} : (tensor<{b}x{h}xf32>) -> tensor<{b}x{h}xf32>
    scf.yield %hn : tensor<{b}x{h}xf32>
  }}
  "meta.state_write"(%h) {{name = "rnn.h"}} : (tensor<{b}x{h}xf32>) -> ()
  return %h : tensor<{b}x{h}xf32>
}}"#
    )
}
