// meta-merge's case assignment (Terra's Algorithm 1, assign_cases in
// compiler/src/transforms/merge.rs) on the trace graph of Figure 2 of the
// Terra supplement, as closely as jitc's traces can state it.
//
// From the text (papers/terra-supplement.txt, Appendix B, the Figure 2/3
// walkthrough): edge a goes from start to node 1, whose out-degree is 3
// (edges b, c, d), so the first switch-case is ({1}, {a}) and the next one
// has three basic blocks; node 8 is reached by the edges g, h and i; when
// i is processed, g and h are not yet current, so node 8 is not put in a
// basic block: i's case is empty and i is passed on; the last
// switch-case's basic block is node 8 then node 9.
//
// Reconstructed (the figure itself is not in the text, and its sentence
// "Two of them contains {node 6}" is garbled and not followed): the nodes
// between 1 and 8. Way b is node 2, a branch, to node 3 (edge e) or node 4
// (edge f); way c is the chain 5 6, which joins b's false way at node 4;
// way d is node 7. Then g = 3->8, h = 4->8, i = 7->8, and 8->9->end. Were
// node 1 three-way, Algorithm 1 would give
//   [1] [2 | 5 6 | 7] [3 | 4 | (i passed on)] [8 9]
// which has every property the text states.
//
// The difference: no node can have three successors here. A branch is a
// meta.guard carrying meta.decision on one condition (or on its `not`),
// and meta-merge rejects a node with more than one successor unless it is
// a decision taken both ways, so it has two. Node 1's three ways are two
// decisions, as in `if s > 8: <d> elif s > 0: <b> else: <c>`: node 1
// (s > 8; true: edge d to 7, false: an extra edge to node 1') and node 1'
// (at fig2.py:10; s > 0; true: edge b to 2, false: edge c to 5). So way
// d's block runs one switch-case before ways b's and c's, and node 8 waits
// twice:
//   [1] [1' | 7] [2 | (i) | 5 6] [3 | (i) | 4] [8 9]
// [1' | 7] is two cases entered by the two ways of node 1's branch, so it
// is an scf.if on node 1's condition (then: way d). The figure's
// three-case switch-case after node 1 is the first scf.index_switch
// below, its way-d case empty (node 7 ran in the scf.if) and passing i
// on; the second is the text's [3 | 4 | (i)]. The cases of a
// switch-case are a set in Algorithm 1; the pass orders them by node, and
// node 8 (the empty case) precedes nodes 4 and 5 because the first trace
// runs it before the others run them.
//
// A node is the ops at one location, fig2.py:<node>: 1 is s = sum(x) and
// s > 8; 1' is s > 0; 2 is h = 2x and max(h) > 4; 3 exp(h); 4 tanh(h);
// 5 neg(x); 6 exp; 7 x - 1; 8 h * 3; 9 + x.
// RUN: jitc opt %s --meta-merge | FileCheck %s
//
// Each trace, run on an input that takes its path (its decision guards
// fail on any other), and the merged function agree.
// RUN: jitc opt %s --meta-merge -o %t.merged.mlir
// RUN: jitc run %s --function f_b3 --input "4xf32=3 1 -1 0" > %t.want.b3
// RUN: jitc run %t.merged.mlir --function f --input "4xf32=3 1 -1 0" > %t.got.b3
// RUN: diff %t.want.b3 %t.got.b3
// RUN: jitc run %s --function f_b4 --input "4xf32=1 1 1 1" > %t.want.b4
// RUN: jitc run %t.merged.mlir --function f --input "4xf32=1 1 1 1" > %t.got.b4
// RUN: diff %t.want.b4 %t.got.b4
// RUN: jitc run %s --function f_c --input "4xf32=-1 -2 0.5 -3" > %t.want.c
// RUN: jitc run %t.merged.mlir --function f --input "4xf32=-1 -2 0.5 -3" > %t.got.c
// RUN: diff %t.want.c %t.got.c
// RUN: jitc run %s --function f_d --input "4xf32=3 3 3 3" > %t.want.d
// RUN: jitc run %t.merged.mlir --function f --input "4xf32=3 3 3 3" > %t.got.d
// RUN: diff %t.want.d %t.got.d
// RUN: jitc run %t.merged.mlir --function f --backend interp --input "4xf32=3 3 3 3" | FileCheck %s --check-prefix=WAYD
// WAYD: result[0]: 4xf32=9 9 9 9
//
// CHECK-LABEL: func.func @f(
// CHECK-NOT: meta.trace
// [1], in place: s > 8 selects edge d (true) or the edge to node 1'.
// CHECK: %[[S:.*]] = "meta.reindex_reduce"(%arg0) {{.*}}kind = "add"
// CHECK-NEXT: %[[C1:.*]] = "meta.binary"(%[[S]], %{{.*}}) {kind = "gt"}
// CHECK-NEXT: %[[ED:.*]] = arith.constant [[D:[0-9]+]] : index
// CHECK-NEXT: %[[EP:.*]] = arith.constant [[P:[0-9]+]] : index
// CHECK-NEXT: %[[X1:.*]] = tensor.extract %[[C1]]
// CHECK-NEXT: %[[E1:.*]] = arith.select %[[X1]], %[[ED]], %[[EP]] : index
// CHECK-NOT: scf.index_switch
// [1' | 7]: an scf.if on node 1's condition; way d (true) is node 7, the
// false way node 1'.
// Each way starts with the traces on it, known here (way d: trace 3, bit
// 8; the false way: traces 0-2, bits 7).
// CHECK: %[[W2:[0-9]+]]:3 = scf.if %[[X1]] -> (tensor<4xf32>, index, index) {
// CHECK-NEXT: %[[MD:.*]] = arith.constant 8 : index
// CHECK-NEXT: arith.constant dense<1.0
// CHECK-NEXT: %[[H7:.*]] = "meta.binary"(%arg0, %{{.*}}) {kind = "sub"}
// CHECK-NEXT: %[[EI:.*]] = arith.constant [[I:[0-9]+]] : index
// CHECK-NEXT: scf.yield %[[H7]], %[[EI]], %[[MD]] :
// CHECK-NEXT: } else {
// CHECK-NEXT: arith.constant 7 : index
// CHECK-NEXT: arith.constant dense<0.0
// CHECK-NEXT: %[[C2:.*]] = "meta.binary"(%[[S]], %{{.*}}) {kind = "gt"}
// CHECK: tensor.extract %[[C2]]
// CHECK-NOT: "meta.unary"
// CHECK-NOT: "meta.binary"
// CHECK: scf.yield
// CHECK-NEXT: }
// CHECK-NOT: scf.index_switch
// [2 | (i) | 5 6]: edge i selects the empty case 1, which passes it on.
// CHECK: %[[KI:.*]] = arith.constant [[I]] : index
// CHECK-NEXT: %[[II:.*]] = arith.cmpi eq, %[[W2]]#1, %[[KI]] : index
// CHECK-NEXT: %[[ONE3:.*]] = arith.constant 1 : index
// CHECK-NEXT: arith.select %[[II]], %[[ONE3]],
// CHECK-NOT: scf.index_switch
// CHECK: %[[W3:[0-9]+]]:4 = scf.index_switch %{{.*}} -> tensor<4xf32>, tensor<4xf32>, index, index
// CHECK-NEXT: case 0 {
// CHECK-NEXT: arith.constant dense<2.0
// CHECK-NEXT: %[[H2:.*]] = "meta.binary"(%arg0, %{{.*}}) {kind = "mul"}
// CHECK-NEXT: arith.constant dense<4.0
// CHECK-NEXT: "meta.reindex_reduce"(%[[H2]]) {{.*}}kind = "max"
// CHECK-NEXT: %[[C3:.*]] = "meta.binary"({{.*}}) {kind = "gt"}
// CHECK: tensor.extract %[[C3]]
// CHECK: scf.yield %[[H2]], %[[H2]],
// CHECK-NEXT: }
// CHECK-NEXT: case 1 {
// CHECK-NOT: "meta.
// CHECK: scf.yield {{.*}}, %[[W2]]#1, %[[W2]]#2 :
// CHECK-NEXT: }
// CHECK-NEXT: case 2 {
// CHECK-NEXT: %[[H5:.*]] = "meta.unary"(%arg0) {kind = "neg"}
// CHECK-NEXT: %[[H6:.*]] = "meta.unary"(%[[H5]]) {kind = "exp"}
// CHECK: scf.yield %{{.*}}, %[[H6]],
// CHECK-NEXT: }
// CHECK-NEXT: default {
// CHECK-NOT: scf.index_switch
// [3 | (i) | 4]: node 8 waits again; its empty case passes i on with
// node 7's value.
// CHECK: %[[KI4:.*]] = arith.constant [[I]] : index
// CHECK-NEXT: %[[II4:.*]] = arith.cmpi eq, %[[W3]]#2, %[[KI4]] : index
// CHECK-NEXT: %[[ONE4:.*]] = arith.constant 1 : index
// CHECK-NEXT: arith.select %[[II4]], %[[ONE4]],
// CHECK-NOT: scf.index_switch
// CHECK: %[[W4:[0-9]+]]:3 = scf.index_switch %{{.*}} -> tensor<4xf32>, index, index
// CHECK-NEXT: case 0 {
// CHECK-NEXT: %[[H3:.*]] = "meta.unary"(%[[W3]]#0) {kind = "exp"}
// CHECK: scf.yield %[[H3]],
// CHECK-NEXT: }
// CHECK-NEXT: case 1 {
// CHECK-NEXT: scf.yield %[[W2]]#0, %[[W3]]#2, %[[W3]]#3 :
// CHECK-NEXT: }
// CHECK-NEXT: case 2 {
// CHECK-NEXT: %[[H4:.*]] = "meta.unary"(%[[W3]]#1) {kind = "tanh"}
// CHECK: scf.yield %[[H4]],
// CHECK-NEXT: }
// CHECK-NEXT: default {
// [8 9], in place, on every path.
// CHECK: %[[H8:.*]] = "meta.binary"(%[[W4]]#0, %{{.*}}) {kind = "mul"}
// CHECK-NEXT: %[[H9:.*]] = "meta.binary"(%[[H8]], %arg0) {kind = "add"}
// CHECK-NOT: scf.index_switch
// CHECK: return %[[H9]]
// CHECK-NOT: func.func @f_

// Way b, node 2 true: nodes 1 1' 2 3 8 9; edges a, 1->1', b, e, g.
func.func @f_b3(%x: tensor<4xf32>) -> tensor<4xf32> attributes {meta.trace = "f"} {
  %eight = arith.constant dense<8.0> : tensor<f32> loc("fig2.py":1:0)
  %s = "meta.reindex_reduce"(%x) {kind = "add", indices = affine_map<(d0) -> ()>} : (tensor<4xf32>) -> tensor<f32> loc("fig2.py":1:0)
  %c1 = "meta.binary"(%s, %eight) {kind = "gt"} : (tensor<f32>, tensor<f32>) -> tensor<i1> loc("fig2.py":1:0)
  %n1 = "meta.unary"(%c1) {kind = "not", meta.decision} : (tensor<i1>) -> tensor<i1> loc("fig2.py":1:0)
  "meta.guard"(%n1) {id = 1 : i64, reason = "branch at fig2.py:1 goes false", meta.decision} : (tensor<i1>) -> () loc("fig2.py":1:0)
  %zero = arith.constant dense<0.0> : tensor<f32> loc("fig2.py":10:0)
  %c2 = "meta.binary"(%s, %zero) {kind = "gt"} : (tensor<f32>, tensor<f32>) -> tensor<i1> loc("fig2.py":10:0)
  "meta.guard"(%c2) {id = 2 : i64, reason = "branch at fig2.py:10 goes true", meta.decision} : (tensor<i1>) -> () loc("fig2.py":10:0)
  %two = arith.constant dense<2.0> : tensor<4xf32> loc("fig2.py":2:0)
  %h2 = "meta.binary"(%x, %two) {kind = "mul"} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32> loc("fig2.py":2:0)
  %four = arith.constant dense<4.0> : tensor<f32> loc("fig2.py":2:0)
  %m = "meta.reindex_reduce"(%h2) {kind = "max", indices = affine_map<(d0) -> ()>} : (tensor<4xf32>) -> tensor<f32> loc("fig2.py":2:0)
  %c3 = "meta.binary"(%m, %four) {kind = "gt"} : (tensor<f32>, tensor<f32>) -> tensor<i1> loc("fig2.py":2:0)
  "meta.guard"(%c3) {id = 3 : i64, reason = "branch at fig2.py:2 goes true", meta.decision} : (tensor<i1>) -> () loc("fig2.py":2:0)
  %h = "meta.unary"(%h2) {kind = "exp"} : (tensor<4xf32>) -> tensor<4xf32> loc("fig2.py":3:0)
  %three = arith.constant dense<3.0> : tensor<4xf32> loc("fig2.py":8:0)
  %h8 = "meta.binary"(%h, %three) {kind = "mul"} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32> loc("fig2.py":8:0)
  %h9 = "meta.binary"(%h8, %x) {kind = "add"} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32> loc("fig2.py":9:0)
  return %h9 : tensor<4xf32>
}

// Way b, node 2 false: nodes 1 1' 2 4 8 9; edges a, 1->1', b, f, h.
func.func @f_b4(%x: tensor<4xf32>) -> tensor<4xf32> attributes {meta.trace = "f"} {
  %eight = arith.constant dense<8.0> : tensor<f32> loc("fig2.py":1:0)
  %s = "meta.reindex_reduce"(%x) {kind = "add", indices = affine_map<(d0) -> ()>} : (tensor<4xf32>) -> tensor<f32> loc("fig2.py":1:0)
  %c1 = "meta.binary"(%s, %eight) {kind = "gt"} : (tensor<f32>, tensor<f32>) -> tensor<i1> loc("fig2.py":1:0)
  %n1 = "meta.unary"(%c1) {kind = "not", meta.decision} : (tensor<i1>) -> tensor<i1> loc("fig2.py":1:0)
  "meta.guard"(%n1) {id = 1 : i64, reason = "branch at fig2.py:1 goes false", meta.decision} : (tensor<i1>) -> () loc("fig2.py":1:0)
  %zero = arith.constant dense<0.0> : tensor<f32> loc("fig2.py":10:0)
  %c2 = "meta.binary"(%s, %zero) {kind = "gt"} : (tensor<f32>, tensor<f32>) -> tensor<i1> loc("fig2.py":10:0)
  "meta.guard"(%c2) {id = 2 : i64, reason = "branch at fig2.py:10 goes true", meta.decision} : (tensor<i1>) -> () loc("fig2.py":10:0)
  %two = arith.constant dense<2.0> : tensor<4xf32> loc("fig2.py":2:0)
  %h2 = "meta.binary"(%x, %two) {kind = "mul"} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32> loc("fig2.py":2:0)
  %four = arith.constant dense<4.0> : tensor<f32> loc("fig2.py":2:0)
  %m = "meta.reindex_reduce"(%h2) {kind = "max", indices = affine_map<(d0) -> ()>} : (tensor<4xf32>) -> tensor<f32> loc("fig2.py":2:0)
  %c3 = "meta.binary"(%m, %four) {kind = "gt"} : (tensor<f32>, tensor<f32>) -> tensor<i1> loc("fig2.py":2:0)
  %n3 = "meta.unary"(%c3) {kind = "not", meta.decision} : (tensor<i1>) -> tensor<i1> loc("fig2.py":2:0)
  "meta.guard"(%n3) {id = 3 : i64, reason = "branch at fig2.py:2 goes false", meta.decision} : (tensor<i1>) -> () loc("fig2.py":2:0)
  %h = "meta.unary"(%h2) {kind = "tanh"} : (tensor<4xf32>) -> tensor<4xf32> loc("fig2.py":4:0)
  %three = arith.constant dense<3.0> : tensor<4xf32> loc("fig2.py":8:0)
  %h8 = "meta.binary"(%h, %three) {kind = "mul"} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32> loc("fig2.py":8:0)
  %h9 = "meta.binary"(%h8, %x) {kind = "add"} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32> loc("fig2.py":9:0)
  return %h9 : tensor<4xf32>
}

// Way c: nodes 1 1' 5 6 4 8 9; edges a, 1->1', c, 5->6, 6->4, h.
func.func @f_c(%x: tensor<4xf32>) -> tensor<4xf32> attributes {meta.trace = "f"} {
  %eight = arith.constant dense<8.0> : tensor<f32> loc("fig2.py":1:0)
  %s = "meta.reindex_reduce"(%x) {kind = "add", indices = affine_map<(d0) -> ()>} : (tensor<4xf32>) -> tensor<f32> loc("fig2.py":1:0)
  %c1 = "meta.binary"(%s, %eight) {kind = "gt"} : (tensor<f32>, tensor<f32>) -> tensor<i1> loc("fig2.py":1:0)
  %n1 = "meta.unary"(%c1) {kind = "not", meta.decision} : (tensor<i1>) -> tensor<i1> loc("fig2.py":1:0)
  "meta.guard"(%n1) {id = 1 : i64, reason = "branch at fig2.py:1 goes false", meta.decision} : (tensor<i1>) -> () loc("fig2.py":1:0)
  %zero = arith.constant dense<0.0> : tensor<f32> loc("fig2.py":10:0)
  %c2 = "meta.binary"(%s, %zero) {kind = "gt"} : (tensor<f32>, tensor<f32>) -> tensor<i1> loc("fig2.py":10:0)
  %n2 = "meta.unary"(%c2) {kind = "not", meta.decision} : (tensor<i1>) -> tensor<i1> loc("fig2.py":10:0)
  "meta.guard"(%n2) {id = 2 : i64, reason = "branch at fig2.py:10 goes false", meta.decision} : (tensor<i1>) -> () loc("fig2.py":10:0)
  %h5 = "meta.unary"(%x) {kind = "neg"} : (tensor<4xf32>) -> tensor<4xf32> loc("fig2.py":5:0)
  %h6 = "meta.unary"(%h5) {kind = "exp"} : (tensor<4xf32>) -> tensor<4xf32> loc("fig2.py":6:0)
  %h = "meta.unary"(%h6) {kind = "tanh"} : (tensor<4xf32>) -> tensor<4xf32> loc("fig2.py":4:0)
  %three = arith.constant dense<3.0> : tensor<4xf32> loc("fig2.py":8:0)
  %h8 = "meta.binary"(%h, %three) {kind = "mul"} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32> loc("fig2.py":8:0)
  %h9 = "meta.binary"(%h8, %x) {kind = "add"} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32> loc("fig2.py":9:0)
  return %h9 : tensor<4xf32>
}

// Way d: nodes 1 7 8 9; edges a, d, i.
func.func @f_d(%x: tensor<4xf32>) -> tensor<4xf32> attributes {meta.trace = "f"} {
  %eight = arith.constant dense<8.0> : tensor<f32> loc("fig2.py":1:0)
  %s = "meta.reindex_reduce"(%x) {kind = "add", indices = affine_map<(d0) -> ()>} : (tensor<4xf32>) -> tensor<f32> loc("fig2.py":1:0)
  %c1 = "meta.binary"(%s, %eight) {kind = "gt"} : (tensor<f32>, tensor<f32>) -> tensor<i1> loc("fig2.py":1:0)
  "meta.guard"(%c1) {id = 1 : i64, reason = "branch at fig2.py:1 goes true", meta.decision} : (tensor<i1>) -> () loc("fig2.py":1:0)
  %one = arith.constant dense<1.0> : tensor<4xf32> loc("fig2.py":7:0)
  %h = "meta.binary"(%x, %one) {kind = "sub"} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32> loc("fig2.py":7:0)
  %three = arith.constant dense<3.0> : tensor<4xf32> loc("fig2.py":8:0)
  %h8 = "meta.binary"(%h, %three) {kind = "mul"} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32> loc("fig2.py":8:0)
  %h9 = "meta.binary"(%h8, %x) {kind = "add"} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32> loc("fig2.py":9:0)
  return %h9 : tensor<4xf32>
}
