//! `meta-batch` (in the compilers' `fuse` pipeline): contractions that
//! differ only in a constant offset of one operand become one. Random
//! programs of such members (2 to 5 of them, offsets in any order with a
//! stride of -2 to 3, read through a map symbol or a constant, from either
//! side of the product, rows past the end read as a padding value, a
//! shared operand that is one reindex, equal reindexes, a plain value or
//! the first member's own varying operand,
//! sizes of 1, f32, f64 and i32) must batch into one reduction, and give
//! the same bits as the program as written: in the interpreter after the
//! pass, and compiled with `--math exact` (whose `fuse` pipeline runs it);
//! under fast math, each member's result is within the bound of
//! `docs/semantics.md`, `2 γ(k) Σ|x w|`.

use jitc_compiler::{
    CodegenOptions, DiagnosticCollector, MathMode, OptimizeOptions, Pipeline, new_context, optimize,
    parse_module,
};
use jitc_interp::{Interpreter, StateStore, Value};
use jitc_runtime::CpuModule;
use jitc_test_support::{Match, Rng, absolute, floats, random_of};

/// `tensor<AxBx...xE>`.
fn tensor(shape: &[usize], element: &str) -> String {
    let dims: String = shape.iter().map(|d| format!("{d}x")).collect();
    format!("tensor<{dims}{element}>")
}

/// How the members share their other operand.
#[derive(Debug, Clone, Copy)]
enum Shared {
    /// One reindex of `%w` that every product uses.
    OneReindex,
    /// An equal reindex of `%w` per member, as unrolling leaves them.
    EqualReindexes,
    /// `%w` itself, of the domain's shape.
    Plain,
    /// The first member's own varying reindex (`x[t] * x[t0]`), so one op
    /// is a varying operand and the shared one (`%w` is unused).
    FirstRow,
}

/// One random program: `members` products `x[offset, i, k] * w` summed
/// over `k`, for `offsets` (the order they appear in).
#[derive(Debug)]
struct Program {
    /// (m, n, k).
    domain: [usize; 3],
    offsets: Vec<i64>,
    /// Rows of `x`; an offset at or past it reads the padding.
    rows: usize,
    padding: bool,
    symbols: bool,
    varying_first: bool,
    shared: Shared,
    element: &'static str,
}

impl Program {
    fn draw(rng: &mut Rng) -> Self {
        let members = 2 + rng.below(4);
        let stride = [-2i64, -1, 1, 2, 3][rng.below(5)];
        let base = if stride < 0 {
            -stride * (members as i64 - 1)
        } else {
            0
        } + rng.below(3) as i64;
        let mut offsets: Vec<i64> = (0..members as i64).map(|s| base + s * stride).collect();
        // Any order in the program.
        for i in (1..offsets.len()).rev() {
            offsets.swap(i, rng.below(i + 1));
        }
        let highest = *offsets.iter().max().unwrap() as usize;
        let padding = rng.below(3) == 0;
        Self {
            domain: [1 + rng.below(5), 1 + rng.below(7), 1 + rng.below(9)],
            rows: if padding { highest } else { highest + 1 },
            offsets,
            padding,
            symbols: rng.below(2) == 0,
            varying_first: rng.below(2) == 0,
            shared: [
                Shared::OneReindex,
                Shared::EqualReindexes,
                Shared::Plain,
                Shared::FirstRow,
            ][rng.below(4)],
            element: ["f32", "f64", "i32"][rng.below(3)],
        }
    }

    /// `%w`'s shape.
    fn w_shape(&self) -> Vec<usize> {
        let [m, n, k] = self.domain;
        match self.shared {
            Shared::Plain => vec![m, n, k],
            _ => vec![k, n],
        }
    }

    fn source(&self) -> String {
        let [m, n, k] = self.domain;
        let e = self.element;
        let (tx, tw) = (tensor(&[self.rows, m, k], e), tensor(&self.w_shape(), e));
        let (td, ty) = (tensor(&[m, n, k], e), tensor(&[m, n], e));
        let padding = if self.padding {
            let value = if e == "i32" {
                "7 : i32".to_owned()
            } else {
                format!("0.5 : {e}")
            };
            format!(", overflow_value = {value}")
        } else {
            String::new()
        };
        let broadcast =
            format!("\"meta.reindex\"(%w) {{indices = affine_map<(i, j, k) -> (k, j)>}} : ({tw}) -> {td}");
        let mut body = String::new();
        if let Shared::OneReindex = self.shared {
            body += &format!("  %wb = {broadcast}\n");
        }
        let mut results = Vec::new();
        for (s, offset) in self.offsets.iter().enumerate() {
            let varying = if self.symbols {
                format!(
                    "  %c{s} = arith.constant {offset} : index\n  %x{s} = \"meta.reindex\"(%x, %c{s}) {{indices = affine_map<(i, j, k)[t] -> (t, i, k)>{padding}}} : ({tx}, index) -> {td}\n"
                )
            } else {
                format!(
                    "  %x{s} = \"meta.reindex\"(%x) {{indices = affine_map<(i, j, k) -> ({offset}, i, k)>{padding}}} : ({tx}) -> {td}\n"
                )
            };
            body += &varying;
            let shared = match self.shared {
                Shared::OneReindex => "%wb".to_owned(),
                Shared::EqualReindexes => {
                    body += &format!("  %w{s} = {broadcast}\n");
                    format!("%w{s}")
                }
                Shared::Plain => "%w".to_owned(),
                Shared::FirstRow => "%x0".to_owned(),
            };
            let (a, b) = if self.varying_first {
                (format!("%x{s}"), shared)
            } else {
                (shared, format!("%x{s}"))
            };
            body += &format!(
                "  %p{s} = \"meta.binary\"({a}, {b}) {{kind = \"mul\"}} : ({td}, {td}) -> {td}\n  %r{s} = \"meta.reindex_reduce\"(%p{s}) {{kind = \"add\", indices = affine_map<(i, j, k) -> (i, j)>}} : ({td}) -> {ty}\n"
            );
            // A consumer between members, as a recurrence has.
            if s == 0 {
                body += &format!("  %y0 = \"meta.unary\"(%r0) {{kind = \"neg\"}} : ({ty}) -> {ty}\n");
            } else {
                body += &format!(
                    "  %y{s} = \"meta.binary\"(%r{s}, %y{}) {{kind = \"sub\"}} : ({ty}, {ty}) -> {ty}\n",
                    s - 1
                );
            }
            results.push(format!("%r{s}"));
        }
        results.push(format!("%y{}", self.offsets.len() - 1));
        let types = vec![ty.clone(); results.len()].join(", ");
        format!(
            "func.func @main(%x: {tx}, %w: {tw}) -> ({types}) {{\n{body}  return {} : {types}\n}}\n",
            results.join(", ")
        )
    }

    fn inputs(&self, seed: u64) -> Vec<Value> {
        let [m, _, k] = self.domain;
        [vec![self.rows, m, k], self.w_shape()]
            .iter()
            .enumerate()
            .map(|(i, shape)| Value::tensor(random_of(shape, self.element, seed + i as u64)))
            .collect()
    }
}

/// How many `meta.reindex_reduce` ops `module` holds.
fn reductions(module: &melior::ir::Module) -> usize {
    module
        .as_operation()
        .to_string()
        .matches("\"meta.reindex_reduce\"")
        .count()
}

fn check(program: &Program, seed: u64) {
    let source = program.source();
    let context = new_context().unwrap();
    let collector = DiagnosticCollector::attach(&context);
    let oracle =
        parse_module(&context, &source).unwrap_or_else(|| panic!("{:?}\n{source}", collector.take()));
    let inputs = program.inputs(seed);
    let expected = Interpreter::new(&oracle)
        .run("main", inputs.clone(), &mut StateStore::new())
        .unwrap_or_else(|e| panic!("{e}\n{source}"));

    // The pass alone: one reduction left, the same bits.
    let mut batched = parse_module(&context, &source).unwrap();
    let pass = Pipeline::parse("builtin.module(meta-batch)").unwrap();
    optimize(&context, &mut batched, &pass, &OptimizeOptions::default()).unwrap();
    assert_eq!(
        reductions(&batched),
        1,
        "{program:?}\n{source}\n{}",
        batched.as_operation()
    );
    let after = Interpreter::new(&batched)
        .run("main", inputs.clone(), &mut StateStore::new())
        .unwrap();
    assert!(
        Match::Identical.values(&expected, &after),
        "the pass changed results: {program:?}\n{source}\n{}",
        batched.as_operation()
    );

    // Compiled: exact is bit-identical; fast (a fused multiply-add per
    // step, reassociated) is within 2 γ(k) Σ|x w| of each member's result,
    // the bound docs/semantics.md states (the chain of differences after
    // them cancels, so it is compared exactly only).
    let magnitudes = (program.element != "i32").then(|| {
        let absolute: Vec<Value> = inputs.iter().map(absolute).collect();
        Interpreter::new(&oracle)
            .run("main", absolute, &mut StateStore::new())
            .unwrap()
    });
    for math in [MathMode::Exact, MathMode::Fast] {
        let mut module = parse_module(&context, &source).unwrap();
        let options = CodegenOptions {
            math,
            ..CodegenOptions::default()
        };
        let compiled = CpuModule::compile_with(&context, &mut module, &options).unwrap();
        assert!(compiled.interpreted_kernels().is_empty(), "{source}");
        let actual = compiled
            .run(&module, "main", inputs.clone(), &mut StateStore::new())
            .unwrap();
        let Some(magnitudes) = magnitudes.as_ref().filter(|_| math == MathMode::Fast) else {
            assert!(
                Match::Identical.values(&expected, &actual),
                "{math:?}: {program:?}\n{source}\nexpected {expected:?}\nactual {actual:?}"
            );
            continue;
        };
        let u = if program.element == "f64" {
            f64::EPSILON / 2.0
        } else {
            f64::from(f32::EPSILON) / 2.0
        };
        let k = program.domain[2] as f64;
        let gamma = k * u / (1.0 - k * u);
        for member in 0..program.offsets.len() {
            let (e, a, m) = (
                floats(&expected[member]),
                floats(&actual[member]),
                floats(&magnitudes[member]),
            );
            for i in 0..e.len() {
                assert!(
                    (e[i] - a[i]).abs() <= 2.0 * gamma * m[i],
                    "fast: member {member}, element {i}: {} against {}\n{program:?}\n{source}",
                    a[i],
                    e[i]
                );
            }
        }
    }
}

#[test]
fn random_batches_keep_every_bit() {
    let cases = jitc_test_support::cases("JITC_BATCH_CASES", 24);
    let mut rng = Rng(0xba7c4);
    let mut seen = std::collections::BTreeSet::new();
    for case in 0..cases {
        let program = Program::draw(&mut rng);
        seen.insert(format!(
            "{:?} {} {} {}",
            program.shared, program.padding, program.symbols, program.varying_first
        ));
        check(&program, case);
    }
    // The draws reach the forms the doc names.
    assert!(seen.len() >= 16, "only {} forms drawn: {seen:?}", seen.len());
}

/// The unrolled RNN's shape: 32 projections `x_t W` of 16 x 256 x 256 become
/// one contraction of 512 rows, whose kernel takes the register tiles.
#[test]
fn rnn_projections_batch_into_one_contraction() {
    let program = Program {
        domain: [16, 32, 24],
        offsets: (0..32).collect(),
        rows: 32,
        padding: false,
        symbols: true,
        varying_first: true,
        shared: Shared::EqualReindexes,
        element: "f32",
    };
    check(&program, 7);
    let context = new_context().unwrap();
    let mut module = parse_module(&context, &program.source()).unwrap();
    let options = CodegenOptions::default();
    CpuModule::compile_with(&context, &mut module, &options).unwrap();
    let contractions = jitc_compiler::contractions(&module, &options);
    assert_eq!(contractions.len(), 1);
}
