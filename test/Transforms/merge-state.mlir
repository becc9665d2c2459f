// meta-merge with named state, as `@jitc.function` writes an object's
// attributes (JANUS's PyGetAttrOp/PySetAttrOp): each trace reads `self.h`
// with meta.state_read and writes what it rebinds with meta.state_write,
// each state op at `loc("state <name>")` so the traces share it. The
// merged graph reads the state once before the branch (an scf.if: the
// traces went both ways of one branch) and writes it once after, from the
// branch's result.
// RUN: jitc opt %s --meta-merge | FileCheck %s
//
// Either way, the merged graph's result and committed state are the
// trace's that took it.
// RUN: jitc opt %s --meta-merge -o %t.merged.mlir
// RUN: jitc run %s --function t0 --input "4xf32=1 2 3 4" --state "self.h=4xf32=1 1 1 1" > %t.want0
// RUN: jitc run %t.merged.mlir --function main --input "4xf32=1 2 3 4" --state "self.h=4xf32=1 1 1 1" > %t.got0
// RUN: diff %t.want0 %t.got0
// RUN: jitc run %s --function t1 --input "4xf32=-1 -2 -3 -4" --state "self.h=4xf32=1 1 1 1" > %t.want1
// RUN: jitc run %t.merged.mlir --function main --input "4xf32=-1 -2 -3 -4" --state "self.h=4xf32=1 1 1 1" > %t.got1
// RUN: diff %t.want1 %t.got1
// RUN: FileCheck %s --check-prefix=RUN1 < %t.got1
// RUN1: state[self.h]: 4xf32=1.2689414 1.119203 1.0474259 1.0179862

// CHECK-LABEL: func.func @main(%arg0: tensor<4xf32>) -> tensor<4xf32>
// CHECK:         %[[H:.*]] = "meta.state_read"() {name = "self.h"}
// CHECK-NOT:     meta.state
// CHECK:         %[[S:.*]]:3 = scf.if
// CHECK:           "meta.unary"(%arg0) {kind = "tanh"}
// CHECK:         } else {
// CHECK:           "meta.unary"(%arg0) {kind = "sigmoid"}
// CHECK-NOT:     meta.state
// CHECK:         %[[N:.*]] = "meta.binary"(%[[H]], %[[S]]#0) {kind = "add"}
// CHECK-NEXT:    "meta.state_write"(%[[N]]) {name = "self.h"}
// CHECK-NOT:     meta.state
// CHECK:         return %[[S]]#0
// CHECK-NOT:     func.func @t

func.func @t0(%x: tensor<4xf32>) -> tensor<4xf32> attributes {meta.trace = "main"} {
  %h = "meta.state_read"() {name = "self.h"} : () -> tensor<4xf32> loc("state self.h")
  %s = "meta.reindex_reduce"(%x) {kind = "add", indices = affine_map<(d0) -> ()>} : (tensor<4xf32>) -> tensor<f32> loc("m.py":3:0)
  %z = arith.constant dense<0.0> : tensor<f32> loc("m.py":3:0)
  %c = "meta.binary"(%s, %z) {kind = "gt", meta.decision} : (tensor<f32>, tensor<f32>) -> tensor<i1> loc("m.py":3:0)
  "meta.guard"(%c) {id = 1 : i64, reason = "branch at m.py:3 goes True", meta.decision} : (tensor<i1>) -> () loc("m.py":3:0)
  %y = "meta.unary"(%x) {kind = "tanh"} : (tensor<4xf32>) -> tensor<4xf32> loc("m.py":4:0)
  %h2 = "meta.binary"(%h, %y) {kind = "add"} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32> loc("m.py":6:0)
  "meta.state_write"(%h2) {name = "self.h"} : (tensor<4xf32>) -> () loc("state self.h")
  return %y : tensor<4xf32>
}

func.func @t1(%x: tensor<4xf32>) -> tensor<4xf32> attributes {meta.trace = "main"} {
  %h = "meta.state_read"() {name = "self.h"} : () -> tensor<4xf32> loc("state self.h")
  %s = "meta.reindex_reduce"(%x) {kind = "add", indices = affine_map<(d0) -> ()>} : (tensor<4xf32>) -> tensor<f32> loc("m.py":3:0)
  %z = arith.constant dense<0.0> : tensor<f32> loc("m.py":3:0)
  %c = "meta.binary"(%s, %z) {kind = "gt", meta.decision} : (tensor<f32>, tensor<f32>) -> tensor<i1> loc("m.py":3:0)
  %n = "meta.unary"(%c) {kind = "not", meta.decision} : (tensor<i1>) -> tensor<i1> loc("m.py":3:0)
  "meta.guard"(%n) {id = 1 : i64, reason = "branch at m.py:3 goes False", meta.decision} : (tensor<i1>) -> () loc("m.py":3:0)
  %y = "meta.unary"(%x) {kind = "sigmoid"} : (tensor<4xf32>) -> tensor<4xf32> loc("m.py":5:0)
  %h2 = "meta.binary"(%h, %y) {kind = "add"} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32> loc("m.py":6:0)
  "meta.state_write"(%h2) {name = "self.h"} : (tensor<4xf32>) -> () loc("state self.h")
  return %y : tensor<4xf32>
}
