//! The jitc runtime: runs compiled artifacts.
//!
//! It asks the compiler's front door (`jitc_compiler`'s crate root) for
//! artifacts and never reaches into its internals: the compiler exports
//! nothing else, so the build enforces that.
//!
//! - [`cpu`]: a module's `meta.fused` kernels compiled to native code
//!   ([`jitc_compiler::compile_cpu`]), run on a persistent pool of worker
//!   threads that splits each kernel's outer loop (reductions included),
//!   with outputs from the interpreter's pooled, aligned buffers and
//!   compilations kept in an in-memory cache. The host code around the
//!   kernels (calls, control flow, guards, state) runs as a host plan
//!   (`host`), with no interpreter on the path.
//! - [`graph`]: the lazy graph a frontend links: [`graph::Var`]s record
//!   meta-operators, and a fetch fuses, compiles (or takes from its cache)
//!   and runs what it needs.
//! - [`cuda`]: the same kernels compiled to PTX
//!   ([`jitc_compiler::compile_ptx`]) and run on an NVIDIA GPU through the
//!   driver, loaded at run time (cudarc); straight-line host code runs as a
//!   device plan.
//! - [`session`]: the speculation manager (JANUS).
//! - [`Executor`]: the one interface of the CPU and CUDA modules.
//!
//! The C ABI (`capi/`) and the Python package (`python/`) are built on
//! [`graph`]. Not here yet (DESIGN.md): the on-disk executable cache.

pub mod cpu;
pub mod cuda;
pub mod disk_cache;
pub mod graph;
mod host;
mod lru;
pub mod session;

pub use cpu::{CompileCache, CpuModule};
pub use session::{Event, Session, SessionOptions, Stats};

use jitc_dialect::profile::Profile;
use jitc_interp::{KernelRunner, StateStore, Value};
use melior::ir::Module;

/// Errors of the runtime.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Fusion or code generation failed.
    #[error(transparent)]
    Compile(#[from] jitc_compiler::Error),
    /// Running failed.
    #[error(transparent)]
    Run(#[from] jitc_interp::Error),
    /// No GPU can be used; the sentence says why.
    #[error("{0}")]
    Unavailable(String),
    /// The CUDA driver failed.
    #[error("{0}")]
    Cuda(String),
    /// A lazy graph op (or another runtime API) was given arguments it
    /// cannot take; the sentence says which and why.
    #[error("{0}")]
    Graph(String),
}

/// A module compiled for a device, ready to run its functions: the one
/// interface of [`CpuModule`] and [`cuda::CudaModule`]. It is also the
/// [`KernelRunner`] the interpreter hands kernel calls to.
pub trait Executor: KernelRunner {
    /// Kernels that were not compiled and run in the interpreter, with the
    /// reason.
    fn interpreted_kernels(&self) -> &[(String, String)];

    /// Runs function `name` of `module` (the fused module the executor was
    /// compiled from) on `args`; state writes commit only if it succeeds.
    fn run(
        &self,
        module: &Module,
        name: &str,
        args: Vec<Value>,
        state: &mut StateStore,
    ) -> Result<Vec<Value>, Error>;

    /// [`Self::run`], also merging into `profile` what the run observed
    /// (what `Interpreter::run_profiled` records).
    fn run_profiled(
        &self,
        module: &Module,
        name: &str,
        args: Vec<Value>,
        state: &mut StateStore,
        profile: &mut Profile,
    ) -> Result<Vec<Value>, Error>;

    /// Why `function`'s host code cannot run natively on the device, when
    /// that costs more than it would elsewhere (a synchronization or a
    /// round trip per kernel call on a GPU); `None` when there is nothing
    /// to say.
    fn schedule_note(&self, _module: &Module, _function: &str) -> Option<String> {
        None
    }

    /// Starts (`on`, from zero) or stops timing each kernel call, for
    /// `jitc bench --kernels` (the CPU's; other executors time nothing).
    fn set_kernel_timing(&self, _on: bool) {}

    /// The calls and time of each kernel since timing started, by name.
    fn kernel_times(&self) -> Vec<(String, KernelTime)> {
        Vec::new()
    }
}

/// How often a kernel was called while kernel timing was on, and for how
/// long in all ([`Executor::kernel_times`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct KernelTime {
    /// Calls.
    pub calls: u64,
    /// Their time, each call whole (on the CPU: the argument checks, the
    /// worker team's split and the status check included).
    pub total: std::time::Duration,
}
