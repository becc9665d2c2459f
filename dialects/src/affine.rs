//! Static checks of the affine maps and sets of `meta.reindex` and
//! `meta.reindex_reduce`: divisors that are not positive, and index
//! arithmetic that overflows i64 at some index of the op's domain (the
//! result's indices for `reindex`, the input's for `reindex_reduce`).
//!
//! An expression is flattened into a [`Tree`] whose nodes come in the order
//! the interpreter (`jitc-interp`'s `affine`) evaluates them: the left
//! operand, then the right, then the operation. Walking that list never
//! recurses, so no expression can exhaust the stack, and all arithmetic is
//! checked, so nothing here overflows or panics.
//!
//! A divisor is checked where it is a constant. An overflow is reported only
//! with a witness, an index at which evaluating the op as the interpreter
//! does certainly fails:
//!
//! 1. interval arithmetic bounds every node over the domain; when no
//!    addition or multiplication can leave i64, there is nothing to find
//!    (the common case, and a cheap one);
//! 2. otherwise the corners of the domain are tried, each dimension the
//!    expressions use at 0 or at its last index (all combinations for up to
//!    [`MAX_CORNER_DIMS`] such dimensions, else only all-first and
//!    all-last). At each corner the overflow conditions are evaluated first,
//!    in order, and the map only where no condition holds, as the
//!    interpreter does.
//!
//! Intervals alone would reject legal maps: `(1 - d0) * C + d0 * C` with
//! `C = 2^62` and `d0` in `[0, 1]` is always `C`, yet its bounds add up to
//! `2^63`. A symbol or a `?` size is unknown: nothing that depends on its
//! value is proved, but an overflow beside it still is, because the
//! interpreter evaluates both operands of every operation.

use melior::ir::AffineExpr;

/// The most dimensions whose corners are all tried (`2^12` evaluations).
pub const MAX_CORNER_DIMS: usize = 12;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Operation {
    Add,
    Mul,
    Mod,
    FloorDiv,
    CeilDiv,
}

#[derive(Clone, Copy, Debug)]
enum Node {
    Dim(usize),
    /// A symbol: unknown to the verifier (its value comes at run time).
    Symbol,
    Constant(i64),
    /// The operation and the positions of its operands' nodes.
    Binary(Operation, usize, usize),
    /// An expression kind this module does not know: an unknown value.
    Opaque,
}

/// One affine expression, flattened in evaluation order.
pub struct Tree<'c> {
    nodes: Vec<Node>,
    /// The MLIR expression of each node, for messages.
    exprs: Vec<AffineExpr<'c>>,
}

/// Why evaluating an expression fails at some index.
#[derive(Clone, Copy, Debug)]
pub enum Fault<'c> {
    /// This addition or multiplication leaves i64.
    Overflow(AffineExpr<'c>),
    /// This `mod`, `floordiv` or `ceildiv` divides by a value that is not
    /// positive.
    Divisor(AffineExpr<'c>, i64),
}

fn operation(expr: AffineExpr) -> Option<Operation> {
    if expr.is_add() {
        Some(Operation::Add)
    } else if expr.is_mul() {
        Some(Operation::Mul)
    } else if expr.is_mod() {
        Some(Operation::Mod)
    } else if expr.is_floor_div() {
        Some(Operation::FloorDiv)
    } else if expr.is_ceil_div() {
        Some(Operation::CeilDiv)
    } else {
        None
    }
}

const MIN: i128 = i64::MIN as i128;
const MAX: i128 = i64::MAX as i128;

/// `x` divided by `y > 0`, rounded as `operation` says, or `x mod y`.
fn divide(operation: Operation, x: i128, y: i128) -> i128 {
    match operation {
        Operation::Mod => x.rem_euclid(y),
        Operation::FloorDiv => x.div_euclid(y),
        _ => -((-x).div_euclid(y)),
    }
}

impl<'c> Tree<'c> {
    /// Flattens `root`.
    pub fn new(root: AffineExpr<'c>) -> Self {
        let mut tree = Self {
            nodes: Vec::new(),
            exprs: Vec::new(),
        };
        // Expressions still to flatten, each with whether its operands
        // already are; and the positions of the nodes flattened last.
        let mut stack = vec![(root, false)];
        let mut done = Vec::new();
        while let Some((expr, expanded)) = stack.pop() {
            let node = match operation(expr) {
                Some(_) if !expanded => {
                    stack.push((expr, true));
                    stack.push((expr.rhs(), false));
                    stack.push((expr.lhs(), false));
                    continue;
                }
                Some(operation) => match (done.pop(), done.pop()) {
                    (Some(rhs), Some(lhs)) => Node::Binary(operation, lhs, rhs),
                    _ => Node::Opaque,
                },
                None if expr.is_dim() => Node::Dim(expr.dim_position()),
                None if expr.is_symbol() => Node::Symbol,
                None if expr.is_constant() => Node::Constant(expr.constant_value()),
                None => Node::Opaque,
            };
            done.push(tree.nodes.len());
            tree.nodes.push(node);
            tree.exprs.push(expr);
        }
        tree
    }

    /// Every `mod`, `floordiv` and `ceildiv` whose divisor is a constant
    /// that is not positive, with that constant.
    pub fn constant_divisors(&self) -> Vec<(AffineExpr<'c>, i64)> {
        let divides = [Operation::Mod, Operation::FloorDiv, Operation::CeilDiv];
        self.nodes
            .iter()
            .zip(&self.exprs)
            .filter_map(|(node, expr)| match *node {
                Node::Binary(operation, _, rhs) if divides.contains(&operation) => {
                    match self.nodes.get(rhs) {
                        Some(Node::Constant(divisor)) if *divisor <= 0 => Some((*expr, *divisor)),
                        _ => None,
                    }
                }
                _ => None,
            })
            .collect()
    }

    /// The dimensions the expression uses.
    fn dims(&self) -> impl Iterator<Item = usize> + '_ {
        self.nodes.iter().filter_map(|node| match node {
            Node::Dim(d) => Some(*d),
            _ => None,
        })
    }

    /// Whether some addition or multiplication may leave i64 when each
    /// dimension `d` lies in `[0, extents[d] - 1]` (`None`: unknown).
    fn may_overflow(&self, extents: &[Option<i64>]) -> bool {
        // Bounds of the values that reach a node's users: a value outside
        // i64 stops the evaluation, so each bound is clamped to i64, which
        // also keeps every product of two bounds within i128.
        let mut bounds: Vec<(i128, i128)> = Vec::with_capacity(self.nodes.len());
        for node in &self.nodes {
            let (lo, hi) = match *node {
                Node::Dim(d) => match extents.get(d).copied().flatten() {
                    Some(extent) => (0, (i128::from(extent) - 1).max(0)),
                    None => (0, MAX),
                },
                Node::Symbol | Node::Opaque => (MIN, MAX),
                Node::Constant(c) => (i128::from(c), i128::from(c)),
                Node::Binary(operation, lhs, rhs) => {
                    let get = |i: usize| bounds.get(i).copied().unwrap_or((MIN, MAX));
                    let ((a, b), (c, d)) = (get(lhs), get(rhs));
                    let corners = match operation {
                        Operation::Add => [a + c, b + d, a + c, b + d],
                        Operation::Mul => [a * c, a * d, b * c, b * d],
                        Operation::Mod => {
                            // Only a positive divisor lets the run go on.
                            let d = d.max(1);
                            [0, d - 1, 0, d - 1]
                        }
                        Operation::FloorDiv | Operation::CeilDiv => {
                            // Monotone in each operand for a positive
                            // divisor, so the extremes lie at corners.
                            let (c, d) = (c.max(1), d.max(1));
                            [
                                divide(operation, a, c),
                                divide(operation, a, d),
                                divide(operation, b, c),
                                divide(operation, b, d),
                            ]
                        }
                    };
                    let lo = corners.iter().copied().min().unwrap_or(MIN);
                    let hi = corners.iter().copied().max().unwrap_or(MAX);
                    (lo, hi)
                }
            };
            if lo < MIN || hi > MAX {
                return true;
            }
            bounds.push((lo, hi));
        }
        false
    }

    /// Evaluates the expression at `point` (`None`: an unknown value) as
    /// the interpreter does. `Ok(None)` is an unknown value, which may also
    /// be a failure; a fault is returned only when the evaluation fails
    /// whatever the unknowns are: the first node, in evaluation order, that
    /// fails on known operands (a failure then reaches the root, as no
    /// operation skips an operand).
    fn eval(&self, point: &[Option<i64>]) -> Result<Option<i64>, Fault<'c>> {
        let mut values: Vec<Option<i64>> = Vec::with_capacity(self.nodes.len());
        for (node, expr) in self.nodes.iter().zip(&self.exprs) {
            let value = match *node {
                Node::Dim(d) => point.get(d).copied().flatten(),
                Node::Symbol | Node::Opaque => None,
                Node::Constant(c) => Some(c),
                Node::Binary(operation, lhs, rhs) => {
                    let x = values.get(lhs).copied().flatten();
                    let y = values.get(rhs).copied().flatten();
                    match operation {
                        Operation::Add | Operation::Mul => match (x, y) {
                            (Some(x), Some(y)) => {
                                let value = if operation == Operation::Add {
                                    x.checked_add(y)
                                } else {
                                    x.checked_mul(y)
                                };
                                Some(value.ok_or(Fault::Overflow(*expr))?)
                            }
                            _ => None,
                        },
                        _ => match (x, y) {
                            (_, Some(y)) if y <= 0 => return Err(Fault::Divisor(*expr, y)),
                            (Some(x), Some(y)) => {
                                i64::try_from(divide(operation, i128::from(x), i128::from(y))).ok()
                            }
                            _ => None,
                        },
                    }
                }
            };
            values.push(value);
        }
        Ok(values.last().copied().flatten())
    }
}

/// An op's index map and overflow conditions.
pub struct Indexing<'c> {
    /// The map's results.
    pub map: Vec<Tree<'c>>,
    /// The `overflow_conditions` sets: each a conjunction of constraints
    /// `(expr, is_equality)`, meaning `expr == 0` or `expr >= 0`.
    pub sets: Vec<Vec<(Tree<'c>, bool)>>,
}

/// Which expressions of an [`Indexing`] a fault lies in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    /// The index map.
    Map,
    /// This overflow condition set.
    Set(usize),
}

/// An index of the domain at which the interpreter certainly fails.
#[derive(Debug)]
pub struct Witness<'c> {
    /// Where the failing expression lies.
    pub source: Source,
    /// What fails.
    pub fault: Fault<'c>,
    /// The index; `None` for a `?` dimension, whose value does not matter.
    pub index: Vec<Option<i64>>,
}

impl<'c> Indexing<'c> {
    fn trees(&self) -> impl Iterator<Item = &Tree<'c>> + '_ {
        self.map
            .iter()
            .chain(self.sets.iter().flatten().map(|(tree, _)| tree))
    }

    /// An index of the domain with the given extents (`None`: a `?` size)
    /// at which evaluating the conditions and the map certainly fails, if
    /// the search of the module doc finds one.
    pub fn find_fault(&self, extents: &[Option<i64>]) -> Option<Witness<'c>> {
        if extents.contains(&Some(0)) || !self.trees().any(|tree| tree.may_overflow(extents)) {
            return None;
        }
        let mut free: Vec<usize> = self
            .trees()
            .flat_map(|tree| tree.dims())
            .filter(|&d| matches!(extents.get(d), Some(Some(extent)) if *extent >= 2))
            .collect();
        free.sort_unstable();
        free.dedup();
        let every_corner = free.len() <= MAX_CORNER_DIMS;
        let corners: u64 = if every_corner { 1 << free.len() } else { 2 };
        let base: Vec<Option<i64>> = extents.iter().map(|extent| extent.map(|_| 0)).collect();
        for corner in 0..corners {
            let mut index = base.clone();
            for (bit, &d) in free.iter().enumerate() {
                let last = if every_corner {
                    corner & (1 << bit) != 0
                } else {
                    corner == 1
                };
                if last && let (Some(slot), Some(Some(extent))) = (index.get_mut(d), extents.get(d)) {
                    *slot = Some(extent - 1);
                }
            }
            if let Some((source, fault)) = self.run(&index) {
                return Some(Witness { source, fault, index });
            }
        }
        None
    }

    /// What the interpreter does at `index`: the conditions in order, each
    /// constraint in order until one fails, then, unless a set holds, the
    /// map. A failure it certainly meets, or `None`.
    fn run(&self, index: &[Option<i64>]) -> Option<(Source, Fault<'c>)> {
        for (i, set) in self.sets.iter().enumerate() {
            let mut holds = true;
            for (tree, equality) in set {
                match tree.eval(index) {
                    Err(fault) => return Some((Source::Set(i), fault)),
                    // Whether the run goes on past this set is unknown.
                    Ok(None) => return None,
                    Ok(Some(value)) => {
                        if (*equality && value != 0) || (!*equality && value < 0) {
                            holds = false;
                            break;
                        }
                    }
                }
            }
            if holds {
                return None;
            }
        }
        // The interpreter stops at the first result that fails; one that
        // may fail hides nothing, as the run fails either way.
        self.map
            .iter()
            .find_map(|tree| tree.eval(index).err())
            .map(|fault| (Source::Map, fault))
    }
}
