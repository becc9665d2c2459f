//! Running modules on the CPU with compiled kernels.

use crate::Error;
use jitc_compiler::{
    OptimizeOptions,
    codegen::{self, CodegenOptions, CompiledKernels, KernelFn},
    lower::Buffer as Slot,
    optimize, pipeline,
};
use jitc_interp::{Interpreter, KernelRunner, Scalar, StateStore, Tensor, Value};
use melior::{Context, ir::Module};

/// Kernels with fewer domain points than this run on one thread: handing
/// out work would cost more than the work.
pub const PARALLEL_MIN_ELEMENTS: usize = 1 << 15;

/// Threads a kernel's outermost loop is split across: `JITC_NUM_THREADS`,
/// or every core.
pub fn thread_count() -> usize {
    std::env::var("JITC_NUM_THREADS")
        .ok()
        .and_then(|n| n.parse::<usize>().ok())
        .filter(|&n| n > 0)
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

/// Data pointers handed to another thread.
struct Buffers(Vec<*mut u8>);

// SAFETY: the pointers are only dereferenced by kernel code while the
// buffers they point to are alive (the threads are scoped), and parallel
// kernels write disjoint elements.
unsafe impl Send for Buffers {}

/// Runs a parallel kernel in `threads` contiguous parts of its outermost
/// dimension, each with its own status word; returns the combined status.
fn run_split(function: KernelFn, pointers: &[*mut u8], outer: i64, threads: usize) -> i32 {
    let per_thread = (outer as usize).div_ceil(threads) as i64;
    let statuses: Vec<i32> = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..threads as i64)
            .map(|t| (t * per_thread, ((t + 1) * per_thread).min(outer)))
            .filter(|(begin, end)| begin < end)
            .map(|(begin, end)| {
                let own = Buffers(pointers.to_vec());
                scope.spawn(move || {
                    // Take the whole wrapper (not just its field) into the thread.
                    let mut own = own;
                    let mut status: i32 = 0;
                    if let Some(last) = own.0.last_mut() {
                        *last = (&mut status as *mut i32).cast();
                    }
                    // SAFETY: as for a whole-range call; this part writes
                    // only the output elements of its outer indices.
                    unsafe { function(own.0.as_ptr(), begin, end) };
                    status
                })
            })
            .collect();
        workers.into_iter().map(|w| w.join().unwrap_or(1)).collect()
    });
    statuses.into_iter().fold(0, |a, b| a | b)
}

/// A module whose kernels run as native code.
pub struct CpuModule {
    kernels: CompiledKernels,
}

impl CpuModule {
    /// Fuses `module` (`meta-fuse`, in place) and compiles its kernels for
    /// this machine.
    pub fn compile(context: &Context, module: &mut Module) -> Result<Self, Error> {
        Self::compile_with(context, module, &CodegenOptions::default())
    }

    /// [`Self::compile`] with explicit code generation options.
    pub fn compile_with(context: &Context, module: &mut Module, options: &CodegenOptions) -> Result<Self, Error> {
        let fuse = pipeline::parse("builtin.module(meta-fuse)")?;
        optimize(context, module, &fuse, &OptimizeOptions::default())?;
        Ok(Self {
            kernels: codegen::compile(context, module, options)?,
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
        let threads = thread_count().min(signature.outer.max(1) as usize);
        if signature.parallel && threads > 1 && signature.points >= PARALLEL_MIN_ELEMENTS as u64 {
            status = run_split(*function, &pointers, signature.outer, threads);
        } else {
            // SAFETY: `pointers` holds one live buffer per argument and
            // result, shaped as the kernel was compiled for (checked above),
            // then the status word; all outlive the call.
            unsafe { function(pointers.as_ptr(), 0, signature.outer) };
        }
        if status != 0 {
            return Some(Err("integer division by zero".into()));
        }
        Some(Ok(outputs.into_iter().map(Value::tensor).collect()))
    }
}
