//! Straight-line f32 `exp`, `log` and `tanh` for `--math fast`: plain
//! `arith` that the loop vectorizer widens and the NVPTX backend compiles
//! without libm, which the GPU target does not have.
//!
//! Each follows the Cephes single-precision routine: a range reduction to
//! a small interval, a minimax polynomial there by Horner's rule, and the
//! special values (infinities, zero, subnormals, and NaN for `log`) put
//! back with `select`s; `exp`'s clamps let a NaN through, and the
//! arithmetic after them keeps it NaN. Results are within 1-3 ulps of libm
//! (`docs/semantics.md`). A NaN result is a NaN, not necessarily the
//! input's bits.
//!
//! Invariants:
//! - no branches and no calls: every op is `arith`, or `math.absf` and
//!   `math.copysign`, which become instructions;
//! - no `fma`, which would become a libm call on a CPU without FMA: each
//!   polynomial step is a multiply and an add, both marked `contract`, so
//!   LLVM fuses them into one FMA instruction where the target has one;
//! - inputs and results are `f32`; [`super::scalar`] uses these only for
//!   f32 under [`super::MathMode::Fast`].
//!
//! The formulas:
//!
//! ```text
//! exp x  = 2^n e^r             n = round(x log2(e)), r = x - n ln2
//! log x  = e ln2 + ln(1 + f)   x = 2^e m, m in [sqrt(1/2), sqrt(2)), f = m - 1
//! tanh x = x + x^3 P(x^2)                   if |x| < 0.625
//!        = sign(x) (1 - 2 / (e^(2|x|) + 1)) otherwise
//! ```
//!
//! `ln2` is split into a high part exact in a few bits and a low
//! correction (Cody-Waite), so `n ln2` loses nothing; `2^n` is applied as
//! two exponent-field scalings, so results in the subnormal range and past
//! the largest float come out right, or, where the target has AVX-512, as
//! one `llvm.ldexp` (`vscalefps`, one rounding).

use super::Emitter;
use crate::Error;
use melior::ir::{Type, Value, ValueLike};

/// What the polynomials may use of their target.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct PolyTarget {
    /// The target scales by a power of two in one instruction (AVX-512's
    /// `vscalefps`): `exp` applies its `2^n` with `llvm.ldexp` instead of
    /// two exponent-field multiplies.
    pub(super) scalef: bool,
    /// The target is a GPU (NVPTX), whose IEEE division is a dozen
    /// instructions with a slow path: `tanh` divides with `div.approx.f32`
    /// (2 ulps; a denominator past 2^126 gives 0, as `tanh` wants).
    pub(super) gpu: bool,
}

/// `1.5 * 2^23`: a float in `[2^23, 2^24)` has no fraction bits, so adding
/// it to a value below `2^22` in magnitude rounds that value to the
/// nearest integer, which the sum's low mantissa bits hold.
const ROUNDING_SHIFT: f64 = 12_582_912.0;

/// `a * b + c` as a multiply and an add marked `contract`: one FMA where
/// the target has it (one rounding instead of two), and the two
/// instructions where it does not (an `fma` op would become a libm call
/// there).
fn mul_add<'c, 'a>(
    at: &Emitter<'c, 'a>,
    a: Value<'c, 'a>,
    b: Value<'c, 'a>,
    c: Value<'c, 'a>,
) -> Result<Value<'c, 'a>, Error> {
    let t = a.r#type();
    let product = at.value_with_flags("arith.mulf", &[a, b], t, "contract")?;
    at.value_with_flags("arith.addf", &[product, c], t, "contract")
}

/// `p[0]*x^(n-1) + ... + p[n-1]` by Horner's rule, one [`mul_add`] a step.
fn horner<'c, 'a>(at: &Emitter<'c, 'a>, x: Value<'c, 'a>, p: &[f64]) -> Result<Value<'c, 'a>, Error> {
    let t = x.r#type();
    let mut y = at.float(t, p[0])?;
    for &c in &p[1..] {
        y = mul_add(at, y, x, at.float(t, c)?)?;
    }
    Ok(y)
}

/// `e^x` for f32 in straight-line arithmetic that vectorizes (Cody-Waite
/// range reduction and a degree-7 polynomial, as in Cephes `expf`):
/// `x = n ln2 + r` with `|r| <= ln2/2`, `e^x = 2^n e^r`, and `2^n` applied
/// as two exponent-field scalings so results that underflow to subnormals
/// and overflow to infinity come out right. NaN stays NaN.
pub(super) fn exp_f32<'c, 'a>(
    at: &Emitter<'c, 'a>,
    x: Value<'c, 'a>,
    target: PolyTarget,
) -> Result<Value<'c, 'a>, Error> {
    let t = x.r#type();
    let i32_type: Type = melior::ir::r#type::IntegerType::new(at.context, 32).into();
    let c = |v: f64| at.float(t, v);
    // A compare and a select each way (one `vminps`/`vmaxps` on x86, where
    // `minnumf`/`maxnumf` need NaN fix-ups), each choosing the bound only
    // where the ordered compare holds: a NaN compares false and stays, and
    // every step after keeps it NaN (the exponent made from its bits is
    // garbage, but `2^n` times NaN is NaN either way).
    let over = at.cmpf(2, x, c(88.8)?)?;
    let clamped = at.select(over, c(88.8)?, x)?;
    let under = at.cmpf(4, clamped, c(-104.0)?)?;
    let clamped = at.select(under, c(-104.0)?, clamped)?;
    // n = the integer nearest x log2(e), as the sum with 1.5 * 2^23, whose
    // bits less the shift's are n: no `floor` and no conversion (a GPU
    // runs those at a sixteenth of its FMA rate; x86 spends two
    // instructions either way).
    let shifted = mul_add(at, clamped, c(std::f64::consts::LOG2_E)?, c(ROUNDING_SHIFT)?)?;
    let n = at.value("arith.subf", &[shifted, c(ROUNDING_SHIFT)?], t)?;
    let bits = at.value("arith.bitcast", &[shifted], i32_type)?;
    let shift_bits = at.int(i32_type, i64::from((ROUNDING_SHIFT as f32).to_bits()))?;
    let exponent = at.value("arith.subi", &[bits, shift_bits], i32_type)?;
    // r = x - n ln2, the high part of ln2 first (n times it is exact).
    let r = mul_add(at, n, c(-0.693359375)?, clamped)?;
    let r = mul_add(at, n, c(2.12194440e-4)?, r)?;
    let p = horner(
        at,
        r,
        &[
            1.9875691500e-4,
            1.3981999507e-3,
            8.3334519073e-3,
            4.1665795894e-2,
            1.6666665459e-1,
            5.0000001201e-1,
        ],
    )?;
    let r2 = at.value("arith.mulf", &[r, r], t)?;
    let y = mul_add(at, p, r2, r)?;
    let y = at.value("arith.addf", &[y, c(1.0)?], t)?;
    if target.scalef {
        // One rounding, subnormal results and overflow included.
        return at.value("llvm.intr.ldexp", &[y, exponent], t);
    }
    // n (`exponent`) is in [-150, 128] for any input but NaN (whose
    // garbage exponent multiplies a NaN): split it in two halves that are
    // each a normal exponent.
    let half = at.value("arith.shrsi", &[exponent, at.int(i32_type, 1)?], i32_type)?;
    let rest = at.value("arith.subi", &[exponent, half], i32_type)?;
    let power = |e: Value<'c, 'a>| -> Result<Value<'c, 'a>, Error> {
        let biased = at.value("arith.addi", &[e, at.int(i32_type, 127)?], i32_type)?;
        let bits = at.value("arith.shli", &[biased, at.int(i32_type, 23)?], i32_type)?;
        at.value("arith.bitcast", &[bits], t)
    };
    let y = at.value("arith.mulf", &[y, power(half)?], t)?;
    at.value("arith.mulf", &[y, power(rest)?], t)
}

/// `ln x` for f32 in straight-line arithmetic (Cephes `logf`): `x = 2^e m`
/// with `m` in `[sqrt(1/2), sqrt(2))` read from the bits (subnormals scaled
/// by `2^23` first), `ln x = e ln2 + ln m`, and `ln(1 + f)` for
/// `f = m - 1` (exact) as `f - f^2/2 + f^3 P(f)` with a degree-8
/// polynomial, `e ln2` added in two parts. Zero gives `-inf`, negative
/// values NaN, and `+inf` and NaN pass through.
pub(super) fn log_f32<'c, 'a>(at: &Emitter<'c, 'a>, x: Value<'c, 'a>) -> Result<Value<'c, 'a>, Error> {
    let t = x.r#type();
    let i32_type: Type = melior::ir::r#type::IntegerType::new(at.context, 32).into();
    let c = |v: f64| at.float(t, v);
    let int = |v: i64| at.int(i32_type, v);
    let tiny = at.cmpf(4, x, c(f32::MIN_POSITIVE as f64)?)?;
    let scaled = at.value("arith.mulf", &[x, c(8388608.0)?], t)?;
    let normal = at.select(tiny, scaled, x)?;
    let bits = at.value("arith.bitcast", &[normal], i32_type)?;
    let field = at.value("arith.shrui", &[bits, int(23)?], i32_type)?;
    let field = at.value("arith.andi", &[field, int(0xff)?], i32_type)?;
    // m in [0.5, 1): the mantissa under the exponent of 0.5.
    let e = at.value("arith.subi", &[field, int(126)?], i32_type)?;
    let e_tiny = at.value("arith.subi", &[e, int(23)?], i32_type)?;
    let e = at.select(tiny, e_tiny, e)?;
    let mantissa = at.value("arith.andi", &[bits, int(0x007f_ffff)?], i32_type)?;
    let mantissa = at.value("arith.ori", &[mantissa, int(0x3f00_0000)?], i32_type)?;
    let m = at.value("arith.bitcast", &[mantissa], t)?;
    // Below sqrt(1/2), use 2m and e - 1, so f = m - 1 is in
    // [sqrt(1/2) - 1, sqrt(2) - 1).
    let below = at.cmpf(4, m, c(std::f64::consts::FRAC_1_SQRT_2)?)?;
    let e_below = at.value("arith.subi", &[e, int(1)?], i32_type)?;
    let e = at.select(below, e_below, e)?;
    let doubled = at.value("arith.addf", &[m, m], t)?;
    let m = at.select(below, doubled, m)?;
    let f = at.value("arith.subf", &[m, c(1.0)?], t)?;
    let e = at.value("arith.sitofp", &[e], t)?;
    let z = at.value("arith.mulf", &[f, f], t)?;
    let p = horner(
        at,
        f,
        &[
            7.0376836292e-2,
            -1.1514610310e-1,
            1.1676998740e-1,
            -1.2420140846e-1,
            1.4249322787e-1,
            -1.6668057665e-1,
            2.0000714765e-1,
            -2.4999993993e-1,
            3.3333331174e-1,
        ],
    )?;
    let y = at.value("arith.mulf", &[p, z], t)?;
    let y = at.value("arith.mulf", &[y, f], t)?;
    let low = at.value("arith.mulf", &[e, c(-2.12194440e-4)?], t)?;
    let y = at.value("arith.addf", &[y, low], t)?;
    let half_z = at.value("arith.mulf", &[z, c(0.5)?], t)?;
    let y = at.value("arith.subf", &[y, half_z], t)?;
    let y = at.value("arith.addf", &[f, y], t)?;
    let high = at.value("arith.mulf", &[e, c(0.693359375)?], t)?;
    let y = at.value("arith.addf", &[y, high], t)?;
    // The special values.
    let infinity = at.cmpf(1, x, c(f64::INFINITY)?)?;
    let y = at.select(infinity, x, y)?;
    let zero = at.cmpf(1, x, c(0.0)?)?;
    let y = at.select(zero, c(f64::NEG_INFINITY)?, y)?;
    let negative = at.cmpf(4, x, c(0.0)?)?;
    let y = at.select(negative, c(f64::NAN)?, y)?;
    let is_nan = at.cmpf(14, x, x)?;
    at.select(is_nan, x, y)
}

/// `tanh x` for f32: an odd polynomial below 0.625 (Cephes `tanhf`), and
/// `1 - 2 / (e^(2|x|) + 1)` with the sign of `x` above.
pub(super) fn tanh_f32<'c, 'a>(
    at: &Emitter<'c, 'a>,
    x: Value<'c, 'a>,
    target: PolyTarget,
) -> Result<Value<'c, 'a>, Error> {
    let t = x.r#type();
    let c = |v: f64| at.float(t, v);
    let z = at.value("arith.mulf", &[x, x], t)?;
    let p = horner(
        at,
        z,
        &[
            -5.70498872745e-3,
            2.06390887954e-2,
            -5.37397155531e-2,
            1.33314422036e-1,
            -3.33332819422e-1,
        ],
    )?;
    let small = at.value("arith.mulf", &[p, z], t)?;
    let small = at.value("arith.mulf", &[small, x], t)?;
    let small = at.value("arith.addf", &[small, x], t)?;
    let magnitude = at.value("math.absf", &[x], t)?;
    let doubled = at.value("arith.addf", &[magnitude, magnitude], t)?;
    let e = exp_f32(at, doubled, target)?;
    let denominator = at.value("arith.addf", &[e, c(1.0)?], t)?;
    // Where this form is selected the denominator is at least 1 + e^1.25;
    // on the GPU, `afn` makes the division `div.approx.f32`, whose 2 ulps
    // in a quotient below 0.45 are at most 1 in the result, which is above
    // 0.55 (about 1.5 with the rounding of `1 - q`).
    let flags = if target.gpu { "afn" } else { "none" };
    let quotient = at.value_with_flags("arith.divf", &[c(2.0)?, denominator], t, flags)?;
    let large = at.value("arith.subf", &[c(1.0)?, quotient], t)?;
    let is_small = at.cmpf(4, magnitude, c(0.625)?)?;
    let result = at.select(is_small, small, large)?;
    // tanh is odd, so its sign is x's, zeros included: this gives the
    // large path (`1 - q`, computed from |x|) its sign, and -0 its own
    // (the small path's `x + x^3 p` is `-0 + 0 = +0` there).
    at.value("math.copysign", &[result, x], t)
}
