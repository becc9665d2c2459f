// jitc explain prints the plan meta-fuse applies.
// RUN: jitc explain %s | FileCheck %s
// RUN: jitc explain %s --format dot | FileCheck %s --check-prefix=DOT
// RUN: jitc explain %s --fanout-limit 1 | FileCheck %s --check-prefix=FANOUT
// RUN: not jitc explain %s --function nope 2>&1 | FileCheck %s --check-prefix=NOFUNC

// CHECK: @main: 3 ops in 2 groups; bytes across group boundaries 224 -> 160 (28.6% less)
// CHECK:   group 0: domain 4x4, 2 ops, 64 bytes in, 80 bytes out
// CHECK:     #0 meta.unary "exp" : tensor<4x4xf32>
// CHECK:     #1 meta.reindex_reduce "add" : tensor<4xf32>
// CHECK:   group 1: domain 4, 1 op, 16 bytes in, 16 bytes out
// CHECK:   unfused edges:
// CHECK:     #1 meta.reindex_reduce "add" : tensor<4xf32> -> #2 meta.unary "neg" : tensor<4xf32> (16 bytes): rule 2: a reindex_reduce never fuses with its consumer

// DOT: digraph "jitc fusion plan" {
// DOT:   subgraph cluster_0_0 {
// DOT:     label="group 0: domain 4x4";
// DOT:   n0_0 -> n0_1 [label="64 B"];
// DOT:   n0_1 -> n0_2 [style=dashed, color=red, label="16 B\nrule 2: a reindex_reduce never fuses with its consumer"];

// FANOUT: #0 meta.unary "exp" : tensor<4x4xf32> -> #1 meta.reindex_reduce "add" : tensor<4xf32> (64 bytes): fan-out limit

// NOFUNC: jitc explain: error: no function @nope in the module

func.func @main(%x: tensor<4x4xf32>) -> (tensor<4xf32>, tensor<4x4xf32>) {
  %e = "meta.unary"(%x) {kind = "exp"} : (tensor<4x4xf32>) -> tensor<4x4xf32>
  %s = "meta.reindex_reduce"(%e) {kind = "add", indices = affine_map<(i, j) -> (i)>} : (tensor<4x4xf32>) -> tensor<4xf32>
  %n = "meta.unary"(%s) {kind = "neg"} : (tensor<4xf32>) -> tensor<4xf32>
  return %n, %e : tensor<4xf32>, tensor<4x4xf32>
}
