// A bad pass option is an error about the option, reported before any
// input is read, with no source location (it is not at any op).
// RUN: not jitc opt %s --meta-fuse=fanout-limit=-1 2>&1 | FileCheck %s --check-prefix=FANOUT
// FANOUT: jitc opt: error: invalid pass pipeline: pass 'meta-fuse': option fanout-limit must be a whole number, got '-1'
// FANOUT-NOT: pass-option-errors.mlir:
// RUN: not jitc opt %s --meta-specialize 2>&1 | FileCheck %s --check-prefix=PROFILE
// PROFILE: jitc opt: error: invalid pass pipeline: pass 'meta-specialize' needs profile=...: the profile JSON file to specialize for (write one with `jitc run --profile-out FILE`)
// PROFILE-NOT: pass-option-errors.mlir:
// RUN: not jitc opt %s -pass-pipeline='builtin.module(meta-unroll{max-ops=lots})' 2>&1 | FileCheck %s --check-prefix=PIPELINE
// PIPELINE: jitc opt: error: invalid pass pipeline: pass 'meta-unroll': option max-ops must be a whole number, got 'lots'

func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}
