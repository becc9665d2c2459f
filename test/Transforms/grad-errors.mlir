// RUN: not jitc opt %s --split-input-file --meta-grad 2>&1 | FileCheck %s
// RUN: not jitc opt %s --split-input-file --meta-grad=wrt=x 2>&1 | FileCheck %s --check-prefix=WRT
// RUN: not jitc opt %s --split-input-file --meta-grad=function=nowhere 2>&1 | FileCheck %s --check-prefix=MISSING

// What meta-grad cannot differentiate is reported at the op, with what to
// do about it.
// CHECK: grad-errors.mlir:[[@LINE+4]]:8: error: meta-grad: @main: 'scf.for' cannot be differentiated (run meta-unroll (and meta-specialize) first
func.func @main(%x: tensor<4xf32>, %n: index) -> tensor<f32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%a = %x) -> tensor<4xf32> {
    %t = "meta.unary"(%a) {kind = "tanh"} : (tensor<4xf32>) -> tensor<4xf32>
    scf.yield %t : tensor<4xf32>
  }
  %s = "meta.reindex_reduce"(%r) {kind = "add", indices = affine_map<(d0) -> ()>} : (tensor<4xf32>) -> tensor<f32>
  return %s : tensor<f32>
}

// -----

// CHECK: grad-errors.mlir:[[@LINE+2]]:8: error: meta-grad: @main: 'meta.reindex_reduce' has a value of dynamic shape (tensor<?xf32>); meta-grad needs static shapes
func.func @main(%x: tensor<?xf32>) -> tensor<f32> {
  %s = "meta.reindex_reduce"(%x) {kind = "add", indices = affine_map<(d0) -> ()>} : (tensor<?xf32>) -> tensor<f32>
  return %s : tensor<f32>
}

// -----

// CHECK: grad-errors.mlir:[[@LINE+2]]:8: error: meta-grad: @main: 'func.call' cannot be differentiated (run meta-inline first)
func.func @main(%x: tensor<4xf32>) -> tensor<f32> {
  %y = func.call @total(%x) : (tensor<4xf32>) -> tensor<f32>
  return %y : tensor<f32>
}
func.func private @total(%x: tensor<4xf32>) -> tensor<f32> {
  %s = "meta.reindex_reduce"(%x) {kind = "add", indices = affine_map<(d0) -> ()>} : (tensor<4xf32>) -> tensor<f32>
  return %s : tensor<f32>
}

// -----

// The function itself is named when the loss or the arguments are wrong.
// CHECK: grad-errors.mlir:[[@LINE+1]]:1: error: meta-grad: @main: the loss must be a scalar (rank 0) f32 or f64, not [4] of f32
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}

// -----

// CHECK: grad-errors.mlir:[[@LINE+1]]:1: error: meta-grad: @main: it has no f32 or f64 argument to differentiate by
func.func @main(%x: tensor<4xi32>) -> tensor<f32> {
  %c = arith.constant dense<1.0> : tensor<f32>
  return %c : tensor<f32>
}

// -----

// CHECK: grad-errors.mlir:[[@LINE+1]]:1: error: meta-grad: @main: the module has a function @main_grad already; choose another name with name=
func.func @main(%x: tensor<4xf32>) -> tensor<f32> {
  %s = "meta.reindex_reduce"(%x) {kind = "add", indices = affine_map<(d0) -> ()>} : (tensor<4xf32>) -> tensor<f32>
  return %s : tensor<f32>
}
func.func @main_grad() {
  return
}

// WRT: error: meta-grad: @main: wrt must list argument positions (0,2), got 'x'
// MISSING: grad-errors.mlir: error: meta-grad: @nowhere: no such function (the module has main)
