//! `jitc compile`: the native code `jitc run --backend cpu` would run.

use clap::{Args, ValueEnum};
use jitc_compiler::{
    OptimizeOptions,
    codegen::{self, CodegenOptions, CpuTarget, Emit},
    lower::MathMode,
    optimize, pipeline,
};
use melior::Context;
use std::{io::Write, path::PathBuf, process::ExitCode};

/// Compile a module's kernels to MLIR loops, LLVM IR, assembly or an object.
///
/// The module is verified and fused (meta-fuse), then each meta.fused
/// kernel is lowered to a loop nest over raw buffers, converted to LLVM,
/// optimized with LLVM's default<O3> pipeline and emitted. `--cpu` and
/// `--target-features` pick the target (default: this machine), which
/// makes the output deterministic for tests, e.g. `--cpu x86-64-v3`.
///
/// Kernels that cannot be lowered yet (dynamic shapes) are listed on
/// stderr and left out. Exit status: 0 on success, 1 on any error.
#[derive(Debug, Args)]
pub struct CompileArgs {
    /// The module (.mlir); `-` reads standard input.
    #[arg(value_name = "FILE")]
    file: PathBuf,

    /// What to emit.
    #[arg(long, value_enum, default_value_t = EmitKind::Llvm)]
    emit: EmitKind,

    /// Output file; `-` writes standard output.
    #[arg(short, long, default_value = "-", value_name = "FILE")]
    output: PathBuf,

    /// The LLVM CPU to compile for, e.g. `x86-64-v3` (default: this one).
    #[arg(long, value_name = "CPU")]
    cpu: Option<String>,

    /// LLVM target features, e.g. `+avx2,+fma` (default: the CPU's own).
    #[arg(long, value_name = "FEATURES")]
    target_features: Option<String>,

    /// How closely float arithmetic follows the interpreter.
    #[arg(long, value_enum, default_value_t = MathArg::Fast)]
    math: MathArg,
}

/// `--math` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum MathArg {
    /// Vectorizable: polynomial f32 exp/tanh/sigmoid (1-3 ulps from libm)
    /// and reassociated float sums kept in registers.
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

/// Forms of output.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum EmitKind {
    /// The lowered kernels in MLIR: scf loops over raw buffers.
    Mlir,
    /// Optimized LLVM IR.
    Llvm,
    /// Assembly for the target.
    Asm,
    /// An object file for the target.
    Obj,
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
    let mut module = crate::input::load_module(context, &args.file)?;
    let fuse = pipeline::parse("builtin.module(meta-fuse)").map_err(|e| e.to_string())?;
    optimize(context, &mut module, &fuse, &OptimizeOptions::default()).map_err(|e| e.to_string())?;
    let emit = match args.emit {
        EmitKind::Mlir => Emit::Mlir,
        EmitKind::Llvm => Emit::Llvm,
        EmitKind::Asm => Emit::Asm,
        EmitKind::Obj => Emit::Obj,
    };
    let options = CodegenOptions {
        target: CpuTarget {
            cpu: args.cpu.clone(),
            features: args.target_features.clone(),
        },
        math: args.math.into(),
    };
    let (bytes, skipped) = codegen::emit(context, &module, emit, &options).map_err(|e| e.to_string())?;
    for (kernel, reason) in skipped {
        eprintln!("jitc compile: note: kernel @{kernel} is not compiled: {reason}");
    }
    if args.output.as_os_str() == "-" {
        let mut stdout = std::io::stdout().lock();
        stdout
            .write_all(&bytes)
            .and_then(|()| stdout.flush())
            .map_err(|e| format!("cannot write standard output: {e}"))
    } else {
        std::fs::write(&args.output, bytes)
            .map_err(|e| format!("cannot write '{}': {e}", args.output.display()))
    }
}
