//! `arith` ops on scalars and indices.
//!
//! Integers compute in i64 and wrap to their width (`i1`, `i32`, `i64`,
//! `index` as i64), so `arith.addi` on `i32` wraps exactly as the hardware
//! would. Division by zero is an error, as for `meta.binary`.

use crate::{
    error::{Error, eval_error as error, unsupported},
    scalar::{self, Scalar},
    tensor::{Buffer, Tensor},
    value::{Value, ValueType, scalar_attribute},
};
use jitc_dialect::kinds::{BinaryKind, ElementType, UnaryKind};
use melior::ir::{Attribute, AttributeLike, OperationRef, operation::OperationLike};

/// An integer operand: value (sign-extended) and width in bits.
fn integer(value: &Value) -> Result<(i64, u32), String> {
    match value {
        Value::Index(i) => Ok((*i, 64)),
        Value::Scalar(Scalar::I1(b)) => Ok((*b as i64, 1)),
        Value::Scalar(Scalar::I32(v)) => Ok((*v as i64, 32)),
        Value::Scalar(Scalar::I64(v)) => Ok((*v, 64)),
        other => Err(format!("expected an integer or index, got {other}")),
    }
}

fn float(value: &Value) -> Result<Scalar, String> {
    match value {
        Value::Scalar(s) if s.element_type().is_float() => Ok(*s),
        other => Err(format!("expected a float, got {other}")),
    }
}

fn result_type(op: OperationRef) -> Result<ValueType, Error> {
    let result = op.result(0).map_err(|e| error(op, e))?;
    ValueType::from_mlir(melior::ir::ValueLike::r#type(&result))
        .ok_or_else(|| error(op, "has a result type the interpreter cannot hold"))
}

fn floor_div(a: i64, b: i64) -> i64 {
    let q = a.wrapping_div(b);
    if a.wrapping_rem(b) != 0 && ((a < 0) != (b < 0)) {
        q - 1
    } else {
        q
    }
}

fn ceil_div(a: i64, b: i64) -> i64 {
    let q = a.wrapping_div(b);
    if a.wrapping_rem(b) != 0 && ((a < 0) == (b < 0)) {
        q + 1
    } else {
        q
    }
}

fn unsigned(value: i64, width: u32) -> u64 {
    if width >= 64 {
        value as u64
    } else {
        (value as u64) & ((1u64 << width) - 1)
    }
}

/// Evaluates one `arith` op on its operand values.
pub fn eval(op: OperationRef, args: &[Value]) -> Result<Value, Error> {
    prepare(op)?.apply(args).map_err(|message| error(op, message))
}

/// An `arith` op read from the IR once: what [`ArithOp::apply`] needs to
/// compute its result from operand values, any number of times, without
/// the IR. The interpreter and the runtime's host plans share it, so host
/// arithmetic has one meaning.
#[derive(Debug, Clone)]
pub struct ArithOp {
    /// The op's name without `arith.`.
    operation: String,
    /// The result type.
    result: ValueType,
    /// `cmpi` and `cmpf`: the predicate.
    predicate: i64,
    /// `constant`: the value.
    constant: Option<Value>,
}

/// The ops [`prepare`] accepts, without `arith.`.
const OPERATIONS: [&str; 37] = [
    "constant",
    "addi",
    "subi",
    "muli",
    "divsi",
    "remsi",
    "divui",
    "remui",
    "floordivsi",
    "ceildivsi",
    "maxsi",
    "minsi",
    "andi",
    "ori",
    "xori",
    "addf",
    "subf",
    "mulf",
    "divf",
    "remf",
    "maximumf",
    "minimumf",
    "negf",
    "cmpi",
    "cmpf",
    "select",
    "index_cast",
    "extsi",
    "trunci",
    "index_castui",
    "extui",
    "sitofp",
    "uitofp",
    "extf",
    "truncf",
    "fptosi",
    "fptoui",
];

/// Reads `op` (an `arith` op) for [`ArithOp::apply`]; a constant is
/// materialized here, once.
pub fn prepare(op: OperationRef) -> Result<ArithOp, Error> {
    let name = op.name().as_string_ref().as_str().unwrap_or("").to_owned();
    let operation = name.trim_start_matches("arith.");
    if !OPERATIONS.contains(&operation) {
        return Err(unsupported(op));
    }
    Ok(ArithOp {
        operation: operation.to_owned(),
        result: result_type(op)?,
        predicate: if matches!(operation, "cmpi" | "cmpf") {
            predicate(op)?
        } else {
            0
        },
        constant: if operation == "constant" {
            Some(constant(op)?)
        } else {
            None
        },
    })
}

impl ArithOp {
    /// The op's result on `args`; `Err` says why there is none (the
    /// caller names the op).
    pub fn apply(&self, args: &[Value]) -> Result<Value, String> {
        let operation = self.operation.as_str();
        let arg = |i: usize| args.get(i).ok_or_else(|| format!("missing operand {i}"));
        let from_integer = |value: i64| -> Result<Value, String> {
            match &self.result {
                ValueType::Index => Ok(Value::Index(value)),
                ValueType::Scalar(ElementType::I1) => Ok(Value::Scalar(Scalar::I1(value & 1 != 0))),
                ValueType::Scalar(element) => Ok(Value::Scalar(Scalar::I64(value).cast(*element))),
                other => Err(format!("result type {other} is not an integer")),
            }
        };
        let value = match operation {
            "constant" => self.constant.clone().ok_or("has no value")?,
            "addi" | "subi" | "muli" | "divsi" | "remsi" | "divui" | "remui" | "floordivsi" | "ceildivsi"
            | "maxsi" | "minsi" | "andi" | "ori" | "xori" => {
                let ((a, width), (b, _)) = (integer(arg(0)?)?, integer(arg(1)?)?);
                let needs_divisor = matches!(
                    operation,
                    "divsi" | "remsi" | "divui" | "remui" | "floordivsi" | "ceildivsi"
                );
                if needs_divisor
                    && (if width == 64 {
                        b == 0
                    } else {
                        unsigned(b, width) == 0
                    })
                {
                    return Err("integer division by zero".into());
                }
                let (ua, ub) = (unsigned(a, width), unsigned(b, width));
                let result = match operation {
                    "addi" => a.wrapping_add(b),
                    "subi" => a.wrapping_sub(b),
                    "muli" => a.wrapping_mul(b),
                    "divsi" => a.wrapping_div(b),
                    "remsi" => a.wrapping_rem(b),
                    "divui" => (ua / ub) as i64,
                    "remui" => (ua % ub) as i64,
                    "floordivsi" => floor_div(a, b),
                    "ceildivsi" => ceil_div(a, b),
                    "maxsi" => a.max(b),
                    "minsi" => a.min(b),
                    "andi" => a & b,
                    "ori" => a | b,
                    _ => a ^ b,
                };
                from_integer(result)?
            }
            "addf" | "subf" | "mulf" | "divf" | "remf" | "maximumf" | "minimumf" => {
                let kind = match operation {
                    "addf" => BinaryKind::Add,
                    "subf" => BinaryKind::Sub,
                    "mulf" => BinaryKind::Mul,
                    "divf" => BinaryKind::Div,
                    "remf" => BinaryKind::Mod,
                    "maximumf" => BinaryKind::Max,
                    _ => BinaryKind::Min,
                };
                Value::Scalar(
                    scalar::binary(kind, float(arg(0)?)?, float(arg(1)?)?).map_err(|e| e.to_string())?,
                )
            }
            "negf" => {
                let x = float(arg(0)?)?;
                Value::Scalar(scalar::unary(UnaryKind::Neg, x, x.element_type()).map_err(|e| e.to_string())?)
            }
            "cmpi" => {
                let ((a, width), (b, _)) = (integer(arg(0)?)?, integer(arg(1)?)?);
                let (ua, ub) = (unsigned(a, width), unsigned(b, width));
                let holds = match self.predicate {
                    0 => a == b,
                    1 => a != b,
                    2 => a < b,
                    3 => a <= b,
                    4 => a > b,
                    5 => a >= b,
                    6 => ua < ub,
                    7 => ua <= ub,
                    8 => ua > ub,
                    9 => ua >= ub,
                    p => return Err(format!("unknown predicate {p}")),
                };
                Value::Scalar(Scalar::I1(holds))
            }
            "cmpf" => {
                let (a, b) = (float(arg(0)?)?.as_f64(), float(arg(1)?)?.as_f64());
                let unordered = a.is_nan() || b.is_nan();
                let holds = match self.predicate {
                    0 => false,
                    1 => !unordered && a == b,
                    2 => !unordered && a > b,
                    3 => !unordered && a >= b,
                    4 => !unordered && a < b,
                    5 => !unordered && a <= b,
                    6 => !unordered && a != b,
                    7 => !unordered,
                    8 => unordered || a == b,
                    9 => unordered || a > b,
                    10 => unordered || a >= b,
                    11 => unordered || a < b,
                    12 => unordered || a <= b,
                    13 => unordered || a != b,
                    14 => unordered,
                    15 => true,
                    p => return Err(format!("unknown predicate {p}")),
                };
                Value::Scalar(Scalar::I1(holds))
            }
            "select" => {
                let condition = match arg(0)? {
                    Value::Scalar(Scalar::I1(b)) => *b,
                    other => return Err(format!("condition must be an i1, got {other}")),
                };
                arg(if condition { 1 } else { 2 })?.clone()
            }
            "index_cast" | "extsi" | "trunci" => {
                let (value, _) = integer(arg(0)?)?;
                from_integer(value)?
            }
            "index_castui" | "extui" => {
                let (value, width) = integer(arg(0)?)?;
                from_integer(unsigned(value, width) as i64)?
            }
            "fptoui" => {
                // Truncated toward zero and saturated at the unsigned
                // limits (NaN gives 0), then read as the signless integer
                // of that width: 2^31 as i32 is the bits of -2^31.
                let x = match arg(0)? {
                    Value::Scalar(s) => s.as_f64(),
                    other => return Err(format!("expected a float, got {other}")),
                };
                Value::Scalar(match self.result {
                    ValueType::Scalar(ElementType::I32) => Scalar::I32(x as u32 as i32),
                    ValueType::Scalar(ElementType::I64) => Scalar::I64(x as u64 as i64),
                    ValueType::Scalar(ElementType::I1) => Scalar::I1(x >= 1.0),
                    _ => return Err("result must be an integer scalar".into()),
                })
            }
            "sitofp" | "uitofp" | "extf" | "truncf" | "fptosi" => {
                let ValueType::Scalar(to) = self.result else {
                    return Err("result must be a scalar".into());
                };
                let from = match (operation, arg(0)?) {
                    ("uitofp", value) => {
                        let (v, width) = integer(value)?;
                        Scalar::F64(unsigned(v, width) as f64)
                    }
                    (_, Value::Scalar(s)) => *s,
                    (_, Value::Index(i)) => Scalar::I64(*i),
                    (_, other) => return Err(format!("expected a scalar, got {other}")),
                };
                Value::Scalar(from.cast(to))
            }
            other => return Err(format!("the interpreter does not run 'arith.{other}'")),
        };
        self.result.check(&value)?;
        Ok(value)
    }
}

fn predicate(op: OperationRef) -> Result<i64, Error> {
    let attribute = op
        .attribute("predicate")
        .map_err(|_| error(op, "has no predicate"))?;
    // SAFETY: `attribute` is live; the getter is only called on integers.
    unsafe {
        if mlir_sys::mlirAttributeIsAInteger(attribute.to_raw()) {
            Ok(mlir_sys::mlirIntegerAttrGetValueInt(attribute.to_raw()))
        } else {
            Err(error(op, "predicate is not an integer"))
        }
    }
}

fn constant(op: OperationRef) -> Result<Value, Error> {
    let attribute = op.attribute("value").map_err(|_| error(op, "has no value"))?;
    match result_type(op)? {
        ValueType::Index => scalar_attribute_any(attribute)
            .map(|s| Value::Index(s.as_i64()))
            .ok_or_else(|| error(op, "value is not an integer")),
        ValueType::Scalar(_) => scalar_attribute(attribute)
            .map(Value::Scalar)
            .ok_or_else(|| error(op, "value is not a number")),
        ValueType::Tensor(shape, element) => {
            let shape: Vec<usize> = shape.into_iter().map(|d| d.unwrap_or(0)).collect();
            Ok(Value::tensor(dense(op, attribute, shape, element)?))
        }
    }
}

/// An integer attribute of any integer or index type.
fn scalar_attribute_any(attribute: Attribute) -> Option<Scalar> {
    // SAFETY: `attribute` is live; the getter is only called on integers.
    unsafe {
        mlir_sys::mlirAttributeIsAInteger(attribute.to_raw())
            .then(|| Scalar::I64(mlir_sys::mlirIntegerAttrGetValueInt(attribute.to_raw())))
    }
}

/// Reads a `dense<...>` attribute.
pub(crate) fn dense(
    op: OperationRef,
    attribute: Attribute,
    shape: Vec<usize>,
    element: ElementType,
) -> Result<Tensor, Error> {
    let raw = attribute.to_raw();
    let len = crate::tensor::checked_len(&shape).map_err(|e| error(op, e))?;
    // SAFETY: `raw` is a live dense elements attribute (checked first) of
    // `element`s with `len` values; every getter matches the element type
    // and stays below `len`.
    let buffer = unsafe {
        if !mlir_sys::mlirAttributeIsADenseElements(raw) {
            return Err(error(op, "only dense<...> tensor constants are supported"));
        }
        let splat = mlir_sys::mlirDenseElementsAttrIsSplat(raw);
        let at = |i: usize| if splat { 0 } else { i as isize };
        match element {
            ElementType::F32 => Buffer::F32(
                (0..len)
                    .map(|i| mlir_sys::mlirDenseElementsAttrGetFloatValue(raw, at(i)))
                    .collect(),
            ),
            ElementType::F64 => Buffer::F64(
                (0..len)
                    .map(|i| mlir_sys::mlirDenseElementsAttrGetDoubleValue(raw, at(i)))
                    .collect(),
            ),
            ElementType::I32 => Buffer::I32(
                (0..len)
                    .map(|i| mlir_sys::mlirDenseElementsAttrGetInt32Value(raw, at(i)))
                    .collect(),
            ),
            ElementType::I64 => Buffer::I64(
                (0..len)
                    .map(|i| mlir_sys::mlirDenseElementsAttrGetInt64Value(raw, at(i)))
                    .collect(),
            ),
            ElementType::I1 => Buffer::I1(
                (0..len)
                    .map(|i| mlir_sys::mlirDenseElementsAttrGetBoolValue(raw, at(i)))
                    .collect(),
            ),
        }
    };
    Tensor::new(shape, buffer).ok_or_else(|| error(op, "constant does not fill its shape"))
}
