// RUN: jitc opt --list-pipelines | FileCheck %s
// A listed pipeline runs as printed.
// RUN: jitc opt %s --pass-pipeline='builtin.module(meta-verify, meta-unroll, meta-inline, canonicalize, cse, meta-fuse)' | FileCheck %s --check-prefix=FUSED

// CHECK: jitc pipelines:
// CHECK: default
// CHECK-NEXT: builtin.module(meta-verify, meta-unroll, meta-inline, canonicalize, cse, meta-fuse)
// CHECK: fuse
// CHECK-NEXT: builtin.module(meta-batch, meta-fuse{rules=jitc})
// CHECK: fuse-fast
// CHECK-NEXT: builtin.module(meta-fast-math, meta-batch, meta-fuse{rules=jitc})
// CHECK: fuse-jittor
// CHECK-NEXT: builtin.module(meta-fuse)
// CHECK: speculation
// CHECK-NEXT: builtin.module(meta-unroll{max-ops=4096}
// CHECK: entry-guards
// CHECK: llvm
// CHECK: Run one with --pass-pipeline

// FUSED-LABEL: func.func @main
// FUSED: call @main_fused_0
// FUSED: func.func private @main_fused_0
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %e = "meta.unary"(%x) {kind = "exp"} : (tensor<4xf32>) -> tensor<4xf32>
  %n = "meta.unary"(%e) {kind = "neg"} : (tensor<4xf32>) -> tensor<4xf32>
  return %n : tensor<4xf32>
}
