//! `meta-verify`: runs the `meta` dialect's semantic verifier.
//!
//! The pass changes nothing. It reports every semantic error at the op's
//! location and fails if there was one. `jitc opt` runs the verifier on its
//! input anyway; the pass is for pipelines that want a check between steps.
//!
//! ```mlir
//! %0 = "meta.unary"(%x) {kind = "sqrt"} : (tensor<4xi32>) -> tensor<4xi32>
//! // error: 'meta.unary' op kind 'sqrt' expects f32 or f64 operands but got 'i32'
//! ```
//!
//! Algorithm: one walk, see `jitc_dialect::verify`.

use crate::pass::{Options, PassInfo};
use melior::ir::OperationRef;

/// The `meta-verify` pass.
pub struct Verify;

impl Verify {
    /// Registry entry.
    pub const INFO: PassInfo = PassInfo {
        argument: "meta-verify",
        name: "Verify",
        summary: "Check meta ops with the dialect's semantic verifier",
        options: &[],
        source_file: "compiler/src/transforms/verify.rs",
        source: include_str!("verify.rs"),
        run: Self::run,
    };

    /// Runs the verifier on `root`.
    pub fn run(root: OperationRef, _options: &Options) -> bool {
        jitc_dialect::verify::verify(root)
    }
}
