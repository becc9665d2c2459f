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

// Values the traces read at one op, both computed after the only branch
// (whose ways run the same ops next): no branch between them and the
// reader can pass on the one each trace reads, and no one variable holds
// both (merge-values.mlir has the picks that merge).
func.func @f_0(%x: tensor<4xf32>, %c: tensor<i1>) -> tensor<4xf32> attributes {meta.trace = "f"} {
  "meta.guard"(%c) {id = 1 : i64, reason = "c goes true", meta.decision} : (tensor<i1>) -> () loc("site 201")
  %a = "meta.unary"(%x) {kind = "exp"} : (tensor<4xf32>) -> tensor<4xf32> loc("site 202")
  %b = "meta.unary"(%x) {kind = "neg"} : (tensor<4xf32>) -> tensor<4xf32> loc("site 203")
  // expected-error @unknown {{meta-merge: the traces of @f read different values here in a way one graph cannot merge}}
  %t = "meta.unary"(%a) {kind = "tanh"} : (tensor<4xf32>) -> tensor<4xf32> loc("site 205")
  return %t : tensor<4xf32>
}
func.func @f_1(%x: tensor<4xf32>, %c: tensor<i1>) -> tensor<4xf32> attributes {meta.trace = "f"} {
  %n = "meta.unary"(%c) {kind = "not", meta.decision} : (tensor<i1>) -> tensor<i1> loc("site 201")
  "meta.guard"(%n) {id = 1 : i64, reason = "c goes false", meta.decision} : (tensor<i1>) -> () loc("site 201")
  %a = "meta.unary"(%x) {kind = "exp"} : (tensor<4xf32>) -> tensor<4xf32> loc("site 202")
  %b = "meta.unary"(%x) {kind = "neg"} : (tensor<4xf32>) -> tensor<4xf32> loc("site 203")
  %t = "meta.unary"(%b) {kind = "tanh"} : (tensor<4xf32>) -> tensor<4xf32> loc("site 205")
  return %t : tensor<4xf32>
}

// -----

// A trace that runs a value's producer after the op another trace reads
// it at: the traces differ without a branch between them (an error, not a crash
// of the way nodes' search, which looks only before the reader).
func.func @f_0(%x: tensor<4xf32>, %c: tensor<i1>) -> tensor<4xf32> attributes {meta.trace = "f"} {
  %a = "meta.unary"(%x) {kind = "exp"} : (tensor<4xf32>) -> tensor<4xf32> loc("site 231")
  %q = "meta.unary"(%x) {kind = "neg"} : (tensor<4xf32>) -> tensor<4xf32> loc("site 232")
  "meta.guard"(%c) {id = 1 : i64, reason = "c goes true", meta.decision} : (tensor<i1>) -> () loc("site 233")
  %t = "meta.unary"(%a) {kind = "tanh"} : (tensor<4xf32>) -> tensor<4xf32> loc("site 234")
  return %t : tensor<4xf32>
}
func.func @f_1(%x: tensor<4xf32>, %c: tensor<i1>) -> tensor<4xf32> attributes {meta.trace = "f"} {
  %a = "meta.unary"(%x) {kind = "exp"} : (tensor<4xf32>) -> tensor<4xf32> loc("site 231")
  %q = "meta.unary"(%x) {kind = "neg"} : (tensor<4xf32>) -> tensor<4xf32> loc("site 232")
  %n = "meta.unary"(%c) {kind = "not", meta.decision} : (tensor<i1>) -> tensor<i1> loc("site 233")
  "meta.guard"(%n) {id = 1 : i64, reason = "c goes false", meta.decision} : (tensor<i1>) -> () loc("site 233")
  %t = "meta.unary"(%q) {kind = "tanh"} : (tensor<4xf32>) -> tensor<4xf32> loc("site 234")
  return %t : tensor<4xf32>
}
func.func @f_2(%x: tensor<4xf32>, %c: tensor<i1>) -> tensor<4xf32> attributes {meta.trace = "f"} {
  // expected-error @unknown {{meta-merge: the traces of @f differ after this op without a branch between them}}
  %a = "meta.unary"(%x) {kind = "exp"} : (tensor<4xf32>) -> tensor<4xf32> loc("site 231")
  "meta.guard"(%c) {id = 1 : i64, reason = "c goes true", meta.decision} : (tensor<i1>) -> () loc("site 233")
  %t = "meta.unary"(%a) {kind = "tanh"} : (tensor<4xf32>) -> tensor<4xf32> loc("site 234")
  %q = "meta.unary"(%x) {kind = "neg"} : (tensor<4xf32>) -> tensor<4xf32> loc("site 232")
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

// A trace with a second block (a branch to it): not straight-line code,
// refused before any op of it is merged.
// expected-error @+1 {{meta-merge: the traces of @f hold more than one block; a trace is straight-line code}}
func.func @f_0(%x: tensor<4xf32>) -> tensor<4xf32> attributes {meta.trace = "f"} {
  cf.br ^bb1
^bb1:
  return %x : tensor<4xf32>
}
