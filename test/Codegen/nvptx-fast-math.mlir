// What the GPU's fast math and block reductions spend per element
// (lower::poly::PolyTarget, lower::gpu_nest):
// - the polynomial `tanh` divides with `div.approx.f32` (`afn`): its
//   denominator, 1 + e^(2|x|), is above 4.4, and a quotient's 2 ulps are
//   at most 1 in the result; `--math exact` calls libdevice instead;
// - the polynomial `exp` rounds with 1.5 * 2^23, not `floor` and a
//   conversion (the GPU runs those at a sixteenth of the FMA rate);
// - a block's stride loop (@stats: 4 channels, each a fold of 8 x 56 x 56)
//   delinearizes in 32-bit arithmetic (one multiply-high per division, not
//   a 64-bit multiply-high's several) and runs several steps an iteration,
//   so each thread has that many loads in flight.
// RUN: jitc compile --target nvptx --emit ptx %s | FileCheck %s
// RUN: jitc compile --target nvptx --emit ptx %s | FileCheck %s --check-prefix=NARROW

// NARROW-LABEL: .visible .entry stats_fused_0(
// NARROW-NOT: mul.hi.u64
// NARROW: bar.sync
// CHECK-LABEL: .visible .entry stats_fused_0(
// CHECK: $L__BB0_1:
// CHECK-COUNT-7: ld.global.nc.b32
// CHECK-NOT: ld.global
// CHECK: bra{{.*}}$L__BB0_1;
// CHECK: bar.sync
func.func @stats(%x: tensor<8x4x56x56xf32>) -> tensor<4xf32> {
  %s = "meta.reindex_reduce"(%x) {kind = "add", indices = affine_map<(n, c, h, w) -> (c)>} : (tensor<8x4x56x56xf32>) -> tensor<4xf32>
  return %s : tensor<4xf32>
}

// CHECK-LABEL: .visible .entry gelu_fused_0(
// CHECK-NOT: cvt.rmi
// CHECK-NOT: cvt.rzi
// CHECK-NOT: div.rn
// CHECK: div.approx.f32
// CHECK-NOT: div.rn
// CHECK: ret;
func.func @gelu(%x: tensor<4096xf32>) -> tensor<4096xf32> {
  %t = "meta.unary"(%x) {kind = "tanh"} : (tensor<4096xf32>) -> tensor<4096xf32>
  return %t : tensor<4096xf32>
}
