//! `meta-inline`: inlines `func.call`s of functions that contain `meta` ops.
//!
//! Upstream `inline` refuses callees with IRDL ops (they implement no
//! inliner interface; see TOOLCHAIN.md), so jitc has its own. A call has
//! one callee (`func.call` is direct), so every call of a function with a
//! body is a candidate. After inlining, the callee's ops sit in the
//! caller's block, where they fuse with the caller's ops.
//!
//! ```mlir
//! // before
//! %y = func.call @cell(%x) : (tensor<4xf32>) -> tensor<4xf32>
//! func.func private @cell(%a: tensor<4xf32>) -> tensor<4xf32> {
//!   %b = "meta.unary"(%a) {kind = "tanh"} : (tensor<4xf32>) -> tensor<4xf32>
//!   return %b : tensor<4xf32>
//! }
//! // after
//! %y = "meta.unary"(%x) {kind = "tanh"} : (tensor<4xf32>) -> tensor<4xf32>
//! ```
//!
//! Algorithm:
//! 1. build the call graph (petgraph); functions on a cycle (recursion) are
//!    never inlined;
//! 2. `meta.fused` kernels are never inlined: they are what fusion made;
//!    neither are declarations (no body) or bodies with several blocks;
//! 3. each remaining call is replaced by a clone of the callee's body, its
//!    arguments mapped to the call's operands and its results to the
//!    returned values; guards in the clone get ids fresh in the caller;
//! 4. repeat while calls were inlined (a callee's own calls appear in the
//!    caller), at most 64 rounds. Callees left without calls stay; upstream
//!    `symbol-dce` removes private ones.

use crate::rewrite::with_context;
use crate::{
    pass::{Options, PassInfo},
    rewrite::{self, GuardIds, Mapping, body_ops, clone_before, key, mapped, replace_uses},
};
use jitc_dialect::{
    emit_error,
    verify::{collect_ops, enclosing_function, op_name},
};
use melior::{
    Context,
    ir::{
        BlockLike, OperationRef, RegionLike, ValueLike, attribute::FlatSymbolRefAttribute,
        operation::OperationLike,
    },
};
use petgraph::{algo::tarjan_scc, graphmap::DiGraphMap};
use std::collections::{BTreeMap, HashSet};

/// The `meta-inline` pass.
pub struct Inline;

impl Inline {
    /// Registry entry.
    pub const INFO: PassInfo = PassInfo {
        argument: "meta-inline",
        name: "Inline",
        summary: "Inline calls of non-recursive functions, meta ops included (never meta.fused kernels)",
        options: &[],
        source_file: "compiler/src/transforms/inline.rs",
        source: include_str!("inline.rs"),
        run: Self::run,
    };

    /// Runs the pass on a module.
    pub fn run(root: OperationRef, _options: &Options) -> bool {
        match with_context(root, |context| inline(context, root)) {
            Ok(_) => true,
            Err(message) => {
                emit_error(root.location(), &format!("meta-inline: {message}"));
                false
            }
        }
    }
}

/// The callee of a `func.call`.
pub fn callee(call: OperationRef) -> Option<String> {
    let attribute = call.attribute("callee").ok()?;
    let symbol = FlatSymbolRefAttribute::try_from(attribute).ok()?;
    Some(symbol.value().to_owned())
}

/// Inlines every eligible call under `module`; returns how many.
pub fn inline(context: &Context, module: OperationRef) -> Result<usize, String> {
    let Some(body) = module.region(0).ok().and_then(|r| r.first_block()) else {
        return Ok(0);
    };
    let functions = rewrite::functions(body);
    let recursive = recursive_functions(&functions);
    let mut inlined = 0;
    for _round in 0..64 {
        let calls: Vec<OperationRef> = functions
            .values()
            .flat_map(|f| collect_ops(*f))
            .filter(|op| op_name(*op) == "func.call")
            .collect();
        let mut changed = false;
        for call in calls {
            let Some(name) = callee(call) else { continue };
            let Some(&target) = functions.get(&name) else {
                continue;
            };
            if recursive.contains(&name) || target.has_attribute("meta.fused") {
                continue;
            }
            let Some(region) = target.region(0).ok() else {
                continue;
            };
            let Some(entry) = region.first_block() else {
                continue;
            };
            if entry.next_in_region().is_some() {
                continue;
            }
            let caller = enclosing_function(call).ok_or("a call outside any function")?;
            let mut ids = GuardIds::of(caller);
            let mut mapping = Mapping::new();
            if entry.argument_count() != call.operand_count() {
                return Err(format!("a call of @{name} has the wrong number of operands"));
            }
            for i in 0..entry.argument_count() {
                let argument = entry.argument(i).map_err(|e| e.to_string())?;
                let operand = call.operand(i).map_err(|e| e.to_string())?;
                mapping.insert(key(argument.into()), operand.to_raw());
            }
            clone_before(context, &body_ops(entry), call, &mut mapping, &mut ids)
                .ok_or_else(|| format!("could not inline @{name}"))?;
            let returned = entry.terminator().ok_or("a callee without a terminator")?;
            for i in 0..call.result_count() {
                let value = mapped(&mapping, returned.operand(i).map_err(|e| e.to_string())?);
                replace_uses(call.result(i).map_err(|e| e.to_string())?.into(), value);
            }
            // The call's results are unused now and it is not
            // touched again.
            rewrite::erase(call);
            inlined += 1;
            changed = true;
        }
        if !changed {
            break;
        }
    }
    Ok(inlined)
}

/// Functions on a cycle of the call graph, including self-recursion.
fn recursive_functions(functions: &BTreeMap<String, OperationRef>) -> HashSet<String> {
    let mut graph: DiGraphMap<&str, ()> = DiGraphMap::new();
    for (name, function) in functions {
        graph.add_node(name.as_str());
        for op in collect_ops(*function) {
            if op_name(op) == "func.call"
                && let Some(target) = callee(op)
                && let Some((target, _)) = functions.get_key_value(&target)
            {
                graph.add_edge(name.as_str(), target.as_str(), ());
            }
        }
    }
    let mut recursive = HashSet::new();
    for component in tarjan_scc(&graph) {
        if component.len() > 1 || graph.contains_edge(component[0], component[0]) {
            recursive.extend(component.iter().map(|n| (*n).to_owned()));
        }
    }
    recursive
}
