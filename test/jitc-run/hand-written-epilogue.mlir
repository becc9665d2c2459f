// A function marked `meta.epilogue` by hand is lowered only if it is a
// contraction and its consumer as the CPU backend makes them
// (lower::epilogue): here the consumer reads the sums through a reindex
// (the next column, which another tile computes), so the function runs in
// the interpreter, with a note, and gives the interpreter's result.

// RUN: jitc run %s --backend interp --input "2x2xf32=1 2 3 4" --input "2x16xf32=0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31" | FileCheck %s
// RUN: jitc run %s --backend cpu --input "2x2xf32=1 2 3 4" --input "2x16xf32=0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31" 2>%t.err | FileCheck %s
// RUN: FileCheck %s --check-prefix=NOTE < %t.err

// z = [[32 35 ... 77] [64 71 ... 169]]: each row's next column minus it,
// wrapping at the end of the row.
// CHECK: result[0]: 2x16xf32=[3 3 3 3 3 3 3 3 3 3 3 3 3 3 3 -45][7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 -105]
// NOTE: note: kernel @pair runs in the interpreter: @pair is marked meta.epilogue but is not a contraction and its consumer as the CPU backend makes them

func.func @main(%a: tensor<2x2xf32>, %b: tensor<2x16xf32>) -> tensor<2x16xf32> {
  %y = call @pair(%a, %b) : (tensor<2x2xf32>, tensor<2x16xf32>) -> tensor<2x16xf32>
  return %y : tensor<2x16xf32>
}
func.func private @pair(%a: tensor<2x2xf32>, %b: tensor<2x16xf32>) -> tensor<2x16xf32> attributes {meta.fused, meta.epilogue = [@mm, @shift]} {
  %z = call @mm(%a, %b) : (tensor<2x2xf32>, tensor<2x16xf32>) -> tensor<2x16xf32>
  %y = call @shift(%z) : (tensor<2x16xf32>) -> tensor<2x16xf32>
  return %y : tensor<2x16xf32>
}
func.func private @mm(%a: tensor<2x2xf32>, %b: tensor<2x16xf32>) -> tensor<2x16xf32> attributes {meta.domain = array<i64: 2, 16, 2>, meta.fused} {
  %ab = "meta.reindex"(%a) {indices = affine_map<(d0, d1, d2) -> (d0, d2)>} : (tensor<2x2xf32>) -> tensor<2x16x2xf32>
  %bb = "meta.reindex"(%b) {indices = affine_map<(d0, d1, d2) -> (d2, d1)>} : (tensor<2x16xf32>) -> tensor<2x16x2xf32>
  %p = "meta.binary"(%ab, %bb) {kind = "mul"} : (tensor<2x16x2xf32>, tensor<2x16x2xf32>) -> tensor<2x16x2xf32>
  %z = "meta.reindex_reduce"(%p) {kind = "add", indices = affine_map<(d0, d1, d2) -> (d0, d1)>} : (tensor<2x16x2xf32>) -> tensor<2x16xf32>
  return %z : tensor<2x16xf32>
}
func.func private @shift(%z: tensor<2x16xf32>) -> tensor<2x16xf32> attributes {meta.domain = array<i64: 2, 16>, meta.fused} {
  %s = "meta.reindex"(%z) {indices = affine_map<(d0, d1) -> (d0, (d1 + 1) mod 16)>} : (tensor<2x16xf32>) -> tensor<2x16xf32>
  %y = "meta.binary"(%s, %z) {kind = "sub"} : (tensor<2x16xf32>, tensor<2x16xf32>) -> tensor<2x16xf32>
  return %y : tensor<2x16xf32>
}
