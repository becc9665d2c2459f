// The sigmoid kernel's inner loop is vectorized: exp is the straight-line
// polynomial (no libm call), so the whole body runs on 8 x f32 (AVX2) or
// 16 x f32 (AVX-512). exp rounds x log2(e) to the nearest integer n by
// adding 1.5 * 2^23 (0x4168000000000000 as LLVM prints the float), whose
// bits less the shift's are n: no rounding instruction and no conversion.
// With AVX-512, exp's 2^n is one llvm.ldexp
// (vscalefps); without, two multiplies by exponent fields. With --math
// exact, exp stays a libm call per element (LLVM scalarizes
// llvm.exp.v8f32 into expf calls).
// RUN: jitc compile %s --emit llvm --cpu x86-64-v3 | FileCheck %s --check-prefix=LLVM
// RUN: jitc compile %s --emit asm --cpu x86-64-v3 | FileCheck %s --check-prefix=ASM
// RUN: jitc compile %s --emit asm --cpu x86-64 --target-features=+avx512f,+evex512 | FileCheck %s --check-prefix=AVX512
// RUN: jitc compile %s --emit asm --cpu x86-64-v3 --math exact | FileCheck %s --check-prefix=LIBM
// RUN: jitc compile %s --emit asm --cpu x86-64-v3 | FileCheck %s --check-prefix=NOSCALEF

// The loop is interleaved (`lower::interleave`): two vectors of 8 per
// iteration, two independent chains of the polynomial, each step twice.
// LLVM-LABEL: define void @main_fused_0(
// LLVM-NOT: call {{.*}}@expf
// LLVM: vector.body:
// LLVM: load <8 x float>
// LLVM-NEXT: load <8 x float>
// LLVM-NOT: @llvm.floor
// LLVM: [[A:%[0-9]+]] = fadd contract <8 x float> {{%[0-9]+}}, splat (float 0x4168000000000000)
// LLVM-NEXT: [[B:%[0-9]+]] = fadd contract <8 x float> {{%[0-9]+}}, splat (float 0x4168000000000000)
// LLVM-NEXT: fadd <8 x float> [[A]], splat (float 0xC168000000000000)
// LLVM-NEXT: fadd <8 x float> [[B]], splat (float 0xC168000000000000)
// LLVM-NEXT: [[IA:%[0-9]+]] = bitcast <8 x float> [[A]] to <8 x i32>
// LLVM-NEXT: [[IB:%[0-9]+]] = bitcast <8 x float> [[B]] to <8 x i32>
// LLVM-NEXT: add <8 x i32> [[IA]], splat (i32 -1262485504)
// LLVM-NEXT: add <8 x i32> [[IB]], splat (i32 -1262485504)
// LLVM: fdiv <8 x float>
// LLVM-NEXT: fdiv <8 x float>
// LLVM: store <8 x float>
// LLVM-NEXT: store <8 x float>
// LLVM-NOT: call {{.*}}@expf
// LLVM: ret void

// ASM-LABEL: main_fused_0:
// ASM-NOT: call
// ASM-NOT: vroundps
// ASM-NOT: vcvttps2dq
// ASM: vfmadd{{.*}}%ymm
// ASM: vdivps {{.*}}%ymm
// ASM-NOT: call
// ASM: retq

// NOSCALEF-NOT: vscalef

// AVX512-LABEL: main_fused_0:
// AVX512-NOT: vrndscaleps
// AVX512: vscalefps {{.*}}%zmm
// AVX512: vdivps {{.*}}%zmm

// LIBM: movabsq $expf
// LIBM: callq *

func.func @main(%x: tensor<4096xf32>) -> tensor<4096xf32> {
  %e = "meta.unary"(%x) {kind = "sigmoid"} : (tensor<4096xf32>) -> tensor<4096xf32>
  return %e : tensor<4096xf32>
}
