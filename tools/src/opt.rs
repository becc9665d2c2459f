//! `jitc opt`: parse, verify, run passes and print, as `mlir-opt` does.

use clap::Args;
use jitc_compiler::{
    Chunk, Diagnostic, DiagnosticCollector, IrPrinting, OptimizeOptions, Pipeline, Position, SPLIT_MARKER,
    Severity, check_expectations, check_split_marker, is_known_pass, list_passes, name_locations, optimize,
    parse_expectations, parse_module,
    pipelines::{self, Element},
    render_diagnostic, split_input,
};
use melior::{Context, ir::operation::OperationLike};
use std::{path::PathBuf, process::ExitCode};

/// Verify MLIR, run passes on it and print the result, as mlir-opt does.
///
/// The input may use the `meta` dialect and the upstream dialects. It is
/// parsed, checked by the meta dialect's semantic verifier, transformed by
/// the passes given, verified again and printed.
///
/// Passes are given either as a pipeline (`--pass-pipeline`) or as one flag
/// per pass, in order: every pass of `--list-passes`, and every upstream MLIR
/// pass under its mlir-opt name, is also a flag, e.g. `--meta-dce`,
/// `--canonicalize`, `--cse`. Options go after `=`, as
/// `--canonicalize="max-iterations=3"`.
///
/// Flags are spelled as mlir-opt spells them: a long flag may start with
/// one dash or two (`-split-input-file` is `--split-input-file`), a switch
/// may be given a value as in LLVM (`-verify-each=false`,
/// `-mlir-timing=1`), and only `-o` and `-p` (`--pass-pipeline`) are
/// short flags.
///
/// With --split-input-file, chunks are independent, as in mlir-opt: every
/// chunk's output is printed in order (a failed chunk prints nothing
/// between its separators), its diagnostics in its place, and the exit
/// status is 1 if any chunk failed.
///
/// Exit status: 0 on success, 1 on any error.
#[derive(Debug, Args)]
#[command(
    after_long_help = "Examples:\n  jitc opt examples/sigmoid.mlir\n  jitc opt in.mlir --meta-cse --meta-dce -o out.mlir\n  jitc opt in.mlir --pass-pipeline='builtin.module(meta-cse,func.func(canonicalize))'\n  jitc opt tests.mlir --split-input-file --verify-diagnostics"
)]
pub struct OptArgs {
    /// Input file; `-` reads standard input.
    #[arg(default_value = "-", value_name = "INPUT")]
    input: PathBuf,

    /// Output file; `-` writes standard output. Left untouched on error.
    #[arg(short, long, default_value = "-", value_name = "FILE")]
    output: PathBuf,

    /// Passes to run, in MLIR's pipeline syntax anchored on builtin.module,
    /// e.g. 'builtin.module(meta-cse,func.func(canonicalize))'.
    #[arg(long, short = 'p', value_name = "PIPELINE")]
    pass_pipeline: Option<String>,

    /// Split the input at each `// -----`, or at the marker given after
    /// `=` (anywhere in a line, as mlir-opt splits; the marker short of its
    /// last two characters is reported as a near miss), and process each
    /// piece on its own; outputs are joined with --output-split-marker.
    /// Lines and columns stay those of the whole file.
    #[arg(long, value_name = "MARKER", num_args = 0..=1, require_equals = true,
          default_missing_value = SPLIT_MARKER)]
    split_input_file: Option<String>,

    /// The line that joins the outputs of split chunks (empty: an empty
    /// line).
    #[arg(long, value_name = "MARKER", default_value = SPLIT_MARKER)]
    output_split_marker: String,

    /// Check diagnostics against `expected-error`, `expected-warning`,
    /// `expected-remark` and `expected-note` comments (with `@+N`, `@-N`,
    /// `@above`, `@below`, `@unknown`, and `-re` for `{{regex}}` blocks),
    /// read and reported as mlir-opt does, instead of printing them.
    /// Succeeds when every diagnostic was expected and every expectation
    /// was produced.
    #[arg(long)]
    verify_diagnostics: bool,

    /// List jitc's own passes with their options, and exit.
    #[arg(long)]
    list_passes: bool,

    /// List the named pipelines jitc runs (each usable with
    /// --pass-pipeline), and exit.
    #[arg(long)]
    list_pipelines: bool,

    /// Print the whole module to stderr after every pass (jitc's own
    /// spelling; mlir-opt's is `--mlir-print-ir-after-all
    /// --mlir-print-ir-module-scope`).
    #[arg(long)]
    print_ir_after_all: bool,

    /// Print the IR to stderr before each of these passes (pass names as
    /// in pipelines, comma-separated or repeated), as mlir-opt does: the op
    /// the pass runs on, or the whole module with
    /// --mlir-print-ir-module-scope.
    #[arg(long, value_name = "PASS", value_delimiter = ',')]
    mlir_print_ir_before: Vec<String>,

    /// Print the IR to stderr after each of these passes (as
    /// --mlir-print-ir-before).
    #[arg(long, value_name = "PASS", value_delimiter = ',')]
    mlir_print_ir_after: Vec<String>,

    /// Print the IR to stderr before every pass.
    #[arg(long)]
    mlir_print_ir_before_all: bool,

    /// Print the IR to stderr after every pass.
    #[arg(long)]
    mlir_print_ir_after_all: bool,

    /// When printing the IR after a pass, print it only if the pass
    /// changed it.
    #[arg(long)]
    mlir_print_ir_after_change: bool,

    /// Print the IR after a pass only if the pass failed (alone: after
    /// every pass that fails).
    #[arg(long)]
    mlir_print_ir_after_failure: bool,

    /// Print the whole module, not only the op a pass ran on, when printing
    /// the IR before or after passes.
    #[arg(long)]
    mlir_print_ir_module_scope: bool,

    /// Accept ops of dialects that are not registered (`"test.op"() : () ->
    /// ()`), kept as they are.
    #[arg(long)]
    allow_unregistered_dialect: bool,

    /// Print ops in MLIR's generic form.
    #[arg(long)]
    mlir_print_op_generic: bool,

    /// Print each op's location.
    #[arg(long)]
    mlir_print_debuginfo: bool,

    /// Print locations in a readable form (with --mlir-print-debuginfo).
    #[arg(long)]
    mlir_pretty_debuginfo: bool,

    /// Print elements attributes of more than N elements elided, as
    /// `dense_resource<__elided__>`.
    #[arg(long, value_name = "N")]
    mlir_elide_elementsattrs_if_larger: Option<usize>,

    /// Print each op in its local scope (aliases inline, as when it is
    /// printed alone).
    #[arg(long)]
    mlir_print_local_scope: bool,

    /// Run MLIR's verifier after each pass (the default); `=false` skips
    /// it (jitc's meta verifier still runs before and after the pipeline).
    #[arg(long, value_name = "BOOL", default_value_t = true, action = clap::ArgAction::Set,
          value_parser = clap::builder::BoolishValueParser::new(),
          num_args = 0..=1, default_missing_value = "true")]
    verify_each: bool,

    /// Print the pass pipeline, every option spelled out, to stderr before
    /// running it (once per chunk).
    #[arg(long)]
    dump_pass_pipeline: bool,

    /// Report the time each pass took to stderr (MLIR's execution time
    /// report, one per chunk).
    #[arg(long)]
    mlir_timing: bool,

    /// Run passes on one thread.
    #[arg(long)]
    mlir_disable_threading: bool,
}

/// The long flags `jitc opt` itself defines; anything else that names a
/// pass is a pass flag.
fn own_flags() -> Vec<String> {
    OptArgs::augment_args(clap::Command::new("opt"))
        .get_arguments()
        .filter_map(|a| a.get_long().map(str::to_owned))
        .chain(["help".to_owned(), "version".to_owned()])
        .collect()
}

/// `jitc opt`'s flags that may take their value as the next argument.
const TAKES_VALUE: [&str; 7] = [
    "-o",
    "--output",
    "-p",
    "--pass-pipeline",
    "--mlir-print-ir-before",
    "--mlir-print-ir-after",
    "--mlir-elide-elementsattrs-if-larger",
];

/// The switches among [`own_flags`]: flags that take no value in clap,
/// and that LLVM's command line lets a user write `-flag=true` or
/// `-flag=false`.
fn own_switches() -> Vec<String> {
    OptArgs::augment_args(clap::Command::new("opt"))
        .get_arguments()
        .filter(|a| matches!(a.get_action(), clap::ArgAction::SetTrue))
        .filter_map(|a| a.get_long().map(str::to_owned))
        .collect()
}

/// One argument of `jitc opt` in clap's spelling: `-flag` becomes
/// `--flag` (mlir-opt's single-dash long flags, and unknown ones too, so
/// that clap names them whole), and a switch given a value LLVM reads
/// as true loses it, one given false is dropped (`None`). `-o` and `-p`
/// stay short.
fn clap_spelling(arg: String, switches: &[String]) -> Option<String> {
    let arg = match arg.strip_prefix('-') {
        Some(flag)
            if !flag.starts_with('-') && flag.split_once('=').map_or(flag, |(name, _)| name).len() > 1 =>
        {
            format!("-{arg}")
        }
        _ => arg,
    };
    let Some((name, value)) = arg.strip_prefix("--").and_then(|flag| flag.split_once('=')) else {
        return Some(arg);
    };
    if !switches.iter().any(|s| s == name) {
        return Some(arg);
    }
    match value {
        "true" | "TRUE" | "True" | "1" => Some(format!("--{name}")),
        "false" | "FALSE" | "False" | "0" => None,
        _ => Some(arg),
    }
}

/// Takes pass flags out of `args` (which start with `jitc opt`), in order.
/// A flag that is not `opt`'s own and names no pass stays for clap to
/// reject.
pub fn extract_pass_flags(context: &Context, args: Vec<String>) -> (Vec<String>, Vec<Element>) {
    let own = own_flags();
    let switches = own_switches();
    let mut rest = Vec::new();
    let mut flags = Vec::new();
    let mut after_separator = false;
    // The argument after a flag that takes its value separately.
    let mut is_value = false;
    for arg in args {
        after_separator |= arg == "--";
        let value = std::mem::replace(&mut is_value, false);
        // mlir-opt's spelling: a long flag with one dash.
        let arg = if after_separator || value {
            arg
        } else {
            match clap_spelling(arg, &switches) {
                Some(arg) => arg,
                None => continue,
            }
        };
        is_value = !after_separator && TAKES_VALUE.contains(&arg.as_str());
        let pass = arg
            .strip_prefix("--")
            .or_else(|| arg.strip_prefix('-'))
            .filter(|_| !after_separator)
            .map(|flag| flag.split_once('=').unwrap_or((flag, "")))
            .filter(|(name, _)| !name.is_empty() && !own.iter().any(|o| o == name))
            .filter(|(name, _)| name.len() > 1 && is_known_pass(context, name));
        match pass {
            Some((name, options)) => {
                let options = options.trim_matches('"').trim_matches('\'');
                flags.push(Element::pass(name, options));
            }
            None => rest.push(arg),
        }
    }
    (rest, flags)
}

/// Runs `jitc opt`.
pub fn run(context: &Context, args: OptArgs, pass_flags: Vec<Element>) -> ExitCode {
    if args.list_passes {
        return finish(crate::output::print(format!(
            "jitc passes:\n{}\nUpstream MLIR 22 passes are available too, under the names mlir-opt gives them\n(canonicalize, cse, inline, symbol-dce, loop-invariant-code-motion, ...).\nIRDL ops have no traits, so upstream cse and canonicalize leave meta ops alone:\nuse meta-cse and meta-dce for those.\n",
            list_passes()
        )));
    }
    if args.list_pipelines {
        return finish(crate::output::print(format!(
            "jitc pipelines:\n{}\nRun one with --pass-pipeline='<text>'.\n",
            pipelines::list()
        )));
    }
    context.set_allow_unregistered_dialects(args.allow_unregistered_dialect);
    if args.mlir_disable_threading {
        context.enable_multi_threading(false);
    }
    match opt(context, &args, pass_flags) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(message) => finish(Err(message)),
    }
}

fn finish(result: Result<(), String>) -> ExitCode {
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("jitc opt: error: {message}");
            ExitCode::FAILURE
        }
    }
}

/// Returns whether every chunk succeeded; `Err` for problems outside the
/// input (files, pipeline text).
fn opt(context: &Context, args: &OptArgs, pass_flags: Vec<Element>) -> Result<bool, String> {
    let pipeline = match (&args.pass_pipeline, pass_flags.is_empty()) {
        (Some(_), false) => {
            return Err("--pass-pipeline cannot be combined with individual pass flags".into());
        }
        (Some(text), true) => Pipeline::parse(text).map_err(|e| e.to_string())?,
        (None, _) => Pipeline::from_elements(pass_flags),
    };
    // Passes read no files: load the profiles the pipeline names here.
    let mut pipeline = pipeline;
    crate::input::load_pipeline_profiles(&mut pipeline)?;
    if let Some(marker) = args.split_input_file.as_deref().filter(|m| !m.is_empty()) {
        check_split_marker(marker).map_err(|e| format!("--split-input-file: {e}"))?;
    }
    // Reject unknown passes and options once, before reading any input.
    pipelines::check(context, &pipeline).map_err(|e| e.to_string())?;

    for (flag, passes) in [
        ("--mlir-print-ir-before", &args.mlir_print_ir_before),
        ("--mlir-print-ir-after", &args.mlir_print_ir_after),
    ] {
        if let Some(pass) = passes.iter().find(|pass| !is_known_pass(context, pass)) {
            return Err(format!(
                "{flag}: there is no pass named '{pass}' (--list-passes lists jitc's; upstream passes go by their mlir-opt names)"
            ));
        }
    }

    let (name, text) = crate::input::read_source(&args.input)?;
    let (chunks, near_misses) = if let Some(marker) = &args.split_input_file {
        // `--split-input-file=` is the default marker, as in mlir-opt.
        let marker = if marker.is_empty() { SPLIT_MARKER } else { marker };
        let split = split_input(&text, marker);
        (split.chunks, split.near_misses)
    } else {
        (vec![Chunk::whole(&text)], Vec::new())
    };
    // As mlir-opt: near misses are reported before any chunk is processed.
    for position in near_misses {
        let warning = Diagnostic::warning(Some(position), "near miss with file split marker");
        eprint!("{}", render_diagnostic(&warning, &name, &text));
    }
    let collector = DiagnosticCollector::for_input(context, &name);
    let options = OptimizeOptions {
        ir_printing: ir_printing(args),
        no_verify_each: !args.verify_each,
        timing: args.mlir_timing,
    };
    let dump = if args.dump_pass_pipeline {
        Some(pipeline.dump(context).map_err(|e| e.to_string())?)
    } else {
        None
    };
    let mut outputs = Vec::new();
    let mut all_ok = true;
    let mut stderr = String::new();
    for chunk in &chunks {
        let (output, mut diagnostics) = if text.trim().is_empty() {
            let empty = Diagnostic::error(
                Some(Position { line: 1, column: 1 }),
                "the input is empty; expected MLIR operations",
            );
            (None, vec![empty])
        } else {
            let output = process(
                context,
                (&name, chunk),
                &pipeline,
                &options,
                args,
                dump.as_deref(),
                &mut stderr,
            );
            (output, collector.take())
        };
        let ok = if args.verify_diagnostics {
            // mlir-opt turns MLIR's printing of the op on a diagnostic off
            // when it verifies diagnostics; the C API cannot, so the notes
            // it adds are dropped here.
            for diagnostic in &mut diagnostics {
                diagnostic
                    .notes
                    .retain(|note| !note.message.starts_with("see current operation: "));
            }
            // Malformed expectations are reported first; the rest are
            // still checked.
            let (expectations, mut problems) = parse_expectations(&chunk.text);
            problems.extend(check_expectations(&expectations, &diagnostics));
            diagnostics = problems;
            diagnostics.is_empty()
        } else {
            output.is_some() && !diagnostics.iter().any(|d| d.severity == Severity::Error)
        };
        for diagnostic in &diagnostics {
            stderr.push_str(&render_diagnostic(diagnostic, &name, &text));
        }
        // Each chunk's messages as it finishes, so they interleave with
        // what MLIR itself prints (timing reports), as in mlir-opt.
        eprint!("{stderr}");
        stderr.clear();
        all_ok &= ok;
        // A chunk that failed prints nothing between its separators; with
        // --verify-diagnostics, a chunk whose passes ran prints its output
        // whatever the verification found, as mlir-opt's does.
        let printed = if args.verify_diagnostics {
            output
        } else {
            output.filter(|_| ok)
        };
        outputs.push(printed.unwrap_or_default());
    }
    eprint!("{stderr}");
    let output = outputs.join(&format!("{}\n", args.output_split_marker));
    // Standard output gets every chunk's output, as mlir-opt's does; a
    // file is left untouched unless every chunk succeeded.
    if all_ok || args.output.as_os_str() == "-" {
        crate::output::emit(&args.output, output)?;
    }
    Ok(all_ok)
}

/// Parses, verifies and transforms one chunk; `None` when any step failed
/// (its diagnostics are in the collector).
fn process(
    context: &Context,
    (name, chunk): (&str, &Chunk),
    pipeline: &Pipeline,
    options: &OptimizeOptions,
    args: &OptArgs,
    dump: Option<&str>,
    stderr: &mut String,
) -> Option<String> {
    let mut module = parse_module(context, &chunk.text)?;
    name_locations(context, &mut module, name, chunk);
    // As mlir-opt: the pipeline of each chunk that parsed, before it runs.
    stderr.push_str(dump.unwrap_or(""));
    // Printing before or after some passes only: MLIR prints before or
    // after every pass to the standard error, and the dumps of the passes
    // not asked for are dropped here.
    let result = match &IrDumpFilter::of(args) {
        None => optimize(context, &mut module, pipeline, options),
        Some(filter) => {
            let (result, dumps) =
                crate::output::capture_stderr(|| optimize(context, &mut module, pipeline, options));
            match dumps {
                Ok(dumps) => stderr.push_str(&filter.apply(&dumps)),
                Err(e) => stderr.push_str(&format!("jitc opt: warning: the IR dumps were lost: {e}\n")),
            }
            result
        }
    };
    match result {
        Ok(()) => Some(format!("{}\n", print(&module, args)?)),
        Err(jitc_compiler::Error::VerifierFailedAfterPipeline(pipeline)) => {
            jitc_dialect::emit_error(
                module.as_operation().location(),
                &format!("internal compiler error: the meta verifier failed after the pipeline '{pipeline}'"),
            );
            None
        }
        Err(_) => None,
    }
}

/// Whether the flags ask for the IR before every pass, and after every
/// pass (`--mlir-print-ir-after-failure` alone prints after every pass
/// that fails).
fn prints_all(args: &OptArgs) -> (bool, bool) {
    (
        args.mlir_print_ir_before_all,
        args.mlir_print_ir_after_all || args.print_ir_after_all || args.mlir_print_ir_after_failure,
    )
}

/// How MLIR prints IR around passes, from the flags.
fn ir_printing(args: &OptArgs) -> Option<IrPrinting> {
    let (all_before, all_after) = prints_all(args);
    let before_all = all_before || !args.mlir_print_ir_before.is_empty();
    let after_all = all_after || !args.mlir_print_ir_after.is_empty();
    (before_all || after_all).then_some(IrPrinting {
        before_all,
        after_all,
        module_scope: args.mlir_print_ir_module_scope || args.print_ir_after_all,
        after_change: args.mlir_print_ir_after_change,
        after_failure: args.mlir_print_ir_after_failure,
        generic: args.mlir_print_op_generic,
        debuginfo: args.mlir_print_debuginfo,
        local_scope: args.mlir_print_local_scope,
        pretty_debuginfo: args.mlir_pretty_debuginfo,
        elide_elements_above: args.mlir_elide_elementsattrs_if_larger,
    })
}

/// Which of MLIR's IR dumps to keep: `None` keeps every dump of that kind.
struct IrDumpFilter {
    before: Option<Vec<String>>,
    after: Option<Vec<String>>,
}

impl IrDumpFilter {
    /// The filter the flags ask for: `None` when they name no pass (MLIR
    /// prints only what is asked for).
    fn of(args: &OptArgs) -> Option<Self> {
        if args.mlir_print_ir_before.is_empty() && args.mlir_print_ir_after.is_empty() {
            return None;
        }
        let (all_before, all_after) = prints_all(args);
        let keep = |list: &[String], all: bool| (!all).then(|| list.to_vec());
        Some(IrDumpFilter {
            before: keep(&args.mlir_print_ir_before, all_before),
            after: keep(&args.mlir_print_ir_after, all_after),
        })
    }

    /// The dumps of `text` (MLIR's, each starting with a line
    /// `// -----// IR Dump Before|After <Name> (<pass>)...` and ending with
    /// empty lines) to keep, in order; text outside dumps (a timing
    /// report, a warning) is kept.
    fn apply(&self, text: &str) -> String {
        const HEADER: &str = "// -----// IR Dump ";
        let mut out = String::new();
        // Inside a dump that is dropped; then in the empty lines after it.
        let (mut dropping, mut trailing) = (false, false);
        for line in text.split_inclusive('\n') {
            if trailing {
                if line.trim().is_empty() {
                    continue;
                }
                trailing = false;
            }
            if let Some(rest) = line.strip_prefix(HEADER) {
                let (list, rest) = match rest.split_once(' ') {
                    Some(("Before", rest)) => (&self.before, rest),
                    Some(("After", rest)) => (&self.after, rest),
                    _ => (&None, rest),
                };
                let pass = rest
                    .split_once(" (")
                    .and_then(|(_, p)| p.split_once(')'))
                    .map(|(p, _)| p);
                dropping = match (list, pass) {
                    (Some(list), Some(pass)) => !list.iter().any(|p| p == pass),
                    _ => false,
                };
            }
            if !dropping {
                out.push_str(line);
            } else if line.trim().is_empty() {
                // A dump ends with empty lines (the IR holds none).
                dropping = false;
                trailing = true;
            }
        }
        out
    }
}

/// The module as the print flags say.
fn print(module: &melior::ir::Module, args: &OptArgs) -> Option<String> {
    let printing = IrPrinting {
        generic: args.mlir_print_op_generic,
        debuginfo: args.mlir_print_debuginfo,
        local_scope: args.mlir_print_local_scope,
        pretty_debuginfo: args.mlir_pretty_debuginfo,
        elide_elements_above: args.mlir_elide_elementsattrs_if_larger,
        ..IrPrinting::default()
    };
    if !(printing.generic
        || printing.debuginfo
        || printing.local_scope
        || printing.elide_elements_above.is_some())
    {
        return Some(module.as_operation().to_string());
    }
    module.as_operation().to_string_with_flags(printing.flags()).ok()
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_dump_filter_keeps_the_passes_asked_for() {
        let dumps = "// -----// IR Dump Before CSE (cse) //----- //\nA\n\n\nnot a dump\n// -----// IR Dump After CSE (cse) //----- //\nB\n\n// -----// IR Dump Before Canonicalizer (canonicalize) //----- //\nC\n";
        let filter = super::IrDumpFilter {
            before: Some(vec!["canonicalize".to_owned()]),
            after: None,
        };
        // Text after a dropped dump's empty line is kept.
        assert_eq!(
            filter.apply(dumps),
            "not a dump\n// -----// IR Dump After CSE (cse) //----- //\nB\n\n// -----// IR Dump Before Canonicalizer (canonicalize) //----- //\nC\n"
        );
    }

    #[test]
    fn help_mentions_every_flag() {
        use clap::Args;
        let help = super::OptArgs::augment_args(clap::Command::new("opt"))
            .render_long_help()
            .to_string();
        for flag in super::own_flags()
            .into_iter()
            .filter(|f| f != "help" && f != "version")
        {
            assert!(help.contains(&format!("--{flag}")), "--{flag} is not in the help");
        }
    }
}
