//! The jitc compiler: passes over the `meta` dialect, the pass registry,
//! textual pipelines, and the diagnostics plumbing that tools build on.
//!
//! Entry points:
//! - [`optimize`] verifies a module and runs a pipeline on it;
//! - [`pipeline::parse`] and [`pipeline::build`] turn `--pass-pipeline`
//!   text into an MLIR pass manager;
//! - [`passes::PASSES`] lists jitc's own passes.
//!
//! Passes do no I/O; tools decide what to print.

pub mod codegen;
pub mod diagnostics;
pub mod fusion;
pub mod guards;
pub mod lower;
pub mod passes;
pub mod pipeline;
pub mod rewrite;
pub mod source;
pub mod transforms;
pub mod verify_diagnostics;

use melior::{
    Context,
    ir::{Module, operation::OperationPrintingFlags},
    pass::PassIrPrintingOptions,
};
use std::sync::Once;

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

/// Creates a context with every dialect loaded and every upstream pass
/// registered.
pub fn new_context() -> Result<Context, Error> {
    static PASSES: Once = Once::new();
    PASSES.call_once(melior::utility::register_all_passes);
    Ok(jitc_dialect::new_context()?)
}

/// How [`optimize`] runs.
#[derive(Debug, Default, Clone)]
pub struct OptimizeOptions {
    /// Print the IR after every pass to stderr (`--print-ir-after-all`).
    pub print_ir_after_all: bool,
}

/// Verifies `module`, runs `pipeline` on it, and verifies the result.
/// Errors are also reported through the context's diagnostic handlers.
pub fn optimize(
    context: &Context,
    module: &mut Module,
    pipeline: &[pipeline::Element],
    options: &OptimizeOptions,
) -> Result<(), Error> {
    if !jitc_dialect::verify::verify(module.as_operation()) {
        return Err(Error::Verify);
    }
    if pipeline.is_empty() {
        return Ok(());
    }
    let manager = pipeline::build(context, pipeline)?;
    if options.print_ir_after_all {
        manager.enable_ir_printing(&PassIrPrintingOptions {
            before_all: false,
            after_all: true,
            module_scope: true,
            on_change: false,
            on_failure: false,
            flags: OperationPrintingFlags::new(),
            tree_printing_path: Default::default(),
        });
    }
    manager.run(module).map_err(|_| Error::PassFailed)?;
    if !jitc_dialect::verify::verify(module.as_operation()) {
        return Err(Error::VerifierFailedAfterPipeline(pipeline::render(pipeline)));
    }
    Ok(())
}
