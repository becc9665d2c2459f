//! `jitc bench`: times a function, as `iree-benchmark-module` does.

use crate::run::{Backend, Program, ProgramArgs, read_inputs, read_states};
use clap::Args;
use jitc_interp::Value;
use jitc_runtime::{CompileCache, KernelTime};
use melior::Context;
use std::{
    process::ExitCode,
    time::{Duration, Instant},
};

/// Time a function: compile once, warm up, then repeat and report the
/// median and minimum time per call, as iree-benchmark-module does.
///
/// Inputs and state are given as for `jitc run`. Every call gets fresh
/// copies of the inputs and state (copied outside the timed region) and
/// allocates its outputs, inside it. Bytes moved are the inputs read plus
/// the results written once each: a lower bound on the memory traffic, so
/// GB/s is meaningful for memory-bound functions.
///
/// `--kernels` also times each kernel call during the timed calls and
/// prints, per kernel, its calls and milliseconds per function call and
/// its share of a call (means over the timed calls): where the time goes,
/// as a profiler's flat view does (the CPU backend; its calls are timed
/// whole, the worker team's split included, at the cost of two clock
/// reads and a lock a call; calls the interpreter runs are host code).
///
/// Exit status: 0 on success, 1 on any error.
#[derive(Debug, Args)]
#[command(
    after_long_help = "Example:\n  jitc bench examples/sigmoid.mlir --backend cpu --input 1024xf32=0.5 --repetitions 50"
)]
pub struct BenchArgs {
    #[command(flatten)]
    program: ProgramArgs,

    /// Untimed calls before measuring.
    #[arg(long, default_value_t = 2, value_name = "N")]
    warmup: usize,

    /// Timed calls.
    #[arg(long, default_value_t = 10, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    repetitions: u64,

    /// Also time each kernel during the timed calls and print them, the
    /// costliest first (`--backend cpu`).
    #[arg(long)]
    kernels: bool,
}

/// Runs `jitc bench`.
pub fn run(context: &Context, args: BenchArgs) -> ExitCode {
    match bench(context, &args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("jitc bench: error: {message}");
            ExitCode::FAILURE
        }
    }
}

fn bytes(values: &[Value]) -> usize {
    values
        .iter()
        .map(|v| match v {
            Value::Tensor(t) => t.len() * t.element_type().byte_width(),
            Value::Scalar(s) => s.element_type().byte_width(),
            Value::Index(_) => 8,
        })
        .sum()
}

fn milliseconds(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1e3
}

fn bench(context: &Context, args: &BenchArgs) -> Result<(), String> {
    let calls = usize::try_from(args.repetitions)
        .ok()
        .and_then(|timed| timed.checked_add(args.warmup))
        .ok_or_else(|| {
            format!(
                "--warmup {} and --repetitions {} are more calls than can be counted",
                args.warmup, args.repetitions
            )
        })?;
    let common = &args.program;
    let cache = CompileCache::new(context);
    let program = Program::load_with(context, Some(&cache), common, "bench")?;
    // Compiling the same module again is served by the caches: without a
    // `CompileCache` by the process's cache of printed modules (print, look
    // up, parse the fused module: what a new context gets), and with this
    // context's `CompileCache` by it (fingerprint, look up, copy the fused
    // module).
    let cached = match common.backend {
        Backend::Cpu => {
            let again = |cache| Program::from_source(context, cache, common, "bench", program.source.clone());
            let process = again(None)?.compile_time;
            let local = again(Some(&cache))?.compile_time;
            Some((process, local))
        }
        Backend::Interp | Backend::Cuda => None,
    };
    let interpreter = program.interpreter();
    let signature = interpreter
        .signature(&common.function)
        .map_err(|e| e.to_string())?;
    let inputs = read_inputs(&signature, &common.inputs, &common.function)?;
    let state = read_states(&common.states)?;
    program.note_schedule(&common.function, "bench");
    let timed_kernels = match (&program.compiled, args.kernels) {
        (_, false) => None,
        (Some(compiled), true) if matches!(common.backend, Backend::Cpu) => Some(compiled),
        (_, true) => {
            return Err(format!(
                "--kernels times the kernels of the cpu backend, not of {}",
                common.backend.name()
            ));
        }
    };
    let mut samples = Vec::new();
    let mut results = Vec::new();
    for call in 0..calls {
        if call == args.warmup
            && let Some(compiled) = timed_kernels
        {
            compiled.set_kernel_timing(true);
        }
        let (inputs, mut state) = (inputs.iter().map(deep_copy).collect(), state.clone());
        let start = Instant::now();
        results = program.run(&common.function, inputs, &mut state)?;
        let elapsed = start.elapsed();
        if call >= args.warmup {
            samples.push(elapsed);
        }
    }
    samples.sort();
    let median = samples[samples.len() / 2];
    let moved = bytes(&inputs) + bytes(&results);
    let backend = common.backend.name();
    let mut report = format!("function: @{} ({backend} backend)\n", common.function);
    report += &match cached {
        Some((process, local)) => format!(
            "compile: {:.2} ms cold; from the cache {:.3} ms (printed module), {:.1} µs (this context's CompileCache)\n",
            milliseconds(program.compile_time),
            milliseconds(process),
            local.as_secs_f64() * 1e6
        ),
        None => format!("compile: {:.2} ms\n", milliseconds(program.compile_time)),
    };
    report += &format!(
        "calls: {} timed after {} warm-up; median {:.3} ms, min {:.3} ms\n",
        samples.len(),
        args.warmup,
        milliseconds(median),
        milliseconds(samples[0])
    );
    report += &format!(
        "bytes moved: {moved} per call; {:.3} GB/s at the median\n",
        moved as f64 / median.as_secs_f64() / 1e9
    );
    if let Some(compiled) = timed_kernels {
        let times = compiled.kernel_times();
        compiled.set_kernel_timing(false);
        report += &kernel_report(&times, &samples);
    }
    crate::output::print(&report)
}

/// The `--kernels` table: per kernel, calls and milliseconds per function
/// call and the share of a call, all means over the `samples` (so the
/// shares of a call's kernels add up to at most 100%), the costliest
/// first, then their sum against the mean call.
fn kernel_report(times: &[(String, KernelTime)], samples: &[Duration]) -> String {
    let calls = samples.len();
    let mean = samples.iter().sum::<Duration>() / calls.max(1) as u32;
    let mut rows: Vec<&(String, KernelTime)> = times.iter().collect();
    rows.sort_by(|a, b| b.1.total.cmp(&a.1.total).then_with(|| a.0.cmp(&b.0)));
    let per_call = |d: Duration| milliseconds(d) / calls as f64;
    let width = rows
        .iter()
        .map(|(name, _)| name.len() + 1)
        .max()
        .unwrap_or(6)
        .max(6);
    let mut out = format!(
        "kernels, the mean per call of the function ({calls} timed calls):\n  {:<width$}  {:>9}  {:>9}  {:>6}\n",
        "kernel", "calls", "ms", "share"
    );
    let mut sum = Duration::ZERO;
    for (name, time) in &rows {
        sum += time.total;
        out += &format!(
            "  {:<width$}  {:>9.1}  {:>9.3}  {:>5.1}%\n",
            format!("@{name}"),
            time.calls as f64 / calls as f64,
            per_call(time.total),
            100.0 * per_call(time.total) / milliseconds(mean)
        );
    }
    if rows.is_empty() {
        out += "  (no kernel ran natively)\n";
    }
    out += &format!(
        "kernels in all: {:.3} ms of the mean call's {:.3} ms; the rest is host code (the plan, allocation, guards, anything interpreted)\n",
        per_call(sum),
        milliseconds(mean)
    );
    out
}

/// A copy that shares nothing with `value`, so no call sees another's
/// buffers.
fn deep_copy(value: &Value) -> Value {
    match value {
        Value::Tensor(t) => Value::tensor((**t).clone()),
        other => other.clone(),
    }
}
