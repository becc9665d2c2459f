// meta-merge merges the traces of @f (Terra's Algorithm 1) into one graph.
// The three traces below have a trace graph shaped like the supplement's
// Figure 2 but smaller (merge-figure2.mlir is closer to the figure):
// node 1 branches (to 2 or 7), node 3 branches (to 4 or 5), 4
// and 5 meet at 6, and 6 and 7 meet at 8, then 9. The switch-cases are
// [1], [2 3 | 7], [4 | 5 | (7's edge passed on)], [6 | (passed on)],
// [8 9]: the first and last are emitted in place. [2 3 | 7] is two cases
// entered by the two ways of node 1's branch, so it is an scf.if on node
// 1's condition; the others are scf.index_switch ops selected by the edge
// the path took.
// RUN: jitc opt %s --meta-merge | FileCheck %s
//
// The merged graph computes what each trace computes on the inputs that
// take its path (sum(x) > 0, then max(2x) > 4).
// RUN: jitc opt %s --meta-merge -o %t.merged.mlir
// RUN: jitc run %s --function f_0 --input "4xf32=3 3 3 3" > %t.want0
// RUN: jitc run %t.merged.mlir --function f --input "4xf32=3 3 3 3" > %t.got0
// RUN: diff %t.want0 %t.got0
// RUN: jitc run %s --function f_1 --input "4xf32=1 1 1 1" > %t.want1
// RUN: jitc run %t.merged.mlir --function f --input "4xf32=1 1 1 1" > %t.got1
// RUN: diff %t.want1 %t.got1
// RUN: jitc run %s --function f_2 --input "4xf32=-1 -2 0.5 -3" > %t.want2
// RUN: jitc run %t.merged.mlir --function f --input "4xf32=-1 -2 0.5 -3" > %t.got2
// RUN: diff %t.want2 %t.got2
// RUN: jitc run %t.merged.mlir --function f --backend interp --input "4xf32=3 3 3 3" | FileCheck %s --check-prefix=RUN0
// RUN0: result[0]: 4xf32=6 6 6 6
//
// Every mix of ways a call can take was traced (node 3 is reached only on
// node 1's true way, and both its ways were traced there), and the traces
// on each way of the scf.if are known when the pass runs: no guard checks
// the path.
// RUN: jitc opt %s --meta-merge | FileCheck %s --check-prefix=NOGUARD
// NOGUARD-LABEL: func.func @f(
// NOGUARD-NOT: meta.guard
// NOGUARD: return
//
// CHECK-LABEL: func.func @f(
// CHECK-NOT: meta.trace
// Node 1's condition, computed once; its branch selects the next case.
// CHECK: "meta.reindex_reduce"
// CHECK: %[[C1:.*]] = "meta.binary"({{.*}}) {kind = "gt"}
// CHECK: %[[S1:.*]] = tensor.extract %[[C1]]
// CHECK: arith.select %[[S1]]
// Switch-case [2 3 | 7]: an scf.if on node 1's condition (then: way true,
// node 2); node 3's branch selects the next.
// CHECK-NOT: scf.index_switch
// CHECK: scf.if %[[S1]] -> (tensor<4xf32>, tensor<4xf32>, index, index) {
// CHECK: "meta.binary"({{.*}}) {kind = "mul"}
// CHECK: "meta.reindex_reduce"
// CHECK: %[[C3:.*]] = "meta.binary"({{.*}}) {kind = "gt"}
// CHECK: %[[S3:.*]] = tensor.extract %[[C3]]
// CHECK: arith.select %[[S3]]
// CHECK: } else {
// CHECK: "meta.binary"({{.*}}) {kind = "sub"}
// CHECK-NOT: default {
// Switch-case [4 | 7's edge passed on | 5].
// CHECK: scf.index_switch
// CHECK: case 0 {
// CHECK: "meta.unary"({{.*}}) {kind = "exp"}
// CHECK: case 1 {
// CHECK-NEXT: arith.constant dense<0.0
// CHECK-NEXT: scf.yield
// CHECK: case 2 {
// CHECK: "meta.unary"({{.*}}) {kind = "neg"}
// Switch-case [6 | passed on].
// CHECK: scf.index_switch
// CHECK: case 0 {
// CHECK: "meta.unary"({{.*}}) {kind = "tanh"}
// CHECK: case 1 {
// CHECK-NEXT: scf.yield
// [8 9], once, after the last switch.
// CHECK: "meta.binary"({{.*}}) {kind = "mul"}
// CHECK: "meta.binary"({{.*}}) {kind = "add"}
// CHECK: return
// CHECK-NOT: func.func @f_

// Trace 0: node 1 went true, node 3 true.
func.func @f_0(%x: tensor<4xf32>) -> tensor<4xf32> attributes {meta.trace = "f"} {
  %zero = arith.constant dense<0.0> : tensor<f32> loc("model.py":1:0)
  %s = "meta.reindex_reduce"(%x) {kind = "add", indices = affine_map<(d0) -> ()>} : (tensor<4xf32>) -> tensor<f32> loc("model.py":1:0)
  %c1 = "meta.binary"(%s, %zero) {kind = "gt"} : (tensor<f32>, tensor<f32>) -> tensor<i1> loc("model.py":1:0)
  "meta.guard"(%c1) {id = 1 : i64, reason = "branch at model.py:1 goes true", meta.decision} : (tensor<i1>) -> () loc("model.py":1:0)
  %two = arith.constant dense<2.0> : tensor<4xf32> loc("model.py":2:0)
  %h2 = "meta.binary"(%x, %two) {kind = "mul"} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32> loc("model.py":2:0)
  %four = arith.constant dense<4.0> : tensor<f32> loc("model.py":3:0)
  %m = "meta.reindex_reduce"(%h2) {kind = "max", indices = affine_map<(d0) -> ()>} : (tensor<4xf32>) -> tensor<f32> loc("model.py":3:0)
  %c3 = "meta.binary"(%m, %four) {kind = "gt"} : (tensor<f32>, tensor<f32>) -> tensor<i1> loc("model.py":3:0)
  "meta.guard"(%c3) {id = 2 : i64, reason = "branch at model.py:3 goes true", meta.decision} : (tensor<i1>) -> () loc("model.py":3:0)
  %h4 = "meta.unary"(%h2) {kind = "exp"} : (tensor<4xf32>) -> tensor<4xf32> loc("model.py":4:0)
  %h6 = "meta.unary"(%h4) {kind = "tanh"} : (tensor<4xf32>) -> tensor<4xf32> loc("model.py":6:0)
  %three = arith.constant dense<3.0> : tensor<4xf32> loc("model.py":8:0)
  %h8 = "meta.binary"(%h6, %three) {kind = "mul"} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32> loc("model.py":8:0)
  %h9 = "meta.binary"(%h8, %x) {kind = "add"} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32> loc("model.py":9:0)
  return %h9 : tensor<4xf32>
}

// Trace 1: node 1 went true, node 3 false.
func.func @f_1(%x: tensor<4xf32>) -> tensor<4xf32> attributes {meta.trace = "f"} {
  %zero = arith.constant dense<0.0> : tensor<f32> loc("model.py":1:0)
  %s = "meta.reindex_reduce"(%x) {kind = "add", indices = affine_map<(d0) -> ()>} : (tensor<4xf32>) -> tensor<f32> loc("model.py":1:0)
  %c1 = "meta.binary"(%s, %zero) {kind = "gt"} : (tensor<f32>, tensor<f32>) -> tensor<i1> loc("model.py":1:0)
  "meta.guard"(%c1) {id = 1 : i64, reason = "branch at model.py:1 goes true", meta.decision} : (tensor<i1>) -> () loc("model.py":1:0)
  %two = arith.constant dense<2.0> : tensor<4xf32> loc("model.py":2:0)
  %h2 = "meta.binary"(%x, %two) {kind = "mul"} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32> loc("model.py":2:0)
  %four = arith.constant dense<4.0> : tensor<f32> loc("model.py":3:0)
  %m = "meta.reindex_reduce"(%h2) {kind = "max", indices = affine_map<(d0) -> ()>} : (tensor<4xf32>) -> tensor<f32> loc("model.py":3:0)
  %c3 = "meta.binary"(%m, %four) {kind = "gt"} : (tensor<f32>, tensor<f32>) -> tensor<i1> loc("model.py":3:0)
  %n3 = "meta.unary"(%c3) {kind = "not", meta.decision} : (tensor<i1>) -> tensor<i1> loc("model.py":3:0)
  "meta.guard"(%n3) {id = 2 : i64, reason = "branch at model.py:3 goes false", meta.decision} : (tensor<i1>) -> () loc("model.py":3:0)
  %h5 = "meta.unary"(%h2) {kind = "neg"} : (tensor<4xf32>) -> tensor<4xf32> loc("model.py":5:0)
  %h6 = "meta.unary"(%h5) {kind = "tanh"} : (tensor<4xf32>) -> tensor<4xf32> loc("model.py":6:0)
  %three = arith.constant dense<3.0> : tensor<4xf32> loc("model.py":8:0)
  %h8 = "meta.binary"(%h6, %three) {kind = "mul"} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32> loc("model.py":8:0)
  %h9 = "meta.binary"(%h8, %x) {kind = "add"} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32> loc("model.py":9:0)
  return %h9 : tensor<4xf32>
}

// Trace 2: node 1 went false.
func.func @f_2(%x: tensor<4xf32>) -> tensor<4xf32> attributes {meta.trace = "f"} {
  %zero = arith.constant dense<0.0> : tensor<f32> loc("model.py":1:0)
  %s = "meta.reindex_reduce"(%x) {kind = "add", indices = affine_map<(d0) -> ()>} : (tensor<4xf32>) -> tensor<f32> loc("model.py":1:0)
  %c1 = "meta.binary"(%s, %zero) {kind = "gt"} : (tensor<f32>, tensor<f32>) -> tensor<i1> loc("model.py":1:0)
  %n1 = "meta.unary"(%c1) {kind = "not", meta.decision} : (tensor<i1>) -> tensor<i1> loc("model.py":1:0)
  "meta.guard"(%n1) {id = 1 : i64, reason = "branch at model.py:1 goes false", meta.decision} : (tensor<i1>) -> () loc("model.py":1:0)
  %one = arith.constant dense<1.0> : tensor<4xf32> loc("model.py":7:0)
  %h7 = "meta.binary"(%x, %one) {kind = "sub"} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32> loc("model.py":7:0)
  %three = arith.constant dense<3.0> : tensor<4xf32> loc("model.py":8:0)
  %h8 = "meta.binary"(%h7, %three) {kind = "mul"} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32> loc("model.py":8:0)
  %h9 = "meta.binary"(%h8, %x) {kind = "add"} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32> loc("model.py":9:0)
  return %h9 : tensor<4xf32>
}
