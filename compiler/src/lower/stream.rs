//! Streaming results: a large result that leaves the host function is
//! written with non-temporal stores on x86, which go to memory without
//! first reading each cache line they fill (a plain store reads the line
//! before it writes it: a third of the traffic of a kernel that reads one
//! tensor and writes another).
//!
//! **Which results.** Result `j` of a kernel streams when
//! - it is a static tensor of at least [`STREAM_MIN_BYTES`], more than the
//!   caches hold for long beside the kernel's own inputs, and
//! - every call of the kernel passes it straight to `func.return`: of a
//!   host function (the caller gets it; nothing in the module reads it
//!   again), or of a row chain whose own result streams in turn.
//!
//! An intermediate that the next kernel reads is never streamed: there the
//! cache is what makes the next read cheap.
//!
//! **How.** The lowering marks each store of a streamed result with the
//! TBAA type [`STREAM_TBAA`] (a type of its own root, on stores only:
//! accesses without TBAA alias anything, so the mark changes no alias
//! answer) and lowers the kernel twice behind one test of the results'
//! alignment: the nest that runs when every streamed result's address is
//! a multiple of 64 lets LLVM prove its vector stores aligned, the other
//! is the usual one. After `default<O3>` has vectorized the loops,
//! `crate::codegen` makes each marked store of a whole, aligned vector
//! non-temporal (`vmovntps`; an unaligned or partial vector would be
//! split into scalar non-temporal stores, so those are left alone) and
//! puts an `sfence` before each return of a function that has one, so the
//! stores are visible before the runtime reads the result on another
//! thread. The runtime's buffers are 64-byte aligned, so the aligned nest
//! is the one that runs.

use super::inplace::visit_calls;
use melior::{
    Context,
    ir::{Attribute, BlockLike, Module, OperationRef, operation::OperationLike},
};

/// Results smaller than this are stored as usual: 8 MiB, four times a
/// core's L2 on the development machine and a quarter of its L3.
pub const STREAM_MIN_BYTES: usize = 8 << 20;

/// The TBAA type name that marks the stores of a streamed result, in the
/// lowered MLIR and in LLVM IR until `crate::codegen` reads it.
pub const STREAM_TBAA: &str = "jitc streaming result";

/// The `tbaa` attribute of a streamed result's stores.
pub(super) fn stream_tag(context: &Context) -> Option<Attribute<'_>> {
    let descriptor = format!(
        "#llvm.tbaa_type_desc<id = \"{STREAM_TBAA}\", members = {{<#llvm.tbaa_root<id = \"jitc\">, 0>}}>"
    );
    Attribute::parse(
        context,
        &format!("[#llvm.tbaa_tag<base_type = {descriptor}, access_type = {descriptor}, offset = 0>]"),
    )
}

/// For each result of the kernel `name`, of `bytes` each (`None` for one
/// that is not a static tensor), whether it streams.
pub(super) fn streaming(module: &Module, name: &str, bytes: &[Option<usize>]) -> Vec<bool> {
    bytes
        .iter()
        .enumerate()
        .map(|(j, bytes)| bytes.is_some_and(|b| b >= STREAM_MIN_BYTES) && returned_only(module, name, j, 0))
        .collect()
}

/// Whether every call of `name` in `module` (one at least) passes its
/// result `j` only to `func.return`, and, where the caller is a kernel
/// (a row chain), the caller's result in turn.
fn returned_only(module: &Module, name: &str, j: usize, depth: usize) -> bool {
    // Chains call stages, hosts call chains: no deeper nesting is made.
    if depth > 4 {
        return false;
    }
    let callee = format!("@{name}");
    let mut calls = 0;
    let mut returned = true;
    let mut next = module.body().first_operation();
    while let Some(function) = next {
        next = function.next_in_block();
        if function.name().as_string_ref().as_str() != Ok("func.func") {
            continue;
        }
        let kernel = function.has_attribute("meta.fused");
        let caller = function
            .attribute("sym_name")
            .ok()
            .and_then(jitc_dialect::ops::string_attribute)
            .unwrap_or_default()
            .to_owned();
        visit_calls(function, &mut |call: OperationRef| {
            if call.attribute("callee").ok().map(|a| a.to_string()).as_deref() != Some(callee.as_str()) {
                return;
            }
            calls += 1;
            let Ok(result) = call.result(j) else {
                returned = false;
                return;
            };
            let uses = crate::rewrite::uses(result.into());
            returned &= !uses.is_empty()
                && uses.iter().all(|(user, position)| {
                    user.name().as_string_ref().as_str() == Ok("func.return")
                        && (!kernel || returned_only(module, &caller, *position, depth + 1))
                });
        });
    }
    calls > 0 && returned
}
