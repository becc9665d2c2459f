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
mod error;
mod eval;
mod meta_ops;
pub mod npy;
pub mod scalar;
pub mod storage;
pub mod tensor;
mod tensor_ops;
mod value;

pub use arith::{ArithOp, prepare as prepare_arith};
pub use error::Error;
pub use eval::{
    Interpreter, KernelRunner, Signature, StateStore, argument_profiles, check_arguments, runs_started,
};
pub use scalar::Scalar;
pub use tensor::{Buffer, Tensor};
pub use tensor_ops::{TensorOp, prepare as prepare_tensor};
pub use value::{Value, ValueType};

/// The value of an `arith.constant` op, as the interpreter holds it; other
/// ops are an error. Lets another executor of the host schedule (the CUDA
/// runtime's device plan) take constants with the interpreter's meaning.
pub fn constant(op: melior::ir::OperationRef) -> Result<Value, Error> {
    if jitc_dialect::verify::op_name(op) != "arith.constant" {
        return Err(error::unsupported(op));
    }
    arith::eval(op, &[])
}
