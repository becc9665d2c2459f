// Affine index arithmetic that leaves i64 is an error of the interpreter
// ("affine index arithmetic overflows i64"). The verifier rejects what it
// can prove; what it cannot (a symbol's value, or a `mod` whose overflow
// no corner of the domain shows) compiled kernels check at run time, and
// report in the interpreter's words. They used to wrap and read the
// element the wrapped index named.
//
// d0 * s0 with s0 = 2^62 overflows at d0 = 2:
// RUN: not jitc run %s --function mul --input "4xf32=1 2 3 4" --input index=4611686018427387904 --backend interp 2>&1 | FileCheck %s --check-prefix=OVERFLOW
// RUN: not jitc run %s --function mul --input "4xf32=1 2 3 4" --input index=4611686018427387904 --backend cpu 2>&1 | FileCheck %s --check-prefix=OVERFLOW
// RUN: not jitc run %s --function mul --input "4xf32=1 2 3 4" --input index=4611686018427387904 --backend cpu --check-bounds 2>&1 | FileCheck %s --check-prefix=OVERFLOW
// d0 + s0 with s0 = i64::MAX overflows at d0 = 1:
// RUN: not jitc run %s --function add --input "4xf32=1 2 3 4" --input index=9223372036854775807 --backend interp 2>&1 | FileCheck %s --check-prefix=OVERFLOW
// RUN: not jitc run %s --function add --input "4xf32=1 2 3 4" --input index=9223372036854775807 --backend cpu 2>&1 | FileCheck %s --check-prefix=OVERFLOW
// The target of a reduction:
// RUN: not jitc run %s --function reduce --input "4xf32=1 2 3 4" --input index=9223372036854775807 --backend interp 2>&1 | FileCheck %s --check-prefix=OVERFLOW
// RUN: not jitc run %s --function reduce --input "4xf32=1 2 3 4" --input index=9223372036854775807 --backend cpu 2>&1 | FileCheck %s --check-prefix=OVERFLOW
// No symbol, and no corner overflows ((d0 mod 3) is 0 at d0 = 0 and at
// d0 = 3), so the verifier accepts it; d0 = 2 overflows:
// RUN: not jitc run %s --function inner --input "4xf32=1 2 3 4" --backend interp 2>&1 | FileCheck %s --check-prefix=OVERFLOW
// RUN: not jitc run %s --function inner --input "4xf32=1 2 3 4" --backend cpu 2>&1 | FileCheck %s --check-prefix=OVERFLOW
// OVERFLOW: error: {{.*}}affine index arithmetic overflows i64
//
// The same maps where nothing overflows compute the same on both:
// RUN: jitc run %s --function mul --input "4xf32=1 2 3 4" --input index=3 --backend interp | FileCheck %s --check-prefix=MUL
// RUN: jitc run %s --function mul --input "4xf32=1 2 3 4" --input index=3 --backend cpu | FileCheck %s --check-prefix=MUL
// MUL: result[0]: 4xf32=1 4 3 2
// RUN: jitc run %s --function add --input "4xf32=1 2 3 4" --input index=4611686018427387904 --backend cpu | FileCheck %s --check-prefix=ADD
// ADD: result[0]: 4xf32=1 2 3 4
// RUN: jitc run %s --function reduce --input "4xf32=1 2 3 4" --input index=3 --backend cpu | FileCheck %s --check-prefix=REDUCE
// REDUCE: result[0]: 2xf32=4 6
//
// The interpreter does not evaluate the map where an overflow condition
// holds, so an overflow there is no error on any backend:
// RUN: jitc run %s --function guarded --input "4xf32=1 2 3 4" --input index=9223372036854775807 --backend interp | FileCheck %s --check-prefix=GUARDED
// RUN: jitc run %s --function guarded --input "4xf32=1 2 3 4" --input index=9223372036854775807 --backend cpu | FileCheck %s --check-prefix=GUARDED
// GUARDED: result[0]: 4xf32=1 4 -1 -1
//
// Only arithmetic the domain does not bound is checked: a map of dims and
// constants alone costs nothing.
// RUN: jitc compile %s --emit mlir | FileCheck %s --check-prefix=CODE
// CODE-LABEL: func.func @mul_fused_0
// CODE: arith.mulsi_extended
// CODE: llvm.cmpxchg
// CODE-LABEL: func.func @plain_fused_0
// CODE-NOT: arith.mulsi_extended
// CODE-NOT: llvm.cmpxchg
// CODE: return

func.func @mul(%x: tensor<4xf32>, %n: index) -> tensor<4xf32> {
  %y = "meta.reindex"(%x, %n) {indices = affine_map<(d0)[s0] -> ((d0 * s0) mod 4)>} : (tensor<4xf32>, index) -> tensor<4xf32>
  return %y : tensor<4xf32>
}

func.func @add(%x: tensor<4xf32>, %n: index) -> tensor<4xf32> {
  %y = "meta.reindex"(%x, %n) {indices = affine_map<(d0)[s0] -> ((d0 + s0) mod 4)>} : (tensor<4xf32>, index) -> tensor<4xf32>
  return %y : tensor<4xf32>
}

func.func @reduce(%x: tensor<4xf32>, %n: index) -> tensor<2xf32> {
  %s = "meta.reindex_reduce"(%x, %n) {kind = "add", indices = affine_map<(d0)[s0] -> ((d0 * s0) mod 2)>} : (tensor<4xf32>, index) -> tensor<2xf32>
  return %s : tensor<2xf32>
}

func.func @inner(%x: tensor<4xf32>) -> tensor<4xf32> {
  %y = "meta.reindex"(%x) {indices = affine_map<(d0) -> (((d0 mod 3) * 4611686018427387905) mod 4)>} : (tensor<4xf32>) -> tensor<4xf32>
  return %y : tensor<4xf32>
}

func.func @guarded(%x: tensor<4xf32>, %n: index) -> tensor<4xf32> {
  %y = "meta.reindex"(%x, %n) {indices = affine_map<(d0)[s0] -> ((d0 * s0) mod 4)>, overflow_conditions = [affine_set<(d0)[s0] : (d0 - 2 >= 0)>], overflow_value = -1.0 : f32} : (tensor<4xf32>, index) -> tensor<4xf32>
  return %y : tensor<4xf32>
}

func.func @plain(%x: tensor<4x8xf32>) -> tensor<8x4xf32> {
  %y = "meta.reindex"(%x) {indices = affine_map<(d0, d1) -> (d1 floordiv 2, d0 * 2 + 1 - d1 mod 2)>} : (tensor<4x8xf32>) -> tensor<8x4xf32>
  return %y : tensor<8x4xf32>
}
