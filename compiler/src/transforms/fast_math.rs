//! `meta-fast-math`: rewrites element-wise math into cheaper forms that
//! are equal in real arithmetic, as `--math fast` allows. The compilers run
//! it before fusion under fast math only: never under `--math exact`
//! (which stays bit-identical to the interpreter), nor with the paper's
//! rules alone (`--jittor-rules`), nor in the interpreter.
//!
//! ```mlir
//! // before: GELU's 1 + tanh(u)
//! %t = "meta.unary"(%u) {kind = "tanh"} : (tensor<8xf32>) -> tensor<8xf32>
//! %p = "meta.binary"(%one, %t) {kind = "add"} : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
//! // after: 2 sigmoid(2u), the doublings as additions
//! %u2 = "meta.binary"(%u, %u) {kind = "add"} : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
//! %s = "meta.unary"(%u2) {kind = "sigmoid"} : (tensor<8xf32>) -> tensor<8xf32>
//! %p = "meta.binary"(%s, %s) {kind = "add"} : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
//! ```
//!
//! The rewrites:
//! - **`1 + tanh(u)` (either order) becomes `2 sigmoid(2u)`, and `1 -
//!   tanh(u)` becomes `2 sigmoid(-2u)`**, for f32 when the `tanh` has no
//!   other use (otherwise it is computed anyway). Under fast math f32
//!   `tanh` is a polynomial for small arguments and `1 - 2 / (e^{2|x|} +
//!   1)` for the others, both computed and one selected; `sigmoid` is one
//!   `exp` and one division, so the rewritten form does about half the
//!   work (GELU's `0.5 x (1 + tanh(...))` is the common case). It is also
//!   closer to the real value: where `tanh(u)` nears `-1` (or `1` for the
//!   difference), `1 + tanh(u)` cancels, and the absolute error of `tanh`
//!   (about an ulp of 1) becomes a large relative one, which `sigmoid`
//!   does not have. `2u`, `-2u` and `2s` are exact (or overflow to the
//!   infinity that `sigmoid` maps to its limit), so the result is within
//!   `sigmoid`'s bound of the real `1 ± tanh(u)` wherever that is a normal
//!   float (`runtime/tests/fast_math_bound.rs` measures it); where it is
//!   subnormal (`u` below about -44 for the sum) the result is 0 or
//!   subnormal, as the literal form's 0 is. NaN stays NaN, and the limits
//!   at `±inf` are those of the literal form.
//! - **`pow(x, 2)` becomes `x * x`** (f32 and f64): a multiply is
//!   correctly rounded, where `pow` is a libm call per element that
//!   vectorizes to nothing. Zeros, infinities and NaN give what `pow`
//!   gives.
//!
//! A constant is a splat `arith.constant` of the element type, or a
//! `meta.reindex` without overflow conditions of a rank-0 one, the form in
//! which frontends broadcast numbers. New values are made from the
//! operands (`u + u`), so no constant is added. Only static shapes are
//! rewritten, with every operand of the result's type: on dynamic shapes
//! the op and the broadcast check sizes at run time, and a rewrite that
//! dropped the constant would drop those checks (and their errors). The
//! new ops go where the `tanh` was, so a `tanh` outside a loop whose body
//! adds 1 stays outside.
//!
//! Algorithm:
//! 1. collect the `meta.binary` ops under the root, in program order;
//! 2. for each, match a rewrite on its kind, its types (static, all
//!    equal), its operands' defining ops and the constants; build the new
//!    ops in front of the `tanh` (or the `pow`), replace the binary's
//!    result's uses and erase it, then the `tanh` it read (whose one use it
//!    was), then the constant's broadcast and the constant where this was
//!    their last use;
//! 3. ops a rewrite makes are not matched again.

use crate::{
    pass::{Options, PassInfo},
    rewrite::{
        Builder, DYNAMIC, defining_op, dims, erase, replace_uses, results_unused, splat_float, users,
        with_context,
    },
};
use jitc_dialect::{
    kinds::{BinaryKind, UnaryKind},
    ops::{BinaryOp, ReindexOp, UnaryOp, tensor_type},
    verify::collect_ops,
};
use melior::{
    Context,
    ir::{OperationRef, TypeLike, Value, ValueLike, r#type::ShapedTypeLike},
};

/// The `meta-fast-math` pass.
pub struct FastMath;

impl FastMath {
    /// Registry entry.
    pub const INFO: PassInfo = PassInfo {
        argument: "meta-fast-math",
        name: "FastMath",
        summary: "Rewrite math into cheaper forms equal in real arithmetic (what --math fast allows)",
        options: &[],
        source_file: "compiler/src/transforms/fast_math.rs",
        source: include_str!("fast_math.rs"),
        run: Self::run,
    };

    /// Runs the pass on everything nested in `root`.
    pub fn run(root: OperationRef, _options: &Options) -> bool {
        with_context(root, |context| {
            rewrite_all(context, root);
        });
        true
    }
}

/// Applies every rewrite under `root`; returns what each one did, in
/// program order (`"1 + tanh(u) as 2 sigmoid(2u)"`), for `jitc explain`.
pub fn rewrite_all(context: &Context, root: OperationRef) -> Vec<&'static str> {
    let binaries: Vec<OperationRef> = collect_ops(root)
        .into_iter()
        .filter(|op| BinaryOp::cast(*op).is_some())
        .collect();
    // A rewrite erases only the binary it matched and a tanh, never a
    // binary later in the list.
    binaries
        .into_iter()
        .filter_map(|op| rewrite_one(context, op))
        .collect()
}

/// What one binary op matched.
enum Match<'c, 'a> {
    /// `1 ± tanh(u)`: `u`, the tanh op, and whether it is the difference.
    OnePlusTanh(Value<'c, 'a>, OperationRef<'c, 'a>, bool),
    /// `pow(x, 2)`: `x`.
    Square(Value<'c, 'a>),
}

/// `(a, b)` when `a` is the constant `c`, `(b, a)` when `b` is, else None
/// (for an operator that commutes): the constant first.
fn with_constant<'c, 'a>(
    a: Value<'c, 'a>,
    b: Value<'c, 'a>,
    c: f64,
) -> Option<(Value<'c, 'a>, Value<'c, 'a>)> {
    if constant(a) == Some(c) {
        Some((a, b))
    } else if constant(b) == Some(c) {
        Some((b, a))
    } else {
        None
    }
}

fn rewrite_one<'c, 'a>(context: &'c Context, op: OperationRef<'c, 'a>) -> Option<&'static str> {
    let binary = BinaryOp::cast(op)?;
    let (lhs, rhs) = (binary.lhs()?, binary.rhs()?);
    let result = binary.result()?;
    let result_type = tensor_type(result)?;
    // Static shapes only, every operand's the result's: an element-wise op
    // on dynamic shapes checks them at run time (and a broadcast checks its
    // sizes), which dropping the constant would skip.
    if dims(result_type).contains(&DYNAMIC) || [lhs, rhs].iter().any(|v| v.r#type() != result.r#type()) {
        return None;
    }
    let element = result_type.element();
    let (matched, constant_operand) = match binary.kind()? {
        BinaryKind::Add if element.is_f32() => {
            let (one, other) = with_constant(lhs, rhs, 1.0)?;
            let (u, t) = lone_tanh(other)?;
            (Match::OnePlusTanh(u, t, false), one)
        }
        BinaryKind::Sub if element.is_f32() && constant(lhs) == Some(1.0) => {
            let (u, t) = lone_tanh(rhs)?;
            (Match::OnePlusTanh(u, t, true), lhs)
        }
        BinaryKind::Pow if constant(rhs) == Some(2.0) => (Match::Square(lhs), rhs),
        _ => return None,
    };
    // The new ops go where the tanh (or the pow) is, not where the add is:
    // a tanh before a loop whose body adds 1 stays out of the loop.
    let anchor = match matched {
        Match::OnePlusTanh(_, tanh, _) => tanh,
        Match::Square(_) => op,
    };
    let builder = Builder::before(context, anchor)?;
    let r#type = result.r#type();
    let binary_op = |kind: BinaryKind, a: Value<'c, 'a>, b: Value<'c, 'a>| {
        builder.insert_one(BinaryOp::build(context, builder.location(), kind, a, b, r#type).ok()?)
    };
    let unary_op = |kind: UnaryKind, a: Value<'c, 'a>| {
        builder.insert_one(UnaryOp::build(context, builder.location(), kind, a, r#type).ok()?)
    };
    match matched {
        Match::OnePlusTanh(u, tanh, difference) => {
            let mut doubled = binary_op(BinaryKind::Add, u, u)?;
            if difference {
                doubled = unary_op(UnaryKind::Neg, doubled)?;
            }
            let s = unary_op(UnaryKind::Sigmoid, doubled)?;
            let sum = binary_op(BinaryKind::Add, s, s)?;
            replace_uses(result, sum);
            // The binary was the tanh's one use: both are unused now.
            erase(op);
            erase(tanh);
            erase_if_dead(constant_operand);
            Some(if difference {
                "1 - tanh(u) as 2 sigmoid(-2u)"
            } else {
                "1 + tanh(u) as 2 sigmoid(2u)"
            })
        }
        Match::Square(x) => {
            let square = binary_op(BinaryKind::Mul, x, x)?;
            replace_uses(result, square);
            erase(op);
            erase_if_dead(constant_operand);
            Some("pow(x, 2) as x * x")
        }
    }
}

/// The element of the splat float constant `value` is: an `arith.constant`,
/// or a `meta.reindex` without overflow conditions of a rank-0 one, which
/// reads its one element everywhere (its map has no results, so its other
/// operands, sizes or symbols, change nothing).
fn constant(value: Value) -> Option<f64> {
    if let Some(splat) = splat_float(value) {
        return Some(splat);
    }
    let reindex = ReindexOp::cast(defining_op(value)?)?;
    if reindex.overflow_conditions().is_some() {
        return None;
    }
    let input = reindex.input()?;
    if tensor_type(input)?.rank() != 0 {
        return None;
    }
    splat_float(input)
}

/// Erases the broadcast (and the constant) that defined `value` when the
/// rewrite took its last use.
fn erase_if_dead(value: Value) {
    let Some(op) = defining_op(value) else {
        return;
    };
    if !results_unused(op) {
        return;
    }
    let input = ReindexOp::cast(op).and_then(|r| r.input());
    // `op` is unused and not read again; `input`'s producer is checked on
    // its own.
    erase(op);
    if let Some(input) = input
        && splat_float(input).is_some()
        && let Some(producer) = defining_op(input)
        && results_unused(producer)
    {
        erase(producer);
    }
}

/// `value`'s `meta.unary` tanh and its operand, when it is one and
/// `value` has no other use than the one being rewritten.
fn lone_tanh<'c, 'a>(value: Value<'c, 'a>) -> Option<(Value<'c, 'a>, OperationRef<'c, 'a>)> {
    let op = defining_op(value)?;
    let unary = UnaryOp::cast(op)?;
    if unary.kind()? != UnaryKind::Tanh || users(value).len() != 1 {
        return None;
    }
    Some((unary.input()?, op))
}
