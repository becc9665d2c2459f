// Fused modules still run in the interpreter, with the same results.
// RUN: jitc opt %examples/conv.mlir --meta-fuse | jitc run - --input 2x3x5x5xf32=1 --input 4x3x3x3xf32=1 | FileCheck %s --check-prefix=CONV
// CONV: result[0]: 2x4x5x5xf32=[{{\[}}[12 18 18 18 12][18 27 27 27 18]
// RUN: jitc opt %examples/matmul.mlir --meta-fuse | jitc run - --input "4x3xf32=1 2 3 4 5 6 7 8 9 10 11 12" --input "3x5xf32=1 0 0 0 1 0 1 0 0 1 0 0 1 0 1" | FileCheck %s --check-prefix=MATMUL
// MATMUL: result[0]: 4x5xf32=[1 2 3 0 6][4 5 6 0 15][7 8 9 0 24][10 11 12 0 33]
// RUN: jitc opt %examples/mlp.mlir --meta-fuse | jitc run - --input 2x4xf32=1 --input 4x8xf32=-0.5 --input 8xf32=1 --input 8x3xf32=1 --input 3xf32=0.5 | FileCheck %s --check-prefix=MLP
// MLP: result[0]: 2x3xf32=[0.5 0.5 0.5][0.5 0.5 0.5]
// RUN: jitc opt %examples/rnn.mlir --meta-fuse | jitc run - --input 5x4x6xf32=1 --input 6x8xf32=0 --input 8x8xf32=0 --state rnn.h=4x8xf32=7 | FileCheck %s --check-prefix=RNN
// RNN: result[0]: 4x8xf32=[0 0 0 0 0 0 0 0]
// RNN: state[rnn.h]: 4x8xf32=[0 0 0 0 0 0 0 0]
// RUN: jitc opt %examples/softmax.mlir --meta-fuse | jitc run - --input "4x8xf32=[0 0 0 0 0 0 1.0986123 0][0 0 0 0 0 0 0 0][1 1 1 1 1 1 1 1][-5 -5 -5 -5 -5 -5 -5 -5]" | FileCheck %s --check-prefix=SOFTMAX
// Fast math multiplies by the row sum's reciprocal (one more rounding):
// 0.1 may print as 0.10000001.
// SOFTMAX: result[0]: 4x8xf32=[0.1{{(0000001)?}} 0.1{{(0000001)?}} 0.1{{(0000001)?}} 0.1{{(0000001)?}} 0.1{{(0000001)?}} 0.1{{(0000001)?}} 0.{{30*[0-9]?}} 0.1{{(0000001)?}}][0.125
// RUN: jitc opt %examples/rnn.mlir --meta-fuse | FileCheck %s --check-prefix=LOOP
// The loop body fuses inside the loop: the loop stays, its body calls kernels.
// LOOP: scf.for
// LOOP: call @main_fused_
// LOOP: scf.yield
