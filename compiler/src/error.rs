//! The compiler's one error type.

/// Errors of the compiler crate.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The context could not be set up.
    #[error(transparent)]
    Dialect(#[from] jitc_dialect::Error),
    /// A pipeline was malformed or named an unknown pass or option.
    #[error("invalid pass pipeline: {0}")]
    Pipeline(String),
    /// The input failed to parse; the diagnostics say where.
    #[error("the input did not parse")]
    Parse,
    /// The input failed the semantic verifier; the diagnostics say where.
    #[error("the input failed verification")]
    Verify,
    /// A pass emitted an error; the diagnostics say which and where.
    #[error("a pass failed")]
    PassFailed,
    /// Lowering a kernel failed: a compiler bug.
    #[error("internal compiler error while lowering: {0}")]
    Lowering(String),
    /// LLVM could not translate, optimize or compile: a compiler bug.
    #[error("code generation failed: {0}")]
    Codegen(String),
    /// The pipeline produced IR the verifier rejects: a compiler bug.
    #[error("internal compiler error: the meta verifier failed after the pipeline '{0}'")]
    VerifierFailedAfterPipeline(String),
}
