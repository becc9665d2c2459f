//! The tiles of rows by vectors ([`super::plan::Form::Tiles`]):
//! accumulators from the identity (or, after a packed block, from the
//! output), the fold, the stores; operands loaded per row and vector,
//! masked at the edges, or read from the packed block.

use super::super::{
    MathMode,
    emit::{Emitter, error},
    gep, memory_type,
    schedule::Linear,
    value_type,
};
use super::vectors::{Reads, bound_extent, evaluate, in_range};
use crate::Error;
use melior::ir::{Type, Value};

/// An element-wise kernel that runs on a contraction's tiles as they
/// finish (`super::super::epilogue`): a function of its own, called once
/// per tile (LLVM compiles its ops once, not once per tile height), that
/// runs its ops at each output of the tile.
pub(crate) struct Consumer<'c, 'a> {
    /// The tile function: `(buffers, r0, rows, v0, columns, scratch,
    /// outer...)`, the kernel's buffer array, the tile's first row and
    /// column and its numbers of rows and columns (`i64`s), the scratch
    /// tile (null when the sums are in the output), and the index of each
    /// of the contraction's outer dimensions ([`super::Contraction`]'s
    /// `outer`, in order).
    pub(crate) function: String,
    /// The kernel's buffer array, passed on.
    pub(crate) buffers: Value<'c, 'a>,
    /// Whether the output is written too (something else reads it);
    /// otherwise the sums go through a scratch tile on the stack.
    pub(crate) writes_output: bool,
}

/// What every tile of one contraction shares.
pub(super) struct Tile<'p, 'c, 'a> {
    pub(super) reads: Reads<'p, 'c, 'a>,
    pub(super) math: MathMode,
    /// Where `v` ends, when the last vector of a tile may pass it.
    pub(super) tail: Option<Value<'c, 'a>>,
    /// The packed block the tiles read, when the operand is packed.
    pub(super) packed: Option<Packed<'c, 'a>>,
    /// The element-wise kernel each tile's outputs go through, when the
    /// contraction has an epilogue.
    pub(super) consumer: Option<&'p Consumer<'c, 'a>>,
    /// Where a tile leaves its accumulators for the epilogue when the
    /// output is not written: `rows x vectors x lanes` elements, row by
    /// row, on the stack.
    pub(super) scratch: Option<Value<'c, 'a>>,
}

/// One packed block of a contraction's operand ([`Contraction::pack`]).
#[derive(Clone, Copy)]
pub(super) struct Packed<'c, 'a> {
    /// The operand packed.
    pub(super) operand: usize,
    /// The buffer: `vectors` vectors per step of the block, in order.
    pub(super) buffer: Value<'c, 'a>,
    /// The block's steps of the folded dimension, `[low, high)`.
    pub(super) low: Value<'c, 'a>,
    pub(super) high: Value<'c, 'a>,
    /// Whether this is the first block (accumulators start from the
    /// identity; later blocks go on from the output).
    pub(super) first: Value<'c, 'a>,
}

impl<'c, 'a> Tile<'_, 'c, 'a> {
    /// One tile of `rows` rows at the tile origin in `ivs` (`r` and `v`
    /// set): accumulators from the identity, the fold, the stores.
    pub(super) fn emit(
        &self,
        at: &Emitter<'c, 'a>,
        ivs: &mut [Option<Value<'c, 'a>>],
        rows: usize,
    ) -> Result<(), Error> {
        let plan = self.reads.plan;
        let vectors = self.reads.vectors;
        let tails = self.tails(at, ivs)?;
        let identity = vectors.constant(at, "0.0", vectors.values)?;
        let mut inits = vec![identity; rows * plan.vectors];
        if let Some(packed) = self.packed {
            // After the first block, each output goes on from what the
            // blocks before left in it: the same order of additions.
            for m in 0..rows {
                for (n, tail) in tails.iter().enumerate() {
                    let address = self.output_address(at, ivs, m, n)?;
                    let so_far = vectors.load(at, address, tail.map(|mask| (mask, identity)))?;
                    inits[m * plan.vectors + n] = at.select(packed.first, identity, so_far)?;
                }
            }
        }
        let results = self.fold(at, ivs, 0, inits, rows, &tails)?;
        // Store the accumulators: to the output, or for an epilogue that
        // does not write it, to the scratch.
        for m in 0..rows {
            for (n, tail) in tails.iter().enumerate() {
                let value = results[m * plan.vectors + n];
                match self.scratch {
                    Some(buffer) => {
                        let at_vector = (m * plan.vectors + n) * plan.lanes;
                        let i64_type: Type = melior::ir::r#type::IntegerType::new(at.context, 64).into();
                        let offset = at.int(i64_type, at_vector as i64)?;
                        let address = gep(at, buffer, offset, memory_type(at.context, plan.element))?;
                        at.op(
                            "llvm.store",
                            &[value, address],
                            &[],
                            &[("alignment", vectors.packed_alignment(at))],
                        )?;
                    }
                    None => {
                        let address = self.output_address(at, ivs, m, n)?;
                        vectors.store(at, value, address, *tail)?;
                    }
                }
            }
        }
        match self.consumer {
            Some(consumer) => self.epilogue(at, ivs, rows, consumer),
            None => Ok(()),
        }
    }

    /// The epilogue of a tile of `rows` rows at the tile origin in `ivs`,
    /// its sums stored: a call of the consumer's tile function over the
    /// tile's columns up to `v`'s end.
    fn epilogue(
        &self,
        at: &Emitter<'c, 'a>,
        ivs: &[Option<Value<'c, 'a>>],
        rows: usize,
        consumer: &Consumer<'c, 'a>,
    ) -> Result<(), Error> {
        let plan = self.reads.plan;
        let index = Type::index(at.context);
        let i64_type: Type = melior::ir::r#type::IntegerType::new(at.context, 64).into();
        let width = (plan.vectors * plan.lanes) as i64;
        let v0 = ivs[plan.v].ok_or_else(|| error("no vector index"))?;
        let r0 = ivs[plan.r].ok_or_else(|| error("no row index"))?;
        let columns = match self.tail {
            Some(end) => {
                let left = at.value("arith.subi", &[end, v0], index)?;
                at.value("arith.minsi", &[left, at.index(width)?], index)?
            }
            None => at.index(width)?,
        };
        let scratch = match self.scratch {
            Some(buffer) => buffer,
            None => at.value(
                "llvm.mlir.zero",
                &[],
                melior::dialect::llvm::r#type::pointer(at.context, 0),
            )?,
        };
        let wide = |value: Value<'c, 'a>| at.value("arith.index_cast", &[value], i64_type);
        let mut operands = vec![
            consumer.buffers,
            wide(r0)?,
            at.int(i64_type, rows as i64)?,
            wide(v0)?,
            wide(columns)?,
            scratch,
        ];
        for &d in &plan.outer {
            operands.push(wide(
                ivs[d].ok_or_else(|| error("an outer dimension has no loop"))?,
            )?);
        }
        let callee = melior::ir::attribute::FlatSymbolRefAttribute::new(at.context, &consumer.function);
        at.op("func.call", &operands, &[], &[("callee", callee.into())])?;
        Ok(())
    }

    /// Per vector of a row: the mask of lanes before `v`'s end, when the
    /// last vector may pass it.
    pub(super) fn tails(
        &self,
        at: &Emitter<'c, 'a>,
        ivs: &[Option<Value<'c, 'a>>],
    ) -> Result<Vec<Option<Value<'c, 'a>>>, Error> {
        let plan = self.reads.plan;
        let i64_type: Type = melior::ir::r#type::IntegerType::new(at.context, 64).into();
        let index = Type::index(at.context);
        let Some(end) = self.tail else {
            return Ok(vec![None; plan.vectors]);
        };
        let v0 = ivs[plan.v].ok_or_else(|| error("no vector index"))?;
        let end = at.value("arith.index_cast", &[end], i64_type)?;
        (0..plan.vectors)
            .map(|n| {
                let first = at.value("arith.addi", &[v0, at.index((n * plan.lanes) as i64)?], index)?;
                let first = at.value("arith.index_cast", &[first], i64_type)?;
                let left = at.value("arith.subi", &[end, first], i64_type)?;
                self.reads
                    .vectors
                    .lanes_within(at, at.int(i64_type, 0)?, left)
                    .map(Some)
            })
            .collect()
    }

    /// The address of row `m`, vector `n` of the tile's output.
    fn output_address(
        &self,
        at: &Emitter<'c, 'a>,
        ivs: &[Option<Value<'c, 'a>>],
        m: usize,
        n: usize,
    ) -> Result<Value<'c, 'a>, Error> {
        let plan = self.reads.plan;
        let shift = (m as i64)
            .wrapping_mul(plan.output[plan.r])
            .wrapping_add((n * plan.lanes) as i64);
        self.reads.output_address(at, ivs, shift)
    }

    /// The folded loop `level` and those inside it, carrying the
    /// accumulators; returns them after the loop.
    fn fold(
        &self,
        at: &Emitter<'c, 'a>,
        ivs: &mut [Option<Value<'c, 'a>>],
        level: usize,
        accumulators: Vec<Value<'c, 'a>>,
        rows: usize,
        tails: &[Option<Value<'c, 'a>>],
    ) -> Result<Vec<Value<'c, 'a>>, Error> {
        let plan = self.reads.plan;
        let d = plan.folded[level];
        let (low, high) = match self.packed {
            Some(packed) => (packed.low, packed.high),
            None => (at.index(0)?, at.index(self.reads.domain[d])?),
        };
        let (body, iv, inside, results) = at.for_carried(low, high, &accumulators)?;
        ivs[d] = Some(iv);
        let next = if level + 1 < plan.folded.len() {
            self.fold(&body, ivs, level + 1, inside, rows, tails)?
        } else {
            self.step(&body, ivs, inside, rows, tails)?
        };
        body.yield_values(&next)?;
        Ok(results)
    }

    /// One step of the fold: load the operands, multiply, accumulate.
    fn step(
        &self,
        at: &Emitter<'c, 'a>,
        ivs: &[Option<Value<'c, 'a>>],
        accumulators: Vec<Value<'c, 'a>>,
        rows: usize,
        tails: &[Option<Value<'c, 'a>>],
    ) -> Result<Vec<Value<'c, 'a>>, Error> {
        let plan = self.reads.plan;
        // values[o][m][n]: operand o at row m, vector n (one row or vector
        // when it does not move with them).
        let mut values = Vec::new();
        for (o, operand) in plan.operands.iter().enumerate() {
            let row_count = if operand.by_row { rows } else { 1 };
            let vector_count = if operand.contiguous { plan.vectors } else { 1 };
            let mut per_row = Vec::new();
            for m in 0..row_count {
                let mut per_vector = Vec::new();
                for (n, tail) in tails.iter().enumerate().take(vector_count) {
                    per_vector.push(self.load(at, ivs, o, m as i64, (n * plan.lanes) as i64, *tail)?);
                }
                per_row.push(per_vector);
            }
            values.push(per_row);
        }
        let mut next = Vec::with_capacity(accumulators.len());
        for m in 0..rows {
            for n in 0..plan.vectors {
                let pick = |o: usize| {
                    let per_row = &values[o];
                    let row = &per_row[m.min(per_row.len() - 1)];
                    row[n.min(row.len() - 1)]
                };
                let (a, b) = (pick(0), pick(1));
                let acc = accumulators[m * plan.vectors + n];
                let t = self.reads.vectors.values;
                next.push(match self.math {
                    MathMode::Fast => at.value("math.fma", &[a, b, acc], t)?,
                    MathMode::Exact => {
                        let product = at.value("arith.mulf", &[a, b], t)?;
                        at.value("arith.addf", &[acc, product], t)?
                    }
                });
            }
        }
        Ok(next)
    }

    /// Operand `o` at row `m` and lane shift `shift` of the tile origin, as
    /// a vector: a (masked) vector load when it is contiguous along `v`, a
    /// broadcast scalar otherwise; `overflow_value` where an index is out
    /// of bounds.
    pub(super) fn load(
        &self,
        at: &Emitter<'c, 'a>,
        ivs: &[Option<Value<'c, 'a>>],
        o: usize,
        m: i64,
        shift: i64,
        tail: Option<Value<'c, 'a>>,
    ) -> Result<Value<'c, 'a>, Error> {
        let plan = self.reads.plan;
        let operand = &plan.operands[o];
        let vectors = self.reads.vectors;
        let i64_type: Type = melior::ir::r#type::IntegerType::new(at.context, 64).into();
        let element = value_type(at.context, plan.element);
        if let Some(packed) = self.packed.filter(|p| p.operand == o) {
            // Vector `shift / lanes` of this step of the packed block.
            let index = Type::index(at.context);
            let k = ivs[plan.folded[0]].ok_or_else(|| error("no folded index"))?;
            let step = at.value("arith.subi", &[k, packed.low], index)?;
            let first = at.value(
                "arith.muli",
                &[step, at.index((plan.vectors * plan.lanes) as i64)?],
                index,
            )?;
            let at_vector = at.value("arith.addi", &[first, at.index(shift)?], index)?;
            let offset = at.value("arith.index_cast", &[at_vector], i64_type)?;
            let address = gep(at, packed.buffer, offset, memory_type(at.context, plan.element))?;
            return at
                .op(
                    "llvm.load",
                    &[address],
                    &[vectors.values],
                    &[("alignment", vectors.packed_alignment(at))],
                )?
                .ok_or_else(|| error("llvm.load"));
        }
        // The shift of an index or offset form at this row and lane.
        let moved = |form: &Linear| {
            form.coefficients[plan.r]
                .wrapping_mul(m)
                .wrapping_add(form.coefficients[plan.v].wrapping_mul(shift))
        };
        let symbols = &self.reads.symbols[o];
        let offset = evaluate(at, &operand.offset, ivs, symbols, moved(&operand.offset))?;
        let offset = at.value("arith.index_cast", &[offset], i64_type)?;
        // Conditions on the indices: per lane for those moving with `v`,
        // scalar for the others.
        let mut lanes: Option<Value> = tail.filter(|_| operand.contiguous);
        let mut scalar: Option<Value> = None;
        for (form, extent, moves) in &operand.checks {
            let value = evaluate(at, form, ivs, symbols, moved(form))?;
            let value = at.value("arith.index_cast", &[value], i64_type)?;
            let extent = bound_extent(at, *extent, &self.reads.sizes[o])?;
            let extent = at.value("arith.index_cast", &[extent], i64_type)?;
            if *moves {
                let within = vectors.lanes_within(at, value, extent)?;
                lanes = Some(match lanes {
                    Some(mask) => at.value("arith.andi", &[mask, within], vectors.masks)?,
                    None => within,
                });
            } else {
                let within = in_range(at, value, extent)?;
                scalar = Some(at.and_maybe(scalar, within)?);
            }
        }
        let memory = memory_type(at.context, plan.element);
        let overflow = at.float(element, operand.overflow)?;
        if !operand.contiguous {
            let offset = match scalar {
                Some(inside) => at.select(inside, offset, at.int(i64_type, 0)?)?,
                None => offset,
            };
            let address = gep(at, self.reads.pointers[o], offset, memory)?;
            let mut x = at.value("llvm.load", &[address], element)?;
            if let Some(inside) = scalar {
                x = at.select(inside, x, overflow)?;
            }
            return vectors.splat(at, x, vectors.values);
        }
        if let Some(inside) = scalar {
            let all = vectors.splat(at, inside, vectors.masks)?;
            lanes = Some(match lanes {
                Some(mask) => at.value("arith.andi", &[mask, all], vectors.masks)?,
                None => all,
            });
        }
        let address = gep(at, self.reads.pointers[o], offset, memory)?;
        let through = match lanes {
            Some(mask) => Some((mask, vectors.splat(at, overflow, vectors.values)?)),
            None => None,
        };
        vectors.load(at, address, through)
    }
}
