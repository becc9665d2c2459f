//! `jitc explain`: the fusion plan that `meta-fuse` would apply.

use clap::{Args, ValueEnum};
use jitc_compiler::{
    fusion::{self, Options, render},
    transforms::fuse::blocks_with_fusable_ops,
};
use melior::{
    Context,
    ir::{BlockLike, OperationRef, RegionLike, operation::OperationLike},
};
use std::{path::PathBuf, process::ExitCode};

/// Show the fusion plan of each function, as meta-fuse would apply it.
///
/// For every group: its ops, its iteration domain and the bytes that enter
/// and leave it. Then the bytes crossing group boundaries before and after
/// fusion (the cost the fuser minimizes), and every edge left unfused with
/// the rule that kept it apart. `--format dot` draws the same plan for
/// Graphviz (`jitc explain f.mlir --format dot | dot -Tsvg > plan.svg`).
///
/// Exit status: 0 on success, 1 on any error.
#[derive(Debug, Args)]
pub struct ExplainArgs {
    /// The module (.mlir); `-` reads standard input.
    #[arg(value_name = "FILE")]
    file: PathBuf,

    /// Explain only this function.
    #[arg(long, value_name = "NAME")]
    function: Option<String>,

    /// Text for people, or dot for Graphviz.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    format: Format,

    /// A value with more consumers stays materialized (meta-fuse's
    /// fanout-limit).
    #[arg(long, default_value_t = fusion::DEFAULT_FANOUT_LIMIT, value_name = "N")]
    fanout_limit: usize,
}

/// Output formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Format {
    /// Readable text.
    Text,
    /// A Graphviz digraph.
    Dot,
}

/// Runs `jitc explain`.
pub fn run(context: &Context, args: ExplainArgs) -> ExitCode {
    match explain(context, &args) {
        Ok(text) => {
            print!("{text}");
            ExitCode::SUCCESS
        }
        Err(message) => {
            eprintln!("jitc explain: error: {message}");
            ExitCode::FAILURE
        }
    }
}

fn explain(context: &Context, args: &ExplainArgs) -> Result<String, String> {
    let module = crate::input::load_module(context, &args.file)?;
    let options = Options {
        labels: true,
        fanout_limit: args.fanout_limit,
    };
    let body = module.body();
    let functions: Vec<(String, OperationRef)> = fusion::block_ops(body)
        .into_iter()
        .filter(|op| op.name().as_string_ref().as_str() == Ok("func.func") && !op.has_attribute("meta.fused"))
        .filter_map(|op| {
            let name = op
                .attribute("sym_name")
                .ok()
                .and_then(jitc_dialect::ops::string_attribute)?;
            Some((name.to_owned(), op))
        })
        .filter(|(name, _)| args.function.as_ref().is_none_or(|f| f == name))
        .collect();
    if let Some(wanted) = &args.function
        && functions.is_empty()
    {
        return Err(format!("no function @{wanted} in the module"));
    }
    let mut plans = Vec::new();
    for (name, function) in functions {
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
            plans.push((title, fusion::prepare_and_plan(block, options)));
        }
    }
    Ok(match args.format {
        Format::Text => {
            if plans.is_empty() {
                return Ok("no function has meta ops to fuse\n".to_owned());
            }
            plans
                .iter()
                .map(|(title, plan)| render::text(title, plan))
                .collect::<Vec<_>>()
                .join("\n")
        }
        Format::Dot => render::dot("jitc fusion plan", &plans),
    })
}
