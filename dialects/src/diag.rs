//! Emitting diagnostics through MLIR's diagnostic engine.

use melior::ir::Location;
use std::ffi::CString;

/// Emits an error at `location` through the context's diagnostic handlers,
/// exactly as an op verifier would.
pub fn emit_error(location: Location, message: &str) {
    // Interior NULs cannot cross the C API; show them instead of failing.
    let message = CString::new(message.replace('\0', "\\0")).unwrap_or_default();
    // SAFETY: `location` is a live location and `message` outlives the call.
    unsafe { mlir_sys::mlirEmitError(location.to_raw(), message.as_ptr()) }
}
