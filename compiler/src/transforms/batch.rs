//! `meta-batch`: contractions that differ only in a constant offset of one
//! operand become one contraction over a new, outer dimension.
//!
//! An unrolled RNN projects every step's input with the same weight:
//! `x_t W` for `t = 0..T`, each a small contraction (`B x H x I`) that
//! reads `xs[t]` through a reindex whose map holds the constant `t`. Run
//! one by one, each is too small to split across threads or to amortize
//! packing `W`. Batched, they are one `T*B x H x I` contraction before the
//! recurrence, and each step reads its rows of the result (XLA's
//! `DotMerger` does the same for dots that share an operand).
//!
//! ```mlir
//! // before: two members (t = 0 and t = 1)
//! %a0 = "meta.reindex"(%xs) {indices = affine_map<(i, j, k) -> (0, i, k)>} : (tensor<2x4x6xf32>) -> tensor<4x8x6xf32>
//! %w = "meta.reindex"(%w0) {indices = affine_map<(i, j, k) -> (k, j)>} : (tensor<6x8xf32>) -> tensor<4x8x6xf32>
//! %p0 = "meta.binary"(%a0, %w) {kind = "mul"} : (tensor<4x8x6xf32>, tensor<4x8x6xf32>) -> tensor<4x8x6xf32>
//! %r0 = "meta.reindex_reduce"(%p0) {kind = "add", indices = affine_map<(i, j, k) -> (i, j)>} : (tensor<4x8x6xf32>) -> tensor<4x8xf32>
//! %a1 = "meta.reindex"(%xs) {indices = affine_map<(i, j, k) -> (1, i, k)>} : (tensor<2x4x6xf32>) -> tensor<4x8x6xf32>
//! %p1 = "meta.binary"(%a1, %w) {kind = "mul"} : (tensor<4x8x6xf32>, tensor<4x8x6xf32>) -> tensor<4x8x6xf32>
//! %r1 = "meta.reindex_reduce"(%p1) {kind = "add", indices = affine_map<(i, j, k) -> (i, j)>} : (tensor<4x8x6xf32>) -> tensor<4x8xf32>
//! // after
//! %ab = "meta.reindex"(%xs) {indices = affine_map<(s, i, j, k) -> (s, i, k)>} : (tensor<2x4x6xf32>) -> tensor<2x4x8x6xf32>
//! %wb = "meta.reindex"(%w0) {indices = affine_map<(s, i, j, k) -> (k, j)>} : (tensor<6x8xf32>) -> tensor<2x4x8x6xf32>
//! %pb = "meta.binary"(%ab, %wb) {kind = "mul"} : (tensor<2x4x8x6xf32>, tensor<2x4x8x6xf32>) -> tensor<2x4x8x6xf32>
//! %rb = "meta.reindex_reduce"(%pb) {kind = "add", indices = affine_map<(s, i, j, k) -> (s, i, j)>} : (tensor<2x4x8x6xf32>) -> tensor<2x4x8xf32>
//! %c0 = arith.constant 0 : index
//! %r0 = "meta.reindex"(%rb, %c0) {indices = affine_map<(i, j)[s] -> (s, i, j)>} : (tensor<2x4x8xf32>, index) -> tensor<4x8xf32>
//! %c1 = arith.constant 1 : index
//! %r1 = "meta.reindex"(%rb, %c1) {indices = affine_map<(i, j)[s] -> (s, i, j)>} : (tensor<2x4x8xf32>, index) -> tensor<4x8xf32>
//! ```
//!
//! Algorithm:
//! 1. **Members.** Walk everything under the root. A member is a
//!    `meta.reindex_reduce` of kind `add` whose operand is a `meta.binary`
//!    of kind `mul`, used by nothing else, one of whose operands is a
//!    *varying* `meta.reindex` (its map's symbols, if any, are
//!    `arith.constant`s) and the other a *shared* operand. Every type is
//!    static, and the ops carry no attributes beyond their kind, map and
//!    (the varying reindex only) overflow value. A product of two reindexes
//!    is a candidate once for each side.
//! 2. **Keys.** Replace the varying map's symbols by their values and split
//!    each result into its constant term and the rest. Candidates share a
//!    key when they are in one block, their reduces, products and result
//!    types are alike, their shared operands are the same value (or
//!    reindexes of the same value by the same map, as unrolling leaves them
//!    before any CSE), they vary on the same side (a NaN's payload follows
//!    the first operand), and their varying reindexes read the same tensor
//!    with the same overflow value by maps equal but for the constants.
//! 3. **Batches.** Groups of two or more are taken largest first, without
//!    members an earlier batch took. Sorted by their constant vectors, the
//!    members must be an arithmetic progression `c_0 + s * delta` for
//!    `s = 0..n` (`delta` not zero); otherwise the group is left alone.
//! 4. **Rewrite**, before the first member's `meta.binary`: the varying
//!    operand becomes one reindex of the new domain `(s, d...)` whose
//!    results are the members' with `c_0 + s * delta` for the constants;
//!    the shared operand is broadcast along `s` (a reindex of a reindex is
//!    composed); the product and the reduction gain `s` as their outer
//!    dimension, which the reduction keeps. Member `s`'s result is the
//!    reindex of row `s`, by a map whose symbol is `s` (an
//!    `arith.constant`), as `meta-unroll` leaves a step's index: the kernels
//!    that read the rows stay equal, and are compiled once. The members'
//!    ops are erased, and their reindexes when nothing else uses them.
//!
//! Each output element sums its products in the same order as before, so
//! the result is bit-identical in the reference interpreter and under
//! `--math exact`. Operands only move earlier, never past a use, so
//! dominance holds: every member's binary uses the shared value and a
//! reindex of the varying tensor, which are defined before the first one.
//!
//! The compilers run this pass before fusing (in `fuse`, and in
//! `fuse-fast` after `meta-fast-math`); `jitc explain` runs it before
//! planning and says what it batched. The paper's
//! fusion alone (`fuse-jittor`, `--jittor-rules`) does not batch.

use crate::{
    pass::{Options, PassInfo},
    rewrite::{
        Builder, constant_int, defining_op, dims, erase, key, op_key, replace_uses, results_unused, uses,
        with_context,
    },
};
use jitc_dialect::{
    emit_error,
    kinds::{BinaryKind, ReduceKind},
    ops::{BinaryOp, ReindexOp, ReindexReduceOp, tensor_type},
    verify::collect_ops,
};
use melior::{
    Context,
    ir::{
        AffineExpr, AffineMap, OperationRef, Type, Value, ValueLike,
        operation::OperationLike,
        r#type::{RankedTensorType, ShapedTypeLike},
    },
};
use std::collections::{BTreeMap, HashMap, HashSet};

/// The `meta-batch` pass.
pub struct Batch;

impl Batch {
    /// Registry entry.
    pub const INFO: PassInfo = PassInfo {
        argument: "meta-batch",
        name: "Batch",
        summary: "Batch contractions that differ only in a constant offset of one operand into one",
        options: &[],
        source_file: "compiler/src/transforms/batch.rs",
        source: include_str!("batch.rs"),
        run: Self::run,
    };

    /// Runs the pass on everything nested in `root`.
    pub fn run(root: OperationRef, _options: &Options) -> bool {
        match with_context(root, |context| batch(context, root)) {
            Some(_) => true,
            None => {
                emit_error(
                    root.location(),
                    "meta-batch: could not build a batched contraction",
                );
                false
            }
        }
    }
}

/// One contraction that may join a batch.
struct Member<'c, 'a> {
    reduce: OperationRef<'c, 'a>,
    binary: OperationRef<'c, 'a>,
    varying: OperationRef<'c, 'a>,
    /// The binary's operand that varies (0 or 1).
    side: usize,
    /// The varying reindex's result expressions without their constant
    /// terms (`None`: the result is a constant), over the old dimensions.
    terms: Vec<Option<AffineExpr<'c>>>,
    /// The constant terms.
    constants: Vec<i64>,
    /// Where the binary is in the walk (block order within a block).
    order: usize,
}

/// Batches every group under `root`; returns the number of members of
/// each batch it made, in the order it made them.
pub fn batch<'c>(context: &'c Context, root: OperationRef<'c, '_>) -> Option<Vec<usize>> {
    let ops = collect_ops(root);
    let order: HashMap<usize, usize> = ops.iter().enumerate().map(|(i, op)| (op_key(*op), i)).collect();
    // A product of two reindexes may vary in either: each side is a
    // candidate, and the larger batches are taken first.
    let mut groups: BTreeMap<String, Vec<Member>> = BTreeMap::new();
    for op in ops {
        for side in 0..2 {
            if let Some((key, member)) = member(context, op, side, &order) {
                groups.entry(key).or_default().push(member);
            }
        }
    }
    let mut groups: Vec<Vec<Member>> = groups.into_values().filter(|g| g.len() >= 2).collect();
    groups.sort_by_key(|g| std::cmp::Reverse(g.len()));
    let mut taken = HashSet::new();
    let mut batches = Vec::new();
    for mut members in groups {
        members.retain(|m| !taken.contains(&op_key(m.reduce)));
        if members.len() < 2 {
            continue;
        }
        members.sort_by(|a, b| a.constants.cmp(&b.constants));
        let Some((base, delta)) = progression(&members) else {
            continue;
        };
        taken.extend(members.iter().map(|m| op_key(m.reduce)));
        rewrite(context, &members, &base, &delta)?;
        batches.push(members.len());
    }
    Some(batches)
}

/// `op` as a member whose binary's operand `side` varies, with the key of
/// the batch it may join.
fn member<'c, 'a>(
    context: &'c Context,
    op: OperationRef<'c, 'a>,
    side: usize,
    order: &HashMap<usize, usize>,
) -> Option<(String, Member<'c, 'a>)> {
    let reduce = ReindexReduceOp::cast(op)?;
    if reduce.kind()? != ReduceKind::Add
        || !only_attributes(op, &["kind", "indices"])
        || op.operand_count() != 1
    {
        return None;
    }
    let product = reduce.input()?;
    let binary = defining_op(product)?;
    if BinaryOp::cast(binary)?.kind()? != BinaryKind::Mul
        || !only_attributes(binary, &["kind"])
        || uses(product).len() != 1
    {
        return None;
    }
    let operand = binary.operand(side).ok()?;
    let varying = defining_op(operand)?;
    let view = ReindexOp::cast(varying)?;
    let shared = binary.operand(1 - side).ok()?;
    if !only_attributes(varying, &["indices", "overflow_value"]) {
        return None;
    }
    let map = view.indices()?;
    let symbols: Vec<i64> = view
        .index_operands()
        .into_iter()
        .map(constant_int)
        .collect::<Option<_>>()?;
    if symbols.len() != map.symbol_count() {
        return None;
    }
    let result: Value = op.result(0).ok()?.into();
    if ![result, product, operand, view.input()?]
        .into_iter()
        .all(is_static)
    {
        return None;
    }
    let map = substitute(context, map, &symbols);
    let (mut terms, mut constants) = (Vec::new(), Vec::new());
    for p in 0..map.result_count() {
        let (term, constant) = split_constant(map.result(p).ok()?);
        terms.push(term);
        constants.push(constant);
    }
    let group = format!(
        "{:?}|{}|{}|{}|{}|{}|{}|{}|{:?}",
        op.block().map(|b| b.to_raw().ptr),
        op.attribute("indices").ok()?,
        result.r#type(),
        product.r#type(),
        side,
        shared_key(shared)?,
        key(view.input()?),
        varying
            .attribute("overflow_value")
            .map(|a| a.to_string())
            .unwrap_or_default(),
        terms.iter().map(|t| t.map(|t| t.to_string())).collect::<Vec<_>>(),
    );
    let member = Member {
        reduce: op,
        binary,
        varying,
        side,
        terms,
        constants,
        order: *order.get(&op_key(binary))?,
    };
    Some((group, member))
}

/// Whether every attribute of `op` is one of `allowed`.
fn only_attributes(op: OperationRef, allowed: &[&str]) -> bool {
    op.attributes()
        .all(|(name, _)| name.as_string_ref().as_str().is_ok_and(|n| allowed.contains(&n)))
}

/// Whether `value` is a tensor of static shape.
fn is_static(value: Value) -> bool {
    tensor_type(value).is_some_and(|t| dims(t).iter().all(|&d| d >= 0))
}

/// The shared operand's key: the value, or for a reindex without symbols,
/// its input, map and overflow value (equal reindexes are one operand).
fn shared_key(shared: Value) -> Option<String> {
    if let Some(op) = defining_op(shared).filter(|op| composable(*op)) {
        let view = ReindexOp::cast(op)?;
        return Some(format!(
            "reindex {} {} {} {}",
            key(view.input()?),
            op.attribute("indices").ok()?,
            op.attribute("overflow_value")
                .map(|a| a.to_string())
                .unwrap_or_default(),
            shared.r#type()
        ));
    }
    Some(key(shared).to_string())
}

/// Whether `op` is a reindex the broadcast along `s` can be composed with:
/// no symbols or dynamic sizes, no overflow conditions.
fn composable(op: OperationRef) -> bool {
    ReindexOp::cast(op).is_some_and(|view| view.index_operands().is_empty())
        && only_attributes(op, &["indices", "overflow_value"])
}

/// `map` with its symbols replaced by `values`, and no symbols left.
fn substitute<'c>(context: &'c Context, map: AffineMap<'c>, values: &[i64]) -> AffineMap<'c> {
    let mut out = map;
    for (position, value) in values.iter().enumerate() {
        let last = position + 1 == values.len();
        out = out.replace(
            AffineExpr::symbol(context, position),
            AffineExpr::constant(context, *value),
            map.dim_count(),
            if last { 0 } else { map.symbol_count() },
        );
    }
    out
}

/// `expr` as its non-constant part and its constant term.
fn split_constant(expr: AffineExpr) -> (Option<AffineExpr>, i64) {
    if expr.is_constant() {
        (None, expr.constant_value())
    } else if expr.is_add() && expr.rhs().is_constant() {
        (Some(expr.lhs()), expr.rhs().constant_value())
    } else {
        (Some(expr), 0)
    }
}

/// The first constant vector and the step, when the sorted members'
/// constants are `base + s * delta` for `s = 0..n`, `delta` not zero.
fn progression(members: &[Member]) -> Option<(Vec<i64>, Vec<i64>)> {
    let base = members[0].constants.clone();
    let delta: Vec<i64> = members[1]
        .constants
        .iter()
        .zip(&base)
        .map(|(c, b)| c.checked_sub(*b))
        .collect::<Option<_>>()?;
    if delta.iter().all(|&d| d == 0) {
        return None;
    }
    for (s, member) in members.iter().enumerate() {
        let s = i64::try_from(s).ok()?;
        for ((c, b), d) in member.constants.iter().zip(&base).zip(&delta) {
            if b.checked_add(d.checked_mul(s)?)? != *c {
                return None;
            }
        }
    }
    Some((base, delta))
}

/// Replaces `members` (sorted, a progression from `base` by `delta`) by one
/// batched contraction.
fn rewrite<'c, 'a>(
    context: &'c Context,
    members: &[Member<'c, 'a>],
    base: &[i64],
    delta: &[i64],
) -> Option<()> {
    let first = members.iter().min_by_key(|m| m.order)?;
    let builder = Builder::before(context, first.binary)?;
    let n = members.len() as u64;
    let template = &members[0];
    let varying = ReindexOp::cast(template.varying)?;
    let product = template.binary.result(0).ok()?;
    let product_type = tensor_type(product.into())?;
    let domain = product_type.rank();
    let batched_type = |t: RankedTensorType<'c>| -> Type<'c> {
        let mut sizes = vec![n];
        sizes.extend(dims(t).iter().map(|&d| d as u64));
        RankedTensorType::new(&sizes, t.element(), None).into()
    };
    let s = AffineExpr::dim(context, 0);
    let shift = |e: AffineExpr<'c>| e.shift_dims(domain, 1, 0);

    // The varying operand over (s, d...).
    let results: Vec<AffineExpr> = template
        .terms
        .iter()
        .zip(base.iter().zip(delta))
        .map(|(term, (b, d))| {
            let offset = AffineExpr::constant(context, *b) + AffineExpr::constant(context, *d) * s;
            match term {
                Some(term) => shift(*term) + offset,
                None => offset,
            }
        })
        .collect();
    let map = AffineMap::new(context, domain + 1, 0, &results);
    let batched_domain = batched_type(product_type);
    let varying_batched = builder.insert_one(
        ReindexOp::build(
            context,
            builder.location(),
            varying.input()?,
            batched_domain,
            map,
            template.varying.attribute("overflow_value").ok(),
            &[],
        )
        .ok()?,
    )?;

    // The shared operand, broadcast along s.
    let side = template.side;
    let shared = template.binary.operand(1 - side).ok()?;
    let shared_batched = match defining_op(shared).filter(|op| composable(*op)) {
        Some(op) => {
            let view = ReindexOp::cast(op)?;
            let map = view.indices()?;
            let results: Vec<AffineExpr> = (0..map.result_count())
                .map(|p| map.result(p).ok().map(shift))
                .collect::<Option<_>>()?;
            ReindexOp::build(
                context,
                builder.location(),
                view.input()?,
                batched_domain,
                AffineMap::new(context, domain + 1, 0, &results),
                op.attribute("overflow_value").ok(),
                &[],
            )
        }
        None => {
            let results: Vec<AffineExpr> = (1..=domain).map(|d| AffineExpr::dim(context, d)).collect();
            ReindexOp::build(
                context,
                builder.location(),
                shared,
                batched_domain,
                AffineMap::new(context, domain + 1, 0, &results),
                None,
                &[],
            )
        }
    }
    .ok()?;
    let shared_batched = builder.insert_one(shared_batched)?;

    let operands = if side == 0 {
        [varying_batched, shared_batched]
    } else {
        [shared_batched, varying_batched]
    };
    let product_batched = builder.insert_one(
        BinaryOp::build(
            context,
            builder.location(),
            BinaryKind::Mul,
            operands[0],
            operands[1],
            batched_domain,
        )
        .ok()?,
    )?;
    let reduce = ReindexReduceOp::cast(template.reduce)?;
    let reduce_map = reduce.indices()?;
    let mut results = vec![s];
    for p in 0..reduce_map.result_count() {
        results.push(shift(reduce_map.result(p).ok()?));
    }
    let out_type = tensor_type(template.reduce.result(0).ok()?.into())?;
    let reduced = builder.insert_one(
        ReindexReduceOp::build(
            context,
            builder.location(),
            ReduceKind::Add,
            product_batched,
            batched_type(out_type),
            AffineMap::new(context, domain + 1, 0, &results),
            &[],
        )
        .ok()?,
    )?;

    // Member s reads row s of the batched result, the row a symbol, so the
    // kernels that read the rows stay equal (and are compiled once).
    let out_rank = out_type.rank();
    let mut results = vec![AffineExpr::symbol(context, 0)];
    results.extend((0..out_rank).map(|d| AffineExpr::dim(context, d)));
    let row_map = AffineMap::new(context, out_rank, 1, &results);
    for (row, member) in members.iter().enumerate() {
        let here = Builder::before(context, member.reduce)?;
        let row = here.index(row as i64)?;
        let read = here.insert_one(
            ReindexOp::build(
                context,
                here.location(),
                reduced,
                out_type.into(),
                row_map,
                None,
                &[row],
            )
            .ok()?,
        )?;
        replace_uses(member.reduce.result(0).ok()?.into(), read);
    }
    // The members' ops, now unused; then their reindexes (a varying one
    // may be another member's shared one), each once, where nothing else
    // uses them.
    let mut reindexes = Vec::new();
    for member in members {
        reindexes.push(member.varying);
        reindexes.extend(defining_op(member.binary.operand(1 - side).ok()?));
    }
    for member in members {
        erase(member.reduce);
        erase(member.binary);
    }
    let mut seen = HashSet::new();
    for op in reindexes {
        if seen.insert(op_key(op)) && ReindexOp::cast(op).is_some() && results_unused(op) {
            erase(op);
        }
    }
    Some(())
}
