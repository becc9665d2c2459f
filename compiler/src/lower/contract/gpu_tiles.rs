//! Contractions on the GPU as shared-memory tiles: the same recognition as
//! the CPU's register tiles ([`super::plan::analyse`]), and the classic
//! SGEMM schedule over the reindexed views, which are never materialized
//! (a convolution's `x` is read through its im2col view, padding included).
//!
//! **Roles.** The output's kept dimensions are sorted by which operand moves
//! with them: the row operand `A` moves with the *rows* (matmul's `i`,
//! convolution's `o`), the column operand `B` with the *columns* (matmul's
//! `j`, convolution's `n, h, w`, whose last is the output's contiguous
//! dimension), and both with the *batch* dimensions; a dimension neither
//! moves with (one of extent 1 moves nothing) is a column. `M`, `N` and `K` are the points of the rows,
//! the columns and the folded dimensions, each flattened row-major.
//!
//! **Tiles.** A block of 16 x 16 threads computes `BM x BN` outputs of one
//! batch point, `BM = 16 tm` and `BN = 16 tn`: thread `(ty, tx)` keeps the
//! `tm x tn` outputs `(ty + 16 i, tx + 16 j)` in registers, so neighbouring
//! threads store neighbouring columns. The fold runs in chunks of
//! [`DEPTH`] steps:
//!
//! ```text
//! acc = 0
//! for each chunk k0:
//!     stage: As[k][m] = A at (m0 + m, k0 + k), Bs[k][n] = B at (n0 + n, k0 + k)
//!     barrier
//!     for k in chunk: acc[i][j] += As[k][ty + 16 i] * Bs[k][tx + 16 j]
//!     barrier
//! store acc where (m0 + ty + 16 i, n0 + tx + 16 j) is inside M x N
//! ```
//!
//! Each thread stages `tm` elements of `As` and `tn` of `Bs` per chunk, in
//! the order that makes neighbouring threads read neighbouring addresses
//! (`k` fastest when the operand is contiguous along the last folded
//! dimension). A staged element reads `overflow_value` where an index is
//! out of bounds (padding), as the CPU's tiles do; rows and columns past
//! `M` and `N` read their first row or column instead, whose products are
//! never stored. The shared arrays' rows are one element longer than a
//! tile, so a chunk staged with `k` fastest does not put every thread's
//! store in one bank.
//!
//! **Order of additions.** The last chunk is as long as what is left of
//! `K`, so every output adds exactly its `K` products, in the
//! interpreter's row-major order of the folded dimensions, from `0.0`:
//! a multiply then an add under [`MathMode::Exact`], a fused multiply-add
//! under fast math.
//!
//! **Tile size.** `tm` and `tn` start at the largest power of two up to 8
//! that a tile of the dimension's extent fills, and the larger is halved
//! while the launch has fewer than [`TARGET_BLOCKS`] blocks, so that a
//! small contraction still spreads over the GPU.
//!
//! Not tiled: fewer than [`THREADS`] outputs, no row dimension (a matrix
//! times a vector), an output whose contiguous dimension both operands
//! move with, and the bounds-checked mode (these loads are not in the
//! access table); such kernels keep the loop nest of `lower::gpu`.
//!
//! The same phases also run on the CPU, one thread after the other between
//! the barriers ([`emit_emulated`]), so that the tests can check their
//! index arithmetic against the loop nest without a GPU.

use super::{
    plan::{Analysis, Operand, analyse},
    vectors::{bound_extent, evaluate, in_range},
};
use crate::{
    Error,
    lower::{
        MathMode,
        access::{Arg, Output},
        emit::Emitter,
        index::delinearize_narrow,
        schedule::{Linear, Schedule},
        types::{gep, memory_type, value_type},
    },
};
use jitc_dialect::kinds::ElementType;
use melior::ir::{BlockRef, Type, Value};

/// Threads along each side of a block.
pub(crate) const SIDE: i64 = 16;
/// Threads per block.
pub(crate) const THREADS: i64 = SIDE * SIDE;
/// Steps of the fold staged per chunk.
pub(crate) const DEPTH: i64 = 16;
/// The most outputs a thread keeps along a side.
const MAX_PER_THREAD: i64 = 8;
/// Tiles shrink until the launch has this many blocks (or one output per
/// thread): two 256-thread blocks per SM of a 132-SM H100 or H200, about.
pub(crate) const TARGET_BLOCKS: i64 = 256;

/// A contraction the GPU runs as shared-memory tiles.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct GpuTiles {
    element: ElementType,
    operands: [Operand; 2],
    /// Which operand moves with the rows (`A`); the other is `B`.
    a: usize,
    /// The row, column and batch dimensions, in the output's index order,
    /// and the folded ones in domain order.
    rows: Vec<usize>,
    columns: Vec<usize>,
    batch: Vec<usize>,
    folded: Vec<usize>,
    /// The output's element offset per domain dimension.
    output: Vec<i64>,
    domain: Vec<i64>,
    /// Outputs per thread along the rows and along the columns.
    tm: i64,
    tn: i64,
}

/// The GPU tiles of the contraction `body` is over `domain` (the CPU's
/// `schedule` says which indices are checked), if it has them; `shape`
/// forces the outputs per thread along the rows and the columns (the
/// tests' way to reach every tile size on small shapes).
pub(crate) fn plan(
    body: BlockRef,
    domain: &[i64],
    schedule: &Schedule,
    shape: Option<(i64, i64)>,
) -> Option<GpuTiles> {
    let Analysis {
        element,
        operands,
        kept,
        folded,
        output,
    } = analyse(body, domain, schedule)?;
    // A dimension of extent 1 moves nothing: its index is always 0.
    let moves = |o: usize, d: usize| {
        let operand: &Operand = &operands[o];
        domain[d] > 1
            && (operand.offset.coefficients[d] != 0
                || operand
                    .checks
                    .iter()
                    .any(|(form, _, _)| form.coefficients[d] != 0))
    };
    let v = *kept.last()?;
    // The column operand moves with the output's contiguous dimension;
    // when neither does, the other way round if operand 0 has no row.
    let roles = |a: usize| {
        let (mut rows, mut columns, mut batch) = (Vec::new(), Vec::new(), Vec::new());
        for &d in &kept {
            match (moves(a, d), moves(1 - a, d)) {
                (true, true) => batch.push(d),
                (true, false) => rows.push(d),
                _ => columns.push(d),
            }
        }
        (a, rows, columns, batch)
    };
    let (a, rows, columns, batch) = match (moves(0, v), moves(1, v)) {
        (true, true) => return None,
        (true, false) => roles(1),
        (false, true) => roles(0),
        (false, false) => Some(roles(0))
            .filter(|(_, rows, _, _)| !rows.is_empty())
            .unwrap_or_else(|| roles(1)),
    };
    if rows.is_empty() {
        return None;
    }
    let [first, second] = <[Operand; 2]>::try_from(operands).ok()?;
    let mut tiles = GpuTiles {
        element,
        operands: [first, second],
        a,
        rows,
        columns,
        batch,
        folded,
        output,
        domain: domain.to_vec(),
        tm: 1,
        tn: 1,
    };
    let (m, n) = (tiles.m(), tiles.n());
    if m.checked_mul(n)? < THREADS {
        return None;
    }
    if let Some((tm, tn)) = shape {
        tiles.tm = tm.clamp(1, MAX_PER_THREAD);
        tiles.tn = tn.clamp(1, MAX_PER_THREAD);
        return Some(tiles);
    }
    // The largest power of two up to 8 whose tile the extent fills.
    let per = |extent: i64| {
        let mut per = MAX_PER_THREAD;
        while per > 1 && SIDE * per > extent {
            per /= 2;
        }
        per
    };
    tiles.tm = per(m);
    tiles.tn = per(n);
    while tiles.blocks() < TARGET_BLOCKS && tiles.tm * tiles.tn > 1 {
        if tiles.tm >= tiles.tn {
            tiles.tm /= 2;
        } else {
            tiles.tn /= 2;
        }
    }
    Some(tiles)
}

impl GpuTiles {
    fn points(&self, dims: &[usize]) -> i64 {
        dims.iter().map(|&d| self.domain[d]).product()
    }

    fn extents(&self, dims: &[usize]) -> Vec<i64> {
        dims.iter().map(|&d| self.domain[d]).collect()
    }

    /// Points of the rows, the columns and the fold.
    fn m(&self) -> i64 {
        self.points(&self.rows)
    }

    fn n(&self) -> i64 {
        self.points(&self.columns)
    }

    fn k(&self) -> i64 {
        self.points(&self.folded)
    }

    /// Rows and columns of a block's tile.
    fn bm(&self) -> i64 {
        SIDE * self.tm
    }

    fn bn(&self) -> i64 {
        SIDE * self.tn
    }

    /// Tiles along the rows and along the columns.
    fn row_tiles(&self) -> i64 {
        (self.m() + self.bm() - 1) / self.bm()
    }

    fn column_tiles(&self) -> i64 {
        (self.n() + self.bn() - 1) / self.bn()
    }

    /// Blocks of the launch: one per tile of each batch point.
    pub(crate) fn blocks(&self) -> i64 {
        self.points(&self.batch)
            .saturating_mul(self.row_tiles())
            .saturating_mul(self.column_tiles())
    }

    /// Elements of operand `o`'s shared array: a chunk's steps by one row
    /// of its tile plus one.
    fn shared_elements(&self, o: usize) -> i64 {
        DEPTH * (self.width(o) + 1)
    }

    /// The tile's extent along operand `o`'s side.
    fn width(&self, o: usize) -> i64 {
        if o == self.a { self.bm() } else { self.bn() }
    }

    /// Bytes of shared memory a block uses.
    pub(crate) fn shared_bytes(&self) -> i64 {
        (self.shared_elements(0) + self.shared_elements(1)) * self.element.byte_width() as i64
    }

    /// What `jitc explain` says of it.
    pub(crate) fn describe(&self) -> String {
        let names = super::plan::dim_names;
        let mut text = format!(
            "rows {} ({}) x columns {} ({}), folding {} ({}) in chunks of {DEPTH}: tiles of {} x {} in blocks of {THREADS} threads, {} x {} outputs each, {} blocks, {} bytes of shared memory",
            names(&self.rows),
            self.m(),
            names(&self.columns),
            self.n(),
            names(&self.folded),
            self.k(),
            self.bm(),
            self.bn(),
            self.tm,
            self.tn,
            self.blocks(),
            self.shared_bytes(),
        );
        if !self.batch.is_empty() {
            text.push_str(&format!(", one batch point of {} per block", names(&self.batch)));
        }
        text
    }

    /// Whether operand `o` is staged with the fold's step fastest between
    /// neighbouring threads: when it is contiguous along the last folded
    /// dimension (matmul's `A[i, k]`), or not contiguous along its side's
    /// last dimension either.
    fn k_fastest(&self, o: usize) -> bool {
        let side = if o == self.a { &self.rows } else { &self.columns };
        let coefficient = |d: Option<&usize>| d.map(|&d| self.operands[o].offset.coefficients[d].abs());
        coefficient(self.folded.last()) == Some(1) || coefficient(side.last()) != Some(1)
    }
}

/// Where a block's tile lies: the batch point's indices and the first row
/// and column.
struct Origin<'c, 'a> {
    ivs: Vec<Option<Value<'c, 'a>>>,
    m0: Value<'c, 'a>,
    n0: Value<'c, 'a>,
}

/// The IR of one tiled contraction: its plan and what its phases read.
struct Phases<'p, 'c, 'a> {
    tiles: &'p GpuTiles,
    /// Per operand: its data pointer, its symbols' values and its sizes
    /// when dynamic (`super::operand_values`).
    pointers: Vec<Value<'c, 'a>>,
    symbols: Vec<Vec<Value<'c, 'a>>>,
    sizes: Vec<Vec<Value<'c, 'a>>>,
    output: &'p Output<'c, 'a>,
    /// The shared arrays of the two operands, as generic pointers.
    shared: [Value<'c, 'a>; 2],
    math: MathMode,
}

impl<'c, 'a> Phases<'_, 'c, 'a> {
    fn new<'p>(
        tiles: &'p GpuTiles,
        arguments: &[(Value<'c, '_>, Arg<'c, 'a>)],
        output: &'p Output<'c, 'a>,
        shared: [Value<'c, 'a>; 2],
        math: MathMode,
    ) -> Result<Phases<'p, 'c, 'a>, Error> {
        let (pointers, symbols, sizes) = super::operand_values(&tiles.operands, arguments)?;
        Ok(Phases {
            tiles,
            pointers,
            symbols,
            sizes,
            output,
            shared,
            math,
        })
    }

    fn element(&self, at: &Emitter<'c, 'a>) -> Type<'c> {
        value_type(at.context, self.tiles.element)
    }

    /// Element `offset` (an `index`) of the array at `base`.
    fn address(
        &self,
        at: &Emitter<'c, 'a>,
        base: Value<'c, 'a>,
        offset: Value<'c, 'a>,
    ) -> Result<Value<'c, 'a>, Error> {
        let i64_type: Type = melior::ir::r#type::IntegerType::new(at.context, 64).into();
        let offset = at.value("arith.index_cast", &[offset], i64_type)?;
        gep(at, base, offset, memory_type(at.context, self.tiles.element))
    }

    /// `value + constant`, as `index`.
    fn plus(
        &self,
        at: &Emitter<'c, 'a>,
        value: Value<'c, 'a>,
        constant: i64,
    ) -> Result<Value<'c, 'a>, Error> {
        if constant == 0 {
            return Ok(value);
        }
        at.value(
            "arith.addi",
            &[value, at.index(constant)?],
            Type::index(at.context),
        )
    }

    /// The tile of `block` (an `index`): tiles of columns vary fastest,
    /// then tiles of rows, then the batch point.
    fn origin(&self, at: &Emitter<'c, 'a>, block: Value<'c, 'a>) -> Result<Origin<'c, 'a>, Error> {
        let tiles = self.tiles;
        let index = Type::index(at.context);
        let columns = at.index(tiles.column_tiles())?;
        let rows = at.index(tiles.row_tiles())?;
        let column_tile = at.value("arith.remui", &[block, columns], index)?;
        let rest = at.value("arith.divui", &[block, columns], index)?;
        let row_tile = at.value("arith.remui", &[rest, rows], index)?;
        let point = at.value("arith.divui", &[rest, rows], index)?;
        // A dimension of extent 1 is at 0 (an operand may still name it).
        let zero = at.index(0)?;
        let mut ivs: Vec<Option<Value>> = tiles
            .domain
            .iter()
            .map(|&extent| (extent == 1).then_some(zero))
            .collect();
        if !tiles.batch.is_empty() {
            let split = delinearize_narrow(at, point, &tiles.extents(&tiles.batch))?;
            for (&d, iv) in tiles.batch.iter().zip(split) {
                ivs[d] = Some(iv);
            }
        }
        Ok(Origin {
            ivs,
            m0: at.value("arith.muli", &[row_tile, at.index(tiles.bm())?], index)?,
            n0: at.value("arith.muli", &[column_tile, at.index(tiles.bn())?], index)?,
        })
    }

    /// Operand `o` at the indices `ivs` (every dimension it moves with has
    /// one): `overflow_value` where a checked index is out of bounds.
    fn load(
        &self,
        at: &Emitter<'c, 'a>,
        o: usize,
        ivs: &[Option<Value<'c, 'a>>],
    ) -> Result<Value<'c, 'a>, Error> {
        let operand = &self.tiles.operands[o];
        let symbols = &self.symbols[o];
        let mut inside: Option<Value> = None;
        for (form, bound, _) in &operand.checks {
            let value = evaluate(at, form, ivs, symbols, 0)?;
            let extent = bound_extent(at, *bound, &self.sizes[o])?;
            inside = Some(at.and_maybe(inside, in_range(at, value, extent)?)?);
        }
        let offset = evaluate(at, &operand.offset, ivs, symbols, 0)?;
        let offset = match inside {
            Some(inside) => at.select(inside, offset, at.index(0)?)?,
            None => offset,
        };
        let address = self.address(at, self.pointers[o], offset)?;
        let x = at.value("llvm.load", &[address], self.element(at))?;
        match inside {
            Some(inside) => at.select(inside, x, at.float(self.element(at), operand.overflow)?),
            None => Ok(x),
        }
    }

    /// Thread `tid` copies its elements of the chunk of `count` steps from
    /// `k0` into the shared arrays.
    fn stage(
        &self,
        at: &Emitter<'c, 'a>,
        tid: Value<'c, 'a>,
        origin: &Origin<'c, 'a>,
        k0: Value<'c, 'a>,
        count: i64,
    ) -> Result<(), Error> {
        let tiles = self.tiles;
        let index = Type::index(at.context);
        for o in [tiles.a, 1 - tiles.a] {
            let (side, extent, x0, per) = if o == tiles.a {
                (&tiles.rows, tiles.m(), origin.m0, tiles.tm)
            } else {
                (&tiles.columns, tiles.n(), origin.n0, tiles.tn)
            };
            let width = tiles.width(o);
            for s in 0..per {
                let e = self.plus(at, tid, THREADS * s)?;
                let (k, x) = if tiles.k_fastest(o) {
                    let depth = at.index(DEPTH)?;
                    (
                        at.value("arith.remui", &[e, depth], index)?,
                        at.value("arith.divui", &[e, depth], index)?,
                    )
                } else {
                    let width = at.index(width)?;
                    (
                        at.value("arith.divui", &[e, width], index)?,
                        at.value("arith.remui", &[e, width], index)?,
                    )
                };
                // A partial chunk stages only its steps.
                let body = if count < DEPTH {
                    let wanted = at.cmpi(6, k, at.index(count)?)?;
                    at.if_then(wanted)?
                } else {
                    *at
                };
                let xg = body.value("arith.addi", &[x0, x], index)?;
                // Rows or columns past the end read the first one.
                let xg = if extent % width == 0 {
                    xg
                } else {
                    let inside = body.cmpi(6, xg, body.index(extent)?)?;
                    body.select(inside, xg, body.index(0)?)?
                };
                let kg = body.value("arith.addi", &[k0, k], index)?;
                let mut ivs = origin.ivs.clone();
                for (&d, iv) in side
                    .iter()
                    .zip(delinearize_narrow(&body, xg, &tiles.extents(side))?)
                {
                    ivs[d] = Some(iv);
                }
                for (&d, iv) in
                    tiles
                        .folded
                        .iter()
                        .zip(delinearize_narrow(&body, kg, &tiles.extents(&tiles.folded))?)
                {
                    ivs[d] = Some(iv);
                }
                let value = self.load(&body, o, &ivs)?;
                let row = body.value("arith.muli", &[k, body.index(width + 1)?], index)?;
                let slot = body.value("arith.addi", &[row, x], index)?;
                let address = self.address(&body, self.shared[o], slot)?;
                body.op("llvm.store", &[value, address], &[], &[])?;
                if count < DEPTH {
                    body.finish()?;
                }
            }
        }
        Ok(())
    }

    /// Thread `tid`'s `y` and `x` in the block.
    fn thread(
        &self,
        at: &Emitter<'c, 'a>,
        tid: Value<'c, 'a>,
    ) -> Result<(Value<'c, 'a>, Value<'c, 'a>), Error> {
        let index = Type::index(at.context);
        let side = at.index(SIDE)?;
        Ok((
            at.value("arith.divui", &[tid, side], index)?,
            at.value("arith.remui", &[tid, side], index)?,
        ))
    }

    /// Thread `tid` folds `count` staged steps into its accumulators
    /// `accs` (`tm x tn`, row-major); returns the new ones.
    fn compute(
        &self,
        at: &Emitter<'c, 'a>,
        tid: Value<'c, 'a>,
        count: i64,
        accs: &[Value<'c, 'a>],
    ) -> Result<Vec<Value<'c, 'a>>, Error> {
        let tiles = self.tiles;
        let element = self.element(at);
        let (ty, tx) = self.thread(at, tid)?;
        let mut accs = accs.to_vec();
        let (a, b) = (tiles.a, 1 - tiles.a);
        for k in 0..count {
            let read = |o: usize, thread: Value<'c, 'a>, n: i64| -> Result<Vec<Value<'c, 'a>>, Error> {
                let row = k * (tiles.width(o) + 1);
                (0..n)
                    .map(|i| {
                        let slot = self.plus(at, thread, row + SIDE * i)?;
                        let address = self.address(at, self.shared[o], slot)?;
                        at.value("llvm.load", &[address], element)
                    })
                    .collect()
            };
            let xs = read(a, ty, tiles.tm)?;
            let ys = read(b, tx, tiles.tn)?;
            for (i, x) in xs.iter().enumerate() {
                for (j, y) in ys.iter().enumerate() {
                    let acc = &mut accs[i * tiles.tn as usize + j];
                    *acc = match self.math {
                        MathMode::Fast => at.value("math.fma", &[*x, *y, *acc], element)?,
                        MathMode::Exact => {
                            let product = at.value("arith.mulf", &[*x, *y], element)?;
                            at.value("arith.addf", &[*acc, product], element)?
                        }
                    };
                }
            }
        }
        Ok(accs)
    }

    /// Thread `tid` stores its accumulators where they are inside the
    /// output.
    fn store(
        &self,
        at: &Emitter<'c, 'a>,
        tid: Value<'c, 'a>,
        origin: &Origin<'c, 'a>,
        accs: &[Value<'c, 'a>],
    ) -> Result<(), Error> {
        let tiles = self.tiles;
        let index = Type::index(at.context);
        let (ty, tx) = self.thread(at, tid)?;
        let first_row = at.value("arith.addi", &[origin.m0, ty], index)?;
        let first_column = at.value("arith.addi", &[origin.n0, tx], index)?;
        let form = Linear {
            coefficients: tiles.output.clone(),
            constant: 0,
        };
        for i in 0..tiles.tm {
            for j in 0..tiles.tn {
                let m = self.plus(at, first_row, SIDE * i)?;
                let n = self.plus(at, first_column, SIDE * j)?;
                let mut inside = None;
                if tiles.m() % tiles.bm() != 0 {
                    inside = Some(at.cmpi(6, m, at.index(tiles.m())?)?);
                }
                if tiles.n() % tiles.bn() != 0 {
                    let within = at.cmpi(6, n, at.index(tiles.n())?)?;
                    inside = Some(at.and_maybe(inside, within)?);
                }
                let body = match inside {
                    Some(inside) => at.if_then(inside)?,
                    None => *at,
                };
                let mut ivs = origin.ivs.clone();
                for (dims, linear) in [(&tiles.rows, m), (&tiles.columns, n)] {
                    for (&d, iv) in dims
                        .iter()
                        .zip(delinearize_narrow(&body, linear, &tiles.extents(dims))?)
                    {
                        ivs[d] = Some(iv);
                    }
                }
                let offset = evaluate(&body, &form, &ivs, &[], 0)?;
                let address = self.address(&body, self.output.pointer, offset)?;
                let value = accs[(i * tiles.tn + j) as usize];
                body.op("llvm.store", &[value, address], &[], &[])?;
                if inside.is_some() {
                    body.finish()?;
                }
            }
        }
        Ok(())
    }

    /// `tm x tn` zeros.
    fn zeros(&self, at: &Emitter<'c, 'a>) -> Result<Vec<Value<'c, 'a>>, Error> {
        let zero = at.float(self.element(at), 0.0)?;
        Ok(vec![zero; (self.tiles.tm * self.tiles.tn) as usize])
    }
}

/// Emits the GPU entry's body for `tiles`: thread `tid` (`threadIdx.x`)
/// of block `block` (`blockIdx.x`), with the two operands' shared arrays
/// (`shared(o, element, count)` makes operand `o`'s, of
/// [`GpuTiles::shared_elements`]`(o)` elements).
#[allow(clippy::too_many_arguments)]
pub(crate) fn emit_gpu<'c, 'a>(
    top: &Emitter<'c, 'a>,
    tiles: &GpuTiles,
    arguments: &[(Value<'c, '_>, Arg<'c, 'a>)],
    output: &Output<'c, 'a>,
    tid: Value<'c, 'a>,
    block: Value<'c, 'a>,
    shared: &mut dyn FnMut(usize, ElementType, i64) -> Result<Value<'c, 'a>, Error>,
    math: MathMode,
) -> Result<(), Error> {
    let shared = [
        shared(0, tiles.element, tiles.shared_elements(0))?,
        shared(1, tiles.element, tiles.shared_elements(1))?,
    ];
    let phases = Phases::new(tiles, arguments, output, shared, math)?;
    let barrier = |at: &Emitter| at.op("nvvm.barrier0", &[], &[], &[]).map(|_| ());
    let index = Type::index(top.context);
    let origin = phases.origin(top, block)?;
    let mut accs = phases.zeros(top)?;
    let (full, rest) = (tiles.k() / DEPTH, tiles.k() % DEPTH);
    if full > 0 {
        let (chunks, c, carried, results) = top.for_carried(top.index(0)?, top.index(full)?, &accs)?;
        let k0 = chunks.value("arith.muli", &[c, chunks.index(DEPTH)?], index)?;
        phases.stage(&chunks, tid, &origin, k0, DEPTH)?;
        barrier(&chunks)?;
        let next = phases.compute(&chunks, tid, DEPTH, &carried)?;
        // Every thread has read the chunk before the next one is staged.
        barrier(&chunks)?;
        chunks.yield_values(&next)?;
        accs = results;
    }
    if rest > 0 {
        let k0 = top.index(full * DEPTH)?;
        phases.stage(top, tid, &origin, k0, rest)?;
        barrier(top)?;
        accs = phases.compute(top, tid, rest, &accs)?;
    }
    phases.store(top, tid, &origin, &accs)
}

/// Emits `tiles` for the CPU as the GPU runs them: a loop over the blocks,
/// and in each, every phase between two barriers as a loop over the
/// block's threads, the shared arrays and each thread's accumulators in
/// stack memory. Only the tests lower kernels so
/// (`LowerOptions::emulate_gpu_tiles`), calling them once over the whole
/// domain.
pub(crate) fn emit_emulated<'c, 'a>(
    top: &Emitter<'c, 'a>,
    tiles: &GpuTiles,
    arguments: &[(Value<'c, '_>, Arg<'c, 'a>)],
    output: &Output<'c, 'a>,
    math: MathMode,
) -> Result<(), Error> {
    let bytes = tiles.element.byte_width() as i64;
    let outputs = tiles.tm * tiles.tn;
    let shared = [
        super::stack(top, tiles.shared_elements(0) * bytes)?,
        super::stack(top, tiles.shared_elements(1) * bytes)?,
    ];
    let accumulators = super::stack(top, THREADS * outputs * bytes)?;
    let phases = Phases::new(tiles, arguments, output, shared, math)?;
    let index = Type::index(top.context);
    let element = phases.element(top);
    // Thread `tid`'s accumulators, in and out of memory.
    let slot = |at: &Emitter<'c, 'a>, tid: Value<'c, 'a>, t: i64| -> Result<Value<'c, 'a>, Error> {
        let first = at.value("arith.muli", &[tid, at.index(outputs)?], index)?;
        let at_t = phases.plus(at, first, t)?;
        phases.address(at, accumulators, at_t)
    };
    let read = |at: &Emitter<'c, 'a>, tid: Value<'c, 'a>| -> Result<Vec<Value<'c, 'a>>, Error> {
        (0..outputs)
            .map(|t| at.value("llvm.load", &[slot(at, tid, t)?], element))
            .collect()
    };
    let write = |at: &Emitter<'c, 'a>, tid: Value<'c, 'a>, accs: &[Value<'c, 'a>]| -> Result<(), Error> {
        for (t, acc) in accs.iter().enumerate() {
            at.op("llvm.store", &[*acc, slot(at, tid, t as i64)?], &[], &[])?;
        }
        Ok(())
    };
    // A phase: every thread of the block, one after the other.
    let each = |at: &Emitter<'c, 'a>,
                phase: &dyn Fn(&Emitter<'c, 'a>, Value<'c, 'a>) -> Result<(), Error>|
     -> Result<(), Error> {
        let (threads, tid) = at.for_range(at.index(0)?, at.index(THREADS)?)?;
        phase(&threads, tid)?;
        threads.finish()
    };
    let (blocks, block) = top.for_range(top.index(0)?, top.index(tiles.blocks())?)?;
    let origin = phases.origin(&blocks, block)?;
    each(&blocks, &|at, tid| write(at, tid, &phases.zeros(at)?))?;
    let chunk = |at: &Emitter<'c, 'a>, k0: Value<'c, 'a>, count: i64| -> Result<(), Error> {
        each(at, &|at, tid| phases.stage(at, tid, &origin, k0, count))?;
        each(at, &|at, tid| {
            let accs = phases.compute(at, tid, count, &read(at, tid)?)?;
            write(at, tid, &accs)
        })
    };
    let (full, rest) = (tiles.k() / DEPTH, tiles.k() % DEPTH);
    if full > 0 {
        let (chunks, c) = blocks.for_range(blocks.index(0)?, blocks.index(full)?)?;
        let k0 = chunks.value("arith.muli", &[c, chunks.index(DEPTH)?], index)?;
        chunk(&chunks, k0, DEPTH)?;
        chunks.finish()?;
    }
    if rest > 0 {
        chunk(&blocks, blocks.index(full * DEPTH)?, rest)?;
    }
    each(&blocks, &|at, tid| {
        phases.store(at, tid, &origin, &read(at, tid)?)
    })?;
    blocks.finish()
}

#[cfg(test)]
mod tests {
    //! The tiles' phases, run on the CPU thread after thread between the
    //! barriers ([`super::emit_emulated`]), against the loop nest (which
    //! the runtime's tests check against the interpreter): bit for bit in
    //! exact math, and within the fused multiply-add bound of
    //! `docs/semantics.md` in fast math. Every case must be tiled, so the
    //! comparison is never the loop nest against itself. The GPU runs the
    //! same phases with barriers between them (`runtime/tests/cuda.rs`,
    //! on a machine with a GPU).

    use crate::{
        codegen::{CpuTarget, jit, to_llvm_dialect},
        lower::{Buffer, KernelStatus, LowerOptions, MathMode},
    };
    use jitc_dialect::kinds::ElementType;
    use jitc_test_support::{Rng, contraction_source as contraction};

    /// What one run of a kernel gives: its output's elements, and the
    /// tiles' description when it was tiled.
    struct Outcome {
        values: Vec<f64>,
        tiles: Option<String>,
        /// Whether the kernel was lowered as the GPU's tiles emulated.
        emulated: bool,
        /// Points folded into each output.
        depth: usize,
    }

    /// Runs the only kernel of `source` (fused), lowered with `options`, on
    /// inputs drawn from `seed` (their magnitudes when `absolute`).
    fn run(source: &str, options: &LowerOptions, seed: u64, absolute: bool) -> Outcome {
        let context = crate::new_context().unwrap();
        let mut module = crate::parse_module(&context, source).unwrap();
        crate::fuse(&context, &mut module).unwrap();
        let tiled = crate::lower::gpu_tiled(&module);
        let lowered = to_llvm_dialect(&context, &module, options).unwrap();
        // The emulation keeps its shared arrays and accumulators on the
        // stack; the loop nest has no stack buffer.
        let emulated = lowered.module.as_operation().to_string().contains("llvm.alloca");
        let artifact = jit(lowered, &CpuTarget::default()).unwrap();
        let names: Vec<&str> = artifact.names().collect();
        let [name] = names[..] else {
            panic!("one kernel expected, got {names:?} of\n{source}")
        };
        let (function, signature) = artifact.get(name).unwrap();
        let mut rng = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
        let mut buffers: Vec<Vec<u8>> = Vec::new();
        let mut shapes: Vec<Vec<i64>> = Vec::new();
        let fill = |element: ElementType, count: usize, rng: &mut Rng| -> Vec<u8> {
            let mut bytes = Vec::new();
            for _ in 0..count {
                // Full f32 mantissas from -16 to 16, so that a fused
                // multiply-add rounds differently from a multiply and an add.
                let mut x = f64::from(((rng.next() >> 11) as f64 / (1u64 << 53) as f64 * 32.0 - 16.0) as f32);
                if absolute {
                    x = x.abs();
                }
                match element {
                    ElementType::F64 => bytes.extend_from_slice(&x.to_ne_bytes()),
                    _ => bytes.extend_from_slice(&(x as f32).to_ne_bytes()),
                }
            }
            bytes
        };
        for input in &signature.inputs {
            match input {
                Buffer::Index => buffers.push((rng.below(7) as i64 - 1).to_ne_bytes().to_vec()),
                Buffer::Tensor(shape, element) => {
                    buffers.push(fill(*element, shape.iter().product(), &mut rng));
                }
                Buffer::Dynamic(shape, element) => {
                    let sizes: Vec<i64> = shape
                        .iter()
                        .map(|d| d.map_or(2 + rng.below(4) as i64, |n| n as i64))
                        .collect();
                    buffers.push(fill(*element, sizes.iter().product::<i64>() as usize, &mut rng));
                    shapes.push(sizes);
                }
            }
        }
        let (shape, element) = match &signature.outputs[..] {
            [Buffer::Tensor(shape, element)] => (shape.clone(), *element),
            other => panic!("one static result expected, got {other:?}"),
        };
        let count: usize = shape.iter().product();
        buffers.push(vec![0xFF; count * element.byte_width()]);
        let mut status: KernelStatus = [0; 2];
        let mut pointers: Vec<*mut u8> = buffers.iter_mut().map(|b| b.as_mut_ptr()).collect();
        pointers.extend(shapes.iter_mut().map(|s| s.as_mut_ptr().cast::<u8>()));
        assert!(signature.sizes_slot().is_none(), "a static domain expected");
        pointers.push(status.as_mut_ptr().cast());
        // SAFETY: the buffers are laid out as the kernel's signature says
        // (inputs, the output, the shapes of dynamic inputs, the status
        // record), each as large as its shape, and live across the call.
        unsafe { function(pointers.as_ptr(), 0, signature.outer) };
        assert_eq!(status, [0, 0], "the kernel failed");
        let output = buffers.last().unwrap();
        let values = match element {
            ElementType::F64 => output
                .chunks_exact(8)
                .map(|c| f64::from_ne_bytes(c.try_into().unwrap()))
                .collect(),
            _ => output
                .chunks_exact(4)
                .map(|c| f64::from(f32::from_ne_bytes(c.try_into().unwrap())))
                .collect(),
        };
        let depth = signature.points as usize / count.max(1);
        Outcome {
            values,
            tiles: tiled.first().map(|(_, tiles, _)| tiles.clone()),
            emulated,
            depth,
        }
    }

    fn options(math: MathMode, emulate: bool, shape: Option<(i64, i64)>) -> LowerOptions {
        LowerOptions {
            math,
            emulate_gpu_tiles: emulate,
            gpu_tile_shape: shape,
            ..LowerOptions::default()
        }
    }

    /// `source` with the magnitude of each `overflow_value`, for `Σ|a b|`.
    fn absolute_padding(source: &str) -> String {
        source.replace("overflow_value = -", "overflow_value = ")
    }

    /// `source`'s tiles agree with its loop nest on inputs from `seed`: bit
    /// for bit in exact math, within `2 γ(k) Σ|a b|` in fast math; with
    /// the tile size `plan` chooses, then with 2 x 8, 8 x 2 and 4 x 4
    /// outputs per thread. Returns the tiles' description.
    fn check(source: &str, seed: u64) -> String {
        let nest = run(source, &options(MathMode::Exact, false, None), seed, false);
        assert!(!nest.emulated);
        let magnitudes = run(
            &absolute_padding(source),
            &options(MathMode::Exact, false, None),
            seed,
            true,
        );
        let tiles = nest
            .tiles
            .clone()
            .unwrap_or_else(|| panic!("not tiled:\n{source}"));
        let unit = if source.contains("xf64>") {
            f64::EPSILON / 2.0
        } else {
            f64::from(f32::EPSILON) / 2.0
        };
        let k = nest.depth as f64;
        for shape in [None, Some((2, 8)), Some((8, 2)), Some((4, 4))] {
            let exact = run(source, &options(MathMode::Exact, true, shape), seed, false);
            assert!(exact.emulated, "the tiles were not emulated:\n{source}");
            assert_eq!(exact.values.len(), nest.values.len());
            for (n, (got, want)) in exact.values.iter().zip(&nest.values).enumerate() {
                assert!(
                    got.to_bits() == want.to_bits(),
                    "exact math, output {n}: tiles {got}, loop nest {want} ({tiles}, {shape:?}, seed {seed}):\n{source}"
                );
            }
            let fast = run(source, &options(MathMode::Fast, true, shape), seed, false);
            for (n, ((got, want), size)) in fast
                .values
                .iter()
                .zip(&nest.values)
                .zip(&magnitudes.values)
                .enumerate()
            {
                let bound = 2.0 * (k * unit / (1.0 - k * unit)) * size;
                assert!(
                    (got - want).abs() <= bound,
                    "fast math, output {n}: tiles {got}, loop nest {want}, bound {bound} ({tiles}, {shape:?}, seed {seed}):\n{source}"
                );
            }
        }
        tiles
    }

    /// `items` in a random order.
    fn shuffled<T>(mut items: Vec<T>, rng: &mut Rng) -> Vec<T> {
        for i in (1..items.len()).rev() {
            items.swap(i, rng.below(i + 1));
        }
        items
    }

    /// A random contraction of several dimensions, in any order: 0 to 2
    /// batch dimensions (both operands index them), 1 or 2 of rows (the
    /// first operand only), 1 or 2 of columns (the second only), 1 to 3
    /// folded (both); each operand's indices in a random order, the first
    /// operand's shifted past its ends (reading a padding value) or read
    /// backwards, and the output's dimensions in a random order (a row or
    /// column last).
    fn random_contraction(rng: &mut Rng) -> String {
        let mut roles = Vec::new();
        roles.extend(std::iter::repeat_n('b', rng.below(3)));
        roles.extend(std::iter::repeat_n('r', 1 + rng.below(2)));
        roles.extend(std::iter::repeat_n('c', 1 + rng.below(2)));
        roles.extend(std::iter::repeat_n('k', 1 + rng.below(3)));
        let roles = shuffled(roles, rng);
        let mut extents: Vec<usize> = roles
            .iter()
            .map(|role| match role {
                'b' => 1 + rng.below(3),
                'k' => 1 + rng.below(7),
                _ => 1 + rng.below(24),
            })
            .collect();
        // At least one block's worth of outputs.
        let side = |role: char, extents: &[usize]| -> usize {
            roles
                .iter()
                .zip(extents)
                .filter(|(r, _)| **r == role)
                .map(|(_, e)| e)
                .product()
        };
        for role in ['r', 'c'] {
            if side(role, &extents) < 16 {
                let d = roles.iter().position(|&r| r == role).unwrap();
                extents[d] = 16 + rng.below(20);
            }
        }
        let of = |wanted: &[char]| -> Vec<usize> {
            (0..roles.len()).filter(|&d| wanted.contains(&roles[d])).collect()
        };
        let a_dims = shuffled(of(&['b', 'r', 'k']), rng);
        let b_dims = shuffled(of(&['b', 'c', 'k']), rng);
        // (An output whose contiguous dimension is a batch one is not tiled.)
        let mut y_dims = shuffled(of(&['b', 'r', 'c']), rng);
        if let Some(k) = y_dims.iter().position(|&d| roles[d] != 'b') {
            let last = y_dims.len() - 1;
            y_dims.swap(k, last);
        }
        let a_map: Vec<String> = a_dims
            .iter()
            .map(|&d| match rng.below(4) {
                0 => format!("d{d} - 1"),
                1 => format!("d{d} + 1"),
                2 => format!("{} - d{d}", extents[d] - 1),
                _ => format!("d{d}"),
            })
            .collect();
        let names = |dims: &[usize]| {
            dims.iter()
                .map(|d| format!("d{d}"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let shape = |dims: &[usize]| dims.iter().map(|&d| extents[d]).collect::<Vec<_>>();
        let element = if rng.below(4) == 0 { "f64" } else { "f32" };
        contraction(
            &extents,
            (&shape(&a_dims), &a_map.join(", ")),
            (&shape(&b_dims), &names(&b_dims)),
            (&shape(&y_dims), &names(&y_dims)),
            element,
            Some([0.0, 0.5, -2.0][rng.below(3)]),
        )
    }

    #[test]
    fn random_contractions_of_several_dimensions_match_the_loop_nest() {
        let cases = jitc_test_support::cases("JITC_GPU_TILE_CASES", 12);
        let mut rng = Rng(0x5EED_0002);
        for case in 0..cases {
            check(&random_contraction(&mut rng), 100 + case);
        }
    }

    #[test]
    fn a_batched_matmul_and_a_transposed_output_match_the_loop_nest() {
        // Batch d0: both operands move with it.
        let batched = contraction(
            &[3, 20, 24, 19],
            (&[3, 20, 19], "d0, d1, d3"),
            (&[3, 19, 24], "d0, d3, d2"),
            (&[3, 20, 24], "d0, d1, d2"),
            "f32",
            None,
        );
        assert!(check(&batched, 1).contains("one batch point of d0 per block"));
        // The output's contiguous dimension is matmul's i: a and b swap
        // roles.
        let transposed = contraction(
            &[33, 18, 23],
            (&[33, 23], "d0, d2"),
            (&[23, 18], "d2, d1"),
            (&[18, 33], "d1, d0"),
            "f32",
            None,
        );
        assert!(check(&transposed, 2).starts_with("rows d1 (18) x columns d0 (33)"));
        // Dimensions of 1 among the batch, the rows and the columns, and a
        // fold of one dimension of 1 beside one of 9.
        let ones = contraction(
            &[1, 40, 1, 30, 1, 9, 1],
            (&[1, 40, 9, 1], "d0, d1, d5, d6"),
            (&[9, 1, 30, 1], "d5, d2, d3, d6"),
            (&[1, 40, 1, 30, 1], "d0, d1, d2, d3, d4"),
            "f64",
            None,
        );
        check(&ones, 3);
        // The output's last dimension is a broadcast neither operand moves
        // with, and operand 0 moves with no row: the roles swap.
        let broadcast = contraction(
            &[30, 20, 12],
            (&[12], "d2"),
            (&[30, 12], "d0, d2"),
            (&[30, 20], "d0, d1"),
            "f32",
            None,
        );
        assert!(check(&broadcast, 11).starts_with("rows d0 (30) x columns d1 (20)"));
    }

    /// A convolution of `x` (n, c, h, w) by `w` (o, c, kh, kw) with
    /// `stride`, `dilation` and `pad`, reading `padding` outside `x`.
    #[allow(clippy::too_many_arguments)]
    fn convolution(
        (n, c, h, w): (usize, usize, usize, usize),
        (o, kh, kw): (usize, usize, usize),
        stride: usize,
        dilation: usize,
        pad: usize,
        padding: f64,
    ) -> String {
        let out = |size: usize, k: usize| (size + 2 * pad - dilation * (k - 1) - 1) / stride + 1;
        let (oh, ow) = (out(h, kh), out(w, kw));
        // Domain: d0 n, d1 o, d2 oh, d3 ow, d4 c, d5 kh, d6 kw.
        let index = |out: &str, k: &str| format!("d{out} * {stride} + d{k} * {dilation} - {pad}");
        contraction(
            &[n, o, oh, ow, c, kh, kw],
            (
                &[n, c, h, w],
                &format!("d0, d4, {}, {}", index("2", "5"), index("3", "6")),
            ),
            (&[o, c, kh, kw], "d1, d4, d5, d6"),
            (&[n, o, oh, ow], "d0, d1, d2, d3"),
            "f32",
            Some(padding),
        )
    }

    #[test]
    fn padded_strided_and_dilated_convolutions_match_the_loop_nest() {
        let plain = convolution((2, 3, 9, 9), (8, 3, 3), 1, 1, 1, 0.0);
        let tiles = check(&plain, 4);
        // x is the column operand: its im2col view over (n, oh, ow).
        assert!(
            tiles.starts_with("rows d1 (8) x columns d0, d2, d3 (162), folding d4, d5, d6 (27)"),
            "{tiles}"
        );
        check(&convolution((1, 4, 15, 14), (5, 3, 2), 2, 1, 1, 0.5), 5);
        check(&convolution((2, 2, 12, 12), (17, 3, 3), 1, 2, 2, -1.25), 6);
    }

    #[test]
    fn flipped_and_offset_maps_match_the_loop_nest() {
        // a read backwards along the fold, b shifted by one row past its
        // end (read as padding? no: b has no padding, so keep it inside).
        let flipped = contraction(
            &[24, 20, 18],
            (&[24, 18], "d0, 17 - d2"),
            (&[19, 20], "d2 + 1, d1"),
            (&[24, 20], "d0, d1"),
            "f32",
            None,
        );
        check(&flipped, 7);
        // a's rows shifted past both ends, reading the padding value.
        let shifted = contraction(
            &[30, 17, 21],
            (&[30, 21], "d0 - 2, d2 + 3"),
            (&[21, 17], "d2, d1"),
            (&[30, 17], "d0, d1"),
            "f32",
            Some(0.75),
        );
        check(&shifted, 8);
    }

    #[test]
    fn an_operand_read_at_a_symbol_matches_the_loop_nest() {
        // The RNN's projection: xs[t, i, k] W[k, j], with t an index
        // argument, checked against the sequence's length (static, then
        // dynamic); t is drawn from -1 to 5, so some runs read padding.
        for (xs, seed) in [("tensor<4x20x24xf32>", 9), ("tensor<?x20x24xf32>", 10)] {
            let source = format!(
                r#"func.func @main(%xs: {xs}, %w: tensor<24x32xf32>, %t: index) -> tensor<20x32xf32> {{
  %x = "meta.reindex"(%xs, %t) {{indices = affine_map<(i, j, k)[t] -> (t, i, k)>}} : ({xs}, index) -> tensor<20x32x24xf32>
  %wb = "meta.reindex"(%w) {{indices = affine_map<(i, j, k) -> (k, j)>}} : (tensor<24x32xf32>) -> tensor<20x32x24xf32>
  %p = "meta.binary"(%x, %wb) {{kind = "mul"}} : (tensor<20x32x24xf32>, tensor<20x32x24xf32>) -> tensor<20x32x24xf32>
  %y = "meta.reindex_reduce"(%p) {{kind = "add", indices = affine_map<(i, j, k) -> (i, j)>}} : (tensor<20x32x24xf32>) -> tensor<20x32xf32>
  return %y : tensor<20x32xf32>
}}"#
            );
            for run in 0..4 {
                check(&source, seed + 100 * run);
            }
        }
    }

    #[test]
    fn small_or_vector_contractions_are_not_tiled() {
        let context = crate::new_context().unwrap();
        let tiled = |source: &str| {
            let mut module = crate::parse_module(&context, source).unwrap();
            crate::fuse(&context, &mut module).unwrap();
            !crate::lower::gpu_tiled(&module).is_empty()
        };
        // Fewer outputs than a block has threads.
        let small = contraction(
            &[10, 20, 64],
            (&[10, 64], "d0, d2"),
            (&[64, 20], "d2, d1"),
            (&[10, 20], "d0, d1"),
            "f32",
            None,
        );
        assert!(!tiled(&small));
        // A matrix times a vector: no row dimension.
        let vector = contraction(
            &[512, 64],
            (&[64], "d1"),
            (&[64, 512], "d1, d0"),
            (&[512], "d0"),
            "f32",
            None,
        );
        assert!(!tiled(&vector));
        // Integers are not contractions.
        let integers = contraction(
            &[32, 32, 8],
            (&[32, 8], "d0, d2"),
            (&[8, 32], "d2, d1"),
            (&[32, 32], "d0, d1"),
            "i32",
            None,
        );
        assert!(!tiled(&integers));
        // A large one is, with tiles that leave the GPU busy.
        let large = contraction(
            &[1024, 1024, 1024],
            (&[1024, 1024], "d0, d2"),
            (&[1024, 1024], "d2, d1"),
            (&[1024, 1024], "d0, d1"),
            "f32",
            None,
        );
        let mut module = crate::parse_module(&context, &large).unwrap();
        crate::fuse(&context, &mut module).unwrap();
        let described = crate::lower::gpu_tiled(&module);
        assert_eq!(
            described[0].1,
            "rows d0 (1024) x columns d1 (1024), folding d2 (1024) in chunks of 16: tiles of 64 x 64 in blocks of 256 threads, 4 x 4 outputs each, 256 blocks, 8320 bytes of shared memory"
        );
    }
}
