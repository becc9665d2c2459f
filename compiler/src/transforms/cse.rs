//! `meta-cse`: merges identical pure `meta` ops.
//!
//! Upstream `cse` only merges ops it knows to be side-effect free, which IRDL
//! ops never are. This pass merges two pure `meta` ops (see
//! `jitc_dialect::ops::PURE_OPS`) with the same name, operands, attributes
//! and result types when the first dominates the second.
//!
//! ```mlir
//! // before
//! %a = "meta.unary"(%x) {kind = "exp"} : (tensor<4xf32>) -> tensor<4xf32>
//! %b = "meta.unary"(%x) {kind = "exp"} : (tensor<4xf32>) -> tensor<4xf32>
//! %s = "meta.binary"(%a, %b) {kind = "add"} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
//! // after
//! %a = "meta.unary"(%x) {kind = "exp"} : (tensor<4xf32>) -> tensor<4xf32>
//! %s = "meta.binary"(%a, %a) {kind = "add"} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
//! ```
//!
//! Algorithm (a scoped hash table, as upstream CSE):
//! 1. walk each block in order with a stack of scopes, one per enclosing
//!    block; an op's key is its name, operand identities, attributes and
//!    result types;
//! 2. a pure `meta` op whose key is in any open scope has its results
//!    replaced by the earlier op's and is erased; otherwise its key enters
//!    the innermost scope;
//! 3. regions of `scf` ops see the enclosing scopes, since values defined
//!    outside dominate them; regions of any other op (`func.func`, unknown
//!    ops that may be isolated from above) start with no scopes.
//!
//! `meta.state_read` is pure here: state writes are deferred to the end of
//! a run, so two reads of one name in a run always agree.

use crate::{
    pass::{Options, PassInfo},
    rewrite::{erase, is_pure, replace_uses},
};
use melior::ir::{BlockLike, OperationRef, RegionLike, ValueLike, operation::OperationLike};
use std::collections::HashMap;

/// The `meta-cse` pass.
pub struct Cse;

type Scope<'c, 'a> = HashMap<String, OperationRef<'c, 'a>>;

impl Cse {
    /// Registry entry.
    pub const INFO: PassInfo = PassInfo {
        argument: "meta-cse",
        name: "Cse",
        summary: "Merge identical pure meta ops",
        options: &[],
        source_file: "compiler/src/transforms/cse.rs",
        source: include_str!("cse.rs"),
        run: Self::run,
    };

    /// Runs the pass on the regions of `root`.
    pub fn run(root: OperationRef, _options: &Options) -> bool {
        let mut scopes = Vec::new();
        visit_regions(root, &mut scopes);
        true
    }
}

fn visit_regions<'c, 'a>(op: OperationRef<'c, 'a>, scopes: &mut Vec<Scope<'c, 'a>>) {
    for region in op.regions() {
        let mut block = region.first_block();
        while let Some(current) = block {
            scopes.push(Scope::new());
            let mut next_op = current.first_operation();
            while let Some(inner) = next_op {
                next_op = inner.next_in_block();
                visit_op(inner, scopes);
            }
            scopes.pop();
            block = current.next_in_region();
        }
    }
}

fn visit_op<'c, 'a>(op: OperationRef<'c, 'a>, scopes: &mut Vec<Scope<'c, 'a>>) {
    if is_pure(op) && op.region_count() == 0 {
        let key = key(op);
        if let Some(earlier) = scopes.iter().rev().find_map(|scope| scope.get(&key)) {
            for (old, new) in op.results().zip(earlier.results()) {
                replace_uses(old.into(), new.into());
            }
            // `op` has no uses left and is not visited again.
            erase(op);
        } else if let Some(innermost) = scopes.last_mut() {
            innermost.insert(key, op);
        }
        return;
    }
    let sees_enclosing = op
        .name()
        .as_string_ref()
        .as_str()
        .is_ok_and(|name| name.starts_with("scf."));
    if sees_enclosing {
        visit_regions(op, scopes);
    } else {
        visit_regions(op, &mut Vec::new());
    }
}

fn key(op: OperationRef) -> String {
    let mut key = op.name().as_string_ref().as_str().unwrap_or("").to_owned();
    for operand in op.operands() {
        key.push_str(&format!("|{:?}", operand.to_raw().ptr));
    }
    for (name, value) in op.attributes() {
        key.push_str(&format!(
            "|{}={value}",
            name.as_string_ref().as_str().unwrap_or("")
        ));
    }
    for result in op.results() {
        key.push_str(&format!("|{}", result.r#type()));
    }
    key
}
