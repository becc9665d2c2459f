// --backend cpu: fused kernels run as native code and give the
// interpreter's results.
// The cpu backend is the default; --math exact and fast both run it.
// RUN: jitc run %examples/softmax.mlir --input 4x8xf32=1 --math exact | FileCheck %s --check-prefix=SOFTMAX
// RUN: jitc run %examples/softmax.mlir --input 4x8xf32=1 --math fast | FileCheck %s --check-prefix=SOFTMAX
// SOFTMAX: result[0]: 4x8xf32=[0.125 0.125 0.125 0.125 0.125 0.125 0.125 0.125]
// RUN: not jitc run %s --math sloppy 2>&1 | FileCheck %s --check-prefix=BADMATH
// BADMATH: error: invalid value 'sloppy' for '--math <MATH>'
// RUN: jitc run %examples/conv.mlir --backend cpu --input 2x3x5x5xf32=1 --input 4x3x3x3xf32=1 | FileCheck %s --check-prefix=CONV
// CONV: result[0]: 2x4x5x5xf32=[{{\[}}[12 18 18 18 12][18 27 27 27 18]
// RUN: jitc run %examples/rnn.mlir --backend cpu --input 5x4x6xf32=1 --input 6x8xf32=0 --input 8x8xf32=0 --state rnn.h=4x8xf32=7 | FileCheck %s --check-prefix=RNN
// RNN: result[0]: 4x8xf32=[0 0 0 0 0 0 0 0]
// RUN: not jitc run %s --backend cpu --input "4xi32=7 -7 1 2" --input "4xi32=2 2 0 -1" 2>&1 | FileCheck %s --check-prefix=DIV
// RUN: not jitc run %s --backend interp --input "4xi32=7 -7 1 2" --input "4xi32=2 2 0 -1" 2>&1 | FileCheck %s --check-prefix=DIV
// The division is reported at its op, in the interpreter's words.
// DIV: jitc run: error: 'meta.binary' at line [[# @LINE + 4]]: integer division by zero
// RUN: jitc run %s --backend cpu --input "4xi32=7 -7 1 2" --input "4xi32=2 2 3 -1" | FileCheck %s --check-prefix=OK
// OK: result[0]: 4xi32=3 -3 0 -2
func.func @main(%a: tensor<4xi32>, %b: tensor<4xi32>) -> tensor<4xi32> {
  %q = "meta.binary"(%a, %b) {kind = "div"} : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi32>
  return %q : tensor<4xi32>
}
