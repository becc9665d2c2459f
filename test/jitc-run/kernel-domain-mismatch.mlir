// A kernel written by hand whose meta.domain is not what its ops iterate
// (found by the `run` fuzz target, which mutated hand-written-epilogue.mlir's
// 16 into 08): the lowering's loops run over the domain, so it computed
// only the first 8 columns. It runs in the interpreter, with a note, and
// gives the interpreter's result.

// RUN: jitc run %s --backend interp --input "2x2xf32=1 2 3 4" --input "2x16xf32=0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31" | FileCheck %s
// RUN: jitc run %s --backend cpu --input "2x2xf32=1 2 3 4" --input "2x16xf32=0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31" 2>%t.err | FileCheck %s
// RUN: FileCheck %s --check-prefix=NOTE < %t.err
// RUN: jitc compile %s --target nvptx --emit ptx -o /dev/null 2>&1 | FileCheck %s --check-prefix=GPU

// CHECK: result[0]: 2x16xf32=[32 35 38 41 44 47 50 53 56 59 62 65 68 71 74 77][64 71 78 85 92 99 106 113 120 127 134 141 148 155 162 169]
// NOTE: note: kernel @mm runs in the interpreter: 'meta.reindex' iterates tensor<2x16x2xf32>, not the kernel's meta.domain [2, 8, 2]
// GPU: note: kernel @mm is not compiled: 'meta.reindex' iterates tensor<2x16x2xf32>, not the kernel's meta.domain [2, 8, 2]

func.func @main(%a: tensor<2x2xf32>, %b: tensor<2x16xf32>) -> tensor<2x16xf32> {
  %z = call @mm(%a, %b) : (tensor<2x2xf32>, tensor<2x16xf32>) -> tensor<2x16xf32>
  return %z : tensor<2x16xf32>
}
func.func private @mm(%a: tensor<2x2xf32>, %b: tensor<2x16xf32>) -> tensor<2x16xf32> attributes {meta.domain = array<i64: 2, 8, 2>, meta.fused} {
  %ab = "meta.reindex"(%a) {indices = affine_map<(d0, d1, d2) -> (d0, d2)>} : (tensor<2x2xf32>) -> tensor<2x16x2xf32>
  %bb = "meta.reindex"(%b) {indices = affine_map<(d0, d1, d2) -> (d2, d1)>} : (tensor<2x16xf32>) -> tensor<2x16x2xf32>
  %p = "meta.binary"(%ab, %bb) {kind = "mul"} : (tensor<2x16x2xf32>, tensor<2x16x2xf32>) -> tensor<2x16x2xf32>
  %z = "meta.reindex_reduce"(%p) {kind = "add", indices = affine_map<(d0, d1, d2) -> (d0, d1)>} : (tensor<2x16x2xf32>) -> tensor<2x16xf32>
  return %z : tensor<2x16xf32>
}
