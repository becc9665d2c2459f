//! Index arithmetic of the loop nest: the results of an affine map at a
//! point, the bounds checks and overflow conditions that guard them,
//! row-major offsets, and the interior of a peeled loop, where every
//! affine check holds.
//!
//! Affine expressions become `arith` on `index` values: `+` and `*` as
//! `addi` and `muli`, `floordiv` and `ceildiv` as `floordivsi` and
//! `ceildivsi`, and `mod` as `remsi` plus the divisor where the remainder
//! is negative, since an affine `mod` never is. An index the schedule has
//! not proven in bounds ([`Check`]) is checked as `0 <= i < extent`; the
//! conjunction of its checks and of "in no overflow set" says whether the
//! point is `inside`. Outside, the offset is computed from zeros instead of
//! the indices, so every address is valid and a load needs no branch.
//!
//! Invariants:
//! - nothing here branches: conditions are `i1` values and choices are
//!   `arith.select`s, so loops stay vectorizable;
//! - [`Check::Proven`] indices are never checked, and [`Check::Affine`]
//!   ones are not checked in the interior that [`interior`] computes.
//!
//! Example: the index `d0 - 1` into a `tensor<8xf32>`, checked and
//! clamped (constants hoisted for brevity):
//!
//! ```mlir
//! %i  = arith.addi %d0, %c-1 : index
//! %ge = arith.cmpi sge, %i, %c0 : index
//! %lt = arith.cmpi slt, %i, %c8 : index
//! %in = arith.andi %ge, %lt : i1
//! %j  = arith.select %in, %i, %c0 : index
//! ```
//!
//! For the interior, each affine check `0 <= c*i + rest < extent` of the
//! innermost index `i` (with `rest` the rest of the form at the outer
//! indices) is solved for `i`: for `c > 0`,
//! `ceil(-rest / c) <= i < floor((extent - 1 - rest) / c) + 1`, and the
//! interior is the intersection of these ranges with the loop's bounds.

use super::{
    access::{AFFINE_DIVISOR_STATUS, AFFINE_OVERFLOW_STATUS, claim},
    emit::{Emitter, error},
    schedule::{Check, Checks, Schedule, range},
};
use crate::Error;
use jitc_dialect::ops::IntegerSet;
use melior::ir::{AffineExpr, AffineMap, Type, Value};

/// The row-major strides of `shape`, in elements.
fn strides(shape: &[usize]) -> Vec<i64> {
    let mut strides = vec![1i64; shape.len()];
    for d in (0..shape.len().saturating_sub(1)).rev() {
        strides[d] = strides[d + 1] * shape[d + 1] as i64;
    }
    strides
}

/// `Σ index_k * stride_k`: the offset of `indices` in a row-major `shape`.
pub(super) fn row_major<'c, 'a>(
    at: &Emitter<'c, 'a>,
    indices: &[Value<'c, 'a>],
    shape: &[usize],
) -> Result<Value<'c, 'a>, Error> {
    let index = Type::index(at.context);
    let mut offset = at.index(0)?;
    for (value, stride) in indices.iter().zip(strides(shape)) {
        let term = at.value("arith.muli", &[*value, at.index(stride)?], index)?;
        offset = at.value("arith.addi", &[offset, term], index)?;
    }
    Ok(offset)
}

/// Splits the row-major `linear` index over `extents` into one index per
/// extent (the last varies fastest).
pub(super) fn delinearize<'c, 'a>(
    at: &Emitter<'c, 'a>,
    linear: Value<'c, 'a>,
    extents: &[i64],
) -> Result<Vec<Value<'c, 'a>>, Error> {
    split_linear(at, linear, extents, Type::index(at.context))
}

/// [`delinearize`] in 32-bit arithmetic where the indices fit (`extents`
/// hold fewer than 2^31 points): a GPU divides a 32-bit integer by a
/// constant in one multiply-high instruction and a 64-bit one in several,
/// which a loop that delinearizes every element pays in each step.
pub(super) fn delinearize_narrow<'c, 'a>(
    at: &Emitter<'c, 'a>,
    linear: Value<'c, 'a>,
    extents: &[i64],
) -> Result<Vec<Value<'c, 'a>>, Error> {
    let points = extents.iter().try_fold(1i64, |p, &e| p.checked_mul(e));
    if extents.len() < 2 || points.is_none_or(|p| p > i64::from(i32::MAX)) {
        return delinearize(at, linear, extents);
    }
    let index = Type::index(at.context);
    let i32_type: Type = melior::ir::r#type::IntegerType::new(at.context, 32).into();
    let narrow = at.value("arith.index_castui", &[linear], i32_type)?;
    split_linear(at, narrow, extents, i32_type)?
        .into_iter()
        .map(|i| at.value("arith.index_castui", &[i], index))
        .collect()
}

/// The divisions and remainders of [`delinearize`], in `r#type` (`index`
/// or an integer type that holds every index).
fn split_linear<'c, 'a>(
    at: &Emitter<'c, 'a>,
    linear: Value<'c, 'a>,
    extents: &[i64],
    r#type: Type<'c>,
) -> Result<Vec<Value<'c, 'a>>, Error> {
    let mut rest = linear;
    let mut indices = vec![linear; extents.len()];
    for (k, &extent) in extents.iter().enumerate().rev() {
        if k == 0 {
            indices[k] = rest;
            break;
        }
        let e = at.int(r#type, extent)?;
        indices[k] = at.value("arith.remui", &[rest, e], r#type)?;
        rest = at.value("arith.divui", &[rest, e], r#type)?;
    }
    Ok(indices)
}

/// What the affine expressions of an op read at one point: the domain
/// indices and the op's symbols, and the status record their failures
/// claim.
pub(super) struct Operands<'v, 'c, 'a> {
    /// The domain's extents, which bound the indices.
    pub(super) domain: &'v [i64],
    /// The domain indices.
    pub(super) ivs: &'v [Value<'c, 'a>],
    /// The values of the map's symbols.
    pub(super) symbols: &'v [Value<'c, 'a>],
    /// The kernel's status record.
    pub(super) record: Value<'c, 'a>,
}

/// An affine expression of the domain indices and symbols of `operands`,
/// with the interpreter's run-time failures claimed in the status record
/// where `reached` (`None`: everywhere) says the interpreter evaluates it:
/// - a divisor that is not a constant (a symbol's expression, which the
///   verifier cannot check) and is not positive claims
///   [`AFFINE_DIVISOR_STATUS`] and is replaced by 1, so the division stays
///   defined;
/// - an addition or multiplication whose bounds over the domain are not
///   known to fit i64 ([`range`]: one that reads a symbol, or a `mod` or
///   division the corners of the domain do not bound) is checked, and
///   one that leaves i64 claims [`AFFINE_OVERFLOW_STATUS`]. The others
///   cannot overflow and cost nothing.
fn affine<'c, 'a>(
    at: &Emitter<'c, 'a>,
    operands: &Operands<'_, 'c, 'a>,
    expr: AffineExpr<'c>,
    reached: Option<Value<'c, 'a>>,
) -> Result<Value<'c, 'a>, Error> {
    let (ivs, symbols, record) = (operands.ivs, operands.symbols, operands.record);
    let index = Type::index(at.context);
    if expr.is_dim() {
        return ivs
            .get(expr.dim_position())
            .copied()
            .ok_or_else(|| error("a map dimension has no loop"));
    }
    if expr.is_symbol() {
        return symbols
            .get(expr.symbol_position())
            .copied()
            .ok_or_else(|| error("a map symbol has no operand"));
    }
    if expr.is_constant() {
        return at.index(expr.constant_value());
    }
    let (a, mut b) = (
        affine(at, operands, expr.lhs(), reached)?,
        affine(at, operands, expr.rhs(), reached)?,
    );
    let i64_type: Type = melior::ir::r#type::IntegerType::new(at.context, 64).into();
    // Claims `status` with `word` where `fault` holds at a reached point.
    let fail_where = |fault: Value<'c, 'a>, status: i64, word: Value<'c, 'a>| -> Result<(), Error> {
        let fault = match reached {
            Some(reached) => at.value("arith.andi", &[fault, reached], at.i1())?,
            None => fault,
        };
        let failed = at.if_then(fault)?;
        let word = failed.value("arith.index_cast", &[word], i64_type)?;
        claim(&failed, record, status, word)?;
        failed.finish()
    };
    let divides = expr.is_floor_div() || expr.is_ceil_div() || expr.is_mod();
    if divides && !expr.rhs().is_constant() {
        let one = at.index(1)?;
        let not_positive = at.cmpi(2, b, one)?;
        fail_where(not_positive, AFFINE_DIVISOR_STATUS, b)?;
        b = at.select(not_positive, one, b)?;
    }
    let checked = (expr.is_add() || expr.is_mul()) && range(expr, operands.domain).is_none();
    if expr.is_add() {
        let sum = at.value("arith.addi", &[a, b], index)?;
        if checked {
            // Signed overflow: both operands differ in sign from the sum.
            let (x, y) = (
                at.value("arith.xori", &[a, sum], index)?,
                at.value("arith.xori", &[b, sum], index)?,
            );
            let both = at.value("arith.andi", &[x, y], index)?;
            let overflow = at.cmpi(2, both, at.index(0)?)?;
            fail_where(overflow, AFFINE_OVERFLOW_STATUS, at.index(0)?)?;
        }
        Ok(sum)
    } else if expr.is_mul() {
        if !checked {
            return at.value("arith.muli", &[a, b], index);
        }
        // The full 128-bit product: it fits i64 when its high half is the
        // sign extension of its low half.
        let (x, y) = (
            at.value("arith.index_cast", &[a], i64_type)?,
            at.value("arith.index_cast", &[b], i64_type)?,
        );
        let halves = at.values("arith.mulsi_extended", &[x, y], &[i64_type, i64_type])?;
        let (low, high) = (halves[0], halves[1]);
        let sign = at.value("arith.shrsi", &[low, at.int(i64_type, 63)?], i64_type)?;
        let overflow = at.cmpi(1, high, sign)?;
        fail_where(overflow, AFFINE_OVERFLOW_STATUS, at.index(0)?)?;
        at.value("arith.index_cast", &[low], index)
    } else if expr.is_floor_div() {
        at.value("arith.floordivsi", &[a, b], index)
    } else if expr.is_ceil_div() {
        at.value("arith.ceildivsi", &[a, b], index)
    } else {
        // `mod` is never negative in the affine dialect.
        let r = at.value("arith.remsi", &[a, b], index)?;
        let zero = at.index(0)?;
        let negative = at.cmpi(2, r, zero)?;
        let adjusted = at.value("arith.addi", &[r, b], index)?;
        at.select(negative, adjusted, r)
    }
}

/// The map's results at the point `ivs`, and, unless every index is known
/// to be in bounds there (`interior` says the point is in the peeled
/// interior), whether they are inside the shape and outside every set of
/// `conditions`.
pub(super) fn indices<'c, 'a>(
    at: &Emitter<'c, 'a>,
    operands: &Operands<'_, 'c, 'a>,
    interior: bool,
    map: AffineMap<'c>,
    checks: &Checks,
    conditions: Option<Result<Vec<IntegerSet<'c>>, ()>>,
    extents: Option<&[Value<'c, 'a>]>,
) -> Result<(Vec<Value<'c, 'a>>, Option<Value<'c, 'a>>), Error> {
    let sets = match conditions {
        None => Vec::new(),
        Some(Ok(sets)) => sets,
        Some(Err(())) => return Err(error("malformed overflow_conditions")),
    };
    // The interpreter evaluates the sets in order up to the first that
    // holds, each constraint of a set up to the first that fails, and the
    // map only where no set holds; a failure counts only where it
    // evaluates.
    let not = |v: Value<'c, 'a>| at.value("arith.xori", &[v, at.int(at.i1(), 1)?], at.i1());
    let mut excluded: Option<Value<'c, 'a>> = None;
    for set in sets {
        let mut holds: Option<Value<'c, 'a>> = None;
        for (expr, equality) in set.constraints() {
            let reached = match excluded {
                Some(excluded) => Some(at.and_maybe(holds, not(excluded)?)?),
                None => holds,
            };
            let value = affine(at, operands, expr, reached)?;
            let zero = at.index(0)?;
            let satisfied = at.cmpi(if equality { 0 } else { 5 }, value, zero)?;
            holds = Some(at.and_maybe(holds, satisfied)?);
        }
        let holds = match holds {
            Some(holds) => holds,
            None => at.int(at.i1(), 1)?,
        };
        excluded = Some(match excluded {
            Some(excluded) => at.value("arith.ori", &[excluded, holds], at.i1())?,
            None => holds,
        });
    }
    let reached = excluded.map(not).transpose()?;
    let mut inside = reached;
    let mut indices = Vec::new();
    for (k, &extent) in checks.shape.iter().enumerate() {
        let result = map.result(k).map_err(|_| error("map result"))?;
        let index = affine(at, operands, result, reached)?;
        let checked = match checks.indices.get(k) {
            Some(Check::Proven) => false,
            Some(Check::Affine(_)) => !interior,
            _ => true,
        };
        if checked {
            // A dynamic extent (-1 in the schedule) is the size read at
            // run time.
            let bound = match extents.and_then(|e| e.get(k)) {
                Some(size) if extent < 0 => *size,
                _ => at.index(extent)?,
            };
            let zero = at.index(0)?;
            inside = Some(at.and_maybe(inside, at.cmpi(5, index, zero)?)?);
            inside = Some(at.and_maybe(inside, at.cmpi(2, index, bound)?)?);
        }
        indices.push(index);
    }
    Ok((indices, inside))
}

/// The row-major offset of `indices` in `shape`, with indices replaced by
/// 0 where `inside` is false, so the address is always valid.
pub(super) fn clamped_offset<'c, 'a>(
    at: &Emitter<'c, 'a>,
    indices: &[Value<'c, 'a>],
    inside: Option<Value<'c, 'a>>,
    shape: &[i64],
) -> Result<Value<'c, 'a>, Error> {
    let clamped = match inside {
        Some(inside) => indices
            .iter()
            .map(|value| at.select(inside, *value, at.index(0)?))
            .collect::<Result<Vec<_>, _>>()?,
        None => indices.to_vec(),
    };
    let shape: Vec<usize> = shape.iter().map(|&d| d as usize).collect();
    row_major(at, &clamped, &shape)
}

/// [`clamped_offset`] in a tensor whose sizes are known at run time only:
/// `((i0 * e1 + i1) * e2 + i2) ...`.
pub(super) fn clamped_offset_dynamic<'c, 'a>(
    at: &Emitter<'c, 'a>,
    indices: &[Value<'c, 'a>],
    inside: Option<Value<'c, 'a>>,
    extents: &[Value<'c, 'a>],
) -> Result<Value<'c, 'a>, Error> {
    let index = Type::index(at.context);
    let mut offset = at.index(0)?;
    for (value, extent) in indices.iter().zip(extents) {
        let value = match inside {
            Some(inside) => at.select(inside, *value, at.index(0)?)?,
            None => *value,
        };
        let scaled = at.value("arith.muli", &[offset, *extent], index)?;
        offset = at.value("arith.addi", &[scaled, value], index)?;
    }
    Ok(offset)
}

/// The interior `[low, high)` of innermost dimension `d` within `[lower,
/// upper)`, where every affine check of `schedule` holds, given the outer
/// indices `ivs`.
pub(super) fn interior<'c, 'a>(
    at: &Emitter<'c, 'a>,
    schedule: &Schedule,
    ivs: &[Option<Value<'c, 'a>>],
    d: usize,
    lower: Value<'c, 'a>,
    upper: Value<'c, 'a>,
) -> Result<(Value<'c, 'a>, Value<'c, 'a>), Error> {
    let index = Type::index(at.context);
    let (mut low, mut high) = (lower, upper);
    let mut holds: Option<Value<'c, 'a>> = None;
    let one = at.index(1)?;
    for (_, checks) in &schedule.checks {
        for (k, check) in checks.indices.iter().enumerate() {
            let Check::Affine(form) = check else { continue };
            let extent = checks.shape[k];
            let mut rest = at.index(form.constant)?;
            for (dim, &c) in form.coefficients.iter().enumerate() {
                if dim == d || c == 0 {
                    continue;
                }
                let iv = ivs[dim].ok_or_else(|| error("an outer index has no loop"))?;
                let term = at.value("arith.muli", &[iv, at.index(c)?], index)?;
                rest = at.value("arith.addi", &[rest, term], index)?;
            }
            let c = form.coefficients[d];
            if c == 0 {
                let low_ok = at.cmpi(5, rest, at.index(0)?)?;
                let high_ok = at.cmpi(2, rest, at.index(extent)?)?;
                let both = at.value("arith.andi", &[low_ok, high_ok], at.i1())?;
                holds = Some(at.and_maybe(holds, both)?);
                continue;
            }
            // 0 <= c*i + rest < extent, solved for i.
            let (first, past) = if c > 0 {
                let negated = at.value("arith.subi", &[at.index(0)?, rest], index)?;
                let first = at.value("arith.ceildivsi", &[negated, at.index(c)?], index)?;
                let top_value = at.value("arith.subi", &[at.index(extent - 1)?, rest], index)?;
                let last = at.value("arith.floordivsi", &[top_value, at.index(c)?], index)?;
                (first, at.value("arith.addi", &[last, one], index)?)
            } else {
                let m = at.index(-c)?;
                let last = at.value("arith.floordivsi", &[rest, m], index)?;
                let shifted = at.value("arith.subi", &[rest, at.index(extent - 1)?], index)?;
                let first = at.value("arith.ceildivsi", &[shifted, m], index)?;
                (first, at.value("arith.addi", &[last, one], index)?)
            };
            low = at.value("arith.maxsi", &[low, first], index)?;
            high = at.value("arith.minsi", &[high, past], index)?;
        }
    }
    let low = at.value("arith.minsi", &[low, upper], index)?;
    let high = at.value("arith.maxsi", &[high, low], index)?;
    Ok(match holds {
        Some(holds) => (at.select(holds, low, upper)?, at.select(holds, high, upper)?),
        None => (low, high),
    })
}
