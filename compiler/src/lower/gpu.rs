//! Lowering `meta.fused` kernels to NVIDIA GPU kernels, in the same
//! LLVM-ready dialects as the CPU plus `nvvm` for thread indices and
//! barriers; [`crate::codegen::ptx`] takes them on to PTX.
//!
//! Every kernel becomes `func.func @name(...)`, its parameters passed by
//! value, in the order of [`GpuKernel::signature`]: one `!llvm.ptr` (a
//! device address) per tensor argument, an `i64` per index argument, one
//! `!llvm.ptr` per result and one to the kernel's status record
//! ([`super::KernelStatus`], as on the CPU: 1 on an integer division by
//! zero, `2 + k` and the offset when checked access `k` is out of bounds;
//! one record per launch, zeroed by the caller), then the scratch memory's
//! pointer when the kernel has some ([`Launch::scratch`]), and last an
//! `i64` per dynamic dimension of the tensor arguments, its size
//! ([`super::KernelSignature::dynamic_dims`]: a tensor of dynamic shape may
//! be read, as IndRNN's projection reads `xs[t, i, k]` from a sequence of
//! any length, but the domain and the results are static, since the launch
//! is sized at compile time). Kernels whose reductions accumulate in
//! memory get a second entry, `@name_fill`, with the same parameters, to be
//! launched first (see [`FillLaunch`]). Tensors are dense and row-major;
//! `i1` elements are bytes.
//!
//! Algorithm, per kernel:
//! 1. check that every op can run on the GPU (`legal::check_gpu`);
//! 2. decide the GPU schedule ([`super::schedule::gpu`]): which dimensions
//!    map to threads, one thread or one block per point, registers or
//!    memory accumulation, peeling;
//! 3. read `threadIdx.x`, `blockIdx.x` and `blockDim.x`;
//! 4. one thread per point: the global thread number `blockIdx.x *
//!    blockDim.x + threadIdx.x`, if below the number of points, is split
//!    row-major into the thread dimensions (the last fastest, so
//!    neighbouring threads touch neighbouring elements), and the CPU's loop
//!    nest over the remaining dimensions runs in the thread;
//! 5. one block per point: `blockIdx.x` is split into the thread
//!    dimensions, the block's threads stride over the folded dimensions
//!    (split row-major, so neighbouring threads read neighbouring
//!    elements), each accumulating in registers; the partial results meet
//!    in a shared-memory array, halved in a tree with a barrier per step,
//!    and thread 0 stores the result;
//! 6. the body at a point is the CPU's (`point`): the same bounds checks,
//!    element-wise ops and reductions;
//! 7. in the bounds-checked mode, the CPU's checks of every element access
//!    (`access`), plus those of the block reductions' shared memory; the
//!    fill entry numbers its accesses in the kernel's table, since the two
//!    share the status record. Many threads may fail at once: the record
//!    is claimed atomically, so it holds one of them.

use super::{
    Buffer, KernelSignature, LowerOptions, MathMode,
    access::{Accesses, Arg, Output, Status},
    emit::Emitter,
    gpu_nest::{GpuIds, emit_gpu_fill, emit_gpu_kernel},
    i64_array, legal, memory_type,
    schedule::{self, GpuStrategy},
};
use crate::Error;
use jitc_dialect::kinds::ElementType;
use melior::{
    Context,
    dialect::func,
    ir::{
        Attribute, Block, BlockLike, Identifier, Location, Module, OperationRef, Region, RegionLike, Type,
        Value,
        attribute::{FlatSymbolRefAttribute, IntegerAttribute, StringAttribute, TypeAttribute},
        operation::{OperationBuilder, OperationLike},
        r#type::{FunctionType, IntegerType},
    },
};

/// The most blocks one launch may have along x.
pub(super) const MAX_GRID: i64 = (1 << 31) - 1;

/// Threads per block of a fill launch.
const FILL_BLOCK: i64 = 256;

/// The launch that fills a kernel's memory-accumulated reduction outputs
/// with their identity; it takes the kernel's own parameters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FillLaunch {
    /// The entry's name: the kernel's, then `_fill`.
    pub name: String,
    /// Blocks.
    pub grid: u32,
    /// Threads per block.
    pub block: u32,
}

/// How to launch a GPU kernel (one dimension of blocks and threads).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Launch {
    /// Blocks.
    pub grid: u32,
    /// Threads per block.
    pub block: u32,
    /// The launch to run first, when reductions accumulate in memory.
    pub fill: Option<FillLaunch>,
    /// One thread or one block per point.
    pub strategy: GpuStrategy,
    /// Bytes of zeroed device memory both entries take as a parameter
    /// after the status record (before the sizes of dynamic dimensions),
    /// kept by the caller from launch to launch (a split block
    /// reduction's counters and partial results, which the kernel leaves
    /// zeroed); 0 for none, and then there is no such parameter.
    pub scratch: usize,
}

/// A GPU kernel's parameters and launch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GpuKernel {
    /// Its name, arguments and results (`outer` and `parallel` are the
    /// CPU's and unused here).
    pub signature: KernelSignature,
    /// Its launch.
    pub launch: Launch,
}

/// The result of [`lower_gpu`].
pub struct LoweredGpu<'c> {
    /// The lowered kernels.
    pub module: Module<'c>,
    /// Their parameters and launches.
    pub kernels: Vec<GpuKernel>,
    /// Kernels not lowered, with the reason (the runtime runs them in the
    /// interpreter).
    pub skipped: Vec<(String, String)>,
}

/// Lowers the kernels of `module` that can run on the GPU into a new
/// module.
pub(crate) fn lower_gpu<'c>(
    context: &'c Context,
    module: &Module<'c>,
    options: &LowerOptions,
) -> Result<LoweredGpu<'c>, Error> {
    let math = options.math;
    for dialect in ["llvm", "scf", "arith", "math", "func", "cf", "index", "nvvm"] {
        context.get_or_load_dialect(dialect);
    }
    let lowered = Module::new(Location::unknown(context));
    let mut kernels = Vec::new();
    let mut skipped = Vec::new();
    for kernel in super::kernels(module) {
        // Row chains are lowered after their stages
        // (`gpu_rows::lower_gpu_with_chains`).
        if kernel.has_attribute("meta.chain") {
            continue;
        }
        let prepared = super::signature(kernel).and_then(|signature| {
            legal::check_gpu(kernel, math, options.libdevice)?;
            legal::check_gpu_parameters(
                signature.inputs.len() + signature.outputs.len(),
                signature.dynamic_dims().count(),
            )?;
            // The GPU's calls cannot decline (the CPU's leave such a call
            // to the interpreter when the sizes differ): only reads
            // through a reindex, which checks its indices.
            if !signature.exact.is_empty() {
                return Err(
                    "an element-wise op reads an argument of dynamic shape, whose size only the \
                            interpreter checks on the GPU"
                        .into(),
                );
            }
            let body = kernel
                .region(0)
                .ok()
                .and_then(|r| r.first_block())
                .ok_or("the kernel has no body")?;
            let domain = kernel
                .attribute("meta.domain")
                .ok()
                .and_then(i64_array)
                .ok_or("the kernel has no meta.domain")?;
            // Contractions as shared-memory tiles, when asked for.
            if options.gpu_tiles && !options.check_bounds {
                let cpu = schedule::schedule(body, &domain)?;
                let tiled = super::contract::gpu_plan(body, &domain, &cpu, options.gpu_tile_shape)
                    .and_then(|tiles| Some((tiled_launch(&tiles)?, tiles)));
                // A launch too large for tiles keeps the loop nest.
                if let Some((launch, tiles)) = tiled {
                    return Ok((signature, Plan::Tiles(Box::new(tiles)), launch));
                }
            }
            let gpu = schedule::gpu(body, &domain, math == MathMode::Fast)?;
            let launch = launch(&signature, &gpu)?;
            Ok((signature, Plan::Nest(gpu), launch))
        });
        match prepared {
            Ok((signature, Plan::Tiles(tiles), launch)) => {
                lower_tiled(context, &lowered, kernel, &signature, &tiles, options)?;
                kernels.push(GpuKernel { signature, launch });
            }
            Ok((mut signature, Plan::Nest(gpu), launch)) => {
                let accesses = Accesses::default();
                let checked = options.check_bounds.then_some(&accesses);
                let prepared = (&signature, &gpu, &launch);
                lower_kernel(context, &lowered, kernel, prepared, checked, options)?;
                signature.accesses = accesses.into_vec();
                kernels.push(GpuKernel { signature, launch });
            }
            Err(reason) => {
                let name = kernel
                    .attribute("sym_name")
                    .ok()
                    .and_then(jitc_dialect::ops::string_attribute);
                skipped.push((name.unwrap_or("?").to_owned(), reason));
            }
        }
    }
    Ok(LoweredGpu {
        module: lowered,
        kernels,
        skipped,
    })
}

/// How a kernel runs on the GPU.
enum Plan {
    /// The CPU's loop nest below a mapping to threads or blocks.
    Nest(schedule::GpuSchedule),
    /// A contraction as shared-memory tiles.
    Tiles(Box<super::contract::GpuTiles>),
}

/// The launch of a tiled contraction: a block of threads per tile; `None`
/// when one launch cannot have that many blocks.
fn tiled_launch(tiles: &super::contract::GpuTiles) -> Option<Launch> {
    let grid = tiles.blocks();
    if grid > MAX_GRID {
        return None;
    }
    Some(Launch {
        grid: grid as u32,
        block: super::contract::GPU_TILE_THREADS as u32,
        fill: None,
        strategy: GpuStrategy::Tiles,
        scratch: 0,
    })
}

fn launch(signature: &KernelSignature, gpu: &schedule::GpuSchedule) -> Result<Launch, String> {
    let (grid, block) = match gpu.strategy {
        GpuStrategy::Threads => {
            let threads = gpu.points.max(1) / gpu.per_thread;
            let block = (threads as u64)
                .next_power_of_two()
                .clamp(32, schedule::GPU_BLOCK as u64) as i64;
            ((threads + block - 1) / block, block)
        }
        GpuStrategy::Blocks { block } => (gpu.points.max(1) * gpu.split, block),
        GpuStrategy::Tiles => return Err("a tiled contraction has its own launch".into()),
    };
    if grid > MAX_GRID {
        return Err(format!("{grid} blocks are more than one launch can have"));
    }
    let fill = gpu.fill.then(|| {
        let largest = signature
            .outputs
            .iter()
            .map(|o| match o {
                Buffer::Tensor(shape, _) => shape.iter().product::<usize>() as i64,
                Buffer::Index | Buffer::Dynamic(..) => 0,
            })
            .max()
            .unwrap_or(0)
            .max(1);
        FillLaunch {
            name: format!("{}_fill", signature.name),
            grid: ((largest + FILL_BLOCK - 1) / FILL_BLOCK) as u32,
            block: FILL_BLOCK as u32,
        }
    });
    if fill.as_ref().is_some_and(|f| i64::from(f.grid) > MAX_GRID) {
        return Err("the fill launch needs more blocks than one launch can have".into());
    }
    Ok(Launch {
        grid: grid as u32,
        block: block as u32,
        fill,
        strategy: gpu.strategy.clone(),
        scratch: gpu.scratch as usize,
    })
}

/// Which parameters of a kernel's entries are pointers (the others are
/// `i64` indices and sizes): the inputs, the outputs, the status record,
/// with `scratch` a pointer to the kernel's scratch memory
/// ([`Launch::scratch`]), and last the size of each dynamic dimension of
/// the inputs ([`KernelSignature::dynamic_dims`]).
fn pointer_parameters(signature: &KernelSignature, scratch: bool) -> impl Iterator<Item = bool> + '_ {
    signature
        .inputs
        .iter()
        .map(|b| !matches!(b, Buffer::Index))
        .chain(signature.outputs.iter().map(|_| true))
        .chain([true])
        .chain(scratch.then_some(true))
        .chain(signature.dynamic_dims().map(|_| false))
}

/// The parameter types of a kernel's entries.
fn parameters<'c>(context: &'c Context, signature: &KernelSignature, scratch: bool) -> Vec<Type<'c>> {
    let pointer = melior::dialect::llvm::r#type::pointer(context, 0);
    let i64_type: Type = IntegerType::new(context, 64).into();
    pointer_parameters(signature, scratch)
        .map(|is_pointer| if is_pointer { pointer } else { i64_type })
        .collect()
}

/// What LLVM may assume of the entries' parameters: every pointer is
/// `noalias` (the runtime allocates each launch's results and status
/// record afresh, so no buffer a kernel writes is reachable through another
/// parameter; two inputs may be one buffer, which `noalias` allows since
/// neither is written) and aligned to 16 bytes (CUDA's allocations are
/// aligned to at least 256, and a buffer is always passed from its start;
/// the status record, a slice of two i64 words per launch, to 16 as well).
/// Both let the load-store vectorizer merge a coarsened thread's
/// neighbouring loads (`schedule::GPU_POINTS_PER_THREAD`) into one.
fn parameter_attributes<'c>(
    context: &'c Context,
    signature: &KernelSignature,
    scratch: bool,
) -> Result<Attribute<'c>, Error> {
    let entries: Vec<&str> = pointer_parameters(signature, scratch)
        .map(|is_pointer| {
            if is_pointer {
                "{llvm.noalias, llvm.align = 16 : i64}"
            } else {
                "{}"
            }
        })
        .collect();
    Attribute::parse(context, &format!("[{}]", entries.join(", ")))
        .ok_or_else(|| Error::Lowering("the parameters' attributes do not parse".into()))
}

/// A new entry `name` with `signature`'s parameters; `build` fills its body
/// given the thread ids and parameters.
pub(super) fn entry<'c>(
    context: &'c Context,
    lowered: &Module<'c>,
    location: Location<'c>,
    name: &str,
    signature: &KernelSignature,
    scratch: bool,
    build: impl for<'a> FnOnce(&Emitter<'c, 'a>, &GpuIds<'c, 'a>, &[Value<'c, 'a>]) -> Result<(), Error>,
) -> Result<(), Error> {
    let types = parameters(context, signature, scratch);
    let region = Region::new();
    let block = region.append_block(Block::new(
        &types.iter().map(|t| (*t, location)).collect::<Vec<_>>(),
    ));
    // SAFETY: the block belongs to `region`, which the new function owns
    // for as long as `lowered` lives.
    let block = unsafe { melior::ir::BlockRef::from_raw(block.to_raw()) };
    let top = Emitter {
        context,
        location,
        block,
        scopes: None,
    };
    let i32_type: Type = IntegerType::new(context, 32).into();
    let index = Type::index(context);
    let special = |name: &str| -> Result<Value, Error> {
        let raw = top.value(name, &[], i32_type)?;
        top.value("arith.index_castui", &[raw], index)
    };
    let ids = GpuIds {
        thread: special("nvvm.read.ptx.sreg.tid.x")?,
        block: special("nvvm.read.ptx.sreg.ctaid.x")?,
        block_dim: special("nvvm.read.ptx.sreg.ntid.x")?,
    };
    let values = (0..types.len())
        .map(|i| {
            block
                .argument(i)
                .map(Into::into)
                .map_err(|_| Error::Lowering("a missing parameter".into()))
        })
        .collect::<Result<Vec<Value>, _>>()?;
    build(&top, &ids, &values)?;
    top.op("func.return", &[], &[], &[])?;
    let function = func::func(
        context,
        StringAttribute::new(context, name),
        TypeAttribute::new(FunctionType::new(context, &types, &[]).into()),
        region,
        // The entry becomes a `ptx_kernel` after translation
        // (`codegen::ptx`); `nvvm.kernel` is only allowed on `llvm.func`.
        &[(
            Identifier::new(context, "arg_attrs"),
            parameter_attributes(context, signature, scratch)?,
        )],
        location,
    );
    lowered.body().append_operation(function);
    Ok(())
}

/// What `emit_gpu_kernel` makes a block reduction's shared-memory arrays
/// with: array `r` is `{prefix}_shared{r}`.
pub(super) fn tree_arrays<'c, 'a, 't>(
    top: &'t Emitter<'c, 'a>,
    lowered: &'t Module<'c>,
    prefix: String,
) -> impl FnMut(usize, ElementType, i64) -> Result<Value<'c, 'a>, Error> + 't {
    move |r, element, block| shared_array(top, lowered, &format!("{prefix}_shared{r}"), element, block)
}

/// A shared-memory array of `count` `element`s, as a generic pointer.
pub(super) fn shared_array<'c, 'a>(
    at: &Emitter<'c, 'a>,
    lowered: &Module<'c>,
    name: &str,
    element: ElementType,
    count: i64,
) -> Result<Value<'c, 'a>, Error> {
    let context = at.context;
    let array = melior::dialect::llvm::r#type::array(memory_type(context, element), count as u32);
    let linkage = Attribute::parse(context, "#llvm.linkage<internal>")
        .ok_or_else(|| Error::Lowering("linkage attribute".into()))?;
    let i32_type: Type = IntegerType::new(context, 32).into();
    let i64_type: Type = IntegerType::new(context, 64).into();
    let global = OperationBuilder::new("llvm.mlir.global", at.location)
        .add_attributes(&[
            (
                Identifier::new(context, "sym_name"),
                StringAttribute::new(context, name).into(),
            ),
            (
                Identifier::new(context, "global_type"),
                TypeAttribute::new(array).into(),
            ),
            (Identifier::new(context, "linkage"), linkage),
            (
                Identifier::new(context, "addr_space"),
                IntegerAttribute::new(i32_type, 3).into(),
            ),
            (
                Identifier::new(context, "alignment"),
                IntegerAttribute::new(i64_type, 16).into(),
            ),
        ])
        .add_regions([Region::new()])
        .build()
        .map_err(|_| Error::Lowering("building 'llvm.mlir.global' failed".into()))?;
    lowered.body().append_operation(global);
    let shared_pointer = melior::dialect::llvm::r#type::pointer(context, 3);
    let address = at
        .op(
            "llvm.mlir.addressof",
            &[],
            &[shared_pointer],
            &[("global_name", FlatSymbolRefAttribute::new(context, name).into())],
        )?
        .ok_or_else(|| Error::Lowering("llvm.mlir.addressof".into()))?;
    at.value(
        "llvm.addrspacecast",
        &[address],
        melior::dialect::llvm::r#type::pointer(context, 0),
    )
}

/// The kernel's results among its entry's parameters `values`.
pub(super) fn outputs_of<'c, 'a>(
    signature: &KernelSignature,
    values: &[Value<'c, 'a>],
) -> Result<Vec<Output<'c, 'a>>, Error> {
    let inputs = signature.inputs.len();
    signature
        .outputs
        .iter()
        .enumerate()
        .map(|(j, output)| match output {
            Buffer::Tensor(shape, element) => Ok(Output::fixed(values[inputs + j], shape.clone(), *element)),
            _ => Err(Error::Lowering(
                "a kernel returns an index or a dynamic tensor".into(),
            )),
        })
        .collect()
}

/// Lowers the contraction `kernel` as shared-memory `tiles`
/// (`contract::gpu_tiles`).
fn lower_tiled<'c>(
    context: &'c Context,
    lowered: &Module<'c>,
    kernel: OperationRef<'c, '_>,
    signature: &KernelSignature,
    tiles: &super::contract::GpuTiles,
    options: &LowerOptions,
) -> Result<(), Error> {
    let body = kernel
        .region(0)
        .ok()
        .and_then(|r| r.first_block())
        .ok_or_else(|| Error::Lowering("empty kernel".into()))?;
    let record_at = signature.inputs.len() + signature.outputs.len();
    entry(
        context,
        lowered,
        kernel.location(),
        &signature.name,
        signature,
        false,
        |top, ids, values| {
            let arguments = kernel_arguments(top, body, signature, values, record_at + 1)?;
            let outputs = outputs_of(signature, values)?;
            let [output] = &outputs[..] else {
                return Err(Error::Lowering("a tiled contraction with several results".into()));
            };
            let mut shared = tree_arrays(top, lowered, format!("{}_tile", signature.name));
            super::contract::emit_gpu(
                top,
                tiles,
                &arguments,
                output,
                ids.thread,
                ids.block,
                &mut shared,
                options.math,
            )
        },
    )
}

/// A kernel's arguments as its body reads them, from the entry's
/// parameters `values`: the sizes of dynamic dimensions are the parameters
/// from `sizes_at` on.
fn kernel_arguments<'c, 'a, 'b>(
    top: &Emitter<'c, 'a>,
    body: melior::ir::BlockRef<'c, 'b>,
    signature: &KernelSignature,
    values: &[Value<'c, 'a>],
    sizes_at: usize,
) -> Result<Vec<(Value<'c, 'b>, Arg<'c, 'a>)>, Error> {
    let index = Type::index(top.context);
    // The sizes are the entry's last parameters, in the order the extents
    // ask for them.
    let mut sizes = values[sizes_at..].iter();
    let mut extents = super::dynamic_extents(top, &signature.inputs, |_, _| {
        sizes
            .next()
            .copied()
            .ok_or_else(|| Error::Lowering("a dynamic dimension without its size".into()))
    })?;
    super::lower_arguments(body, &signature.inputs, values, &mut extents, false, |value| {
        top.value("arith.index_cast", &[value], index)
    })
}

/// A kernel's signature, GPU schedule and launch.
type Prepared<'p> = (&'p KernelSignature, &'p schedule::GpuSchedule, &'p Launch);

fn lower_kernel<'c>(
    context: &'c Context,
    lowered: &Module<'c>,
    kernel: OperationRef<'c, '_>,
    (signature, gpu, launch): Prepared,
    accesses: Option<&Accesses>,
    options: &LowerOptions,
) -> Result<(), Error> {
    let skew = options.skew;
    let location = kernel.location();
    let body = kernel
        .region(0)
        .ok()
        .and_then(|r| r.first_block())
        .ok_or_else(|| Error::Lowering("empty kernel".into()))?;
    let domain: Vec<i64> = kernel
        .attribute("meta.domain")
        .ok()
        .and_then(i64_array)
        .ok_or_else(|| Error::Lowering("kernel without meta.domain".into()))?;
    let scratch = launch.scratch > 0;
    // The status record follows the inputs and outputs; the scratch
    // memory, when there is some, comes last.
    let record_at = signature.inputs.len() + signature.outputs.len();
    entry(
        context,
        lowered,
        location,
        &signature.name,
        signature,
        scratch,
        |top, ids, values| {
            let arguments =
                kernel_arguments(top, body, signature, values, record_at + 1 + usize::from(scratch))?;
            let outputs = outputs_of(signature, values)?;
            let status = Status {
                record: values[record_at],
                accesses,
                skew,
                flat: None,
            };
            let mut shared = tree_arrays(top, lowered, signature.name.clone());
            emit_gpu_kernel(
                top,
                body,
                &arguments,
                &outputs,
                status,
                &domain,
                gpu,
                ids,
                &mut shared,
                scratch.then(|| values[record_at + 1]),
                options.math,
            )
        },
    )?;
    if let Some(fill) = &launch.fill {
        entry(
            context,
            lowered,
            location,
            &fill.name,
            signature,
            scratch,
            |top, ids, values| {
                let status = Status {
                    record: values[record_at],
                    accesses,
                    skew,
                    flat: None,
                };
                emit_gpu_fill(top, body, &outputs_of(signature, values)?, status, ids)
            },
        )?;
    }
    Ok(())
}
