// jitc bench reports compile time, call times and bandwidth (values vary;
// only the report's shape is checked).
// RUN: jitc bench %s --input 4096xf32=0.5 --repetitions 3 | FileCheck %s
// RUN: jitc bench %s --backend interp --input 4096xf32=0.5 --warmup 0 --repetitions 1 | FileCheck %s --check-prefix=INTERP
// RUN: not jitc bench %s --input 4xf32=1 2>&1 | FileCheck %s --check-prefix=BADINPUT

// CHECK: function: @main (cpu backend)
// CHECK-NEXT: compile: {{[0-9.]+}} ms cold; from the cache {{[0-9.]+}} ms (printed module), {{[0-9.]+}} µs (this context's CompileCache)
// CHECK-NEXT: calls: 3 timed after 2 warm-up; median {{[0-9.]+}} ms, min {{[0-9.]+}} ms
// CHECK-NEXT: bytes moved: 32768 per call; {{[0-9.]+}} GB/s at the median
// INTERP: function: @main (interp backend)
// INTERP: calls: 1 timed after 0 warm-up
// BADINPUT: jitc bench: error: input 0 (`4xf32=1`) is tensor<4xf32> but argument 0 of @main is tensor<4096xf32>

func.func @main(%x: tensor<4096xf32>) -> tensor<4096xf32> {
  %y = "meta.unary"(%x) {kind = "tanh"} : (tensor<4096xf32>) -> tensor<4096xf32>
  return %y : tensor<4096xf32>
}
