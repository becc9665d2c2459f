// --check-bounds: every element load and store is checked against its
// buffer's element count (one unsigned comparison covers both ends); a
// failed check claims the status record with 2 + the access's number
// (an atomic compare-and-exchange from 0) and writes the offset to its
// second word; the load reads element 0 and yields zero instead, the
// store is skipped. Without the flag there is no check.
// RUN: jitc compile %s --emit mlir --check-bounds | FileCheck %s --check-prefix=MLIR
// RUN: jitc compile %s --emit mlir | FileCheck %s --check-prefix=OFF
// RUN: jitc compile %s --emit llvm --cpu x86-64-v3 --check-bounds | FileCheck %s --check-prefix=LLVM
// RUN: jitc compile %examples/conv.mlir --target nvptx --emit ptx --check-bounds | FileCheck %s --check-prefix=PTX

// The kernel's two alias scopes, its own: what it writes, and its
// arguments.
// MLIR-DAG:  #[[WRITES:alias_scope[0-9]*]] = #llvm.alias_scope<id = distinct[{{[0-9]+}}]<>, domain = #{{.+}}, description = "jitc writes">
// MLIR-DAG:  #[[ARGS:alias_scope[0-9]*]] = #llvm.alias_scope<id = distinct[{{[0-9]+}}]<>, domain = #{{.+}}, description = "jitc arguments">
// The data pointers of %x and the result, then the status record's.
// MLIR-LABEL: func.func @shift_right_fused_0(
// MLIR:      %[[X:.+]] = llvm.load %{{.+}} : !llvm.ptr -> !llvm.ptr
// MLIR:      %[[Y:.+]] = llvm.load %{{.+}} : !llvm.ptr -> !llvm.ptr
// MLIR:      %[[STATUS:.+]] = llvm.load %{{.+}} : !llvm.ptr -> !llvm.ptr
// The leading edge. The reindex's load of %x (8 elements) is access 0,
// status 2.
// MLIR:      scf.for
// MLIR:      %[[OFFSET:.+]] = arith.index_cast %{{.+}} : index to i64
// MLIR-NEXT: %[[LEN:.+]] = arith.constant 8 : i64
// MLIR-NEXT: %[[BAD:.+]] = arith.cmpi uge, %[[OFFSET]], %[[LEN]] : i64
// MLIR-NEXT: scf.if %[[BAD]] {
// MLIR-NEXT:   %[[ZERO:.+]] = arith.constant 0 : i64
// MLIR-NEXT:   %[[CODE:.+]] = arith.constant 2 : i64
// Writes and the arguments' loads carry the kernel's two alias scopes.
// MLIR-NEXT:   %[[CLAIM:.+]] = llvm.cmpxchg %[[STATUS]], %[[ZERO]], %[[CODE]] syncscope("device") monotonic monotonic {alias_scopes = [#[[WRITES]]], noalias_scopes = [#[[ARGS]]]} : !llvm.ptr, i64
// MLIR-NEXT:   %[[WON:.+]] = llvm.extractvalue %[[CLAIM]][1] : !llvm.struct<(i64, i1)>
// MLIR-NEXT:   scf.if %[[WON]] {
// MLIR-NEXT:     %[[ONE:.+]] = arith.constant 1 : i64
// MLIR-NEXT:     %[[WORD:.+]] = llvm.getelementptr %[[STATUS]][%[[ONE]]] : (!llvm.ptr, i64) -> !llvm.ptr, i64
// MLIR-NEXT:     llvm.store %[[OFFSET]], %[[WORD]] {alias_scopes = [#[[WRITES]]], noalias_scopes = [#[[ARGS]]]} : i64, !llvm.ptr
// MLIR:      %[[OK:.+]] = arith.cmpi ult, %[[OFFSET]], %[[LEN]] : i64
// MLIR:      %[[SAFE:.+]] = arith.select %[[OK]], %[[OFFSET]], %{{.+}} : i64
// MLIR-NEXT: %[[P:.+]] = llvm.getelementptr %[[X]][%[[SAFE]]]
// MLIR-NEXT: %[[V:.+]] = llvm.load %[[P]] {alias_scopes = [#[[ARGS]]], noalias_scopes = [#[[WRITES]]]} : !llvm.ptr -> f32
// MLIR-NEXT: arith.select %[[OK]], %[[V]], %{{.+}} : f32
// The result's store is access 1, status 3, and made only when inside.
// MLIR:      llvm.cmpxchg %[[STATUS]], %{{.+}}, %{{.+}} syncscope("device") monotonic monotonic
// MLIR:      %[[OK2:.+]] = arith.cmpi ult, %{{.+}}, %{{.+}} : i64
// MLIR-NEXT: scf.if %[[OK2]] {
// MLIR-NEXT:   %[[Q:.+]] = llvm.getelementptr %[[Y]][%{{.+}}]
// MLIR-NEXT:   llvm.store %{{.+}}, %[[Q]] {alias_scopes = [#[[WRITES]]], noalias_scopes = [#[[ARGS]]]} : f32, !llvm.ptr
// The interior and the trailing edge keep the numbers: 2, then 3.
// MLIR:      scf.for
// MLIR:      arith.constant 2 : i64
// MLIR:      arith.constant 3 : i64
// MLIR:      scf.for
// MLIR:      arith.constant 2 : i64
// MLIR:      arith.constant 3 : i64
// MLIR-NOT:  arith.constant 4 : i64

// OFF-LABEL: func.func @shift_right_fused_0(
// OFF-NOT:   llvm.cmpxchg
// OFF-NOT:   arith.cmpi uge

// The checks survive LLVM's optimizations: the split dimension's range
// comes from the caller, so no offset is known to be in bounds.
// LLVM-LABEL: define void @shift_right_fused_0(
// LLVM: cmpxchg ptr %{{.+}}, i64 0, i64 2 syncscope("device") monotonic monotonic
// LLVM: cmpxchg ptr %{{.+}}, i64 0, i64 3 syncscope("device") monotonic monotonic

// On the GPU the claim is an atomic compare-and-swap in global memory, of
// the device's scope (a system-scoped one on mapped host memory is not
// allowed on a GPU attached over PCIe).
// (Here each thread's point is below the number of points, so LLVM proves
// every check and drops it; the padded convolution keeps some: its load
// of x is access 0, status 2.)
// PTX-LABEL: .entry main_fused_0(
// PTX: atom.relaxed.gpu.global.cas.b64 {{.+}}, [{{.+}}], 0, 2;

func.func @shift_right(%x: tensor<8xf32>) -> tensor<8xf32> {
  %y = "meta.reindex"(%x) {indices = affine_map<(i) -> (i - 1)>} : (tensor<8xf32>) -> tensor<8xf32>
  return %y : tensor<8xf32>
}
