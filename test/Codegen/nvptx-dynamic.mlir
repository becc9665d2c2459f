// GPU kernels that read tensors of dynamic shape over a static domain: the
// size of each dynamic dimension is an i64 parameter, by value, after the
// buffers and the status record, in argument then dimension order; the
// kernel reads it where the CPU's kernels read their shape slot (strides,
// and the checks that send an index past the size to the overflow value).
// A domain of dynamic shape is not lowered for the GPU yet: its kernel
// runs in the interpreter, with a note.
// RUN: jitc compile --target nvptx --emit ptx %s 2>%t.err | FileCheck %s
// RUN: FileCheck %s --check-prefix=NOTE < %t.err
// RUN: jitc compile --target nvptx --emit ptx --check-bounds %s 2>/dev/null | FileCheck %s --check-prefix=CHECKED

// A window of rows 1 to 3 of x: row i + 1 must be below x's length.
// CHECK-LABEL: .visible .entry window_fused_0(
// CHECK-NEXT: .param .u64 .ptr .align 16 window_fused_0_param_0,
// CHECK-NEXT: .param .u64 .ptr .align 16 window_fused_0_param_1,
// CHECK-NEXT: .param .u64 .ptr .align 16 window_fused_0_param_2,
// CHECK-NEXT: .param .u64 window_fused_0_param_3
// CHECK-NEXT: )
// CHECK: ld.param.b64 [[LENGTH:%rd[0-9]+]], [window_fused_0_param_3];
// CHECK: setp.lt.s64 {{%p[0-9]+}}, {{%rd[0-9]+}}, [[LENGTH]];
// CHECK: ret;
func.func @window(%x: tensor<?x4xf32>) -> tensor<3x4xf32> {
  %w = "meta.reindex"(%x) {indices = affine_map<(i, j) -> (i + 1, j)>} : (tensor<?x4xf32>) -> tensor<3x4xf32>
  %e = "meta.unary"(%w) {kind = "exp"} : (tensor<3x4xf32>) -> tensor<3x4xf32>
  return %e : tensor<3x4xf32>
}

// Three dynamic sizes: x's two, then y's second. x[j, i] is j * size1 + i.
// CHECK-LABEL: .visible .entry two_fused_0(
// CHECK: .param .u64 .ptr .align 16 two_fused_0_param_3,
// CHECK-NEXT: .param .u64 two_fused_0_param_4,
// CHECK-NEXT: .param .u64 two_fused_0_param_5,
// CHECK-NEXT: .param .u64 two_fused_0_param_6
// CHECK-NEXT: )
// CHECK-DAG: ld.param.b64 [[X1:%rd[0-9]+]], [two_fused_0_param_5];
// CHECK-DAG: ld.param.b64 [[Y1:%rd[0-9]+]], [two_fused_0_param_6];
// CHECK-DAG: mul.lo.s64 {{%rd[0-9]+}}, {{%rd[0-9]+}}, [[X1]];
// CHECK-DAG: mul.lo.s64 {{%rd[0-9]+}}, {{%rd[0-9]+}}, [[Y1]];
// CHECK: ret;
func.func @two(%x: tensor<?x?xf32>, %y: tensor<2x?xf32>) -> tensor<2x2xf32> {
  %a = "meta.reindex"(%x) {indices = affine_map<(i, j) -> (j, i)>} : (tensor<?x?xf32>) -> tensor<2x2xf32>
  %b = "meta.reindex"(%y) {indices = affine_map<(i, j) -> (i, j)>} : (tensor<2x?xf32>) -> tensor<2x2xf32>
  %s = "meta.binary"(%a, %b) {kind = "add"} : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x2xf32>
  return %s : tensor<2x2xf32>
}

// A reduction that accumulates in memory: its fill entry takes the same
// parameters, the size last.
// CHECK-LABEL: .visible .entry pairs_fused_0(
// CHECK: .param .u64 .ptr .align 16 pairs_fused_0_param_2,
// CHECK-NEXT: .param .u64 pairs_fused_0_param_3
// CHECK-NEXT: )
// CHECK-LABEL: .visible .entry pairs_fused_0_fill(
// CHECK: .param .u64 .ptr .align 16 pairs_fused_0_fill_param_2,
// CHECK-NEXT: .param .u64 pairs_fused_0_fill_param_3
// CHECK-NEXT: )
func.func @pairs(%x: tensor<?x8xf32>) -> tensor<2x8xf32> {
  %w = "meta.reindex"(%x) {indices = affine_map<(i, j) -> (i, j)>} : (tensor<?x8xf32>) -> tensor<4x8xf32>
  %s = "meta.reindex_reduce"(%w) {kind = "add", indices = affine_map<(i, j) -> (i floordiv 2, j)>} : (tensor<4x8xf32>) -> tensor<2x8xf32>
  return %s : tensor<2x8xf32>
}

// A split block reduction: the scratch memory's pointer (param_3), then
// the size.
// CHECK-LABEL: .visible .entry rows_fused_0(
// CHECK: .param .u64 .ptr .align 16 rows_fused_0_param_3,
// CHECK-NEXT: .param .u64 rows_fused_0_param_4
// CHECK-NEXT: )
func.func @rows(%x: tensor<?x65536xf32>) -> tensor<4xf32> {
  %w = "meta.reindex"(%x) {indices = affine_map<(i, j) -> (i, j)>} : (tensor<?x65536xf32>) -> tensor<4x65536xf32>
  %s = "meta.reindex_reduce"(%w) {kind = "add", indices = affine_map<(i, j) -> (i)>} : (tensor<4x65536xf32>) -> tensor<4xf32>
  return %s : tensor<4xf32>
}

// CHECK-NOT: .entry elementwise
// CHECK-NOT: .entry total
// NOTE-DAG: note: kernel @elementwise_fused_0 is not compiled: a domain of dynamic shape is not lowered for the GPU yet
// NOTE-DAG: note: kernel @total_fused_0 is not compiled: a domain of dynamic shape is not lowered for the GPU yet
// NOTE-NOT: window
// NOTE-NOT: two_fused
func.func @elementwise(%x: tensor<?x4xf32>) -> tensor<?x4xf32> {
  %e = "meta.unary"(%x) {kind = "neg"} : (tensor<?x4xf32>) -> tensor<?x4xf32>
  return %e : tensor<?x4xf32>
}

func.func @total(%x: tensor<?x4xf32>) -> tensor<f32> {
  %s = "meta.reindex_reduce"(%x) {kind = "add", indices = affine_map<(i, j) -> ()>} : (tensor<?x4xf32>) -> tensor<f32>
  return %s : tensor<f32>
}

// Bounds-checked: the load of x is checked against its run-time element
// count, the product of its sizes (length * 4).
// CHECKED-LABEL: .visible .entry window_fused_0(
// CHECKED: ld.param.b64 [[LENGTH:%rd[0-9]+]], [window_fused_0_param_3];
// CHECKED: shl.b64 {{%rd[0-9]+}}, [[LENGTH]], 2;
// CHECKED: atom
