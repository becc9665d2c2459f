// `jitc opt` in mlir-opt's spelling (single-dash long flags) gives what the
// system's mlir-opt 22 gives, byte for byte, on upstream pipelines.
// RUN: jitc opt %s -split-input-file -pass-pipeline='builtin.module(func.func(canonicalize),cse)' -o %t.jitc
// RUN: %mlir_opt %s -split-input-file -pass-pipeline='builtin.module(func.func(canonicalize),cse)' -o %t.mlir
// RUN: diff %t.jitc %t.mlir
// RUN: jitc opt %s -split-input-file -canonicalize -cse -sccp -loop-invariant-code-motion -inline > %t.jitc2
// RUN: %mlir_opt %s -split-input-file -canonicalize -cse -sccp -loop-invariant-code-motion -inline > %t.mlir2
// RUN: diff %t.jitc2 %t.mlir2
// RUN: jitc opt %s -split-input-file -canonicalize -mlir-print-op-generic > %t.jitc3
// RUN: %mlir_opt %s -split-input-file -canonicalize -mlir-print-op-generic > %t.mlir3
// RUN: diff %t.jitc3 %t.mlir3
// RUN: jitc opt %s -split-input-file -inline -mlir-print-local-scope -verify-each=false -mlir-disable-threading > %t.jitc4
// RUN: %mlir_opt %s -split-input-file -inline -mlir-print-local-scope -verify-each=false -mlir-disable-threading > %t.mlir4
// RUN: diff %t.jitc4 %t.mlir4
// RUN: jitc opt %s -split-input-file -pass-pipeline='builtin.module(func.func(cse,canonicalize{max-iterations=3}),inline,sccp)' -dump-pass-pipeline 2> %t.jitc5 > /dev/null
// RUN: %mlir_opt %s -split-input-file -pass-pipeline='builtin.module(func.func(cse,canonicalize{max-iterations=3}),inline,sccp)' -dump-pass-pipeline 2> %t.mlir5 > /dev/null
// RUN: diff %t.jitc5 %t.mlir5

func.func @folds(%a: i32) -> i32 {
  %c0 = arith.constant 0 : i32
  %c2 = arith.constant 2 : i32
  %b = arith.addi %a, %c0 : i32
  %c = arith.muli %c2, %c2 : i32
  %d = arith.addi %b, %c : i32
  %e = arith.addi %b, %c : i32
  %f = arith.muli %d, %e : i32
  return %f : i32
}

// -----

func.func @loop(%t: tensor<4xf32>, %n: index) -> tensor<4xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %t) -> tensor<4xf32> {
    %k = arith.constant 3 : index
    %d = tensor.dim %acc, %c0 : tensor<4xf32>
    %s = arith.addi %d, %k : index
    %e = tensor.extract %acc[%c0] : tensor<4xf32>
    %v = tensor.insert %e into %acc[%c1] : tensor<4xf32>
    scf.yield %v : tensor<4xf32>
  }
  return %r : tensor<4xf32>
}

// -----

func.func private @callee(%x: i64) -> i64 {
  %c1 = arith.constant 1 : i64
  %y = arith.addi %x, %c1 : i64
  return %y : i64
}
func.func @caller(%x: i64, %flag: i1) -> i64 {
  %y = func.call @callee(%x) : (i64) -> i64
  %z = scf.if %flag -> i64 {
    scf.yield %y : i64
  } else {
    %t = arith.constant true
    %w = scf.if %t -> i64 {
      scf.yield %x : i64
    } else {
      scf.yield %y : i64
    }
    scf.yield %w : i64
  }
  return %z : i64
}
