//! The sizes of a kernel over a dynamic domain, known at run time only:
//! where each comes from, so the runtime can read them before the call.
//!
//! A kernel's values all have the domain's shape except the results of its
//! reductions (fusion rules 1 and 2: a reindex reads only arguments, and a
//! reduction's consumers are not fused). So each dynamic domain dimension
//! is given by every value of the domain's shape that is an argument (its
//! size in that dimension) or the result of a `meta.reindex` (the index
//! operand that sizes it), and a reduction's dynamic output sizes by their
//! index operands.
//!
//! The interpreter runs the kernel's ops one by one, so it does not need
//! these sizes to agree: two reindexes of the domain's type may have
//! different sizes, and an element-wise op of operands whose sizes differ
//! fails there. The compiled kernel has one domain, so the runtime runs it
//! natively only when every source of a dimension gives the same size;
//! otherwise it hands the call to the interpreter, which gives the exact
//! result or error.
//!
//! Invariants:
//! - every dynamic domain dimension has at least one source;
//! - a reduction's output dimension that is a plain domain dimension of
//!   dynamic size is also a source of that dimension, so in a native run
//!   it equals the domain's size and its index needs no bounds check
//!   ([`super::schedule`] proves it);
//! - static sizes of the domain's values equal the domain's; a value of
//!   static size where the domain is dynamic makes the kernel unlowerable.
//!
//! Example: `@main_fused_0(%arg0: tensor<8xf32>, %arg1: index, %arg2:
//! tensor<?x8xf32>) -> tensor<?xf32>` with domain `?x8`, a reindex of
//! `%arg0` to `tensor<?x8xf32>` sized by `%arg1`, a multiply by `%arg2`, and
//! a sum over `d1` to `tensor<?xf32>` sized by `%arg1`:
//!
//! ```text
//! domain:  [Dynamic([Index { input: 1 }, Dim { input: 2, dim: 0 }, Index { input: 1 }]), Static(8)]
//! outputs: [[Dynamic(<the same sources>)]]
//! ```

use super::types::dynamic_shape;
use jitc_dialect::ops::{ReindexOp, ReindexReduceOp};
use melior::ir::{BlockLike, BlockRef, Value, ValueLike, operation::OperationLike};
use std::collections::HashMap;

/// Where a size known at run time only comes from.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum SizeSource {
    /// Dimension `dim` of the tensor argument `input`.
    Dim {
        /// The kernel argument.
        input: usize,
        /// Its dimension.
        dim: usize,
    },
    /// The value of the index argument `input`.
    Index {
        /// The kernel argument.
        input: usize,
    },
}

impl SizeSource {
    /// The kernel argument the size is read from.
    pub fn input(&self) -> usize {
        match self {
            SizeSource::Dim { input, .. } | SizeSource::Index { input } => *input,
        }
    }
}

/// One size of a kernel over a dynamic domain.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Extent {
    /// Known when the kernel is compiled.
    Static(usize),
    /// Known at run time: every source gives it (at least one); the kernel
    /// runs natively only when they agree.
    Dynamic(Vec<SizeSource>),
}

/// The run-time sizes of a kernel over a dynamic domain, passed to it in
/// one array of `i64`s: the domain's sizes, then each output's, in order
/// ([`super::KernelSignature::sizes_slot`]).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct DynamicSizes {
    /// The domain's size in each dimension.
    pub domain: Vec<Extent>,
    /// Each output's size in each dimension.
    pub outputs: Vec<Vec<Extent>>,
    /// The domain dimension whose `[begin, end)` the caller passes.
    pub split: usize,
}

/// The sizes of the kernel whose body is `body`, over `domain` (-1 for a
/// dynamic dimension); `Err` says why they cannot be known before the
/// call.
pub(super) fn dynamic_sizes(body: BlockRef, domain: &[i64], split: usize) -> Result<DynamicSizes, String> {
    let arguments: HashMap<usize, usize> = (0..body.argument_count())
        .filter_map(|i| body.argument(i).ok().map(|a| (key(a.into()), i)))
        .collect();
    let mut sources: Vec<Vec<SizeSource>> = vec![Vec::new(); domain.len()];
    // A value of the domain's shape: its static sizes must be the
    // domain's; an argument is a source of each dynamic dimension.
    let shaped = |value: Value, sources: &mut Vec<Vec<SizeSource>>| -> Result<(), String> {
        let (shape, _) = dynamic_shape(value.r#type()).ok_or("a kernel value of an unsupported type")?;
        if shape.len() != domain.len() {
            return Err("a kernel value does not have the domain's rank".into());
        }
        for (d, (size, &extent)) in shape.iter().zip(domain).enumerate() {
            match (size, extent < 0) {
                (None, true) => {
                    if let Some(&input) = arguments.get(&key(value)) {
                        sources[d].push(SizeSource::Dim { input, dim: d });
                    }
                }
                (Some(n), false) if *n as i64 == extent => {}
                _ => {
                    return Err(format!(
                        "a kernel value's size in dimension {d} is static where the domain's is \
                         dynamic, or the reverse"
                    ));
                }
            }
        }
        Ok(())
    };
    // The index arguments that size the dynamic dimensions of `op`'s
    // result, in order.
    let size_operands = |op: melior::ir::OperationRef| -> Result<Vec<SizeSource>, String> {
        let result: Value = op.result(0).map_err(|_| "an op without a result")?.into();
        let (shape, _) = dynamic_shape(result.r#type()).ok_or("a result of an unsupported type")?;
        let count = shape.iter().filter(|d| d.is_none()).count();
        op.operands()
            .skip(1)
            .take(count)
            .map(|v| {
                arguments
                    .get(&key(v))
                    .map(|&input| SizeSource::Index { input })
                    .ok_or_else(|| "a dynamic size that is not a kernel argument".to_owned())
            })
            .collect()
    };
    // A reduction's output sizes; `Err(d)`: the domain's size in `d`.
    let mut outputs_of: HashMap<usize, Vec<Result<Extent, usize>>> = HashMap::new();
    let mut next = body.first_operation();
    let mut terminator = None;
    while let Some(op) = next {
        next = op.next_in_block();
        if ReindexOp::cast(op).is_some() {
            let result: Value = op.result(0).map_err(|_| "a reindex without a result")?.into();
            shaped(result, &mut sources)?;
            let mut sizes = size_operands(op)?.into_iter();
            for (d, &extent) in domain.iter().enumerate() {
                if extent < 0 {
                    sources[d].push(sizes.next().ok_or("a dynamic size without an operand")?);
                }
            }
        } else if let Some(reduce) = ReindexReduceOp::cast(op) {
            let input = reduce.input().ok_or("a reduction without an input")?;
            if arguments.contains_key(&key(input)) {
                shaped(input, &mut sources)?;
            }
            let result = reduce.result().ok_or("a reduction without a result")?;
            let map = reduce.indices().ok_or("a reduction without a map")?;
            let (shape, _) = dynamic_shape(result.r#type()).ok_or("a reduction of an unsupported type")?;
            let mut sizes = size_operands(op)?.into_iter();
            let mut extents = Vec::with_capacity(shape.len());
            for (k, size) in shape.iter().enumerate() {
                extents.push(match size {
                    Some(n) => Ok(Extent::Static(*n)),
                    None => {
                        let source = sizes.next().ok_or("a dynamic size without an operand")?;
                        match plain_dynamic(map, k, domain) {
                            Some(d) => {
                                sources[d].push(source);
                                Err(d)
                            }
                            None => Ok(Extent::Dynamic(vec![source])),
                        }
                    }
                });
            }
            outputs_of.insert(key(result), extents);
        } else if op.name().as_string_ref().as_str() == Ok("func.return") {
            terminator = Some(op);
        } else {
            for operand in op.operands() {
                if arguments.contains_key(&key(operand)) {
                    shaped(operand, &mut sources)?;
                }
            }
            for result in op.results() {
                shaped(result.into(), &mut sources)?;
            }
        }
    }
    let domain_extents = domain
        .iter()
        .zip(&sources)
        .enumerate()
        .map(|(d, (&extent, sources))| {
            if extent >= 0 {
                Ok(Extent::Static(extent as usize))
            } else if sources.is_empty() {
                Err(format!(
                    "nothing in the kernel gives the size of domain dimension {d}"
                ))
            } else {
                Ok(Extent::Dynamic(sources.clone()))
            }
        })
        .collect::<Result<Vec<_>, String>>()?;
    let terminator = terminator.ok_or("a kernel without a return")?;
    let outputs = terminator
        .operands()
        .map(|value| match outputs_of.get(&key(value)) {
            // A reduction's output: its plain dynamic dimensions are the
            // domain's.
            Some(extents) => extents
                .iter()
                .map(|extent| match extent {
                    Ok(extent) => extent.clone(),
                    Err(d) => domain_extents[*d].clone(),
                })
                .collect(),
            None => domain_extents.clone(),
        })
        .collect();
    Ok(DynamicSizes {
        domain: domain_extents,
        outputs,
        split,
    })
}

/// The domain dimension that output index `k` of a reduction's `map` is,
/// when it is a plain dimension of dynamic size.
pub(super) fn plain_dynamic(map: melior::ir::AffineMap, k: usize, domain: &[i64]) -> Option<usize> {
    let expr = map.result(k).ok()?;
    if !expr.is_dim() {
        return None;
    }
    let d = expr.dim_position();
    (*domain.get(d)? < 0).then_some(d)
}

fn key(value: Value) -> usize {
    value.to_raw().ptr as usize
}
