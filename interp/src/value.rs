//! Runtime values and their types: [`Value`], [`ValueType`], and the
//! small conversions every op evaluator shares (reading an index or a
//! condition out of a value, a number out of an attribute, and checking a
//! computed value against its op's declared result type).

use crate::{
    error::{Error, eval_error},
    scalar::Scalar,
    tensor::Tensor,
};
use jitc_dialect::kinds::ElementType;
use melior::ir::{
    Attribute, AttributeLike, OperationRef, Type, TypeLike, ValueLike,
    r#type::{DimSize, RankedTensorType, ShapedTypeLike},
};
use std::{fmt, sync::Arc};

/// A runtime value.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// A tensor.
    Tensor(Arc<Tensor>),
    /// A scalar of an element type (an `arith` value, not a rank-0 tensor).
    Scalar(Scalar),
    /// An `index`.
    Index(i64),
}

impl Value {
    /// A tensor value.
    pub fn tensor(tensor: Tensor) -> Self {
        Self::Tensor(Arc::new(tensor))
    }

    /// The value as an index: an index or an integer scalar; `Err` in the
    /// interpreter's words.
    pub fn index(&self) -> Result<i64, String> {
        match self {
            Value::Index(i) => Ok(*i),
            Value::Scalar(s) if !s.element_type().is_float() => Ok(s.as_i64()),
            other => Err(format!("expected an index, got {other}")),
        }
    }

    /// The value as a condition: an `i1` scalar or a one-element `i1`
    /// tensor; `Err` in the interpreter's words.
    pub fn condition(&self) -> Result<bool, String> {
        match self {
            Value::Scalar(Scalar::I1(b)) => Ok(*b),
            Value::Tensor(t) if t.element_type() == ElementType::I1 && t.len() == 1 => {
                Ok(t.get(0).is_nonzero())
            }
            other => Err(format!("expected an i1, got {other}")),
        }
    }

    /// An index of the same kind as `self` (used for induction variables).
    pub fn clone_as_index(&self, value: i64) -> Value {
        match self {
            Value::Scalar(s) => Value::Scalar(Scalar::I64(value).cast(s.element_type())),
            _ => Value::Index(value),
        }
    }
}

/// Elements an error message shows of a tensor before it names only the
/// tensor's shape and type.
pub const DESCRIBED_ELEMENTS: usize = 16;

impl Value {
    /// The value for an error message: as [`fmt::Display`] writes it, but a
    /// tensor of more than [`DESCRIBED_ELEMENTS`] elements as its shape,
    /// type and size only (`4096x1024xf32 (4194304 elements)`), so that a
    /// refused argument never turns into megabytes of text.
    pub fn describe(&self) -> String {
        match self {
            Self::Tensor(t) if t.len() > DESCRIBED_ELEMENTS => format!(
                "{} ({} elements)",
                crate::tensor::shape_prefix(t.shape(), t.element_type()),
                t.len()
            ),
            other => other.to_string(),
        }
    }
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Tensor(t) => write!(f, "{t}"),
            Self::Scalar(s) => write!(f, "{}={s}", s.element_type()),
            Self::Index(i) => write!(f, "index={i}"),
        }
    }
}

/// The type of a function argument or result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ValueType {
    /// A ranked tensor; `None` for a `?` dimension.
    Tensor(Vec<Option<usize>>, ElementType),
    /// A scalar.
    Scalar(ElementType),
    /// `index`.
    Index,
}

impl ValueType {
    /// `Err` in the interpreter's words when `value` is not of this type:
    /// `computed tensor<3xf32> but the result type is tensor<4xf32>`.
    pub fn check(&self, value: &Value) -> Result<(), String> {
        if self.accepts(value) {
            return Ok(());
        }
        let got = match value {
            Value::Tensor(t) => t.type_name(),
            other => other.to_string(),
        };
        Err(format!("computed {got} but the result type is {self}"))
    }

    /// Classifies an MLIR type; `None` for types the interpreter lacks.
    pub fn from_mlir(r#type: Type) -> Option<Self> {
        if let Ok(tensor) = RankedTensorType::try_from(r#type) {
            let shape = (0..tensor.rank())
                .map(|d| match tensor.dim_size(d) {
                    Ok(DimSize::Static(n)) => Some(n as usize),
                    _ => None,
                })
                .collect();
            return Some(Self::Tensor(shape, ElementType::from_type(tensor.element())?));
        }
        // SAFETY: `r#type` is a live type.
        if unsafe { mlir_sys::mlirTypeIsAIndex(r#type.to_raw()) } {
            return Some(Self::Index);
        }
        ElementType::from_type(r#type).map(Self::Scalar)
    }

    /// Whether `value` has this type.
    pub fn accepts(&self, value: &Value) -> bool {
        match (self, value) {
            (Self::Tensor(shape, element), Value::Tensor(t)) => {
                t.element_type() == *element
                    && t.shape().len() == shape.len()
                    && shape
                        .iter()
                        .zip(t.shape())
                        .all(|(want, got)| want.is_none_or(|w| w == *got))
            }
            (Self::Scalar(element), Value::Scalar(s)) => s.element_type() == *element,
            (Self::Index, Value::Index(_)) => true,
            _ => false,
        }
    }
}

impl fmt::Display for ValueType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Tensor(shape, element) => {
                f.write_str("tensor<")?;
                for d in shape {
                    match d {
                        Some(n) => write!(f, "{n}x")?,
                        None => f.write_str("?x")?,
                    }
                }
                write!(f, "{element}>")
            }
            Self::Scalar(element) => write!(f, "{element}"),
            Self::Index => f.write_str("index"),
        }
    }
}

/// The integer in an `index` or integer scalar.
pub(crate) fn as_index(op: OperationRef, value: &Value) -> Result<i64, Error> {
    value.index().map_err(|message| eval_error(op, message))
}

/// The condition in an `i1` scalar or a one-element `i1` tensor.
pub(crate) fn as_bool(op: OperationRef, value: &Value) -> Result<bool, Error> {
    value.condition().map_err(|message| eval_error(op, message))
}

/// The declared type of result `index`.
pub(crate) fn result_type(op: OperationRef, index: usize) -> Result<ValueType, Error> {
    let result = op.result(index).map_err(|e| eval_error(op, e))?;
    ValueType::from_mlir(result.r#type())
        .ok_or_else(|| eval_error(op, format!("result type {} is not supported", result.r#type())))
}

/// Checks a computed value against the declared result type.
pub(crate) fn check_result(op: OperationRef, index: usize, value: &Value) -> Result<(), Error> {
    let declared = result_type(op, index)?;
    declared.check(value).map_err(|message| eval_error(op, message))
}

/// The number in an integer or float attribute, with its type.
pub(crate) fn scalar_attribute(attribute: Attribute) -> Option<Scalar> {
    let element = ElementType::from_type(attribute.r#type())?;
    // SAFETY: `attribute` is a live attribute; each getter matches its kind.
    unsafe {
        if mlir_sys::mlirAttributeIsAFloat(attribute.to_raw()) {
            Some(Scalar::F64(mlir_sys::mlirFloatAttrGetValueDouble(attribute.to_raw())).cast(element))
        } else if mlir_sys::mlirAttributeIsAInteger(attribute.to_raw()) {
            let value = mlir_sys::mlirIntegerAttrGetValueInt(attribute.to_raw());
            Some(Scalar::I64(value).cast(element))
        } else {
            None
        }
    }
}
