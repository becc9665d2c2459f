// Every example compiles for NVIDIA GPUs with no GPU present: one `.entry`
// per fused kernel (plus a `_fill` entry where reductions accumulate in
// memory), each computing its global thread number from %ctaid.x, %ntid.x
// and %tid.x and returning early past the last point.
// RUN: jitc compile --target nvptx --emit ptx %examples/softmax.mlir | FileCheck %s --check-prefixes=COMMON,SOFTMAX
// RUN: jitc compile --target nvptx --emit ptx %examples/matmul.mlir | FileCheck %s --check-prefixes=COMMON,MATMUL
// RUN: jitc compile --target nvptx --emit ptx %examples/mlp.mlir | FileCheck %s --check-prefixes=COMMON,MLP
// RUN: jitc compile --target nvptx --emit ptx %examples/rnn.mlir | FileCheck %s --check-prefixes=COMMON,RNN
// RUN: jitc compile --target nvptx --emit ptx %examples/rnn.mlir | FileCheck %s --check-prefix=RNN-PARAM
// RUN: jitc compile --target nvptx --emit ptx %examples/sigmoid.mlir | FileCheck %s --check-prefixes=COMMON,SIGMOID
// RUN: jitc compile --target nvptx --emit ptx %examples/conv.mlir | FileCheck %s --check-prefixes=COMMON,CONV
// RUN: jitc compile --target nvptx --emit ptx %examples/instance_norm.mlir | FileCheck %s --check-prefix=NORM
// RUN: jitc compile --target nvptx --emit ptx %examples/indrnn.mlir 2>%t.err | FileCheck %s --check-prefixes=COMMON,INDRNN
// RUN: FileCheck %s --allow-empty --check-prefix=INDRNN-NOTE < %t.err
// RUN: jitc compile --target nvptx --gpu-arch sm_90 --emit ptx %examples/sigmoid.mlir | FileCheck %s --check-prefix=SM90
// No kernel of any example is left to the interpreter on the GPU (fast
// math, the default): no compile prints a note.
// RUN: rm -f %t.notes && touch %t.notes
// RUN: jitc compile --target nvptx --emit ptx %examples/conv.mlir -o %t.ptx 2>>%t.notes
// RUN: jitc compile --target nvptx --emit ptx %examples/indrnn.mlir -o %t.ptx 2>>%t.notes
// RUN: jitc compile --target nvptx --emit ptx %examples/instance_norm.mlir -o %t.ptx 2>>%t.notes
// RUN: jitc compile --target nvptx --emit ptx %examples/matmul.mlir -o %t.ptx 2>>%t.notes
// RUN: jitc compile --target nvptx --emit ptx %examples/mlp.mlir -o %t.ptx 2>>%t.notes
// RUN: jitc compile --target nvptx --emit ptx %examples/mlp_step.mlir -o %t.ptx 2>>%t.notes
// RUN: jitc compile --target nvptx --emit ptx %examples/rnn.mlir -o %t.ptx 2>>%t.notes
// RUN: jitc compile --target nvptx --emit ptx %examples/sigmoid.mlir -o %t.ptx 2>>%t.notes
// RUN: jitc compile --target nvptx --emit ptx %examples/softmax.mlir -o %t.ptx 2>>%t.notes
// RUN: FileCheck %s --allow-empty --check-prefix=NONE < %t.notes
// NONE-NOT: {{.}}

// COMMON: .version 7.0
// COMMON: .target sm_80
// COMMON: .address_size 64

// The thread-index arithmetic of one thread per point.
// COMMON: .visible .entry [[K:main_fused_0|relu_fused_0]](
// COMMON: mov.u32 [[TID:%r[0-9]+]], %tid.x;
// COMMON: mov.u32 [[BID:%r[0-9]+]], %ctaid.x;
// COMMON: mov.u32 [[BDIM:%r[0-9]+]], %ntid.x;
// COMMON: mul.wide.u32 [[BASE:%rd[0-9]+]], [[BID]], [[BDIM]];
// COMMON: add.s64 [[POINT:%rd[0-9]+]], [[BASE]], %rd{{[0-9]+}};
// COMMON: setp.gt.u64 %p{{[0-9]+}}, [[POINT]], {{[0-9]+}};

// Softmax: a row max, exp with the row sum, a division; 4 rows.
// SOFTMAX-COUNT-2: .visible .entry
// SOFTMAX-NOT: .entry
// SOFTMAX-NOT: bar.sync

// A 64x64 matmul: one thread per output element, k looped in the thread.
// MATMUL-NOT: .entry

// The MLP has two layers and a relu in its own function.
// MLP-COUNT-4: .visible .entry
// MLP-NOT: .entry

// The RNN step kernels; the time loop stays in the host schedule, and
// the step index is an i64 parameter passed by value.
// RNN-COUNT-2: .visible .entry
// RNN-NOT: .entry
// RNN-PARAM: .visible .entry main_fused_0(
// RNN-PARAM-NEXT: .param .u64 .ptr .align 16 main_fused_0_param_0,
// RNN-PARAM-NEXT: .param .u64 main_fused_0_param_1,

// Sigmoid: the polynomial exp, no calls; x log2(e) is rounded to the
// nearest integer by adding 1.5 * 2^23 (0f4B400000), whose bits less the
// shift's are the integer, without the GPU's slow conversions.
// SIGMOID-NOT: call
// SIGMOID: fma.rn.f32 [[SHIFTED:%r[0-9]+]], {{%r[0-9]+}}, 0f3FB8AA3B, 0f4B400000;
// SIGMOID-NEXT: add.rn.f32 {{%r[0-9]+}}, [[SHIFTED]], 0fCB400000;
// SIGMOID-NEXT: add.s32 {{%r[0-9]+}}, [[SHIFTED]], -1262485504;
// SIGMOID-NOT: cvt.rmi
// SIGMOID-NOT: cvt.rzi
// SIGMOID-NOT: .entry

// The padded convolution: one thread per output, the in-thread loops over
// the input channel and the window, bounds checked by selects.
// CONV-NOT: .entry

// Instance norm: the statistics reduce into a 1x3x1x1 tensor; the map's
// constant indices (0, c, 0, 0) keep it a projection, so each channel is
// one block that folds in registers and combines in shared memory, with
// no fill launch (so no thread-per-point prologue to check first).
// NORM-NOT: _fill(
// NORM: .visible .entry main_fused_0(
// NORM: .shared
// NORM: bar.sync
// NORM-COUNT-2: .visible .entry
// NORM-NOT: .entry

// IndRNN: the projection reads `%xs` of dynamic length (tensor<?x16x64xf32>)
// at step t. Its length is the entry's last parameter, by value, after the
// status record; t is checked against it (0 <= t < length) and the row
// starts at t * 1024 elements. Every kernel is compiled: no note.
// INDRNN: .visible .entry main_fused_1(
// INDRNN-NEXT: .param .u64 .ptr .align 16 main_fused_1_param_0,
// INDRNN-NEXT: .param .u64 main_fused_1_param_1,
// INDRNN-NEXT: .param .u64 .ptr .align 16 main_fused_1_param_2,
// INDRNN-NEXT: .param .u64 .ptr .align 16 main_fused_1_param_3,
// INDRNN-NEXT: .param .u64 .ptr .align 16 main_fused_1_param_4,
// INDRNN-NEXT: .param .u64 main_fused_1_param_5
// INDRNN-NEXT: )
// INDRNN-DAG: ld.param.b64 [[T:%rd[0-9]+]], [main_fused_1_param_1];
// INDRNN-DAG: ld.param.b64 [[LENGTH:%rd[0-9]+]], [main_fused_1_param_5];
// INDRNN-DAG: setp.gt.s64 [[LOW:%p[0-9]+]], [[T]], -1;
// INDRNN-DAG: setp.lt.s64 [[HIGH:%p[0-9]+]], [[T]], [[LENGTH]];
// INDRNN-DAG: shl.b64 {{%rd[0-9]+}}, [[T]], 10;
// INDRNN: ret;
// INDRNN: .visible .entry main_fused_2(
// INDRNN-NOT: .entry
// INDRNN-NOTE-NOT: not compiled

// SM90: .version 7.8
// SM90: .target sm_90
