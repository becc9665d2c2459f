//! `meta-dce`: erases `meta` ops whose results are never used.
//!
//! IRDL ops have no traits, so upstream `canonicalize` cannot know that a
//! `meta.unary` is free of side effects and never erases one. This pass
//! knows: every `meta` op is pure except `meta.guard` and
//! `meta.state_write` (see `jitc_dialect::ops::PURE_OPS`), and those two
//! are always kept.
//!
//! ```mlir
//! // before
//! %e = "meta.unary"(%x) {kind = "exp"} : (tensor<4xf32>) -> tensor<4xf32>
//! %n = "meta.unary"(%e) {kind = "neg"} : (tensor<4xf32>) -> tensor<4xf32>
//! return %x : tensor<4xf32>
//! // after
//! return %x : tensor<4xf32>
//! ```
//!
//! Algorithm:
//! 1. collect the pure `meta` ops under the root, in program order;
//! 2. pop ops from the end of that worklist (users before producers); an op
//!    whose results are all unused is erased, and the pure `meta` ops that
//!    defined its operands go back on the worklist, since they may have
//!    lost their last use;
//! 3. stop when the worklist is empty. Each op is erased at most once, so
//!    the pass is linear in the number of ops and operands.
//!
//! A `meta.guard` whose condition is the constant `dense<true>` checks
//! nothing and is erased too (specialization leaves such guards when one
//! assumption implies another, e.g. a branch on a specialized flag).
//!
//! Dead upstream ops (an `arith.constant` that fed only erased ops) are left
//! to `canonicalize`.

use crate::rewrite::is_true_splat;
use crate::{
    pass::{Options, PassInfo},
    rewrite::{constant_attribute, defining_op},
    rewrite::{erase, is_pure, results_unused},
};
use jitc_dialect::verify::collect_ops;
use melior::ir::{OperationRef, operation::OperationLike};
use std::collections::HashSet;

/// The `meta-dce` pass.
pub struct Dce;

impl Dce {
    /// Registry entry.
    pub const INFO: PassInfo = PassInfo {
        argument: "meta-dce",
        name: "Dce",
        summary: "Erase meta ops whose results are unused",
        options: &[],
        source_file: "compiler/src/transforms/dce.rs",
        source: include_str!("dce.rs"),
        run: Self::run,
    };

    /// Runs the pass on everything nested in `root`.
    pub fn run(root: OperationRef, _options: &Options) -> bool {
        for op in collect_ops(root) {
            if jitc_dialect::ops::GuardOp::cast(op).is_some() && op.operand(0).is_ok_and(is_true) {
                // A guard has no results, and `op` is not used again.
                erase(op);
            }
        }
        let mut worklist: Vec<OperationRef> =
            collect_ops(root).into_iter().filter(|op| is_pure(*op)).collect();
        let mut erased = HashSet::new();
        while let Some(op) = worklist.pop() {
            if erased.contains(&op.to_raw().ptr) || !results_unused(op) {
                continue;
            }
            for operand in op.operands() {
                if let Some(producer) = defining_op(operand).filter(|p| is_pure(*p)) {
                    worklist.push(producer);
                }
            }
            erased.insert(op.to_raw().ptr);
            // `op` is recorded in `erased` and never touched again.
            erase(op);
        }
        true
    }
}

/// Whether `value` is the constant `dense<true>`.
fn is_true(value: melior::ir::Value) -> bool {
    let Some(attribute) = constant_attribute(value) else {
        return false;
    };
    is_true_splat(attribute)
}
