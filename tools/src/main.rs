//! `jitc`: the command line of the jitc compiler toolchain.
//!
//! This is the only crate that parses flags. Each subcommand lives in its
//! own module; they print results to stdout, diagnostics to stderr, and exit
//! 0 on success and 1 on any error, as `mlir-opt` does.

mod bench;
mod cache;
mod compile;
mod explain;
mod input;
mod opt;
mod output;
mod run;

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};
use std::process::ExitCode;

/// jitc: an MLIR-based compiler for tensor programs built from Jittor's
/// meta-operators (reindex, reindex-reduce, element-wise), with JANUS-style
/// speculation guards.
#[derive(Debug, Parser)]
#[command(
    name = "jitc",
    version,
    about,
    long_about,
    arg_required_else_help = true,
    term_width = 100
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    Opt(opt::OptArgs),
    Run(run::RunArgs),
    Explain(explain::ExplainArgs),
    Compile(compile::CompileArgs),
    Bench(bench::BenchArgs),
    Cache(cache::CacheArgs),
}

/// The stack of the thread that does the work. MLIR's parser, verifier and
/// walks, and the interpreter, recurse once per level of nesting; with
/// this much stack every level up to [`input::MAX_NESTING`] fits (the
/// memory is only reserved, and touched as deep as a program goes).
const STACK_BYTES: usize = 1 << 30;

/// The nesting limit when the worker's stack cannot be reserved (`ulimit
/// -v`, strict overcommit) and the work runs on the main thread's 8 MiB.
const FALLBACK_NESTING: usize = 200;

fn main() -> ExitCode {
    ignore_file_size_signal();
    if let Err(message) = jitc_interp::tensor::configured_max_elements() {
        eprintln!("jitc: error: {message}");
        return ExitCode::FAILURE;
    }
    match jitc_runtime::cpu::configured_thread_count() {
        Err(message) => {
            eprintln!("jitc: error: {message}");
            return ExitCode::FAILURE;
        }
        Ok(Some(asked)) if asked > jitc_runtime::cpu::MAX_THREADS => eprintln!(
            "jitc: note: JITC_NUM_THREADS is {asked}: kernels use at most {} threads",
            jitc_runtime::cpu::MAX_THREADS
        ),
        Ok(_) => {}
    }
    let worker = std::thread::Builder::new()
        .name("jitc".into())
        .stack_size(STACK_BYTES)
        .spawn(run);
    match worker.map(std::thread::JoinHandle::join) {
        Ok(Ok(code)) => code,
        // A panic has printed its message; it is a bug, never user error.
        Ok(Err(_)) => ExitCode::from(101),
        Err(error) => {
            eprintln!(
                "jitc: note: cannot reserve a {} MiB stack ({error}); files nested more than {FALLBACK_NESTING} levels deep are refused",
                STACK_BYTES >> 20
            );
            input::limit_nesting(FALLBACK_NESTING);
            run()
        }
    }
}

/// Makes a write past the file-size limit (`ulimit -f`) fail with an
/// error the tool reports, instead of a signal that kills it halfway.
fn ignore_file_size_signal() {
    // SAFETY: setting a signal's disposition to "ignore" installs no
    // handler code and is done before any other thread exists.
    unsafe {
        libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
    }
}

fn run() -> ExitCode {
    // File names included: a name that is not UTF-8 is refused, in words.
    let args: Result<Vec<String>, _> = std::env::args_os()
        .enumerate()
        .map(|(i, arg)| arg.into_string().map_err(|arg| (i, arg)))
        .collect();
    let args = match args {
        Ok(args) => args,
        Err((i, arg)) => {
            eprintln!(
                "jitc: error: argument {i} ({}) is not valid UTF-8; jitc reads its arguments, file names included, as UTF-8",
                arg.to_string_lossy()
            );
            return ExitCode::FAILURE;
        }
    };
    let context = match jitc_compiler::new_context() {
        Ok(context) => context,
        Err(error) => {
            eprintln!("jitc: error: {error}");
            return ExitCode::FAILURE;
        }
    };
    // Pass flags (`--canonicalize`, `--meta-dce`) are taken out before clap
    // sees the arguments; see `opt::extract_pass_flags`.
    let (args, pass_flags) = if args.get(1).map(String::as_str) == Some("opt") {
        opt::extract_pass_flags(&context, args)
    } else {
        (args, Vec::new())
    };
    let matches = match Cli::command().try_get_matches_from(args) {
        Ok(matches) => matches,
        Err(error) => {
            let printed = error.print();
            // --help and --version are not errors, unless they could not
            // be printed; everything else exits 1.
            return if error.use_stderr() || printed.is_err() {
                ExitCode::FAILURE
            } else {
                ExitCode::SUCCESS
            };
        }
    };
    let cli = match Cli::from_arg_matches(&matches) {
        Ok(cli) => cli,
        Err(error) => {
            let _ = error.print();
            return ExitCode::FAILURE;
        }
    };
    match cli.command {
        Command::Opt(args) => opt::run(&context, args, pass_flags),
        Command::Run(args) => run::run(&context, args),
        Command::Explain(args) => explain::run(&context, args),
        Command::Compile(args) => compile::run(&context, args),
        Command::Bench(args) => bench::run(&context, args),
        Command::Cache(args) => cache::run(&context, args),
    }
}
