//! The jitc compiler's front door. Everything the runtime, the tools and
//! frontends may use is here; every module behind it is `pub(crate)` or
//! private, so the build itself keeps callers off the compiler's internals.
//!
//! - **Parse and verify**: [`new_context`], [`parse_module`] (NUL-safe),
//!   [`fingerprint`] (a module's identity in its context, without printing
//!   it) and [`clone_module`],
//!   [`split_input`] for `--split-input-file`, [`verify`], and the
//!   diagnostics plumbing ([`DiagnosticCollector`], [`render_diagnostic`],
//!   [`parse_expectations`]/[`check_expectations`] for
//!   `--verify-diagnostics`).
//! - **Pipelines**: [`pipelines`] holds every named pipeline and the
//!   [`Pipeline`] value; [`optimize`] verifies, runs one and verifies again;
//!   [`list_passes`] and [`is_known_pass`] describe jitc's own passes.
//! - **Speculation**: [`specialize`] makes the assumptions a [`Profile`]
//!   supports, under guards (it takes the profile as a value and reads no
//!   file); [`take_entry_guards`] turns argument guards into checks.
//! - **Compile to an artifact**: [`compile_cpu`] fuses a module and JIT
//!   compiles its kernels ([`CpuArtifact`]: native kernels, their
//!   signatures and the entry guards); [`compile_ptx`] fuses and compiles
//!   to PTX ([`PtxArtifact`]: the text, each kernel's parameters and
//!   launch); [`emit_cpu`] and [`emit_gpu`] write MLIR, LLVM IR, assembly,
//!   objects or PTX.
//! - **Explain**: [`explain`] shows the fuser's plans.
//! - **Differentiate**: [`autodiff`] holds the adjoint of every meta-op,
//!   written once over a [`autodiff::Tape`] that the lazy graph and the
//!   `meta-grad` pass each implement.
//!
//! Passes do no I/O; tools decide what to print.

pub mod autodiff;
mod codegen;
mod context;
mod dedup;
mod diagnostics;
mod error;
pub mod explain;
mod fingerprint;
mod fusion;
mod guards;
mod lower;
mod object;
mod pass;
mod passes;
mod pipeline;
pub mod pipelines;
mod rewrite;
mod source;
mod ssa_scope;
pub mod timings;
mod transforms;
mod verify_diagnostics;

pub use codegen::{
    CodegenOptions, CpuArtifact, CpuTarget, Emit, Emitted, GpuArch, GpuOptions, KernelFn, PtxArtifact,
    host_description,
};
pub use context::new_context;
pub use diagnostics::{Diagnostic, DiagnosticCollector, Position, Severity, render as render_diagnostic};
pub use error::Error;
pub use fingerprint::{Fingerprint, fingerprint};
pub use guards::{ArgumentCheck, EntryGuard, take_entry_guards};
pub use jitc_dialect::profile::Profile;
pub use lower::{
    Buffer as Slot, CheckedAccess, DynamicSizes, Extent, KernelFailure, KernelSignature, KernelStatus,
    MathMode, SizeSource,
    epilogue::Epilogue,
    gpu::{FillLaunch, GpuKernel, Launch},
    rows::RowChain,
};
pub use object::{blake3_hex, llvm_version};
pub use pipelines::{IrPrinting, OptimizeOptions, Pipeline, optimize};
pub use source::{
    Chunk, SPLIT_MARKER, SplitInput, check_nesting, check_split_marker, name_locations, parse_module,
    split_input,
};
pub use transforms::specialize::{Assumption, SpecializeOptions, argument_site, specialize};
pub use verify_diagnostics::{Expectation, check as check_expectations, parse_expectations};

use melior::{Context, ir::Module};

/// A copy of `module` in its context, owned by the caller.
pub fn clone_module<'c>(module: &Module<'c>) -> Module<'c> {
    Module::from_operation(rewrite::clone_op(module.as_operation())).expect("a copy of a module is a module")
}

/// Runs the semantic verifier on `module`; its diagnostics go to the
/// context's handlers.
pub fn verify(module: &Module) -> Result<(), Error> {
    if jitc_dialect::verify::verify(module.as_operation()) {
        Ok(())
    } else {
        Err(Error::Verify)
    }
}

/// Fuses `module` in place with the `fuse` pipeline (verifying before and
/// after).
pub fn fuse(context: &Context, module: &mut Module) -> Result<(), Error> {
    fuse_by(context, module, false, MathMode::Exact)
}

/// [`fuse`], with the paper's rules alone (the `fuse-jittor` pipeline)
/// when `jittor_rules`, and otherwise with `meta-fast-math`'s rewrites first
/// (`fuse-fast`) under fast math.
fn fuse_by(context: &Context, module: &mut Module, jittor_rules: bool, math: MathMode) -> Result<(), Error> {
    let name = match (jittor_rules, math) {
        (true, _) => "fuse-jittor",
        (false, MathMode::Fast) => "fuse-fast",
        (false, MathMode::Exact) => "fuse",
    };
    let fuse = Pipeline::named(name)
        .ok_or_else(|| Error::Pipeline(format!("the {name} pipeline does not parse")))?;
    optimize(context, module, &fuse, &OptimizeOptions::default())
}

/// Fuses `module` in place and compiles its kernels to native code for
/// `options.target` (which must be the host or a CPU it can run). When
/// `entry` names a function, its argument guards are taken out of the
/// module into [`CpuArtifact::entry_guards`].
pub fn compile_cpu<'c>(
    context: &'c Context,
    module: &mut Module<'c>,
    options: &CodegenOptions,
    entry: Option<&str>,
) -> Result<CpuArtifact, Error> {
    row_chains(context, module, options)?;
    let mut artifact = codegen::compile(context, module, options)?;
    if let Some(function) = entry {
        artifact.entry_guards = take_entry_guards(context, module, function)?;
    }
    Ok(artifact)
}

/// Fuses `module` in place and compiles its kernels to PTX for
/// `options.arch`.
pub fn compile_ptx(
    context: &Context,
    module: &mut Module,
    options: &GpuOptions,
) -> Result<PtxArtifact, Error> {
    gpu_row_chains(context, module, options)?;
    codegen::ptx(context, module, options)
}

/// Fuses `module` in place (by Jittor's rules alone with
/// `options.jittor_rules`), merges equal kernels, and, with
/// `options.row_chains` and not `options.jittor_rules`, makes its GPU row chains
/// ([`lower::rows::chain_rows_gpu`]; fast math without bounds checks
/// only); returns them.
pub fn gpu_row_chains(
    context: &Context,
    module: &mut Module,
    options: &GpuOptions,
) -> Result<Vec<RowChain>, Error> {
    fuse_and_merge(context, module, Fusing::from_gpu(options))?;
    if !options.row_chains
        || options.jittor_rules
        || options.check_bounds
        || options.math != lower::MathMode::Fast
    {
        return Ok(Vec::new());
    }
    let libdevice = codegen::libdevice().is_some();
    let chains = timings::phase("row chains", || {
        lower::rows::chain_rows_gpu(context, module, libdevice)
    })?;
    merge(module, options.check_bounds);
    Ok(chains)
}

/// Fuses `module` in place and writes its kernels for the CPU as `emit`
/// says (`mlir`, `llvm`, `asm` or `obj`).
pub fn emit_cpu(
    context: &Context,
    module: &mut Module,
    emit: Emit,
    options: &CodegenOptions,
) -> Result<Emitted, Error> {
    row_chains(context, module, options)?;
    codegen::emit(context, module, emit, options)
}

/// Runs a fused module's row chains ([`lower::rows`]) for the CPU, unless
/// `options` ask for checked accesses or Jittor's rules only.
fn chain_rows(context: &Context, module: &Module, options: &CodegenOptions) -> Result<Vec<RowChain>, Error> {
    if options.check_bounds || options.jittor_rules {
        return Ok(Vec::new());
    }
    // A register-tiled contraction is no stage (`lower::rows`, "When").
    let apart = lower::contractions(module, &options.lowering())
        .into_iter()
        .map(|(name, _, _)| name)
        .collect();
    lower::rows::chain_rows(context, module, &apart)
}

/// What the CPU backend makes of a fused module's kernel calls past
/// Jittor's rule 2 ([`cpu_plan`]).
#[derive(Debug, Clone, Default)]
pub struct CpuPlan {
    /// Contractions that run their consumer on their tiles
    /// ([`lower::epilogue`]).
    pub epilogues: Vec<Epilogue>,
    /// Kernels that run one block of rows at a time ([`lower::rows`]).
    pub chains: Vec<RowChain>,
}

/// Fuses `module` in place, merges equal kernels, and makes its
/// contraction epilogues ([`lower::epilogue`]) and then its row chains
/// ([`lower::rows`]) as the CPU backend does with `options`; returns them
/// (for `jitc explain`). Neither with `options.jittor_rules` or in the
/// bounds-checked mode. Both are made of merged kernels, and merge in their
/// turn.
pub fn cpu_plan(context: &Context, module: &mut Module, options: &CodegenOptions) -> Result<CpuPlan, Error> {
    fuse_and_merge(context, module, Fusing::from_cpu(options))?;
    let epilogues = if options.check_bounds || options.jittor_rules {
        Vec::new()
    } else {
        timings::phase("contraction epilogues", || {
            lower::epilogue::fuse_epilogues(context, module, &options.lowering())
        })?
    };
    let chains = timings::phase("row chains", || chain_rows(context, module, options))?;
    merge(module, options.check_bounds);
    let epilogues = lower::epilogue::merged(module, epilogues);
    Ok(CpuPlan { epilogues, chains })
}

/// [`cpu_plan`]'s row chains alone.
pub fn row_chains(
    context: &Context,
    module: &mut Module,
    options: &CodegenOptions,
) -> Result<Vec<RowChain>, Error> {
    cpu_plan(context, module, options).map(|plan| plan.chains)
}

/// The kernels of the fused `module` that the CPU backend runs as
/// register-tiled contractions with `options` (schedule rule 6,
/// `lower::contract`): each kernel's name, its tiles, and the functions
/// that run it. None in the bounds-checked mode.
pub fn contractions(module: &Module, options: &CodegenOptions) -> Vec<(String, String, Vec<String>)> {
    lower::contractions(module, &options.lowering())
}

/// The kernels of the fused `module` that the GPU backend runs as
/// shared-memory tiles with [`GpuOptions::tiles`] (outside the
/// bounds-checked mode; `lower::contract::gpu_tiles`): each kernel's name,
/// its tiles, and the functions that run it.
pub fn gpu_tiled_contractions(module: &Module) -> Vec<(String, String, Vec<String>)> {
    lower::gpu_tiled(module)
}

/// The results of the fused `module`'s kernels that the CPU backend
/// writes with non-temporal stores with `options` (x86; `lower::stream`):
/// each kernel's name, the result's number and bytes, and the functions
/// that run the kernel.
pub fn streamed_results(
    module: &Module,
    options: &CodegenOptions,
) -> Vec<(String, usize, usize, Vec<String>)> {
    lower::streamed_results(module, &options.lowering())
}

/// What fusing and merging read of a backend's options.
#[derive(Clone, Copy)]
struct Fusing {
    check_bounds: bool,
    jittor_rules: bool,
    math: MathMode,
}

impl Fusing {
    fn from_cpu(options: &CodegenOptions) -> Self {
        Self {
            check_bounds: options.check_bounds,
            jittor_rules: options.jittor_rules,
            math: options.math,
        }
    }

    fn from_gpu(options: &GpuOptions) -> Self {
        Self {
            check_bounds: options.check_bounds,
            jittor_rules: options.jittor_rules,
            math: options.math,
        }
    }
}

/// Fuses `module` in place and merges its equal kernels ([`dedup`]).
fn fuse_and_merge(context: &Context, module: &mut Module, fusing: Fusing) -> Result<(), Error> {
    timings::phase("fuse", || {
        fuse_by(context, module, fusing.jittor_rules, fusing.math)
    })?;
    merge(module, fusing.check_bounds);
    Ok(())
}

/// Merges `module`'s equal kernels, as a timed phase.
fn merge(module: &Module, check_bounds: bool) {
    timings::phase("merge equal kernels", || {
        dedup::dedup_kernels(module, check_bounds)
    });
}

/// Fuses `module` in place and writes its kernels for the GPU as `emit`
/// says (`mlir`, `llvm`, or `ptx`/`asm`).
pub fn emit_gpu(
    context: &Context,
    module: &mut Module,
    emit: Emit,
    options: &GpuOptions,
) -> Result<Emitted, Error> {
    gpu_row_chains(context, module, options)?;
    codegen::emit_gpu(context, module, emit, options)
}

/// The `--list-passes` text for jitc's own passes.
pub fn list_passes() -> String {
    passes::list()
}

/// Whether `name` is a pass jitc knows, its own or upstream.
pub fn is_known_pass(context: &Context, name: &str) -> bool {
    pipeline::is_known_pass(context, name)
}
