//! The interpreter's one error type, [`Error`], and the two ways op
//! evaluation builds one: [`unsupported`] for an op the interpreter does not
//! run and [`eval_error`] for an op that could not compute its result.

use jitc_dialect::verify::{location_line, op_name};
use melior::ir::{OperationRef, operation::OperationLike};
use std::fmt;

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
            Self::NoFunction { name, available } if available.is_empty() => {
                write!(f, "no function @{name}: the module is empty")
            }
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

impl Error {
    /// `@function` was given `given` arguments where it takes `takes`.
    pub fn argument_count(function: &str, takes: usize, given: usize) -> Self {
        Self::Arguments(format!(
            "@{function} takes {takes} arguments but {given} were given"
        ))
    }

    /// Argument `i` of `@function`, `got` (as `Value::describe` or the
    /// like words it), is not the type `want` its signature takes.
    pub fn refused_argument(i: usize, function: &str, want: impl fmt::Display, got: &str) -> Self {
        Self::Arguments(format!("argument {i} of @{function} must be {want}, got {got}"))
    }

    /// A compiled kernel's failure: at the op of its body that failed when
    /// the kernel names one (as when the interpreter runs the body), else
    /// the error `at_call` makes of the failure's words.
    pub fn from_kernel(failure: jitc_dialect::KernelFailure, at_call: impl FnOnce(String) -> Error) -> Error {
        match failure.op {
            Some((op, line)) => Error::Eval {
                op,
                line,
                message: failure.message,
            },
            None => at_call(failure.message),
        }
    }
}

/// The error for an op the interpreter does not run.
pub(crate) fn unsupported(op: OperationRef) -> Error {
    Error::Unsupported {
        op: op_name(op),
        line: location_line(op.location()),
    }
}

/// An evaluation error at `op`.
pub(crate) fn eval_error(op: OperationRef, message: impl fmt::Display) -> Error {
    Error::Eval {
        op: op_name(op),
        line: location_line(op.location()),
        message: message.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use jitc_dialect::KernelFailure;

    #[test]
    fn a_kernel_failure_at_an_op_is_worded_as_the_interpreter_words_it() {
        let at_call = |message: String| Error::Arguments(format!("at the call: {message}"));
        let division = |line| KernelFailure {
            op: Some(("meta.binary".to_owned(), line)),
            message: "integer division by zero".to_owned(),
        };
        assert_eq!(
            Error::from_kernel(division(Some(7)), at_call).to_string(),
            "'meta.binary' at line 7: integer division by zero"
        );
        assert_eq!(
            Error::from_kernel(division(None), at_call).to_string(),
            "'meta.binary': integer division by zero"
        );
        let unlocated = KernelFailure::from("out of memory");
        assert_eq!(
            Error::from_kernel(unlocated, at_call).to_string(),
            "at the call: out of memory"
        );
    }
}
