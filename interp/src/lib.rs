//! The reference interpreter: the exact meaning of every jitc program.
//!
//! It runs any verified module at any stage before lowering: all `meta`
//! ops, `func`, `scf` (`for`, `if`, `while`), `arith` on scalars and
//! indices, dense `arith.constant`s and the `tensor` ops of DESIGN.md's
//! contract. Every pass and backend is tested against it, and the runtime
//! falls back to it when nothing else can run a program.
//!
//! The semantics are stated in `docs/semantics.md`; the element-wise rules
//! live in [`scalar`], the affine ones in [`affine`].
//!
//! ```text
//! let interpreter = Interpreter::new(&module);
//! let results = interpreter.run("main", inputs, &mut state)?;
//! ```

pub mod affine;
mod arith;
mod eval;
pub mod npy;
pub mod scalar;
pub mod storage;
pub mod tensor;
mod tensor_ops;

pub use eval::{Interpreter, KernelRunner, Signature, StateStore, Value, ValueType};
pub use scalar::Scalar;
pub use tensor::{Buffer, Tensor};

use std::fmt;

/// The value of an `arith.constant` op, as the interpreter holds it; other
/// ops are an error. Lets another executor of the host schedule (the CUDA
/// runtime's device plan) take constants with the interpreter's meaning.
pub fn constant(op: melior::ir::OperationRef) -> Result<Value, Error> {
    if eval::op_name(op) != "arith.constant" {
        return Err(eval::unsupported(op));
    }
    arith::eval(op, &[])
}

/// Why a run stopped. Nothing is committed to the state store then.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Error {
    /// No function of that name.
    NoFunction {
        /// The name asked for.
        name: String,
        /// The functions there are.
        available: Vec<String>,
    },
    /// Arguments of the wrong number or type.
    Arguments(String),
    /// A `meta.guard` was false.
    GuardFailed {
        /// The guard's id.
        id: i64,
        /// Its reason.
        reason: String,
        /// Its line.
        line: Option<usize>,
        /// The profile site it speculates on (its `site` attribute), when
        /// `meta-specialize` or `meta-unroll` made it.
        site: Option<String>,
    },
    /// A `meta.state_read` of a name the store lacks.
    StateMissing {
        /// The state's name.
        name: String,
        /// The read's line.
        line: Option<usize>,
    },
    /// An op the interpreter does not run.
    Unsupported {
        /// The op's name.
        op: String,
        /// Its line.
        line: Option<usize>,
    },
    /// An op could not compute its result (division by zero, an index out
    /// of bounds, a shape that contradicts the declared type, ...).
    Eval {
        /// The op's name.
        op: String,
        /// Its line.
        line: Option<usize>,
        /// What went wrong.
        message: String,
    },
}

fn at(line: &Option<usize>) -> String {
    line.map(|l| format!(" at line {l}")).unwrap_or_default()
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NoFunction { name, available } => {
                write!(
                    f,
                    "no function @{name}; the module has {}",
                    available
                        .iter()
                        .map(|n| format!("@{n}"))
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            }
            Self::Arguments(message) => f.write_str(message),
            Self::GuardFailed { id, reason, line, .. } => {
                write!(f, "guard {id} failed{}: {reason}", at(line))
            }
            Self::StateMissing { name, line } => {
                write!(
                    f,
                    "state '{name}' is read{} but the state store has no value for it",
                    at(line)
                )
            }
            Self::Unsupported { op, line } => write!(f, "the interpreter does not run '{op}'{}", at(line)),
            Self::Eval { op, line, message } => write!(f, "'{op}'{}: {message}", at(line)),
        }
    }
}

impl std::error::Error for Error {}
