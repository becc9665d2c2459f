//! The jitc runtime: runs compiled artifacts.
//!
//! Today it has the CPU path ([`cpu`]): a module's `meta.fused` kernels are
//! compiled to native code through the compiler's public API
//! (`jitc_compiler::codegen`), and the host schedule around them (calls,
//! control flow, guards, state) runs in the reference interpreter, which
//! hands every kernel call to the native code.
//!
//! The CUDA path ([`cuda`]) compiles the same kernels to PTX and runs them
//! on an NVIDIA GPU through the driver, loaded at run time (cudarc).
//!
//! Reduction-free kernels are split across threads (scoped threads started
//! per call; [`cpu::thread_count`]). Not here yet (DESIGN.md): a persistent
//! thread pool, parallel reductions, the buffer pool, the executable cache,
//! the lazy graph API and the C ABI.
//! The runtime never reaches into the compiler's internals.

pub mod cpu;
pub mod cuda;
pub mod session;

pub use cpu::CpuModule;
pub use session::{Event, Session, SessionOptions, Stats};

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
}
