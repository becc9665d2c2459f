//! `jitc explain`: the fusion plan that `meta-fuse` would apply.

use clap::{Args, ValueEnum};
use jitc_compiler::explain::{self as plans, DEFAULT_FANOUT_LIMIT};
use melior::Context;
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
    #[arg(long, default_value_t = DEFAULT_FANOUT_LIMIT, value_name = "N")]
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
    match explain(context, &args).and_then(|text| crate::output::print(&text)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("jitc explain: error: {message}");
            ExitCode::FAILURE
        }
    }
}

fn explain(context: &Context, args: &ExplainArgs) -> Result<String, String> {
    let module = crate::input::load_module(context, &args.file)?;
    let format = match args.format {
        Format::Text => plans::Format::Text,
        Format::Dot => plans::Format::Dot,
    };
    plans::explain(&module, args.function.as_deref(), args.fanout_limit, format)
}
