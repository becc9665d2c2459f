//! The `meta` dialect: Jittor's meta-operators (reindex, reindex-reduce and
//! element-wise ops) plus JANUS-style speculation guards and deferred state.
//!
//! The dialect has two halves:
//!
//! - a structural declaration in IRDL ([`IRDL_SOURCE`], loaded at run time by
//!   [`new_context`]), which the MLIR parser checks;
//! - a semantic verifier in Rust ([`verify`]) for everything IRDL cannot say.
//!
//! [`ops`] has a typed view and a builder for every op, and [`kinds`] the
//! element-wise and reduction kinds with their typing rules.
//!
//! This crate knows nothing of passes, code generation or devices.

mod affine;
mod context;
mod diag;
mod failure;
pub mod kinds;
pub mod ops;
pub mod profile;
pub mod verify;

pub use context::{IRDL_SOURCE, new_context};
pub use diag::emit_error;
pub use failure::KernelFailure;

/// Errors of the dialect crate.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The bundled IRDL declaration did not parse or load; always a build bug.
    #[error("the bundled meta dialect declaration failed to load: {0}")]
    IrdlLoad(String),
}
