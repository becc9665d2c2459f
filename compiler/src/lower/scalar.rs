//! What kernel ops compute on one element: constants, reduction
//! identities and steps, and the `unary`/`binary` kinds as `arith`/`math`,
//! with the interpreter's semantics (`docs/semantics.md`).
//!
//! Invariants:
//! - values are of their computed type ([`super::value_type`]): `i1` for
//!   booleans, never the byte they are stored as;
//! - no input has undefined behaviour: an integer `div`/`mod` by zero sets
//!   the kernel's status word and yields a value, `MIN div -1` wraps, and
//!   float-to-integer casts saturate and send NaN to 0;
//! - a reduction step is the element-wise op of its kind
//!   ([`ReduceKind::step`]); only [`combine`] with `reassociate` marks float
//!   `add`/`mul` `reassoc`, for register accumulators under
//!   [`MathMode::Fast`] and for the GPU's block trees;
//! - float `max`/`min` are `llvm.intr.maximum`/`llvm.intr.minimum` (NaN
//!   propagates, `-0.0` orders below `+0.0`), not `arith.maximumf`/
//!   `arith.minimumf`: the `llvm` pipeline starts with `arith-expand`,
//!   which rewrites those into a compare and select that ignores the sign
//!   of zero. The intrinsics are exact on x86 and on NVPTX (`min.NaN.f32`
//!   on sm_80; f64 expanded by LLVM with the signed-zero fix-up); `max`/
//!   `min` reductions step with the same ops ([`combine`]) from the
//!   identities -inf/+inf, so they agree too;
//! - under [`MathMode::Fast`], f32 `exp`, `log`, `tanh` and `sigmoid` are
//!   the polynomials of [`super::poly`]; other math is a `math` op, which
//!   becomes a libm call on the CPU.
//!
//! Example: `i32` `div` of `%a` by `%b` (the op at line 7), where
//! `%status` points to the kernel's status record (claimed as an access
//! claims it: its status becomes 1, and its second word the op's line):
//!
//! ```mlir
//! %z = arith.cmpi eq, %b, %c0_i32 : i32
//! scf.if %z {
//!   %r = llvm.cmpxchg %status, %c0_i64, %c1_i64 syncscope("device") monotonic monotonic : !llvm.ptr, i64
//!   ... (the winner stores %c7_i64 to the second word)
//! }
//! %m = arith.cmpi eq, %b, %c-1_i32 : i32
//! %u = arith.ori %z, %m : i1
//! %d = arith.select %u, %c1_i32, %b : i32
//! %q = arith.divsi %a, %d : i32
//! %n = arith.subi %c0_i32, %a : i32
//! %r = arith.select %m, %n, %q : i32
//! ```

use super::{
    MathMode,
    access::DIVISION_BY_ZERO_STATUS,
    emit::Emitter,
    poly::{PolyTarget, exp_f32, log_f32, tanh_f32},
    value_type,
};
use crate::Error;
use jitc_dialect::kinds::{BinaryKind, ElementType, ReduceKind, UnaryKind};
use melior::ir::{Type, Value, ValueLike};

/// A constant of `element` from a number.
pub(super) fn constant<'c, 'a>(
    at: &Emitter<'c, 'a>,
    element: ElementType,
    value: f64,
    integer: i64,
) -> Result<Value<'c, 'a>, Error> {
    let r#type = value_type(at.context, element);
    if element.is_float() {
        at.float(r#type, value)
    } else {
        at.int(r#type, integer)
    }
}

/// The value a `kind` reduction of `element`s starts from.
pub(super) fn identity<'c, 'a>(
    at: &Emitter<'c, 'a>,
    kind: ReduceKind,
    element: ElementType,
) -> Result<Value<'c, 'a>, Error> {
    let (min, max) = match element {
        ElementType::I32 => (i32::MIN as i64, i32::MAX as i64),
        _ => (i64::MIN, i64::MAX),
    };
    match kind {
        ReduceKind::Add | ReduceKind::Or => constant(at, element, 0.0, 0),
        ReduceKind::Mul => constant(at, element, 1.0, 1),
        ReduceKind::Max => constant(at, element, f64::NEG_INFINITY, min),
        ReduceKind::Min => constant(at, element, f64::INFINITY, max),
        ReduceKind::And => constant(at, element, 0.0, -1),
    }
}

/// Unary `kind` of `x`, a `from` element; `to` is the result type of a
/// cast and `from` otherwise.
pub(super) fn unary_op<'c, 'a>(
    at: &Emitter<'c, 'a>,
    kind: UnaryKind,
    x: Value<'c, 'a>,
    from: ElementType,
    to: ElementType,
    math_mode: MathMode,
    target: PolyTarget,
) -> Result<Value<'c, 'a>, Error> {
    let t = x.r#type();
    let math = |name: &str| at.value(name, &[x], t);
    let one = || constant(at, from, 1.0, 1);
    let polynomial = math_mode == MathMode::Fast && from == ElementType::F32;
    match kind {
        UnaryKind::Neg if from.is_float() => math("arith.negf"),
        UnaryKind::Neg => at.value("arith.subi", &[constant(at, from, 0.0, 0)?, x], t),
        UnaryKind::Abs if from.is_float() => math("math.absf"),
        UnaryKind::Abs => math("math.absi"),
        UnaryKind::Exp if polynomial => exp_f32(at, x, target),
        UnaryKind::Exp => math("math.exp"),
        UnaryKind::Log if polynomial => log_f32(at, x),
        UnaryKind::Log => math("math.log"),
        UnaryKind::Sqrt => math("math.sqrt"),
        UnaryKind::Rsqrt => {
            let root = math("math.sqrt")?;
            at.value("arith.divf", &[one()?, root], t)
        }
        UnaryKind::Sin => math("math.sin"),
        UnaryKind::Cos => math("math.cos"),
        UnaryKind::Tanh if polynomial => tanh_f32(at, x, target),
        UnaryKind::Tanh => math("math.tanh"),
        UnaryKind::Erf => math("math.erf"),
        UnaryKind::Sigmoid => {
            let negated = math("arith.negf")?;
            let e = if polynomial {
                exp_f32(at, negated, target)?
            } else {
                at.value("math.exp", &[negated], t)?
            };
            let denominator = at.value("arith.addf", &[one()?, e], t)?;
            at.value("arith.divf", &[one()?, denominator], t)
        }
        UnaryKind::Floor => math("math.floor"),
        UnaryKind::Ceil => math("math.ceil"),
        UnaryKind::Round => math("math.round"),
        UnaryKind::Not => at.value("arith.xori", &[x, constant(at, from, 0.0, -1)?], t),
        UnaryKind::Cast => cast(at, x, from, to),
    }
}

fn cast<'c, 'a>(
    at: &Emitter<'c, 'a>,
    x: Value<'c, 'a>,
    from: ElementType,
    to: ElementType,
) -> Result<Value<'c, 'a>, Error> {
    use ElementType::*;
    let target = value_type(at.context, to);
    if from == to {
        return Ok(x);
    }
    match (from, to) {
        (_, I1) if from.is_float() => at.cmpf(13, x, constant(at, from, 0.0, 0)?),
        (_, I1) => at.cmpi(1, x, constant(at, from, 0.0, 0)?),
        (I1, _) if to.is_float() => at.value("arith.uitofp", &[x], target),
        (I1, _) => at.value("arith.extui", &[x], target),
        (F32, F64) => at.value("arith.extf", &[x], target),
        (F64, F32) => at.value("arith.truncf", &[x], target),
        (I32, I64) => at.value("arith.extsi", &[x], target),
        (I64, I32) => at.value("arith.trunci", &[x], target),
        (_, F32 | F64) => at.value("arith.sitofp", &[x], target),
        _ => saturating_float_to_int(at, x, from, to),
    }
}

/// Float to integer as the interpreter casts: truncate toward zero,
/// saturate at the integer's limits, NaN to 0. Plain `fptosi` would give
/// poison outside the range, so out-of-range inputs never reach it.
fn saturating_float_to_int<'c, 'a>(
    at: &Emitter<'c, 'a>,
    x: Value<'c, 'a>,
    from: ElementType,
    to: ElementType,
) -> Result<Value<'c, 'a>, Error> {
    let (bits, min, max) = match to {
        ElementType::I32 => (31, i32::MIN as i64, i32::MAX as i64),
        _ => (63, i64::MIN, i64::MAX),
    };
    let limit = 2f64.powi(bits);
    let (high, low, zero) = (
        constant(at, from, limit, 0)?,
        constant(at, from, -limit, 0)?,
        constant(at, from, 0.0, 0)?,
    );
    let is_nan = at.cmpf(14, x, x)?;
    let too_big = at.cmpf(3, x, high)?;
    let too_small = at.cmpf(4, x, low)?;
    let i1 = at.i1();
    let outside = at.value("arith.ori", &[is_nan, too_big], i1)?;
    let outside = at.value("arith.ori", &[outside, too_small], i1)?;
    let safe = at.select(outside, zero, x)?;
    let converted = at.value("arith.fptosi", &[safe], value_type(at.context, to))?;
    let converted = at.select(too_big, constant(at, to, 0.0, max)?, converted)?;
    at.select(too_small, constant(at, to, 0.0, min)?, converted)
}

/// Binary `kind` of `a` and `b`, both `element`s; an integer division
/// by zero claims the status record with the op's `line` (0 when unknown).
/// With `reciprocal`, a float division carries `arcp`: LLVM may compute it
/// as a multiplication by the divisor's reciprocal (LICM does, once per
/// loop, for a divisor the inner loop does not change; instruction
/// selection shares one reciprocal between divisions by one value). The
/// CPU kernels turn LLVM's reciprocal estimates off (`crate::codegen`), so
/// the reciprocal is an IEEE division.
#[allow(clippy::too_many_arguments)]
pub(super) fn binary_op<'c, 'a>(
    at: &Emitter<'c, 'a>,
    kind: BinaryKind,
    a: Value<'c, 'a>,
    b: Value<'c, 'a>,
    element: ElementType,
    status: Value<'c, 'a>,
    line: Option<usize>,
    reciprocal: bool,
) -> Result<Value<'c, 'a>, Error> {
    let t = a.r#type();
    let float = element.is_float();
    let op = |name: &str| at.value(name, &[a, b], t);
    if kind.is_comparison() {
        let (float_predicate, signed, unsigned) = match kind {
            BinaryKind::Eq => (1, 0, 0),
            BinaryKind::Ne => (13, 1, 1),
            BinaryKind::Lt => (4, 2, 6),
            BinaryKind::Le => (5, 3, 7),
            BinaryKind::Gt => (2, 4, 8),
            _ => (3, 5, 9),
        };
        return if float {
            at.cmpf(float_predicate, a, b)
        } else if element == ElementType::I1 {
            at.cmpi(unsigned, a, b)
        } else {
            at.cmpi(signed, a, b)
        };
    }
    match kind {
        BinaryKind::Add => op(if float { "arith.addf" } else { "arith.addi" }),
        BinaryKind::Sub => op(if float { "arith.subf" } else { "arith.subi" }),
        BinaryKind::Mul => op(if float { "arith.mulf" } else { "arith.muli" }),
        BinaryKind::Div if float && reciprocal => at.value_with_flags("arith.divf", &[a, b], t, "arcp"),
        BinaryKind::Div if float => op("arith.divf"),
        BinaryKind::Mod if float => op("arith.remf"),
        BinaryKind::Div | BinaryKind::Mod => integer_division(at, kind, a, b, element, status, line),
        BinaryKind::Pow => op("math.powf"),
        // Not `arith.maximumf`/`minimumf`: see the module docs.
        BinaryKind::Max => op(if float { "llvm.intr.maximum" } else { "arith.maxsi" }),
        BinaryKind::Min => op(if float { "llvm.intr.minimum" } else { "arith.minsi" }),
        BinaryKind::And => op("arith.andi"),
        BinaryKind::Or => op("arith.ori"),
        _ => op("arith.xori"),
    }
}

/// Integer `div`/`mod` without undefined behaviour: a zero divisor claims
/// the status record with the op's `line` (the runtime reports it at that
/// op, as the interpreter does) and `MIN div -1` wraps, `MIN mod -1` is 0.
fn integer_division<'c, 'a>(
    at: &Emitter<'c, 'a>,
    kind: BinaryKind,
    a: Value<'c, 'a>,
    b: Value<'c, 'a>,
    element: ElementType,
    status: Value<'c, 'a>,
    line: Option<usize>,
) -> Result<Value<'c, 'a>, Error> {
    let t = a.r#type();
    let (zero, one, minus_one) = (
        constant(at, element, 0.0, 0)?,
        constant(at, element, 1.0, 1)?,
        constant(at, element, 0.0, -1)?,
    );
    let is_zero = at.cmpi(0, b, zero)?;
    let flag = at.if_then(is_zero)?;
    let i64_type: Type = melior::ir::r#type::IntegerType::new(at.context, 64).into();
    let line = flag.int(i64_type, line.map_or(0, |l| l as i64))?;
    super::access::claim(&flag, status, DIVISION_BY_ZERO_STATUS, line)?;
    flag.finish()?;
    let is_minus_one = at.cmpi(0, b, minus_one)?;
    let unsafe_divisor = at.value("arith.ori", &[is_zero, is_minus_one], at.i1())?;
    let divisor = at.select(unsafe_divisor, one, b)?;
    if kind == BinaryKind::Div {
        let quotient = at.value("arith.divsi", &[a, divisor], t)?;
        let negated = at.value("arith.subi", &[zero, a], t)?;
        at.select(is_minus_one, negated, quotient)
    } else {
        let remainder = at.value("arith.remsi", &[a, divisor], t)?;
        at.select(is_minus_one, zero, remainder)
    }
}

/// `acc <kind> x`, the same op as the element-wise kind a reduction step
/// is ([`ReduceKind::step`]); with `reassociate`, float `add`/`mul` carry
/// the `reassoc` fast-math flag so a loop of them may be vectorized into
/// partial results.
pub(super) fn combine<'c, 'a>(
    at: &Emitter<'c, 'a>,
    kind: ReduceKind,
    acc: Value<'c, 'a>,
    x: Value<'c, 'a>,
    element: ElementType,
    status: Value<'c, 'a>,
    reassociate: bool,
) -> Result<Value<'c, 'a>, Error> {
    if reassociate && element.is_float() && matches!(kind, ReduceKind::Add | ReduceKind::Mul) {
        let name = if kind == ReduceKind::Add {
            "arith.addf"
        } else {
            "arith.mulf"
        };
        return at.value_with_flags(name, &[acc, x], acc.r#type(), "reassoc");
    }
    // Reductions never divide: no line to report.
    binary_op(at, kind.step(), acc, x, element, status, None, false)
}
