//! Row chains: consecutive kernels that share their rows run one block of
//! rows at a time, past Jittor's rule 2, on the CPU and the GPU alike
//! unless `jittor_rules` or bounds checks (on the GPU, with fast math
//! only: [`chain_rows_gpu`], lowered by `lower::gpu_rows`: one thread
//! block per row, the scratch in shared memory).
//!
//! Rule 2 keeps a reduction's consumers out of its loop nest, so softmax
//! is three kernels (the row maximum; `exp(x - max)` with the row sum; the
//! division), and each one streams the whole tensor through memory. A
//! *chain* calls them in turn on one block of rows, then the next: the
//! block's rows of `x` stay in cache from the first kernel to the last,
//! and a value only the chain reads (the exponentials, the maxima and the
//! sums) never reaches memory: it lives in a scratch buffer of one block.
//!
//! **When.** [`chain_rows`] looks at every block of host code for runs of
//! consecutive calls of kernels that
//! - have static shapes, lower on the CPU, and split across threads
//!   ([`super::schedule::Schedule::parallel`]) along a dimension of the
//!   same extent, the chain's *rows*. A kernel after the first may be
//!   split along another dimension than its schedule would choose (one
//!   every reduction keeps, not the innermost loop): instance norm's
//!   normalization would split along the batch, and joins the statistics'
//!   chain along the channels. The chain names that dimension on the
//!   kernel (`meta.split`, [`super::schedule::SPLIT_ATTRIBUTE`]), which
//!   its schedule then splits along, outermost; a kernel has one split,
//!   whichever chains call it;
//! - are not run as register-tiled contractions (schedule rule 6, the
//!   names the caller passes): a contraction packs panels of its operand
//!   per call, so in a chain it would pack them again for every block of
//!   rows, and its row tiles would meet a block's edge (blocks of 61 rows
//!   against tiles of 6); the MLP step's two contraction chains took
//!   1.14 and 0.97 ms where the kernels alone took 1.00 and 0.91
//!   (`jitc bench --kernels`, docs/benchmarks.md);
//! - cannot stop the run (no integer division, no affine arithmetic on
//!   symbols): a failure would be met in block order, not in the
//!   interpreter's order of ops;
//! - pass values along rows: whatever one kernel of the chain reads of
//!   another's result, it reads row `r` of it (in one dimension of the
//!   value, the same for writer and reader) at its own row `r`, so a
//!   block's rows depend on nothing outside the block;
//! - and keep at least one value in scratch: a value read only inside the
//!   chain, with the rows as its outermost dimension (or after dimensions
//!   of extent 1 only, as instance norm's `1xCx1x1` statistics), every access to it
//!   in bounds (a checked access that fails still loads offset 0, which
//!   for a scratch pointer lies outside the block), whose rows of all such
//!   values fit [`SCRATCH_BYTES`] (so a block of at least one row does).
//!   The driver's frame holds the scratch; every function is compiled with
//!   stack probes, so a frame that large touches the guard page of a
//!   nearly full stack rather than jumping past it.
//!
//! **Blocks.** A block is as many rows as the scratch holds, and no more
//! than keep the block's rows of the inputs that more than one stage reads
//! within [`REREAD_BYTES`] (one row at least): the first stage reads them
//! from memory, the later ones from cache. Softmax's rows of 4 KiB give
//! blocks of 31 rows (the scratch bounds them); instance norm's channels of
//! (32, 64, 56, 56), 392 KiB each, give blocks of one channel.
//!
//! **What.** The calls become one call of a new function, marked
//! `meta.fused` and `meta.chain` (the stage kernels, in order), whose body
//! calls the stages: the interpreter runs it as it ran the calls. It is
//! lowered ([`lower_chain`]) to a kernel of the usual calling convention
//! (its arguments and results are the values crossing the chain's
//! boundary; the runtime splits its rows across threads as any kernel's):
//! for each block of `meta.block` rows of its range, it calls each stage
//! on that block, passing the chain's buffers, and for a scratch value a
//! pointer into the scratch shifted back by the block's first row, so the
//! stage's own row-major offsets land in the scratch.
//!
//! The bounds-checked mode makes no chains (each kernel's accesses are
//! checked against its own buffers), nor does
//! [`crate::CodegenOptions::jittor_rules`].
//!
//! **On the GPU** ([`chain_rows_gpu`], fast math only) a stage joins a
//! chain when one block can run one row of it ([`gpu_row`]): split along
//! the dimension its CPU schedule splits, with a GPU schedule that is a
//! block reduction over that dimension alone (one block per row, not
//! split across blocks, no fill launch) or one thread per point with that
//! dimension outermost and no loop in the thread. The chain's block
//! reductions must agree on their threads per block, which must divide
//! every other stage's points per row ([`gpu_block`]; `meta.threads` on
//! the chain); it has at least [`GPU_CHAIN_ROWS`] rows, a block is one row,
//! the scratch of a row fits [`GPU_SCRATCH_BYTES`] of shared memory, and
//! the scratch with the block reductions' trees fits [`GPU_SHARED_BYTES`].

use super::{Buffer, KernelSignature, Lowered, gep, i64_array, kernels, legal, schedule, signature};
use crate::{
    Error,
    rewrite::{defining_op, erase, key, replace_uses, uses},
};
use jitc_dialect::ops::{ReindexOp, string_attribute};
use melior::{
    Context,
    dialect::func,
    ir::{
        Attribute, Block, BlockLike, BlockRef, Identifier, Module, OperationRef, Region, RegionLike, Type,
        Value, ValueLike,
        attribute::{
            ArrayAttribute, DenseI64ArrayAttribute, FlatSymbolRefAttribute, IntegerAttribute,
            StringAttribute, TypeAttribute,
        },
        operation::OperationLike,
        r#type::{FunctionType, IntegerType},
    },
};
use std::collections::{HashMap, HashSet};

/// Scratch bytes a chain may use per block (on the stack of the thread
/// that runs the block): a block is as many rows as fit, so the block of
/// the input and the scratch stay in the L2 cache together.
pub const SCRATCH_BYTES: usize = 128 << 10;

/// Bytes of a block's rows of the inputs more than one stage reads: a
/// block has no more rows than fit (one at least), so the later stages
/// find them in the L2 cache (1 MiB per core on the development machine,
/// 512 KiB or more on any x86 of the last decade). Instance norm's
/// channels of (32, 64, 56, 56) are 401,408 bytes each: one per block.
pub const REREAD_BYTES: usize = 512 << 10;

/// How a kernel reads an argument or writes a result, with respect to its
/// rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Rows {
    /// Row `r` of the kernel touches row `r` along this dimension of the
    /// value, and no other row; every access is in bounds.
    Along(usize),
    /// As [`Rows::Along`], but some access is checked (a padded or shifted
    /// read): where it fails, the load is made at offset 0 and its value
    /// dropped, so the value needs a buffer of its own (offset 0 of a
    /// block's scratch pointer is outside the block).
    Clamped(usize),
    /// Any row may read any part of it (a broadcast weight).
    Whole,
    /// Anything else: the value cannot cross a chain.
    Other,
}

impl Rows {
    fn join(self, other: Rows) -> Rows {
        match (self, other) {
            (a, b) if a == b => a,
            (Rows::Other, _) | (_, Rows::Other) => Rows::Other,
            (Rows::Along(p) | Rows::Clamped(p), Rows::Along(q) | Rows::Clamped(q)) if p == q => {
                Rows::Clamped(p)
            }
            _ => Rows::Whole,
        }
    }

    /// The row dimension, checked or not.
    fn dimension(self) -> Option<usize> {
        match self {
            Rows::Along(p) | Rows::Clamped(p) => Some(p),
            _ => None,
        }
    }
}

/// What a chain needs to know of one kernel, split along one dimension.
#[derive(Debug, Clone)]
struct Stage {
    /// The split dimension.
    split: usize,
    /// Whether it is the one the kernel's schedule chooses by itself;
    /// another is named by `meta.split` when the kernel joins a chain.
    natural: bool,
    /// Extent of the split dimension.
    rows: i64,
    /// Per argument.
    arguments: Vec<Rows>,
    /// Per result.
    results: Vec<Rows>,
    /// How a GPU block runs one row of it; `None` for the CPU.
    gpu: Option<GpuRow>,
    /// Bytes of shared memory its block reductions' trees take on the GPU
    /// at most (8 bytes a thread per reduction).
    tree_bytes: usize,
}

/// How one GPU block runs a stage's row ([`chain_rows_gpu`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum GpuRow {
    /// A block reduction of `block` threads, one block per row.
    Reduce { block: i64 },
    /// One thread per point, `points` points per row: the block's threads
    /// stride over them.
    Points { points: i64 },
}

/// Where [`chain_rows_for`] makes chains.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Target {
    Cpu,
    /// With `libdevice`, as [`legal::check_gpu`] takes it.
    Gpu {
        libdevice: bool,
    },
}

pub(super) fn name_of(op: OperationRef) -> String {
    op.name().as_string_ref().as_str().unwrap_or("").to_owned()
}

pub(super) fn shape_of(value: Value) -> Option<Vec<usize>> {
    super::static_shape(value.r#type()).map(|(shape, _)| shape)
}

/// The stage views of `kernel`, when it can be part of a chain: split as
/// its schedule chooses first, then along each other dimension it could
/// be split along (every reduction keeps it, it is not the innermost loop,
/// and it has at least 2 points).
fn stages(kernel: OperationRef) -> Vec<Stage> {
    let Some(domain) = kernel.attribute("meta.domain").ok().and_then(i64_array) else {
        return Vec::new();
    };
    let Some(body) = kernel.region(0).ok().and_then(|r| r.first_block()) else {
        return Vec::new();
    };
    let Ok(plan) = schedule::schedule(body, &domain) else {
        return Vec::new();
    };
    if !plan.parallel {
        return Vec::new();
    }
    let innermost = plan.order.last().copied();
    let others = plan
        .independent
        .iter()
        .copied()
        .filter(|&d| d != plan.split && Some(d) != innermost && domain.get(d).is_some_and(|&n| n >= 2));
    std::iter::once(plan.split)
        .chain(others)
        .filter_map(|split| stage(kernel, &domain, split, split == plan.split))
        .collect()
}

/// The stage view of `kernel` on the GPU, when one block can run a row of
/// it: split along the dimension its CPU schedule splits (never another,
/// since `meta.split` would change its GPU schedule too), with at least
/// [`GPU_CHAIN_ROWS`] rows, and a GPU schedule (fast math) that is a
/// block reduction over that dimension alone, in one block per row, or
/// one thread per point with that dimension outermost and no loop inside
/// the thread.
fn gpu_stages(kernel: OperationRef, libdevice: bool) -> Vec<Stage> {
    let view = || -> Option<Stage> {
        let domain = kernel.attribute("meta.domain").ok().and_then(i64_array)?;
        let body = kernel.region(0).ok()?.first_block()?;
        if kernel.has_attribute(schedule::SPLIT_ATTRIBUTE)
            || legal::check_gpu(kernel, super::MathMode::Fast, libdevice).is_err()
        {
            return None;
        }
        let plan = schedule::schedule(body, &domain).ok()?;
        let gpu = schedule::gpu(body, &domain, true).ok()?;
        let row = gpu_row(&gpu, &domain, plan.split)?;
        let mut stage = stage(kernel, &domain, plan.split, true)?;
        (stage.rows >= GPU_CHAIN_ROWS).then_some(())?;
        if let GpuRow::Reduce { block } = row {
            stage.tree_bytes = (schedule::reductions_in(body) * block * 8) as usize;
        }
        stage.gpu = Some(row);
        Some(stage)
    };
    view().into_iter().collect()
}

/// The fewest rows of a GPU chain: one block per row, and a GPU needs a
/// thousand or so blocks in flight (`schedule::GPU_TARGET_BLOCKS`).
pub const GPU_CHAIN_ROWS: i64 = schedule::GPU_TARGET_BLOCKS;

/// The attribute of a GPU chain that gives its threads per block.
pub const GPU_THREADS_ATTRIBUTE: &str = "meta.threads";

/// Scratch bytes of one row a GPU chain may keep in shared memory.
pub const GPU_SCRATCH_BYTES: usize = 16 << 10;

/// Shared memory a GPU chain may take in all, its scratch and its block
/// reductions' trees: CUDA's limit on a block's static shared memory
/// (ptxas rejects more).
pub const GPU_SHARED_BYTES: usize = 48 << 10;

/// How one block runs a row of a kernel of GPU schedule `gpu` over
/// `domain` split along `split`, if it can.
pub(super) fn gpu_row(gpu: &schedule::GpuSchedule, domain: &[i64], split: usize) -> Option<GpuRow> {
    if gpu.fill || gpu.split != 1 || domain.iter().any(|&d| d < 1) {
        return None;
    }
    match gpu.strategy {
        schedule::GpuStrategy::Blocks { block } if gpu.threads == [split] => Some(GpuRow::Reduce { block }),
        schedule::GpuStrategy::Threads
            if gpu.threads.first() == Some(&split) && gpu.threads.len() == domain.len() =>
        {
            Some(GpuRow::Points {
                points: gpu.points / domain[split],
            })
        }
        _ => None,
    }
}

/// The block size of a GPU chain of `stages`: that of its block
/// reductions, which must agree ([`schedule::GPU_BLOCK`] when there are
/// none), and which must divide every other stage's points per row.
fn gpu_block<'s>(stages: impl Iterator<Item = &'s Stage> + Clone) -> Option<i64> {
    let mut block = None;
    for stage in stages.clone() {
        if let Some(GpuRow::Reduce { block: b }) = stage.gpu {
            if block.is_some_and(|a| a != b) {
                return None;
            }
            block = Some(b);
        }
    }
    let block = block.unwrap_or(schedule::GPU_BLOCK);
    stages
        .filter_map(|s| match s.gpu {
            Some(GpuRow::Points { points }) => Some(points),
            _ => None,
        })
        .all(|points| points % block == 0)
        .then_some(block)
}

/// The stage view of `kernel` split along `split`, when it can be part of
/// a chain so.
fn stage(kernel: OperationRef, domain: &[i64], split: usize, natural: bool) -> Option<Stage> {
    if domain.iter().any(|&d| d < 0) || legal::check(kernel).is_err() {
        return None;
    }
    let signature = signature(kernel).ok()?;
    let dynamic = signature
        .inputs
        .iter()
        .chain(&signature.outputs)
        .any(|b| matches!(b, Buffer::Dynamic(..)));
    if signature.flat || signature.sizes.is_some() || dynamic {
        return None;
    }
    let body = kernel.region(0).ok()?.first_block()?;
    if domain.get(split).is_none_or(|&rows| rows < 2) {
        return None;
    }
    let rows = domain[split];
    // A stage that may stop the run (an integer division, affine
    // arithmetic on symbols) would report its failure in block order, not
    // in the interpreter's: none joins a chain.
    let mut op = body.first_operation();
    while let Some(current) = op {
        op = current.next_in_block();
        let symbols = matches!(name_of(current).as_str(), "meta.reindex" | "meta.reindex_reduce")
            && current.operand_count() > 1;
        if symbols || crate::fusion::may_trap(current) {
            return None;
        }
    }
    let arguments = (0..body.argument_count())
        .map(|i| {
            let argument: Value = body.argument(i).ok()?.into();
            if matches!(signature.inputs.get(i), Some(Buffer::Index)) {
                return Some(Rows::Whole);
            }
            let mut read: Option<Rows> = None;
            for (user, operand) in uses(argument) {
                let how = match name_of(user).as_str() {
                    "meta.reindex" if operand == 0 => along_map(user, split, rows, argument, domain),
                    // Index operands of a reindex are scalars.
                    "meta.reindex" => Rows::Whole,
                    // Operands indexed by the domain itself.
                    "meta.reindex_reduce" | "meta.unary" | "meta.binary" | "meta.ternary" => {
                        Rows::Along(split)
                    }
                    _ => Rows::Other,
                };
                read = Some(read.map_or(how, |r| r.join(how)));
            }
            Some(read.unwrap_or(Rows::Whole))
        })
        .collect::<Option<Vec<_>>>()?;
    let terminator = body.terminator()?;
    let results = terminator
        .operands()
        .map(|value| {
            let Some(op) = defining_op(value) else {
                return Rows::Other;
            };
            if name_of(op) == "meta.reindex_reduce" {
                let Some(map) = jitc_dialect::ops::ReindexReduceOp::cast(op).and_then(|r| r.indices()) else {
                    return Rows::Other;
                };
                let row = (0..map.result_count()).find(|&k| {
                    map.result(k)
                        .is_ok_and(|e| e.is_dim() && e.dim_position() == split)
                });
                // An output index that may fall outside is checked (and
                // the access clamped to offset 0) like a padded read.
                let conditions = jitc_dialect::ops::ReindexReduceOp::cast(op)
                    .is_some_and(|r| r.overflow_conditions().is_some());
                let inside = shape_of(value).is_some_and(|shape| in_bounds(map, &shape, domain));
                match row {
                    Some(k) if inside && !conditions => Rows::Along(k),
                    Some(k) => Rows::Clamped(k),
                    None => Rows::Other,
                }
            } else {
                // Written at the domain's own index.
                Rows::Along(split)
            }
        })
        .collect();
    Some(Stage {
        split,
        natural,
        rows,
        arguments,
        results,
        gpu: None,
        tree_bytes: 0,
    })
}

/// Whether every index of `map` stays inside `shape` over `domain`.
fn in_bounds(map: melior::ir::AffineMap, shape: &[usize], domain: &[i64]) -> bool {
    (0..map.result_count()).all(|k| {
        let range = map.result(k).ok().and_then(|e| schedule::range(e, domain));
        matches!((range, shape.get(k)), (Some((low, high)), Some(&n)) if low >= 0 && high < n as i64)
    })
}

/// How a reindex of `input` reads it along the rows: row `r` reads row `r`
/// when one index is exactly the split dimension (over an extent of
/// `rows`) and no other index moves with it; [`Rows::Clamped`] when some
/// index may fall outside (padding, overflow conditions).
fn along_map(op: OperationRef, split: usize, rows: i64, input: Value, domain: &[i64]) -> Rows {
    let Some(reindex) = ReindexOp::cast(op) else {
        return Rows::Other;
    };
    let Some(map) = reindex.indices() else {
        return Rows::Other;
    };
    let Some(shape) = shape_of(input) else {
        return Rows::Other;
    };
    let mut along = None;
    for k in 0..map.result_count() {
        let Ok(expr) = map.result(k) else {
            return Rows::Other;
        };
        if expr.is_dim()
            && expr.dim_position() == split
            && along.is_none()
            && shape.get(k) == Some(&(rows as usize))
        {
            along = Some(k);
        } else if expr.is_function_of_dim(split) {
            return Rows::Other;
        }
    }
    let checked = reindex.overflow_conditions().is_some() || !in_bounds(map, &shape, domain);
    match along {
        Some(k) if checked => Rows::Clamped(k),
        Some(k) => Rows::Along(k),
        None => Rows::Whole,
    }
}

/// A chain [`chain_rows`] made, for `jitc explain`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RowChain {
    /// The chain function.
    pub name: String,
    /// The host function whose calls it replaced.
    pub host: String,
    /// Its stage kernels, in order.
    pub stages: Vec<String>,
    /// The rows it splits.
    pub rows: i64,
    /// Rows per block.
    pub block: i64,
    /// Scratch bytes per row: what never reaches memory.
    pub scratch_row_bytes: usize,
    /// Bytes per row of the inputs more than one stage reads: read from
    /// memory by the first, from cache by the others.
    pub reread_row_bytes: usize,
}

/// One call of a chain.
struct Link<'c, 'a> {
    call: OperationRef<'c, 'a>,
    callee: String,
    stage: Stage,
}

/// Rewrites runs of kernel calls in the host code of `module` into calls
/// of chains for the CPU (see the module doc); returns the chains made.
/// `apart` names the kernels that are no stage: the register-tiled
/// contractions.
pub(crate) fn chain_rows(
    context: &Context,
    module: &Module,
    apart: &HashSet<String>,
) -> Result<Vec<RowChain>, Error> {
    chain_rows_for(context, module, Target::Cpu, apart)
}

/// As [`chain_rows`], for the GPU (fast math only: its stages are block
/// reductions): one block runs one row of every stage, the rows of a
/// scratch value in shared memory (see `lower::gpu_rows`). `libdevice`
/// says whether math that needs it lowers.
pub(crate) fn chain_rows_gpu(
    context: &Context,
    module: &Module,
    libdevice: bool,
) -> Result<Vec<RowChain>, Error> {
    chain_rows_for(context, module, Target::Gpu { libdevice }, &HashSet::new())
}

fn chain_rows_for(
    context: &Context,
    module: &Module,
    target: Target,
    apart: &HashSet<String>,
) -> Result<Vec<RowChain>, Error> {
    let functions = jitc_dialect::ops::functions(module.body());
    let mut views: HashMap<String, Vec<Stage>> = HashMap::new();
    // The split each kernel of a chain made so far was given: a kernel
    // called again joins another chain only split the same way.
    let mut splits: HashMap<String, usize> = HashMap::new();
    let mut taken: HashSet<String> = functions.keys().cloned().collect();
    let mut made = Vec::new();
    for (name, host) in hosts(&functions) {
        for block in blocks(host) {
            let mut chain: Vec<Link> = Vec::new();
            let mut op = block.first_operation();
            while let Some(current) = op {
                op = current.next_in_block();
                let callee = (name_of(current) == "func.call")
                    .then(|| crate::transforms::inline::callee(current))
                    .flatten();
                let mut candidates: Vec<Link> = Vec::new();
                if let Some(callee) = callee
                    && let Some(kernel) = functions.get(&callee)
                    && kernel.has_attribute("meta.fused")
                    && !kernel.has_attribute("meta.chain")
                    && !kernel.has_attribute("meta.epilogue")
                {
                    let views = views.entry(callee.clone()).or_insert_with(|| match target {
                        Target::Cpu if apart.contains(&callee) => Vec::new(),
                        Target::Cpu => stages(*kernel),
                        Target::Gpu { libdevice } => gpu_stages(*kernel, libdevice),
                    });
                    // One split per kernel: the one a chain gave it
                    // already, in this chain or an earlier one.
                    let given = splits
                        .get(&callee)
                        .copied()
                        .or_else(|| chain.iter().find(|l| l.callee == callee).map(|l| l.stage.split));
                    candidates = views
                        .iter()
                        .filter(|v| given.is_none_or(|d| d == v.split))
                        .map(|v| Link {
                            call: current,
                            callee: callee.clone(),
                            stage: v.clone(),
                        })
                        .collect();
                }
                match candidates.iter().position(|link| extends(&chain, link)) {
                    Some(i) => chain.push(candidates.swap_remove(i)),
                    // Any other op, or a call that cannot join, ends the
                    // chain; such a call may start the next one, split as
                    // its schedule chooses.
                    None => {
                        let ended = std::mem::take(&mut chain);
                        made.extend(close(
                            context,
                            module,
                            &mut taken,
                            &mut splits,
                            &name,
                            ended,
                            target,
                        )?);
                        chain.extend(candidates.into_iter().next());
                    }
                }
            }
            made.extend(close(
                context,
                module,
                &mut taken,
                &mut splits,
                &name,
                chain,
                target,
            )?);
        }
    }
    Ok(made)
}

/// The host functions among `functions` (those not `meta.fused`), with
/// their names, in order.
pub(super) fn hosts<'c, 'a>(
    functions: &std::collections::BTreeMap<String, OperationRef<'c, 'a>>,
) -> Vec<(String, OperationRef<'c, 'a>)> {
    functions
        .iter()
        .filter(|(_, f)| !f.has_attribute("meta.fused"))
        .map(|(name, f)| (name.clone(), *f))
        .collect()
}

/// Every block of `function`, nested ones included.
pub(super) fn blocks<'c, 'a>(function: OperationRef<'c, 'a>) -> Vec<BlockRef<'c, 'a>> {
    let mut out = Vec::new();
    let mut pending = vec![function];
    while let Some(op) = pending.pop() {
        for region in op.regions() {
            let mut block = region.first_block();
            while let Some(current) = block {
                out.push(current);
                let mut inner = current.first_operation();
                while let Some(nested) = inner {
                    inner = nested.next_in_block();
                    if nested.region_count() > 0 {
                        pending.push(nested);
                    }
                }
                block = current.next_in_region();
            }
        }
    }
    out
}

/// Whether `link` may join the end of `chain`: the call right after its
/// last, over as many rows, reading each value the chain made along the
/// rows the chain wrote it.
fn extends(chain: &[Link], link: &Link) -> bool {
    let Some(last) = chain.last() else { return true };
    let next = last.call.next_in_block().map(|op| op.to_raw().ptr);
    if link.stage.rows != last.stage.rows || next != Some(link.call.to_raw().ptr) {
        return false;
    }
    if link.stage.gpu.is_some()
        && gpu_block(chain.iter().map(|l| &l.stage).chain(std::iter::once(&link.stage))).is_none()
    {
        return false;
    }
    link.call
        .operands()
        .enumerate()
        .all(|(i, operand)| match produced(chain, operand) {
            None => true,
            Some((a, j)) => {
                let written = chain[a].stage.results[j].dimension();
                let read = link.stage.arguments.get(i).and_then(|r| r.dimension());
                written.is_some() && written == read
            }
        })
}

/// The link and result number that made `value`, when a call of `chain`
/// did.
fn produced(chain: &[Link], value: Value) -> Option<(usize, usize)> {
    chain.iter().enumerate().find_map(|(a, link)| {
        (0..link.call.result_count()).find_map(|j| {
            link.call
                .result(j)
                .ok()
                .filter(|r| key((*r).into()) == key(value))
                .map(|_| (a, j))
        })
    })
}

/// The body of a function that makes `calls` (each a call and its
/// callee) on its arguments `inputs` and returns `outputs`: the calls
/// cloned in order, each operand an argument or an earlier clone's result.
/// Row chains and contraction epilogues (`super::epilogue`) are such
/// functions.
pub(super) fn outlined<'c>(
    context: &'c Context,
    calls: &[(OperationRef<'c, '_>, &str)],
    inputs: &[Value<'c, '_>],
    outputs: &[Value<'c, '_>],
    location: melior::ir::Location<'c>,
) -> Result<Region<'c>, Error> {
    let fail = |what: &str| Error::Lowering(format!("an outlined function's {what}"));
    let input_types: Vec<Type> = inputs.iter().map(|v| v.r#type()).collect();
    let body = Block::new(&input_types.iter().map(|t| (*t, location)).collect::<Vec<_>>());
    let mut mapping: HashMap<usize, Value> = HashMap::new();
    for (i, input) in inputs.iter().enumerate() {
        let argument = body.argument(i).map_err(|_| fail("argument"))?;
        // SAFETY: the block argument lives as long as the block, which the
        // new function owns for as long as the module lives.
        mapping.insert(key(*input), unsafe { Value::from_raw(argument.to_raw()) });
    }
    for &(old, callee) in calls {
        let operands: Vec<Value> = old
            .operands()
            .map(|v| mapping.get(&key(v)).copied().unwrap_or(v))
            .collect();
        let types: Vec<Type> = old.results().map(|r| r.r#type()).collect();
        let new = body.append_operation(func::call(
            context,
            FlatSymbolRefAttribute::new(context, callee),
            &operands,
            &types,
            location,
        ));
        for j in 0..new.result_count() {
            let (Ok(from), Ok(to)) = (old.result(j), new.result(j)) else {
                return Err(fail("call results"));
            };
            // SAFETY: as for the arguments.
            mapping.insert(key(from.into()), unsafe { Value::from_raw(to.to_raw()) });
        }
    }
    let returned: Vec<Value> = outputs
        .iter()
        .map(|v| mapping.get(&key(*v)).copied().unwrap_or(*v))
        .collect();
    body.append_operation(func::r#return(&returned, location));
    let region = Region::new();
    region.append_block(body);
    Ok(region)
}

/// The bytes per row of `value`, a tensor of `rows` rows (its row
/// dimension has only dimensions of extent 1 before it, so row `r` starts
/// at `r` times this).
pub(super) fn row_bytes_of(value: Value, rows: i64) -> Option<usize> {
    let (shape, element) = super::static_shape(value.r#type())?;
    let elements: usize = shape.iter().product();
    let rows = usize::try_from(rows).ok().filter(|&r| r > 0)?;
    elements
        .is_multiple_of(rows)
        .then(|| elements / rows)?
        .checked_mul(element.byte_width())
}

/// Whether dimension `k` of `value` is its rows, `rows` of them, with only
/// dimensions of extent 1 before it.
fn rows_lead(value: Value, k: usize, rows: i64) -> bool {
    shape_of(value)
        .is_some_and(|shape| shape.get(k) == Some(&(rows as usize)) && shape[..k].iter().all(|&d| d == 1))
}

/// Replaces the calls of `chain` (in the host function `host`) with one
/// call of a new chain function, when the chain is worth it.
fn close(
    context: &Context,
    module: &Module,
    taken: &mut HashSet<String>,
    splits: &mut HashMap<String, usize>,
    host: &str,
    chain: Vec<Link>,
    target: Target,
) -> Result<Option<RowChain>, Error> {
    if chain.len() < 2 {
        return Ok(None);
    }
    let calls: HashSet<usize> = chain.iter().map(|l| l.call.to_raw().ptr as usize).collect();
    let rows = chain[0].stage.rows;
    // Values crossing the boundary, and values kept in scratch.
    let mut inputs: Vec<Value> = Vec::new();
    let mut input_keys: HashSet<usize> = HashSet::new();
    let mut outputs: Vec<Value> = Vec::new();
    let mut scratch: Vec<Value> = Vec::new();
    // The values earlier calls of the chain made.
    let mut made: HashSet<usize> = HashSet::new();
    for link in &chain {
        for operand in link.call.operands() {
            if !made.contains(&key(operand)) && input_keys.insert(key(operand)) {
                inputs.push(operand);
            }
        }
        made.extend(link.call.results().map(|r| key(r.into())));
        for j in 0..link.call.result_count() {
            let Ok(result) = link.call.result(j) else { continue };
            let value: Value = result.into();
            let readers = uses(value);
            let outside = readers.is_empty()
                || readers
                    .iter()
                    .any(|(user, _)| !calls.contains(&(user.to_raw().ptr as usize)));
            // Written and read along a dimension with only extents of 1
            // before it (the outermost, in effect), every access in bounds
            // (a clamped access would touch offset 0, outside the block's
            // scratch).
            let written = link.stage.results[j];
            let read_so = chain.iter().all(|reader| {
                reader
                    .call
                    .operands()
                    .enumerate()
                    .filter(|(_, v)| key(*v) == key(value))
                    .all(|(i, _)| reader.stage.arguments.get(i) == Some(&written))
            });
            let along_first = matches!(written, Rows::Along(k) if rows_lead(value, k, rows)) && read_so;
            if !outside && along_first && row_bytes_of(value, rows).is_some() {
                scratch.push(value);
            } else {
                outputs.push(value);
            }
        }
    }
    let row_bytes: usize = scratch.iter().filter_map(|v| row_bytes_of(*v, rows)).sum();
    let fits = match target {
        Target::Cpu => row_bytes <= SCRATCH_BYTES,
        // Shared memory holds the scratch row and the block reductions'
        // trees.
        Target::Gpu { .. } => {
            let trees: usize = chain.iter().map(|l| l.stage.tree_bytes).sum();
            row_bytes <= GPU_SCRATCH_BYTES && row_bytes + trees <= GPU_SHARED_BYTES
        }
    };
    if scratch.is_empty() || row_bytes == 0 || !fits {
        return Ok(None);
    }
    // The inputs more than one stage reads along the rows: a block's rows
    // of them are read from memory once, then again from cache.
    // How each stage reads each input (its first operand of that value).
    let mut reads: HashMap<usize, Vec<Option<Rows>>> = HashMap::new();
    for link in &chain {
        let mut seen: HashSet<usize> = HashSet::new();
        for (i, operand) in link.call.operands().enumerate() {
            if input_keys.contains(&key(operand)) && seen.insert(key(operand)) {
                reads
                    .entry(key(operand))
                    .or_default()
                    .push(link.stage.arguments.get(i).copied());
            }
        }
    }
    let reread_row_bytes: usize = inputs
        .iter()
        .filter(|input| {
            reads.get(&key(**input)).is_some_and(|reads| {
                reads.len() > 1 && reads.iter().all(|r| r.and_then(Rows::dimension).is_some())
            })
        })
        .filter_map(|input| row_bytes_of(*input, rows))
        .sum();
    // A GPU block runs one row.
    let block_rows = match target {
        Target::Cpu => (SCRATCH_BYTES / row_bytes)
            .min(REREAD_BYTES / reread_row_bytes.max(1))
            .clamp(1, rows as usize) as i64,
        Target::Gpu { .. } => 1,
    };

    // The chain function: the stage calls, on its arguments.
    let location = chain[0].call.location();
    let input_types: Vec<Type> = inputs.iter().map(|v| v.r#type()).collect();
    let output_types: Vec<Type> = outputs.iter().map(|v| v.r#type()).collect();
    let calls: Vec<(OperationRef, &str)> = chain.iter().map(|l| (l.call, l.callee.as_str())).collect();
    let region = outlined(context, &calls, &inputs, &outputs, location)?;
    let mut name = format!("{}_rows", chain[0].callee);
    while !taken.insert(name.clone()) {
        name.push('_');
    }
    let stage_names: Vec<Attribute> = chain
        .iter()
        .map(|l| FlatSymbolRefAttribute::new(context, &l.callee).into())
        .collect();
    let i64_type = IntegerType::new(context, 64).into();
    let mut attributes = vec![
        (
            Identifier::new(context, "sym_visibility"),
            StringAttribute::new(context, "private").into(),
        ),
        (Identifier::new(context, "meta.fused"), Attribute::unit(context)),
        (
            Identifier::new(context, "meta.chain"),
            ArrayAttribute::new(context, &stage_names).into(),
        ),
        (
            Identifier::new(context, "meta.domain"),
            DenseI64ArrayAttribute::new(context, &[rows]).into(),
        ),
        (
            Identifier::new(context, "meta.block"),
            IntegerAttribute::new(i64_type, block_rows).into(),
        ),
    ];
    if let Target::Gpu { .. } = target {
        let threads = gpu_block(chain.iter().map(|l| &l.stage))
            .ok_or_else(|| Error::Lowering("a GPU chain whose stages disagree on the block size".into()))?;
        attributes.push((
            Identifier::new(context, GPU_THREADS_ATTRIBUTE),
            IntegerAttribute::new(i64_type, threads).into(),
        ));
    }
    let function = func::func(
        context,
        StringAttribute::new(context, &name),
        TypeAttribute::new(FunctionType::new(context, &input_types, &output_types).into()),
        region,
        &attributes,
        location,
    );
    module.body().append_operation(function);
    let functions = jitc_dialect::ops::functions(module.body());
    for link in &chain {
        splits.insert(link.callee.clone(), link.stage.split);
        if let Some(stage) = functions.get(&link.callee) {
            jitc_dialect::ops::set_attribute(*stage, "meta.stage", Attribute::unit(context));
            if !link.stage.natural {
                let split = IntegerAttribute::new(i64_type, link.stage.split as i64);
                jitc_dialect::ops::set_attribute(*stage, schedule::SPLIT_ATTRIBUTE, split.into());
            }
        }
    }

    // The host calls it in place of the stages.
    let first = chain[0].call;
    let block = first
        .block()
        .ok_or_else(|| Error::Lowering("a call outside a block".into()))?;
    let call = func::call(
        context,
        FlatSymbolRefAttribute::new(context, &name),
        &inputs,
        &output_types,
        location,
    );
    let call = block.insert_operation_before(first, call);
    for (i, output) in outputs.iter().enumerate() {
        let new = call
            .result(i)
            .map_err(|_| Error::Lowering("chain call result".into()))?;
        replace_uses(*output, new.into());
    }
    for link in chain.iter().rev() {
        // Later calls read earlier ones' results, so erasing in reverse
        // leaves no use behind; no handle to them is read again.
        erase(link.call);
    }
    Ok(Some(RowChain {
        name,
        host: host.to_owned(),
        stages: chain.into_iter().map(|l| l.callee).collect(),
        rows,
        block: block_rows,
        scratch_row_bytes: row_bytes,
        reread_row_bytes,
    }))
}

/// Lowers the chains of `module` into `lowered`, where [`super::lower`]
/// lowered their stages: a chain runs the stages; one whose stage was not
/// lowered runs in the interpreter, which calls the stages that were.
pub(crate) fn lower_chains<'c>(
    context: &'c Context,
    module: &Module<'c>,
    lowered: &mut Lowered<'c>,
) -> Result<(), Error> {
    for chain in kernels(module) {
        if !chain.has_attribute("meta.chain") {
            continue;
        }
        match chain_signature(chain, &lowered.signatures) {
            Ok(signature) => {
                lower_chain(context, &lowered.module, chain, &signature)?;
                lowered.no_inline.extend(stages_of(chain));
                lowered.signatures.push(signature);
            }
            Err(reason) => {
                let name = chain.attribute("sym_name").ok().and_then(string_attribute);
                lowered.skipped.push((name.unwrap_or("?").to_owned(), reason));
            }
        }
    }
    Ok(())
}

fn stages_of(chain: OperationRef) -> Vec<String> {
    symbols_in(chain, "meta.chain")
}

/// The symbols `function`'s array attribute `attribute` names, in order
/// (a chain's stages, an epilogue's two kernels).
pub(super) fn symbols_in(function: OperationRef, attribute: &str) -> Vec<String> {
    function
        .attribute(attribute)
        .ok()
        .and_then(jitc_dialect::ops::array_elements)
        .unwrap_or_default()
        .into_iter()
        .filter_map(|a| {
            FlatSymbolRefAttribute::try_from(a)
                .ok()
                .map(|s| s.value().to_owned())
        })
        .collect()
}

/// The rows of `chain` (its `meta.domain`).
pub(super) fn rows_of(chain: OperationRef) -> Option<i64> {
    chain
        .attribute("meta.domain")
        .ok()
        .and_then(i64_array)
        .and_then(|d| d.first().copied())
}

/// The calling convention of a chain: its arguments and results, split
/// across threads along its rows.
pub(super) fn chain_signature(
    chain: OperationRef,
    signatures: &[KernelSignature],
) -> Result<KernelSignature, String> {
    let (name, function_type) = super::name_and_type(chain, "chain")?;
    let buffer = |t: Result<Type, _>| {
        t.ok()
            .and_then(super::buffer_of)
            .ok_or_else(|| format!("@{name} has a dynamic or unsupported type"))
    };
    let rows = rows_of(chain).ok_or("the chain has no rows")?;
    let mut points = 0u64;
    for stage in stages_of(chain) {
        let signature = signatures
            .iter()
            .find(|s| s.name == stage)
            .ok_or_else(|| format!("stage @{stage} of @{name} was not lowered"))?;
        points = points.saturating_add(signature.points);
    }
    Ok(KernelSignature {
        inputs: (0..function_type.input_count())
            .map(|i| buffer(function_type.input(i)))
            .collect::<Result<_, _>>()?,
        outputs: (0..function_type.result_count())
            .map(|i| buffer(function_type.result(i)))
            .collect::<Result<_, _>>()?,
        outer: rows,
        parallel: true,
        points,
        accesses: Vec::new(),
        flat: false,
        sizes: None,
        in_place: None,
        partial: Vec::new(),
        // Stages have no argument of dynamic shape (`stage`).
        exact: Vec::new(),
        name,
    })
}

/// Lowers `chain` to a kernel (`func.func @name(!llvm.ptr, i64, i64)`,
/// as [`super::lower`]'s) that runs the stages one block of rows at a
/// time over its range; the stages are lowered already, by name.
fn lower_chain<'c>(
    context: &'c Context,
    lowered: &Module<'c>,
    chain: OperationRef<'c, '_>,
    signature: &KernelSignature,
) -> Result<(), Error> {
    let fail = |what: &str| Error::Lowering(format!("chain @{}: {what}", signature.name));
    let location = chain.location();
    let pointer = melior::dialect::llvm::r#type::pointer(context, 0);
    let i64_type: Type = IntegerType::new(context, 64).into();
    let i8_type: Type = IntegerType::new(context, 8).into();
    let index = Type::index(context);
    let (region, top) = super::emit::function_body(context, location, &[pointer, i64_type, i64_type], false)?;
    let entry = top.block;
    let argument = |i: usize| -> Result<Value, Error> {
        entry.argument(i).map(Into::into).map_err(|_| fail("arguments"))
    };
    let (buffers, begin, end) = (argument(0)?, argument(1)?, argument(2)?);
    let body = chain
        .region(0)
        .ok()
        .and_then(|r| r.first_block())
        .ok_or_else(|| fail("no body"))?;
    let block_rows = chain
        .attribute("meta.block")
        .ok()
        .and_then(|a| IntegerAttribute::try_from(a).ok())
        .map(|a| a.value())
        .filter(|&b| b > 0)
        .ok_or_else(|| fail("no block size"))?;

    // The chain's own buffers: arguments, results, then the status record.
    let (inputs, outputs) = (signature.inputs.len(), signature.outputs.len());
    let mut slots = Vec::with_capacity(inputs + outputs + 1);
    for slot in 0..inputs + outputs + 1 {
        let address = gep(&top, buffers, top.int(i64_type, slot as i64)?, pointer)?;
        slots.push(top.value("llvm.load", &[address], pointer)?);
    }
    let status = slots[inputs + outputs];
    // Where each value of the body is: a buffer of the chain (its slot),
    // or a scratch buffer (its base and bytes per row).
    enum Place<'c, 'a> {
        Slot(Value<'c, 'a>),
        Scratch(Value<'c, 'a>, i64),
    }
    let mut places: HashMap<usize, Place> = HashMap::new();
    for (i, slot) in slots.iter().enumerate().take(inputs) {
        let value: Value = body.argument(i).map_err(|_| fail("body arguments"))?.into();
        places.insert(key(value), Place::Slot(*slot));
    }
    let terminator = body.terminator().ok_or_else(|| fail("no return"))?;
    for (j, value) in terminator.operands().enumerate() {
        places.insert(key(value), Place::Slot(slots[inputs + j]));
    }
    let calls: Vec<OperationRef> = {
        let mut calls = Vec::new();
        let mut op = body.first_operation();
        while let Some(current) = op {
            op = current.next_in_block();
            if name_of(current) == "func.call" {
                calls.push(current);
            }
        }
        calls
    };
    for call in &calls {
        for result in call.results() {
            let value: Value = result.into();
            if places.contains_key(&key(value)) {
                continue;
            }
            let row = row_bytes_of(value, signature.outer)
                .ok_or_else(|| fail("a scratch value of unknown size"))? as i64;
            let bytes = top.int(i64_type, row.saturating_mul(block_rows))?;
            let alignment = IntegerAttribute::new(i64_type, 64).into();
            let base = top
                .op(
                    "llvm.alloca",
                    &[bytes],
                    &[pointer],
                    &[
                        ("elem_type", TypeAttribute::new(i8_type).into()),
                        ("alignment", alignment),
                    ],
                )?
                .ok_or_else(|| fail("alloca"))?;
            places.insert(key(value), Place::Scratch(base, row));
        }
    }
    // One pointer array per stage, filled per block.
    let mut arrays = Vec::with_capacity(calls.len());
    for call in &calls {
        let count = call.operand_count() + call.result_count() + 1;
        let count = top.int(i64_type, count as i64)?;
        let alignment = IntegerAttribute::new(i64_type, 8).into();
        arrays.push(
            top.op(
                "llvm.alloca",
                &[count],
                &[pointer],
                &[
                    ("elem_type", TypeAttribute::new(pointer).into()),
                    ("alignment", alignment),
                ],
            )?
            .ok_or_else(|| fail("alloca"))?,
        );
    }

    // for (b = begin; b < end; b += block) { e = min(b + block, end); stages }
    let (lower, upper) = (
        top.value("arith.index_cast", &[begin], index)?,
        top.value("arith.index_cast", &[end], index)?,
    );
    let step = top.index(block_rows)?;
    let (inside, row, _, _) = top.for_step(lower, upper, step, &[])?;
    let stop = inside.value("arith.addi", &[row, step], index)?;
    let stop = inside.value("arith.minsi", &[stop, upper], index)?;
    let (first, last) = (
        inside.value("arith.index_cast", &[row], i64_type)?,
        inside.value("arith.index_cast", &[stop], i64_type)?,
    );
    for (call, array) in calls.iter().zip(&arrays) {
        let values: Vec<Value> = call.operands().chain(call.results().map(Into::into)).collect();
        for (k, value) in values.iter().enumerate() {
            let target = match places.get(&key(*value)) {
                Some(Place::Slot(slot)) => *slot,
                Some(Place::Scratch(base, row)) => {
                    // Row `first` of the block is at the scratch's start.
                    let back =
                        inside.value("arith.muli", &[first, inside.int(i64_type, -*row)?], i64_type)?;
                    gep(&inside, *base, back, i8_type)?
                }
                None => return Err(fail("a stage operand with no buffer")),
            };
            let address = gep(&inside, *array, inside.int(i64_type, k as i64)?, pointer)?;
            inside.op("llvm.store", &[target, address], &[], &[])?;
        }
        let address = gep(
            &inside,
            *array,
            inside.int(i64_type, values.len() as i64)?,
            pointer,
        )?;
        inside.op("llvm.store", &[status, address], &[], &[])?;
        let callee = crate::transforms::inline::callee(*call).ok_or_else(|| fail("a call with no callee"))?;
        inside.op(
            "func.call",
            &[*array, first, last],
            &[],
            &[("callee", FlatSymbolRefAttribute::new(context, &callee).into())],
        )?;
    }
    inside.finish()?;
    top.op("func.return", &[], &[], &[])?;
    let function = func::func(
        context,
        StringAttribute::new(context, &signature.name),
        TypeAttribute::new(FunctionType::new(context, &[pointer, i64_type, i64_type], &[]).into()),
        region,
        &[],
        location,
    );
    lowered.body().append_operation(function);
    Ok(())
}
