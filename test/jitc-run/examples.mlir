// Every bundled example runs in the interpreter on inline inputs, with
// results computed by hand.

// Convolution of ones with ones, padding 1: corners see 2x2 taps, edges
// 2x3, the interior 3x3, times 3 input channels.
// RUN: jitc run %examples/conv.mlir --input 2x3x5x5xf32=1 --input 4x3x3x3xf32=1 | FileCheck %s --check-prefix=CONV
// CONV: result[0]: 2x4x5x5xf32=[{{\[}}[12 18 18 18 12][18 27 27 27 18][18 27 27 27 18][18 27 27 27 18][12 18 18 18 12]]

// RUN: jitc run %examples/matmul.mlir --input "4x3xf32=1 2 3 4 5 6 7 8 9 10 11 12" --input "3x5xf32=1 0 0 0 1 0 1 0 0 1 0 0 1 0 1" | FileCheck %s --check-prefix=MATMUL
// MATMUL: result[0]: 4x5xf32=[1 2 3 0 6][4 5 6 0 15][7 8 9 0 24][10 11 12 0 33]

// RUN: jitc run %examples/sigmoid.mlir --input 1024xf32=0 | FileCheck %s --check-prefix=SIGMOID
// SIGMOID: result[0]: 1024xf32=0.5 0.5 0.5

// Softmax of a row [0 0 0 0 0 0 ln3 0] is 1/10 everywhere but 3/10.
// RUN: jitc run %examples/softmax.mlir --input "4x8xf32=[0 0 0 0 0 0 1.0986123 0][0 0 0 0 0 0 0 0][1 1 1 1 1 1 1 1][-5 -5 -5 -5 -5 -5 -5 -5]" | FileCheck %s --check-prefix=SOFTMAX
// Fast math multiplies by the row sum's reciprocal (one more rounding):
// 0.1 may print as 0.10000001.
// SOFTMAX: result[0]: 4x8xf32=[0.1{{(0000001)?}} 0.1{{(0000001)?}} 0.1{{(0000001)?}} 0.1{{(0000001)?}} 0.1{{(0000001)?}} 0.1{{(0000001)?}} 0.{{30*[0-9]?}} 0.1{{(0000001)?}}][0.125 0.125 0.125 0.125 0.125 0.125 0.125 0.125][0.125

// x W1 + b1 = 4 * 1 * -0.5 + 1 = -1, so ReLU gives 0 and y = b2.
// RUN: jitc run %examples/mlp.mlir --input 2x4xf32=1 --input 4x8xf32=-0.5 --input 8xf32=1 --input 8x3xf32=1 --input 3xf32=0.5 | FileCheck %s --check-prefix=MLP
// MLP: result[0]: 2x3xf32=[0.5 0.5 0.5][0.5 0.5 0.5]

// With zero weights h stays tanh(0) = 0; the state is read, then written.
// RUN: jitc run %examples/rnn.mlir --input 5x4x6xf32=1 --input 6x8xf32=0 --input 8x8xf32=0 --state rnn.h=4x8xf32=7 | FileCheck %s --check-prefix=RNN
// RNN: result[0]: 4x8xf32=[0 0 0 0 0 0 0 0]
// RNN: state[rnn.h]: 4x8xf32=[0 0 0 0 0 0 0 0]

// A constant input normalizes to zero.
// RUN: jitc run %examples/instance_norm.mlir --input 2x3x4x4xf32=3 | FileCheck %s --check-prefix=NORM
// NORM: result[0]: 2x3x4x4xf32=[{{\[}}[0 0 0 0][0 0 0 0]
