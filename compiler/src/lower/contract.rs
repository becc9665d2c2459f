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
//! a few cache sets: 2048^3 ran at half the speed of 1024^3.
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
//! The dot form ([`Form::Dot`]): under fast math, an operand that moves
//! along `v` by a stride (a transposed operand, as `dy W^T` in a
//! backward pass) does not stop the kernel when both operands are
//! contiguous (or constant) along a folded dimension. That dimension
//! becomes the vector one: each output of a tile of rows by columns
//! keeps a vector of partial sums along it, the last vector masked
//! (lanes past the end selected away, so an infinite operand cannot add
//! a NaN), and the vector is added up (`llvm.intr.vector.reduce.fadd`)
//! and stored once.
//!
//! A map's symbol (an `index` argument) may be a whole index, as the
//! RNN's `xs[t, i, k]` is: it is checked like padding. Not contractions
//! (they keep the loop nest): other body shapes, integer elements, other
//! uses of symbols, overflow conditions, an index that is not affine or
//! whose arithmetic could leave i64, an operand that moves with `v` by
//! another stride (a transposed operand) or a `v` shorter than half a
//! vector, under exact math or with no dot form, a dynamic domain, and the
//! bounds-checked mode.
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

use super::{
    MathMode,
    access::{Arg, Output, key},
    emit::{Emitter, error},
    gep, memory_type,
    schedule::{Check, Linear, Schedule, linear, range},
    value_type,
};
use crate::Error;
use jitc_dialect::{
    kinds::{BinaryKind, ElementType, ReduceKind},
    ops::{BinaryOp, ReindexOp, ReindexReduceOp},
};
use melior::ir::{Attribute, BlockLike, BlockRef, Type, Value, ValueLike, operation::OperationLike};

/// Vector registers the accumulators of a tile may take: of 32 with
/// AVX-512 and 16 with AVX2, the rest hold the operands of a step.
const ACCUMULATORS_512: usize = 24;
const ACCUMULATORS_256: usize = 12;
/// The most rows of a tile.
const MAX_ROWS: usize = 8;
/// The largest coefficient or constant of an index form a contraction
/// takes, so that shifting a form by a row and lane in the compiler cannot
/// overflow.
const MAX_TERM: u64 = 1 << 40;
/// A fold at least this long packs its vector operand ([`Contraction::pack`]).
const PACK_MIN_DEPTH: i64 = 512;
/// Steps of the fold per packed block: 256 rows of 64 f32 are 64 KiB,
/// which stay in L2 while the row tiles stream past.
const PACK_DEPTH: i64 = 256;

/// One multiplied operand: a reindex of a kernel argument.
#[derive(Debug, Clone, PartialEq)]
struct Operand {
    /// Which kernel argument it reads.
    argument: usize,
    /// The kernel arguments (`index`es) its map's symbols are, in order.
    symbols: Vec<usize>,
    /// Its element offset: one coefficient per domain dimension, then one
    /// per symbol, and a constant.
    offset: Linear,
    /// Each index's form over the dimensions and symbols.
    forms: Vec<Linear>,
    /// Contiguous along `v` (else constant along it).
    contiguous: bool,
    /// Moves with `r`.
    by_row: bool,
    /// Moves with the column dimension of a dot form.
    by_column: bool,
    /// The indices not proven in bounds: their form, the extent they must
    /// stay below, and whether they move with `v` (lane by lane).
    checks: Vec<(Linear, i64, bool)>,
    /// The value read where an index is out of bounds.
    overflow: f64,
}

/// The two ways a contraction is tiled.
#[derive(Debug, Clone, PartialEq)]
enum Form {
    /// Rows of `r` by vectors along `v`, the output's last dimension.
    Tiles,
    /// Under fast math, when an operand is strided along the output's last
    /// dimension (a transposed operand, `dy W^T`) but both are contiguous
    /// along a folded one: `v` is that folded dimension, each output of a
    /// tile of rows of `r` by `columns` of `column` sums its products in a
    /// vector along `v`, and the vector is added up at the end.
    Dot { column: Option<usize>, columns: usize },
}

/// A kernel that is a contraction, and how its tiles are cut.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Contraction {
    element: ElementType,
    /// The two operands, in the multiply's order.
    operands: [Operand; 2],
    /// The vector and row dimensions (in the dot form, `v` is folded).
    v: usize,
    r: usize,
    /// The other kept dimensions, in domain order: plain loops outside.
    outer: Vec<usize>,
    /// The folded dimensions in the order the fold runs them: the
    /// domain's, or under fast math those that checked indices read
    /// first; in the dot form, all but `v`, outside it.
    folded: Vec<usize>,
    /// The output's element offset per domain dimension.
    output: Vec<i64>,
    /// How the tiles are cut.
    form: Form,
    /// Tiles with one folded dimension, whose contiguous operand does not
    /// move with `r` and is read in bounds (matmul's `B`), and a fold of
    /// [`PACK_MIN_DEPTH`] steps or more: that operand is copied, one block
    /// of [`PACK_DEPTH`] steps at a time, into a contiguous buffer that the
    /// tiles read (packing). Read in place, the rows of a block lie a row of
    /// `B` apart, which for widths of a power of two maps them onto a few
    /// cache sets. The operand's number.
    pack: Option<usize>,
    /// Values per vector, vectors per tile row, rows per tile.
    lanes: usize,
    vectors: usize,
    rows: usize,
}

impl Contraction {
    /// What `jitc explain` says of it: the dimensions' roles and the tile.
    pub(super) fn describe(&self) -> String {
        let names = |dims: &[usize]| {
            dims.iter()
                .map(|d| format!("d{d}"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let mut text = match &self.form {
            Form::Tiles => {
                format!(
                    "rows d{} x vector d{}, tiles of {} x {} ({} vector{} of {} lanes), folding {}",
                    self.r,
                    self.v,
                    self.rows,
                    self.vectors * self.lanes,
                    self.vectors,
                    if self.vectors == 1 { "" } else { "s" },
                    self.lanes,
                    names(&self.folded)
                ) + &if self.pack.is_some() {
                    format!(", packed in blocks of {PACK_DEPTH}")
                } else {
                    String::new()
                }
            }
            Form::Dot { column, columns } => format!(
                "dot form: rows d{}{} in tiles of {} x {}, summing {}-lane vectors along d{}{}",
                self.r,
                column.map_or(String::new(), |c| format!(" x columns d{c}")),
                self.rows,
                columns,
                self.lanes,
                self.v,
                if self.folded.is_empty() {
                    String::new()
                } else {
                    format!(" inside {}", names(&self.folded))
                }
            ),
        };
        if !self.outer.is_empty() {
            text.push_str(&format!(" inside loops over {}", names(&self.outer)));
        }
        text
    }
}

/// The float a reindex reads out of bounds.
fn overflow_of(reindex: &ReindexOp) -> f64 {
    reindex.overflow_value().map_or(0.0, |attribute| {
        let raw = melior::ir::AttributeLike::to_raw(&attribute);
        // SAFETY: the verifier checked it is a number of the element type.
        unsafe {
            if mlir_sys::mlirAttributeIsAFloat(raw) {
                mlir_sys::mlirFloatAttrGetValueDouble(raw)
            } else {
                mlir_sys::mlirIntegerAttrGetValueInt(raw) as f64
            }
        }
    })
}

/// Row-major strides of `shape`.
fn strides(shape: &[i64]) -> Vec<i64> {
    let mut strides = vec![1i64; shape.len()];
    for d in (0..shape.len().saturating_sub(1)).rev() {
        strides[d] = strides[d + 1].saturating_mul(shape[d + 1]);
    }
    strides
}

/// The contraction `body` is over `domain`, if it is one this module
/// lowers; `vector_bits` is the width of the target's vector registers.
pub(super) fn plan(
    body: BlockRef,
    domain: &[i64],
    schedule: &Schedule,
    vector_bits: u32,
    reassociate: bool,
) -> Option<Contraction> {
    if domain.iter().any(|&d| d <= 0) || !schedule.parallel {
        return None;
    }
    let dims = domain.len();
    let mut ops = Vec::new();
    let mut next = body.first_operation();
    while let Some(op) = next {
        next = op.next_in_block();
        ops.push(op);
    }
    let terminator = ops.pop()?;
    if ops.len() != 4 || terminator.operand_count() != 1 {
        return None;
    }
    let reduce = ops.iter().find_map(|op| ReindexReduceOp::cast(*op))?;
    let multiply = ops.iter().find_map(|op| BinaryOp::cast(*op))?;
    let result = reduce.result()?;
    if key(terminator.operand(0).ok()?) != key(result)
        || reduce.kind()? != ReduceKind::Add
        || multiply.kind()? != BinaryKind::Mul
        || reduce.overflow_conditions().is_some()
        || !reduce.index_operands().is_empty()
        || key(reduce.input()?) != key(multiply.result()?)
    {
        return None;
    }
    let element = super::element_of(result)?;
    let lanes = match element {
        ElementType::F32 => vector_bits as usize / 32,
        ElementType::F64 => vector_bits as usize / 64,
        _ => return None,
    };
    // The output: distinct plain dimensions over their whole extents.
    let map = reduce.indices()?;
    let (shape, _) = super::types::static_shape(result.r#type())?;
    if map.result_count() != shape.len() {
        return None;
    }
    let mut kept = Vec::new();
    for (k, &extent) in shape.iter().enumerate() {
        let expr = map.result(k).ok()?;
        if !expr.is_dim()
            || kept.contains(&expr.dim_position())
            || domain[expr.dim_position()] != extent as i64
        {
            return None;
        }
        kept.push(expr.dim_position());
    }
    let v = *kept.last()?;
    let folded: Vec<usize> = (0..dims).filter(|d| !kept.contains(d)).collect();
    if folded.is_empty() {
        return None;
    }
    let out_strides = strides(&shape.iter().map(|&n| n as i64).collect::<Vec<_>>());
    let mut output = vec![0i64; dims];
    for (k, &d) in kept.iter().enumerate() {
        output[d] = out_strides[k];
    }
    // The operands: reindexes of arguments, affine, checked at most
    // against their extents.
    let arguments: Vec<usize> = (0..body.argument_count())
        .filter_map(|i| body.argument(i).ok().map(|a| key(a.into())))
        .collect();
    let mut operands = Vec::new();
    for value in [multiply.lhs()?, multiply.rhs()?] {
        let reindex = ops
            .iter()
            .filter_map(|op| ReindexOp::cast(*op))
            .find(|r| r.result().is_some_and(|x| key(x) == key(value)))?;
        let input = reindex.input()?;
        let argument = arguments.iter().position(|&a| a == key(input))?;
        if reindex.overflow_conditions().is_some() {
            return None;
        }
        // Symbols are index arguments (the result's shape is static, so
        // every index operand is a symbol).
        let symbols = reindex
            .index_operands()
            .into_iter()
            .map(|s| arguments.iter().position(|&a| a == key(s)))
            .collect::<Option<Vec<usize>>>()?;
        let (input_shape, input_element) = super::types::static_shape(input.r#type())?;
        if input_element != element || input_shape.contains(&0) {
            return None;
        }
        let input_shape: Vec<i64> = input_shape.iter().map(|&n| n as i64).collect();
        let map = reindex.indices()?;
        let rank = map.result_count();
        let width = dims + symbols.len();
        // Each index's form over the dimensions and symbols. A symbol may
        // only be a whole index (the RNN's `xs[t, i, k]`): then it is
        // checked against its extent and nothing can overflow; any other
        // use keeps the loop nest, whose index arithmetic reports
        // overflow as the interpreter does.
        let forms = (0..rank)
            .map(|k| {
                let expr = map.result(k).ok()?;
                if expr.is_symbol() {
                    let mut coefficients = vec![0; width];
                    *coefficients.get_mut(dims + expr.symbol_position())? = 1;
                    return Some(Linear {
                        coefficients,
                        constant: 0,
                    });
                }
                // An index whose arithmetic could leave i64 somewhere in
                // the domain keeps the loop nest, which reports that as
                // the interpreter does; the tiles compute with wrapping
                // `index` arithmetic.
                range(expr, domain)?;
                let mut form = linear(expr, dims)?;
                let small = |c: &i64| c.unsigned_abs() <= MAX_TERM;
                if !form.coefficients.iter().all(small) || !small(&form.constant) {
                    return None;
                }
                form.coefficients.resize(width, 0);
                Some(form)
            })
            .collect::<Option<Vec<Linear>>>()?;
        let in_strides = strides(&input_shape);
        let mut offset = Linear {
            coefficients: vec![0; width],
            constant: 0,
        };
        for (form, stride) in forms.iter().zip(&in_strides) {
            for (c, f) in offset.coefficients.iter_mut().zip(&form.coefficients) {
                *c = c.checked_add(f.checked_mul(*stride)?)?;
            }
            offset.constant = offset.constant.checked_add(form.constant.checked_mul(*stride)?)?;
        }
        let moves: Vec<bool> = forms.iter().map(|f| f.coefficients[v] != 0).collect();
        let checks = schedule.checks_of(reindex.operation())?;
        let mut checked = Vec::new();
        for (k, check) in checks.indices.iter().enumerate() {
            match check {
                Check::Proven => {}
                // A plain symbol is checked `Always` by the schedule.
                Check::Always if forms[k].coefficients[..dims].iter().all(|&c| c == 0) => {
                    checked.push((forms[k].clone(), input_shape[k], false))
                }
                Check::Affine(_) => checked.push((forms[k].clone(), input_shape[k], moves[k])),
                Check::Always => return None,
            }
        }
        operands.push(Operand {
            argument,
            symbols,
            by_row: false,
            by_column: false,
            offset,
            forms,
            contiguous: false,
            checks: checked,
            overflow: overflow_of(&reindex),
        });
    }
    // Along `v`, each operand is contiguous or constant, and `v` fills
    // half a vector at least; otherwise, under fast math, the dot form.
    let ways: Option<Vec<bool>> = operands.iter().map(|o| along(&o.forms, v)).collect();
    let Some(ways) = ways.filter(|_| domain[v] >= (lanes as i64) / 2) else {
        if !reassociate {
            return None;
        }
        return dot(
            element,
            operands,
            domain,
            &kept,
            folded,
            output,
            vector_bits,
            lanes,
        );
    };
    for (operand, contiguous) in operands.iter_mut().zip(ways) {
        operand.contiguous = contiguous;
    }
    // The row dimension: a kept one a contiguous operand does not move
    // with; the longest, then the later.
    let r = kept
        .iter()
        .copied()
        .filter(|&d| d != v)
        .filter(|&d| {
            operands
                .iter()
                .any(|o| o.contiguous && o.offset.coefficients[d] == 0)
        })
        .max_by_key(|&d| (domain[d], d))?;
    for operand in &mut operands {
        operand.by_row = operand.offset.coefficients[r] != 0;
    }
    let (max_vectors, accumulators) = if vector_bits >= 512 {
        (4, ACCUMULATORS_512)
    } else {
        (2, ACCUMULATORS_256)
    };
    let vectors = (domain[v] as usize).div_ceil(lanes).clamp(1, max_vectors);
    let rows = (accumulators / vectors)
        .clamp(1, MAX_ROWS)
        .min(domain[r] as usize);
    let mut outer = kept
        .iter()
        .copied()
        .filter(|&d| d != v && d != r)
        .collect::<Vec<_>>();
    outer.sort_unstable();
    // Where the fold may be reordered, the folded dimensions that checked
    // indices read go outside the others, so the masks of a step are the
    // same through the innermost loop, which LLVM then hoists
    // (convolution: kh and kw outside the input channels).
    let mut folded = folded;
    if reassociate {
        let checked = |d: &usize| {
            operands
                .iter()
                .any(|o| o.checks.iter().any(|(form, _, _)| form.coefficients[*d] != 0))
        };
        folded.sort_by_key(|d| !checked(d));
    }
    let pack = (folded.len() == 1 && domain[folded[0]] >= PACK_MIN_DEPTH)
        .then(|| {
            operands
                .iter()
                .position(|o| o.contiguous && !o.by_row && o.checks.is_empty())
        })
        .flatten();
    let [a, b] = <[Operand; 2]>::try_from(operands).ok()?;
    Some(Contraction {
        element,
        operands: [a, b],
        v,
        r,
        outer,
        folded,
        output,
        form: Form::Tiles,
        pack,
        lanes,
        vectors,
        rows,
    })
}

/// Whether an access whose indices have `forms` is contiguous along
/// dimension `d` (its last index moves by 1 and no other moves: `Some(true)`)
/// or constant along it (`Some(false)`); `None` when it moves otherwise.
fn along(forms: &[Linear], d: usize) -> Option<bool> {
    match forms.iter().position(|f| f.coefficients[d] != 0) {
        None => Some(false),
        Some(k) if k + 1 == forms.len() && forms[k].coefficients[d] == 1 => Some(true),
        Some(_) => None,
    }
}

/// The dot form of a contraction (see [`Form::Dot`]), if it has one:
/// a folded dimension both operands are contiguous or constant along
/// (the last such, one at least contiguous) that is two vectors long at
/// least (shorter, adding up each output's vector costs more than the
/// loop nest: the MLP's `dz2 W2^T` folds 10), no checked index, a row
/// dimension one operand moves with and the other not, and a column
/// dimension the other way round, when there is one.
#[allow(clippy::too_many_arguments)]
fn dot(
    element: ElementType,
    mut operands: Vec<Operand>,
    domain: &[i64],
    kept: &[usize],
    folded: Vec<usize>,
    output: Vec<i64>,
    vector_bits: u32,
    lanes: usize,
) -> Option<Contraction> {
    if operands.iter().any(|o| !o.checks.is_empty()) {
        return None;
    }
    let v = *folded.iter().rev().find(|&&d| {
        let ways: Option<Vec<bool>> = operands.iter().map(|o| along(&o.forms, d)).collect();
        ways.is_some_and(|w| w.contains(&true)) && domain[d] >= 2 * lanes as i64
    })?;
    for operand in &mut operands {
        operand.contiguous = along(&operand.forms, v)?;
    }
    let moves = |o: usize, d: usize| operands[o].offset.coefficients[d] != 0;
    let only = |o: usize| {
        kept.iter()
            .copied()
            .filter(move |&d| moves(o, d) && !moves(1 - o, d))
            .max_by_key(|&d| (domain[d], d))
    };
    let (r, column) = match (only(0), only(1)) {
        (Some(r), column) => (r, column),
        (None, Some(r)) => (r, None),
        (None, None) => return None,
    };
    for operand in &mut operands {
        operand.by_row = operand.offset.coefficients[r] != 0;
        operand.by_column = column.is_some_and(|c| operand.offset.coefficients[c] != 0);
    }
    // Accumulators, plus a load per row and per column, in the registers.
    let (rows, columns) = match (vector_bits >= 512, column.is_some()) {
        (true, true) => (4, 4),
        (false, true) => (3, 3),
        (true, false) => (8, 1),
        (false, false) => (6, 1),
    };
    let rows = rows.min(domain[r] as usize);
    let columns = column.map_or(1, |c| columns.min(domain[c] as usize));
    let mut outer: Vec<usize> = kept
        .iter()
        .copied()
        .filter(|&d| d != r && Some(d) != column)
        .collect();
    outer.sort_unstable();
    let folded = folded.into_iter().filter(|&d| d != v).collect();
    let [a, b] = <[Operand; 2]>::try_from(operands).ok()?;
    Some(Contraction {
        element,
        operands: [a, b],
        v,
        r,
        outer,
        folded,
        output,
        form: Form::Dot { column, columns },
        pack: None,
        lanes,
        vectors: 1,
        rows,
    })
}

/// Builds IR with the vector types of one contraction.
struct Vectors<'c> {
    element: ElementType,
    lanes: usize,
    /// `vector<lanes x element>`, of `i64` and of `i1`.
    values: Type<'c>,
    indices: Type<'c>,
    masks: Type<'c>,
}

impl<'c> Vectors<'c> {
    fn new(context: &'c melior::Context, element: ElementType, lanes: usize) -> Result<Self, Error> {
        let parse =
            |text: String| Type::parse(context, &text).ok_or_else(|| error(format!("the type {text}")));
        let name = match element {
            ElementType::F64 => "f64",
            _ => "f32",
        };
        Ok(Self {
            element,
            lanes,
            values: parse(format!("vector<{lanes}x{name}>"))?,
            indices: parse(format!("vector<{lanes}xi64>"))?,
            masks: parse(format!("vector<{lanes}xi1>"))?,
        })
    }

    /// A constant vector of `type` from its `dense` text.
    fn constant<'a>(
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
    fn splat<'a>(
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
    fn iota<'a>(&self, at: &Emitter<'c, 'a>) -> Result<Value<'c, 'a>, Error> {
        let lanes = (0..self.lanes)
            .map(|l| l.to_string())
            .collect::<Vec<_>>()
            .join(", ");
        self.constant(at, &format!("[{lanes}]"), self.indices)
    }

    /// The mask of lanes `l` with `0 <= first + l < extent` (`first` an
    /// `i64`).
    fn lanes_within<'a>(
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
        let predicate = |p: i64| IntegerAttributeOf::predicate(at, p);
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

    /// The `alignment` of a load or store of a whole vector of a packed
    /// buffer (an `i64`): the vector's size, as the buffer is aligned to 64
    /// bytes and holds whole vectors.
    fn packed_alignment<'a>(&self, at: &Emitter<'c, 'a>) -> Attribute<'c> {
        let bytes = self.lanes as i64 * if self.element == ElementType::F64 { 8 } else { 4 };
        melior::ir::attribute::IntegerAttribute::new(
            melior::ir::r#type::IntegerType::new(at.context, 64).into(),
            bytes,
        )
        .into()
    }

    fn alignment<'a>(&self, at: &Emitter<'c, 'a>) -> Attribute<'c> {
        let bytes = if self.element == ElementType::F64 { 8 } else { 4 };
        melior::ir::attribute::IntegerAttribute::new(
            melior::ir::r#type::IntegerType::new(at.context, 32).into(),
            bytes,
        )
        .into()
    }
}

/// Integer attributes the vector code needs.
struct IntegerAttributeOf;

impl IntegerAttributeOf {
    /// An `arith.cmpi` predicate number.
    fn predicate<'c>(at: &Emitter<'c, '_>, predicate: i64) -> Attribute<'c> {
        melior::ir::attribute::IntegerAttribute::new(
            melior::ir::r#type::IntegerType::new(at.context, 64).into(),
            predicate,
        )
        .into()
    }
}

/// The `index` value `form` takes at `ivs` (every dimension it uses must
/// have one) and `symbols` (its coefficients past the dimensions), plus
/// `shift`.
fn evaluate<'c, 'a>(
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

/// Emits `plan` for the kernel: its loops, tiles and stores. `range` is the
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
) -> Result<(), Error> {
    let vectors = Vectors::new(top.context, plan.element, plan.lanes)?;
    let i64_type: Type = melior::ir::r#type::IntegerType::new(top.context, 64).into();
    // The packed block's buffer, before any loop, so it dominates them.
    let buffer = match plan.pack {
        Some(_) => {
            let bytes = PACK_DEPTH
                * (plan.vectors * plan.lanes) as i64
                * if plan.element == ElementType::F64 { 8 } else { 4 };
            let pointer = melior::dialect::llvm::r#type::pointer(top.context, 0);
            let i8_type: Type = melior::ir::r#type::IntegerType::new(top.context, 8).into();
            let buffer = top
                .op(
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
                .ok_or_else(|| error("llvm.alloca"))?;
            Some(buffer)
        }
        None => None,
    };
    let pointers = plan
        .operands
        .iter()
        .map(|o| match arguments.get(o.argument) {
            Some((_, Arg::Tensor { pointer, .. })) => Ok(*pointer),
            _ => Err(error("a contraction operand is not a tensor argument")),
        })
        .collect::<Result<Vec<_>, _>>()?;
    let symbols = plan
        .operands
        .iter()
        .map(|o| {
            o.symbols
                .iter()
                .map(|&i| match arguments.get(i) {
                    Some((_, Arg::Index(value))) => Ok(*value),
                    _ => Err(error("a contraction symbol is not an index argument")),
                })
                .collect::<Result<Vec<_>, _>>()
        })
        .collect::<Result<Vec<_>, _>>()?;
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
    if let Form::Dot { column, columns } = plan.form {
        let tile = DotTile {
            plan,
            vectors: &vectors,
            pointers: &pointers,
            symbols: &symbols,
            output,
            domain,
        };
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
        plan,
        vectors: &vectors,
        pointers: &pointers,
        symbols: &symbols,
        output,
        domain,
        math,
        tail: tail.then_some(v_high),
        packed: None,
    };
    // With packing, the fold runs in blocks: each block copies its steps of
    // the operand into the buffer, then every row tile folds through them.
    let (mut within, mut block) = (columns, None);
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
        // lanes`; lanes past `v`'s end read 0.
        let (copy, kk) = blocks.for_range(low, high)?;
        ivs[k] = Some(kk);
        let tails = tile.tails(&copy, &ivs)?;
        let step = copy.value("arith.subi", &[kk, low], index)?;
        let row = copy.value(
            "arith.muli",
            &[step, copy.index((plan.vectors * plan.lanes) as i64)?],
            index,
        )?;
        for (n, mask) in tails.iter().enumerate() {
            let value = tile.load(&copy, &ivs, operand, 0, (n * plan.lanes) as i64, *mask)?;
            let at_vector = copy.value("arith.addi", &[row, copy.index((n * plan.lanes) as i64)?], index)?;
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
        tile.packed = Some(Packed {
            operand,
            buffer,
            low,
            high,
            first,
        });
        within = blocks;
        block = Some(blocks);
    }
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

/// The bounds of a dimension's loop: the caller's range for the split
/// dimension, the whole extent otherwise.
type Bounds<'b, 'c, 'a> =
    dyn Fn(&Emitter<'c, 'a>, usize) -> Result<(Value<'c, 'a>, Value<'c, 'a>), Error> + 'b;

/// Covers `[low, high)` with tiles of `sizes`, largest first: a loop over
/// the whole tiles of each size that fit in what the sizes before left,
/// `tile` emitting one tile at its first index.
fn in_tiles<'c, 'a>(
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

/// What every tile of a contraction in the dot form shares.
struct DotTile<'p, 'c, 'a> {
    plan: &'p Contraction,
    vectors: &'p Vectors<'c>,
    pointers: &'p [Value<'c, 'a>],
    symbols: &'p [Vec<Value<'c, 'a>>],
    output: &'p Output<'c, 'a>,
    domain: &'p [i64],
}

impl<'c, 'a> DotTile<'_, 'c, 'a> {
    /// The tiles of the column dimension (when there is one), each with
    /// the tiles of `r` inside, whole ones first, then the remainders in
    /// the powers of two below.
    fn grid(
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
        let plan = self.plan;
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
        let plan = self.plan;
        let vectors = self.vectors;
        let zero = vectors.constant(at, "0.0", vectors.values)?;
        let sums = self.fold(at, ivs, 0, vec![zero; height * width], height, width)?;
        let Form::Dot { column, .. } = plan.form else {
            return Err(error("a dot tile of another form"));
        };
        let element = value_type(at.context, plan.element);
        let flags = Attribute::parse(at.context, "#llvm.fastmath<reassoc>")
            .ok_or_else(|| error("fast-math flags"))?;
        let i64_type: Type = melior::ir::r#type::IntegerType::new(at.context, 64).into();
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
                let form = Linear {
                    coefficients: plan.output.clone(),
                    constant: 0,
                };
                let offset = evaluate(at, &form, ivs, &[], shift)?;
                let offset = at.value("arith.index_cast", &[offset], i64_type)?;
                let address = gep(
                    at,
                    self.output.pointer,
                    offset,
                    memory_type(at.context, plan.element),
                )?;
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
        let plan = self.plan;
        if let Some(&d) = plan.folded.get(level) {
            let (body, iv, inside, results) =
                at.for_carried(at.index(0)?, at.index(self.domain[d])?, &accumulators)?;
            ivs[d] = Some(iv);
            let next = self.fold(&body, ivs, level + 1, inside, height, width)?;
            body.yield_values(&next)?;
            return Ok(results);
        }
        let lanes = plan.lanes as i64;
        let extent = self.domain[plan.v];
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
            .vectors
            .constant(at, &format!("[{used}]"), self.vectors.masks)?;
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
        let plan = self.plan;
        let vectors = self.vectors;
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
                    let offset = evaluate(at, &operand.offset, ivs, &self.symbols[o], shift)?;
                    let offset = at.value("arith.index_cast", &[offset], i64_type)?;
                    let address = gep(at, self.pointers[o], offset, memory)?;
                    let value = match (operand.contiguous, mask) {
                        (true, Some(mask)) => at
                            .op(
                                "llvm.intr.masked.load",
                                &[address, mask, zero],
                                &[vectors.values],
                                &[("alignment", vectors.alignment(at))],
                            )?
                            .ok_or_else(|| error("llvm.intr.masked.load"))?,
                        (true, None) => at
                            .op(
                                "llvm.load",
                                &[address],
                                &[vectors.values],
                                &[("alignment", alignment64(at, plan.element))],
                            )?
                            .ok_or_else(|| error("llvm.load"))?,
                        (false, _) => {
                            let x = at.value("llvm.load", &[address], element)?;
                            vectors.splat(at, x, vectors.values)?
                        }
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

/// The heights of the tiles of `r`, tallest first: `rows`, then the
/// powers of two below it, down to 1.
fn tile_heights(rows: usize) -> Vec<usize> {
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

/// What every tile of one contraction shares.
struct Tile<'p, 'c, 'a> {
    plan: &'p Contraction,
    vectors: &'p Vectors<'c>,
    pointers: &'p [Value<'c, 'a>],
    /// Per operand, the values of its map's symbols.
    symbols: &'p [Vec<Value<'c, 'a>>],
    output: &'p Output<'c, 'a>,
    domain: &'p [i64],
    math: MathMode,
    /// Where `v` ends, when the last vector of a tile may pass it.
    tail: Option<Value<'c, 'a>>,
    /// The packed block the tiles read, when the operand is packed.
    packed: Option<Packed<'c, 'a>>,
}

/// One packed block of a contraction's operand ([`Contraction::pack`]).
#[derive(Clone, Copy)]
struct Packed<'c, 'a> {
    /// The operand packed.
    operand: usize,
    /// The buffer: `vectors` vectors per step of the block, in order.
    buffer: Value<'c, 'a>,
    /// The block's steps of the folded dimension, `[low, high)`.
    low: Value<'c, 'a>,
    high: Value<'c, 'a>,
    /// Whether this is the first block (accumulators start from the
    /// identity; later blocks go on from the output).
    first: Value<'c, 'a>,
}

impl<'c, 'a> Tile<'_, 'c, 'a> {
    /// One tile of `rows` rows at the tile origin in `ivs` (`r` and `v`
    /// set): accumulators from the identity, the fold, the stores.
    fn emit(
        &self,
        at: &Emitter<'c, 'a>,
        ivs: &mut [Option<Value<'c, 'a>>],
        rows: usize,
    ) -> Result<(), Error> {
        let plan = self.plan;
        let vectors = self.vectors;
        let tails = self.tails(at, ivs)?;
        let identity = vectors.constant(at, "0.0", vectors.values)?;
        let mut inits = vec![identity; rows * plan.vectors];
        if let Some(packed) = self.packed {
            // After the first block, each output goes on from what the
            // blocks before left in it: the same order of additions.
            for m in 0..rows {
                for (n, tail) in tails.iter().enumerate() {
                    let address = self.output_address(at, ivs, m, n)?;
                    let so_far = match tail {
                        Some(mask) => at
                            .op(
                                "llvm.intr.masked.load",
                                &[address, *mask, identity],
                                &[vectors.values],
                                &[("alignment", vectors.alignment(at))],
                            )?
                            .ok_or_else(|| error("llvm.intr.masked.load"))?,
                        None => at
                            .op(
                                "llvm.load",
                                &[address],
                                &[vectors.values],
                                &[("alignment", alignment64(at, plan.element))],
                            )?
                            .ok_or_else(|| error("llvm.load"))?,
                    };
                    inits[m * plan.vectors + n] = at.select(packed.first, identity, so_far)?;
                }
            }
        }
        let results = self.fold(at, ivs, 0, inits, rows, &tails)?;
        // Store the accumulators.
        for m in 0..rows {
            for (n, tail) in tails.iter().enumerate() {
                let address = self.output_address(at, ivs, m, n)?;
                let value = results[m * plan.vectors + n];
                match tail {
                    Some(mask) => {
                        at.op(
                            "llvm.intr.masked.store",
                            &[value, address, *mask],
                            &[],
                            &[("alignment", vectors.alignment(at))],
                        )?;
                    }
                    None => {
                        at.op(
                            "llvm.store",
                            &[value, address],
                            &[],
                            &[("alignment", alignment64(at, plan.element))],
                        )?;
                    }
                }
            }
        }
        Ok(())
    }

    /// Per vector of a row: the mask of lanes before `v`'s end, when the
    /// last vector may pass it.
    fn tails(
        &self,
        at: &Emitter<'c, 'a>,
        ivs: &[Option<Value<'c, 'a>>],
    ) -> Result<Vec<Option<Value<'c, 'a>>>, Error> {
        let plan = self.plan;
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
                self.vectors
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
        let plan = self.plan;
        let i64_type: Type = melior::ir::r#type::IntegerType::new(at.context, 64).into();
        let shift = (m as i64)
            .wrapping_mul(plan.output[plan.r])
            .wrapping_add((n * plan.lanes) as i64);
        let form = Linear {
            coefficients: plan.output.clone(),
            constant: 0,
        };
        let offset = evaluate(at, &form, ivs, &[], shift)?;
        let offset = at.value("arith.index_cast", &[offset], i64_type)?;
        gep(
            at,
            self.output.pointer,
            offset,
            memory_type(at.context, plan.element),
        )
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
        let plan = self.plan;
        let d = plan.folded[level];
        let (low, high) = match self.packed {
            Some(packed) => (packed.low, packed.high),
            None => (at.index(0)?, at.index(self.domain[d])?),
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
        let plan = self.plan;
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
                let t = self.vectors.values;
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
    fn load(
        &self,
        at: &Emitter<'c, 'a>,
        ivs: &[Option<Value<'c, 'a>>],
        o: usize,
        m: i64,
        shift: i64,
        tail: Option<Value<'c, 'a>>,
    ) -> Result<Value<'c, 'a>, Error> {
        let plan = self.plan;
        let operand = &plan.operands[o];
        let vectors = self.vectors;
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
        let symbols = &self.symbols[o];
        let offset = evaluate(at, &operand.offset, ivs, symbols, moved(&operand.offset))?;
        let offset = at.value("arith.index_cast", &[offset], i64_type)?;
        // Conditions on the indices: per lane for those moving with `v`,
        // scalar for the others.
        let mut lanes: Option<Value> = tail.filter(|_| operand.contiguous);
        let mut scalar: Option<Value> = None;
        for (form, extent, moves) in &operand.checks {
            let value = evaluate(at, form, ivs, symbols, moved(form))?;
            let value = at.value("arith.index_cast", &[value], i64_type)?;
            let extent = at.int(i64_type, *extent)?;
            if *moves {
                let within = vectors.lanes_within(at, value, extent)?;
                lanes = Some(match lanes {
                    Some(mask) => at.value("arith.andi", &[mask, within], vectors.masks)?,
                    None => within,
                });
            } else {
                let low = at.cmpi(5, value, at.int(i64_type, 0)?)?;
                let high = at.cmpi(2, value, extent)?;
                let within = at.value("arith.andi", &[low, high], at.i1())?;
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
            let address = gep(at, self.pointers[o], offset, memory)?;
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
        let address = gep(at, self.pointers[o], offset, memory)?;
        match lanes {
            Some(mask) => {
                let through = vectors.splat(at, overflow, vectors.values)?;
                at.op(
                    "llvm.intr.masked.load",
                    &[address, mask, through],
                    &[vectors.values],
                    &[("alignment", vectors.alignment(at))],
                )?
                .ok_or_else(|| error("llvm.intr.masked.load"))
            }
            None => at
                .op(
                    "llvm.load",
                    &[address],
                    &[vectors.values],
                    &[("alignment", alignment64(at, plan.element))],
                )?
                .ok_or_else(|| error("llvm.load")),
        }
    }
}

/// The `alignment` attribute of an element-aligned `llvm.load`/`llvm.store`
/// of a vector (an `i64`; without it LLVM assumes the vector's own).
fn alignment64<'c>(at: &Emitter<'c, '_>, element: ElementType) -> Attribute<'c> {
    let bytes = if element == ElementType::F64 { 8 } else { 4 };
    melior::ir::attribute::IntegerAttribute::new(
        melior::ir::r#type::IntegerType::new(at.context, 64).into(),
        bytes,
    )
    .into()
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
