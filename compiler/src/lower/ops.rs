//! The body of a lowered kernel: affine index arithmetic, reindex loads,
//! element-wise ops and reductions, with the interpreter's semantics.

use super::{Emitter, emit_gep, memory, scalar};
use crate::Error;
use jitc_dialect::{
    kinds::{BinaryKind, ElementType, ReduceKind, UnaryKind},
    ops::{BinaryOp, IntegerSet, ReindexOp, ReindexReduceOp, UnaryOp, tensor_type},
};
use melior::ir::{
    AffineExpr, AffineMap, BlockLike, BlockRef, OperationRef, RegionLike, Type, Value, ValueLike,
    operation::OperationLike, r#type::ShapedTypeLike,
};
use std::collections::HashMap;

/// A kernel argument, lowered.
pub enum Arg<'c, 'a> {
    /// A tensor: its data pointer, shape and element type.
    Tensor {
        pointer: Value<'c, 'a>,
        shape: Vec<usize>,
        element: ElementType,
    },
    /// An index.
    Index(Value<'c, 'a>),
}

fn name(op: OperationRef) -> String {
    jitc_dialect::verify::op_name(op)
}

fn key(value: Value) -> usize {
    value.to_raw().ptr as usize
}

fn error(message: impl Into<String>) -> Error {
    Error::Lowering(message.into())
}

/// Whether every op of the kernel can be lowered; `Err` says why not.
pub fn check(kernel: OperationRef) -> Result<(), String> {
    let body = kernel
        .region(0)
        .ok()
        .and_then(|r| r.first_block())
        .ok_or("the kernel has no body")?;
    let mut next = body.first_operation();
    while let Some(op) = next {
        next = op.next_in_block();
        match name(op).as_str() {
            "meta.reindex"
            | "meta.reindex_reduce"
            | "meta.unary"
            | "meta.binary"
            | "meta.ternary"
            | "func.return" => {}
            "arith.constant" if crate::fusion::kind_of(op) == crate::fusion::NodeKind::Constant => {}
            other => return Err(format!("'{other}' in a kernel is not lowered yet")),
        }
        for result in op.results() {
            if let Some(tensor) = tensor_type(result.into())
                && (0..tensor.rank()).any(|d| {
                    tensor
                        .dim_size(d)
                        .is_ok_and(|s| s == melior::ir::r#type::DimSize::Dynamic)
                })
            {
                return Err("dynamic shapes are not lowered yet".into());
            }
        }
    }
    Ok(())
}

fn strides(shape: &[usize]) -> Vec<i64> {
    let mut strides = vec![1i64; shape.len()];
    for d in (0..shape.len().saturating_sub(1)).rev() {
        strides[d] = strides[d + 1] * shape[d + 1] as i64;
    }
    strides
}

struct Body<'c, 'a, 'k> {
    at: Emitter<'c, 'a>,
    ivs: Vec<Value<'c, 'a>>,
    linear: Value<'c, 'a>,
    arguments: &'k [(Value<'c, 'k>, Arg<'c, 'a>)],
    scalars: HashMap<usize, Value<'c, 'a>>,
    status: Value<'c, 'a>,
}

impl<'c, 'a> Body<'c, 'a, '_> {
    fn argument(&self, value: Value) -> Option<&Arg<'c, 'a>> {
        self.arguments
            .iter()
            .find(|(v, _)| key(*v) == key(value))
            .map(|(_, a)| a)
    }

    fn index_of(&self, value: Value) -> Result<Value<'c, 'a>, Error> {
        match self.argument(value) {
            Some(Arg::Index(index)) => Ok(*index),
            _ => Err(error("an index operand is not a kernel argument")),
        }
    }

    /// The element of `value` at the current point of the domain.
    fn scalar(&mut self, value: Value) -> Result<Value<'c, 'a>, Error> {
        if let Some(known) = self.scalars.get(&key(value)) {
            return Ok(*known);
        }
        let Some(Arg::Tensor { pointer, element, .. }) = self.argument(value) else {
            return Err(error(
                "an operand is neither computed in the kernel nor a tensor argument",
            ));
        };
        let (pointer, element) = (*pointer, *element);
        let loaded = self.load(pointer, self.linear, element)?;
        self.scalars.insert(key(value), loaded);
        Ok(loaded)
    }

    fn load(
        &self,
        pointer: Value<'c, '_>,
        offset: Value<'c, '_>,
        element: ElementType,
    ) -> Result<Value<'c, 'a>, Error> {
        load_at(&self.at, pointer, offset, element)
    }

    /// An affine expression of the domain indices and `symbols`.
    fn affine(&self, expr: AffineExpr<'c>, symbols: &[Value<'c, 'a>]) -> Result<Value<'c, 'a>, Error> {
        let at = &self.at;
        let index = Type::index(at.context);
        if expr.is_dim() {
            return self
                .ivs
                .get(expr.dim_position())
                .copied()
                .ok_or_else(|| error("a map dimension has no loop"));
        }
        if expr.is_symbol() {
            return symbols
                .get(expr.symbol_position())
                .copied()
                .ok_or_else(|| error("a map symbol has no operand"));
        }
        if expr.is_constant() {
            return at.index(expr.constant_value());
        }
        let (a, b) = (
            self.affine(expr.lhs(), symbols)?,
            self.affine(expr.rhs(), symbols)?,
        );
        if expr.is_add() {
            at.value("arith.addi", &[a, b], index)
        } else if expr.is_mul() {
            at.value("arith.muli", &[a, b], index)
        } else if expr.is_floor_div() {
            at.value("arith.floordivsi", &[a, b], index)
        } else if expr.is_ceil_div() {
            at.value("arith.ceildivsi", &[a, b], index)
        } else {
            // `mod` is never negative in the affine dialect.
            let r = at.value("arith.remsi", &[a, b], index)?;
            let zero = at.index(0)?;
            let negative = at.cmpi(2, r, zero)?;
            let adjusted = at.value("arith.addi", &[r, b], index)?;
            at.select(negative, adjusted, r)
        }
    }

    /// The map's results at the current point, and whether they are inside
    /// `shape` and outside every set of `conditions`.
    fn indices(
        &self,
        map: AffineMap<'c>,
        symbols: &[Value<'c, 'a>],
        shape: &[usize],
        conditions: Option<Result<Vec<IntegerSet<'c>>, ()>>,
    ) -> Result<(Vec<Value<'c, 'a>>, Value<'c, 'a>), Error> {
        let at = &self.at;
        let mut inside = at.int(at.i1(), 1)?;
        let mut indices = Vec::new();
        for (k, &extent) in shape.iter().enumerate() {
            let index = self.affine(map.result(k).map_err(|_| error("map result"))?, symbols)?;
            let (zero, bound) = (at.index(0)?, at.index(extent as i64)?);
            let low = at.cmpi(5, index, zero)?;
            let high = at.cmpi(2, index, bound)?;
            inside = at.value("arith.andi", &[inside, low], at.i1())?;
            inside = at.value("arith.andi", &[inside, high], at.i1())?;
            indices.push(index);
        }
        let sets = match conditions {
            None => Vec::new(),
            Some(Ok(sets)) => sets,
            Some(Err(())) => return Err(error("malformed overflow_conditions")),
        };
        for set in sets {
            let mut holds = at.int(at.i1(), 1)?;
            for (expr, equality) in set.constraints() {
                let value = self.affine(expr, symbols)?;
                let zero = at.index(0)?;
                let satisfied = at.cmpi(if equality { 0 } else { 5 }, value, zero)?;
                holds = at.value("arith.andi", &[holds, satisfied], at.i1())?;
            }
            let outside = at.value("arith.xori", &[holds, at.int(at.i1(), 1)?], at.i1())?;
            inside = at.value("arith.andi", &[inside, outside], at.i1())?;
        }
        Ok((indices, inside))
    }

    /// `Σ index_k * stride_k` as an i64, with indices replaced by 0 where
    /// `inside` is false, so the address is always valid.
    fn offset(
        &self,
        indices: &[Value<'c, 'a>],
        inside: Value<'c, 'a>,
        shape: &[usize],
    ) -> Result<Value<'c, 'a>, Error> {
        let at = &self.at;
        let index = Type::index(at.context);
        let mut offset = at.index(0)?;
        for (value, stride) in indices.iter().zip(strides(shape)) {
            let clamped = at.select(inside, *value, at.index(0)?)?;
            let term = at.value("arith.muli", &[clamped, at.index(stride)?], index)?;
            offset = at.value("arith.addi", &[offset, term], index)?;
        }
        Ok(offset)
    }
}

fn load_at<'c, 'a>(
    at: &Emitter<'c, 'a>,
    pointer: Value<'c, '_>,
    offset: Value<'c, '_>,
    element: ElementType,
) -> Result<Value<'c, 'a>, Error> {
    let i64_type: Type = melior::ir::r#type::IntegerType::new(at.context, 64).into();
    let offset = if offset.r#type() == i64_type {
        offset.into_value_ref()
    } else {
        at.value("arith.index_cast", &[offset], i64_type)?
    };
    let address = emit_gep(at, pointer, offset, memory(at.context, element))?;
    let loaded = at.value("llvm.load", &[address], memory(at.context, element))?;
    if element == ElementType::I1 {
        at.value("arith.trunci", &[loaded], at.i1())
    } else {
        Ok(loaded)
    }
}

fn store_at<'c>(
    at: &Emitter<'c, '_>,
    pointer: Value<'c, '_>,
    offset: Value<'c, '_>,
    value: Value<'c, '_>,
    element: ElementType,
) -> Result<(), Error> {
    let i64_type: Type = melior::ir::r#type::IntegerType::new(at.context, 64).into();
    let offset = at.value("arith.index_cast", &[offset], i64_type)?;
    let address = emit_gep(at, pointer, offset, memory(at.context, element))?;
    let value = if element == ElementType::I1 {
        at.value("arith.extui", &[value], memory(at.context, element))?
    } else {
        value.into_value_ref()
    };
    at.op("llvm.store", &[value, address], &[], &[]).map(|_| ())
}

trait IntoValueRef<'c, 'a> {
    fn into_value_ref(self) -> Value<'c, 'a>;
}

impl<'c, 'a> IntoValueRef<'c, 'a> for Value<'c, '_> {
    fn into_value_ref(self) -> Value<'c, 'a> {
        // SAFETY: the value is live for as long as the function being built.
        unsafe { Value::from_raw(self.to_raw()) }
    }
}

/// A constant of `element` from a number.
fn constant<'c, 'a>(
    at: &Emitter<'c, 'a>,
    element: ElementType,
    value: f64,
    integer: i64,
) -> Result<Value<'c, 'a>, Error> {
    let r#type = scalar(at.context, element);
    if element.is_float() {
        at.float(r#type, value)
    } else {
        at.int(r#type, integer)
    }
}

fn identity<'c, 'a>(
    at: &Emitter<'c, 'a>,
    kind: ReduceKind,
    element: ElementType,
) -> Result<Value<'c, 'a>, Error> {
    let (min, max) = match element {
        ElementType::I32 => (i32::MIN as i64, i32::MAX as i64),
        _ => (i64::MIN, i64::MAX),
    };
    match kind {
        ReduceKind::Add | ReduceKind::Or => constant(at, element, 0.0, 0),
        ReduceKind::Mul => constant(at, element, 1.0, 1),
        ReduceKind::Max => constant(at, element, f64::NEG_INFINITY, min),
        ReduceKind::Min => constant(at, element, f64::INFINITY, max),
        ReduceKind::And => constant(at, element, 0.0, -1),
    }
}

/// Emits the whole kernel: identity fills, the loop nest and its body.
pub fn emit_kernel<'c, 'a>(
    top: &Emitter<'c, 'a>,
    kernel_body: BlockRef<'c, '_>,
    arguments: &[(Value<'c, '_>, Arg<'c, 'a>)],
    outputs: &[(Value<'c, 'a>, Vec<usize>, ElementType)],
    status: Value<'c, 'a>,
    domain: &[i64],
    outer_range: Option<(Value<'c, 'a>, Value<'c, 'a>)>,
) -> Result<(), Error> {
    let mut ops = Vec::new();
    let mut next = kernel_body.first_operation();
    while let Some(op) = next {
        next = op.next_in_block();
        ops.push(op);
    }
    let terminator = ops.pop().ok_or_else(|| error("an empty kernel"))?;
    let output_of: HashMap<usize, usize> = terminator
        .operands()
        .enumerate()
        .map(|(j, v)| (key(v), j))
        .collect();

    // 2. Reductions start from their identity.
    for op in &ops {
        let Some(reduce) = ReindexReduceOp::cast(*op) else {
            continue;
        };
        let Some(&j) = reduce.result().and_then(|r| output_of.get(&key(r))) else {
            continue;
        };
        let (pointer, shape, element) = &outputs[j];
        let kind = reduce.kind().ok_or_else(|| error("unknown reduction"))?;
        let (fill, i) = top.for_loop(shape.iter().product::<usize>() as i64)?;
        let value = identity(&fill, kind, *element)?;
        store_at(&fill, *pointer, i, value, *element)?;
        fill.finish()?;
    }

    // 3. The loop nest, outermost dimension first.
    let mut levels = Vec::new();
    let mut at = *top;
    let mut ivs = Vec::new();
    for (level, &extent) in domain.iter().enumerate() {
        if extent < 0 {
            return Err(error("dynamic domain"));
        }
        // The outermost loop runs over the part [begin, end) the caller
        // gives, so the runtime can split it across threads.
        let (inner, iv) = match (level, outer_range) {
            (0, Some((begin, end))) => at.for_range(begin, end)?,
            _ => at.for_loop(extent)?,
        };
        levels.push(inner);
        ivs.push(iv);
        at = inner;
    }
    let shape: Vec<usize> = domain.iter().map(|&d| d as usize).collect();
    let index = Type::index(at.context);
    let mut linear = at.index(0)?;
    for (iv, stride) in ivs.iter().zip(strides(&shape)) {
        let term = at.value("arith.muli", &[*iv, at.index(stride)?], index)?;
        linear = at.value("arith.addi", &[linear, term], index)?;
    }
    // SAFETY: `arguments` refers to kernel values that outlive this call.
    let arguments: &[(Value<'c, '_>, Arg<'c, 'a>)] = unsafe { std::mem::transmute(arguments) };
    let mut body = Body {
        at,
        ivs,
        linear,
        arguments,
        scalars: HashMap::new(),
        status,
    };

    // 4. Each op of the kernel at the current point.
    for op in &ops {
        let result = op.result(0).ok().map(Value::from);
        let value = emit_op(&mut body, *op, &output_of, outputs)?;
        // 5. Results that leave the kernel are stored at the loop index.
        if let (Some(value), Some(result)) = (value, result) {
            body.scalars.insert(key(result), value);
            if let Some(&j) = output_of.get(&key(result)) {
                let (pointer, _, element) = &outputs[j];
                store_at(&body.at, *pointer, body.linear, value, *element)?;
            }
        }
    }
    for level in levels.iter().rev() {
        level.finish()?;
    }
    Ok(())
}

/// Emits one op; returns its element value, `None` for reductions.
fn emit_op<'c, 'a>(
    body: &mut Body<'c, 'a, '_>,
    op: OperationRef<'c, '_>,
    output_of: &HashMap<usize, usize>,
    outputs: &[(Value<'c, 'a>, Vec<usize>, ElementType)],
) -> Result<Option<Value<'c, 'a>>, Error> {
    let at = body.at;
    let element_of =
        |v: Value| super::element_of(v).ok_or_else(|| error("an operand is not a supported tensor"));
    match name(op).as_str() {
        "arith.constant" => {
            let result: Value = op.result(0).map_err(|_| error("constant"))?.into();
            let element = element_of(result)?;
            let attribute = op.attribute("value").map_err(|_| error("constant"))?;
            // SAFETY: the attribute is a splat dense elements attribute
            // (checked by `check`) of `element`s.
            let (value, integer) = unsafe {
                let raw = melior::ir::AttributeLike::to_raw(&attribute);
                match element {
                    ElementType::F32 => (mlir_sys::mlirDenseElementsAttrGetFloatSplatValue(raw) as f64, 0),
                    ElementType::F64 => (mlir_sys::mlirDenseElementsAttrGetDoubleSplatValue(raw), 0),
                    ElementType::I32 => (0.0, mlir_sys::mlirDenseElementsAttrGetInt32SplatValue(raw) as i64),
                    ElementType::I64 => (0.0, mlir_sys::mlirDenseElementsAttrGetInt64SplatValue(raw)),
                    ElementType::I1 => (0.0, mlir_sys::mlirDenseElementsAttrGetBoolSplatValue(raw) as i64),
                }
            };
            constant(&at, element, value, integer).map(Some)
        }
        "meta.reindex" => {
            let reindex = ReindexOp::cast(op).ok_or_else(|| error("reindex"))?;
            let input = reindex.input().ok_or_else(|| error("reindex input"))?;
            let Some(Arg::Tensor {
                pointer,
                shape,
                element,
            }) = body.argument(input)
            else {
                return Err(error(
                    "a reindex reads a value computed in its own kernel (rule 1)",
                ));
            };
            let (pointer, shape, element) = (*pointer, shape.clone(), *element);
            let symbols = reindex
                .index_operands()
                .into_iter()
                .map(|v| body.index_of(v))
                .collect::<Result<Vec<_>, _>>()?;
            let overflow = match reindex.overflow_value() {
                Some(attribute) => {
                    let raw = melior::ir::AttributeLike::to_raw(&attribute);
                    // SAFETY: the verifier checked it is a number of `element`.
                    let (value, integer) = unsafe {
                        if mlir_sys::mlirAttributeIsAFloat(raw) {
                            (mlir_sys::mlirFloatAttrGetValueDouble(raw), 0)
                        } else {
                            (0.0, mlir_sys::mlirIntegerAttrGetValueInt(raw))
                        }
                    };
                    constant(&at, element, value, integer)?
                }
                None => constant(&at, element, 0.0, 0)?,
            };
            if shape.contains(&0) {
                return Ok(Some(overflow));
            }
            let map = reindex.indices().ok_or_else(|| error("reindex map"))?;
            let (indices, inside) = body.indices(map, &symbols, &shape, reindex.overflow_conditions())?;
            let offset = body.offset(&indices, inside, &shape)?;
            let loaded = body.load(pointer, offset, element)?;
            at.select(inside, loaded, overflow).map(Some)
        }
        "meta.reindex_reduce" => {
            let reduce = ReindexReduceOp::cast(op).ok_or_else(|| error("reduce"))?;
            let result = reduce.result().ok_or_else(|| error("reduce result"))?;
            let Some(&j) = output_of.get(&key(result)) else {
                return Ok(None);
            };
            let (pointer, shape, element) = (outputs[j].0, outputs[j].1.clone(), outputs[j].2);
            let kind = reduce.kind().ok_or_else(|| error("unknown reduction"))?;
            let x = body.scalar(reduce.input().ok_or_else(|| error("reduce input"))?)?;
            let symbols = reduce
                .index_operands()
                .into_iter()
                .map(|v| body.index_of(v))
                .collect::<Result<Vec<_>, _>>()?;
            let map = reduce.indices().ok_or_else(|| error("reduce map"))?;
            let (indices, inside) = body.indices(map, &symbols, &shape, reduce.overflow_conditions())?;
            let offset = body.offset(&indices, inside, &shape)?;
            let then = at.if_then(inside)?;
            let acc = load_at(&then, pointer, offset, element)?;
            let combined = combine(&then, kind, acc, x, element)?;
            store_at(&then, pointer, offset, combined, element)?;
            then.finish()?;
            Ok(None)
        }
        "meta.unary" => {
            let unary = UnaryOp::cast(op).ok_or_else(|| error("unary"))?;
            let input = unary.input().ok_or_else(|| error("unary input"))?;
            let (from, to) = (
                element_of(input)?,
                element_of(unary.result().ok_or_else(|| error("unary result"))?)?,
            );
            let x = body.scalar(input)?;
            unary_op(&at, unary.kind().ok_or_else(|| error("unary kind"))?, x, from, to).map(Some)
        }
        "meta.binary" => {
            let binary = BinaryOp::cast(op).ok_or_else(|| error("binary"))?;
            let (lhs, rhs) = (
                binary.lhs().ok_or_else(|| error("lhs"))?,
                binary.rhs().ok_or_else(|| error("rhs"))?,
            );
            let element = element_of(lhs)?;
            let (a, b) = (body.scalar(lhs)?, body.scalar(rhs)?);
            let kind = binary.kind().ok_or_else(|| error("binary kind"))?;
            binary_op(&at, kind, a, b, element, body.status).map(Some)
        }
        "meta.ternary" => {
            let c = body.scalar(op.operand(0).map_err(|_| error("select"))?)?;
            let a = body.scalar(op.operand(1).map_err(|_| error("select"))?)?;
            let b = body.scalar(op.operand(2).map_err(|_| error("select"))?)?;
            at.select(c, a, b).map(Some)
        }
        other => Err(error(format!("'{other}' is not lowered"))),
    }
}

fn unary_op<'c, 'a>(
    at: &Emitter<'c, 'a>,
    kind: UnaryKind,
    x: Value<'c, 'a>,
    from: ElementType,
    to: ElementType,
) -> Result<Value<'c, 'a>, Error> {
    let t = x.r#type();
    let math = |name: &str| at.value(name, &[x], t);
    let one = || constant(at, from, 1.0, 1);
    match kind {
        UnaryKind::Neg if from.is_float() => math("arith.negf"),
        UnaryKind::Neg => at.value("arith.subi", &[constant(at, from, 0.0, 0)?, x], t),
        UnaryKind::Abs if from.is_float() => math("math.absf"),
        UnaryKind::Abs => math("math.absi"),
        UnaryKind::Exp => math("math.exp"),
        UnaryKind::Log => math("math.log"),
        UnaryKind::Sqrt => math("math.sqrt"),
        UnaryKind::Rsqrt => {
            let root = math("math.sqrt")?;
            at.value("arith.divf", &[one()?, root], t)
        }
        UnaryKind::Sin => math("math.sin"),
        UnaryKind::Cos => math("math.cos"),
        UnaryKind::Tanh => math("math.tanh"),
        UnaryKind::Erf => math("math.erf"),
        UnaryKind::Sigmoid => {
            let negated = math("arith.negf")?;
            let e = at.value("math.exp", &[negated], t)?;
            let denominator = at.value("arith.addf", &[one()?, e], t)?;
            at.value("arith.divf", &[one()?, denominator], t)
        }
        UnaryKind::Floor => math("math.floor"),
        UnaryKind::Ceil => math("math.ceil"),
        UnaryKind::Round => math("math.round"),
        UnaryKind::Not => at.value("arith.xori", &[x, constant(at, from, 0.0, -1)?], t),
        UnaryKind::Cast => cast(at, x, from, to),
    }
}

fn cast<'c, 'a>(
    at: &Emitter<'c, 'a>,
    x: Value<'c, 'a>,
    from: ElementType,
    to: ElementType,
) -> Result<Value<'c, 'a>, Error> {
    use ElementType::*;
    let target = scalar(at.context, to);
    if from == to {
        return Ok(x);
    }
    match (from, to) {
        (_, I1) if from.is_float() => at.cmpf(13, x, constant(at, from, 0.0, 0)?),
        (_, I1) => at.cmpi(1, x, constant(at, from, 0.0, 0)?),
        (I1, _) if to.is_float() => at.value("arith.uitofp", &[x], target),
        (I1, _) => at.value("arith.extui", &[x], target),
        (F32, F64) => at.value("arith.extf", &[x], target),
        (F64, F32) => at.value("arith.truncf", &[x], target),
        (I32, I64) => at.value("arith.extsi", &[x], target),
        (I64, I32) => at.value("arith.trunci", &[x], target),
        (_, F32 | F64) => at.value("arith.sitofp", &[x], target),
        _ => saturating_float_to_int(at, x, from, to),
    }
}

/// Float to integer as the interpreter casts: truncate toward zero,
/// saturate at the integer's limits, NaN to 0. Plain `fptosi` would give
/// poison outside the range, so out-of-range inputs never reach it.
fn saturating_float_to_int<'c, 'a>(
    at: &Emitter<'c, 'a>,
    x: Value<'c, 'a>,
    from: ElementType,
    to: ElementType,
) -> Result<Value<'c, 'a>, Error> {
    let (bits, min, max) = match to {
        ElementType::I32 => (31, i32::MIN as i64, i32::MAX as i64),
        _ => (63, i64::MIN, i64::MAX),
    };
    let limit = 2f64.powi(bits);
    let (high, low, zero) = (
        constant(at, from, limit, 0)?,
        constant(at, from, -limit, 0)?,
        constant(at, from, 0.0, 0)?,
    );
    let is_nan = at.cmpf(14, x, x)?;
    let too_big = at.cmpf(3, x, high)?;
    let too_small = at.cmpf(4, x, low)?;
    let i1 = at.i1();
    let outside = at.value("arith.ori", &[is_nan, too_big], i1)?;
    let outside = at.value("arith.ori", &[outside, too_small], i1)?;
    let safe = at.select(outside, zero, x)?;
    let converted = at.value("arith.fptosi", &[safe], scalar(at.context, to))?;
    let converted = at.select(too_big, constant(at, to, 0.0, max)?, converted)?;
    at.select(too_small, constant(at, to, 0.0, min)?, converted)
}

fn binary_op<'c, 'a>(
    at: &Emitter<'c, 'a>,
    kind: BinaryKind,
    a: Value<'c, 'a>,
    b: Value<'c, 'a>,
    element: ElementType,
    status: Value<'c, 'a>,
) -> Result<Value<'c, 'a>, Error> {
    let t = a.r#type();
    let float = element.is_float();
    let op = |name: &str| at.value(name, &[a, b], t);
    if kind.is_comparison() {
        let (float_predicate, signed, unsigned) = match kind {
            BinaryKind::Eq => (1, 0, 0),
            BinaryKind::Ne => (13, 1, 1),
            BinaryKind::Lt => (4, 2, 6),
            BinaryKind::Le => (5, 3, 7),
            BinaryKind::Gt => (2, 4, 8),
            _ => (3, 5, 9),
        };
        return if float {
            at.cmpf(float_predicate, a, b)
        } else if element == ElementType::I1 {
            at.cmpi(unsigned, a, b)
        } else {
            at.cmpi(signed, a, b)
        };
    }
    match kind {
        BinaryKind::Add => op(if float { "arith.addf" } else { "arith.addi" }),
        BinaryKind::Sub => op(if float { "arith.subf" } else { "arith.subi" }),
        BinaryKind::Mul => op(if float { "arith.mulf" } else { "arith.muli" }),
        BinaryKind::Div if float => op("arith.divf"),
        BinaryKind::Mod if float => op("arith.remf"),
        BinaryKind::Div | BinaryKind::Mod => integer_division(at, kind, a, b, element, status),
        BinaryKind::Pow => op("math.powf"),
        BinaryKind::Max => op(if float { "arith.maximumf" } else { "arith.maxsi" }),
        BinaryKind::Min => op(if float { "arith.minimumf" } else { "arith.minsi" }),
        BinaryKind::And => op("arith.andi"),
        BinaryKind::Or => op("arith.ori"),
        _ => op("arith.xori"),
    }
}

/// Integer `div`/`mod` without undefined behaviour: a zero divisor sets the
/// status word (the runtime reports it as the interpreter does) and `MIN
/// div -1` wraps, `MIN mod -1` is 0.
fn integer_division<'c, 'a>(
    at: &Emitter<'c, 'a>,
    kind: BinaryKind,
    a: Value<'c, 'a>,
    b: Value<'c, 'a>,
    element: ElementType,
    status: Value<'c, 'a>,
) -> Result<Value<'c, 'a>, Error> {
    let t = a.r#type();
    let (zero, one, minus_one) = (
        constant(at, element, 0.0, 0)?,
        constant(at, element, 1.0, 1)?,
        constant(at, element, 0.0, -1)?,
    );
    let is_zero = at.cmpi(0, b, zero)?;
    let flag = at.if_then(is_zero)?;
    let i32_type: Type = melior::ir::r#type::IntegerType::new(at.context, 32).into();
    let set = flag.int(i32_type, 1)?;
    flag.op("llvm.store", &[set, status], &[], &[])?;
    flag.finish()?;
    let is_minus_one = at.cmpi(0, b, minus_one)?;
    let unsafe_divisor = at.value("arith.ori", &[is_zero, is_minus_one], at.i1())?;
    let divisor = at.select(unsafe_divisor, one, b)?;
    if kind == BinaryKind::Div {
        let quotient = at.value("arith.divsi", &[a, divisor], t)?;
        let negated = at.value("arith.subi", &[zero, a], t)?;
        at.select(is_minus_one, negated, quotient)
    } else {
        let remainder = at.value("arith.remsi", &[a, divisor], t)?;
        at.select(is_minus_one, zero, remainder)
    }
}

fn combine<'c, 'a>(
    at: &Emitter<'c, 'a>,
    kind: ReduceKind,
    acc: Value<'c, 'a>,
    x: Value<'c, '_>,
    element: ElementType,
) -> Result<Value<'c, 'a>, Error> {
    let float = element.is_float();
    let name = match kind {
        ReduceKind::Add => {
            if float {
                "arith.addf"
            } else {
                "arith.addi"
            }
        }
        ReduceKind::Mul => {
            if float {
                "arith.mulf"
            } else {
                "arith.muli"
            }
        }
        ReduceKind::Max => {
            if float {
                "arith.maximumf"
            } else {
                "arith.maxsi"
            }
        }
        ReduceKind::Min => {
            if float {
                "arith.minimumf"
            } else {
                "arith.minsi"
            }
        }
        ReduceKind::And => "arith.andi",
        ReduceKind::Or => "arith.ori",
    };
    at.value(name, &[acc, x], acc.r#type())
}
