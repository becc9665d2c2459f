// An element-wise op whose result is of dynamic shape while its argument's
// is static (the verifier accepts it; `meta-refine` would make the result
// static): its kernel has no argument of dynamic shape to size its result,
// so it runs in the interpreter, and `jitc run` and `jitc compile` say so.
// It used to be an internal compiler error on the cpu backend.

// RUN: jitc run %s --input "2xf32=1 2" 2>&1 | FileCheck %s --check-prefix=INTERPRETED
// INTERPRETED-DAG: result[0]: 2xf32=-1 -2
// INTERPRETED-DAG: jitc run: note: kernel @main_fused_0 runs in the interpreter: @main_fused_0 is element-wise with results of dynamic shape but no argument of dynamic shape to size them
// INTERPRETED-NOT: internal compiler error

// RUN: jitc compile %s --emit llvm 2>&1 >/dev/null | FileCheck %s --check-prefix=COMPILE
// COMPILE: jitc compile: note: kernel @main_fused_0 is not compiled: @main_fused_0 is element-wise with results of dynamic shape but no argument of dynamic shape to size them

// RUN: jitc opt --meta-refine %s | FileCheck %s --check-prefix=REFINED
// REFINED: "meta.unary"(%{{.*}}) {kind = "neg"} : (tensor<2xf32>) -> tensor<2xf32>
// REFINED-NEXT: tensor.cast %{{.*}} : tensor<2xf32> to tensor<?xf32>

func.func @main(%x: tensor<2xf32>) -> tensor<?xf32> {
  %r = "meta.unary"(%x) {kind = "neg"} : (tensor<2xf32>) -> tensor<?xf32>
  return %r : tensor<?xf32>
}
