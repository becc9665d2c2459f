// Software prefetch (`lower::prefetch`): @channels sums x over (n, h, w)
// per channel, so its innermost loop reads a run of h x w = 256 floats
// (1 KiB) and the next batch's run of the same channel starts 16 KiB
// further on, where the hardware prefetchers do not look. Its load carries
// the prefetch mark (a TBAA type of its own root naming the distance);
// after vectorization each vector load (of 32 bytes here: x86-64-v4 prefers
// 256-bit vectors) gets `llvm.prefetch` of the
// address 16384 bytes ahead (read, locality 2: `prefetcht1`). @rows reads
// rows that follow each other, and @long runs of 128 KiB: no mark, no
// prefetch.
// RUN: jitc compile %s --emit mlir --cpu x86-64-v4 | FileCheck %s --check-prefix=MLIR
// RUN: jitc compile %s --emit llvm --cpu x86-64-v4 | FileCheck %s --check-prefix=LLVM
// RUN: jitc compile %s --emit asm --cpu x86-64-v4 | FileCheck %s --check-prefix=ASM
// RUN: jitc run %s --function channels --input 4x16x16x16xf32=0.5 | FileCheck %s --check-prefix=OUT

func.func @channels(%x: tensor<4x16x16x16xf32>) -> tensor<1x16x1x1xf32> {
  %s = "meta.reindex_reduce"(%x) {kind = "add", indices = affine_map<(n, c, h, w) -> (0, c, 0, 0)>}
       : (tensor<4x16x16x16xf32>) -> tensor<1x16x1x1xf32>
  return %s : tensor<1x16x1x1xf32>
}

func.func @rows(%x: tensor<64x256xf32>) -> tensor<64xf32> {
  %s = "meta.reindex_reduce"(%x) {kind = "add", indices = affine_map<(i, j) -> (i)>} : (tensor<64x256xf32>) -> tensor<64xf32>
  return %s : tensor<64xf32>
}

func.func @long(%x: tensor<2x4x32768xf32>) -> tensor<1x4x1xf32> {
  %s = "meta.reindex_reduce"(%x) {kind = "add", indices = affine_map<(n, c, k) -> (0, c, 0)>}
       : (tensor<2x4x32768xf32>) -> tensor<1x4x1xf32>
  return %s : tensor<1x4x1xf32>
}

// MLIR: #[[ROOT:.*]] = #llvm.tbaa_root<id = "jitc prefetch">
// MLIR: #[[TYPE:.*]] = #llvm.tbaa_type_desc<id = "jitc prefetch +16384", members = {<#[[ROOT]], 0>}>
// MLIR: #[[TAG:.*]] = #llvm.tbaa_tag<base_type = #[[TYPE]], access_type = #[[TYPE]], offset = 0>
// MLIR-NOT: tbaa_type_desc
// MLIR-LABEL: func.func @channels_fused_0(
// MLIR: llvm.load %{{.*}} {alias_scopes = [#{{.+}}], noalias_scopes = [#{{.+}}], tbaa = [#[[TAG]]]} : !llvm.ptr -> f32
// MLIR-LABEL: func.func @rows_fused_0(
// MLIR-NOT: tbaa
// MLIR-LABEL: func.func @long_fused_0(
// MLIR-NOT: tbaa

// LLVM-LABEL: define void @channels_fused_0(
// LLVM: %[[AHEAD:.*]] = getelementptr i8, ptr %[[P:.*]], i64 16384
// LLVM-NEXT: call void @llvm.prefetch.p0(ptr %[[AHEAD]], i32 0, i32 2, i32 1)
// LLVM-NEXT: load <{{[0-9]+}} x float>, ptr %[[P]]
// LLVM-LABEL: define void @rows_fused_0(
// LLVM-NOT: @llvm.prefetch
// LLVM-LABEL: define void @long_fused_0(
// LLVM-NOT: @llvm.prefetch
// LLVM: }

// ASM-LABEL: channels_fused_0:
// ASM: prefetcht1
// ASM-LABEL: rows_fused_0:
// ASM-NOT: prefetch
// ASM-LABEL: long_fused_0:
// ASM-NOT: prefetch
// ASM: .size long_fused_0

// 4 x 16 x 16 halves per channel.
// OUT: result[0]: 1x16x1x1xf32={{\[\[\[512\]\]\[\[512\]\]}}
