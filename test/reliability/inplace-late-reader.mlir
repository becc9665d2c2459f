// Found by the differential fuzz target (crash 9 of docs/fuzzing.md): a
// kernel wrote its result into the buffer of an argument that dies at the
// call (%y) while a later op of the same kernel (the dead division, kept
// because it may trap) still read %y there, so the division read the
// result instead and divided by zero. A pair is now in place only when
// every reader of the argument comes no later than the op that makes the
// result. Both backends agree.
// RUN: jitc run %s --backend interp --input "2x1xi64=0 4" --input "2x1xi64=2 5" | FileCheck %s
// RUN: jitc run %s --backend cpu --math exact --input "2x1xi64=0 4" --input "2x1xi64=2 5" | FileCheck %s
// CHECK: result[0]: 2x1xi64=[0][7]
func.func @main(%x: tensor<2x1xi64>, %y: tensor<2x1xi64>) -> tensor<2x1xi64> {
  %r0 = "meta.reindex_reduce"(%x) {kind = "mul", indices = affine_map<(d0, d1) -> (d1)>} : (tensor<2x1xi64>) -> tensor<1xi64>
  %v0 = "meta.reindex"(%r0) {indices = affine_map<(d0, d1) -> (d1)>} : (tensor<1xi64>) -> tensor<2x1xi64>
  %r1 = "meta.reindex_reduce"(%y) {kind = "mul", indices = affine_map<(d0, d1) -> (d1)>} : (tensor<2x1xi64>) -> tensor<1xi64>
  %v1 = "meta.reindex"(%r1) {indices = affine_map<(d0, d1) -> (d1)>} : (tensor<1xi64>) -> tensor<2x1xi64>
  %r2 = "meta.reindex_reduce"(%v0) {kind = "add", indices = affine_map<(d0, d1) -> (d1)>} : (tensor<2x1xi64>) -> tensor<1xi64>
  %v2 = "meta.reindex"(%r2) {indices = affine_map<(d0, d1) -> (d1)>} : (tensor<1xi64>) -> tensor<2x1xi64>
  %v3 = "meta.binary"(%v2, %y) {kind = "div"} : (tensor<2x1xi64>, tensor<2x1xi64>) -> tensor<2x1xi64>
  %v4 = "meta.reindex"(%v2) {indices = affine_map<(d0, d1) -> (d0, d1 mod 3)>, overflow_value = 7 : i64, overflow_conditions = [affine_set<(d0, d1) : (d0 - 1 == 0)>]} : (tensor<2x1xi64>) -> tensor<2x1xi64>
  %v5 = "meta.unary"(%v4) {kind = "neg"} : (tensor<2x1xi64>) -> tensor<2x1xi64>
  %v6 = "meta.unary"(%v5) {kind = "neg"} : (tensor<2x1xi64>) -> tensor<2x1xi64>
  return %v6 : tensor<2x1xi64>
}
