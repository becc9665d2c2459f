//! Helpers shared by jitc's tests, fuzz targets and benchmarks, written
//! once: a seeded xorshift generator ([`Rng`]) and fuzzer bytes
//! ([`Bytes`]) as sources of choices ([`Draw`]), random f32 inputs
//! ([`random`]; f64 and i32 ones: [`random_of`]), float results as f64s
//! and their magnitudes ([`floats`], [`absolute`]), random well-formed meta programs with special inputs
//! ([`random_program`]), random host code around kernels
//! ([`random_host_program`]), the bundled examples' sources ([`example`]),
//! how closely compiled results must match the interpreter's ([`Match`]),
//! and the sweeps that measure math functions in ulps ([`sweep`]).
//!
//! Every crate's tests take these from here (a dev-dependency), so a
//! failing seed reproduces the same program and inputs everywhere.

mod host;
pub mod sweep;

pub use host::random_host_program;
use jitc_interp::{Scalar, StateStore, Tensor, Value};
use std::path::PathBuf;

/// A source of random choices: [`Rng`] for seeded tests, or a fuzzer's
/// bytes.
pub trait Draw {
    /// The next 64 random bits.
    fn draw(&mut self) -> u64;

    /// A number below `n` (which must not be 0).
    fn below(&mut self, n: usize) -> usize {
        (self.draw() % n as u64) as usize
    }

    /// One of `items` (which must not be empty).
    fn pick<'t>(&mut self, items: &[&'t str]) -> &'t str {
        items[self.below(items.len())]
    }
}

impl Draw for Rng {
    fn draw(&mut self) -> u64 {
        self.next()
    }
}

/// Choices read from bytes, eight at a time (little-endian), then zeros
/// once they run out: a fuzzer's input steering a generator.
#[derive(Debug, Clone)]
pub struct Bytes<'b>(pub &'b [u8]);

impl Draw for Bytes<'_> {
    fn draw(&mut self) -> u64 {
        let take = self.0.len().min(8);
        let mut word = [0u8; 8];
        word[..take].copy_from_slice(&self.0[..take]);
        self.0 = &self.0[take..];
        u64::from_le_bytes(word)
    }
}

/// A xorshift64 generator: the same seed gives the same programs and
/// inputs on every machine. Seed it with a nonzero state (xorshift stays at
/// zero), e.g. `Rng(seed.max(1))`.
#[derive(Debug, Clone)]
pub struct Rng(pub u64);

impl Rng {
    /// The next 64 random bits.
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// A number below `n` (which must not be 0).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    /// One of `items` (which must not be empty).
    pub fn pick<'t>(&mut self, items: &[&'t str]) -> &'t str {
        items[self.below(items.len())]
    }
}

/// How closely a compiled result must match the interpreter's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Match {
    /// Equal bits (`-0.0` is not `+0.0`); any NaN equals any NaN, whose
    /// payload is not specified.
    Identical,
    /// [`Match::Identical`], or both finite and at most 4 ulps apart: the
    /// tolerance of `--math exact` on the GPU, whose math library
    /// (libdevice) is not the interpreter's (on the CPU, exact math is
    /// [`Match::Identical`]). Infinities must be exact (`f32::MAX` is one
    /// ulp from `inf` by bits), and so must zeros' signs (the bits of -0
    /// and +0 are far apart).
    Ulps4,
    /// Within a relative 1e-5 (absolute 1e-6 near zero), or both NaN: the
    /// tolerance of `--math fast` (polynomial `exp`/`tanh`, reassociated
    /// reductions of a few terms).
    Relative,
    /// [`Match::Relative`], or within an absolute 1e-4: fast math's sums of
    /// tens of terms added in another order than the interpreter's, in
    /// values within [-1, 1] carried through a recurrence (IndRNN's 64-term
    /// projections on the GPU, through `tanh` and 3-7 steps: 5.4e-6 apart
    /// at most on an H200, up to 4.9e-4 relative where a value is as small
    /// as 0.003). A wrong index or a lost term moves a value by a term's
    /// size, of order 0.1-1 here.
    Reassociated,
}

impl Match {
    /// The tolerance of `--math exact` on the CPU ([`Match::Identical`])
    /// or of `--math fast` ([`Match::Relative`]).
    pub fn for_math(exact: bool) -> Self {
        if exact { Self::Identical } else { Self::Relative }
    }

    /// Whether scalars `a` and `b` match.
    pub fn scalars(self, a: Scalar, b: Scalar) -> bool {
        let (x, y, bits) = match (a, b) {
            (Scalar::F32(x), Scalar::F32(y)) => (
                f64::from(x),
                f64::from(y),
                (x.to_bits() as i64 - y.to_bits() as i64).unsigned_abs(),
            ),
            (Scalar::F64(x), Scalar::F64(y)) => (
                x,
                y,
                (x.to_bits() as i128 - y.to_bits() as i128)
                    .unsigned_abs()
                    .min(u64::MAX as u128) as u64,
            ),
            _ => return a == b,
        };
        let identical = (bits == 0) || (x.is_nan() && y.is_nan());
        match self {
            Self::Identical => identical,
            Self::Ulps4 => identical || (x.is_finite() && y.is_finite() && bits <= 4),
            Self::Relative => identical || x == y || (x - y).abs() <= 1e-5 * x.abs().max(y.abs()) + 1e-6,
            Self::Reassociated => Self::Relative.scalars(a, b) || (x - y).abs() <= 1e-4,
        }
    }

    /// Whether two runs' values match: the same kinds, shapes and element
    /// types, and every element matching.
    pub fn values(self, a: &[Value], b: &[Value]) -> bool {
        a.len() == b.len()
            && a.iter().zip(b).all(|(x, y)| match (x, y) {
                (Value::Tensor(x), Value::Tensor(y)) => self.tensors(x, y),
                (Value::Scalar(x), Value::Scalar(y)) => self.scalars(*x, *y),
                _ => x == y,
            })
    }

    /// Whether two state stores hold the same names with matching tensors.
    pub fn states(self, a: &StateStore, b: &StateStore) -> bool {
        a.iter().count() == b.iter().count()
            && a.iter()
                .zip(b.iter())
                .all(|((ka, va), (kb, vb))| ka == kb && self.tensors(va, vb))
    }

    /// Whether two tensors match.
    pub fn tensors(self, x: &Tensor, y: &Tensor) -> bool {
        x.shape() == y.shape()
            && x.element_type() == y.element_type()
            && (0..x.len()).all(|i| self.scalars(x.get(i), y.get(i)))
    }
}

/// The bundled examples with static shapes and the shapes of their
/// arguments, small enough for tests (`rnn.mlir` also reads the state
/// `rnn.h`, a 4x8 `f32` tensor).
pub const STATIC_EXAMPLES: &[(&str, &[&[usize]])] = &[
    ("conv.mlir", &[&[2, 3, 5, 5], &[4, 3, 3, 3]]),
    ("instance_norm.mlir", &[&[2, 3, 4, 4]]),
    ("sigmoid.mlir", &[&[1024]]),
    ("softmax.mlir", &[&[4, 8]]),
    ("matmul.mlir", &[&[4, 3], &[3, 5]]),
    ("mlp.mlir", &[&[2, 4], &[4, 8], &[8], &[8, 3], &[3]]),
    ("rnn.mlir", &[&[5, 4, 6], &[6, 8], &[8, 8]]),
];

/// `tensor<AxBx...xE>`.
pub fn tensor_type(shape: &[usize], element: &str) -> String {
    let dims: String = shape.iter().map(|d| format!("{d}x")).collect();
    format!("tensor<{dims}{element}>")
}

/// The source of `@main(%a, %b)`, a contraction `y[y_map] = Σ a[a_map] *
/// b[b_map]` over `domain` (each map's results over `d0, d1, ...`) of
/// `element`s, with `a` reading `padding` out of bounds when it is given:
/// a reindex of each operand, a multiply and a reduce-add, as matmul and
/// convolution are written in meta-operators.
pub fn contraction_source(
    domain: &[usize],
    (a, a_map): (&[usize], &str),
    (b, b_map): (&[usize], &str),
    (y, y_map): (&[usize], &str),
    element: &str,
    padding: Option<f64>,
) -> String {
    let dims: Vec<String> = (0..domain.len()).map(|d| format!("d{d}")).collect();
    let map = |results: &str| format!("affine_map<({}) -> ({results})>", dims.join(", "));
    let (ta, tb, ty, td) = (
        tensor_type(a, element),
        tensor_type(b, element),
        tensor_type(y, element),
        tensor_type(domain, element),
    );
    let padding = padding
        .map(|p| format!(", overflow_value = {p:?} : {element}"))
        .unwrap_or_default();
    format!(
        r#"func.func @main(%a: {ta}, %b: {tb}) -> {ty} {{
  %aa = "meta.reindex"(%a) {{indices = {ma}{padding}}} : ({ta}) -> {td}
  %bb = "meta.reindex"(%b) {{indices = {mb}}} : ({tb}) -> {td}
  %p = "meta.binary"(%aa, %bb) {{kind = "mul"}} : ({td}, {td}) -> {td}
  %y = "meta.reindex_reduce"(%p) {{kind = "add", indices = {my}}} : ({td}) -> {ty}
  return %y : {ty}
}}"#,
        ma = map(a_map),
        mb = map(b_map),
        my = map(y_map),
    )
}

/// Random inputs of `shapes`, the `i`th from seed `seed + i`.
pub fn random_inputs(shapes: &[&[usize]], seed: u64) -> Vec<Tensor> {
    shapes
        .iter()
        .enumerate()
        .map(|(i, s)| random(s, seed + i as u64))
        .collect()
}

/// The workspace's `examples/` directory. The test's own crate directory
/// (which cargo sets when it runs a test) comes first: this crate's
/// compile-time one names whichever clone built it, and a target directory
/// shared between clones can hold a build from another.
pub fn examples_dir() -> PathBuf {
    let crate_dir = std::env::var_os("CARGO_MANIFEST_DIR")
        .map_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")), PathBuf::from);
    crate_dir.join("../examples")
}

/// How many random cases a test runs: the environment variable `name`
/// when it holds a number (more for a long run), else `default`.
pub fn cases(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(default)
}

/// The source of `examples/NAME`; panics (this is for tests) when it is
/// missing.
pub fn example(name: &str) -> String {
    let path = examples_dir().join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()))
}

/// An f32 tensor of `shape` with values in [-2.7, 2.7], from `seed`.
pub fn random(shape: &[usize], seed: u64) -> Tensor {
    let mut rng = Rng(seed);
    let n: usize = shape.iter().product();
    let values: Vec<String> = (0..n)
        .map(|_| format!("{}", (rng.below(201) as f32 - 100.0) / 37.0))
        .collect();
    let prefix: String = shape.iter().map(|d| format!("{d}x")).collect();
    Tensor::parse_literal(&format!("{prefix}f32={}", values.join(" "))).expect("a valid literal")
}

/// A tensor of `shape` and `element` from `seed`: for `f32` and `f64` the
/// values of [`random`] (in [-2.7, 2.7]), for `i32` integers in [-20, 20].
pub fn random_of(shape: &[usize], element: &str, seed: u64) -> Tensor {
    if element == "f32" {
        return random(shape, seed);
    }
    let mut rng = Rng(seed);
    let n: usize = shape.iter().product();
    let values: Vec<String> = (0..n)
        .map(|_| match element {
            "i32" => (rng.below(41) as i64 - 20).to_string(),
            _ => format!("{}", (rng.below(201) as f64 - 100.0) / 37.0),
        })
        .collect();
    let prefix: String = shape.iter().map(|d| format!("{d}x")).collect();
    Tensor::parse_literal(&format!("{prefix}{element}={}", values.join(" "))).expect("a valid literal")
}

/// The elements of a float tensor as f64s; panics (this is for tests) on
/// anything else.
pub fn floats(value: &Value) -> Vec<f64> {
    let Value::Tensor(t) = value else {
        panic!("a tensor expected, not {value:?}")
    };
    (0..t.len())
        .map(|i| match t.get(i) {
            Scalar::F32(x) => f64::from(x),
            Scalar::F64(x) => x,
            other => panic!("a float expected, not {other:?}"),
        })
        .collect()
}

/// A float tensor with every element made non-negative (what the bound
/// `Σ|a_i b_i|` of a contraction is computed from); other values (an
/// index) pass unchanged.
pub fn absolute(value: &Value) -> Value {
    let Value::Tensor(t) = value else {
        return value.clone();
    };
    let values: Vec<String> = (0..t.len())
        .map(|i| match t.get(i) {
            Scalar::F32(x) => x.abs().to_string(),
            Scalar::F64(x) => x.abs().to_string(),
            other => panic!("a float expected, not {other:?}"),
        })
        .collect();
    let name = t.type_name();
    let prefix = &name["tensor<".len()..name.len() - 1];
    Value::tensor(Tensor::parse_literal(&format!("{prefix}={}", values.join(" "))).expect("a valid literal"))
}

const FLOATS: &[&str] = &["f32", "f64"];

/// An extreme value of integer `element`, as literal text.
fn extreme(rng: &mut impl Draw, element: &str) -> &'static str {
    if element == "i32" {
        rng.pick(&["-2147483648", "2147483647", "-1", "0"])
    } else {
        rng.pick(&["-9223372036854775808", "9223372036854775807", "-1", "0"])
    }
}

/// A special value of float `element`, as literal text: a signed zero, an
/// infinity, NaN or a subnormal of either sign.
fn special(rng: &mut impl Draw, element: &str) -> &'static str {
    let tiny = if element == "f32" {
        ["1e-40", "-1e-40"]
    } else {
        ["1e-310", "-1e-310"]
    };
    rng.pick(&["0", "-0", "inf", "-inf", "NaN", tiny[0], tiny[1]])
}

/// A random well-formed meta program `@main(%x, %y)` of 3 to 11 ops on
/// two 2-D tensors of one element type, with its two inputs, every choice
/// drawn from `rng`: every element-wise kind, every reduction kind, every
/// element type, and reindex maps with padding, flips, strides and overflow
/// conditions, on shapes with size-1 and prime dimensions. One input
/// element in eight is a special value: a signed zero, an infinity, NaN or
/// a subnormal for floats, an extreme (`MIN`, `MAX`, -1, 0) for integers.
///
/// One program in four is over a dynamic first dimension: `tensor<?xBx..>`
/// arguments, every reindex and row reduction sized by `tensor.dim` of
/// `%x`, so its kernels have dynamic domains. One such program in eight
/// gets a `%y` with one more row than `%x`, so the sizes of its values
/// disagree at run time.
///
/// `runtime/tests/differential.rs` draws from an [`Rng`]; the
/// `differential` fuzz target draws from the fuzzer's bytes, so the fuzzer
/// steers the structure.
pub fn random_program(rng: &mut impl Draw) -> (String, Vec<Tensor>) {
    // One draw for the element type and whether the program is dynamic, so
    // a static program is the one the same draws gave before dynamic ones
    // existed (`n % 20 % 5 == n % 5`).
    let first = rng.below(20);
    let dynamic = first / 5 == 0;
    let element = ["f32", "f64", "i32", "i64", "i1"][first % 5];
    let float = FLOATS.contains(&element);
    let (a, b) = ([1, 2, 3, 5, 7][rng.below(5)], [1, 2, 4, 7, 8][rng.below(5)]);
    let rows = if dynamic { "?".to_owned() } else { a.to_string() };
    // The size operand of an op whose result has the dynamic dimension,
    // and its type.
    let (n, nt) = if dynamic { (", %n", ", index") } else { ("", "") };
    let full = format!("tensor<{rows}x{b}x{element}>");
    let reduced = format!("tensor<{rows}x{element}>");
    let columns = format!("tensor<{b}x{element}>");
    let mask = format!("tensor<{rows}x{b}xi1>");
    let mut values = vec!["%x".to_owned(), "%y".to_owned()];
    let mut masks: Vec<String> = Vec::new();
    let mut body = String::new();
    let unary: &[&str] = match element {
        "f32" | "f64" => &[
            "neg", "abs", "exp", "log", "sqrt", "rsqrt", "sin", "cos", "tanh", "erf", "sigmoid", "floor",
            "ceil", "round",
        ],
        "i1" => &["not"],
        _ => &["neg", "abs", "not"],
    };
    let binary: &[&str] = match element {
        "f32" | "f64" => &["add", "sub", "mul", "div", "mod", "pow", "max", "min"],
        "i1" => &["and", "or", "xor"],
        _ => &[
            "add", "sub", "mul", "div", "mod", "max", "min", "and", "or", "xor",
        ],
    };
    let reductions: &[&str] = if element == "i1" {
        &["and", "or"]
    } else {
        &["add", "mul", "max", "min"]
    };
    for i in 0..(3 + rng.below(9)) {
        let name = format!("%v{i}");
        let last = values[values.len() - 1 - rng.below(values.len().min(3))].clone();
        let other = values[rng.below(values.len())].clone();
        match rng.below(8) {
            0 | 1 => {
                let kind = rng.pick(unary);
                body += &format!(
                    "  {name} = \"meta.unary\"({last}) {{kind = \"{kind}\"}} : ({full}) -> {full}\n"
                );
            }
            2 | 3 => {
                let kind = rng.pick(binary);
                body += &format!(
                    "  {name} = \"meta.binary\"({last}, {other}) {{kind = \"{kind}\"}} : ({full}, {full}) -> {full}\n"
                );
            }
            4 => {
                let kind = rng.pick(&["eq", "ne", "lt", "le", "gt", "ge"]);
                let m = format!("%m{i}");
                body += &format!(
                    "  {m} = \"meta.binary\"({last}, {other}) {{kind = \"{kind}\"}} : ({full}, {full}) -> {mask}\n"
                );
                body += &format!(
                    "  {name} = \"meta.ternary\"({m}, {other}, {last}) {{kind = \"select\"}} : ({mask}, {full}, {full}) -> {full}\n"
                );
                masks.push(m);
            }
            5 => {
                let kind = rng.pick(reductions);
                let r = format!("%r{i}");
                // Rows (the folded dimension innermost), columns (folded
                // outermost), or irregular maps.
                let (map, kept, back) = [
                    ("(d0, d1) -> (d0)", &reduced, "(d0, d1) -> (d0)"),
                    ("(d0, d1) -> (d0 floordiv 2)", &reduced, "(d0, d1) -> (d0)"),
                    ("(d0, d1) -> (a - 1 - d0)", &reduced, "(d0, d1) -> (d0)"),
                    ("(d0, d1) -> (d1)", &columns, "(d0, d1) -> (d1)"),
                    ("(d0, d1) -> (d1 floordiv 2)", &columns, "(d0, d1) -> (d1)"),
                ][rng.below(5)];
                let rows_kept = std::ptr::eq(kept, &reduced);
                // Over a dynamic dimension the flip reads the size as a
                // symbol, after the size operand.
                let (map, operands, types) = match (dynamic, rows_kept) {
                    (true, true) if map.contains('a') => (
                        "(d0, d1)[s0] -> (s0 - 1 - d0)".to_owned(),
                        ", %n, %n",
                        ", index, index",
                    ),
                    (true, true) => (map.to_owned(), n, nt),
                    _ => (map.replace('a', &a.to_string()), "", ""),
                };
                body += &format!(
                    "  {r} = \"meta.reindex_reduce\"({last}{operands}) {{kind = \"{kind}\", indices = affine_map<{map}>}} : ({full}{types}) -> {kept}\n"
                );
                body += &format!(
                    "  {name} = \"meta.reindex\"({r}{n}) {{indices = affine_map<{back}>}} : ({kept}{nt}) -> {full}\n"
                );
            }
            6 => {
                let map = rng
                    .pick(&[
                        "(d0, d1) -> (d0, d1 - 1)",
                        "(d0, d1) -> (d0, B - 1 - d1)",
                        "(d0, d1) -> (d0, d1 * 2)",
                        "(d0, d1) -> (d0 + 1, d1)",
                        "(d0, d1) -> (d0, d1 mod 3)",
                    ])
                    .replace('B', &b.to_string());
                let overflow = if float {
                    format!("2.5 : {element}")
                } else if element == "i1" {
                    "true".to_owned()
                } else {
                    format!("7 : {element}")
                };
                let condition = if rng.below(3) == 0 {
                    ", overflow_conditions = [affine_set<(d0, d1) : (d0 - 1 == 0)>]"
                } else {
                    ""
                };
                body += &format!(
                    "  {name} = \"meta.reindex\"({last}{n}) {{indices = affine_map<{map}>, overflow_value = {overflow}{condition}}} : ({full}{nt}) -> {full}\n"
                );
            }
            _ => {
                // A round trip through another element type.
                let via = rng.pick(&["f32", "f64", "i32", "i64", "i1"]);
                let middle = format!("tensor<{rows}x{b}x{via}>");
                let c = format!("%c{i}");
                body +=
                    &format!("  {c} = \"meta.unary\"({last}) {{kind = \"cast\"}} : ({full}) -> {middle}\n");
                body +=
                    &format!("  {name} = \"meta.unary\"({c}) {{kind = \"cast\"}} : ({middle}) -> {full}\n");
            }
        }
        values.push(name);
    }
    let result = values.last().unwrap();
    let sizes = if dynamic {
        format!("  %zero = arith.constant 0 : index\n  %n = tensor.dim %x, %zero : {full}\n")
    } else {
        String::new()
    };
    let text = format!(
        "func.func @main(%x: {full}, %y: {full}) -> {full} {{\n{sizes}{body}  return {result} : {full}\n}}\n"
    );
    let y_rows = if dynamic && rng.below(8) == 0 { a + 1 } else { a };
    let mut literal = |a: usize| {
        let numbers: Vec<String> = (0..a * b)
            .map(|_| match element {
                "i1" => ["true", "false"][rng.below(2)].to_owned(),
                "i32" | "i64" if rng.below(8) == 0 => extreme(rng, element).to_owned(),
                "i32" | "i64" => (rng.below(21) as i64 - 10).to_string(),
                _ if rng.below(8) == 0 => special(rng, element).to_owned(),
                _ => format!("{}", (rng.below(81) as f64 - 40.0) / 16.0),
            })
            .collect();
        Tensor::parse_literal(&format!("{a}x{b}x{element}={}", numbers.join(" "))).unwrap()
    };
    let inputs = vec![literal(a), literal(y_rows)];
    (text, inputs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_generator_is_xorshift64() {
        let mut rng = Rng(1);
        assert_eq!(rng.next(), 1082269761);
        let t = random(&[2, 3], 7);
        assert_eq!(t.shape(), &[2, 3]);
    }
}
