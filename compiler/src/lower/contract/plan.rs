//! Which kernels are contractions, and how their tiles are cut: the
//! dimensions' roles read from the maps, the operands' access forms, the
//! tile shape for the target's vector width, and the dot form and
//! packing where they apply (see the module above for what each means).

use super::super::{
    access::key,
    point::overflow_value,
    schedule::{Check, Linear, Schedule, linear, range, strides},
};
use jitc_dialect::{
    kinds::{BinaryKind, ElementType, ReduceKind},
    ops::{BinaryOp, ReindexOp, ReindexReduceOp},
};
use melior::ir::{BlockLike, BlockRef, ValueLike, operation::OperationLike};

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
pub(super) const PACK_MIN_DEPTH: i64 = 512;
/// Steps of the fold per packed block: 256 rows of 64 f32 are 64 KiB,
/// which stay in L2 while the row tiles stream past.
pub(super) const PACK_DEPTH: i64 = 256;

/// One multiplied operand: a reindex of a kernel argument.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Operand {
    /// Which kernel argument it reads.
    pub(super) argument: usize,
    /// The kernel arguments (`index`es) its map's symbols are, in order.
    pub(super) symbols: Vec<usize>,
    /// Its element offset: one coefficient per domain dimension, then one
    /// per symbol, and a constant.
    pub(super) offset: Linear,
    /// Each index's form over the dimensions and symbols.
    pub(super) forms: Vec<Linear>,
    /// Contiguous along `v` (else constant along it).
    pub(super) contiguous: bool,
    /// Moves with `r`.
    pub(super) by_row: bool,
    /// Moves with the column dimension of a dot form.
    pub(super) by_column: bool,
    /// The indices not proven in bounds: their form, the extent they must
    /// stay below, and whether they move with `v` (lane by lane).
    pub(super) checks: Vec<(Linear, Bound, bool)>,
    /// The value read where an index is out of bounds.
    pub(super) overflow: f64,
}

/// The extent an index is checked against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Bound {
    /// Known when compiling.
    Fixed(i64),
    /// The operand's size in this dimension, read when the kernel starts
    /// (its leading dimension, dynamic: the IndRNN's `xs` of any length).
    Size(usize),
}

/// The two ways a contraction is tiled.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Form {
    /// Rows of `r` by vectors along `v`, the output's last dimension.
    Tiles,
    /// Under fast math, when an operand is strided along the output's last
    /// dimension and cannot be gathered into a packed panel (the fold has
    /// several dimensions) but both are contiguous along a folded one: `v`
    /// is that folded dimension, each output of a tile of rows of `r` by
    /// `columns` of `column` sums its products in a vector along `v`, and
    /// the vector is added up at the end.
    Dot { column: Option<usize>, columns: usize },
}

/// The dimensions of a contraction's tiles, for an epilogue
/// (`super::super::epilogue`).
pub(crate) struct Roles {
    /// The row and vector dimensions.
    pub(crate) r: usize,
    pub(crate) v: usize,
    /// The other kept dimensions, the loops outside the tiles, in order.
    pub(crate) outer: Vec<usize>,
    /// The values of `v` per tile row: vectors times lanes.
    pub(crate) width: usize,
}

/// A kernel that is a contraction, and how its tiles are cut.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Contraction {
    pub(super) element: ElementType,
    /// The two operands, in the multiply's order.
    pub(super) operands: [Operand; 2],
    /// The vector and row dimensions (in the dot form, `v` is folded).
    pub(super) v: usize,
    pub(super) r: usize,
    /// The other kept dimensions, in domain order: plain loops outside.
    pub(super) outer: Vec<usize>,
    /// The folded dimensions in the order the fold runs them: the
    /// domain's, or under fast math those that checked indices read
    /// first; in the dot form, all but `v`, outside it.
    pub(super) folded: Vec<usize>,
    /// The output's element offset per domain dimension.
    pub(super) output: Vec<i64>,
    /// How the tiles are cut.
    pub(super) form: Form,
    /// Tiles with one folded dimension, whose contiguous operand does not
    /// move with `r` and is read in bounds (matmul's `B`), and a fold of
    /// [`PACK_MIN_DEPTH`] steps or more: that operand is copied, one block
    /// of [`PACK_DEPTH`] steps at a time, into a contiguous buffer that the
    /// tiles read (packing). Read in place, the rows of a block lie a row of
    /// `B` apart, which for widths of a power of two maps them onto a few
    /// cache sets. The operand's number.
    pub(super) pack: Option<usize>,
    /// The packed operand is strided along `v` (a transposed operand): the
    /// copy into each block gathers it lane by lane. Any fold depth packs
    /// it, in either math mode.
    pub(super) gathered: bool,
    /// Values per vector, vectors per tile row, rows per tile.
    pub(super) lanes: usize,
    pub(super) vectors: usize,
    pub(super) rows: usize,
}

impl Contraction {
    /// Whether it runs as tiles of rows by vectors ([`Form::Tiles`]), the
    /// form an epilogue runs on (`super::super::epilogue`).
    pub(crate) fn is_tiles(&self) -> bool {
        self.form == Form::Tiles
    }

    /// The element type of its operands and output.
    pub(crate) fn element(&self) -> ElementType {
        self.element
    }

    /// The roles of its dimensions in the tiles.
    pub(crate) fn roles(&self) -> Roles {
        Roles {
            r: self.r,
            v: self.v,
            outer: self.outer.clone(),
            width: self.vectors * self.lanes,
        }
    }

    /// Whether its fold runs in packed blocks, which keep their partial
    /// sums in the output.
    pub(crate) fn packs(&self) -> bool {
        self.pack.is_some()
    }

    /// What `jitc explain` says of it: the dimensions' roles and the tile.
    pub(crate) fn describe(&self) -> String {
        let names = dim_names;
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
                ) + &if self.gathered {
                    format!(", d{} gathered into packed blocks of {PACK_DEPTH}", self.v)
                } else if self.pack.is_some() {
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

/// `d0, d2, ...`: how `jitc explain` names dimensions.
pub(super) fn dim_names(dims: &[usize]) -> String {
    dims.iter()
        .map(|d| format!("d{d}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The contraction `body` is over `domain`, if it is one this module
/// lowers; `vector_bits` is the width of the target's vector registers.
pub(crate) fn plan(
    body: BlockRef,
    domain: &[i64],
    schedule: &Schedule,
    vector_bits: u32,
    reassociate: bool,
) -> Option<Contraction> {
    if !schedule.parallel {
        return None;
    }
    let Analysis {
        element,
        mut operands,
        kept,
        folded,
        output,
    } = analyse(body, domain, schedule)?;
    let lanes = match element {
        ElementType::F32 => vector_bits as usize / 32,
        ElementType::F64 => vector_bits as usize / 64,
        _ => return None,
    };
    let v = *kept.last()?;
    // Along `v`, each operand is contiguous or constant, and `v` fills
    // half a vector at least. One operand strided along `v` (a transposed
    // one) may be gathered into the packed panel instead, when the fold is
    // one dimension and it is read in bounds; otherwise, under fast math,
    // the dot form.
    let mut ways: Vec<Option<bool>> = operands.iter().map(|o| along(&o.forms, v)).collect();
    let strided: Vec<usize> = (0..2).filter(|&o| ways[o].is_none()).collect();
    let gathered = match strided[..] {
        [o] if folded.len() == 1 && operands[o].checks.is_empty() => {
            ways[o] = Some(true);
            Some(o)
        }
        _ => None,
    };
    let ways: Option<Vec<bool>> = ways.into_iter().collect();
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
    // with (the gathered one, when there is one); the longest, then the
    // later.
    let r = kept
        .iter()
        .copied()
        .filter(|&d| d != v)
        .filter(|&d| {
            operands.iter().enumerate().any(|(o, operand)| {
                operand.contiguous && operand.offset.coefficients[d] == 0 && gathered.is_none_or(|g| g == o)
            })
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
    let pack = match gathered {
        Some(o) => Some(o),
        None => (folded.len() == 1 && domain[folded[0]] >= PACK_MIN_DEPTH)
            .then(|| {
                operands
                    .iter()
                    .position(|o| o.contiguous && !o.by_row && o.checks.is_empty())
            })
            .flatten(),
    };
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
        gathered: gathered.is_some(),
        lanes,
        vectors,
        rows,
    })
}

/// What every tiling of a contraction starts from: the kernel's element
/// type, its two multiplied operands (access forms, checks, overflow
/// values; `contiguous`, `by_row` and `by_column` still unset), the
/// dimensions the output keeps (in its index order) and those it folds
/// (in domain order), and the output's element offset per dimension.
pub(super) struct Analysis {
    pub(super) element: ElementType,
    pub(super) operands: Vec<Operand>,
    pub(super) kept: Vec<usize>,
    pub(super) folded: Vec<usize>,
    pub(super) output: Vec<i64>,
}

/// The [`Analysis`] of the kernel whose body is `body` over `domain`, when
/// it is a contraction: a reduce-add of the product of two affine reindexes
/// of its `f32` or `f64` arguments into distinct plain output dimensions,
/// with at least one folded dimension and no other op.
pub(super) fn analyse(body: BlockRef, domain: &[i64], schedule: &Schedule) -> Option<Analysis> {
    if domain.iter().any(|&d| d <= 0) {
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
    let element = super::super::element_of(result)?;
    if !matches!(element, ElementType::F32 | ElementType::F64) {
        return None;
    }
    // The output: distinct plain dimensions over their whole extents.
    let map = reduce.indices()?;
    let (shape, _) = super::super::types::static_shape(result.r#type())?;
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
    let out_strides = strides(&shape.iter().map(|&n| n as i64).collect::<Vec<_>>())?;
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
        // A dynamic size only in the leading dimension, which no stride
        // depends on: its indices are checked against the size read at
        // run time.
        let (input_shape, input_element) = super::super::types::dynamic_shape(input.r#type())?;
        if input_element != element
            || input_shape.contains(&Some(0))
            || input_shape.iter().skip(1).any(Option::is_none)
        {
            return None;
        }
        let bounds: Vec<Bound> = input_shape
            .iter()
            .enumerate()
            .map(|(k, n)| n.map_or(Bound::Size(k), |n| Bound::Fixed(n as i64)))
            .collect();
        // The leading size stands in as 1 for the strides, which do not
        // depend on it.
        let input_shape: Vec<i64> = input_shape.iter().map(|n| n.map_or(1, |n| n as i64)).collect();
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
        let in_strides = strides(&input_shape)?;
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
                    checked.push((forms[k].clone(), bounds[k], false))
                }
                // A dynamic size is checked `Always`: an index that moves
                // with the domain against it keeps the loop nest.
                Check::Affine(_) if matches!(bounds[k], Bound::Fixed(_)) => {
                    checked.push((forms[k].clone(), bounds[k], moves[k]))
                }
                Check::Affine(_) | Check::Always => return None,
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
            // A float: the operands are f32 or f64.
            overflow: overflow_value(&reindex).0,
        });
    }
    Some(Analysis {
        element,
        operands,
        kept,
        folded,
        output,
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
        gathered: false,
        lanes,
        vectors: 1,
        rows,
    })
}
