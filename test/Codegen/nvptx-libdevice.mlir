// With NVIDIA's libdevice (JITC_LIBDEVICE; here the one in the set-up's
// .venv, from PyPI's nvidia-cuda-nvcc-cu12), math that needs a math
// library compiles for the GPU: the kernels call libdevice's functions
// (`__nv_sinf`, `__nv_erff`, `__nv_powf`, `__nv_cos`, `__nv_tanh`), which
// are linked as bitcode, made internal and inlined by default<O3>, so the
// PTX calls nothing but libdevice's own slow path of the f64 argument
// reduction, and ptxas assembles it. Without libdevice the same kernels
// are left to the interpreter, saying why. (On a GPU, the sweeps of
// runtime/tests/cuda.rs hold sin, cos, erf and the f64 functions to libm;
// pow is not swept.)
// RUN: env JITC_LIBDEVICE=%libdevice jitc compile --target nvptx --emit ptx %s -o %t.ptx --timings 2> %t.err
// RUN: FileCheck %s < %t.ptx
// RUN: FileCheck %s --check-prefix=TIMINGS < %t.err
// RUN: %ptxas -arch=sm_80 %t.ptx -o %t.cubin
// RUN: env JITC_LIBDEVICE=%libdevice jitc compile --target nvptx --gpu-arch sm_90 --math exact --emit ptx %s -o %t.90.ptx
// RUN: %ptxas -arch=sm_90 %t.90.ptx -o %t.90.cubin
// RUN: env JITC_LIBDEVICE=%t.missing.bc jitc compile --target nvptx --emit ptx %s 2>&1 >/dev/null | FileCheck %s --check-prefix=MISSING

func.func @main(%x: tensor<256xf32>, %d: tensor<256xf64>) -> (tensor<256xf32>, tensor<256xf64>) {
  %s = "meta.unary"(%x) {kind = "sin"} : (tensor<256xf32>) -> tensor<256xf32>
  %e = "meta.unary"(%s) {kind = "erf"} : (tensor<256xf32>) -> tensor<256xf32>
  %p = "meta.binary"(%e, %x) {kind = "pow"} : (tensor<256xf32>, tensor<256xf32>) -> tensor<256xf32>
  %c = "meta.unary"(%d) {kind = "cos"} : (tensor<256xf64>) -> tensor<256xf64>
  %t = "meta.unary"(%c) {kind = "tanh"} : (tensor<256xf64>) -> tensor<256xf64>
  return %p, %t : tensor<256xf32>, tensor<256xf64>
}

// CHECK-NOT: __nv_
// CHECK: .visible .entry main_fused_0(
// CHECK: .visible .entry main_fused_1(
// CHECK-NOT: __nv_

// TIMINGS: link libdevice

// MISSING: note: kernel @main_fused_0 is not compiled: 'sin' on f32 needs libdevice, NVIDIA's math library, which was not found (set JITC_LIBDEVICE to libdevice.10.bc)
// MISSING: note: kernel @main_fused_1 is not compiled: 'cos' on f64 needs libdevice
