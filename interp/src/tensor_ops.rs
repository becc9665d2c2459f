//! The `tensor` ops the interpreter accepts: `dim`, `extract`,
//! `from_elements`, `extract_slice`, `splat` and `cast` (which
//! `meta-specialize` emits after a shape guard).

use crate::{
    error::{Error, eval_error as error, unsupported},
    scalar::Scalar,
    tensor::{Buffer, Tensor, strides},
    value::{Value, ValueType},
};
use melior::ir::{OperationRef, ValueLike, operation::OperationLike};
use std::sync::Arc;

/// A `DenseI64ArrayAttr` named `name`.
pub(crate) fn i64_array(op: OperationRef, name: &str) -> Result<Vec<i64>, Error> {
    let attribute = op
        .attribute(name)
        .map_err(|_| error(op, format!("has no {name}")))?;
    jitc_dialect::ops::i64_array_attribute(attribute)
        .ok_or_else(|| error(op, format!("{name} is not an i64 array")))
}

/// Evaluates one `tensor` op on its operand values.
pub fn eval(op: OperationRef, args: &[Value]) -> Result<Value, Error> {
    prepare(op)?.apply(args).map_err(|message| error(op, message))
}

/// A `tensor` op read from the IR once, for [`TensorOp::apply`] (see
/// `arith::ArithOp`).
#[derive(Debug, Clone)]
pub struct TensorOp {
    /// The op's name, with `tensor.`.
    name: String,
    /// The result type.
    result: ValueType,
    /// `extract_slice`: the static offsets, sizes and strides.
    slice: Option<[Vec<i64>; 3]>,
}

/// Reads `op` (a `tensor` op the interpreter runs) for [`TensorOp::apply`].
pub fn prepare(op: OperationRef) -> Result<TensorOp, Error> {
    let name = op.name().as_string_ref().as_str().unwrap_or("").to_owned();
    let known = [
        "tensor.dim",
        "tensor.extract",
        "tensor.from_elements",
        "tensor.splat",
        "tensor.extract_slice",
        "tensor.cast",
    ];
    if !known.contains(&name.as_str()) {
        return Err(unsupported(op));
    }
    let slice = if name == "tensor.extract_slice" {
        Some([
            i64_array(op, "static_offsets")?,
            i64_array(op, "static_sizes")?,
            i64_array(op, "static_strides")?,
        ])
    } else {
        None
    };
    Ok(TensorOp {
        name,
        result: result(op)?,
        slice,
    })
}

fn tensor(value: &Value) -> Result<Arc<Tensor>, String> {
    match value {
        Value::Tensor(t) => Ok(t.clone()),
        other => Err(format!("expected a tensor, got {other}")),
    }
}

impl TensorOp {
    /// The op's result on `args`; `Err` says why there is none.
    pub fn apply(&self, args: &[Value]) -> Result<Value, String> {
        let name = self.name.as_str();
        let arg = |i: usize| args.get(i).ok_or_else(|| format!("missing operand {i}"));
        let value = match name {
            "tensor.dim" => {
                let (source, dim) = (tensor(arg(0)?)?, arg(1)?.index()?);
                let size = usize::try_from(dim)
                    .ok()
                    .and_then(|d| source.shape().get(d))
                    .ok_or_else(|| {
                        format!(
                            "dimension {dim} is out of range for rank {}",
                            source.shape().len()
                        )
                    })?;
                Value::Index(*size as i64)
            }
            "tensor.extract" => {
                let source = tensor(arg(0)?)?;
                let index: Vec<i64> = args[1..].iter().map(Value::index).collect::<Result<_, _>>()?;
                let position = position(&index, source.shape()).ok_or_else(|| {
                    format!("index {index:?} is out of bounds for shape {:?}", source.shape())
                })?;
                Value::Scalar(source.get(position))
            }
            "tensor.from_elements" | "tensor.splat" => {
                let ValueType::Tensor(shape, element) = self.result.clone() else {
                    return Err("result is not a tensor".into());
                };
                let mut dynamic = args.iter().skip(1);
                let shape: Vec<usize> = shape
                    .into_iter()
                    .map(|d| match d {
                        Some(n) => Ok(n),
                        None => dynamic
                            .next()
                            .map(|v| v.index().map(|n| n.max(0) as usize))
                            .unwrap_or(Ok(0)),
                    })
                    .collect::<Result<_, _>>()?;
                let len = crate::tensor::checked_len(&shape)?;
                let scalars: Vec<Scalar> = args
                    .iter()
                    .take(if name == "tensor.splat" { 1 } else { args.len() })
                    .map(|a| match a {
                        Value::Scalar(s) => Ok(*s),
                        other => Err(format!("expected a scalar, got {other}")),
                    })
                    .collect::<Result<_, _>>()?;
                let mut buffer = Buffer::try_filled(Scalar::zero(element), len)?;
                for i in 0..len {
                    buffer.set(
                        i,
                        if name == "tensor.splat" {
                            scalars[0]
                        } else {
                            scalars[i]
                        },
                    );
                }
                Value::tensor(Tensor::new(shape, buffer).ok_or("element count does not match the shape")?)
            }
            "tensor.extract_slice" => self.extract_slice(args)?,
            "tensor.cast" => {
                // A cast changes only what the type says about the shape; the
                // shape itself must fit the new type.
                arg(0)?.clone()
            }
            other => return Err(format!("the interpreter does not run '{other}'")),
        };
        self.result.check(&value)?;
        Ok(value)
    }
}

fn result(op: OperationRef) -> Result<ValueType, Error> {
    let result = op.result(0).map_err(|e| error(op, e))?;
    ValueType::from_mlir(result.r#type()).ok_or_else(|| error(op, "has an unsupported result type"))
}

fn position(index: &[i64], shape: &[usize]) -> Option<usize> {
    if index.len() != shape.len() {
        return None;
    }
    let mut position = 0;
    for (&i, &n) in index.iter().zip(shape) {
        if i < 0 || i as usize >= n {
            return None;
        }
        position = position * n + i as usize;
    }
    Some(position)
}

impl TensorOp {
    fn extract_slice(&self, args: &[Value]) -> Result<Value, String> {
        const DYNAMIC: i64 = i64::MIN;
        let source = tensor(args.first().ok_or("missing operand 0")?)?;
        let mut dynamic = args[1..].iter();
        let mut resolve = |values: &[i64]| -> Result<Vec<i64>, String> {
            values
                .iter()
                .map(|&v| match v {
                    DYNAMIC => dynamic.next().ok_or("missing a dynamic operand")?.index(),
                    v => Ok(v),
                })
                .collect()
        };
        let [offsets, sizes, steps] = self.slice.as_ref().ok_or("has no static offsets")?;
        let (offsets, sizes, steps) = (resolve(offsets)?, resolve(sizes)?, resolve(steps)?);
        let rank = source.shape().len();
        if offsets.len() != rank || sizes.len() != rank || steps.len() != rank || sizes.iter().any(|&s| s < 0)
        {
            return Err("offsets, sizes and strides must have one non-negative entry per dimension".into());
        }
        let shape: Vec<usize> = sizes.iter().map(|&s| s as usize).collect();
        let len = crate::tensor::checked_len(&shape)?;
        let source_strides = strides(source.shape());
        let mut buffer = Buffer::try_filled(Scalar::zero(source.element_type()), len)?;
        let out_strides = strides(&shape);
        for i in 0..len {
            let mut from = 0usize;
            for d in 0..rank {
                let k = (i / out_strides[d]) % shape[d];
                let at = offsets[d] + k as i64 * steps[d];
                if at < 0 || at as usize >= source.shape()[d] {
                    return Err(format!(
                        "slice reads index {at} of dimension {d}, which has size {}",
                        source.shape()[d]
                    ));
                }
                from += at as usize * source_strides[d];
            }
            buffer.set(i, source.get(from));
        }
        // A rank-reducing slice drops unit dimensions; take the result's shape.
        let mut value = Tensor::new(shape, buffer).expect("sized for the shape");
        if let ValueType::Tensor(declared, _) = self.result.clone()
            && declared.len() != rank
            && declared.iter().all(Option::is_some)
        {
            let declared: Vec<usize> = declared.into_iter().flatten().collect();
            value = value
                .reshaped(declared)
                .ok_or("result shape does not match the slice")?;
        }
        Ok(Value::tensor(value))
    }
}
