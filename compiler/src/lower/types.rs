//! The vocabulary every part of lowering shares, in a leaf module so that
//! the parts (`legal`, `nest`, `point`, `scalar`, `index`, `access`,
//! `schedule`, ...) depend on it and never on `lower`'s root, which
//! depends on them: the math mode, how element types are stored and
//! computed with, static shapes and element addressing.
//!
//! Invariant: `i1` is stored as a byte and computed with as `i1`, so
//! [`memory_type`] and [`value_type`] differ only there:
//!
//! ```text
//! memory_type(i1) = i8      value_type(i1) = i1
//! memory_type(f32) = f32    value_type(f32) = f32
//! ```

use super::emit::Emitter;
use crate::Error;
use jitc_dialect::{kinds::ElementType, ops::tensor_type};
use melior::{
    Context,
    ir::{BlockLike, Type, Value, r#type::DimSize, r#type::ShapedTypeLike},
};

/// The element type as stored in memory.
/// (A byte per `i1`.)
pub(crate) fn memory_type<'c>(context: &'c Context, element: ElementType) -> Type<'c> {
    match element {
        ElementType::I1 => melior::ir::r#type::IntegerType::new(context, 8).into(),
        other => other.mlir_type(context),
    }
}
/// The element type as computed with.
pub(crate) fn value_type<'c>(context: &'c Context, element: ElementType) -> Type<'c> {
    element.mlir_type(context)
}
/// The static shape and element type of a tensor type, if it has them.
pub(crate) fn static_shape(r#type: Type) -> Option<(Vec<usize>, ElementType)> {
    let tensor = melior::ir::r#type::RankedTensorType::try_from(r#type).ok()?;
    let shape = (0..tensor.rank())
        .map(|d| match tensor.dim_size(d) {
            Ok(DimSize::Static(n)) => Some(n as usize),
            _ => None,
        })
        .collect::<Option<Vec<_>>>()?;
    Some((shape, ElementType::from_type(tensor.element())?))
}
/// The shape (`None` for a dynamic dimension) and element type of a ranked
/// tensor type.
pub(crate) fn dynamic_shape(r#type: Type) -> Option<(Vec<Option<usize>>, ElementType)> {
    let tensor = melior::ir::r#type::RankedTensorType::try_from(r#type).ok()?;
    let shape = (0..tensor.rank())
        .map(|d| match tensor.dim_size(d) {
            Ok(DimSize::Static(n)) => Some(Some(n as usize)),
            Ok(DimSize::Dynamic) => Some(None),
            _ => None,
        })
        .collect::<Option<Vec<_>>>()?;
    Some((shape, ElementType::from_type(tensor.element())?))
}

/// How closely compiled float arithmetic follows the interpreter.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum MathMode {
    /// Vectorizable: f32 `exp`, `tanh` and `sigmoid` are straight-line
    /// polynomial approximations (within 1-3 ulps of libm; see
    /// `docs/semantics.md`), and float `add`/`mul` reductions that
    /// accumulate in registers may be reassociated, so the loop vectorizer
    /// can keep partial sums; on the CPU a float division may be a
    /// multiplication by the divisor's reciprocal (`arcp`: LLVM hoists the
    /// reciprocal of a divisor the inner loop does not change, and shares
    /// one between divisions by the same value; never an estimate); before
    /// fusion, `meta-fast-math` computes f32 `1 ± tanh(u)` as
    /// `2 sigmoid(±2u)` (GELU's tanh form as `y sigmoid(y (2k + 2ka y^2))`)
    /// and `pow(x, 2)` as `x * x`. Everything else is exact.
    #[default]
    Fast,
    /// Bit-identical to the interpreter: libm calls and reductions folded
    /// strictly in row-major order, at the cost of scalar hot loops.
    Exact,
}
/// A `getelementptr` of `offset` elements of type `element` from `base`.
pub(crate) fn gep<'c, 'a>(
    at: &Emitter<'c, 'a>,
    base: Value<'c, '_>,
    offset: Value<'c, '_>,
    element: Type<'c>,
) -> Result<Value<'c, 'a>, Error> {
    let pointer = melior::dialect::llvm::r#type::pointer(at.context, 0);
    let op = melior::dialect::llvm::get_element_ptr_dynamic(
        at.context,
        base,
        &[offset],
        element,
        pointer,
        at.location,
    );
    let op = at.block.append_operation(op);
    op.result(0)
        .map(Into::into)
        .map_err(|_| Error::Lowering("getelementptr".into()))
}
/// The type of a kernel value that lowering keeps, for checks.
pub(crate) fn element_of(value: Value) -> Option<ElementType> {
    tensor_type(value).and_then(|t| ElementType::from_type(t.element()))
}
