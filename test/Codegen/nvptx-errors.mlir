// Errors and notes of `jitc compile --target nvptx`.
// UNSUPPORTED: system-libdevice
// RUN: not jitc compile --emit ptx %s 2>&1 | FileCheck %s --check-prefix=PTX-CPU
// PTX-CPU: jitc compile: error: --emit ptx needs --target nvptx
// RUN: not jitc compile --gpu-arch sm_90 %s 2>&1 | FileCheck %s --check-prefix=ARCH-CPU
// ARCH-CPU: jitc compile: error: --gpu-arch needs --target nvptx
// RUN: not jitc compile --gpu-tiles %s 2>&1 | FileCheck %s --check-prefix=TILES
// TILES: jitc compile: error: --gpu-tiles needs --target nvptx
// RUN: not jitc run --gpu-tiles %s --input 8xf32=1 2>&1 | FileCheck %s --check-prefix=RUN-TILES
// RUN-TILES: jitc run: error: --gpu-tiles needs --backend cuda
// RUN: not jitc bench --gpu-tiles --backend interp %s --input 8xf32=1 2>&1 | FileCheck %s --check-prefix=BENCH-TILES
// BENCH-TILES: jitc bench: error: --gpu-tiles needs --backend cuda
// RUN: not jitc compile --no-gpu-tiles %s 2>&1 | FileCheck %s --check-prefix=NO-TILES
// NO-TILES: jitc compile: error: --no-gpu-tiles needs --target nvptx
// RUN: not jitc run --no-gpu-tiles %s --input 8xf32=1 2>&1 | FileCheck %s --check-prefix=RUN-NO-TILES
// RUN-NO-TILES: jitc run: error: --no-gpu-tiles needs --backend cuda
// RUN: not jitc bench --no-gpu-tiles --backend cpu %s --input 8xf32=1 2>&1 | FileCheck %s --check-prefix=BENCH-NO-TILES
// BENCH-NO-TILES: jitc bench: error: --no-gpu-tiles needs --backend cuda
// RUN: not jitc compile --target nvptx --gpu-tiles --no-gpu-tiles %s 2>&1 | FileCheck %s --check-prefix=BOTH-TILES
// BOTH-TILES: error: the argument '--gpu-tiles' cannot be used with '--no-gpu-tiles'
// RUN: not jitc compile --target nvptx --emit obj %s 2>&1 | FileCheck %s --check-prefix=OBJ
// OBJ: jitc compile: error: --target nvptx emits PTX text (--emit ptx), not objects
// RUN: not jitc compile --target nvptx --cpu x86-64-v3 %s 2>&1 | FileCheck %s --check-prefix=CPU
// CPU: jitc compile: error: --cpu and --target-features are for --target cpu; use --gpu-arch
// RUN: not jitc compile --target nvptx --gpu-arch sm_75 %s 2>&1 | FileCheck %s --check-prefix=ARCH
// ARCH: error: invalid value 'sm_75' for '--gpu-arch <GPU_ARCH>'
// ARCH: [possible values: sm_80, sm_90]

// There is no libm on the GPU: a kernel that needs one is left out with a
// note, and the rest compile.
// RUN: jitc compile --target nvptx --emit ptx %s 2>%t.err | FileCheck %s
// RUN: FileCheck %s --check-prefix=NOTE < %t.err
// RUN: jitc compile --target nvptx --emit ptx --math exact %s 2>&1 >/dev/null | FileCheck %s --check-prefix=EXACT
func.func @sin(%x: tensor<8xf32>) -> tensor<8xf32> {
  %y = "meta.unary"(%x) {kind = "sin"} : (tensor<8xf32>) -> tensor<8xf32>
  return %y : tensor<8xf32>
}
func.func @exp(%x: tensor<8xf32>) -> tensor<8xf32> {
  %y = "meta.unary"(%x) {kind = "exp"} : (tensor<8xf32>) -> tensor<8xf32>
  return %y : tensor<8xf32>
}
func.func @log(%x: tensor<8xf32>) -> tensor<8xf32> {
  %y = "meta.unary"(%x) {kind = "log"} : (tensor<8xf32>) -> tensor<8xf32>
  return %y : tensor<8xf32>
}
// CHECK-NOT: .entry sin_fused_0
// CHECK: .visible .entry exp_fused_0(
// CHECK: .visible .entry log_fused_0(
// NOTE: jitc compile: note: kernel @sin_fused_0 is not compiled: 'sin' on f32 needs libdevice, NVIDIA's math library, which was not found (set JITC_LIBDEVICE to libdevice.10.bc)
// NOTE-NOT: log_fused_0
// EXACT: note: kernel @sin_fused_0 is not compiled
// EXACT: note: kernel @exp_fused_0 is not compiled: 'exp' on f32 needs libdevice, NVIDIA's math library, which was not found (set JITC_LIBDEVICE to libdevice.10.bc) (f32 exp, log, tanh and sigmoid compile with --math fast)
// EXACT: note: kernel @log_fused_0 is not compiled
