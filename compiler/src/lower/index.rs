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
    access::{AFFINE_DIVISOR_STATUS, claim},
    emit::{Emitter, error},
    schedule::{Check, Checks, Schedule},
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
    let index = Type::index(at.context);
    let mut rest = linear;
    let mut indices = vec![linear; extents.len()];
    for (k, &extent) in extents.iter().enumerate().rev() {
        if k == 0 {
            indices[k] = rest;
            break;
        }
        let e = at.index(extent)?;
        indices[k] = at.value("arith.remui", &[rest, e], index)?;
        rest = at.value("arith.divui", &[rest, e], index)?;
    }
    Ok(indices)
}

/// What the affine expressions of an op read at one point: the domain
/// indices and the op's symbols, and the status record their failures
/// claim.
pub(super) struct Operands<'v, 'c, 'a> {
    /// The domain indices.
    pub(super) ivs: &'v [Value<'c, 'a>],
    /// The values of the map's symbols.
    pub(super) symbols: &'v [Value<'c, 'a>],
    /// The kernel's status record.
    pub(super) record: Value<'c, 'a>,
}

/// An affine expression of the domain indices and symbols of `operands`.
/// A divisor that is not a constant (a symbol's expression, which the
/// verifier cannot check) is checked here: one that is not positive claims
/// the status record with [`AFFINE_DIVISOR_STATUS`] and is replaced by 1,
/// so the division stays defined.
fn affine<'c, 'a>(
    at: &Emitter<'c, 'a>,
    operands: &Operands<'_, 'c, 'a>,
    expr: AffineExpr<'c>,
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
        affine(at, operands, expr.lhs())?,
        affine(at, operands, expr.rhs())?,
    );
    let divides = expr.is_floor_div() || expr.is_ceil_div() || expr.is_mod();
    if divides && !expr.rhs().is_constant() {
        let one = at.index(1)?;
        let not_positive = at.cmpi(2, b, one)?;
        let failed = at.if_then(not_positive)?;
        let i64_type = melior::ir::r#type::IntegerType::new(at.context, 64).into();
        let divisor = failed.value("arith.index_cast", &[b], i64_type)?;
        claim(&failed, record, AFFINE_DIVISOR_STATUS, divisor)?;
        failed.finish()?;
        b = at.select(not_positive, one, b)?;
    }
    if expr.is_add() {
        at.value("arith.addi", &[a, b], index)
    } else if expr.is_mul() {
        at.value("arith.muli", &[a, b], index)
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
) -> Result<(Vec<Value<'c, 'a>>, Option<Value<'c, 'a>>), Error> {
    let mut inside: Option<Value<'c, 'a>> = None;
    let mut and = |condition: Value<'c, 'a>| -> Result<(), Error> {
        inside = Some(at.and_maybe(inside, condition)?);
        Ok(())
    };
    let mut indices = Vec::new();
    for (k, &extent) in checks.shape.iter().enumerate() {
        let index = affine(at, operands, map.result(k).map_err(|_| error("map result"))?)?;
        let checked = match checks.indices.get(k) {
            Some(Check::Proven) => false,
            Some(Check::Affine(_)) => !interior,
            _ => true,
        };
        if checked {
            let (zero, bound) = (at.index(0)?, at.index(extent)?);
            and(at.cmpi(5, index, zero)?)?;
            and(at.cmpi(2, index, bound)?)?;
        }
        indices.push(index);
    }
    let sets = match conditions {
        None => Vec::new(),
        Some(Ok(sets)) => sets,
        Some(Err(())) => return Err(error("malformed overflow_conditions")),
    };
    for set in sets {
        let mut holds = at.int(at.i1(), 1)?;
        for (expr, equality) in set.constraints() {
            let value = affine(at, operands, expr)?;
            let zero = at.index(0)?;
            let satisfied = at.cmpi(if equality { 0 } else { 5 }, value, zero)?;
            holds = at.value("arith.andi", &[holds, satisfied], at.i1())?;
        }
        and(at.value("arith.xori", &[holds, at.int(at.i1(), 1)?], at.i1())?)?;
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
