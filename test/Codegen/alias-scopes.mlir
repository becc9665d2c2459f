// Kernels' element accesses carry two alias scopes (`lower/emit.rs`,
// `Scopes`): the loads of arguments, and every write. A kernel never
// writes an argument's buffer, except the argument a nest written in place
// writes (in-place.mlir), whose loads stay unmarked. So LLVM hoists the
// load of a value no iteration changes out of the loop, and vectorizes
// without checking at run time that the buffers are apart
// (`vector.memcheck`).
// RUN: jitc compile %s --emit llvm --cpu x86-64-v4 | FileCheck %s
// RUN: jitc compile %s --emit mlir | FileCheck %s --check-prefix=MLIR

// Every kernel has scopes of its own (a row chain's stages write and read
// the same scratch; they are `noinline`, and the scopes would stay right if
// they were inlined).
// MLIR-LABEL: func.func @scaled_fused_0(
// MLIR: llvm.load %{{.*}} {alias_scopes = [#[[A:alias_scope[0-9]*]]], noalias_scopes = [#[[W:alias_scope[0-9]*]]]}
// MLIR: llvm.store %{{.*}} {alias_scopes = [#[[W]]], noalias_scopes = [#[[A]]]}
// MLIR-LABEL: func.func @powers_fused_0(
// MLIR-NOT: [#[[A]]]
// MLIR-NOT: [#[[W]]]
// MLIR: llvm.load %{{.*}} {alias_scopes = [#{{alias_scope[0-9]*}}], noalias_scopes = [#{{alias_scope[0-9]*}}]}
// MLIR-NOT: [#[[A]]]
// MLIR-NOT: [#[[W]]]
// MLIR: return

// A scalar broadcast and squared: loaded and squared once per nest, before
// the vector loop, in both nests (the usual one, then the one that writes
// %x's buffer in place).
// CHECK-LABEL: define void @scaled_fused_0(
// CHECK: icmp eq ptr
// CHECK: [[S:%[0-9]+]] = load float, ptr %{{[0-9]+}}, align 4, !alias.scope ![[ARGS:[0-9]+]], !noalias ![[WRITES:[0-9]+]]
// CHECK-NEXT: fmul float [[S]], [[S]]
// CHECK-NOT: memcheck
// CHECK: vector.body:
// CHECK-NOT: load float
// CHECK: store <{{[0-9]+}} x float> %{{.*}}, !alias.scope ![[WRITES]], !noalias ![[ARGS]]
// CHECK: [[T:%[0-9]+]] = load float, ptr %{{[0-9]+}}, align 4, !alias.scope ![[ARGS]], !noalias ![[WRITES]]
// CHECK-NEXT: fmul float [[T]], [[T]]
// CHECK-NOT: memcheck
// CHECK: vector.body{{[0-9]*}}:
// CHECK-NOT: load float
// CHECK: middle.block
func.func @scaled(%s: tensor<f32>, %x: tensor<4096xf32>) -> tensor<4096xf32> {
  %b = "meta.reindex"(%s) {indices = affine_map<(d0) -> ()>} : (tensor<f32>) -> tensor<4096xf32>
  %b2 = "meta.binary"(%b, %b) {kind = "mul"} : (tensor<4096xf32>, tensor<4096xf32>) -> tensor<4096xf32>
  %y = "meta.binary"(%x, %b2) {kind = "add"} : (tensor<4096xf32>, tensor<4096xf32>) -> tensor<4096xf32>
  return %y : tensor<4096xf32>
}

// Repeated squaring of a broadcast scalar, each square used twice (the
// shape of the Python package's integer power, `jitc.Var.__pow__`). When
// the squares stayed in the loop, LLVM 22's loop vectorizer took time
// exponential in the depth (`vputils::isSingleScalar` walks every path:
// 1.6 s for this kernel, 7 s with a select per level, each level doubling
// it; the Python case at 63 levels did not finish). Hoisted, they are
// one scalar chain before the loop.
// CHECK-LABEL: define void @powers_fused_0(
// CHECK: load i64, ptr %{{[0-9]+}}, align 4, !alias.scope
// CHECK-NOT: memcheck
// CHECK: vector.body:
// CHECK-NOT: load i64
// CHECK: middle.block:
func.func @powers(%s: tensor<i64>, %x: tensor<1024xi64>) -> tensor<1024xi64> {
  %sq0 = "meta.reindex"(%s) {indices = affine_map<(d0) -> ()>} : (tensor<i64>) -> tensor<1024xi64>
  %r0 = "meta.binary"(%x, %x) {kind = "add"} : (tensor<1024xi64>, tensor<1024xi64>) -> tensor<1024xi64>
  %p0 = "meta.binary"(%r0, %sq0) {kind = "mul"} : (tensor<1024xi64>, tensor<1024xi64>) -> tensor<1024xi64>
  %c0 = "meta.binary"(%p0, %x) {kind = "gt"} : (tensor<1024xi64>, tensor<1024xi64>) -> tensor<1024xi1>
  %r1 = "meta.ternary"(%c0, %p0, %r0) {kind = "select"} : (tensor<1024xi1>, tensor<1024xi64>, tensor<1024xi64>) -> tensor<1024xi64>
  %sq1 = "meta.binary"(%sq0, %sq0) {kind = "mul"} : (tensor<1024xi64>, tensor<1024xi64>) -> tensor<1024xi64>
  %p1 = "meta.binary"(%r1, %sq1) {kind = "mul"} : (tensor<1024xi64>, tensor<1024xi64>) -> tensor<1024xi64>
  %c1 = "meta.binary"(%p1, %x) {kind = "gt"} : (tensor<1024xi64>, tensor<1024xi64>) -> tensor<1024xi1>
  %r2 = "meta.ternary"(%c1, %p1, %r1) {kind = "select"} : (tensor<1024xi1>, tensor<1024xi64>, tensor<1024xi64>) -> tensor<1024xi64>
  %sq2 = "meta.binary"(%sq1, %sq1) {kind = "mul"} : (tensor<1024xi64>, tensor<1024xi64>) -> tensor<1024xi64>
  %p2 = "meta.binary"(%r2, %sq2) {kind = "mul"} : (tensor<1024xi64>, tensor<1024xi64>) -> tensor<1024xi64>
  %c2 = "meta.binary"(%p2, %x) {kind = "gt"} : (tensor<1024xi64>, tensor<1024xi64>) -> tensor<1024xi1>
  %r3 = "meta.ternary"(%c2, %p2, %r2) {kind = "select"} : (tensor<1024xi1>, tensor<1024xi64>, tensor<1024xi64>) -> tensor<1024xi64>
  %sq3 = "meta.binary"(%sq2, %sq2) {kind = "mul"} : (tensor<1024xi64>, tensor<1024xi64>) -> tensor<1024xi64>
  %p3 = "meta.binary"(%r3, %sq3) {kind = "mul"} : (tensor<1024xi64>, tensor<1024xi64>) -> tensor<1024xi64>
  %c3 = "meta.binary"(%p3, %x) {kind = "gt"} : (tensor<1024xi64>, tensor<1024xi64>) -> tensor<1024xi1>
  %r4 = "meta.ternary"(%c3, %p3, %r3) {kind = "select"} : (tensor<1024xi1>, tensor<1024xi64>, tensor<1024xi64>) -> tensor<1024xi64>
  %sq4 = "meta.binary"(%sq3, %sq3) {kind = "mul"} : (tensor<1024xi64>, tensor<1024xi64>) -> tensor<1024xi64>
  %p4 = "meta.binary"(%r4, %sq4) {kind = "mul"} : (tensor<1024xi64>, tensor<1024xi64>) -> tensor<1024xi64>
  %c4 = "meta.binary"(%p4, %x) {kind = "gt"} : (tensor<1024xi64>, tensor<1024xi64>) -> tensor<1024xi1>
  %r5 = "meta.ternary"(%c4, %p4, %r4) {kind = "select"} : (tensor<1024xi1>, tensor<1024xi64>, tensor<1024xi64>) -> tensor<1024xi64>
  %sq5 = "meta.binary"(%sq4, %sq4) {kind = "mul"} : (tensor<1024xi64>, tensor<1024xi64>) -> tensor<1024xi64>
  %p5 = "meta.binary"(%r5, %sq5) {kind = "mul"} : (tensor<1024xi64>, tensor<1024xi64>) -> tensor<1024xi64>
  %c5 = "meta.binary"(%p5, %x) {kind = "gt"} : (tensor<1024xi64>, tensor<1024xi64>) -> tensor<1024xi1>
  %r6 = "meta.ternary"(%c5, %p5, %r5) {kind = "select"} : (tensor<1024xi1>, tensor<1024xi64>, tensor<1024xi64>) -> tensor<1024xi64>
  %sq6 = "meta.binary"(%sq5, %sq5) {kind = "mul"} : (tensor<1024xi64>, tensor<1024xi64>) -> tensor<1024xi64>
  %p6 = "meta.binary"(%r6, %sq6) {kind = "mul"} : (tensor<1024xi64>, tensor<1024xi64>) -> tensor<1024xi64>
  %c6 = "meta.binary"(%p6, %x) {kind = "gt"} : (tensor<1024xi64>, tensor<1024xi64>) -> tensor<1024xi1>
  %r7 = "meta.ternary"(%c6, %p6, %r6) {kind = "select"} : (tensor<1024xi1>, tensor<1024xi64>, tensor<1024xi64>) -> tensor<1024xi64>
  %sq7 = "meta.binary"(%sq6, %sq6) {kind = "mul"} : (tensor<1024xi64>, tensor<1024xi64>) -> tensor<1024xi64>
  %p7 = "meta.binary"(%r7, %sq7) {kind = "mul"} : (tensor<1024xi64>, tensor<1024xi64>) -> tensor<1024xi64>
  %c7 = "meta.binary"(%p7, %x) {kind = "gt"} : (tensor<1024xi64>, tensor<1024xi64>) -> tensor<1024xi1>
  %r8 = "meta.ternary"(%c7, %p7, %r7) {kind = "select"} : (tensor<1024xi1>, tensor<1024xi64>, tensor<1024xi64>) -> tensor<1024xi64>
  %sq8 = "meta.binary"(%sq7, %sq7) {kind = "mul"} : (tensor<1024xi64>, tensor<1024xi64>) -> tensor<1024xi64>
  %p8 = "meta.binary"(%r8, %sq8) {kind = "mul"} : (tensor<1024xi64>, tensor<1024xi64>) -> tensor<1024xi64>
  %c8 = "meta.binary"(%p8, %x) {kind = "gt"} : (tensor<1024xi64>, tensor<1024xi64>) -> tensor<1024xi1>
  %r9 = "meta.ternary"(%c8, %p8, %r8) {kind = "select"} : (tensor<1024xi1>, tensor<1024xi64>, tensor<1024xi64>) -> tensor<1024xi64>
  %sq9 = "meta.binary"(%sq8, %sq8) {kind = "mul"} : (tensor<1024xi64>, tensor<1024xi64>) -> tensor<1024xi64>
  %p9 = "meta.binary"(%r9, %sq9) {kind = "mul"} : (tensor<1024xi64>, tensor<1024xi64>) -> tensor<1024xi64>
  %c9 = "meta.binary"(%p9, %x) {kind = "gt"} : (tensor<1024xi64>, tensor<1024xi64>) -> tensor<1024xi1>
  %r10 = "meta.ternary"(%c9, %p9, %r9) {kind = "select"} : (tensor<1024xi1>, tensor<1024xi64>, tensor<1024xi64>) -> tensor<1024xi64>
  %sq10 = "meta.binary"(%sq9, %sq9) {kind = "mul"} : (tensor<1024xi64>, tensor<1024xi64>) -> tensor<1024xi64>
  %p10 = "meta.binary"(%r10, %sq10) {kind = "mul"} : (tensor<1024xi64>, tensor<1024xi64>) -> tensor<1024xi64>
  %c10 = "meta.binary"(%p10, %x) {kind = "gt"} : (tensor<1024xi64>, tensor<1024xi64>) -> tensor<1024xi1>
  %r11 = "meta.ternary"(%c10, %p10, %r10) {kind = "select"} : (tensor<1024xi1>, tensor<1024xi64>, tensor<1024xi64>) -> tensor<1024xi64>
  %sq11 = "meta.binary"(%sq10, %sq10) {kind = "mul"} : (tensor<1024xi64>, tensor<1024xi64>) -> tensor<1024xi64>
  %p11 = "meta.binary"(%r11, %sq11) {kind = "mul"} : (tensor<1024xi64>, tensor<1024xi64>) -> tensor<1024xi64>
  %c11 = "meta.binary"(%p11, %x) {kind = "gt"} : (tensor<1024xi64>, tensor<1024xi64>) -> tensor<1024xi1>
  %r12 = "meta.ternary"(%c11, %p11, %r11) {kind = "select"} : (tensor<1024xi1>, tensor<1024xi64>, tensor<1024xi64>) -> tensor<1024xi64>
  %sq12 = "meta.binary"(%sq11, %sq11) {kind = "mul"} : (tensor<1024xi64>, tensor<1024xi64>) -> tensor<1024xi64>
  %p12 = "meta.binary"(%r12, %sq12) {kind = "mul"} : (tensor<1024xi64>, tensor<1024xi64>) -> tensor<1024xi64>
  %c12 = "meta.binary"(%p12, %x) {kind = "gt"} : (tensor<1024xi64>, tensor<1024xi64>) -> tensor<1024xi1>
  %r13 = "meta.ternary"(%c12, %p12, %r12) {kind = "select"} : (tensor<1024xi1>, tensor<1024xi64>, tensor<1024xi64>) -> tensor<1024xi64>
  %sq13 = "meta.binary"(%sq12, %sq12) {kind = "mul"} : (tensor<1024xi64>, tensor<1024xi64>) -> tensor<1024xi64>
  %p13 = "meta.binary"(%r13, %sq13) {kind = "mul"} : (tensor<1024xi64>, tensor<1024xi64>) -> tensor<1024xi64>
  %c13 = "meta.binary"(%p13, %x) {kind = "gt"} : (tensor<1024xi64>, tensor<1024xi64>) -> tensor<1024xi1>
  %r14 = "meta.ternary"(%c13, %p13, %r13) {kind = "select"} : (tensor<1024xi1>, tensor<1024xi64>, tensor<1024xi64>) -> tensor<1024xi64>
  %sq14 = "meta.binary"(%sq13, %sq13) {kind = "mul"} : (tensor<1024xi64>, tensor<1024xi64>) -> tensor<1024xi64>
  %p14 = "meta.binary"(%r14, %sq14) {kind = "mul"} : (tensor<1024xi64>, tensor<1024xi64>) -> tensor<1024xi64>
  %c14 = "meta.binary"(%p14, %x) {kind = "gt"} : (tensor<1024xi64>, tensor<1024xi64>) -> tensor<1024xi1>
  %r15 = "meta.ternary"(%c14, %p14, %r14) {kind = "select"} : (tensor<1024xi1>, tensor<1024xi64>, tensor<1024xi64>) -> tensor<1024xi64>
  %sq15 = "meta.binary"(%sq14, %sq14) {kind = "mul"} : (tensor<1024xi64>, tensor<1024xi64>) -> tensor<1024xi64>
  %p15 = "meta.binary"(%r15, %sq15) {kind = "mul"} : (tensor<1024xi64>, tensor<1024xi64>) -> tensor<1024xi64>
  %c15 = "meta.binary"(%p15, %x) {kind = "gt"} : (tensor<1024xi64>, tensor<1024xi64>) -> tensor<1024xi1>
  %r16 = "meta.ternary"(%c15, %p15, %r15) {kind = "select"} : (tensor<1024xi1>, tensor<1024xi64>, tensor<1024xi64>) -> tensor<1024xi64>
  %sq16 = "meta.binary"(%sq15, %sq15) {kind = "mul"} : (tensor<1024xi64>, tensor<1024xi64>) -> tensor<1024xi64>
  %p16 = "meta.binary"(%r16, %sq16) {kind = "mul"} : (tensor<1024xi64>, tensor<1024xi64>) -> tensor<1024xi64>
  %c16 = "meta.binary"(%p16, %x) {kind = "gt"} : (tensor<1024xi64>, tensor<1024xi64>) -> tensor<1024xi1>
  %r17 = "meta.ternary"(%c16, %p16, %r16) {kind = "select"} : (tensor<1024xi1>, tensor<1024xi64>, tensor<1024xi64>) -> tensor<1024xi64>
  %sq17 = "meta.binary"(%sq16, %sq16) {kind = "mul"} : (tensor<1024xi64>, tensor<1024xi64>) -> tensor<1024xi64>
  %p17 = "meta.binary"(%r17, %sq17) {kind = "mul"} : (tensor<1024xi64>, tensor<1024xi64>) -> tensor<1024xi64>
  %c17 = "meta.binary"(%p17, %x) {kind = "gt"} : (tensor<1024xi64>, tensor<1024xi64>) -> tensor<1024xi1>
  %r18 = "meta.ternary"(%c17, %p17, %r17) {kind = "select"} : (tensor<1024xi1>, tensor<1024xi64>, tensor<1024xi64>) -> tensor<1024xi64>
  %sq18 = "meta.binary"(%sq17, %sq17) {kind = "mul"} : (tensor<1024xi64>, tensor<1024xi64>) -> tensor<1024xi64>
  %p18 = "meta.binary"(%r18, %sq18) {kind = "mul"} : (tensor<1024xi64>, tensor<1024xi64>) -> tensor<1024xi64>
  %c18 = "meta.binary"(%p18, %x) {kind = "gt"} : (tensor<1024xi64>, tensor<1024xi64>) -> tensor<1024xi1>
  %r19 = "meta.ternary"(%c18, %p18, %r18) {kind = "select"} : (tensor<1024xi1>, tensor<1024xi64>, tensor<1024xi64>) -> tensor<1024xi64>
  %sq19 = "meta.binary"(%sq18, %sq18) {kind = "mul"} : (tensor<1024xi64>, tensor<1024xi64>) -> tensor<1024xi64>
  %p19 = "meta.binary"(%r19, %sq19) {kind = "mul"} : (tensor<1024xi64>, tensor<1024xi64>) -> tensor<1024xi64>
  %c19 = "meta.binary"(%p19, %x) {kind = "gt"} : (tensor<1024xi64>, tensor<1024xi64>) -> tensor<1024xi1>
  %r20 = "meta.ternary"(%c19, %p19, %r19) {kind = "select"} : (tensor<1024xi1>, tensor<1024xi64>, tensor<1024xi64>) -> tensor<1024xi64>
  %sq20 = "meta.binary"(%sq19, %sq19) {kind = "mul"} : (tensor<1024xi64>, tensor<1024xi64>) -> tensor<1024xi64>
  %p20 = "meta.binary"(%r20, %sq20) {kind = "mul"} : (tensor<1024xi64>, tensor<1024xi64>) -> tensor<1024xi64>
  %c20 = "meta.binary"(%p20, %x) {kind = "gt"} : (tensor<1024xi64>, tensor<1024xi64>) -> tensor<1024xi1>
  %r21 = "meta.ternary"(%c20, %p20, %r20) {kind = "select"} : (tensor<1024xi1>, tensor<1024xi64>, tensor<1024xi64>) -> tensor<1024xi64>
  %sq21 = "meta.binary"(%sq20, %sq20) {kind = "mul"} : (tensor<1024xi64>, tensor<1024xi64>) -> tensor<1024xi64>
  %p21 = "meta.binary"(%r21, %sq21) {kind = "mul"} : (tensor<1024xi64>, tensor<1024xi64>) -> tensor<1024xi64>
  %c21 = "meta.binary"(%p21, %x) {kind = "gt"} : (tensor<1024xi64>, tensor<1024xi64>) -> tensor<1024xi1>
  %r22 = "meta.ternary"(%c21, %p21, %r21) {kind = "select"} : (tensor<1024xi1>, tensor<1024xi64>, tensor<1024xi64>) -> tensor<1024xi64>
  %sq22 = "meta.binary"(%sq21, %sq21) {kind = "mul"} : (tensor<1024xi64>, tensor<1024xi64>) -> tensor<1024xi64>
  %p22 = "meta.binary"(%r22, %sq22) {kind = "mul"} : (tensor<1024xi64>, tensor<1024xi64>) -> tensor<1024xi64>
  %c22 = "meta.binary"(%p22, %x) {kind = "gt"} : (tensor<1024xi64>, tensor<1024xi64>) -> tensor<1024xi1>
  %r23 = "meta.ternary"(%c22, %p22, %r22) {kind = "select"} : (tensor<1024xi1>, tensor<1024xi64>, tensor<1024xi64>) -> tensor<1024xi64>
  %sq23 = "meta.binary"(%sq22, %sq22) {kind = "mul"} : (tensor<1024xi64>, tensor<1024xi64>) -> tensor<1024xi64>
  %p23 = "meta.binary"(%r23, %sq23) {kind = "mul"} : (tensor<1024xi64>, tensor<1024xi64>) -> tensor<1024xi64>
  %c23 = "meta.binary"(%p23, %x) {kind = "gt"} : (tensor<1024xi64>, tensor<1024xi64>) -> tensor<1024xi1>
  %r24 = "meta.ternary"(%c23, %p23, %r23) {kind = "select"} : (tensor<1024xi1>, tensor<1024xi64>, tensor<1024xi64>) -> tensor<1024xi64>
  %sq24 = "meta.binary"(%sq23, %sq23) {kind = "mul"} : (tensor<1024xi64>, tensor<1024xi64>) -> tensor<1024xi64>
  return %r24 : tensor<1024xi64>
}
