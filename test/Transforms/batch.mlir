// RUN: jitc opt %s --split-input-file --meta-batch | FileCheck %s

// An unrolled RNN's input projections: x_t W for t = 0, 1, 2, each reading
// xs[t] through a map symbol bound to a constant, and W through its own
// (equal) broadcast. They become one contraction over (s, i, j, k) whose
// reduction keeps s, and step t reads row t of it.
//   CHECK-DAG: #[[XMAP:map[0-9]*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>
//   CHECK-DAG: #[[WMAP:map[0-9]*]] = affine_map<(d0, d1, d2, d3) -> (d3, d2)>
//   CHECK-DAG: #[[RMAP:map[0-9]*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>
//   CHECK-DAG: #[[ROW:map[0-9]*]] = affine_map<(d0, d1)[s0] -> (s0, d0, d1)>
// CHECK-LABEL: func.func @rnn_projections
//       CHECK:   %[[X:.+]] = "meta.reindex"(%arg0) {indices = #[[XMAP]]} : (tensor<3x4x6xf32>) -> tensor<3x4x8x6xf32>
//       CHECK:   %[[W:.+]] = "meta.reindex"(%arg1) {indices = #[[WMAP]]} : (tensor<6x8xf32>) -> tensor<3x4x8x6xf32>
//       CHECK:   %[[P:.+]] = "meta.binary"(%[[X]], %[[W]]) {kind = "mul"} : (tensor<3x4x8x6xf32>, tensor<3x4x8x6xf32>) -> tensor<3x4x8x6xf32>
//       CHECK:   %[[R:.+]] = "meta.reindex_reduce"(%[[P]]) {indices = #[[RMAP]], kind = "add"} : (tensor<3x4x8x6xf32>) -> tensor<3x4x8xf32>
//       CHECK:   %[[C0:.+]] = arith.constant 0 : index
//       CHECK:   %[[R0:.+]] = "meta.reindex"(%[[R]], %[[C0]]) {indices = #[[ROW]]} : (tensor<3x4x8xf32>, index) -> tensor<4x8xf32>
//       CHECK:   %[[H1:.+]] = "meta.unary"(%[[R0]]) {kind = "tanh"}
//       CHECK:   %[[C1:.+]] = arith.constant 1 : index
//       CHECK:   %[[R1:.+]] = "meta.reindex"(%[[R]], %[[C1]]) {indices = #[[ROW]]}
//       CHECK:   "meta.binary"(%[[R1]], %[[H1]]) {kind = "add"}
//       CHECK:   %[[C2:.+]] = arith.constant 2 : index
//       CHECK:   "meta.reindex"(%[[R]], %[[C2]]) {indices = #[[ROW]]}
//   CHECK-NOT:   "meta.reindex_reduce"
//       CHECK:   return
#x = affine_map<(i, j, k)[t] -> (t, i, k)>
#w = affine_map<(i, j, k) -> (k, j)>
#r = affine_map<(i, j, k) -> (i, j)>
func.func @rnn_projections(%xs: tensor<3x4x6xf32>, %w: tensor<6x8xf32>) -> tensor<4x8xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %x0 = "meta.reindex"(%xs, %c0) {indices = #x} : (tensor<3x4x6xf32>, index) -> tensor<4x8x6xf32>
  %w0 = "meta.reindex"(%w) {indices = #w} : (tensor<6x8xf32>) -> tensor<4x8x6xf32>
  %p0 = "meta.binary"(%x0, %w0) {kind = "mul"} : (tensor<4x8x6xf32>, tensor<4x8x6xf32>) -> tensor<4x8x6xf32>
  %r0 = "meta.reindex_reduce"(%p0) {kind = "add", indices = #r} : (tensor<4x8x6xf32>) -> tensor<4x8xf32>
  %h1 = "meta.unary"(%r0) {kind = "tanh"} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %x1 = "meta.reindex"(%xs, %c1) {indices = #x} : (tensor<3x4x6xf32>, index) -> tensor<4x8x6xf32>
  %w1 = "meta.reindex"(%w) {indices = #w} : (tensor<6x8xf32>) -> tensor<4x8x6xf32>
  %p1 = "meta.binary"(%x1, %w1) {kind = "mul"} : (tensor<4x8x6xf32>, tensor<4x8x6xf32>) -> tensor<4x8x6xf32>
  %r1 = "meta.reindex_reduce"(%p1) {kind = "add", indices = #r} : (tensor<4x8x6xf32>) -> tensor<4x8xf32>
  %a1 = "meta.binary"(%r1, %h1) {kind = "add"} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %h2 = "meta.unary"(%a1) {kind = "tanh"} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %x2 = "meta.reindex"(%xs, %c2) {indices = #x} : (tensor<3x4x6xf32>, index) -> tensor<4x8x6xf32>
  %w2 = "meta.reindex"(%w) {indices = #w} : (tensor<6x8xf32>) -> tensor<4x8x6xf32>
  %p2 = "meta.binary"(%x2, %w2) {kind = "mul"} : (tensor<4x8x6xf32>, tensor<4x8x6xf32>) -> tensor<4x8x6xf32>
  %r2 = "meta.reindex_reduce"(%p2) {kind = "add", indices = #r} : (tensor<4x8x6xf32>) -> tensor<4x8xf32>
  %a2 = "meta.binary"(%r2, %h2) {kind = "add"} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  return %a2 : tensor<4x8xf32>
}

// -----

// Constant maps instead of symbols, a stride of 2, members out of order,
// and a shared operand that is a plain value: it is broadcast along s. Row
// 0 of the batch is the member at offset 2, which comes second.
//   CHECK-DAG: #[[XMAP:map[0-9]*]] = affine_map<(d0, d1) -> (d0 * 2 + 2, d1)>
//   CHECK-DAG: #[[YMAP:map[0-9]*]] = affine_map<(d0, d1) -> (d1)>
//   CHECK-DAG: #[[RMAP:map[0-9]*]] = affine_map<(d0, d1) -> (d0)>
//   CHECK-DAG: #[[ROW:map[0-9]*]] = affine_map<()[s0] -> (s0)>
// CHECK-LABEL: func.func @strided_out_of_order
//       CHECK:   %[[X:.+]] = "meta.reindex"(%arg0) {indices = #[[XMAP]]} : (tensor<8x5xf32>) -> tensor<2x5xf32>
//       CHECK:   %[[Y:.+]] = "meta.reindex"(%arg1) {indices = #[[YMAP]]} : (tensor<5xf32>) -> tensor<2x5xf32>
//       CHECK:   %[[P:.+]] = "meta.binary"(%[[Y]], %[[X]]) {kind = "mul"}
//       CHECK:   %[[R:.+]] = "meta.reindex_reduce"(%[[P]]) {indices = #[[RMAP]], kind = "add"} : (tensor<2x5xf32>) -> tensor<2xf32>
//       CHECK:   %[[C1:.+]] = arith.constant 1 : index
//       CHECK:   %[[A:.+]] = "meta.reindex"(%[[R]], %[[C1]]) {indices = #[[ROW]]} : (tensor<2xf32>, index) -> tensor<f32>
//       CHECK:   %[[C0:.+]] = arith.constant 0 : index
//       CHECK:   %[[B:.+]] = "meta.reindex"(%[[R]], %[[C0]]) {indices = #[[ROW]]} : (tensor<2xf32>, index) -> tensor<f32>
//       CHECK:   return %[[A]], %[[B]]
func.func @strided_out_of_order(%x: tensor<8x5xf32>, %y: tensor<5xf32>) -> (tensor<f32>, tensor<f32>) {
  %x4 = "meta.reindex"(%x) {indices = affine_map<(k) -> (4, k)>} : (tensor<8x5xf32>) -> tensor<5xf32>
  %p4 = "meta.binary"(%y, %x4) {kind = "mul"} : (tensor<5xf32>, tensor<5xf32>) -> tensor<5xf32>
  %r4 = "meta.reindex_reduce"(%p4) {kind = "add", indices = affine_map<(k) -> ()>} : (tensor<5xf32>) -> tensor<f32>
  %x2 = "meta.reindex"(%x) {indices = affine_map<(k) -> (2, k)>} : (tensor<8x5xf32>) -> tensor<5xf32>
  %p2 = "meta.binary"(%y, %x2) {kind = "mul"} : (tensor<5xf32>, tensor<5xf32>) -> tensor<5xf32>
  %r2 = "meta.reindex_reduce"(%p2) {kind = "add", indices = affine_map<(k) -> ()>} : (tensor<5xf32>) -> tensor<f32>
  return %r4, %r2 : tensor<f32>, tensor<f32>
}

// -----

// Left alone: offsets 0, 1 and 3 are no progression; a product used twice
// would be computed twice; operands in the other order are another batch
// (NaN payloads follow the first operand); a maximum is not a contraction.
// CHECK-LABEL: func.func @left_alone
//   CHECK-NOT:   tensor<2x
//   CHECK-NOT:   tensor<3x5
//       CHECK:   return
#row = affine_map<(k)[t] -> (t, k)>
#all = affine_map<(k) -> ()>
func.func @left_alone(%x: tensor<8x5xf32>, %y: tensor<5xf32>) -> (tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<5xf32>, tensor<f32>, tensor<f32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %c5 = arith.constant 5 : index
  %c6 = arith.constant 6 : index
  %c7 = arith.constant 7 : index
  %a0 = "meta.reindex"(%x, %c0) {indices = #row} : (tensor<8x5xf32>, index) -> tensor<5xf32>
  %q0 = "meta.binary"(%a0, %y) {kind = "mul"} : (tensor<5xf32>, tensor<5xf32>) -> tensor<5xf32>
  %s0 = "meta.reindex_reduce"(%q0) {kind = "add", indices = #all} : (tensor<5xf32>) -> tensor<f32>
  %a1 = "meta.reindex"(%x, %c1) {indices = #row} : (tensor<8x5xf32>, index) -> tensor<5xf32>
  %q1 = "meta.binary"(%a1, %y) {kind = "mul"} : (tensor<5xf32>, tensor<5xf32>) -> tensor<5xf32>
  %s1 = "meta.reindex_reduce"(%q1) {kind = "add", indices = #all} : (tensor<5xf32>) -> tensor<f32>
  %a3 = "meta.reindex"(%x, %c3) {indices = #row} : (tensor<8x5xf32>, index) -> tensor<5xf32>
  %q3 = "meta.binary"(%a3, %y) {kind = "mul"} : (tensor<5xf32>, tensor<5xf32>) -> tensor<5xf32>
  %s3 = "meta.reindex_reduce"(%q3) {kind = "add", indices = #all} : (tensor<5xf32>) -> tensor<f32>
  %a5 = "meta.reindex"(%x, %c5) {indices = #row} : (tensor<8x5xf32>, index) -> tensor<5xf32>
  %q5 = "meta.binary"(%y, %a5) {kind = "mul"} : (tensor<5xf32>, tensor<5xf32>) -> tensor<5xf32>
  %s5 = "meta.reindex_reduce"(%q5) {kind = "add", indices = #all} : (tensor<5xf32>) -> tensor<f32>
  %a6 = "meta.reindex"(%x, %c6) {indices = #row} : (tensor<8x5xf32>, index) -> tensor<5xf32>
  %q6 = "meta.binary"(%y, %a6) {kind = "mul"} : (tensor<5xf32>, tensor<5xf32>) -> tensor<5xf32>
  %s6 = "meta.reindex_reduce"(%q6) {kind = "add", indices = #all} : (tensor<5xf32>) -> tensor<f32>
  %a7 = "meta.reindex"(%x, %c7) {indices = #row} : (tensor<8x5xf32>, index) -> tensor<5xf32>
  %q7 = "meta.binary"(%a7, %y) {kind = "mul"} : (tensor<5xf32>, tensor<5xf32>) -> tensor<5xf32>
  %s7 = "meta.reindex_reduce"(%q7) {kind = "max", indices = #all} : (tensor<5xf32>) -> tensor<f32>
  %m7 = "meta.reindex_reduce"(%q7) {kind = "max", indices = #all} : (tensor<5xf32>) -> tensor<f32>
  return %s0, %s1, %s3, %s5, %s6, %s7, %q6, %m7, %m7 : tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<5xf32>, tensor<f32>, tensor<f32>
}
