//! The kernel's ops at one point of the domain: each op of the body, in
//! order, becomes scalar code at the current loop indices.
//!
//! - a tensor argument used element-wise is loaded at the point's
//!   row-major offset, once per point;
//! - `meta.reindex` loads its input at the indices its affine map gives
//!   ([`super::index`]) and selects `overflow_value` where they are out of
//!   bounds or in an overflow set; an empty input is `overflow_value`
//!   without a load;
//! - `meta.reindex_reduce` combines its input into its register
//!   accumulator, or loads, combines and stores its output element (under
//!   an `scf.if` when the index is checked);
//! - `meta.unary`, `meta.binary`, `meta.ternary` and splat constants are
//!   [`super::scalar`] ops on the elements already computed.
//!
//! Invariants:
//! - a reindex reads only kernel arguments, never a value of its own
//!   kernel (fusion rule 1), so every load is from a buffer;
//! - each value has one element per point: [`Body`] keeps the elements
//!   computed or loaded so far by value;
//! - storing results that are not reductions is the nest's job
//!   ([`super::nest`]), at the point's offset;
//! - in the bounds-checked mode, a load of an argument is checked as the
//!   op that first reads the element at the point (`%argN`), and a
//!   reduction's load and store of its output as the reduction (`result
//!   N`).
//!
//! Example: `exp` of a `tensor<4xf32>` argument `%x` at index `%i`:
//!
//! ```mlir
//! %t = arith.muli %i, %c1 : index         // the point's offset (nest)
//! %o = arith.addi %c0, %t : index
//! %k = arith.index_cast %o : index to i64
//! %p = llvm.getelementptr %x[%k] : (!llvm.ptr, i64) -> !llvm.ptr, f32
//! %v = llvm.load %p : !llvm.ptr -> f32
//! %e = math.exp %v : f32                  // under --math exact
//! ```

use super::{
    MathMode,
    access::{Arg, Check, Output, Status, key, load_at, load_marked, store_at},
    emit::{Emitter, error},
    index,
    poly::PolyTarget,
    prefetch,
    scalar::{binary_op, combine, constant, unary_op},
    schedule::{self, Schedule},
};
use crate::Error;
use jitc_dialect::{
    kinds::ElementType,
    ops::{BinaryOp, ReindexOp, ReindexReduceOp, UnaryOp},
    verify::op_name,
};
use melior::ir::{Attribute, OperationRef, Value, ValueLike, operation::OperationLike};
use std::collections::HashMap;

/// What the body may use of the target beyond plain LLVM IR.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Tuning {
    /// What the fast-math polynomials may use.
    pub(super) poly: PolyTarget,
    /// Loads of short contiguous runs that jump are marked for software
    /// prefetch (`super::prefetch`; CPU kernels).
    pub(super) prefetch: bool,
}

/// The state of the body at one point: the loop indices, what is known of
/// the kernel's values there, and the register accumulators.
pub(super) struct Body<'c, 'a, 'k> {
    /// Where the point's ops go.
    pub(super) at: Emitter<'c, 'a>,
    /// The domain's extents.
    pub(super) domain: &'k [i64],
    /// The index of each domain dimension.
    pub(super) ivs: Vec<Value<'c, 'a>>,
    /// The point's row-major offset in the domain.
    pub(super) linear: Value<'c, 'a>,
    /// The kernel's arguments, each with its lowered form.
    pub(super) arguments: &'k [(Value<'c, 'k>, Arg<'c, 'a>)],
    /// The element of each kernel value computed or loaded so far, by
    /// [`key`].
    pub(super) scalars: HashMap<usize, Value<'c, 'a>>,
    /// Where the kernel reports failures, and numbers its checked
    /// accesses.
    pub(super) status: Status<'k, 'c, 'a>,
    /// The kernel's schedule, for the checks of each reindex.
    pub(super) schedule: &'k Schedule,
    /// Inside the peeled interior: affine checks are known to hold.
    pub(super) interior: bool,
    /// Register accumulators, one per reduction (register schedules only).
    pub(super) accumulators: Vec<Value<'c, 'a>>,
    /// How closely float arithmetic follows the interpreter.
    pub(super) math: MathMode,
    /// What the body may use of the target.
    pub(super) tuning: Tuning,
}

impl<'c, 'a> Body<'c, 'a, '_> {
    /// The kernel argument `value` is, and its position.
    fn argument(&self, value: Value) -> Option<(usize, &Arg<'c, 'a>)> {
        self.arguments
            .iter()
            .enumerate()
            .find(|(_, (v, _))| key(*v) == key(value))
            .map(|(i, (_, a))| (i, a))
    }

    fn index_of(&self, value: Value) -> Result<Value<'c, 'a>, Error> {
        match self.argument(value) {
            Some((_, Arg::Index(index))) => Ok(*index),
            _ => Err(error("an index operand is not a kernel argument")),
        }
    }

    /// The element of `value` at the current point of the domain, loaded
    /// for `op` when it is an argument not loaded yet.
    fn scalar(&mut self, value: Value, op: OperationRef) -> Result<Value<'c, 'a>, Error> {
        if let Some(known) = self.scalars.get(&key(value)) {
            return Ok(*known);
        }
        let Some((
            i,
            Arg::Tensor {
                pointer,
                shape,
                element,
                dynamic,
            },
        )) = self.argument(value)
        else {
            return Err(error(
                "an operand is neither computed in the kernel nor a tensor argument",
            ));
        };
        let (pointer, element) = (*pointer, *element);
        // An argument of the domain's shape: over a dynamic domain, its
        // sizes are the domain's (the runtime checked them).
        let check = match dynamic {
            Some(dynamic) => self.status.check_dynamic(op, false, format!("%arg{i}"), dynamic),
            None => self.check_argument(op, i, shape, element),
        };
        // Read at the domain's own row-major offset.
        let mark = match check {
            None => self.prefetch_mark(schedule::strides(self.domain), element),
            Some(_) => None,
        };
        let loaded = load_marked(&self.at, pointer, self.linear, element, check, mark, Some(i))?;
        self.scalars.insert(key(value), loaded);
        Ok(loaded)
    }

    /// The mark of a load at the element offset `coefficients` (one per
    /// domain dimension), when it is one to prefetch for
    /// (`super::prefetch`).
    fn prefetch_mark(&self, coefficients: Option<Vec<i64>>, element: ElementType) -> Option<Attribute<'c>> {
        if !self.tuning.prefetch {
            return None;
        }
        let bytes = prefetch::distance(self.schedule, self.domain, &coefficients?, element.byte_width())?;
        prefetch::prefetch_tag(self.at.context, bytes)
    }

    /// The check of a load by `op` of argument `i`, in the bounds-checked
    /// mode.
    fn check_argument(
        &self,
        op: OperationRef,
        i: usize,
        shape: &[usize],
        element: ElementType,
    ) -> Option<Check<'c, 'a>> {
        self.status
            .check_tensor(op, false, format!("%arg{i}"), shape, element)
    }
}

/// The values of the symbols of `op`'s map: its trailing index operands
/// after the ones that size the dynamic dimensions of its result.
fn symbols_of<'c, 'a>(
    body: &Body<'c, 'a, '_>,
    op: OperationRef,
    operands: Vec<Value>,
) -> Result<Vec<Value<'c, 'a>>, Error> {
    let sizes = op
        .result(0)
        .ok()
        .and_then(|r| super::types::dynamic_shape(Value::from(r).r#type()))
        .map_or(0, |(shape, _)| shape.iter().filter(|d| d.is_none()).count());
    operands
        .into_iter()
        .skip(sizes)
        .map(|v| body.index_of(v))
        .collect()
}

/// The value `reindex` reads out of bounds, as a float and as an integer
/// (one of them is the number, the other 0): its `overflow_value`, or 0.
pub(super) fn overflow_value(reindex: &ReindexOp) -> (f64, i64) {
    reindex.overflow_value().map_or((0.0, 0), |attribute| {
        let raw = melior::ir::AttributeLike::to_raw(&attribute);
        // SAFETY: the verifier checked it is a number of the element type.
        unsafe {
            if mlir_sys::mlirAttributeIsAFloat(raw) {
                (mlir_sys::mlirFloatAttrGetValueDouble(raw), 0)
            } else {
                (0.0, mlir_sys::mlirIntegerAttrGetValueInt(raw))
            }
        }
    })
}

/// Emits one op; returns its element value, `None` for reductions.
pub(super) fn emit_op<'c, 'a>(
    body: &mut Body<'c, 'a, '_>,
    op: OperationRef<'c, '_>,
    output_of: &HashMap<usize, usize>,
    outputs: &[Output<'c, 'a>],
    register: Option<usize>,
) -> Result<Option<Value<'c, 'a>>, Error> {
    let at = body.at;
    let element_of =
        |v: Value| super::element_of(v).ok_or_else(|| error("an operand is not a supported tensor"));
    match op_name(op).as_str() {
        "arith.constant" => {
            let result: Value = op.result(0).map_err(|_| error("constant"))?.into();
            let element = element_of(result)?;
            let attribute = op.attribute("value").map_err(|_| error("constant"))?;
            // SAFETY: the attribute is a splat dense elements attribute
            // (checked by `check`) of `element`s.
            let (value, integer) = unsafe {
                let raw = melior::ir::AttributeLike::to_raw(&attribute);
                match element {
                    ElementType::F32 => (mlir_sys::mlirDenseElementsAttrGetFloatSplatValue(raw) as f64, 0),
                    ElementType::F64 => (mlir_sys::mlirDenseElementsAttrGetDoubleSplatValue(raw), 0),
                    ElementType::I32 => (0.0, mlir_sys::mlirDenseElementsAttrGetInt32SplatValue(raw) as i64),
                    ElementType::I64 => (0.0, mlir_sys::mlirDenseElementsAttrGetInt64SplatValue(raw)),
                    ElementType::I1 => (0.0, mlir_sys::mlirDenseElementsAttrGetBoolSplatValue(raw) as i64),
                }
            };
            constant(&at, element, value, integer).map(Some)
        }
        "meta.reindex" => {
            let reindex = ReindexOp::cast(op).ok_or_else(|| error("reindex"))?;
            let input = reindex.input().ok_or_else(|| error("reindex input"))?;
            let Some((
                i,
                Arg::Tensor {
                    pointer,
                    shape,
                    element,
                    dynamic,
                },
            )) = body.argument(input)
            else {
                return Err(error(
                    "a reindex reads a value computed in its own kernel (rule 1)",
                ));
            };
            let (pointer, shape, element, dynamic) = (*pointer, shape.clone(), *element, dynamic.clone());
            let symbols = symbols_of(body, op, reindex.index_operands())?;
            let (value, integer) = overflow_value(&reindex);
            let overflow = constant(&at, element, value, integer)?;
            // An empty input is read nowhere (a dynamic one is checked at
            // run time instead: its static shape holds 0 for each dynamic
            // dimension).
            if dynamic.is_none() && shape.contains(&0) {
                return Ok(Some(overflow));
            }
            let map = reindex.indices().ok_or_else(|| error("reindex map"))?;
            let schedule = body.schedule;
            let checks = schedule
                .checks_of(op)
                .ok_or_else(|| error("a reindex without a schedule"))?;
            let operands = index::Operands {
                domain: body.domain,
                ivs: &body.ivs,
                symbols: &symbols,
                record: body.status.record,
            };
            let (indices, inside) = index::indices(
                &at,
                &operands,
                body.interior,
                map,
                checks,
                reindex.overflow_conditions(),
                dynamic.as_ref().map(|d| d.extents.as_slice()),
            )?;
            let offset = match &dynamic {
                Some(dynamic) => index::clamped_offset_dynamic(&at, &indices, inside, &dynamic.extents)?,
                None => index::clamped_offset(&at, &indices, inside, &checks.shape)?,
            };
            let check = match &dynamic {
                // Checked only where the indices are in bounds: elsewhere
                // the overflow value is taken, and the input may be empty
                // (its sizes are known at run time only).
                Some(dynamic) => body
                    .status
                    .check_dynamic(op, false, format!("%arg{i}"), dynamic)
                    .map(|check| match inside {
                        Some(inside) => check.when(inside),
                        None => check,
                    }),
                None => body.check_argument(op, i, &shape, element),
            };
            let mark = match (&check, &dynamic) {
                (None, None) => body.prefetch_mark(
                    schedule::flat_access(map, &checks.shape, body.domain.len()),
                    element,
                ),
                _ => None,
            };
            let loaded = load_marked(&at, pointer, offset, element, check, mark, Some(i))?;
            match inside {
                Some(inside) => at.select(inside, loaded, overflow).map(Some),
                None => Ok(Some(loaded)),
            }
        }
        "meta.reindex_reduce" => {
            let reduce = ReindexReduceOp::cast(op).ok_or_else(|| error("reduce"))?;
            let result = reduce.result().ok_or_else(|| error("reduce result"))?;
            let Some(&j) = output_of.get(&key(result)) else {
                return Ok(None);
            };
            let output = &outputs[j];
            let (pointer, element) = (output.pointer, output.element);
            let kind = reduce.kind().ok_or_else(|| error("unknown reduction"))?;
            let x = body.scalar(reduce.input().ok_or_else(|| error("reduce input"))?, op)?;
            if let Some(r) = register {
                let acc = body.accumulators[r];
                let reassociate = body.math == MathMode::Fast;
                let status = body.status.record;
                body.accumulators[r] = combine(&at, kind, acc, x, element, status, reassociate)?;
                return Ok(None);
            }
            let symbols = symbols_of(body, op, reduce.index_operands())?;
            let map = reduce.indices().ok_or_else(|| error("reduce map"))?;
            let schedule = body.schedule;
            let checks = schedule
                .checks_of(op)
                .ok_or_else(|| error("a reduction without a schedule"))?;
            let operands = index::Operands {
                domain: body.domain,
                ivs: &body.ivs,
                symbols: &symbols,
                record: body.status.record,
            };
            let (indices, inside) = index::indices(
                &at,
                &operands,
                body.interior,
                map,
                checks,
                reduce.overflow_conditions(),
                output.dynamic.as_ref().map(|d| d.extents.as_slice()),
            )?;
            let offset = match &output.dynamic {
                Some(dynamic) => index::clamped_offset_dynamic(&at, &indices, inside, &dynamic.extents)?,
                None => index::clamped_offset(&at, &indices, inside, &checks.shape)?,
            };
            let then = match inside {
                Some(inside) => at.if_then(inside)?,
                None => at,
            };
            let check = |store| output.check(&body.status, op, store, j);
            let acc = load_at(&then, pointer, offset, element, check(false))?;
            let combined = combine(&then, kind, acc, x, element, body.status.record, false)?;
            store_at(&then, pointer, offset, combined, element, check(true))?;
            if inside.is_some() {
                then.finish()?;
            }
            Ok(None)
        }
        "meta.unary" => {
            let unary = UnaryOp::cast(op).ok_or_else(|| error("unary"))?;
            let input = unary.input().ok_or_else(|| error("unary input"))?;
            let (from, to) = (
                element_of(input)?,
                element_of(unary.result().ok_or_else(|| error("unary result"))?)?,
            );
            let x = body.scalar(input, op)?;
            let kind = unary.kind().ok_or_else(|| error("unary kind"))?;
            unary_op(&at, kind, x, from, to, body.math, body.tuning.poly).map(Some)
        }
        "meta.binary" => {
            let binary = BinaryOp::cast(op).ok_or_else(|| error("binary"))?;
            let (lhs, rhs) = (
                binary.lhs().ok_or_else(|| error("lhs"))?,
                binary.rhs().ok_or_else(|| error("rhs"))?,
            );
            let element = element_of(lhs)?;
            let (a, b) = (body.scalar(lhs, op)?, body.scalar(rhs, op)?);
            let kind = binary.kind().ok_or_else(|| error("binary kind"))?;
            let line = jitc_dialect::verify::location_line(op.location());
            // Under fast math on the CPU only (on the GPU `arcp` would
            // select another division instruction, which no GPU run has
            // measured).
            let reciprocal = body.math == MathMode::Fast && !body.tuning.poly.gpu;
            binary_op(&at, kind, a, b, element, body.status.record, line, reciprocal).map(Some)
        }
        "meta.ternary" => {
            let c = body.scalar(op.operand(0).map_err(|_| error("select"))?, op)?;
            let a = body.scalar(op.operand(1).map_err(|_| error("select"))?, op)?;
            let b = body.scalar(op.operand(2).map_err(|_| error("select"))?, op)?;
            at.select(c, a, b).map(Some)
        }
        other => Err(error(format!("'{other}' is not lowered"))),
    }
}
