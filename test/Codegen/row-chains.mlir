// Row chains (lower::rows): softmax's three kernels share their rows (512
// of 256 f32), so one chain runs them a block of rows at a time. The
// exponentials, the maxima and the sums are read only inside the chain:
// they live in stack scratch of one block (127 rows: 127 x (1024 + 4 + 4)
// bytes fit the 128 KiB), and each stage gets a pointer into the scratch
// moved back by the block's first row times the bytes of a row, so its own
// row-major offsets land inside the block. x and y stay the chain's
// buffers. --jittor-rules makes no chain.
// RUN: jitc compile %s --emit mlir | FileCheck %s
// RUN: jitc compile %s --emit mlir --jittor-rules | FileCheck %s --check-prefix=JITTOR
// RUN: jitc compile %s --emit mlir --check-bounds | FileCheck %s --check-prefix=JITTOR
// RUN: jitc explain %s | FileCheck %s --check-prefix=EXPLAIN
// RUN: jitc run %s --math exact --input "512x256xf32=0.5" --print-max-elements 200000 | FileCheck %s --check-prefix=OUT

func.func @main(%x: tensor<512x256xf32>) -> tensor<512x256xf32> {
  %max = "meta.reindex_reduce"(%x) {kind = "max", indices = affine_map<(i, j) -> (i)>}
         : (tensor<512x256xf32>) -> tensor<512xf32>
  %max_b = "meta.reindex"(%max) {indices = affine_map<(i, j) -> (i)>} : (tensor<512xf32>) -> tensor<512x256xf32>
  %shifted = "meta.binary"(%x, %max_b) {kind = "sub"} : (tensor<512x256xf32>, tensor<512x256xf32>) -> tensor<512x256xf32>
  %e = "meta.unary"(%shifted) {kind = "exp"} : (tensor<512x256xf32>) -> tensor<512x256xf32>
  %sum = "meta.reindex_reduce"(%e) {kind = "add", indices = affine_map<(i, j) -> (i)>}
         : (tensor<512x256xf32>) -> tensor<512xf32>
  %sum_b = "meta.reindex"(%sum) {indices = affine_map<(i, j) -> (i)>} : (tensor<512xf32>) -> tensor<512x256xf32>
  %y = "meta.binary"(%e, %sum_b) {kind = "div"} : (tensor<512x256xf32>, tensor<512x256xf32>) -> tensor<512x256xf32>
  return %y : tensor<512x256xf32>
}

// The three stages are lowered as usual, then the chain.
// CHECK: func.func @main_fused_0(
// CHECK: func.func @main_fused_1(
// CHECK: func.func @main_fused_2(
// CHECK-LABEL: func.func @main_fused_0_rows(
// CHECK-SAME: %{{.*}}: !llvm.ptr, %{{.*}}: i64, %{{.*}}: i64)
// Scratch: the maxima, the exponentials, the sums.
// CHECK: %[[MAX:.*]] = llvm.alloca %c508_i64 x i8 {alignment = 64 : i64}
// CHECK: %[[EXP:.*]] = llvm.alloca %c130048_i64 x i8 {alignment = 64 : i64}
// CHECK: %[[SUM:.*]] = llvm.alloca %c508_i64{{.*}} x i8 {alignment = 64 : i64}
// CHECK: scf.for %[[ROW:.*]] = %{{.*}} to %{{.*}} step %c127 {
// CHECK: %[[FIRST:.*]] = arith.index_cast %[[ROW]] : index to i64
// CHECK: %[[BACK:.*]] = arith.muli %[[FIRST]], %c-4_i64
// CHECK: llvm.getelementptr %[[MAX]][%[[BACK]]]
// CHECK: func.call @main_fused_0(%{{.*}}, %[[FIRST]], %{{.*}})
// CHECK: arith.muli %[[FIRST]], %c-1024_i64
// CHECK: func.call @main_fused_1(
// CHECK: func.call @main_fused_2(
// CHECK-NOT: func.call
// CHECK: return

// JITTOR-NOT: _rows

// Every row is 256 equal values: each is 1/256.
// OUT: result[0]: 512x256xf32=[0.00390625 0.00390625

// EXPLAIN: row chains on the cpu backend (fused past rule 2; --jittor-rules makes none):
// EXPLAIN-NEXT: @main_fused_0_rows in @main runs @main_fused_0, @main_fused_1, @main_fused_2 one block of 127 of its 512 rows at a time: rows of 1032 bytes stay in cache
