//! Kernel buffers as the loop nest sees them: the lowered arguments and
//! results, and element loads and stores.
//!
//! A tensor is a data pointer to dense row-major elements of its memory
//! type ([`super::memory_type`]); an index argument is already an `index`
//! value. Kernel values are told apart by [`key`], the address of the
//! `MlirValue` behind them.
//!
//! Invariants:
//! - offsets count elements; a load takes an `index` or `i64` offset, a
//!   store an `index` one, and both address with one `llvm.getelementptr`
//!   over the memory type;
//! - `i1` is stored as a byte: a load truncates it (`arith.trunci`), a
//!   store widens it (`arith.extui`); every other type is stored as
//!   computed.
//!
//! A store of an `i1` `%v` at the `index` offset `%o`:
//!
//! ```mlir
//! %i = arith.index_cast %o : index to i64
//! %p = llvm.getelementptr %base[%i] : (!llvm.ptr, i64) -> !llvm.ptr, i8
//! %b = arith.extui %v : i1 to i8
//! llvm.store %b, %p : i8, !llvm.ptr
//! ```

use super::{Emitter, emit_gep, memory};
use crate::Error;
use jitc_dialect::kinds::ElementType;
use melior::ir::{Type, Value, ValueLike};

/// A kernel argument, lowered.
pub(super) enum Arg<'c, 'a> {
    /// A tensor: its data pointer, shape and element type.
    Tensor {
        pointer: Value<'c, 'a>,
        shape: Vec<usize>,
        element: ElementType,
    },
    /// An index.
    Index(Value<'c, 'a>),
}

/// A kernel result: its data pointer, shape and element type.
pub(super) type Output<'c, 'a> = (Value<'c, 'a>, Vec<usize>, ElementType);

/// The identity of a kernel value, for maps keyed by value.
pub(super) fn key(value: Value) -> usize {
    value.to_raw().ptr as usize
}

/// The element of `element` type at `offset` (an `index` or `i64`) of the
/// buffer at `pointer`.
pub(super) fn load_at<'c, 'a>(
    at: &Emitter<'c, 'a>,
    pointer: Value<'c, '_>,
    offset: Value<'c, '_>,
    element: ElementType,
) -> Result<Value<'c, 'a>, Error> {
    let i64_type: Type = melior::ir::r#type::IntegerType::new(at.context, 64).into();
    let offset = if offset.r#type() == i64_type {
        offset.into_value_ref()
    } else {
        at.value("arith.index_cast", &[offset], i64_type)?
    };
    let address = emit_gep(at, pointer, offset, memory(at.context, element))?;
    let loaded = at.value("llvm.load", &[address], memory(at.context, element))?;
    if element == ElementType::I1 {
        at.value("arith.trunci", &[loaded], at.i1())
    } else {
        Ok(loaded)
    }
}

/// Stores `value` as the element of `element` type at the `index`
/// `offset` of the buffer at `pointer`.
pub(super) fn store_at<'c>(
    at: &Emitter<'c, '_>,
    pointer: Value<'c, '_>,
    offset: Value<'c, '_>,
    value: Value<'c, '_>,
    element: ElementType,
) -> Result<(), Error> {
    let i64_type: Type = melior::ir::r#type::IntegerType::new(at.context, 64).into();
    let offset = at.value("arith.index_cast", &[offset], i64_type)?;
    let address = emit_gep(at, pointer, offset, memory(at.context, element))?;
    let value = if element == ElementType::I1 {
        at.value("arith.extui", &[value], memory(at.context, element))?
    } else {
        value.into_value_ref()
    };
    at.op("llvm.store", &[value, address], &[], &[]).map(|_| ())
}

trait IntoValueRef<'c, 'a> {
    fn into_value_ref(self) -> Value<'c, 'a>;
}

impl<'c, 'a> IntoValueRef<'c, 'a> for Value<'c, '_> {
    fn into_value_ref(self) -> Value<'c, 'a> {
        // SAFETY: the value is live for as long as the function being built.
        unsafe { Value::from_raw(self.to_raw()) }
    }
}
