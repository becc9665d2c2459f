//! The body of a lowered kernel: affine index arithmetic, reindex loads,
//! element-wise ops and reductions, with the interpreter's semantics.

use super::{
    Emitter, MathMode, emit_gep, memory, scalar,
    schedule::{Check, Checks, Schedule},
};
use crate::Error;
use jitc_dialect::{
    kinds::{BinaryKind, ElementType, ReduceKind, UnaryKind},
    ops::{BinaryOp, IntegerSet, ReindexOp, ReindexReduceOp, UnaryOp, tensor_type},
};
use melior::ir::{
    AffineExpr, AffineMap, BlockLike, BlockRef, OperationRef, RegionLike, Type, Value, ValueLike,
    operation::OperationLike, r#type::ShapedTypeLike,
};
use std::collections::HashMap;

/// A kernel argument, lowered.
pub enum Arg<'c, 'a> {
    /// A tensor: its data pointer, shape and element type.
    Tensor {
        pointer: Value<'c, 'a>,
        shape: Vec<usize>,
        element: ElementType,
    },
    /// An index.
    Index(Value<'c, 'a>),
}

fn name(op: OperationRef) -> String {
    jitc_dialect::verify::op_name(op)
}

fn key(value: Value) -> usize {
    value.to_raw().ptr as usize
}

fn error(message: impl Into<String>) -> Error {
    Error::Lowering(message.into())
}

/// Whether every op of the kernel can be lowered; `Err` says why not.
pub fn check(kernel: OperationRef) -> Result<(), String> {
    let body = kernel
        .region(0)
        .ok()
        .and_then(|r| r.first_block())
        .ok_or("the kernel has no body")?;
    let mut next = body.first_operation();
    while let Some(op) = next {
        next = op.next_in_block();
        match name(op).as_str() {
            "meta.reindex"
            | "meta.reindex_reduce"
            | "meta.unary"
            | "meta.binary"
            | "meta.ternary"
            | "func.return" => {}
            "arith.constant" if crate::fusion::kind_of(op) == crate::fusion::NodeKind::Constant => {}
            other => return Err(format!("'{other}' in a kernel is not lowered yet")),
        }
        for result in op.results() {
            if let Some(tensor) = tensor_type(result.into())
                && (0..tensor.rank()).any(|d| {
                    tensor
                        .dim_size(d)
                        .is_ok_and(|s| s == melior::ir::r#type::DimSize::Dynamic)
                })
            {
                return Err("dynamic shapes are not lowered yet".into());
            }
        }
    }
    Ok(())
}

fn strides(shape: &[usize]) -> Vec<i64> {
    let mut strides = vec![1i64; shape.len()];
    for d in (0..shape.len().saturating_sub(1)).rev() {
        strides[d] = strides[d + 1] * shape[d + 1] as i64;
    }
    strides
}

struct Body<'c, 'a, 'k> {
    at: Emitter<'c, 'a>,
    ivs: Vec<Value<'c, 'a>>,
    linear: Value<'c, 'a>,
    arguments: &'k [(Value<'c, 'k>, Arg<'c, 'a>)],
    scalars: HashMap<usize, Value<'c, 'a>>,
    status: Value<'c, 'a>,
    schedule: &'k Schedule,
    /// Inside the peeled interior: affine checks are known to hold.
    interior: bool,
    /// Register accumulators, one per reduction (register schedules only).
    accumulators: Vec<Value<'c, 'a>>,
    math: MathMode,
}

impl<'c, 'a> Body<'c, 'a, '_> {
    fn argument(&self, value: Value) -> Option<&Arg<'c, 'a>> {
        self.arguments
            .iter()
            .find(|(v, _)| key(*v) == key(value))
            .map(|(_, a)| a)
    }

    fn index_of(&self, value: Value) -> Result<Value<'c, 'a>, Error> {
        match self.argument(value) {
            Some(Arg::Index(index)) => Ok(*index),
            _ => Err(error("an index operand is not a kernel argument")),
        }
    }

    /// The element of `value` at the current point of the domain.
    fn scalar(&mut self, value: Value) -> Result<Value<'c, 'a>, Error> {
        if let Some(known) = self.scalars.get(&key(value)) {
            return Ok(*known);
        }
        let Some(Arg::Tensor { pointer, element, .. }) = self.argument(value) else {
            return Err(error(
                "an operand is neither computed in the kernel nor a tensor argument",
            ));
        };
        let (pointer, element) = (*pointer, *element);
        let loaded = self.load(pointer, self.linear, element)?;
        self.scalars.insert(key(value), loaded);
        Ok(loaded)
    }

    fn load(
        &self,
        pointer: Value<'c, '_>,
        offset: Value<'c, '_>,
        element: ElementType,
    ) -> Result<Value<'c, 'a>, Error> {
        load_at(&self.at, pointer, offset, element)
    }

    /// An affine expression of the domain indices and `symbols`.
    fn affine(&self, expr: AffineExpr<'c>, symbols: &[Value<'c, 'a>]) -> Result<Value<'c, 'a>, Error> {
        let at = &self.at;
        let index = Type::index(at.context);
        if expr.is_dim() {
            return self
                .ivs
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
        let (a, b) = (
            self.affine(expr.lhs(), symbols)?,
            self.affine(expr.rhs(), symbols)?,
        );
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

    /// The map's results at the current point, and, unless every index is
    /// known to be in bounds here, whether they are inside the shape and
    /// outside every set of `conditions`.
    fn indices(
        &self,
        map: AffineMap<'c>,
        symbols: &[Value<'c, 'a>],
        checks: &Checks,
        conditions: Option<Result<Vec<IntegerSet<'c>>, ()>>,
    ) -> Result<(Vec<Value<'c, 'a>>, Option<Value<'c, 'a>>), Error> {
        let at = &self.at;
        let mut inside: Option<Value<'c, 'a>> = None;
        let mut and = |condition: Value<'c, 'a>| -> Result<(), Error> {
            inside = Some(at.and_maybe(inside, condition)?);
            Ok(())
        };
        let mut indices = Vec::new();
        for (k, &extent) in checks.shape.iter().enumerate() {
            let index = self.affine(map.result(k).map_err(|_| error("map result"))?, symbols)?;
            let checked = match checks.indices.get(k) {
                Some(Check::Proven) => false,
                Some(Check::Affine(_)) => !self.interior,
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
                let value = self.affine(expr, symbols)?;
                let zero = at.index(0)?;
                let satisfied = at.cmpi(if equality { 0 } else { 5 }, value, zero)?;
                holds = at.value("arith.andi", &[holds, satisfied], at.i1())?;
            }
            and(at.value("arith.xori", &[holds, at.int(at.i1(), 1)?], at.i1())?)?;
        }
        Ok((indices, inside))
    }

    /// The row-major offset of `indices` in `shape`, with indices replaced
    /// by 0 where `inside` is false, so the address is always valid.
    fn offset(
        &self,
        indices: &[Value<'c, 'a>],
        inside: Option<Value<'c, 'a>>,
        shape: &[i64],
    ) -> Result<Value<'c, 'a>, Error> {
        let at = &self.at;
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
}

/// `Σ index_k * stride_k`: the offset of `indices` in a row-major `shape`.
fn row_major<'c, 'a>(
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

fn load_at<'c, 'a>(
    at: &Emitter<'c, 'a>,
    pointer: Value<'c, '_>,
    offset: Value<'c, '_>,
    element: ElementType,
) -> Result<Value<'c, 'a>, Error> {
    let i64_type: Type = melior::ir::r#type::IntegerType::new(at.context, 64).into();
    let offset = if offset.r#type() == i64_type {
        offset.into_value_ref()
    } else {
        at.value("arith.index_cast", &[offset], i64_type)?
    };
    let address = emit_gep(at, pointer, offset, memory(at.context, element))?;
    let loaded = at.value("llvm.load", &[address], memory(at.context, element))?;
    if element == ElementType::I1 {
        at.value("arith.trunci", &[loaded], at.i1())
    } else {
        Ok(loaded)
    }
}

fn store_at<'c>(
    at: &Emitter<'c, '_>,
    pointer: Value<'c, '_>,
    offset: Value<'c, '_>,
    value: Value<'c, '_>,
    element: ElementType,
) -> Result<(), Error> {
    let i64_type: Type = melior::ir::r#type::IntegerType::new(at.context, 64).into();
    let offset = at.value("arith.index_cast", &[offset], i64_type)?;
    let address = emit_gep(at, pointer, offset, memory(at.context, element))?;
    let value = if element == ElementType::I1 {
        at.value("arith.extui", &[value], memory(at.context, element))?
    } else {
        value.into_value_ref()
    };
    at.op("llvm.store", &[value, address], &[], &[]).map(|_| ())
}

trait IntoValueRef<'c, 'a> {
    fn into_value_ref(self) -> Value<'c, 'a>;
}

impl<'c, 'a> IntoValueRef<'c, 'a> for Value<'c, '_> {
    fn into_value_ref(self) -> Value<'c, 'a> {
        // SAFETY: the value is live for as long as the function being built.
        unsafe { Value::from_raw(self.to_raw()) }
    }
}

/// A constant of `element` from a number.
fn constant<'c, 'a>(
    at: &Emitter<'c, 'a>,
    element: ElementType,
    value: f64,
    integer: i64,
) -> Result<Value<'c, 'a>, Error> {
    let r#type = scalar(at.context, element);
    if element.is_float() {
        at.float(r#type, value)
    } else {
        at.int(r#type, integer)
    }
}

fn identity<'c, 'a>(
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

/// A kernel result: its data pointer, shape and element type.
pub type Output<'c, 'a> = (Value<'c, 'a>, Vec<usize>, ElementType);

/// What every part of a kernel's loop nest needs.
struct Kernel<'c, 'a, 'k> {
    ops: Vec<OperationRef<'c, 'k>>,
    output_of: HashMap<usize, usize>,
    outputs: &'k [Output<'c, 'a>],
    arguments: &'k [(Value<'c, 'k>, Arg<'c, 'a>)],
    status: Value<'c, 'a>,
    domain: &'k [i64],
    schedule: &'k Schedule,
    range: Option<(Value<'c, 'a>, Value<'c, 'a>)>,
    /// Reductions that accumulate in registers: the op, its output, kind and
    /// element type.
    registers: Vec<(OperationRef<'c, 'k>, usize, ReduceKind, ElementType)>,
    math: MathMode,
}

/// Emits the whole kernel: identity fills, the loop nest and its body, as
/// `schedule` says.
#[allow(clippy::too_many_arguments)]
pub fn emit_kernel<'c, 'a>(
    top: &Emitter<'c, 'a>,
    kernel_body: BlockRef<'c, '_>,
    arguments: &[(Value<'c, '_>, Arg<'c, 'a>)],
    outputs: &[Output<'c, 'a>],
    status: Value<'c, 'a>,
    domain: &[i64],
    schedule: &Schedule,
    range: Option<(Value<'c, 'a>, Value<'c, 'a>)>,
    math: MathMode,
) -> Result<(), Error> {
    if domain.iter().any(|&d| d < 0) {
        return Err(error("dynamic domain"));
    }
    let (kernel, in_memory) = Kernel::new(
        kernel_body,
        arguments,
        outputs,
        status,
        domain,
        schedule,
        range,
        math,
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

/// The thread and block of a GPU kernel, as index values.
pub struct GpuIds<'c, 'a> {
    /// `threadIdx.x`.
    pub thread: Value<'c, 'a>,
    /// `blockIdx.x`.
    pub block: Value<'c, 'a>,
    /// `blockDim.x`.
    pub block_dim: Value<'c, 'a>,
}

/// Splits the row-major `linear` index over `extents` into one index per
/// extent (the last varies fastest).
fn delinearize<'c, 'a>(
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

/// Emits a GPU kernel's body as `gpu` says (see
/// [`super::schedule::gpu`]): a thread (or block) finds its point of the
/// thread-mapped dimensions from `ids`, then runs the loop nest below them;
/// a block reduction also strides over the folded dimensions and combines
/// the threads' partial results in shared memory: `shared(r, element,
/// block)` makes the array of `block` elements for register reduction `r`,
/// as a generic pointer.
#[allow(clippy::too_many_arguments)]
pub fn emit_gpu_kernel<'c, 'a>(
    top: &Emitter<'c, 'a>,
    kernel_body: BlockRef<'c, '_>,
    arguments: &[(Value<'c, '_>, Arg<'c, 'a>)],
    outputs: &[Output<'c, 'a>],
    status: Value<'c, 'a>,
    domain: &[i64],
    gpu: &super::schedule::GpuSchedule,
    ids: &GpuIds<'c, 'a>,
    shared: &mut dyn FnMut(usize, ElementType, i64) -> Result<Value<'c, 'a>, Error>,
    math: MathMode,
) -> Result<(), Error> {
    let schedule = &gpu.nest;
    // Reductions in memory were filled by the fill launch.
    let (kernel, _) = Kernel::new(
        kernel_body,
        arguments,
        outputs,
        status,
        domain,
        schedule,
        None,
        math,
    )?;
    let index = Type::index(top.context);
    let extents: Vec<i64> = gpu.threads.iter().map(|&d| domain[d]).collect();
    let mut ivs = vec![None; domain.len()];
    match gpu.strategy {
        super::schedule::GpuStrategy::Threads => {
            let base = top.value("arith.muli", &[ids.block, ids.block_dim], index)?;
            let point = top.value("arith.addi", &[base, ids.thread], index)?;
            let inside = top.cmpi(6, point, top.index(gpu.points)?)?;
            let then = top.if_then(inside)?;
            for (&d, iv) in gpu.threads.iter().zip(delinearize(&then, point, &extents)?) {
                ivs[d] = Some(iv);
            }
            let left = kernel.level(gpu.threads.len(), &then, &mut ivs, Vec::new())?;
            debug_assert!(left.is_empty());
            then.finish()
        }
        super::schedule::GpuStrategy::Blocks { block } => {
            for (&d, iv) in gpu.threads.iter().zip(delinearize(top, ids.block, &extents)?) {
                ivs[d] = Some(iv);
            }
            let inner = &schedule.order[gpu.threads.len()..];
            let inner_extents: Vec<i64> = inner.iter().map(|&d| domain[d]).collect();
            let total = top.index(inner_extents.iter().product())?;
            let inits = kernel
                .registers
                .iter()
                .map(|(_, _, kind, element)| identity(top, *kind, *element))
                .collect::<Result<Vec<_>, _>>()?;
            let (body, k, carried, partial) = top.for_step(ids.thread, total, ids.block_dim, &inits)?;
            for (&d, iv) in inner.iter().zip(delinearize(&body, k, &inner_extents)?) {
                ivs[d] = Some(iv);
            }
            let next = kernel.point(&body, &ivs, carried, false)?;
            body.yield_values(&next)?;
            let shared = kernel
                .registers
                .iter()
                .enumerate()
                .map(|(r, (_, _, _, element))| shared(r, *element, block))
                .collect::<Result<Vec<_>, _>>()?;
            kernel.block_reduce(top, ids, &shared, &partial, block, &ivs)
        }
    }
}

/// Fills the outputs of the reductions that accumulate in memory with
/// their identity, one element per thread: the launch before a kernel
/// whose [`super::schedule::GpuSchedule::fill`] is set.
pub fn emit_gpu_fill<'c, 'a>(
    top: &Emitter<'c, 'a>,
    kernel_body: BlockRef<'c, '_>,
    outputs: &[Output<'c, 'a>],
    ids: &GpuIds<'c, 'a>,
) -> Result<(), Error> {
    let index = Type::index(top.context);
    let base = top.value("arith.muli", &[ids.block, ids.block_dim], index)?;
    let point = top.value("arith.addi", &[base, ids.thread], index)?;
    let mut next = kernel_body.first_operation();
    let mut terminator = None;
    while let Some(op) = next {
        next = op.next_in_block();
        terminator = Some(op);
    }
    let terminator = terminator.ok_or_else(|| error("an empty kernel"))?;
    for (j, value) in terminator.operands().enumerate() {
        let Some(reduce) = crate::rewrite::defining_op(value).and_then(ReindexReduceOp::cast) else {
            continue;
        };
        let kind = reduce.kind().ok_or_else(|| error("unknown reduction"))?;
        let (pointer, shape, element) = &outputs[j];
        let total = shape.iter().product::<usize>() as i64;
        let inside = top.cmpi(6, point, top.index(total)?)?;
        let then = top.if_then(inside)?;
        let value = identity(&then, kind, *element)?;
        store_at(&then, *pointer, point, value, *element)?;
        then.finish()?;
    }
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
    fn new(
        kernel_body: BlockRef<'c, 'k>,
        arguments: &'k [(Value<'c, '_>, Arg<'c, 'a>)],
        outputs: &'k [Output<'c, 'a>],
        status: Value<'c, 'a>,
        domain: &'k [i64],
        schedule: &'k Schedule,
        range: Option<(Value<'c, 'a>, Value<'c, 'a>)>,
        math: MathMode,
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
                registers.push((*op, j, kind, outputs[j].2));
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
            schedule,
            range,
            registers,
            math,
        };
        Ok((kernel, in_memory))
    }

    /// The loop bounds of domain dimension `d`.
    fn bounds(&self, at: &Emitter<'c, 'a>, d: usize) -> Result<(Value<'c, 'a>, Value<'c, 'a>), Error> {
        match self.range {
            Some(range) if d == self.schedule.split => Ok(range),
            _ => Ok((at.index(0)?, at.index(self.domain[d])?)),
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
        let (pointer, shape, element) = &self.outputs[j];
        let total = shape.iter().product::<usize>() as i64;
        let map = reduce.indices().ok_or_else(|| error("reduce map"))?;
        let split = self.schedule.split;
        let owned = (0..map.result_count()).find(|&k| {
            map.result(k)
                .is_ok_and(|e| e.is_dim() && e.dim_position() == split)
        });
        let (Some((begin, end)), true, Some(q)) = (self.range, self.schedule.parallel, owned) else {
            let (fill, i) = top.for_loop(total)?;
            let value = identity(&fill, kind, *element)?;
            store_at(&fill, *pointer, i, value, *element)?;
            return fill.finish();
        };
        let index = Type::index(top.context);
        let outer: usize = shape[..q].iter().product();
        let inner: usize = shape[q + 1..].iter().product();
        let extent = top.index(shape[q] as i64)?;
        let first = top.value("arith.minsi", &[begin, extent], index)?;
        let clipped = top.value("arith.minsi", &[end, extent], index)?;
        let last_part = top.cmpi(0, end, top.index(self.domain[split])?)?;
        let last = top.select(last_part, extent, clipped)?;
        let (o_loop, o) = top.for_loop(outer as i64)?;
        let (m_loop, m) = o_loop.for_range(first, last)?;
        let (n_loop, n) = m_loop.for_loop(inner as i64)?;
        let row = n_loop.value("arith.muli", &[o, extent], index)?;
        let row = n_loop.value("arith.addi", &[row, m], index)?;
        let offset = n_loop.value("arith.muli", &[row, n_loop.index(inner as i64)?], index)?;
        let offset = n_loop.value("arith.addi", &[offset, n], index)?;
        let value = identity(&n_loop, kind, *element)?;
        store_at(&n_loop, *pointer, offset, value, *element)?;
        n_loop.finish()?;
        m_loop.finish()?;
        o_loop.finish()
    }

    /// Emits loop `level` of the schedule's order and everything inside;
    /// `accumulators` are carried through it; returns their final values.
    fn level(
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
    fn store_registers(
        &self,
        at: &Emitter<'c, 'a>,
        ivs: &[Option<Value<'c, 'a>>],
        results: &[Value<'c, 'a>],
    ) -> Result<(), Error> {
        for ((op, j, _, _), result) in self.registers.iter().zip(results) {
            let (pointer, shape, element) = &self.outputs[*j];
            let map = ReindexReduceOp::cast(*op)
                .and_then(|r| r.indices())
                .ok_or_else(|| error("reduce map"))?;
            let indices = (0..shape.len())
                .map(|k| {
                    let d = map.result(k).map_err(|_| error("map result"))?.dim_position();
                    ivs[d].ok_or_else(|| error("an output index has no loop"))
                })
                .collect::<Result<Vec<_>, _>>()?;
            let offset = row_major(at, &indices, shape)?;
            store_at(at, *pointer, offset, *result, *element)?;
        }
        Ok(())
    }

    /// Combines each thread's `partial` results across a block of `block`
    /// threads in `shared` memory (a tree of halving steps, a barrier after
    /// each), then thread 0 stores the results.
    fn block_reduce(
        &self,
        top: &Emitter<'c, 'a>,
        ids: &GpuIds<'c, 'a>,
        shared: &[Value<'c, 'a>],
        partial: &[Value<'c, 'a>],
        block: i64,
        ivs: &[Option<Value<'c, 'a>>],
    ) -> Result<(), Error> {
        let index = Type::index(top.context);
        let barrier = || top.op("nvvm.barrier0", &[], &[], &[]).map(|_| ());
        for ((_, _, _, element), (buffer, value)) in self.registers.iter().zip(shared.iter().zip(partial)) {
            store_at(top, *buffer, ids.thread, *value, *element)?;
        }
        barrier()?;
        let mut stride = block / 2;
        while stride >= 1 {
            let active = top.cmpi(6, ids.thread, top.index(stride)?)?;
            let then = top.if_then(active)?;
            let other = then.value("arith.addi", &[ids.thread, then.index(stride)?], index)?;
            for ((_, _, kind, element), buffer) in self.registers.iter().zip(shared) {
                let mine = load_at(&then, *buffer, ids.thread, *element)?;
                let theirs = load_at(&then, *buffer, other, *element)?;
                let combined = combine(&then, *kind, mine, theirs, *element, self.status, true)?;
                store_at(&then, *buffer, ids.thread, combined, *element)?;
            }
            then.finish()?;
            barrier()?;
            stride /= 2;
        }
        let first = top.cmpi(0, ids.thread, top.index(0)?)?;
        let then = top.if_then(first)?;
        let results = self
            .registers
            .iter()
            .zip(shared)
            .map(|((_, _, _, element), buffer)| load_at(&then, *buffer, then.index(0)?, *element))
            .collect::<Result<Vec<_>, _>>()?;
        self.store_registers(&then, ivs, &results)?;
        then.finish()
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
        let d = self.schedule.order[level];
        let innermost = level + 1 == self.schedule.order.len();
        let (lower, upper) = self.bounds(at, d)?;
        if innermost && self.schedule.peel {
            let (low, high) = self.interior(at, ivs, d, lower, upper)?;
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

    /// The interior `[low, high)` of innermost dimension `d` within `[lower,
    /// upper)`, where every affine check holds, given the outer indices.
    fn interior(
        &self,
        at: &Emitter<'c, 'a>,
        ivs: &[Option<Value<'c, 'a>>],
        d: usize,
        lower: Value<'c, 'a>,
        upper: Value<'c, 'a>,
    ) -> Result<(Value<'c, 'a>, Value<'c, 'a>), Error> {
        let index = Type::index(at.context);
        let (mut low, mut high) = (lower, upper);
        let mut holds: Option<Value<'c, 'a>> = None;
        let one = at.index(1)?;
        for (_, checks) in &self.schedule.checks {
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

    /// The kernel's ops at one point of the domain; returns the register
    /// accumulators after it.
    fn point(
        &self,
        at: &Emitter<'c, 'a>,
        ivs: &[Option<Value<'c, 'a>>],
        accumulators: Vec<Value<'c, 'a>>,
        interior: bool,
    ) -> Result<Vec<Value<'c, 'a>>, Error> {
        let ivs: Vec<Value<'c, 'a>> = ivs
            .iter()
            .map(|iv| iv.ok_or_else(|| error("a domain dimension has no loop")))
            .collect::<Result<_, _>>()?;
        let shape: Vec<usize> = self.domain.iter().map(|&d| d as usize).collect();
        let linear = row_major(at, &ivs, &shape)?;
        let mut body = Body {
            at: *at,
            ivs,
            linear,
            arguments: self.arguments,
            scalars: HashMap::new(),
            status: self.status,
            schedule: self.schedule,
            interior,
            accumulators,
            math: self.math,
        };
        for op in &self.ops {
            let result = op.result(0).ok().map(Value::from);
            let register = self.registers.iter().position(|(r, _, _, _)| r == op);
            let value = emit_op(&mut body, *op, &self.output_of, self.outputs, register)?;
            // Results that leave the kernel are stored at the loop index.
            if let (Some(value), Some(result)) = (value, result) {
                body.scalars.insert(key(result), value);
                if let Some(&j) = self.output_of.get(&key(result)) {
                    let (pointer, _, element) = &self.outputs[j];
                    store_at(&body.at, *pointer, body.linear, value, *element)?;
                }
            }
        }
        Ok(body.accumulators)
    }
}

/// Emits one op; returns its element value, `None` for reductions.
fn emit_op<'c, 'a>(
    body: &mut Body<'c, 'a, '_>,
    op: OperationRef<'c, '_>,
    output_of: &HashMap<usize, usize>,
    outputs: &[Output<'c, 'a>],
    register: Option<usize>,
) -> Result<Option<Value<'c, 'a>>, Error> {
    let at = body.at;
    let element_of =
        |v: Value| super::element_of(v).ok_or_else(|| error("an operand is not a supported tensor"));
    match name(op).as_str() {
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
            let Some(Arg::Tensor {
                pointer,
                shape,
                element,
            }) = body.argument(input)
            else {
                return Err(error(
                    "a reindex reads a value computed in its own kernel (rule 1)",
                ));
            };
            let (pointer, shape, element) = (*pointer, shape.clone(), *element);
            let symbols = reindex
                .index_operands()
                .into_iter()
                .map(|v| body.index_of(v))
                .collect::<Result<Vec<_>, _>>()?;
            let overflow = match reindex.overflow_value() {
                Some(attribute) => {
                    let raw = melior::ir::AttributeLike::to_raw(&attribute);
                    // SAFETY: the verifier checked it is a number of `element`.
                    let (value, integer) = unsafe {
                        if mlir_sys::mlirAttributeIsAFloat(raw) {
                            (mlir_sys::mlirFloatAttrGetValueDouble(raw), 0)
                        } else {
                            (0.0, mlir_sys::mlirIntegerAttrGetValueInt(raw))
                        }
                    };
                    constant(&at, element, value, integer)?
                }
                None => constant(&at, element, 0.0, 0)?,
            };
            if shape.contains(&0) {
                return Ok(Some(overflow));
            }
            let map = reindex.indices().ok_or_else(|| error("reindex map"))?;
            let schedule = body.schedule;
            let checks = schedule
                .checks_of(op)
                .ok_or_else(|| error("a reindex without a schedule"))?;
            let (indices, inside) = body.indices(map, &symbols, checks, reindex.overflow_conditions())?;
            let offset = body.offset(&indices, inside, &checks.shape)?;
            let loaded = body.load(pointer, offset, element)?;
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
            let (pointer, element) = (outputs[j].0, outputs[j].2);
            let kind = reduce.kind().ok_or_else(|| error("unknown reduction"))?;
            let x = body.scalar(reduce.input().ok_or_else(|| error("reduce input"))?)?;
            if let Some(r) = register {
                let acc = body.accumulators[r];
                let reassociate = body.math == MathMode::Fast;
                body.accumulators[r] = combine(&at, kind, acc, x, element, body.status, reassociate)?;
                return Ok(None);
            }
            let symbols = reduce
                .index_operands()
                .into_iter()
                .map(|v| body.index_of(v))
                .collect::<Result<Vec<_>, _>>()?;
            let map = reduce.indices().ok_or_else(|| error("reduce map"))?;
            let schedule = body.schedule;
            let checks = schedule
                .checks_of(op)
                .ok_or_else(|| error("a reduction without a schedule"))?;
            let (indices, inside) = body.indices(map, &symbols, checks, reduce.overflow_conditions())?;
            let offset = body.offset(&indices, inside, &checks.shape)?;
            let then = match inside {
                Some(inside) => at.if_then(inside)?,
                None => at,
            };
            let acc = load_at(&then, pointer, offset, element)?;
            let combined = combine(&then, kind, acc, x, element, body.status, false)?;
            store_at(&then, pointer, offset, combined, element)?;
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
            let x = body.scalar(input)?;
            let kind = unary.kind().ok_or_else(|| error("unary kind"))?;
            unary_op(&at, kind, x, from, to, body.math).map(Some)
        }
        "meta.binary" => {
            let binary = BinaryOp::cast(op).ok_or_else(|| error("binary"))?;
            let (lhs, rhs) = (
                binary.lhs().ok_or_else(|| error("lhs"))?,
                binary.rhs().ok_or_else(|| error("rhs"))?,
            );
            let element = element_of(lhs)?;
            let (a, b) = (body.scalar(lhs)?, body.scalar(rhs)?);
            let kind = binary.kind().ok_or_else(|| error("binary kind"))?;
            binary_op(&at, kind, a, b, element, body.status).map(Some)
        }
        "meta.ternary" => {
            let c = body.scalar(op.operand(0).map_err(|_| error("select"))?)?;
            let a = body.scalar(op.operand(1).map_err(|_| error("select"))?)?;
            let b = body.scalar(op.operand(2).map_err(|_| error("select"))?)?;
            at.select(c, a, b).map(Some)
        }
        other => Err(error(format!("'{other}' is not lowered"))),
    }
}

fn unary_op<'c, 'a>(
    at: &Emitter<'c, 'a>,
    kind: UnaryKind,
    x: Value<'c, 'a>,
    from: ElementType,
    to: ElementType,
    math_mode: MathMode,
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
        UnaryKind::Exp if polynomial => exp_f32(at, x),
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
        UnaryKind::Tanh if polynomial => tanh_f32(at, x),
        UnaryKind::Tanh => math("math.tanh"),
        UnaryKind::Erf => math("math.erf"),
        UnaryKind::Sigmoid => {
            let negated = math("arith.negf")?;
            let e = if polynomial {
                exp_f32(at, negated)?
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

/// `p[0]*x^(n-1) + ... + p[n-1]` by Horner's rule, in plain multiplies and
/// adds (an `fma` would become a libm call on CPUs without FMA).
fn horner<'c, 'a>(at: &Emitter<'c, 'a>, x: Value<'c, 'a>, p: &[f64]) -> Result<Value<'c, 'a>, Error> {
    let t = x.r#type();
    let mut y = at.float(t, p[0])?;
    for &c in &p[1..] {
        y = at.value("arith.mulf", &[y, x], t)?;
        y = at.value("arith.addf", &[y, at.float(t, c)?], t)?;
    }
    Ok(y)
}

/// `e^x` for f32 in straight-line arithmetic that vectorizes (Cody-Waite
/// range reduction and a degree-7 polynomial, as in Cephes `expf`):
/// `x = n ln2 + r` with `|r| <= ln2/2`, `e^x = 2^n e^r`, and `2^n` applied
/// as two exponent-field scalings so results that underflow to subnormals
/// and overflow to infinity come out right. NaN is passed through.
fn exp_f32<'c, 'a>(at: &Emitter<'c, 'a>, x: Value<'c, 'a>) -> Result<Value<'c, 'a>, Error> {
    let t = x.r#type();
    let i32_type: Type = melior::ir::r#type::IntegerType::new(at.context, 32).into();
    let c = |v: f64| at.float(t, v);
    // maxnum/minnum ignore NaN, so the clamped value is finite.
    let clamped = at.value("arith.minnumf", &[x, c(88.8)?], t)?;
    let clamped = at.value("arith.maxnumf", &[clamped, c(-104.0)?], t)?;
    let scaled = at.value("arith.mulf", &[clamped, c(std::f64::consts::LOG2_E)?], t)?;
    let scaled = at.value("arith.addf", &[scaled, c(0.5)?], t)?;
    let n = at.value("math.floor", &[scaled], t)?;
    let high = at.value("arith.mulf", &[n, c(0.693359375)?], t)?;
    let low = at.value("arith.mulf", &[n, c(-2.12194440e-4)?], t)?;
    let r = at.value("arith.subf", &[clamped, high], t)?;
    let r = at.value("arith.subf", &[r, low], t)?;
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
    let y = at.value("arith.mulf", &[p, r2], t)?;
    let y = at.value("arith.addf", &[y, r], t)?;
    let y = at.value("arith.addf", &[y, c(1.0)?], t)?;
    // n is in [-150, 128]: split it in two halves that are each a normal
    // exponent.
    let n = at.value("arith.fptosi", &[n], i32_type)?;
    let half = at.value("arith.shrsi", &[n, at.int(i32_type, 1)?], i32_type)?;
    let rest = at.value("arith.subi", &[n, half], i32_type)?;
    let power = |e: Value<'c, 'a>| -> Result<Value<'c, 'a>, Error> {
        let biased = at.value("arith.addi", &[e, at.int(i32_type, 127)?], i32_type)?;
        let bits = at.value("arith.shli", &[biased, at.int(i32_type, 23)?], i32_type)?;
        at.value("arith.bitcast", &[bits], t)
    };
    let y = at.value("arith.mulf", &[y, power(half)?], t)?;
    let y = at.value("arith.mulf", &[y, power(rest)?], t)?;
    let is_nan = at.cmpf(14, x, x)?;
    at.select(is_nan, x, y)
}

/// `ln x` for f32 in straight-line arithmetic (Cephes `logf`): `x = 2^e m`
/// with `m` in `[sqrt(1/2), sqrt(2))` read from the bits (subnormals scaled
/// by `2^23` first), `ln x = e ln2 + ln m`, and `ln(1 + f)` for
/// `f = m - 1` (exact) as `f - f^2/2 + f^3 P(f)` with a degree-8
/// polynomial, `e ln2` added in two parts. Zero gives `-inf`, negative
/// values NaN, and `+inf` and NaN pass through.
fn log_f32<'c, 'a>(at: &Emitter<'c, 'a>, x: Value<'c, 'a>) -> Result<Value<'c, 'a>, Error> {
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
fn tanh_f32<'c, 'a>(at: &Emitter<'c, 'a>, x: Value<'c, 'a>) -> Result<Value<'c, 'a>, Error> {
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
    let e = exp_f32(at, doubled)?;
    let denominator = at.value("arith.addf", &[e, c(1.0)?], t)?;
    let quotient = at.value("arith.divf", &[c(2.0)?, denominator], t)?;
    let large = at.value("arith.subf", &[c(1.0)?, quotient], t)?;
    let large = at.value("math.copysign", &[large, x], t)?;
    let is_small = at.cmpf(4, magnitude, c(0.625)?)?;
    at.select(is_small, small, large)
}

fn cast<'c, 'a>(
    at: &Emitter<'c, 'a>,
    x: Value<'c, 'a>,
    from: ElementType,
    to: ElementType,
) -> Result<Value<'c, 'a>, Error> {
    use ElementType::*;
    let target = scalar(at.context, to);
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
    let converted = at.value("arith.fptosi", &[safe], scalar(at.context, to))?;
    let converted = at.select(too_big, constant(at, to, 0.0, max)?, converted)?;
    at.select(too_small, constant(at, to, 0.0, min)?, converted)
}

fn binary_op<'c, 'a>(
    at: &Emitter<'c, 'a>,
    kind: BinaryKind,
    a: Value<'c, 'a>,
    b: Value<'c, 'a>,
    element: ElementType,
    status: Value<'c, 'a>,
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
        BinaryKind::Div if float => op("arith.divf"),
        BinaryKind::Mod if float => op("arith.remf"),
        BinaryKind::Div | BinaryKind::Mod => integer_division(at, kind, a, b, element, status),
        BinaryKind::Pow => op("math.powf"),
        BinaryKind::Max => op(if float { "arith.maximumf" } else { "arith.maxsi" }),
        BinaryKind::Min => op(if float { "arith.minimumf" } else { "arith.minsi" }),
        BinaryKind::And => op("arith.andi"),
        BinaryKind::Or => op("arith.ori"),
        _ => op("arith.xori"),
    }
}

/// Integer `div`/`mod` without undefined behaviour: a zero divisor sets the
/// status word (the runtime reports it as the interpreter does) and `MIN
/// div -1` wraps, `MIN mod -1` is 0.
fn integer_division<'c, 'a>(
    at: &Emitter<'c, 'a>,
    kind: BinaryKind,
    a: Value<'c, 'a>,
    b: Value<'c, 'a>,
    element: ElementType,
    status: Value<'c, 'a>,
) -> Result<Value<'c, 'a>, Error> {
    let t = a.r#type();
    let (zero, one, minus_one) = (
        constant(at, element, 0.0, 0)?,
        constant(at, element, 1.0, 1)?,
        constant(at, element, 0.0, -1)?,
    );
    let is_zero = at.cmpi(0, b, zero)?;
    let flag = at.if_then(is_zero)?;
    let i32_type: Type = melior::ir::r#type::IntegerType::new(at.context, 32).into();
    let set = flag.int(i32_type, 1)?;
    flag.op("llvm.store", &[set, status], &[], &[])?;
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
fn combine<'c, 'a>(
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
        let flags = melior::ir::Attribute::parse(at.context, "#arith.fastmath<reassoc>")
            .ok_or_else(|| error("fast-math flags"))?;
        return at
            .op(name, &[acc, x], &[acc.r#type()], &[("fastmath", flags)])?
            .ok_or_else(|| error("reduction"));
    }
    binary_op(at, kind.step(), acc, x, element, status)
}

/// Whether every op of the kernel can run on an NVIDIA GPU; `Err` says why
/// not. No libm exists there (and libdevice is not linked), so only the
/// math that lowers to plain instructions or to jitc's own polynomials is
/// accepted.
pub fn check_gpu(kernel: OperationRef, math: MathMode) -> Result<(), String> {
    check(kernel)?;
    let body = kernel
        .region(0)
        .ok()
        .and_then(|r| r.first_block())
        .ok_or("the kernel has no body")?;
    let mut next = body.first_operation();
    while let Some(op) = next {
        next = op.next_in_block();
        if let Some(unary) = UnaryOp::cast(op) {
            let kind = unary.kind().ok_or("an unknown unary kind")?;
            let element = unary
                .input()
                .and_then(super::element_of)
                .ok_or("a unary op of an unsupported type")?;
            let polynomial = math == MathMode::Fast && element == ElementType::F32;
            let needs_libm = match kind {
                UnaryKind::Sin | UnaryKind::Cos | UnaryKind::Erf => true,
                UnaryKind::Exp | UnaryKind::Log | UnaryKind::Tanh | UnaryKind::Sigmoid => !polynomial,
                _ => false,
            };
            if needs_libm {
                return Err(format!(
                    "'{}' on {element} needs libm, which the GPU target does not have{}",
                    kind.name(),
                    if polynomial || element != ElementType::F32 {
                        ""
                    } else {
                        " (f32 exp, log, tanh and sigmoid compile with --math fast)"
                    }
                ));
            }
        }
        if let Some(binary) = BinaryOp::cast(op)
            && binary.kind() == Some(BinaryKind::Pow)
        {
            return Err("'pow' needs libm, which the GPU target does not have".into());
        }
    }
    Ok(())
}
