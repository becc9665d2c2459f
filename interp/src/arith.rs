//! `arith` ops on scalars and indices.
//!
//! Integers compute in i64 and wrap to their width (`i1`, `i32`, `i64`,
//! `index` as i64), so `arith.addi` on `i32` wraps exactly as the hardware
//! would. Division by zero is an error, as for `meta.binary`.

use crate::{
    error::{Error, eval_error as error, unsupported},
    scalar::{self, Scalar},
    tensor::{Buffer, Tensor},
    value::{Value, ValueType, check_result, scalar_attribute},
};
use jitc_dialect::kinds::{BinaryKind, ElementType, UnaryKind};
use melior::ir::{Attribute, AttributeLike, OperationRef, operation::OperationLike};

/// An integer operand: value (sign-extended) and width in bits.
fn integer(op: OperationRef, value: &Value) -> Result<(i64, u32), Error> {
    match value {
        Value::Index(i) => Ok((*i, 64)),
        Value::Scalar(Scalar::I1(b)) => Ok((*b as i64, 1)),
        Value::Scalar(Scalar::I32(v)) => Ok((*v as i64, 32)),
        Value::Scalar(Scalar::I64(v)) => Ok((*v, 64)),
        other => Err(error(op, format!("expected an integer or index, got {other}"))),
    }
}

fn float(op: OperationRef, value: &Value) -> Result<Scalar, Error> {
    match value {
        Value::Scalar(s) if s.element_type().is_float() => Ok(*s),
        other => Err(error(op, format!("expected a float, got {other}"))),
    }
}

/// Builds a value of the op's result type from an integer.
fn from_integer(op: OperationRef, value: i64) -> Result<Value, Error> {
    match result_type(op)? {
        ValueType::Index => Ok(Value::Index(value)),
        ValueType::Scalar(ElementType::I1) => Ok(Value::Scalar(Scalar::I1(value & 1 != 0))),
        ValueType::Scalar(element) => Ok(Value::Scalar(Scalar::I64(value).cast(element))),
        other => Err(error(op, format!("result type {other} is not an integer"))),
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
    let name = op.name().as_string_ref().as_str().unwrap_or("").to_owned();
    let operation = name.trim_start_matches("arith.");
    let arg = |i: usize| {
        args.get(i)
            .ok_or_else(|| error(op, format!("missing operand {i}")))
    };
    let value = match operation {
        "constant" => constant(op)?,
        "addi" | "subi" | "muli" | "divsi" | "remsi" | "divui" | "remui" | "floordivsi" | "ceildivsi"
        | "maxsi" | "minsi" | "andi" | "ori" | "xori" => {
            let ((a, width), (b, _)) = (integer(op, arg(0)?)?, integer(op, arg(1)?)?);
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
                return Err(error(op, "integer division by zero"));
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
            from_integer(op, result)?
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
                scalar::binary(kind, float(op, arg(0)?)?, float(op, arg(1)?)?).map_err(|e| error(op, e))?,
            )
        }
        "negf" => {
            let x = float(op, arg(0)?)?;
            Value::Scalar(scalar::unary(UnaryKind::Neg, x, x.element_type()).map_err(|e| error(op, e))?)
        }
        "cmpi" => {
            let ((a, width), (b, _)) = (integer(op, arg(0)?)?, integer(op, arg(1)?)?);
            let (ua, ub) = (unsigned(a, width), unsigned(b, width));
            let holds = match predicate(op)? {
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
                p => return Err(error(op, format!("unknown predicate {p}"))),
            };
            Value::Scalar(Scalar::I1(holds))
        }
        "cmpf" => {
            let (a, b) = (float(op, arg(0)?)?.as_f64(), float(op, arg(1)?)?.as_f64());
            let unordered = a.is_nan() || b.is_nan();
            let holds = match predicate(op)? {
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
                p => return Err(error(op, format!("unknown predicate {p}"))),
            };
            Value::Scalar(Scalar::I1(holds))
        }
        "select" => {
            let condition = match arg(0)? {
                Value::Scalar(Scalar::I1(b)) => *b,
                other => return Err(error(op, format!("condition must be an i1, got {other}"))),
            };
            arg(if condition { 1 } else { 2 })?.clone()
        }
        "index_cast" | "extsi" | "trunci" => {
            let (value, _) = integer(op, arg(0)?)?;
            from_integer(op, value)?
        }
        "index_castui" | "extui" => {
            let (value, width) = integer(op, arg(0)?)?;
            from_integer(op, unsigned(value, width) as i64)?
        }
        "sitofp" | "uitofp" | "extf" | "truncf" | "fptosi" | "fptoui" => {
            let ValueType::Scalar(to) = result_type(op)? else {
                return Err(error(op, "result must be a scalar"));
            };
            let from = match (operation, arg(0)?) {
                ("uitofp", value) => {
                    let (v, width) = integer(op, value)?;
                    Scalar::F64(unsigned(v, width) as f64)
                }
                (_, Value::Scalar(s)) => *s,
                (_, Value::Index(i)) => Scalar::I64(*i),
                (_, other) => return Err(error(op, format!("expected a scalar, got {other}"))),
            };
            Value::Scalar(from.cast(to))
        }
        _ => return Err(unsupported(op)),
    };
    check_result(op, 0, &value)?;
    Ok(value)
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
