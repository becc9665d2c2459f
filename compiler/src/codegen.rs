//! Native code for the CPU: lowered kernels go through MLIR's conversions to
//! the LLVM dialect, are translated into an inkwell module (one LLVM per
//! process: the same `libLLVM.so.22.1`), optimized with `default<O3>` for
//! the host CPU and JIT-compiled.
//!
//! Algorithm:
//! 1. `lower::lower` builds one `func.func @kernel(!llvm.ptr, i64, i64)`
//!    per kernel (in the bounds-checked mode, with every element access
//!    checked; see `lower::access`);
//! 2. the `llvm` pipeline of [`crate::pipelines`] converts it to the LLVM
//!    dialect;
//! 3. `mlirTranslateModuleToLLVMIR` writes LLVM IR into an inkwell context;
//! 4. the host target machine runs `default<O3>`;
//! 5. the target machine writes an ELF object, which `object` links into
//!    the process with ORC's LLJIT; kernel addresses are looked up by name.

use crate::{
    Error,
    guards::EntryGuard,
    lower::{KernelSignature, LowerOptions},
    object::LoadedObject,
    pipelines::Pipeline,
};
use inkwell::{
    OptimizationLevel,
    context::Context as LlvmContext,
    module::Module as LlvmModule,
    passes::PassBuilderOptions,
    targets::{CodeModel, InitializationConfig, RelocMode, Target, TargetMachine},
};
use melior::{Context, ir::Module};
use std::collections::HashMap;

/// A compiled kernel: `buffers` points to one data pointer per argument,
/// then per result, then to a zeroed [`crate::KernelStatus`] record; it
/// runs the part `[begin, end)` of the split dimension (see `lower`).
/// [`KernelSignature::failure`] reads the record after the call.
pub type KernelFn = unsafe extern "C" fn(buffers: *const *mut u8, begin: i64, end: i64);

/// A module compiled for the CPU: its kernels as native code with their
/// signatures, the kernels that were not compiled, and the entry guards
/// taken out of its entry function (checked by the runtime before a call).
pub struct CpuArtifact {
    /// The linked code the kernel pointers point into.
    _code: LoadedObject,
    /// The object code `code` was loaded from, one object per share of
    /// kernels compiled on its own thread (what the disk cache keeps).
    objects: Vec<Vec<u8>>,
    kernels: HashMap<String, (KernelFn, KernelSignature)>,
    /// Kernels that were not compiled, with the reason.
    pub skipped: Vec<(String, String)>,
    /// The optimized LLVM IR, for `--emit llvm` and tests (empty when the
    /// code came from the disk cache).
    pub llvm_ir: String,
    /// The entry function's argument guards, when one was named.
    pub entry_guards: Vec<EntryGuard>,
}

impl CpuArtifact {
    /// Loads `objects` (made by [`compile`] for this machine) and looks up
    /// the kernel of each signature in them.
    pub fn load(
        objects: Vec<Vec<u8>>,
        signatures: Vec<KernelSignature>,
        skipped: Vec<(String, String)>,
        entry_guards: Vec<EntryGuard>,
    ) -> Result<Self, Error> {
        let code = LoadedObject::load(&objects)?;
        let mut kernels = HashMap::new();
        for signature in signatures {
            let address = code.address(&signature.name)?;
            // SAFETY: the function was generated with exactly this
            // signature, and lives as long as `code`.
            let function: KernelFn = unsafe { std::mem::transmute::<usize, KernelFn>(address) };
            kernels.insert(signature.name.clone(), (function, signature));
        }
        Ok(CpuArtifact {
            _code: code,
            objects,
            kernels,
            skipped,
            llvm_ir: String::new(),
            entry_guards,
        })
    }

    /// The object code the kernels run from.
    pub fn objects(&self) -> &[Vec<u8>] {
        &self.objects
    }

    /// The kernels' signatures.
    pub fn signatures(&self) -> impl Iterator<Item = &KernelSignature> {
        self.kernels.values().map(|(_, signature)| signature)
    }

    /// The compiled kernel `name` and its calling convention.
    pub fn get(&self, name: &str) -> Option<&(KernelFn, KernelSignature)> {
        self.kernels.get(name)
    }

    /// Names of the compiled kernels.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.kernels.keys().map(String::as_str)
    }
}

/// The CPU to generate code for; `None` fields mean the host's.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct CpuTarget {
    /// An LLVM CPU name, e.g. `x86-64-v3`.
    pub cpu: Option<String>,
    /// LLVM target features, e.g. `+avx2,+fma`.
    pub features: Option<String>,
}

impl CpuTarget {
    /// The CPU name and the features code is generated for: the host's
    /// where none are given. A named CPU brings its own features (host
    /// features would leak this machine into the output).
    pub fn resolved(&self) -> (String, String) {
        let (host_cpu, host_features) = host_cpu();
        let cpu = self.cpu.clone().unwrap_or(host_cpu);
        let features = match (&self.features, &self.cpu) {
            (Some(features), _) => features.clone(),
            (None, Some(_)) => String::new(),
            (None, None) => host_features,
        };
        (cpu, features)
    }
}

impl CpuTarget {
    /// The width of the target's vector registers in bits: 512 with
    /// AVX-512 (`+avx512f` among the features, or a CPU that has it),
    /// else 256.
    pub fn vector_bits(&self) -> u32 {
        let (cpu, features) = self.resolved();
        let avx512 = if features.is_empty() {
            CPUS.iter().any(|&(name, avx512)| name == cpu && avx512)
        } else {
            features.split(',').any(|f| f == "+avx512f")
        };
        if avx512 { 512 } else { 256 }
    }
}

/// CPU names `--cpu` accepts besides the host's own, each with whether it
/// has AVX-512 (which sizes contraction tiles: `CpuTarget::vector_bits`).
/// LLVM's C API cannot tell whether a name is valid, and LLVM aborts on a
/// bad one, so names are checked here first.
const CPUS: &[(&str, bool)] = &[
    ("x86-64", false),
    ("x86-64-v2", false),
    ("x86-64-v3", false),
    ("x86-64-v4", true),
    ("nehalem", false),
    ("westmere", false),
    ("sandybridge", false),
    ("ivybridge", false),
    ("haswell", false),
    ("broadwell", false),
    ("skylake", false),
    ("skylake-avx512", true),
    ("cascadelake", true),
    ("cooperlake", true),
    ("cannonlake", true),
    ("icelake-client", true),
    ("icelake-server", true),
    ("tigerlake", true),
    ("alderlake", false),
    ("raptorlake", false),
    ("meteorlake", false),
    ("sapphirerapids", true),
    ("emeraldrapids", true),
    ("graniterapids", true),
    ("znver1", false),
    ("znver2", false),
    ("znver3", false),
    ("znver4", true),
    ("znver5", true),
];

/// The CPU names `--cpu` accepts besides the host's own.
pub fn known_cpus() -> impl Iterator<Item = &'static str> {
    CPUS.iter().map(|&(name, _)| name)
}

/// The target machine for `target` (the host's by default).
pub fn target_machine(target: &CpuTarget) -> Result<TargetMachine, Error> {
    machine(target, RelocMode::Default, CodeModel::JITDefault)
}

/// The target machine for code this process loads ([`crate::object`]):
/// position-independent, so the object links wherever its memory lands.
fn loadable_target_machine(target: &CpuTarget) -> Result<TargetMachine, Error> {
    machine(target, RelocMode::PIC, CodeModel::Small)
}

fn machine(target: &CpuTarget, reloc: RelocMode, code_model: CodeModel) -> Result<TargetMachine, Error> {
    if let Some(cpu) = &target.cpu {
        let host = TargetMachine::get_host_cpu_name().to_string();
        if !known_cpus().any(|name| name == cpu) && *cpu != host {
            return Err(Error::Codegen(format!(
                "unknown CPU '{cpu}'; use this machine's ('{host}') or one of {}",
                known_cpus().collect::<Vec<_>>().join(", ")
            )));
        }
    }
    if let Some(features) = &target.features {
        check_features(features)?;
    }
    Target::initialize_native(&InitializationConfig::default()).map_err(Error::Codegen)?;
    let triple = TargetMachine::get_default_triple();
    let llvm_target = Target::from_triple(&triple).map_err(|e| Error::Codegen(e.to_string()))?;
    let (cpu, features) = target.resolved();
    llvm_target
        .create_target_machine(
            &triple,
            &cpu,
            &features,
            OptimizationLevel::Aggressive,
            reloc,
            code_model,
        )
        .ok_or_else(|| Error::Codegen(format!("LLVM has no target machine for CPU '{cpu}'")))
}

/// Whether `features` is a comma-separated list of LLVM target features,
/// each `+name` or `-name` (LLVM warns about a name it does not know and
/// ignores it, and takes a name without its sign as an unknown one, so
/// `avx2` would silently leave AVX2 off).
fn check_features(features: &str) -> Result<(), Error> {
    if features.is_empty() {
        return Ok(());
    }
    for feature in features.split(',') {
        let name = feature.strip_prefix(['+', '-']).unwrap_or(feature);
        let well_formed = !name.is_empty()
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
        if !well_formed {
            return Err(Error::Codegen(format!(
                "target feature '{feature}' is not a feature name: write features as +name,-name (+avx2,-avx512f)"
            )));
        }
        if name.len() == feature.len() {
            return Err(Error::Codegen(format!(
                "target feature '{feature}' needs a sign: '+{feature}' turns it on, '-{feature}' off"
            )));
        }
    }
    Ok(())
}

/// Everything that decides the code [`compile`] and [`emit`] produce.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct CodegenOptions {
    /// The CPU (the host's by default).
    pub target: CpuTarget,
    /// How transcendental functions are computed.
    pub math: crate::lower::MathMode,
    /// The bounds-checked mode: every element load and store of a kernel
    /// is checked against its buffer's extent, and one out of bounds is
    /// reported through the status record instead of made
    /// ([`KernelSignature::failure`] says which access and offset).
    pub check_bounds: bool,
    /// Only Jittor's fusion: no row chains (`lower::rows`), so every
    /// kernel streams its tensors through memory on its own.
    pub jittor_rules: bool,
}

impl CodegenOptions {
    /// The lowering's part of these options.
    pub(crate) fn lowering(&self) -> LowerOptions {
        LowerOptions {
            math: self.math,
            check_bounds: self.check_bounds,
            vector_bits: self.target.vector_bits(),
            streaming: cfg!(target_arch = "x86_64"),
            ..LowerOptions::default()
        }
    }
}

/// The host CPU's name and its LLVM features (asked of LLVM once).
fn host_cpu() -> (String, String) {
    static HOST: std::sync::OnceLock<(String, String)> = std::sync::OnceLock::new();
    HOST.get_or_init(|| {
        (
            TargetMachine::get_host_cpu_name().to_string(),
            TargetMachine::get_host_cpu_features().to_string(),
        )
    })
    .clone()
}

/// The host CPU's name and features, for cache keys (asked of LLVM once).
pub fn host_description() -> &'static str {
    static HOST: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    HOST.get_or_init(|| {
        let (cpu, features) = host_cpu();
        format!("{cpu} {features}")
    })
}

/// Lowers `module`'s kernels and converts them to the LLVM dialect.
pub(crate) fn to_llvm_dialect<'c>(
    context: &'c Context,
    module: &Module<'c>,
    options: &LowerOptions,
) -> Result<crate::lower::Lowered<'c>, Error> {
    let mut lowered = lower(context, module, options)?;
    crate::timings::phase("convert to the LLVM dialect", || {
        convert(context, &mut lowered.module)
    })?;
    crate::lower::interleave::annotate(context, &lowered.module, &lowered.interleave)?;
    Ok(lowered)
}

/// Lowers `module`'s kernels, then its row chains (`lower::rows`).
fn lower<'c>(
    context: &'c Context,
    module: &Module<'c>,
    options: &LowerOptions,
) -> Result<crate::lower::Lowered<'c>, Error> {
    crate::timings::phase("lower kernels", || {
        // Kernels only contraction epilogues call are lowered as part of
        // them, and on their own only when one of those does not lower.
        let absorbed = crate::lower::epilogue::absorbed(module);
        let mut lowered = crate::lower::lower(context, module, options, &absorbed)?;
        let fallback =
            crate::lower::epilogue::lower_epilogues(context, module, &mut lowered, &absorbed, options)?;
        crate::lower::lower_named(context, module, &mut lowered, options, &fallback)?;
        crate::lower::rows::lower_chains(context, module, &mut lowered)?;
        Ok(lowered)
    })
}

/// Runs the `llvm` pipeline on lowered kernels.
fn convert<'c>(context: &'c Context, lowered: &mut Module<'c>) -> Result<(), Error> {
    let conversions = Pipeline::named("llvm")
        .ok_or_else(|| Error::Pipeline("the llvm pipeline does not parse".into()))?
        .build(context)?;
    conversions
        .run(lowered)
        .map_err(|_| Error::Codegen("conversion to the LLVM dialect failed".into()))
}

/// Translates an LLVM-dialect module into `llvm_context` and optimizes it
/// with `default<O3>` for `machine`.
pub fn to_llvm_ir<'l>(
    lowered: &Module,
    no_inline: &[String],
    llvm_context: &'l LlvmContext,
    machine: &TargetMachine,
) -> Result<LlvmModule<'l>, Error> {
    let llvm_module = crate::timings::phase("translate to LLVM IR", || {
        translate(lowered, no_inline, llvm_context, machine)
    })?;
    crate::timings::phase("LLVM default<O3>", || optimize(&llvm_module, machine))?;
    Ok(llvm_module)
}

/// Translates an LLVM-dialect module into `llvm_context` for `machine`:
/// its triple, data layout, and each function's CPU and features.
fn translate<'l>(
    lowered: &Module,
    no_inline: &[String],
    llvm_context: &'l LlvmContext,
    machine: &TargetMachine,
) -> Result<LlvmModule<'l>, Error> {
    // SAFETY: the translated module is owned by the caller and lives in
    // `llvm_context`, which outlives the returned module ('l).
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
    llvm_module.set_triple(&machine.get_triple());
    llvm_module.set_data_layout(&machine.get_target_data().get_data_layout());
    // MCJIT builds its own target machine for a generic CPU; code generation
    // follows each function's own attributes, so pin the CPU there.
    let cpu = machine.get_cpu().to_string();
    let features = machine.get_feature_string().to_string_lossy().into_owned();
    let noinline = inkwell::attributes::Attribute::get_named_enum_kind_id("noinline");
    for function in llvm_module.get_functions() {
        let name = function.get_name().to_string_lossy();
        if no_inline.iter().any(|n| *n == name) {
            function.add_attribute(
                inkwell::attributes::AttributeLoc::Function,
                llvm_context.create_enum_attribute(noinline, 0),
            );
        }
        // Stack probes: a row chain's scratch (`lower::rows`) is a frame of
        // up to 128 KiB, which must touch the guard page of a nearly full
        // stack rather than jump past it. No reciprocal estimates: fast
        // math's divisions carry `arcp` (`lower::scalar`) for LICM to hoist
        // a loop-invariant divisor's reciprocal, which x86's instruction
        // selection would otherwise also take as leave to turn `x / y` and
        // `x / sqrt(y)` into `vrcp14ps`/`vrsqrt14ps` and a Newton step
        // (3 ulps, and NaN for a zero or infinite `y`).
        for (key, value) in [
            ("target-cpu", cpu.as_str()),
            ("target-features", features.as_str()),
            ("probe-stack", "inline-asm"),
            ("reciprocal-estimates", "none"),
        ] {
            if !value.is_empty() {
                function.add_attribute(
                    inkwell::attributes::AttributeLoc::Function,
                    llvm_context.create_string_attribute(key, value),
                );
            }
        }
    }
    Ok(llvm_module)
}

/// What `jitc compile` emits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Emit {
    /// The lowered kernels in MLIR (`scf`, `arith`, `math`, `llvm`).
    Mlir,
    /// Optimized LLVM IR.
    Llvm,
    /// Assembly.
    Asm,
    /// An ELF object file.
    Obj,
    /// PTX text (the NVIDIA GPU target's assembly).
    Ptx,
}

/// Output of [`emit`]: the bytes, and the kernels that were not compiled
/// with the reason.
pub type Emitted = (Vec<u8>, Vec<(String, String)>);

/// Compiles `module`'s kernels (fused already) to `emit` as `options` say.
pub fn emit(
    context: &Context,
    module: &Module,
    emit: Emit,
    options: &CodegenOptions,
) -> Result<Emitted, Error> {
    if emit == Emit::Mlir {
        let lowered = lower(context, module, &options.lowering())?;
        return Ok((
            format!("{}\n", lowered.module.as_operation()).into_bytes(),
            lowered.skipped,
        ));
    }
    let lowered = to_llvm_dialect(context, module, &options.lowering())?;
    let machine = target_machine(&options.target)?;
    let llvm_context = LlvmContext::create();
    let llvm_module = to_llvm_ir(&lowered.module, &lowered.no_inline, &llvm_context, &machine)?;
    let bytes = match emit {
        Emit::Llvm => llvm_module.print_to_string().to_bytes().to_vec(),
        Emit::Asm | Emit::Obj => {
            let kind = if emit == Emit::Asm {
                inkwell::targets::FileType::Assembly
            } else {
                inkwell::targets::FileType::Object
            };
            crate::timings::phase("machine code", || {
                machine
                    .write_to_memory_buffer(&llvm_module, kind)
                    .map_err(|e| Error::Codegen(e.to_string()))
            })?
            .as_slice()
            .to_vec()
        }
        Emit::Mlir => unreachable!("handled above"),
        Emit::Ptx => {
            return Err(Error::Codegen(
                "PTX is the GPU target's output; the CPU target emits mlir, llvm, asm or obj".into(),
            ));
        }
    };
    Ok((bytes, lowered.skipped))
}

/// Lowers, optimizes and JIT-compiles the `meta.fused` kernels of `module`
/// for `options.target` (which must be the host or a CPU it can run).
pub fn compile(context: &Context, module: &Module, options: &CodegenOptions) -> Result<CpuArtifact, Error> {
    let lowered = to_llvm_dialect(context, module, &options.lowering())?;
    jit(lowered, &options.target)
}

/// Compiles kernels in the LLVM dialect to object code for `target` and
/// loads it. Kernels that share no code are optimized and compiled on
/// several threads, each with its own LLVM context and a copy of the
/// module that keeps only its share of them (one object each).
pub(crate) fn jit(lowered: crate::lower::Lowered, target: &CpuTarget) -> Result<CpuArtifact, Error> {
    let crate::lower::Lowered {
        module: lowered,
        signatures,
        skipped,
        no_inline,
        // Already in the module, as loop annotations.
        interleave: _,
    } = lowered;
    let llvm_context = LlvmContext::create();
    let machine = loadable_target_machine(target)?;
    let llvm_module = crate::timings::phase("translate to LLVM IR", || {
        translate(&lowered, &no_inline, &llvm_context, &machine)
    })?;
    let groups = independent_groups(&llvm_module);
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let shares = shares(groups, threads);
    let (objects, llvm_ir) = if shares.len() <= 1 {
        crate::timings::phase("LLVM default<O3>", || optimize(&llvm_module, &machine))?;
        let llvm_ir = crate::timings::phase("print LLVM IR", || llvm_module.print_to_string().to_string());
        let object = crate::timings::phase("machine code", || object_code(&machine, &llvm_module))?;
        (vec![object], llvm_ir)
    } else {
        let bitcode = llvm_module.write_bitcode_to_memory();
        let bitcode = bitcode.as_slice();
        let name = format!("LLVM default<O3> and machine code, {} threads", shares.len());
        let parts = crate::timings::phase_named(name, || {
            std::thread::scope(|scope| {
                // LLVM recurses deeply on large kernels: a stack like the
                // main thread's, not a spawned thread's 2 MiB.
                let workers: Vec<_> = shares
                    .iter()
                    .map(|share| {
                        std::thread::Builder::new()
                            .name("jitc-llvm".into())
                            .stack_size(COMPILE_STACK_BYTES)
                            .spawn_scoped(scope, move || compile_share(bitcode, share, target))
                    })
                    .collect();
                workers
                    .into_iter()
                    .map(|w| match w {
                        Ok(worker) => worker
                            .join()
                            .unwrap_or_else(|_| Err(Error::Codegen("a compiling thread panicked".into()))),
                        Err(e) => Err(Error::Codegen(format!("cannot start a compiling thread: {e}"))),
                    })
                    .collect::<Result<Vec<_>, Error>>()
            })
        })?;
        let (objects, irs): (Vec<_>, Vec<_>) = parts.into_iter().unzip();
        (objects, irs.concat())
    };
    let mut artifact = crate::timings::phase("load the object code", || {
        CpuArtifact::load(objects, signatures, skipped, Vec::new())
    })?;
    artifact.llvm_ir = llvm_ir;
    Ok(artifact)
}

/// Runs LLVM's `default<O3>` on `module` for `machine`, then makes the
/// stores of streamed results non-temporal (x86) and puts the software
/// prefetches of marked loads in.
fn optimize(module: &LlvmModule, machine: &TargetMachine) -> Result<(), Error> {
    module
        .run_passes("default<O3>", machine, PassBuilderOptions::create())
        .map_err(|e| Error::Codegen(e.to_string()))?;
    streaming_stores(module, machine)?;
    software_prefetches(module, machine)
}

/// After the loops are vectorized: before each load marked for prefetch
/// (`lower::prefetch`) that reads a vector of at least 32 bytes, a
/// prefetch (read, into L2, data) of the address the mark's distance
/// ahead. Scalar loads (remainders) get none.
fn software_prefetches(module: &LlvmModule, machine: &TargetMachine) -> Result<(), Error> {
    use inkwell::{
        AddressSpace,
        intrinsics::Intrinsic,
        types::AnyType,
        values::{BasicMetadataValueEnum, InstructionOpcode, Operand},
    };
    let context = module.get_context();
    let tbaa = context.get_kind_id("tbaa");
    let data = machine.get_target_data();
    // The distance the tag's base type names, when it is a prefetch mark.
    let distance = |tag: inkwell::values::MetadataValue| -> Option<i64> {
        let Some(BasicMetadataValueEnum::MetadataValue(base)) = tag.get_node_values()?.first().copied()
        else {
            return None;
        };
        let Some(BasicMetadataValueEnum::MetadataValue(name)) = base.get_node_values()?.first().copied()
        else {
            return None;
        };
        std::str::from_utf8(name.get_string_value()?)
            .ok()?
            .strip_prefix(crate::lower::prefetch::PREFETCH_TBAA)?
            .parse()
            .ok()
    };
    let failed = |what: &str| Error::Codegen(format!("software prefetch: {what}"));
    let builder = context.create_builder();
    let pointer = context.ptr_type(AddressSpace::default());
    let mut prefetch = None;
    for function in module.get_functions() {
        for block in function.get_basic_blocks() {
            let mut next = block.get_first_instruction();
            while let Some(instruction) = next {
                next = instruction.get_next_instruction();
                if instruction.get_opcode() != InstructionOpcode::Load {
                    continue;
                }
                let Some(bytes) = instruction.get_metadata(tbaa).and_then(distance) else {
                    continue;
                };
                let r#type = instruction.get_type();
                let size = data.get_store_size(&r#type.as_any_type_enum());
                let Some(Operand::Value(address)) = instruction.get_operand(0) else {
                    continue;
                };
                if !r#type.is_vector_type() || size < 32 || !address.is_pointer_value() {
                    continue;
                }
                let declaration = match prefetch {
                    Some(declaration) => declaration,
                    None => {
                        let found = Intrinsic::find("llvm.prefetch")
                            .and_then(|i| i.get_declaration(module, &[pointer.into()]))
                            .ok_or_else(|| failed("no llvm.prefetch"))?;
                        *prefetch.insert(found)
                    }
                };
                builder.position_before(&instruction);
                let i8_type = context.i8_type();
                let offset = context.i64_type().const_int(bytes as u64, true);
                // SAFETY: a byte offset from a pointer the kernel loads
                // through; a prefetch of an address outside any object
                // does not fault, and the address is not used otherwise.
                let ahead =
                    unsafe { builder.build_gep(i8_type, address.into_pointer_value(), &[offset], "ahead") }
                        .map_err(|e| failed(&e.to_string()))?;
                let i32_type = context.i32_type();
                // Read (0), locality 2 (L2, as `prefetcht1`), data (1).
                let arguments = [
                    ahead.into(),
                    i32_type.const_zero().into(),
                    i32_type.const_int(2, false).into(),
                    i32_type.const_int(1, false).into(),
                ];
                builder
                    .build_call(declaration, &arguments, "")
                    .map_err(|e| failed(&e.to_string()))?;
            }
        }
    }
    Ok(())
}

/// On x86, after the loops are vectorized: each store marked as a streamed
/// result's (`lower::stream`) that writes a whole vector of at least 16
/// bytes at an address aligned to its size becomes non-temporal
/// (`vmovntps`), and a function with such a store fences them
/// (`sfence`) before each of its returns, so a thread that reads the result
/// after the kernel returns sees it. Other marked stores (scalar
/// remainders, unaligned vectors, which x86 would split into scalar
/// non-temporal stores) stay as they are.
fn streaming_stores(module: &LlvmModule, machine: &TargetMachine) -> Result<(), Error> {
    use inkwell::{
        intrinsics::Intrinsic,
        types::AnyType,
        values::{BasicMetadataValueEnum, InstructionOpcode, Operand},
    };
    if !module
        .get_triple()
        .as_str()
        .to_string_lossy()
        .starts_with("x86_64")
    {
        return Ok(());
    }
    let context = module.get_context();
    let (tbaa, nontemporal) = (context.get_kind_id("tbaa"), context.get_kind_id("nontemporal"));
    let flag = context.metadata_node(&[context.i32_type().const_int(1, false).into()]);
    let data = machine.get_target_data();
    // The tag's base type is named `STREAM_TBAA`.
    let marked = |tag: inkwell::values::MetadataValue| {
        let Some(BasicMetadataValueEnum::MetadataValue(base)) =
            tag.get_node_values().and_then(|v| v.first().copied())
        else {
            return false;
        };
        matches!(
            base.get_node_values().and_then(|v| v.first().copied()),
            Some(BasicMetadataValueEnum::MetadataValue(name))
                if name.get_string_value() == Some(crate::lower::stream::STREAM_TBAA.as_bytes())
        )
    };
    let failed = |what: &str| Error::Codegen(format!("streaming stores: {what}"));
    let builder = context.create_builder();
    for function in module.get_functions() {
        let mut returns = Vec::new();
        let mut streams = false;
        for block in function.get_basic_blocks() {
            let mut next = block.get_first_instruction();
            while let Some(instruction) = next {
                next = instruction.get_next_instruction();
                match instruction.get_opcode() {
                    InstructionOpcode::Return => returns.push(instruction),
                    InstructionOpcode::Store if instruction.get_metadata(tbaa).is_some_and(marked) => {
                        let Some(Operand::Value(value)) = instruction.get_operand(0) else {
                            continue;
                        };
                        let r#type = value.get_type();
                        let bytes = data.get_store_size(&r#type.as_any_type_enum());
                        let aligned = instruction.get_alignment().is_ok_and(|a| u64::from(a) >= bytes);
                        if r#type.is_vector_type() && bytes >= 16 && aligned {
                            instruction
                                .set_metadata(flag, nontemporal)
                                .map_err(|e| failed(&e.to_string()))?;
                            streams = true;
                        }
                    }
                    _ => {}
                }
            }
        }
        if streams {
            let sfence = Intrinsic::find("llvm.x86.sse.sfence")
                .and_then(|i| i.get_declaration(module, &[]))
                .ok_or_else(|| failed("no llvm.x86.sse.sfence"))?;
            for ret in returns {
                builder.position_before(&ret);
                builder
                    .build_call(sfence, &[], "")
                    .map_err(|e| failed(&e.to_string()))?;
            }
        }
    }
    Ok(())
}

/// The stack of each thread that compiles a share of the kernels.
const COMPILE_STACK_BYTES: usize = 64 << 20;

/// `module` as an ELF object for `machine`.
fn object_code(machine: &TargetMachine, module: &LlvmModule) -> Result<Vec<u8>, Error> {
    Ok(machine
        .write_to_memory_buffer(module, inkwell::targets::FileType::Object)
        .map_err(|e| Error::Codegen(e.to_string()))?
        .as_slice()
        .to_vec())
}

/// On a thread of its own: the module in `bitcode`, with the functions
/// defined outside `share` deleted, optimized and compiled; its object
/// and optimized IR.
fn compile_share(bitcode: &[u8], share: &[String], target: &CpuTarget) -> Result<(Vec<u8>, String), Error> {
    let context = LlvmContext::create();
    let buffer = inkwell::memory_buffer::MemoryBuffer::create_from_memory_range_copy(bitcode, "kernels");
    let module = LlvmModule::parse_bitcode_from_buffer(&buffer, &context)
        .map_err(|e| Error::Codegen(e.to_string()))?;
    let others: Vec<_> = module
        .get_functions()
        .filter(|f| f.count_basic_blocks() > 0)
        .filter(|f| !share.iter().any(|name| f.get_name().to_str() == Ok(name)))
        .collect();
    use inkwell::values::BasicValue;
    // The other shares' functions use each other (a chain calls its
    // stages, defined before it): a function is deleted only once nothing
    // uses it, so its users go first. Nothing this share keeps uses them
    // (`independent_groups` put every user with what it uses).
    let mut others = others;
    while !others.is_empty() {
        let before = others.len();
        others.retain(|function| {
            if function
                .as_global_value()
                .as_pointer_value()
                .get_first_use()
                .is_some()
            {
                return true;
            }
            // SAFETY: the function has no uses left and is not touched
            // after it is deleted.
            unsafe { function.delete() };
            false
        });
        if others.len() == before {
            // Only functions that use each other in a cycle are left:
            // unlink their uses, then delete them all.
            let null = context.ptr_type(inkwell::AddressSpace::default()).const_null();
            for function in &others {
                function
                    .as_global_value()
                    .as_pointer_value()
                    .replace_all_uses_with(null);
            }
            for function in others.drain(..) {
                // SAFETY: as above; its uses were just replaced.
                unsafe { function.delete() };
            }
        }
    }
    let machine = loadable_target_machine(target)?;
    optimize(&module, &machine)?;
    let ir = module.print_to_string().to_string();
    Ok((object_code(&machine, &module)?, ir))
}

/// The functions `module` defines, in groups that use nothing of each
/// other (a row chain and its stages are one group), each with its size
/// in instructions. One group when a function is used other than by an
/// instruction, or the module has global variables (nothing can be split
/// safely then).
fn independent_groups(module: &LlvmModule) -> Vec<(Vec<String>, usize)> {
    use inkwell::values::{AnyValueEnum, BasicValue};
    use petgraph::unionfind::UnionFind;
    let defined: Vec<_> = module
        .get_functions()
        .filter(|f| f.count_basic_blocks() > 0)
        .collect();
    let names: Vec<String> = defined
        .iter()
        .map(|f| f.get_name().to_string_lossy().into_owned())
        .collect();
    // Global variables would be defined once per share (twice, or with
    // their state split): CPU lowering makes none; if one appears, nothing
    // is split.
    if module.get_first_global().is_some() {
        return vec![(names, 0)];
    }
    let index: HashMap<&str, usize> = names.iter().enumerate().map(|(i, n)| (n.as_str(), i)).collect();
    // A function and each function that uses it are one set.
    let mut sets = UnionFind::<usize>::new(defined.len());
    for (i, function) in defined.iter().enumerate() {
        let mut next = function.as_global_value().as_pointer_value().get_first_use();
        while let Some(use_) = next {
            let AnyValueEnum::InstructionValue(user) = use_.get_user() else {
                return vec![(names, 0)];
            };
            let Some(j) = user
                .get_parent()
                .and_then(|block| block.get_parent())
                .and_then(|f| index.get(&*f.get_name().to_string_lossy()).copied())
            else {
                return vec![(names, 0)];
            };
            sets.union(i, j);
            next = use_.get_next_use();
        }
    }
    let mut groups: HashMap<usize, (Vec<String>, usize)> = HashMap::new();
    for (i, function) in defined.iter().enumerate() {
        let size = function
            .get_basic_blocks()
            .iter()
            .map(|b| b.get_instructions().count())
            .sum::<usize>();
        let group = groups.entry(sets.find_mut(i)).or_default();
        group.0.push(names[i].clone());
        group.1 += size;
    }
    let mut groups: Vec<_> = groups.into_values().collect();
    groups.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    groups
}

/// Kernel groups dealt to at most `threads` shares of about equal size
/// (largest group first, each to the smallest share), in a fixed order.
/// Fewer than 2 shares, or modules too small to pay for the copies, give
/// one share.
fn shares(groups: Vec<(Vec<String>, usize)>, threads: usize) -> Vec<Vec<String>> {
    /// Instructions below which a module compiles faster on one thread
    /// than it takes to copy it to another context.
    const MIN_PARALLEL_INSTRUCTIONS: usize = 300;
    let total: usize = groups.iter().map(|g| g.1).sum();
    let count = threads.min(groups.len());
    if count < 2 || total < MIN_PARALLEL_INSTRUCTIONS {
        return vec![groups.into_iter().flat_map(|g| g.0).collect()];
    }
    let mut shares: Vec<(Vec<String>, usize)> = vec![(Vec::new(), 0); count];
    for (names, size) in groups {
        let smallest = shares
            .iter_mut()
            .min_by_key(|s| s.1)
            .expect("at least two shares");
        smallest.0.extend(names);
        smallest.1 += size;
    }
    shares
        .into_iter()
        .map(|s| s.0)
        .filter(|s| !s.is_empty())
        .collect()
}

/// An NVIDIA GPU architecture to generate code for.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum GpuArch {
    /// Ampere (A100): `sm_80`, PTX ISA 7.0.
    #[default]
    Sm80,
    /// Hopper (H100, H200): `sm_90`, PTX ISA 7.8.
    Sm90,
}

impl GpuArch {
    /// Every architecture, for help and error messages.
    pub const ALL: [GpuArch; 2] = [GpuArch::Sm80, GpuArch::Sm90];

    /// LLVM's CPU name for it.
    pub fn name(self) -> &'static str {
        match self {
            GpuArch::Sm80 => "sm_80",
            GpuArch::Sm90 => "sm_90",
        }
    }

    /// The oldest PTX ISA that has it, as an LLVM feature: the PTX loads on
    /// every driver that knows the architecture.
    fn ptx_feature(self) -> &'static str {
        match self {
            GpuArch::Sm80 => "+ptx70",
            GpuArch::Sm90 => "+ptx78",
        }
    }

    /// The architecture named `name` (`sm_80`, `sm_90`).
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|a| a.name() == name)
    }
}

/// Everything that decides the PTX [`ptx`] produces. The default: sm_80,
/// fast math, no bounds checks, row chains and contraction tiles.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct GpuOptions {
    /// The architecture.
    pub arch: GpuArch,
    /// How transcendental functions are computed.
    pub math: crate::lower::MathMode,
    /// The bounds-checked mode, as [`CodegenOptions::check_bounds`].
    pub check_bounds: bool,
    /// Only Jittor's fusion, as [`CodegenOptions::jittor_rules`]: no row
    /// chains, whatever [`Self::row_chains`] says.
    pub jittor_rules: bool,
    /// Kernels that share their rows run as row chains, one block per row
    /// with the values between them in shared memory (`lower::gpu_rows`;
    /// fast math without bounds checks only). On by default; off, the
    /// same kernels launch one by one (for comparing the two).
    pub row_chains: bool,
    /// Contractions as shared-memory tiles (`lower::contract::gpu_tiles`:
    /// a block of 16 x 16 threads per tile of the output, the operands
    /// staged through shared memory) instead of one thread per output.
    /// On by default (an H200 first ran them on 2026-11-30); outside the
    /// bounds-checked mode.
    pub tiles: bool,
}

impl Default for GpuOptions {
    fn default() -> Self {
        Self {
            arch: GpuArch::default(),
            math: crate::lower::MathMode::default(),
            check_bounds: false,
            jittor_rules: false,
            row_chains: true,
            tiles: true,
        }
    }
}

impl GpuOptions {
    fn lowering(&self) -> LowerOptions {
        LowerOptions {
            math: self.math,
            check_bounds: self.check_bounds,
            gpu_tiles: self.tiles,
            libdevice: libdevice().is_some(),
            ..LowerOptions::default()
        }
    }
}

/// NVIDIA's libdevice (`libdevice.10.bc`, the CUDA math library as LLVM
/// bitcode), which GPU kernels that need math functions link: the file
/// `JITC_LIBDEVICE` names, else CUDA's usual place. Read once per
/// process; `None` when there is none, and such kernels are then not
/// compiled for the GPU (they run in the interpreter).
pub fn libdevice() -> Option<&'static std::path::Path> {
    static PATH: std::sync::OnceLock<Option<std::path::PathBuf>> = std::sync::OnceLock::new();
    PATH.get_or_init(|| {
        let named = std::env::var_os("JITC_LIBDEVICE").map(std::path::PathBuf::from);
        let usual = std::path::PathBuf::from("/usr/local/cuda/nvvm/libdevice/libdevice.10.bc");
        named.or(Some(usual)).filter(|p| p.is_file())
    })
    .as_deref()
}

/// Math the GPU kernels call (LLVM intrinsics and C library names, as
/// MLIR's math conversions leave them), with libdevice's function for each.
const LIBDEVICE_NAMES: &[(&str, &str)] = &[
    ("llvm.sin.f32", "__nv_sinf"),
    ("llvm.sin.f64", "__nv_sin"),
    ("llvm.cos.f32", "__nv_cosf"),
    ("llvm.cos.f64", "__nv_cos"),
    ("llvm.exp.f32", "__nv_expf"),
    ("llvm.exp.f64", "__nv_exp"),
    ("llvm.log.f32", "__nv_logf"),
    ("llvm.log.f64", "__nv_log"),
    ("llvm.pow.f32", "__nv_powf"),
    ("llvm.pow.f64", "__nv_pow"),
    ("llvm.tanh.f32", "__nv_tanhf"),
    ("llvm.tanh.f64", "__nv_tanh"),
    ("sinf", "__nv_sinf"),
    ("sin", "__nv_sin"),
    ("cosf", "__nv_cosf"),
    ("cos", "__nv_cos"),
    ("expf", "__nv_expf"),
    ("exp", "__nv_exp"),
    ("logf", "__nv_logf"),
    ("log", "__nv_log"),
    ("powf", "__nv_powf"),
    ("pow", "__nv_pow"),
    ("tanhf", "__nv_tanhf"),
    ("tanh", "__nv_tanh"),
    ("erff", "__nv_erff"),
    ("erf", "__nv_erf"),
];

/// Points every math declaration of `module` at libdevice's function
/// (declared with the same type) and drops the old declaration.
fn use_libdevice_names(module: &LlvmModule) {
    for (from, to) in LIBDEVICE_NAMES {
        let Some(declared) = module.get_function(from) else {
            continue;
        };
        if declared.count_basic_blocks() != 0 {
            continue;
        }
        let target = module
            .get_function(to)
            .unwrap_or_else(|| module.add_function(to, declared.get_type(), None));
        declared.replace_all_uses_with(target);
        // SAFETY: the declaration has no uses left and is not read again.
        unsafe { declared.delete() };
    }
}

/// Links libdevice at `path` into `module` and makes every function that
/// is not a kernel internal, so `default<O3>` inlines what the kernels
/// call and drops the rest.
fn link_libdevice<'l>(
    module: &LlvmModule<'l>,
    llvm_context: &'l LlvmContext,
    path: &std::path::Path,
) -> Result<(), Error> {
    let library = LlvmModule::parse_bitcode_from_path(path, llvm_context)
        .map_err(|e| Error::Codegen(format!("cannot read libdevice {}: {e}", path.display())))?;
    library.set_triple(&module.get_triple());
    library.set_data_layout(&module.get_data_layout());
    module
        .link_in_module(library)
        .map_err(|e| Error::Codegen(format!("cannot link libdevice {}: {e}", path.display())))?;
    for function in module.get_functions() {
        if function.count_basic_blocks() != 0 && function.get_call_conventions() != PTX_KERNEL {
            function.set_linkage(inkwell::module::Linkage::Internal);
        }
    }
    Ok(())
}

/// The triple of NVIDIA GPUs (64-bit addresses).
pub const NVPTX_TRIPLE: &str = "nvptx64-nvidia-cuda";

/// The PTX calling convention of kernel entries (LLVM's `ptx_kernel`).
const PTX_KERNEL: u32 = 71;

/// The NVPTX target machine for `arch`.
pub fn nvptx_machine(arch: GpuArch) -> Result<TargetMachine, Error> {
    Target::initialize_nvptx(&InitializationConfig::default());
    let triple = inkwell::targets::TargetTriple::create(NVPTX_TRIPLE);
    let target = Target::from_triple(&triple).map_err(|e| Error::Codegen(e.to_string()))?;
    target
        .create_target_machine(
            &triple,
            arch.name(),
            arch.ptx_feature(),
            OptimizationLevel::Aggressive,
            RelocMode::Default,
            CodeModel::Default,
        )
        .ok_or_else(|| Error::Codegen(format!("LLVM has no NVPTX target machine for {}", arch.name())))
}

/// A module's kernels compiled to PTX, with their parameters and launches.
#[derive(Debug, Clone)]
pub struct PtxArtifact {
    /// The PTX module: one `.entry` per kernel (and per fill launch).
    pub text: String,
    /// The kernels' parameters and launches.
    pub kernels: Vec<crate::lower::gpu::GpuKernel>,
    /// Kernels not compiled for the GPU, with the reason.
    pub skipped: Vec<(String, String)>,
    /// The optimized LLVM IR.
    pub llvm_ir: String,
}

/// Lowers `module`'s kernels (fused already) for the GPU, in the LLVM
/// dialect.
pub(crate) fn to_llvm_dialect_gpu<'c>(
    context: &'c Context,
    module: &Module<'c>,
    options: &LowerOptions,
) -> Result<crate::lower::gpu::LoweredGpu<'c>, Error> {
    let mut lowered = crate::timings::phase("lower kernels", || {
        crate::lower::gpu_rows::lower_gpu_with_chains(context, module, options)
    })?;
    crate::timings::phase("convert to the LLVM dialect", || {
        convert(context, &mut lowered.module)
    })?;
    Ok(lowered)
}

/// Compiles `module`'s kernels (fused already) to PTX: lowering for the
/// GPU, the conversions to the LLVM dialect, translation, the `ptx_kernel`
/// calling convention on every entry, `default<O3>` for the NVPTX target
/// machine, and LLVM's NVPTX assembly printer.
pub fn ptx(context: &Context, module: &Module, options: &GpuOptions) -> Result<PtxArtifact, Error> {
    let lowered = to_llvm_dialect_gpu(context, module, &options.lowering())?;
    let machine = nvptx_machine(options.arch)?;
    let llvm_context = LlvmContext::create();
    let llvm_module = crate::timings::phase("translate to LLVM IR", || {
        translate(&lowered.module, &[], &llvm_context, &machine)
    })?;
    // Linked only when some kernel calls it: parsing it costs ~25 ms.
    let library = libdevice();
    if library.is_some() {
        use_libdevice_names(&llvm_module);
    }
    let calls_libdevice = llvm_module
        .get_functions()
        .any(|f| f.count_basic_blocks() == 0 && f.get_name().to_string_lossy().starts_with("__nv_"));
    for function in llvm_module.get_functions() {
        if function.count_basic_blocks() == 0 {
            let name = function.get_name().to_string_lossy();
            let known = name.starts_with("llvm.") || (library.is_some() && name.starts_with("__nv_"));
            if !known {
                return Err(Error::Codegen(format!(
                    "a GPU kernel calls '{name}', which does not exist on the GPU"
                )));
            }
            continue;
        }
        function.set_call_conventions(PTX_KERNEL);
    }
    if let (Some(path), true) = (library, calls_libdevice) {
        crate::timings::phase("link libdevice", || {
            link_libdevice(&llvm_module, &llvm_context, path)
        })?;
    }
    crate::timings::phase("LLVM default<O3>", || optimize(&llvm_module, &machine))?;
    let llvm_ir = crate::timings::phase("print LLVM IR", || llvm_module.print_to_string().to_string());
    let text = crate::timings::phase("machine code", || {
        machine
            .write_to_memory_buffer(&llvm_module, inkwell::targets::FileType::Assembly)
            .map_err(|e| Error::Codegen(e.to_string()))
    })?;
    let text = String::from_utf8_lossy(text.as_slice()).into_owned();
    Ok(PtxArtifact {
        text,
        kernels: lowered.kernels,
        skipped: lowered.skipped,
        llvm_ir,
    })
}

/// Compiles `module`'s kernels (fused already) for the GPU to `emit`:
/// `mlir` (lowered, before the LLVM conversions), `llvm` (optimized
/// NVPTX LLVM IR) or `ptx`/`asm` (PTX).
pub fn emit_gpu(
    context: &Context,
    module: &Module,
    emit: Emit,
    options: &GpuOptions,
) -> Result<Emitted, Error> {
    match emit {
        Emit::Mlir => {
            let lowered =
                crate::lower::gpu_rows::lower_gpu_with_chains(context, module, &options.lowering())?;
            Ok((
                format!("{}\n", lowered.module.as_operation()).into_bytes(),
                lowered.skipped,
            ))
        }
        Emit::Llvm => {
            let ptx = ptx(context, module, options)?;
            Ok((ptx.llvm_ir.into_bytes(), ptx.skipped))
        }
        Emit::Ptx | Emit::Asm => {
            let ptx = ptx(context, module, options)?;
            Ok((ptx.text.into_bytes(), ptx.skipped))
        }
        Emit::Obj => Err(Error::Codegen(
            "the GPU target emits PTX text (--emit ptx); the driver compiles it when it loads it".into(),
        )),
    }
}

#[cfg(test)]
mod tests {
    //! The bounds-checked mode catches accesses out of bounds. Correct
    //! lowering never makes one, so these tests skew every checked offset
    //! (`LowerOptions::skew`, applied inside the check) and call the kernel
    //! directly: without the checks, nothing would be skewed, the kernel
    //! would succeed, and the tests would fail.

    use super::*;
    use crate::{KernelStatus, lower::MathMode};

    const ADD: &str = r#"func.func @main(%x: tensor<4xf32>, %y: tensor<4xf32>) -> tensor<4xf32> {
  %s = "meta.binary"(%x, %y) {kind = "add"} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %s : tensor<4xf32>
}"#;

    /// The output and status record of `ADD`'s kernel, compiled in the
    /// bounds-checked mode with `skew`, on `[1 2 3 4] + [10 20 30 40]`,
    /// its output filled with -1 first; and the kernel's signature.
    fn run_add(skew: i64) -> ([f32; 4], KernelStatus, KernelSignature) {
        let context = crate::new_context().unwrap();
        let mut module = crate::parse_module(&context, ADD).unwrap();
        crate::fuse(&context, &mut module).unwrap();
        let options = LowerOptions {
            math: MathMode::Exact,
            check_bounds: true,
            skew,
            libdevice: false,
            vector_bits: 0,
            streaming: false,
            gpu_tiles: false,
            emulate_gpu_tiles: false,
            gpu_tile_shape: None,
        };
        let artifact = jit(
            to_llvm_dialect(&context, &module, &options).unwrap(),
            &CpuTarget::default(),
        )
        .unwrap();
        let (function, signature) = artifact.get("main_fused_0").unwrap();
        let mut x = [1.0f32, 2.0, 3.0, 4.0];
        let mut y = [10.0f32, 20.0, 30.0, 40.0];
        let mut out = [-1.0f32; 4];
        let mut status: KernelStatus = [0; 2];
        let pointers: [*mut u8; 4] = [
            x.as_mut_ptr().cast(),
            y.as_mut_ptr().cast(),
            out.as_mut_ptr().cast(),
            status.as_mut_ptr().cast(),
        ];
        // SAFETY: the kernel takes two 4-element f32 inputs, a 4-element
        // f32 output and a status record, all live across the call.
        unsafe { function(pointers.as_ptr(), 0, signature.outer) };
        (out, status, signature.clone())
    }

    #[test]
    fn checked_accesses_are_numbered_and_described() {
        let (out, status, signature) = run_add(0);
        assert_eq!(out, [11.0, 22.0, 33.0, 44.0]);
        assert_eq!(status, [0, 0]);
        assert_eq!(signature.failure(status), None);
        let table: Vec<String> = signature.accesses.iter().map(ToString::to_string).collect();
        assert_eq!(
            table,
            [
                "'meta.binary' at line 2 reads %arg0 (tensor<4xf32>, 4 elements)",
                "'meta.binary' at line 2 reads %arg1 (tensor<4xf32>, 4 elements)",
                "'meta.binary' at line 2 writes result 0 (tensor<4xf32>, 4 elements)",
            ]
        );
    }

    #[test]
    fn an_access_past_the_end_is_reported_and_not_made() {
        let (out, status, signature) = run_add(4);
        // The first failing access in loop order: %arg0 at point 0.
        assert_eq!(status, [FIRST_ACCESS, 4]);
        assert_eq!(
            signature.failure(status).unwrap().message,
            "out-of-bounds access: 'meta.binary' at line 2 reads %arg0 (tensor<4xf32>) at element offset 4, outside its 4 elements"
        );
        // Every store was out of bounds too, so none was made.
        assert_eq!(out, [-1.0; 4]);
    }

    #[test]
    fn a_division_by_zero_names_its_op_and_line() {
        let (_, _, signature) = run_add(0);
        let failure = signature
            .failure([crate::lower::DIVISION_BY_ZERO_STATUS, 7])
            .unwrap();
        assert_eq!(failure.op, Some(("meta.binary".to_owned(), Some(7))));
        assert_eq!(failure.message, "integer division by zero");
        // A location without a line. (How the runtime words both:
        // `jitc_interp::Error::from_kernel`'s test.)
        let failure = signature
            .failure([crate::lower::DIVISION_BY_ZERO_STATUS, 0])
            .unwrap();
        assert_eq!(failure.op, Some(("meta.binary".to_owned(), None)));
        assert_eq!(failure.message, "integer division by zero");
    }

    #[test]
    fn an_access_before_the_start_is_reported() {
        let (_, status, signature) = run_add(-1);
        assert_eq!(status, [FIRST_ACCESS, -1]);
        assert!(
            signature
                .failure(status)
                .unwrap()
                .message
                .ends_with("at element offset -1, outside its 4 elements")
        );
    }

    const FIRST_ACCESS: i64 = crate::lower::FIRST_ACCESS_STATUS;
}

#[cfg(test)]
mod parallel_tests {
    //! Kernels compiled on several threads: how they are split, and that
    //! the split module computes what the whole one does.

    use super::*;

    /// A module parsed from LLVM IR text.
    fn module_from_ir<'c>(context: &'c LlvmContext, ir: &str) -> LlvmModule<'c> {
        let buffer = inkwell::memory_buffer::MemoryBuffer::create_from_memory_range_copy(ir.as_bytes(), "t");
        context.create_module_from_ir(buffer).expect("valid IR")
    }

    fn group(names: &[&str], size: usize) -> (Vec<String>, usize) {
        (names.iter().map(|n| (*n).to_owned()).collect(), size)
    }

    #[test]
    fn groups_are_dealt_largest_first_to_the_smallest_share() {
        let groups = vec![
            group(&["a"], 500),
            group(&["b", "b_stage"], 300),
            group(&["c"], 250),
        ];
        assert_eq!(
            shares(groups.clone(), 2),
            vec![
                vec!["a".to_owned()],
                vec!["b".into(), "b_stage".into(), "c".into()]
            ]
        );
        // One thread, one group, or too little work: one share.
        assert_eq!(shares(groups.clone(), 1).len(), 1);
        assert_eq!(shares(vec![group(&["a"], 10_000)], 8).len(), 1);
        assert_eq!(shares(vec![group(&["a"], 100), group(&["b"], 100)], 2).len(), 1);
        // Never more shares than groups.
        assert_eq!(shares(groups, 16).len(), 3);
    }

    /// Two independent kernels and a chain whose stage it calls: the
    /// chain and its stage stay in one group, the others apart.
    #[test]
    fn a_function_and_what_it_calls_stay_together() {
        let context = LlvmContext::create();
        let ir = r#"
            define void @k1(ptr %p) { store i32 1, ptr %p
              ret void }
            define void @k2(ptr %p) { store i32 2, ptr %p
              ret void }
            define internal void @stage(ptr %p) { store i32 3, ptr %p
              ret void }
            define void @chain(ptr %p) { call void @stage(ptr %p)
              ret void }
            declare float @expf(float)
        "#;
        let module = module_from_ir(&context, ir);
        let mut groups: Vec<Vec<String>> = independent_groups(&module)
            .into_iter()
            .map(|(mut names, _)| {
                names.sort();
                names
            })
            .collect();
        groups.sort();
        assert_eq!(
            groups,
            vec![
                vec!["chain".to_owned(), "stage".into()],
                vec!["k1".into()],
                vec!["k2".into()]
            ]
        );
    }

    /// A share that leaves out a chain and the stage it calls (defined
    /// before it, as lowering writes them) deletes the chain first: a
    /// stage deleted while the chain still called it would leave the
    /// chain's call pointing into freed memory. Functions that call each
    /// other in a cycle are unlinked, then deleted.
    #[test]
    fn a_share_deletes_what_it_leaves_out_users_first() {
        let context = LlvmContext::create();
        let ir = r#"
            define void @stage(ptr %p) { store i32 3, ptr %p
              ret void }
            define void @chain(ptr %p) { call void @stage(ptr %p)
              ret void }
            define void @k1(ptr %p) { store i32 1, ptr %p
              ret void }
            define void @loop_a(ptr %p) { call void @loop_b(ptr %p)
              ret void }
            define void @loop_b(ptr %p) { call void @loop_a(ptr %p)
              ret void }
        "#;
        let module = module_from_ir(&context, ir);
        let bitcode = module.write_bitcode_to_memory();
        let (object, ir) = compile_share(bitcode.as_slice(), &["k1".to_owned()], &CpuTarget::default())
            .expect("the share compiles");
        assert!(!object.is_empty());
        assert!(
            ir.contains("@k1(") && !ir.contains("@stage(") && !ir.contains("@loop_a("),
            "{ir}"
        );
    }
}
