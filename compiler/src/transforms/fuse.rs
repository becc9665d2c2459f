//! `meta-fuse`: Jittor's operator fusion (§4.1), outlining each group into
//! a private `func.func` kernel with `meta.fused` and `meta.domain`.
//!
//! ```mlir
//! // before: sigmoid as exp(x) / (exp(x) + 1)
//! %ones = "meta.reindex"(%one) {indices = affine_map<(d0) -> ()>} : (tensor<f32>) -> tensor<8xf32>
//! %e = "meta.unary"(%x) {kind = "exp"} : (tensor<8xf32>) -> tensor<8xf32>
//! %d = "meta.binary"(%e, %ones) {kind = "add"} : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
//! %y = "meta.binary"(%e, %d) {kind = "div"} : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
//! // after
//! %y = call @main_fused_0(%one, %x) : (tensor<f32>, tensor<8xf32>) -> tensor<8xf32>
//! func.func private @main_fused_0(...) attributes {meta.domain = array<i64: 8>, meta.fused} { ... }
//! ```
//!
//! Algorithm, for every block of every function that is not a kernel:
//! 1. duplicate each reindex and splat constant that several fusable ops
//!    use, one copy per user, so broadcasts are recomputed in their
//!    consumers' groups instead of materialized (the fan-out limit does not
//!    apply to them);
//! 2. plan: greedy contraction of the heaviest admissible edge under rules
//!    1–3, `stop_fuse`, the fan-out limit and the size limits (`max-ops`
//!    ops and `max-buffers` arguments and results a kernel; `fusion::plan`
//!    states the cost model and the algorithm); copies left alone are
//!    rejoined into one;
//! 3. outline each group: its inputs become kernel arguments, values used
//!    outside become results, the kernel is appended to the module and a
//!    `func.call` replaces the group;
//! 4. reorder the block where a call now follows a use of its result,
//!    keeping effectful ops in their order.
//!
//! Every group is one loop nest: reindexes only at its inputs, reductions
//! only at its outputs, one iteration domain (`meta.domain`; `-1` marks a
//! dynamic extent).

use crate::rewrite::with_context;
use crate::{
    fusion::{self, Options as FuseOptions, Symbols},
    pass::{OptionKind, Options, PassInfo, PassOption},
};
use jitc_dialect::emit_error;
use melior::ir::{BlockRef, OperationRef, RegionLike, operation::OperationLike};

/// The `meta-fuse` pass.
pub struct Fuse;

impl Fuse {
    /// Registry entry.
    pub const INFO: PassInfo = PassInfo {
        argument: "meta-fuse",
        name: "Fuse",
        summary: "Fuse meta ops into outlined meta.fused kernels (Jittor's cost rules)",
        options: &[
            PassOption {
                name: "fanout-limit",
                description: "a value with more consumers stays materialized",
                default: "16",
                kind: OptionKind::WholeNumber,
            },
            PassOption {
                name: "max-ops",
                description: "a kernel holds at most this many ops, splat constants aside (LLVM's compile time grows faster than linearly with a kernel's size)",
                default: "256",
                kind: OptionKind::WholeNumber,
            },
            PassOption {
                name: "max-buffers",
                description: "a kernel takes at most this many arguments and results (a GPU kernel's parameters fit in 4 KiB)",
                default: "128",
                kind: OptionKind::WholeNumber,
            },
            PassOption {
                name: "rules",
                description: "jittor: the paper's rules; jitc: also keep two contractions apart (the compilers' fuse pipeline)",
                default: "jittor",
                kind: OptionKind::Text,
            },
        ],
        source_file: "compiler/src/transforms/fuse.rs",
        source: include_str!("fuse.rs"),
        run: Self::run,
    };

    /// Runs the pass on a module.
    pub fn run(root: OperationRef, options: &Options) -> bool {
        let whole = |name: &str, default: usize| -> Option<usize> {
            let Some(text) = options.get(name) else {
                return Some(default);
            };
            let value = text.parse::<usize>().ok();
            if value.is_none() {
                emit_error(
                    root.location(),
                    &format!("meta-fuse: {name} must be a whole number, got '{text}'"),
                );
            }
            value
        };
        let Some(fanout_limit) = whole("fanout-limit", fusion::DEFAULT_FANOUT_LIMIT) else {
            return false;
        };
        let Some(max_ops) = whole("max-ops", fusion::plan::DEFAULT_MAX_OPS) else {
            return false;
        };
        let Some(max_buffers) = whole("max-buffers", fusion::plan::DEFAULT_MAX_BUFFERS) else {
            return false;
        };
        if root.name().as_string_ref().as_str() != Ok("builtin.module") {
            emit_error(
                root.location(),
                "meta-fuse must run on 'builtin.module': it adds kernel functions to it",
            );
            return false;
        }
        let Some(body) = root.region(0).ok().and_then(|r| r.first_block()) else {
            return true;
        };
        let mut symbols = Symbols::of(body);
        let functions: Vec<OperationRef> = fusion::block_ops(body)
            .into_iter()
            .filter(|op| {
                op.name().as_string_ref().as_str() == Ok("func.func") && !op.has_attribute("meta.fused")
            })
            .collect();
        let contractions_apart = match options.get("rules").unwrap_or("jittor") {
            "jittor" => false,
            "jitc" => true,
            other => {
                emit_error(
                    root.location(),
                    &format!(
                        "meta-fuse: rules must be 'jittor' (the paper's) or 'jitc' (contractions kept apart), got '{other}'"
                    ),
                );
                return false;
            }
        };
        let options = FuseOptions {
            fanout_limit,
            labels: false,
            contractions_apart,
            max_ops,
            max_buffers,
        };
        with_context(root, |context| {
            functions.into_iter().all(|function| {
                let name = function
                    .attribute("sym_name")
                    .ok()
                    .and_then(jitc_dialect::ops::string_attribute)
                    .unwrap_or("kernel")
                    .to_owned();
                blocks_with_fusable_ops(function).into_iter().all(|block| {
                    fusion::fuse_block(context, body, &mut symbols, &name, block, options).is_some()
                })
            })
        })
    }
}

/// The blocks nested in `function` that hold meta compute ops, outermost
/// first.
pub fn blocks_with_fusable_ops<'c, 'a>(function: OperationRef<'c, 'a>) -> Vec<BlockRef<'c, 'a>> {
    let mut blocks: Vec<BlockRef> = Vec::new();
    for op in jitc_dialect::verify::collect_ops(function).into_iter().skip(1) {
        if fusion::kind_of(op) != fusion::NodeKind::Opaque
            && fusion::kind_of(op) != fusion::NodeKind::Constant
            && let Some(block) = op.block()
            && !blocks.contains(&block)
        {
            blocks.push(block);
        }
    }
    blocks
}
