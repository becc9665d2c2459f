//! The MLIR context every compilation runs in.

use crate::Error;
use melior::{Context, utility::register_all_llvm_translations};
use std::sync::Once;

/// Creates a context with every dialect loaded, every upstream pass
/// registered and the LLVM translations registered (the dialect crate knows
/// nothing of LLVM code generation, so that is done here).
pub fn new_context() -> Result<Context, Error> {
    static PASSES: Once = Once::new();
    PASSES.call_once(melior::utility::register_all_passes);
    let context = jitc_dialect::new_context()?;
    register_all_llvm_translations(&context);
    Ok(context)
}
