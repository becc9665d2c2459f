//! The loop schedule of a kernel, decided before any IR is built: the loop
//! order, the dimension the runtime splits across threads, where reductions
//! accumulate, and which bounds checks can be dropped.
//!
//! Rules, in order:
//! 1. **Loop order.** Each domain dimension is costed as the innermost
//!    loop: every memory access adds 0 when it does not move with the
//!    dimension (it stays in a register or cache line), 1 when its fastest
//!    index moves by ±1 (contiguous), and 4 when it moves by any other
//!    stride. Element-wise operands and results are indexed by the domain
//!    itself, so they are contiguous in the last domain dimension and
//!    strided in the others. The cheapest dimension (then the longest, then
//!    the later) becomes the innermost loop. Outside it come first the
//!    dimensions every reduction keeps as an output index, then those some
//!    reduction folds, each group in domain order: an output's row then
//!    stays in cache while the folded dimensions stream through it (a
//!    weight gradient's domain lists the batch dimension first, and
//!    folding it outermost would sweep the whole output once per example).
//!    A dimension may only move
//!    if that keeps the order of the dimensions an order-sensitive (float
//!    `add`/`mul`) reduction folds over, so every output still folds its
//!    inputs in the interpreter's row-major order, bit for bit.
//! 2. **Split dimension.** The outermost loop (in the chosen order, longer
//!    than 1) that every reduction keeps as a plain output index: disjoint
//!    ranges of it write disjoint outputs, so the runtime may run them at
//!    once, reductions included. When every dimension is reduced somewhere,
//!    the kernel runs in one piece.
//! 3. **Registers.** When every reduction's output indices are distinct
//!    plain dimensions over their whole extent or the constant 0 into an
//!    extent of 1 (instance norm's `(0, c, 0, 0)`), they all fold over the
//!    same dimensions, and
//!    those are the innermost loops, each output is accumulated in a
//!    register (an `scf.for` iteration argument) and stored once. Otherwise
//!    reductions accumulate in their output buffer, filled with the
//!    identity first.
//! 4. **Bounds checks.** An index whose range over the domain (interval
//!    arithmetic on the affine expression) stays inside its tensor is never
//!    checked. The others are checked, and when they are all affine in the
//!    loop indices, the innermost loop is peeled: the interior range, where
//!    every index is in bounds, is computed at run time from the outer
//!    indices and runs without checks; the edges before and after it run
//!    with them.
//! 5. **Collapse.** Innermost loops that every access walks as one run of
//!    memory (the outer one's stride is the inner one's times its extent,
//!    in every access, the domain's row-major offset included) run as one
//!    loop over the product of their extents, the indices recovered by
//!    division: instance norm's statistics fold each `56 x 56` plane as
//!    one loop of 3,136, which vectorizes with no scalar remainder per
//!    row of 56. Not across the split dimension, the register boundary,
//!    a dynamic size or a peeled loop.
//! 6. **Contractions.** On the CPU, a kernel that is one reduce-add of a
//!    multiply of two affine reindexes (matmul, convolution) does not use
//!    the loop order above: `lower::contract` reads from the maps a
//!    vector dimension (the output's last, along which each operand is
//!    contiguous or constant, or a transposed operand is gathered into a
//!    packed panel) and a row dimension (one along which a contiguous
//!    operand stays put), and runs register tiles of rows by vectors with
//!    the folded dimensions innermost: in domain order under exact math,
//!    so each output still folds its products in row-major order. The
//!    split dimension is still this schedule's.

use jitc_dialect::{
    kinds::{ElementType, ReduceKind},
    ops::{ReindexOp, ReindexReduceOp},
};
use melior::ir::{
    AffineExpr, AffineMap, BlockLike, BlockRef, OperationRef, ValueLike, operation::OperationLike,
};
use std::collections::HashSet;

/// Cost of an access that moves by ±1 element with the innermost loop.
const CONTIGUOUS: i64 = 1;
/// Cost of an access that moves by another stride with it.
const STRIDED: i64 = 4;

/// A value's affine form: one coefficient per domain dimension, plus a
/// constant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Linear {
    /// Coefficient of each domain dimension.
    pub coefficients: Vec<i64>,
    /// The constant term.
    pub constant: i64,
}

/// The affine form of `expr` over `dims` dimensions; `None` for symbols,
/// `floordiv`, `ceildiv`, `mod` and products of two non-constants.
pub fn linear(expr: AffineExpr, dims: usize) -> Option<Linear> {
    if expr.is_dim() {
        let mut coefficients = vec![0; dims];
        *coefficients.get_mut(expr.dim_position())? = 1;
        return Some(Linear {
            coefficients,
            constant: 0,
        });
    }
    if expr.is_constant() {
        return Some(Linear {
            coefficients: vec![0; dims],
            constant: expr.constant_value(),
        });
    }
    if expr.is_add() {
        let (a, b) = (linear(expr.lhs(), dims)?, linear(expr.rhs(), dims)?);
        return Some(Linear {
            coefficients: a
                .coefficients
                .iter()
                .zip(&b.coefficients)
                .map(|(x, y)| x.checked_add(*y))
                .collect::<Option<_>>()?,
            constant: a.constant.checked_add(b.constant)?,
        });
    }
    if expr.is_mul() {
        let (a, b) = (linear(expr.lhs(), dims)?, linear(expr.rhs(), dims)?);
        let (form, factor) = if a.coefficients.iter().all(|&c| c == 0) {
            (b, a.constant)
        } else if b.coefficients.iter().all(|&c| c == 0) {
            (a, b.constant)
        } else {
            return None;
        };
        return Some(Linear {
            coefficients: form
                .coefficients
                .iter()
                .map(|c| c.checked_mul(factor))
                .collect::<Option<_>>()?,
            constant: form.constant.checked_mul(factor)?,
        });
    }
    None
}

/// The smallest and largest value of `expr` over the box `0 <= d_i <
/// extents[i]`; `None` when it depends on a symbol or on a dimension of
/// dynamic size (a negative extent), or overflows.
pub fn range(expr: AffineExpr, extents: &[i64]) -> Option<(i64, i64)> {
    if expr.is_dim() {
        let extent = *extents.get(expr.dim_position())?;
        if extent < 0 {
            return None;
        }
        return Some((0, (extent - 1).max(0)));
    }
    if expr.is_constant() {
        let c = expr.constant_value();
        return Some((c, c));
    }
    if expr.is_symbol() {
        return None;
    }
    let (a, b) = (range(expr.lhs(), extents)?, range(expr.rhs(), extents)?);
    if expr.is_add() {
        return Some((a.0.checked_add(b.0)?, a.1.checked_add(b.1)?));
    }
    if expr.is_mul() {
        let corners = [
            a.0.checked_mul(b.0)?,
            a.0.checked_mul(b.1)?,
            a.1.checked_mul(b.0)?,
            a.1.checked_mul(b.1)?,
        ];
        return Some((*corners.iter().min()?, *corners.iter().max()?));
    }
    // The remaining kinds divide by a constant (the affine dialect requires
    // it); anything else is unknown.
    if b.0 != b.1 || b.0 <= 0 {
        return None;
    }
    let c = b.0;
    if expr.is_floor_div() {
        Some((a.0.div_euclid(c), a.1.div_euclid(c)))
    } else if expr.is_ceil_div() {
        Some((-((-a.0).div_euclid(c)), -((-a.1).div_euclid(c))))
    } else if a.0 >= 0 && a.1 < c {
        Some(a)
    } else {
        Some((0, c - 1))
    }
}

/// How one index of an access is bounds-checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Check {
    /// In bounds everywhere in the domain: never checked.
    Proven,
    /// Checked; in the peeled interior it is known in bounds.
    Affine(Linear),
    /// Checked everywhere.
    Always,
}

/// The bounds checks of one `meta.reindex` read or `meta.reindex_reduce`
/// target: one per index, and whether overflow conditions apply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Checks {
    /// One per result of the map.
    pub indices: Vec<Check>,
    /// The op has `overflow_conditions`, which are always evaluated.
    pub conditions: bool,
    /// The extents the indices must stay below.
    pub shape: Vec<i64>,
}

impl Checks {
    /// Whether nothing at all is checked.
    pub fn none(&self) -> bool {
        !self.conditions && self.indices.iter().all(|c| *c == Check::Proven)
    }
}

/// The checks of the indices `map` gives into `shape` (-1: a size known
/// at run time only). The output index of a `reduction` that is a plain
/// dimension of dynamic size is proven: the runtime runs the kernel only
/// when that size is the domain's ([`super::shapes`]).
fn map_checks(map: AffineMap, shape: &[i64], conditions: bool, domain: &[i64], reduction: bool) -> Checks {
    let indices = shape
        .iter()
        .enumerate()
        .map(|(k, &extent)| {
            let Ok(expr) = map.result(k) else {
                return Check::Always;
            };
            if extent < 0 {
                if reduction && super::shapes::plain_dynamic(map, k, domain).is_some() {
                    return Check::Proven;
                }
                return Check::Always;
            }
            match range(expr, domain) {
                Some((low, high)) if low >= 0 && high < extent => Check::Proven,
                _ => linear(expr, domain.len()).map_or(Check::Always, Check::Affine),
            }
        })
        .collect();
    Checks {
        indices,
        conditions,
        shape: shape.to_vec(),
    }
}

/// The loop schedule of a kernel.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Schedule {
    /// Domain dimensions in loop order, outermost first.
    pub order: Vec<usize>,
    /// The domain dimension whose `[begin, end)` the caller passes.
    pub split: usize,
    /// Whether disjoint parts of `split` may run at once.
    pub parallel: bool,
    /// How many innermost loops reductions accumulate over in registers (0:
    /// they accumulate in their output buffers).
    pub registers: usize,
    /// Bounds checks per `meta.reindex`/`meta.reindex_reduce`, in op
    /// order, keyed by [`op_key`].
    pub checks: Vec<(usize, Checks)>,
    /// Whether the innermost loop is peeled into edges and a check-free
    /// interior.
    pub peel: bool,
    /// Dimensions every reduction keeps as a plain output index: points
    /// that differ in one of them never write the same element. All
    /// dimensions when there is no reduction.
    pub independent: Vec<usize>,
    /// When every reduction is a projection folding the same dimensions,
    /// those dimensions (the register condition, loop order aside).
    pub folded: Option<Vec<usize>>,
    /// How many innermost loops run as one loop over the product of their
    /// extents (rule 5; 1: none are merged).
    pub collapse: usize,
}

impl Schedule {
    /// The checks of `op`.
    pub fn checks_of(&self, op: OperationRef) -> Option<&Checks> {
        let key = op_key(op);
        self.checks.iter().find(|(k, _)| *k == key).map(|(_, c)| c)
    }
}

/// The key of an op in [`Schedule::checks`].
pub fn op_key(op: OperationRef) -> usize {
    op.to_raw().ptr as usize
}

struct Reduction {
    /// Per output index, the domain dimension it is, when it is a plain one.
    plain: Vec<Option<usize>>,
    /// Per output index, its value, when it is a constant.
    fixed: Vec<Option<i64>>,
    kind: ReduceKind,
    element: ElementType,
    shape: Vec<i64>,
    conditions: bool,
}

impl Reduction {
    /// Dimensions whose order decides the order of the fold.
    fn folded(&self, dims: usize) -> Vec<usize> {
        (0..dims).filter(|d| !self.plain.contains(&Some(*d))).collect()
    }

    fn order_sensitive(&self) -> bool {
        self.element.is_float() && matches!(self.kind, ReduceKind::Add | ReduceKind::Mul)
    }

    /// Whether every output index is a distinct plain dimension over the
    /// whole extent, or the constant 0 into an extent of 1 (instance
    /// norm's `(0, c, 0, 0)`): each output element is then folded by the
    /// points its plain dimensions name, and every element is written.
    fn projection(&self, domain: &[i64]) -> bool {
        let dims: HashSet<usize> = self.plain.iter().flatten().copied().collect();
        !self.conditions
            && dims.len() == self.plain.iter().flatten().count()
            && self
                .plain
                .iter()
                .zip(&self.fixed)
                .zip(&self.shape)
                .all(|((d, c), &extent)| match (d, c) {
                    (Some(d), _) => domain[*d] == extent,
                    // Into an extent of 1: the constant names every element
                    // of that dimension (a larger extent has elements no
                    // point writes, which must hold the identity).
                    (None, Some(c)) => extent == 1 && *c == 0,
                    (None, None) => false,
                })
    }
}

/// The shape of `value`'s type, -1 for a dynamic size.
fn shape_of(value: melior::ir::Value) -> Option<Vec<i64>> {
    let (shape, _) = super::types::dynamic_shape(value.r#type())?;
    Some(shape.into_iter().map(|d| d.map_or(-1, |n| n as i64)).collect())
}

/// The attribute by which a row chain names the split dimension of one of
/// its stages, when it is not the one [`schedule`] would choose (instance
/// norm's element-wise stage splits along the channels the statistics
/// keep, not along the batch). A dimension that cannot be split is
/// ignored.
pub const SPLIT_ATTRIBUTE: &str = "meta.split";

/// The split dimension the kernel of `body` was given, if any.
fn chosen_split(body: BlockRef) -> Option<usize> {
    let kernel = body.parent_operation()?;
    let attribute = kernel.attribute(SPLIT_ATTRIBUTE).ok()?;
    let value = melior::ir::attribute::IntegerAttribute::try_from(attribute)
        .ok()?
        .value();
    usize::try_from(value).ok()
}

/// The schedule of the kernel whose body is `body`, over `domain`.
pub fn schedule(body: BlockRef, domain: &[i64]) -> Result<Schedule, String> {
    let dims = domain.len();
    let arguments: HashSet<usize> = (0..body.argument_count())
        .filter_map(|i| body.argument(i).ok())
        .map(|a| a.to_raw().ptr as usize)
        .collect();
    let is_argument = |v: melior::ir::Value| arguments.contains(&(v.to_raw().ptr as usize));
    let mut cost = vec![0i64; dims];
    let add_access = |map: AffineMap, cost: &mut Vec<i64>| {
        let rank = map.result_count();
        for (d, cost) in cost.iter_mut().enumerate() {
            let mut moves = false;
            let mut contiguous = false;
            for k in 0..rank {
                let Ok(expr) = map.result(k) else { continue };
                if expr.is_function_of_dim(d) {
                    moves = true;
                    if k + 1 == rank {
                        contiguous = linear(expr, dims).is_some_and(|l| l.coefficients[d].abs() == 1)
                            && (0..k).all(|j| map.result(j).is_ok_and(|e| !e.is_function_of_dim(d)));
                    }
                }
            }
            *cost += match (moves, contiguous) {
                (false, _) => 0,
                (true, true) => CONTIGUOUS,
                (true, false) => STRIDED,
            };
        }
    };
    let mut reductions = Vec::new();
    let mut checks = Vec::new();
    // Each access's element offset as coefficients of the domain
    // dimensions (rule 5); the domain's own row-major offset first, for
    // element-wise operands and results.
    let mut flat: Vec<Option<Vec<i64>>> = vec![strides(domain)];
    let mut domain_accesses = 0i64;
    let mut reduced_values = HashSet::new();
    let mut op = body.first_operation();
    let mut terminator = None;
    while let Some(current) = op {
        op = current.next_in_block();
        if let Some(reindex) = ReindexOp::cast(current) {
            let map = reindex.indices().ok_or("a reindex without a map")?;
            // A dynamic size (-1) is read at run time, and every index
            // into it is checked.
            let shape = reindex
                .input()
                .and_then(|input| super::types::dynamic_shape(input.r#type()))
                .map(|(shape, _)| {
                    shape
                        .iter()
                        .map(|d| d.map_or(-1, |n| n as i64))
                        .collect::<Vec<i64>>()
                })
                .ok_or("a reindex of an unsupported tensor")?;
            add_access(map, &mut cost);
            flat.push(flat_access(map, &shape, dims));
            let conditions = reindex.overflow_conditions().is_some();
            checks.push((
                op_key(current),
                map_checks(map, &shape, conditions, domain, false),
            ));
            continue;
        }
        if let Some(reduce) = ReindexReduceOp::cast(current) {
            let map = reduce.indices().ok_or("a reduction without a map")?;
            let result = reduce.result().ok_or("a reduction without a result")?;
            let shape = shape_of(result).ok_or("a reduction to an unsupported tensor")?;
            let element = crate::lower::element_of(result).ok_or("a reduction of an unsupported type")?;
            let conditions = reduce.overflow_conditions().is_some();
            if reduce.input().is_some_and(is_argument) {
                domain_accesses += 1;
            }
            reduced_values.insert(result.to_raw().ptr as usize);
            add_access(map, &mut cost);
            flat.push(flat_access(map, &shape, dims));
            checks.push((op_key(current), map_checks(map, &shape, conditions, domain, true)));
            reductions.push(Reduction {
                plain: (0..map.result_count())
                    .map(|k| {
                        map.result(k)
                            .ok()
                            .filter(|e| e.is_dim())
                            .map(|e| e.dim_position())
                    })
                    .collect(),
                fixed: (0..map.result_count())
                    .map(|k| {
                        map.result(k)
                            .ok()
                            .filter(|e| e.is_constant())
                            .map(|e| e.constant_value())
                    })
                    .collect(),
                kind: reduce.kind().ok_or("an unknown reduction")?,
                element,
                shape,
                conditions,
            });
            continue;
        }
        if current.name().as_string_ref().as_str() == Ok("func.return") {
            terminator = Some(current);
            continue;
        }
        domain_accesses += current.operands().filter(|v| is_argument(*v)).count() as i64;
    }
    if let Some(terminator) = terminator {
        domain_accesses += terminator
            .operands()
            .filter(|v| !reduced_values.contains(&(v.to_raw().ptr as usize)))
            .count() as i64;
    }
    if dims == 0 {
        return Ok(Schedule {
            order: Vec::new(),
            split: 0,
            parallel: false,
            registers: 0,
            checks,
            peel: false,
            independent: Vec::new(),
            folded: None,
            collapse: 1,
        });
    }
    for (d, cost) in cost.iter_mut().enumerate() {
        *cost += domain_accesses * if d + 1 == dims { CONTIGUOUS } else { STRIDED };
    }

    // 1. Loop order.
    let sensitive: Vec<Vec<usize>> = reductions
        .iter()
        .filter(|r| r.order_sensitive())
        .map(|r| r.folded(dims))
        .collect();
    let may_move_last = |d: usize| {
        sensitive
            .iter()
            .all(|folded| !folded.contains(&d) || folded.iter().all(|&f| f <= d))
    };
    // A dimension of dynamic size counts as long.
    let size = |d: usize| if domain[d] < 0 { i64::MAX } else { domain[d] };
    let innermost = (0..dims)
        .filter(|&d| may_move_last(d) && size(d) > 1)
        .min_by_key(|&d| (cost[d], -size(d), std::cmp::Reverse(d)))
        .unwrap_or(dims - 1);
    // Outside it: the dimensions every reduction keeps as an output index,
    // then those some reduction folds, each in domain order, so an
    // output's row stays in cache while its inputs are folded into it (and
    // folded dimensions keep their relative order: the fold order).
    let safe = |d: usize| reductions.iter().all(|r| r.plain.contains(&Some(d)));
    let mut order: Vec<usize> = (0..dims).filter(|&d| d != innermost && safe(d)).collect();
    order.extend((0..dims).filter(|&d| d != innermost && !safe(d)));
    order.push(innermost);

    // 2. Split dimension: the first one every reduction keeps, or the
    // one a row chain chose (`meta.split`, see `rows`), moved outermost.
    let chosen = chosen_split(body).filter(|&d| d < dims && d != innermost && size(d) > 1 && safe(d));
    if let Some(d) = chosen {
        order.retain(|&o| o != d);
        order.insert(0, d);
    }
    let (split, parallel) = match chosen.or_else(|| order.iter().copied().find(|&d| size(d) > 1 && safe(d))) {
        Some(d) => (d, true),
        None => (order[0], false),
    };

    // 3. Registers.
    let mut registers = 0;
    let mut alike = None;
    if let Some(first) = reductions.first() {
        let folded = first.folded(dims);
        let all_alike = reductions
            .iter()
            .all(|r| r.projection(domain) && r.folded(dims) == folded);
        let suffix: HashSet<usize> = order[dims - folded.len()..].iter().copied().collect();
        if all_alike && !folded.is_empty() && folded.iter().all(|d| suffix.contains(d)) {
            registers = folded.len();
        }
        if all_alike && !folded.is_empty() {
            alike = Some(folded);
        }
    }
    let peel = peeled(&checks, innermost);

    // 5. Collapse.
    let mut collapse = 1;
    if !peel {
        while collapse < dims {
            let (outer, inner) = (order[dims - collapse - 1], order[dims - collapse]);
            let merges = outer != split
                && inner != split
                && (registers == 0 || collapse < registers)
                && domain[outer] > 0
                && domain[inner] > 0
                && flat.iter().all(|access| {
                    access
                        .as_ref()
                        .is_some_and(|c| Some(c[outer]) == c[inner].checked_mul(domain[inner]))
                });
            if !merges {
                break;
            }
            collapse += 1;
        }
    }
    Ok(Schedule {
        order,
        split,
        parallel,
        registers,
        peel,
        independent: (0..dims).filter(|&d| safe(d)).collect(),
        folded: alike,
        checks,
        collapse,
    })
}

/// The kinds of the reductions of a kernel that is not parallel but may
/// run in parts ([`super::KernelSignature::partial`]); empty when it may
/// not. Every result must be a reduction whose accumulators a call starts
/// from the identity (in memory, filled whole at each call, or in
/// registers around every loop), of a static domain, and reassociating it
/// must be allowed: `reassociate`, or a kind whose order cannot change the
/// result.
pub fn partial(body: BlockRef, domain: &[i64], reassociate: bool) -> Vec<ReduceKind> {
    if domain.iter().any(|&d| d < 0) {
        return Vec::new();
    }
    let Ok(plan) = schedule(body, domain) else {
        return Vec::new();
    };
    if plan.parallel || (plan.registers != 0 && plan.registers != domain.len()) {
        return Vec::new();
    }
    let Some(terminator) = body.terminator() else {
        return Vec::new();
    };
    let mut kinds = Vec::new();
    for value in terminator.operands() {
        let Some(reduce) = crate::rewrite::defining_op(value).and_then(ReindexReduceOp::cast) else {
            return Vec::new();
        };
        let (Some(kind), Some(element)) = (reduce.kind(), crate::lower::element_of(value)) else {
            return Vec::new();
        };
        let sensitive = element.is_float() && matches!(kind, ReduceKind::Add | ReduceKind::Mul);
        if sensitive && !reassociate {
            return Vec::new();
        }
        kinds.push(kind);
    }
    kinds
}

/// Row-major strides of `shape`, in elements; `None` when a size is
/// dynamic (negative) or the strides overflow.
pub(super) fn strides(shape: &[i64]) -> Option<Vec<i64>> {
    let mut strides = vec![0; shape.len()];
    let mut stride = 1i64;
    for (k, &extent) in shape.iter().enumerate().rev() {
        if extent < 0 {
            return None;
        }
        strides[k] = stride;
        stride = stride.checked_mul(extent)?;
    }
    Some(strides)
}

/// The element offset of an access through `map` into a tensor of
/// `shape`, as one coefficient per domain dimension; `None` when an
/// index is not affine in the dimensions alone or a size is dynamic.
pub(super) fn flat_access(map: AffineMap, shape: &[i64], dims: usize) -> Option<Vec<i64>> {
    let strides = strides(shape)?;
    let mut total = vec![0i64; dims];
    for (k, stride) in strides.iter().enumerate() {
        let form = linear(map.result(k).ok()?, dims)?;
        for (sum, c) in total.iter_mut().zip(&form.coefficients) {
            *sum = sum.checked_add(c.checked_mul(*stride)?)?;
        }
    }
    Some(total)
}

/// Rule 4, peeling: every checked index is affine, no overflow
/// conditions, and some check moves with the `innermost` loop.
fn peeled(checks: &[(usize, Checks)], innermost: usize) -> bool {
    let relevant = checks.iter().map(|(_, c)| c).filter(|c| !c.none());
    let mut peel = false;
    let mut peelable = true;
    for c in relevant {
        if c.conditions {
            peelable = false;
        }
        for check in &c.indices {
            match check {
                Check::Always => peelable = false,
                Check::Affine(l) if l.coefficients[innermost] != 0 => peel = true,
                _ => {}
            }
        }
    }
    peel && peelable
}

/// Threads per block for kernels with one thread per point.
pub const GPU_BLOCK: i64 = 256;

/// Points each thread of an element-wise kernel takes when there are
/// enough of them ([`GPU_COARSEN_POINTS`]): consecutive points, so that
/// each thread has four loads in flight per input (which the load-store
/// vectorizer turns into one 16-byte load for contiguous f32 accesses).
/// One 4-byte load per thread leaves too few bytes in flight to cover the
/// memory latency of an H100: a sigmoid over 16.8M floats (one load, one
/// store per thread) ran at 2.2 TB/s where an add (two loads) reached the
/// copy bandwidth, 2.9 TB/s.
pub const GPU_POINTS_PER_THREAD: i64 = 4;

/// The fewest points for which element-wise kernels take
/// [`GPU_POINTS_PER_THREAD`] points per thread: 2^20 points still make
/// 262,144 threads, enough to fill an H100 (132 SMs × 2,048).
pub const GPU_COARSEN_POINTS: i64 = 1 << 20;

/// Below this many outputs a block-reduction kernel is chosen even when
/// one thread per output would read contiguously (a GPU needs tens of
/// thousands of threads in flight).
pub const GPU_FEW_OUTPUTS: i64 = 4096;

/// Blocks a GPU should have in flight: a block reduction with fewer
/// outputs than this is split across several blocks per output (rule 6),
/// about this many in all (eight 256-thread blocks on each of an H100's
/// 132 SMs).
pub const GPU_TARGET_BLOCKS: i64 = 1024;

/// The fewest block-stride steps each block of a split reduction takes,
/// so that the combine across blocks stays a small share of the work.
pub const GPU_SPLIT_MIN_STEPS: i64 = 8;

/// Bytes of a split reduction's slot for one partial result (any element
/// type fits).
pub const SPLIT_SLOT_BYTES: i64 = 8;

/// Bytes of a split reduction's counters at the start of its scratch
/// memory: an i32 per point, rounded up to 16 so the slots after them
/// stay aligned. The slots of reduction `r` follow at
/// `split_counter_bytes(points) + r * points * split * SPLIT_SLOT_BYTES`.
pub fn split_counter_bytes(points: i64) -> i64 {
    (points * 4 + 15) / 16 * 16
}

/// How a GPU kernel spreads its domain over threads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GpuStrategy {
    /// One thread per point of the `threads` dimensions; each thread loops
    /// over the rest (the CPU's loop nest below them).
    Threads,
    /// One block of `block` threads per point of the `threads` dimensions:
    /// the threads stride over the folded dimensions, accumulate in
    /// registers and combine in a shared-memory tree.
    Blocks {
        /// Threads per block, a power of two from 32 to 256.
        block: i64,
    },
    /// A contraction as shared-memory tiles (`contract::gpu_tiles`): a block
    /// of 256 threads per tile of the output.
    Tiles,
}

/// The GPU schedule of a kernel: the CPU schedule with the loop order
/// changed so the thread-mapped dimensions come first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GpuSchedule {
    /// The loop nest under the thread mapping: `order` starts with
    /// `threads`; `registers` and `peel` are decided for this order.
    pub nest: Schedule,
    /// Dimensions mapped to threads (or blocks), outermost first; the last
    /// one varies fastest between neighbouring threads.
    pub threads: Vec<usize>,
    /// The mapping.
    pub strategy: GpuStrategy,
    /// Points of the `threads` dimensions.
    pub points: i64,
    /// Consecutive points each thread takes ([`GpuStrategy::Threads`]
    /// only): 1, or [`GPU_POINTS_PER_THREAD`] (rule 5), which then divides
    /// the extent of the last of `threads`. Threads (or blocks) launched:
    /// `points / per_thread`.
    pub per_thread: i64,
    /// Whether reductions accumulate in memory, so their outputs must be
    /// filled with the identity by a launch before the kernel's.
    pub fill: bool,
    /// Blocks per point of a block reduction (rule 6): 1, or a divisor of
    /// the block-stride steps; then `split` blocks share each output.
    pub split: i64,
    /// Bytes of zeroed device memory the kernel takes as a parameter after
    /// its status record when `split` > 1: a counter (i32) per point, then, per
    /// reduction, an 8-byte slot per point and block for the partial
    /// results. The kernel leaves the counters zero again.
    pub scratch: i64,
}

/// The GPU schedule of the kernel whose body is `body`, over `domain`;
/// `reassociate` allows reductions to be folded in another order (block
/// reductions).
///
/// Rules:
/// 1. **Threads.** The dimensions every reduction keeps as a plain output
///    index are mapped to threads, in the CPU loop order, so the CPU's
///    innermost (most contiguous) dimension, when it is one of them, is the
///    one neighbouring threads differ in: accesses along it coalesce. The
///    other dimensions stay loops inside the thread, in the CPU order, so
///    order-sensitive reductions fold in the interpreter's order.
/// 2. **Registers** when every reduction is a projection folding the same
///    dimensions (those are then exactly the loops inside the thread);
///    otherwise reductions accumulate in memory after a fill launch.
/// 3. **Block reduction** when reductions accumulate in registers,
///    reassociation is allowed, the folded extent is at least 32, and
///    either the CPU's innermost dimension is folded (one thread per output
///    would read with a stride) or there are fewer than
///    [`GPU_FEW_OUTPUTS`] outputs.
/// 4. **Peeling** as on the CPU, for the innermost loop inside a thread;
///    a dimension mapped to threads has no loop, so its checks stay.
/// 5. **Coarsening.** A kernel with one thread per point and no loop inside
///    the thread gives each thread [`GPU_POINTS_PER_THREAD`] consecutive
///    points when it has at least [`GPU_COARSEN_POINTS`] points and the
///    fastest thread dimension's extent is a multiple of that number: a
///    thread's points then differ only in that dimension, by 0 to 3, so
///    one delinearization serves all four (and no thread has a partial
///    set).
/// 6. **Split block reductions.** A block reduction with fewer than
///    [`GPU_TARGET_BLOCKS`] outputs, whose folded extent the block size
///    divides, gives each output `split` blocks, the largest divisor of
///    the block-stride steps that keeps about [`GPU_TARGET_BLOCKS`] blocks
///    in all and at least [`GPU_SPLIT_MIN_STEPS`] steps per block. Each
///    block reduces a contiguous share of the fold and writes its partial
///    result to scratch memory; the last block of an output to finish (an
///    atomic counter) combines the partials in block order, so the result
///    does not depend on which block finished when.
pub fn gpu(body: BlockRef, domain: &[i64], reassociate: bool) -> Result<GpuSchedule, String> {
    let cpu = schedule(body, domain)?;
    let threads: Vec<usize> = cpu
        .order
        .iter()
        .copied()
        .filter(|d| cpu.independent.contains(d))
        .collect();
    let inner: Vec<usize> = cpu
        .order
        .iter()
        .copied()
        .filter(|d| !cpu.independent.contains(d))
        .collect();
    let points: i64 = threads.iter().map(|&d| domain[d]).product();
    let registers = match &cpu.folded {
        Some(folded) if folded.len() == inner.len() => folded.len(),
        _ => 0,
    };
    let reduces = reductions_in(body) > 0;
    let folded_extent: i64 = inner.iter().map(|&d| domain[d]).product();
    let strided = cpu.order.last().is_some_and(|d| inner.contains(d));
    let strategy =
        if registers > 0 && reassociate && folded_extent >= 32 && (strided || points < GPU_FEW_OUTPUTS) {
            GpuStrategy::Blocks {
                block: (folded_extent as u64).next_power_of_two().clamp(32, 256) as i64,
            }
        } else {
            GpuStrategy::Threads
        };
    let split = match strategy {
        GpuStrategy::Blocks { block } if points < GPU_TARGET_BLOCKS && folded_extent % block == 0 => {
            let steps = folded_extent / block;
            let wanted = (GPU_TARGET_BLOCKS / points.max(1)).max(1);
            (1..=wanted.min(steps / GPU_SPLIT_MIN_STEPS))
                .rev()
                .find(|d| steps % d == 0)
                .unwrap_or(1)
        }
        _ => 1,
    };
    let scratch = if split > 1 {
        split_counter_bytes(points) + reductions_in(body) * points * split * SPLIT_SLOT_BYTES
    } else {
        0
    };
    let mut order = threads.clone();
    order.extend(&inner);
    let peel = match inner.last() {
        Some(&d) if strategy == GpuStrategy::Threads => peeled(&cpu.checks, d),
        _ => false,
    };
    let per_thread = if strategy == GpuStrategy::Threads
        && inner.is_empty()
        && points >= GPU_COARSEN_POINTS
        && threads
            .last()
            .is_some_and(|&d| domain[d] % GPU_POINTS_PER_THREAD == 0)
    {
        GPU_POINTS_PER_THREAD
    } else {
        1
    };
    Ok(GpuSchedule {
        nest: Schedule {
            order,
            split: 0,
            parallel: false,
            registers,
            peel,
            collapse: 1,
            ..cpu
        },
        threads,
        strategy,
        points,
        per_thread,
        fill: reduces && registers == 0,
        split,
        scratch,
    })
}

/// How many `meta.reindex_reduce` ops `body` holds.
pub(super) fn reductions_in(body: BlockRef) -> i64 {
    let mut count = 0;
    let mut op = body.first_operation();
    while let Some(current) = op {
        if ReindexReduceOp::cast(current).is_some() {
            count += 1;
        }
        op = current.next_in_block();
    }
    count
}
