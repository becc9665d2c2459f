//! Writing a kernel's result into the buffer of an argument that dies at
//! the call: which (argument, result) pair of a kernel may share a buffer,
//! and whether some call hands the kernel an argument that dies there.
//!
//! A pair is legal when every point of the domain reads the argument's
//! element at the point's own offset, before the result's element there is
//! written, and nothing else reads the argument:
//! - the argument and the result are tensors of the domain's (static)
//!   shape and of one element type;
//! - the argument is read only as an operand of element-wise ops and
//!   reductions (a reindex reads it at other points);
//! - the result is stored at the point, so it is not a reduction's, and
//!   every op that reads the argument comes no later than the op that
//!   makes the result (the point loads an argument once, at the first use
//!   it emits, and stores a result right after the op that makes it; the
//!   first reader may be one it does not emit, a dead reduction, so the
//!   last reader is what must come first).
//!
//! The kernel is lowered twice behind one pointer comparison
//! (`super::lower_kernel`): when the runtime passes the argument's buffer
//! as the result's, the nest that reads and writes through one pointer
//! runs, which the loop vectorizer sees as one array (two different
//! pointers it would have to check at run time, and a check that finds them
//! equal runs scalar code). So a pair costs compile time, and is kept only
//! when some call of the kernel in the module passes a value that dies
//! there: its one use, in the call's own block.
//!
//! Example: `%e = exp(%x)` in `@k(%x: tensor<1024xf32>) -> tensor<1024xf32>`,
//! called as `%y = call @k(%t)` where the call is `%t`'s only use: the pair
//! (argument 0, result 0).

use jitc_dialect::kinds::ElementType;
use jitc_dialect::ops::{ReindexOp, ReindexReduceOp};
use melior::ir::{
    BlockLike, BlockRef, Module, OperationRef, RegionLike, Value, ValueLike, operation::OperationLike,
};
use std::collections::HashMap;

/// A static tensor of the calling convention: its shape and element type
/// (`None` for anything else).
pub(super) type Static<'s> = Option<(&'s [usize], ElementType)>;

/// The first legal (argument, result) pair of the kernel whose body is
/// `body`, over the static `domain`, with the arguments `inputs` and the
/// results `outputs`.
pub(super) fn pair(
    body: BlockRef,
    domain: &[i64],
    inputs: &[Static],
    outputs: &[Static],
) -> Option<(usize, usize)> {
    if domain.iter().any(|&d| d < 0) {
        return None;
    }
    let shape: Vec<usize> = domain.iter().map(|&d| d as usize).collect();
    let arguments: HashMap<usize, usize> = (0..body.argument_count())
        .filter_map(|i| body.argument(i).ok().map(|a| (key(a.into()), i)))
        .collect();
    // Per argument, the position of the last op that reads it and
    // whether a reindex reads it; per result, the position of the op that
    // makes it.
    let mut last_use: HashMap<usize, usize> = HashMap::new();
    let mut reindexed: Vec<usize> = Vec::new();
    let mut made_at: HashMap<usize, usize> = HashMap::new();
    let mut reduced: Vec<usize> = Vec::new();
    let mut terminator = None;
    let mut next = body.first_operation();
    let mut position = 0;
    while let Some(op) = next {
        next = op.next_in_block();
        if op.name().as_string_ref().as_str() == Ok("func.return") {
            terminator = Some(op);
            break;
        }
        for (k, operand) in op.operands().enumerate() {
            if let Some(&i) = arguments.get(&key(operand)) {
                last_use.insert(i, position);
                if ReindexOp::cast(op).is_some() && k == 0 {
                    reindexed.push(i);
                }
            }
        }
        for result in op.results() {
            made_at.insert(key(result.into()), position);
            if ReindexReduceOp::cast(op).is_some() {
                reduced.push(key(result.into()));
            }
        }
        position += 1;
    }
    let terminator = terminator?;
    for (j, value) in terminator.operands().enumerate() {
        let Some((out_shape, out_element)) = outputs.get(j)? else {
            continue;
        };
        if *out_shape != shape.as_slice() || reduced.contains(&key(value)) {
            continue;
        }
        let Some(&made) = made_at.get(&key(value)) else {
            continue;
        };
        for (i, input) in inputs.iter().enumerate() {
            let Some((in_shape, in_element)) = input else {
                continue;
            };
            let legal = in_shape == out_shape
                && in_element == out_element
                && !reindexed.contains(&i)
                && last_use.get(&i).is_some_and(|&last| last <= made);
            if legal {
                return Some((i, j));
            }
        }
    }
    None
}

/// Whether some `func.call` of kernel `name` in `module` passes, as its
/// argument `i`, a value that dies at the call: the call is its only use,
/// in the block the value is defined in (a value defined outside a loop
/// and read inside it is read again on every iteration).
pub(super) fn dies_at_some_call(module: &Module, name: &str, i: usize) -> bool {
    let mut found = false;
    let mut next = module.body().first_operation();
    while let Some(op) = next {
        next = op.next_in_block();
        if !op.has_attribute("meta.fused") {
            visit_calls(op, &mut |call| {
                let callee = call
                    .attribute("callee")
                    .ok()
                    .map(|a| a.to_string())
                    .is_some_and(|c| c == format!("@{name}"));
                if callee
                    && let Ok(argument) = call.operand(i)
                    && dies_at(argument, call)
                {
                    found = true;
                }
            });
        }
    }
    found
}

/// Whether `call` is the only use of `value`, and in its defining block.
fn dies_at(value: Value, call: OperationRef) -> bool {
    let mut uses = 0;
    let mut user = None;
    // SAFETY: `value` is live; the use list is walked without changing it.
    unsafe {
        let mut operand = mlir_sys::mlirValueGetFirstUse(value.to_raw());
        while !mlir_sys::mlirOpOperandIsNull(operand) {
            uses += 1;
            user = Some(mlir_sys::mlirOpOperandGetOwner(operand));
            operand = mlir_sys::mlirOpOperandGetNextUse(operand);
        }
    }
    if uses != 1 || user.map(|u| u.ptr) != Some(call.to_raw().ptr) {
        return false;
    }
    // The block that defines the value: its owner's, or the block an
    // argument belongs to.
    // SAFETY: `value` is live.
    let defining_block = unsafe {
        let raw = value.to_raw();
        if mlir_sys::mlirValueIsABlockArgument(raw) {
            mlir_sys::mlirBlockArgumentGetOwner(raw)
        } else {
            mlir_sys::mlirOperationGetBlock(mlir_sys::mlirOpResultGetOwner(raw))
        }
    };
    call.block().is_some_and(|b| b.to_raw().ptr == defining_block.ptr)
}

/// Calls `visit` on every `func.call` nested in `op`.
pub(super) fn visit_calls(op: OperationRef, visit: &mut dyn FnMut(OperationRef)) {
    if op.name().as_string_ref().as_str() == Ok("func.call") {
        visit(op);
    }
    for region in (0..op.region_count()).filter_map(|r| op.region(r).ok()) {
        let mut block = region.first_block();
        while let Some(current) = block {
            let mut next = current.first_operation();
            while let Some(inner) = next {
                next = inner.next_in_block();
                visit_calls(inner, visit);
            }
            block = current.next_in_region();
        }
    }
}

fn key(value: Value) -> usize {
    value.to_raw().ptr as usize
}
