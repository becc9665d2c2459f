//! The dot form's tiles ([`super::plan::Form::Dot`]): per output, a
//! vector of partial sums along a folded dimension, added up at the end.

use super::super::{
    emit::{Emitter, error},
    gep, memory_type, value_type,
};
use super::{
    plan::Form,
    vectors::{Bounds, Reads, evaluate, in_tiles, tile_heights},
};
use crate::Error;
use melior::ir::{Attribute, Type, Value};

/// What every tile of a contraction in the dot form shares.
pub(super) struct DotTile<'p, 'c, 'a> {
    pub(super) reads: Reads<'p, 'c, 'a>,
}

impl<'c, 'a> DotTile<'_, 'c, 'a> {
    /// The tiles of the column dimension (when there is one), each with
    /// the tiles of `r` inside, whole ones first, then the remainders in
    /// the powers of two below.
    pub(super) fn grid(
        &self,
        at: &Emitter<'c, 'a>,
        ivs: &mut [Option<Value<'c, 'a>>],
        column: Option<usize>,
        columns: usize,
        bounds: &Bounds<'_, 'c, 'a>,
    ) -> Result<(), Error> {
        let Some(c) = column else {
            return self.rows(at, ivs, 1, bounds);
        };
        let (low, high) = bounds(at, c)?;
        in_tiles(at, low, high, &tile_heights(columns), |body, c0, width| {
            ivs[c] = Some(c0);
            self.rows(body, ivs, width, bounds)
        })
    }

    /// The tiles of `r` for tiles `width` columns wide.
    fn rows(
        &self,
        at: &Emitter<'c, 'a>,
        ivs: &mut [Option<Value<'c, 'a>>],
        width: usize,
        bounds: &Bounds<'_, 'c, 'a>,
    ) -> Result<(), Error> {
        let plan = self.reads.plan;
        let (low, high) = bounds(at, plan.r)?;
        in_tiles(at, low, high, &tile_heights(plan.rows), |body, r0, height| {
            ivs[plan.r] = Some(r0);
            self.emit(body, ivs, height, width)
        })
    }

    /// One tile of `height` rows by `width` columns: a vector accumulator
    /// per output, the fold, each vector added up and stored.
    fn emit(
        &self,
        at: &Emitter<'c, 'a>,
        ivs: &mut [Option<Value<'c, 'a>>],
        height: usize,
        width: usize,
    ) -> Result<(), Error> {
        let plan = self.reads.plan;
        let vectors = self.reads.vectors;
        let zero = vectors.constant(at, "0.0", vectors.values)?;
        let sums = self.fold(at, ivs, 0, vec![zero; height * width], height, width)?;
        let Form::Dot { column, .. } = plan.form else {
            return Err(error("a dot tile of another form"));
        };
        let element = value_type(at.context, plan.element);
        let flags = Attribute::parse(at.context, "#llvm.fastmath<reassoc>")
            .ok_or_else(|| error("fast-math flags"))?;
        let start = at.float(element, 0.0)?;
        for m in 0..height {
            for n in 0..width {
                let sum = at
                    .op(
                        "llvm.intr.vector.reduce.fadd",
                        &[start, sums[m * width + n]],
                        &[element],
                        &[("fastmathFlags", flags)],
                    )?
                    .ok_or_else(|| error("llvm.intr.vector.reduce.fadd"))?;
                let shift = (m as i64)
                    .wrapping_mul(plan.output[plan.r])
                    .wrapping_add(column.map_or(0, |c| (n as i64).wrapping_mul(plan.output[c])));
                let address = self.reads.output_address(at, ivs, shift)?;
                at.op("llvm.store", &[sum, address], &[], &[])?;
            }
        }
        Ok(())
    }

    /// The other folded dimensions from `level` on, then the vector loop
    /// along `v` (whole vectors, then a masked last one), carrying the
    /// accumulators; returns them after.
    fn fold(
        &self,
        at: &Emitter<'c, 'a>,
        ivs: &mut [Option<Value<'c, 'a>>],
        level: usize,
        accumulators: Vec<Value<'c, 'a>>,
        height: usize,
        width: usize,
    ) -> Result<Vec<Value<'c, 'a>>, Error> {
        let plan = self.reads.plan;
        if let Some(&d) = plan.folded.get(level) {
            let (body, iv, inside, results) =
                at.for_carried(at.index(0)?, at.index(self.reads.domain[d])?, &accumulators)?;
            ivs[d] = Some(iv);
            let next = self.fold(&body, ivs, level + 1, inside, height, width)?;
            body.yield_values(&next)?;
            return Ok(results);
        }
        let lanes = plan.lanes as i64;
        let extent = self.reads.domain[plan.v];
        let whole = extent / lanes * lanes;
        let (body, k0, inside, results) =
            at.for_step(at.index(0)?, at.index(whole)?, at.index(lanes)?, &accumulators)?;
        ivs[plan.v] = Some(k0);
        let next = self.step(&body, ivs, inside, height, width, None)?;
        body.yield_values(&next)?;
        if whole == extent {
            return Ok(results);
        }
        // The last vector: lanes past the extent add nothing (selected
        // away, so an infinite operand cannot make a NaN of them).
        ivs[plan.v] = Some(at.index(whole)?);
        let used = (0..plan.lanes)
            .map(|l| {
                if (l as i64) < extent - whole {
                    "true"
                } else {
                    "false"
                }
            })
            .collect::<Vec<_>>()
            .join(", ");
        let mask = self
            .reads
            .vectors
            .constant(at, &format!("[{used}]"), self.reads.vectors.masks)?;
        self.step(at, ivs, results, height, width, Some(mask))
    }

    /// One step along `v`: load each operand once per row or column it
    /// moves with (a vector where it is contiguous along `v`, a broadcast
    /// where it is constant), multiply-add into the accumulators.
    fn step(
        &self,
        at: &Emitter<'c, 'a>,
        ivs: &[Option<Value<'c, 'a>>],
        accumulators: Vec<Value<'c, 'a>>,
        height: usize,
        width: usize,
        mask: Option<Value<'c, 'a>>,
    ) -> Result<Vec<Value<'c, 'a>>, Error> {
        let plan = self.reads.plan;
        let vectors = self.reads.vectors;
        let Form::Dot { column, .. } = plan.form else {
            return Err(error("a dot tile of another form"));
        };
        let i64_type: Type = melior::ir::r#type::IntegerType::new(at.context, 64).into();
        let memory = memory_type(at.context, plan.element);
        let element = value_type(at.context, plan.element);
        let zero = vectors.constant(at, "0.0", vectors.values)?;
        let mut values = Vec::new();
        for (o, operand) in plan.operands.iter().enumerate() {
            let rows = if operand.by_row { height } else { 1 };
            let columns = if operand.by_column { width } else { 1 };
            let mut loaded = Vec::new();
            for m in 0..rows {
                for n in 0..columns {
                    let coefficients = &operand.offset.coefficients;
                    let shift = (m as i64)
                        .wrapping_mul(coefficients[plan.r])
                        .wrapping_add(column.map_or(0, |c| (n as i64).wrapping_mul(coefficients[c])));
                    let offset = evaluate(at, &operand.offset, ivs, &self.reads.symbols[o], shift)?;
                    let offset = at.value("arith.index_cast", &[offset], i64_type)?;
                    let address = gep(at, self.reads.pointers[o], offset, memory)?;
                    let value = if operand.contiguous {
                        vectors.load(at, address, mask.map(|mask| (mask, zero)))?
                    } else {
                        let x = at.value("llvm.load", &[address], element)?;
                        vectors.splat(at, x, vectors.values)?
                    };
                    loaded.push(value);
                }
            }
            values.push((loaded, columns));
        }
        let mut next = Vec::with_capacity(accumulators.len());
        for m in 0..height {
            for n in 0..width {
                let pick = |o: usize| {
                    let (loaded, columns) = &values[o];
                    let row = if plan.operands[o].by_row { m } else { 0 };
                    let col = if plan.operands[o].by_column { n } else { 0 };
                    loaded[row * columns + col]
                };
                let acc = accumulators[m * width + n];
                let t = vectors.values;
                let sum = at.value("math.fma", &[pick(0), pick(1), acc], t)?;
                next.push(match mask {
                    Some(mask) => at.select(mask, sum, acc)?,
                    None => sum,
                });
            }
        }
        Ok(next)
    }
}
