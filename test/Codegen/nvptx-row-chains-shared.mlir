// GPU row chains fit a block's static shared memory (48 KiB): six stages
// of four f64 row reductions each over 1024 rows would chain, but their
// reduction trees (8 bytes a thread each, 256 threads) and the scratch rows
// exceed it, and ptxas would reject the chain (and with it the module).
// No chain is made; the kernels run one by one.
// RUN: jitc compile --target nvptx --emit ptx %s | FileCheck %s
// CHECK: .visible .entry many_fused_0(
// CHECK-NOT: _rows(

func.func @many(%x: tensor<1024x512xf64>) -> tensor<1024x512xf64> {
  %q0 = "meta.binary"(%x, %x) {kind = "mul"} : (tensor<1024x512xf64>, tensor<1024x512xf64>) -> tensor<1024x512xf64>
  %r0_0 = "meta.reindex_reduce"(%x) {kind = "add", indices = affine_map<(i, j) -> (i)>} : (tensor<1024x512xf64>) -> tensor<1024xf64>
  %r0_1 = "meta.reindex_reduce"(%q0) {kind = "add", indices = affine_map<(i, j) -> (i)>} : (tensor<1024x512xf64>) -> tensor<1024xf64>
  %r0_2 = "meta.reindex_reduce"(%x) {kind = "max", indices = affine_map<(i, j) -> (i)>} : (tensor<1024x512xf64>) -> tensor<1024xf64>
  %r0_3 = "meta.reindex_reduce"(%x) {kind = "min", indices = affine_map<(i, j) -> (i)>} : (tensor<1024x512xf64>) -> tensor<1024xf64>
  %b1_0 = "meta.reindex"(%r0_0) {indices = affine_map<(i, j) -> (i)>} : (tensor<1024xf64>) -> tensor<1024x512xf64>
  %d1_0 = "meta.binary"(%x, %b1_0) {kind = "sub"} : (tensor<1024x512xf64>, tensor<1024x512xf64>) -> tensor<1024x512xf64>
  %b1_1 = "meta.reindex"(%r0_1) {indices = affine_map<(i, j) -> (i)>} : (tensor<1024xf64>) -> tensor<1024x512xf64>
  %d1_1 = "meta.binary"(%d1_0, %b1_1) {kind = "mul"} : (tensor<1024x512xf64>, tensor<1024x512xf64>) -> tensor<1024x512xf64>
  %b1_2 = "meta.reindex"(%r0_2) {indices = affine_map<(i, j) -> (i)>} : (tensor<1024xf64>) -> tensor<1024x512xf64>
  %d1_2 = "meta.binary"(%d1_1, %b1_2) {kind = "sub"} : (tensor<1024x512xf64>, tensor<1024x512xf64>) -> tensor<1024x512xf64>
  %b1_3 = "meta.reindex"(%r0_3) {indices = affine_map<(i, j) -> (i)>} : (tensor<1024xf64>) -> tensor<1024x512xf64>
  %d1_3 = "meta.binary"(%d1_2, %b1_3) {kind = "mul"} : (tensor<1024x512xf64>, tensor<1024x512xf64>) -> tensor<1024x512xf64>
  %q1 = "meta.binary"(%d1_3, %d1_3) {kind = "mul"} : (tensor<1024x512xf64>, tensor<1024x512xf64>) -> tensor<1024x512xf64>
  %r1_0 = "meta.reindex_reduce"(%d1_3) {kind = "add", indices = affine_map<(i, j) -> (i)>} : (tensor<1024x512xf64>) -> tensor<1024xf64>
  %r1_1 = "meta.reindex_reduce"(%q1) {kind = "add", indices = affine_map<(i, j) -> (i)>} : (tensor<1024x512xf64>) -> tensor<1024xf64>
  %r1_2 = "meta.reindex_reduce"(%d1_3) {kind = "max", indices = affine_map<(i, j) -> (i)>} : (tensor<1024x512xf64>) -> tensor<1024xf64>
  %r1_3 = "meta.reindex_reduce"(%d1_3) {kind = "min", indices = affine_map<(i, j) -> (i)>} : (tensor<1024x512xf64>) -> tensor<1024xf64>
  %b2_0 = "meta.reindex"(%r1_0) {indices = affine_map<(i, j) -> (i)>} : (tensor<1024xf64>) -> tensor<1024x512xf64>
  %d2_0 = "meta.binary"(%x, %b2_0) {kind = "sub"} : (tensor<1024x512xf64>, tensor<1024x512xf64>) -> tensor<1024x512xf64>
  %b2_1 = "meta.reindex"(%r1_1) {indices = affine_map<(i, j) -> (i)>} : (tensor<1024xf64>) -> tensor<1024x512xf64>
  %d2_1 = "meta.binary"(%d2_0, %b2_1) {kind = "mul"} : (tensor<1024x512xf64>, tensor<1024x512xf64>) -> tensor<1024x512xf64>
  %b2_2 = "meta.reindex"(%r1_2) {indices = affine_map<(i, j) -> (i)>} : (tensor<1024xf64>) -> tensor<1024x512xf64>
  %d2_2 = "meta.binary"(%d2_1, %b2_2) {kind = "sub"} : (tensor<1024x512xf64>, tensor<1024x512xf64>) -> tensor<1024x512xf64>
  %b2_3 = "meta.reindex"(%r1_3) {indices = affine_map<(i, j) -> (i)>} : (tensor<1024xf64>) -> tensor<1024x512xf64>
  %d2_3 = "meta.binary"(%d2_2, %b2_3) {kind = "mul"} : (tensor<1024x512xf64>, tensor<1024x512xf64>) -> tensor<1024x512xf64>
  %q2 = "meta.binary"(%d2_3, %d2_3) {kind = "mul"} : (tensor<1024x512xf64>, tensor<1024x512xf64>) -> tensor<1024x512xf64>
  %r2_0 = "meta.reindex_reduce"(%d2_3) {kind = "add", indices = affine_map<(i, j) -> (i)>} : (tensor<1024x512xf64>) -> tensor<1024xf64>
  %r2_1 = "meta.reindex_reduce"(%q2) {kind = "add", indices = affine_map<(i, j) -> (i)>} : (tensor<1024x512xf64>) -> tensor<1024xf64>
  %r2_2 = "meta.reindex_reduce"(%d2_3) {kind = "max", indices = affine_map<(i, j) -> (i)>} : (tensor<1024x512xf64>) -> tensor<1024xf64>
  %r2_3 = "meta.reindex_reduce"(%d2_3) {kind = "min", indices = affine_map<(i, j) -> (i)>} : (tensor<1024x512xf64>) -> tensor<1024xf64>
  %b3_0 = "meta.reindex"(%r2_0) {indices = affine_map<(i, j) -> (i)>} : (tensor<1024xf64>) -> tensor<1024x512xf64>
  %d3_0 = "meta.binary"(%x, %b3_0) {kind = "sub"} : (tensor<1024x512xf64>, tensor<1024x512xf64>) -> tensor<1024x512xf64>
  %b3_1 = "meta.reindex"(%r2_1) {indices = affine_map<(i, j) -> (i)>} : (tensor<1024xf64>) -> tensor<1024x512xf64>
  %d3_1 = "meta.binary"(%d3_0, %b3_1) {kind = "mul"} : (tensor<1024x512xf64>, tensor<1024x512xf64>) -> tensor<1024x512xf64>
  %b3_2 = "meta.reindex"(%r2_2) {indices = affine_map<(i, j) -> (i)>} : (tensor<1024xf64>) -> tensor<1024x512xf64>
  %d3_2 = "meta.binary"(%d3_1, %b3_2) {kind = "sub"} : (tensor<1024x512xf64>, tensor<1024x512xf64>) -> tensor<1024x512xf64>
  %b3_3 = "meta.reindex"(%r2_3) {indices = affine_map<(i, j) -> (i)>} : (tensor<1024xf64>) -> tensor<1024x512xf64>
  %d3_3 = "meta.binary"(%d3_2, %b3_3) {kind = "mul"} : (tensor<1024x512xf64>, tensor<1024x512xf64>) -> tensor<1024x512xf64>
  %q3 = "meta.binary"(%d3_3, %d3_3) {kind = "mul"} : (tensor<1024x512xf64>, tensor<1024x512xf64>) -> tensor<1024x512xf64>
  %r3_0 = "meta.reindex_reduce"(%d3_3) {kind = "add", indices = affine_map<(i, j) -> (i)>} : (tensor<1024x512xf64>) -> tensor<1024xf64>
  %r3_1 = "meta.reindex_reduce"(%q3) {kind = "add", indices = affine_map<(i, j) -> (i)>} : (tensor<1024x512xf64>) -> tensor<1024xf64>
  %r3_2 = "meta.reindex_reduce"(%d3_3) {kind = "max", indices = affine_map<(i, j) -> (i)>} : (tensor<1024x512xf64>) -> tensor<1024xf64>
  %r3_3 = "meta.reindex_reduce"(%d3_3) {kind = "min", indices = affine_map<(i, j) -> (i)>} : (tensor<1024x512xf64>) -> tensor<1024xf64>
  %b4_0 = "meta.reindex"(%r3_0) {indices = affine_map<(i, j) -> (i)>} : (tensor<1024xf64>) -> tensor<1024x512xf64>
  %d4_0 = "meta.binary"(%x, %b4_0) {kind = "sub"} : (tensor<1024x512xf64>, tensor<1024x512xf64>) -> tensor<1024x512xf64>
  %b4_1 = "meta.reindex"(%r3_1) {indices = affine_map<(i, j) -> (i)>} : (tensor<1024xf64>) -> tensor<1024x512xf64>
  %d4_1 = "meta.binary"(%d4_0, %b4_1) {kind = "mul"} : (tensor<1024x512xf64>, tensor<1024x512xf64>) -> tensor<1024x512xf64>
  %b4_2 = "meta.reindex"(%r3_2) {indices = affine_map<(i, j) -> (i)>} : (tensor<1024xf64>) -> tensor<1024x512xf64>
  %d4_2 = "meta.binary"(%d4_1, %b4_2) {kind = "sub"} : (tensor<1024x512xf64>, tensor<1024x512xf64>) -> tensor<1024x512xf64>
  %b4_3 = "meta.reindex"(%r3_3) {indices = affine_map<(i, j) -> (i)>} : (tensor<1024xf64>) -> tensor<1024x512xf64>
  %d4_3 = "meta.binary"(%d4_2, %b4_3) {kind = "mul"} : (tensor<1024x512xf64>, tensor<1024x512xf64>) -> tensor<1024x512xf64>
  %q4 = "meta.binary"(%d4_3, %d4_3) {kind = "mul"} : (tensor<1024x512xf64>, tensor<1024x512xf64>) -> tensor<1024x512xf64>
  %r4_0 = "meta.reindex_reduce"(%d4_3) {kind = "add", indices = affine_map<(i, j) -> (i)>} : (tensor<1024x512xf64>) -> tensor<1024xf64>
  %r4_1 = "meta.reindex_reduce"(%q4) {kind = "add", indices = affine_map<(i, j) -> (i)>} : (tensor<1024x512xf64>) -> tensor<1024xf64>
  %r4_2 = "meta.reindex_reduce"(%d4_3) {kind = "max", indices = affine_map<(i, j) -> (i)>} : (tensor<1024x512xf64>) -> tensor<1024xf64>
  %r4_3 = "meta.reindex_reduce"(%d4_3) {kind = "min", indices = affine_map<(i, j) -> (i)>} : (tensor<1024x512xf64>) -> tensor<1024xf64>
  %b5_0 = "meta.reindex"(%r4_0) {indices = affine_map<(i, j) -> (i)>} : (tensor<1024xf64>) -> tensor<1024x512xf64>
  %d5_0 = "meta.binary"(%x, %b5_0) {kind = "sub"} : (tensor<1024x512xf64>, tensor<1024x512xf64>) -> tensor<1024x512xf64>
  %b5_1 = "meta.reindex"(%r4_1) {indices = affine_map<(i, j) -> (i)>} : (tensor<1024xf64>) -> tensor<1024x512xf64>
  %d5_1 = "meta.binary"(%d5_0, %b5_1) {kind = "mul"} : (tensor<1024x512xf64>, tensor<1024x512xf64>) -> tensor<1024x512xf64>
  %b5_2 = "meta.reindex"(%r4_2) {indices = affine_map<(i, j) -> (i)>} : (tensor<1024xf64>) -> tensor<1024x512xf64>
  %d5_2 = "meta.binary"(%d5_1, %b5_2) {kind = "sub"} : (tensor<1024x512xf64>, tensor<1024x512xf64>) -> tensor<1024x512xf64>
  %b5_3 = "meta.reindex"(%r4_3) {indices = affine_map<(i, j) -> (i)>} : (tensor<1024xf64>) -> tensor<1024x512xf64>
  %d5_3 = "meta.binary"(%d5_2, %b5_3) {kind = "mul"} : (tensor<1024x512xf64>, tensor<1024x512xf64>) -> tensor<1024x512xf64>
  %q5 = "meta.binary"(%d5_3, %d5_3) {kind = "mul"} : (tensor<1024x512xf64>, tensor<1024x512xf64>) -> tensor<1024x512xf64>
  %r5_0 = "meta.reindex_reduce"(%d5_3) {kind = "add", indices = affine_map<(i, j) -> (i)>} : (tensor<1024x512xf64>) -> tensor<1024xf64>
  %r5_1 = "meta.reindex_reduce"(%q5) {kind = "add", indices = affine_map<(i, j) -> (i)>} : (tensor<1024x512xf64>) -> tensor<1024xf64>
  %r5_2 = "meta.reindex_reduce"(%d5_3) {kind = "max", indices = affine_map<(i, j) -> (i)>} : (tensor<1024x512xf64>) -> tensor<1024xf64>
  %r5_3 = "meta.reindex_reduce"(%d5_3) {kind = "min", indices = affine_map<(i, j) -> (i)>} : (tensor<1024x512xf64>) -> tensor<1024xf64>
  %b6_0 = "meta.reindex"(%r5_0) {indices = affine_map<(i, j) -> (i)>} : (tensor<1024xf64>) -> tensor<1024x512xf64>
  %d6_0 = "meta.binary"(%x, %b6_0) {kind = "sub"} : (tensor<1024x512xf64>, tensor<1024x512xf64>) -> tensor<1024x512xf64>
  %b6_1 = "meta.reindex"(%r5_1) {indices = affine_map<(i, j) -> (i)>} : (tensor<1024xf64>) -> tensor<1024x512xf64>
  %d6_1 = "meta.binary"(%d6_0, %b6_1) {kind = "mul"} : (tensor<1024x512xf64>, tensor<1024x512xf64>) -> tensor<1024x512xf64>
  %b6_2 = "meta.reindex"(%r5_2) {indices = affine_map<(i, j) -> (i)>} : (tensor<1024xf64>) -> tensor<1024x512xf64>
  %d6_2 = "meta.binary"(%d6_1, %b6_2) {kind = "sub"} : (tensor<1024x512xf64>, tensor<1024x512xf64>) -> tensor<1024x512xf64>
  %b6_3 = "meta.reindex"(%r5_3) {indices = affine_map<(i, j) -> (i)>} : (tensor<1024xf64>) -> tensor<1024x512xf64>
  %d6_3 = "meta.binary"(%d6_2, %b6_3) {kind = "mul"} : (tensor<1024x512xf64>, tensor<1024x512xf64>) -> tensor<1024x512xf64>
  %q6 = "meta.binary"(%d6_3, %d6_3) {kind = "mul"} : (tensor<1024x512xf64>, tensor<1024x512xf64>) -> tensor<1024x512xf64>
  %r6_0 = "meta.reindex_reduce"(%d6_3) {kind = "add", indices = affine_map<(i, j) -> (i)>} : (tensor<1024x512xf64>) -> tensor<1024xf64>
  %r6_1 = "meta.reindex_reduce"(%q6) {kind = "add", indices = affine_map<(i, j) -> (i)>} : (tensor<1024x512xf64>) -> tensor<1024xf64>
  %r6_2 = "meta.reindex_reduce"(%d6_3) {kind = "max", indices = affine_map<(i, j) -> (i)>} : (tensor<1024x512xf64>) -> tensor<1024xf64>
  %r6_3 = "meta.reindex_reduce"(%d6_3) {kind = "min", indices = affine_map<(i, j) -> (i)>} : (tensor<1024x512xf64>) -> tensor<1024xf64>
  return %d6_3 : tensor<1024x512xf64>
}
