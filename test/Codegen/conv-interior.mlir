// A padded stencil with the loops of Listing 1's convolution (Jittor paper,
// padding 1), summing x - p instead of x * p: a product would make it a
// contraction, which runs as register tiles instead (contract.mlir). The
// loop nest checks bounds only outside the interior. The loop order puts w innermost (x and
// y are contiguous in it), and the w loop is peeled: the interior range,
// where h + kh - 1 and w + kw - 1 are inside x, is computed from the outer
// indices; the edges before and after it keep the checks and select the
// padding value; the interior loads x directly and is vectorized.
// RUN: jitc compile %s --emit mlir | FileCheck %s --check-prefix=MLIR
// RUN: jitc compile %s --emit llvm --cpu x86-64-v3 | FileCheck %s --check-prefix=LLVM
// RUN: jitc compile %s --emit asm --cpu x86-64-v3 | FileCheck %s --check-prefix=ASM

// The interior bounds: ceil/floor divisions of the outer indices.
// MLIR-LABEL: func.func @main_fused_0(
// MLIR: arith.ceildivsi
// MLIR: arith.floordivsi
// The leading edge: checked.
// MLIR: scf.for %{{.+}} = %{{.+}} to %[[LOW:.+]] step
// MLIR: arith.cmpi sge
// MLIR: arith.select
// MLIR: llvm.load
// MLIR: arith.select
// MLIR: arith.subf
// The interior: no comparison, no select before the subtraction.
// MLIR: scf.for %{{.+}} = %[[LOW]] to %[[HIGH:.+]] step
// MLIR-NOT: arith.cmpi
// MLIR-NOT: arith.select
// MLIR: arith.subf
// MLIR: arith.addf
// MLIR: llvm.store
// The trailing edge: checked again.
// MLIR: scf.for %{{.+}} = %[[HIGH]] to
// MLIR: arith.cmpi sge
// MLIR: arith.select

// After O3 the interior is a vector loop of plain loads, subtractions
// and adds.
// LLVM-LABEL: define void @main_fused_0(
// LLVM: vector.body{{[0-9]*}}:
// LLVM-NOT: select
// LLVM: load <8 x float>
// LLVM-NOT: select
// LLVM: fsub <8 x float>
// LLVM-NOT: select
// LLVM: fadd <8 x float>
// LLVM-NOT: select
// LLVM: store <8 x float>

// ASM-LABEL: main_fused_0:
// ASM: vsubps {{.*}}%ymm
// ASM: vaddps {{.*}}%ymm

func.func @main(%x: tensor<1x4x32x32xf32>, %p: tensor<8x4x3x3xf32>) -> tensor<1x8x32x32xf32> {
  %xx = "meta.reindex"(%x) {
          indices = affine_map<(n, o, h, w, i, kh, kw) -> (n, i, h + kh - 1, w + kw - 1)>,
          overflow_value = 0.0 : f32}
        : (tensor<1x4x32x32xf32>) -> tensor<1x8x32x32x4x3x3xf32>
  %pp = "meta.reindex"(%p) {indices = affine_map<(n, o, h, w, i, kh, kw) -> (o, i, kh, kw)>}
        : (tensor<8x4x3x3xf32>) -> tensor<1x8x32x32x4x3x3xf32>
  %yy = "meta.binary"(%xx, %pp) {kind = "sub"}
        : (tensor<1x8x32x32x4x3x3xf32>, tensor<1x8x32x32x4x3x3xf32>) -> tensor<1x8x32x32x4x3x3xf32>
  %y = "meta.reindex_reduce"(%yy) {kind = "add", indices = affine_map<(n, o, h, w, i, kh, kw) -> (n, o, h, w)>}
       : (tensor<1x8x32x32x4x3x3xf32>) -> tensor<1x8x32x32xf32>
  return %y : tensor<1x8x32x32xf32>
}
