// Maps whose divisor is not positive, or whose index arithmetic provably
// overflows i64, are rejected by the verifier, so every backend gives the
// same located error before anything runs (the CPU backend used to return
// numbers: `srem`/`sdiv` by 0 is undefined behaviour in LLVM).
// RUN: not jitc run %s --function mod_zero --input 4xf32=1 --backend cpu 2>&1 | FileCheck %s --check-prefix=MOD
// RUN: not jitc run %s --function mod_zero --input 4xf32=1 --backend interp 2>&1 | FileCheck %s --check-prefix=MOD
// MOD: illegal-maps.mlir:[[# @LINE + 8]]:8: error: 'meta.reindex' op indices map divides by 0 in 'd0 mod 0'; affine divisors must be positive
// RUN: not jitc run %s --function floordiv_negative --input 4xf32=1 --backend cpu 2>&1 | FileCheck %s --check-prefix=FLOOR
// FLOOR: error: 'meta.reindex' op indices map divides by -2 in 'd0 floordiv -2'; affine divisors must be positive
// RUN: not jitc run %s --function multiply_overflows --input 4xf32=1 --backend cpu 2>&1 | FileCheck %s --check-prefix=MUL
// RUN: not jitc run %s --function multiply_overflows --input 4xf32=1 --backend interp 2>&1 | FileCheck %s --check-prefix=MUL
// MUL: error: 'meta.reindex' op indices map overflows i64 in 'd0 * 4611686018427387904' at result index (3)

func.func @mod_zero(%a: tensor<4xf32>) -> tensor<4xf32> {
  %b = "meta.reindex"(%a) {indices = affine_map<(d0) -> (d0 mod 0)>} : (tensor<4xf32>) -> tensor<4xf32>
  return %b : tensor<4xf32>
}

func.func @floordiv_negative(%a: tensor<4xf32>) -> tensor<4xf32> {
  %b = "meta.reindex"(%a) {indices = affine_map<(d0) -> (d0 floordiv -2)>} : (tensor<4xf32>) -> tensor<4xf32>
  return %b : tensor<4xf32>
}

func.func @multiply_overflows(%a: tensor<4xf32>) -> tensor<4xf32> {
  %b = "meta.reindex"(%a) {indices = affine_map<(d0) -> (d0 * 4611686018427387904)>} : (tensor<4xf32>) -> tensor<4xf32>
  return %b : tensor<4xf32>
}
