// Contractions as shared-memory tiles on the GPU (the default;
// `--no-gpu-tiles` turns them off; lower::contract::gpu_tiles): a block of
// 16 x 16 threads per 64 x 64 tile of the output, each thread 4 x 4
// outputs in registers; per chunk of 16 steps of the fold, each thread
// stages 4 elements of each operand from global memory into shared
// memory, a barrier, 16 steps of 8 shared loads and 16 fused
// multiply-adds, a barrier. The convolution reads x through its im2col
// view (padding checked while staging); a matmul too small to fill a block
// keeps one thread per output, and so does every kernel with
// `--no-gpu-tiles` or `--check-bounds`.
// RUN: jitc compile --target nvptx --emit ptx %s | FileCheck %s
// RUN: jitc compile --target nvptx --math exact --emit ptx %s | FileCheck %s --check-prefix=EXACT
// RUN: jitc compile --target nvptx --no-gpu-tiles --emit ptx %s | FileCheck %s --check-prefix=NONE
// RUN: jitc compile --target nvptx --check-bounds --emit ptx %s 2>%t.quiet | FileCheck %s --check-prefix=NONE
// RUN: not grep . %t.quiet
// `--gpu-tiles`, from before tiles were the default, is still taken (hidden).
// RUN: jitc compile --target nvptx --gpu-tiles --emit ptx %s | FileCheck %s
// RUN: jitc compile --target nvptx --gpu-tiles --check-bounds --emit ptx %s 2>%t.err | FileCheck %s --check-prefix=NONE
// RUN: FileCheck %s --check-prefix=CHECKED < %t.err
// CHECKED: jitc compile: note: --gpu-tiles does nothing with --check-bounds: tiled loads are not checked, so contractions keep one thread per output
// RUN: jitc explain %s | FileCheck %s --check-prefix=EXPLAIN
// RUN: jitc explain %examples/mlp_step.mlir | FileCheck %s --check-prefix=MLP

// CHECK-LABEL: .visible .entry matmul_fused_0(
// The shared arrays: 16 steps of 64 + 1 floats each (the extra one keeps
// a chunk staged with the step fastest off one bank).
// CHECK-DAG: .shared .align 16 .b8 matmul_fused_0_tile_shared0[4160];
// CHECK-DAG: .shared .align 16 .b8 matmul_fused_0_tile_shared1[4160];
// Staging: read-only global loads, stores to shared memory, a barrier.
// CHECK: ld.global.nc.b32
// CHECK: st.shared.b32
// CHECK: bar.sync 0;
// The chunk's steps: loads of both tiles and fused multiply-adds.
// CHECK-COUNT-4: ld.shared.b32
// CHECK: fma.rn.f32
// CHECK: bar.sync 0;
// The 4 x 4 outputs, stored where they are inside the result.
// CHECK-COUNT-16: st.global.b32
// CHECK: ret;

// CHECK-LABEL: .visible .entry conv_fused_0(
// CHECK-DAG: .shared .align 16 .b8 conv_fused_0_tile_shared0[4160];
// CHECK-DAG: .shared .align 16 .b8 conv_fused_0_tile_shared1[4160];
// CHECK: ld.global.nc.b32
// CHECK: bar.sync 0;
// CHECK: fma.rn.f32
// CHECK: ret;

// CHECK-LABEL: .visible .entry small_fused_0(
// CHECK-NOT: bar.sync
// CHECK: ret;

// Exact math: a multiply, then an add, in the interpreter's order.
// EXACT-LABEL: .visible .entry matmul_fused_0(
// EXACT-NOT: fma.rn
// EXACT: mul.rn.f32
// EXACT-NOT: fma.rn
// EXACT: add.rn.f32
// EXACT-NOT: fma.rn
// EXACT: ret;

// NONE-NOT: _tile_shared0
// NONE: .visible .entry matmul_fused_0(

// EXPLAIN: contractions on the cuda backend as shared-memory tiles (--no-gpu-tiles makes none):
// EXPLAIN-NEXT: @matmul_fused_0: rows d0 (1024) x columns d1 (1024), folding d2 (1024) in chunks of 16: tiles of 64 x 64 in blocks of 256 threads, 4 x 4 outputs each, 256 blocks, 8320 bytes of shared memory
// EXPLAIN-NEXT: @conv_fused_0: rows d1 (64) x columns d0, d2, d3 (25088), folding d4, d5, d6 (576) in chunks of 16: tiles of 64 x 64 in blocks of 256 threads, 4 x 4 outputs each, 392 blocks, 8320 bytes of shared memory
// EXPLAIN-NOT: small_fused

// The MLP step's five contractions tile, the small ones in smaller tiles
// so that the launch still has blocks for the GPU's SMs.
// MLP: contractions on the cuda backend as shared-memory tiles
// MLP-NEXT: @main_fused_0: rows d0 (256) x columns d1 (512), folding d2 (784) in chunks of 16: tiles of 16 x 32 in blocks of 256 threads, 1 x 2 outputs each, 256 blocks
// MLP-NEXT: @main_fused_1: rows d0 (256) x columns d1 (10), folding d2 (512)
// MLP-NEXT: @main_fused_7: rows d0 (512) x columns d1 (10), folding d2 (256)
// MLP-NEXT: @main_fused_8: rows d0 (256) x columns d1 (512), folding d2 (10)
// MLP-NEXT: @main_fused_11: rows d0 (784) x columns d1 (512), folding d2 (256) in chunks of 16: tiles of 32 x 32 in blocks of 256 threads, 2 x 2 outputs each, 400 blocks

func.func @matmul(%a: tensor<1024x1024xf32>, %b: tensor<1024x1024xf32>) -> tensor<1024x1024xf32> {
  %ab = "meta.reindex"(%a) {indices = affine_map<(i, j, k) -> (i, k)>} : (tensor<1024x1024xf32>) -> tensor<1024x1024x1024xf32>
  %bb = "meta.reindex"(%b) {indices = affine_map<(i, j, k) -> (k, j)>} : (tensor<1024x1024xf32>) -> tensor<1024x1024x1024xf32>
  %p = "meta.binary"(%ab, %bb) {kind = "mul"} : (tensor<1024x1024x1024xf32>, tensor<1024x1024x1024xf32>) -> tensor<1024x1024x1024xf32>
  %c = "meta.reindex_reduce"(%p) {kind = "add", indices = affine_map<(i, j, k) -> (i, j)>} : (tensor<1024x1024x1024xf32>) -> tensor<1024x1024xf32>
  return %c : tensor<1024x1024xf32>
}

func.func @conv(%x: tensor<8x64x56x56xf32>, %w: tensor<64x64x3x3xf32>) -> tensor<8x64x56x56xf32> {
  %xr = "meta.reindex"(%x) {indices = affine_map<(n, o, h, w, i, kh, kw) -> (n, i, h + kh - 1, w + kw - 1)>} : (tensor<8x64x56x56xf32>) -> tensor<8x64x56x56x64x3x3xf32>
  %wr = "meta.reindex"(%w) {indices = affine_map<(n, o, h, w, i, kh, kw) -> (o, i, kh, kw)>} : (tensor<64x64x3x3xf32>) -> tensor<8x64x56x56x64x3x3xf32>
  %p = "meta.binary"(%xr, %wr) {kind = "mul"} : (tensor<8x64x56x56x64x3x3xf32>, tensor<8x64x56x56x64x3x3xf32>) -> tensor<8x64x56x56x64x3x3xf32>
  %y = "meta.reindex_reduce"(%p) {kind = "add", indices = affine_map<(n, o, h, w, i, kh, kw) -> (n, o, h, w)>} : (tensor<8x64x56x56x64x3x3xf32>) -> tensor<8x64x56x56xf32>
  return %y : tensor<8x64x56x56xf32>
}

func.func @small(%a: tensor<4x3xf32>, %b: tensor<3x5xf32>) -> tensor<4x5xf32> {
  %ab = "meta.reindex"(%a) {indices = affine_map<(i, j, k) -> (i, k)>} : (tensor<4x3xf32>) -> tensor<4x5x3xf32>
  %bb = "meta.reindex"(%b) {indices = affine_map<(i, j, k) -> (k, j)>} : (tensor<3x5xf32>) -> tensor<4x5x3xf32>
  %p = "meta.binary"(%ab, %bb) {kind = "mul"} : (tensor<4x5x3xf32>, tensor<4x5x3xf32>) -> tensor<4x5x3xf32>
  %c = "meta.reindex_reduce"(%p) {kind = "add", indices = affine_map<(i, j, k) -> (i, j)>} : (tensor<4x5x3xf32>) -> tensor<4x5xf32>
  return %c : tensor<4x5xf32>
}
