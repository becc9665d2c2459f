//! Running modules on the CPU with compiled kernels.

use crate::Error;
use jitc_compiler::{
    OptimizeOptions,
    codegen::{self, CompiledKernels},
    lower::Buffer as Slot,
    optimize, pipeline,
};
use jitc_interp::{Interpreter, KernelRunner, Scalar, StateStore, Tensor, Value};
use melior::{Context, ir::Module};

/// A module whose kernels run as native code.
pub struct CpuModule {
    kernels: CompiledKernels,
}

impl CpuModule {
    /// Fuses `module` (`meta-fuse`, in place) and compiles its kernels.
    pub fn compile(context: &Context, module: &mut Module) -> Result<Self, Error> {
        let fuse = pipeline::parse("builtin.module(meta-fuse)")?;
        optimize(context, module, &fuse, &OptimizeOptions::default())?;
        Ok(Self {
            kernels: codegen::compile(context, module)?,
        })
    }

    /// Kernels that could not be compiled (they run in the interpreter),
    /// with the reason.
    pub fn interpreted_kernels(&self) -> &[(String, String)] {
        &self.kernels.skipped
    }

    /// The optimized LLVM IR of the kernels.
    pub fn llvm_ir(&self) -> &str {
        &self.kernels.llvm_ir
    }

    /// Runs function `name` of `module` (the module given to
    /// [`Self::compile`]) on `args`.
    pub fn run(
        &self,
        module: &Module,
        name: &str,
        args: Vec<Value>,
        state: &mut StateStore,
    ) -> Result<Vec<Value>, Error> {
        Ok(Interpreter::new(module)
            .with_kernels(self)
            .run(name, args, state)?)
    }
}

impl KernelRunner for CpuModule {
    fn run_kernel(&self, name: &str, args: &[Value]) -> Option<Result<Vec<Value>, String>> {
        let (function, signature) = self.kernels.get(name)?;
        let mut indices: Vec<i64> = Vec::with_capacity(args.len());
        for (arg, slot) in args.iter().zip(&signature.inputs) {
            if let (Value::Index(i), Slot::Index) = (arg, slot) {
                indices.push(*i);
            }
        }
        let mut outputs: Vec<Tensor> = Vec::with_capacity(signature.outputs.len());
        for slot in &signature.outputs {
            match slot {
                Slot::Tensor(shape, element) => {
                    outputs.push(Tensor::splat(shape.clone(), Scalar::zero(*element)))
                }
                Slot::Index => return Some(Err("a kernel that returns an index".into())),
            }
        }
        let mut status: i32 = 0;
        let mut pointers: Vec<*mut u8> = Vec::with_capacity(args.len() + outputs.len() + 1);
        let mut next_index = 0;
        for (arg, slot) in args.iter().zip(&signature.inputs) {
            match (arg, slot) {
                (Value::Tensor(tensor), Slot::Tensor(shape, element))
                    if tensor.shape() == shape.as_slice() && tensor.element_type() == *element =>
                {
                    // The kernel only reads its inputs.
                    pointers.push(tensor.buffer().as_ptr().cast_mut());
                }
                (Value::Index(_), Slot::Index) => {
                    pointers.push((&mut indices[next_index] as *mut i64).cast());
                    next_index += 1;
                }
                _ => {
                    return Some(Err(format!(
                        "argument {} does not match the compiled kernel",
                        pointers.len()
                    )));
                }
            }
        }
        for output in &mut outputs {
            pointers.push(output.buffer_mut().as_mut_ptr());
        }
        pointers.push((&mut status as *mut i32).cast());
        // SAFETY: `pointers` holds one live buffer per argument and result,
        // shaped as the kernel was compiled for (checked above), then the
        // status word; all outlive the call.
        unsafe { function(pointers.as_ptr()) };
        if status != 0 {
            return Some(Err("integer division by zero".into()));
        }
        Some(Ok(outputs.into_iter().map(Value::tensor).collect()))
    }
}
