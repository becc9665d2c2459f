// Instance norm's statistics: sums over (n, h, w) into a 1x16x1x1 tensor.
// The map's constant indices (0, c, 0, 0) keep each reduction a
// projection, so both sums accumulate in registers (no fill of the output,
// no load-add-store per element), split across threads by channel, and
// the h and w loops run as one loop over the 24x24 plane (schedule rule 5:
// x's offset moves by 24 per h and 1 per w), which LLVM vectorizes with
// no scalar remainder per row of 24 and no division left.
// RUN: jitc compile %s --emit mlir | FileCheck %s --check-prefix=MLIR
// RUN: jitc compile %s --emit llvm --cpu x86-64-v3 | FileCheck %s --check-prefix=LLVM
// RUN: jitc compile %s --emit mlir --math exact | FileCheck %s --check-prefix=EXACT

func.func @main(%x: tensor<4x16x24x24xf32>) -> (tensor<1x16x1x1xf32>, tensor<1x16x1x1xf32>) {
  %sum = "meta.reindex_reduce"(%x) {kind = "add", indices = affine_map<(n, c, h, w) -> (0, c, 0, 0)>}
         : (tensor<4x16x24x24xf32>) -> tensor<1x16x1x1xf32>
  %xx = "meta.binary"(%x, %x) {kind = "mul"} : (tensor<4x16x24x24xf32>, tensor<4x16x24x24xf32>) -> tensor<4x16x24x24xf32>
  %sum2 = "meta.reindex_reduce"(%xx) {kind = "add", indices = affine_map<(n, c, h, w) -> (0, c, 0, 0)>}
          : (tensor<4x16x24x24xf32>) -> tensor<1x16x1x1xf32>
  return %sum, %sum2 : tensor<1x16x1x1xf32>, tensor<1x16x1x1xf32>
}

// The channel loop is the split one; no store comes before the loops.
// MLIR-LABEL: func.func @main_fused_0(
// MLIR-NOT: llvm.store
// MLIR: scf.for %[[C:.*]] = %{{.*}} to %{{.*}} step
// MLIR: scf.for %{{.*}} = %{{.*}} to %c4 step %{{.*}} iter_args(%{{.*}} = %{{.*}}, %{{.*}} = %{{.*}}) -> (f32, f32)
// MLIR: %[[PLANE:.*]] = arith.constant 576 : index
// MLIR: scf.for %[[I:.*]] = %{{.*}} to %[[PLANE]] step %{{.*}} iter_args
// MLIR: arith.remui %[[I]], %c24
// MLIR: arith.divui %[[I]], %c24
// MLIR: llvm.load
// MLIR-NOT: llvm.load
// MLIR: arith.addf {{.*}} fastmath<reassoc> : f32
// MLIR: arith.addf {{.*}} fastmath<reassoc> : f32
// MLIR: scf.yield
// Each sum is stored once per channel, after its loops.
// MLIR-COUNT-2: llvm.store
// MLIR-NOT: llvm.store
// MLIR: return

// LLVM-LABEL: define void @main_fused_0(
// LLVM-NOT: {{udiv|urem}}
// LLVM: vector.body:
// LLVM: load <8 x float>
// LLVM: fadd reassoc <8 x float>
// LLVM-NOT: {{udiv|urem}}
// LLVM: ret void

// Exact: the same registers and plane loop, folded in row-major order.
// EXACT: scf.for %{{.*}} = %{{.*}} to %c576 step
// EXACT-NOT: fastmath
// EXACT: arith.addf %{{.*}}, %{{.*}} : f32
