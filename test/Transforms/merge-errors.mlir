// meta-merge refuses traces it cannot merge into one graph, in one
// sentence at the op where they part. (The ops of two traces are one node
// where their locations agree: here name locations, `loc("site 12")`,
// which are in no file, so the errors there are expected `@unknown`.)
// RUN: jitc opt %s --split-input-file --verify-diagnostics --meta-merge
// RUN: not jitc opt %s --split-input-file --meta-merge="function=g" 2>&1 | FileCheck %s --check-prefix=NONE
// NONE: error: meta-merge: no function carries meta.trace = "g"

// Two traces that run different ops with no branch before them.
func.func @f_0(%x: tensor<4xf32>) -> tensor<4xf32> attributes {meta.trace = "f"} {
  // expected-error @unknown {{meta-merge: the traces of @f begin with different ops, before any branch}}
  %e = "meta.unary"(%x) {kind = "exp"} : (tensor<4xf32>) -> tensor<4xf32> loc("site 12")
  return %e : tensor<4xf32>
}
func.func @f_1(%x: tensor<4xf32>) -> tensor<4xf32> attributes {meta.trace = "f"} {
  %e = "meta.unary"(%x) {kind = "neg"} : (tensor<4xf32>) -> tensor<4xf32> loc("site 12")
  return %e : tensor<4xf32>
}

// -----

// They part after an op that is not a branch.
func.func @f_0(%x: tensor<4xf32>) -> tensor<4xf32> attributes {meta.trace = "f"} {
  // expected-error @unknown {{meta-merge: the traces of @f differ after this op without a branch between them}}
  %e = "meta.unary"(%x) {kind = "exp"} : (tensor<4xf32>) -> tensor<4xf32> loc("site 25")
  %t = "meta.unary"(%e) {kind = "tanh"} : (tensor<4xf32>) -> tensor<4xf32> loc("site 26")
  return %t : tensor<4xf32>
}
func.func @f_1(%x: tensor<4xf32>) -> tensor<4xf32> attributes {meta.trace = "f"} {
  %e = "meta.unary"(%x) {kind = "exp"} : (tensor<4xf32>) -> tensor<4xf32> loc("site 25")
  %n = "meta.unary"(%e) {kind = "neg"} : (tensor<4xf32>) -> tensor<4xf32> loc("site 31")
  return %n : tensor<4xf32>
}

// -----

// Traces of one function have one type.
func.func @f_0(%x: tensor<4xf32>) -> tensor<4xf32> attributes {meta.trace = "f"} {
  return %x : tensor<4xf32>
}
// expected-error @+1 {{meta-merge: the traces of @f have different function types}}
func.func @f_1(%x: tensor<8xf32>) -> tensor<8xf32> attributes {meta.trace = "f"} {
  return %x : tensor<8xf32>
}

// -----

// A trace is straight-line code.
func.func @f_0(%x: tensor<4xf32>, %b: i1) -> tensor<4xf32> attributes {meta.trace = "f"} {
  // expected-error @+1 {{meta-merge: the traces of @f hold an op with regions; a trace is straight-line code}}
  %r = scf.if %b -> tensor<4xf32> {
    scf.yield %x : tensor<4xf32>
  } else {
    scf.yield %x : tensor<4xf32>
  }
  return %r : tensor<4xf32>
}

// -----

// The merged function's name is taken.
func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}
// expected-error @+1 {{meta-merge: the traces of @f cannot be merged: @f already exists}}
func.func @f_0(%x: tensor<4xf32>) -> tensor<4xf32> attributes {meta.trace = "f"} {
  return %x : tensor<4xf32>
}

// -----

// A branch taken both ways with no op of its own after it: the traces
// differ only in what a later op reads.
func.func @f_0(%x: tensor<4xf32>, %c: tensor<i1>) -> tensor<4xf32> attributes {meta.trace = "f"} {
  %a = "meta.unary"(%x) {kind = "exp"} : (tensor<4xf32>) -> tensor<4xf32> loc("site 75")
  %b = "meta.unary"(%x) {kind = "neg"} : (tensor<4xf32>) -> tensor<4xf32> loc("site 76")
  // expected-error @unknown {{meta-merge: the traces of @f took this branch both ways without running different ops after it}}
  "meta.guard"(%c) {id = 1 : i64, reason = "branch goes true", meta.decision} : (tensor<i1>) -> () loc("site 78")
  %t = "meta.unary"(%a) {kind = "tanh"} : (tensor<4xf32>) -> tensor<4xf32> loc("site 79")
  return %t : tensor<4xf32>
}
func.func @f_1(%x: tensor<4xf32>, %c: tensor<i1>) -> tensor<4xf32> attributes {meta.trace = "f"} {
  %a = "meta.unary"(%x) {kind = "exp"} : (tensor<4xf32>) -> tensor<4xf32> loc("site 75")
  %b = "meta.unary"(%x) {kind = "neg"} : (tensor<4xf32>) -> tensor<4xf32> loc("site 76")
  %n = "meta.unary"(%c) {kind = "not", meta.decision} : (tensor<i1>) -> tensor<i1> loc("site 78")
  "meta.guard"(%n) {id = 1 : i64, reason = "branch goes false", meta.decision} : (tensor<i1>) -> () loc("site 78")
  %t = "meta.unary"(%b) {kind = "tanh"} : (tensor<4xf32>) -> tensor<4xf32> loc("site 79")
  return %t : tensor<4xf32>
}

// -----

// An op that reads a value one trace computed before another trace's
// value it reads there: no one variable holds both.
func.func @f_0(%x: tensor<4xf32>, %c: tensor<i1>) -> tensor<4xf32> attributes {meta.trace = "f"} {
  %a = "meta.unary"(%x) {kind = "exp"} : (tensor<4xf32>) -> tensor<4xf32> loc("site 96")
  %b = "meta.unary"(%x) {kind = "neg"} : (tensor<4xf32>) -> tensor<4xf32> loc("site 97")
  "meta.guard"(%c) {id = 1 : i64, reason = "branch goes true", meta.decision} : (tensor<i1>) -> () loc("site 98")
  %s = "meta.unary"(%x) {kind = "sin"} : (tensor<4xf32>) -> tensor<4xf32> loc("site 99")
  // expected-error @unknown {{meta-merge: the traces of @f read different values here in a way one graph cannot merge}}
  %t = "meta.binary"(%a, %s) {kind = "add"} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32> loc("site 101")
  return %t : tensor<4xf32>
}
func.func @f_1(%x: tensor<4xf32>, %c: tensor<i1>) -> tensor<4xf32> attributes {meta.trace = "f"} {
  %a = "meta.unary"(%x) {kind = "exp"} : (tensor<4xf32>) -> tensor<4xf32> loc("site 96")
  %b = "meta.unary"(%x) {kind = "neg"} : (tensor<4xf32>) -> tensor<4xf32> loc("site 97")
  %n = "meta.unary"(%c) {kind = "not", meta.decision} : (tensor<i1>) -> tensor<i1> loc("site 98")
  "meta.guard"(%n) {id = 1 : i64, reason = "branch goes false", meta.decision} : (tensor<i1>) -> () loc("site 98")
  %s = "meta.unary"(%x) {kind = "cos"} : (tensor<4xf32>) -> tensor<4xf32> loc("site 109")
  %t = "meta.binary"(%b, %s) {kind = "add"} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32> loc("site 101")
  return %t : tensor<4xf32>
}


// -----

// A branch taken the same way by two traces that then run different ops:
// two ops the frontend should have told apart share a location.
func.func @f_0(%x: tensor<4xf32>, %c: tensor<i1>) -> tensor<4xf32> attributes {meta.trace = "f"} {
  // expected-error @unknown {{meta-merge: the traces of @f took this branch the same way and then ran different ops}}
  "meta.guard"(%c) {id = 1 : i64, reason = "branch goes true", meta.decision} : (tensor<i1>) -> () loc("site 121")
  %e = "meta.unary"(%x) {kind = "exp"} : (tensor<4xf32>) -> tensor<4xf32> loc("site 122")
  return %e : tensor<4xf32>
}
func.func @f_1(%x: tensor<4xf32>, %c: tensor<i1>) -> tensor<4xf32> attributes {meta.trace = "f"} {
  "meta.guard"(%c) {id = 1 : i64, reason = "branch goes true", meta.decision} : (tensor<i1>) -> () loc("site 121")
  %n = "meta.unary"(%x) {kind = "neg"} : (tensor<4xf32>) -> tensor<4xf32> loc("site 127")
  return %n : tensor<4xf32>
}

// -----

// Two results of one op read by the same op in two traces: no one
// variable holds both.
func.func @f_0(%x: tensor<4xi32>, %c: tensor<i1>) -> tensor<4xi32> attributes {meta.trace = "f"} {
  %lo, %hi = arith.mulsi_extended %x, %x : tensor<4xi32> loc("site 136")
  "meta.guard"(%c) {id = 1 : i64, reason = "t", meta.decision} : (tensor<i1>) -> () loc("site 137")
  %a = arith.addi %x, %x : tensor<4xi32> loc("site 138")
  // expected-error @unknown {{meta-merge: the traces of @f read different values here in a way one graph cannot merge}}
  %n = arith.subi %lo, %a : tensor<4xi32> loc("site 140")
  return %n : tensor<4xi32>
}
func.func @f_1(%x: tensor<4xi32>, %c: tensor<i1>) -> tensor<4xi32> attributes {meta.trace = "f"} {
  %lo, %hi = arith.mulsi_extended %x, %x : tensor<4xi32> loc("site 136")
  %nc = "meta.unary"(%c) {kind = "not", meta.decision} : (tensor<i1>) -> tensor<i1> loc("site 137")
  "meta.guard"(%nc) {id = 1 : i64, reason = "f", meta.decision} : (tensor<i1>) -> () loc("site 137")
  %a = arith.muli %x, %x : tensor<4xi32> loc("site 147")
  %n = arith.subi %hi, %a : tensor<4xi32> loc("site 140")
  return %n : tensor<4xi32>
}
