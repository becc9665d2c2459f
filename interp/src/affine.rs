//! Affine maps and integer sets, compiled once into trees that evaluate
//! fast on concrete indices.
//!
//! `floordiv` rounds toward negative infinity, `ceildiv` toward positive
//! infinity, and `mod` is never negative, as in MLIR's affine dialect. A
//! divisor that is not positive is an error.

use jitc_dialect::ops::IntegerSet;
use melior::ir::{AffineExpr, AffineMap};

/// An affine expression over dims `d*` and symbols `s*`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Expr {
    /// `d<n>`.
    Dim(usize),
    /// `s<n>`.
    Symbol(usize),
    /// A constant.
    Constant(i64),
    /// `a + b`.
    Add(Box<Expr>, Box<Expr>),
    /// `a * b`.
    Mul(Box<Expr>, Box<Expr>),
    /// `a mod b`.
    Mod(Box<Expr>, Box<Expr>),
    /// `a floordiv b`.
    FloorDiv(Box<Expr>, Box<Expr>),
    /// `a ceildiv b`.
    CeilDiv(Box<Expr>, Box<Expr>),
}

impl Expr {
    /// Converts MLIR's expression.
    pub fn from_mlir(expr: AffineExpr) -> Self {
        let pair = |e: &AffineExpr| {
            (
                Box::new(Self::from_mlir(e.lhs())),
                Box::new(Self::from_mlir(e.rhs())),
            )
        };
        if expr.is_dim() {
            Self::Dim(expr.dim_position())
        } else if expr.is_symbol() {
            Self::Symbol(expr.symbol_position())
        } else if expr.is_constant() {
            Self::Constant(expr.constant_value())
        } else if expr.is_add() {
            let (a, b) = pair(&expr);
            Self::Add(a, b)
        } else if expr.is_mul() {
            let (a, b) = pair(&expr);
            Self::Mul(a, b)
        } else if expr.is_mod() {
            let (a, b) = pair(&expr);
            Self::Mod(a, b)
        } else if expr.is_floor_div() {
            let (a, b) = pair(&expr);
            Self::FloorDiv(a, b)
        } else {
            let (a, b) = pair(&expr);
            Self::CeilDiv(a, b)
        }
    }

    /// Evaluates at `dims` and `symbols`; `Err` on a divisor that is not
    /// positive or on overflow.
    pub fn eval(&self, dims: &[i64], symbols: &[i64]) -> Result<i64, String> {
        let binary = |a: &Expr, b: &Expr| -> Result<(i64, i64), String> {
            Ok((a.eval(dims, symbols)?, b.eval(dims, symbols)?))
        };
        let divisor = |b: i64| {
            if b > 0 {
                Ok(b)
            } else {
                Err(format!("affine division by {b}; divisors must be positive"))
            }
        };
        let overflow = || "affine index arithmetic overflows i64".to_owned();
        match self {
            Self::Dim(i) => dims
                .get(*i)
                .copied()
                .ok_or_else(|| format!("d{i} is out of range")),
            Self::Symbol(i) => symbols
                .get(*i)
                .copied()
                .ok_or_else(|| format!("s{i} has no value")),
            Self::Constant(c) => Ok(*c),
            Self::Add(a, b) => {
                let (x, y) = binary(a, b)?;
                x.checked_add(y).ok_or_else(overflow)
            }
            Self::Mul(a, b) => {
                let (x, y) = binary(a, b)?;
                x.checked_mul(y).ok_or_else(overflow)
            }
            Self::Mod(a, b) => {
                let (x, y) = binary(a, b)?;
                Ok(x.rem_euclid(divisor(y)?))
            }
            Self::FloorDiv(a, b) => {
                let (x, y) = binary(a, b)?;
                Ok(x.div_euclid(divisor(y)?))
            }
            Self::CeilDiv(a, b) => {
                let (x, y) = binary(a, b)?;
                let y = divisor(y)?;
                // Not `-((-x) floordiv y)`: `-x` overflows at `i64::MIN`.
                Ok(x.div_euclid(y) + i64::from(x.rem_euclid(y) != 0))
            }
        }
    }
}

/// An affine map: one expression per result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Map {
    /// The results.
    pub results: Vec<Expr>,
}

impl Map {
    /// Converts MLIR's map.
    pub fn from_mlir(map: AffineMap) -> Self {
        Self {
            results: (0..map.result_count())
                .filter_map(|i| map.result(i).ok())
                .map(Expr::from_mlir)
                .collect(),
        }
    }

    /// Evaluates every result into `out`.
    pub fn eval_into(&self, dims: &[i64], symbols: &[i64], out: &mut Vec<i64>) -> Result<(), String> {
        out.clear();
        for expr in &self.results {
            out.push(expr.eval(dims, symbols)?);
        }
        Ok(())
    }
}

/// A conjunction of constraints `e == 0` / `e >= 0`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Set {
    /// `(expr, is_equality)`.
    pub constraints: Vec<(Expr, bool)>,
}

impl Set {
    /// Converts MLIR's integer set.
    pub fn from_mlir(set: IntegerSet) -> Self {
        Self {
            constraints: set
                .constraints()
                .into_iter()
                .map(|(e, eq)| (Expr::from_mlir(e), eq))
                .collect(),
        }
    }

    /// Whether the point lies in the set.
    pub fn contains(&self, dims: &[i64], symbols: &[i64]) -> Result<bool, String> {
        for (expr, equality) in &self.constraints {
            let value = expr.eval(dims, symbols)?;
            if (*equality && value != 0) || (!*equality && value < 0) {
                return Ok(false);
            }
        }
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use Expr::*;

    fn b(e: Expr) -> Box<Expr> {
        Box::new(e)
    }

    #[test]
    fn division_rounds_like_mlir() {
        let floordiv = FloorDiv(b(Dim(0)), b(Constant(2)));
        let ceildiv = CeilDiv(b(Dim(0)), b(Constant(2)));
        let modulo = Mod(b(Dim(0)), b(Constant(3)));
        assert_eq!(floordiv.eval(&[-3], &[]), Ok(-2));
        assert_eq!(ceildiv.eval(&[-3], &[]), Ok(-1));
        assert_eq!(ceildiv.eval(&[3], &[]), Ok(2));
        assert_eq!(ceildiv.eval(&[i64::MIN], &[]), Ok(i64::MIN / 2));
        assert_eq!(ceildiv.eval(&[i64::MIN + 1], &[]), Ok(i64::MIN / 2 + 1));
        assert_eq!(ceildiv.eval(&[i64::MAX], &[]), Ok(i64::MAX / 2 + 1));
        assert_eq!(modulo.eval(&[-1], &[]), Ok(2));
        assert!(Mod(b(Dim(0)), b(Symbol(0))).eval(&[1], &[0]).is_err());
    }

    #[test]
    fn sets_are_conjunctions() {
        // d0 - 5 >= 0 and d1 == 0
        let set = Set {
            constraints: vec![(Add(b(Dim(0)), b(Constant(-5))), false), (Dim(1), true)],
        };
        assert_eq!(set.contains(&[5, 0], &[]), Ok(true));
        assert_eq!(set.contains(&[4, 0], &[]), Ok(false));
        assert_eq!(set.contains(&[6, 1], &[]), Ok(false));
    }
}
