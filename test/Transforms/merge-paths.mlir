// The merged graph runs the paths the traces took, and no mix of their
// ways: a call that goes one trace's way at the first branch and another's
// at the second fails a guard (a frontend falls back), where the values it
// would read were never computed together. A trace with no ops merges
// too.
// RUN: jitc opt %s --meta-merge -o %t.mlir
// RUN: jitc run %t.mlir --function f --input "4xf32=-1 -1 -1 -1" --input "i1=1" --input "i1=0" | FileCheck %s --check-prefix=FIRST
// FIRST: result[0]: 4xf32=0.3521355 0.3521355 0.3521355 0.3521355
// RUN: jitc run %t.mlir --function f --input "4xf32=-1 -1 -1 -1" --input "i1=0" --input "i1=1" | FileCheck %s --check-prefix=SECOND
// SECOND: result[0]: 4xf32=0.7615942 0.7615942 0.7615942 0.7615942
// RUN: not jitc run %t.mlir --function f --input "4xf32=-1 -1 -1 -1" --input "i1=0" --input "i1=0" 2>&1 | FileCheck %s --check-prefix=MIX
// RUN: not jitc run %t.mlir --function f --backend interp --input "4xf32=-1 -1 -1 -1" --input "i1=1" --input "i1=1" 2>&1 | FileCheck %s --check-prefix=MIX
// MIX: the path through merge-paths.mlir:{{[0-9]+}}:3 was not traced
// RUN: jitc opt %s --meta-merge | FileCheck %s --check-prefix=EMPTY
// EMPTY-LABEL: func.func @g(
// EMPTY-NEXT: arith.constant
// EMPTY: return %arg0

// v = x; if c1: v = exp(x); if c2: v = neg(x); return tanh(v). Trace 0
// went (true, false), trace 1 (false, true).
func.func @f_0(%x: tensor<4xf32>, %c1: tensor<i1>, %c2: tensor<i1>) -> tensor<4xf32> attributes {meta.trace = "f"} {
  "meta.guard"(%c1) {id = 1 : i64, reason = "b1 true", meta.decision} : (tensor<i1>) -> () loc("merge-paths.mlir":2:3)
  %e = "meta.unary"(%x) {kind = "exp"} : (tensor<4xf32>) -> tensor<4xf32> loc("merge-paths.mlir":3:3)
  %n2 = "meta.unary"(%c2) {kind = "not", meta.decision} : (tensor<i1>) -> tensor<i1> loc("merge-paths.mlir":4:3)
  "meta.guard"(%n2) {id = 2 : i64, reason = "b2 false", meta.decision} : (tensor<i1>) -> () loc("merge-paths.mlir":4:3)
  %t = "meta.unary"(%e) {kind = "tanh"} : (tensor<4xf32>) -> tensor<4xf32> loc("merge-paths.mlir":6:3)
  return %t : tensor<4xf32>
}
func.func @f_1(%x: tensor<4xf32>, %c1: tensor<i1>, %c2: tensor<i1>) -> tensor<4xf32> attributes {meta.trace = "f"} {
  %n1 = "meta.unary"(%c1) {kind = "not", meta.decision} : (tensor<i1>) -> tensor<i1> loc("merge-paths.mlir":2:3)
  "meta.guard"(%n1) {id = 1 : i64, reason = "b1 false", meta.decision} : (tensor<i1>) -> () loc("merge-paths.mlir":2:3)
  "meta.guard"(%c2) {id = 2 : i64, reason = "b2 true", meta.decision} : (tensor<i1>) -> () loc("merge-paths.mlir":4:3)
  %g = "meta.unary"(%x) {kind = "neg"} : (tensor<4xf32>) -> tensor<4xf32> loc("merge-paths.mlir":5:3)
  %t = "meta.unary"(%g) {kind = "tanh"} : (tensor<4xf32>) -> tensor<4xf32> loc("merge-paths.mlir":6:3)
  return %t : tensor<4xf32>
}

// A trace that only returns its argument.
func.func @g_0(%x: tensor<4xf32>) -> tensor<4xf32> attributes {meta.trace = "g"} {
  return %x : tensor<4xf32>
}
