//! Lowering `meta.fused` kernels to loop nests in the LLVM-ready dialects
//! (`scf`, `arith`, `math`, `llvm`), ready for `convert-to-llvm`. This file
//! is the CPU's calling convention; [`gpu`] lowers the same kernels to GPU
//! entries, with the loop nest below a thread mapping.
//!
//! Every kernel becomes `func.func @name(%buffers: !llvm.ptr, %begin: i64,
//! %end: i64)`: a pointer to an array of data pointers, one per kernel
//! argument (index arguments point to an i64), then one per result, then
//! one to the kernel's status record ([`KernelStatus`], two i64 words,
//! zeroed by the caller); and the part `[begin, end)` of the kernel's
//! split dimension to run ([`KernelSignature::outer`]). When
//! [`KernelSignature::parallel`] is set, disjoint parts may run at once;
//! otherwise the kernel must get the whole range in one call. Tensors are
//! dense and row-major; `i1` elements are stored as bytes.
//!
//! The status record says how the call went: status 0 is success, 1 an
//! integer division by zero (`scalar`), and in the bounds-checked mode
//! ([`LowerOptions::check_bounds`]) `2 + k` an access outside its buffer,
//! number `k` of [`KernelSignature::accesses`], at the element offset in
//! the second word (`access`); [`KernelSignature::failure`] says it in
//! words, for every runtime.
//!
//! Algorithm, per kernel:
//! 1. decide the schedule ([`schedule`]): loop order, split dimension,
//!    register or memory accumulation, bounds checks and peeling; a
//!    contraction (a sum of products of two reindexed operands) is
//!    emitted by `contract` as register tiles instead of steps 3 to 6;
//! 2. load the data pointers; read index arguments;
//! 3. fill the results of reductions that accumulate in memory with their
//!    identity (the part this call owns);
//! 4. one `scf.for` per domain dimension in the schedule's order; when
//!    reductions accumulate in registers, the loops they fold over carry
//!    the accumulators and the results are stored after them; when the
//!    innermost loop is peeled, it becomes three loops: checked edge,
//!    check-free interior, checked edge;
//! 5. in the body, each op of the kernel in order: a reindex computes its
//!    source index from the affine map and, where the index is not known to
//!    be in bounds, clamps it and selects `overflow_value` when it was out
//!    of bounds or in an overflow condition (branch-free, so loops stay
//!    vectorizable); element-wise ops become `arith`/`math`; a reduction
//!    combines into its accumulator or output;
//! 6. results that are not reductions are stored at the point's index;
//! 7. in the bounds-checked mode, every element load and store of steps 3
//!    to 6 is checked against its buffer's element count first (`access`).
//!
//! The semantics are the interpreter's (`docs/semantics.md`). The loop order
//! keeps the order of the dimensions every float `add`/`mul` reduction folds
//! over, so each output folds its inputs in the interpreter's row-major
//! order and results are bit-identical.
//!
//! A kernel over a dynamic domain is lowered flat when it is element-wise
//! ([`KernelSignature::flat`]: one loop over the elements), and otherwise
//! as the same loop nest with its sizes read at run time
//! ([`KernelSignature::sizes`], [`shapes`]): loop bounds, strides and the
//! bounds checks of dynamic dimensions use the sizes, and the schedule
//! counts a dynamic dimension as long and proves no index into it.
//!
//! The submodules, from what decides to what emits:
//! - `legal`: which kernels can be lowered, for the CPU and the GPU;
//! - [`schedule`]: the loop order, accumulation, checks and peeling;
//! - `nest`: the CPU loop nest, fills and register accumulators;
//! - `contract`: contractions on the CPU, as register tiles of vectors
//!   (schedule rule 6);
//! - [`epilogue`]: a contraction and the element-wise kernel that reads
//!   its result as one kernel, the consumer run on each tile;
//! - [`rows`]: row chains, kernels run one block of rows at a time;
//! - [`gpu`] and `gpu_nest`: GPU entries, and the nest below a thread
//!   mapping with shared-memory block reductions;
//! - `point`: the kernel's ops at one point of the domain;
//! - `index`: affine indices, bounds checks and the peeled interior;
//! - `scalar` and `poly`: element-wise and reduction semantics, and the
//!   polynomial f32 `exp`, `log` and `tanh`;
//! - [`stream`]: which results are written with non-temporal stores;
//! - `access` and `emit`: buffer loads and stores (and their checks in the
//!   bounds-checked mode), and the IR builder everything above emits with.

mod access;
mod contract;
mod emit;
pub mod epilogue;
pub mod gpu;
mod gpu_nest;
pub(crate) mod gpu_rows;
mod index;
mod inplace;
pub(crate) mod interleave;
mod legal;
mod nest;
mod point;
mod poly;
pub mod prefetch;
pub mod rows;
mod scalar;
pub mod schedule;
pub mod shapes;
pub mod stream;
mod types;

use crate::Error;
pub use access::{
    AFFINE_DIVISOR_STATUS, AFFINE_OVERFLOW_STATUS, CheckedAccess, DIVISION_BY_ZERO_STATUS,
    FIRST_ACCESS_STATUS, KernelStatus,
};
use access::{Accesses, Arg, FLAT_EXTENT, Status};
use emit::Emitter;
use jitc_dialect::{
    kinds::{ElementType, ReduceKind},
    ops::ReindexOp,
};
use melior::{
    Context,
    dialect::func,
    ir::{
        Attribute, BlockLike, BlockRef, Identifier, Location, Module, OperationRef, RegionLike, Type,
        TypeLike, Value, ValueLike,
        attribute::{StringAttribute, TypeAttribute},
        operation::OperationLike,
        r#type::FunctionType,
    },
};
pub use shapes::{DynamicSizes, Extent, SizeSource};
use std::collections::HashMap;

/// One buffer of a kernel's calling convention.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Buffer {
    /// A tensor argument or result: its shape and element type.
    Tensor(Vec<usize>, ElementType),
    /// An index argument, passed as a pointer to an i64.
    Index,
    /// A tensor with dynamic dimensions (`None`). An argument's data
    /// pointer is followed, after every argument and result, by a pointer
    /// to its shape as one `i64` per dimension (the sizes as arguments; see
    /// [`KernelSignature::shape_slots`]); a result's sizes are the caller's
    /// to compute ([`KernelSignature::sizes`], or a flat kernel's shape).
    Dynamic(Vec<Option<usize>>, ElementType),
}

impl Buffer {
    /// Whether a tensor of `shape` and `element`s may be passed here: the
    /// same type, of this shape, or of this rank and these static sizes.
    pub fn fits(&self, shape: &[usize], element: ElementType) -> bool {
        match self {
            Self::Tensor(want, want_element) => want == shape && *want_element == element,
            Self::Dynamic(want, want_element) => {
                *want_element == element
                    && want.len() == shape.len()
                    && want
                        .iter()
                        .zip(shape)
                        .all(|(want, &got)| want.is_none_or(|want| want == got))
            }
            Self::Index => false,
        }
    }
}

/// A lowered kernel's name and calling convention.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct KernelSignature {
    /// The symbol of the kernel (and of the lowered function).
    pub name: String,
    /// Arguments, in order.
    pub inputs: Vec<Buffer>,
    /// Results, in order.
    pub outputs: Vec<Buffer>,
    /// The extent of the split dimension (1 for a scalar domain): the
    /// kernel runs the part `[begin, end)` of it.
    pub outer: i64,
    /// Whether disjoint parts of the split dimension may run at once: every
    /// point writes only outputs no other part writes
    /// ([`schedule::Schedule::parallel`]).
    pub parallel: bool,
    /// Points in the domain: the work of one whole call.
    pub points: u64,
    /// In the bounds-checked mode, the kernel's checked accesses: status
    /// `FIRST_ACCESS_STATUS + k` reports access `k`. Empty otherwise.
    pub accesses: Vec<CheckedAccess>,
    /// A flat kernel: element-wise over a domain of dynamic shape, so every
    /// argument and result has that shape, and it is lowered as one loop
    /// over the elements. The caller checks that the arguments' shapes
    /// agree, allocates each result with that shape, and passes the range
    /// `[0, elements)` (`outer` and `points` are 0 here, unknown until
    /// then).
    pub flat: bool,
    /// A kernel over a dynamic domain that is not flat: where its sizes
    /// come from. The caller computes them, runs the kernel only when
    /// every source of a size agrees, allocates each result with its
    /// sizes, passes them all in the slot [`Self::sizes_slot`], and the
    /// range `[0, n)` of the split dimension, `n` its size (`outer` and
    /// `points` are 0 here).
    pub sizes: Option<DynamicSizes>,
    /// `(i, j)`: result `j` may be written into the buffer of argument
    /// `i`, which the caller passes as both when the argument dies at the
    /// call (and its buffer is the caller's alone); the kernel then runs a
    /// nest that reads and writes through one pointer. Otherwise the
    /// caller passes a buffer of its own, as usual. See `inplace`.
    pub in_place: Option<(usize, usize)>,
    /// Not empty when the kernel is not [`Self::parallel`] (every
    /// dimension is folded somewhere, as in a sum to a scalar) and may
    /// still run in parts: every result is a reduction, of these kinds in
    /// result order, that a call over a part of the split dimension
    /// computes from the identity into the buffers it is given. The caller
    /// gives each part buffers of its own and combines the parts' results
    /// in part order with these kinds: the same result for a given number
    /// of parts. Only where reassociating is allowed: fast math, or kinds
    /// whose order cannot change a result (`max`, `min`, integer sums).
    pub partial: Vec<ReduceKind>,
    /// `(i, shape)`: argument `i` has dynamic dimensions but is read at the
    /// points of the kernel's static domain (by an element-wise op, not
    /// through a reindex), so it must have exactly `shape` (the reading
    /// op's result's). A call whose argument has another shape does not
    /// run natively: the interpreter runs it, and reports the mismatch at
    /// the op as it does (`operands have shapes ... at run time`). Empty
    /// for kernels over a dynamic domain, whose sizes are checked with
    /// [`Self::sizes`] or as a flat kernel's.
    #[serde(default)]
    pub exact: Vec<(usize, Vec<usize>)>,
}

impl KernelSignature {
    /// The inputs with dynamic dimensions, in order: the pointer to the
    /// shape of the `k`-th of them is slot `inputs + outputs + k` of the
    /// kernel's buffer array (the status record stays last).
    pub fn shape_slots(&self) -> impl Iterator<Item = usize> + '_ {
        self.inputs
            .iter()
            .enumerate()
            .filter(|(_, b)| matches!(b, Buffer::Dynamic(..)))
            .map(|(i, _)| i)
    }

    /// The slot of the kernel's buffer array that points to its run-time
    /// sizes ([`Self::sizes`]): one `i64` per dimension of the domain,
    /// then of each output in order. It follows the shape slots; the
    /// status record stays last.
    pub fn sizes_slot(&self) -> Option<usize> {
        self.sizes
            .as_ref()
            .map(|_| self.inputs.len() + self.outputs.len() + self.shape_slots().count())
    }

    /// The dynamic dimensions of the inputs, as `(input, dimension)` in
    /// input order, then dimension order: a GPU kernel takes the size of
    /// each as one `i64` parameter by value, after all its others (see
    /// `gpu`'s module docs).
    pub fn dynamic_dims(&self) -> impl Iterator<Item = (usize, usize)> + '_ {
        self.inputs.iter().enumerate().flat_map(|(i, b)| {
            let dims: &[Option<usize>] = match b {
                Buffer::Dynamic(shape, _) => shape,
                _ => &[],
            };
            dims.iter()
                .enumerate()
                .filter(|(_, d)| d.is_none())
                .map(move |(d, _)| (i, d))
        })
    }

    /// What went wrong in a call that left `status` in its status record
    /// (without the kernel's name); `None` when nothing did.
    pub fn failure(&self, status: KernelStatus) -> Option<KernelFailure> {
        let [code, offset] = status;
        let message = match code {
            0 => None,
            DIVISION_BY_ZERO_STATUS => {
                return Some(KernelFailure {
                    op: Some((
                        jitc_dialect::ops::BinaryOp::NAME.to_owned(),
                        usize::try_from(offset).ok().filter(|&line| line > 0),
                    )),
                    message: "integer division by zero".into(),
                });
            }
            // The interpreter's words for the same failure.
            AFFINE_DIVISOR_STATUS => Some(format!("affine division by {offset}; divisors must be positive")),
            AFFINE_OVERFLOW_STATUS => Some("affine index arithmetic overflows i64".into()),
            _ => Some(
                code.checked_sub(FIRST_ACCESS_STATUS)
                    .and_then(|k| usize::try_from(k).ok())
                    .and_then(|k| self.accesses.get(k))
                    .map_or_else(
                        || format!("the kernel failed with the unknown status {code}"),
                        |access| access.out_of_bounds(offset),
                    ),
            ),
        };
        message.map(KernelFailure::from)
    }
}

pub use jitc_dialect::KernelFailure;

/// What decides how kernels are lowered: the lowering's part of
/// `CodegenOptions` and `GpuOptions`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct LowerOptions {
    /// How closely float arithmetic follows the interpreter.
    pub(crate) math: MathMode,
    /// The bounds-checked mode: every element access is checked against
    /// its buffer's extent and reported through the status record.
    pub(crate) check_bounds: bool,
    /// On the GPU: libdevice will be linked, so math that needs a math
    /// library (`sin`, `erf`, `pow`, f64 and exact `exp`) is lowered.
    pub(crate) libdevice: bool,
    /// The width of the CPU's vector registers in bits (512 with AVX-512,
    /// else 256), which sizes the tiles of contractions (`contract`);
    /// 0 lowers none of them as tiles (the GPU, and the tests that want
    /// the loop nest).
    pub(crate) vector_bits: u32,
    /// x86: large results that leave the host function are written with
    /// non-temporal stores (`stream`).
    pub(crate) streaming: bool,
    /// On the GPU: contractions run as shared-memory tiles
    /// (`contract::gpu_tiles`) instead of the loop nest, outside the
    /// bounds-checked mode.
    pub(crate) gpu_tiles: bool,
    /// For the tests only: the CPU lowers each contraction the GPU would
    /// tile as the GPU's tiles run, thread after thread between barriers
    /// (`contract::emit_emulated`), in a kernel the test calls once over
    /// the whole domain. Nothing outside the crate can set it.
    pub(crate) emulate_gpu_tiles: bool,
    /// For the tests only: the outputs per thread of every GPU tile, along
    /// the rows and the columns, instead of the size `contract::gpu_tiles`
    /// chooses, so that small shapes reach every tile size.
    pub(crate) gpu_tile_shape: Option<(i64, i64)>,
    /// Fault injection for the tests of the bounds-checked mode: added to
    /// every checked offset, so that correct code goes out of bounds. 0
    /// everywhere else; nothing outside the crate can set it.
    pub(crate) skew: i64,
}

fn buffer_of(r#type: Type) -> Option<Buffer> {
    // SAFETY: `r#type` is a live type.
    if unsafe { mlir_sys::mlirTypeIsAIndex(r#type.to_raw()) } {
        return Some(Buffer::Index);
    }
    static_shape(r#type).map(|(shape, element)| Buffer::Tensor(shape, element))
}

/// [`buffer_of`], also taking tensors with dynamic dimensions.
fn argument_buffer_of(r#type: Type) -> Option<Buffer> {
    buffer_of(r#type).or_else(|| {
        let (shape, element) = types::dynamic_shape(r#type)?;
        Some(Buffer::Dynamic(shape, element))
    })
}

/// The symbol and function type of `function` (a kernel or a chain: the
/// `what` of the error).
fn name_and_type<'c>(
    function: OperationRef<'c, '_>,
    what: &str,
) -> Result<(String, FunctionType<'c>), String> {
    let name = function
        .attribute("sym_name")
        .ok()
        .and_then(jitc_dialect::ops::string_attribute)
        .ok_or_else(|| format!("the {what} has no name"))?
        .to_owned();
    let function_type = function
        .attribute("function_type")
        .ok()
        .and_then(|a| TypeAttribute::try_from(a).ok())
        .and_then(|t| FunctionType::try_from(t.value()).ok())
        .ok_or_else(|| format!("the {what} has no function type"))?;
    Ok((name, function_type))
}

/// The signature a kernel lowers to, or why it cannot be lowered.
pub fn signature(kernel: OperationRef) -> Result<KernelSignature, String> {
    let (name, function_type) = name_and_type(kernel, "kernel")?;
    let convert = |t: Result<Type, _>| {
        t.ok()
            .and_then(buffer_of)
            .ok_or_else(|| format!("@{name} has a dynamic or unsupported type"))
    };
    let convert_argument = |t: Result<Type, _>| {
        t.ok()
            .and_then(argument_buffer_of)
            .ok_or_else(|| format!("@{name} has an unsupported argument type"))
    };
    let domain = kernel
        .attribute("meta.domain")
        .ok()
        .and_then(i64_array)
        .ok_or("the kernel has no meta.domain")?;
    let body = kernel
        .region(0)
        .ok()
        .and_then(|r| r.first_block())
        .ok_or("the kernel has no body")?;
    let dynamic = |t: Result<Type, _>| {
        t.ok()
            .and_then(argument_buffer_of)
            .ok_or_else(|| format!("@{name} has an unsupported type"))
    };
    if domain.iter().any(|&d| d < 0) {
        // Over a dynamic domain: element-wise kernels flat (one loop over
        // the elements), the others with their sizes read at run time.
        let flat = legal::flat(kernel).is_ok();
        let inputs: Vec<Buffer> = (0..function_type.input_count())
            .map(|i| dynamic(function_type.input(i)))
            .collect::<Result<_, _>>()?;
        if flat && !inputs.iter().any(|input| matches!(input, Buffer::Dynamic(..))) {
            // Its results' shape is the arguments', which the types do not
            // say: the interpreter runs it (`meta-refine` would give its
            // results the arguments' static shape).
            return Err(format!(
                "@{name} is element-wise with results of dynamic shape but no argument of dynamic shape to size them"
            ));
        }
        let (parallel, sizes) = if flat {
            (true, None)
        } else {
            let schedule = schedule::schedule(body, &domain)?;
            let sizes = shapes::dynamic_sizes(body, &domain, schedule.split)?;
            (schedule.parallel, Some(sizes))
        };
        return Ok(KernelSignature {
            outer: 0,
            parallel,
            points: 0,
            accesses: Vec::new(),
            inputs,
            outputs: (0..function_type.result_count())
                .map(|i| dynamic(function_type.result(i)))
                .collect::<Result<_, _>>()?,
            flat,
            sizes,
            in_place: None,
            partial: Vec::new(),
            exact: Vec::new(),
            name,
        });
    }
    let schedule = schedule::schedule(body, &domain)?;
    let exact = exact_shapes(body, function_type)?;
    Ok(KernelSignature {
        outer: domain.get(schedule.split).copied().unwrap_or(1),
        parallel: schedule.parallel,
        points: domain.iter().map(|&d| d as u64).product(),
        accesses: Vec::new(),
        flat: false,
        sizes: None,
        in_place: None,
        partial: Vec::new(),
        exact,
        inputs: (0..function_type.input_count())
            .map(|i| convert_argument(function_type.input(i)))
            .collect::<Result<_, _>>()?,
        outputs: (0..function_type.result_count())
            .map(|i| convert(function_type.result(i)))
            .collect::<Result<_, _>>()?,
        name,
    })
}

/// The arguments of dynamic shape of a kernel over a static domain that
/// its ops read at the domain's points ([`KernelSignature::exact`]), with
/// the shape each must have: the result's of the op that reads it (a
/// kernel result's, where it is returned as it is). Read through a
/// `meta.reindex` (as its input), an argument may have any size, which the
/// reindex checks its indices against.
fn exact_shapes(body: BlockRef, function_type: FunctionType) -> Result<Vec<(usize, Vec<usize>)>, String> {
    let mut exact = Vec::new();
    for i in 0..body.argument_count() {
        let Ok(argument) = body.argument(i) else { continue };
        let argument: Value = argument.into();
        if !types::dynamic_shape(argument.r#type()).is_some_and(|(shape, _)| shape.contains(&None)) {
            continue;
        }
        for (user, operand) in crate::rewrite::uses(argument) {
            if ReindexOp::cast(user).is_some() && operand == 0 {
                continue;
            }
            let wanted = if user.name().as_string_ref().as_str() == Ok("func.return") {
                function_type.result(operand).ok()
            } else {
                user.result(0).ok().map(|r| Value::from(r).r#type())
            };
            let shape = wanted
                .and_then(types::static_shape)
                .map(|(shape, _)| shape)
                .ok_or("an op reads an argument of dynamic shape at points of unknown shape")?;
            if !exact.contains(&(i, shape.clone())) {
                exact.push((i, shape));
            }
        }
    }
    Ok(exact)
}

/// The `meta.fused` kernels of `module`.
pub fn kernels<'c, 'a>(module: &'a Module<'c>) -> Vec<OperationRef<'c, 'a>> {
    crate::fusion::block_ops(module.body())
        .into_iter()
        .filter(|op| op.name().as_string_ref().as_str() == Ok("func.func") && op.has_attribute("meta.fused"))
        .collect()
}

/// The result of [`lower`].
pub struct Lowered<'c> {
    /// The lowered kernels, one function each.
    pub module: Module<'c>,
    /// Their calling conventions.
    pub signatures: Vec<KernelSignature>,
    /// Kernels not lowered, with the reason (the caller runs them another
    /// way).
    pub skipped: Vec<(String, String)>,
    /// Functions LLVM must not inline: the stages of row chains, compiled
    /// once as themselves and called by their chain per block (inlined,
    /// each loop nest would be compiled twice for no gain).
    pub no_inline: Vec<String>,
    /// Kernels whose innermost loops LLVM is asked to interleave
    /// ([`interleave`]).
    pub interleave: Vec<String>,
}

/// Lowers the kernels of `module` that can be lowered into a new module,
/// but for row chains and contraction epilogues (lowered after, by
/// `rows` and `epilogue`) and the kernels named in `apart` (those only
/// epilogues call, lowered as part of them; [`lower_named`] lowers one on
/// its own when its epilogue does not lower).
pub(crate) fn lower<'c>(
    context: &'c Context,
    module: &Module<'c>,
    options: &LowerOptions,
    apart: &std::collections::HashSet<String>,
) -> Result<Lowered<'c>, Error> {
    // Types and ops of a dialect can only be built once it is loaded.
    for dialect in ["llvm", "scf", "arith", "math", "func", "cf", "index"] {
        context.get_or_load_dialect(dialect);
    }
    let location = Location::unknown(context);
    let mut lowered = Lowered {
        module: Module::new(location),
        signatures: Vec::new(),
        skipped: Vec::new(),
        no_inline: Vec::new(),
        interleave: Vec::new(),
    };
    for kernel in kernels(module) {
        // Row chains are lowered after their stages (`rows::lower_chains`),
        // epilogues after the other kernels (`epilogue::lower_epilogues`).
        if kernel.has_attribute("meta.chain") || kernel.has_attribute("meta.epilogue") {
            continue;
        }
        let name = kernel
            .attribute("sym_name")
            .ok()
            .and_then(jitc_dialect::ops::string_attribute);
        if name.is_some_and(|n| apart.contains(n)) {
            continue;
        }
        lower_one(context, module, &mut lowered, kernel, options)?;
    }
    Ok(lowered)
}

/// Lowers the kernels of `module` named in `names` into `lowered`, each
/// on its own.
pub(crate) fn lower_named<'c>(
    context: &'c Context,
    module: &Module<'c>,
    lowered: &mut Lowered<'c>,
    options: &LowerOptions,
    names: &[String],
) -> Result<(), Error> {
    for kernel in kernels(module) {
        let name = kernel
            .attribute("sym_name")
            .ok()
            .and_then(jitc_dialect::ops::string_attribute);
        if name.is_some_and(|n| names.iter().any(|m| m == n)) {
            lower_one(context, module, lowered, kernel, options)?;
        }
    }
    Ok(())
}

/// Lowers one kernel into `lowered`, or records why it cannot be.
fn lower_one<'c>(
    context: &'c Context,
    module: &Module<'c>,
    lowered: &mut Lowered<'c>,
    kernel: OperationRef<'c, '_>,
    options: &LowerOptions,
) -> Result<(), Error> {
    {
        let mut signature = match signature(kernel).and_then(|s| legal::check(kernel).map(|()| s)) {
            Ok(signature) => signature,
            Err(reason) => {
                let name = kernel
                    .attribute("sym_name")
                    .ok()
                    .and_then(jitc_dialect::ops::string_attribute);
                lowered.skipped.push((name.unwrap_or("?").to_owned(), reason));
                return Ok(());
            }
        };
        // A result written into a dying argument's buffer, when some call
        // passes one.
        let domain = kernel.attribute("meta.domain").ok().and_then(i64_array);
        let body = kernel.region(0).ok().and_then(|r| r.first_block());
        if let (Some(domain), Some(body)) = (&domain, body) {
            let (inputs, outputs) = (statics(&signature.inputs), statics(&signature.outputs));
            signature.in_place = inplace::pair(body, domain, &inputs, &outputs)
                .filter(|&(i, _)| inplace::dies_at_some_call(module, &signature.name, i))
                // A chain's stage is called by the chain only, with
                // buffers of its own.
                .filter(|_| !kernel.has_attribute("meta.stage"));
        }
        if let (Some(domain), Some(body), false, None) =
            (&domain, body, signature.parallel, signature.in_place)
        {
            signature.partial = schedule::partial(body, domain, options.math == MathMode::Fast);
        }
        let accesses = Accesses::default();
        let checked = options.check_bounds.then_some(&accesses);
        lower_kernel(
            context,
            module,
            &lowered.module,
            kernel,
            &signature,
            checked,
            options,
        )?;
        if body.is_some_and(|body| interleave::wants(body, options.math)) {
            lowered.interleave.push(signature.name.clone());
        }
        signature.accesses = accesses.into_vec();
        lowered.signatures.push(signature);
    }
    Ok(())
}

/// The kernels of the fused `module` that lower as register-tiled
/// contractions (`contract`, schedule rule 6) with `options`: each
/// kernel's name, its tiles, and the functions that run it (calling it,
/// or a row chain that calls it).
pub(crate) fn contractions(module: &Module, options: &LowerOptions) -> Vec<(String, String, Vec<String>)> {
    described(module, |signature, body, domain, schedule| {
        contraction(options, signature, body, domain, schedule).map(|plan| plan.describe())
    })
}

/// The kernels of the fused `module` that the GPU runs as shared-memory
/// tiles when asked to (`LowerOptions::gpu_tiles`, outside the
/// bounds-checked mode; `contract::gpu_tiles`): each kernel's name, its
/// tiles, and the functions that run it.
pub(crate) fn gpu_tiled(module: &Module) -> Vec<(String, String, Vec<String>)> {
    described(module, |signature, body, domain, schedule| {
        if !signature.exact.is_empty() {
            return None;
        }
        contract::gpu_plan(body, domain, schedule, None).map(|tiles| tiles.describe())
    })
}

/// Each kernel of the fused `module` (not a row chain) that `describe`
/// says something of, given its signature, body, domain and CPU schedule:
/// its name, what `describe` said, and the functions that run it.
fn described(
    module: &Module,
    describe: impl Fn(&KernelSignature, BlockRef, &[i64], &schedule::Schedule) -> Option<String>,
) -> Vec<(String, String, Vec<String>)> {
    let hosts = hosts_of(module);
    kernels(module)
        .into_iter()
        .filter(|kernel| !kernel.has_attribute("meta.chain"))
        .filter_map(|kernel| {
            let signature = signature(kernel).ok()?;
            legal::check(kernel).ok()?;
            let domain = kernel.attribute("meta.domain").ok().and_then(i64_array)?;
            let body = kernel.region(0).ok()?.first_block()?;
            let schedule = schedule::schedule(body, &domain).ok()?;
            let text = describe(&signature, body, &domain, &schedule)?;
            let hosts = hosts(&signature.name);
            Some((signature.name, text, hosts))
        })
        .collect()
}

/// The results of the fused `module`'s kernels that `options` write with
/// non-temporal stores (`stream`): each kernel's name, the result's
/// number and bytes, and the functions that run the kernel.
pub(crate) fn streamed_results(
    module: &Module,
    options: &LowerOptions,
) -> Vec<(String, usize, usize, Vec<String>)> {
    let hosts = hosts_of(module);
    let mut streamed_results = Vec::new();
    for kernel in kernels(module) {
        if kernel.has_attribute("meta.chain") {
            continue;
        }
        let Some(signature) = signature(kernel).ok().filter(|_| legal::check(kernel).is_ok()) else {
            continue;
        };
        let (Some(domain), Some(body)) = (
            kernel.attribute("meta.domain").ok().and_then(i64_array),
            kernel.region(0).ok().and_then(|r| r.first_block()),
        ) else {
            continue;
        };
        let tiled = schedule::schedule(body, &domain)
            .ok()
            .and_then(|schedule| contraction(options, &signature, body, &domain, &schedule))
            .is_some();
        let bytes = result_bytes(&signature);
        for j in streamed(module, options, &signature, tiled) {
            streamed_results.push((
                signature.name.clone(),
                j,
                bytes[j].unwrap_or(0),
                hosts(&signature.name),
            ));
        }
    }
    streamed_results
}

/// The results of the kernel of `signature` that `options` write with
/// non-temporal stores (`stream`), by number: none in the bounds-checked
/// mode, off x86, or for a contraction (`tiled`), whose tiles store as
/// they are. [`lower_kernel`] and [`streamed_results`] both ask this.
fn streamed(module: &Module, options: &LowerOptions, signature: &KernelSignature, tiled: bool) -> Vec<usize> {
    if !options.streaming || options.check_bounds || tiled {
        return Vec::new();
    }
    stream::streaming(module, &signature.name, &result_bytes(signature))
        .into_iter()
        .enumerate()
        .filter_map(|(j, streams)| streams.then_some(j))
        .collect()
}

/// The bytes of each result of `signature`: `None` for one that is not a
/// static tensor.
fn result_bytes(signature: &KernelSignature) -> Vec<Option<usize>> {
    signature
        .outputs
        .iter()
        .map(|output| match output {
            Buffer::Tensor(shape, element) => Some(shape.iter().product::<usize>() * element.byte_width()),
            _ => None,
        })
        .collect()
}

/// The host functions that run each kernel of `module`: those calling it,
/// and for a kernel a row chain calls, those calling the chain.
fn hosts_of(module: &Module) -> impl Fn(&str) -> Vec<String> {
    // Who calls whom, and whether the caller is itself a kernel (a row
    // chain).
    let functions = jitc_dialect::ops::functions(module.body());
    let mut callers: HashMap<String, Vec<(String, bool)>> = HashMap::new();
    for (name, function) in &functions {
        inplace::visit_calls(*function, &mut |call| {
            if let Ok(callee) = call.attribute("callee") {
                let callee = callee.to_string().trim_start_matches('@').to_owned();
                callers
                    .entry(callee)
                    .or_default()
                    .push((name.clone(), function.has_attribute("meta.fused")));
            }
        });
    }
    move |kernel: &str| -> Vec<String> {
        let mut hosts: Vec<String> = Vec::new();
        for (caller, fused) in callers.get(kernel).into_iter().flatten() {
            let through: Vec<&str> = if *fused {
                callers
                    .get(caller)
                    .into_iter()
                    .flatten()
                    .map(|(c, _)| c.as_str())
                    .collect()
            } else {
                vec![caller.as_str()]
            };
            for host in through {
                if !hosts.iter().any(|h| h == host) {
                    hosts.push(host.to_owned());
                }
            }
        }
        hosts
    }
}

/// The contraction the kernel whose body is `body` is, when `options`
/// lower it as register tiles (rule 6): the CPU (`vector_bits` set),
/// outside the bounds-checked mode, over a static domain.
fn contraction(
    options: &LowerOptions,
    signature: &KernelSignature,
    body: BlockRef,
    domain: &[i64],
    schedule: &schedule::Schedule,
) -> Option<contract::Contraction> {
    // Sizes read at run time are fine for an operand's leading dimension
    // (`contract::plan` checks), not for the domain.
    if options.vector_bits == 0 || options.check_bounds || signature.flat || domain.iter().any(|&d| d < 0) {
        return None;
    }
    let reassociate = options.math == MathMode::Fast;
    contract::plan(body, domain, schedule, options.vector_bits, reassociate)
}

#[allow(clippy::too_many_arguments)]
fn lower_kernel<'c>(
    context: &'c Context,
    module: &Module<'c>,
    lowered: &Module<'c>,
    kernel: OperationRef<'c, '_>,
    signature: &KernelSignature,
    accesses: Option<&Accesses>,
    options: &LowerOptions,
) -> Result<(), Error> {
    let location = kernel.location();
    let pointer = melior::dialect::llvm::r#type::pointer(context, 0);
    let i64_type: Type = melior::ir::r#type::IntegerType::new(context, 64).into();
    let (region, top) = emit::function_body(context, location, &[pointer, i64_type, i64_type], true)?;
    let entry = top.block;
    let buffers: Value = entry
        .argument(0)
        .map_err(|_| Error::Lowering("no buffer argument".into()))?
        .into();

    // 1. Data pointers and index arguments.
    let dynamic: Vec<usize> = signature.shape_slots().collect();
    let count = signature.inputs.len()
        + signature.outputs.len()
        + dynamic.len()
        + usize::from(signature.sizes.is_some())
        + 1;
    let mut pointers = Vec::with_capacity(count);
    for slot in 0..count {
        let offset = top.int(i64_type, slot as i64)?;
        let address = gep(&top, buffers, offset, pointer)?;
        pointers.push(top.value("llvm.load", &[address], pointer)?);
    }
    let body = kernel
        .region(0)
        .ok()
        .and_then(|r| r.first_block())
        .ok_or_else(|| Error::Lowering("empty kernel".into()))?;
    let index = Type::index(context);
    // The sizes of dynamic arguments, read once at entry from the shape
    // slots.
    let mut extents = dynamic_extents(&top, &signature.inputs, |i, d| {
        let k = dynamic
            .iter()
            .position(|&input| input == i)
            .ok_or_else(|| Error::Lowering("a dynamic argument without a shape slot".into()))?;
        let shape_pointer = pointers[signature.inputs.len() + signature.outputs.len() + k];
        let address = gep(&top, shape_pointer, top.int(i64_type, d as i64)?, i64_type)?;
        top.value("llvm.load", &[address], i64_type)
    })?;
    // A flat kernel sees every buffer as one dimension of FLAT_EXTENT;
    // its checks use the first argument's sizes, which every buffer has.
    let flat = match (signature.flat, dynamic.first()) {
        (true, Some(&first)) => {
            let Buffer::Dynamic(shape, _) = &signature.inputs[first] else {
                return Err(Error::Lowering("a flat kernel without a dynamic argument".into()));
            };
            let dims: String = shape
                .iter()
                .map(|d| d.map_or("?x".to_owned(), |n| format!("{n}x")))
                .collect();
            let sizes = extents
                .get(&first)
                .cloned()
                .ok_or_else(|| Error::Lowering("a dynamic argument without sizes".into()))?;
            Some((sizes, dims))
        }
        (true, None) => return Err(Error::Lowering("a flat kernel without a dynamic argument".into())),
        (false, _) => None,
    };
    let status = Status {
        record: pointers[count - 1],
        accesses,
        skew: options.skew,
        flat: flat.as_ref(),
    };
    let arguments = lower_arguments(
        body,
        &signature.inputs,
        &pointers,
        &mut extents,
        signature.flat,
        |pointer| {
            let raw = top.value("llvm.load", &[pointer], i64_type)?;
            top.value("arith.index_cast", &[raw], index)
        },
    )?;
    // A kernel over a dynamic domain reads its sizes, the domain's then
    // each output's, from one array.
    let sizes: Option<Vec<Value>> = match (&signature.sizes, signature.sizes_slot()) {
        (Some(sizes), Some(slot)) => {
            let mut values = Vec::new();
            let extents = sizes.domain.iter().chain(sizes.outputs.iter().flatten());
            for (k, extent) in extents.enumerate() {
                values.push(match extent {
                    shapes::Extent::Static(n) => top.index(*n as i64)?,
                    shapes::Extent::Dynamic(_) => {
                        let address = gep(&top, pointers[slot], top.int(i64_type, k as i64)?, i64_type)?;
                        let raw = top.value("llvm.load", &[address], i64_type)?;
                        top.value("arith.index_cast", &[raw], index)?
                    }
                });
            }
            Some(values)
        }
        _ => None,
    };
    let rank = signature.sizes.as_ref().map_or(0, |s| s.domain.len());
    let mut output_sizes = sizes.as_deref().unwrap_or(&[]).get(rank..).unwrap_or(&[]);
    let outputs: Vec<access::Output> = signature
        .outputs
        .iter()
        .enumerate()
        .map(|(j, output)| {
            let pointer = pointers[signature.inputs.len() + j];
            match output {
                Buffer::Tensor(shape, element) => {
                    // The sizes array holds a static result's sizes too.
                    if signature.sizes.is_some() {
                        output_sizes = output_sizes.get(shape.len()..).unwrap_or(&[]);
                    }
                    Ok(access::Output::fixed(pointer, shape.clone(), *element))
                }
                Buffer::Dynamic(_, element) if signature.flat => Ok(access::Output::fixed(
                    pointer,
                    vec![FLAT_EXTENT as usize],
                    *element,
                )),
                Buffer::Dynamic(shape, element) if signature.sizes.is_some() => {
                    let (mine, rest) = output_sizes.split_at(shape.len().min(output_sizes.len()));
                    output_sizes = rest;
                    Ok(access::Output {
                        pointer,
                        shape: shape.iter().map(|d| d.unwrap_or(0)).collect(),
                        element: *element,
                        dynamic: Some(access::Dynamic {
                            extents: mine.to_vec(),
                            r#type: dynamic_type_text(shape, *element),
                        }),
                        stream: None,
                    })
                }
                _ => Err(Error::Lowering(
                    "a kernel returns an index or a dynamic tensor".into(),
                )),
            }
        })
        .collect::<Result<_, _>>()?;

    let domain: Vec<i64> = if signature.flat {
        vec![FLAT_EXTENT]
    } else {
        kernel
            .attribute("meta.domain")
            .ok()
            .and_then(|a| i64_array(a))
            .ok_or_else(|| Error::Lowering("kernel without meta.domain".into()))?
    };
    let bound = |i: usize| -> Result<Value, Error> {
        let raw: Value = entry
            .argument(i)
            .map_err(|_| Error::Lowering("no range argument".into()))?
            .into();
        top.value("arith.index_cast", &[raw], Type::index(context))
    };
    let range = if domain.is_empty() {
        None
    } else {
        Some((bound(1)?, bound(2)?))
    };
    let schedule = schedule::schedule(body, &domain).map_err(Error::Lowering)?;
    // Rule 6: a contraction runs as register tiles (`contract`).
    let contraction = contraction(options, signature, body, &domain, &schedule);
    let emulated = options
        .emulate_gpu_tiles
        .then(|| contract::gpu_plan(body, &domain, &schedule, options.gpu_tile_shape))
        .flatten();
    let emit = |at: &Emitter, outputs: &[access::Output]| {
        if let (Some(tiles), [output]) = (&emulated, outputs) {
            return contract::emit_emulated(at, tiles, &arguments, output, options.math);
        }
        if let (Some(plan), [output]) = (&contraction, outputs) {
            return contract::emit_contraction(
                at,
                plan,
                &arguments,
                output,
                &domain,
                schedule.split,
                range,
                options.math,
                None,
            );
        }
        nest::emit_kernel(
            at,
            body,
            &arguments,
            outputs,
            status,
            &domain,
            sizes.as_ref().map(|s| &s[..rank]),
            &schedule,
            range,
            options.math,
            point::Tuning {
                poly: poly::PolyTarget {
                    scalef: options.vector_bits >= 512,
                    gpu: false,
                },
                prefetch: true,
            },
        )
    };
    // Streamed results (`stream`): one more nest, run when each of their
    // addresses is a multiple of 64, whose stores are marked.
    let streamed = streamed(module, options, signature, contraction.is_some());
    let emit_streaming = |at: &Emitter, outputs: &[access::Output]| -> Result<(), Error> {
        if streamed.is_empty() {
            return emit(at, outputs);
        }
        let mark = stream::stream_tag(context)
            .ok_or_else(|| Error::Lowering("the streaming mark does not parse".into()))?;
        let mut aligned = at.int(at.i1(), 1)?;
        for &j in &streamed {
            let address = at.value("llvm.ptrtoint", &[outputs[j].pointer], i64_type)?;
            let low = at.value("arith.andi", &[address, at.int(i64_type, 63)?], i64_type)?;
            let zero = at.cmpi(0, low, at.int(i64_type, 0)?)?;
            aligned = at.value("arith.andi", &[aligned, zero], at.i1())?;
        }
        let marked: Vec<access::Output> = outputs
            .iter()
            .enumerate()
            .map(|(k, output)| access::Output {
                stream: streamed.contains(&k).then_some(mark),
                ..output.clone()
            })
            .collect();
        let then = at.if_then(aligned)?;
        // Said again as `align` assumptions, which LLVM's alignment
        // inference reads (not the branch condition, and InstCombine drops
        // an `assume` of a condition a branch already implies).
        let sizes = Attribute::parse(context, "array<i32: 2>");
        let tags = Attribute::parse(context, "[\"align\"]");
        let (Some(sizes), Some(tags)) = (sizes, tags) else {
            return Err(Error::Lowering("an `align` operand bundle does not parse".into()));
        };
        let (yes, sixty_four) = (then.int(then.i1(), 1)?, then.int(i64_type, 64)?);
        for &j in &streamed {
            then.op(
                "llvm.intr.assume",
                &[yes, outputs[j].pointer, sixty_four],
                &[],
                &[("op_bundle_sizes", sizes), ("op_bundle_tags", tags)],
            )?;
        }
        emit(&then, &marked)?;
        then.finish()?;
        let misaligned = at.value("arith.xori", &[aligned, at.int(at.i1(), 1)?], at.i1())?;
        let otherwise = at.if_then(misaligned)?;
        emit(&otherwise, outputs)?;
        otherwise.finish()
    };
    match signature.in_place {
        // Two nests: one that reads and writes argument `i`'s buffer
        // through one pointer, run when the caller passed it as result
        // `j`'s, and the usual one.
        Some((i, j)) => {
            let argument = top.value("llvm.ptrtoint", &[pointers[i]], i64_type)?;
            let result = top.value("llvm.ptrtoint", &[pointers[signature.inputs.len() + j]], i64_type)?;
            let shared = top.cmpi(0, argument, result)?;
            let apart = top.value("arith.xori", &[shared, top.int(top.i1(), 1)?], top.i1())?;
            let in_place: Vec<access::Output> = outputs
                .iter()
                .enumerate()
                .map(|(k, output)| access::Output {
                    pointer: if k == j { pointers[i] } else { output.pointer },
                    ..output.clone()
                })
                .collect();
            // This nest writes argument `i`'s buffer: its loads of it
            // claim nothing about aliasing.
            let then = Emitter {
                scopes: top.scopes.map(|scopes| scopes.written_in_place(i)),
                ..top.if_then(shared)?
            };
            emit(&then, &in_place)?;
            then.finish()?;
            let otherwise = top.if_then(apart)?;
            emit_streaming(&otherwise, &outputs)?;
            otherwise.finish()?;
        }
        None => emit_streaming(&top, &outputs)?,
    }
    top.op("func.return", &[], &[], &[])?;

    let name = &signature.name;
    // No `llvm.emit_c_interface`: the kernel's own signature is already
    // the C calling convention the runtime calls, and a `_mlir_ciface_`
    // wrapper would get the whole loop nest inlined, compiling every kernel
    // twice.
    let attributes: [(Identifier, Attribute); 0] = [];
    let function = func::func(
        context,
        StringAttribute::new(context, name),
        TypeAttribute::new(FunctionType::new(context, &[pointer, i64_type, i64_type], &[]).into()),
        region,
        &attributes,
        location,
    );
    lowered.body().append_operation(function);
    Ok(())
}

/// The kernel's arguments (the arguments of its `body`), each with its
/// lowered form: a tensor is the data pointer `slots[i]`, an index is
/// `read_index(slots[i])`.
fn lower_arguments<'c, 'a, 'b>(
    body: BlockRef<'c, 'b>,
    inputs: &[Buffer],
    slots: &[Value<'c, 'a>],
    extents: &mut HashMap<usize, Vec<Value<'c, 'a>>>,
    flat: bool,
    mut read_index: impl FnMut(Value<'c, 'a>) -> Result<Value<'c, 'a>, Error>,
) -> Result<Vec<(Value<'c, 'b>, Arg<'c, 'a>)>, Error> {
    inputs
        .iter()
        .enumerate()
        .map(|(i, input)| {
            let argument: Value = body
                .argument(i)
                .map_err(|_| Error::Lowering("missing argument".into()))?
                .into();
            let lowered = match input {
                Buffer::Index => Arg::Index(read_index(slots[i])?),
                Buffer::Tensor(shape, element) => Arg::Tensor {
                    pointer: slots[i],
                    shape: shape.clone(),
                    element: *element,
                    dynamic: None,
                },
                // In a flat kernel, every buffer is one dimension of
                // FLAT_EXTENT, read at the loop index.
                Buffer::Dynamic(_, element) if flat => Arg::Tensor {
                    pointer: slots[i],
                    shape: vec![FLAT_EXTENT as usize],
                    element: *element,
                    dynamic: None,
                },
                Buffer::Dynamic(shape, element) => Arg::Tensor {
                    pointer: slots[i],
                    shape: shape.iter().map(|d| d.unwrap_or(0)).collect(),
                    element: *element,
                    dynamic: Some(access::Dynamic {
                        extents: extents
                            .remove(&i)
                            .ok_or_else(|| Error::Lowering("a dynamic argument without sizes".into()))?,
                        r#type: dynamic_type_text(shape, *element),
                    }),
                },
            };
            Ok((argument, lowered))
        })
        .collect()
}

/// The sizes of the `inputs` of dynamic shape, by input, as `index`es: a
/// static dimension as a constant, dimension `d` of input `i` that is
/// dynamic as `size(i, d)` (an `i64`), asked in input, then dimension
/// order ([`KernelSignature::dynamic_dims`]'s).
fn dynamic_extents<'c, 'a>(
    top: &Emitter<'c, 'a>,
    inputs: &[Buffer],
    mut size: impl FnMut(usize, usize) -> Result<Value<'c, 'a>, Error>,
) -> Result<HashMap<usize, Vec<Value<'c, 'a>>>, Error> {
    let index = Type::index(top.context);
    let mut extents = HashMap::new();
    for (i, input) in inputs.iter().enumerate() {
        let Buffer::Dynamic(shape, _) = input else {
            continue;
        };
        let mut sizes = Vec::with_capacity(shape.len());
        for (d, extent) in shape.iter().enumerate() {
            sizes.push(match extent {
                Some(n) => top.index(*n as i64)?,
                None => top.value("arith.index_cast", &[size(i, d)?], index)?,
            });
        }
        extents.insert(i, sizes);
    }
    Ok(extents)
}

/// The static tensors of a calling convention, for `inplace`.
fn statics(buffers: &[Buffer]) -> Vec<inplace::Static<'_>> {
    buffers
        .iter()
        .map(|b| match b {
            Buffer::Tensor(shape, element) => Some((shape.as_slice(), *element)),
            _ => None,
        })
        .collect()
}

/// `tensor<?x16xf32>`, for messages.
fn dynamic_type_text(shape: &[Option<usize>], element: ElementType) -> String {
    let dims: String = shape
        .iter()
        .map(|d| d.map_or("?x".to_owned(), |n| format!("{n}x")))
        .collect();
    format!("tensor<{dims}{}>", element.name())
}

fn i64_array(attribute: Attribute) -> Option<Vec<i64>> {
    jitc_dialect::ops::i64_array_attribute(attribute)
}

pub use types::MathMode;
pub(crate) use types::{
    element_of, gep, gep as emit_gep, memory_type, memory_type as memory, static_shape, value_type,
};
