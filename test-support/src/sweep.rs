//! Sweeps for math functions against libm, value by value: the inputs
//! (the whole useful range of `exp`, `tanh` and `sigmoid` plus special
//! values; every binade of the positive floats for `log`), the one-op
//! module they run, and the distance in ulps. The CPU's polynomial tests
//! (`runtime/tests/approximations.rs`) and the GPU's sweeps
//! (`runtime/tests/cuda.rs`) use the same ones.

/// Distance in representable values of `bits`'s width between two floats
/// given as their bit patterns widened to `i128` (0 when equal, NaN equals
/// NaN, `u64::MAX` when only one is NaN): the floats mapped onto a line of
/// integers ordered like the reals.
fn distance(a: i128, b: i128, sign: i128, a_nan: bool, b_nan: bool, equal: bool) -> u64 {
    if equal || (a_nan && b_nan) {
        return 0;
    }
    if a_nan || b_nan {
        return u64::MAX;
    }
    let key = |bits: i128| if bits < sign { bits } else { sign - bits };
    u64::try_from(key(a).abs_diff(key(b))).unwrap_or(u64::MAX)
}

/// Ulps between two `f32`s.
pub fn ulps(a: f32, b: f32) -> u64 {
    distance(
        a.to_bits().into(),
        b.to_bits().into(),
        0x8000_0000,
        a.is_nan(),
        b.is_nan(),
        a == b,
    )
}

/// Ulps between two `f64`s.
pub fn ulps64(a: f64, b: f64) -> u64 {
    distance(
        a.to_bits().into(),
        b.to_bits().into(),
        1 << 63,
        a.is_nan(),
        b.is_nan(),
        a == b,
    )
}

/// A module whose `@main` applies the unary `kind` to a tensor of `n`
/// `element`s (`f32`, `f64`).
pub fn unary_module(kind: &str, element: &str, n: usize) -> String {
    let t = format!("tensor<{n}x{element}>");
    format!(
        "func.func @main(%x: {t}) -> {t} {{\n  %y = \"meta.unary\"(%x) {{kind = \"{kind}\"}} : ({t}) -> {t}\n  return %y : {t}\n}}\n"
    )
}

/// Special values, then 2^16 points of [-110, 90] and 2^16 of
/// [-0.003, 0.003].
pub fn inputs() -> Vec<f32> {
    let mut values = vec![
        0.0,
        -0.0,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::NAN,
        f32::MIN_POSITIVE,
        88.72,
        88.73,
        -87.3,
        -103.0,
        -104.5,
        1e-8,
        -1e-8,
        0.625,
        -0.625,
        9.0,
    ];
    let n = 1 << 16;
    for i in 0..n {
        values.push(-110.0 + 200.0 * i as f32 / n as f32);
        values.push((-3.0 + 6.0 * i as f32 / n as f32) * 1.0e-3);
    }
    values
}

/// Inputs for `log`: the specials and negative values of [`inputs`], every
/// binade of the positive floats (subnormals included) at 64 points each,
/// and a dense sweep of [0.5, 2], where `ln` is small and relative error
/// hardest to keep.
pub fn log_inputs() -> Vec<f32> {
    let mut values = inputs();
    values.retain(|x| *x <= 0.0 || !x.is_finite());
    values.extend([
        f32::MIN_POSITIVE / 2.0,
        f32::from_bits(1),
        f32::MAX,
        1.0,
        2.0,
        0.5,
    ]);
    for exponent in -149..128 {
        for step in 0..64 {
            values.push(2f32.powi(exponent) * (1.0 + step as f32 / 64.0));
        }
    }
    let n = 1 << 16;
    for i in 0..n {
        values.push(0.5 + 1.5 * i as f32 / n as f32);
    }
    values
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ulps_count_representable_values() {
        assert_eq!(ulps(1.0, 1.0), 0);
        assert_eq!(ulps(1.0, f32::from_bits(1.0f32.to_bits() + 3)), 3);
        assert_eq!(ulps(-0.0, 0.0), 0);
        assert_eq!(ulps(f32::from_bits(1), -f32::from_bits(1)), 2);
        assert_eq!(ulps(f32::NAN, f32::NAN), 0);
        assert_eq!(ulps(f32::NAN, 1.0), u64::MAX);
        assert_eq!(ulps64(1.0, f64::from_bits(1.0f64.to_bits() + 5)), 5);
        assert_eq!(ulps64(-f64::from_bits(2), f64::from_bits(1)), 3);
        assert_eq!(ulps64(f64::MAX, f64::INFINITY), 1);
    }
}
