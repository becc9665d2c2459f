//! `meta-refine`: spreads static shapes forward, so that a program
//! specialized on its argument shapes becomes static throughout.
//!
//! `meta-specialize` casts a guarded argument to a more static type; the
//! ops after it still say `?`. This pass rewrites their types, op by op in
//! program order, until every size that is known is static. Kernels with
//! static shapes compile; kernels with `?` sizes run in the interpreter.
//!
//! ```mlir
//! // before
//! %xs = tensor.cast %x : tensor<?x8xf32> to tensor<4x8xf32>
//! %n = tensor.dim %xs, %c0 : tensor<4x8xf32>
//! %e = "meta.unary"(%xs) {kind = "exp"} : (tensor<4x8xf32>) -> tensor<?x8xf32>
//! %b = "meta.reindex"(%e, %n) {indices = affine_map<(d0, d1, d2) -> (d0, d2)>}
//!      : (tensor<?x8xf32>, index) -> tensor<?x2x8xf32>
//! // after
//! %e = "meta.unary"(%xs) {kind = "exp"} : (tensor<4x8xf32>) -> tensor<4x8xf32>
//! %b = "meta.reindex"(%e) {indices = affine_map<(d0, d1, d2) -> (d0, d2)>}
//!      : (tensor<4x8xf32>) -> tensor<4x2x8xf32>
//! ```
//!
//! Algorithm, one walk in program order:
//! 1. `tensor.dim` of a static dimension becomes an `arith.constant`;
//! 2. a `tensor.cast` to its operand's own type is dropped;
//! 3. an element-wise op's result takes every size that any operand has
//!    statically;
//! 4. a `meta.reindex` or `meta.reindex_reduce` whose `?` result size is an
//!    `arith.constant` operand takes that size and drops the operand;
//! 5. when a result's type changes, users that cannot take the new type
//!    (`scf.yield`, `func.return`, calls, state writes, ...) get a
//!    `tensor.cast` back to the old one, so signatures and loop-carried
//!    types never change.

use crate::rewrite::with_context;
use crate::{
    pass::{Options, PassInfo},
    rewrite::{
        self, Builder, DYNAMIC, constant_int, dims, replace_uses, set_operand, set_operands, set_type, uses,
        with_dims,
    },
};
use jitc_dialect::{
    emit_error,
    verify::{collect_ops, op_name},
};
use melior::{
    Context,
    ir::{OperationRef, Type, Value, ValueLike, operation::OperationLike, r#type::RankedTensorType},
};

/// The `meta-refine` pass.
pub struct Refine;

impl Refine {
    /// Registry entry.
    pub const INFO: PassInfo = PassInfo {
        argument: "meta-refine",
        name: "Refine",
        summary: "Spread static shapes forward through meta ops and tensor.dim",
        options: &[],
        source_file: "compiler/src/transforms/refine.rs",
        source: include_str!("refine.rs"),
        run: Self::run,
    };

    /// Runs the pass on everything nested in `root`.
    pub fn run(root: OperationRef, _options: &Options) -> bool {
        match with_context(root, |context| refine(context, root)) {
            Some(_) => true,
            None => {
                emit_error(root.location(), "meta-refine: could not rewrite a type");
                false
            }
        }
    }
}

/// Refines every op under `root`; returns how many types changed.
pub fn refine(context: &Context, root: OperationRef) -> Option<usize> {
    let mut changed = 0;
    for op in collect_ops(root) {
        match op_name(op).as_str() {
            "tensor.dim" => {
                let source = RankedTensorType::try_from(op.operand(0).ok()?.r#type()).ok();
                let index = constant_int(op.operand(1).ok()?);
                if let (Some(source), Some(index)) = (source, index)
                    && let Some(&size) = dims(source).get(index as usize)
                    && size != DYNAMIC
                {
                    let constant = Builder::before(context, op)?.index(size)?;
                    replace_uses(op.result(0).ok()?.into(), constant);
                    // The op's result is unused now and the walk
                    // never comes back to it.
                    rewrite::erase(op);
                    changed += 1;
                }
            }
            "tensor.cast" => {
                let operand = op.operand(0).ok()?;
                if operand.r#type() == op.result(0).ok()?.r#type() {
                    replace_uses(op.result(0).ok()?.into(), operand);
                    // SAFETY: as above.
                    rewrite::erase(op);
                    changed += 1;
                }
            }
            "meta.unary" | "meta.binary" | "meta.ternary" => {
                let result: Value = op.result(0).ok()?.into();
                let Ok(declared) = RankedTensorType::try_from(result.r#type()) else {
                    continue;
                };
                let mut sizes = dims(declared);
                for operand in op.operands() {
                    if let Ok(t) = RankedTensorType::try_from(operand.r#type()) {
                        for (size, known) in sizes.iter_mut().zip(dims(t)) {
                            if *size == DYNAMIC {
                                *size = known;
                            }
                        }
                    }
                }
                changed += retype(context, result, with_dims(declared, &sizes))? as usize;
            }
            "meta.reindex" | "meta.reindex_reduce" => {
                let result: Value = op.result(0).ok()?.into();
                let Ok(declared) = RankedTensorType::try_from(result.r#type()) else {
                    continue;
                };
                let mut sizes = dims(declared);
                let operands: Vec<Value> = op.operands().collect();
                let mut kept = vec![operands[0]];
                let mut next_size = 1;
                for size in sizes.iter_mut().filter(|s| **s == DYNAMIC) {
                    let operand = *operands.get(next_size)?;
                    next_size += 1;
                    match constant_int(operand) {
                        Some(n) if n >= 0 => *size = n,
                        _ => kept.push(operand),
                    }
                }
                kept.extend_from_slice(&operands[next_size..]);
                if kept.len() != operands.len() {
                    set_operands(op, &kept);
                    retype(context, result, with_dims(declared, &sizes))?;
                    changed += 1;
                }
            }
            _ => {}
        }
    }
    Some(changed)
}

/// Users that accept a more static operand type.
fn takes_refined(user: OperationRef) -> bool {
    matches!(
        op_name(user).as_str(),
        "meta.unary"
            | "meta.binary"
            | "meta.ternary"
            | "meta.reindex"
            | "meta.reindex_reduce"
            | "tensor.dim"
            | "tensor.extract"
            | "tensor.cast"
    )
}

/// Gives `value` type `new`; users that need the old type get a cast.
/// Returns whether the type changed.
fn retype(context: &Context, value: Value, new: Type) -> Option<bool> {
    let old = value.r#type();
    if old == new {
        return Some(false);
    }
    let users = uses(value);
    set_type(value, new);
    for (user, index) in users {
        if !takes_refined(user) {
            let cast = Builder::before(context, user)?.cast(value, old)?;
            set_operand(user, index, cast);
        }
    }
    Some(true)
}
