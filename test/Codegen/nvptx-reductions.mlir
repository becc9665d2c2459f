// GPU reduction strategies (lower::schedule::gpu):
// - few outputs with a long contiguous fold (@rows: 64 rows of 4096): one
//   256-thread block per output, split over two blocks (rule 6); the
//   threads stride over their half of the row (a constant 8 steps each,
//   unrolled), then halve their partial sums in shared memory with a
//   barrier per step down to one warp, which finishes with shuffles;
//   thread 0 stores the block's sum in scratch memory,
//   and the row's last block to finish combines the two;
// - many outputs (@cols: 8192 column maxima): one thread per output,
//   neighbouring threads reading neighbouring columns, the fold a loop in
//   the thread;
// - outputs no dimension separates (@buckets): the fold accumulates in
//   memory, after a fill launch writes the identity;
// - with --math exact, no reassociation: @rows folds in one thread per row,
//   in the interpreter's order.
// RUN: jitc compile --target nvptx --emit ptx %s | FileCheck %s
// RUN: jitc compile --target nvptx --emit ptx --math exact %s | FileCheck %s --check-prefix=EXACT

func.func @rows(%x: tensor<64x4096xf32>) -> tensor<64xf32> {
  %s = "meta.reindex_reduce"(%x) {indices = affine_map<(d0, d1) -> (d0)>, kind = "add"} : (tensor<64x4096xf32>) -> tensor<64xf32>
  return %s : tensor<64xf32>
}
// CHECK-LABEL: .visible .entry rows_fused_0(
// The scratch memory of the split (rule 6) is the last parameter.
// CHECK: .param .u64 .ptr .align 16 rows_fused_0_param_3
// CHECK: .shared .align 16 .b8 rows_fused_0_shared0[1024];
// CHECK: mov.u32 %r{{[0-9]+}}, %tid.x;
// The block-stride loop over the row: 4096 / 256 = 16 steps, split over
// two blocks per row (64 rows are too few outputs to fill the GPU): 8
// steps for every thread, a constant count, so LLVM unrolls it whole: 8
// loads 1 KiB apart, no branch back.
// CHECK-NOT: bra
// CHECK: ld.global.nc.b32 %r{{[0-9]+}}, [[[ROW:%rd[0-9]+]]];
// CHECK-NOT: bra
// CHECK: ld.global.nc.b32 %r{{[0-9]+}}, [[[ROW]]+1024];
// CHECK-NOT: bra
// CHECK: ld.global.nc.b32 %r{{[0-9]+}}, [[[ROW]]+7168];
// CHECK-NOT: {{bra|\+8192}}
// The tree: 128, 64, 32 threads active in shared memory, a barrier
// after each step.
// CHECK: st.shared.b32
// CHECK-NEXT: bar.sync 0;
// CHECK-NEXT: setp.gt.u32 %p{{[0-9]+}}, [[T:%r[0-9]+]], 127;
// CHECK: ld.shared.b32 %r{{[0-9]+}}, [%rd{{[0-9]+}}+512];
// CHECK: bar.sync 0;
// CHECK-NEXT: setp.gt.u32 %p{{[0-9]+}}, [[T]], 63;
// CHECK: bar.sync 0;
// CHECK-NEXT: setp.gt.u32 %p{{[0-9]+}}, [[T]], 31;
// CHECK: ld.shared.b32 %r{{[0-9]+}}, [%rd{{[0-9]+}}+128];
// CHECK: bar.sync 0;
// Then the first warp finishes with shuffles, lane t taking lane t + 16,
// 8, 4, 2, 1 (the pairs the shared-memory steps would take), with no
// barrier.
// CHECK-NOT: bar.sync
// CHECK: shfl.sync.down.b32 %r{{[0-9]+}}, %r{{[0-9]+}}, 16, 31, -1;
// CHECK-NOT: bar.sync
// CHECK: shfl.sync.down.b32 [[LAST:%r[0-9]+]], [[PART:%r[0-9]+]], 1, 31, -1;
// CHECK-NOT: bar.sync
// Thread 0 stores the block's sum in its slot of the scratch memory
// (after the 64 counters, 256 bytes), fences, and counts the block done;
// the second block of the row to finish fences again, combines both
// slots in block order, stores the row's sum and zeroes the counter.
// CHECK: add.rn.f32 [[SUM:%r[0-9]+]], [[PART]], [[LAST]];
// CHECK: st.global.b32 [%rd{{[0-9]+}}+256], [[SUM]];
// CHECK-NEXT: fence.sc.gpu;
// CHECK: atom.global.add.u32 [[DONE:%r[0-9]+]], [[[COUNTER:%rd[0-9]+]]], 1;
// CHECK-NEXT: setp.ne.b32 %p{{[0-9]+}}, [[DONE]], 1;
// CHECK: fence.sc.gpu;
// CHECK-NEXT: add.s64 [[SLOTS:%rd[0-9]+]]
// CHECK-NEXT: ld.global.v2.b32 {[[A:%r[0-9]+]], [[B:%r[0-9]+]]}, [[[SLOTS]]+256];
// CHECK-NEXT: add.rn.f32 [[A0:%r[0-9]+]], [[A]], 0f00000000;
// CHECK-NEXT: add.rn.f32 [[AB:%r[0-9]+]], [[A0]], [[B]];
// CHECK: st.global.b32 [%rd{{[0-9]+}}], [[AB]];
// CHECK-NEXT: st.global.b32 [[[COUNTER]]], 0;
// CHECK: ret;

func.func @cols(%x: tensor<4096x8192xf32>) -> tensor<8192xf32> {
  %s = "meta.reindex_reduce"(%x) {indices = affine_map<(d0, d1) -> (d1)>, kind = "max"} : (tensor<4096x8192xf32>) -> tensor<8192xf32>
  return %s : tensor<8192xf32>
}
// CHECK-LABEL: .visible .entry cols_fused_0(
// CHECK-NOT: bar.sync
// CHECK: setp.gt.u64 %p{{[0-9]+}}, [[COL:%rd[0-9]+]], 8191;
// Each step of the fold is one row down: 8192 floats.
// CHECK: ld.global.nc.b32 %r{{[0-9]+}}, [%rd{{[0-9]+}}+-131072];
// CHECK: ld.global.nc.b32 %r{{[0-9]+}}, [%rd{{[0-9]+}}+-98304];
// The step is llvm.maximum, which propagates NaN and orders -0 below +0
// (a compare and select would not).
// CHECK: max.NaN.f32
// CHECK-NOT: bar.sync
// CHECK: ret;

func.func @buckets(%x: tensor<1000xf32>) -> tensor<16xf32> {
  %s = "meta.reindex_reduce"(%x) {indices = affine_map<(d0) -> (d0 floordiv 64)>, kind = "add"} : (tensor<1000xf32>) -> tensor<16xf32>
  return %s : tensor<16xf32>
}
// CHECK-LABEL: .visible .entry buckets_fused_0(
// One thread: the load, add and store of the running sum in memory; the
// loads of %x (read-only, so through the non-coherent cache) merged four
// at a time.
// CHECK: ld.global.nc.v4.b32
// CHECK: ld.global.b32
// CHECK: add.rn.f32
// CHECK: st.global.b32
// CHECK-LABEL: .visible .entry buckets_fused_0_fill(
// CHECK: setp.gt.u64 %p{{[0-9]+}}, %rd{{[0-9]+}}, 15;
// CHECK: st.global.b32 [%rd{{[0-9]+}}], 0;

// EXACT-LABEL: .visible .entry rows_fused_0(
// EXACT-NOT: .shared
// EXACT-NOT: bar.sync
// EXACT: setp.gt.u64 %p{{[0-9]+}}, %rd{{[0-9]+}}, 63;
// EXACT-LABEL: .visible .entry cols_fused_0(
