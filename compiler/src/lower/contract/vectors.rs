//! The pieces of IR every contraction's code is built from: vector types
//! and constants, splats and lane masks, affine forms evaluated at the
//! loop indices, and loops that cover a range with tiles of several
//! sizes.

use super::super::{
    access::Output,
    emit::{Emitter, error},
    gep, memory_type,
    schedule::Linear,
};
use super::plan::{Bound, Contraction};
use crate::Error;
use jitc_dialect::kinds::ElementType;
use melior::ir::{Attribute, Type, Value};

/// Builds IR with the vector types of one contraction.
pub(super) struct Vectors<'c> {
    pub(super) element: ElementType,
    pub(super) lanes: usize,
    /// `vector<lanes x element>`, of `i64` and of `i1`.
    pub(super) values: Type<'c>,
    pub(super) indices: Type<'c>,
    pub(super) masks: Type<'c>,
}

impl<'c> Vectors<'c> {
    pub(super) fn new(
        context: &'c melior::Context,
        element: ElementType,
        lanes: usize,
    ) -> Result<Self, Error> {
        let parse =
            |text: String| Type::parse(context, &text).ok_or_else(|| error(format!("the type {text}")));
        let name = element.name();
        Ok(Self {
            element,
            lanes,
            values: parse(format!("vector<{lanes}x{name}>"))?,
            indices: parse(format!("vector<{lanes}xi64>"))?,
            masks: parse(format!("vector<{lanes}xi1>"))?,
        })
    }

    /// A constant vector of `type` from its `dense` text.
    pub(super) fn constant<'a>(
        &self,
        at: &Emitter<'c, 'a>,
        dense: &str,
        r#type: Type<'c>,
    ) -> Result<Value<'c, 'a>, Error> {
        let text = format!("dense<{dense}> : {type}", type = r#type);
        let attribute =
            Attribute::parse(at.context, &text).ok_or_else(|| error(format!("the constant {text}")))?;
        at.op("arith.constant", &[], &[r#type], &[("value", attribute)])?
            .ok_or_else(|| error("arith.constant"))
    }

    /// `lanes` copies of the scalar `x`, in a vector of `type`.
    pub(super) fn splat<'a>(
        &self,
        at: &Emitter<'c, 'a>,
        x: Value<'c, '_>,
        r#type: Type<'c>,
    ) -> Result<Value<'c, 'a>, Error> {
        let i32_type: Type = melior::ir::r#type::IntegerType::new(at.context, 32).into();
        let poison = at.value("llvm.mlir.poison", &[], r#type)?;
        let inserted = at.value("llvm.insertelement", &[poison, x, at.int(i32_type, 0)?], r#type)?;
        let zeros = vec!["0"; self.lanes].join(", ");
        let mask = Attribute::parse(at.context, &format!("array<i32: {zeros}>"))
            .ok_or_else(|| error("a shuffle mask"))?;
        at.op(
            "llvm.shufflevector",
            &[inserted, inserted],
            &[r#type],
            &[("mask", mask)],
        )?
        .ok_or_else(|| error("llvm.shufflevector"))
    }

    /// The lane numbers `0, 1, ..., lanes - 1` as `i64`s.
    pub(super) fn iota<'a>(&self, at: &Emitter<'c, 'a>) -> Result<Value<'c, 'a>, Error> {
        let lanes = (0..self.lanes)
            .map(|l| l.to_string())
            .collect::<Vec<_>>()
            .join(", ");
        self.constant(at, &format!("[{lanes}]"), self.indices)
    }

    /// The mask of lanes `l` with `0 <= first + l < extent` (`first` an
    /// `i64`).
    pub(super) fn lanes_within<'a>(
        &self,
        at: &Emitter<'c, 'a>,
        first: Value<'c, '_>,
        extent: Value<'c, '_>,
    ) -> Result<Value<'c, 'a>, Error> {
        let lanes = at.value(
            "arith.addi",
            &[self.splat(at, first, self.indices)?, self.iota(at)?],
            self.indices,
        )?;
        let predicate = |p: i64| integer(at, 64, p);
        let zero = self.constant(at, "0", self.indices)?;
        let low = at
            .op(
                "arith.cmpi",
                &[lanes, zero],
                &[self.masks],
                &[("predicate", predicate(5))],
            )?
            .ok_or_else(|| error("arith.cmpi"))?;
        let high = at
            .op(
                "arith.cmpi",
                &[lanes, self.splat(at, extent, self.indices)?],
                &[self.masks],
                &[("predicate", predicate(2))],
            )?
            .ok_or_else(|| error("arith.cmpi"))?;
        at.value("arith.andi", &[low, high], self.masks)
    }

    /// A vector at `address` (element-aligned): the lanes of `mask` only,
    /// the others from the vector `through`, when there is a mask.
    pub(super) fn load<'a>(
        &self,
        at: &Emitter<'c, 'a>,
        address: Value<'c, 'a>,
        mask: Option<(Value<'c, 'a>, Value<'c, 'a>)>,
    ) -> Result<Value<'c, 'a>, Error> {
        let (name, operands, alignment) = match mask {
            Some((mask, through)) => (
                "llvm.intr.masked.load",
                vec![address, mask, through],
                self.alignment(at),
            ),
            None => ("llvm.load", vec![address], self.element_alignment(at)),
        };
        at.op(name, &operands, &[self.values], &[("alignment", alignment)])?
            .ok_or_else(|| error(name))
    }

    /// Stores the vector `value` at `address` (element-aligned): the lanes
    /// of `mask` only, when there is one.
    pub(super) fn store<'a>(
        &self,
        at: &Emitter<'c, 'a>,
        value: Value<'c, 'a>,
        address: Value<'c, 'a>,
        mask: Option<Value<'c, 'a>>,
    ) -> Result<(), Error> {
        match mask {
            Some(mask) => at.op(
                "llvm.intr.masked.store",
                &[value, address, mask],
                &[],
                &[("alignment", self.alignment(at))],
            )?,
            None => at.op(
                "llvm.store",
                &[value, address],
                &[],
                &[("alignment", self.element_alignment(at))],
            )?,
        };
        Ok(())
    }

    /// The element size in bytes.
    fn bytes(&self) -> i64 {
        self.element.byte_width() as i64
    }

    /// The `alignment` of a load or store of a whole vector of a packed
    /// buffer (an `i64`): the vector's size, as the buffer is aligned to 64
    /// bytes and holds whole vectors.
    pub(super) fn packed_alignment<'a>(&self, at: &Emitter<'c, 'a>) -> Attribute<'c> {
        integer(at, 64, self.lanes as i64 * self.bytes())
    }

    /// The `alignment` of a masked load or store (an `i32`): one element.
    fn alignment<'a>(&self, at: &Emitter<'c, 'a>) -> Attribute<'c> {
        integer(at, 32, self.bytes())
    }

    /// The `alignment` of an element-aligned `llvm.load`/`llvm.store` of a
    /// vector (an `i64`; without it LLVM assumes the vector's own).
    fn element_alignment<'a>(&self, at: &Emitter<'c, 'a>) -> Attribute<'c> {
        integer(at, 64, self.bytes())
    }
}

/// An integer attribute of `bits` bits: a predicate number or an
/// alignment.
fn integer<'c>(at: &Emitter<'c, '_>, bits: u32, value: i64) -> Attribute<'c> {
    melior::ir::attribute::IntegerAttribute::new(
        melior::ir::r#type::IntegerType::new(at.context, bits).into(),
        value,
    )
    .into()
}

/// The `index` value `form` takes at `ivs` (every dimension it uses must
/// have one) and `symbols` (its coefficients past the dimensions), plus
/// `shift`.
pub(super) fn evaluate<'c, 'a>(
    at: &Emitter<'c, 'a>,
    form: &Linear,
    ivs: &[Option<Value<'c, 'a>>],
    symbols: &[Value<'c, 'a>],
    shift: i64,
) -> Result<Value<'c, 'a>, Error> {
    let index = Type::index(at.context);
    // Wrapping, as the `index` arithmetic it stands for.
    let mut value = at.index(form.constant.wrapping_add(shift))?;
    for (d, &c) in form.coefficients.iter().enumerate() {
        if c == 0 {
            continue;
        }
        let iv = match ivs.get(d) {
            Some(iv) => iv.ok_or_else(|| error("a contraction dimension has no loop"))?,
            None => *symbols
                .get(d - ivs.len())
                .ok_or_else(|| error("a contraction symbol has no value"))?,
        };
        let term = if c == 1 {
            iv
        } else {
            at.value("arith.muli", &[iv, at.index(c)?], index)?
        };
        value = at.value("arith.addi", &[value, term], index)?;
    }
    Ok(value)
}

/// The extent a checked index must stay below, as an `index`: the one
/// known when compiling, or the operand's size in that dimension, read at
/// kernel entry (`sizes`, empty for a static operand).
pub(super) fn bound_extent<'c, 'a>(
    at: &Emitter<'c, 'a>,
    bound: Bound,
    sizes: &[Value<'c, 'a>],
) -> Result<Value<'c, 'a>, Error> {
    match bound {
        Bound::Fixed(n) => at.index(n),
        Bound::Size(k) => sizes
            .get(k)
            .copied()
            .ok_or_else(|| error("a dynamic contraction operand without its size")),
    }
}

/// `0 <= value < extent`, as an `i1` (both of one integer type).
pub(super) fn in_range<'c, 'a>(
    at: &Emitter<'c, 'a>,
    value: Value<'c, 'a>,
    extent: Value<'c, 'a>,
) -> Result<Value<'c, 'a>, Error> {
    let zero = at.int(melior::ir::ValueLike::r#type(&value), 0)?;
    let low = at.cmpi(5, value, zero)?;
    let high = at.cmpi(2, value, extent)?;
    at.value("arith.andi", &[low, high], at.i1())
}

/// What every tile of one contraction reads, in either form: the plan,
/// its vector types, each operand's data pointer and symbol values, the
/// output and the domain.
pub(super) struct Reads<'p, 'c, 'a> {
    pub(super) plan: &'p Contraction,
    pub(super) vectors: &'p Vectors<'c>,
    pub(super) pointers: &'p [Value<'c, 'a>],
    /// Per operand, the values of its map's symbols.
    pub(super) symbols: &'p [Vec<Value<'c, 'a>>],
    /// Per operand of dynamic shape, its size in each dimension (`index`
    /// values read at kernel entry); empty for a static one.
    pub(super) sizes: &'p [Vec<Value<'c, 'a>>],
    pub(super) output: &'p Output<'c, 'a>,
    pub(super) domain: &'p [i64],
}

impl<'c, 'a> Reads<'_, 'c, 'a> {
    /// The address of the output at the indices `ivs`, moved by `shift`
    /// elements.
    pub(super) fn output_address(
        &self,
        at: &Emitter<'c, 'a>,
        ivs: &[Option<Value<'c, 'a>>],
        shift: i64,
    ) -> Result<Value<'c, 'a>, Error> {
        let i64_type: Type = melior::ir::r#type::IntegerType::new(at.context, 64).into();
        let form = Linear {
            coefficients: self.plan.output.clone(),
            constant: 0,
        };
        let offset = evaluate(at, &form, ivs, &[], shift)?;
        let offset = at.value("arith.index_cast", &[offset], i64_type)?;
        gep(
            at,
            self.output.pointer,
            offset,
            memory_type(at.context, self.plan.element),
        )
    }
}

/// The bounds of a dimension's loop: the caller's range for the split
/// dimension, the whole extent otherwise.
pub(super) type Bounds<'b, 'c, 'a> =
    dyn Fn(&Emitter<'c, 'a>, usize) -> Result<(Value<'c, 'a>, Value<'c, 'a>), Error> + 'b;

/// Covers `[low, high)` with tiles of `sizes`, largest first: a loop over
/// the whole tiles of each size that fit in what the sizes before left,
/// `tile` emitting one tile at its first index.
pub(super) fn in_tiles<'c, 'a>(
    at: &Emitter<'c, 'a>,
    low: Value<'c, 'a>,
    high: Value<'c, 'a>,
    sizes: &[usize],
    mut tile: impl FnMut(&Emitter<'c, 'a>, Value<'c, 'a>, usize) -> Result<(), Error>,
) -> Result<(), Error> {
    let index = Type::index(at.context);
    let mut start = low;
    for &size in sizes {
        let step = at.index(size as i64)?;
        let span = at.value("arith.subi", &[high, start], index)?;
        let count = at.value("arith.divui", &[span, step], index)?;
        let covered = at.value("arith.muli", &[count, step], index)?;
        let end = at.value("arith.addi", &[start, covered], index)?;
        let (body, first, _, _) = at.for_step(start, end, step, &[])?;
        tile(&body, first, size)?;
        body.finish()?;
        start = end;
    }
    Ok(())
}

/// The heights of the tiles of `r`, tallest first: `rows`, then the
/// powers of two below it, down to 1.
pub(super) fn tile_heights(rows: usize) -> Vec<usize> {
    let mut heights = vec![rows];
    let mut height = rows.next_power_of_two();
    while height > 1 {
        height /= 2;
        if height < rows {
            heights.push(height);
        }
    }
    heights
}

#[cfg(test)]
mod tests {
    use super::tile_heights;

    #[test]
    fn remainders_take_the_powers_of_two_below_the_tile() {
        assert_eq!(tile_heights(6), [6, 4, 2, 1]);
        assert_eq!(tile_heights(8), [8, 4, 2, 1]);
        assert_eq!(tile_heights(3), [3, 2, 1]);
        assert_eq!(tile_heights(1), [1]);
    }
}
