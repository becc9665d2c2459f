//! The lazy graph: what a frontend links to build and run tensor programs
//! from code, as Jittor's users do (its "unified graph execution",
//! `papers/jittor.txt`).
//!
//! A [`Var`] records a meta-operator (reindex, reindex_reduce, unary,
//! binary, select) or holds data; nothing runs until a value is fetched.
//! A fetch ([`fetch`], [`Var::fetch`]):
//! 1. cuts out the nodes the fetched values need that are not computed
//!    yet, together with every pending value a live handle holds whose
//!    computation shares a node with them (so work is done once, and ops
//!    recorded in different iterations of a user's loop fuse with each
//!    other: Jittor's cross-iteration fusion); when that function fails,
//!    the fetched values and the state writes that joined are computed
//!    alone, so a held value that fails fails only its own fetch;
//! 2. turns it into one function in the textual contract: data the nodes
//!    read become its arguments (so new data of the same shapes reuses the
//!    compilation), every cut node a live handle holds becomes a result;
//! 3. looks the function up in a cache keyed by the graph's structure,
//!    types and attributes (a byte encoding built from the nodes, never by
//!    printing or parsing IR), or generates its text, parses it in
//!    process, verifies, fuses and compiles it for the CPU ([`CpuModule`]);
//! 4. runs it (host plan and native kernels), and keeps each result in
//!    its node, which drops the recorded op and so frees what only it
//!    held.
//!
//! State is named ([`set_state`], [`read_state`], [`write_state`]): a
//! write is deferred, and committed by the fetch that computes it, only if
//! that fetch succeeds; reading a piece of state gives the last write
//! recorded, so the iterations of a training loop chain lazily and fuse
//! when fetched together.
//!
//! Memory is reference-counted: a node lives while a handle or a pending
//! node that reads it does. One graph per thread (a `Var` is not `Send`),
//! with an MLIR context of its own; when the thread ends and nothing
//! compiled in it is left, the context goes back to a pool that later
//! threads take from (`Lease`), so threads that come and go reuse a few
//! contexts.
//!
//! [`dump`] writes any fetch as a `.mlir` file with its inputs as `.npy`
//! files, which `jitc run` reproduces: the bug report a frontend user
//! sends. `JITC_DUMP_DIR` makes every fetch write one.
//!
//! Index expressions are Jittor's: the output index `iN` of a reindex
//! (the input index of a reindex_reduce), integers, `+`, `-`, `*` by a
//! constant, `floordiv`, `ceildiv` and `mod` by a constant: the affine
//! expressions of `docs/semantics.md`, with `iN` for `dN`. An overflow
//! condition compares two of them (`i0 < 1`, `i1 >= 5`, `i0 == i1`).
//! C++'s `%` and `/` (Jittor's own spelling) are refused with the word to
//! write, since they round toward zero where the affine operators round
//! toward negative infinity; arithmetic that leaves 64 bits over the op's
//! indices is refused when the op is recorded (MLIR would fold its
//! constants modulo 2^64 as it parses).
//!
//! Example: a row sum broadcast back and added.
//!
//! ```
//! use jitc_interp::{Scalar, Tensor};
//! use jitc_runtime::graph::Var;
//! let x = Var::new(Tensor::splat(vec![2, 3], Scalar::F32(1.0)));
//! let sums = x.reindex_reduce("add", &[2], &["i0"]).unwrap();
//! let back = sums.reindex(&[2, 3], &["i0"], None, &[]).unwrap();
//! let y = x.binary("add", &back).unwrap();
//! assert_eq!(y.fetch().unwrap().get(5), Scalar::F32(4.0));
//! ```

use crate::{CpuModule, Error, lru::Lru};
use jitc_compiler::{
    CodegenOptions, DiagnosticCollector,
    autodiff::{self, Primal, Recorded},
    new_context, parse_module,
};
use jitc_dialect::kinds::{BinaryKind, ElementType, Kind, ReduceKind, UnaryKind};
use jitc_interp::{StateStore, Tensor, Value};
use melior::{
    Context,
    ir::{Attribute, Module},
};
use rustc_hash::FxBuildHasher;
use std::{
    cell::{Cell, RefCell},
    collections::HashMap,
    fmt::Write as _,
    path::{Path, PathBuf},
    rc::{Rc, Weak},
    sync::{Arc, Mutex},
};

/// A handle to a value of the lazy graph: data, or a recorded op whose
/// result is computed on the first fetch that needs it.
pub struct Var(Rc<Node>);

struct Node {
    /// Creation order: a node's inputs are always older.
    id: u64,
    shape: Vec<usize>,
    element: ElementType,
    op: RefCell<Op>,
    /// Handles ([`Var`]s) to this node: a node with none is an
    /// intermediate a fetch need not keep.
    handles: Cell<usize>,
    /// The last walk of the graph that reached this node (`Runtime::epoch`
    /// numbers them), so a walk needs no set of visited nodes.
    mark: Cell<u64>,
    /// The node's position in the function of the last cut it was in.
    slot: Cell<u32>,
    /// Where a frontend recorded it ([`set_site`]): its location in the
    /// text of a trace ([`stage_merged`]).
    site: Option<Rc<str>>,
    /// A branch a trace took ([`decision`]): the guard, and the `not` of a
    /// branch that went false.
    decision: Cell<bool>,
}

enum Op {
    /// A known value.
    Data(Arc<Tensor>),
    Reindex {
        input: Rc<Node>,
        /// `(d0, d1) -> (d1)`.
        map: String,
        /// `0x00000000 : f32`.
        overflow: Option<String>,
        /// `affine_set<...>`s.
        conditions: Vec<String>,
    },
    Reduce {
        input: Rc<Node>,
        kind: ReduceKind,
        map: String,
        /// `affine_set<...>`s over the input's indices: elements dropped.
        conditions: Vec<String>,
    },
    /// A splat constant (`arith.constant dense<v>`), never an argument.
    Splat(ElementValue),
    /// `meta.guard` on a rank-0 `i1`; its value is the condition's.
    Guard {
        condition: Rc<Node>,
        reason: String,
    },
    Unary {
        kind: UnaryKind,
        input: Rc<Node>,
    },
    Cast {
        input: Rc<Node>,
    },
    Binary {
        kind: BinaryKind,
        lhs: Rc<Node>,
        rhs: Rc<Node>,
    },
    Select {
        condition: Rc<Node>,
        then: Rc<Node>,
        otherwise: Rc<Node>,
    },
}

impl Op {
    fn inputs(&self) -> Vec<&Rc<Node>> {
        match self {
            Op::Data(_) | Op::Splat(_) => Vec::new(),
            Op::Reindex { input, .. }
            | Op::Reduce { input, .. }
            | Op::Unary { input, .. }
            | Op::Cast { input }
            | Op::Guard { condition: input, .. } => {
                vec![input]
            }
            Op::Binary { lhs, rhs, .. } => vec![lhs, rhs],
            Op::Select {
                condition,
                then,
                otherwise,
            } => vec![condition, then, otherwise],
        }
    }

    /// Its inputs, taken out of it; it is left a placeholder with none.
    /// (The op that goes drops its own references; the ones returned keep
    /// the inputs alive, so no drop happens inside this call.)
    fn take_inputs(&mut self) -> Vec<Rc<Node>> {
        let op = std::mem::replace(self, Op::Splat(ElementValue::Bool(false)));
        op.inputs().into_iter().map(Rc::clone).collect()
    }
}

impl Drop for Node {
    /// Drops the nodes only this one held one after another, not by
    /// recursion: a chain of 200,000 recorded ops (a loop that never
    /// fetched) overflowed the stack.
    fn drop(&mut self) {
        let mut stack = self.op.get_mut().take_inputs();
        while let Some(node) = stack.pop() {
            if let Ok(mut node) = Rc::try_unwrap(node) {
                stack.append(&mut node.op.get_mut().take_inputs());
            }
        }
    }
}

/// What the graph of this thread has done, for tests and tuning.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct GraphStats {
    /// Fetches that ran something.
    pub fetches: u64,
    /// Fetches that compiled their function.
    pub compiles: u64,
    /// Fetches whose function came from the cache.
    pub cache_hits: u64,
    /// Kernels run, summed over fetches (each fetch runs each kernel of its
    /// function once per call; loops are not unrolled here).
    pub kernels: u64,
}

/// A compiled fetch.
struct Executable {
    module: Module<'static>,
    /// The function as staged, in the textual contract (after `meta-merge`
    /// and `meta-dce` when it merged traces), before fusion.
    source: String,
    /// Compiled for the CPU; `None` on the interpreter backend.
    compiled: Option<CpuModule>,
    kernels: usize,
    /// The context `module` lives in, held until `module` is dropped (the
    /// last field, so it is dropped last).
    _lease: Rc<Lease>,
}

/// A thread's MLIR context, on loan from [`CONTEXTS`]: when the thread's
/// graph and every function compiled in it are gone, the context goes
/// back for the next thread to use, instead of being lost (an MLIR context
/// with jitc's dialects is about half a megabyte, so a thread per request
/// lost that much per request).
struct Lease(&'static Context);

/// Contexts no thread holds. Each is used by one thread at a time: its
/// lease's thread, until nothing made in it is left, then whichever
/// thread takes it from here (an MLIR context is not tied to the thread
/// that made it).
static CONTEXTS: Mutex<Vec<Pooled>> = Mutex::new(Vec::new());

/// How many contexts the graphs of all threads have made.
static CONTEXTS_MADE: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// How many MLIR contexts the lazy graphs of this process have made: one
/// per thread using a graph at the same time, at most (a thread's goes
/// back to a pool when the thread ends and nothing compiled in it is
/// left).
pub fn contexts_made() -> usize {
    CONTEXTS_MADE.load(std::sync::atomic::Ordering::Relaxed)
}

/// A context in [`CONTEXTS`].
struct Pooled(&'static Context);

// SAFETY: a pooled context is referenced by no module, attribute or type
// of any thread (its lease, the last holder of its thread's objects, was
// dropped), so handing it to another thread shares nothing; MLIR contexts
// may be used from any thread, one at a time.
unsafe impl Send for Pooled {}

impl Lease {
    /// A context from [`CONTEXTS`], else a new one (which lives as long
    /// as the process).
    fn take() -> Result<Rc<Self>, Error> {
        let pooled = CONTEXTS.lock().ok().and_then(|mut pool| pool.pop());
        let context = match pooled {
            Some(Pooled(context)) => context,
            None => {
                let context = Box::leak(Box::new(new_context()?));
                CONTEXTS_MADE.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                context
            }
        };
        Ok(Rc::new(Self(context)))
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        if let Ok(mut pool) = CONTEXTS.lock() {
            pool.push(Pooled(self.0));
        }
    }
}

/// What runs a fetch's function.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Backend {
    /// Fused and compiled for this CPU.
    #[default]
    Cpu,
    /// The reference interpreter, unfused: slow, and the oracle to compare
    /// with when a result looks wrong.
    Interpreter,
}

/// A named piece of state: its committed value, and the write recorded
/// since (a handle, so fetches compute it), committed once computed.
struct State {
    committed: Arc<Tensor>,
    pending: Option<Var>,
}

/// An affine map's or set's text, parsed: `Ok((dimensions, results))` of
/// a map, or why it does not parse.
type Parsed = Result<(usize, usize), String>;

/// The lazy graph of one thread.
struct Runtime {
    context: &'static Context,
    /// Parsed affine maps and sets by text.
    parsed: RefCell<HashMap<String, Parsed>>,
    /// Compiled fetches by [`Cut::key`] (FxHash: a hit hashes a few
    /// kilobytes, and the keys are jitc's own, not an attacker's), the
    /// [`CACHED_FETCHES`] used most recently.
    cache: RefCell<Lru<Vec<u8>, Rc<Executable>, FxBuildHasher>>,
    /// Nodes a handle held when they were recorded, not computed yet.
    pending: RefCell<Vec<Weak<Node>>>,
    /// Named state: each piece's committed value, and the write recorded
    /// since, not computed yet.
    state: RefCell<HashMap<String, State>>,
    stats: Cell<GraphStats>,
    next_id: Cell<u64>,
    /// Numbers walks of the graph (see `Node::mark`).
    epoch: Cell<u64>,
    options: RefCell<CodegenOptions>,
    backend: Cell<Backend>,
    dumps: Cell<u64>,
    /// The site new nodes are recorded at ([`set_site`]).
    site: RefCell<Option<Rc<str>>>,
    /// `context`'s lease (the last field: the cache's modules go first).
    lease: Rc<Lease>,
}

thread_local! {
    static RUNTIME: RefCell<Option<Rc<Runtime>>> = const { RefCell::new(None) };
}

fn runtime() -> Result<Rc<Runtime>, Error> {
    // (Gone once the thread's locals are destroyed: an `atexit` handler
    // of a C program gets an error, not a panic.)
    RUNTIME
        .try_with(|cell| {
            if let Some(runtime) = cell.borrow().as_ref() {
                return Ok(Rc::clone(runtime));
            }
            let lease = Lease::take()?;
            let runtime = Rc::new(Runtime {
                context: lease.0,
                parsed: RefCell::new(HashMap::new()),
                cache: RefCell::new(Lru::new(CACHED_FETCHES)),
                pending: RefCell::new(Vec::new()),
                state: RefCell::new(HashMap::new()),
                stats: Cell::new(GraphStats::default()),
                next_id: Cell::new(0),
                epoch: Cell::new(0),
                options: RefCell::new(CodegenOptions::default()),
                backend: Cell::new(Backend::Cpu),
                dumps: Cell::new(0),
                site: RefCell::new(None),
                lease,
            });
            *cell.borrow_mut() = Some(Rc::clone(&runtime));
            Ok(runtime)
        })
        .map_err(|_| bad("the thread is ending: its graph is gone"))?
}

/// How many compiled functions each thread's graph keeps for later
/// fetches of the same shape of graph, the least recently used dropped
/// first (a program whose shapes keep changing would otherwise keep every
/// compilation it made).
pub const CACHED_FETCHES: usize = 256;

/// How many compiled functions this thread's graph keeps now (at most
/// [`CACHED_FETCHES`]).
pub fn cached_fetches() -> usize {
    runtime().map_or(0, |r| r.cache.borrow().len())
}

/// What the graph of this thread has done so far.
pub fn stats() -> GraphStats {
    runtime().map(|r| r.stats.get()).unwrap_or_default()
}

/// Sets how later compilations of this thread's graph are done (math mode,
/// bounds checks); compilations already cached keep theirs.
pub fn set_options(options: CodegenOptions) -> Result<(), Error> {
    let runtime = runtime()?;
    *runtime.options.borrow_mut() = options;
    runtime.cache.borrow_mut().clear();
    Ok(())
}

/// Sets what runs later fetches of this thread's graph.
pub fn set_backend(backend: Backend) -> Result<(), Error> {
    let runtime = runtime()?;
    if runtime.backend.replace(backend) != backend {
        runtime.cache.borrow_mut().clear();
    }
    Ok(())
}

/// What runs fetches of this thread's graph.
pub fn backend() -> Backend {
    runtime().map(|r| r.backend.get()).unwrap_or_default()
}

fn bad(message: impl Into<String>) -> Error {
    Error::Graph(message.into())
}

/// The kind `text` names, or an error naming `what` (`reduction`, `unary
/// kind`) and every spelling.
fn parse_kind<K: Kind>(text: &str, what: &str) -> Result<K, Error> {
    K::parse(text).ok_or_else(|| bad(format!("unknown {what} '{text}' (one of {})", K::spellings())))
}

/// An error unless `kind` (spelled `label` in the message) takes operands
/// of `element`.
fn check_operands<K: Kind>(kind: K, label: &str, element: ElementType) -> Result<(), Error> {
    let class = kind.operand_class();
    if class.accepts(element) {
        Ok(())
    } else {
        Err(bad(format!("{label} takes {}, not {element}", class.describe())))
    }
}

fn type_text(shape: &[usize], element: ElementType) -> String {
    let mut text = String::from("tensor<");
    for d in shape {
        let _ = write!(text, "{d}x");
    }
    text + element.name() + ">"
}

/// Jittor's index expression, with `iN` for the map's dimension `dN`
/// (`N` below `dims`).
fn expression(text: &str, dims: usize) -> Result<String, Error> {
    // Parsers recurse per parenthesis, sign and term (MLIR's too): bounded,
    // so that no expression can overflow a thread's stack.
    if text.len() > MAX_EXPRESSION_BYTES {
        return Err(bad(format!(
            "an index expression of {} bytes is longer than the {MAX_EXPRESSION_BYTES} jitc takes",
            text.len()
        )));
    }
    let (mut depth, mut signs) = (0usize, 0usize);
    for c in text.chars().filter(|c| !c.is_ascii_whitespace()) {
        match c {
            '(' => depth += 1,
            ')' => depth = depth.saturating_sub(1),
            '-' => signs += 1,
            _ => signs = 0,
        }
        if depth > MAX_NESTING || signs > MAX_NESTING {
            let head: String = text.chars().take(40).collect();
            return Err(bad(format!(
                "index expression '{head}...' nests more than {MAX_NESTING} parentheses or signs deep"
            )));
        }
    }
    let mut out = String::new();
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c.is_ascii_alphabetic() || c == '_' {
            let mut word = String::from(c);
            while let Some(&next) = chars.peek() {
                if next.is_ascii_alphanumeric() || next == '_' {
                    word.push(next);
                    chars.next();
                } else {
                    break;
                }
            }
            match word.strip_prefix('i').and_then(|n| n.parse::<usize>().ok()) {
                Some(n) if n < dims => {
                    let _ = write!(out, "d{n}");
                }
                Some(n) => {
                    return Err(bad(format!(
                        "index expression '{text}': i{n} is not an index of this op (it has {dims}: i0 to i{})",
                        dims.saturating_sub(1)
                    )));
                }
                None if ["floordiv", "ceildiv", "mod"].contains(&word.as_str()) => out.push_str(&word),
                None => {
                    return Err(bad(format!(
                        "index expression '{text}': '{word}' is not an index (i0, i1, ...) or an operator"
                    )));
                }
            }
        } else if c == '%' || c == '/' {
            // C++'s operators (Jittor's expressions are C++) round toward
            // zero; the affine ones toward negative infinity. They differ
            // where the left side is negative, so neither is rewritten.
            let (name, rounding) = if c == '%' {
                (
                    "mod",
                    "is never negative, where C++'s % is negative for a negative left side",
                )
            } else {
                (
                    "floordiv",
                    "rounds toward negative infinity, where C++'s / truncates toward zero",
                )
            };
            return Err(bad(format!(
                "index expression '{text}': write '{c}' as '{name}' (which {rounding})"
            )));
        } else if c.is_ascii_digit() || c.is_ascii_whitespace() || "+-*()".contains(c) {
            out.push(c);
        } else {
            // A comma would add a result to the map, a bracket a symbol.
            return Err(bad(format!(
                "index expression '{text}': '{c}' is not part of one (integers, i0, i1, ..., +, -, *, \
                 floordiv, ceildiv, mod and parentheses)"
            )));
        }
    }
    if out.trim().is_empty() {
        return Err(bad("an index expression is empty"));
    }
    Ok(out)
}

/// The longest index expression jitc takes, in bytes.
const MAX_EXPRESSION_BYTES: usize = 4096;

/// The deepest an index expression may nest parentheses, or repeat a sign.
const MAX_NESTING: usize = 64;

/// Checks that the arithmetic of `expression` (an affine expression over
/// `d0, d1, ...`, as [`expression`] writes it) stays within 64 bits for
/// every index of `domain`, step by step: MLIR folds the constants of an
/// affine expression as it parses it, modulo 2^64, so `(d1 * 2^62) * 4`
/// would become `d1 * 0` before the verifier could see the overflow. What
/// does not parse here is left for MLIR's parser to report.
fn check_index_arithmetic(text: &str, expression: &str, domain: &[usize]) -> Result<(), Error> {
    struct Parser<'a> {
        tokens: Vec<&'a str>,
        at: usize,
        domain: &'a [usize],
    }
    /// An interval of values, within i64 once checked, and whether it is
    /// a constant (an index of extent 1 is one value, but no constant).
    type Range = (i128, i128, bool);
    enum Problem {
        Overflow,
        Divisor(i128),
    }
    impl Parser<'_> {
        fn peek(&self) -> Option<&str> {
            self.tokens.get(self.at).copied()
        }
        fn next(&mut self) -> Option<&str> {
            self.at += 1;
            self.tokens.get(self.at - 1).copied()
        }
        fn sum(&mut self) -> Option<Result<Range, Problem>> {
            let mut left = self.product()?;
            while let Some(op) = self.peek().filter(|t| *t == "+" || *t == "-") {
                let op = op.to_owned();
                self.next();
                let right = self.product()?;
                left = left.and_then(|(a, b, p)| {
                    let (c, d, q) = right?;
                    let (low, high) = if op == "+" { (a + c, b + d) } else { (a - d, b - c) };
                    fits((low, high, p && q))
                });
            }
            Some(left)
        }
        fn product(&mut self) -> Option<Result<Range, Problem>> {
            let mut left = self.unary()?;
            while let Some(op) = self
                .peek()
                .filter(|t| ["*", "floordiv", "ceildiv", "mod"].contains(t))
            {
                let op = op.to_owned();
                self.next();
                let right = self.unary()?;
                left = left.and_then(|(a, b, p)| {
                    let (c, d, q) = right?;
                    match op.as_str() {
                        "*" => {
                            let products = [a * c, a * d, b * c, b * d];
                            fits((
                                *products.iter().min().unwrap_or(&0),
                                *products.iter().max().unwrap_or(&0),
                                p && q,
                            ))
                        }
                        // The verifier refuses a divisor that is not a
                        // positive constant; a constant one is refused
                        // here, when the op is recorded (MLIR refuses an
                        // index as a divisor as it parses).
                        _ if q && c <= 0 => Err(Problem::Divisor(c)),
                        _ if q => Ok(match op.as_str() {
                            "floordiv" => (a.div_euclid(c), b.div_euclid(c), p),
                            "ceildiv" => (-(-a).div_euclid(c), -(-b).div_euclid(c), p),
                            // Already within [0, c): unchanged.
                            _ if a >= 0 && b < c => (a, b, p),
                            _ => (0, c - 1, false),
                        }),
                        _ => Ok((a.min(0), b.max(0), false)),
                    }
                });
            }
            Some(left)
        }
        fn unary(&mut self) -> Option<Result<Range, Problem>> {
            if self.peek() == Some("-") {
                self.next();
                return Some(self.unary()?.and_then(|(a, b, p)| fits((-b, -a, p))));
            }
            let token = self.next()?;
            if token == "(" {
                let inner = self.sum()?;
                return (self.next() == Some(")")).then_some(inner);
            }
            if let Some(k) = token.strip_prefix('d').and_then(|k| k.parse::<usize>().ok()) {
                let extent = *self.domain.get(k)? as i128;
                return Some(Ok((0, (extent - 1).max(0), false)));
            }
            let value = token.parse::<i128>().ok()?;
            Some(fits((value, value, true)))
        }
    }
    fn fits((low, high, constant): Range) -> Result<Range, Problem> {
        let range = i128::from(i64::MIN)..=i128::from(i64::MAX);
        if range.contains(&low) && range.contains(&high) {
            Ok((low, high, constant))
        } else {
            Err(Problem::Overflow)
        }
    }
    // Tokens: numbers, names, and one-character operators (`expression`
    // writes ASCII only; anything else is left to MLIR's parser).
    if !expression.is_ascii() {
        return Ok(());
    }
    let mut tokens = Vec::new();
    let bytes = expression.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i];
        if c.is_ascii_whitespace() {
            i += 1;
        } else if c.is_ascii_alphanumeric() || c == b'_' {
            let start = i;
            while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'_') {
                i += 1;
            }
            tokens.push(&expression[start..i]);
        } else {
            tokens.push(&expression[i..i + 1]);
            i += 1;
        }
    }
    let mut parser = Parser {
        tokens,
        at: 0,
        domain,
    };
    match parser.sum() {
        Some(Err(Problem::Divisor(divisor))) if parser.at == parser.tokens.len() => Err(bad(format!(
            "index expression '{text}' divides by {divisor}: a divisor must be a positive constant"
        ))),
        Some(Err(Problem::Overflow)) if parser.at == parser.tokens.len() => Err(bad(format!(
            "index expression '{text}': its arithmetic leaves 64 bits over the op's indices \
             (domain {domain:?})"
        ))),
        _ => Ok(()),
    }
}

/// [`expression`] over the indices of `domain`, its arithmetic checked
/// ([`check_index_arithmetic`]; an error names `label`).
fn index_expression(text: &str, domain: &[usize], label: &str) -> Result<String, Error> {
    let translated = expression(text, domain.len())?;
    check_index_arithmetic(label, &translated, domain)?;
    Ok(translated)
}

/// An overflow condition (`i0 < 1`) as an affine set over the indices of
/// `domain`.
fn condition(text: &str, domain: &[usize]) -> Result<String, Error> {
    let dims = domain.len();
    if let Some(word) = text
        .split(|c: char| !c.is_ascii_alphanumeric() && c != '_')
        .find(|w| ["and", "or", "not"].contains(w))
    {
        return Err(bad(format!(
            "overflow condition '{text}': '{word}' does not join comparisons; the conditions are a \
             list, one comparison each, and any that holds drops the element"
        )));
    }
    let operators = [">=", "<=", "==", "!=", ">", "<"];
    let (at, operator) = operators
        .iter()
        .filter_map(|op| text.find(op).map(|at| (at, *op)))
        .min_by_key(|(at, op)| (*at, std::cmp::Reverse(op.len())))
        .ok_or_else(|| {
            bad(format!(
                "overflow condition '{text}' compares nothing (use <, <=, >, >= or ==)"
            ))
        })?;
    let (left, right) = (&text[..at], &text[at + operator.len()..]);
    let (a, b) = (
        index_expression(left, domain, text)?,
        index_expression(right, domain, text)?,
    );
    let constraint = match operator {
        ">=" => format!("({a}) - ({b}) >= 0"),
        ">" => format!("({a}) - ({b}) - 1 >= 0"),
        "<=" => format!("({b}) - ({a}) >= 0"),
        "<" => format!("({b}) - ({a}) - 1 >= 0"),
        "==" => format!("({a}) - ({b}) == 0"),
        _ => return Err(bad(format!("overflow condition '{text}': != is not affine"))),
    };
    Ok(format!("affine_set<({}) : ({constraint})>", dimensions(dims)))
}

fn dimensions(dims: usize) -> String {
    (0..dims).map(|d| format!("d{d}")).collect::<Vec<_>>().join(", ")
}

impl Runtime {
    /// Parses `attribute` (an `affine_map<...>` or `affine_set<...>`)
    /// once; `(dimensions, results)` of a map.
    fn check_map(&self, text: &str) -> Result<(usize, usize), Error> {
        if let Some(known) = self.parsed.borrow().get(text) {
            return known.clone().map_err(bad);
        }
        let collector = DiagnosticCollector::attach(self.context);
        let parsed = Attribute::parse(self.context, text);
        let result = match parsed {
            Some(attribute) if text.starts_with("affine_map") => {
                jitc_dialect::ops::affine_map_attribute(attribute)
                    .map(|map| (map.dim_count(), map.result_count()))
                    .ok_or_else(|| format!("'{text}' is not an affine map"))
            }
            Some(_) => Ok((0, 0)),
            None => Err(collector.take().first().map_or_else(
                || format!("'{text}' does not parse"),
                |d| format!("'{text}': {}", d.message),
            )),
        };
        self.parsed.borrow_mut().insert(text.to_owned(), result.clone());
        result.map_err(bad)
    }

    /// The affine map `(d0, ...) -> (indices...)` over the indices of `domain` of
    /// `op`'s Jittor index expressions, checked to parse.
    fn map(&self, indices: &[&str], domain: &[usize], op: &str) -> Result<String, Error> {
        let dims = domain.len();
        let exprs = indices
            .iter()
            .map(|e| index_expression(e, domain, e))
            .collect::<Result<Vec<_>, Error>>()?;
        let map = format!("({}) -> ({})", dimensions(dims), exprs.join(", "));
        self.check_map(&format!("affine_map<{map}>"))
            .map_err(|e| bad(format!("{op} indices {indices:?}: {e}")))?;
        Ok(map)
    }

    fn node(&self, shape: Vec<usize>, element: ElementType, op: Op) -> Result<Var, Error> {
        // Only what a 64-bit index addresses: most recorded values are
        // never materialized (fused away), and those that are meet the
        // element limit when they are allocated.
        if jitc_dialect::kinds::extent_bytes(shape.iter().map(|&d| d as u64), element.byte_width() as u64)
            .is_none()
        {
            return Err(bad(format!(
                "a value of shape {shape:?} is larger than a 64-bit index can address"
            )));
        }
        let id = self.next_id.get();
        self.next_id.set(id + 1);
        let pending = !matches!(op, Op::Data(_));
        let node = Rc::new(Node {
            id,
            shape,
            element,
            op: RefCell::new(op),
            handles: Cell::new(1),
            mark: Cell::new(0),
            slot: Cell::new(0),
            site: self.site.borrow().clone(),
            decision: Cell::new(false),
        });
        if pending {
            let mut list = self.pending.borrow_mut();
            // Forget dead entries now and then, so the list stays as long
            // as what is alive.
            if list.len() >= 64 && list.len().is_power_of_two() {
                list.retain(|weak| weak.strong_count() > 0);
            }
            list.push(Rc::downgrade(&node));
        }
        Ok(Var(node))
    }
}

impl Clone for Var {
    fn clone(&self) -> Self {
        self.0.handles.set(self.0.handles.get() + 1);
        Var(Rc::clone(&self.0))
    }
}

impl Drop for Var {
    fn drop(&mut self) {
        self.0.handles.set(self.0.handles.get() - 1);
    }
}

impl std::fmt::Debug for Var {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let state = if matches!(*self.0.op.borrow(), Op::Data(_)) {
            "computed"
        } else {
            "pending"
        };
        write!(f, "Var({}, {state})", type_text(&self.0.shape, self.0.element))
    }
}

impl Var {
    /// A handle to `tensor`.
    pub fn new(tensor: Tensor) -> Self {
        Self::from_arc(Arc::new(tensor))
    }

    /// A handle to `tensor`, shared.
    pub fn from_arc(tensor: Arc<Tensor>) -> Self {
        let (shape, element) = (tensor.shape().to_vec(), tensor.element_type());
        runtime()
            .and_then(|r| r.node(shape.clone(), element, Op::Data(Arc::clone(&tensor))))
            .unwrap_or_else(|_| {
                // Without a context the graph cannot run anything; data
                // still has a handle.
                Var(Rc::new(Node {
                    id: 0,
                    shape,
                    element,
                    op: RefCell::new(Op::Data(tensor)),
                    handles: Cell::new(1),
                    mark: Cell::new(0),
                    slot: Cell::new(0),
                    site: None,
                    decision: Cell::new(false),
                }))
            })
    }

    /// The value's shape.
    pub fn shape(&self) -> &[usize] {
        &self.0.shape
    }

    /// The value's element type.
    pub fn element(&self) -> ElementType {
        self.0.element
    }

    /// Whether the value is known (data, or computed by a fetch).
    pub fn is_computed(&self) -> bool {
        matches!(*self.0.op.borrow(), Op::Data(_))
    }

    /// `meta.reindex`: a value of `shape` whose element at index
    /// `(i0, i1, ...)` is this value's element at `indices` (one Jittor
    /// index expression per dimension of this value), or `overflow_value`
    /// (default 0) where that is out of bounds or where one of
    /// `overflow_conditions` holds.
    pub fn reindex(
        &self,
        shape: &[usize],
        indices: &[&str],
        overflow_value: Option<f64>,
        overflow_conditions: &[&str],
    ) -> Result<Var, Error> {
        self.reindex_with(
            shape,
            indices,
            overflow_value.map(Scalar::Float),
            overflow_conditions,
        )
    }

    /// [`Self::reindex`], with an overflow value that may be an integer
    /// (kept exact: an `i64` past 2^53); a value the element type cannot
    /// hold is an error.
    pub fn reindex_with(
        &self,
        shape: &[usize],
        indices: &[&str],
        overflow_value: Option<Scalar>,
        overflow_conditions: &[&str],
    ) -> Result<Var, Error> {
        let runtime = runtime()?;
        let rank = self.0.shape.len();
        if indices.len() != rank {
            return Err(bad(format!(
                "reindex of a rank-{rank} value needs {rank} index expressions, one per dimension, got {}",
                indices.len()
            )));
        }
        let map = runtime.map(indices, shape, "reindex")?;
        let conditions = overflow_conditions
            .iter()
            .map(|c| {
                let set = condition(c, shape)?;
                runtime
                    .check_map(&set)
                    .map_err(|e| bad(format!("overflow condition '{c}': {e}")))?;
                Ok(set)
            })
            .collect::<Result<Vec<_>, Error>>()?;
        let overflow = overflow_value.map(|v| literal(v, self.0.element)).transpose()?;
        runtime.node(
            shape.to_vec(),
            self.0.element,
            Op::Reindex {
                input: Rc::clone(&self.0),
                map,
                overflow,
                conditions,
            },
        )
    }

    /// `meta.reindex_reduce`: a value of `shape` whose element at each
    /// index combines (`kind`: add, mul, max, min, and, or) this value's
    /// elements whose `indices` (one Jittor index expression per dimension
    /// of `shape`, over this value's indices `i0, i1, ...`) are that index.
    pub fn reindex_reduce(&self, kind: &str, shape: &[usize], indices: &[&str]) -> Result<Var, Error> {
        let runtime = runtime()?;
        let kind: ReduceKind = parse_kind(kind, "reduction")?;
        check_operands(kind, &format!("reduction '{}'", kind.name()), self.0.element)?;
        if indices.len() != shape.len() {
            return Err(bad(format!(
                "reindex_reduce to a rank-{} value needs {} index expressions, one per dimension, got {}",
                shape.len(),
                shape.len(),
                indices.len()
            )));
        }
        let map = runtime.map(indices, &self.0.shape, "reindex_reduce")?;
        runtime.node(
            shape.to_vec(),
            self.0.element,
            Op::Reduce {
                input: Rc::clone(&self.0),
                kind,
                map,
                conditions: Vec::new(),
            },
        )
    }

    /// `meta.unary` of `kind` (`exp`, `neg`, ...; see `docs/semantics.md`);
    /// [`Self::cast`] for `cast`.
    pub fn unary(&self, kind: &str) -> Result<Var, Error> {
        let runtime = runtime()?;
        let parsed: UnaryKind = parse_kind(kind, "unary kind")?;
        if parsed == UnaryKind::Cast {
            return Err(bad("a cast needs its target type: use cast"));
        }
        check_operands(parsed, &format!("unary '{kind}'"), self.0.element)?;
        runtime.node(
            self.0.shape.clone(),
            self.0.element,
            Op::Unary {
                kind: parsed,
                input: Rc::clone(&self.0),
            },
        )
    }

    /// `meta.unary` `cast` to `element`.
    pub fn cast(&self, element: ElementType) -> Result<Var, Error> {
        runtime()?.node(
            self.0.shape.clone(),
            element,
            Op::Cast {
                input: Rc::clone(&self.0),
            },
        )
    }

    /// `meta.binary` of `kind` with `other`, of the same shape and element
    /// type; comparisons give `i1`.
    pub fn binary(&self, kind: &str, other: &Var) -> Result<Var, Error> {
        let runtime = runtime()?;
        let parsed: BinaryKind = parse_kind(kind, "binary kind")?;
        if self.0.shape != other.0.shape || self.0.element != other.0.element {
            return Err(bad(format!(
                "binary '{kind}' of {} and {}: operands must have one shape and element type",
                type_text(&self.0.shape, self.0.element),
                type_text(&other.0.shape, other.0.element)
            )));
        }
        check_operands(parsed, &format!("binary '{kind}'"), self.0.element)?;
        runtime.node(
            self.0.shape.clone(),
            parsed.result_element(self.0.element),
            Op::Binary {
                kind: parsed,
                lhs: Rc::clone(&self.0),
                rhs: Rc::clone(&other.0),
            },
        )
    }

    /// `meta.ternary` `select`: where this `i1` value holds, `then`'s
    /// element, else `otherwise`'s.
    pub fn select(&self, then: &Var, otherwise: &Var) -> Result<Var, Error> {
        let runtime = runtime()?;
        if self.0.element != ElementType::I1 {
            return Err(bad(format!(
                "select's condition must be i1, not {}",
                self.0.element
            )));
        }
        let same = |v: &Var| v.0.shape == self.0.shape;
        if !same(then) || !same(otherwise) || then.0.element != otherwise.0.element {
            return Err(bad(format!(
                "select of {} between {} and {}: all three must have one shape, the two choices one element type",
                type_text(&self.0.shape, self.0.element),
                type_text(&then.0.shape, then.0.element),
                type_text(&otherwise.0.shape, otherwise.0.element)
            )));
        }
        runtime.node(
            self.0.shape.clone(),
            then.0.element,
            Op::Select {
                condition: Rc::clone(&self.0),
                then: Rc::clone(&then.0),
                otherwise: Rc::clone(&otherwise.0),
            },
        )
    }

    /// The value, computed if it is not yet (see [`fetch`]).
    pub fn fetch(&self) -> Result<Arc<Tensor>, Error> {
        Ok(fetch(&[self])?.remove(0))
    }
}

/// A number a constant is made of: an integer, kept exact, or a float.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Scalar {
    /// An integer (an `i64` element is kept exact, past 2^53).
    Int(i64),
    /// A float.
    Float(f64),
}

impl From<f64> for Scalar {
    fn from(value: f64) -> Self {
        Self::Float(value)
    }
}

impl From<i64> for Scalar {
    fn from(value: i64) -> Self {
        Self::Int(value)
    }
}

impl Scalar {
    /// The element of type `element` this number is: a float rounds to the
    /// nearest, a float made an integer is truncated toward zero (as
    /// NumPy's casts are), any nonzero number is `true`. An integer out of
    /// the element's range, or a NaN or infinite float made an integer, is
    /// an error, as in NumPy.
    fn element(self, element: ElementType) -> Result<ElementValue, Error> {
        Ok(match (element, self) {
            (ElementType::F32, Self::Int(i)) => ElementValue::F32(i as f32),
            (ElementType::F32, Self::Float(f)) => ElementValue::F32(f as f32),
            (ElementType::F64, Self::Int(i)) => ElementValue::F64(i as f64),
            (ElementType::F64, Self::Float(f)) => ElementValue::F64(f),
            (ElementType::I1, Self::Int(i)) => ElementValue::Bool(i != 0),
            (ElementType::I1, Self::Float(f)) => ElementValue::Bool(f != 0.0),
            (ElementType::I32 | ElementType::I64, value) => {
                let (low, high) = if element == ElementType::I32 {
                    (i64::from(i32::MIN), i64::from(i32::MAX))
                } else {
                    (i64::MIN, i64::MAX)
                };
                let integer = match value {
                    Self::Int(i) => i,
                    Self::Float(f) if f.is_finite() => {
                        const TWO_63: f64 = 9_223_372_036_854_775_808.0;
                        let t = f.trunc();
                        // i64's range as floats: [-2^63, 2^63).
                        if !(-TWO_63..TWO_63).contains(&t) {
                            return Err(bad(format!("{f:?} is out of range for {}", element.name())));
                        }
                        t as i64
                    }
                    Self::Float(f) => {
                        return Err(bad(format!("cannot make {f:?} an integer ({})", element.name())));
                    }
                };
                if !(low..=high).contains(&integer) {
                    return Err(bad(format!(
                        "{} is out of range for {}",
                        match value {
                            Self::Int(i) => i.to_string(),
                            Self::Float(f) => format!("{f:?}"),
                        },
                        element.name()
                    )));
                }
                ElementValue::Int(integer)
            }
        })
    }
}

/// One element's value, of its type.
#[derive(Debug, Clone, Copy, PartialEq)]
enum ElementValue {
    F32(f32),
    F64(f64),
    Int(i64),
    Bool(bool),
}

impl ElementValue {
    /// Its text in `dense<...>` (floats by their bits, so every value,
    /// NaNs included, prints exactly).
    fn text(self) -> String {
        match self {
            Self::F32(f) => format!("0x{:08X}", f.to_bits()),
            Self::F64(f) => format!("0x{:016X}", f.to_bits()),
            Self::Int(i) => i.to_string(),
            Self::Bool(b) => b.to_string(),
        }
    }

    /// Bytes that tell it apart from every other value of its type (a
    /// cache key's).
    fn key(self) -> [u8; 8] {
        match self {
            Self::F32(f) => u64::from(f.to_bits()).to_le_bytes(),
            Self::F64(f) => f.to_bits().to_le_bytes(),
            Self::Int(i) => i.to_le_bytes(),
            Self::Bool(b) => u64::from(b).to_le_bytes(),
        }
    }
}

/// `value` as an attribute of type `element` (`0x00000000 : f32`, `true`).
fn literal(value: Scalar, element: ElementType) -> Result<String, Error> {
    Ok(match value.element(element)? {
        ElementValue::Bool(b) => b.to_string(),
        other => format!("{} : {}", other.text(), element.name()),
    })
}

/// The part of the graph one fetch computes.
struct Cut {
    /// Nodes to compute, oldest first.
    nodes: Vec<Rc<Node>>,
    /// Known values they read: the function's arguments.
    arguments: Vec<Rc<Node>>,
    /// Nodes a handle holds: the function's results.
    results: Vec<Rc<Node>>,
    /// Data nodes read as argument `k` of `arguments` without being it (a
    /// merged trace's copy of a value another node already passes).
    aliases: Vec<(Rc<Node>, usize)>,
    /// Arguments that are read from named state instead
    /// (`meta.state_read`), by position in `arguments`, and results that
    /// are written to it instead (`meta.state_write`), by position in
    /// `results`.
    state: StateBinding,
}

/// `text` fit for a string literal: quotes, backslashes and control
/// characters become `'`.
fn quoted(text: &str) -> String {
    text.chars()
        .map(|c| {
            if c == '"' || c == '\\' || c.is_control() {
                '\''
            } else {
                c
            }
        })
        .collect()
}

/// `  %value = "meta.state_read"() {name = "name"} : () -> type` and a
/// newline; `at` is its location's text (or nothing).
fn state_read_line(value: &str, name: &str, r#type: &str, at: &str) -> String {
    format!(
        "  {value} = \"meta.state_read\"() {{name = \"{}\"}} : () -> {type}{at}\n",
        quoted(name)
    )
}

/// `  "meta.state_write"(%value) {name = "name"} : (type) -> ()` and a
/// newline; `at` is its location's text (or nothing).
fn state_write_line(value: &str, name: &str, r#type: &str, at: &str) -> String {
    format!(
        "  \"meta.state_write\"({value}) {{name = \"{}\"}} : ({type}) -> (){at}\n",
        quoted(name)
    )
}

fn key(node: &Rc<Node>) -> usize {
    Rc::as_ptr(node) as usize
}

/// Walks the nodes not computed yet that `node` needs (itself included)
/// and not marked `cut` or `walk`, marking them `walk` and adding them to
/// `into`; returns whether it met a node marked `cut`.
fn ancestors(node: &Rc<Node>, cut: u64, walk: u64, into: &mut Vec<Rc<Node>>) -> bool {
    let mut met = false;
    let mut stack = vec![Rc::clone(node)];
    while let Some(current) = stack.pop() {
        let mark = current.mark.get();
        if mark == cut {
            met = true;
            continue;
        }
        if mark == walk || matches!(*current.op.borrow(), Op::Data(_)) {
            continue;
        }
        current.mark.set(walk);
        for input in current.op.borrow().inputs() {
            stack.push(Rc::clone(input));
        }
        into.push(current);
    }
    met
}

impl Runtime {
    fn next_epoch(&self) -> u64 {
        let epoch = self.epoch.get() + 1;
        self.epoch.set(epoch);
        epoch
    }

    /// The pending values a handle holds (the registry forgets the others).
    fn held_pending(&self) -> Vec<Rc<Node>> {
        let mut list = self.pending.borrow_mut();
        list.retain(|weak| {
            weak.upgrade()
                .is_some_and(|n| !matches!(*n.op.borrow(), Op::Data(_)))
        });
        list.iter()
            .filter_map(Weak::upgrade)
            .filter(|n| n.handles.get() > 0)
            .collect()
    }

    /// The cut of a fetch of `wanted`: their pending ancestors, and, with
    /// `join`, those of every pending value a handle holds that shares one
    /// of them.
    fn cut(&self, wanted: &[&Var], join: bool) -> Cut {
        let cut = self.next_epoch();
        let mut nodes = Vec::new();
        for var in wanted {
            ancestors(&var.0, cut, cut, &mut nodes);
        }
        let pending = if join { self.held_pending() } else { Vec::new() };
        // Until nothing changes: a value joins when its own pending
        // ancestors meet the cut (each walk its own mark, so a joining
        // value brings every node it needs).
        let mut joined = true;
        while joined {
            joined = false;
            for node in &pending {
                if node.mark.get() == cut {
                    continue;
                }
                let mut own = Vec::new();
                if ancestors(node, cut, self.next_epoch(), &mut own) {
                    for n in &own {
                        n.mark.set(cut);
                    }
                    nodes.extend(own);
                    joined = true;
                }
            }
        }
        nodes.sort_by_key(|n| n.id);
        let mut arguments: Vec<Rc<Node>> = Vec::new();
        for node in &nodes {
            for input in node.op.borrow().inputs() {
                if input.mark.get() != cut && matches!(*input.op.borrow(), Op::Data(_)) {
                    input.mark.set(cut);
                    arguments.push(Rc::clone(input));
                }
            }
        }
        for (k, node) in arguments.iter().chain(&nodes).enumerate() {
            node.slot.set(k as u32);
        }
        let results = nodes.iter().filter(|n| n.handles.get() > 0).cloned().collect();
        Cut {
            nodes,
            arguments,
            results,
            aliases: Vec::new(),
            state: StateBinding::default(),
        }
    }
}

impl Cut {
    /// Whether `var` is one of the nodes it computes.
    fn computes(&self, var: &Var) -> bool {
        self.nodes.iter().any(|n| Rc::ptr_eq(n, &var.0))
    }

    /// The function's arguments: the data its nodes read.
    fn args(&self) -> Vec<Value> {
        self.arguments
            .iter()
            .map(|node| match &*node.op.borrow() {
                Op::Data(tensor) => Value::Tensor(Arc::clone(tensor)),
                _ => unreachable!("arguments are data"),
            })
            .collect()
    }

    /// The cache key: the structure, types and attributes, values named by
    /// position, as bytes; no text is formatted, so a hit costs a walk of
    /// the cut and a hash of these bytes.
    fn key(&self) -> Vec<u8> {
        let mut key_bytes: Vec<u8> = Vec::with_capacity(64 * (self.nodes.len() + 1));
        let typed = |bytes: &mut Vec<u8>, node: &Node| {
            bytes.push(node.element as u8);
            bytes.push(node.shape.len() as u8);
            for &d in &node.shape {
                bytes.extend_from_slice(&(d as u64).to_le_bytes());
            }
        };
        let text = |bytes: &mut Vec<u8>, text: &str| {
            bytes.extend_from_slice(&(text.len() as u32).to_le_bytes());
            bytes.extend_from_slice(text.as_bytes());
        };
        for argument in &self.arguments {
            key_bytes.push(b'a');
            typed(&mut key_bytes, argument);
        }
        for node in &self.nodes {
            let op = node.op.borrow();
            match &*op {
                Op::Data(_) => unreachable!("a cut holds no data"),
                Op::Reindex {
                    map,
                    overflow,
                    conditions,
                    ..
                } => {
                    key_bytes.push(b'r');
                    text(&mut key_bytes, map);
                    text(&mut key_bytes, overflow.as_deref().unwrap_or(""));
                    for condition in conditions {
                        text(&mut key_bytes, condition);
                    }
                    key_bytes.push(conditions.len() as u8);
                }
                Op::Reduce {
                    kind,
                    map,
                    conditions,
                    ..
                } => {
                    key_bytes.push(b'R');
                    text(&mut key_bytes, kind.name());
                    text(&mut key_bytes, map);
                    for condition in conditions {
                        text(&mut key_bytes, condition);
                    }
                    key_bytes.push(conditions.len() as u8);
                }
                Op::Splat(value) => {
                    key_bytes.push(b'k');
                    key_bytes.extend_from_slice(&value.key());
                }
                Op::Guard { reason, .. } => {
                    key_bytes.push(b'g');
                    text(&mut key_bytes, reason);
                }
                Op::Unary { kind, .. } => {
                    key_bytes.push(b'u');
                    text(&mut key_bytes, kind.name());
                }
                Op::Cast { .. } => key_bytes.push(b'c'),
                Op::Binary { kind, .. } => {
                    key_bytes.push(b'b');
                    text(&mut key_bytes, kind.name());
                }
                Op::Select { .. } => key_bytes.push(b's'),
            }
            for input in op.inputs() {
                key_bytes.extend_from_slice(&input.slot.get().to_le_bytes());
            }
            typed(&mut key_bytes, node);
        }
        key_bytes.push(b'>');
        for result in &self.results {
            key_bytes.extend_from_slice(&result.slot.get().to_le_bytes());
        }
        for (tag, bound) in [(b'<', &self.state.reads), (b'!', &self.state.writes)] {
            for (k, name) in bound {
                key_bytes.push(tag);
                key_bytes.extend_from_slice(&(*k as u32).to_le_bytes());
                text(&mut key_bytes, name);
            }
        }
        key_bytes
    }

    /// The function's text in the textual contract.
    fn text(&self) -> String {
        self.function_text("main", None)
    }

    /// The function `@name` in the textual contract; as a trace of
    /// `trace_of` (`meta.trace`, for `meta-merge`), with each op at its
    /// site and the branches taken marked `meta.decision`.
    fn function_text(&self, function: &str, trace_of: Option<&str>) -> String {
        let at = |node: &Node| -> String {
            match (&node.site, trace_of) {
                (Some(site), Some(_)) => format!(" loc(\"{}\")", quoted(site)),
                _ => String::new(),
            }
        };
        let marked = |node: &Node| trace_of.is_some() && node.decision.get();
        // A state op has no site; in a trace it is at its state's name, so
        // `meta-merge` sees the same op in every trace.
        let at_state = |state: &str| -> String {
            match trace_of {
                Some(_) => format!(" loc(\"state {}\")", quoted(state)),
                None => String::new(),
            }
        };
        let mut name: HashMap<usize, String> = HashMap::new();
        let mut params = Vec::new();
        let mut body = String::new();
        for (k, argument) in self.arguments.iter().enumerate() {
            name.insert(key(argument), format!("%a{k}"));
            let r#type = type_text(&argument.shape, argument.element);
            match self.state.read(k) {
                Some(state) => body.push_str(&state_read_line(
                    &format!("%a{k}"),
                    state,
                    &r#type,
                    &at_state(state),
                )),
                None => params.push(format!("%a{k}: {type}", type = r#type)),
            }
        }
        for (node, k) in &self.aliases {
            name.insert(key(node), format!("%a{k}"));
        }
        let mut guards = 0;
        for (k, node) in self.nodes.iter().enumerate() {
            name.insert(key(node), format!("%v{k}"));
            let out = type_text(&node.shape, node.element);
            let op = node.op.borrow();
            let operands: Vec<&String> = op.inputs().iter().map(|i| &name[&key(i)]).collect();
            let operand_types: Vec<String> = op
                .inputs()
                .iter()
                .map(|i| type_text(&i.shape, i.element))
                .collect();
            let (op_name, attributes) = match &*op {
                Op::Data(_) => unreachable!("a cut holds no data"),
                Op::Reindex {
                    map,
                    overflow,
                    conditions,
                    ..
                } => {
                    let mut attributes = format!("indices = affine_map<{map}>");
                    if let Some(value) = overflow {
                        let _ = write!(attributes, ", overflow_value = {value}");
                    }
                    if !conditions.is_empty() {
                        let _ = write!(attributes, ", overflow_conditions = [{}]", conditions.join(", "));
                    }
                    ("meta.reindex", attributes)
                }
                Op::Reduce {
                    kind,
                    map,
                    conditions,
                    ..
                } => {
                    let mut attributes = format!("kind = \"{}\", indices = affine_map<{map}>", kind.name());
                    if !conditions.is_empty() {
                        let _ = write!(attributes, ", overflow_conditions = [{}]", conditions.join(", "));
                    }
                    ("meta.reindex_reduce", attributes)
                }
                Op::Splat(value) => {
                    let _ = writeln!(
                        body,
                        "  %v{k} = arith.constant dense<{}> : {out}{}",
                        value.text(),
                        at(node)
                    );
                    continue;
                }
                Op::Guard { reason, .. } => {
                    // Guards are numbered in the cut's order, so the text
                    // (and the cache key) does not depend on when they
                    // were recorded; the node's value is its condition's.
                    guards += 1;
                    let reason = quoted(reason);
                    let decision = if marked(node) { ", meta.decision" } else { "" };
                    let _ = writeln!(
                        body,
                        "  \"meta.guard\"({}) {{id = {guards} : i64, reason = \"{reason}\"{decision}}} : (tensor<i1>) -> (){}",
                        operands[0],
                        at(node)
                    );
                    let condition = operands[0].clone();
                    drop(op);
                    name.insert(key(node), condition);
                    continue;
                }
                Op::Unary { kind, .. } => ("meta.unary", format!("kind = \"{}\"", kind.name())),
                Op::Cast { .. } => ("meta.unary", "kind = \"cast\"".to_owned()),
                Op::Binary { kind, .. } => ("meta.binary", format!("kind = \"{}\"", kind.name())),
                Op::Select { .. } => ("meta.ternary", "kind = \"select\"".to_owned()),
            };
            let positions: Vec<&str> = operands.iter().map(|s| s.as_str()).collect();
            let decision = if marked(node) { ", meta.decision" } else { "" };
            let _ = writeln!(
                body,
                "  %v{k} = \"{op_name}\"({}) {{{attributes}{decision}}} : ({}) -> {out}{}",
                positions.join(", "),
                operand_types.join(", "),
                at(node)
            );
        }
        // Writes are deferred (committed when the whole run succeeded), so
        // they go last, in the results' order.
        let mut results: Vec<&String> = Vec::new();
        let mut result_types: Vec<String> = Vec::new();
        for (k, result) in self.results.iter().enumerate() {
            let value = &name[&key(result)];
            let r#type = type_text(&result.shape, result.element);
            match self.state.write(k) {
                Some(state) => body.push_str(&state_write_line(value, state, &r#type, &at_state(state))),
                None => {
                    results.push(value);
                    result_types.push(r#type);
                }
            }
        }
        let attributes = match trace_of {
            Some(of) => format!(" attributes {{meta.trace = \"{}\"}}", quoted(of)),
            None => String::new(),
        };
        // A graph with no results (a function that returns only Python
        // values) ends in a bare `return`.
        let ret = if results.is_empty() {
            "  return".to_owned()
        } else {
            format!(
                "  return {} : {}",
                results.iter().map(|s| s.as_str()).collect::<Vec<_>>().join(", "),
                result_types.join(", ")
            )
        };
        format!(
            "func.func @{function}({}) -> ({}){attributes} {{\n{body}{ret}\n}}\n",
            params.join(", "),
            result_types.join(", "),
        )
    }
}

/// Computes the values of `vars` (and every pending value that shares work
/// with them; see the module's documentation) and returns theirs, in order.
/// When that fails, `vars` are computed alone, so a held value that fails
/// fails its own fetch, not every fetch sharing its work.
/// A fetch that fails drops the state writes it was to compute.
pub fn fetch(vars: &[&Var]) -> Result<Vec<Arc<Tensor>>, Error> {
    fetch_with(vars, true)
}

/// [`fetch`]; with `drop_failed_writes` false, a failure keeps the state
/// writes pending (a frontend's own look at a value, as `jitc.function`
/// takes at its inputs before a call, is not the program's fetch).
pub fn fetch_with(vars: &[&Var], drop_failed_writes: bool) -> Result<Vec<Arc<Tensor>>, Error> {
    let runtime = runtime()?;
    let done = |vars: &[&Var]| -> Option<Vec<Arc<Tensor>>> {
        vars.iter()
            .map(|v| match &*v.0.op.borrow() {
                Op::Data(tensor) => Some(Arc::clone(tensor)),
                _ => None,
            })
            .collect()
    };
    if let Some(values) = done(vars) {
        return Ok(values);
    }
    let cut = runtime.cut(vars, true);
    // A held value that joined the fetch to share its work, and fails, is
    // not the fetch's failure: the values asked for are computed alone
    // with the state writes that joined (all of them or none commit), and
    // the joined value fails when it is fetched itself.
    let outcome = match runtime.compute(&cut) {
        Err(Failure::Run(error)) => {
            let writes = runtime.pending_writes_in(&cut);
            let wanted: Vec<&Var> = vars.iter().copied().chain(&writes).collect();
            let alone = runtime.cut(&wanted, false);
            if alone.nodes.len() < cut.nodes.len() {
                runtime.compute(&alone)
            } else {
                Err(Failure::Run(error))
            }
        }
        outcome => outcome,
    };
    match outcome {
        Ok(()) => {}
        // Nothing ran: the writes stay pending.
        Err(Failure::Dump(error)) => return Err(error),
        Err(Failure::Run(error)) => {
            if drop_failed_writes {
                runtime.drop_failed_writes(&cut);
            }
            return Err(error);
        }
    }
    runtime.commit_state();
    done(vars).ok_or_else(|| bad("a fetched value was not computed"))
}

/// How computing a cut failed.
enum Failure {
    /// `JITC_DUMP_DIR` could not be written; nothing ran.
    Dump(Error),
    /// Compiling or running its function failed.
    Run(Error),
}

impl Runtime {
    /// Compiles (or finds) and runs the function of `cut`, and replaces
    /// its results' ops with their values; commits nothing.
    fn compute(&self, cut: &Cut) -> Result<(), Failure> {
        let executable = self.executable(cut.key(), || cut.text()).map_err(Failure::Run)?;
        let args = cut.args();
        if let Ok(dir) = std::env::var("JITC_DUMP_DIR") {
            let number = self.dumps.get();
            self.dumps.set(number + 1);
            write_dump(
                &Path::new(&dir).join(format!("fetch-{number}")),
                &cut.text(),
                &args,
            )
            .map_err(Failure::Dump)?;
        }
        let results = self.run(&executable, args).map_err(Failure::Run)?;
        for (node, value) in cut.results.iter().zip(results) {
            let Value::Tensor(tensor) = value else {
                return Err(Failure::Run(bad("a fetch returned a value that is not a tensor")));
            };
            // The recorded op, and with it what only it read, is dropped.
            *node.op.borrow_mut() = Op::Data(tensor);
        }
        Ok(())
    }

    /// Runs a compiled fetch's function on `args`, counting it.
    fn run(&self, executable: &Executable, args: Vec<Value>) -> Result<Vec<Value>, Error> {
        self.run_with_state(executable, args, &mut StateStore::new())
    }

    /// [`Self::run`] with the named state `state`, where the run's writes
    /// are committed if it succeeds.
    fn run_with_state(
        &self,
        executable: &Executable,
        args: Vec<Value>,
        state: &mut StateStore,
    ) -> Result<Vec<Value>, Error> {
        let results = match &executable.compiled {
            Some(compiled) => compiled.run(&executable.module, "main", args, state)?,
            None => jitc_interp::Interpreter::new(&executable.module).run("main", args, state)?,
        };
        let mut stats = self.stats.get();
        stats.fetches += 1;
        stats.kernels += executable.kernels as u64;
        self.stats.set(stats);
        Ok(results)
    }

    /// The pending state writes.
    fn pending_writes(&self) -> Vec<Var> {
        self.state
            .borrow()
            .values()
            .filter_map(|state| state.pending.clone())
            .collect()
    }

    /// The pending state writes `cut` computes.
    fn pending_writes_in(&self, cut: &Cut) -> Vec<Var> {
        self.pending_writes()
            .into_iter()
            .filter(|var| cut.computes(var))
            .collect()
    }

    /// Drops the state writes whose values a failed fetch of `cut` was to
    /// compute: all or nothing, so the state keeps its committed value
    /// (a failing write kept would fail every later fetch that shares its
    /// work, and `sync` for good).
    fn drop_failed_writes(&self, cut: &Cut) {
        for state in self.state.borrow_mut().values_mut() {
            if state.pending.as_ref().is_some_and(|var| cut.computes(var)) {
                state.pending = None;
            }
        }
    }

    /// Commits the state writes whose values are computed.
    fn commit_state(&self) {
        for state in self.state.borrow_mut().values_mut() {
            let computed = match &state.pending {
                Some(var) => match &*var.0.op.borrow() {
                    Op::Data(tensor) => Some(Arc::clone(tensor)),
                    _ => None,
                },
                None => None,
            };
            if let Some(tensor) = computed {
                state.committed = tensor;
                state.pending = None;
            }
        }
    }
}

/// Sets the piece of state `name` to `tensor` now (its first value, or a
/// new one; a write recorded and not computed yet is dropped).
pub fn set_state(name: &str, tensor: Tensor) -> Result<(), Error> {
    runtime()?.state.borrow_mut().insert(
        name.to_owned(),
        State {
            committed: Arc::new(tensor),
            pending: None,
        },
    );
    Ok(())
}

/// The committed value of the piece of state `name` (writes not computed
/// yet are not in it), `None` if there is no such state.
pub fn get_state(name: &str) -> Option<Arc<Tensor>> {
    let runtime = runtime().ok()?;
    let state = runtime.state.borrow();
    state.get(name).map(|s| Arc::clone(&s.committed))
}

/// The value of the piece of state `name` as the program sees it now: the
/// last write recorded (so a loop's iterations chain, and fuse when fetched
/// together), or the committed value.
pub fn read_state(name: &str) -> Result<Var, Error> {
    let runtime = runtime()?;
    let state = runtime.state.borrow();
    let state = state.get(name).ok_or_else(|| {
        bad(format!(
            "there is no state '{name}' (set it first with set_state)"
        ))
    })?;
    Ok(match &state.pending {
        Some(var) => var.clone(),
        None => Var::from_arc(Arc::clone(&state.committed)),
    })
}

/// Records a write of `value` to the piece of state `name`, of the same
/// shape and element type: deferred, it is committed by the fetch (or
/// [`sync`]) that computes `value`, and only if that fetch succeeds.
pub fn write_state(name: &str, value: &Var) -> Result<(), Error> {
    let runtime = runtime()?;
    let mut states = runtime.state.borrow_mut();
    let state = states.get_mut(name).ok_or_else(|| {
        bad(format!(
            "there is no state '{name}' (set it first with set_state)"
        ))
    })?;
    let (shape, element) = (state.committed.shape(), state.committed.element_type());
    if value.shape() != shape || value.element() != element {
        return Err(bad(format!(
            "state '{name}' is {}, so it cannot take a {}",
            type_text(shape, element),
            type_text(value.shape(), value.element())
        )));
    }
    state.pending = Some(value.clone());
    drop(states);
    // A value already computed commits at once.
    runtime.commit_state();
    Ok(())
}

/// A value of `shape` holding `value` everywhere (converted to `element`
/// as NumPy converts a number: see [`Scalar`]; an integer out of the
/// element's range, or a NaN made an integer, is an error now): a splat
/// constant, recorded, never materialized unless it is fetched.
pub fn full(shape: &[usize], element: ElementType, value: impl Into<Scalar>) -> Result<Var, Error> {
    let value = value.into().element(element)?;
    runtime()?.node(shape.to_vec(), element, Op::Splat(value))
}

/// Records a check that `condition` (a rank-0 `i1`) holds: `meta.guard`.
/// The returned value is the condition; a fetch that computes it fails
/// with the guard's `reason` (`jitc_interp::Error::GuardFailed`) when the
/// condition is false, and then commits no state write. Guards are how a
/// frontend speculates on a value it has not computed (JANUS): it records
/// the rest of the program as if the condition held, and fetches the
/// guard with it.
pub fn guard(condition: &Var, reason: &str) -> Result<Var, Error> {
    if condition.0.element != ElementType::I1 || !condition.0.shape.is_empty() {
        return Err(bad(format!(
            "a guard's condition must be a rank-0 i1, not {}",
            type_text(&condition.0.shape, condition.0.element)
        )));
    }
    runtime()?.node(
        Vec::new(),
        ElementType::I1,
        Op::Guard {
            condition: Rc::clone(&condition.0),
            reason: reason.to_owned(),
        },
    )
}

/// Records the nodes made from now on at `site` (a frontend's source
/// position, e.g. `model.py:12`), until the next call; `None` records
/// them at no site. Sites only name ops in the traces [`stage_merged`]
/// merges: ops of two traces are one op where their sites agree.
pub fn set_site(site: Option<&str>) -> Result<(), Error> {
    *runtime()?.site.borrow_mut() = site.map(Rc::from);
    Ok(())
}

/// Records that a trace's branch on `condition` (a rank-0 `i1`) went the
/// way `taken`: a guard that it still does (on the condition, or its
/// `not`), marked as a branch so that [`stage_merged`] can merge traces
/// that went different ways there. Returns the guard, to be passed among
/// a trace's effects.
pub fn decision(condition: &Var, taken: bool, reason: &str) -> Result<Var, Error> {
    let checked = if taken {
        condition.clone()
    } else {
        let not = condition.unary("not")?;
        not.0.decision.set(true);
        not
    };
    let guard = guard(&checked, reason)?;
    guard.0.decision.set(true);
    Ok(guard)
}

/// The gradients of the scalar `loss` with respect to each of `wrt`,
/// recorded as meta-ops (`jitc_compiler::autodiff`; the rules are in
/// `docs/semantics.md`, "Gradients"). They read the forward graph's
/// recorded values, so one fetch of the loss and the gradients computes
/// the forward pass once and fuses it with the backward one.
///
/// Gradients flow through the ops recorded and not computed yet: a value
/// already computed (data, or fetched) is a constant. So take gradients
/// before fetching the loss. A value of `wrt` the loss does not depend on
/// gets zeros.
///
/// ```
/// use jitc_interp::{Scalar, Tensor};
/// use jitc_runtime::graph::{self, Var};
/// let x = Var::new(Tensor::parse_literal("3xf32=1 2 3").unwrap());
/// let square = x.binary("mul", &x).unwrap();
/// let loss = square.reindex_reduce("add", &[], &[]).unwrap();
/// let dx = graph::grad(&loss, &[&x]).unwrap().remove(0);
/// assert_eq!(dx.fetch().unwrap().get(2), Scalar::F32(6.0));
/// ```
pub fn grad(loss: &Var, wrt: &[&Var]) -> Result<Vec<Var>, Error> {
    let runtime = runtime()?;
    if loss.is_computed() && !wrt.iter().any(|w| Rc::ptr_eq(&w.0, &loss.0)) {
        return Err(bad(
            "the loss is already computed, so the ops that made it are gone: take gradients before \
             fetching the loss (a fetch of another value that shares its work computes it too)",
        ));
    }
    // The pending ops the loss needs, oldest (so inputs) first.
    let mut nodes = Vec::new();
    let walk = runtime.next_epoch();
    ancestors(&loss.0, walk, walk, &mut nodes);
    nodes.sort_by_key(|n| n.id);
    let ops: Vec<Recorded<Tape>> = nodes
        .iter()
        .filter_map(|node| {
            let primal = match &*node.op.borrow() {
                Op::Data(_) | Op::Splat(_) | Op::Guard { .. } => return None,
                Op::Reindex {
                    input,
                    map,
                    conditions,
                    ..
                } => Primal::Reindex {
                    input: Rc::clone(input),
                    map: map.clone(),
                    conditions: conditions.clone(),
                },
                Op::Reduce {
                    input,
                    kind,
                    map,
                    conditions,
                } => Primal::Reduce {
                    kind: *kind,
                    input: Rc::clone(input),
                    map: map.clone(),
                    conditions: conditions.clone(),
                },
                Op::Unary { kind, input } => Primal::Unary {
                    kind: *kind,
                    input: Rc::clone(input),
                },
                Op::Cast { input } => Primal::Cast {
                    input: Rc::clone(input),
                },
                Op::Binary { kind, lhs, rhs } => Primal::Binary {
                    kind: *kind,
                    lhs: Rc::clone(lhs),
                    rhs: Rc::clone(rhs),
                },
                Op::Select {
                    condition,
                    then,
                    otherwise,
                } => Primal::Select {
                    condition: Rc::clone(condition),
                    then: Rc::clone(then),
                    otherwise: Rc::clone(otherwise),
                },
            };
            Some((Rc::clone(node), primal))
        })
        .collect();
    let wrt: Vec<Rc<Node>> = wrt.iter().map(|w| Rc::clone(&w.0)).collect();
    let mut tape = Tape(&runtime);
    let gradients = autodiff::backward(&mut tape, &ops, &loss.0, &wrt).map_err(bad)?;
    Ok(gradients.into_iter().map(handle).collect())
}

/// A new handle to `node`.
fn handle(node: Rc<Node>) -> Var {
    node.handles.set(node.handles.get() + 1);
    Var(node)
}

/// The lazy graph as an [`autodiff::Tape`]: adjoint ops are recorded as
/// nodes with no handle (intermediates), checked as the recording methods
/// check them.
struct Tape<'r>(&'r Runtime);

impl Tape<'_> {
    fn record(&self, shape: Vec<usize>, element: ElementType, op: Op) -> Result<Rc<Node>, String> {
        let var = self.0.node(shape, element, op).map_err(|e| e.to_string())?;
        let node = Rc::clone(&var.0);
        drop(var);
        Ok(node)
    }
}

impl autodiff::Tape for Tape<'_> {
    type Value = Rc<Node>;
    type Map = String;
    type Set = String;

    fn id(&self, value: &Rc<Node>) -> usize {
        key(value)
    }
    fn shape(&self, value: &Rc<Node>) -> Vec<usize> {
        value.shape.clone()
    }
    fn element(&self, value: &Rc<Node>) -> ElementType {
        value.element
    }
    fn splat(&mut self, shape: &[usize], element: ElementType, value: f64) -> Result<Rc<Node>, String> {
        let value = Scalar::Float(value).element(element).map_err(|e| e.to_string())?;
        self.record(shape.to_vec(), element, Op::Splat(value))
    }
    fn unary(&mut self, kind: UnaryKind, x: &Rc<Node>) -> Result<Rc<Node>, String> {
        self.record(
            x.shape.clone(),
            x.element,
            Op::Unary {
                kind,
                input: Rc::clone(x),
            },
        )
    }
    fn cast(&mut self, x: &Rc<Node>, element: ElementType) -> Result<Rc<Node>, String> {
        self.record(x.shape.clone(), element, Op::Cast { input: Rc::clone(x) })
    }
    fn binary(&mut self, kind: BinaryKind, a: &Rc<Node>, b: &Rc<Node>) -> Result<Rc<Node>, String> {
        let element = kind.result_element(a.element);
        let op = Op::Binary {
            kind,
            lhs: Rc::clone(a),
            rhs: Rc::clone(b),
        };
        self.record(a.shape.clone(), element, op)
    }
    fn select(&mut self, c: &Rc<Node>, a: &Rc<Node>, b: &Rc<Node>) -> Result<Rc<Node>, String> {
        let op = Op::Select {
            condition: Rc::clone(c),
            then: Rc::clone(a),
            otherwise: Rc::clone(b),
        };
        self.record(a.shape.clone(), a.element, op)
    }
    fn reindex(
        &mut self,
        x: &Rc<Node>,
        shape: &[usize],
        map: &String,
        overflow: f64,
        conditions: &[String],
    ) -> Result<Rc<Node>, String> {
        let op = Op::Reindex {
            input: Rc::clone(x),
            map: map.clone(),
            overflow: (overflow != 0.0)
                .then(|| literal(Scalar::Float(overflow), x.element))
                .transpose()
                .map_err(|e| e.to_string())?,
            conditions: conditions.to_vec(),
        };
        self.record(shape.to_vec(), x.element, op)
    }
    fn reduce(
        &mut self,
        x: &Rc<Node>,
        kind: ReduceKind,
        shape: &[usize],
        map: &String,
        conditions: &[String],
    ) -> Result<Rc<Node>, String> {
        let op = Op::Reduce {
            input: Rc::clone(x),
            kind,
            map: map.clone(),
            conditions: conditions.to_vec(),
        };
        self.record(shape.to_vec(), x.element, op)
    }
}

/// Computes every pending value a handle holds: first the pending state
/// writes (with what shares their work), so that a held value that fails
/// elsewhere, which a frontend may hold out of the user's reach, does not
/// drop them; then the rest.
pub fn sync() -> Result<(), Error> {
    let runtime = runtime()?;
    let writes = runtime.pending_writes();
    if !writes.is_empty() {
        fetch(&writes.iter().collect::<Vec<_>>())?;
    }
    let live: Vec<Var> = runtime
        .held_pending()
        .into_iter()
        .map(|n| {
            n.handles.set(n.handles.get() + 1);
            Var(n)
        })
        .collect();
    let refs: Vec<&Var> = live.iter().collect();
    if !refs.is_empty() {
        fetch(&refs)?;
    }
    Ok(())
}

impl Runtime {
    /// The compiled function of `text`, from the cache (by `key`) or
    /// compiled now.
    fn executable(&self, key: Vec<u8>, text: impl FnOnce() -> String) -> Result<Rc<Executable>, Error> {
        self.compile(key, text, false)
    }

    /// [`Self::executable`]; with `merge`, the text holds traces of `@main`
    /// that `meta-merge` merges first.
    fn compile(
        &self,
        key: Vec<u8>,
        text: impl FnOnce() -> String,
        merge: bool,
    ) -> Result<Rc<Executable>, Error> {
        if let Some(found) = self.cache.borrow_mut().get(&key) {
            let mut stats = self.stats.get();
            stats.cache_hits += 1;
            self.stats.set(stats);
            return Ok(Rc::clone(found));
        }
        let text = &text();
        let collector = DiagnosticCollector::attach(self.context);
        let mut module = parse_module(self.context, text).ok_or_else(|| {
            let messages: Vec<String> = collector.take().into_iter().map(|d| d.message).collect();
            bad(format!(
                "the graph's function does not parse (a jitc bug): {}\n{text}",
                messages.join("; ")
            ))
        })?;
        if merge {
            // The traces hold every op they ran; what no path reads goes.
            let pipeline = jitc_compiler::Pipeline::parse("builtin.module(meta-merge, meta-dce)")?;
            let merged = jitc_compiler::optimize(
                self.context,
                &mut module,
                &pipeline,
                &jitc_compiler::OptimizeOptions::default(),
            );
            if merged.is_err() {
                let messages: Vec<String> = collector.take().into_iter().map(|d| d.message).collect();
                return Err(bad(format!("the traces do not merge: {}", messages.join("; "))));
            }
        }
        let source = if merge {
            module.as_operation().to_string()
        } else {
            text.clone()
        };
        if jitc_compiler::verify(&module).is_err() {
            // The verifier's diagnostics say what is wrong. (Index
            // expressions are checked when recorded, so no failure is
            // known to reach here; should one, its reason is kept.)
            let messages: Vec<String> = collector.take().into_iter().map(|d| d.message).collect();
            return Err(bad(format!(
                "the recorded ops do not verify: {}",
                if messages.is_empty() {
                    "the verifier gave no reason".to_owned()
                } else {
                    messages.join("; ")
                }
            )));
        }
        let compiled = match self.backend.get() {
            Backend::Cpu => Some(CpuModule::compile_with(
                self.context,
                &mut module,
                &self.options.borrow(),
            )?),
            Backend::Interpreter => None,
        };
        let kernels = jitc_dialect::ops::functions(module.body())
            .values()
            .filter(|f| melior::ir::operation::OperationLike::has_attribute(*f, "meta.fused"))
            .count();
        let executable = Rc::new(Executable {
            module,
            source,
            compiled,
            kernels,
            _lease: Rc::clone(&self.lease),
        });
        let mut stats = self.stats.get();
        stats.compiles += 1;
        self.stats.set(stats);
        self.cache.borrow_mut().insert(key, Rc::clone(&executable));
        Ok(executable)
    }
}

/// A function staged from the lazy graph ([`stage`]): compiled once, then
/// called on new inputs without recording anything.
pub struct Staged {
    executable: Rc<Executable>,
    /// The type of each input.
    inputs: Vec<(Vec<usize>, ElementType)>,
    /// Data the staged ops read that is not an input: fixed trailing
    /// arguments.
    captured: Vec<Value>,
    /// The inputs it reads from named state, and the outputs it writes
    /// to it.
    state: StateBinding,
    /// How many outputs it gives (results and state writes).
    outputs: usize,
}

/// Which inputs of a staged function it reads from named state and which
/// of its outputs it writes to named state: a frontend's object
/// attributes, as JANUS stages Python's attribute reads and writes
/// (`PyGetAttrOp`, `PySetAttrOp`). An input read so is a
/// `meta.state_read` of its name instead of an argument; an output written
/// so is a `meta.state_write` instead of a result, committed only when the
/// whole call succeeded (every guard held). [`Staged::call`] still takes
/// and gives them in their places: it passes the inputs in a state store
/// and gives the committed writes back as outputs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StateBinding {
    /// `(input index, state name)`.
    pub reads: Vec<(usize, String)>,
    /// `(output index, state name)`.
    pub writes: Vec<(usize, String)>,
}

impl StateBinding {
    /// Checks the binding against the inputs and outputs it names: indices
    /// in range and used once, names not empty and used once per side. A
    /// name read as one type and written as another (a frontend rebinding
    /// an attribute to a tensor of another shape) cannot be one piece of
    /// state (one name has one type in a module), so that output stays a
    /// result.
    fn checked(&self, inputs: &[&Var], outputs: &[&Var]) -> Result<StateBinding, Error> {
        // The names as the module spells them (quotes, backslashes and
        // control characters become `'`), so the store holds what the
        // state ops name.
        let spelled = |bound: &[(usize, String)]| -> Vec<(usize, String)> {
            bound.iter().map(|(k, name)| (*k, quoted(name))).collect()
        };
        let this = StateBinding {
            reads: spelled(&self.reads),
            writes: spelled(&self.writes),
        };
        for (side, bound, count) in [
            ("input", &this.reads, inputs.len()),
            ("output", &this.writes, outputs.len()),
        ] {
            for (n, (k, name)) in bound.iter().enumerate() {
                if *k >= count {
                    return Err(bad(format!(
                        "state '{name}' is bound to {side} {k}, but there are {count} {side}s"
                    )));
                }
                if name.is_empty() {
                    return Err(bad(format!("the state bound to {side} {k} has no name")));
                }
                if bound[..n].iter().any(|(j, other)| j == k || other == name) {
                    return Err(bad(format!(
                        "{side} {k} or state '{name}' is bound twice among the {side}s"
                    )));
                }
            }
        }
        let type_of = |v: &Var| (v.0.shape.clone(), v.0.element);
        let writes = this
            .writes
            .iter()
            .filter(|(k, name)| {
                this.reads
                    .iter()
                    .all(|(j, read)| read != name || type_of(inputs[*j]) == type_of(outputs[*k]))
            })
            .cloned()
            .collect();
        Ok(StateBinding {
            reads: this.reads,
            writes,
        })
    }

    /// Drops the reads of inputs that no node of `nodes` reads and no
    /// value of `values` is: such an input stays an (unused) argument, so
    /// the function says what state it reads.
    fn drop_unread<'v>(
        &mut self,
        inputs: &[&Var],
        nodes: &[Rc<Node>],
        values: impl IntoIterator<Item = &'v Var>,
    ) {
        let used: std::collections::HashSet<usize> = nodes
            .iter()
            .flat_map(|n| n.op.borrow().inputs().into_iter().map(key).collect::<Vec<_>>())
            .chain(values.into_iter().map(|v| key(&v.0)))
            .collect();
        self.reads.retain(|(k, _)| used.contains(&key(&inputs[*k].0)));
    }

    fn read(&self, input: usize) -> Option<&str> {
        self.reads
            .iter()
            .find(|(k, _)| *k == input)
            .map(|(_, n)| n.as_str())
    }

    fn write(&self, output: usize) -> Option<&str> {
        self.writes
            .iter()
            .find(|(k, _)| *k == output)
            .map(|(_, n)| n.as_str())
    }
}

impl std::fmt::Debug for Staged {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "Staged({} inputs, {} captured, {} read from state, {} written to state, {} kernels)",
            self.inputs.len(),
            self.captured.len(),
            self.state.reads.len(),
            self.state.writes.len(),
            self.executable.kernels
        )
    }
}

/// The part of the graph a staged function runs: the pending nodes that
/// compute `values` (oldest first), and the data they read that is not
/// one of `inputs` (each node once, with its value). `inputs` must be
/// distinct data.
fn staged_part(runtime: &Runtime, inputs: &[&Var], values: &[&Var]) -> Result<StagedPart, Error> {
    for (k, input) in inputs.iter().enumerate() {
        if !input.is_computed() {
            return Err(bad(format!(
                "input {k} of a staged function is a recorded op, not data; stage from the values the \
                 function is called with"
            )));
        }
    }
    let cut_mark = runtime.next_epoch();
    let mut nodes = Vec::new();
    for value in values {
        ancestors(&value.0, cut_mark, cut_mark, &mut nodes);
    }
    nodes.sort_by_key(|n| n.id);
    for input in inputs {
        if input.0.mark.get() == cut_mark {
            return Err(bad("a staged function's inputs must be distinct values"));
        }
        input.0.mark.set(cut_mark);
    }
    let reads: Vec<Rc<Node>> = nodes
        .iter()
        .flat_map(|n| n.op.borrow().inputs().into_iter().cloned().collect::<Vec<_>>())
        .chain(values.iter().map(|v| Rc::clone(&v.0)))
        .collect();
    let mut data = Vec::new();
    for node in reads {
        let value = match &*node.op.borrow() {
            Op::Data(tensor) if node.mark.get() != cut_mark => Arc::clone(tensor),
            _ => continue,
        };
        node.mark.set(cut_mark);
        data.push((node, value));
    }
    Ok((nodes, data))
}

/// What [`staged_part`] gives: the nodes, and the data read with its value.
type StagedPart = (Vec<Rc<Node>>, Vec<(Rc<Node>, Arc<Tensor>)>);

/// Stages the ops that compute `outputs` from `inputs` as one function
/// (what a frontend's tracing JIT does, as JANUS and Terra generate a
/// graph from a traced call): `inputs` must be data (computed values) and
/// become the function's arguments in order; other data the ops read is
/// captured with its current value; `outputs` are its results in order.
/// Guards among the outputs ([`guard`]) make the call fail, computing and
/// committing nothing, when their condition does not hold. Nothing runs
/// now; the function is compiled (or found in the cache) now.
///
/// `state` binds inputs to `meta.state_read`s and outputs to
/// `meta.state_write`s ([`StateBinding`]).
pub fn stage(inputs: &[&Var], outputs: &[&Var], state: &StateBinding) -> Result<Staged, Error> {
    let runtime = runtime()?;
    let mut state = state.checked(inputs, outputs)?;
    let (nodes, data) = staged_part(&runtime, inputs, outputs)?;
    state.drop_unread(inputs, &nodes, outputs.iter().copied());
    let mut arguments: Vec<Rc<Node>> = inputs.iter().map(|v| Rc::clone(&v.0)).collect();
    let mut captured = Vec::new();
    for (node, value) in data {
        captured.push(Value::Tensor(value));
        arguments.push(node);
    }
    for (k, node) in arguments.iter().chain(&nodes).enumerate() {
        node.slot.set(k as u32);
    }
    let cut = Cut {
        nodes,
        arguments,
        results: outputs.iter().map(|o| Rc::clone(&o.0)).collect(),
        aliases: Vec::new(),
        state: state.clone(),
    };
    let executable = runtime.executable(cut.key(), || cut.text())?;
    Ok(Staged {
        executable,
        inputs: inputs.iter().map(|v| (v.0.shape.clone(), v.0.element)).collect(),
        captured,
        state,
        outputs: outputs.len(),
    })
}

/// One trace of [`stage_merged`]: its nodes, and each datum it reads with
/// the captured value it is.
type TraceCut = (Vec<Rc<Node>>, Vec<(Rc<Node>, usize)>);

/// Stages several traces of one function as one merged graph (Terra):
/// each trace is the ops that compute its `outputs` from `inputs`, with
/// its `effects` (the guards and [`decision`]s it recorded, and any value
/// it computed that no output needs, so that traces agree on the ops they
/// ran) run but not returned; `meta-merge` merges them, sharing what they
/// share and selecting between what they do not by the branches they
/// took, and `meta-dce` drops what no path reads. Every
/// trace must read `inputs` (data of one set of types) and return outputs
/// of the same types; data the traces read that is not an input is
/// captured, one argument per distinct value. Fails when the traces do
/// not merge (`meta-merge`'s reason), so the caller can stage them
/// another way.
/// `state` binds inputs and outputs (the same in every trace) to named
/// state ([`StateBinding`]).
pub fn stage_merged(
    inputs: &[&Var],
    traces: &[(Vec<&Var>, Vec<&Var>)],
    state: &StateBinding,
) -> Result<Staged, Error> {
    let runtime = runtime()?;
    if traces.is_empty() {
        return Err(bad("no trace to stage"));
    }
    // Every trace's outputs have one set of types (or `meta-merge` says
    // why not), so the first trace's decide the binding.
    let mut state = state.checked(inputs, &traces[0].0)?;
    // Each trace's nodes, and the data it reads that is not an input, each
    // datum with the captured value it is (one argument per distinct value,
    // bit for bit: -0.0 is not 0.0).
    let same = |a: &Tensor, b: &Tensor| {
        a.shape() == b.shape()
            && a.element_type() == b.element_type()
            && a.buffer().as_bytes() == b.buffer().as_bytes()
    };
    let mut cuts: Vec<TraceCut> = Vec::new();
    let mut captured: Vec<Arc<Tensor>> = Vec::new();
    for (outputs, effects) in traces {
        let values: Vec<&Var> = outputs.iter().chain(effects).copied().collect();
        let (nodes, read) = staged_part(&runtime, inputs, &values)?;
        let mut data: Vec<(Rc<Node>, usize)> = Vec::new();
        for (node, value) in read {
            let index = match captured.iter().position(|c| same(c, &value)) {
                Some(c) => c,
                None => {
                    captured.push(value);
                    captured.len() - 1
                }
            };
            data.push((node, index));
        }
        cuts.push((nodes, data));
    }
    let every_node: Vec<Rc<Node>> = cuts.iter().flat_map(|(nodes, _)| nodes.iter().cloned()).collect();
    state.drop_unread(
        inputs,
        &every_node,
        traces
            .iter()
            .flat_map(|(outputs, effects)| outputs.iter().chain(effects).copied()),
    );
    let mut text = String::new();
    for (k, ((outputs, _), (nodes, data))) in traces.iter().zip(cuts).enumerate() {
        // The arguments: the inputs, then every captured value, each this
        // trace's first node for it where it reads one; its other nodes of
        // that value are aliases of the argument.
        let mut arguments: Vec<Rc<Node>> = inputs.iter().map(|v| Rc::clone(&v.0)).collect();
        let mut aliases = Vec::new();
        for (c, value) in captured.iter().enumerate() {
            let mut own = data.iter().filter(|(_, index)| *index == c).map(|(node, _)| node);
            arguments.push(match own.next() {
                Some(node) => Rc::clone(node),
                None => Var::from_arc(Arc::clone(value)).0.clone(),
            });
            aliases.extend(own.map(|node| (Rc::clone(node), inputs.len() + c)));
        }
        // No slots: the text names values by node, and the cache key is
        // the text itself.
        let cut = Cut {
            nodes,
            arguments,
            results: outputs.iter().map(|o| Rc::clone(&o.0)).collect(),
            aliases,
            state: state.clone(),
        };
        text.push_str(&cut.function_text(&format!("trace_{k}"), Some("main")));
    }
    let executable = runtime.compile(text.clone().into_bytes(), || text, true)?;
    Ok(Staged {
        executable,
        inputs: inputs.iter().map(|v| (v.0.shape.clone(), v.0.element)).collect(),
        captured: captured.into_iter().map(Value::Tensor).collect(),
        state,
        outputs: traces[0].0.len(),
    })
}

/// The parts of [`stage_loop`]: what each computes, and from which data.
pub struct LoopParts<'a> {
    /// The loop's carried values on entry (data among `inputs`, or values
    /// computed from them).
    pub init: &'a [&'a Var],
    /// Effects (guards) before the loop: computed, not returned.
    pub effects_before: &'a [&'a Var],
    /// Rank-0 `i1`: whether the loop runs its first iteration.
    pub condition: &'a Var,
    /// Data standing for the carried values in the body (one per `init`).
    pub params: &'a [&'a Var],
    /// The carried values after one iteration, computed from `params` and
    /// `inputs`.
    pub next: &'a [&'a Var],
    /// Rank-0 `i1`, computed with `next`: whether the loop goes on.
    pub next_condition: &'a Var,
    /// Effects (guards) of each iteration, computed from `params` and
    /// `inputs`: checked in every iteration, not returned.
    pub effects_body: &'a [&'a Var],
    /// Data standing for the carried values when the loop ends.
    pub results: &'a [&'a Var],
    /// The function's outputs, computed from `results` and `inputs`.
    pub outputs: &'a [&'a Var],
    /// Effects (guards) after the loop: computed, not returned.
    pub effects_after: &'a [&'a Var],
}

/// Stages a loop on a tensor condition (AutoGraph's staged `while`) as one
/// function: `@pre` computes the carried values and the first condition
/// from `inputs`, an `scf.while` runs `@body` while the condition holds,
/// and `@post` computes the outputs from the values the loop ends with.
/// `inputs` must be data, and become the function's arguments in order;
/// other data the parts read is captured, as [`stage`] does. The body's
/// guards (those its values depend on, and its effects), and the effects
/// before and after, fail the whole call.
/// `state` binds inputs and outputs to named state ([`StateBinding`]):
/// `@main` reads and writes it.
pub fn stage_loop(inputs: &[&Var], parts: &LoopParts<'_>, state: &StateBinding) -> Result<Staged, Error> {
    let runtime = runtime()?;
    let mut binding = state.checked(inputs, parts.outputs)?;
    let carried = parts.init.len();
    if parts.params.len() != carried || parts.next.len() != carried || parts.results.len() != carried {
        return Err(bad(format!(
            "a staged loop carries {carried} values, but has {} parameters, {} next values and {} results",
            parts.params.len(),
            parts.next.len(),
            parts.results.len()
        )));
    }
    for (k, (((init, param), next), result)) in parts
        .init
        .iter()
        .zip(parts.params)
        .zip(parts.next)
        .zip(parts.results)
        .enumerate()
    {
        let r#type = (init.shape(), init.element());
        if [param, next, result]
            .iter()
            .any(|v| (v.shape(), v.element()) != r#type)
        {
            return Err(bad(format!(
                "carried value {k} of a staged loop changes its type ({} on entry)",
                type_text(init.shape(), init.element())
            )));
        }
    }
    for condition in [parts.condition, parts.next_condition] {
        if !condition.shape().is_empty() || condition.element() != ElementType::I1 {
            return Err(bad("a staged loop's condition must be a rank-0 i1"));
        }
    }
    let pre_values: Vec<&Var> = parts
        .init
        .iter()
        .chain([&parts.condition])
        .chain(parts.effects_before)
        .copied()
        .collect();
    let body_inputs: Vec<&Var> = parts.params.iter().chain(inputs).copied().collect();
    let body_values: Vec<&Var> = parts
        .next
        .iter()
        .chain([&parts.next_condition])
        .chain(parts.effects_body)
        .copied()
        .collect();
    let post_inputs: Vec<&Var> = parts.results.iter().chain(inputs).copied().collect();
    let post_values: Vec<&Var> = parts.outputs.iter().chain(parts.effects_after).copied().collect();
    let pre = staged_part(&runtime, inputs, &pre_values)?;
    let body = staged_part(&runtime, &body_inputs, &body_values)?;
    let post = staged_part(&runtime, &post_inputs, &post_values)?;
    let every_node: Vec<Rc<Node>> = pre.0.iter().chain(&body.0).chain(&post.0).cloned().collect();
    binding.drop_unread(
        inputs,
        &every_node,
        pre_values.iter().chain(&body_values).chain(&post_values).copied(),
    );
    // Data the parts read that is not an input: captured, each node once.
    let mut captured: Vec<(Rc<Node>, Arc<Tensor>)> = Vec::new();
    for (node, value) in pre.1.iter().chain(&body.1).chain(&post.1) {
        if !captured.iter().any(|(c, _)| Rc::ptr_eq(c, node)) {
            captured.push((Rc::clone(node), Arc::clone(value)));
        }
    }
    let shared: Vec<Rc<Node>> = inputs
        .iter()
        .map(|v| Rc::clone(&v.0))
        .chain(captured.iter().map(|(node, _)| Rc::clone(node)))
        .collect();
    let nodes_of = |vars: &[&Var]| -> Vec<Rc<Node>> { vars.iter().map(|v| Rc::clone(&v.0)).collect() };
    let function = |name: &str, own: &[&Var], nodes: Vec<Rc<Node>>, results: &[&Var]| {
        let cut = Cut {
            nodes,
            arguments: nodes_of(own).into_iter().chain(shared.iter().cloned()).collect(),
            results: nodes_of(results),
            aliases: Vec::new(),
            state: StateBinding::default(),
        };
        cut.function_text(name, None)
    };
    let mut text = String::new();
    text.push_str(&function("pre", &[], pre.0, &pre_values));
    text.push_str(&function("body", parts.params, body.0, &body_values));
    text.push_str(&function("post", parts.results, post.0, &post_values));
    // @main: the arguments, the calls and the loop.
    let types =
        |vars: &[&Var]| -> Vec<String> { vars.iter().map(|v| type_text(v.shape(), v.element())).collect() };
    let shared_types: Vec<String> = shared.iter().map(|n| type_text(&n.shape, n.element)).collect();
    let arguments: Vec<String> = (0..shared.len()).map(|k| format!("%a{k}")).collect();
    // An input read from state is a `meta.state_read` in @main's body.
    let parameters: Vec<String> = arguments
        .iter()
        .zip(&shared_types)
        .enumerate()
        .filter(|(k, _)| binding.read(*k).is_none())
        .map(|(_, (a, t))| format!("{a}: {t}"))
        .collect();
    let reads: String = binding
        .reads
        .iter()
        .map(|(k, name)| state_read_line(&format!("%a{k}"), name, &shared_types[*k], ""))
        .collect();
    let pre_types = types(&pre_values);
    let mut loop_types = types(parts.init);
    loop_types.push("tensor<i1>".to_owned());
    let post_types = types(&post_values);
    // An output written to state is a `meta.state_write` before the
    // return, not a result.
    let returned: Vec<usize> = (0..parts.outputs.len())
        .filter(|k| binding.write(*k).is_none())
        .collect();
    let all_output_types = types(parts.outputs);
    let output_types: Vec<String> = returned.iter().map(|k| all_output_types[*k].clone()).collect();
    let list = |items: &[String]| items.join(", ");
    let group = |name: &str, range: std::ops::Range<usize>| -> Vec<String> {
        range.map(|k| format!("%{name}#{k}")).collect()
    };
    let mut main = String::new();
    let _ = writeln!(
        main,
        "func.func @main({}) -> ({}) {{",
        list(&parameters),
        list(&output_types)
    );
    main.push_str(&reads);
    let _ = writeln!(
        main,
        "  %pre:{} = func.call @pre({}) : ({}) -> ({})",
        pre_types.len(),
        list(&arguments),
        list(&shared_types),
        list(&pre_types)
    );
    let entry = group("pre", 0..carried + 1);
    let state: Vec<String> = (0..=carried).map(|k| format!("%s{k}")).collect();
    let bindings: Vec<String> = state
        .iter()
        .zip(&entry)
        .map(|(s, e)| format!("{s} = {e}"))
        .collect();
    let _ = writeln!(
        main,
        "  %loop:{} = scf.while ({}) : ({}) -> ({}) {{",
        carried + 1,
        list(&bindings),
        list(&loop_types),
        list(&loop_types)
    );
    let _ = writeln!(main, "    %go = tensor.extract %s{carried}[] : tensor<i1>");
    let _ = writeln!(
        main,
        "    scf.condition(%go) {} : {}",
        list(&state),
        list(&loop_types)
    );
    let _ = writeln!(main, "  }} do {{");
    let block: Vec<String> = state
        .iter()
        .zip(&loop_types)
        .map(|(s, t)| format!("{s}: {t}"))
        .collect();
    let _ = writeln!(main, "  ^bb0({}):", list(&block));
    let mut body_arguments: Vec<String> = state[..carried].to_vec();
    body_arguments.extend(arguments.iter().cloned());
    let mut body_types: Vec<String> = loop_types[..carried].to_vec();
    body_types.extend(shared_types.iter().cloned());
    // (The body's effects are results too, which the loop does not carry.)
    let body_result_types = types(&body_values);
    let _ = writeln!(
        main,
        "    %next:{} = func.call @body({}) : ({}) -> ({})",
        body_values.len(),
        list(&body_arguments),
        list(&body_types),
        list(&body_result_types)
    );
    let _ = writeln!(
        main,
        "    scf.yield {} : {}",
        list(&group("next", 0..carried + 1)),
        list(&loop_types)
    );
    let _ = writeln!(main, "  }}");
    let mut post_arguments = group("loop", 0..carried);
    post_arguments.extend(arguments.iter().cloned());
    let mut post_argument_types: Vec<String> = loop_types[..carried].to_vec();
    post_argument_types.extend(shared_types.iter().cloned());
    let named = if post_types.is_empty() {
        String::new()
    } else {
        format!("%post:{} = ", post_types.len())
    };
    let _ = writeln!(
        main,
        "  {named}func.call @post({}) : ({}) -> ({})",
        list(&post_arguments),
        list(&post_argument_types),
        list(&post_types)
    );
    for (k, name) in &binding.writes {
        main.push_str(&state_write_line(
            &format!("%post#{k}"),
            name,
            &all_output_types[*k],
            "",
        ));
    }
    if output_types.is_empty() {
        let _ = writeln!(main, "  return\n}}");
    } else {
        let values: Vec<String> = returned.iter().map(|k| format!("%post#{k}")).collect();
        let _ = writeln!(main, "  return {} : {}\n}}", list(&values), list(&output_types));
    }
    text.push_str(&main);
    let executable = runtime.executable(text.clone().into_bytes(), || text)?;
    Ok(Staged {
        executable,
        inputs: inputs.iter().map(|v| (v.0.shape.clone(), v.0.element)).collect(),
        captured: captured
            .into_iter()
            .map(|(_, value)| Value::Tensor(value))
            .collect(),
        state: binding,
        outputs: parts.outputs.len(),
    })
}

impl Staged {
    /// Runs the staged function on `inputs` (of the staged inputs' types);
    /// returns its outputs as data. A failed guard is
    /// `Error::Run(GuardFailed)`.
    pub fn call(&self, inputs: &[&Var]) -> Result<Vec<Var>, Error> {
        let runtime = runtime()?;
        if inputs.len() != self.inputs.len() {
            return Err(bad(format!(
                "the staged function takes {} inputs, got {}",
                self.inputs.len(),
                inputs.len()
            )));
        }
        let mut args = Vec::with_capacity(inputs.len() + self.captured.len());
        let mut state = StateStore::new();
        for (k, (input, (shape, element))) in inputs.iter().zip(&self.inputs).enumerate() {
            if input.shape() != shape.as_slice() || input.element() != *element {
                return Err(bad(format!(
                    "input {k} of the staged function is {}, not {}",
                    type_text(input.shape(), input.element()),
                    type_text(shape, *element)
                )));
            }
            match self.state.read(k) {
                Some(name) => state.insert_shared(name, input.fetch()?),
                None => args.push(Value::Tensor(input.fetch()?)),
            }
        }
        args.extend(self.captured.iter().cloned());
        let mut results = runtime
            .run_with_state(&self.executable, args, &mut state)?
            .into_iter();
        // The results in their places, and the committed writes in theirs.
        (0..self.outputs)
            .map(|k| match self.state.write(k) {
                Some(name) => state
                    .get_shared(name)
                    .map(|tensor| Var::from_arc(Arc::clone(tensor)))
                    .ok_or_else(|| bad(format!("the staged function did not write state '{name}'"))),
                None => match results.next() {
                    Some(Value::Tensor(tensor)) => Ok(Var::from_arc(tensor)),
                    Some(_) => Err(bad("a staged function returned a value that is not a tensor")),
                    None => Err(bad(
                        "a staged function returned fewer values than it was staged with",
                    )),
                },
            })
            .collect()
    }

    /// The named state it reads and writes ([`StateBinding`], names as
    /// the module spells them; a write dropped for its type is not in it,
    /// nor a read of an input nothing reads).
    pub fn state(&self) -> &StateBinding {
        &self.state
    }

    /// The staged function in the textual contract, as it was compiled:
    /// traces merged by `meta-merge` (and what no path reads dropped by
    /// `meta-dce`), before fusion.
    pub fn text(&self) -> &str {
        &self.executable.source
    }

    /// Kernels the staged function runs per call.
    pub fn kernels(&self) -> usize {
        self.executable.kernels
    }
}

/// Writes what a fetch of `vars` would run into the folder `dir`, without
/// running it: `fetch.mlir`, whose first line is the `jitc run` command
/// that reproduces the fetch, and its inputs `input0.npy`, ... Returns the
/// `.mlir` file's path. Values already computed need nothing; their dump
/// is a function of no ops.
pub fn dump(vars: &[&Var], dir: &Path) -> Result<PathBuf, Error> {
    let runtime = runtime()?;
    let cut = runtime.cut(vars, true);
    write_dump(dir, &cut.text(), &cut.args())
}

fn write_dump(dir: &Path, text: &str, args: &[Value]) -> Result<PathBuf, Error> {
    let failed = |e: std::io::Error| bad(format!("cannot write the dump to {}: {e}", dir.display()));
    std::fs::create_dir_all(dir).map_err(failed)?;
    let mut command = String::from("// jitc run fetch.mlir");
    for (k, arg) in args.iter().enumerate() {
        let Value::Tensor(tensor) = arg else { continue };
        let file = format!("input{k}.npy");
        let mut out = std::io::BufWriter::new(std::fs::File::create(dir.join(&file)).map_err(failed)?);
        jitc_interp::npy::write_to(&mut out, tensor).map_err(failed)?;
        let _ = write!(command, " --input @{file}");
    }
    let path = dir.join("fetch.mlir");
    std::fs::write(&path, format!("{command}\n{text}")).map_err(failed)?;
    Ok(path)
}
