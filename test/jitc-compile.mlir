// jitc compile emits the lowered loops, optimized LLVM IR, assembly and
// objects; --cpu makes the output independent of this machine.
// RUN: jitc compile %s --emit mlir | FileCheck %s --check-prefix=MLIR
// RUN: jitc compile %s --emit llvm --cpu x86-64-v3 | FileCheck %s --check-prefix=LLVM
// RUN: jitc compile %s --emit asm --cpu x86-64-v3 | FileCheck %s --check-prefix=ASM
// RUN: jitc compile %s --emit llvm --cpu x86-64 | FileCheck %s --check-prefix=SSE
// RUN: jitc compile %s --emit llvm --cpu x86-64 --target-features=+avx512f,+evex512 | FileCheck %s --check-prefix=AVX512
// RUN: jitc compile %s --emit obj --cpu x86-64-v3 -o %t.o
// RUN: llvm-objdump -t %t.o | FileCheck %s --check-prefix=OBJ
// RUN: not jitc compile %s --cpu no-such-cpu 2>&1 | FileCheck %s --check-prefix=BADCPU
// RUN: not jitc compile %s --target-features=+avx2,fma 2>&1 | FileCheck %s --check-prefix=UNSIGNED
// UNSIGNED: jitc compile: error: code generation failed: target feature 'fma' needs a sign: '+fma' turns it on, '-fma' off
// RUN: not jitc compile %s --target-features=+avx2,,+fma 2>&1 | FileCheck %s --check-prefix=EMPTY
// EMPTY: jitc compile: error: code generation failed: target feature '' is not a feature name: write features as +name,-name (+avx2,-avx512f)
// RUN: not jitc compile %s --target-features='+avx 2' 2>&1 | FileCheck %s --check-prefix=SPACE
// SPACE: jitc compile: error: code generation failed: target feature '+avx 2' is not a feature name

// One kernel: a loop per domain dimension over raw buffers; the outermost
// runs over the [begin, end) part the runtime gives it.
// MLIR: func.func @main_fused_0(%{{.+}}: !llvm.ptr, %[[BEGIN:.+]]: i64, %[[END:.+]]: i64)
// MLIR: scf.for
// MLIR: scf.for
// MLIR: arith.mulf
// MLIR: arith.addf
// MLIR: llvm.store

// The innermost loop walks contiguous memory and is vectorized (8 x f32
// with AVX2).
// LLVM: define void @main_fused_0(ptr
// LLVM: fmul <8 x float>
// LLVM: fadd <8 x float>
// SSE: fmul <4 x float>
// AVX512: fmul <16 x float>
// ASM: main_fused_0:
// ASM: vmulps {{.*}}%ymm
// OBJ: main_fused_0

// BADCPU: jitc compile: error: code generation failed: unknown CPU 'no-such-cpu'; use this machine's

func.func @main(%x: tensor<64x64xf32>, %y: tensor<64x64xf32>) -> tensor<64x64xf32> {
  %p = "meta.binary"(%x, %y) {kind = "mul"} : (tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32>
  %s = "meta.binary"(%p, %x) {kind = "add"} : (tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32>
  return %s : tensor<64x64xf32>
}
