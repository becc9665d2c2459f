// RUN: jitc opt --list-passes | FileCheck %s

// CHECK: --meta-cse
// CHECK: --meta-dce
// CHECK: --meta-inline
// CHECK: --meta-refine
// CHECK: --meta-specialize
// CHECK-NEXT: profile=<value>  the profile JSON file to specialize for (write one with `jitc run --profile-out FILE`)
// CHECK: --meta-unroll
// CHECK-NEXT: max-ops=<value>
// CHECK: --meta-verify
// CHECK: Upstream MLIR 22 passes
