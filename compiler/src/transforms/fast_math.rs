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
//!
//!   How `±2u` is made depends on how `u` was, when each op that made it
//!   has no other use:
//!   - `u = c v` for a constant `c`: `±2u` is `(±2c) v`, one multiply
//!     instead of two (`2 (c v)` and `(2c) v` are the same float but
//!     where `c v` is subnormal, and there `(2c) v` is the closer);
//!   - `u = k (y + a y^3)` with `a > 0`, GELU's tanh form (any order of
//!     the operands, `y^3` as `(y y) y` or `y (y y)`): `±2u` is
//!     `y (±2k ± 2ka y^2)`, four ops instead of six. This one
//!     reassociates: `u`'s roundings differ (a few ulps of `u` in either
//!     form; neither cancels, `y` and `a y^3` having one sign, which is
//!     why `a` must be positive), and `sigmoid`'s slope carries them to the
//!     result: within `4 + 8|u|` ulps of the real GELU wherever
//!     `sigmoid(2u)` is normal (sigmoid's 3 ulps, the product's half, and
//!     `u`'s four roundings, five in the literal form, times sigmoid's
//!     slope; `fast_math_bound.rs` measures 108 ulps at worst, near
//!     `y = -9.4`, and at most 0.46 of the bound, near `y = -7`, in the
//!     tail where the literal form has cancelled to 0).
//!
//!   Both are built as the negation of `∓2u` (`neg` of a multiply by the
//!   negated constants): `sigmoid` computes `exp(-x)`, and the kernel's
//!   two negations cancel. `2c` must be a finite f32 for `c v`; `2k` and
//!   `2ka` normal ones (and `a > 0`) for the cubic.
//! - **`(x / 2) (s + s)` becomes `x s`** for a `sigmoid` `s` (in `[0, 1]`,
//!   so `s + s` is exact), when the halving is by exactly 0.5 and neither
//!   product has another use: GELU's `0.5 y (1 + tanh(u))` after the rewrite
//!   above. Equal as floats, but where `x / 2` is subnormal, and there `x s`
//!   is the closer.
//! - **`pow(x, 2)` becomes `x * x`** (f32 and f64): a multiply is
//!   correctly rounded, where `pow` is a libm call per element that
//!   vectorizes to nothing. Zeros, infinities and NaN give what `pow`
//!   gives.
//!
//! A constant is a splat `arith.constant` of the element type, or a
//! `meta.reindex` without overflow conditions of a rank-0 one, the form in
//! which frontends broadcast numbers. A new constant (`±2c`, `±2ka`) is a
//! splat `arith.constant` of the result's type, which fusion recomputes in
//! each kernel that reads it: a literal in the code, which LLVM can fold
//! (where a broadcast scalar is a kernel argument). Only static shapes are
//! rewritten, with every operand of the result's type: on dynamic shapes
//! the op and the broadcast check sizes at run time, and a rewrite that
//! dropped the constant would drop those checks (and their errors). The
//! new `sigmoid` goes where the `tanh` was, so a `tanh` outside a loop
//! whose body adds 1 stays outside, and a new argument where the old one
//! was made, so an argument made outside a loop whose body takes the
//! `tanh` stays outside too.
//!
//! Algorithm:
//! 1. collect the `meta.binary` ops under the root, in program order;
//! 2. for each, match a rewrite on its kind, its types (static, all
//!    equal), its operands' defining ops and the constants; for `1 ±
//!    tanh(u)`, also match how `u` was made (`c v`, `k (y + a y^3)`, or
//!    neither); build the new argument in front of the op that made `u`
//!    and the `sigmoid` in front of the `tanh` (the other rewrites in front
//!    of the binary), replace the binary's result's uses and erase it,
//!    then the `tanh` it read (whose one use it was) and the ops that made
//!    `u`, each the one use of the next, then the constants' broadcasts and
//!    the constants where this was their last use (each once, though one
//!    constant may be both `k` and `a`). An erased op usually came earlier
//!    in the list, but not in a region whose blocks are out of dominance
//!    order (a CFG's), so erased ops are remembered and skipped;
//! 3. ops a rewrite makes are not matched again.

use crate::{
    pass::{Options, PassInfo},
    rewrite::{
        Builder, DYNAMIC, defining_op, dims, erase, key, op_key, replace_uses, results_unused, splat_float,
        users, with_context,
    },
};
use std::collections::HashSet;

use jitc_dialect::{
    kinds::{BinaryKind, UnaryKind},
    ops::{BinaryOp, ReindexOp, UnaryOp, tensor_type},
    verify::collect_ops,
};
use melior::{
    Context,
    ir::{OperationRef, Type, TypeLike, Value, ValueLike, attribute::FloatAttribute, r#type::ShapedTypeLike},
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
    // A rewrite erases the binary it matched and ops that made its
    // operands, which usually come earlier in the list, but not in a
    // region whose blocks are not in dominance order (a CFG's, or a graph
    // region's): erased ops are remembered and skipped.
    let mut erased = Eraser::default();
    binaries
        .into_iter()
        .filter_map(|op| {
            if erased.keys.contains(&op_key(op)) {
                return None;
            }
            rewrite_one(context, op, &mut erased)
        })
        .collect()
}

/// Erases ops for the rewrites, remembering which.
#[derive(Default)]
struct Eraser {
    keys: HashSet<usize>,
}

impl Eraser {
    /// Erases `op`, whose results are unused.
    fn op(&mut self, op: OperationRef) {
        self.keys.insert(op_key(op));
        erase(op);
    }

    /// Erases the broadcasts (and the constants) that defined `values`
    /// where the rewrite took their last use; each once, however many
    /// times it is listed (one scalar can be listed both itself and under
    /// its broadcast, whose erasure erases it too, on rank-0 tensors).
    fn constants(&mut self, values: &[Value]) {
        // Every defining op is read while all of them are alive.
        let mut ops: Vec<OperationRef> = Vec::new();
        for op in values.iter().filter_map(|v| defining_op(*v)) {
            if !ops.iter().any(|o| op_key(*o) == op_key(op)) {
                ops.push(op);
            }
        }
        for op in ops {
            if self.keys.contains(&op_key(op)) || !results_unused(op) {
                continue;
            }
            let input = ReindexOp::cast(op).and_then(|r| r.input());
            // `op` is unused and not read again; `input`'s producer is
            // checked on its own.
            self.op(op);
            if let Some(input) = input
                && splat_float(input).is_some()
                && let Some(producer) = defining_op(input)
                && !self.keys.contains(&op_key(producer))
                && results_unused(producer)
            {
                self.op(producer);
            }
        }
    }
}

/// What one binary op matched.
enum Match<'c, 'a> {
    /// `1 ± tanh(u)`: `u`, the tanh op, and whether it is the difference.
    OnePlusTanh(Value<'c, 'a>, OperationRef<'c, 'a>, bool),
    /// `pow(x, 2)`: `x`.
    Square(Value<'c, 'a>),
    /// `(x / 2) (s + s)` for a sigmoid `s`: `x`, `s`, and the ops of the
    /// halving and the doubling.
    Halved {
        y: Value<'c, 'a>,
        s: Value<'c, 'a>,
        half: OperationRef<'c, 'a>,
        twice: OperationRef<'c, 'a>,
    },
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

fn rewrite_one<'c, 'a>(
    context: &'c Context,
    op: OperationRef<'c, 'a>,
    erased: &mut Eraser,
) -> Option<&'static str> {
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
        BinaryKind::Mul if element.is_f32() => {
            let r#type = result.r#type();
            [(lhs, rhs), (rhs, lhs)]
                .into_iter()
                .find_map(|(halved, doubled)| {
                    let (_, half_value, y, half) =
                        lone_product(halved, r#type).filter(|(c, ..)| *c == 0.5)?;
                    let (twice, s, t) = lone_binary(doubled, r#type, BinaryKind::Add)?;
                    let sigmoid = UnaryOp::cast(defining_op(s)?)?.kind()? == UnaryKind::Sigmoid;
                    (key(s) == key(t) && sigmoid).then_some((Match::Halved { y, s, half, twice }, half_value))
                })?
        }
        _ => return None,
    };
    // The new ops go where the tanh (or the pow) is, not where the add is:
    // a tanh before a loop whose body adds 1 stays out of the loop.
    let anchor = match matched {
        Match::OnePlusTanh(_, tanh, _) => tanh,
        Match::Square(_) | Match::Halved { .. } => op,
    };
    let builder = Builder::before(context, anchor)?;
    let r#type = result.r#type();
    let binary_at = |at: &Builder<'c, 'a>, kind: BinaryKind, a: Value<'c, 'a>, b: Value<'c, 'a>| {
        at.insert_one(BinaryOp::build(context, at.location(), kind, a, b, r#type).ok()?)
    };
    let unary_at = |at: &Builder<'c, 'a>, kind: UnaryKind, a: Value<'c, 'a>| {
        at.insert_one(UnaryOp::build(context, at.location(), kind, a, r#type).ok()?)
    };
    let binary_op = |kind: BinaryKind, a: Value<'c, 'a>, b: Value<'c, 'a>| binary_at(&builder, kind, a, b);
    let unary_op = |kind: UnaryKind, a: Value<'c, 'a>| unary_at(&builder, kind, a);
    match matched {
        Match::OnePlusTanh(u, tanh, difference) => {
            let made = Made::of(u, r#type);
            let (doubled, what) = match &made {
                // Built as the negation of `-2u` (of `2u` for the
                // difference): `sigmoid` negates its operand first, and the
                // two negations cancel in the kernel. They go where `u` was
                // made (outside a loop whose body has the tanh, say).
                Some(Made { c, form, ops, .. }) => {
                    let at = Builder::before(context, ops[0])?;
                    let f = if difference { 2.0 } else { -2.0 };
                    let (w, what) = match *form {
                        Form::Cubic { y, a } => {
                            let square = binary_at(&at, BinaryKind::Mul, y, y)?;
                            let high =
                                binary_at(&at, BinaryKind::Mul, splat(&at, r#type, f * c * a)?, square)?;
                            let sum = binary_at(&at, BinaryKind::Add, splat(&at, r#type, f * c)?, high)?;
                            let what = if difference {
                                "1 - tanh(k (y + a y^3)) as 2 sigmoid(-y (2k + 2ka y^2))"
                            } else {
                                "1 + tanh(k (y + a y^3)) as 2 sigmoid(y (2k + 2ka y^2))"
                            };
                            (binary_at(&at, BinaryKind::Mul, y, sum)?, what)
                        }
                        Form::Scaled { v } => {
                            let what = if difference {
                                "1 - tanh(c v) as 2 sigmoid(-2c v)"
                            } else {
                                "1 + tanh(c v) as 2 sigmoid(2c v)"
                            };
                            (
                                binary_at(&at, BinaryKind::Mul, splat(&at, r#type, f * c)?, v)?,
                                what,
                            )
                        }
                    };
                    (unary_at(&at, UnaryKind::Neg, w)?, what)
                }
                None => {
                    let doubled = binary_op(BinaryKind::Add, u, u)?;
                    if difference {
                        (
                            unary_op(UnaryKind::Neg, doubled)?,
                            "1 - tanh(u) as 2 sigmoid(-2u)",
                        )
                    } else {
                        (doubled, "1 + tanh(u) as 2 sigmoid(2u)")
                    }
                }
            };
            let s = unary_op(UnaryKind::Sigmoid, doubled)?;
            let sum = binary_op(BinaryKind::Add, s, s)?;
            replace_uses(result, sum);
            // The binary was the tanh's one use: both are unused now, then
            // the ops that made its argument, each of which the next one
            // used alone.
            erased.op(op);
            erased.op(tanh);
            let mut constants = vec![constant_operand];
            if let Some(made) = made {
                for op in made.ops {
                    erased.op(op);
                }
                constants.extend(made.constants);
            }
            erased.constants(&constants);
            Some(what)
        }
        Match::Square(x) => {
            let square = binary_op(BinaryKind::Mul, x, x)?;
            replace_uses(result, square);
            erased.op(op);
            erased.constants(&[constant_operand]);
            Some("pow(x, 2) as x * x")
        }
        Match::Halved { y, s, half, twice } => {
            let product = binary_op(BinaryKind::Mul, y, s)?;
            replace_uses(result, product);
            erased.op(op);
            erased.op(twice);
            erased.op(half);
            erased.constants(&[constant_operand]);
            Some("(x / 2) (2 sigmoid(v)) as x sigmoid(v)")
        }
    }
}

/// A splat constant of `r#type` (static, f32) holding `value`: fusion
/// recomputes it in each kernel that reads it, as a literal.
fn splat<'c, 'a>(builder: &Builder<'c, 'a>, r#type: Type<'c>, value: f64) -> Option<Value<'c, 'a>> {
    let element = FloatAttribute::new(builder.context(), Type::float32(builder.context()), value);
    builder.splat(r#type, element.into())
}

/// How the argument `u` of a `tanh` being rewritten was made, when it is
/// `c v` or GELU's cubic, by ops of its type each of whose results only
/// the next one reads (`u` only the `tanh`), with a constant `c` whose
/// `2c` is a finite f32 (and, for the cubic, `a > 0` and `2c`, `2ca`
/// normal f32s).
struct Made<'c, 'a> {
    /// `c`, as read.
    c: f64,
    /// What `c` multiplies.
    form: Form<'c, 'a>,
    /// The ops from `u`'s back (to `y y` for the cubic).
    ops: Vec<OperationRef<'c, 'a>>,
    /// The constant operands read (`c`, and `a` for the cubic).
    constants: Vec<Value<'c, 'a>>,
}

/// What the constant `c` of `u = c ...` multiplies.
#[derive(Clone, Copy)]
enum Form<'c, 'a> {
    /// `y + a y^3` (GELU's, any order of the operands, `y^3` as `(y y) y`
    /// or `y (y y)`).
    Cubic { y: Value<'c, 'a>, a: f64 },
    /// Any other `v`.
    Scaled { v: Value<'c, 'a> },
}

impl<'c, 'a> Made<'c, 'a> {
    fn of(u: Value<'c, 'a>, r#type: Type<'c>) -> Option<Self> {
        let (c, c_value, v, scale) = lone_product(u, r#type)?;
        if !((2.0 * c) as f32).is_finite() {
            return None;
        }
        let scaled = Made {
            c,
            form: Form::Scaled { v },
            ops: vec![scale],
            constants: vec![c_value],
        };
        // v = y + a y^3: the cube's factors, (y y) y or y (y y).
        let Some((sum, p, q)) = lone_binary(v, r#type, BinaryKind::Add) else {
            return Some(scaled);
        };
        for (y, high) in [(p, q), (q, p)] {
            let Some((a, a_value, cube, times_a)) = lone_product(high, r#type) else {
                continue;
            };
            let Some((cubed, l, r)) = lone_binary(cube, r#type, BinaryKind::Mul) else {
                continue;
            };
            let square = if key(l) == key(y) { r } else { l };
            let other = if key(l) == key(y) { l } else { r };
            let Some((squared, m, n)) = lone_binary(square, r#type, BinaryKind::Mul) else {
                continue;
            };
            // a > 0: y and a y^3 have one sign, so neither form cancels.
            if key(other) != key(y)
                || key(m) != key(y)
                || key(n) != key(y)
                || a <= 0.0
                || !((2.0 * c * a) as f32).is_normal()
                || !((2.0 * c) as f32).is_normal()
            {
                continue;
            }
            return Some(Made {
                c,
                form: Form::Cubic { y, a },
                ops: vec![scale, sum, times_a, cubed, squared],
                constants: vec![c_value, a_value],
            });
        }
        Some(scaled)
    }
}

/// `value`'s `meta.binary` of `kind` with its operands, when its operands
/// and result are of `r#type` and `value` has one use.
fn lone_binary<'c, 'a>(
    value: Value<'c, 'a>,
    r#type: Type<'c>,
    kind: BinaryKind,
) -> Option<(OperationRef<'c, 'a>, Value<'c, 'a>, Value<'c, 'a>)> {
    let op = defining_op(value)?;
    let binary = BinaryOp::cast(op)?;
    let (lhs, rhs) = (binary.lhs()?, binary.rhs()?);
    let typed = [lhs, rhs, value].iter().all(|v| v.r#type() == r#type);
    (binary.kind()? == kind && typed && users(value).len() == 1).then_some((op, lhs, rhs))
}

/// `value` as `c v` (a [`lone_binary`] multiply, the constant either
/// side): `c`, the constant operand, `v` and the op.
fn lone_product<'c, 'a>(
    value: Value<'c, 'a>,
    r#type: Type<'c>,
) -> Option<(f64, Value<'c, 'a>, Value<'c, 'a>, OperationRef<'c, 'a>)> {
    let (op, lhs, rhs) = lone_binary(value, r#type, BinaryKind::Mul)?;
    let (c, constant_operand, other) = match (constant(lhs), constant(rhs)) {
        (Some(c), _) => (c, lhs, rhs),
        (None, Some(c)) => (c, rhs, lhs),
        _ => return None,
    };
    c.is_finite().then_some((c, constant_operand, other, op))
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
