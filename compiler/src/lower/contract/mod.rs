//! Contractions on the CPU (schedule rule 6): a kernel that multiplies two
//! reindexed operands and sums the products into an output, as matmul
//! (`C[i,j] = Σ_k A[i,k] B[k,j]`) and convolution (`y[n,o,h,w] = Σ_{i,kh,kw}
//! x[n,i,h+kh-1,w+kw-1] p[o,i,kh,kw]`) are written in meta-operators, runs
//! as a register-blocked micro-kernel instead of the scalar loop nest.
//!
//! Two dimensions the output keeps are chosen from the maps:
//! - the **vector** dimension `v`: the output's last index, along which
//!   each operand is either contiguous (its last index is `v + ...` and no
//!   other index moves with `v`) or constant (it is broadcast);
//! - the **row** dimension `r`: another kept dimension along which a
//!   contiguous operand does not move, so one vector load of it serves
//!   every row of a tile (matmul's `i`, convolution's `o`).
//!
//! A tile is `rows` values of `r` by `vectors` vectors of `lanes` values of
//! `v`; its `rows x vectors` accumulators stay in vector registers while
//! the folded dimensions run innermost: in the domain's order, or under
//! fast math with those that checked indices read outermost, so the
//! masks of the innermost loop are loop-invariant. Per step,
//! each operand is loaded once per row it moves with and once per vector
//! it is contiguous in (a scalar operand is loaded once and broadcast).
//! The tiles run with `v` outside `r`, so the panel of the operand that
//! moves with `v` stays in cache while the tiles of `r` stream past it.
//! A long fold (matmul's `K` of 512 or more) packs that panel: one block
//! of 256 steps at a time is copied into a 64-byte aligned buffer on the
//! stack, the tiles of `r` fold through the block, and each block after
//! the first goes on from the partial sums the one before stored (the
//! same order of additions). Read in place, the panel's rows lie a row of
//! the operand apart, which for widths of a power of two crowds them into
//! a few cache sets: 2048^3 ran at half the speed of 1024^3. An operand
//! strided along `v` (a transposed one, `B[j, k]`) over a fold of one
//! dimension is always packed, gathered lane by lane into the block (each
//! lane's steps in order, contiguous in the operand), so the tiles read it
//! as they read any panel, in either math mode.
//!
//! Exactness: under [`MathMode::Exact`] every output folds its products
//! one at a time in the interpreter's row-major order, from the identity
//! `0.0`, a multiply then an add, so the result is bit-identical. Under
//! [`MathMode::Fast`] each step is one fused multiply-add, and the folded
//! loops may be reordered (the error bound is `docs/semantics.md`'s).
//!
//! Edges: the last vector of a tile may run past `v`'s extent (or the
//! caller's range of it), and an index that is not proven in bounds (a
//! convolution's padding) must read `overflow_value`. Both are masks: a
//! vector load becomes `llvm.intr.masked.load` with the overflow value as
//! its pass-through, lane `l` reading only where every index is in bounds
//! at `v + l`; a broadcast operand is a clamped scalar load and a select;
//! the last vector's store is masked. `r`'s remainder runs as tiles of the
//! powers of two below `rows`.
//!
//! The dot form ([`plan::Form::Dot`]): under fast math, an operand that moves
//! along `v` by a stride and cannot be gathered (a fold of several
//! dimensions) does not stop the kernel when both operands are
//! contiguous (or constant) along a folded dimension. That dimension
//! becomes the vector one: each output of a tile of rows by columns
//! keeps a vector of partial sums along it, the last vector masked
//! (lanes past the end selected away, so an infinite operand cannot add
//! a NaN), and the vector is added up (`llvm.intr.vector.reduce.fadd`)
//! and stored once.
//!
//! A map's symbol (an `index` argument) may be a whole index, as the
//! RNN's `xs[t, i, k]` is: it is checked like padding, against the size
//! read at run time when that dimension is dynamic (the leading one only:
//! the IndRNN's `xs` of any length). Not contractions
//! (they keep the loop nest): other body shapes, integer elements, other
//! uses of symbols, overflow conditions, an index that is not affine or
//! whose arithmetic could leave i64, an operand that moves with `v` by
//! another stride and cannot be gathered, or a `v` shorter than half a
//! vector, under exact math or with no dot form, a dynamic domain, an
//! operand with a dynamic size past its leading dimension or an index
//! that moves with the domain against a dynamic size, and the
//! bounds-checked mode.
//!
//! The submodules: `plan` decides whether a kernel is a contraction and
//! cuts its tiles; `tiles` and `dot` emit the two forms' tiles; `vectors`
//! holds the IR pieces both use; `gpu_tiles` makes the same contractions
//! shared-memory tiles on the GPU. This file emits the loops around the
//! tiles, and the packing.
//!
//! Example: matmul `4x5x3` (`f32`, 256-bit vectors), one tile of 4 rows
//! and one masked vector of 8 lanes (5 in use), at `%i0`:
//!
//! ```mlir
//! %acc:4 = scf.for %k = %c0 to %c3 step %c1 iter_args(...) {
//!   %b = llvm.intr.masked.load %pb, %tail, %zero {alignment = 4 : i32}   // B[k, 0..8)
//!   %a0 = llvm.load %pa0 : !llvm.ptr -> f32                             // A[i0, k]
//!   %s0 = llvm.shufflevector ...                                        // splat
//!   %f0 = math.fma %s0, %b, %acc0 : vector<8xf32>
//!   ... rows 1 to 3
//! }
//! llvm.intr.masked.store %acc#0, %pc0, %tail {alignment = 4 : i32}      // C[i0, 0..8)
//! ```

mod dot;
mod gpu_tiles;
mod plan;
mod tiles;
mod vectors;

pub(super) use gpu_tiles::{
    GpuTiles, THREADS as GPU_TILE_THREADS, emit_emulated, emit_gpu, plan as gpu_plan,
};
pub(super) use plan::{Contraction, plan};

use super::{
    MathMode,
    access::{Arg, Output},
    emit::{Emitter, error},
    gep, memory_type, value_type,
};
use crate::Error;
use dot::DotTile;
use melior::ir::{Type, Value};
use plan::{Form, PACK_DEPTH};
pub(crate) use tiles::Consumer;
use tiles::{Packed, Tile};
use vectors::{Reads, Vectors, evaluate, in_tiles, tile_heights};

/// Each operand's values in the kernel: its data pointer, the values of
/// its map's symbols, and its size in each dimension when it is of dynamic
/// shape (`index` values read at kernel entry; empty for a static one).
#[allow(clippy::type_complexity)]
fn operand_values<'c, 'a>(
    operands: &[plan::Operand],
    arguments: &[(Value<'c, '_>, Arg<'c, 'a>)],
) -> Result<
    (
        Vec<Value<'c, 'a>>,
        Vec<Vec<Value<'c, 'a>>>,
        Vec<Vec<Value<'c, 'a>>>,
    ),
    Error,
> {
    let mut pointers = Vec::new();
    let mut symbols = Vec::new();
    let mut sizes = Vec::new();
    for operand in operands {
        let Some((_, Arg::Tensor { pointer, dynamic, .. })) = arguments.get(operand.argument) else {
            return Err(error("a contraction operand is not a tensor argument"));
        };
        pointers.push(*pointer);
        sizes.push(dynamic.as_ref().map_or_else(Vec::new, |d| d.extents.clone()));
        symbols.push(
            operand
                .symbols
                .iter()
                .map(|&i| match arguments.get(i) {
                    Some((_, Arg::Index(value))) => Ok(*value),
                    _ => Err(error("a contraction symbol is not an index argument")),
                })
                .collect::<Result<Vec<_>, _>>()?,
        );
    }
    Ok((pointers, symbols, sizes))
}

/// `bytes` of 64-byte aligned stack memory, allocated at `top` (before
/// any loop, so that it dominates them).
fn stack<'c, 'a>(top: &Emitter<'c, 'a>, bytes: i64) -> Result<Value<'c, 'a>, Error> {
    let i64_type: Type = melior::ir::r#type::IntegerType::new(top.context, 64).into();
    let i8_type: Type = melior::ir::r#type::IntegerType::new(top.context, 8).into();
    let pointer = melior::dialect::llvm::r#type::pointer(top.context, 0);
    top.op(
        "llvm.alloca",
        &[top.int(i64_type, bytes)?],
        &[pointer],
        &[
            (
                "elem_type",
                melior::ir::attribute::TypeAttribute::new(i8_type).into(),
            ),
            (
                "alignment",
                melior::ir::attribute::IntegerAttribute::new(i64_type, 64).into(),
            ),
        ],
    )?
    .ok_or_else(|| error("llvm.alloca"))
}

/// Emits `plan` for the kernel: its loops, tiles and stores, and the
/// `consumer`'s ops on each tile when it has an epilogue. `range` is the
/// caller's `[begin, end)` of the split dimension `split`.
#[allow(clippy::too_many_arguments)]
pub(super) fn emit_contraction<'c, 'a>(
    top: &Emitter<'c, 'a>,
    plan: &Contraction,
    arguments: &[(Value<'c, '_>, Arg<'c, 'a>)],
    output: &Output<'c, 'a>,
    domain: &[i64],
    split: usize,
    range: Option<(Value<'c, 'a>, Value<'c, 'a>)>,
    math: MathMode,
    consumer: Option<&Consumer<'c, 'a>>,
) -> Result<(), Error> {
    let vectors = Vectors::new(top.context, plan.element, plan.lanes)?;
    if consumer.is_some() && plan.pack.is_some() {
        return Err(error("an epilogue on a contraction that packs its operand"));
    }
    // The epilogue's scratch tile, when the output is not written.
    let scratch = match consumer {
        Some(consumer) if !consumer.writes_output => {
            let bytes = (plan.rows * plan.vectors * plan.lanes * plan.element.byte_width()) as i64;
            Some(stack(top, bytes)?)
        }
        _ => None,
    };
    let i64_type: Type = melior::ir::r#type::IntegerType::new(top.context, 64).into();
    // The packed block's buffer, before any loop, so it dominates them.
    let buffer = match plan.pack {
        Some(_) => {
            let bytes = PACK_DEPTH * (plan.vectors * plan.lanes * plan.element.byte_width()) as i64;
            Some(stack(top, bytes)?)
        }
        None => None,
    };
    let (pointers, symbols, sizes) = operand_values(&plan.operands, arguments)?;
    let bounds = |at: &Emitter<'c, 'a>, d: usize| -> Result<(Value<'c, 'a>, Value<'c, 'a>), Error> {
        match range {
            Some(range) if d == split => Ok(range),
            _ => Ok((at.index(0)?, at.index(domain[d])?)),
        }
    };
    let index = Type::index(top.context);
    let mut ivs: Vec<Option<Value<'c, 'a>>> = vec![None; domain.len()];
    let mut at = *top;
    let mut bodies = Vec::new();
    for &d in &plan.outer {
        let (lower, upper) = bounds(&at, d)?;
        let (body, iv) = at.for_range(lower, upper)?;
        ivs[d] = Some(iv);
        bodies.push(body);
        at = body;
    }
    let reads = Reads {
        plan,
        vectors: &vectors,
        pointers: &pointers,
        symbols: &symbols,
        sizes: &sizes,
        output,
        domain,
    };
    if let Form::Dot { column, columns } = plan.form {
        if consumer.is_some() {
            return Err(error("an epilogue on a contraction of the dot form"));
        }
        let tile = DotTile { reads };
        tile.grid(&at, &mut ivs, column, columns, &bounds)?;
        for body in bodies.iter().rev() {
            body.finish()?;
        }
        return Ok(());
    }
    // The tiles of `v`, then of `r` inside them.
    let width = (plan.lanes * plan.vectors) as i64;
    let (v_low, v_high) = bounds(&at, plan.v)?;
    let (columns, v0, _, _) = at.for_step(v_low, v_high, at.index(width)?, &[])?;
    ivs[plan.v] = Some(v0);
    // The last vector may pass `v`'s end: its lanes are masked unless every
    // tile is whole.
    let tail = (plan.v == split && range.is_some()) || domain[plan.v] % width != 0;
    let mut tile = Tile {
        reads,
        math,
        tail: tail.then_some(v_high),
        packed: None,
        consumer,
        scratch,
    };
    // With packing, the fold runs in blocks: each block copies its steps of
    // the operand into the buffer, then every row tile folds through them.
    let mut block = None;
    if let (Some(operand), Some(buffer)) = (plan.pack, buffer) {
        let k = plan.folded[0];
        let depth = domain[k];

        let (blocks, low, _, _) = columns.for_step(
            columns.index(0)?,
            columns.index(depth)?,
            columns.index(PACK_DEPTH)?,
            &[],
        )?;
        let end = blocks.value("arith.addi", &[low, blocks.index(PACK_DEPTH)?], index)?;
        let high = blocks.value("arith.minsi", &[end, blocks.index(depth)?], index)?;
        let first = blocks.cmpi(0, low, blocks.index(0)?)?;
        // Copy the block: vector `n` of step `s` at `(s * vectors + n) *
        // lanes`; lanes past `v`'s end hold 0.
        let width = (plan.vectors * plan.lanes) as i64;
        if plan.gathered {
            // A transposed operand, lane by lane, each lane's steps in
            // order (contiguous in the operand), each lane past `v`'s end
            // (or the caller's range of it) 0.
            let (lanes, lane) = blocks.for_range(blocks.index(0)?, blocks.index(width)?)?;
            let v0 = ivs[plan.v].ok_or_else(|| error("no vector index"))?;
            let vl = lanes.value("arith.addi", &[v0, lane], index)?;
            let inside = lanes.cmpi(2, vl, v_high)?;
            let (steps, kk) = lanes.for_range(low, high)?;
            let mut at_lane = ivs.clone();
            at_lane[plan.v] = Some(vl);
            at_lane[k] = Some(kk);
            let from = evaluate(
                &steps,
                &plan.operands[operand].offset,
                &at_lane,
                &symbols[operand],
                0,
            )?;
            let from = steps.select(inside, from, steps.index(0)?)?;
            let from = steps.value("arith.index_cast", &[from], i64_type)?;
            let memory = memory_type(top.context, plan.element);
            let source = gep(&steps, pointers[operand], from, memory)?;
            let element = value_type(top.context, plan.element);
            let x = steps.value("llvm.load", &[source], element)?;
            let x = steps.select(inside, x, steps.float(element, 0.0)?)?;
            let step = steps.value("arith.subi", &[kk, low], index)?;
            let to = steps.value("arith.muli", &[step, steps.index(width)?], index)?;
            let to = steps.value("arith.addi", &[to, lane], index)?;
            let to = steps.value("arith.index_cast", &[to], i64_type)?;
            let target = gep(&steps, buffer, to, memory)?;
            steps.op("llvm.store", &[x, target], &[], &[])?;
            steps.finish()?;
            lanes.finish()?;
        } else {
            // A vector at a time, the last one masked past `v`'s end.
            let (copy, kk) = blocks.for_range(low, high)?;
            ivs[k] = Some(kk);
            let tails = tile.tails(&copy, &ivs)?;
            let step = copy.value("arith.subi", &[kk, low], index)?;
            let row = copy.value("arith.muli", &[step, copy.index(width)?], index)?;
            for (n, mask) in tails.iter().enumerate() {
                let value = tile.load(&copy, &ivs, operand, 0, (n * plan.lanes) as i64, *mask)?;
                let at_vector =
                    copy.value("arith.addi", &[row, copy.index((n * plan.lanes) as i64)?], index)?;
                let offset = copy.value("arith.index_cast", &[at_vector], i64_type)?;
                let address = gep(&copy, buffer, offset, memory_type(top.context, plan.element))?;
                copy.op(
                    "llvm.store",
                    &[value, address],
                    &[],
                    &[("alignment", vectors.packed_alignment(&copy))],
                )?;
            }
            copy.finish()?;
        }
        tile.packed = Some(Packed {
            operand,
            buffer,
            low,
            high,
            first,
        });
        block = Some(blocks);
    }
    let within = block.unwrap_or(columns);
    let (r_low, r_high) = bounds(&within, plan.r)?;
    // Whole tiles, then the rows left in tiles of the powers of two below
    // (a pair of rows costs about what a whole tile does per row, where a
    // single row waits on its loads).
    in_tiles(
        &within,
        r_low,
        r_high,
        &tile_heights(plan.rows),
        |body, r0, rows| {
            ivs[plan.r] = Some(r0);
            tile.emit(body, &mut ivs, rows)
        },
    )?;
    if let Some(blocks) = block {
        blocks.finish()?;
    }
    columns.finish()?;
    for body in bodies.iter().rev() {
        body.finish()?;
    }
    Ok(())
}
