//! The GPU loop nest: the CPU's nest ([`super::nest`]) below a mapping of
//! thread or block ids to the dimensions [`schedule::gpu`] chose, the
//! shared-memory tree of block reductions, and the fill launch.
//!
//! One thread per point ([`GpuStrategy::Threads`]): the global thread
//! number `blockIdx.x * blockDim.x + threadIdx.x`, when below the number of
//! points, is split row-major into the thread dimensions (the last
//! fastest, so neighbouring threads touch neighbouring elements), and the
//! nest over the other dimensions runs in the thread. A coarsened kernel
//! (`per_thread` > 1, element-wise only) takes points `per_thread * t` to
//! `per_thread * t + per_thread - 1` in thread `t`, which differ only in
//! the fastest thread dimension: one delinearization, then one copy of the
//! body per point in one block, so their loads are issued together.
//!
//! One block per point ([`GpuStrategy::Blocks`]): `blockIdx.x` is split
//! into the thread dimensions, and the block's threads stride over the
//! folded dimensions (from `threadIdx.x`, by `blockDim.x`), each into its
//! register accumulators; when the block size divides the folded extent,
//! the stride loop counts a constant number of steps instead, so that
//! LLVM unrolls it and each thread has several loads in flight. The
//! partial results then meet in shared memory:
//!
//! ```text
//! shared[tid] = partial                                  barrier
//! for s = block/2, block/4, ..., 32 (..., 1 unless 32-bit):
//!     if tid < s: shared[tid] = shared[tid] ⊕ shared[tid + s]   barrier
//! if tid < 32 (32-bit results):
//!     v = shared[tid]
//!     for s = 16, 8, ..., 1: v = v ⊕ shfl.down(v, s)   (lane tid + s)
//! if tid == 0: store v (or shared[0])
//! ```
//!
//! The shuffles pair the same lanes in the same order as the shared-memory
//! steps they replace, so the result's bits do not change. A split
//! reduction (rule 6 of [`schedule::gpu`]) then combines its blocks' results
//! through scratch memory (see `combine_shares`).
//!
//! Invariants:
//! - `block` is a power of two, so the halving tree meets every thread's
//!   partial result;
//! - every thread of a block reaches every barrier: the tree's `scf.if`s
//!   hold only loads, combines and stores;
//! - no barrier spans the grid, so reductions that accumulate in memory
//!   are filled with their identity by a launch of their own
//!   ([`emit_gpu_fill`]) before the kernel's;
//! - in the bounds-checked mode, the tree's loads and stores of shared
//!   memory are checked like every other access (`shared memory`, `block`
//!   elements); a failed check skips the access, never a barrier, so no
//!   thread is left waiting.

use super::{
    MathMode,
    access::{Arg, Check, MONOTONIC, Output, Status, load_at, store_at},
    emit::{Emitter, error},
    index::{delinearize, delinearize_narrow},
    memory_type,
    nest::Kernel,
    point::Tuning,
    poly::PolyTarget,
    scalar::{combine, identity},
    schedule::{self, GpuStrategy},
};
use crate::Error;
use jitc_dialect::{kinds::ElementType, ops::ReindexReduceOp};
use melior::ir::{
    BlockLike, BlockRef, OperationRef, Type, Value, attribute::IntegerAttribute, operation::OperationLike,
};

/// The thread and block of a GPU kernel, as index values.
pub(super) struct GpuIds<'c, 'a> {
    /// `threadIdx.x`.
    pub(super) thread: Value<'c, 'a>,
    /// `blockIdx.x`.
    pub(super) block: Value<'c, 'a>,
    /// `blockDim.x`.
    pub(super) block_dim: Value<'c, 'a>,
}

/// Emits a GPU kernel's body as `gpu` says (see
/// [`schedule::gpu`]): a thread (or block) finds its point of the
/// thread-mapped dimensions from `ids`, then runs the loop nest below them;
/// a block reduction also strides over the folded dimensions and combines
/// the threads' partial results in shared memory: `shared(r, element,
/// block)` makes the array of `block` elements for register reduction `r`,
/// as a generic pointer.
#[allow(clippy::too_many_arguments)]
pub(super) fn emit_gpu_kernel<'c, 'a>(
    top: &Emitter<'c, 'a>,
    kernel_body: BlockRef<'c, '_>,
    arguments: &[(Value<'c, '_>, Arg<'c, 'a>)],
    outputs: &[Output<'c, 'a>],
    status: Status<'_, 'c, 'a>,
    domain: &[i64],
    gpu: &schedule::GpuSchedule,
    ids: &GpuIds<'c, 'a>,
    shared: &mut dyn FnMut(usize, ElementType, i64) -> Result<Value<'c, 'a>, Error>,
    scratch: Option<Value<'c, 'a>>,
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
        None,
        schedule,
        None,
        math,
        Tuning {
            poly: PolyTarget {
                scalef: false,
                gpu: true,
            },
            prefetch: false,
        },
    )?;
    let index = Type::index(top.context);
    let extents: Vec<i64> = gpu.threads.iter().map(|&d| domain[d]).collect();
    let mut ivs = vec![None; domain.len()];
    match gpu.strategy {
        // `schedule::gpu` never chooses it: `contract::gpu_tiles` lowers those.
        GpuStrategy::Tiles => Err(error("a tiled contraction is not a loop nest")),
        GpuStrategy::Threads => {
            let base = top.value("arith.muli", &[ids.block, ids.block_dim], index)?;
            let thread = top.value("arith.addi", &[base, ids.thread], index)?;
            // The thread's first point; with `per_thread` > 1 the points
            // are a multiple of it, so the first being inside means all are.
            let first = if gpu.per_thread > 1 {
                top.value("arith.muli", &[thread, top.index(gpu.per_thread)?], index)?
            } else {
                thread
            };
            let inside = top.cmpi(6, first, top.index(gpu.points)?)?;
            let then = top.if_then(inside)?;
            let indices = delinearize_narrow(&then, first, &extents)?;
            for (&d, iv) in gpu.threads.iter().zip(&indices) {
                ivs[d] = Some(*iv);
            }
            for offset in 0..gpu.per_thread {
                if offset > 0 {
                    // The thread's other points differ from the first only
                    // in the fastest dimension, whose extent `per_thread`
                    // divides (so a coarsened kernel has one).
                    let (&fastest, &start) = gpu
                        .threads
                        .last()
                        .zip(indices.last())
                        .ok_or_else(|| error("a coarsened kernel without thread dimensions"))?;
                    ivs[fastest] = Some(then.value("arith.addi", &[start, then.index(offset)?], index)?);
                }
                let left = kernel.level(gpu.threads.len(), &then, &mut ivs, Vec::new())?;
                debug_assert!(left.is_empty());
            }
            then.finish()
        }
        GpuStrategy::Blocks { block } => {
            // A split reduction's blocks: `split` consecutive block ids per
            // point, each taking a contiguous share of the fold.
            let (point, share) = if gpu.split > 1 {
                let split = top.index(gpu.split)?;
                (
                    top.value("arith.divui", &[ids.block, split], index)?,
                    Some(top.value("arith.remui", &[ids.block, split], index)?),
                )
            } else {
                (ids.block, None)
            };
            for (&d, iv) in gpu.threads.iter().zip(delinearize(top, point, &extents)?) {
                ivs[d] = Some(iv);
            }
            let inner = &schedule.order[gpu.threads.len()..];
            let inner_extents: Vec<i64> = inner.iter().map(|&d| domain[d]).collect();
            let folded: i64 = inner_extents.iter().product();
            let inits = kernel
                .registers
                .iter()
                .map(|(_, _, kind, element)| identity(top, *kind, *element))
                .collect::<Result<Vec<_>, _>>()?;
            let partial = if folded % block == 0 {
                // Every thread takes the same number of steps, a constant:
                // `unroll` of them a loop iteration, each its own copy of
                // the body, so that the thread issues that many loads
                // before the first add waits (one or two loads in flight
                // per thread leave the memory system idle). The points are
                // visited, and combined, in the same order either way.
                let steps = folded / block / gpu.split;
                let unroll = (1..=MAX_UNROLL).rev().find(|u| steps % u == 0).unwrap_or(1);
                let (body, iteration, mut carried, partial) =
                    top.for_step(top.index(0)?, top.index(steps / unroll)?, top.index(1)?, &inits)?;
                let first = body.value("arith.muli", &[iteration, body.index(unroll)?], index)?;
                let first = match share {
                    Some(share) => {
                        let start = body.value("arith.muli", &[share, body.index(steps)?], index)?;
                        body.value("arith.addi", &[start, first], index)?
                    }
                    None => first,
                };
                for copy in 0..unroll {
                    let step = body.value("arith.addi", &[first, body.index(copy)?], index)?;
                    let offset = body.value("arith.muli", &[step, body.index(block)?], index)?;
                    let k = body.value("arith.addi", &[offset, ids.thread], index)?;
                    for (&d, iv) in inner.iter().zip(delinearize_narrow(&body, k, &inner_extents)?) {
                        ivs[d] = Some(iv);
                    }
                    carried = kernel.point(&body, &ivs, carried, false)?;
                }
                body.yield_values(&carried)?;
                partial
            } else {
                let (body, k, carried, partial) =
                    top.for_step(ids.thread, top.index(folded)?, ids.block_dim, &inits)?;
                for (&d, iv) in inner.iter().zip(delinearize_narrow(&body, k, &inner_extents)?) {
                    ivs[d] = Some(iv);
                }
                let next = kernel.point(&body, &ivs, carried, false)?;
                body.yield_values(&next)?;
                partial
            };
            let shared = kernel
                .registers
                .iter()
                .enumerate()
                .map(|(r, (_, _, _, element))| shared(r, *element, block))
                .collect::<Result<Vec<_>, _>>()?;
            let split = match (share, scratch) {
                (Some(share), Some(scratch)) => Some(Split {
                    blocks: gpu.split,
                    points: gpu.points,
                    point,
                    share,
                    scratch,
                }),
                (None, _) => None,
                (Some(_), None) => return Err(error("a split reduction without scratch memory")),
            };
            block_reduce(&kernel, top, ids, &shared, &partial, block, &ivs, split)
        }
    }
}

/// Fills the outputs of the reductions that accumulate in memory with
/// their identity, one element per thread: the launch before a kernel
/// whose [`schedule::GpuSchedule::fill`] is set. It shares the kernel's
/// parameters, so its `status` is the kernel's.
pub(super) fn emit_gpu_fill<'c, 'a>(
    top: &Emitter<'c, 'a>,
    kernel_body: BlockRef<'c, '_>,
    outputs: &[Output<'c, 'a>],
    status: Status<'_, 'c, 'a>,
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
        let output = &outputs[j];
        let total = output.shape.iter().product::<usize>() as i64;
        let inside = top.cmpi(6, point, top.index(total)?)?;
        let then = top.if_then(inside)?;
        let value = identity(&then, kind, output.element)?;
        let check = output.check(&status, reduce.operation(), true, j);
        store_at(&then, output.pointer, point, value, output.element, check)?;
        then.finish()?;
    }
    Ok(())
}

/// Combines each thread's `partial` results across a block of `block`
/// threads in `shared` memory (a tree of halving steps, a barrier after
/// each, down to one warp; 32-bit results finish in that warp with
/// shuffles, others in shared memory), then thread 0 stores the results.
#[allow(clippy::too_many_arguments)]
fn block_reduce<'c, 'a>(
    kernel: &Kernel<'c, 'a, '_>,
    top: &Emitter<'c, 'a>,
    ids: &GpuIds<'c, 'a>,
    shared: &[Value<'c, 'a>],
    partial: &[Value<'c, 'a>],
    block: i64,
    ivs: &[Option<Value<'c, 'a>>],
    split: Option<Split<'c, 'a>>,
) -> Result<(), Error> {
    let index = Type::index(top.context);
    let barrier = || top.op("nvvm.barrier0", &[], &[], &[]).map(|_| ());
    let check = |op: OperationRef<'c, '_>, store: bool, element: ElementType| -> Option<Check<'c, 'a>> {
        let r#type = format!("!llvm.array<{block} x {}>", memory_type(top.context, element));
        kernel
            .status
            .check(op, store, "shared memory".into(), r#type, block as usize)
    };
    for ((op, _, _, element), (buffer, value)) in kernel.registers.iter().zip(shared.iter().zip(partial)) {
        store_at(
            top,
            *buffer,
            ids.thread,
            *value,
            *element,
            check(*op, true, *element),
        )?;
    }
    barrier()?;
    // 32-bit partial results finish in one warp with shuffles: the same
    // pairs combine in the same order as the shared-memory steps would
    // (lane t takes lane t + s), without a barrier per step.
    let shuffled = kernel
        .registers
        .iter()
        .all(|(_, _, _, element)| matches!(element, ElementType::F32 | ElementType::I32));
    let lowest = if shuffled { WARP } else { 1 };
    let mut stride = block / 2;
    while stride >= lowest {
        let active = top.cmpi(6, ids.thread, top.index(stride)?)?;
        let then = top.if_then(active)?;
        let other = then.value("arith.addi", &[ids.thread, then.index(stride)?], index)?;
        for ((op, _, kind, element), buffer) in kernel.registers.iter().zip(shared) {
            let mine = load_at(&then, *buffer, ids.thread, *element, check(*op, false, *element))?;
            let theirs = load_at(&then, *buffer, other, *element, check(*op, false, *element))?;
            let status = kernel.status.record;
            let combined = combine(&then, *kind, mine, theirs, *element, status, true)?;
            store_at(
                &then,
                *buffer,
                ids.thread,
                combined,
                *element,
                check(*op, true, *element),
            )?;
        }
        then.finish()?;
        barrier()?;
        stride /= 2;
    }
    if shuffled {
        let in_warp = top.cmpi(6, ids.thread, top.index(WARP)?)?;
        let warp = top.if_then(in_warp)?;
        let mut values = kernel
            .registers
            .iter()
            .zip(shared)
            .map(|((op, _, _, element), buffer)| {
                load_at(&warp, *buffer, ids.thread, *element, check(*op, false, *element))
            })
            .collect::<Result<Vec<_>, _>>()?;
        let mut offset = WARP.min(block) / 2;
        while offset >= 1 {
            for ((_, _, kind, element), value) in kernel.registers.iter().zip(values.iter_mut()) {
                let theirs = shuffle_down(&warp, *value, offset)?;
                *value = combine(&warp, *kind, *value, theirs, *element, kernel.status.record, true)?;
            }
            offset /= 2;
        }
        let first = warp.cmpi(0, ids.thread, warp.index(0)?)?;
        let then = warp.if_then(first)?;
        finish_block(kernel, &then, split, &values, ivs)?;
        then.finish()?;
        return warp.finish();
    }
    let first = top.cmpi(0, ids.thread, top.index(0)?)?;
    let then = top.if_then(first)?;
    let results = kernel
        .registers
        .iter()
        .zip(shared)
        .map(|((op, _, _, element), buffer)| {
            load_at(
                &then,
                *buffer,
                then.index(0)?,
                *element,
                check(*op, false, *element),
            )
        })
        .collect::<Result<Vec<_>, _>>()?;
    finish_block(kernel, &then, split, &results, ivs)?;
    then.finish()
}

/// Threads per warp.
const WARP: i64 = 32;

/// The most steps of a block's stride loop that one iteration runs.
const MAX_UNROLL: i64 = 8;

/// Thread 0's part once the block's `results` are known: store them, or
/// hand them to the split's combine.
fn finish_block<'c, 'a>(
    kernel: &Kernel<'c, 'a, '_>,
    then: &Emitter<'c, 'a>,
    split: Option<Split<'c, 'a>>,
    results: &[Value<'c, 'a>],
    ivs: &[Option<Value<'c, 'a>>],
) -> Result<(), Error> {
    match split {
        None => kernel.store_registers(then, ivs, results),
        Some(split) => combine_shares(kernel, then, &split, results, ivs),
    }
}

/// `value` of the lane `offset` above this one in the warp (every lane of
/// the warp takes part; lanes past the last get their own value back).
fn shuffle_down<'c, 'a>(
    at: &Emitter<'c, 'a>,
    value: Value<'c, 'a>,
    offset: i64,
) -> Result<Value<'c, 'a>, Error> {
    let context = at.context;
    let i32_type: Type = melior::ir::r#type::IntegerType::new(context, 32).into();
    let kind = melior::ir::Attribute::parse(context, "#nvvm<shfl_kind down>")
        .ok_or_else(|| error("the shuffle kind does not parse"))?;
    let all = at.int(i32_type, -1)?;
    let offset = at.int(i32_type, offset)?;
    // No segments (mask 0), lanes clamped to 31.
    let clamp = at.int(i32_type, WARP - 1)?;
    at.op(
        "nvvm.shfl.sync",
        &[all, value, offset, clamp],
        &[melior::ir::ValueLike::r#type(&value)],
        &[("kind", kind)],
    )?
    .ok_or_else(|| error("nvvm.shfl.sync"))
}

/// A split block reduction's block (rule 6 of [`schedule::gpu`]).
struct Split<'c, 'a> {
    /// Blocks per point.
    blocks: i64,
    /// Points.
    points: i64,
    /// This block's point, linear.
    point: Value<'c, 'a>,
    /// Which of the point's blocks this is.
    share: Value<'c, 'a>,
    /// The scratch memory: a counter (i32) per point, from 0, then per
    /// reduction an 8-byte slot per point and block.
    scratch: Value<'c, 'a>,
}

/// Thread 0 of a split reduction's block (at `at`): writes the block's
/// `results` to its slots, then counts the block done; the point's last
/// block to finish combines every block's results in block order,
/// stores them as an unsplit reduction does, and zeroes the counter for
/// the next launch.
///
/// ```text
/// slot[r][point][share] = result[r]
/// fence                                   (release: the slots before the count)
/// if atomic_add(counter[point], 1) == blocks - 1:
///     fence                               (acquire: every block's slots)
///     acc[r] = identity; for s in 0..blocks: acc[r] = acc[r] ⊕ slot[r][point][s]
///     store acc; counter[point] = 0
/// ```
fn combine_shares<'c, 'a>(
    kernel: &Kernel<'c, 'a, '_>,
    at: &Emitter<'c, 'a>,
    split: &Split<'c, 'a>,
    results: &[Value<'c, 'a>],
    ivs: &[Option<Value<'c, 'a>>],
) -> Result<(), Error> {
    let context = at.context;
    let index = Type::index(context);
    let i8_type: Type = melior::ir::r#type::IntegerType::new(context, 8).into();
    let i32_type: Type = melior::ir::r#type::IntegerType::new(context, 32).into();
    let i64_type: Type = melior::ir::r#type::IntegerType::new(context, 64).into();
    let counters = schedule::split_counter_bytes(split.points);
    let slots_per_reduction = split.points * split.blocks * schedule::SPLIT_SLOT_BYTES;
    // The slots of reduction `r`, as a pointer to its element type.
    let slots = |at: &Emitter<'c, 'a>, r: usize| -> Result<Value<'c, 'a>, Error> {
        let offset = at.int(i64_type, counters + r as i64 * slots_per_reduction)?;
        super::types::gep(at, split.scratch, offset, i8_type)
    };
    let base = at.value("arith.muli", &[split.point, at.index(split.blocks)?], index)?;
    let mine = at.value("arith.addi", &[base, split.share], index)?;
    for (r, ((_, _, _, element), result)) in kernel.registers.iter().zip(results).enumerate() {
        store_at(at, slots(at, r)?, mine, *result, *element, None)?;
    }
    fence(at)?;
    let point = at.value("arith.index_cast", &[split.point], i64_type)?;
    let counter = super::types::gep(at, split.scratch, point, i32_type)?;
    let one = at.int(i32_type, 1)?;
    let before = at
        .op(
            "llvm.atomicrmw",
            &[counter, one],
            &[i32_type],
            &[
                ("bin_op", IntegerAttribute::new(i64_type, ATOMIC_ADD).into()),
                ("ordering", IntegerAttribute::new(i64_type, MONOTONIC).into()),
                at.device_scope(),
            ],
        )?
        .ok_or_else(|| error("llvm.atomicrmw"))?;
    let last = at.cmpi(0, before, at.int(i32_type, split.blocks - 1)?)?;
    let then = at.if_then(last)?;
    fence(&then)?;
    let inits = kernel
        .registers
        .iter()
        .map(|(_, _, kind, element)| identity(&then, *kind, *element))
        .collect::<Result<Vec<_>, _>>()?;
    let (body, s, carried, combined) =
        then.for_step(then.index(0)?, then.index(split.blocks)?, then.index(1)?, &inits)?;
    let slot = body.value("arith.addi", &[base, s], index)?;
    let mut next = Vec::with_capacity(carried.len());
    for (r, ((_, _, kind, element), acc)) in kernel.registers.iter().zip(&carried).enumerate() {
        let value = load_at(&body, slots(&body, r)?, slot, *element, None)?;
        next.push(combine(
            &body,
            *kind,
            *acc,
            value,
            *element,
            kernel.status.record,
            true,
        )?);
    }
    body.yield_values(&next)?;
    kernel.store_registers(&then, ivs, &combined)?;
    let zero = then.int(i32_type, 0)?;
    then.op("llvm.store", &[zero, counter], &[], &[])?;
    then.finish()
}

/// A sequentially consistent fence over the device: orders a
/// block's stores to its slots before its count, and the last block's
/// count before its loads of the other blocks' slots.
fn fence(at: &Emitter) -> Result<(), Error> {
    let i64_type: Type = melior::ir::r#type::IntegerType::new(at.context, 64).into();
    let ordering = IntegerAttribute::new(i64_type, SEQ_CST).into();
    at.op(
        "llvm.fence",
        &[],
        &[],
        &[("ordering", ordering), at.device_scope()],
    )?;
    Ok(())
}

/// `llvm::AtomicOrdering` and `llvm::AtomicRMWInst::BinOp` values, as the
/// LLVM dialect's enum attributes take them (as `access` does for
/// `cmpxchg`, whose `MONOTONIC` this shares).
const SEQ_CST: i64 = 7;
const ATOMIC_ADD: i64 = 1;
