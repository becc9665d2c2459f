//! Contraction epilogues: a contraction that runs as register tiles
//! (`contract`, schedule rule 6) and the element-wise kernel that reads its
//! result run as one kernel on the CPU, past Jittor's rule 2. Each tile's
//! sums go through the consumer's ops while they are in the L1 cache.
//!
//! Rule 2 keeps a reduction's consumers out of its kernel, so a layer
//! `relu(x W + b)` is two kernels: the contraction writes `x W` to memory,
//! and the next kernel reads it back to add the bias and take the maximum.
//! Each is a call, and each call wakes the worker team. The unrolled RNN
//! calls its `tanh` kernel after each of its 32 recurrent contractions:
//! 5.5 µs a call, 18% of the whole program (`jitc bench --kernels`,
//! docs/benchmarks.md).
//!
//! **When.** [`fuse_epilogues`] looks at every call, in host code, of a
//! kernel that lowers as register tiles (`contract::Form::Tiles`) without
//! packing its operand, whose sums take [`MAX_SUMS_BYTES`] at most, and
//! whose result map names each dimension of the result by one domain
//! dimension (matmul's and convolution's do). Its consumer is the first
//! later call in the same block, before any op that could fail, that
//! reads the result and
//! - is a kernel over a static domain equal to the result's shape, with
//!   no reduction (each of its results is written at the domain's own
//!   index, as a tile's outputs are);
//! - reads the result in one argument and only element-wise: a reindex of
//!   it would read sums of other tiles;
//! - has at most one op that can fail (an integer division, or a reindex
//!   with symbols). The contraction cannot fail, so the kernel reports
//!   what the interpreter reports, whatever the order of its tiles;
//! - has every other argument ready at the contraction's call: defined
//!   before it, or a constant between the two calls, which moves before
//!   it.
//!
//! The consumer then runs before the ops between the two calls, so those
//! must not be able to fail: constants, and calls of kernels with no op
//! that can ([`fallible_ops`]). Otherwise the run could report the
//! consumer's failure where the interpreter reports theirs.
//!
//! Both kernels take static tensors and indices only: an epilogue passes
//! no sizes, so a contraction over a sequence of dynamic length (the
//! IndRNN's generic form) keeps its consumer apart.
//!
//! A contraction that packs its operand (a fold of 512 steps or more, or a
//! gathered transposed operand) keeps its consumer apart. Its blocks keep
//! their partial sums in the output, so the output is written and read
//! back either way, and the consumer's few microseconds weigh little
//! beside a fold that long: matmul 256x512x784 with a bias and ReLU took
//! 1.07-1.09 ms fused (the consumer on each tile or each panel after the
//! last block) against 1.05-1.06 ms apart (`jitc bench`, alternating,
//! docs/benchmarks.md).
//!
//! Not with `jittor_rules`, nor in the bounds-checked mode (which has no
//! register tiles).
//!
//! **What.** The two calls become one call of a new function marked
//! `meta.fused` and `meta.epilogue` (the contraction and the consumer,
//! in order). Its body calls the two kernels, so the interpreter runs it
//! as it ran the calls. Its results are the consumer's, after the
//! contraction's own when something else reads it. Equal epilogue
//! functions merge, as kernels do (`crate::dedup`). A kernel that only
//! epilogue functions call is not lowered on its own ([`absorbed`]).
//!
//! **Lowering** ([`lower_epilogues`]). A function is lowered only if it
//! is what [`fuse_epilogues`] makes, checked again (the attribute can be
//! written by hand); otherwise it runs in the interpreter, with a note.
//! The contraction's tiles are emitted
//! as `contract` emits them. Each tile stores its sums to the output when
//! that is written, otherwise to a scratch tile on the stack. Then a loop
//! over the tile's rows and columns (up to `v`'s end) runs the consumer's
//! ops at each output, with the nest's point code (`nest`, `point`),
//! reading the sum back from L1. LLVM vectorizes that loop as it does any
//! kernel's. The consumer's ops are the ones its own kernel runs on the
//! same sums, so `--math exact` stays bit-identical to the interpreter,
//! and fast math changes nothing the two kernels apart would not.
//!
//! Example (`examples/mlp_step.mlir`): `@main_fused_7` is the gradient
//! `dW2 = hᵀ dlogits`, 512x10 over a fold of 256, and `@main_fused_14` is
//! the SGD step `W2 - lr dW2`. Nothing else reads `dW2`: the epilogue
//! function returns the new `W2` alone, and each tile's sums go through a
//! scratch tile into the step, so `dW2` never reaches memory. (`dW1`,
//! 784x512, is past [`MAX_SUMS_BYTES`]: its update stays a kernel of its
//! own.)

use super::{
    Buffer, KernelSignature, LowerOptions, Lowered,
    access::{self, Output, Status, key},
    buffer_of, contract,
    emit::{self, Emitter},
    i64_array, kernels, legal, lower_arguments, name_and_type, nest, point, poly, schedule, signature,
};
use crate::{
    Error,
    rewrite::{defining_op, erase, move_before, replace_uses, uses},
};
use jitc_dialect::ops::{ReindexReduceOp, string_attribute};
use melior::{
    Context,
    dialect::func,
    ir::{
        Attribute, BlockLike, BlockRef, Identifier, Module, OperationRef, RegionLike, Type, Value, ValueLike,
        attribute::{ArrayAttribute, FlatSymbolRefAttribute, StringAttribute, TypeAttribute},
        operation::OperationLike,
        r#type::{FunctionType, IntegerType},
    },
};
use std::collections::{BTreeMap, HashMap, HashSet};

/// The attribute of an epilogue function: the contraction and its
/// consumer.
pub const EPILOGUE_ATTRIBUTE: &str = "meta.epilogue";

/// The most bytes of sums an epilogue takes. What it saves is the
/// consumer's call, a few microseconds of waking the worker team, which
/// only small contractions feel; the consumer's reads of sums a larger
/// contraction just wrote hit the cache anyway. Measured with a bias and
/// `tanh` (`jitc bench`, alternating, docs/benchmarks.md): sums of 64 KiB
/// 3% faster fused, 256 KiB level, 1 MiB 0.6% slower; the MLP step's
/// 1.6 MB `dW1` with its SGD update 2% slower.
pub const MAX_SUMS_BYTES: usize = 256 << 10;

/// An epilogue [`fuse_epilogues`] made, for `jitc explain`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Epilogue {
    /// The epilogue function.
    pub name: String,
    /// The host function whose calls it replaced.
    pub host: String,
    /// The contraction kernel.
    pub contraction: String,
    /// The element-wise kernel run on its tiles.
    pub consumer: String,
    /// Whether the contraction still writes its result: something besides
    /// the consumer reads it.
    pub sums_written: bool,
    /// How many calls of it the host function makes, once equal epilogue
    /// functions merged ([`merged`]).
    pub calls: usize,
}

/// The epilogues of `made` as `module` calls them once equal ones merged
/// (`crate::dedup`): one per host function and epilogue function left,
/// with the calls that host makes of it.
pub(crate) fn merged(module: &Module, made: Vec<Epilogue>) -> Vec<Epilogue> {
    let functions = jitc_dialect::ops::functions(module.body());
    let by_name: HashMap<String, Epilogue> = made.into_iter().map(|e| (e.name.clone(), e)).collect();
    let mut out: Vec<Epilogue> = Vec::new();
    for (host, function) in super::rows::hosts(&functions) {
        super::inplace::visit_calls(function, &mut |call| {
            let Some(epilogue) = crate::transforms::inline::callee(call).and_then(|c| by_name.get(&c)) else {
                return;
            };
            match out.iter_mut().find(|e| e.name == epilogue.name && e.host == host) {
                Some(seen) => seen.calls += 1,
                None => out.push(Epilogue {
                    host: host.clone(),
                    calls: 1,
                    ..epilogue.clone()
                }),
            }
        });
    }
    out
}

/// A kernel's signature, domain, body and CPU schedule ([`view`]).
struct View<'c, 'a> {
    signature: KernelSignature,
    domain: Vec<i64>,
    body: BlockRef<'c, 'a>,
    schedule: schedule::Schedule,
}

/// A contraction an epilogue can run on ([`tiled`]): its view, its tiles,
/// and for each dimension of its sums the domain dimension that indexes
/// it.
struct Tiled<'c, 'a> {
    view: View<'c, 'a>,
    plan: contract::Contraction,
    dims: Vec<usize>,
}

/// `kernel` when it lowers as a register-tiled contraction with `options`
/// that does not pack its operand, whose result map is a projection of
/// its domain, and whose sums take [`MAX_SUMS_BYTES`] at most.
fn tiled<'c, 'a>(kernel: OperationRef<'c, 'a>, options: &LowerOptions) -> Option<Tiled<'c, 'a>> {
    let view = view(kernel)?;
    let plan = super::contraction(options, &view.signature, view.body, &view.domain, &view.schedule)
        .filter(|plan| plan.is_tiles() && !plan.packs())?;
    let small = matches!(&view.signature.outputs[..], [Buffer::Tensor(shape, element)]
        if shape.iter().product::<usize>() * element.byte_width() <= MAX_SUMS_BYTES);
    if !small || !fixed(&view.signature.inputs) {
        return None;
    }
    let dims = projection(view.body)?;
    Some(Tiled { view, plan, dims })
}

/// Whether every buffer is a static tensor or an index: an epilogue
/// function passes no sizes.
fn fixed(buffers: &[Buffer]) -> bool {
    buffers
        .iter()
        .all(|b| matches!(b, Buffer::Tensor(..) | Buffer::Index))
}

/// A kernel's signature, domain, body and CPU schedule, when it lowers.
fn view<'c, 'a>(kernel: OperationRef<'c, 'a>) -> Option<View<'c, 'a>> {
    let signature = signature(kernel).ok()?;
    legal::check(kernel).ok()?;
    let domain = kernel.attribute("meta.domain").ok().and_then(i64_array)?;
    let body = kernel.region(0).ok()?.first_block()?;
    let schedule = schedule::schedule(body, &domain).ok()?;
    Some(View {
        signature,
        domain,
        body,
        schedule,
    })
}

/// For each dimension of the one result of the kernel whose body is
/// `body`, a reduction, the domain dimension its map names there; `None`
/// unless each is one dimension, all distinct.
fn projection(body: BlockRef) -> Option<Vec<usize>> {
    let terminator = body.terminator()?;
    let [result] = terminator.operands().collect::<Vec<_>>()[..] else {
        return None;
    };
    let map = ReindexReduceOp::cast(defining_op(result)?)?.indices()?;
    let mut dims = Vec::new();
    for k in 0..map.result_count() {
        let expr = map.result(k).ok()?;
        if !expr.is_dim() || dims.contains(&expr.dim_position()) {
            return None;
        }
        dims.push(expr.dim_position());
    }
    Some(dims)
}

/// `kernel`'s view when it can run on a contraction's tiles, reading
/// their sums as argument `position` (of `shape`).
fn consumes<'c, 'a>(kernel: OperationRef<'c, 'a>, position: usize, shape: &[usize]) -> Option<View<'c, 'a>> {
    if [EPILOGUE_ATTRIBUTE, "meta.chain"]
        .iter()
        .any(|a| kernel.has_attribute(a))
    {
        return None;
    }
    let view = view(kernel)?;
    let View {
        signature,
        domain,
        body,
        ..
    } = &view;
    if signature.flat
        || signature.sizes.is_some()
        || !fixed(&signature.inputs)
        || !fixed(&signature.outputs)
        || domain.len() != shape.len()
        || domain.iter().zip(shape).any(|(&d, &n)| d != n as i64)
    {
        return None;
    }
    let argument = body.argument(position).ok().map(Value::from)?;
    let element_wise = |op: OperationRef| {
        matches!(
            super::rows::name_of(op).as_str(),
            "meta.unary" | "meta.binary" | "meta.ternary"
        )
    };
    if uses(argument).iter().any(|(user, _)| !element_wise(*user)) {
        return None;
    }
    let mut op = body.first_operation();
    while let Some(current) = op {
        op = current.next_in_block();
        if super::rows::name_of(current) == "meta.reindex_reduce" {
            return None;
        }
    }
    // Every result is computed in the body (at the domain's own index).
    let computed = body
        .terminator()
        .is_some_and(|t| t.operands().all(|v| defining_op(v).is_some()));
    (fallible_ops(kernel).is_some_and(|n| n <= 1) && computed).then_some(view)
}

/// The ops of the kernel `kernel` that can fail the run: integer
/// divisions and ops of dynamic shape (`fusion::may_trap`), reindexes with
/// symbols (affine arithmetic on them may divide by a non-positive value
/// or overflow), and reindexes whose index range over the domain is not
/// known (their arithmetic may overflow between the corners the verifier
/// tries). `None` when it is no kernel that lowers: anything may fail.
fn fallible_ops(kernel: OperationRef) -> Option<usize> {
    legal::check(kernel).ok()?;
    let domain = kernel.attribute("meta.domain").ok().and_then(i64_array)?;
    let body = kernel.region(0).ok()?.first_block()?;
    let mut fallible = 0;
    let mut op = body.first_operation();
    while let Some(current) = op {
        op = current.next_in_block();
        let name = super::rows::name_of(current);
        let map = match name.as_str() {
            "meta.reindex" => jitc_dialect::ops::ReindexOp::cast(current).and_then(|r| r.indices()),
            "meta.reindex_reduce" => ReindexReduceOp::cast(current).and_then(|r| r.indices()),
            _ => None,
        };
        let unknown = map.is_some_and(|map| {
            (0..map.result_count()).any(|k| {
                map.result(k)
                    .ok()
                    .and_then(|e| schedule::range(e, &domain))
                    .is_none()
            })
        });
        let symbols = map.is_some() && current.operand_count() > 1;
        if symbols || unknown || crate::fusion::may_trap(current) {
            fallible += 1;
        }
    }
    Some(fallible)
}

/// Whether `op`, in host code between a contraction's call and its
/// consumer's, cannot fail: a constant, or a call of a kernel that lowers
/// and has no op that can ([`fallible_ops`]; not a chain or an epilogue,
/// whose bodies are calls). The consumer moves before such ops only, so it
/// changes no error the run reports.
fn cannot_fail(op: OperationRef, functions: &BTreeMap<String, OperationRef>) -> bool {
    if is_constant(op) {
        return true;
    }
    let Some((_, kernel)) = callee_of(op, functions) else {
        return false;
    };
    !kernel.has_attribute("meta.chain")
        && !kernel.has_attribute(EPILOGUE_ATTRIBUTE)
        && fallible_ops(kernel) == Some(0)
}

/// Whether `op` is an `arith.constant` (in host code: it cannot fail, and
/// moves freely).
fn is_constant(op: OperationRef) -> bool {
    super::rows::name_of(op) == "arith.constant" && op.operand_count() == 0 && op.region_count() == 0
}

/// A call of a kernel, and the kernel's name.
fn callee_of<'c, 'a>(
    op: OperationRef<'c, 'a>,
    functions: &BTreeMap<String, OperationRef<'c, 'a>>,
) -> Option<(String, OperationRef<'c, 'a>)> {
    if super::rows::name_of(op) != "func.call" {
        return None;
    }
    let name = crate::transforms::inline::callee(op)?;
    let kernel = *functions.get(&name)?;
    kernel.has_attribute("meta.fused").then_some((name, kernel))
}

/// Rewrites each contraction call in the host code of `module` that has
/// a consumer (see the module doc) and its consumer's call into one call
/// of an epilogue function; returns the epilogues made.
pub(crate) fn fuse_epilogues(
    context: &Context,
    module: &Module,
    options: &LowerOptions,
) -> Result<Vec<Epilogue>, Error> {
    if options.check_bounds || options.vector_bits == 0 {
        return Ok(Vec::new());
    }
    let functions = jitc_dialect::ops::functions(module.body());
    let mut tiles: HashMap<String, bool> = HashMap::new();
    let mut taken: HashSet<String> = functions.keys().cloned().collect();
    let mut erased: HashSet<usize> = HashSet::new();
    let mut made = Vec::new();
    for (host, function) in super::rows::hosts(&functions) {
        for block in super::rows::blocks(function) {
            let mut ops = Vec::new();
            let mut op = block.first_operation();
            while let Some(current) = op {
                op = current.next_in_block();
                ops.push(current);
            }
            for (at, &call) in ops.iter().enumerate() {
                if erased.contains(&(call.to_raw().ptr as usize)) {
                    continue;
                }
                let Some((name, kernel)) = callee_of(call, &functions) else {
                    continue;
                };
                if kernel.has_attribute(EPILOGUE_ATTRIBUTE) || kernel.has_attribute("meta.chain") {
                    continue;
                }
                if !*tiles
                    .entry(name.clone())
                    .or_insert_with(|| tiled(kernel, options).is_some())
                {
                    continue;
                }
                let Some(consumer) = find_consumer(&ops, at, &functions, &erased) else {
                    continue;
                };
                let Ok(result) = call.result(0) else { continue };
                let sums: Value = result.into();
                let read_elsewhere = uses(sums)
                    .iter()
                    .any(|(user, _)| user.to_raw().ptr != consumer.call.to_raw().ptr);
                erased.insert(consumer.call.to_raw().ptr as usize);
                erased.insert(call.to_raw().ptr as usize);
                let epilogue = rewrite(
                    context,
                    module,
                    &mut taken,
                    (call, &name),
                    &consumer,
                    read_elsewhere,
                )?;
                made.push(Epilogue {
                    name: epilogue,
                    host: host.clone(),
                    contraction: name,
                    consumer: consumer.name,
                    sums_written: read_elsewhere,
                    calls: 1,
                });
            }
        }
    }
    Ok(made)
}

/// A consumer's call: the call, its kernel's name, and the constants
/// between the contraction's call and it that it reads (they move before
/// the contraction's call).
struct Consumer<'c, 'a> {
    call: OperationRef<'c, 'a>,
    name: String,
    constants: Vec<OperationRef<'c, 'a>>,
}

/// The consumer of the contraction called by `ops[at]`, if it has one.
fn find_consumer<'c, 'a>(
    ops: &[OperationRef<'c, 'a>],
    at: usize,
    functions: &BTreeMap<String, OperationRef<'c, 'a>>,
    erased: &HashSet<usize>,
) -> Option<Consumer<'c, 'a>> {
    let call = ops[at];
    if call.result_count() != 1 {
        return None;
    }
    let sums: Value = call.result(0).ok()?.into();
    let shape = super::rows::shape_of(sums)?;
    // The ops between the two calls, by address.
    let mut between: HashSet<usize> = HashSet::new();
    for &candidate in &ops[at + 1..] {
        let address = candidate.to_raw().ptr as usize;
        // Gone: an earlier epilogue's call stands in its place.
        if erased.contains(&address) {
            continue;
        }
        let reads: Vec<usize> = candidate
            .operands()
            .enumerate()
            .filter(|(_, v)| key(*v) == key(sums))
            .map(|(i, _)| i)
            .collect();
        if let [position] = reads.as_slice()
            && let Some((name, kernel)) = callee_of(candidate, functions)
            && consumes(kernel, *position, &shape).is_some()
        {
            let mut constants = Vec::new();
            let ready = candidate.operands().all(|operand| {
                let Some(definition) = defining_op(operand) else {
                    return true;
                };
                if !between.contains(&(definition.to_raw().ptr as usize)) {
                    return true;
                }
                let constant = is_constant(definition);
                if constant {
                    constants.push(definition);
                }
                constant
            });
            if ready {
                return Some(Consumer {
                    call: candidate,
                    name,
                    constants,
                });
            }
        }
        // The consumer would run before this op: it must not be one that
        // can fail, or the run could report the consumer's failure where
        // the interpreter reports this op's.
        if !cannot_fail(candidate, functions) {
            return None;
        }
        between.insert(address);
    }
    None
}

/// Replaces the contraction's `call` (of the kernel `name`) and its
/// consumer's with one call of a new epilogue function; returns its name.
/// `written`: the function returns the contraction's result too, first.
fn rewrite(
    context: &Context,
    module: &Module,
    taken: &mut HashSet<String>,
    (call, name): (OperationRef, &str),
    consumer: &Consumer,
    written: bool,
) -> Result<String, Error> {
    let fail = |what: &str| Error::Lowering(format!("epilogue of @{name}: {what}"));
    let sums: Value = call.result(0).map_err(|_| fail("no result"))?.into();
    let mut inputs: Vec<Value> = Vec::new();
    for operand in call.operands().chain(consumer.call.operands()) {
        if key(operand) != key(sums) && !inputs.iter().any(|v| key(*v) == key(operand)) {
            inputs.push(operand);
        }
    }
    let mut outputs: Vec<Value> = Vec::new();
    if written {
        outputs.push(sums);
    }
    outputs.extend(consumer.call.results().map(Value::from));

    // The epilogue function: the two calls, on its arguments.
    let location = call.location();
    let input_types: Vec<Type> = inputs.iter().map(|v| v.r#type()).collect();
    let output_types: Vec<Type> = outputs.iter().map(|v| v.r#type()).collect();
    let region = super::rows::outlined(
        context,
        &[(call, name), (consumer.call, consumer.name.as_str())],
        &inputs,
        &outputs,
        location,
    )?;
    // Its name and its tile function's (`lower_tile_function`), both new.
    let mut epilogue = format!("{name}_epilogue");
    while taken.contains(&epilogue) || taken.contains(&tile_function_of(&epilogue)) {
        epilogue.push('_');
    }
    taken.insert(tile_function_of(&epilogue));
    taken.insert(epilogue.clone());
    let parts: Vec<Attribute> = [name, consumer.name.as_str()]
        .iter()
        .map(|n| FlatSymbolRefAttribute::new(context, n).into())
        .collect();
    let attributes = [
        (
            Identifier::new(context, "sym_visibility"),
            StringAttribute::new(context, "private").into(),
        ),
        (Identifier::new(context, "meta.fused"), Attribute::unit(context)),
        (
            Identifier::new(context, EPILOGUE_ATTRIBUTE),
            ArrayAttribute::new(context, &parts).into(),
        ),
    ];
    module.body().append_operation(func::func(
        context,
        StringAttribute::new(context, &epilogue),
        TypeAttribute::new(FunctionType::new(context, &input_types, &output_types).into()),
        region,
        &attributes,
        location,
    ));

    // The host calls it where it called the contraction.
    for constant in &consumer.constants {
        move_before(*constant, call);
    }
    let block = call.block().ok_or_else(|| fail("a call outside a block"))?;
    let new = block.insert_operation_before(
        call,
        func::call(
            context,
            FlatSymbolRefAttribute::new(context, &epilogue),
            &inputs,
            &output_types,
            location,
        ),
    );
    for (j, output) in outputs.iter().enumerate() {
        let result = new.result(j).map_err(|_| fail("a call result"))?;
        replace_uses(*output, result.into());
    }
    // The consumer read the contraction's result: it goes first.
    erase(consumer.call);
    erase(call);
    Ok(epilogue)
}

/// The name of the tile function of the epilogue `epilogue`
/// (`lower_tile_function`).
fn tile_function_of(epilogue: &str) -> String {
    format!("{epilogue}_tile")
}

/// The two kernels an epilogue function calls: the contraction, then its
/// consumer.
pub(crate) fn parts_of(function: OperationRef) -> Vec<String> {
    super::rows::symbols_in(function, EPILOGUE_ATTRIBUTE)
}

/// The kernels of `module` that only epilogue functions call: lowered as
/// part of them, not on their own.
pub(crate) fn absorbed(module: &Module) -> HashSet<String> {
    let functions = jitc_dialect::ops::functions(module.body());
    let mut parts: HashSet<String> = HashSet::new();
    let mut elsewhere: HashSet<String> = HashSet::new();
    for function in functions.values() {
        let epilogue = function.has_attribute(EPILOGUE_ATTRIBUTE);
        super::inplace::visit_calls(*function, &mut |call| {
            if let Some(callee) = crate::transforms::inline::callee(call) {
                if epilogue {
                    parts.insert(callee);
                } else {
                    elsewhere.insert(callee);
                }
            }
        });
    }
    parts.retain(|p| !elsewhere.contains(p));
    parts
}

/// Lowers the epilogue functions of `module` into `lowered`, after
/// [`super::lower`] lowered every kernel but those in `absorbed`. An
/// epilogue that does not lower is reported in `lowered.skipped` and runs
/// in the interpreter, which calls its two kernels; those are then lowered
/// on their own.
pub(crate) fn lower_epilogues<'c>(
    context: &'c Context,
    module: &Module<'c>,
    lowered: &mut Lowered<'c>,
    absorbed: &HashSet<String>,
    options: &LowerOptions,
) -> Result<Vec<String>, Error> {
    let mut fallback = Vec::new();
    for function in kernels(module) {
        if !function.has_attribute(EPILOGUE_ATTRIBUTE) {
            continue;
        }
        let reason = match lower_epilogue(context, module, &lowered.module, function, options) {
            Ok(Ok(signature)) => {
                // Its tile function is compiled once, called per tile.
                lowered.no_inline.push(tile_function_of(&signature.name));
                lowered.signatures.push(signature);
                continue;
            }
            Ok(Err(reason)) => reason,
            Err(error) => error.to_string(),
        };
        let name = function.attribute("sym_name").ok().and_then(string_attribute);
        lowered.skipped.push((name.unwrap_or("?").to_owned(), reason));
        for part in parts_of(function) {
            if absorbed.contains(&part) && !fallback.contains(&part) {
                fallback.push(part);
            }
        }
    }
    Ok(fallback)
}

/// Lowers the epilogue `function` to a kernel of the usual calling
/// convention (`func.func @name(!llvm.ptr, i64, i64)`), split across
/// threads as its contraction is; returns its signature, or why the
/// function is not an epilogue [`fuse_epilogues`] makes.
fn lower_epilogue<'c>(
    context: &'c Context,
    module: &Module<'c>,
    lowered: &Module<'c>,
    function: OperationRef<'c, '_>,
    options: &LowerOptions,
) -> Result<Result<KernelSignature, String>, Error> {
    let (name, function_type) = name_and_type(function, "epilogue").map_err(Error::Lowering)?;
    let fail = |what: &str| Error::Lowering(format!("epilogue @{name}: {what}"));
    let body = function
        .region(0)
        .ok()
        .and_then(|r| r.first_block())
        .ok_or_else(|| fail("no body"))?;
    let functions = jitc_dialect::ops::functions(module.body());
    let mut calls = Vec::new();
    let mut ops = 0;
    let mut op = body.first_operation();
    while let Some(current) = op {
        op = current.next_in_block();
        ops += 1;
        if let Some((_, kernel)) = callee_of(current, &functions) {
            calls.push((current, kernel));
        }
    }
    let not_made = format!(
        "@{name} is marked {EPILOGUE_ATTRIBUTE} but is not a contraction and its consumer as the CPU backend makes them"
    );
    let [(tiles_call, tiles_kernel), (consumer_call, consumer_kernel)] = calls[..] else {
        return Ok(Err(not_made));
    };
    // What `rewrite` makes, checked again (the attribute may be written by
    // hand): the two calls and the return, the contraction on arguments,
    // the consumer on arguments and the sums once, returning its results
    // and maybe the sums.
    let Some(sums) = tiles_call.result(0).ok().map(Value::from) else {
        return Ok(Err(not_made));
    };
    let Some(shape) = super::rows::shape_of(sums) else {
        return Ok(Err(not_made));
    };
    let arguments: HashSet<usize> = (0..body.argument_count())
        .filter_map(|i| body.argument(i).ok().map(|a| key(a.into())))
        .collect();
    let Some(position) = consumer_call.operands().position(|v| key(v) == key(sums)) else {
        return Ok(Err(not_made));
    };
    let consumer_results: Vec<usize> = consumer_call.results().map(|r| key(r.into())).collect();
    let returned: Vec<usize> = body
        .terminator()
        .map(|t| t.operands().map(key).collect())
        .unwrap_or_default();
    let distinct: HashSet<&usize> = returned.iter().collect();
    let (Some(tiles), Some(consumer_view)) = (
        tiled(tiles_kernel, options),
        consumes(consumer_kernel, position, &shape),
    ) else {
        return Ok(Err(not_made));
    };
    let well_formed = ops == 3
        && !functions.contains_key(&tile_function_of(&name))
        && tiles_call.result_count() == 1
        && tiles_call.operands().all(|v| arguments.contains(&key(v)))
        && consumer_call.operands().enumerate().all(|(i, v)| {
            if i == position {
                true
            } else {
                arguments.contains(&key(v))
            }
        })
        && distinct.len() == returned.len()
        && consumer_results.iter().all(|r| returned.contains(r))
        && returned
            .iter()
            .all(|r| *r == key(sums) || consumer_results.contains(r));
    if !well_formed {
        return Ok(Err(not_made));
    }
    let Tiled {
        view:
            View {
                signature: tiles_signature,
                domain,
                body: tiles_body,
                schedule: tiles_schedule,
            },
        plan,
        dims,
    } = tiles;
    let buffer = |t: Result<Type, _>| {
        t.ok()
            .and_then(buffer_of)
            .ok_or_else(|| fail("a dynamic or unsupported type"))
    };
    let signature = KernelSignature {
        name: name.clone(),
        inputs: (0..function_type.input_count())
            .map(|i| buffer(function_type.input(i)))
            .collect::<Result<_, _>>()?,
        outputs: (0..function_type.result_count())
            .map(|i| buffer(function_type.result(i)))
            .collect::<Result<_, _>>()?,
        outer: tiles_signature.outer,
        parallel: tiles_signature.parallel,
        points: tiles_signature
            .points
            .saturating_add(consumer_view.signature.points),
        accesses: Vec::new(),
        flat: false,
        sizes: None,
        in_place: None,
        partial: Vec::new(),
        exact: Vec::new(),
    };

    // The buffer array's slot of each value the body's calls read or
    // return: arguments, results, then the status record.
    let (inputs, outputs) = (signature.inputs.len(), signature.outputs.len());
    let status_slot = inputs + outputs;
    let mut slot_of: HashMap<usize, usize> = HashMap::new();
    for i in 0..inputs {
        let value: Value = body.argument(i).map_err(|_| fail("body arguments"))?.into();
        slot_of.insert(key(value), i);
    }
    let terminator = body.terminator().ok_or_else(|| fail("no return"))?;
    for (j, value) in terminator.operands().enumerate() {
        slot_of.insert(key(value), inputs + j);
    }
    let writes_output = slot_of.contains_key(&key(sums));
    // The slots each call passes; the sums, when they are not written, none
    // (the consumer reads them from the scratch).
    let passed = |call: OperationRef| -> Result<Vec<Option<usize>>, Error> {
        call.operands()
            .map(|v| match slot_of.get(&key(v)) {
                Some(&slot) => Ok(Some(slot)),
                None if key(v) == key(sums) => Ok(None),
                None => Err(fail("an operand with no buffer")),
            })
            .collect()
    };
    let returned = |call: OperationRef| -> Vec<Option<usize>> {
        call.results()
            .map(|r| slot_of.get(&key(r.into())).copied())
            .collect()
    };
    let tile_function = tile_function_of(&name);
    lower_tile_function(
        context,
        lowered,
        &tile_function,
        (&plan, &dims),
        Part {
            view: &consumer_view,
            arguments: passed(consumer_call)?,
            results: returned(consumer_call),
        },
        (position, status_slot),
        options,
    )?;

    let location = function.location();
    let pointer = melior::dialect::llvm::r#type::pointer(context, 0);
    let i64_type: Type = IntegerType::new(context, 64).into();
    let index = Type::index(context);
    let (region, top) = emit::function_body(context, location, &[pointer, i64_type, i64_type], true)?;
    let entry = top.block;
    let argument = |i: usize| -> Result<Value, Error> {
        entry.argument(i).map(Into::into).map_err(|_| fail("arguments"))
    };
    let buffers = argument(0)?;
    let mut slots = Vec::with_capacity(status_slot + 1);
    for slot in 0..=status_slot {
        let address = super::gep(&top, buffers, top.int(i64_type, slot as i64)?, pointer)?;
        slots.push(top.value("llvm.load", &[address], pointer)?);
    }
    let read_index = |pointer| -> Result<Value, Error> {
        let raw = top.value("llvm.load", &[pointer], i64_type)?;
        top.value("arith.index_cast", &[raw], index)
    };
    let tiles_slots = passed(tiles_call)?
        .into_iter()
        .map(|slot| {
            slot.map(|k| slots[k])
                .ok_or_else(|| fail("a contraction operand with no buffer"))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let tiles_arguments = lower_arguments(
        tiles_body,
        &tiles_signature.inputs,
        &tiles_slots,
        &mut HashMap::new(),
        false,
        read_index,
    )?;
    let Buffer::Tensor(shape, element) = &tiles_signature.outputs[0] else {
        return Err(fail("the sums are not a static tensor"));
    };
    // Unused when the sums are not written: the tiles store to the scratch.
    let sums_pointer = slot_of.get(&key(sums)).map_or(slots[status_slot], |&k| slots[k]);
    let output = Output::fixed(sums_pointer, shape.clone(), *element);
    let consumer = contract::Consumer {
        function: tile_function,
        buffers,
        writes_output,
    };
    let range = if domain.is_empty() {
        None
    } else {
        let bound =
            |i: usize| -> Result<Value, Error> { top.value("arith.index_cast", &[argument(i)?], index) };
        Some((bound(1)?, bound(2)?))
    };
    contract::emit_contraction(
        &top,
        &plan,
        &tiles_arguments,
        &output,
        &domain,
        tiles_schedule.split,
        range,
        options.math,
        Some(&consumer),
    )?;
    top.op("func.return", &[], &[], &[])?;
    let no_attributes: [(Identifier, Attribute); 0] = [];
    lowered.body().append_operation(func::func(
        context,
        StringAttribute::new(context, &name),
        TypeAttribute::new(FunctionType::new(context, &[pointer, i64_type, i64_type], &[]).into()),
        region,
        &no_attributes,
        location,
    ));
    Ok(Ok(signature))
}

/// The consumer kernel: its view, and the buffer-array slot of each of its
/// arguments (`None` for the sums, read from the scratch) and results.
struct Part<'p, 'c, 'a> {
    view: &'p View<'c, 'a>,
    arguments: Vec<Option<usize>>,
    results: Vec<Option<usize>>,
}

/// Lowers the consumer's part of an epilogue to the tile function `name`
/// (`contract::Consumer`): `(buffers, r0, rows, v0, columns, scratch,
/// outer...)`, which runs the consumer's ops at each output of a tile, in
/// a loop over its rows and columns that LLVM vectorizes, reading each
/// sum from the output (the consumer's argument `position`) or from the
/// scratch (row by row, a tile's width apart). `plan` is the
/// contraction's tiles and `dims` the contraction dimension of each
/// dimension of the sums; `status_slot` is the buffer array's slot of the
/// status record.
#[allow(clippy::too_many_arguments)]
fn lower_tile_function<'c>(
    context: &'c Context,
    lowered: &Module<'c>,
    name: &str,
    (plan, dims): (&contract::Contraction, &[usize]),
    consumer: Part,
    (position, status_slot): (usize, usize),
    options: &LowerOptions,
) -> Result<(), Error> {
    let fail = |what: &str| Error::Lowering(format!("tile function @{name}: {what}"));
    let roles = plan.roles();
    let element = plan.element();
    let View {
        signature,
        domain,
        body,
        schedule,
    } = consumer.view;
    let location = melior::ir::Location::unknown(context);
    let pointer = melior::dialect::llvm::r#type::pointer(context, 0);
    let i64_type: Type = IntegerType::new(context, 64).into();
    let index = Type::index(context);
    let mut parameters = vec![pointer, i64_type, i64_type, i64_type, i64_type, pointer];
    parameters.extend(roles.outer.iter().map(|_| i64_type));
    let (region, top) = emit::function_body(context, location, &parameters, true)?;
    let entry = top.block;
    let parameter = |i: usize| -> Result<Value, Error> {
        entry.argument(i).map(Into::into).map_err(|_| fail("parameters"))
    };
    let as_index =
        |i: usize| -> Result<Value, Error> { top.value("arith.index_cast", &[parameter(i)?], index) };
    let (buffers, r0, rows, v0, columns, scratch) = (
        parameter(0)?,
        as_index(1)?,
        as_index(2)?,
        as_index(3)?,
        as_index(4)?,
        parameter(5)?,
    );
    let outer = (0..roles.outer.len())
        .map(|k| as_index(6 + k))
        .collect::<Result<Vec<_>, _>>()?;
    let slot = |k: usize| -> Result<Value, Error> {
        let address = super::gep(&top, buffers, top.int(i64_type, k as i64)?, pointer)?;
        top.value("llvm.load", &[address], pointer)
    };
    let status = Status {
        record: slot(status_slot)?,
        accesses: None,
        skew: options.skew,
        flat: None,
    };
    // The sums' argument, when they are not written, points at the status
    // record: its loads are never made (the point knows the sum).
    let slots = consumer
        .arguments
        .iter()
        .map(|k| slot(k.unwrap_or(status_slot)))
        .collect::<Result<Vec<_>, _>>()?;
    let read_index = |pointer| -> Result<Value, Error> {
        let raw = top.value("llvm.load", &[pointer], i64_type)?;
        top.value("arith.index_cast", &[raw], index)
    };
    let arguments = lower_arguments(
        *body,
        &signature.inputs,
        &slots,
        &mut HashMap::new(),
        false,
        read_index,
    )?;
    let outputs = consumer
        .results
        .iter()
        .zip(&signature.outputs)
        .map(|(k, buffer)| {
            let Buffer::Tensor(shape, element) = buffer else {
                return Err(fail("a result that is not a static tensor"));
            };
            let k = k.ok_or_else(|| fail("a result with no buffer"))?;
            Ok(Output::fixed(slot(k)?, shape.clone(), *element))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let (kernel, in_memory) = nest::Kernel::new(
        *body,
        &arguments,
        &outputs,
        status,
        domain,
        None,
        schedule,
        None,
        options.math,
        point::Tuning {
            poly: poly::PolyTarget {
                scalef: options.vector_bits >= 512,
                gpu: false,
            },
            prefetch: false,
        },
    )?;
    if !in_memory.is_empty() {
        return Err(fail("the consumer has a reduction"));
    }
    let sums_key = body
        .argument(position)
        .map(|a| access::key(a.into()))
        .map_err(|_| fail("the consumer's arguments"))?;
    let from_scratch = consumer.arguments.get(position).is_some_and(|k| k.is_none());

    let (by_row, m) = top.for_range(top.index(0)?, rows)?;
    let (by_column, c) = by_row.for_range(by_row.index(0)?, columns)?;
    let r = by_column.value("arith.addi", &[r0, m], index)?;
    let v = by_column.value("arith.addi", &[v0, c], index)?;
    let point =
        dims.iter()
            .map(|&d| {
                if d == roles.r {
                    Ok(Some(r))
                } else if d == roles.v {
                    Ok(Some(v))
                } else {
                    let k =
                        roles.outer.iter().position(|&o| o == d).ok_or_else(|| {
                            fail("a dimension of the sums is neither rows, vector nor outer")
                        })?;
                    Ok(Some(outer[k]))
                }
            })
            .collect::<Result<Vec<_>, Error>>()?;
    let mut known = HashMap::new();
    if from_scratch {
        let row = by_column.value("arith.muli", &[m, by_column.index(roles.width as i64)?], index)?;
        let at_sum = by_column.value("arith.addi", &[row, c], index)?;
        let offset = by_column.value("arith.index_cast", &[at_sum], i64_type)?;
        let address = super::gep(&by_column, scratch, offset, super::memory_type(context, element))?;
        let sum = by_column.value("llvm.load", &[address], super::value_type(context, element))?;
        known.insert(sums_key, sum);
    }
    // Read from the output, the sums are no argument apart from what the
    // kernel writes: their loads carry no alias scope.
    let at_point = Emitter {
        scopes: by_column.scopes.map(|scopes| match from_scratch {
            false => scopes.written_in_place(position),
            true => scopes,
        }),
        ..by_column
    };
    kernel.point_knowing(&at_point, &point, Vec::new(), false, known)?;
    by_column.finish()?;
    by_row.finish()?;
    top.op("func.return", &[], &[], &[])?;
    let attributes = [(
        Identifier::new(context, "sym_visibility"),
        StringAttribute::new(context, "private").into(),
    )];
    lowered.body().append_operation(func::func(
        context,
        StringAttribute::new(context, name),
        TypeAttribute::new(FunctionType::new(context, &parameters, &[]).into()),
        region,
        &attributes,
        location,
    ));
    Ok(())
}
