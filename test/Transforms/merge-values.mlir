// meta-merge when a branch taken both ways decides which value a later op
// reads, the values computed before it (`h = a if c else b`): each trace
// gets a way node after the branch that passes on what it reads there, so
// the branch is an scf.if whose regions yield the value of their way.
// Below: @f, whose ways run no op of their own; @g, whose ways run
// different ops too; @h, whose ways read two results of one op (a call).
// RUN: jitc opt %s --meta-merge | FileCheck %s
//
// The merged functions compute what each trace computes on the calls
// that take its way.
// RUN: jitc opt %s --meta-merge -o %t.merged.mlir
// RUN: jitc run %s --function f_0 --input "4xf32=1 -2 0.5 3" --input "i1=1" > %t.want.f1
// RUN: jitc run %t.merged.mlir --function f --input "4xf32=1 -2 0.5 3" --input "i1=1" > %t.got.f1
// RUN: diff %t.want.f1 %t.got.f1
// RUN: jitc run %s --function f_1 --input "4xf32=1 -2 0.5 3" --input "i1=0" > %t.want.f0
// RUN: jitc run %t.merged.mlir --function f --input "4xf32=1 -2 0.5 3" --input "i1=0" > %t.got.f0
// RUN: diff %t.want.f0 %t.got.f0
// RUN: jitc run %s --function g_0 --input "4xf32=1 -2 0.5 3" --input "i1=1" > %t.want.g1
// RUN: jitc run %t.merged.mlir --function g --input "4xf32=1 -2 0.5 3" --input "i1=1" > %t.got.g1
// RUN: diff %t.want.g1 %t.got.g1
// RUN: jitc run %s --function g_1 --input "4xf32=1 -2 0.5 3" --input "i1=0" > %t.want.g0
// RUN: jitc run %t.merged.mlir --function g --input "4xf32=1 -2 0.5 3" --input "i1=0" > %t.got.g0
// RUN: diff %t.want.g0 %t.got.g0
// RUN: jitc run %s --function h_0 --input "4xi32=3 -2 100000 7" --input "i1=1" > %t.want.h1
// RUN: jitc run %t.merged.mlir --function h --input "4xi32=3 -2 100000 7" --input "i1=1" > %t.got.h1
// RUN: diff %t.want.h1 %t.got.h1
// RUN: jitc run %s --function h_1 --input "4xi32=3 -2 100000 7" --input "i1=0" > %t.want.h0
// RUN: jitc run %t.merged.mlir --function h --input "4xi32=3 -2 100000 7" --input "i1=0" > %t.got.h0
// RUN: diff %t.want.h0 %t.got.h0
// The call's first result on the true way (2x - x), its second on the
// false way (x*x - x*x):
// RUN: FileCheck %s --check-prefix=H1 < %t.got.h1
// H1: result[0]: 4xi32=3 -2 100000 7
// RUN: FileCheck %s --check-prefix=H0 < %t.got.h0
// H0: result[0]: 4xi32=0 0 0 0
// RUN: jitc run %t.merged.mlir --function f --backend interp --input "4xf32=0 0 0 0" --input "i1=0" | FileCheck %s --check-prefix=F0
// F0: result[0]: 4xf32=0 0 0 0
// RUN: jitc run %t.merged.mlir --function f --backend interp --input "4xf32=0 0 0 0" --input "i1=1" | FileCheck %s --check-prefix=F1
// F1: result[0]: 4xf32=1.7615942 1.7615942 1.7615942 1.7615942
//
// CHECK-LABEL: func.func @f(
// CHECK: %[[A:.*]] = "meta.unary"(%arg0) {kind = "exp"}
// CHECK: %[[B:.*]] = "meta.unary"(%arg0) {kind = "neg"}
// CHECK: %[[C:.*]] = tensor.extract %arg1
// CHECK-NOT: meta.guard
// CHECK: %[[H:[0-9]+]]:3 = scf.if %[[C]] -> (tensor<4xf32>, index, index) {
// CHECK-NOT: "meta.
// CHECK: scf.yield %[[A]],
// CHECK-NEXT: } else {
// CHECK-NOT: "meta.
// CHECK: scf.yield %[[B]],
// CHECK-NEXT: }
// Three ops read the value the branch picks: one value of the scf.if.
// CHECK-NEXT: %[[T:.*]] = "meta.unary"(%[[H]]#0) {kind = "tanh"}
// CHECK-NEXT: %[[M:.*]] = "meta.binary"(%[[H]]#0, %[[T]]) {kind = "mul"}
// CHECK-NEXT: %[[R:.*]] = "meta.binary"(%[[M]], %[[H]]#0) {kind = "add"}
// CHECK: return %[[R]]
//
// CHECK-LABEL: func.func @g(
// CHECK: %[[GA:.*]] = "meta.unary"(%arg0) {kind = "exp"}
// CHECK: %[[GB:.*]] = "meta.unary"(%arg0) {kind = "neg"}
// CHECK: scf.if
// CHECK: %[[S:.*]] = "meta.unary"(%arg0) {kind = "sin"}
// CHECK: scf.yield %[[S]], %[[GA]],
// CHECK: } else {
// CHECK: %[[K:.*]] = "meta.unary"(%arg0) {kind = "cos"}
// CHECK: scf.yield %[[K]], %[[GB]],
//
// CHECK-LABEL: func.func @h(
// CHECK: %[[P:.*]]:2 = call @pair(%arg0)
// CHECK: scf.if
// CHECK: scf.yield %{{.*}}, %[[P]]#0,
// CHECK: } else {
// CHECK: scf.yield %{{.*}}, %[[P]]#1,
// CHECK-NOT: func.func @{{[fgh]}}_

func.func @f_0(%x: tensor<4xf32>, %c: tensor<i1>) -> tensor<4xf32> attributes {meta.trace = "f"} {
  %a = "meta.unary"(%x) {kind = "exp"} : (tensor<4xf32>) -> tensor<4xf32> loc("v.py":1:0)
  %b = "meta.unary"(%x) {kind = "neg"} : (tensor<4xf32>) -> tensor<4xf32> loc("v.py":2:0)
  "meta.guard"(%c) {id = 1 : i64, reason = "branch goes true", meta.decision} : (tensor<i1>) -> () loc("v.py":3:0)
  %t = "meta.unary"(%a) {kind = "tanh"} : (tensor<4xf32>) -> tensor<4xf32> loc("v.py":4:0)
  %m = "meta.binary"(%a, %t) {kind = "mul"} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32> loc("v.py":5:0)
  %r = "meta.binary"(%m, %a) {kind = "add"} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32> loc("v.py":6:0)
  return %r : tensor<4xf32>
}
func.func @f_1(%x: tensor<4xf32>, %c: tensor<i1>) -> tensor<4xf32> attributes {meta.trace = "f"} {
  %a = "meta.unary"(%x) {kind = "exp"} : (tensor<4xf32>) -> tensor<4xf32> loc("v.py":1:0)
  %b = "meta.unary"(%x) {kind = "neg"} : (tensor<4xf32>) -> tensor<4xf32> loc("v.py":2:0)
  %n = "meta.unary"(%c) {kind = "not", meta.decision} : (tensor<i1>) -> tensor<i1> loc("v.py":3:0)
  "meta.guard"(%n) {id = 1 : i64, reason = "branch goes false", meta.decision} : (tensor<i1>) -> () loc("v.py":3:0)
  %t = "meta.unary"(%b) {kind = "tanh"} : (tensor<4xf32>) -> tensor<4xf32> loc("v.py":4:0)
  %m = "meta.binary"(%b, %t) {kind = "mul"} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32> loc("v.py":5:0)
  %r = "meta.binary"(%m, %b) {kind = "add"} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32> loc("v.py":6:0)
  return %r : tensor<4xf32>
}

func.func @g_0(%x: tensor<4xf32>, %c: tensor<i1>) -> tensor<4xf32> attributes {meta.trace = "g"} {
  %a = "meta.unary"(%x) {kind = "exp"} : (tensor<4xf32>) -> tensor<4xf32> loc("v.py":11:0)
  %b = "meta.unary"(%x) {kind = "neg"} : (tensor<4xf32>) -> tensor<4xf32> loc("v.py":12:0)
  "meta.guard"(%c) {id = 1 : i64, reason = "branch goes true", meta.decision} : (tensor<i1>) -> () loc("v.py":13:0)
  %s = "meta.unary"(%x) {kind = "sin"} : (tensor<4xf32>) -> tensor<4xf32> loc("v.py":14:0)
  %t = "meta.binary"(%a, %s) {kind = "add"} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32> loc("v.py":16:0)
  return %t : tensor<4xf32>
}
func.func @g_1(%x: tensor<4xf32>, %c: tensor<i1>) -> tensor<4xf32> attributes {meta.trace = "g"} {
  %a = "meta.unary"(%x) {kind = "exp"} : (tensor<4xf32>) -> tensor<4xf32> loc("v.py":11:0)
  %b = "meta.unary"(%x) {kind = "neg"} : (tensor<4xf32>) -> tensor<4xf32> loc("v.py":12:0)
  %n = "meta.unary"(%c) {kind = "not", meta.decision} : (tensor<i1>) -> tensor<i1> loc("v.py":13:0)
  "meta.guard"(%n) {id = 1 : i64, reason = "branch goes false", meta.decision} : (tensor<i1>) -> () loc("v.py":13:0)
  %s = "meta.unary"(%x) {kind = "cos"} : (tensor<4xf32>) -> tensor<4xf32> loc("v.py":15:0)
  %t = "meta.binary"(%b, %s) {kind = "add"} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32> loc("v.py":16:0)
  return %t : tensor<4xf32>
}

func.func @h_0(%x: tensor<4xi32>, %c: tensor<i1>) -> tensor<4xi32> attributes {meta.trace = "h"} {
  %lo, %hi = func.call @pair(%x) : (tensor<4xi32>) -> (tensor<4xi32>, tensor<4xi32>) loc("v.py":21:0)
  "meta.guard"(%c) {id = 1 : i64, reason = "t", meta.decision} : (tensor<i1>) -> () loc("v.py":22:0)
  %a = "meta.binary"(%x, %x) {kind = "max"} : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi32> loc("v.py":23:0)
  %n = "meta.binary"(%lo, %a) {kind = "sub"} : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi32> loc("v.py":25:0)
  return %n : tensor<4xi32>
}
func.func @h_1(%x: tensor<4xi32>, %c: tensor<i1>) -> tensor<4xi32> attributes {meta.trace = "h"} {
  %lo, %hi = func.call @pair(%x) : (tensor<4xi32>) -> (tensor<4xi32>, tensor<4xi32>) loc("v.py":21:0)
  %nc = "meta.unary"(%c) {kind = "not", meta.decision} : (tensor<i1>) -> tensor<i1> loc("v.py":22:0)
  "meta.guard"(%nc) {id = 1 : i64, reason = "f", meta.decision} : (tensor<i1>) -> () loc("v.py":22:0)
  %a = "meta.binary"(%x, %x) {kind = "mul"} : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi32> loc("v.py":24:0)
  %n = "meta.binary"(%hi, %a) {kind = "sub"} : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi32> loc("v.py":25:0)
  return %n : tensor<4xi32>
}

func.func @pair(%x: tensor<4xi32>) -> (tensor<4xi32>, tensor<4xi32>) {
  %s = "meta.binary"(%x, %x) {kind = "add"} : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi32>
  %p = "meta.binary"(%x, %x) {kind = "mul"} : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi32>
  return %s, %p : tensor<4xi32>, tensor<4xi32>
}
