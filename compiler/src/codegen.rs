//! Native code for the CPU: lowered kernels go through MLIR's conversions to
//! the LLVM dialect, are translated into an inkwell module (one LLVM per
//! process: the same `libLLVM.so.22.1`), optimized with `default<O3>` for
//! the host CPU and JIT-compiled.
//!
//! Algorithm:
//! 1. `lower::lower` builds one `func.func @kernel(!llvm.ptr)` per kernel;
//! 2. [`LLVM_PIPELINE`] converts it to the LLVM dialect;
//! 3. `mlirTranslateModuleToLLVMIR` writes LLVM IR into an inkwell context;
//! 4. the host target machine runs `default<O3>`;
//! 5. MCJIT compiles it; kernel addresses are looked up by name.

use crate::{Error, lower::KernelSignature, pipeline};
use inkwell::{
    OptimizationLevel,
    context::Context as LlvmContext,
    execution_engine::ExecutionEngine,
    module::Module as LlvmModule,
    passes::PassBuilderOptions,
    targets::{CodeModel, InitializationConfig, RelocMode, Target, TargetMachine},
};
use melior::{Context, ir::Module};
use std::collections::HashMap;

/// The conversions from lowered kernels to the LLVM dialect.
pub const LLVM_PIPELINE: &str = "builtin.module(func.func(arith-expand), convert-scf-to-cf, convert-math-to-llvm, \
     convert-math-to-libm, convert-arith-to-llvm, convert-index-to-llvm, convert-cf-to-llvm, \
     convert-func-to-llvm, reconcile-unrealized-casts)";

/// A compiled kernel: `buffers` points to one data pointer per argument,
/// then per result, then to an i32 status word (see `lower`).
pub type KernelFn = unsafe extern "C" fn(buffers: *const *mut u8);

/// Kernels compiled to native code, and the kernels that were not.
pub struct CompiledKernels {
    // Field order is drop order: the engine goes before its context.
    _engine: ExecutionEngine<'static>,
    _context: Box<LlvmContext>,
    kernels: HashMap<String, (KernelFn, KernelSignature)>,
    /// Kernels that were not compiled, with the reason.
    pub skipped: Vec<(String, String)>,
    /// The optimized LLVM IR, for `--emit llvm` and tests.
    pub llvm_ir: String,
}

impl CompiledKernels {
    /// The compiled kernel `name` and its calling convention.
    pub fn get(&self, name: &str) -> Option<&(KernelFn, KernelSignature)> {
        self.kernels.get(name)
    }

    /// Names of the compiled kernels.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.kernels.keys().map(String::as_str)
    }
}

/// The host's target machine.
pub fn host_machine() -> Result<TargetMachine, Error> {
    Target::initialize_native(&InitializationConfig::default()).map_err(Error::Codegen)?;
    let triple = TargetMachine::get_default_triple();
    let target = Target::from_triple(&triple).map_err(|e| Error::Codegen(e.to_string()))?;
    let cpu = TargetMachine::get_host_cpu_name();
    let features = TargetMachine::get_host_cpu_features();
    target
        .create_target_machine(
            &triple,
            cpu.to_str().unwrap_or("generic"),
            features.to_str().unwrap_or(""),
            OptimizationLevel::Aggressive,
            RelocMode::Default,
            CodeModel::JITDefault,
        )
        .ok_or_else(|| Error::Codegen("no target machine for the host".into()))
}

/// Lowers, optimizes and JIT-compiles the `meta.fused` kernels of `module`.
pub fn compile(context: &Context, module: &Module) -> Result<CompiledKernels, Error> {
    let crate::lower::Lowered {
        module: mut lowered,
        signatures,
        skipped,
    } = crate::lower::lower(context, module)?;
    let conversions = pipeline::build(context, &pipeline::parse(LLVM_PIPELINE)?)?;
    conversions
        .run(&mut lowered)
        .map_err(|_| Error::Codegen("conversion to the LLVM dialect failed".into()))?;

    let llvm_context = Box::new(LlvmContext::create());
    // SAFETY: the translated module is owned by the caller and lives in
    // `llvm_context`, which is kept alive (boxed, so it does not move) for
    // as long as the engine below.
    let llvm_module = unsafe {
        let raw = mlir_sys::mlirTranslateModuleToLLVMIR(
            lowered.as_operation().to_raw(),
            llvm_context.raw() as mlir_sys::LLVMContextRef,
        );
        if raw.is_null() {
            return Err(Error::Codegen("translation to LLVM IR failed".into()));
        }
        LlvmModule::new(raw as inkwell::llvm_sys::prelude::LLVMModuleRef)
    };
    let machine = host_machine()?;
    llvm_module.set_triple(&machine.get_triple());
    llvm_module.set_data_layout(&machine.get_target_data().get_data_layout());
    llvm_module
        .run_passes("default<O3>", &machine, PassBuilderOptions::create())
        .map_err(|e| Error::Codegen(e.to_string()))?;
    let llvm_ir = llvm_module.print_to_string().to_string();
    let engine = llvm_module
        .create_jit_execution_engine(OptimizationLevel::Aggressive)
        .map_err(|e| Error::Codegen(e.to_string()))?;
    let mut kernels = HashMap::new();
    for signature in signatures {
        let address = engine
            .get_function_address(&signature.name)
            .map_err(|e| Error::Codegen(format!("kernel @{} is missing: {e}", signature.name)))?;
        // SAFETY: the function was generated with exactly this signature.
        let function: KernelFn = unsafe { std::mem::transmute::<usize, KernelFn>(address) };
        kernels.insert(signature.name.clone(), (function, signature));
    }
    // SAFETY: the engine borrows `llvm_context`, which is boxed and dropped
    // after the engine (field order), so extending the borrow is sound.
    let engine: ExecutionEngine<'static> = unsafe { std::mem::transmute(engine) };
    Ok(CompiledKernels {
        _engine: engine,
        _context: llvm_context,
        kernels,
        skipped,
        llvm_ir,
    })
}
