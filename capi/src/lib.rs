//! jitc's C ABI: the lazy graph (`jitc_runtime::graph`) for frontends in
//! any language, behind opaque handles. `include/jitc.h` is generated from
//! this file by cbindgen and checked in; `tests/header.rs` fails when it is
//! out of date (`JITC_BLESS=1` rewrites it).
//!
//! Rules every function follows:
//! - **Errors** are a [`JitcStatus`]; when it is not `JITC_STATUS_OK`,
//!   [`jitc_last_error`] says what went wrong, in jitc's words.
//! - **No panic crosses the boundary**: one inside jitc becomes
//!   `JITC_STATUS_INTERNAL` with the panic's message.
//! - **Ownership**: a function that makes a `JitcVar` writes it to `*out`,
//!   and the caller owns it until it passes it to [`jitc_var_free`]. Every
//!   other pointer argument is borrowed for the call only: jitc copies data
//!   it keeps, and never frees what it did not allocate.
//! - **Threads**: a `JitcVar` belongs to the thread that made it (each
//!   thread has its own graph, and its own named state): another thread
//!   that passes it to a function returning a status gets
//!   `JITC_STATUS_INVALID_ARGUMENT` (`jitc_var_rank` and `jitc_var_dtype`
//!   only read what never changes), and one that frees it leaks it.
//! - **Nothing runs** until a value is fetched ([`jitc_fetch`]) or
//!   [`jitc_sync`] is called; then what is needed is fused, compiled (or
//!   taken from the cache) and run on the CPU.
//!
//! Index expressions are Jittor's (`"i0"`, `"i1 - 1"`, `"i2 * 2 + i5"`),
//! as in `docs/semantics.md` and the Python package.

#![allow(clippy::missing_safety_doc)]

use jitc_dialect::kinds::ElementType;
use jitc_interp::{Buffer, Tensor};
use jitc_runtime::graph::{self, Var};
use std::{
    cell::RefCell,
    ffi::{CStr, CString, c_char, c_void},
    panic::{AssertUnwindSafe, catch_unwind},
};

/// A value of the lazy graph: data, or a recorded op computed on the first
/// fetch that needs it. Opaque; owned by the caller from the function that
/// made it to [`jitc_var_free`].
pub struct JitcVar(Var, std::thread::ThreadId);

impl JitcVar {
    /// A new handle of this thread's.
    fn new(var: Var) -> Self {
        Self(var, std::thread::current().id())
    }
}

/// How a call went.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JitcStatus {
    /// It succeeded.
    Ok = 0,
    /// An argument was wrong: a null pointer, a shape that does not fit,
    /// an unknown kind, an index expression that does not parse.
    InvalidArgument = 1,
    /// Compiling or running failed (an integer division by zero, a value
    /// too large to hold, ...).
    Failed = 2,
    /// jitc panicked: a bug in jitc, caught at the boundary.
    Internal = 3,
}

/// An element type. Functions take it as a `uint32_t`, so that a value
/// that is none of these is an invalid argument, not undefined behaviour.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JitcDtype {
    /// 32-bit float.
    F32 = 0,
    /// 64-bit float.
    F64 = 1,
    /// 32-bit signed integer.
    I32 = 2,
    /// 64-bit signed integer.
    I64 = 3,
    /// Boolean, one byte per element (0 or 1).
    Bool = 4,
}

impl JitcDtype {
    /// The element type a `JitcDtype` passed as `raw` names.
    fn element(raw: u32) -> Result<ElementType, Failure> {
        Ok(match raw {
            0 => ElementType::F32,
            1 => ElementType::F64,
            2 => ElementType::I32,
            3 => ElementType::I64,
            4 => ElementType::I1,
            other => {
                return Err(invalid(format!(
                    "dtype {other} is not a JitcDtype (0 to 4: f32, f64, i32, i64, bool)"
                )));
            }
        })
    }

    fn of(element: ElementType) -> Self {
        match element {
            ElementType::F32 => JitcDtype::F32,
            ElementType::F64 => JitcDtype::F64,
            ElementType::I32 => JitcDtype::I32,
            ElementType::I64 => JitcDtype::I64,
            ElementType::I1 => JitcDtype::Bool,
        }
    }
}

thread_local! {
    static LAST_ERROR: RefCell<CString> = RefCell::new(CString::default());
}

type Failure = (JitcStatus, String);

fn invalid(message: impl Into<String>) -> Failure {
    (JitcStatus::InvalidArgument, message.into())
}

fn from_runtime(error: jitc_runtime::Error) -> Failure {
    let status = match error {
        jitc_runtime::Error::Graph(_) => JitcStatus::InvalidArgument,
        _ => JitcStatus::Failed,
    };
    (status, error.to_string())
}

/// Runs `body`, turning its failure or panic into a status and the last
/// error.
fn call(body: impl FnOnce() -> Result<(), Failure>) -> JitcStatus {
    let (status, message) = match catch_unwind(AssertUnwindSafe(body)) {
        Ok(Ok(())) => return JitcStatus::Ok,
        Ok(Err(failure)) => failure,
        Err(panic) => {
            let what = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "a panic".to_owned());
            (
                JitcStatus::Internal,
                format!("internal error in jitc (please report it): {what}"),
            )
        }
    };
    let message = CString::new(message.replace('\0', " ")).unwrap_or_default();
    // (Not there once the thread's locals are destroyed: a call from an
    // `atexit` handler or a thread-local destructor keeps no message.)
    let _ = LAST_ERROR.try_with(|last| *last.borrow_mut() = message);
    status
}

/// What went wrong in the last call on this thread that did not return
/// `JITC_STATUS_OK`: a NUL-terminated sentence owned by jitc, valid until
/// the next call on this thread that fails. Empty when nothing failed; a
/// call made once the thread's locals are destroyed (in an `atexit`
/// handler) may leave no message.
#[unsafe(no_mangle)]
pub extern "C" fn jitc_last_error() -> *const c_char {
    LAST_ERROR
        .try_with(|last| last.borrow().as_ptr())
        .unwrap_or(c"".as_ptr())
}

/// The handle at `pointer`, or an invalid-argument failure naming `what`
/// when it is null or another thread's.
unsafe fn borrow<'a>(pointer: *const JitcVar, what: &str) -> Result<&'a JitcVar, Failure> {
    // SAFETY: the caller passes a pointer to a live handle or null.
    let var = unsafe { pointer.as_ref() }.ok_or_else(|| invalid(format!("{what} is null")))?;
    if var.1 != std::thread::current().id() {
        return Err(invalid(format!(
            "{what} belongs to the thread that made it: each thread has its own graph"
        )));
    }
    Ok(var)
}

/// `count` items at `pointer` (which may be null when `count` is 0).
unsafe fn items<'a, T>(pointer: *const T, count: usize, what: &str) -> Result<&'a [T], Failure> {
    if count == 0 {
        return Ok(&[]);
    }
    if pointer.is_null() {
        return Err(invalid(format!("{what} is null but {count} were promised")));
    }
    // SAFETY: the caller passes `count` live items at `pointer`.
    Ok(unsafe { std::slice::from_raw_parts(pointer, count) })
}

/// The most dimensions a shape may have: far more than any program, and
/// few enough that a wrong `rank` is an error, not a read of gigabytes.
const MAX_RANK: usize = 1 << 16;

/// `rank` sizes at `shape`, copied.
unsafe fn sizes(shape: *const usize, rank: usize) -> Result<Vec<usize>, Failure> {
    if rank > MAX_RANK {
        return Err(invalid(format!(
            "rank {rank} is more than the {MAX_RANK} dimensions a shape may have"
        )));
    }
    // SAFETY: the caller passes `rank` sizes at `shape`.
    Ok(unsafe { items(shape, rank, "shape")? }.to_vec())
}

/// A NUL-terminated UTF-8 string.
unsafe fn text<'a>(pointer: *const c_char, what: &str) -> Result<&'a str, Failure> {
    if pointer.is_null() {
        return Err(invalid(format!("{what} is null")));
    }
    // SAFETY: the caller passes a NUL-terminated string.
    unsafe { CStr::from_ptr(pointer) }
        .to_str()
        .map_err(|_| invalid(format!("{what} is not UTF-8")))
}

/// `count` strings.
unsafe fn texts<'a>(
    pointer: *const *const c_char,
    count: usize,
    what: &str,
) -> Result<Vec<&'a str>, Failure> {
    // SAFETY: as `items` and `text` say.
    unsafe { items(pointer, count, what)? }
        .iter()
        .map(|&s| unsafe { text(s, what) })
        .collect()
}

/// Writes `var` to `out` as a new handle.
unsafe fn give(out: *mut *mut JitcVar, var: Var) -> Result<(), Failure> {
    if out.is_null() {
        return Err(invalid("out is null"));
    }
    // SAFETY: `out` points to writable storage for one pointer.
    unsafe { *out = Box::into_raw(Box::new(JitcVar::new(var))) };
    Ok(())
}

/// Makes a value holding a copy of `data`: `rank` sizes at `shape`, the
/// elements of type `dtype` (a `JitcDtype`) in C order (booleans one byte
/// each, any byte but 0 true, as C reads it).
/// Writes the new handle to `*out`; the caller owns it.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn jitc_var_new(
    data: *const c_void,
    shape: *const usize,
    rank: usize,
    dtype: u32,
    out: *mut *mut JitcVar,
) -> JitcStatus {
    call(|| {
        // SAFETY: as the function's documentation says.
        let tensor = unsafe { tensor(data, shape, rank, dtype)? };
        // SAFETY: as the function's documentation says.
        unsafe { give(out, Var::new(tensor)) }
    })
}

/// A tensor holding a copy of `data`: `rank` sizes at `shape`, elements of
/// `dtype` in C order.
unsafe fn tensor(
    data: *const c_void,
    shape: *const usize,
    rank: usize,
    dtype: u32,
) -> Result<Tensor, Failure> {
    let element = JitcDtype::element(dtype)?;
    // SAFETY: the caller passes `rank` sizes at `shape`.
    let shape = unsafe { sizes(shape, rank)? };
    let count = jitc_interp::tensor::checked_len(&shape).map_err(invalid)?;
    let bytes = count * element.byte_width();
    let data: &[u8] = if bytes == 0 {
        &[]
    } else if data.is_null() {
        return Err(invalid("data is null"));
    } else {
        // SAFETY: `data` holds `bytes` bytes (the caller's promise).
        unsafe { std::slice::from_raw_parts(data.cast::<u8>(), bytes) }
    };
    // (Booleans as C reads a byte: any byte but 0 is true.)
    let buffer = Buffer::try_from_bytes(element, data).map_err(invalid)?;
    Tensor::new(shape, buffer).ok_or_else(|| invalid("the data does not fit the shape"))
}

/// Frees a handle made by jitc; null is ignored. The value's memory is
/// freed when no handle and no pending value needs it. A handle freed on
/// another thread than the one that made it is leaked.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn jitc_var_free(var: *mut JitcVar) {
    if var.is_null() {
        return;
    }
    let _ = catch_unwind(AssertUnwindSafe(|| {
        // SAFETY: `var` was made by `Box::into_raw` in `give` and is freed
        // once (the caller's promise).
        let var = unsafe { Box::from_raw(var) };
        if var.1 != std::thread::current().id() {
            // Its counts are the other thread's to change: leaked.
            std::mem::forget(var);
            return;
        }
        drop(var);
    }));
}

/// The rank of `var` (0 if `var` is null).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn jitc_var_rank(var: *const JitcVar) -> usize {
    // SAFETY: `var` is a live handle or null.
    unsafe { var.as_ref() }.map_or(0, |v| v.0.shape().len())
}

/// Writes the sizes of `var` to `shape`, which has room for its rank.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn jitc_var_shape(var: *const JitcVar, shape: *mut usize) -> JitcStatus {
    call(|| {
        // SAFETY: as the function's documentation says.
        let var = unsafe { borrow(var, "var")? };
        let sizes = var.0.shape();
        if sizes.is_empty() {
            return Ok(());
        }
        if shape.is_null() {
            return Err(invalid("shape is null"));
        }
        // SAFETY: `shape` has room for the rank (the caller's promise).
        unsafe { std::ptr::copy_nonoverlapping(sizes.as_ptr(), shape, sizes.len()) };
        Ok(())
    })
}

/// The element type of `var` (`JITC_DTYPE_F32` if `var` is null).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn jitc_var_dtype(var: *const JitcVar) -> JitcDtype {
    // SAFETY: `var` is a live handle or null.
    unsafe { var.as_ref() }.map_or(JitcDtype::F32, |v| JitcDtype::of(v.0.element()))
}

/// `meta.reindex`: a value of `rank` sizes at `shape` whose element at
/// `(i0, i1, ...)` is `x`'s at the `n_indices` index expressions `indices`
/// (one per dimension of `x`), or `*overflow_value` (0 when it is null)
/// where that is out of bounds or one of the `n_conditions` conditions
/// (`"i0 < 1"`) holds. Writes the new handle to `*out`.
#[unsafe(no_mangle)]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn jitc_reindex(
    x: *const JitcVar,
    shape: *const usize,
    rank: usize,
    indices: *const *const c_char,
    n_indices: usize,
    overflow_value: *const f64,
    conditions: *const *const c_char,
    n_conditions: usize,
    out: *mut *mut JitcVar,
) -> JitcStatus {
    call(|| {
        // SAFETY: as the function's documentation says.
        let (x, shape, indices, conditions) = unsafe {
            (
                borrow(x, "x")?,
                &sizes(shape, rank)?,
                texts(indices, n_indices, "indices")?,
                texts(conditions, n_conditions, "conditions")?,
            )
        };
        // SAFETY: `overflow_value` is null or points to a double.
        let overflow = unsafe { overflow_value.as_ref() }.copied();
        let var =
            x.0.reindex(shape, &indices, overflow, &conditions)
                .map_err(from_runtime)?;
        // SAFETY: as the function's documentation says.
        unsafe { give(out, var) }
    })
}

/// `meta.reindex_reduce`: a value of `rank` sizes at `shape` where `x`'s
/// elements meet at the index given by the `n_indices` expressions
/// `indices` (of `x`'s indices, one per output dimension) through `op`
/// (`"add"`, `"mul"`, `"max"`, `"min"`, `"and"`, `"or"`). Writes the new
/// handle to `*out`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn jitc_reindex_reduce(
    x: *const JitcVar,
    op: *const c_char,
    shape: *const usize,
    rank: usize,
    indices: *const *const c_char,
    n_indices: usize,
    out: *mut *mut JitcVar,
) -> JitcStatus {
    call(|| {
        // SAFETY: as the function's documentation says.
        let (x, op, shape, indices) = unsafe {
            (
                borrow(x, "x")?,
                text(op, "op")?,
                &sizes(shape, rank)?,
                texts(indices, n_indices, "indices")?,
            )
        };
        let var = x.0.reindex_reduce(op, shape, &indices).map_err(from_runtime)?;
        // SAFETY: as the function's documentation says.
        unsafe { give(out, var) }
    })
}

/// `meta.unary` of kind `op` (`"exp"`, `"neg"`, ...). Writes the new
/// handle to `*out`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn jitc_unary(
    x: *const JitcVar,
    op: *const c_char,
    out: *mut *mut JitcVar,
) -> JitcStatus {
    call(|| {
        // SAFETY: as the function's documentation says.
        let (x, op) = unsafe { (borrow(x, "x")?, text(op, "op")?) };
        let var = x.0.unary(op).map_err(from_runtime)?;
        // SAFETY: as the function's documentation says.
        unsafe { give(out, var) }
    })
}

/// `meta.unary` `cast` of `x` to `dtype`. Writes the new handle to `*out`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn jitc_cast(x: *const JitcVar, dtype: u32, out: *mut *mut JitcVar) -> JitcStatus {
    call(|| {
        // SAFETY: as the function's documentation says.
        let x = unsafe { borrow(x, "x")? };
        let var = x.0.cast(JitcDtype::element(dtype)?).map_err(from_runtime)?;
        // SAFETY: as the function's documentation says.
        unsafe { give(out, var) }
    })
}

/// `meta.binary` of kind `op` (`"add"`, `"mul"`, `"max"`, `"lt"`, ...) of
/// `x` and `y`, which have one shape and element type (comparisons give
/// booleans). Writes the new handle to `*out`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn jitc_binary(
    x: *const JitcVar,
    op: *const c_char,
    y: *const JitcVar,
    out: *mut *mut JitcVar,
) -> JitcStatus {
    call(|| {
        // SAFETY: as the function's documentation says.
        let (x, op, y) = unsafe { (borrow(x, "x")?, text(op, "op")?, borrow(y, "y")?) };
        let var = x.0.binary(op, &y.0).map_err(from_runtime)?;
        // SAFETY: as the function's documentation says.
        unsafe { give(out, var) }
    })
}

/// `meta.ternary` `select`: where the boolean `condition` holds, `then`'s
/// element, else `otherwise`'s. Writes the new handle to `*out`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn jitc_select(
    condition: *const JitcVar,
    then: *const JitcVar,
    otherwise: *const JitcVar,
    out: *mut *mut JitcVar,
) -> JitcStatus {
    call(|| {
        // SAFETY: as the function's documentation says.
        let (condition, then, otherwise) = unsafe {
            (
                borrow(condition, "condition")?,
                borrow(then, "then")?,
                borrow(otherwise, "otherwise")?,
            )
        };
        let var = condition.0.select(&then.0, &otherwise.0).map_err(from_runtime)?;
        // SAFETY: as the function's documentation says.
        unsafe { give(out, var) }
    })
}

/// A value of `rank` sizes at `shape` holding `value` everywhere, of type
/// `dtype`: a splat constant, recorded and never materialized unless it is
/// fetched. Writes the new handle to `*out`. For an integer `dtype`,
/// `value` is truncated toward zero; a NaN, an infinity or a value out of
/// the type's range is an error. The value is compiled into the kernels
/// that read it: one that changes from fetch to fetch (a learning rate)
/// belongs in data ([`jitc_var_new`]), or each new value compiles again.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn jitc_full(
    shape: *const usize,
    rank: usize,
    dtype: u32,
    value: f64,
    out: *mut *mut JitcVar,
) -> JitcStatus {
    call(|| {
        // SAFETY: as the function's documentation says.
        let shape = &unsafe { sizes(shape, rank)? };
        let var = graph::full(shape, JitcDtype::element(dtype)?, value).map_err(from_runtime)?;
        // SAFETY: as the function's documentation says.
        unsafe { give(out, var) }
    })
}

/// The gradients of the scalar `loss` with respect to each of the `count`
/// values `wrt`, recorded as meta-ops that share the forward pass's
/// values (take them before fetching the loss; see `docs/semantics.md`,
/// "Gradients"). Writes `count` new handles to `out[0..count]`, which the
/// caller owns; on failure it writes none.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn jitc_grad(
    loss: *const JitcVar,
    wrt: *const *const JitcVar,
    count: usize,
    out: *mut *mut JitcVar,
) -> JitcStatus {
    call(|| {
        // SAFETY: as the function's documentation says.
        let (loss, pointers) = unsafe { (borrow(loss, "loss")?, items(wrt, count, "wrt")?) };
        let wrt = pointers
            .iter()
            // SAFETY: each of `wrt` points to a live handle.
            .map(|&p| unsafe { borrow(p, "an element of wrt") }.map(|v| &v.0))
            .collect::<Result<Vec<&Var>, Failure>>()?;
        if count > 0 && out.is_null() {
            return Err(invalid("out is null"));
        }
        let gradients = graph::grad(&loss.0, &wrt).map_err(from_runtime)?;
        for (k, gradient) in gradients.into_iter().enumerate() {
            // SAFETY: `out` holds `count` writable pointers.
            unsafe { *out.add(k) = Box::into_raw(Box::new(JitcVar::new(gradient))) };
        }
        Ok(())
    })
}

/// Computes `var` (with every pending value that shares work with it; if
/// one of those fails, `var` is computed alone) and copies its elements, in C order, to `data`, which holds `bytes` bytes:
/// exactly the value's size (elements times the element type's width).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn jitc_fetch(var: *const JitcVar, data: *mut c_void, bytes: usize) -> JitcStatus {
    call(|| {
        // SAFETY: as the function's documentation says.
        let var = unsafe { borrow(var, "var")? };
        // The buffer is checked before anything is computed (or committed).
        let expected = var
            .0
            .shape()
            .iter()
            .fold(var.0.element().byte_width(), |bytes, &n| bytes.saturating_mul(n));
        if bytes != expected {
            return Err(invalid(format!(
                "the value takes {expected} bytes, but the buffer given holds {bytes}"
            )));
        }
        if expected > 0 && data.is_null() {
            return Err(invalid("data is null"));
        }
        let tensor = var.0.fetch().map_err(from_runtime)?;
        let size = tensor.len() * tensor.element_type().byte_width();
        if bytes != size {
            return Err(invalid(format!(
                "the value takes {size} bytes, but the buffer given holds {bytes}"
            )));
        }
        if size > 0 {
            if data.is_null() {
                return Err(invalid("data is null"));
            }
            // SAFETY: `data` holds `bytes` bytes (the caller's promise),
            // and the tensor's buffer as many.
            unsafe { std::ptr::copy_nonoverlapping(tensor.buffer().as_ptr(), data.cast::<u8>(), size) };
        }
        Ok(())
    })
}

/// Sets the piece of state `name` to a copy of `data` (as for
/// [`jitc_var_new`]) now.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn jitc_state_set(
    name: *const c_char,
    data: *const c_void,
    shape: *const usize,
    rank: usize,
    dtype: u32,
) -> JitcStatus {
    call(|| {
        // SAFETY: as the function's documentation says.
        let (name, tensor) = unsafe { (text(name, "name")?, tensor(data, shape, rank, dtype)?) };
        graph::set_state(name, tensor).map_err(from_runtime)
    })
}

/// The piece of state `name` as the program sees it now: the last write
/// recorded, or the committed value. Writes a new handle to `*out`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn jitc_state_read(name: *const c_char, out: *mut *mut JitcVar) -> JitcStatus {
    call(|| {
        // SAFETY: as the function's documentation says.
        let name = unsafe { text(name, "name")? };
        let var = graph::read_state(name).map_err(from_runtime)?;
        // SAFETY: as the function's documentation says.
        unsafe { give(out, var) }
    })
}

/// Records a write of `value` (of the state's shape and element type) to
/// the piece of state `name`: deferred, committed by the fetch (or
/// [`jitc_sync`]) that computes `value`, and only if that fetch succeeds
/// (a fetch that fails drops it: the state keeps its committed value).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn jitc_state_write(name: *const c_char, value: *const JitcVar) -> JitcStatus {
    call(|| {
        // SAFETY: as the function's documentation says.
        let (name, value) = unsafe { (text(name, "name")?, borrow(value, "value")?) };
        graph::write_state(name, &value.0).map_err(from_runtime)
    })
}

/// Computes every pending value a handle holds.
#[unsafe(no_mangle)]
pub extern "C" fn jitc_sync() -> JitcStatus {
    call(|| graph::sync().map_err(from_runtime))
}

/// Writes what a fetch of `var` would run into the folder `directory` (made
/// if missing) as `fetch.mlir`, whose first line is the `jitc run` command
/// that reproduces it, and `.npy` inputs.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn jitc_dump(var: *const JitcVar, directory: *const c_char) -> JitcStatus {
    call(|| {
        // SAFETY: as the function's documentation says.
        let (var, directory) = unsafe { (borrow(var, "var")?, text(directory, "directory")?) };
        graph::dump(&[&var.0], std::path::Path::new(directory))
            .map(|_| ())
            .map_err(from_runtime)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panic_becomes_a_status_and_a_sentence() {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(|_| {}));
        let status = call(|| panic!("the graph is broken"));
        std::panic::set_hook(previous);
        assert_eq!(status, JitcStatus::Internal);
        // SAFETY: jitc_last_error returns a NUL-terminated string.
        let message = unsafe { CStr::from_ptr(jitc_last_error()) }.to_str().unwrap();
        assert_eq!(
            message,
            "internal error in jitc (please report it): the graph is broken"
        );
    }

    #[test]
    fn a_failure_is_kept_until_the_next_one() {
        let status = call(|| Err(invalid("first")));
        assert_eq!(status, JitcStatus::InvalidArgument);
        assert_eq!(call(|| Ok(())), JitcStatus::Ok);
        // SAFETY: as above.
        let message = unsafe { CStr::from_ptr(jitc_last_error()) }.to_str().unwrap();
        assert_eq!(message, "first");
    }
}
