//! `jitc compile`: the native code `jitc run --backend cpu` would run.

use clap::{Args, ValueEnum};
use jitc_compiler::{CodegenOptions, CpuTarget, Emit, GpuArch, GpuOptions, MathMode};
use melior::Context;
use std::{path::PathBuf, process::ExitCode};

/// Compile a module's kernels to MLIR loops, LLVM IR, assembly, an object
/// or PTX.
///
/// The module is verified and fused (meta-fuse), then each meta.fused
/// kernel is lowered to a loop nest over raw buffers, converted to LLVM,
/// optimized with LLVM's default<O3> pipeline and emitted.
///
/// `--target cpu` (the default) compiles for this machine; `--cpu` and
/// `--target-features` pick another CPU, which makes the output
/// deterministic for tests, e.g. `--cpu x86-64-v3`. `--target nvptx`
/// compiles GPU kernels for NVIDIA GPUs (`--gpu-arch`, sm_80 by default);
/// `--emit ptx` writes the PTX a CUDA driver loads. No GPU is needed.
///
/// `--check-bounds` compiles the kernels `jitc run --check-bounds` runs:
/// every element load and store checked against its buffer's extent.
///
/// Kernels that cannot be lowered yet (dynamic shapes; on the GPU, math
/// that needs NVIDIA's libdevice when `JITC_LIBDEVICE` names no
/// `libdevice.10.bc` and CUDA has none in /usr/local/cuda) are listed on
/// stderr and left out. Exit status: 0 on success, 1 on any error.
#[derive(Debug, Args)]
pub struct CompileArgs {
    /// The module (.mlir); `-` reads standard input.
    #[arg(value_name = "FILE")]
    file: PathBuf,

    /// What to emit.
    #[arg(long, value_enum, default_value_t = EmitKind::Llvm)]
    emit: EmitKind,

    /// The machine to compile for.
    #[arg(long, value_enum, default_value_t = TargetKind::Cpu)]
    target: TargetKind,

    /// The GPU architecture (with `--target nvptx`; sm_80 when not given).
    #[arg(long, value_enum)]
    gpu_arch: Option<GpuArchArg>,

    /// Output file; `-` writes standard output.
    #[arg(short, long, default_value = "-", value_name = "FILE")]
    output: PathBuf,

    /// The LLVM CPU to compile for, e.g. `x86-64-v3` (default: this one).
    #[arg(long, value_name = "CPU")]
    cpu: Option<String>,

    /// LLVM target features, e.g. `+avx2,+fma` (default: the CPU's own),
    /// each with its sign: `+` turns it on, `-` off. LLVM warns about a
    /// name it does not know, and ignores it.
    #[arg(long, value_name = "FEATURES")]
    target_features: Option<String>,

    /// How closely float arithmetic follows the interpreter.
    #[arg(long, value_enum, default_value_t = MathArg::Fast)]
    math: MathArg,

    /// Check every element load and store against its buffer's extent, as
    /// `-fsanitize=bounds` does; the kernel reports an access out of
    /// bounds through its status record instead of making it.
    #[arg(long)]
    check_bounds: bool,

    /// Fuse by Jittor's rules only: no row chains, so kernels that share
    /// their rows (softmax's three) each stream their tensors through
    /// memory on their own. Without it, such kernels become one (on the
    /// CPU, a loop over rows; with `--target nvptx`, one launch of a thread
    /// block per row with the values between them in shared memory, under
    /// fast math without `--check-bounds`).
    #[arg(long)]
    jittor_rules: bool,

    /// Row chains on the GPU, which are now the default (`--jittor-rules`
    /// turns them off); kept so that scripts that name it still run.
    #[arg(long, hide = true)]
    gpu_row_chains: bool,

    /// Contraction tiles on the GPU, which are now the default
    /// (`--no-gpu-tiles` turns them off); kept so that scripts that name
    /// it still run.
    #[arg(long, hide = true)]
    gpu_tiles: bool,

    /// With `--target nvptx`: run contractions (matmul, convolution) with
    /// one thread per output, instead of as shared-memory tiles (the
    /// default: a block of 16 x 16 threads per tile of the output, the
    /// operands staged through shared memory; `jitc explain` lists them;
    /// never with `--check-bounds`).
    #[arg(long, conflicts_with = "gpu_tiles")]
    no_gpu_tiles: bool,

    /// Print the time of each compiler phase to standard error (parsing
    /// and verifying, fusion, row chains, lowering, conversion to the LLVM
    /// dialect, translation, LLVM's optimization, machine code), as
    /// `-ftime-report` does.
    #[arg(long)]
    timings: bool,
}

/// `--math` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum MathArg {
    /// Vectorizable: polynomial f32 exp/log/tanh/sigmoid (1-3 ulps from libm),
    /// reassociated float sums kept in registers, division by a loop-invariant
    /// or shared divisor as a multiplication by its reciprocal (CPU), and
    /// meta-fast-math's
    /// rewrites (1 ± tanh(u) as 2 sigmoid(±2u), GELU's tanh form as
    /// y sigmoid(y (2k + 2ka y^2)), pow(x, 2) as x * x).
    Fast,
    /// Bit-identical to the interpreter: libm calls, strictly ordered
    /// reductions; hot loops may stay scalar.
    Exact,
}

impl From<MathArg> for MathMode {
    fn from(value: MathArg) -> Self {
        match value {
            MathArg::Fast => MathMode::Fast,
            MathArg::Exact => MathMode::Exact,
        }
    }
}

/// `--target` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum TargetKind {
    /// This machine's CPU (or `--cpu`), through LLVM's x86 backend.
    Cpu,
    /// NVIDIA GPUs, through LLVM's NVPTX backend.
    Nvptx,
}

/// `--gpu-arch` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum GpuArchArg {
    /// Ampere (A100), PTX ISA 7.0.
    #[value(name = "sm_80")]
    Sm80,
    /// Hopper (H100, H200), PTX ISA 7.8.
    #[value(name = "sm_90")]
    Sm90,
}

impl From<GpuArchArg> for GpuArch {
    fn from(value: GpuArchArg) -> Self {
        match value {
            GpuArchArg::Sm80 => GpuArch::Sm80,
            GpuArchArg::Sm90 => GpuArch::Sm90,
        }
    }
}

/// Forms of output.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum EmitKind {
    /// The lowered kernels in MLIR: scf loops over raw buffers.
    Mlir,
    /// Optimized LLVM IR.
    Llvm,
    /// Assembly for the target.
    Asm,
    /// An object file for the target (CPU only).
    Obj,
    /// PTX text (`--target nvptx` only).
    Ptx,
}

/// Runs `jitc compile`.
pub fn run(context: &Context, args: CompileArgs) -> ExitCode {
    match compile(context, &args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("jitc compile: error: {message}");
            ExitCode::FAILURE
        }
    }
}

fn compile(context: &Context, args: &CompileArgs) -> Result<(), String> {
    let recording = args.timings.then(jitc_compiler::timings::Recording::start);
    let start = std::time::Instant::now();
    let result = compile_recorded(context, args);
    if let Some(recording) = recording {
        eprint!(
            "{}",
            report(
                "jitc compile: timings (wall clock)",
                &recording.finish(),
                start.elapsed()
            )
        );
    }
    result
}

/// The `--timings` report: each phase in milliseconds and as a share of
/// the whole, then what no phase accounts for, then the total.
pub fn report(title: &str, phases: &[(&str, std::time::Duration)], total: std::time::Duration) -> String {
    let ms = |d: std::time::Duration| d.as_secs_f64() * 1e3;
    let share = |d: std::time::Duration| 100.0 * d.as_secs_f64() / total.as_secs_f64().max(f64::MIN_POSITIVE);
    let mut text = format!("{title}\n");
    let mut accounted = std::time::Duration::ZERO;
    for (name, time) in phases {
        accounted += *time;
        text.push_str(&format!(
            "  {:>9.3} ms {:>5.1}%  {name}\n",
            ms(*time),
            share(*time)
        ));
    }
    let rest = total.saturating_sub(accounted);
    text.push_str(&format!(
        "  {:>9.3} ms {:>5.1}%  other (reading, printing)\n",
        ms(rest),
        share(rest)
    ));
    text.push_str(&format!("  {:>9.3} ms 100.0%  total\n", ms(total)));
    text
}

/// What `jitc compile`, `run` and `bench` note when `--gpu-tiles` meets
/// `--check-bounds`.
pub const GPU_TILES_UNCHECKED: &str = "--gpu-tiles does nothing with --check-bounds: tiled loads are not checked, so contractions keep one thread per output";

fn compile_recorded(context: &Context, args: &CompileArgs) -> Result<(), String> {
    if args.gpu_tiles && args.target != TargetKind::Nvptx {
        return Err("--gpu-tiles needs --target nvptx".into());
    }
    if args.no_gpu_tiles && args.target != TargetKind::Nvptx {
        return Err("--no-gpu-tiles needs --target nvptx".into());
    }
    if args.gpu_tiles && args.check_bounds {
        eprintln!("jitc compile: note: {GPU_TILES_UNCHECKED}");
    }
    match (args.target, args.emit) {
        (TargetKind::Cpu, EmitKind::Ptx) => {
            return Err("--emit ptx needs --target nvptx".into());
        }
        (TargetKind::Nvptx, EmitKind::Obj) => {
            return Err(
                "--target nvptx emits PTX text (--emit ptx), not objects; the CUDA driver compiles PTX when it loads it"
                    .into(),
            );
        }
        (TargetKind::Nvptx, _) if args.cpu.is_some() || args.target_features.is_some() => {
            return Err("--cpu and --target-features are for --target cpu; use --gpu-arch".into());
        }
        (TargetKind::Cpu, _) if args.gpu_arch.is_some() => {
            return Err("--gpu-arch needs --target nvptx".into());
        }
        _ => {}
    }
    binary_to_terminal(
        args.emit,
        &args.output,
        std::io::IsTerminal::is_terminal(&std::io::stdout()),
    )?;
    let mut module = jitc_compiler::timings::phase("parse and verify", || {
        crate::input::load_module(context, &args.file)
    })?;
    let emit = match args.emit {
        EmitKind::Mlir => Emit::Mlir,
        EmitKind::Llvm => Emit::Llvm,
        EmitKind::Asm => Emit::Asm,
        EmitKind::Obj => Emit::Obj,
        EmitKind::Ptx => Emit::Ptx,
    };
    let options = CodegenOptions {
        target: CpuTarget {
            cpu: args.cpu.clone(),
            features: args.target_features.clone(),
        },
        math: args.math.into(),
        check_bounds: args.check_bounds,
        jittor_rules: args.jittor_rules,
    };
    let (bytes, skipped) = match args.target {
        TargetKind::Cpu => jitc_compiler::emit_cpu(context, &mut module, emit, &options),
        TargetKind::Nvptx => jitc_compiler::emit_gpu(
            context,
            &mut module,
            emit,
            &GpuOptions {
                arch: args.gpu_arch.unwrap_or(GpuArchArg::Sm80).into(),
                math: options.math,
                check_bounds: args.check_bounds,
                jittor_rules: args.jittor_rules,
                row_chains: true,
                tiles: !args.no_gpu_tiles,
            },
        ),
    }
    .map_err(|e| e.to_string())?;
    for (kernel, reason) in skipped {
        eprintln!("jitc compile: note: kernel @{kernel} is not compiled: {reason}");
    }
    crate::output::emit(&args.output, bytes)
}

/// Refuses, as `llc` does, to write an object file to a terminal: binary
/// output there is noise and can upset the terminal.
fn binary_to_terminal(
    emit: EmitKind,
    output: &std::path::Path,
    stdout_is_terminal: bool,
) -> Result<(), String> {
    if matches!(emit, EmitKind::Obj) && output.as_os_str() == "-" && stdout_is_terminal {
        return Err(
            "--emit obj would write a binary object file to the terminal; give -o FILE, or redirect \
                    standard output"
                .into(),
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    #[test]
    fn an_object_file_is_never_written_to_a_terminal() {
        let error = binary_to_terminal(EmitKind::Obj, Path::new("-"), true).unwrap_err();
        assert!(error.contains("give -o FILE"), "{error}");
        assert!(binary_to_terminal(EmitKind::Obj, Path::new("-"), false).is_ok());
        assert!(binary_to_terminal(EmitKind::Obj, Path::new("k.o"), true).is_ok());
        assert!(binary_to_terminal(EmitKind::Asm, Path::new("-"), true).is_ok());
    }
}
