// RUN: jitc opt %s --split-input-file --meta-cse | FileCheck %s

// CHECK-LABEL: func.func @cse_identical_unary
//       CHECK:   %[[A:.+]] = "meta.unary"(%{{.+}}) {kind = "exp"}
//   CHECK-NOT:   "meta.unary"
//       CHECK:   "meta.binary"(%[[A]], %[[A]])
func.func @cse_identical_unary(%x: tensor<4xf32>) -> tensor<4xf32> {
  %a = "meta.unary"(%x) {kind = "exp"} : (tensor<4xf32>) -> tensor<4xf32>
  %b = "meta.unary"(%x) {kind = "exp"} : (tensor<4xf32>) -> tensor<4xf32>
  %s = "meta.binary"(%a, %b) {kind = "add"} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %s : tensor<4xf32>
}

// -----

// CHECK-LABEL: func.func @no_cse_different_attributes
//   CHECK-COUNT-2:   "meta.reindex"
func.func @no_cse_different_attributes(%x: tensor<4xf32>) -> (tensor<3x4xf32>, tensor<3x4xf32>) {
  %a = "meta.reindex"(%x) {indices = affine_map<(d0, d1) -> (d1)>} : (tensor<4xf32>) -> tensor<3x4xf32>
  %b = "meta.reindex"(%x) {indices = affine_map<(d0, d1) -> (d1)>, overflow_value = 1.0 : f32} : (tensor<4xf32>) -> tensor<3x4xf32>
  return %a, %b : tensor<3x4xf32>, tensor<3x4xf32>
}

// -----

// CHECK-LABEL: func.func @no_cse_different_result_types
//   CHECK-COUNT-2:   "meta.unary"
func.func @no_cse_different_result_types(%x: tensor<4xf32>) -> (tensor<4xi32>, tensor<4xf64>) {
  %a = "meta.unary"(%x) {kind = "cast"} : (tensor<4xf32>) -> tensor<4xi32>
  %b = "meta.unary"(%x) {kind = "cast"} : (tensor<4xf32>) -> tensor<4xf64>
  return %a, %b : tensor<4xi32>, tensor<4xf64>
}

// -----

// Reads of one state name in one run agree, because writes are deferred.
// CHECK-LABEL: func.func @cse_state_reads
//       CHECK:   %[[H:.+]] = "meta.state_read"
//   CHECK-NOT:   "meta.state_read"
//       CHECK:   return %[[H]], %[[H]]
func.func @cse_state_reads() -> (tensor<4xf32>, tensor<4xf32>) {
  %a = "meta.state_read"() {name = "h"} : () -> tensor<4xf32>
  %b = "meta.state_read"() {name = "h"} : () -> tensor<4xf32>
  return %a, %b : tensor<4xf32>, tensor<4xf32>
}

// -----

// Guards have effects and are never merged.
// CHECK-LABEL: func.func @no_cse_guards
//   CHECK-COUNT-2:   "meta.guard"
func.func @no_cse_guards(%ok: tensor<i1>) {
  "meta.guard"(%ok) {id = 0 : i64, reason = "a"} : (tensor<i1>) -> ()
  "meta.guard"(%ok) {id = 1 : i64, reason = "a"} : (tensor<i1>) -> ()
  return
}

// -----

// An op inside an scf region reuses a dominating op outside it.
// CHECK-LABEL: func.func @cse_into_scf_region
//       CHECK:   %[[E:.+]] = "meta.unary"(%{{.+}}) {kind = "exp"}
//       CHECK:   scf.if
//   CHECK-NOT:   "meta.unary"
//       CHECK:   scf.yield %[[E]]
func.func @cse_into_scf_region(%x: tensor<4xf32>, %c: i1) -> tensor<4xf32> {
  %e = "meta.unary"(%x) {kind = "exp"} : (tensor<4xf32>) -> tensor<4xf32>
  %r = scf.if %c -> (tensor<4xf32>) {
    %f = "meta.unary"(%x) {kind = "exp"} : (tensor<4xf32>) -> tensor<4xf32>
    scf.yield %f : tensor<4xf32>
  } else {
    scf.yield %x : tensor<4xf32>
  }
  %s = "meta.binary"(%e, %r) {kind = "add"} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %s : tensor<4xf32>
}

// -----

// An op in one branch does not dominate the other branch.
// CHECK-LABEL: func.func @no_cse_across_branches
//   CHECK-COUNT-2:   "meta.unary"
func.func @no_cse_across_branches(%x: tensor<4xf32>, %c: i1) -> tensor<4xf32> {
  %r = scf.if %c -> (tensor<4xf32>) {
    %f = "meta.unary"(%x) {kind = "exp"} : (tensor<4xf32>) -> tensor<4xf32>
    scf.yield %f : tensor<4xf32>
  } else {
    %g = "meta.unary"(%x) {kind = "exp"} : (tensor<4xf32>) -> tensor<4xf32>
    scf.yield %g : tensor<4xf32>
  }
  return %r : tensor<4xf32>
}

// -----

// Functions are separate scopes, even for ops without operands.
// CHECK-LABEL: func.func @no_cse_across_functions_a
//       CHECK:   "meta.state_read"
// CHECK-LABEL: func.func @no_cse_across_functions_b
//       CHECK:   "meta.state_read"
func.func @no_cse_across_functions_a() -> tensor<4xf32> {
  %a = "meta.state_read"() {name = "h"} : () -> tensor<4xf32>
  return %a : tensor<4xf32>
}
func.func @no_cse_across_functions_b() -> tensor<4xf32> {
  %a = "meta.state_read"() {name = "h"} : () -> tensor<4xf32>
  return %a : tensor<4xf32>
}
