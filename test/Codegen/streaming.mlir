// Streaming results (`lower::stream`): a result of 8 MiB or more that the
// host function returns is written with non-temporal stores on x86. The
// kernel runs a second nest when the result's address is a multiple of
// 64, whose stores carry the streaming mark and an `align` assumption;
// after vectorization the marked whole-vector aligned stores become
// non-temporal, and the function fences them before it returns. An
// intermediate that another kernel reads (@transposed's exp) and a small
// result (@small) are stored as usual.
// RUN: jitc compile %s --emit mlir --cpu x86-64-v4 | FileCheck %s --check-prefix=MLIR
// RUN: jitc compile %s --emit llvm --cpu x86-64-v4 | FileCheck %s --check-prefix=LLVM
// RUN: jitc compile %s --emit asm --cpu x86-64-v4 | FileCheck %s --check-prefix=ASM
// RUN: jitc explain %s | FileCheck %s --check-prefix=EXPLAIN
// RUN: jitc explain %s --function transposed | FileCheck %s --check-prefix=ONE

// EXPLAIN: streamed results on the cpu backend (non-temporal stores: 8 MiB or more, returned):
// EXPLAIN-NEXT: @softmax_fused_2 result 0: 8388608 bytes
// EXPLAIN-NEXT: @transposed_fused_1 result 0: 8388608 bytes
// EXPLAIN-NOT: @small_fused
// ONE: streamed results on the cpu backend
// ONE-NOT: @softmax_fused_2
// ONE: @transposed_fused_1 result 0

// MLIR: #[[ROOT:.*]] = #llvm.tbaa_root<id = "jitc">
// MLIR: #[[TYPE:.*]] = #llvm.tbaa_type_desc<id = "jitc streaming result", members = {<#[[ROOT]], 0>}>
// MLIR: #[[TAG:.*]] = #llvm.tbaa_tag<base_type = #[[TYPE]], access_type = #[[TYPE]], offset = 0>
// MLIR-LABEL: func.func @softmax_fused_2(
// MLIR: %[[ADDRESS:.*]] = llvm.ptrtoint %[[Y:.*]] : !llvm.ptr to i64
// MLIR: arith.andi %[[ADDRESS]], %{{.*}} : i64
// MLIR: scf.if
// MLIR: llvm.intr.assume %{{.*}} ["align"(%[[Y]], %{{.*}} : !llvm.ptr, i64)] : i1
// MLIR: llvm.store %{{.*}}, %{{.*}} {alias_scopes = [#{{.+}}], noalias_scopes = [#{{.+}}], tbaa = [#[[TAG]]]} : f32, !llvm.ptr
// MLIR: scf.if
// MLIR-NOT: tbaa
// MLIR: llvm.store %{{.*}}, %{{.*}} {alias_scopes = [#{{[a-z_0-9]+}}], noalias_scopes = [#{{[a-z_0-9]+}}]} : f32, !llvm.ptr
// MLIR-LABEL: func.func @transposed_fused_0(
// MLIR-NOT: tbaa
// MLIR-LABEL: func.func @transposed_fused_1(
// MLIR: tbaa = [#[[TAG]]]
// MLIR-LABEL: func.func @small_fused_0(
// MLIR-NOT: tbaa
// MLIR: return

// LLVM-LABEL: define void @softmax_fused_2(
// LLVM: call void @llvm.assume(i1 true) [ "align"(ptr %[[Y:.*]], i64 64) ]
// LLVM: store <8 x float> %{{.*}}, ptr %{{.*}}, align {{32|64}}, !tbaa ![[MARK:[0-9]+]], {{.*}}!nontemporal
// LLVM: call void @llvm.x86.sse.sfence()
// LLVM-NEXT: ret void
// LLVM-LABEL: define void @transposed_fused_0(
// LLVM-NOT: nontemporal
// LLVM-NOT: sfence
// LLVM-LABEL: define void @transposed_fused_1(
// LLVM: !nontemporal
// LLVM: call void @llvm.x86.sse.sfence()
// LLVM-LABEL: define void @small_fused_0(
// LLVM-NOT: nontemporal
// LLVM-NOT: sfence
// LLVM-LABEL: define void @softmax_fused_0_rows(

// ASM-LABEL: softmax_fused_2:
// ASM: vmovntps %ymm
// ASM: sfence
// ASM-LABEL: small_fused_0:
// ASM-NOT: vmovnt
// ASM-LABEL: softmax_fused_0_rows:

func.func @softmax(%x: tensor<2048x1024xf32>) -> tensor<2048x1024xf32> {
  %max = "meta.reindex_reduce"(%x) {kind = "max", indices = affine_map<(i, j) -> (i)>} : (tensor<2048x1024xf32>) -> tensor<2048xf32>
  %max_b = "meta.reindex"(%max) {indices = affine_map<(i, j) -> (i)>} : (tensor<2048xf32>) -> tensor<2048x1024xf32>
  %s = "meta.binary"(%x, %max_b) {kind = "sub"} : (tensor<2048x1024xf32>, tensor<2048x1024xf32>) -> tensor<2048x1024xf32>
  %e = "meta.unary"(%s) {kind = "exp"} : (tensor<2048x1024xf32>) -> tensor<2048x1024xf32>
  %sum = "meta.reindex_reduce"(%e) {kind = "add", indices = affine_map<(i, j) -> (i)>} : (tensor<2048x1024xf32>) -> tensor<2048xf32>
  %sum_b = "meta.reindex"(%sum) {indices = affine_map<(i, j) -> (i)>} : (tensor<2048xf32>) -> tensor<2048x1024xf32>
  %y = "meta.binary"(%e, %sum_b) {kind = "div"} : (tensor<2048x1024xf32>, tensor<2048x1024xf32>) -> tensor<2048x1024xf32>
  return %y : tensor<2048x1024xf32>
}
func.func @transposed(%x: tensor<2048x1024xf32>) -> tensor<1024x2048xf32> {
  %e = "meta.unary"(%x) {kind = "exp"} : (tensor<2048x1024xf32>) -> tensor<2048x1024xf32>
  %t = "meta.reindex"(%e) {indices = affine_map<(i, j) -> (j, i)>} : (tensor<2048x1024xf32>) -> tensor<1024x2048xf32>
  return %t : tensor<1024x2048xf32>
}
func.func @small(%x: tensor<1024xf32>) -> tensor<1024xf32> {
  %e = "meta.unary"(%x) {kind = "exp"} : (tensor<1024xf32>) -> tensor<1024xf32>
  return %e : tensor<1024xf32>
}
