//! `jitc explain`: the fusion plan that the compilers apply
//! (`meta-fuse{rules=jitc}`).

use clap::{Args, ValueEnum};
use jitc_compiler::explain::{self as plans, DEFAULT_FANOUT_LIMIT};
use melior::{
    Context,
    ir::{Module, operation::OperationLike},
};
use std::{path::PathBuf, process::ExitCode};

/// Show the fusion plan of each function, as the compilers apply it.
///
/// The plan is meta-fuse's with rules=jitc: the paper's rules, and two
/// contractions kept apart (`jitc opt --meta-fuse` alone applies the
/// paper's), after meta-batch and, as the default fast math does,
/// meta-fast-math, whose rewrites are listed first.
///
/// For every group: its ops, its iteration domain and the bytes that enter
/// and leave it. Then the bytes crossing group boundaries before and after
/// fusion (the cost the fuser minimizes), and every edge left unfused with
/// the rule that kept it apart. `--format dot` draws the same plan for
/// Graphviz (`jitc explain f.mlir --format dot | dot -Tsvg > plan.svg`).
/// The text then lists what the CPU backend makes of the kernels: the
/// contractions it runs as register tiles, the results it writes with
/// non-temporal stores, and the row chains; and the row chains of the GPU
/// backend (`--target nvptx`, `--backend cuda`; fast math) and the
/// contractions it runs as shared-memory tiles.
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

    /// Also compile the module for the CPU and say, for each function,
    /// whether its host code (calls, loops, branches, guards, state) runs
    /// natively as a host plan or in the interpreter, and why (text
    /// format only).
    #[arg(long)]
    host: bool,
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
    if args.host && args.format == Format::Dot {
        return Err(
            "--host says in text how each function's host code runs; it does not combine with --format dot"
                .into(),
        );
    }
    // Read once: each section parses its own copy (the backends fuse it in
    // place), and standard input can be read only once.
    let source = crate::input::read_source(&args.file)?;
    let module = parse(context, &source)?;
    let format = match args.format {
        Format::Text => plans::Format::Text,
        Format::Dot => plans::Format::Dot,
    };
    // The plans of the default build, fast math (as the CPU and GPU
    // sections below).
    let math = jitc_compiler::CodegenOptions::default().math;
    let mut text = plans::explain(&module, args.function.as_deref(), args.fanout_limit, format, math)?;
    if args.format == Format::Text {
        text.push_str(&cpu_kernels(context, args, &source)?);
        text.push_str(&gpu_chains(context, args, &source)?);
    }
    if args.host && args.format == Format::Text {
        text.push_str(&host_schedules(context, args, &source)?);
    }
    Ok(text)
}

/// A fresh copy of the module `source` (its name and text) holds.
fn parse<'c>(context: &'c Context, (name, text): &(String, String)) -> Result<Module<'c>, String> {
    crate::input::parse_source(context, name, text)
}

/// The contractions, streamed results, contraction epilogues and row chains
/// the CPU backend makes of the fused kernels, one line each; nothing when
/// it makes none.
fn cpu_kernels(context: &Context, args: &ExplainArgs, source: &(String, String)) -> Result<String, String> {
    let mut module = parse(context, source)?;
    let options = jitc_compiler::CodegenOptions::default();
    let plan = jitc_compiler::cpu_plan(context, &mut module, &options).map_err(|e| e.to_string())?;
    let contractions: Vec<_> = jitc_compiler::contractions(&module, &options)
        .into_iter()
        .filter(|(_, _, hosts)| args.function.as_ref().is_none_or(|f| hosts.contains(f)))
        .collect();
    let mut text = String::new();
    if !contractions.is_empty() {
        text.push_str("contractions on the cpu backend (register tiles, schedule rule 6):\n");
        for (name, tiles, _) in contractions {
            text.push_str(&format!("  @{name}: {tiles}\n"));
        }
    }
    let streamed: Vec<_> = jitc_compiler::streamed_results(&module, &options)
        .into_iter()
        .filter(|(_, _, _, hosts)| args.function.as_ref().is_none_or(|f| hosts.contains(f)))
        .collect();
    if !streamed.is_empty() {
        text.push_str(
            "streamed results on the cpu backend (non-temporal stores: 8 MiB or more, returned):\n",
        );
        for (name, j, bytes, _) in streamed {
            text.push_str(&format!("  @{name} result {j}: {bytes} bytes\n"));
        }
    }
    let epilogues: Vec<_> = plan
        .epilogues
        .into_iter()
        .filter(|e| args.function.as_ref().is_none_or(|f| *f == e.host))
        .collect();
    if !epilogues.is_empty() {
        text.push_str(
            "contraction epilogues on the cpu backend (fused past rule 2; --jittor-rules makes none):\n",
        );
        for epilogue in epilogues {
            let written = match epilogue.sums_written {
                false => format!("the sums of @{} never reach memory", epilogue.contraction),
                true => format!(
                    "@{} still writes its sums, which more than @{} reads",
                    epilogue.contraction, epilogue.consumer
                ),
            };
            let calls = match epilogue.calls {
                1 => String::new(),
                n => format!(" ({n} calls)"),
            };
            text.push_str(&format!(
                "  @{} in @{}{calls} runs @{} on each tile of @{} as it finishes: {written}\n",
                epilogue.name, epilogue.host, epilogue.consumer, epilogue.contraction,
            ));
        }
    }
    let chains: Vec<_> = plan
        .chains
        .into_iter()
        .filter(|c| args.function.as_ref().is_none_or(|f| *f == c.host))
        .collect();
    if chains.is_empty() {
        return Ok(text);
    }
    text.push_str("row chains on the cpu backend (fused past rule 2; --jittor-rules makes none):\n");
    for chain in chains {
        let stages: Vec<String> = chain.stages.iter().map(|s| format!("@{s}")).collect();
        let reread = match chain.reread_row_bytes {
            0 => String::new(),
            bytes => format!("; {bytes} bytes of each row of its inputs are read again from cache"),
        };
        text.push_str(&format!(
            "  @{} in @{} runs {} one block of {} of its {} rows at a time: rows of {} bytes stay in cache{reread}\n",
            chain.name,
            chain.host,
            stages.join(", "),
            chain.block,
            chain.rows,
            chain.scratch_row_bytes,
        ));
    }
    Ok(text)
}

/// The row chains the GPU backend makes (fast math, the default), and the
/// contractions it tiles (the default), one line each; nothing when there
/// are none.
fn gpu_chains(context: &Context, args: &ExplainArgs, source: &(String, String)) -> Result<String, String> {
    let mut module = parse(context, source)?;
    let chains =
        match jitc_compiler::gpu_row_chains(context, &mut module, &jitc_compiler::GpuOptions::default()) {
            Ok(chains) => chains,
            // The CPU's plan above is the explanation; a GPU-only failure is a
            // line, not the command's error.
            Err(error) => return Ok(format!("row chains on the cuda backend: not planned: {error}\n")),
        };
    let chains: Vec<_> = chains
        .into_iter()
        .filter(|c| args.function.as_ref().is_none_or(|f| *f == c.host))
        .collect();
    let mut text = String::new();
    if !chains.is_empty() {
        text.push_str(
            "row chains on the cuda backend (one launch, a thread block per row; fast math; --jittor-rules makes none):\n",
        );
    }
    for chain in chains {
        let stages: Vec<String> = chain.stages.iter().map(|s| format!("@{s}")).collect();
        text.push_str(&format!(
            "  @{} in @{} runs {} on each of its {} rows in a block of its own: rows of {} bytes stay in shared memory\n",
            chain.name,
            chain.host,
            stages.join(", "),
            chain.rows,
            chain.scratch_row_bytes,
        ));
    }
    let tiled: Vec<_> = jitc_compiler::gpu_tiled_contractions(&module)
        .into_iter()
        .filter(|(_, _, hosts)| args.function.as_ref().is_none_or(|f| hosts.contains(f)))
        .collect();
    if !tiled.is_empty() {
        text.push_str(
            "contractions on the cuda backend as shared-memory tiles (--no-gpu-tiles makes none):\n",
        );
        for (name, tiles, _) in tiled {
            text.push_str(&format!("  @{name}: {tiles}\n"));
        }
    }
    Ok(text)
}

/// One line per function: how `jitc run --backend cpu` runs its host code.
fn host_schedules(
    context: &Context,
    args: &ExplainArgs,
    source: &(String, String),
) -> Result<String, String> {
    let mut module = parse(context, source)?;
    let compiled = jitc_runtime::CpuModule::compile_with(
        context,
        &mut module,
        &jitc_compiler::CodegenOptions::default(),
    )
    .map_err(|e| e.to_string())?;
    let mut text = String::from("host code on the cpu backend:\n");
    for (name, function) in jitc_dialect::ops::functions(module.body()) {
        if function.has_attribute("meta.fused") || args.function.as_ref().is_some_and(|f| *f != name) {
            continue;
        }
        let line = match compiled.fallback(&module, &name) {
            None => format!("  @{name}: native (host plan)\n"),
            Some(reason) => format!("  @{name}: interpreter: {reason}\n"),
        };
        text.push_str(&line);
    }
    // Kernels over a dynamic domain run natively when their sizes fit.
    for (name, function) in jitc_dialect::ops::functions(module.body()) {
        if function.has_attribute("meta.fused")
            && compiled.signature(&name).is_some_and(|s| s.sizes.is_some())
        {
            text.push_str(&format!(
                "  kernel @{name}: sizes read at each call; a call whose sizes disagree (two values of \
                 the domain's type with different sizes) runs in the interpreter\n"
            ));
        }
    }
    Ok(text)
}
