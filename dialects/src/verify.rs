//! The semantic verifier: everything about `meta` ops that IRDL cannot say,
//! and the limits every op's tensor types must respect.
//!
//! IRDL checks that operands, results and required attributes have the right
//! base types. This verifier checks the rest, and reports each problem as an
//! error at the op's location, in MLIR's style (`'meta.reindex' op ...`):
//!
//! 1. element types are ones the dialect supports;
//! 2. `indices` maps have as many dimensions and results as the ranks they
//!    connect, and the trailing `index` operands match the result's `?`
//!    dimensions plus the map's symbols;
//! 3. `overflow_value` has the element type, and `overflow_conditions` sets
//!    range over the right indices;
//! 4. kinds are known and accept the operand element type;
//! 5. element-wise operands and results have compatible shapes: equal ranks,
//!    and no two static sizes that differ;
//! 6. guards take a `tensor<i1>`, and guard ids are unique per function;
//! 7. one state name has one type across the module;
//! 8. no ranked tensor type is too large: the size in bytes (the static
//!    sizes, `?` skipped and 0 counted as 1, times the element's bytes: one
//!    for `i1`, eight for
//!    a type the dialect does not support) of every op's results, of its
//!    blocks' arguments and, for a `func.func`, of its signature
//!    (declarations included) fits in i64. This covers every op, `meta` or
//!    not; a value is checked where it is defined, and an op gets at most
//!    one such error;
//! 9. in `indices` maps and `overflow_conditions` sets, every `mod`,
//!    `floordiv` and `ceildiv` by a constant divides by a positive one, and,
//!    when nothing else is wrong with the op, no index of its domain (the
//!    result's indices for `reindex`, the input's for `reindex_reduce`)
//!    provably makes the index arithmetic overflow i64 as the interpreter
//!    evaluates it (`crate::affine`: bounds first, then a witness among the
//!    domain's corners; symbols and `?`-sized dimensions are unknowns).
//!
//! It never panics: every accessor it uses returns `Option`, and index and
//! size arithmetic is checked or saturating.

use crate::{
    affine::{Fault, Indexing, Source, Tree},
    emit_error,
    kinds::{BinaryKind, ElementType, ReduceKind, TernaryKind, TypeClass, UnaryKind, extent_bytes},
    ops::{
        BinaryOp, GuardOp, IntegerSet, ReindexOp, ReindexReduceOp, StateReadOp, StateWriteOp, TernaryOp,
        UnaryOp, tensor_type,
    },
};
use melior::ir::{
    AffineMap, Attribute, AttributeLike, BlockLike, Location, OperationRef, RegionLike, Type, Value,
    ValueLike,
    attribute::TypeAttribute,
    operation::{OperationLike, WalkOrder, WalkResult},
    r#type::{DimSize, FunctionType, RankedTensorType, ShapedTypeLike},
};
use std::collections::HashMap;

/// Verifies every op nested in `root` (and `root` itself): the sizes of
/// every op's tensor types and everything about `meta` ops. Returns `true`
/// when no error was emitted.
pub fn verify(root: OperationRef) -> bool {
    let ops = collect_ops(root);
    let mut verifier = Verifier { errors: 0 };
    for &op in &ops {
        verifier.check_type_sizes(op);
        verifier.check(op);
    }
    verifier.check_guard_ids(&ops);
    verifier.check_state_types(&ops);
    verifier.errors == 0
}

/// Every op nested in `root`, `root` first, in pre-order. Collecting first
/// keeps rewrites and anything that could panic out of MLIR's walk callback.
pub fn collect_ops<'c, 'a>(root: OperationRef<'c, 'a>) -> Vec<OperationRef<'c, 'a>> {
    let mut raw = Vec::new();
    root.walk(WalkOrder::PreOrder, |op| {
        raw.push(op.to_raw());
        WalkResult::Advance
    });
    // SAFETY: every op was just reached from `root`, which outlives `'a`.
    raw.into_iter()
        .map(|op| unsafe { OperationRef::from_raw(op) })
        .collect()
}

/// The line of a file location, if `location` is one.
pub fn location_line(location: Location) -> Option<usize> {
    location
        .is_file_line_col_range()
        .then(|| location.file_line_col_range_start_line())
}

struct Verifier {
    /// How many errors were emitted so far.
    errors: usize,
}

/// The name of `op`, e.g. `meta.reindex`.
pub fn op_name(op: OperationRef) -> String {
    op.name()
        .as_string_ref()
        .as_str()
        .unwrap_or("<invalid>")
        .to_owned()
}

impl Verifier {
    fn error(&mut self, op: OperationRef, message: impl AsRef<str>) {
        emit_error(
            op.location(),
            &format!("'{}' op {}", op_name(op), message.as_ref()),
        );
        self.errors += 1;
    }

    /// Rule 8: reports the first type of `op`'s signature (for a
    /// `func.func`), results and block arguments whose size in bytes
    /// overflows i64.
    fn check_type_sizes(&mut self, op: OperationRef) {
        let is_function = op.name().as_string_ref().as_str() == Ok("func.func");
        if is_function && let Some(signature) = function_type(op) {
            for i in 0..signature.input_count() {
                if let Ok(r#type) = signature.input(i)
                    && size_overflows(r#type)
                {
                    return self.report_too_large(op, &format!("argument {i}"), r#type);
                }
            }
            for i in 0..signature.result_count() {
                if let Ok(r#type) = signature.result(i)
                    && size_overflows(r#type)
                {
                    return self.report_too_large(op, &format!("result {i}"), r#type);
                }
            }
        }
        let results = op.result_count();
        for (i, result) in op.results().enumerate() {
            if size_overflows(result.r#type()) {
                let what = if results == 1 {
                    "result".to_owned()
                } else {
                    format!("result {i}")
                };
                return self.report_too_large(op, &what, result.r#type());
            }
        }
        for (r, region) in op.regions().enumerate() {
            let mut block = region.first_block();
            let mut b = 0;
            while let Some(current) = block {
                // A function's entry block arguments are its signature's
                // inputs, checked above.
                if !(is_function && r == 0 && b == 0) {
                    for i in 0..current.argument_count() {
                        if let Ok(argument) = current.argument(i)
                            && size_overflows(argument.r#type())
                        {
                            let what = if b == 0 {
                                format!("region {r} argument {i}")
                            } else {
                                format!("region {r} block {b} argument {i}")
                            };
                            return self.report_too_large(op, &what, argument.r#type());
                        }
                    }
                }
                block = current.next_in_region();
                b += 1;
            }
        }
    }

    fn report_too_large(&mut self, op: OperationRef, what: &str, r#type: Type) {
        self.error(
            op,
            format!("{what} type '{type}' is too large: its size in bytes overflows i64"),
        );
    }

    /// Rule 9 for the `indices` map and `overflow_conditions` of `op`,
    /// whose domain is `domain` (the `domain_name`'s indices). The overflow
    /// search runs only when the op has no other error: `errors_before` is
    /// the error count before its checks began.
    fn check_index_arithmetic<'c>(
        &mut self,
        op: OperationRef,
        map: AffineMap<'c>,
        conditions: Option<Result<Vec<IntegerSet<'c>>, ()>>,
        (domain, domain_name): (RankedTensorType, &str),
        errors_before: usize,
    ) {
        let sets = match conditions {
            Some(Ok(sets)) => sets,
            _ => Vec::new(),
        };
        let indexing = Indexing {
            map: (0..map.result_count())
                .filter_map(|i| map.result(i).ok())
                .map(Tree::new)
                .collect(),
            sets: sets
                .iter()
                .map(|set| {
                    set.constraints()
                        .into_iter()
                        .map(|(expr, equality)| (Tree::new(expr), equality))
                        .collect()
                })
                .collect(),
        };
        let trees = indexing.map.iter().map(|tree| (Source::Map, tree)).chain(
            indexing
                .sets
                .iter()
                .enumerate()
                .flat_map(|(i, set)| set.iter().map(move |(tree, _)| (Source::Set(i), tree))),
        );
        for (source, tree) in trees {
            for (expr, divisor) in tree.constant_divisors() {
                self.error(
                    op,
                    format!(
                        "{} divides by {divisor} in '{expr}'; affine divisors must be positive",
                        place(source)
                    ),
                );
            }
        }
        if self.errors > errors_before {
            return;
        }
        let extents: Vec<Option<i64>> = (0..domain.rank())
            .map(|d| match domain.dim_size(d) {
                Ok(DimSize::Static(size)) => i64::try_from(size).ok(),
                _ => None,
            })
            .collect();
        let Some(witness) = indexing.find_fault(&extents) else {
            return;
        };
        let at = if witness.index.is_empty() {
            String::new()
        } else {
            let index: Vec<String> = witness
                .index
                .iter()
                .map(|i| i.map_or_else(|| "?".to_owned(), |i| i.to_string()))
                .collect();
            format!(" at {domain_name} index ({})", index.join(", "))
        };
        let what = place(witness.source);
        let message = match witness.fault {
            Fault::Overflow(expr) => format!("{what} overflows i64 in '{expr}'{at}"),
            Fault::Divisor(expr, divisor) => {
                format!("{what} divides by {divisor} in '{expr}'{at}; affine divisors must be positive")
            }
        };
        self.error(op, message);
    }

    fn check(&mut self, op: OperationRef) {
        if let Some(reindex) = ReindexOp::cast(op) {
            self.check_reindex(reindex);
        } else if let Some(reduce) = ReindexReduceOp::cast(op) {
            self.check_reindex_reduce(reduce);
        } else if let Some(unary) = UnaryOp::cast(op) {
            self.check_unary(unary);
        } else if let Some(binary) = BinaryOp::cast(op) {
            self.check_binary(binary);
        } else if let Some(ternary) = TernaryOp::cast(op) {
            self.check_ternary(ternary);
        } else if let Some(guard) = GuardOp::cast(op) {
            self.check_guard(guard);
        } else if let Some(read) = StateReadOp::cast(op) {
            self.check_state_name(op, read.state_name());
            self.tensor(op, read.result(), "result");
        } else if let Some(write) = StateWriteOp::cast(op) {
            self.check_state_name(op, write.state_name());
            self.tensor(op, write.value(), "operand");
        }
    }

    /// The ranked tensor type and element type of `value`, reporting an
    /// unsupported element type.
    fn tensor<'c>(
        &mut self,
        op: OperationRef,
        value: Option<Value<'c, '_>>,
        what: &str,
    ) -> Option<(RankedTensorType<'c>, ElementType)> {
        let tensor = tensor_type(value?)?;
        match ElementType::from_type(tensor.element()) {
            Some(element) => Some((tensor, element)),
            None => {
                self.error(
                    op,
                    format!(
                        "{what} has unsupported element type '{}'; expected f32, f64, i32, i64 or i1",
                        tensor.element()
                    ),
                );
                None
            }
        }
    }

    fn check_kind_class(&mut self, op: OperationRef, kind: &str, class: TypeClass, element: ElementType) {
        if !class.accepts(element) {
            self.error(
                op,
                format!(
                    "kind '{kind}' expects {} operands but got '{element}'",
                    class.describe()
                ),
            );
        }
    }

    fn check_index_operands(
        &mut self,
        op: OperationRef,
        result: RankedTensorType,
        map: AffineMap,
        got: usize,
    ) {
        let dynamic = (0..result.rank())
            .filter(|&d| matches!(result.dim_size(d), Ok(melior::ir::r#type::DimSize::Dynamic)))
            .count();
        let expected = dynamic + map.symbol_count();
        if got != expected {
            self.error(
                op,
                format!(
                    "expects {expected} index operands ({dynamic} for dynamic result sizes, {} for map symbols) but got {got}",
                    map.symbol_count()
                ),
            );
        }
    }

    fn check_conditions(
        &mut self,
        op: OperationRef,
        conditions: Option<Result<Vec<IntegerSet>, ()>>,
        map: AffineMap,
        ranges_over: &str,
        rank: usize,
    ) {
        match conditions {
            None => {}
            Some(Err(())) => self.error(
                op,
                "overflow_conditions must be an array of affine_set attributes",
            ),
            Some(Ok(sets)) => {
                for (i, set) in sets.into_iter().enumerate() {
                    if set.dim_count() != rank {
                        self.error(
                            op,
                            format!(
                                "overflow_conditions set {i} has {} dimensions but the {ranges_over} has rank {rank}",
                                set.dim_count()
                            ),
                        );
                    }
                    if set.symbol_count() > map.symbol_count() {
                        self.error(
                            op,
                            format!(
                                "overflow_conditions set {i} uses {} symbols but the indices map has {}",
                                set.symbol_count(),
                                map.symbol_count()
                            ),
                        );
                    }
                }
            }
        }
    }

    fn check_reindex(&mut self, reindex: ReindexOp) {
        let op = reindex.operation();
        let errors_before = self.errors;
        let (Some((input, in_elem)), Some((result, out_elem)), Some(map)) = (
            self.tensor(op, reindex.input(), "input"),
            self.tensor(op, reindex.result(), "result"),
            reindex.indices(),
        ) else {
            return;
        };
        if map.dim_count() != result.rank() {
            self.error(
                op,
                format!(
                    "indices map has {} dimensions but the result has rank {}",
                    map.dim_count(),
                    result.rank()
                ),
            );
        }
        if map.result_count() != input.rank() {
            self.error(
                op,
                format!(
                    "indices map has {} results but the input has rank {}",
                    map.result_count(),
                    input.rank()
                ),
            );
        }
        if in_elem != out_elem {
            self.error(
                op,
                format!("result element type '{out_elem}' differs from input element type '{in_elem}'"),
            );
        }
        self.check_index_operands(op, result, map, reindex.index_operands().len());
        if let Some(value) = reindex.overflow_value() {
            self.check_overflow_value(op, value, in_elem);
        }
        self.check_conditions(op, reindex.overflow_conditions(), map, "result", result.rank());
        let conditions = reindex.overflow_conditions();
        self.check_index_arithmetic(op, map, conditions, (result, "result"), errors_before);
    }

    fn check_overflow_value(&mut self, op: OperationRef, value: Attribute, element: ElementType) {
        // SAFETY: `value` is a live attribute.
        let scalar = unsafe {
            mlir_sys::mlirAttributeIsAInteger(value.to_raw())
                || mlir_sys::mlirAttributeIsAFloat(value.to_raw())
        };
        if !scalar {
            self.error(
                op,
                format!("overflow_value must be a scalar {element} attribute, got {value}"),
            );
        } else if ElementType::from_type(value.r#type()) != Some(element) {
            self.error(
                op,
                format!(
                    "overflow_value has type '{}' but the element type is '{element}'",
                    value.r#type()
                ),
            );
        }
    }

    fn check_reindex_reduce(&mut self, reduce: ReindexReduceOp) {
        let op = reduce.operation();
        let errors_before = self.errors;
        let (Some((input, in_elem)), Some((result, out_elem)), Some(map)) = (
            self.tensor(op, reduce.input(), "input"),
            self.tensor(op, reduce.result(), "result"),
            reduce.indices(),
        ) else {
            return;
        };
        if map.dim_count() != input.rank() {
            self.error(
                op,
                format!(
                    "indices map has {} dimensions but the input has rank {}",
                    map.dim_count(),
                    input.rank()
                ),
            );
        }
        if map.result_count() != result.rank() {
            self.error(
                op,
                format!(
                    "indices map has {} results but the result has rank {}",
                    map.result_count(),
                    result.rank()
                ),
            );
        }
        if in_elem != out_elem {
            self.error(
                op,
                format!("result element type '{out_elem}' differs from input element type '{in_elem}'"),
            );
        }
        match reduce.kind() {
            Some(kind) => self.check_kind_class(op, kind.name(), kind.operand_class(), in_elem),
            None => self.unknown_kind(op, ReduceKind::spellings()),
        }
        if op.has_attribute("overflow_value") {
            self.error(
                op,
                "takes no overflow_value; elements that map out of bounds are dropped",
            );
        }
        self.check_index_operands(op, result, map, reduce.index_operands().len());
        self.check_conditions(op, reduce.overflow_conditions(), map, "input", input.rank());
        let conditions = reduce.overflow_conditions();
        self.check_index_arithmetic(op, map, conditions, (input, "input"), errors_before);
    }

    fn unknown_kind(&mut self, op: OperationRef, spellings: String) {
        let kind = op.attribute("kind").ok();
        let kind = kind
            .and_then(crate::ops::string_attribute)
            .map(str::to_owned)
            .or_else(|| kind.map(|k| k.to_string()))
            .unwrap_or_default();
        self.error(op, format!("unknown kind '{kind}'; expected one of {spellings}"));
    }

    /// Reports operands of unequal shape and results whose shape contradicts
    /// them. Returns the operand elements when all are supported.
    fn check_elementwise(
        &mut self,
        op: OperationRef,
        operands: &[Option<Value>],
        result: Option<Value>,
    ) -> Option<(Vec<ElementType>, ElementType)> {
        let mut typed = Vec::new();
        for operand in operands {
            typed.push(self.tensor(op, *operand, "operand")?);
        }
        let (result_type, result_elem) = self.tensor(op, result, "result")?;
        let (first, _) = typed[0];
        for (other, _) in &typed[1..] {
            if shape_conflict(first, *other).is_some() {
                self.error(
                    op,
                    format!("operands have unequal shapes '{first}' and '{other}'"),
                );
                return None;
            }
        }
        if let Some(conflict) = shape_conflict(result_type, first) {
            self.error(op, format!("result {conflict}"));
        }
        Some((typed.iter().map(|(_, e)| *e).collect(), result_elem))
    }

    fn check_unary(&mut self, unary: UnaryOp) {
        let op = unary.operation();
        let Some((elements, result)) = self.check_elementwise(op, &[unary.input()], unary.result()) else {
            return;
        };
        let Some(kind) = unary.kind() else {
            return self.unknown_kind(op, UnaryKind::spellings());
        };
        self.check_kind_class(op, kind.name(), kind.operand_class(), elements[0]);
        if kind != UnaryKind::Cast && result != elements[0] {
            self.error(
                op,
                format!(
                    "result element type '{result}' differs from operand element type '{}'",
                    elements[0]
                ),
            );
        }
    }

    fn check_binary(&mut self, binary: BinaryOp) {
        let op = binary.operation();
        let Some((elements, result)) =
            self.check_elementwise(op, &[binary.lhs(), binary.rhs()], binary.result())
        else {
            return;
        };
        if elements[0] != elements[1] {
            self.error(
                op,
                format!(
                    "operands have different element types '{}' and '{}'",
                    elements[0], elements[1]
                ),
            );
            return;
        }
        let Some(kind) = binary.kind() else {
            return self.unknown_kind(op, BinaryKind::spellings());
        };
        self.check_kind_class(op, kind.name(), kind.operand_class(), elements[0]);
        let expected = kind.result_element(elements[0]);
        if result != expected {
            self.error(
                op,
                format!("kind '{kind}' gives '{expected}' elements but the result has '{result}'"),
            );
        }
    }

    fn check_ternary(&mut self, ternary: TernaryOp) {
        let op = ternary.operation();
        let operands = [ternary.condition(), ternary.on_true(), ternary.on_false()];
        let Some((elements, result)) = self.check_elementwise(op, &operands, ternary.result()) else {
            return;
        };
        if ternary.kind().is_none() {
            return self.unknown_kind(op, TernaryKind::spellings());
        }
        if elements[0] != ElementType::I1 {
            self.error(
                op,
                format!("condition must have i1 elements but has '{}'", elements[0]),
            );
        }
        if elements[1] != elements[2] {
            self.error(
                op,
                format!(
                    "choices have different element types '{}' and '{}'",
                    elements[1], elements[2]
                ),
            );
        } else if result != elements[1] {
            self.error(
                op,
                format!(
                    "result element type '{result}' differs from the choices' element type '{}'",
                    elements[1]
                ),
            );
        }
    }

    fn check_guard(&mut self, guard: GuardOp) {
        let op = guard.operation();
        if let Some((condition, element)) = self.tensor(op, guard.condition(), "condition")
            && (condition.rank() != 0 || element != ElementType::I1)
        {
            self.error(op, format!("condition must be 'tensor<i1>' but is '{condition}'"));
        }
    }

    fn check_state_name(&mut self, op: OperationRef, name: Option<&str>) {
        if name == Some("") {
            self.error(op, "state name must not be empty");
        }
    }

    fn check_guard_ids(&mut self, ops: &[OperationRef]) {
        let mut seen: HashMap<(Option<*mut std::ffi::c_void>, i64), Location> = HashMap::new();
        for guard in ops.iter().filter_map(|op| GuardOp::cast(*op)) {
            let Some(id) = guard.id() else { continue };
            let function = enclosing_function(guard.operation());
            let key = (function.map(|f| f.to_raw().ptr), id);
            if let Some(first) = seen.get(&key) {
                let place = match location_line(*first) {
                    Some(line) => format!("the guard at line {line}"),
                    None => "another guard".to_owned(),
                };
                self.error(
                    guard.operation(),
                    format!("id {id} is already used by {place} in this function"),
                );
            } else {
                seen.insert(key, guard.operation().location());
            }
        }
    }

    fn check_state_types(&mut self, ops: &[OperationRef]) {
        let mut seen: HashMap<String, (String, Location)> = HashMap::new();
        for &op in ops {
            let (name, value) = if let Some(read) = StateReadOp::cast(op) {
                (read.state_name(), read.result())
            } else if let Some(write) = StateWriteOp::cast(op) {
                (write.state_name(), write.value())
            } else {
                continue;
            };
            let (Some(name), Some(value)) = (name, value) else {
                continue;
            };
            let r#type = melior::ir::ValueLike::r#type(&value).to_string();
            match seen.get(name) {
                Some((first, location)) if *first != r#type => {
                    let place = location_line(*location)
                        .map(|l| format!(" at line {l}"))
                        .unwrap_or_default();
                    self.error(
                        op,
                        format!("state '{name}' has type '{type}' here but '{first}'{place}"),
                    );
                }
                Some(_) => {}
                None => {
                    seen.insert(name.to_owned(), (r#type, op.location()));
                }
            }
        }
    }
}

/// How a diagnostic names the expressions a fault lies in.
fn place(source: Source) -> String {
    match source {
        Source::Map => "indices map".to_owned(),
        Source::Set(i) => format!("overflow_conditions set {i}"),
    }
}

/// The signature of a `func.func`.
pub(crate) fn function_type<'c>(function: OperationRef<'c, '_>) -> Option<FunctionType<'c>> {
    let attribute = function.attribute("function_type").ok()?;
    FunctionType::try_from(TypeAttribute::try_from(attribute).ok()?.value()).ok()
}

/// Whether `type` is a ranked tensor type whose size in bytes overflows
/// i64 (rule 8, [`crate::kinds::extent_bytes`]: a size of 0 counts as 1).
fn size_overflows(r#type: Type) -> bool {
    let Ok(tensor) = RankedTensorType::try_from(r#type) else {
        return false;
    };
    let dims: Vec<u64> = (0..tensor.rank())
        .filter_map(|d| match tensor.dim_size(d) {
            Ok(DimSize::Static(size)) => Some(size),
            _ => None,
        })
        .collect();
    // Most tensors are far below the limit: only the others need the
    // element type, which is read from its spelling.
    if extent_bytes(dims.iter().copied(), 8).is_some() {
        return false;
    }
    let width = ElementType::from_type(tensor.element()).map_or(8, ElementType::byte_width);
    extent_bytes(dims, width as u64).is_none()
}

/// The nearest enclosing `func.func`, if any.
pub fn enclosing_function<'c, 'a>(op: OperationRef<'c, 'a>) -> Option<OperationRef<'c, 'a>> {
    let mut current = op.parent_operation();
    while let Some(parent) = current {
        if parent.name().as_string_ref().as_str() == Ok("func.func") {
            return Some(parent);
        }
        current = parent.parent_operation();
    }
    None
}

/// Describes why `result` cannot have `operand`'s shape, if it cannot:
/// different ranks, or two static sizes that differ.
fn shape_conflict(result: RankedTensorType, operand: RankedTensorType) -> Option<String> {
    use melior::ir::r#type::DimSize::Static;
    if result.rank() != operand.rank() {
        return Some(format!(
            "has rank {} but the operands have rank {}",
            result.rank(),
            operand.rank()
        ));
    }
    (0..result.rank()).find_map(|d| match (result.dim_size(d), operand.dim_size(d)) {
        (Ok(Static(a)), Ok(Static(b))) if a != b => Some(format!(
            "dimension {d} has static size {a} but the operands' has {b}"
        )),
        _ => None,
    })
}
