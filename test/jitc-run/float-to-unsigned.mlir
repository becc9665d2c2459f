// `arith.fptoui` truncates toward zero and saturates at the unsigned
// limits (NaN gives 0), and the bits are read as the signless integer of
// that width (docs/semantics.md): 2^31 as i32 prints as -2^31, 1.8e19 as
// i64 as 1.8e19 - 2^64. Host code, so the cpu backend runs the
// interpreter's arithmetic; both are checked.

// RUN: jitc run %s --backend interp --input f32=2147483648 --input f64=1.8e19 | FileCheck %s --check-prefix=BIG
// RUN: jitc run %s --backend cpu --input f32=2147483648 --input f64=1.8e19 | FileCheck %s --check-prefix=BIG
// BIG: result[0]: i32=-2147483648
// BIG-NEXT: result[1]: i64=-446744073709551616

// RUN: jitc run %s --backend cpu --input f32=4000000000 --input f64=9.3e18 | FileCheck %s --check-prefix=MID
// MID: result[0]: i32=-294967296
// MID-NEXT: result[1]: i64=-9146744073709551616

// RUN: jitc run %s --backend cpu --input f32=-3.5 --input f64=1e30 | FileCheck %s --check-prefix=SATURATED
// SATURATED: result[0]: i32=0
// SATURATED-NEXT: result[1]: i64=-1

// RUN: jitc run %s --backend cpu --input f32=nan --input f64=7.9 | FileCheck %s --check-prefix=SMALL
// SMALL: result[0]: i32=0
// SMALL-NEXT: result[1]: i64=7

func.func @main(%a: f32, %b: f64) -> (i32, i64) {
  %u = arith.fptoui %a : f32 to i32
  %v = arith.fptoui %b : f64 to i64
  return %u, %v : i32, i64
}
