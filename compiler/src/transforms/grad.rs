//! `meta-grad`: adds a function that returns the gradients of a function's
//! scalar result, made of meta-ops (Jittor's backward closure).
//!
//! `meta-grad{function=main wrt=0,2}` differentiates `@main`'s first
//! result, a rank-0 `f32` or `f64` (the loss), with respect to the
//! arguments `wrt` names by position (by default every float argument).
//! It adds `@main_grad` (or `name=`), with `@main`'s arguments, returning
//! the loss and then one gradient per `wrt` argument, of that argument's
//! type. The forward ops are cloned into it, and the adjoint ops read
//! their results, so the forward values are computed once and `meta-fuse`
//! fuses the backward pass with the forward one.
//!
//! ```mlir
//! // before
//! func.func @main(%x: tensor<3xf32>) -> tensor<f32> {
//!   %e = "meta.unary"(%x) {kind = "exp"} : (tensor<3xf32>) -> tensor<3xf32>
//!   %s = "meta.reindex_reduce"(%e) {kind = "add", indices = affine_map<(d0) -> ()>} : (tensor<3xf32>) -> tensor<f32>
//!   return %s : tensor<f32>
//! }
//! // added
//! func.func @main_grad(%x: tensor<3xf32>) -> (tensor<f32>, tensor<3xf32>) {
//!   %e = "meta.unary"(%x) {kind = "exp"} : (tensor<3xf32>) -> tensor<3xf32>
//!   %s = "meta.reindex_reduce"(%e) {kind = "add", indices = affine_map<(d0) -> ()>} : (tensor<3xf32>) -> tensor<f32>
//!   %one = arith.constant dense<1.0> : tensor<f32>
//!   %g = "meta.reindex"(%one) {indices = affine_map<(d0) -> ()>} : (tensor<f32>) -> tensor<3xf32>
//!   %dx = "meta.binary"(%g, %e) {kind = "mul"} : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
//!   return %s, %dx : tensor<f32>, tensor<3xf32>
//! }
//! ```
//!
//! Algorithm:
//! 1. check the function: one block of `meta` ops (`reindex`,
//!    `reindex_reduce`, `unary`, `binary`, `ternary`; `guard` and
//!    `state_read` are kept and carry no gradient), `arith.constant`s and
//!    `func.return`, all of static shape, with no trailing index operands.
//!    Anything else (`scf`, calls, state writes) is reported at the op:
//!    run `meta-inline` and `meta-unroll` first;
//! 2. clone the function under the new name;
//! 3. read the clone's ops as `autodiff::Primal`s and run
//!    `autodiff::backward` with a tape that builds each adjoint op before
//!    the clone's `return` (the rules, one per meta-op kind, are in
//!    `compiler/src/autodiff.rs` and `docs/semantics.md`, "Gradients";
//!    the lazy graph uses the same ones);
//! 4. return the loss and the gradients, retype the function, and erase
//!    the adjoint ops no gradient uses (a rule builds the contributions to
//!    every operand; those to constants are dropped here).

use crate::{
    autodiff::{self, Primal, Recorded, Tape},
    pass::{OptionKind, Options, PassInfo, PassOption},
    rewrite::{self, Builder, clone_op, erase, is_pure, key, results_unused},
};
use jitc_dialect::{
    emit_error,
    kinds::{BinaryKind, ElementType, ReduceKind, TernaryKind, UnaryKind},
    ops::{BinaryOp, ReindexOp, ReindexReduceOp, TernaryOp, UnaryOp, array_elements, set_attribute},
    verify::op_name,
};
use melior::{
    Context,
    ir::{
        AffineMap, Attribute, BlockLike, Location, OperationRef, RegionLike, Type, TypeLike, Value,
        ValueLike,
        attribute::{ArrayAttribute, FloatAttribute, IntegerAttribute, StringAttribute, TypeAttribute},
        operation::OperationLike,
        r#type::{FunctionType, RankedTensorType, ShapedTypeLike},
    },
};

/// The `meta-grad` pass.
pub struct Grad;

impl Grad {
    /// Registry entry.
    pub const INFO: PassInfo = PassInfo {
        argument: "meta-grad",
        name: "Grad",
        summary: "Add a function returning a function's scalar result and its gradients, as meta ops",
        options: &[
            PassOption {
                name: "function",
                description: "the function whose first result (a rank-0 float) is differentiated",
                default: "main",
                kind: OptionKind::Text,
            },
            PassOption {
                name: "wrt",
                description: "argument positions to differentiate by, comma separated (empty: every float argument)",
                default: "",
                kind: OptionKind::Text,
            },
            PassOption {
                name: "name",
                description: "the new function's name (empty: <function>_grad)",
                default: "",
                kind: OptionKind::Text,
            },
        ],
        source_file: "compiler/src/transforms/grad.rs",
        source: include_str!("grad.rs"),
        run: Self::run,
    };

    /// Runs the pass on a module.
    pub fn run(root: OperationRef, options: &Options) -> bool {
        let function = options.get("function").unwrap_or("main").to_owned();
        rewrite::with_context(root, |context| match differentiate(context, root, options) {
            Ok(()) => true,
            Err((location, message)) => {
                // Not at the module: its location is line 0 of the file.
                emit_error(
                    location.unwrap_or(Location::unknown(context)),
                    &format!("meta-grad: @{function}: {message}"),
                );
                false
            }
        })
    }
}

/// A failure: where (when it is at an op) and why.
type Failure<'c> = (Option<Location<'c>>, String);

fn fail<'c>(message: impl Into<String>) -> Failure<'c> {
    (None, message.into())
}

/// Ops cloned into the gradient function that carry no gradient.
const KEPT: [&str; 3] = ["arith.constant", "meta.guard", "meta.state_read"];

fn differentiate<'c>(
    context: &'c Context,
    module: OperationRef<'c, '_>,
    options: &Options,
) -> Result<(), Failure<'c>> {
    let name = options.get("function").unwrap_or("main");
    let body = module
        .region(0)
        .ok()
        .and_then(|r| r.first_block())
        .ok_or_else(|| fail("the module has no body"))?;
    let functions = rewrite::functions(body);
    let function = *functions.get(name).ok_or_else(|| {
        let known: Vec<&str> = functions.keys().map(String::as_str).collect();
        fail(format!("no such function (the module has {})", known.join(", ")))
    })?;
    let new_name = match options.get("name").filter(|n| !n.is_empty()) {
        Some(n) => n.to_owned(),
        None => format!("{name}_grad"),
    };
    gradient_function(context, body, function, &new_name, options)
        .map_err(|(location, message)| (location.or(Some(function.location())), message))
}

/// Adds `new_name`, the gradient function of `function`.
fn gradient_function<'c>(
    context: &'c Context,
    body: melior::ir::BlockRef<'c, '_>,
    function: OperationRef<'c, '_>,
    new_name: &str,
    options: &Options,
) -> Result<(), Failure<'c>> {
    if rewrite::functions(body).contains_key(new_name) {
        return Err(fail(format!(
            "the module has a function @{new_name} already; choose another name with name="
        )));
    }
    let region = function.region(0).map_err(|e| fail(e.to_string()))?;
    let entry = region
        .first_block()
        .ok_or_else(|| fail("it is a declaration, with no body to differentiate"))?;
    if entry.next_in_region().is_some() {
        return Err(fail("it has several blocks; meta-grad takes one"));
    }
    check_body(entry)?;
    let returned = entry
        .terminator()
        .ok_or_else(|| fail("its body has no terminator"))?;
    let loss = returned
        .operand(0)
        .map_err(|_| fail("it returns nothing; meta-grad differentiates its first result"))?;
    let wrt = arguments(entry, options.get("wrt").unwrap_or(""))?;

    // Clone the function under the new name, right after it.
    let clone = clone_op(function);
    let clone = body.insert_operation_after(function, clone);
    set_attribute(clone, "sym_name", StringAttribute::new(context, new_name).into());
    let clone_entry = clone
        .region(0)
        .ok()
        .and_then(|r| r.first_block())
        .ok_or_else(|| fail("the clone has no body"))?;
    let clone_return = clone_entry
        .terminator()
        .ok_or_else(|| fail("the clone has no terminator"))?;
    let position = returned.operands().position(|v| v == loss).unwrap_or(0);
    let loss = clone_return.operand(position).map_err(|e| fail(e.to_string()))?;
    let wrt: Vec<Value> = wrt
        .iter()
        .map(|&k| {
            clone_entry
                .argument(k)
                .map(Into::into)
                .map_err(|e| fail(e.to_string()))
        })
        .collect::<Result<_, _>>()?;

    let ops = primals(clone_entry)?;
    let builder = Builder::before(context, clone_return).ok_or_else(|| fail("the return is in no block"))?;
    let mut tape = MlirTape { context, builder };
    let gradients = autodiff::backward(&mut tape, &ops, &loss, &wrt).map_err(fail)?;

    // Return the loss and the gradients.
    let mut results = vec![loss];
    results.extend(gradients);
    let new_return = melior::dialect::func::r#return(&results, clone_return.location());
    tape.builder.insert(new_return);
    // The old return is not used again.
    erase(clone_return);
    let inputs: Vec<Type> = (0..clone_entry.argument_count())
        .filter_map(|k| clone_entry.argument(k).ok().map(|a| a.r#type()))
        .collect();
    let outputs: Vec<Type> = results.iter().map(|v| v.r#type()).collect();
    let function_type = FunctionType::new(context, &inputs, &outputs);
    set_attribute(
        clone,
        "function_type",
        TypeAttribute::new(function_type.into()).into(),
    );
    remove_dead(clone);
    Ok(())
}

/// Checks that every op of `entry` can be differentiated or kept.
fn check_body<'c>(entry: melior::ir::BlockRef<'c, '_>) -> Result<(), Failure<'c>> {
    let mut next = entry.first_operation();
    while let Some(op) = next {
        next = op.next_in_block();
        let name = op_name(op);
        let at = |message: String| (Some(op.location()), message);
        let differentiable = [
            ReindexOp::NAME,
            ReindexReduceOp::NAME,
            UnaryOp::NAME,
            BinaryOp::NAME,
            TernaryOp::NAME,
        ];
        if next.is_none() {
            if name != "func.return" {
                return Err(at(format!("its body ends in '{name}', not func.return")));
            }
            continue;
        }
        if !differentiable.contains(&name.as_str()) && !KEPT.contains(&name.as_str()) {
            let hint = match name.as_str() {
                "func.call" => "run meta-inline first",
                n if n.starts_with("scf.") => {
                    "run meta-unroll (and meta-specialize) first, so the loop or branch becomes straight-line code"
                }
                "meta.state_write" => {
                    "a state write has no gradient; differentiate a function that returns the value instead"
                }
                _ => "meta-grad takes meta ops, arith.constant and func.return",
            };
            return Err(at(format!("'{name}' cannot be differentiated ({hint})")));
        }
        if !name.starts_with("meta.") {
            continue;
        }
        for value in op.operands().chain(op.results().map(Into::into)) {
            if value.r#type().is_index() {
                return Err(at(format!(
                    "'{name}' takes index operands; meta-grad needs static maps (run meta-specialize first)"
                )));
            }
            if let Ok(tensor) = RankedTensorType::try_from(value.r#type())
                && rewrite::dims(tensor).iter().any(|&d| d < 0)
            {
                return Err(at(format!(
                    "'{name}' has a value of dynamic shape ({}); meta-grad needs static shapes",
                    value.r#type()
                )));
            }
        }
    }
    Ok(())
}

/// The argument positions `text` names (`0,2`), or every float tensor
/// argument when it is empty.
fn arguments<'c>(entry: melior::ir::BlockRef<'c, '_>, text: &str) -> Result<Vec<usize>, Failure<'c>> {
    let count = entry.argument_count();
    let element_of = |k: usize| {
        entry
            .argument(k)
            .ok()
            .and_then(|a| RankedTensorType::try_from(a.r#type()).ok())
            .and_then(|t| ElementType::from_type(t.element()))
    };
    if text.trim().is_empty() {
        let floats: Vec<usize> = (0..count)
            .filter(|&k| element_of(k).is_some_and(ElementType::is_float))
            .collect();
        if floats.is_empty() {
            return Err(fail("it has no f32 or f64 argument to differentiate by"));
        }
        return Ok(floats);
    }
    text.split(',')
        .map(|part| {
            let k: usize = part
                .trim()
                .parse()
                .map_err(|_| fail(format!("wrt must list argument positions (0,2), got '{text}'")))?;
            if k >= count {
                return Err(fail(format!("wrt names argument {k}, but it has {count}")));
            }
            if !element_of(k).is_some_and(ElementType::is_float) {
                return Err(fail(format!(
                    "argument {k} is not an f32 or f64 tensor, so it has no gradient"
                )));
            }
            Ok(k)
        })
        .collect()
}

/// The differentiable ops of `entry`, in order.
fn primals<'c, 'a>(
    entry: melior::ir::BlockRef<'c, 'a>,
) -> Result<Vec<Recorded<MlirTape<'c, 'a>>>, Failure<'c>> {
    let mut ops = Vec::new();
    for op in rewrite::body_ops(entry) {
        let broken = || (Some(op.location()), format!("a malformed '{}'", op_name(op)));
        let result: Value = match op.result(0) {
            Ok(r) => r.into(),
            Err(_) => continue,
        };
        let conditions = |attribute: Option<Attribute<'c>>| -> Vec<Attribute<'c>> {
            attribute.and_then(array_elements).unwrap_or_default()
        };
        let primal = if let Some(r) = ReindexOp::cast(op) {
            Primal::Reindex {
                input: r.input().ok_or_else(broken)?,
                map: r.indices().ok_or_else(broken)?,
                conditions: conditions(op.attribute("overflow_conditions").ok()),
            }
        } else if let Some(r) = ReindexReduceOp::cast(op) {
            Primal::Reduce {
                kind: r.kind().ok_or_else(broken)?,
                input: r.input().ok_or_else(broken)?,
                map: r.indices().ok_or_else(broken)?,
                conditions: conditions(op.attribute("overflow_conditions").ok()),
            }
        } else if let Some(u) = UnaryOp::cast(op) {
            let input = u.input().ok_or_else(broken)?;
            match u.kind().ok_or_else(broken)? {
                UnaryKind::Cast => Primal::Cast { input },
                kind => Primal::Unary { kind, input },
            }
        } else if let Some(b) = BinaryOp::cast(op) {
            Primal::Binary {
                kind: b.kind().ok_or_else(broken)?,
                lhs: b.lhs().ok_or_else(broken)?,
                rhs: b.rhs().ok_or_else(broken)?,
            }
        } else if let Some(t) = TernaryOp::cast(op) {
            if t.kind() != Some(TernaryKind::Select) {
                return Err(broken());
            }
            Primal::Select {
                condition: t.condition().ok_or_else(broken)?,
                then: t.on_true().ok_or_else(broken)?,
                otherwise: t.on_false().ok_or_else(broken)?,
            }
        } else {
            continue;
        };
        ops.push((result, primal));
    }
    Ok(ops)
}

/// Erases the pure ops of `function` whose results are unused, users
/// first.
fn remove_dead(function: OperationRef) {
    let Some(entry) = function.region(0).ok().and_then(|r| r.first_block()) else {
        return;
    };
    for op in rewrite::body_ops(entry).into_iter().rev() {
        let constant = op_name(op) == "arith.constant";
        if (is_pure(op) || constant) && results_unused(op) {
            // Walking backwards, `op`'s users were visited (and erased
            // when dead) before it; `op` is not touched again.
            erase(op);
        }
    }
}

/// MLIR as an [`autodiff::Tape`]: each adjoint op is built before the
/// gradient function's return.
struct MlirTape<'c, 'a> {
    context: &'c Context,
    builder: Builder<'c, 'a>,
}

impl<'c, 'a> MlirTape<'c, 'a> {
    fn tensor(&self, shape: &[usize], element: ElementType) -> Type<'c> {
        let dims: Vec<u64> = shape.iter().map(|&d| d as u64).collect();
        RankedTensorType::new(&dims, element.mlir_type(self.context), None).into()
    }

    /// `value` as an element attribute of `element` type.
    fn scalar(&self, element: ElementType, value: f64) -> Attribute<'c> {
        let r#type = element.mlir_type(self.context);
        if element.is_float() {
            FloatAttribute::new(self.context, r#type, value).into()
        } else {
            IntegerAttribute::new(r#type, value as i64).into()
        }
    }

    /// Inserts `op` (built, or why not) and returns its result.
    fn one(&self, op: Result<melior::ir::Operation<'c>, melior::Error>) -> Result<Value<'c, 'a>, String> {
        let op = op.map_err(|e| format!("could not build an adjoint op: {e}"))?;
        self.builder
            .insert_one(op)
            .ok_or_else(|| "an adjoint op has no result".to_owned())
    }

    fn with_conditions(&self, value: Value<'c, 'a>, conditions: &[Attribute<'c>]) -> Value<'c, 'a> {
        if !conditions.is_empty()
            && let Some(op) = rewrite::defining_op(value)
        {
            set_attribute(
                op,
                "overflow_conditions",
                ArrayAttribute::new(self.context, conditions).into(),
            );
        }
        value
    }
}

impl<'c, 'a> Tape for MlirTape<'c, 'a> {
    type Value = Value<'c, 'a>;
    type Map = AffineMap<'c>;
    type Set = Attribute<'c>;

    fn id(&self, value: &Value<'c, 'a>) -> usize {
        key(*value)
    }
    fn shape(&self, value: &Value<'c, 'a>) -> Vec<usize> {
        RankedTensorType::try_from(value.r#type())
            .map(|t| rewrite::dims(t).into_iter().map(|d| d.max(0) as usize).collect())
            .unwrap_or_default()
    }
    fn element(&self, value: &Value<'c, 'a>) -> ElementType {
        RankedTensorType::try_from(value.r#type())
            .ok()
            .and_then(|t| ElementType::from_type(t.element()))
            .unwrap_or(ElementType::I1)
    }
    fn splat(&mut self, shape: &[usize], element: ElementType, value: f64) -> Result<Value<'c, 'a>, String> {
        let r#type = self.tensor(shape, element);
        self.builder
            .splat(r#type, self.scalar(element, value))
            .ok_or_else(|| "could not build a splat".to_owned())
    }
    fn unary(&mut self, kind: UnaryKind, x: &Value<'c, 'a>) -> Result<Value<'c, 'a>, String> {
        let location = self.builder.location();
        self.one(UnaryOp::build(self.context, location, kind, *x, x.r#type()))
    }
    fn cast(&mut self, x: &Value<'c, 'a>, element: ElementType) -> Result<Value<'c, 'a>, String> {
        let location = self.builder.location();
        let r#type = self.tensor(&self.shape(x), element);
        self.one(UnaryOp::build(
            self.context,
            location,
            UnaryKind::Cast,
            *x,
            r#type,
        ))
    }
    fn binary(
        &mut self,
        kind: BinaryKind,
        a: &Value<'c, 'a>,
        b: &Value<'c, 'a>,
    ) -> Result<Value<'c, 'a>, String> {
        let location = self.builder.location();
        let r#type = self.tensor(&self.shape(a), kind.result_element(self.element(a)));
        self.one(BinaryOp::build(self.context, location, kind, *a, *b, r#type))
    }
    fn select(
        &mut self,
        c: &Value<'c, 'a>,
        a: &Value<'c, 'a>,
        b: &Value<'c, 'a>,
    ) -> Result<Value<'c, 'a>, String> {
        let location = self.builder.location();
        self.one(TernaryOp::build(
            self.context,
            location,
            TernaryKind::Select,
            [*c, *a, *b],
            a.r#type(),
        ))
    }
    fn reindex(
        &mut self,
        x: &Value<'c, 'a>,
        shape: &[usize],
        map: &AffineMap<'c>,
        overflow: f64,
        conditions: &[Attribute<'c>],
    ) -> Result<Value<'c, 'a>, String> {
        let location = self.builder.location();
        let element = self.element(x);
        let r#type = self.tensor(shape, element);
        let overflow = (overflow != 0.0).then(|| self.scalar(element, overflow));
        let value = self.one(ReindexOp::build(
            self.context,
            location,
            *x,
            r#type,
            *map,
            overflow,
            &[],
        ))?;
        Ok(self.with_conditions(value, conditions))
    }
    fn reduce(
        &mut self,
        x: &Value<'c, 'a>,
        kind: ReduceKind,
        shape: &[usize],
        map: &AffineMap<'c>,
        conditions: &[Attribute<'c>],
    ) -> Result<Value<'c, 'a>, String> {
        let location = self.builder.location();
        let r#type = self.tensor(shape, self.element(x));
        let value = self.one(ReindexReduceOp::build(
            self.context,
            location,
            kind,
            *x,
            r#type,
            *map,
            &[],
        ))?;
        Ok(self.with_conditions(value, conditions))
    }
}
