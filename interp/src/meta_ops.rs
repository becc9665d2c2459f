//! The `meta` ops that compute on tensors: `reindex` and
//! `reindex_reduce` (an affine index map walked over a shape, with its
//! overflow conditions) and the element-wise `unary`, `binary` and
//! `ternary`. Each evaluates one op on its operand values; the host-side
//! `meta` ops (guards, state) stay with the interpreter in `eval`.

use crate::{
    affine::{Map, Set},
    error::{Error, eval_error},
    scalar::{self, Scalar, ScalarError},
    tensor::{Buffer, Tensor},
    value::{Value, ValueType, as_index, check_result, result_type, scalar_attribute},
};
use jitc_dialect::{
    kinds::{ElementType, ReduceKind},
    ops::{BinaryOp, IntegerSet, ReindexOp, ReindexReduceOp, TernaryOp, UnaryOp, tensor_type},
};
use melior::ir::{
    OperationRef,
    r#type::{DimSize, ShapedTypeLike},
};
use std::sync::Arc;

/// Operand `index`, which must be a tensor.
fn tensor_operand(op: OperationRef, args: &[Value], index: usize) -> Result<Arc<Tensor>, Error> {
    match args.get(index) {
        Some(Value::Tensor(t)) => Ok(t.clone()),
        Some(other) => Err(eval_error(
            op,
            format!("operand {index} is {other}, not a tensor"),
        )),
        None => Err(eval_error(op, format!("missing operand {index}"))),
    }
}

/// The result's shape: static sizes from the type, `?` sizes from `sizes`.
fn result_shape(op: OperationRef, sizes: &[i64]) -> Result<(Vec<usize>, ElementType), Error> {
    let ValueType::Tensor(shape, element) = result_type(op, 0)? else {
        return Err(eval_error(op, "result is not a tensor"));
    };
    let mut dynamic = sizes.iter();
    let shape = shape
        .into_iter()
        .map(|d| match d {
            Some(n) => Ok(n),
            None => match dynamic.next() {
                Some(&n) if n >= 0 => Ok(n as usize),
                Some(&n) => Err(eval_error(op, format!("dynamic size {n} is negative"))),
                None => Err(eval_error(op, "a dynamic size has no operand")),
            },
        })
        .collect::<Result<Vec<usize>, _>>()?;
    crate::tensor::checked_len(&shape).map_err(|e| eval_error(op, e))?;
    Ok((shape, element))
}

/// Splits the trailing index operands into dynamic sizes and symbols.
fn index_operands(op: OperationRef, args: &[Value], first: usize) -> Result<(Vec<i64>, Vec<i64>), Error> {
    let result = op.result(0).map_err(|e| eval_error(op, e))?;
    let dynamic = tensor_type(result.into())
        .map(|t| {
            (0..t.rank())
                .filter(|&d| matches!(t.dim_size(d), Ok(DimSize::Dynamic)))
                .count()
        })
        .unwrap_or(0);
    let values: Vec<i64> = args
        .iter()
        .skip(first)
        .map(|value| as_index(op, value))
        .collect::<Result<_, _>>()?;
    let split = dynamic.min(values.len());
    Ok((values[..split].to_vec(), values[split..].to_vec()))
}

fn conditions(op: OperationRef, sets: Option<Result<Vec<IntegerSet>, ()>>) -> Result<Vec<Set>, Error> {
    match sets {
        None => Ok(Vec::new()),
        Some(Ok(sets)) => Ok(sets.into_iter().map(Set::from_mlir).collect()),
        Some(Err(())) => Err(eval_error(op, "overflow_conditions is malformed")),
    }
}

/// Advances a row-major multi-index; returns false after the last one.
fn advance(index: &mut [i64], shape: &[usize]) -> bool {
    for d in (0..shape.len()).rev() {
        index[d] += 1;
        if (index[d] as usize) < shape[d] {
            return true;
        }
        index[d] = 0;
    }
    false
}

/// The flat position of `index` in `shape`, if it is in bounds.
fn flat(index: &[i64], shape: &[usize]) -> Option<usize> {
    let mut position = 0usize;
    for (&i, &n) in index.iter().zip(shape) {
        if i < 0 || i as usize >= n {
            return None;
        }
        position = position * n + i as usize;
    }
    Some(position)
}

fn any_contains(sets: &[Set], dims: &[i64], symbols: &[i64], op: OperationRef) -> Result<bool, Error> {
    for set in sets {
        if set.contains(dims, symbols).map_err(|e| eval_error(op, e))? {
            return Ok(true);
        }
    }
    Ok(false)
}

/// `meta.reindex`: gathers the input through the index map.
pub(crate) fn reindex(op: OperationRef, args: &[Value]) -> Result<Value, Error> {
    let view = ReindexOp::cast(op).ok_or_else(|| eval_error(op, "is malformed"))?;
    let input = tensor_operand(op, args, 0)?;
    let map = Map::from_mlir(
        view.indices()
            .ok_or_else(|| eval_error(op, "has no indices map"))?,
    );
    let (sizes, symbols) = index_operands(op, args, 1)?;
    let (shape, element) = result_shape(op, &sizes)?;
    let sets = conditions(op, view.overflow_conditions())?;
    let overflow = match view.overflow_value() {
        Some(attribute) => {
            scalar_attribute(attribute).ok_or_else(|| eval_error(op, "overflow_value is not a number"))?
        }
        None => Scalar::zero(element),
    }
    .cast(element);
    let mut out = Buffer::try_filled(overflow, shape.iter().product()).map_err(|e| eval_error(op, e))?;
    let mut mapped = Mapped {
        map: &map,
        sets: &sets,
        symbols: &symbols,
        op,
    };
    mapped.for_each(&shape, |position, source| {
        if let Some(from) = flat(source, input.shape()) {
            out.set(position, input.get(from));
        }
        Ok(())
    })?;
    Ok(Value::tensor(
        Tensor::new(shape, out).expect("the buffer was sized for the shape"),
    ))
}

/// `meta.reindex_reduce`: scatters the input through the index map,
/// combining the values that meet with the op's kind.
pub(crate) fn reindex_reduce(op: OperationRef, args: &[Value]) -> Result<Value, Error> {
    let view = ReindexReduceOp::cast(op).ok_or_else(|| eval_error(op, "is malformed"))?;
    let kind: ReduceKind = view.kind().ok_or_else(|| eval_error(op, "has an unknown kind"))?;
    let input = tensor_operand(op, args, 0)?;
    let map = Map::from_mlir(
        view.indices()
            .ok_or_else(|| eval_error(op, "has no indices map"))?,
    );
    let (sizes, symbols) = index_operands(op, args, 1)?;
    let (shape, element) = result_shape(op, &sizes)?;
    let sets = conditions(op, view.overflow_conditions())?;
    let mut out = Buffer::try_filled(scalar::identity(kind, element), shape.iter().product())
        .map_err(|e| eval_error(op, e))?;
    let mut mapped = Mapped {
        map: &map,
        sets: &sets,
        symbols: &symbols,
        op,
    };
    mapped.for_each(input.shape(), |position, target| {
        if let Some(to) = flat(target, &shape) {
            let value =
                scalar::reduce(kind, out.get(to), input.get(position)).map_err(|e| eval_error(op, e))?;
            out.set(to, value);
        }
        Ok(())
    })?;
    Ok(Value::tensor(
        Tensor::new(shape, out).expect("the buffer was sized for the shape"),
    ))
}

/// An index map with its overflow conditions, walked over a shape: the
/// iteration both `reindex` (over output indices) and `reindex_reduce`
/// (over input indices) are made of.
struct Mapped<'m, 'c, 'a> {
    map: &'m Map,
    sets: &'m [Set],
    symbols: &'m [i64],
    op: OperationRef<'c, 'a>,
}

impl Mapped<'_, '_, '_> {
    /// Calls `visit(position, map(index))` for every index of `shape` in
    /// row-major order (`position` is its flat position), skipping indices
    /// that lie in an overflow condition.
    fn for_each(
        &mut self,
        shape: &[usize],
        mut visit: impl FnMut(usize, &[i64]) -> Result<(), Error>,
    ) -> Result<(), Error> {
        if shape.contains(&0) {
            return Ok(());
        }
        let mut index = vec![0i64; shape.len()];
        let mut mapped = Vec::with_capacity(self.map.results.len());
        let mut position = 0;
        loop {
            if !any_contains(self.sets, &index, self.symbols, self.op)? {
                self.map
                    .eval_into(&index, self.symbols, &mut mapped)
                    .map_err(|e| eval_error(self.op, e))?;
                visit(position, &mapped)?;
            }
            position += 1;
            if !advance(&mut index, shape) {
                return Ok(());
            }
        }
    }
}

/// `meta.unary`, `meta.binary` and `meta.ternary`, element by element.
pub(crate) fn elementwise(op: OperationRef, args: &[Value]) -> Result<Value, Error> {
    let inputs: Vec<Arc<Tensor>> = (0..args.len())
        .map(|i| tensor_operand(op, args, i))
        .collect::<Result<_, _>>()?;
    let shape = inputs[0].shape().to_vec();
    if let Some(other) = inputs.iter().find(|t| t.shape() != shape) {
        return Err(eval_error(
            op,
            format!(
                "operands have shapes {:?} and {:?} at run time",
                shape,
                other.shape()
            ),
        ));
    }
    let ValueType::Tensor(_, element) = result_type(op, 0)? else {
        return Err(eval_error(op, "result is not a tensor"));
    };
    let mut out =
        Buffer::try_filled(Scalar::zero(element), inputs[0].len()).map_err(|e| eval_error(op, e))?;
    let compute = |i: usize| -> Result<Scalar, ScalarError> {
        if let Some(unary) = UnaryOp::cast(op) {
            let kind = unary
                .kind()
                .ok_or_else(|| ScalarError::Type("unknown kind".into()))?;
            scalar::unary(kind, inputs[0].get(i), element)
        } else if let Some(binary) = BinaryOp::cast(op) {
            let kind = binary
                .kind()
                .ok_or_else(|| ScalarError::Type("unknown kind".into()))?;
            scalar::binary(kind, inputs[0].get(i), inputs[1].get(i))
        } else if TernaryOp::cast(op).is_some() {
            Ok(if inputs[0].get(i).is_nonzero() {
                inputs[1].get(i)
            } else {
                inputs[2].get(i)
            })
        } else {
            Err(ScalarError::Type("not an element-wise op".into()))
        }
    };
    for i in 0..out.len() {
        out.set(i, compute(i).map_err(|e| eval_error(op, e))?);
    }
    let value = Value::tensor(Tensor::new(shape, out).expect("the buffer was sized for the shape"));
    check_result(op, 0, &value)?;
    Ok(value)
}
