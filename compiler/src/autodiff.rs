//! Reverse-mode differentiation of meta-op graphs: Jittor's *backward
//! closure* (`papers/jittor.txt`). The adjoint of every meta-op is made of
//! meta-ops, so a gradient is one more meta-op graph that fuses and
//! compiles like the forward one.
//!
//! The rules are written once, over a [`Tape`]: whatever records ops (the
//! runtime's lazy graph, the `meta-grad` pass's MLIR builder) implements
//! it, and [`backward`] walks a forward graph in reverse through it.
//!
//! Rules (`g` is the adjoint of the op's result `y`; the full table, with
//! ties and non-differentiable kinds, is in `docs/semantics.md`,
//! "Gradients"):
//! - `reindex` by map `f` with overflow conditions `C`: `reindex_reduce`
//!   add of `g` by the same `f` and `C` (`C` ranged over the reindex's
//!   output indices, which are the reduce's input indices). Out-of-bounds
//!   and overflow-condition elements are dropped, so the padded region
//!   gives no gradient.
//! - `reindex_reduce` add: `reindex` of `g` by the same map and
//!   conditions, overflow 0. `mul`: `g` times the product of the other
//!   elements, computed from the product of the nonzero elements and the
//!   count of zeros (so a zero input gets the exact product of the
//!   others). `max`/`min`: `g` goes to the elements equal to the result,
//!   split evenly among ties; a NaN gets none.
//! - Element-wise: the usual derivatives, in terms of the op's operands
//!   and result; `floor`, `ceil` and `round` are piecewise constant and
//!   give zero; `max`/`min` split ties evenly.
//! - Only `f32` and `f64` values carry gradients: integer and `i1` values
//!   (comparisons, masks, integer casts) are constants.

use jitc_dialect::kinds::{BinaryKind, ElementType, ReduceKind, UnaryKind};
use std::collections::{HashMap, HashSet};

/// One op of a forward graph, as differentiation sees it. `V` is a value,
/// `M` an affine map and `S` an overflow condition, each as the [`Tape`]
/// holds them.
#[derive(Debug, Clone)]
pub enum Primal<V, M, S> {
    /// `meta.reindex` (the overflow value does not matter to the adjoint).
    Reindex {
        /// The operand.
        input: V,
        /// `indices`: output index to input index.
        map: M,
        /// `overflow_conditions`, over output indices.
        conditions: Vec<S>,
    },
    /// `meta.reindex_reduce`.
    Reduce {
        /// `kind`.
        kind: ReduceKind,
        /// The operand.
        input: V,
        /// `indices`: input index to output index.
        map: M,
        /// `overflow_conditions`, over input indices.
        conditions: Vec<S>,
    },
    /// `meta.unary` other than `cast`.
    Unary {
        /// `kind`.
        kind: UnaryKind,
        /// The operand.
        input: V,
    },
    /// `meta.unary` `cast` (the target is the result's element type).
    Cast {
        /// The operand.
        input: V,
    },
    /// `meta.binary`.
    Binary {
        /// `kind`.
        kind: BinaryKind,
        /// The first operand.
        lhs: V,
        /// The second operand.
        rhs: V,
    },
    /// `meta.ternary` `select`.
    Select {
        /// The `i1` operand.
        condition: V,
        /// Chosen where `condition` holds.
        then: V,
        /// Chosen elsewhere.
        otherwise: V,
    },
}

impl<V, M, S> Primal<V, M, S> {
    /// The op's operands, in order.
    pub fn inputs(&self) -> Vec<&V> {
        match self {
            Self::Reindex { input, .. }
            | Self::Reduce { input, .. }
            | Self::Unary { input, .. }
            | Self::Cast { input } => vec![input],
            Self::Binary { lhs, rhs, .. } => vec![lhs, rhs],
            Self::Select {
                condition,
                then,
                otherwise,
            } => vec![condition, then, otherwise],
        }
    }
}

/// What records the adjoint ops: values with static shapes, and one method
/// per meta-op. Errors are sentences for the user.
pub trait Tape {
    /// A recorded value.
    type Value: Clone;
    /// An affine map, carried from a forward op to its adjoint unchanged.
    type Map: Clone;
    /// An overflow condition (an affine set), carried unchanged.
    type Set: Clone;

    /// A value's identity: equal for the same value, distinct otherwise.
    fn id(&self, value: &Self::Value) -> usize;
    /// A value's shape.
    fn shape(&self, value: &Self::Value) -> Vec<usize>;
    /// A value's element type.
    fn element(&self, value: &Self::Value) -> ElementType;

    /// A splat constant: `value` everywhere in `shape`.
    fn splat(&mut self, shape: &[usize], element: ElementType, value: f64) -> Result<Self::Value, String>;
    /// `meta.unary` of `kind` (not `cast`).
    fn unary(&mut self, kind: UnaryKind, x: &Self::Value) -> Result<Self::Value, String>;
    /// `meta.unary` `cast` to `element`.
    fn cast(&mut self, x: &Self::Value, element: ElementType) -> Result<Self::Value, String>;
    /// `meta.binary` of `kind`.
    fn binary(&mut self, kind: BinaryKind, a: &Self::Value, b: &Self::Value) -> Result<Self::Value, String>;
    /// `meta.ternary` `select`.
    fn select(
        &mut self,
        condition: &Self::Value,
        then: &Self::Value,
        otherwise: &Self::Value,
    ) -> Result<Self::Value, String>;
    /// `meta.reindex` of `x` to `shape` by `map`, with `overflow` where the
    /// index is out of bounds or one of `conditions` holds.
    fn reindex(
        &mut self,
        x: &Self::Value,
        shape: &[usize],
        map: &Self::Map,
        overflow: f64,
        conditions: &[Self::Set],
    ) -> Result<Self::Value, String>;
    /// `meta.reindex_reduce` of `kind` of `x` to `shape` by `map`, dropping
    /// the elements where one of `conditions` holds.
    fn reduce(
        &mut self,
        x: &Self::Value,
        kind: ReduceKind,
        shape: &[usize],
        map: &Self::Map,
        conditions: &[Self::Set],
    ) -> Result<Self::Value, String>;
}

/// A forward op of type `T` and the value it defines.
pub type Recorded<T> = (
    <T as Tape>::Value,
    Primal<<T as Tape>::Value, <T as Tape>::Map, <T as Tape>::Set>,
);

/// Element-wise helpers over a tape.
struct Build<'t, T: Tape>(&'t mut T);

impl<T: Tape> Build<'_, T> {
    fn like(&mut self, v: &T::Value, value: f64) -> Result<T::Value, String> {
        let shape = self.0.shape(v);
        let element = self.0.element(v);
        self.0.splat(&shape, element, value)
    }
    fn bin(&mut self, kind: BinaryKind, a: &T::Value, b: &T::Value) -> Result<T::Value, String> {
        self.0.binary(kind, a, b)
    }
    fn mul(&mut self, a: &T::Value, b: &T::Value) -> Result<T::Value, String> {
        self.0.binary(BinaryKind::Mul, a, b)
    }
    fn div(&mut self, a: &T::Value, b: &T::Value) -> Result<T::Value, String> {
        self.0.binary(BinaryKind::Div, a, b)
    }
    fn scale(&mut self, a: &T::Value, by: f64) -> Result<T::Value, String> {
        let c = self.like(a, by)?;
        self.mul(a, &c)
    }
    fn neg(&mut self, a: &T::Value) -> Result<T::Value, String> {
        self.0.unary(UnaryKind::Neg, a)
    }
    /// `1 - a`.
    fn one_minus(&mut self, a: &T::Value) -> Result<T::Value, String> {
        let one = self.like(a, 1.0)?;
        self.bin(BinaryKind::Sub, &one, a)
    }
    /// `where ? a : 0`.
    fn only(&mut self, condition: &T::Value, a: &T::Value) -> Result<T::Value, String> {
        let zero = self.like(a, 0.0)?;
        self.0.select(condition, a, &zero)
    }
    /// `where ? 0 : a`.
    fn unless(&mut self, condition: &T::Value, a: &T::Value) -> Result<T::Value, String> {
        let zero = self.like(a, 0.0)?;
        self.0.select(condition, &zero, a)
    }
    /// `a <kind> c` for the constant `c`.
    fn compare(&mut self, kind: BinaryKind, a: &T::Value, c: f64) -> Result<T::Value, String> {
        let c = self.like(a, c)?;
        self.bin(kind, a, &c)
    }
}

/// The adjoint contributions of `op`, whose result is `y`, to each of its
/// operands, given `g`, the adjoint of `y`; `None` where an operand gets
/// none (it is not a float, or the derivative is zero).
pub fn adjoint<T: Tape>(
    tape: &mut T,
    op: &Primal<T::Value, T::Map, T::Set>,
    y: &T::Value,
    g: &T::Value,
) -> Result<Vec<Option<T::Value>>, String> {
    let mut b = Build(tape);
    Ok(match op {
        Primal::Reindex {
            input,
            map,
            conditions,
        } => {
            let shape = b.0.shape(input);
            vec![Some(b.0.reduce(g, ReduceKind::Add, &shape, map, conditions)?)]
        }
        Primal::Reduce {
            kind,
            input,
            map,
            conditions,
        } => vec![reduce_adjoint(&mut b, *kind, input, map, conditions, y, g)?],
        Primal::Unary { kind, input } => vec![unary_adjoint(&mut b, *kind, input, y, g)?],
        Primal::Cast { input } => {
            let (from, to) = (b.0.element(input), b.0.element(y));
            vec![if from.is_float() && to.is_float() {
                Some(b.0.cast(g, from)?)
            } else {
                None
            }]
        }
        Primal::Binary { kind, lhs, rhs } => {
            let (da, db) = binary_adjoint(&mut b, *kind, lhs, rhs, y, g)?;
            vec![da, db]
        }
        Primal::Select { condition, .. } => {
            vec![None, Some(b.only(condition, g)?), Some(b.unless(condition, g)?)]
        }
    })
}

fn unary_adjoint<T: Tape>(
    b: &mut Build<'_, T>,
    kind: UnaryKind,
    x: &T::Value,
    y: &T::Value,
    g: &T::Value,
) -> Result<Option<T::Value>, String> {
    use UnaryKind as U;
    Ok(Some(match kind {
        U::Neg => b.neg(g)?,
        U::Abs => {
            // sign(x) * g, with 0 at 0.
            let positive = b.compare(BinaryKind::Gt, x, 0.0)?;
            let negative = b.compare(BinaryKind::Lt, x, 0.0)?;
            let minus = b.neg(g)?;
            let down = b.only(&negative, &minus)?;
            b.0.select(&positive, g, &down)?
        }
        U::Exp => b.mul(g, y)?,
        U::Log => b.div(g, x)?,
        // 1 / (2 sqrt(x)).
        U::Sqrt => {
            let twice = b.scale(y, 2.0)?;
            b.div(g, &twice)?
        }
        // -x^(-3/2) / 2 = -y^3 / 2.
        U::Rsqrt => {
            let square = b.mul(y, y)?;
            let cube = b.mul(&square, y)?;
            let d = b.scale(&cube, -0.5)?;
            b.mul(g, &d)?
        }
        U::Sin => {
            let cos = b.0.unary(U::Cos, x)?;
            b.mul(g, &cos)?
        }
        U::Cos => {
            let sin = b.0.unary(U::Sin, x)?;
            let d = b.neg(&sin)?;
            b.mul(g, &d)?
        }
        U::Tanh => {
            let square = b.mul(y, y)?;
            let d = b.one_minus(&square)?;
            b.mul(g, &d)?
        }
        // 2/sqrt(pi) e^(-x^2).
        U::Erf => {
            let square = b.mul(x, x)?;
            let minus = b.neg(&square)?;
            let gauss = b.0.unary(U::Exp, &minus)?;
            let d = b.scale(&gauss, std::f64::consts::FRAC_2_SQRT_PI)?;
            b.mul(g, &d)?
        }
        U::Sigmoid => {
            let rest = b.one_minus(y)?;
            let d = b.mul(y, &rest)?;
            b.mul(g, &d)?
        }
        // Piecewise constant; `not` takes no floats.
        U::Floor | U::Ceil | U::Round | U::Not => return Ok(None),
        U::Cast => unreachable!("casts are Primal::Cast"),
    }))
}

type Pair<V> = (Option<V>, Option<V>);

fn binary_adjoint<T: Tape>(
    b: &mut Build<'_, T>,
    kind: BinaryKind,
    x: &T::Value,
    z: &T::Value,
    y: &T::Value,
    g: &T::Value,
) -> Result<Pair<T::Value>, String> {
    use BinaryKind as B;
    Ok(match kind {
        B::Add => (Some(g.clone()), Some(g.clone())),
        B::Sub => (Some(g.clone()), Some(b.neg(g)?)),
        B::Mul => (Some(b.mul(g, z)?), Some(b.mul(g, x)?)),
        // d(x/z)/dz = -y/z.
        B::Div => {
            let dx = b.div(g, z)?;
            let t = b.mul(&dx, y)?;
            let dz = b.neg(&t)?;
            (Some(dx), Some(dz))
        }
        // fmod: x - trunc(x/z) z.
        B::Mod => {
            let q = b.div(x, z)?;
            let negative = b.compare(B::Lt, &q, 0.0)?;
            let up = b.0.unary(UnaryKind::Ceil, &q)?;
            let down = b.0.unary(UnaryKind::Floor, &q)?;
            let trunc = b.0.select(&negative, &up, &down)?;
            let t = b.mul(g, &trunc)?;
            (Some(g.clone()), Some(b.neg(&t)?))
        }
        // d/dx = z x^(z-1), zero where z == 0; d/dz = y ln x, zero where
        // x == 0.
        B::Pow => {
            let one = b.like(z, 1.0)?;
            let less = b.bin(B::Sub, z, &one)?;
            let power = b.bin(B::Pow, x, &less)?;
            let d = b.mul(z, &power)?;
            let dx = b.mul(g, &d)?;
            let z0 = b.compare(B::Eq, z, 0.0)?;
            let dx = b.unless(&z0, &dx)?;
            let ln = b.0.unary(UnaryKind::Log, x)?;
            let d = b.mul(y, &ln)?;
            let dz = b.mul(g, &d)?;
            let x0 = b.compare(B::Eq, x, 0.0)?;
            let dz = b.unless(&x0, &dz)?;
            (Some(dx), Some(dz))
        }
        // The larger (smaller) operand gets g; a tie splits it evenly; a
        // NaN gets none.
        B::Max | B::Min => {
            let (wins, loses) = if kind == B::Max {
                (B::Gt, B::Lt)
            } else {
                (B::Lt, B::Gt)
            };
            let tie = b.bin(B::Eq, x, z)?;
            let half = b.scale(g, 0.5)?;
            let shared = b.only(&tie, &half)?;
            let x_wins = b.bin(wins, x, z)?;
            let dx = b.0.select(&x_wins, g, &shared)?;
            let z_wins = b.bin(loses, x, z)?;
            let dz = b.0.select(&z_wins, g, &shared)?;
            (Some(dx), Some(dz))
        }
        // Comparisons give i1 and the logical kinds take no floats.
        B::Eq | B::Ne | B::Lt | B::Le | B::Gt | B::Ge | B::And | B::Or | B::Xor => (None, None),
    })
}

fn reduce_adjoint<T: Tape>(
    b: &mut Build<'_, T>,
    kind: ReduceKind,
    x: &T::Value,
    map: &T::Map,
    conditions: &[T::Set],
    y: &T::Value,
    g: &T::Value,
) -> Result<Option<T::Value>, String> {
    let shape = b.0.shape(x);
    let element = b.0.element(x);
    let out = b.0.shape(y);
    // A value of the output's shape at each input element (the reduce's
    // map and conditions), `overflow` for elements the reduce drops.
    let spread =
        |b: &mut Build<'_, T>, v: &T::Value, overflow: f64| b.0.reindex(v, &shape, map, overflow, conditions);
    Ok(match kind {
        ReduceKind::Add => Some(spread(b, g, 0.0)?),
        ReduceKind::Mul => {
            // The product of the nonzero elements and the number of zeros.
            let zero = b.compare(BinaryKind::Eq, x, 0.0)?;
            let one = b.like(x, 1.0)?;
            let nonzero = b.0.select(&zero, &one, x)?;
            let product = b.0.reduce(&nonzero, ReduceKind::Mul, &out, map, conditions)?;
            let counted = b.0.cast(&zero, element)?;
            let zeros = b.0.reduce(&counted, ReduceKind::Add, &out, map, conditions)?;
            let (product, zeros) = (spread(b, &product, 1.0)?, spread(b, &zeros, 0.0)?);
            // A nonzero element: the others' product if none is zero; a
            // zero: the others' product if it is the only zero.
            let none = b.compare(BinaryKind::Eq, &zeros, 0.0)?;
            let only = b.compare(BinaryKind::Eq, &zeros, 1.0)?;
            let others = b.div(&product, x)?;
            let at_nonzero = b.only(&none, &others)?;
            let at_zero = b.only(&only, &product)?;
            let d = b.0.select(&zero, &at_zero, &at_nonzero)?;
            let g = spread(b, g, 0.0)?;
            Some(b.mul(&g, &d)?)
        }
        ReduceKind::Max | ReduceKind::Min => {
            // The elements equal to the result share g evenly.
            let result = spread(b, y, 0.0)?;
            let hit = b.bin(BinaryKind::Eq, x, &result)?;
            let counted = b.0.cast(&hit, element)?;
            let ties = b.0.reduce(&counted, ReduceKind::Add, &out, map, conditions)?;
            let ties = spread(b, &ties, 1.0)?;
            let g = spread(b, g, 0.0)?;
            let share = b.div(&g, &ties)?;
            Some(b.only(&hit, &share)?)
        }
        ReduceKind::And | ReduceKind::Or => None,
    })
}

/// The gradients of the scalar `loss` with respect to each of `wrt`.
/// `ops` is the forward graph in an order where each op comes after the
/// ops defining its operands; it may hold ops `loss` does not need. A value
/// of `wrt` that `loss` does not depend on gets zeros.
pub fn backward<T: Tape>(
    tape: &mut T,
    ops: &[Recorded<T>],
    loss: &T::Value,
    wrt: &[T::Value],
) -> Result<Vec<T::Value>, String> {
    let element = tape.element(loss);
    if !tape.shape(loss).is_empty() || !element.is_float() {
        return Err(format!(
            "the loss must be a scalar (rank 0) f32 or f64, not {:?} of {element}",
            tape.shape(loss)
        ));
    }
    for (k, w) in wrt.iter().enumerate() {
        let e = tape.element(w);
        if !e.is_float() {
            return Err(format!(
                "the value to differentiate by at position {k} (counting from 0) is {e}: only f32 and f64 values have gradients (an integer or boolean value is a constant; leave it out)"
            ));
        }
    }
    // Values that depend on one of `wrt` through floats: only they need
    // adjoints.
    let mut varies: HashSet<usize> = wrt.iter().map(|w| tape.id(w)).collect();
    for (result, op) in ops {
        if tape.element(result).is_float() && op.inputs().iter().any(|v| varies.contains(&tape.id(v))) {
            varies.insert(tape.id(result));
        }
    }
    let mut adjoints: HashMap<usize, T::Value> = HashMap::new();
    if varies.contains(&tape.id(loss)) {
        let one = tape.splat(&[], element, 1.0)?;
        adjoints.insert(tape.id(loss), one);
    }
    for (result, op) in ops.iter().rev() {
        let Some(g) = adjoints.get(&tape.id(result)).cloned() else {
            continue;
        };
        if !op.inputs().iter().any(|v| varies.contains(&tape.id(v))) {
            continue;
        }
        let contributions = adjoint(tape, op, result, &g)?;
        for (input, contribution) in op.inputs().into_iter().zip(contributions) {
            let Some(contribution) = contribution else {
                continue;
            };
            let id = tape.id(input);
            if !varies.contains(&id) {
                continue;
            }
            let sum = match adjoints.remove(&id) {
                Some(before) => tape.binary(BinaryKind::Add, &before, &contribution)?,
                None => contribution,
            };
            adjoints.insert(id, sum);
        }
    }
    wrt.iter()
        .map(|w| match adjoints.get(&tape.id(w)) {
            Some(g) => Ok(g.clone()),
            None => {
                let (shape, element) = (tape.shape(w), tape.element(w));
                tape.splat(&shape, element, 0.0)
            }
        })
        .collect()
}
