// meta-fuse's rules: `jittor` (the default) is the paper's, under which
// the two steps' input projections x_t W, siblings through x and W, fuse
// into one kernel of two reductions (Jittor's cross-iteration fusion, as
// fuse-paper.mlir checks). `jitc`, which the compilers' `fuse` pipeline
// runs, keeps two contractions apart: the CPU runs a contraction as
// register tiles of one output, and a kernel of two ran as one loop nest
// (the unrolled IndRNN's 16 projections, 40 times slower).
// RUN: jitc opt %s --meta-fuse | FileCheck %s --check-prefix=JITTOR
// RUN: jitc opt %s --meta-fuse=rules=jitc | FileCheck %s --check-prefix=JITC
// RUN: jitc explain %s | FileCheck %s --check-prefix=EXPLAIN
// RUN: not jitc opt %s --meta-fuse=rules=tvm 2>&1 | FileCheck %s --check-prefix=BAD

// JITTOR-LABEL: func.func @rnn_two_steps
// JITTOR: call @rnn_two_steps_fused_{{[0-9]+}}(%arg0, %arg1) : (tensor<2x4x6xf32>, tensor<6x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>)

// JITC-LABEL: func.func @rnn_two_steps
// JITC-NOT: -> (tensor<4x8xf32>, tensor<4x8xf32>)
// JITC-COUNT-4: call @rnn_two_steps_fused_{{[0-9]+}}(%{{[a-z0-9]+}}, %{{[a-z0-9]+}}) : (tensor<{{.*}}>, tensor<{{.*}}>) -> tensor<4x8xf32>
// JITC-NOT: -> (tensor<4x8xf32>, tensor<4x8xf32>)

// The plan jitc explain shows is the compilers': the two projections are
// one contraction (meta-batch), and the two steps' reads of its rows are
// not merged as siblings (each reads only its row).
// EXPLAIN: @rnn_two_steps: meta-batch made 2 contractions one
// EXPLAIN: @rnn_two_steps:
// EXPLAIN-NOT: sibling merge

// BAD: meta-fuse: rules must be 'jittor' (the paper's) or 'jitc' (contractions kept apart), got 'tvm'

func.func @rnn_two_steps(%xs: tensor<2x4x6xf32>, %w: tensor<6x8xf32>, %u: tensor<8x8xf32>, %h0: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // step 1
  %x1b = "meta.reindex"(%xs) {indices = affine_map<(i, j, k) -> (0, i, k)>} : (tensor<2x4x6xf32>) -> tensor<4x8x6xf32>
  %w1b = "meta.reindex"(%w) {indices = affine_map<(i, j, k) -> (k, j)>} : (tensor<6x8xf32>) -> tensor<4x8x6xf32>
  %xw1p = "meta.binary"(%x1b, %w1b) {kind = "mul"} : (tensor<4x8x6xf32>, tensor<4x8x6xf32>) -> tensor<4x8x6xf32>
  %xw1 = "meta.reindex_reduce"(%xw1p) {kind = "add", indices = affine_map<(i, j, k) -> (i, j)>} : (tensor<4x8x6xf32>) -> tensor<4x8xf32>
  %h0b = "meta.reindex"(%h0) {indices = affine_map<(i, j, k) -> (i, k)>} : (tensor<4x8xf32>) -> tensor<4x8x8xf32>
  %u1b = "meta.reindex"(%u) {indices = affine_map<(i, j, k) -> (k, j)>} : (tensor<8x8xf32>) -> tensor<4x8x8xf32>
  %hu1p = "meta.binary"(%h0b, %u1b) {kind = "mul"} : (tensor<4x8x8xf32>, tensor<4x8x8xf32>) -> tensor<4x8x8xf32>
  %hu1 = "meta.reindex_reduce"(%hu1p) {kind = "add", indices = affine_map<(i, j, k) -> (i, j)>} : (tensor<4x8x8xf32>) -> tensor<4x8xf32>
  %pre1 = "meta.binary"(%xw1, %hu1) {kind = "add"} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %h1 = "meta.unary"(%pre1) {kind = "tanh"} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  // step 2
  %x2b = "meta.reindex"(%xs) {indices = affine_map<(i, j, k) -> (1, i, k)>} : (tensor<2x4x6xf32>) -> tensor<4x8x6xf32>
  %w2b = "meta.reindex"(%w) {indices = affine_map<(i, j, k) -> (k, j)>} : (tensor<6x8xf32>) -> tensor<4x8x6xf32>
  %xw2p = "meta.binary"(%x2b, %w2b) {kind = "mul"} : (tensor<4x8x6xf32>, tensor<4x8x6xf32>) -> tensor<4x8x6xf32>
  %xw2 = "meta.reindex_reduce"(%xw2p) {kind = "add", indices = affine_map<(i, j, k) -> (i, j)>} : (tensor<4x8x6xf32>) -> tensor<4x8xf32>
  %h1b = "meta.reindex"(%h1) {indices = affine_map<(i, j, k) -> (i, k)>} : (tensor<4x8xf32>) -> tensor<4x8x8xf32>
  %u2b = "meta.reindex"(%u) {indices = affine_map<(i, j, k) -> (k, j)>} : (tensor<8x8xf32>) -> tensor<4x8x8xf32>
  %hu2p = "meta.binary"(%h1b, %u2b) {kind = "mul"} : (tensor<4x8x8xf32>, tensor<4x8x8xf32>) -> tensor<4x8x8xf32>
  %hu2 = "meta.reindex_reduce"(%hu2p) {kind = "add", indices = affine_map<(i, j, k) -> (i, j)>} : (tensor<4x8x8xf32>) -> tensor<4x8xf32>
  %pre2 = "meta.binary"(%xw2, %hu2) {kind = "add"} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %h2 = "meta.unary"(%pre2) {kind = "tanh"} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return %h2 : tensor<4x8xf32>
}
