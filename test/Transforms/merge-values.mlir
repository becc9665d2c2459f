// meta-merge when a branch taken both ways decides which value a later op
// reads, the values computed before it (`h = a if c else b`): each trace
// gets a way node after the branch that passes on what it reads there, so
// the branch is an scf.if whose regions yield the value of their way.
// Below: @f, whose ways run no op of their own; @g, whose ways run
// different ops too; @h, whose ways read two results of one op (a call);
// @k, where the second of two branches picks the value (`h = a if e else
// b` after `y = sin(x) if c else cos(x)`); @n, two picks in a row
// (`h = a if c else b`, then `best = h if e else best`), where the
// second's way nodes pass on values the first picks.
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
// RUN: jitc run %s --function k_tt --input "4xf32=1 -2 0.5 3" --input "i1=1" --input "i1=1" > %t.want.ktt
// RUN: jitc run %t.merged.mlir --function k --input "4xf32=1 -2 0.5 3" --input "i1=1" --input "i1=1" > %t.got.ktt
// RUN: diff %t.want.ktt %t.got.ktt
// RUN: jitc run %s --function n_tt --input "4xf32=1 -2 0.5 3" --input "4xf32=7 8 9 10" --input "i1=1" --input "i1=1" > %t.want.ntt
// RUN: jitc run %t.merged.mlir --function n --input "4xf32=1 -2 0.5 3" --input "4xf32=7 8 9 10" --input "i1=1" --input "i1=1" > %t.got.ntt
// RUN: diff %t.want.ntt %t.got.ntt
// RUN: jitc run %s --function k_tf --input "4xf32=1 -2 0.5 3" --input "i1=1" --input "i1=0" > %t.want.ktf
// RUN: jitc run %t.merged.mlir --function k --input "4xf32=1 -2 0.5 3" --input "i1=1" --input "i1=0" > %t.got.ktf
// RUN: diff %t.want.ktf %t.got.ktf
// RUN: jitc run %s --function n_tf --input "4xf32=1 -2 0.5 3" --input "4xf32=7 8 9 10" --input "i1=1" --input "i1=0" > %t.want.ntf
// RUN: jitc run %t.merged.mlir --function n --input "4xf32=1 -2 0.5 3" --input "4xf32=7 8 9 10" --input "i1=1" --input "i1=0" > %t.got.ntf
// RUN: diff %t.want.ntf %t.got.ntf
// RUN: jitc run %s --function k_ft --input "4xf32=1 -2 0.5 3" --input "i1=0" --input "i1=1" > %t.want.kft
// RUN: jitc run %t.merged.mlir --function k --input "4xf32=1 -2 0.5 3" --input "i1=0" --input "i1=1" > %t.got.kft
// RUN: diff %t.want.kft %t.got.kft
// RUN: jitc run %s --function n_ft --input "4xf32=1 -2 0.5 3" --input "4xf32=7 8 9 10" --input "i1=0" --input "i1=1" > %t.want.nft
// RUN: jitc run %t.merged.mlir --function n --input "4xf32=1 -2 0.5 3" --input "4xf32=7 8 9 10" --input "i1=0" --input "i1=1" > %t.got.nft
// RUN: diff %t.want.nft %t.got.nft
// RUN: jitc run %s --function k_ff --input "4xf32=1 -2 0.5 3" --input "i1=0" --input "i1=0" > %t.want.kff
// RUN: jitc run %t.merged.mlir --function k --input "4xf32=1 -2 0.5 3" --input "i1=0" --input "i1=0" > %t.got.kff
// RUN: diff %t.want.kff %t.got.kff
// RUN: jitc run %s --function n_ff --input "4xf32=1 -2 0.5 3" --input "4xf32=7 8 9 10" --input "i1=0" --input "i1=0" > %t.want.nff
// RUN: jitc run %t.merged.mlir --function n --input "4xf32=1 -2 0.5 3" --input "4xf32=7 8 9 10" --input "i1=0" --input "i1=0" > %t.got.nff
// RUN: diff %t.want.nff %t.got.nff
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

func.func @k_tt(%x: tensor<4xf32>, %c: tensor<i1>, %e: tensor<i1>) -> tensor<4xf32> attributes {meta.trace = "k"} {
  %a = "meta.unary"(%x) {kind = "exp"} : (tensor<4xf32>) -> tensor<4xf32> loc("v.py":31:0)
  %b = "meta.unary"(%x) {kind = "neg"} : (tensor<4xf32>) -> tensor<4xf32> loc("v.py":32:0)
  "meta.guard"(%c) {id = 1 : i64, reason = "c true", meta.decision} : (tensor<i1>) -> () loc("v.py":33:0)
  %y = "meta.unary"(%x) {kind = "sin"} : (tensor<4xf32>) -> tensor<4xf32> loc("v.py":34:0)
  "meta.guard"(%e) {id = 2 : i64, reason = "e true", meta.decision} : (tensor<i1>) -> () loc("v.py":36:0)
  %r = "meta.binary"(%a, %y) {kind = "add"} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32> loc("v.py":37:0)
  return %r : tensor<4xf32>
}
func.func @k_tf(%x: tensor<4xf32>, %c: tensor<i1>, %e: tensor<i1>) -> tensor<4xf32> attributes {meta.trace = "k"} {
  %a = "meta.unary"(%x) {kind = "exp"} : (tensor<4xf32>) -> tensor<4xf32> loc("v.py":31:0)
  %b = "meta.unary"(%x) {kind = "neg"} : (tensor<4xf32>) -> tensor<4xf32> loc("v.py":32:0)
  "meta.guard"(%c) {id = 1 : i64, reason = "c true", meta.decision} : (tensor<i1>) -> () loc("v.py":33:0)
  %y = "meta.unary"(%x) {kind = "sin"} : (tensor<4xf32>) -> tensor<4xf32> loc("v.py":34:0)
  %ne = "meta.unary"(%e) {kind = "not", meta.decision} : (tensor<i1>) -> tensor<i1> loc("v.py":36:0)
  "meta.guard"(%ne) {id = 2 : i64, reason = "e false", meta.decision} : (tensor<i1>) -> () loc("v.py":36:0)
  %r = "meta.binary"(%b, %y) {kind = "add"} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32> loc("v.py":37:0)
  return %r : tensor<4xf32>
}
func.func @k_ft(%x: tensor<4xf32>, %c: tensor<i1>, %e: tensor<i1>) -> tensor<4xf32> attributes {meta.trace = "k"} {
  %a = "meta.unary"(%x) {kind = "exp"} : (tensor<4xf32>) -> tensor<4xf32> loc("v.py":31:0)
  %b = "meta.unary"(%x) {kind = "neg"} : (tensor<4xf32>) -> tensor<4xf32> loc("v.py":32:0)
  %nc = "meta.unary"(%c) {kind = "not", meta.decision} : (tensor<i1>) -> tensor<i1> loc("v.py":33:0)
  "meta.guard"(%nc) {id = 1 : i64, reason = "c false", meta.decision} : (tensor<i1>) -> () loc("v.py":33:0)
  %y = "meta.unary"(%x) {kind = "cos"} : (tensor<4xf32>) -> tensor<4xf32> loc("v.py":35:0)
  "meta.guard"(%e) {id = 2 : i64, reason = "e true", meta.decision} : (tensor<i1>) -> () loc("v.py":36:0)
  %r = "meta.binary"(%a, %y) {kind = "add"} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32> loc("v.py":37:0)
  return %r : tensor<4xf32>
}
func.func @k_ff(%x: tensor<4xf32>, %c: tensor<i1>, %e: tensor<i1>) -> tensor<4xf32> attributes {meta.trace = "k"} {
  %a = "meta.unary"(%x) {kind = "exp"} : (tensor<4xf32>) -> tensor<4xf32> loc("v.py":31:0)
  %b = "meta.unary"(%x) {kind = "neg"} : (tensor<4xf32>) -> tensor<4xf32> loc("v.py":32:0)
  %nc = "meta.unary"(%c) {kind = "not", meta.decision} : (tensor<i1>) -> tensor<i1> loc("v.py":33:0)
  "meta.guard"(%nc) {id = 1 : i64, reason = "c false", meta.decision} : (tensor<i1>) -> () loc("v.py":33:0)
  %y = "meta.unary"(%x) {kind = "cos"} : (tensor<4xf32>) -> tensor<4xf32> loc("v.py":35:0)
  %ne = "meta.unary"(%e) {kind = "not", meta.decision} : (tensor<i1>) -> tensor<i1> loc("v.py":36:0)
  "meta.guard"(%ne) {id = 2 : i64, reason = "e false", meta.decision} : (tensor<i1>) -> () loc("v.py":36:0)
  %r = "meta.binary"(%b, %y) {kind = "add"} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32> loc("v.py":37:0)
  return %r : tensor<4xf32>
}

func.func @n_tt(%x: tensor<4xf32>, %best: tensor<4xf32>, %c: tensor<i1>, %e: tensor<i1>) -> (tensor<4xf32>, tensor<4xf32>) attributes {meta.trace = "n"} {
  %a = "meta.unary"(%x) {kind = "exp"} : (tensor<4xf32>) -> tensor<4xf32> loc("v.py":41:0)
  %b = "meta.unary"(%x) {kind = "neg"} : (tensor<4xf32>) -> tensor<4xf32> loc("v.py":42:0)
  "meta.guard"(%c) {id = 1 : i64, reason = "c true", meta.decision} : (tensor<i1>) -> () loc("v.py":43:0)
  "meta.guard"(%e) {id = 2 : i64, reason = "e true", meta.decision} : (tensor<i1>) -> () loc("v.py":44:0)
  %t = "meta.unary"(%a) {kind = "tanh"} : (tensor<4xf32>) -> tensor<4xf32> loc("v.py":45:0)
  return %t, %a : tensor<4xf32>, tensor<4xf32>
}
func.func @n_tf(%x: tensor<4xf32>, %best: tensor<4xf32>, %c: tensor<i1>, %e: tensor<i1>) -> (tensor<4xf32>, tensor<4xf32>) attributes {meta.trace = "n"} {
  %a = "meta.unary"(%x) {kind = "exp"} : (tensor<4xf32>) -> tensor<4xf32> loc("v.py":41:0)
  %b = "meta.unary"(%x) {kind = "neg"} : (tensor<4xf32>) -> tensor<4xf32> loc("v.py":42:0)
  "meta.guard"(%c) {id = 1 : i64, reason = "c true", meta.decision} : (tensor<i1>) -> () loc("v.py":43:0)
  %ne = "meta.unary"(%e) {kind = "not", meta.decision} : (tensor<i1>) -> tensor<i1> loc("v.py":44:0)
  "meta.guard"(%ne) {id = 2 : i64, reason = "e false", meta.decision} : (tensor<i1>) -> () loc("v.py":44:0)
  %t = "meta.unary"(%a) {kind = "tanh"} : (tensor<4xf32>) -> tensor<4xf32> loc("v.py":45:0)
  return %t, %best : tensor<4xf32>, tensor<4xf32>
}
func.func @n_ft(%x: tensor<4xf32>, %best: tensor<4xf32>, %c: tensor<i1>, %e: tensor<i1>) -> (tensor<4xf32>, tensor<4xf32>) attributes {meta.trace = "n"} {
  %a = "meta.unary"(%x) {kind = "exp"} : (tensor<4xf32>) -> tensor<4xf32> loc("v.py":41:0)
  %b = "meta.unary"(%x) {kind = "neg"} : (tensor<4xf32>) -> tensor<4xf32> loc("v.py":42:0)
  %nc = "meta.unary"(%c) {kind = "not", meta.decision} : (tensor<i1>) -> tensor<i1> loc("v.py":43:0)
  "meta.guard"(%nc) {id = 1 : i64, reason = "c false", meta.decision} : (tensor<i1>) -> () loc("v.py":43:0)
  "meta.guard"(%e) {id = 2 : i64, reason = "e true", meta.decision} : (tensor<i1>) -> () loc("v.py":44:0)
  %t = "meta.unary"(%b) {kind = "tanh"} : (tensor<4xf32>) -> tensor<4xf32> loc("v.py":45:0)
  return %t, %b : tensor<4xf32>, tensor<4xf32>
}
func.func @n_ff(%x: tensor<4xf32>, %best: tensor<4xf32>, %c: tensor<i1>, %e: tensor<i1>) -> (tensor<4xf32>, tensor<4xf32>) attributes {meta.trace = "n"} {
  %a = "meta.unary"(%x) {kind = "exp"} : (tensor<4xf32>) -> tensor<4xf32> loc("v.py":41:0)
  %b = "meta.unary"(%x) {kind = "neg"} : (tensor<4xf32>) -> tensor<4xf32> loc("v.py":42:0)
  %nc = "meta.unary"(%c) {kind = "not", meta.decision} : (tensor<i1>) -> tensor<i1> loc("v.py":43:0)
  "meta.guard"(%nc) {id = 1 : i64, reason = "c false", meta.decision} : (tensor<i1>) -> () loc("v.py":43:0)
  %ne = "meta.unary"(%e) {kind = "not", meta.decision} : (tensor<i1>) -> tensor<i1> loc("v.py":44:0)
  "meta.guard"(%ne) {id = 2 : i64, reason = "e false", meta.decision} : (tensor<i1>) -> () loc("v.py":44:0)
  %t = "meta.unary"(%b) {kind = "tanh"} : (tensor<4xf32>) -> tensor<4xf32> loc("v.py":45:0)
  return %t, %best : tensor<4xf32>, tensor<4xf32>
}

// The second branch (e) picks the value, not the first (c):
// CHECK-LABEL: func.func @k(
// CHECK: %[[KA:.*]] = "meta.unary"(%arg0) {kind = "exp"}
// CHECK: %[[KB:.*]] = "meta.unary"(%arg0) {kind = "neg"}
// CHECK: %[[KY:[0-9]+]]:3 = scf.if
// CHECK: "meta.unary"(%arg0) {kind = "sin"}
// CHECK: } else {
// CHECK: "meta.unary"(%arg0) {kind = "cos"}
// CHECK: %[[KH:[0-9]+]]:3 = scf.if
// CHECK: scf.yield %[[KA]],
// CHECK: } else {
// CHECK: scf.yield %[[KB]],
// CHECK: "meta.binary"(%[[KH]]#0, %[[KY]]#0) {kind = "add"}
//
// best = (c ? a : b) if e else best: the first scf.if picks a or b for
// tanh and for the second, which picks that or the argument.
// CHECK-LABEL: func.func @n(
// CHECK: %[[NA:.*]] = "meta.unary"(%arg0) {kind = "exp"}
// CHECK: %[[NB:.*]] = "meta.unary"(%arg0) {kind = "neg"}
// CHECK: %[[NH:[0-9]+]]:{{[0-9]+}} = scf.if
// CHECK: scf.yield %[[NA]],
// CHECK: } else {
// CHECK: scf.yield %[[NB]],
// CHECK: %[[NBEST:[0-9]+]]:3 = scf.if
// CHECK: scf.yield %[[NH]]#{{[0-9]+}},
// CHECK: } else {
// CHECK: scf.yield %arg1,
// CHECK: %[[NT:.*]] = "meta.unary"(%[[NH]]#0) {kind = "tanh"}
// CHECK: return %[[NT]], %[[NBEST]]#0
