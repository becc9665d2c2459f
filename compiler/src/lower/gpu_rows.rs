//! Row chains on the GPU: one block runs one row of every stage of a
//! chain ([`super::rows::chain_rows_gpu`] makes them), so softmax's three
//! kernels or layer norm's three become one launch whose values between
//! stages stay in shared memory.
//!
//! A chain `@c` of rows `R` and threads `B` (`meta.threads`) becomes one
//! GPU entry `@c(inputs..., results..., status)` of the usual calling
//! convention ([`super::gpu`]), launched as `R` blocks of `B` threads.
//! Block `r` runs, in order, each stage on row `r`:
//! - a block reduction (`rows::GpuRow::Reduce`: its GPU schedule maps the
//!   rows to blocks) runs as its own kernel would in block `r`: the block's
//!   threads stride over the row, their partial results meet in a tree in
//!   shared memory, and thread 0 stores the row's result;
//! - one thread per point (`rows::GpuRow::Points`, `P` points per row)
//!   runs as its kernel would in blocks `r * P / (B * k)` to
//!   `(r + 1) * P / (B * k) - 1`, one after the other, with `k` points per
//!   thread (the kernel's own coarsening when `B * k` divides `P`, else 1),
//!   so the block's threads cover exactly the row's points.
//!
//! A barrier separates the stages: what one wrote, the next reads.
//! A value only the chain reads (a scratch value, `rows` decides which)
//! lives in a shared-memory array of one row; the stage that writes it and
//! those that read it get a pointer to it shifted back by `r` rows, so
//! their own row-major offsets of row `r` land in the array. Everything
//! else is a buffer of the entry. The chain's stages keep their own
//! entries too (another function may call them).

use super::{
    KernelSignature, LowerOptions,
    access::Status,
    emit::error,
    gpu::{GpuKernel, Launch, LoweredGpu, entry, outputs_of, shared_array, tree_arrays},
    gpu_nest::{GpuIds, emit_gpu_kernel},
    i64_array,
    rows::{self, GpuRow},
    schedule::{self, GpuStrategy},
    types::gep,
};
use crate::{Error, rewrite::key};
use jitc_dialect::kinds::ElementType;
use melior::{
    Context,
    ir::{
        BlockLike, Module, OperationRef, RegionLike, Type, Value, ValueLike, attribute::IntegerAttribute,
        operation::OperationLike, r#type::IntegerType,
    },
};
use std::collections::HashMap;

/// One stage of a chain, ready to lower.
struct Stage<'c, 'a> {
    call: OperationRef<'c, 'a>,
    kernel: OperationRef<'c, 'a>,
    signature: KernelSignature,
    domain: Vec<i64>,
    gpu: schedule::GpuSchedule,
    row: GpuRow,
}

/// Lowers the kernels of `module` for the GPU ([`super::gpu::lower_gpu`]),
/// then its row chains.
pub(crate) fn lower_gpu_with_chains<'c>(
    context: &'c Context,
    module: &Module<'c>,
    options: &LowerOptions,
) -> Result<LoweredGpu<'c>, Error> {
    let mut lowered = super::gpu::lower_gpu(context, module, options)?;
    for chain in super::kernels(module) {
        if !chain.has_attribute("meta.chain") {
            continue;
        }
        match lower_gpu_chain(context, module, &lowered.module, chain, options)? {
            Ok(kernel) => lowered.kernels.push(kernel),
            Err(reason) => {
                let name = chain
                    .attribute("sym_name")
                    .ok()
                    .and_then(jitc_dialect::ops::string_attribute);
                lowered.skipped.push((name.unwrap_or("?").to_owned(), reason));
            }
        }
    }
    Ok(lowered)
}

/// Lowers `chain` (a function `rows::chain_rows_gpu` made) into
/// `lowered`: `Ok(Err(reason))` when it cannot be, and its calls then run
/// in the interpreter, which calls the stages.
fn lower_gpu_chain<'c>(
    context: &'c Context,
    module: &Module<'c>,
    lowered: &Module<'c>,
    chain: OperationRef<'c, '_>,
    options: &LowerOptions,
) -> Result<Result<GpuKernel, String>, Error> {
    let prepared = match prepare(module, chain, options) {
        Ok(prepared) => prepared,
        Err(reason) => return Ok(Err(reason)),
    };
    let (signature, stages, rows, threads) = prepared;
    let body = chain
        .region(0)
        .ok()
        .and_then(|r| r.first_block())
        .ok_or_else(|| error("a chain without a body"))?;
    let inputs = signature.inputs.len();
    let record_at = inputs + signature.outputs.len();
    let skew = options.skew;
    entry(
        context,
        lowered,
        chain.location(),
        &signature.name,
        &signature,
        false,
        |top, ids, values| {
            let i64_type: Type = IntegerType::new(context, 64).into();
            let i8_type: Type = IntegerType::new(context, 8).into();
            let index = Type::index(context);
            // Where each value of the chain's body is.
            let mut places: HashMap<usize, Value> = HashMap::new();
            for (i, value) in values.iter().enumerate().take(inputs) {
                let argument: Value = body.argument(i).map_err(|_| error("chain arguments"))?.into();
                places.insert(key(argument), *value);
            }
            let terminator = body
                .terminator()
                .ok_or_else(|| error("a chain without a return"))?;
            for (j, value) in terminator.operands().enumerate() {
                places.insert(key(value), values[inputs + j]);
            }
            // The scratch values: one row each in shared memory, shifted
            // back by this block's row.
            let row = top.value("arith.index_cast", &[ids.block], i64_type)?;
            for (n, stage) in stages.iter().enumerate() {
                for (j, result) in stage.call.results().enumerate() {
                    let value: Value = result.into();
                    if places.contains_key(&key(value)) {
                        continue;
                    }
                    let (row_bytes, element) = rows::row_bytes_of(value, rows)
                        .zip(super::static_shape(value.r#type()).map(|(_, e)| e))
                        .ok_or_else(|| error("a scratch value of dynamic or uneven rows"))?;
                    let name = format!("{}_scratch{n}_{j}", signature.name);
                    let count = (row_bytes / element.byte_width()) as i64;
                    let base = shared_array(top, lowered, &name, element, count)?;
                    let back = top.value(
                        "arith.muli",
                        &[row, top.int(i64_type, -(row_bytes as i64))?],
                        i64_type,
                    )?;
                    places.insert(key(value), gep(top, base, back, i8_type)?);
                }
            }
            for (n, stage) in stages.iter().enumerate() {
                if n > 0 {
                    // What the stages before wrote, this one may read.
                    top.op("nvvm.barrier0", &[], &[], &[])?;
                }
                let slots = stage
                    .call
                    .operands()
                    .chain(stage.call.results().map(Into::into))
                    .map(|v| {
                        places
                            .get(&key(v))
                            .copied()
                            .ok_or_else(|| error("a stage operand with no buffer"))
                    })
                    .collect::<Result<Vec<Value>, Error>>()?;
                let kernel_body = stage
                    .kernel
                    .region(0)
                    .ok()
                    .and_then(|r| r.first_block())
                    .ok_or_else(|| error("a stage without a body"))?;
                let arguments = super::lower_arguments(
                    kernel_body,
                    &stage.signature.inputs,
                    &slots,
                    &mut HashMap::new(),
                    false,
                    |value| top.value("arith.index_cast", &[value], index),
                )?;
                let outputs = outputs_of(&stage.signature, &slots)?;
                let status = Status {
                    record: values[record_at],
                    accesses: None,
                    skew,
                    flat: None,
                };
                match stage.row {
                    GpuRow::Reduce { .. } => {
                        let mut shared = tree_arrays(top, lowered, format!("{}_stage{n}", signature.name));
                        emit_gpu_kernel(
                            top,
                            kernel_body,
                            &arguments,
                            &outputs,
                            status,
                            &stage.domain,
                            &stage.gpu,
                            ids,
                            &mut shared,
                            None,
                            options.math,
                        )?;
                    }
                    GpuRow::Points { points } => {
                        // `k` points per thread when the block's threads
                        // then cover a row exactly, else one.
                        let mut gpu = stage.gpu.clone();
                        if (points / gpu.per_thread.max(1)) % threads != 0
                            || points % gpu.per_thread.max(1) != 0
                        {
                            gpu.per_thread = 1;
                        }
                        let steps = points / (threads * gpu.per_thread);
                        let (at, step, _, _) =
                            top.for_step(top.index(0)?, top.index(steps)?, top.index(1)?, &[])?;
                        let first = at.value("arith.muli", &[ids.block, at.index(steps)?], index)?;
                        let stage_ids = GpuIds {
                            thread: ids.thread,
                            block: at.value("arith.addi", &[first, step], index)?,
                            block_dim: ids.block_dim,
                        };
                        let mut no_shared = |_: usize, _: ElementType, _: i64| -> Result<Value, Error> {
                            Err(error("a stage of one thread per point reduces in shared memory"))
                        };
                        emit_gpu_kernel(
                            &at,
                            kernel_body,
                            &arguments,
                            &outputs,
                            status,
                            &stage.domain,
                            &gpu,
                            &stage_ids,
                            &mut no_shared,
                            None,
                            options.math,
                        )?;
                        at.finish()?;
                    }
                }
            }
            Ok(())
        },
    )?;
    Ok(Ok(GpuKernel {
        signature,
        launch: Launch {
            grid: u32::try_from(rows).map_err(|_| error("a chain of too many rows"))?,
            block: threads as u32,
            fill: None,
            strategy: GpuStrategy::Blocks { block: threads },
            scratch: 0,
        },
    }))
}

/// A chain's signature, its stages, rows and threads per block; `Err`
/// says why it does not lower.
fn prepare<'c, 'a>(
    module: &'a Module<'c>,
    chain: OperationRef<'c, 'a>,
    options: &LowerOptions,
) -> Result<(KernelSignature, Vec<Stage<'c, 'a>>, i64, i64), String> {
    if options.check_bounds || options.math != super::MathMode::Fast {
        return Err("GPU row chains are made for fast math without bounds checks only".into());
    }
    let rows = rows::rows_of(chain).ok_or("the chain has no rows")?;
    if rows > super::gpu::MAX_GRID {
        return Err(format!("{rows} rows are more blocks than one launch can have"));
    }
    let threads = chain
        .attribute(rows::GPU_THREADS_ATTRIBUTE)
        .ok()
        .and_then(|a| IntegerAttribute::try_from(a).ok())
        .map(|a| a.value())
        .filter(|&t| (32..=1024).contains(&t))
        .ok_or("the chain has no threads per block")?;
    let body = chain
        .region(0)
        .ok()
        .and_then(|r| r.first_block())
        .ok_or("the chain has no body")?;
    let functions = jitc_dialect::ops::functions(module.body());
    let mut stages = Vec::new();
    let mut op = body.first_operation();
    while let Some(call) = op {
        op = call.next_in_block();
        if rows::name_of(call) != "func.call" {
            continue;
        }
        let callee = crate::transforms::inline::callee(call).ok_or("a chain call with no callee")?;
        let kernel = *functions
            .get(&callee)
            .ok_or_else(|| format!("no stage @{callee}"))?;
        super::legal::check_gpu(kernel, options.math, options.libdevice)?;
        let signature = super::signature(kernel)?;
        // A chain passes no sizes (`rows::stage` forms none with a
        // dynamic buffer).
        if signature.dynamic_dims().next().is_some() {
            return Err(format!("stage @{callee} reads a tensor of dynamic shape"));
        }
        let domain = kernel
            .attribute("meta.domain")
            .ok()
            .and_then(i64_array)
            .ok_or("a stage without meta.domain")?;
        let stage_body = kernel
            .region(0)
            .ok()
            .and_then(|r| r.first_block())
            .ok_or("a stage without a body")?;
        let plan = schedule::schedule(stage_body, &domain)?;
        let gpu = schedule::gpu(stage_body, &domain, true)?;
        let row = rows::gpu_row(&gpu, &domain, plan.split)
            .filter(|_| domain.get(plan.split) == Some(&rows))
            .ok_or_else(|| format!("stage @{callee} does not run one row per block"))?;
        match row {
            GpuRow::Reduce { block } if block != threads => {
                return Err(format!(
                    "stage @{callee} reduces in blocks of {block}, not {threads}"
                ));
            }
            GpuRow::Points { points } if points % threads != 0 => {
                return Err(format!(
                    "stage @{callee} has {points} points per row, not a multiple of {threads}"
                ));
            }
            _ => {}
        }
        stages.push(Stage {
            call,
            kernel,
            signature,
            domain,
            gpu,
            row,
        });
    }
    let signatures: Vec<KernelSignature> = stages.iter().map(|s| s.signature.clone()).collect();
    let signature = rows::chain_signature(chain, &signatures)?;
    super::legal::check_gpu_parameters(
        signature.inputs.len() + signature.outputs.len(),
        signature.dynamic_dims().count(),
    )?;
    Ok((signature, stages, rows, threads))
}
