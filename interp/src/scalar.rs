//! Scalars and the exact meaning of every element-wise and reduction kind.
//!
//! The rules, which `docs/semantics.md` states for users:
//!
//! - integers are signed two's complement and wrap on overflow (`add`,
//!   `sub`, `mul`, `neg`, `abs` of the minimum);
//! - integer `div` truncates toward zero and `mod` takes the sign of the
//!   dividend; a zero divisor is an error, and `MIN div -1` wraps to `MIN`
//!   (`MIN mod -1` is 0);
//! - float `mod` is C's `fmod` (sign of the dividend);
//! - float `max`/`min` propagate NaN, and order `-0.0` below `+0.0`;
//! - `round` rounds half away from zero;
//! - a float-to-integer `cast` truncates toward zero and saturates, NaN
//!   becoming 0; integer-to-float rounds to nearest even; f64-to-f32 rounds
//!   to nearest even; a cast to `i1` means `!= 0` (NaN is true); `i1` to a
//!   number gives 0 or 1;
//! - comparisons of floats are IEEE's ordered ones (NaN compares false,
//!   except `ne`, which is true); `i1` orders `false < true`;
//! - `and`, `or`, `xor`, `not` are logical on `i1` and bitwise on integers.

use jitc_dialect::kinds::{BinaryKind, ElementType, ReduceKind, UnaryKind};
use std::fmt;

/// One element.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Scalar {
    /// An `f32`.
    F32(f32),
    /// An `f64`.
    F64(f64),
    /// An `i32`.
    I32(i32),
    /// An `i64`.
    I64(i64),
    /// An `i1`.
    I1(bool),
}

/// Why an element-wise computation has no result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ScalarError {
    /// Integer `div` or `mod` by zero.
    DivisionByZero,
    /// The operands' element types do not fit the kind (a verifier bug).
    Type(String),
}

impl fmt::Display for ScalarError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::DivisionByZero => f.write_str("integer division by zero"),
            Self::Type(message) => f.write_str(message),
        }
    }
}

impl Scalar {
    /// Zero of `element` (`false` for `i1`).
    pub fn zero(element: ElementType) -> Self {
        Self::I64(0).cast(element)
    }

    /// The element type.
    pub fn element_type(self) -> ElementType {
        match self {
            Self::F32(_) => ElementType::F32,
            Self::F64(_) => ElementType::F64,
            Self::I32(_) => ElementType::I32,
            Self::I64(_) => ElementType::I64,
            Self::I1(_) => ElementType::I1,
        }
    }

    /// The value as an `f64` (exact for every type but large `i64`s).
    pub fn as_f64(self) -> f64 {
        match self {
            Self::F32(v) => v as f64,
            Self::F64(v) => v,
            Self::I32(v) => v as f64,
            Self::I64(v) => v as f64,
            Self::I1(v) => v as u8 as f64,
        }
    }

    /// The value as an `i64`; floats truncate and saturate, NaN gives 0.
    pub fn as_i64(self) -> i64 {
        match self {
            Self::F32(v) => v as i64,
            Self::F64(v) => v as i64,
            Self::I32(v) => v as i64,
            Self::I64(v) => v,
            Self::I1(v) => v as i64,
        }
    }

    /// `!= 0`; NaN is nonzero.
    pub fn is_nonzero(self) -> bool {
        match self {
            Self::F32(v) => v != 0.0,
            Self::F64(v) => v != 0.0,
            Self::I32(v) => v != 0,
            Self::I64(v) => v != 0,
            Self::I1(v) => v,
        }
    }

    /// Converts to `element` following the `cast` rules.
    pub fn cast(self, element: ElementType) -> Self {
        match element {
            ElementType::I1 => Self::I1(self.is_nonzero()),
            ElementType::F32 => Self::F32(match self {
                Self::F32(v) => v,
                Self::F64(v) => v as f32,
                Self::I32(v) => v as f32,
                Self::I64(v) => v as f32,
                Self::I1(v) => v as u8 as f32,
            }),
            ElementType::F64 => Self::F64(self.as_f64()),
            // Rust's float-to-int `as` truncates, saturates and maps NaN to 0.
            ElementType::I32 => Self::I32(match self {
                Self::F32(v) => v as i32,
                Self::F64(v) => v as i32,
                other => other.as_i64() as i32,
            }),
            ElementType::I64 => Self::I64(self.as_i64()),
        }
    }

    /// Parses one literal element of type `element`.
    pub fn parse(token: &str, element: ElementType) -> Result<Self, String> {
        let bad = || format!("`{token}` is not an {element}");
        Ok(match element {
            ElementType::F32 => Self::F32(token.parse().map_err(|_| bad())?),
            ElementType::F64 => Self::F64(token.parse().map_err(|_| bad())?),
            ElementType::I32 => Self::I32(token.parse().map_err(|_| bad())?),
            ElementType::I64 => Self::I64(token.parse().map_err(|_| bad())?),
            ElementType::I1 => Self::I1(match token {
                "true" | "1" => true,
                "false" | "0" => false,
                _ => return Err(bad()),
            }),
        })
    }
}

impl fmt::Display for Scalar {
    /// The shortest text that reads back as the same value; floats of
    /// magnitude 1e16 and above or below 1e-4 with an exponent, where Python
    /// and NumPy use one (`1e30`, `1.5e-7`, not 31 or 8 digits).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fn float(
            f: &mut fmt::Formatter<'_>,
            exponent: bool,
            v: impl fmt::Display + fmt::LowerExp,
        ) -> fmt::Result {
            if exponent {
                write!(f, "{v:e}")
            } else {
                write!(f, "{v}")
            }
        }
        match self {
            Self::F32(v) => float(
                f,
                *v != 0.0 && v.is_finite() && !(1e-4..1e16).contains(&v.abs()),
                v,
            ),
            Self::F64(v) => float(
                f,
                *v != 0.0 && v.is_finite() && !(1e-4..1e16).contains(&v.abs()),
                v,
            ),
            Self::I32(v) => write!(f, "{v}"),
            Self::I64(v) => write!(f, "{v}"),
            Self::I1(v) => write!(f, "{v}"),
        }
    }
}

/// Float operations shared by `f32` and `f64`.
trait FloatElement: Copy + PartialOrd + std::ops::Neg<Output = Self> {
    fn unary(kind: UnaryKind, x: Self) -> Option<Self>;
    fn binary(kind: BinaryKind, a: Self, b: Self) -> Option<Self>;
}

macro_rules! float_element {
    ($t:ty, $erf:path) => {
        impl FloatElement for $t {
            fn unary(kind: UnaryKind, x: Self) -> Option<Self> {
                Some(match kind {
                    UnaryKind::Neg => -x,
                    UnaryKind::Abs => x.abs(),
                    UnaryKind::Exp => x.exp(),
                    UnaryKind::Log => x.ln(),
                    UnaryKind::Sqrt => x.sqrt(),
                    UnaryKind::Rsqrt => 1.0 / x.sqrt(),
                    UnaryKind::Sin => x.sin(),
                    UnaryKind::Cos => x.cos(),
                    UnaryKind::Tanh => x.tanh(),
                    UnaryKind::Erf => $erf(x),
                    UnaryKind::Sigmoid => 1.0 / (1.0 + (-x).exp()),
                    UnaryKind::Floor => x.floor(),
                    UnaryKind::Ceil => x.ceil(),
                    // Rust's `round` rounds half away from zero.
                    UnaryKind::Round => x.round(),
                    UnaryKind::Not | UnaryKind::Cast => return None,
                })
            }

            fn binary(kind: BinaryKind, a: Self, b: Self) -> Option<Self> {
                Some(match kind {
                    BinaryKind::Add => a + b,
                    BinaryKind::Sub => a - b,
                    BinaryKind::Mul => a * b,
                    BinaryKind::Div => a / b,
                    // `%` on floats is fmod: the sign of the dividend.
                    BinaryKind::Mod => a % b,
                    BinaryKind::Pow => a.powf(b),
                    BinaryKind::Max => nan_propagating(a, b, a > b || (a == b && b.is_sign_negative())),
                    BinaryKind::Min => nan_propagating(a, b, a < b || (a == b && a.is_sign_negative())),
                    _ => return None,
                })
            }
        }
    };
}

/// `a` when `pick_a`, else `b`; NaN when either is NaN.
fn nan_propagating<T: FloatElement>(a: T, b: T, pick_a: bool) -> T {
    #[allow(clippy::eq_op)]
    let is_nan = |x: T| x != x;
    if is_nan(a) {
        a
    } else if is_nan(b) {
        b
    } else if pick_a {
        a
    } else {
        b
    }
}

// `erf` from the platform's C math library, the one `std` calls for `exp`,
// `sin` and the rest, and the one compiled code calls for `math.erf` under
// `--math exact`: with one implementation the two agree bit for bit. (A
// Rust port of another libm differed by an ulp, which a `mod` after it
// can turn into a visible difference.)
// SAFETY: C99's `erf` and `erff` are defined for every input, NaN and the
// infinities included, read no memory and keep no state.
unsafe extern "C" {
    safe fn erf(x: f64) -> f64;
    safe fn erff(x: f32) -> f32;
}

float_element!(f32, erff);
float_element!(f64, erf);

/// Integer operations shared by `i32` and `i64`.
trait IntElement: Copy + Ord {
    fn unary(kind: UnaryKind, x: Self) -> Option<Self>;
    fn binary(kind: BinaryKind, a: Self, b: Self) -> Result<Self, ScalarError>;
}

macro_rules! int_element {
    ($t:ty) => {
        impl IntElement for $t {
            fn unary(kind: UnaryKind, x: Self) -> Option<Self> {
                Some(match kind {
                    UnaryKind::Neg => x.wrapping_neg(),
                    UnaryKind::Abs => x.wrapping_abs(),
                    UnaryKind::Not => !x,
                    _ => return None,
                })
            }

            fn binary(kind: BinaryKind, a: Self, b: Self) -> Result<Self, ScalarError> {
                Ok(match kind {
                    BinaryKind::Add => a.wrapping_add(b),
                    BinaryKind::Sub => a.wrapping_sub(b),
                    BinaryKind::Mul => a.wrapping_mul(b),
                    BinaryKind::Div if b == 0 => return Err(ScalarError::DivisionByZero),
                    BinaryKind::Div => a.wrapping_div(b),
                    BinaryKind::Mod if b == 0 => return Err(ScalarError::DivisionByZero),
                    BinaryKind::Mod => a.wrapping_rem(b),
                    BinaryKind::Max => a.max(b),
                    BinaryKind::Min => a.min(b),
                    BinaryKind::And => a & b,
                    BinaryKind::Or => a | b,
                    BinaryKind::Xor => a ^ b,
                    _ => return Err(type_error(kind.name(), stringify!($t))),
                })
            }
        }
    };
}

int_element!(i32);
int_element!(i64);

fn type_error(kind: &str, element: &str) -> ScalarError {
    ScalarError::Type(format!("kind '{kind}' is not defined on {element}"))
}

/// `kind(x)`; `to` is the result type, used by `cast`.
pub fn unary(kind: UnaryKind, x: Scalar, to: ElementType) -> Result<Scalar, ScalarError> {
    if kind == UnaryKind::Cast {
        return Ok(x.cast(to));
    }
    let result = match x {
        Scalar::F32(v) => f32::unary(kind, v).map(Scalar::F32),
        Scalar::F64(v) => f64::unary(kind, v).map(Scalar::F64),
        Scalar::I32(v) => i32::unary(kind, v).map(Scalar::I32),
        Scalar::I64(v) => i64::unary(kind, v).map(Scalar::I64),
        Scalar::I1(v) if kind == UnaryKind::Not => Some(Scalar::I1(!v)),
        Scalar::I1(_) => None,
    };
    result.ok_or_else(|| type_error(kind.name(), x.element_type().name()))
}

/// `a kind b`, for operands of one element type.
pub fn binary(kind: BinaryKind, a: Scalar, b: Scalar) -> Result<Scalar, ScalarError> {
    if kind.is_comparison() {
        return compare(kind, a, b).map(Scalar::I1);
    }
    let mismatch = || {
        type_error(
            kind.name(),
            &format!("{} and {}", a.element_type(), b.element_type()),
        )
    };
    match (a, b) {
        (Scalar::F32(x), Scalar::F32(y)) => f32::binary(kind, x, y).map(Scalar::F32).ok_or_else(mismatch),
        (Scalar::F64(x), Scalar::F64(y)) => f64::binary(kind, x, y).map(Scalar::F64).ok_or_else(mismatch),
        (Scalar::I32(x), Scalar::I32(y)) => i32::binary(kind, x, y).map(Scalar::I32),
        (Scalar::I64(x), Scalar::I64(y)) => i64::binary(kind, x, y).map(Scalar::I64),
        (Scalar::I1(x), Scalar::I1(y)) => match kind {
            BinaryKind::And => Ok(Scalar::I1(x & y)),
            BinaryKind::Or => Ok(Scalar::I1(x | y)),
            BinaryKind::Xor => Ok(Scalar::I1(x ^ y)),
            _ => Err(mismatch()),
        },
        _ => Err(mismatch()),
    }
}

fn compare(kind: BinaryKind, a: Scalar, b: Scalar) -> Result<bool, ScalarError> {
    use std::cmp::Ordering;
    let order: Option<Ordering> = match (a, b) {
        (Scalar::F32(x), Scalar::F32(y)) => x.partial_cmp(&y),
        (Scalar::F64(x), Scalar::F64(y)) => x.partial_cmp(&y),
        (Scalar::I32(x), Scalar::I32(y)) => Some(x.cmp(&y)),
        (Scalar::I64(x), Scalar::I64(y)) => Some(x.cmp(&y)),
        (Scalar::I1(x), Scalar::I1(y)) => Some(x.cmp(&y)),
        _ => {
            return Err(type_error(
                kind.name(),
                &format!("{} and {}", a.element_type(), b.element_type()),
            ));
        }
    };
    // `None` is an unordered (NaN) comparison: only `ne` holds.
    Ok(match (kind, order) {
        (BinaryKind::Ne, None) => true,
        (_, None) => false,
        (BinaryKind::Eq, Some(o)) => o == Ordering::Equal,
        (BinaryKind::Ne, Some(o)) => o != Ordering::Equal,
        (BinaryKind::Lt, Some(o)) => o == Ordering::Less,
        (BinaryKind::Le, Some(o)) => o != Ordering::Greater,
        (BinaryKind::Gt, Some(o)) => o == Ordering::Greater,
        (BinaryKind::Ge, Some(o)) => o != Ordering::Less,
        _ => unreachable!("only comparisons reach here"),
    })
}

/// The identity of a reduction: 0 for add, 1 for mul, -inf or the minimum
/// for max, +inf or the maximum for min, true (all ones) for and, false
/// (zero) for or.
pub fn identity(kind: ReduceKind, element: ElementType) -> Scalar {
    match (kind, element) {
        (ReduceKind::Add | ReduceKind::Or, _) => Scalar::zero(element),
        (ReduceKind::Mul, _) => Scalar::I64(1).cast(element),
        (ReduceKind::Max, ElementType::F32) => Scalar::F32(f32::NEG_INFINITY),
        (ReduceKind::Max, ElementType::F64) => Scalar::F64(f64::NEG_INFINITY),
        (ReduceKind::Max, ElementType::I32) => Scalar::I32(i32::MIN),
        (ReduceKind::Max, _) => Scalar::I64(i64::MIN).cast(element),
        (ReduceKind::Min, ElementType::F32) => Scalar::F32(f32::INFINITY),
        (ReduceKind::Min, ElementType::F64) => Scalar::F64(f64::INFINITY),
        (ReduceKind::Min, ElementType::I32) => Scalar::I32(i32::MAX),
        (ReduceKind::Min, _) => Scalar::I64(i64::MAX).cast(element),
        (ReduceKind::And, ElementType::I1) => Scalar::I1(true),
        (ReduceKind::And, _) => Scalar::I64(-1).cast(element),
    }
}

/// One reduction step, `acc kind x`.
pub fn reduce(kind: ReduceKind, acc: Scalar, x: Scalar) -> Result<Scalar, ScalarError> {
    binary(kind.step(), acc, x)
}

#[cfg(test)]
mod tests {
    use super::*;
    use ElementType::*;

    #[test]
    fn integer_division_truncates_and_mod_follows_the_dividend() {
        assert_eq!(
            binary(BinaryKind::Div, Scalar::I32(-7), Scalar::I32(2)),
            Ok(Scalar::I32(-3))
        );
        assert_eq!(
            binary(BinaryKind::Mod, Scalar::I32(-7), Scalar::I32(2)),
            Ok(Scalar::I32(-1))
        );
        assert_eq!(
            binary(BinaryKind::Mod, Scalar::I64(7), Scalar::I64(-2)),
            Ok(Scalar::I64(1))
        );
        assert_eq!(
            binary(BinaryKind::Div, Scalar::I32(i32::MIN), Scalar::I32(-1)),
            Ok(Scalar::I32(i32::MIN))
        );
        assert_eq!(
            binary(BinaryKind::Div, Scalar::I32(1), Scalar::I32(0)),
            Err(ScalarError::DivisionByZero)
        );
        assert_eq!(
            binary(BinaryKind::Mod, Scalar::F32(-7.5), Scalar::F32(2.0)),
            Ok(Scalar::F32(-1.5))
        );
    }

    #[test]
    fn float_max_min_propagate_nan() {
        let nan = binary(BinaryKind::Max, Scalar::F32(f32::NAN), Scalar::F32(1.0)).unwrap();
        assert!(nan.as_f64().is_nan());
        let nan = binary(BinaryKind::Min, Scalar::F64(1.0), Scalar::F64(f64::NAN)).unwrap();
        assert!(nan.as_f64().is_nan());
        assert_eq!(
            binary(BinaryKind::Max, Scalar::F32(-0.0), Scalar::F32(0.0))
                .unwrap()
                .to_string(),
            "0"
        );
        assert_eq!(
            binary(BinaryKind::Min, Scalar::F32(-0.0), Scalar::F32(0.0))
                .unwrap()
                .to_string(),
            "-0"
        );
    }

    #[test]
    fn casts_truncate_saturate_and_map_nan_to_zero() {
        assert_eq!(Scalar::F32(-2.7).cast(I32), Scalar::I32(-2));
        assert_eq!(Scalar::F64(1e20).cast(I32), Scalar::I32(i32::MAX));
        assert_eq!(Scalar::F32(f32::NAN).cast(I64), Scalar::I64(0));
        assert_eq!(Scalar::F32(0.5).cast(I1), Scalar::I1(true));
        assert_eq!(Scalar::F32(f32::NAN).cast(I1), Scalar::I1(true));
        assert_eq!(Scalar::I1(true).cast(F32), Scalar::F32(1.0));
        assert_eq!(Scalar::I64(1 << 40).cast(I32), Scalar::I32(0));
    }

    #[test]
    fn round_is_half_away_from_zero() {
        assert_eq!(
            unary(UnaryKind::Round, Scalar::F32(2.5), F32),
            Ok(Scalar::F32(3.0))
        );
        assert_eq!(
            unary(UnaryKind::Round, Scalar::F32(-2.5), F32),
            Ok(Scalar::F32(-3.0))
        );
    }

    #[test]
    fn comparisons_with_nan() {
        for kind in [
            BinaryKind::Eq,
            BinaryKind::Lt,
            BinaryKind::Le,
            BinaryKind::Gt,
            BinaryKind::Ge,
        ] {
            assert_eq!(
                binary(kind, Scalar::F32(f32::NAN), Scalar::F32(1.0)),
                Ok(Scalar::I1(false))
            );
        }
        assert_eq!(
            binary(BinaryKind::Ne, Scalar::F32(f32::NAN), Scalar::F32(1.0)),
            Ok(Scalar::I1(true))
        );
    }

    #[test]
    fn identities() {
        assert_eq!(identity(ReduceKind::Add, F32), Scalar::F32(0.0));
        assert_eq!(identity(ReduceKind::Mul, I32), Scalar::I32(1));
        assert_eq!(identity(ReduceKind::Max, F64), Scalar::F64(f64::NEG_INFINITY));
        assert_eq!(identity(ReduceKind::Min, I64), Scalar::I64(i64::MAX));
        assert_eq!(identity(ReduceKind::And, I1), Scalar::I1(true));
        assert_eq!(identity(ReduceKind::And, I32), Scalar::I32(-1));
        assert_eq!(identity(ReduceKind::Or, I1), Scalar::I1(false));
    }

    #[test]
    fn hand_computed_elementwise() {
        let close = |s: Result<Scalar, ScalarError>, want: f64| (s.unwrap().as_f64() - want).abs() < 1e-6;
        assert!(close(unary(UnaryKind::Sigmoid, Scalar::F32(0.0), F32), 0.5));
        assert!(close(unary(UnaryKind::Rsqrt, Scalar::F64(4.0), F64), 0.5));
        assert!(close(
            unary(UnaryKind::Erf, Scalar::F64(1.0), F64),
            0.842_700_792_949_714_9
        ));
        assert!(close(
            unary(UnaryKind::Tanh, Scalar::F32(0.5), F32),
            0.462_117_157
        ));
        assert!(close(
            binary(BinaryKind::Pow, Scalar::F32(2.0), Scalar::F32(10.0)),
            1024.0
        ));
        assert_eq!(unary(UnaryKind::Not, Scalar::I32(0), I32), Ok(Scalar::I32(-1)));
        assert_eq!(
            unary(UnaryKind::Abs, Scalar::I32(i32::MIN), I32),
            Ok(Scalar::I32(i32::MIN))
        );
        assert_eq!(
            binary(BinaryKind::Xor, Scalar::I1(true), Scalar::I1(true)),
            Ok(Scalar::I1(false))
        );
        assert!(unary(UnaryKind::Exp, Scalar::I32(1), I32).is_err());
    }
}
