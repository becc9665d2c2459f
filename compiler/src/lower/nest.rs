//! The CPU loop nest of a kernel: identity fills, one `scf.for` per domain
//! dimension in the schedule's order (the schedule's `collapse` innermost
//! ones as one loop over their product), register accumulators carried
//! through the loops they fold over, the peeled innermost loop, and the
//! body at each point ([`super::point`]).
//!
//! Phases of [`emit_kernel`]:
//! 1. collect the body's ops and which of them are results; reductions
//!    accumulate in registers when the schedule keeps any there, else in
//!    memory;
//! 2. fill the memory accumulators with their identity: all of each
//!    output, or when the kernel is split, the part its `[begin, end)`
//!    owns;
//! 3. emit the loops, outermost first; the first of the schedule's
//!    `registers` innermost loops starts the accumulators from their
//!    identity, carries them through, and stores them after;
//! 4. a peeled innermost loop becomes three loops: checked edge,
//!    check-free interior ([`super::index::interior`]), checked edge;
//! 5. at each point, emit the ops, and store each result that is not a
//!    reduction at the point's row-major offset.
//!
//! Invariants:
//! - the split dimension runs the caller's `[begin, end)` (the GPU passes
//!   no range, so it runs whole); every other dimension runs its extent;
//! - under [`Schedule::parallel`], a call writes only outputs of its own
//!   part, the fill included, so parts may run at once;
//! - the loop order is the schedule's, which keeps the order of the
//!   dimensions every float `add`/`mul` reduction folds over, so results
//!   fold in the interpreter's row-major order;
//! - in the bounds-checked mode, every store here (fills, register
//!   results, results at the point) is checked as an access of the op
//!   whose result it stores (`result N`), like the loads of
//!   [`super::point`].
//!
//! Example: the row maximum of a `tensor<4x8xf32>` (from
//! `examples/softmax.mlir`), one register accumulator over `d1`,
//! constants hoisted for brevity:
//!
//! ```mlir
//! scf.for %d0 = %begin to %end step %c1 {
//!   %m = scf.for %d1 = %c0 to %c8 step %c1 iter_args(%acc = %ninf) -> (f32) {
//!     %x = ... the input's element at 8 * %d0 + %d1
//!     %next = llvm.intr.maximum(%acc, %x) : (f32, f32) -> f32
//!     scf.yield %next : f32
//!   }
//!   ... llvm.store %m at %d0 of the output
//! }
//! ```

use super::{
    MathMode,
    access::{Arg, Output, Status, key, store_at, store_marked},
    emit::{Emitter, error},
    index::{self, row_major},
    point::{Body, Tuning, emit_op},
    scalar::identity,
    schedule::Schedule,
};
use crate::Error;
use jitc_dialect::{
    kinds::{ElementType, ReduceKind},
    ops::ReindexReduceOp,
};
use melior::ir::{BlockLike, BlockRef, OperationRef, Type, Value, operation::OperationLike};
use std::collections::HashMap;

/// What every part of a kernel's loop nest needs.
pub(super) struct Kernel<'c, 'a, 'k> {
    ops: Vec<OperationRef<'c, 'k>>,
    output_of: HashMap<usize, usize>,
    outputs: &'k [Output<'c, 'a>],
    arguments: &'k [(Value<'c, 'k>, Arg<'c, 'a>)],
    /// Where the kernel reports failures, and numbers its checked
    /// accesses.
    pub(super) status: Status<'k, 'c, 'a>,
    domain: &'k [i64],
    /// The domain's sizes at run time (a kernel over a dynamic domain):
    /// one `index` per dimension, read at entry.
    sizes: Option<&'k [Value<'c, 'a>]>,
    schedule: &'k Schedule,
    range: Option<(Value<'c, 'a>, Value<'c, 'a>)>,
    /// Reductions that accumulate in registers: the op, its output, kind and
    /// element type.
    pub(super) registers: Vec<(OperationRef<'c, 'k>, usize, ReduceKind, ElementType)>,
    math: MathMode,
    tuning: Tuning,
}

/// Emits the whole kernel: identity fills, the loop nest and its body, as
/// `schedule` says.
#[allow(clippy::too_many_arguments)]
pub(super) fn emit_kernel<'c, 'a>(
    top: &Emitter<'c, 'a>,
    kernel_body: BlockRef<'c, '_>,
    arguments: &[(Value<'c, '_>, Arg<'c, 'a>)],
    outputs: &[Output<'c, 'a>],
    status: Status<'_, 'c, 'a>,
    domain: &[i64],
    sizes: Option<&[Value<'c, 'a>]>,
    schedule: &Schedule,
    range: Option<(Value<'c, 'a>, Value<'c, 'a>)>,
    math: MathMode,
    tuning: Tuning,
) -> Result<(), Error> {
    if domain.iter().any(|&d| d < 0) && sizes.is_none() {
        return Err(error("a dynamic domain without its sizes"));
    }
    let (kernel, in_memory) = Kernel::new(
        kernel_body,
        arguments,
        outputs,
        status,
        domain,
        sizes,
        schedule,
        range,
        math,
        tuning,
    )?;
    for (reduce, j, kind) in in_memory {
        // Reductions in memory start from their identity.
        kernel.fill(top, reduce, j, kind)?;
    }
    let mut ivs = vec![None; domain.len()];
    let left = kernel.level(0, top, &mut ivs, Vec::new())?;
    debug_assert!(left.is_empty());
    Ok(())
}

/// A reduction that accumulates in its output buffer: the op, its output
/// and kind.
type InMemory<'c, 'k> = (ReindexReduceOp<'c, 'k>, usize, ReduceKind);

impl<'c, 'a, 'k> Kernel<'c, 'a, 'k> {
    /// The kernel whose body is `kernel_body`, with its reductions in
    /// registers when `schedule` says so; returns the reductions that
    /// accumulate in memory instead.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn new(
        kernel_body: BlockRef<'c, 'k>,
        arguments: &'k [(Value<'c, '_>, Arg<'c, 'a>)],
        outputs: &'k [Output<'c, 'a>],
        status: Status<'k, 'c, 'a>,
        domain: &'k [i64],
        sizes: Option<&'k [Value<'c, 'a>]>,
        schedule: &'k Schedule,
        range: Option<(Value<'c, 'a>, Value<'c, 'a>)>,
        math: MathMode,
        tuning: Tuning,
    ) -> Result<(Self, Vec<InMemory<'c, 'k>>), Error> {
        let mut ops = Vec::new();
        let mut next = kernel_body.first_operation();
        while let Some(op) = next {
            next = op.next_in_block();
            ops.push(op);
        }
        let terminator = ops.pop().ok_or_else(|| error("an empty kernel"))?;
        let output_of: HashMap<usize, usize> = terminator
            .operands()
            .enumerate()
            .map(|(j, v)| (key(v), j))
            .collect();
        // SAFETY: `arguments` refers to kernel values that outlive the
        // kernel being emitted.
        let arguments: &'k [(Value<'c, 'k>, Arg<'c, 'a>)] = unsafe { std::mem::transmute(arguments) };
        let mut registers = Vec::new();
        let mut in_memory = Vec::new();
        for op in &ops {
            let Some(reduce) = ReindexReduceOp::cast(*op) else {
                continue;
            };
            let result = reduce.result().ok_or_else(|| error("reduce result"))?;
            let Some(&j) = output_of.get(&key(result)) else {
                continue;
            };
            let kind = reduce.kind().ok_or_else(|| error("unknown reduction"))?;
            if schedule.registers > 0 {
                registers.push((*op, j, kind, outputs[j].element));
            } else {
                in_memory.push((reduce, j, kind));
            }
        }
        let kernel = Kernel {
            ops,
            output_of,
            outputs,
            arguments,
            status,
            domain,
            sizes,
            schedule,
            range,
            registers,
            math,
            tuning,
        };
        Ok((kernel, in_memory))
    }

    /// The loop bounds of domain dimension `d`.
    fn bounds(&self, at: &Emitter<'c, 'a>, d: usize) -> Result<(Value<'c, 'a>, Value<'c, 'a>), Error> {
        match self.range {
            Some(range) if d == self.schedule.split => Ok(range),
            _ => Ok((at.index(0)?, self.extent(at, d)?)),
        }
    }

    /// The size of domain dimension `d`: a constant, or the size read at
    /// run time.
    fn extent(&self, at: &Emitter<'c, 'a>, d: usize) -> Result<Value<'c, 'a>, Error> {
        match self.sizes {
            Some(sizes) if self.domain[d] < 0 => Ok(sizes[d]),
            _ => at.index(self.domain[d]),
        }
    }

    /// The row-major offset of `indices` in result `j`.
    fn output_offset(
        &self,
        at: &Emitter<'c, 'a>,
        j: usize,
        indices: &[Value<'c, 'a>],
    ) -> Result<Value<'c, 'a>, Error> {
        let output = &self.outputs[j];
        match &output.dynamic {
            Some(dynamic) => index::clamped_offset_dynamic(at, indices, None, &dynamic.extents),
            None => row_major(at, indices, &output.shape),
        }
    }

    /// Fills the part of reduction output `j` this call owns with the
    /// identity: all of it, or when the kernel is split, the outputs of its
    /// `[begin, end)` of the split dimension (the last part also owns
    /// outputs past the domain's extent).
    fn fill(
        &self,
        top: &Emitter<'c, 'a>,
        reduce: ReindexReduceOp<'c, '_>,
        j: usize,
        kind: ReduceKind,
    ) -> Result<(), Error> {
        let output = &self.outputs[j];
        let (pointer, element) = (output.pointer, output.element);
        let index = Type::index(top.context);
        // The output's sizes, and the product of a range of them.
        let sizes: Vec<Value<'c, 'a>> = match &output.dynamic {
            Some(dynamic) => dynamic.extents.clone(),
            None => output
                .shape
                .iter()
                .map(|&n| top.index(n as i64))
                .collect::<Result<_, _>>()?,
        };
        let product = |range: std::ops::Range<usize>| -> Result<Value<'c, 'a>, Error> {
            if output.dynamic.is_none() {
                return top.index(output.shape[range].iter().product::<usize>() as i64);
            }
            let mut product = top.index(1)?;
            for size in &sizes[range] {
                product = top.value("arith.muli", &[product, *size], index)?;
            }
            Ok(product)
        };
        let map = reduce.indices().ok_or_else(|| error("reduce map"))?;
        let split = self.schedule.split;
        let owned = (0..map.result_count()).find(|&k| {
            map.result(k)
                .is_ok_and(|e| e.is_dim() && e.dim_position() == split)
        });
        let check = || output.check(&self.status, reduce.operation(), true, j);
        let (Some((begin, end)), true, Some(q)) = (self.range, self.schedule.parallel, owned) else {
            let total = product(0..sizes.len())?;
            let (fill, i) = top.for_range(top.index(0)?, total)?;
            let value = identity(&fill, kind, element)?;
            store_at(&fill, pointer, i, value, element, check())?;
            return fill.finish();
        };
        let outer = product(0..q)?;
        let inner = product(q + 1..sizes.len())?;
        let extent = sizes[q];
        let first = top.value("arith.minsi", &[begin, extent], index)?;
        let clipped = top.value("arith.minsi", &[end, extent], index)?;
        let last_part = top.cmpi(0, end, self.extent(top, split)?)?;
        let last = top.select(last_part, extent, clipped)?;
        let (o_loop, o) = top.for_range(top.index(0)?, outer)?;
        let (m_loop, m) = o_loop.for_range(first, last)?;
        let (n_loop, n) = m_loop.for_range(m_loop.index(0)?, inner)?;
        let row = n_loop.value("arith.muli", &[o, extent], index)?;
        let row = n_loop.value("arith.addi", &[row, m], index)?;
        let offset = n_loop.value("arith.muli", &[row, inner], index)?;
        let offset = n_loop.value("arith.addi", &[offset, n], index)?;
        let value = identity(&n_loop, kind, element)?;
        store_at(&n_loop, pointer, offset, value, element, check())?;
        n_loop.finish()?;
        m_loop.finish()?;
        o_loop.finish()
    }

    /// Emits loop `level` of the schedule's order and everything inside;
    /// `accumulators` are carried through it; returns their final values.
    pub(super) fn level(
        &self,
        level: usize,
        at: &Emitter<'c, 'a>,
        ivs: &mut Vec<Option<Value<'c, 'a>>>,
        accumulators: Vec<Value<'c, 'a>>,
    ) -> Result<Vec<Value<'c, 'a>>, Error> {
        let depth = self.schedule.order.len();
        if depth == 0 || level == depth {
            return self.point(at, ivs, accumulators, false);
        }
        if self.schedule.registers > 0 && level == depth - self.schedule.registers {
            // Reductions start from their identity in registers, fold over
            // the innermost loops and are stored once.
            let inits = self
                .registers
                .iter()
                .map(|(_, _, kind, element)| identity(at, *kind, *element))
                .collect::<Result<Vec<_>, _>>()?;
            let results = self.loops(level, at, ivs, inits)?;
            self.store_registers(at, ivs, &results)?;
            return Ok(Vec::new());
        }
        self.loops(level, at, ivs, accumulators)
    }

    /// Stores the register accumulators `results` at the outputs of their
    /// reductions, indexed by the current `ivs`.
    pub(super) fn store_registers(
        &self,
        at: &Emitter<'c, 'a>,
        ivs: &[Option<Value<'c, 'a>>],
        results: &[Value<'c, 'a>],
    ) -> Result<(), Error> {
        for ((op, j, _, _), result) in self.registers.iter().zip(results) {
            let output = &self.outputs[*j];
            let map = ReindexReduceOp::cast(*op)
                .and_then(|r| r.indices())
                .ok_or_else(|| error("reduce map"))?;
            let indices = (0..output.shape.len())
                .map(|k| {
                    // A plain dimension or a constant ([`schedule::Schedule::registers`]).
                    let expr = map.result(k).map_err(|_| error("map result"))?;
                    if expr.is_constant() {
                        return at.index(expr.constant_value());
                    }
                    ivs[expr.dim_position()].ok_or_else(|| error("an output index has no loop"))
                })
                .collect::<Result<Vec<_>, _>>()?;
            let offset = self.output_offset(at, *j, &indices)?;
            let check = output.check(&self.status, *op, true, *j);
            store_at(at, output.pointer, offset, *result, output.element, check)?;
        }
        Ok(())
    }

    /// The loop(s) of `level`: one loop, or for a peeled innermost loop the
    /// checked edge, the check-free interior and the checked edge.
    fn loops(
        &self,
        level: usize,
        at: &Emitter<'c, 'a>,
        ivs: &mut Vec<Option<Value<'c, 'a>>>,
        accumulators: Vec<Value<'c, 'a>>,
    ) -> Result<Vec<Value<'c, 'a>>, Error> {
        let depth = self.schedule.order.len();
        if self.schedule.collapse > 1 && level + self.schedule.collapse == depth {
            return self.collapsed(level, at, ivs, accumulators);
        }
        let d = self.schedule.order[level];
        let innermost = level + 1 == depth;
        let (lower, upper) = self.bounds(at, d)?;
        if innermost && self.schedule.peel {
            let (low, high) = index::interior(at, self.schedule, ivs, d, lower, upper)?;
            let mut carried = accumulators;
            for (from, to, interior) in [(lower, low, false), (low, high, true), (high, upper, false)] {
                let (body, iv, inside, results) = at.for_carried(from, to, &carried)?;
                ivs[d] = Some(iv);
                let next = self.point(&body, ivs, inside, interior)?;
                body.yield_values(&next)?;
                carried = results;
            }
            return Ok(carried);
        }
        let (body, iv, inside, results) = at.for_carried(lower, upper, &accumulators)?;
        ivs[d] = Some(iv);
        let next = if innermost {
            self.point(&body, ivs, inside, false)?
        } else {
            self.level(level + 1, &body, ivs, inside)?
        };
        body.yield_values(&next)?;
        Ok(results)
    }

    /// The innermost loops from `level` on as one loop over the product of
    /// their extents (schedule rule 5), each index recovered from the
    /// running one by `remui`/`divui` by the extents inside it.
    fn collapsed(
        &self,
        level: usize,
        at: &Emitter<'c, 'a>,
        ivs: &mut Vec<Option<Value<'c, 'a>>>,
        accumulators: Vec<Value<'c, 'a>>,
    ) -> Result<Vec<Value<'c, 'a>>, Error> {
        let dims = &self.schedule.order[level..];
        let total: i64 = dims.iter().map(|&d| self.domain[d]).product();
        let (body, iv, inside, results) = at.for_carried(at.index(0)?, at.index(total)?, &accumulators)?;
        let index = melior::ir::Type::index(at.context);
        let mut rest = iv;
        for (k, &d) in dims.iter().enumerate().rev() {
            if k == 0 {
                ivs[d] = Some(rest);
            } else {
                let extent = body.index(self.domain[d])?;
                ivs[d] = Some(body.value("arith.remui", &[rest, extent], index)?);
                rest = body.value("arith.divui", &[rest, extent], index)?;
            }
        }
        let next = self.point(&body, ivs, inside, false)?;
        body.yield_values(&next)?;
        Ok(results)
    }

    /// The kernel's ops at one point of the domain; returns the register
    /// accumulators after it.
    pub(super) fn point(
        &self,
        at: &Emitter<'c, 'a>,
        ivs: &[Option<Value<'c, 'a>>],
        accumulators: Vec<Value<'c, 'a>>,
        interior: bool,
    ) -> Result<Vec<Value<'c, 'a>>, Error> {
        self.point_knowing(at, ivs, accumulators, interior, HashMap::new())
    }

    /// [`Self::point`], with the elements of some values at the point
    /// already `known` (by [`key`]): a contraction's epilogue
    /// (`super::epilogue`) gives the sum it loaded from its scratch tile
    /// so, where the sums are not in the output.
    pub(super) fn point_knowing(
        &self,
        at: &Emitter<'c, 'a>,
        ivs: &[Option<Value<'c, 'a>>],
        accumulators: Vec<Value<'c, 'a>>,
        interior: bool,
        known: HashMap<usize, Value<'c, 'a>>,
    ) -> Result<Vec<Value<'c, 'a>>, Error> {
        let ivs: Vec<Value<'c, 'a>> = ivs
            .iter()
            .map(|iv| iv.ok_or_else(|| error("a domain dimension has no loop")))
            .collect::<Result<_, _>>()?;
        let linear = match self.sizes {
            Some(sizes) => index::clamped_offset_dynamic(at, &ivs, None, sizes)?,
            None => {
                let shape: Vec<usize> = self.domain.iter().map(|&d| d as usize).collect();
                row_major(at, &ivs, &shape)?
            }
        };
        let mut body = Body {
            at: *at,
            domain: self.domain,
            ivs,
            linear,
            arguments: self.arguments,
            scalars: known,
            status: self.status,
            schedule: self.schedule,
            interior,
            accumulators,
            math: self.math,
            tuning: self.tuning,
        };
        for op in &self.ops {
            let result = jitc_dialect::ops::result_at(op, 0);
            let register = self.registers.iter().position(|(r, _, _, _)| r == op);
            let value = emit_op(&mut body, *op, &self.output_of, self.outputs, register)?;
            // Results that leave the kernel are stored at the loop index.
            if let (Some(value), Some(result)) = (value, result) {
                body.scalars.insert(key(result), value);
                if let Some(&j) = self.output_of.get(&key(result)) {
                    let output = &self.outputs[j];
                    let check = output.check(&self.status, *op, true, j);
                    store_marked(
                        &body.at,
                        output.pointer,
                        body.linear,
                        value,
                        output.element,
                        check,
                        output.stream,
                    )?;
                }
            }
        }
        Ok(body.accumulators)
    }
}
