// Shapes whose byte size overflows i64 are rejected by the verifier, with a
// located error, before any pass or `jitc explain` computes with them.
// RUN: not jitc explain %s --function overflows 2>&1 | FileCheck %s
// RUN: not jitc opt %s --meta-fuse 2>&1 | FileCheck %s
// CHECK: shape-overflow.mlir:[[# @LINE + 9]]:8: error: 'meta.reindex' op result type 'tensor<4294967296x4294967296x4294967296xf32>' is too large: its size in bytes overflows i64
// CHECK-NOT: internal compiler error
//
// Shapes that fit, but whose traffic adds up past 64 bits: the fuser's
// byte counts saturate instead of overflowing.
// RUN: sed -e '/@overflows/,/^}/d' %s | jitc explain - | FileCheck %s --check-prefix=FITS
// FITS: every edge between fusable ops is fused

func.func @overflows(%x: tensor<f32>) -> tensor<f32> {
  %b = "meta.reindex"(%x) {indices = affine_map<(d0, d1, d2) -> ()>} : (tensor<f32>) -> tensor<4294967296x4294967296x4294967296xf32>
  %s = "meta.reindex_reduce"(%b) {kind = "add", indices = affine_map<(d0, d1, d2) -> ()>} : (tensor<4294967296x4294967296x4294967296xf32>) -> tensor<f32>
  return %s : tensor<f32>
}

func.func @fits(%x: tensor<f32>) -> tensor<f32> {
  %b = "meta.reindex"(%x) {indices = affine_map<(d0, d1, d2) -> ()>} : (tensor<f32>) -> tensor<1048576x1048576x1048576xf32>
  %c = "meta.unary"(%b) {kind = "exp"} : (tensor<1048576x1048576x1048576xf32>) -> tensor<1048576x1048576x1048576xf32>
  %d = "meta.binary"(%c, %b) {kind = "add"} : (tensor<1048576x1048576x1048576xf32>, tensor<1048576x1048576x1048576xf32>) -> tensor<1048576x1048576x1048576xf32>
  %e = "meta.binary"(%d, %c) {kind = "add"} : (tensor<1048576x1048576x1048576xf32>, tensor<1048576x1048576x1048576xf32>) -> tensor<1048576x1048576x1048576xf32>
  %s = "meta.reindex_reduce"(%e) {kind = "add", indices = affine_map<(d0, d1, d2) -> ()>} : (tensor<1048576x1048576x1048576xf32>) -> tensor<f32>
  return %s : tensor<f32>
}
