//! The fuser's plans, read-only: what `jitc explain` prints and what the
//! fusion property tests check. The fuser itself (`fusion`, `meta-fuse`)
//! stays private; this module is its window in the front door.
//!
//! [`explain`] rewrites math as `meta-fast-math` does (under fast math),
//! batches contractions as `meta-batch` does and plans every
//! function of a module as `meta-fuse{rules=jitc}` does in the compilers'
//! `fuse` pipeline (the same `prepare_and_plan`, so the explanation is the
//! decision) and renders
//! the plans as text for people or as a Graphviz digraph.

use melior::ir::{BlockLike, Module, OperationRef, RegionLike, operation::OperationLike};

pub use crate::{
    fusion::{
        Blocked, DEFAULT_FANOUT_LIMIT, Node, NodeKind, Options, Plan, ValueUse, all_ops, block_ops, extract,
        kind_of,
        plan::plan,
        plan_block, prepare_and_plan,
        render::{dot, text},
    },
    transforms::fuse::blocks_with_fusable_ops,
};

/// How [`explain`] renders its plans.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// Readable text.
    Text,
    /// A Graphviz digraph.
    Dot,
}

/// The fusion plan of every function of `module` (only `function`, when
/// given) that `meta-fuse` would apply with `fanout_limit`, rendered in
/// `format`. Planning rewrites math as `meta-fast-math` does under `math`
/// fast, batches contractions and duplicates shared broadcasts in
/// `module`, as the `fuse-fast` (or `fuse`) pipeline does first. Fails
/// when `function` is not in the module.
pub fn explain(
    module: &Module,
    function: Option<&str>,
    fanout_limit: usize,
    format: Format,
    math: crate::MathMode,
) -> Result<String, String> {
    // The compilers' rules (`meta-fuse{rules=jitc}`): contractions kept
    // apart.
    let options = Options {
        labels: true,
        fanout_limit,
        contractions_apart: true,
        ..Options::default()
    };
    let functions: Vec<(String, OperationRef)> = block_ops(module.body())
        .into_iter()
        .filter(|op| op.name().as_string_ref().as_str() == Ok("func.func") && !op.has_attribute("meta.fused"))
        .filter_map(|op| {
            let name = op
                .attribute("sym_name")
                .ok()
                .and_then(jitc_dialect::ops::string_attribute)?;
            Some((name.to_owned(), op))
        })
        .filter(|(name, _)| function.is_none_or(|f| f == name))
        .collect();
    if let Some(wanted) = function
        && functions.is_empty()
    {
        return Err(format!("no function @{wanted} in the module"));
    }
    let mut plans = Vec::new();
    let mut notes = Vec::new();
    for (name, function) in functions {
        if math == crate::MathMode::Fast {
            let rewrites = crate::rewrite::with_context(function, |context| {
                crate::transforms::fast_math::rewrite_all(context, function)
            });
            notes.extend(
                rewrites
                    .into_iter()
                    .map(|what| format!("@{name}: meta-fast-math computes {what} (fast math)\n")),
            );
        }
        let sizes = crate::rewrite::with_context(function, |context| {
            crate::transforms::batch::batch(context, function)
        })
        .ok_or_else(|| format!("@{name}: meta-batch could not build a batched contraction"))?;
        notes.extend(sizes.into_iter().map(|n| {
            format!("@{name}: meta-batch made {n} contractions one, over a new outer dimension of {n}\n")
        }));
        let entry = function.region(0).ok().and_then(|r| r.first_block());
        for block in blocks_with_fusable_ops(function) {
            let title = if Some(block) == entry {
                format!("@{name}")
            } else {
                let parent = block
                    .parent_operation()
                    .map(|p| p.name().as_string_ref().as_str().unwrap_or("").to_owned());
                format!("@{name}, block in {}", parent.unwrap_or_default())
            };
            plans.push((title, prepare_and_plan(block, options)));
        }
    }
    Ok(match format {
        Format::Text => {
            if plans.is_empty() {
                return Ok("no function has meta ops to fuse\n".to_owned());
            }
            let plans = plans
                .iter()
                .map(|(title, plan)| text(title, plan))
                .collect::<Vec<_>>()
                .join("\n");
            if notes.is_empty() {
                plans
            } else {
                format!("{}\n{plans}", notes.concat())
            }
        }
        Format::Dot => dot("jitc fusion plan", &plans),
    })
}
