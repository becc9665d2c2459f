//! Creating an MLIR context that knows every upstream dialect and `meta`.

use crate::Error;
use melior::{
    Context,
    dialect::DialectRegistry,
    ir::Module,
    utility::{load_irdl_dialects, register_all_dialects},
};

/// The IRDL declaration of the `meta` dialect, `dialects/irdl/meta.irdl.mlir`.
pub const IRDL_SOURCE: &str = include_str!("../irdl/meta.irdl.mlir");

/// Creates a context with all upstream dialects registered, and `meta` and
/// the upstream dialects of the textual contract (`func`, `scf`, `arith`,
/// `tensor`) loaded, so that passes may build their ops in any module.
///
/// LLVM translations are not registered here: the dialect knows nothing
/// of code generation (`jitc_compiler::new_context` registers them).
///
/// Multithreading is off: diagnostics then arrive in a deterministic order,
/// and Rust passes run inside MLIR's pass manager need not be `Sync`.
pub fn new_context() -> Result<Context, Error> {
    let registry = DialectRegistry::new();
    register_all_dialects(&registry);
    let context = Context::new_with_registry(&registry, false);
    for dialect in ["func", "scf", "arith", "tensor"] {
        context.get_or_load_dialect(dialect);
    }
    let declaration = Module::parse(&context, IRDL_SOURCE)
        .ok_or_else(|| Error::IrdlLoad("meta.irdl.mlir does not parse".into()))?;
    if !load_irdl_dialects(&declaration) {
        return Err(Error::IrdlLoad("irdl::loadDialects failed".into()));
    }
    Ok(context)
}
