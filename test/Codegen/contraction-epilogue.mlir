// A register-tiled contraction and the element-wise kernel that reads its
// result run as one kernel (lower::epilogue): relu(x W + b) is one epilogue
// function. Each 6x64 tile of sums goes to a scratch tile on the stack
// (6 x 64 x 4 = 1536 bytes, nothing else reads the sums), then the tile
// function, compiled once and called by the tiles of every height, runs
// the bias and the maximum in a loop over the tile's rows and columns. The
// two kernels are not lowered on their own.
// RUN: jitc compile %s --emit mlir | FileCheck %s
// RUN: jitc compile %s --emit mlir --jittor-rules | FileCheck %s --check-prefix=APART

// CHECK-NOT:  func.func @main_fused_0(
// CHECK-NOT:  func.func @main_fused_1(
// CHECK:      func.func private @main_fused_0_epilogue_tile(%[[BUFFERS:.*]]: !llvm.ptr, %[[R0:.*]]: i64, %[[ROWS:.*]]: i64, %[[V0:.*]]: i64, %[[COLUMNS:.*]]: i64, %[[SCRATCH:.*]]: !llvm.ptr)
// CHECK:        scf.for %[[ROW:.*]] = %{{.*}} to %{{.*}} step
// CHECK:          scf.for %[[COLUMN:.*]] = %{{.*}} to %{{.*}} step
// CHECK:            %[[AT:.*]] = llvm.getelementptr %[[SCRATCH]]
// CHECK-NEXT:       %[[SUM:.*]] = llvm.load %[[AT]] : !llvm.ptr -> f32
// CHECK:            %[[BIAS:.*]] = llvm.load {{.*}}alias_scopes
// CHECK-NEXT:       %[[Y:.*]] = arith.addf %[[SUM]], %[[BIAS]] : f32
// CHECK:            llvm.intr.maximum(%[[Y]], %{{.*}}) : (f32, f32) -> f32
// CHECK:      func.func @main_fused_0_epilogue(%[[KBUFFERS:.*]]: !llvm.ptr, %{{.*}}: i64, %{{.*}}: i64)
// CHECK:        %[[TILE:.*]] = llvm.alloca %c1536_i64 x i8 {alignment = 64 : i64}
// CHECK:        math.fma {{.*}} : vector<16xf32>
// CHECK:        %[[STORE:.*]] = llvm.getelementptr %[[TILE]]
// CHECK-NEXT:   llvm.store %{{.*}}, %[[STORE]] {alignment = 64 : i64} : vector<16xf32>, !llvm.ptr
// CHECK:        func.call @main_fused_0_epilogue_tile(%[[KBUFFERS]], %{{.*}}, %c6_i64, %{{.*}}, %{{.*}}, %[[TILE]])
// CHECK:        func.call @main_fused_0_epilogue_tile(%[[KBUFFERS]], %{{.*}}, %c4_i64{{.*}}, %{{.*}}, %{{.*}}, %[[TILE]])
// CHECK-NOT:  func.func @main_fused_0(
// CHECK-NOT:  func.func @main_fused_1(

// With Jittor's rules, the contraction and the bias with ReLU are two
// kernels.
// APART-NOT:  epilogue
// APART-DAG:  func.func @main_fused_0(
// APART-DAG:  func.func @main_fused_1(
// APART-NOT:  epilogue
func.func @main(%x: tensor<64x96xf32>, %w: tensor<96x80xf32>, %b: tensor<80xf32>) -> tensor<64x80xf32> {
  %xb = "meta.reindex"(%x) {indices = affine_map<(i, j, k) -> (i, k)>} : (tensor<64x96xf32>) -> tensor<64x80x96xf32>
  %wb = "meta.reindex"(%w) {indices = affine_map<(i, j, k) -> (k, j)>} : (tensor<96x80xf32>) -> tensor<64x80x96xf32>
  %p = "meta.binary"(%xb, %wb) {kind = "mul"} : (tensor<64x80x96xf32>, tensor<64x80x96xf32>) -> tensor<64x80x96xf32>
  %z = "meta.reindex_reduce"(%p) {kind = "add", indices = affine_map<(i, j, k) -> (i, j)>} : (tensor<64x80x96xf32>) -> tensor<64x80xf32>
  %bb = "meta.reindex"(%b) {indices = affine_map<(i, j) -> (j)>} : (tensor<80xf32>) -> tensor<64x80xf32>
  %a = "meta.binary"(%z, %bb) {kind = "add"} : (tensor<64x80xf32>, tensor<64x80xf32>) -> tensor<64x80xf32>
  %zeros = arith.constant dense<0.0> : tensor<64x80xf32>
  %h = "meta.binary"(%a, %zeros) {kind = "max"} : (tensor<64x80xf32>, tensor<64x80xf32>) -> tensor<64x80xf32>
  return %h : tensor<64x80xf32>
}
