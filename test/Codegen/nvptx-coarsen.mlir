// Element-wise GPU kernels with at least 2^20 points, a multiple of 4,
// give each thread 4 consecutive points (lower::schedule::gpu, rule 5):
// 16-byte loads and stores, a quarter of the threads. Every pointer
// parameter is noalias and 16-byte aligned, which lets the load-store
// vectorizer merge the four accesses, and lets inputs go through the
// read-only (non-coherent) cache.
// RUN: jitc compile --target nvptx --emit ptx %s | FileCheck %s

// CHECK-LABEL: .visible .entry big_fused_0(
// CHECK-NEXT: .param .u64 .ptr .align 16 big_fused_0_param_0,
// CHECK-NEXT: .param .u64 .ptr .align 16 big_fused_0_param_1,
// CHECK: ld.global.nc.v4.b32
// CHECK: ld.global.nc.v4.b32
// CHECK: st.global.v4.b32
// CHECK-NOT: st.global
// CHECK: ret;
func.func @big(%x: tensor<1024x1024xf32>, %y: tensor<1024x1024xf32>) -> tensor<1024x1024xf32> {
  %s = "meta.binary"(%x, %y) {kind = "mul"} : (tensor<1024x1024xf32>, tensor<1024x1024xf32>) -> tensor<1024x1024xf32>
  return %s : tensor<1024x1024xf32>
}

// Fewer points: one per thread.
// CHECK-LABEL: .visible .entry small_fused_0(
// CHECK-NOT: .v4
// CHECK: ld.global.nc.b32
// CHECK-NOT: .v4
// CHECK: st.global.b32
// CHECK-NOT: .v4
// CHECK: ret;
func.func @small(%x: tensor<4096xf32>, %y: tensor<4096xf32>) -> tensor<4096xf32> {
  %s = "meta.binary"(%x, %y) {kind = "mul"} : (tensor<4096xf32>, tensor<4096xf32>) -> tensor<4096xf32>
  return %s : tensor<4096xf32>
}

// Not a multiple of 4 (2^20 + 1 points): one per thread.
// CHECK-LABEL: .visible .entry odd_fused_0(
// CHECK-NOT: .v4
// CHECK: st.global.b32
// CHECK-NOT: .v4
// CHECK: ret;
func.func @odd(%x: tensor<1048577xf32>, %y: tensor<1048577xf32>) -> tensor<1048577xf32> {
  %s = "meta.binary"(%x, %y) {kind = "mul"} : (tensor<1048577xf32>, tensor<1048577xf32>) -> tensor<1048577xf32>
  return %s : tensor<1048577xf32>
}
