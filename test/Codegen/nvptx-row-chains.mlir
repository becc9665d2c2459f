// GPU row chains (lower::rows::chain_rows_gpu and
// lower::gpu_rows): kernels that share their rows run as one launch of
// one thread block per row, the values only they read in shared memory.
// Softmax over 1024 rows of 1024 is three kernels (the row maxima; the
// exponentials with their row sums; the division); chained, block r runs
// row r of each, a barrier between them, the exponentials' row (4 KiB)
// and the row's maximum and sum in shared memory, never in global memory.
// RUN: jitc compile --target nvptx --emit ptx %s | FileCheck %s
// `--gpu-row-chains`, which turned them on before they were the default,
// is still accepted and changes nothing.
// RUN: jitc compile --target nvptx --emit ptx --gpu-row-chains %s | FileCheck %s
// None with --jittor-rules, with exact math (no reassociating block
// reductions) or with bounds checks, as on the CPU.
// RUN: jitc compile --target nvptx --emit ptx --jittor-rules %s | FileCheck %s --check-prefix=OFF
// RUN: jitc compile --target nvptx --emit ptx --math exact %s | FileCheck %s --check-prefix=OFF
// RUN: jitc compile --target nvptx --emit ptx --check-bounds %s | FileCheck %s --check-prefix=OFF
// `jitc explain` lists the GPU's chains after the CPU's; from standard
// input too, which it reads once for all its sections (it once read it
// again for each, found it empty, and left them out).
// RUN: jitc explain %s | FileCheck %s --check-prefix=EXPLAIN
// RUN: jitc explain - --host < %s | FileCheck %s --check-prefixes=EXPLAIN,HOST
// EXPLAIN: row chains on the cpu backend
// EXPLAIN: row chains on the cuda backend (one launch, a thread block per row; fast math; --jittor-rules makes none):
// EXPLAIN-NEXT: @softmax_fused_0_rows in @softmax runs @softmax_fused_0, @softmax_fused_1, @softmax_fused_2 on each of its 1024 rows in a block of its own: rows of 4104 bytes stay in shared memory
// EXPLAIN-NOT: @few_rows
// HOST: host code on the cpu backend:
// HOST-NEXT: @few_rows: native (host plan)
// HOST-NEXT: @softmax: native (host plan)

func.func @softmax(%x: tensor<1024x1024xf32>) -> tensor<1024x1024xf32> {
  %max = "meta.reindex_reduce"(%x) {kind = "max", indices = affine_map<(i, j) -> (i)>} : (tensor<1024x1024xf32>) -> tensor<1024xf32>
  %max_b = "meta.reindex"(%max) {indices = affine_map<(i, j) -> (i)>} : (tensor<1024xf32>) -> tensor<1024x1024xf32>
  %s = "meta.binary"(%x, %max_b) {kind = "sub"} : (tensor<1024x1024xf32>, tensor<1024x1024xf32>) -> tensor<1024x1024xf32>
  %e = "meta.unary"(%s) {kind = "exp"} : (tensor<1024x1024xf32>) -> tensor<1024x1024xf32>
  %sum = "meta.reindex_reduce"(%e) {kind = "add", indices = affine_map<(i, j) -> (i)>} : (tensor<1024x1024xf32>) -> tensor<1024xf32>
  %sum_b = "meta.reindex"(%sum) {indices = affine_map<(i, j) -> (i)>} : (tensor<1024xf32>) -> tensor<1024x1024xf32>
  %y = "meta.binary"(%e, %sum_b) {kind = "div"} : (tensor<1024x1024xf32>, tensor<1024x1024xf32>) -> tensor<1024x1024xf32>
  return %y : tensor<1024x1024xf32>
}

// Too few rows (64) to fill a GPU with one block each: no chain.
func.func @few_rows(%x: tensor<64x1024xf32>) -> tensor<64x1024xf32> {
  %max = "meta.reindex_reduce"(%x) {kind = "max", indices = affine_map<(i, j) -> (i)>} : (tensor<64x1024xf32>) -> tensor<64xf32>
  %max_b = "meta.reindex"(%max) {indices = affine_map<(i, j) -> (i)>} : (tensor<64xf32>) -> tensor<64x1024xf32>
  %y = "meta.binary"(%x, %max_b) {kind = "sub"} : (tensor<64x1024xf32>, tensor<64x1024xf32>) -> tensor<64x1024xf32>
  return %y : tensor<64x1024xf32>
}

// The stages keep their own entries; the chain is one more, whose
// parameters are the chain's input, its result and the status record.
// CHECK: .visible .entry softmax_fused_0(
// CHECK: .visible .entry softmax_fused_2(
// CHECK-NOT: few_rows_fused_{{[0-9]+}}_rows
// CHECK-LABEL: .visible .entry softmax_fused_0_rows(
// CHECK-NEXT: .param .u64 .ptr .align 16 softmax_fused_0_rows_param_0,
// CHECK-NEXT: .param .u64 .ptr .align 16 softmax_fused_0_rows_param_1,
// CHECK-NEXT: .param .u64 .ptr .align 16 softmax_fused_0_rows_param_2
// CHECK-NEXT: )
// The scratch: the row's maximum, its exponentials (1024 floats) and its
// sum, one row each; then each block reduction's tree.
// CHECK-DAG: .shared .align 16 .b8 softmax_fused_0_rows_scratch0_0[4];
// CHECK-DAG: .shared .align 16 .b8 softmax_fused_0_rows_scratch1_0[4096];
// CHECK-DAG: .shared .align 16 .b8 softmax_fused_0_rows_scratch1_1[4];
// CHECK-DAG: .shared .align 16 .b8 softmax_fused_0_rows_stage0_shared0[1024];
// CHECK-DAG: .shared .align 16 .b8 softmax_fused_0_rows_stage1_shared0[1024];
// Stage 0, block r: the row's maximum, read from global memory (4 steps
// of 256 threads), stored by thread 0 into shared memory.
// CHECK: mov.u32 [[ROW:%r[0-9]+]], %ctaid.x;
// CHECK: ld.global.nc.b32
// CHECK: max.NaN.f32
// CHECK: shfl.sync.down.b32
// CHECK: st.shared.b32
// CHECK: bar.sync 0;
// Stage 1: x read again, the maximum from shared memory, each
// exponential stored to shared memory, not global.
// CHECK: ld.shared.b32 [[MAX:%r[0-9]+]]
// CHECK: ld.global.nc.b32 [[X:%r[0-9]+]]
// CHECK: sub.rn.f32 %r{{[0-9]+}}, [[X]], [[MAX]];
// CHECK: st.shared.b32
// CHECK-NOT: st.global
// CHECK: bar.sync 0;
// Stage 2: the exponentials and the sum from shared memory, four points a
// thread, one 16-byte store of the result: the only global store.
// CHECK: ld.shared.b32
// CHECK: div.rn.f32
// CHECK: st.global.v4.b32
// CHECK-NOT: st.global
// CHECK: ret;

// OFF-NOT: .entry {{.*}}_rows(
