//! Kernel buffers as the loop nest sees them: the lowered arguments and
//! results, element loads and stores, and the bounds-checked mode that
//! guards them.
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
//!   computed;
//! - every element load and store of a kernel goes through [`load_at`] and
//!   [`store_at`], so the bounds-checked mode sees them all. (Index
//!   arguments are read once, at their own pointer, with no computed
//!   offset; they are not element accesses.)
//!
//! A store of an `i1` `%v` at the `index` offset `%o`:
//!
//! ```mlir
//! %i = arith.index_cast %o : index to i64
//! %p = llvm.getelementptr %base[%i] : (!llvm.ptr, i64) -> !llvm.ptr, i8
//! %b = arith.extui %v : i1 to i8
//! llvm.store %b, %p : i8, !llvm.ptr
//! ```
//!
//! # The bounds-checked mode
//!
//! With `check_bounds` (`jitc run --check-bounds`, in the spirit of
//! `-fsanitize=bounds`), each access is given a [`Check`]: the access is
//! numbered `k` in its kernel's table of [`CheckedAccess`]es (the table
//! goes to the runtime in the kernel's signature), and its linear offset is
//! compared with the buffer's element count before the access. This is a
//! safety net, not semantics: the schedule's bounds checks
//! ([`super::index`]) already make every index of a reindex valid or
//! select its `overflow_value`, so a failed check means a compiler bug.
//! A buffer with dynamic dimensions is checked against the product of its
//! sizes at run time.
//!
//! One unsigned comparison `offset <u len` covers both ends (a negative
//! offset is a huge unsigned one). When it fails, the access is not made:
//! a load reads element 0 and yields zero, a store is skipped, and the
//! kernel's status record is claimed with `2 + k` and the offset. The
//! record is `[i64; 2]`: word 0 the status (0 success, 1 an integer
//! division by zero, `2 + k` access `k` out of bounds, -1 an affine
//! divisor that is not positive), word 1 the offset (or the divisor, or
//! the dividing op's line).
//! The claim is an `llvm.cmpxchg` of word 0 from 0, and only its winner
//! writes word 1, so on the GPU, where many threads may fail at once, the
//! two words always belong to the same failure; on the CPU, the first
//! failure of a call (in loop order) is the one reported. Branches on the failure path cost
//! vectorization; the mode is for finding bugs, and its speed is
//! secondary.
//!
//! A checked load of `%arg0` (`tensor<32xf32>`) at the `i64` offset `%i`,
//! access number 0 (status code 2):
//!
//! ```mlir
//! %bad = arith.cmpi uge, %i, %c32_i64 : i64
//! scf.if %bad {
//!   %r = llvm.cmpxchg %status, %c0_i64, %c2_i64 syncscope("device") monotonic monotonic : !llvm.ptr, i64
//!   %won = llvm.extractvalue %r[1] : !llvm.struct<(i64, i1)>
//!   scf.if %won {
//!     %w = llvm.getelementptr %status[1] : (!llvm.ptr) -> !llvm.ptr, i64
//!     llvm.store %i, %w : i64, !llvm.ptr
//!   }
//! }
//! %ok = arith.cmpi ult, %i, %c32_i64 : i64
//! %j = arith.select %ok, %i, %c0_i64 : i64
//! %p = llvm.getelementptr %arg0[%j] : (!llvm.ptr, i64) -> !llvm.ptr, f32
//! %x = llvm.load %p : !llvm.ptr -> f32
//! %v = arith.select %ok, %x, %cst_0 : f32
//! ```

use super::{Emitter, emit_gep, memory, value_type};
use crate::Error;
use jitc_dialect::{
    kinds::ElementType,
    verify::{location_line, op_name},
};
use melior::ir::{
    Attribute, OperationRef, Type, Value, ValueLike,
    attribute::{DenseI64ArrayAttribute, IntegerAttribute},
    operation::OperationLike,
};
use std::{cell::RefCell, fmt};

/// A kernel argument, lowered.
pub(super) enum Arg<'c, 'a> {
    /// A tensor: its data pointer, shape and element type, and what is
    /// known of it at run time only when it has dynamic dimensions (the
    /// static `shape` then holds 0 for each of them).
    Tensor {
        pointer: Value<'c, 'a>,
        shape: Vec<usize>,
        element: ElementType,
        dynamic: Option<Dynamic<'c, 'a>>,
    },
    /// An index.
    Index(Value<'c, 'a>),
}

/// A tensor argument with dynamic dimensions, at run time.
#[derive(Clone)]
pub(super) struct Dynamic<'c, 'a> {
    /// Its size in each dimension (`index` values read at kernel entry).
    pub(super) extents: Vec<Value<'c, 'a>>,
    /// Its type, e.g. `tensor<?x16xf32>`, for messages.
    pub(super) r#type: String,
}

/// A kernel result: its data pointer, shape and element type, and what is
/// known of it at run time only when it has dynamic dimensions (the static
/// `shape` then holds 0 for each of them).
#[derive(Clone)]
pub(super) struct Output<'c, 'a> {
    pub(super) pointer: Value<'c, 'a>,
    pub(super) shape: Vec<usize>,
    pub(super) element: ElementType,
    pub(super) dynamic: Option<Dynamic<'c, 'a>>,
    /// The `tbaa` attribute that marks its stores as streaming
    /// (`super::stream`), when it streams.
    pub(super) stream: Option<Attribute<'c>>,
}

impl<'c, 'a> Output<'c, 'a> {
    /// A result of static `shape`.
    pub(super) fn fixed(pointer: Value<'c, 'a>, shape: Vec<usize>, element: ElementType) -> Self {
        Self {
            pointer,
            shape,
            element,
            dynamic: None,
            stream: None,
        }
    }

    /// The check of an access by `op` of this result, number `j`, in the
    /// bounds-checked mode.
    pub(super) fn check(
        &self,
        status: &Status<'_, 'c, 'a>,
        op: OperationRef,
        store: bool,
        j: usize,
    ) -> Option<Check<'c, 'a>> {
        match &self.dynamic {
            Some(dynamic) => status.check_dynamic(op, store, format!("result {j}"), dynamic),
            None => status.check_tensor(op, store, format!("result {j}"), &self.shape, self.element),
        }
    }
}

/// The identity of a kernel value, for maps keyed by value.
pub(super) fn key(value: Value) -> usize {
    value.to_raw().ptr as usize
}

/// The record a kernel reports failures in, `[status, word]`: status 0
/// is success, 1 an integer division by zero by the `meta.binary` at line
/// `word` (0 when its location has none), `2 + k` an out-of-bounds
/// access, number `k` of [`super::KernelSignature::accesses`], at element
/// offset `word` (the bounds-checked mode), -1 an affine division by
/// the divisor `word`, which is not positive, and -2 affine index
/// arithmetic that overflows i64.
pub type KernelStatus = [i64; 2];

/// The status of an integer division by zero.
pub const DIVISION_BY_ZERO_STATUS: i64 = 1;

/// The status of an out-of-bounds access number 0; access `k` is this
/// plus `k`.
pub const FIRST_ACCESS_STATUS: i64 = 2;

/// The status of an affine `mod`, `floordiv` or `ceildiv` by a divisor
/// that is not positive, which only a symbol (an index operand) can be at
/// run time: the verifier rejects constant ones. Word 1 holds the divisor.
pub const AFFINE_DIVISOR_STATUS: i64 = -1;

/// The status of an affine addition or multiplication that overflows i64,
/// which the verifier cannot rule out where it reads a symbol or where the
/// corners of the domain do not bound it.
pub const AFFINE_OVERFLOW_STATUS: i64 = -2;

/// One checked access of a kernel in the bounds-checked mode, as the
/// runtime reports it: the op that makes it, and the buffer it touches.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct CheckedAccess {
    /// The op, e.g. `meta.reindex`.
    pub op: String,
    /// The op's line in the source, when its location has one.
    pub line: Option<usize>,
    /// A store; otherwise a load.
    pub store: bool,
    /// The buffer: `%argN` for the kernel's argument N, `result N` for
    /// its result N, `shared memory` for a GPU block reduction's array.
    pub buffer: String,
    /// The buffer's type, e.g. `tensor<4x8xf32>`.
    pub r#type: String,
    /// The buffer's element count (0 for a tensor with dynamic
    /// dimensions, whose count is known at run time only).
    pub elements: u64,
}

impl CheckedAccess {
    /// The op, where it is, and what it does to which buffer.
    fn head(&self) -> String {
        let at = self.line.map_or(String::new(), |line| format!(" at line {line}"));
        let verb = if self.store { "writes" } else { "reads" };
        format!("'{}'{at} {verb} {}", self.op, self.buffer)
    }

    fn count(&self) -> String {
        if self.r#type.contains('?') {
            return "elements (as many as its sizes at run time)".into();
        }
        match self.elements {
            1 => "1 element".into(),
            n => format!("{n} elements"),
        }
    }

    /// What the runtime says when this access went to element `offset`,
    /// outside its buffer.
    pub fn out_of_bounds(&self, offset: i64) -> String {
        format!(
            "out-of-bounds access: {} ({}) at element offset {offset}, outside its {}",
            self.head(),
            self.r#type,
            self.count()
        )
    }
}

impl fmt::Display for CheckedAccess {
    /// `'meta.reindex' at line 12 reads %arg0 (tensor<4x8xf32>, 32
    /// elements)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({}, {})", self.head(), self.r#type, self.count())
    }
}

/// A kernel's table of checked accesses, filled as they are emitted. An
/// access that is emitted more than once (the loop nest emits the point
/// once per part of a peeled loop) keeps its first number.
#[derive(Default)]
pub(super) struct Accesses(RefCell<Vec<CheckedAccess>>);

impl Accesses {
    fn number(&self, access: CheckedAccess) -> usize {
        let mut table = self.0.borrow_mut();
        if let Some(k) = table.iter().position(|a| *a == access) {
            return k;
        }
        table.push(access);
        table.len() - 1
    }

    /// The table, in access numbers' order.
    pub(super) fn into_vec(self) -> Vec<CheckedAccess> {
        self.0.into_inner()
    }
}

/// Where a kernel reports failures: its status record, and in the
/// bounds-checked mode the table its accesses are numbered in.
#[derive(Clone, Copy)]
pub(super) struct Status<'t, 'c, 'a> {
    /// The pointer to the [`KernelStatus`] record.
    pub(super) record: Value<'c, 'a>,
    /// The table of checked accesses; `None` outside the bounds-checked
    /// mode.
    pub(super) accesses: Option<&'t Accesses>,
    /// Added to every checked offset before its check: fault injection for
    /// the mode's own tests, 0 everywhere else.
    pub(super) skew: i64,
    /// In a flat kernel (element-wise over a dynamic shape, lowered as one
    /// loop of [`FLAT_EXTENT`] at most), the sizes every buffer has
    /// at run time and their text (`?x64x`), for the checks of buffers of
    /// that pseudo-extent.
    pub(super) flat: Option<&'t (Vec<Value<'c, 'a>>, String)>,
}

/// The static extent a flat kernel is lowered with: an upper bound no
/// element count reaches (its loop runs over the range the caller passes;
/// its checks use the sizes read at run time).
pub(super) const FLAT_EXTENT: i64 = 1 << 62;

/// The check of one access in the bounds-checked mode.
pub(super) struct Check<'c, 'a> {
    record: Value<'c, 'a>,
    status: i64,
    elements: i64,
    /// The sizes of a buffer whose element count is known at run time
    /// only (then `elements` is unused).
    extents: Option<Vec<Value<'c, 'a>>>,
    skew: i64,
    /// Where the access happens at all: an `i1` without which the offset
    /// is not checked (a reindex's read where its indices are in bounds;
    /// elsewhere its overflow value is selected, and a dynamic input may be
    /// empty). `None`: everywhere.
    active: Option<Value<'c, 'a>>,
}

impl<'c, 'a> Check<'c, 'a> {
    /// This check, made only where `active` holds.
    pub(super) fn when(mut self, active: Value<'c, 'a>) -> Self {
        self.active = Some(active);
        self
    }
}

impl<'c, 'a> Status<'_, 'c, 'a> {
    /// The check of an access by `op` of `buffer` (a `type` of `elements`
    /// elements), numbered in the kernel's table; `None` outside the
    /// bounds-checked mode.
    pub(super) fn check(
        &self,
        op: OperationRef,
        store: bool,
        buffer: String,
        r#type: String,
        elements: usize,
    ) -> Option<Check<'c, 'a>> {
        let accesses = self.accesses?;
        let k = accesses.number(CheckedAccess {
            op: op_name(op),
            line: location_line(op.location()),
            store,
            buffer,
            r#type,
            elements: elements as u64,
        });
        Some(Check {
            record: self.record,
            status: FIRST_ACCESS_STATUS + k as i64,
            elements: elements as i64,
            extents: None,
            skew: self.skew,
            active: None,
        })
    }

    /// [`Self::check`] of a tensor buffer of `shape` and `element`s.
    pub(super) fn check_tensor(
        &self,
        op: OperationRef,
        store: bool,
        buffer: String,
        shape: &[usize],
        element: ElementType,
    ) -> Option<Check<'c, 'a>> {
        self.accesses?;
        if let Some((extents, dims)) = self.flat
            && shape == [FLAT_EXTENT as usize]
        {
            let r#type = format!("tensor<{dims}{}>", element.name());
            let mut check = self.check(op, store, buffer, r#type, 0)?;
            check.extents = Some(extents.clone());
            return Some(check);
        }
        let mut r#type = String::from("tensor<");
        for extent in shape {
            r#type += &format!("{extent}x");
        }
        r#type += element.name();
        r#type.push('>');
        self.check(op, store, buffer, r#type, shape.iter().product())
    }

    /// [`Self::check_tensor`] of a tensor with dynamic dimensions: its
    /// element count is the product of its sizes at run time.
    pub(super) fn check_dynamic(
        &self,
        op: OperationRef,
        store: bool,
        buffer: String,
        dynamic: &Dynamic<'c, 'a>,
    ) -> Option<Check<'c, 'a>> {
        let mut check = self.check(op, store, buffer, dynamic.r#type.clone(), 0)?;
        check.extents = Some(dynamic.extents.clone());
        Some(check)
    }
}

/// The element of `element` type at `offset` (an `index` or `i64`) of the
/// buffer at `pointer`; with a `check`, only when `offset` is inside the
/// buffer, and zero otherwise.
pub(super) fn load_at<'c, 'a>(
    at: &Emitter<'c, 'a>,
    pointer: Value<'c, '_>,
    offset: Value<'c, '_>,
    element: ElementType,
    check: Option<Check<'c, '_>>,
) -> Result<Value<'c, 'a>, Error> {
    load_marked(at, pointer, offset, element, check, None, None)
}

/// [`load_at`], the load carrying the `tbaa` attribute `mark` when there
/// is one (a load to prefetch for, `super::prefetch`), and, when
/// `pointer` is the buffer of the kernel's argument `argument`, the
/// emitter's alias scopes of that argument's read
/// ([`super::emit::Scopes`]).
pub(super) fn load_marked<'c, 'a>(
    at: &Emitter<'c, 'a>,
    pointer: Value<'c, '_>,
    offset: Value<'c, '_>,
    element: ElementType,
    check: Option<Check<'c, '_>>,
    mark: Option<Attribute<'c>>,
    argument: Option<usize>,
) -> Result<Value<'c, 'a>, Error> {
    let offset = to_i64(at, offset)?;
    let Some(check) = check else {
        return load(at, pointer, offset, element, mark, argument);
    };
    let (offset, ok) = guard(at, &check, offset)?;
    let r#type = value_type(at.context, element);
    let zero = if element.is_float() {
        at.float(r#type, 0.0)?
    } else {
        at.int(r#type, 0)?
    };
    // An empty buffer has no element to read instead.
    let Some(ok) = ok else { return Ok(zero) };
    let safe = at.select(ok, offset, at.int(offset.r#type(), 0)?)?;
    let loaded = load(at, pointer, safe, element, mark, argument)?;
    at.select(ok, loaded, zero)
}

/// Stores `value` as the element of `element` type at `offset` (an
/// `index` or `i64`) of the buffer at `pointer`; with a `check`, only when
/// `offset` is inside the buffer.
pub(super) fn store_at<'c>(
    at: &Emitter<'c, '_>,
    pointer: Value<'c, '_>,
    offset: Value<'c, '_>,
    value: Value<'c, '_>,
    element: ElementType,
    check: Option<Check<'c, '_>>,
) -> Result<(), Error> {
    store_marked(at, pointer, offset, value, element, check, None)
}

/// [`store_at`], the store carrying the `tbaa` attribute `mark` when
/// there is one (a streamed result's, `super::stream`).
pub(super) fn store_marked<'c>(
    at: &Emitter<'c, '_>,
    pointer: Value<'c, '_>,
    offset: Value<'c, '_>,
    value: Value<'c, '_>,
    element: ElementType,
    check: Option<Check<'c, '_>>,
    mark: Option<Attribute<'c>>,
) -> Result<(), Error> {
    let offset = to_i64(at, offset)?;
    let value = if element == ElementType::I1 {
        at.value("arith.extui", &[value], memory(at.context, element))?
    } else {
        value.into_value_ref()
    };
    let Some(check) = check else {
        return store(at, pointer, offset, value, element, mark);
    };
    let (offset, ok) = guard(at, &check, offset)?;
    let Some(ok) = ok else { return Ok(()) };
    let inside = at.if_then(ok)?;
    store(&inside, pointer, offset, value, element, mark)?;
    inside.finish()
}

/// `offset` as an `i64`.
fn to_i64<'c, 'a>(at: &Emitter<'c, 'a>, offset: Value<'c, '_>) -> Result<Value<'c, 'a>, Error> {
    let i64_type: Type = melior::ir::r#type::IntegerType::new(at.context, 64).into();
    if offset.r#type() == i64_type {
        Ok(offset.into_value_ref())
    } else {
        at.value("arith.index_cast", &[offset], i64_type)
    }
}

fn load<'c, 'a>(
    at: &Emitter<'c, 'a>,
    pointer: Value<'c, '_>,
    offset: Value<'c, '_>,
    element: ElementType,
    mark: Option<Attribute<'c>>,
    argument: Option<usize>,
) -> Result<Value<'c, 'a>, Error> {
    let address = emit_gep(at, pointer, offset, memory(at.context, element))?;
    let r#type = memory(at.context, element);
    let mut attributes: Vec<(&str, Attribute<'c>)> = mark.map(|tbaa| ("tbaa", tbaa)).into_iter().collect();
    if let Some(argument) = argument {
        attributes.extend(at.argument_scopes(argument));
    }
    let loaded = at
        .op("llvm.load", &[address], &[r#type], &attributes)?
        .ok_or_else(|| Error::Lowering("a load without a result".into()))?;
    if element == ElementType::I1 {
        at.value("arith.trunci", &[loaded], at.i1())
    } else {
        Ok(loaded)
    }
}

/// Stores `value`, already of the memory type, at the `i64` `offset`.
fn store<'c>(
    at: &Emitter<'c, '_>,
    pointer: Value<'c, '_>,
    offset: Value<'c, '_>,
    value: Value<'c, '_>,
    element: ElementType,
    mark: Option<Attribute<'c>>,
) -> Result<(), Error> {
    let address = emit_gep(at, pointer, offset, memory(at.context, element))?;
    let mut attributes: Vec<(&str, Attribute<'c>)> = mark.map(|tbaa| ("tbaa", tbaa)).into_iter().collect();
    attributes.extend(at.write_scopes());
    at.op("llvm.store", &[value, address], &[], &attributes)
        .map(|_| ())
}

/// LLVM's `monotonic` atomic ordering, as the LLVM dialect numbers it:
/// the claim of the status record needs atomicity, not ordering (the
/// runtime reads the record after the kernel has finished).
pub(super) const MONOTONIC: i64 = 2;

/// The check of the `i64` `offset`: reports it when it is outside the
/// buffer; returns the offset to use (skewed, in tests) and whether it is
/// inside, `None` when the buffer is empty and no offset is.
fn guard<'c, 'a>(
    at: &Emitter<'c, 'a>,
    check: &Check<'c, '_>,
    offset: Value<'c, 'a>,
) -> Result<(Value<'c, 'a>, Option<Value<'c, 'a>>), Error> {
    let i64_type: Type = melior::ir::r#type::IntegerType::new(at.context, 64).into();
    let offset = if check.skew == 0 {
        offset
    } else {
        at.value("arith.addi", &[offset, at.int(i64_type, check.skew)?], i64_type)?
    };
    let elements = match &check.extents {
        Some(extents) => {
            let index = Type::index(at.context);
            let mut count = at.index(1)?;
            for extent in extents {
                count = at.value("arith.muli", &[count, *extent], index)?;
            }
            at.value("arith.index_cast", &[count], i64_type)?
        }
        None if check.elements == 0 => {
            report(at, check, offset)?;
            return Ok((offset, None));
        }
        None => at.int(i64_type, check.elements)?,
    };
    // Unsigned: a negative offset is above every element count.
    let mut outside = at.cmpi(9, offset, elements)?;
    if let Some(active) = check.active {
        outside = at.value("arith.andi", &[outside, active], outside.r#type())?;
    }
    let failed = at.if_then(outside)?;
    report(&failed, check, offset)?;
    failed.finish()?;
    let inside = at.cmpi(6, offset, elements)?;
    Ok((offset, Some(inside)))
}

/// Claims the status record for `check`'s access at `offset`.
fn report<'c>(at: &Emitter<'c, '_>, check: &Check<'c, '_>, offset: Value<'c, '_>) -> Result<(), Error> {
    claim(at, check.record, check.status, offset)
}

/// Claims the status record at `record`: its status word goes from 0 to
/// `status`, and only then is `word` (an `i64`) written, so the record's
/// two words belong to one failure.
pub(super) fn claim<'c>(
    at: &Emitter<'c, '_>,
    record: Value<'c, '_>,
    status: i64,
    word: Value<'c, '_>,
) -> Result<(), Error> {
    let context = at.context;
    let i64_type: Type = melior::ir::r#type::IntegerType::new(context, 64).into();
    let failed = || Error::Lowering("building the bounds check failed".into());
    let pair = Type::parse(context, "!llvm.struct<(i64, i1)>").ok_or_else(failed)?;
    let ordering = IntegerAttribute::new(i64_type, MONOTONIC).into();
    let (zero, status) = (at.int(i64_type, 0)?, at.int(i64_type, status)?);
    let scopes = at.write_scopes();
    let mut attributes = vec![
        ("success_ordering", ordering),
        ("failure_ordering", ordering),
        at.device_scope(),
    ];
    attributes.extend(scopes.iter().copied());
    let exchanged = at
        .op("llvm.cmpxchg", &[record, zero, status], &[pair], &attributes)?
        .ok_or_else(failed)?;
    let position = DenseI64ArrayAttribute::new(context, &[1]).into();
    let claimed = at
        .op(
            "llvm.extractvalue",
            &[exchanged],
            &[at.i1()],
            &[("position", position)],
        )?
        .ok_or_else(failed)?;
    let first = at.if_then(claimed)?;
    let slot = emit_gep(&first, record, first.int(i64_type, 1)?, i64_type)?;
    first.op("llvm.store", &[word, slot], &[], &scopes)?;
    first.finish()
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
