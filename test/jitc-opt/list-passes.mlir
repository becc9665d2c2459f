// RUN: jitc opt --list-passes | FileCheck %s

// CHECK: --meta-cse
// CHECK: --meta-dce
// CHECK: --meta-verify
// CHECK: Upstream MLIR 22 passes
