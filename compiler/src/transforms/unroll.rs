//! `meta-unroll`: fully unrolls the loops `meta-specialize` marked with
//! `meta.unroll = n`, under a guard on the trip count.
//!
//! Once a loop is a straight line, ops of different iterations sit in one
//! block and `meta-fuse` can merge them: Jittor's cross-iteration fusion.
//!
//! ```mlir
//! // before: %n was always 3
//! %h = scf.for %t = %c0 to %n step %c1 iter_args(%a = %h0) -> (tensor<4xf32>) {
//!   %b = "meta.unary"(%a) {kind = "tanh"} : (tensor<4xf32>) -> tensor<4xf32>
//!   scf.yield %b : tensor<4xf32>
//! } {meta.unroll = 3 : i64}
//! // after
//! "meta.guard"(%ok) {id = 1 : i64, reason = "trip count of the loop at 3:8 == 3", site = "3:8"} : (tensor<i1>) -> ()
//! %b0 = "meta.unary"(%h0) {kind = "tanh"} ...
//! %b1 = "meta.unary"(%b0) {kind = "tanh"} ...
//! %b2 = "meta.unary"(%b1) {kind = "tanh"} ...
//! ```
//!
//! Algorithm, inner loops first:
//! 1. a marked loop whose body has more than `max-ops` ops times its trip
//!    count keeps its loop (and loses the mark);
//! 2. `scf.for`: the trip count `max(ceildiv(ub - lb, step), 0)` is guarded
//!    to equal `n` (no guard when the bounds are constants that give `n`);
//!    the body is then cloned `n` times, iteration `i` seeing
//!    `lb + i * step` for the induction variable and the previous
//!    iteration's yielded values for its iteration arguments;
//! 3. `scf.while`: the `before` region is cloned `n + 1` times and the
//!    `after` region `n` times; the first `n` conditions are guarded true
//!    and the last one false, all with the same trip-count reason;
//! 4. the loop's results are replaced by the last values and the loop is
//!    erased. Guards cloned from the body get fresh ids.

use crate::rewrite::{remove_attribute, with_context};
use crate::{
    pass::{OptionKind, Options, PassInfo, PassOption},
    rewrite::{
        self, Builder, GuardIds, Mapping, body_ops, clone_before, constant_int, key, mapped, pinned_site,
        replace_uses,
    },
};
use jitc_dialect::{
    emit_error,
    profile::site_id,
    verify::{collect_ops, enclosing_function, op_name},
};
use melior::{
    Context,
    ir::{
        BlockLike, OperationRef, RegionLike, Value, ValueLike, attribute::IntegerAttribute,
        operation::OperationLike, r#type::IntegerType,
    },
};

/// The default of `max-ops` (the text default of the pass option below).
pub const MAX_OPS: u64 = 4096;

/// The `meta-unroll` pass.
pub struct Unroll;

impl Unroll {
    /// Registry entry.
    pub const INFO: PassInfo = PassInfo {
        argument: "meta-unroll",
        name: "Unroll",
        summary: "Fully unroll loops marked meta.unroll, guarded on the trip count",
        options: &[PassOption {
            name: "max-ops",
            description: "largest unrolled size (body ops times trip count) to accept",
            default: "4096",
            kind: OptionKind::WholeNumber,
        }],
        source_file: "compiler/src/transforms/unroll.rs",
        source: include_str!("unroll.rs"),
        run: Self::run,
    };

    /// Runs the pass on everything nested in `root`.
    pub fn run(root: OperationRef, options: &Options) -> bool {
        let limit = options.get("max-ops").unwrap_or("4096");
        let Ok(max_ops) = limit.parse::<u64>() else {
            emit_error(
                root.location(),
                &format!("meta-unroll: max-ops must be a whole number, got '{limit}'"),
            );
            return false;
        };
        match with_context(root, |context| unroll(context, root, max_ops)) {
            Ok(_) => true,
            Err(message) => {
                emit_error(root.location(), &format!("meta-unroll: {message}"));
                false
            }
        }
    }
}

/// Unrolls every marked loop under `root`; returns how many were unrolled.
pub fn unroll(context: &Context, root: OperationRef, max_ops: u64) -> Result<usize, String> {
    let mut unrolled = 0;
    let ops = collect_ops(root);
    // Each op follows its parent in pre-order: reversed, inner loops come
    // first.
    for &op in ops.iter().rev() {
        let kind = op_name(op);
        if !matches!(kind.as_str(), "scf.for" | "scf.while") {
            continue;
        }
        let Some(trips) = op
            .attribute("meta.unroll")
            .ok()
            .and_then(|a| IntegerAttribute::try_from(a).ok())
            .map(|a| a.value())
        else {
            continue;
        };
        let body_size = collect_ops(op).len().saturating_sub(1) as u64;
        if trips < 0 || body_size.saturating_mul(trips as u64) > max_ops {
            remove_attribute(op, "meta.unroll");
            continue;
        }
        let site = pinned_site(op).map(str::to_owned).unwrap_or_else(|| site_id(op));
        let Some(function) = enclosing_function(op) else {
            continue;
        };
        let mut ids = GuardIds::of(function);
        let done = if kind == "scf.for" {
            unroll_for(context, op, trips, &site, &mut ids)
        } else {
            unroll_while(context, op, trips, &site, &mut ids)
        };
        done.ok_or_else(|| format!("could not unroll the loop at {site}"))?;
        unrolled += 1;
    }
    Ok(unrolled)
}

fn reason(site: &str, trips: i64) -> String {
    format!("trip count of the loop at {site} == {trips}")
}

fn unroll_for(context: &Context, op: OperationRef, trips: i64, site: &str, ids: &mut GuardIds) -> Option<()> {
    let builder = Builder::before(context, op)?;
    let (lower, upper, step): (Value, Value, Value) =
        (op.operand(0).ok()?, op.operand(1).ok()?, op.operand(2).ok()?);
    let constant_trips = match (constant_int(lower), constant_int(upper), constant_int(step)) {
        (Some(l), Some(u), Some(s)) if s > 0 => Some(((u - l).max(0) + s - 1) / s),
        _ => None,
    };
    if constant_trips != Some(trips) {
        let span = builder.arith("arith.subi", upper, lower)?;
        let count = builder.arith("arith.ceildivsi", span, step)?;
        let zero = builder.index(0)?;
        let count = builder.arith("arith.maxsi", count, zero)?;
        let expected = builder.index(trips)?;
        let ok = builder.compare("arith.cmpi", 0, count, expected)?;
        builder.guard(ok, ids, &reason(site, trips), site)?;
    }
    let body = op.region(0).ok()?.first_block()?;
    let ops = body_ops(body);
    let yield_op = body.terminator()?;
    let mut carried: Vec<Value> = (3..op.operand_count())
        .map(|i| op.operand(i))
        .collect::<Result<_, _>>()
        .ok()?;
    for i in 0..trips {
        let iv = match (constant_int(lower), constant_int(step)) {
            (Some(l), Some(s)) => builder.index(l + i * s)?,
            _ => {
                let times = builder.index(i)?;
                let offset = builder.arith("arith.muli", step, times)?;
                builder.arith("arith.addi", lower, offset)?
            }
        };
        let mut mapping = Mapping::new();
        mapping.insert(key(body.argument(0).ok()?.into()), iv.to_raw());
        for (j, value) in carried.iter().enumerate() {
            mapping.insert(key(body.argument(j + 1).ok()?.into()), value.to_raw());
        }
        clone_before(context, &ops, op, &mut mapping, ids)?;
        carried = yield_op.operands().map(|v| mapped(&mapping, v)).collect();
    }
    finish(op, &carried)
}

fn unroll_while(
    context: &Context,
    op: OperationRef,
    trips: i64,
    site: &str,
    ids: &mut GuardIds,
) -> Option<()> {
    let builder = Builder::before(context, op)?;
    let before = op.region(0).ok()?.first_block()?;
    let after = op.region(1).ok()?.first_block()?;
    let (before_ops, after_ops) = (body_ops(before), body_ops(after));
    let (condition, yield_op) = (before.terminator()?, after.terminator()?);
    let mut carried: Vec<Value> = op.operands().collect();
    let one = builder.constant(IntegerAttribute::new(IntegerType::new(context, 1).into(), 1).into())?;
    for i in 0..=trips {
        let mut mapping = Mapping::new();
        for (j, value) in carried.iter().enumerate() {
            mapping.insert(key(before.argument(j).ok()?.into()), value.to_raw());
        }
        clone_before(context, &before_ops, op, &mut mapping, ids)?;
        let go = mapped(&mapping, condition.operand(0).ok()?);
        let forwarded: Vec<Value> = condition
            .operands()
            .skip(1)
            .map(|v| mapped(&mapping, v))
            .collect();
        let holds = if i < trips {
            go
        } else {
            builder.arith("arith.xori", go, one)?
        };
        builder.guard(holds, ids, &reason(site, trips), site)?;
        if i == trips {
            carried = forwarded;
            break;
        }
        let mut mapping = Mapping::new();
        for (j, value) in forwarded.iter().enumerate() {
            mapping.insert(key(after.argument(j).ok()?.into()), value.to_raw());
        }
        clone_before(context, &after_ops, op, &mut mapping, ids)?;
        carried = yield_op.operands().map(|v| mapped(&mapping, v)).collect();
    }
    finish(op, &carried)
}

/// Replaces `op`'s results with `values` and erases it.
fn finish(op: OperationRef, values: &[Value]) -> Option<()> {
    if values.len() != op.result_count() {
        return None;
    }
    for (i, value) in values.iter().enumerate() {
        replace_uses(op.result(i).ok()?.into(), *value);
    }
    // Its results are unused now and nothing refers to it again.
    rewrite::erase(op);
    Some(())
}
