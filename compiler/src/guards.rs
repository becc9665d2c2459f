//! Entry guards as native checks.
//!
//! `meta-specialize` guards argument facts (sizes, scalar values) at the top
//! of a function. The runtime checks those before anything runs; making
//! them as [`ArgumentCheck`]s in Rust costs nanoseconds, where the host
//! schedule's interpreter spends microseconds on the five ops behind each
//! guard. [`take_entry_guards`] recognizes the forms `meta-specialize`
//! writes and moves them out of the module; any other guard stays in the IR
//! and is checked where it is.

use crate::{
    Error,
    pipelines::{OptimizeOptions, Pipeline, optimize},
    rewrite::{argument_of, constant_attribute, defining_op, erase, functions},
};
use jitc_dialect::{
    ops::{GuardOp, string_attribute},
    verify::op_name,
};
use melior::{
    Context,
    ir::{
        BlockLike, BlockRef, Module, OperationRef, RegionLike, Value,
        attribute::{FloatAttribute, IntegerAttribute},
        operation::OperationLike,
    },
};

/// What an entry guard checks, on the arguments alone.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub enum ArgumentCheck {
    /// `shape(arg)[dim] == size`.
    Dim {
        /// The argument.
        arg: usize,
        /// The dimension.
        dim: usize,
        /// Its size.
        size: usize,
    },
    /// An integer, index or i1 scalar (or rank-0 tensor) argument's value.
    Int {
        /// The argument.
        arg: usize,
        /// Its value (i1: 0 or 1).
        value: i64,
    },
    /// A float scalar (or rank-0 tensor) argument's value, compared as
    /// `arith.cmpf oeq` compares.
    Float {
        /// The argument.
        arg: usize,
        /// Its value (kept by its bits: JSON has no NaN).
        #[serde(with = "f64_bits")]
        value: f64,
    },
}

/// A float written by its bits, so NaNs and signed zeros survive.
mod f64_bits {
    pub fn serialize<S: serde::Serializer>(value: &f64, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_u64(value.to_bits())
    }

    pub fn deserialize<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<f64, D::Error> {
        <u64 as serde::Deserialize>::deserialize(deserializer).map(f64::from_bits)
    }
}

/// An entry guard taken out of the IR.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct EntryGuard {
    /// What it checks.
    pub check: ArgumentCheck,
    /// The guard's id.
    pub id: i64,
    /// Its reason.
    pub reason: String,
    /// The profile site it speculates on.
    pub site: Option<String>,
}

/// Takes the entry guards of `function` that test only its arguments out of
/// `module` and returns them as checks for the runtime to make natively,
/// before anything runs. Guards of other forms stay in the module.
/// `canonicalize` then drops the ops that only fed the guards taken out.
pub fn take_entry_guards(
    context: &Context,
    module: &mut Module,
    function: &str,
) -> Result<Vec<EntryGuard>, Error> {
    let mut checks = Vec::new();
    let Some(block) = functions(module.body())
        .get(function)
        .and_then(|f| f.region(0).ok())
        .and_then(|r| r.first_block())
    else {
        return Ok(checks);
    };
    let mut guards = Vec::new();
    let mut next = block.first_operation();
    while let Some(op) = next {
        next = op.next_in_block();
        if let Some(guard) = GuardOp::cast(op)
            && let Some(condition) = guard.condition()
            && let Some(check) = entry_check(block, condition)
        {
            checks.push(EntryGuard {
                check,
                id: guard.id().unwrap_or(-1),
                reason: guard.reason().unwrap_or_default().to_owned(),
                site: op
                    .attribute("site")
                    .ok()
                    .and_then(string_attribute)
                    .map(str::to_owned),
            });
            guards.push(op);
        }
    }
    if guards.is_empty() {
        return Ok(checks);
    }
    for guard in guards {
        // A guard has no results, and it is not used again.
        erase(guard);
    }
    optimize(
        context,
        module,
        &Pipeline::named("entry-guards").unwrap_or_default(),
        &OptimizeOptions::default(),
    )?;
    Ok(checks)
}

/// Recognizes the conditions `meta-specialize` writes for arguments (after
/// `canonicalize`): `from_elements` of `dim(arg) == n`, `arg == c`,
/// `extract(arg) == c`, `extract(arg)` or `extract(arg) xor true`.
fn entry_check(block: BlockRef, condition: Value) -> Option<ArgumentCheck> {
    fn producer<'c, 'a>(value: Value<'c, 'a>) -> Option<(String, OperationRef<'c, 'a>)> {
        defining_op(value).map(|op| (op_name(op), op))
    }
    let argument = |value: Value| -> Option<usize> { argument_of(value, block) };
    enum Constant {
        Int(i64),
        Float(f64),
    }
    let constant = |value: Value| -> Option<Constant> {
        let attribute = constant_attribute(value)?;
        if let Ok(i) = IntegerAttribute::try_from(attribute) {
            return Some(Constant::Int(i.value()));
        }
        FloatAttribute::try_from(attribute)
            .ok()
            .map(|f| Constant::Float(f.value()))
    };
    // The argument read by `extract(arg)` of a rank-0 tensor, or the argument
    // itself when it is a scalar.
    let scalar_argument = |value: Value| -> Option<usize> {
        argument(value).or_else(|| {
            let (name, op) = producer(value)?;
            (name == "tensor.extract" && op.operand_count() == 1)
                .then(|| op.operand(0).ok().and_then(argument))
                .flatten()
        })
    };
    let (name, op) = producer(condition)?;
    if name != "tensor.from_elements" || op.operand_count() != 1 {
        return None;
    }
    let bit: Value = op.operand(0).ok()?;
    if let Some(arg) = scalar_argument(bit) {
        return Some(ArgumentCheck::Int { arg, value: 1 });
    }
    let (name, op) = producer(bit)?;
    let predicate = op
        .attribute("predicate")
        .ok()
        .and_then(|a| IntegerAttribute::try_from(a).ok())
        .map(|a| a.value());
    let (lhs, rhs): (Value, Value) = (op.operand(0).ok()?, op.operand(1).ok()?);
    match (name.as_str(), predicate) {
        ("arith.xori", _) => match constant(rhs)? {
            Constant::Int(1) | Constant::Int(-1) => Some(ArgumentCheck::Int {
                arg: scalar_argument(lhs)?,
                value: 0,
            }),
            _ => None,
        },
        // eq
        ("arith.cmpi", Some(0)) => {
            let Constant::Int(value) = constant(rhs)? else {
                return None;
            };
            if let Some(arg) = scalar_argument(lhs) {
                return Some(ArgumentCheck::Int { arg, value });
            }
            let (name, dim) = producer(lhs)?;
            if name != "tensor.dim" {
                return None;
            }
            let Constant::Int(index) = constant(dim.operand(1).ok()?)? else {
                return None;
            };
            Some(ArgumentCheck::Dim {
                arg: argument(dim.operand(0).ok()?)?,
                dim: usize::try_from(index).ok()?,
                size: usize::try_from(value).ok()?,
            })
        }
        // oeq
        ("arith.cmpf", Some(1)) => {
            let Constant::Float(value) = constant(rhs)? else {
                return None;
            };
            Some(ArgumentCheck::Float {
                arg: scalar_argument(lhs)?,
                value,
            })
        }
        _ => None,
    }
}
