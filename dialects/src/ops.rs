//! Typed views and builders for every `meta` op.
//!
//! A view wraps an [`OperationRef`] whose name has been checked; accessors
//! return `None` where the IR is malformed, so callers that run before the
//! verifier never panic. Builders produce ops in DESIGN.md's textual contract.

use crate::kinds::{BinaryKind, ReduceKind, TernaryKind, UnaryKind};
use melior::{
    Error,
    ir::{
        AffineExpr, AffineMap, Attribute, AttributeLike, Identifier, Location, Operation, OperationRef, Type,
        Value,
        attribute::{IntegerAttribute, StringAttribute},
        operation::{OperationBuilder, OperationLike},
        r#type::RankedTensorType,
    },
};
use std::marker::PhantomData;

/// Reads an `affine_map` attribute.
pub fn affine_map_attribute(attribute: Attribute<'_>) -> Option<AffineMap<'_>> {
    // SAFETY: the attribute is live; the map is owned by its context.
    unsafe {
        mlir_sys::mlirAttributeIsAAffineMap(attribute.to_raw())
            .then(|| AffineMap::from_raw(mlir_sys::mlirAffineMapAttrGetValue(attribute.to_raw())))
    }
}

/// Wraps an affine map as an attribute.
pub fn affine_map_to_attribute(map: AffineMap<'_>) -> Attribute<'_> {
    // SAFETY: the map is live and owned by its context.
    unsafe { Attribute::from_raw(mlir_sys::mlirAffineMapAttrGet(map.to_raw())) }
}

/// The elements of an array attribute (melior 0.27's `ArrayAttribute`
/// checks the wrong kind, so this reads it through the C API).
pub fn array_elements(attribute: Attribute<'_>) -> Option<Vec<Attribute<'_>>> {
    // SAFETY: the attribute is live; indices stay below its element count.
    unsafe {
        if !mlir_sys::mlirAttributeIsAArray(attribute.to_raw()) {
            return None;
        }
        let count = mlir_sys::mlirArrayAttrGetNumElements(attribute.to_raw());
        Some(
            (0..count)
                .map(|i| Attribute::from_raw(mlir_sys::mlirArrayAttrGetElement(attribute.to_raw(), i)))
                .collect(),
        )
    }
}

/// Reads a string attribute; `None` for other attributes and for strings
/// that are not UTF-8 (MLIR strings may hold any bytes).
///
/// melior 0.27's `StringAttribute::value` builds a slice from the null data
/// pointer of an empty string, which is undefined behaviour; this does not.
pub fn string_attribute<'c>(attribute: Attribute<'c>) -> Option<&'c str> {
    // SAFETY: the attribute is live; its string is owned by the context,
    // which outlives `'c`, and is only read when non-empty.
    unsafe {
        if !mlir_sys::mlirAttributeIsAString(attribute.to_raw()) {
            return None;
        }
        let value = mlir_sys::mlirStringAttrGetValue(attribute.to_raw());
        if value.length == 0 || value.data.is_null() {
            return Some("");
        }
        std::str::from_utf8(std::slice::from_raw_parts(value.data.cast::<u8>(), value.length)).ok()
    }
}

/// The elements of a dense i64 array attribute (`array<i64: 1, 2>`);
/// `None` for any other attribute.
pub fn i64_array_attribute(attribute: Attribute) -> Option<Vec<i64>> {
    // SAFETY: the attribute is live; elements are read below its count,
    // and only from a dense i64 array (checked first).
    unsafe {
        let raw = attribute.to_raw();
        mlir_sys::mlirAttributeIsADenseI64Array(raw).then(|| {
            (0..mlir_sys::mlirDenseArrayGetNumElements(raw))
                .map(|i| mlir_sys::mlirDenseI64ArrayGetElement(raw, i))
                .collect()
        })
    }
}

/// An integer set (`affine_set<(d0) : (d0 - 5 >= 0)>`), which melior does not
/// wrap: the conjunction of its constraints.
#[derive(Clone, Copy, Debug)]
pub struct IntegerSet<'c> {
    raw: mlir_sys::MlirIntegerSet,
    _context: PhantomData<&'c ()>,
}

impl<'c> IntegerSet<'c> {
    /// Reads an `affine_set` attribute.
    pub fn from_attribute(attribute: Attribute<'c>) -> Option<Self> {
        // SAFETY: the attribute is live; the set is owned by its context.
        unsafe {
            mlir_sys::mlirAttributeIsAIntegerSet(attribute.to_raw()).then(|| Self {
                raw: mlir_sys::mlirIntegerSetAttrGetValue(attribute.to_raw()),
                _context: PhantomData,
            })
        }
    }

    /// Number of dimensions.
    pub fn dim_count(self) -> usize {
        // SAFETY: `raw` is a live integer set.
        unsafe { mlir_sys::mlirIntegerSetGetNumDims(self.raw) as usize }
    }

    /// Number of symbols.
    pub fn symbol_count(self) -> usize {
        // SAFETY: `raw` is a live integer set.
        unsafe { mlir_sys::mlirIntegerSetGetNumSymbols(self.raw) as usize }
    }

    /// The constraints: `(expr, true)` means `expr == 0`, `(expr, false)`
    /// means `expr >= 0`.
    pub fn constraints(self) -> Vec<(AffineExpr<'c>, bool)> {
        // SAFETY: `raw` is a live integer set; indices stay below its count.
        unsafe {
            let count = mlir_sys::mlirIntegerSetGetNumConstraints(self.raw);
            (0..count)
                .map(|i| {
                    (
                        AffineExpr::from_raw(mlir_sys::mlirIntegerSetGetConstraint(self.raw, i)),
                        mlir_sys::mlirIntegerSetIsConstraintEq(self.raw, i),
                    )
                })
                .collect()
        }
    }
}

/// The ranked tensor type of a value, if it has one.
pub fn tensor_type<'c>(value: Value<'c, '_>) -> Option<RankedTensorType<'c>> {
    use melior::ir::ValueLike;
    RankedTensorType::try_from(value.r#type()).ok()
}

/// Result `index` of `op`, `None` when it has fewer. Melior's own
/// `result` prints the whole op into its error when the index is out of
/// range, which means verifying and printing the module the op is in:
/// asked of every op without results (a store, a return), it made
/// lowering quadratic in a module's size.
pub fn result_at<'c: 'a, 'a>(op: &impl OperationLike<'c, 'a>, index: usize) -> Option<Value<'c, 'a>> {
    (index < op.result_count()).then(|| op.result(index).ok().map(Value::from))?
}

/// Declares a view type for one op name.
macro_rules! op_view {
    ($(#[$doc:meta])* $view:ident = $name:literal) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug)]
        pub struct $view<'c, 'a> {
            op: OperationRef<'c, 'a>,
        }

        impl<'c, 'a> $view<'c, 'a> {
            /// The op's name in the textual contract.
            pub const NAME: &'static str = $name;

            /// Views `op` as this op, if its name matches.
            pub fn cast(op: OperationRef<'c, 'a>) -> Option<Self> {
                (op.name().as_string_ref().as_str() == Ok($name)).then_some(Self { op })
            }

            /// The underlying operation.
            pub fn operation(&self) -> OperationRef<'c, 'a> {
                self.op
            }

            #[allow(dead_code)]
            fn attribute(&self, name: &str) -> Option<Attribute<'c>> {
                self.op.attribute(name).ok()
            }

            #[allow(dead_code)]
            fn operand(&self, index: usize) -> Option<Value<'c, 'a>> {
                (index < self.op.operand_count()).then(|| self.op.operand(index).ok())?
            }

            #[allow(dead_code)]
            fn output(&self) -> Option<Value<'c, 'a>> {
                $crate::ops::result_at(&self.op, 0)
            }

            #[allow(dead_code)]
            fn kind_text(&self) -> Option<&'c str> {
                self.attribute("kind").and_then(string_attribute)
            }
        }
    };
}

op_view! {
    /// `meta.reindex`: `out[o] = in[indices(o)]`, or `overflow_value`.
    ReindexOp = "meta.reindex"
}
op_view! {
    /// `meta.reindex_reduce`: `out[o] = reduce { in[i] : indices(i) = o }`.
    ReindexReduceOp = "meta.reindex_reduce"
}
op_view! {
    /// `meta.unary`: an element-wise function of one tensor.
    UnaryOp = "meta.unary"
}
op_view! {
    /// `meta.binary`: an element-wise function of two equally shaped tensors.
    BinaryOp = "meta.binary"
}
op_view! {
    /// `meta.ternary`: an element-wise function of three equally shaped tensors.
    TernaryOp = "meta.ternary"
}
op_view! {
    /// `meta.guard`: stops execution when its `tensor<i1>` condition is false.
    GuardOp = "meta.guard"
}
op_view! {
    /// `meta.state_read`: the value of a named piece of state at run start.
    StateReadOp = "meta.state_read"
}
op_view! {
    /// `meta.state_write`: a deferred write of a named piece of state.
    StateWriteOp = "meta.state_write"
}

/// Accessors shared by the two index-mapping ops.
macro_rules! indexing_accessors {
    ($view:ident) => {
        impl<'c, 'a> $view<'c, 'a> {
            /// The mapped tensor.
            pub fn input(&self) -> Option<Value<'c, 'a>> {
                self.operand(0)
            }

            /// The result tensor.
            pub fn result(&self) -> Option<Value<'c, 'a>> {
                self.output()
            }

            /// The `indices` affine map.
            pub fn indices(&self) -> Option<AffineMap<'c>> {
                self.attribute("indices").and_then(affine_map_attribute)
            }

            /// The trailing `index` operands: sizes of the result's `?`
            /// dimensions, then the map's symbols.
            pub fn index_operands(&self) -> Vec<Value<'c, 'a>> {
                self.op.operands().skip(1).collect()
            }

            /// The `overflow_conditions` sets; `Some(Err(()))` when the
            /// attribute is present but not an array of integer sets.
            pub fn overflow_conditions(&self) -> Option<Result<Vec<IntegerSet<'c>>, ()>> {
                let attribute = self.attribute("overflow_conditions")?;
                Some(array_elements(attribute).ok_or(()).and_then(|elements| {
                    elements
                        .into_iter()
                        .map(|e| IntegerSet::from_attribute(e).ok_or(()))
                        .collect()
                }))
            }
        }
    };
}

indexing_accessors!(ReindexOp);
indexing_accessors!(ReindexReduceOp);

fn named<'c>(
    context: &'c melior::Context,
    name: &str,
    attribute: Attribute<'c>,
) -> (Identifier<'c>, Attribute<'c>) {
    (Identifier::new(context, name), attribute)
}

fn kind_attribute<'c>(context: &'c melior::Context, kind: &str) -> (Identifier<'c>, Attribute<'c>) {
    named(context, "kind", StringAttribute::new(context, kind).into())
}

impl<'c, 'a> ReindexOp<'c, 'a> {
    /// The value for out-of-bounds elements, when given explicitly.
    pub fn overflow_value(&self) -> Option<Attribute<'c>> {
        self.attribute("overflow_value")
    }

    /// Builds `meta.reindex`.
    pub fn build(
        context: &'c melior::Context,
        location: Location<'c>,
        input: Value<'c, '_>,
        result_type: Type<'c>,
        indices: AffineMap<'c>,
        overflow_value: Option<Attribute<'c>>,
        index_operands: &[Value<'c, '_>],
    ) -> Result<Operation<'c>, Error> {
        let mut attributes = vec![named(context, "indices", affine_map_to_attribute(indices))];
        attributes.extend(overflow_value.map(|v| named(context, "overflow_value", v)));
        let mut operands = vec![input];
        operands.extend_from_slice(index_operands);
        OperationBuilder::new(Self::NAME, location)
            .add_operands(&operands)
            .add_results(&[result_type])
            .add_attributes(&attributes)
            .build()
    }
}

impl<'c, 'a> ReindexReduceOp<'c, 'a> {
    /// The reduction kind, if it is a known one.
    pub fn kind(&self) -> Option<ReduceKind> {
        self.kind_text().and_then(ReduceKind::parse)
    }

    /// Builds `meta.reindex_reduce`.
    pub fn build(
        context: &'c melior::Context,
        location: Location<'c>,
        kind: ReduceKind,
        input: Value<'c, '_>,
        result_type: Type<'c>,
        indices: AffineMap<'c>,
        index_operands: &[Value<'c, '_>],
    ) -> Result<Operation<'c>, Error> {
        let mut operands = vec![input];
        operands.extend_from_slice(index_operands);
        OperationBuilder::new(Self::NAME, location)
            .add_operands(&operands)
            .add_results(&[result_type])
            .add_attributes(&[
                kind_attribute(context, kind.name()),
                named(context, "indices", affine_map_to_attribute(indices)),
            ])
            .build()
    }
}

impl<'c, 'a> UnaryOp<'c, 'a> {
    /// The function, if it is a known kind.
    pub fn kind(&self) -> Option<UnaryKind> {
        self.kind_text().and_then(UnaryKind::parse)
    }

    /// The operand.
    pub fn input(&self) -> Option<Value<'c, 'a>> {
        self.operand(0)
    }

    /// The result.
    pub fn result(&self) -> Option<Value<'c, 'a>> {
        self.output()
    }

    /// Builds `meta.unary`.
    pub fn build(
        context: &'c melior::Context,
        location: Location<'c>,
        kind: UnaryKind,
        input: Value<'c, '_>,
        result_type: Type<'c>,
    ) -> Result<Operation<'c>, Error> {
        OperationBuilder::new(Self::NAME, location)
            .add_operands(&[input])
            .add_results(&[result_type])
            .add_attributes(&[kind_attribute(context, kind.name())])
            .build()
    }
}

impl<'c, 'a> BinaryOp<'c, 'a> {
    /// The function, if it is a known kind.
    pub fn kind(&self) -> Option<BinaryKind> {
        self.kind_text().and_then(BinaryKind::parse)
    }

    /// The left operand.
    pub fn lhs(&self) -> Option<Value<'c, 'a>> {
        self.operand(0)
    }

    /// The right operand.
    pub fn rhs(&self) -> Option<Value<'c, 'a>> {
        self.operand(1)
    }

    /// The result.
    pub fn result(&self) -> Option<Value<'c, 'a>> {
        self.output()
    }

    /// Builds `meta.binary`.
    pub fn build(
        context: &'c melior::Context,
        location: Location<'c>,
        kind: BinaryKind,
        lhs: Value<'c, '_>,
        rhs: Value<'c, '_>,
        result_type: Type<'c>,
    ) -> Result<Operation<'c>, Error> {
        OperationBuilder::new(Self::NAME, location)
            .add_operands(&[lhs, rhs])
            .add_results(&[result_type])
            .add_attributes(&[kind_attribute(context, kind.name())])
            .build()
    }
}

impl<'c, 'a> TernaryOp<'c, 'a> {
    /// The function, if it is a known kind.
    pub fn kind(&self) -> Option<TernaryKind> {
        self.kind_text().and_then(TernaryKind::parse)
    }

    /// The `i1` selector.
    pub fn condition(&self) -> Option<Value<'c, 'a>> {
        self.operand(0)
    }

    /// Chosen where the condition holds.
    pub fn on_true(&self) -> Option<Value<'c, 'a>> {
        self.operand(1)
    }

    /// Chosen where it does not.
    pub fn on_false(&self) -> Option<Value<'c, 'a>> {
        self.operand(2)
    }

    /// The result.
    pub fn result(&self) -> Option<Value<'c, 'a>> {
        self.output()
    }

    /// Builds `meta.ternary`.
    pub fn build(
        context: &'c melior::Context,
        location: Location<'c>,
        kind: TernaryKind,
        operands: [Value<'c, '_>; 3],
        result_type: Type<'c>,
    ) -> Result<Operation<'c>, Error> {
        OperationBuilder::new(Self::NAME, location)
            .add_operands(&operands)
            .add_results(&[result_type])
            .add_attributes(&[kind_attribute(context, kind.name())])
            .build()
    }
}

impl<'c, 'a> GuardOp<'c, 'a> {
    /// The `tensor<i1>` that must hold.
    pub fn condition(&self) -> Option<Value<'c, 'a>> {
        self.operand(0)
    }

    /// The guard's id, unique within its function.
    pub fn id(&self) -> Option<i64> {
        self.attribute("id")
            .and_then(|a| IntegerAttribute::try_from(a).ok())
            .map(|a| a.value())
    }

    /// The human-readable assumption.
    pub fn reason(&self) -> Option<&'c str> {
        self.attribute("reason").and_then(string_attribute)
    }

    /// Builds `meta.guard`.
    pub fn build(
        context: &'c melior::Context,
        location: Location<'c>,
        condition: Value<'c, '_>,
        id: i64,
        reason: &str,
    ) -> Result<Operation<'c>, Error> {
        let i64_type = melior::ir::r#type::IntegerType::new(context, 64).into();
        OperationBuilder::new(Self::NAME, location)
            .add_operands(&[condition])
            .add_attributes(&[
                named(context, "id", IntegerAttribute::new(i64_type, id).into()),
                named(context, "reason", StringAttribute::new(context, reason).into()),
            ])
            .build()
    }
}

impl<'c, 'a> StateReadOp<'c, 'a> {
    /// The state's name, e.g. `rnn.h`.
    pub fn state_name(&self) -> Option<&'c str> {
        self.attribute("name").and_then(string_attribute)
    }

    /// The value read.
    pub fn result(&self) -> Option<Value<'c, 'a>> {
        self.output()
    }

    /// Builds `meta.state_read`.
    pub fn build(
        context: &'c melior::Context,
        location: Location<'c>,
        name: &str,
        result_type: Type<'c>,
    ) -> Result<Operation<'c>, Error> {
        OperationBuilder::new(Self::NAME, location)
            .add_results(&[result_type])
            .add_attributes(&[named(context, "name", StringAttribute::new(context, name).into())])
            .build()
    }
}

impl<'c, 'a> StateWriteOp<'c, 'a> {
    /// The state's name, e.g. `rnn.h`.
    pub fn state_name(&self) -> Option<&'c str> {
        self.attribute("name").and_then(string_attribute)
    }

    /// The value written.
    pub fn value(&self) -> Option<Value<'c, 'a>> {
        self.operand(0)
    }

    /// Builds `meta.state_write`.
    pub fn build(
        context: &'c melior::Context,
        location: Location<'c>,
        name: &str,
        value: Value<'c, '_>,
    ) -> Result<Operation<'c>, Error> {
        OperationBuilder::new(Self::NAME, location)
            .add_operands(&[value])
            .add_attributes(&[named(context, "name", StringAttribute::new(context, name).into())])
            .build()
    }
}

/// Sets attribute `name` of `op` (which a [`OperationRef`] cannot do
/// through melior).
pub fn set_attribute(op: OperationRef, name: &str, attribute: Attribute) {
    let name = melior::StringRef::new(name);
    // SAFETY: `op` and `attribute` are live, and `name` outlives the call.
    unsafe { mlir_sys::mlirOperationSetAttributeByName(op.to_raw(), name.to_raw(), attribute.to_raw()) }
}

/// Names of the `meta` ops without side effects. `meta.state_read` is among
/// them: writes are deferred to the end of a run, so within a run every read
/// of a name sees the same value.
pub const PURE_OPS: [&str; 6] = [
    ReindexOp::NAME,
    ReindexReduceOp::NAME,
    UnaryOp::NAME,
    BinaryOp::NAME,
    TernaryOp::NAME,
    StateReadOp::NAME,
];

/// Whether `op` is a `meta` op without side effects.
pub fn is_pure_meta_op(op: OperationRef) -> bool {
    op.name()
        .as_string_ref()
        .as_str()
        .is_ok_and(|name| PURE_OPS.contains(&name))
}

/// The `func.func`s directly in `module_body` (a module's body block), by
/// name: how the interpreter, the passes and the runtime find functions.
pub fn functions<'c, 'a>(
    module_body: melior::ir::BlockRef<'c, 'a>,
) -> std::collections::BTreeMap<String, melior::ir::OperationRef<'c, 'a>> {
    use melior::ir::{BlockLike, operation::OperationLike};
    let mut functions = std::collections::BTreeMap::new();
    let mut next = module_body.first_operation();
    while let Some(op) = next {
        next = op.next_in_block();
        if op.name().as_string_ref().as_str() == Ok("func.func")
            && let Some(name) = op.attribute("sym_name").ok().and_then(string_attribute)
        {
            functions.insert(name.to_owned(), op);
        }
    }
    functions
}
