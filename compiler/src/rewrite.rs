//! IR surgery: the one edge where jitc's passes and the fuser touch MLIR's
//! C API. Building small host ops in front of an anchor op, cloning ops
//! under a value mapping, replacing uses, moving and erasing ops, retyping
//! values and reading constants all live here, as safe functions with the
//! `unsafe` blocks (and their `// SAFETY:` lines) inside. Pass bodies in
//! `transforms/` contain no `unsafe` at all; `scripts/check-architecture.sh`
//! checks that in CI.
//!
//! melior 0.27 wraps some of this (`IrRewriter`, `OperationMutLike`), but
//! only for owned or `OperationRefMut` handles, while passes hold the
//! `OperationRef`s a walk collected; so these go through the C API on
//! those handles. Builders return `None` rather than panic when MLIR
//! rejects an op.
//!
//! Invariant: erasing is the one operation that invalidates handles.
//! [`erase`] takes the op by value, and every caller takes it from a list
//! it does not read again (the `// SAFETY:`-style reasoning is written at
//! each call as a comment).

use jitc_dialect::{
    ops::{GuardOp, set_attribute, string_attribute},
    profile::SITE_ATTRIBUTE,
    verify::{collect_ops, op_name},
};
use melior::{
    Context,
    ir::{
        Attribute, AttributeLike, BlockLike, BlockRef, Identifier, Location, Operation, OperationRef, Type,
        TypeLike, Value, ValueLike,
        attribute::{DenseElementsAttribute, IntegerAttribute, StringAttribute},
        operation::{OperationBuilder, OperationLike},
        r#type::{DimSize, IntegerType, RankedTensorType, ShapedTypeLike},
    },
};
use std::collections::{BTreeSet, HashMap};

/// Runs `f` with the `&Context` that owns `op`, for code that builds ops
/// (melior's builders take `&Context`; an op hands out a `ContextRef`).
pub fn with_context<R>(op: OperationRef, f: impl FnOnce(&Context) -> R) -> R {
    let context_ref = op.context();
    // SAFETY: `to_ref` hands out a reference into `context_ref`, which lives
    // until `f` returns; the context itself outlives every op in it.
    let context = unsafe { context_ref.to_ref() };
    f(context)
}

/// Whether jitc's passes treat `op` as having no side effects.
pub fn is_pure(op: OperationRef) -> bool {
    jitc_dialect::ops::is_pure_meta_op(op)
}

/// Whether `op` has results and none of them is used.
pub fn results_unused(op: OperationRef) -> bool {
    op.result_count() > 0
        && op.results().all(|result| {
            // SAFETY: `result` is a live value.
            unsafe { mlir_sys::mlirOpOperandIsNull(mlir_sys::mlirValueGetFirstUse(result.to_raw())) }
        })
}

/// The op that owns `value`, as a key comparable with [`op_key`]; `None`
/// for a block argument.
pub fn owner_key(value: Value) -> Option<usize> {
    defining_op(value).map(op_key)
}

/// The raw handle of an op, as a map key.
pub fn op_key(op: OperationRef) -> usize {
    op.to_raw().ptr as usize
}

/// Moves `op` right before `anchor`, which must be in a block.
pub fn move_before(op: OperationRef, anchor: OperationRef) {
    // SAFETY: both ops are live and `anchor` is in a block, which takes
    // ownership of `op`.
    unsafe { mlir_sys::mlirOperationMoveBefore(op.to_raw(), anchor.to_raw()) }
}

/// Removes attribute `name` from `op`; nothing happens when it has none.
pub fn remove_attribute(op: OperationRef, name: &str) {
    let name = melior::StringRef::new(name);
    // SAFETY: `op` is live and `name` outlives the call.
    unsafe { mlir_sys::mlirOperationRemoveAttributeByName(op.to_raw(), name.to_raw()) };
}

/// The address of `value`'s uniqued location (a block argument's own
/// location, which melior does not expose), for fingerprints.
pub(crate) fn value_location_address(value: Value) -> u64 {
    // SAFETY: `value` is live; the location is uniqued in its context.
    unsafe { mlir_sys::mlirValueGetLocation(value.to_raw()).ptr as usize as u64 }
}

/// A copy of `op` (regions included), owned by the caller until a block
/// takes it.
pub fn clone_op<'c>(op: OperationRef<'c, '_>) -> Operation<'c> {
    // SAFETY: cloning a live op gives a new op that nothing else owns.
    unsafe { Operation::from_raw(mlir_sys::mlirOperationClone(op.to_raw())) }
}

/// Replaces the uses of `old` inside `user` (only there) with `new`.
pub fn replace_uses_in(user: OperationRef, old: Value, new: Value) {
    // SAFETY: all three are live; `new` has `old`'s type (callers clone).
    unsafe { mlir_sys::mlirOperationReplaceUsesOfWith(user.to_raw(), old.to_raw(), new.to_raw()) }
}

/// Whether `attribute` is a splat `dense<...>` elements attribute.
pub fn is_dense_splat(attribute: Attribute) -> bool {
    // SAFETY: `attribute` is live; splat is only asked of dense ones.
    unsafe {
        mlir_sys::mlirAttributeIsADenseElements(attribute.to_raw())
            && mlir_sys::mlirDenseElementsAttrIsSplat(attribute.to_raw())
    }
}

/// Whether `attribute` is the splat `dense<true>` of `i1` elements.
pub fn is_true_splat(attribute: Attribute) -> bool {
    if !is_dense_splat(attribute) {
        return false;
    }
    // SAFETY: `attribute` is a live dense elements attribute (checked
    // above), so it has a shaped type and a splat value.
    unsafe {
        let raw = attribute.to_raw();
        let element = mlir_sys::mlirShapedTypeGetElementType(mlir_sys::mlirAttributeGetType(raw));
        mlir_sys::mlirTypeIsAInteger(element)
            && mlir_sys::mlirIntegerTypeGetWidth(element) == 1
            && mlir_sys::mlirDenseElementsAttrGetBoolSplatValue(raw) != 0
    }
}

/// Builds ops right before an anchor op (at its location), or at the end
/// of a block.
#[derive(Clone, Copy)]
pub struct Builder<'c, 'a> {
    context: &'c Context,
    anchor: Option<OperationRef<'c, 'a>>,
    block: BlockRef<'c, 'a>,
    location: Location<'c>,
}

impl<'c, 'a> Builder<'c, 'a> {
    /// A builder inserting before `anchor`; `None` when it is in no block.
    pub fn before(context: &'c Context, anchor: OperationRef<'c, 'a>) -> Option<Self> {
        Some(Self {
            context,
            anchor: Some(anchor),
            block: anchor.block()?,
            location: anchor.location(),
        })
    }

    /// A builder appending to the end of `block`, at `location`.
    pub fn at_end(context: &'c Context, block: BlockRef<'c, 'a>, location: Location<'c>) -> Self {
        Self {
            context,
            anchor: None,
            block,
            location,
        }
    }

    /// This builder, building ops at `location`.
    pub fn at(self, location: Location<'c>) -> Self {
        Self { location, ..self }
    }

    /// The context ops are built in.
    pub fn context(&self) -> &'c Context {
        self.context
    }

    /// Where built ops are: the anchor's location.
    pub fn location(&self) -> Location<'c> {
        self.location
    }

    /// Inserts `op` before the anchor, or at the end of the block.
    pub fn insert(&self, op: Operation<'c>) -> OperationRef<'c, 'a> {
        match self.anchor {
            Some(anchor) => self.block.insert_operation_before(anchor, op),
            None => self.block.append_operation(op),
        }
    }

    /// Inserts `op` and returns its first result.
    pub fn insert_one(&self, op: Operation<'c>) -> Option<Value<'c, 'a>> {
        jitc_dialect::ops::result_at(&self.insert(op), 0)
    }

    /// Builds and inserts an op; `None` when MLIR rejects it.
    pub fn op(
        &self,
        name: &str,
        operands: &[Value<'c, '_>],
        results: &[Type<'c>],
        attributes: &[(&str, Attribute<'c>)],
    ) -> Option<OperationRef<'c, 'a>> {
        let attributes: Vec<(Identifier, Attribute)> = attributes
            .iter()
            .map(|(n, a)| (Identifier::new(self.context, n), *a))
            .collect();
        let op = OperationBuilder::new(name, self.location)
            .add_operands(operands)
            .add_results(results)
            .add_attributes(&attributes)
            .build()
            .ok()?;
        Some(self.insert(op))
    }

    /// Builds and inserts an op with one result.
    fn one(
        &self,
        name: &str,
        operands: &[Value<'c, '_>],
        result: Type<'c>,
        attributes: &[(&str, Attribute<'c>)],
    ) -> Option<Value<'c, 'a>> {
        self.op(name, operands, &[result], attributes)?
            .result(0)
            .ok()
            .map(Into::into)
    }

    /// `arith.select %condition, %a, %b`.
    pub fn select(
        &self,
        condition: Value<'c, '_>,
        a: Value<'c, '_>,
        b: Value<'c, '_>,
    ) -> Option<Value<'c, 'a>> {
        self.one("arith.select", &[condition, a, b], a.r#type(), &[])
    }

    /// `arith.constant n : index`.
    pub fn index(&self, n: i64) -> Option<Value<'c, 'a>> {
        let index = Type::index(self.context);
        self.one(
            "arith.constant",
            &[],
            index,
            &[("value", IntegerAttribute::new(index, n).into())],
        )
    }

    /// `arith.constant` of a typed attribute.
    pub fn constant(&self, value: Attribute<'c>) -> Option<Value<'c, 'a>> {
        self.one("arith.constant", &[], value.r#type(), &[("value", value)])
    }

    /// `tensor.dim %tensor, <dim> : index`.
    pub fn dim(&self, tensor: Value<'c, '_>, dim: usize) -> Option<Value<'c, 'a>> {
        let index = self.index(dim as i64)?;
        self.one("tensor.dim", &[tensor, index], Type::index(self.context), &[])
    }

    /// `arith.cmpi` or `arith.cmpf` with `predicate`, giving an i1.
    pub fn compare(
        &self,
        name: &str,
        predicate: i64,
        lhs: Value<'c, '_>,
        rhs: Value<'c, '_>,
    ) -> Option<Value<'c, 'a>> {
        let i64_type = IntegerType::new(self.context, 64).into();
        self.one(
            name,
            &[lhs, rhs],
            IntegerType::new(self.context, 1).into(),
            &[("predicate", IntegerAttribute::new(i64_type, predicate).into())],
        )
    }

    /// A binary `arith` op whose result has `lhs`'s type.
    pub fn arith(&self, name: &str, lhs: Value<'c, '_>, rhs: Value<'c, '_>) -> Option<Value<'c, 'a>> {
        self.one(name, &[lhs, rhs], lhs.r#type(), &[])
    }

    /// `tensor.from_elements %scalar : tensor<T>`.
    pub fn tensor_of(&self, scalar: Value<'c, '_>) -> Option<Value<'c, 'a>> {
        let r#type = RankedTensorType::new(&[], scalar.r#type(), None).into();
        self.one("tensor.from_elements", &[scalar], r#type, &[])
    }

    /// `tensor.extract %t[] ` of a rank-0 tensor.
    pub fn extract(&self, tensor: Value<'c, '_>) -> Option<Value<'c, 'a>> {
        let element = RankedTensorType::try_from(tensor.r#type()).ok()?.element();
        self.one("tensor.extract", &[tensor], element, &[])
    }

    /// `tensor.cast %value : ... to <r#type>`.
    pub fn cast(&self, value: Value<'c, '_>, r#type: Type<'c>) -> Option<Value<'c, 'a>> {
        self.one("tensor.cast", &[value], r#type, &[])
    }

    /// A dense splat constant of `r#type` holding `element`.
    pub fn splat(&self, r#type: Type<'c>, element: Attribute<'c>) -> Option<Value<'c, 'a>> {
        let value = DenseElementsAttribute::new(r#type, &[element]).ok()?;
        self.constant(value.into())
    }

    /// `meta.guard` on the i1 scalar `condition`, with a fresh id from
    /// `ids`, a reason and the site it speculates on.
    pub fn guard(
        &self,
        condition: Value<'c, '_>,
        ids: &mut GuardIds,
        reason: &str,
        site: &str,
    ) -> Option<i64> {
        let condition = self.tensor_of(condition)?;
        let id = ids.fresh();
        let guard = GuardOp::build(self.context, self.location, condition, id, reason).ok()?;
        let guard = self.insert(guard);
        set_attribute(guard, "site", StringAttribute::new(self.context, site).into());
        Some(id)
    }
}

/// Hands out guard ids unique within one function: positive, after every
/// id already used, and when that passes `i64::MAX`, the smallest positive
/// ids still free (a function cannot hold 2^63 guards, so one always is).
#[derive(Debug, Clone)]
pub struct GuardIds {
    used: BTreeSet<i64>,
    next: i64,
}

impl GuardIds {
    /// Ids after every guard already in `function`.
    pub fn of(function: OperationRef) -> Self {
        let used: BTreeSet<i64> = collect_ops(function)
            .into_iter()
            .filter_map(GuardOp::cast)
            .filter_map(|g| g.id())
            .collect();
        let max = used.last().copied().unwrap_or(0).max(0);
        Self {
            next: max.checked_add(1).unwrap_or(1),
            used,
        }
    }

    /// The next unused id.
    pub fn fresh(&mut self) -> i64 {
        loop {
            let id = self.next;
            self.next = self.next.checked_add(1).unwrap_or(1);
            if self.used.insert(id) {
                return id;
            }
        }
    }
}

/// The raw handle of a value, as a map key.
pub fn key(value: Value) -> usize {
    value.to_raw().ptr as usize
}

/// Values of the original ops mapped to their replacements.
pub type Mapping = HashMap<usize, mlir_sys::MlirValue>;

/// Clones `ops` (in order) before `anchor`, replacing every use of a value
/// in `mapping` (including uses inside nested regions) and extending
/// `mapping` with the clones' results. Cloned guards get fresh ids from
/// `ids`.
pub fn clone_before<'c, 'a>(
    context: &'c Context,
    ops: &[OperationRef<'c, '_>],
    anchor: OperationRef<'c, 'a>,
    mapping: &mut Mapping,
    ids: &mut GuardIds,
) -> Option<()> {
    let block = anchor.block()?;
    for op in ops {
        // SAFETY: `op` is live; the clone is owned until the block takes it.
        let clone = unsafe { mlir_sys::mlirOperationClone(op.to_raw()) };
        // SAFETY: `anchor` is in `block`, and the block takes ownership.
        unsafe { mlir_sys::mlirBlockInsertOwnedOperationBefore(block.to_raw(), anchor.to_raw(), clone) };
        // SAFETY: the clone is now owned by `block`, which outlives `'a`.
        let clone = unsafe { OperationRef::from_raw(clone) };
        for nested in collect_ops(clone) {
            remap_operands(nested, mapping);
            if GuardOp::cast(nested).is_some() {
                let id = ids.fresh();
                let i64_type = IntegerType::new(context, 64).into();
                set_attribute(nested, "id", IntegerAttribute::new(i64_type, id).into());
            }
        }
        for i in 0..op.result_count() {
            let (Ok(old), Ok(new)) = (op.result(i), clone.result(i)) else {
                return None;
            };
            mapping.insert(key(old.into()), new.to_raw());
        }
    }
    Some(())
}

/// Replaces operands of `op` found in `mapping`.
pub fn remap_operands(op: OperationRef, mapping: &Mapping) {
    for i in 0..op.operand_count() {
        // SAFETY: `i` is below the operand count of the live `op`.
        let operand = unsafe { mlir_sys::mlirOperationGetOperand(op.to_raw(), i as isize) };
        if let Some(new) = mapping.get(&(operand.ptr as usize)) {
            // SAFETY: as above; `new` is a live value.
            unsafe { mlir_sys::mlirOperationSetOperand(op.to_raw(), i as isize, *new) };
        }
    }
}

/// The value `mapping` gives for `value`, or `value` itself.
pub fn mapped<'c, 'a>(mapping: &Mapping, value: Value<'c, 'a>) -> Value<'c, 'a> {
    match mapping.get(&key(value)) {
        // SAFETY: mapped values are live results of ops in the same region
        // tree as `value`.
        Some(new) => unsafe { Value::from_raw(*new) },
        None => value,
    }
}

/// Replaces every use of `old` with `new`.
pub fn replace_uses(old: Value, new: Value) {
    // SAFETY: both values are live.
    unsafe { mlir_sys::mlirValueReplaceAllUsesOfWith(old.to_raw(), new.to_raw()) }
}

/// Sets the type of `value` (its users must accept the new type).
pub fn set_type(value: Value, r#type: Type) {
    // SAFETY: both are live.
    unsafe { mlir_sys::mlirValueSetType(value.to_raw(), r#type.to_raw()) }
}

/// The ops using `value`, with the operand number of each use.
pub fn uses<'c, 'a>(value: Value<'c, 'a>) -> Vec<(OperationRef<'c, 'a>, usize)> {
    let mut out = Vec::new();
    // SAFETY: walking the use list of a live value.
    unsafe {
        let mut operand = mlir_sys::mlirValueGetFirstUse(value.to_raw());
        while !mlir_sys::mlirOpOperandIsNull(operand) {
            out.push((
                OperationRef::from_raw(mlir_sys::mlirOpOperandGetOwner(operand)),
                mlir_sys::mlirOpOperandGetOperandNumber(operand) as usize,
            ));
            operand = mlir_sys::mlirOpOperandGetNextUse(operand);
        }
    }
    out
}

/// Sets operand `index` of `op` to `value`.
pub fn set_operand(op: OperationRef, index: usize, value: Value) {
    // SAFETY: `op` and `value` are live; callers pass an index in range.
    unsafe { mlir_sys::mlirOperationSetOperand(op.to_raw(), index as isize, value.to_raw()) }
}

/// Replaces all operands of `op`.
pub fn set_operands(op: OperationRef, values: &[Value]) {
    let raw: Vec<mlir_sys::MlirValue> = values.iter().map(|v| v.to_raw()).collect();
    // SAFETY: `op` and the values are live.
    unsafe { mlir_sys::mlirOperationSetOperands(op.to_raw(), raw.len() as isize, raw.as_ptr()) }
}

/// Points every use of the symbol `old` under `from` (a call's callee, a
/// symbol in any attribute) at `new`; `false` when MLIR could not rewrite
/// some use.
pub fn replace_symbol_uses(old: &str, new: &str, from: OperationRef) -> bool {
    let (old, new) = (melior::StringRef::new(old), melior::StringRef::new(new));
    // SAFETY: `from` is live and the names outlive the call.
    let result =
        unsafe { mlir_sys::mlirSymbolTableReplaceAllSymbolUses(old.to_raw(), new.to_raw(), from.to_raw()) };
    result.value != 0
}

/// Erases `op` and everything nested in it; its results must be unused.
///
/// Handles to `op` or to anything nested in it dangle afterwards: callers
/// pass an op they will not read again (see the module doc).
pub fn erase(op: OperationRef) {
    // A result still in use would leave its uses pointing at freed memory,
    // which MLIR's release build does not check: the next edit of a user
    // writes there (the heap corruption of docs/fuzzing.md was MLIR's
    // parser doing this). A caller that erases such an op has a bug; say
    // so here instead of corrupting the heap.
    for index in 0..op.result_count() {
        // SAFETY: reading the first use of a live op's result.
        let used = op
            .result(index)
            .is_ok_and(|result| unsafe { !mlir_sys::mlirValueGetFirstUse(result.to_raw()).ptr.is_null() });
        assert!(
            !used,
            "erasing '{}' whose result {index} is still used",
            op.name().as_string_ref().as_str().unwrap_or("?")
        );
    }
    // SAFETY: the op is live and unlinked from its block before it is
    // destroyed; callers hold no further use of the handle (module doc).
    unsafe { mlir_sys::mlirOperationDestroy(op.to_raw()) }
}

/// The position of `value` among `block`'s arguments, when it is one.
pub fn argument_of(value: Value, block: BlockRef) -> Option<usize> {
    // SAFETY: reading a live value's kind, and a block argument's owner and
    // number only once it is known to be one.
    unsafe {
        let raw = value.to_raw();
        (mlir_sys::mlirValueIsABlockArgument(raw)
            && mlir_sys::mlirBlockArgumentGetOwner(raw).ptr == block.to_raw().ptr)
            .then(|| mlir_sys::mlirBlockArgumentGetArgNumber(raw) as usize)
    }
}

/// The ops that use `value`, one entry per use.
pub fn users<'c, 'a>(value: Value<'c, 'a>) -> Vec<OperationRef<'c, 'a>> {
    uses(value).into_iter().map(|(op, _)| op).collect()
}

/// The ops of `block` except its terminator, in order.
pub fn body_ops<'c, 'a>(block: BlockRef<'c, 'a>) -> Vec<OperationRef<'c, 'a>> {
    let mut ops = Vec::new();
    let mut next = block.first_operation();
    while let Some(op) = next {
        next = op.next_in_block();
        if next.is_some() {
            ops.push(op);
        }
    }
    ops
}

/// The op that defines `value`, when it is an op result.
pub fn defining_op<'c, 'a>(value: Value<'c, 'a>) -> Option<OperationRef<'c, 'a>> {
    // SAFETY: reading the owner of a live value, only when it is an op
    // result (which has one).
    unsafe {
        mlir_sys::mlirValueIsAOpResult(value.to_raw())
            .then(|| OperationRef::from_raw(mlir_sys::mlirOpResultGetOwner(value.to_raw())))
    }
}

/// The `value` attribute of the `arith.constant` that defines `value`.
pub fn constant_attribute<'c>(value: Value<'c, '_>) -> Option<Attribute<'c>> {
    let op = defining_op(value).filter(|op| op_name(*op) == "arith.constant")?;
    op.attribute("value").ok()
}

/// The element of a splat float constant (`arith.constant dense<2.0> :
/// tensor<f32>`, any shape) that defines `value`.
pub fn splat_float(value: Value) -> Option<f64> {
    let attribute = constant_attribute(value)?;
    if !is_dense_splat(attribute) {
        return None;
    }
    // SAFETY: `attribute` is a live dense elements attribute (checked
    // above), so it has a shaped type and a splat value, read as its
    // element type says.
    unsafe {
        let raw = attribute.to_raw();
        let element = mlir_sys::mlirShapedTypeGetElementType(mlir_sys::mlirAttributeGetType(raw));
        if mlir_sys::mlirTypeIsAF32(element) {
            Some(f64::from(mlir_sys::mlirDenseElementsAttrGetFloatSplatValue(raw)))
        } else if mlir_sys::mlirTypeIsAF64(element) {
            Some(mlir_sys::mlirDenseElementsAttrGetDoubleSplatValue(raw))
        } else {
            None
        }
    }
}

/// The value of an `arith.constant` of index or integer type.
pub fn constant_int(value: Value) -> Option<i64> {
    IntegerAttribute::try_from(constant_attribute(value)?)
        .ok()
        .map(|a| a.value())
}

pub use jitc_dialect::ops::functions;

/// MLIR's marker for a `?` dimension.
pub const DYNAMIC: i64 = i64::MIN;

/// The sizes of a ranked tensor type, [`DYNAMIC`] for `?`.
pub fn dims(r#type: RankedTensorType) -> Vec<i64> {
    (0..r#type.rank())
        .map(|d| match r#type.dim_size(d) {
            Ok(DimSize::Static(n)) => n as i64,
            _ => DYNAMIC,
        })
        .collect()
}

/// `r#type` with the sizes `sizes` ([`DYNAMIC`] for `?`).
pub fn with_dims<'c>(r#type: RankedTensorType<'c>, sizes: &[i64]) -> Type<'c> {
    let sizes: Vec<u64> = sizes.iter().map(|&d| d as u64).collect();
    RankedTensorType::new(&sizes, r#type.element(), None).into()
}

/// The site id recorded on `op` (`meta.site`), if any.
pub fn pinned_site<'c>(op: OperationRef<'c, '_>) -> Option<&'c str> {
    op.attribute(SITE_ATTRIBUTE).ok().and_then(string_attribute)
}
