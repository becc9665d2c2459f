//! Compiled code equals the interpreter: every example, and a few hundred
//! random programs per run covering every element-wise kind, every
//! reduction kind, every element type, and reindex maps with padding,
//! flips, strides and overflow conditions, on shapes with size-1 and prime
//! dimensions.
//!
//! Random inputs: one float element in eight is a special value (a signed
//! zero, an infinity, NaN or a subnormal), where IEEE's rules and the
//! interpreter's (`-0.0` below `+0.0` in `min`/`max`, NaN propagating)
//! are easiest to get wrong.
//!
//! Tolerance: random programs are compiled with `MathMode::Exact`, and
//! results must be identical bit for bit (`-0.0` is not `+0.0`; NaN equals
//! any NaN, whose payload is not specified), except that finite floats may
//! differ by 4 ulps, for `erf`, where the interpreter and the platform libm
//! are different implementations. Reductions fold in the same row-major
//! order on both sides (the loop order keeps it), so they match exactly.
//! The examples are compiled with the default `MathMode::Fast`: polynomial `exp`/`tanh` (a few ulps from
//! libm) and reassociated register reductions, so they are compared with a
//! relative tolerance of 1e-5 (absolute 1e-6 near zero); the
//! approximations themselves are checked value by value in
//! `approximations.rs`.

use jitc_compiler::{
    CodegenOptions, DiagnosticCollector, MathMode, OptimizeOptions, Pipeline, new_context, optimize,
    parse_module,
};
use jitc_interp::{Interpreter, Scalar, StateStore, Tensor, Value};
use jitc_runtime::CpuModule;
use proptest::prelude::*;

use jitc_test_support::{Rng, example, random};

fn near(a: Scalar, b: Scalar) -> bool {
    let (x, y) = match (a, b) {
        (Scalar::F32(x), Scalar::F32(y)) => (x as f64, y as f64),
        (Scalar::F64(x), Scalar::F64(y)) => (x, y),
        _ => return a == b,
    };
    x == y || (x.is_nan() && y.is_nan()) || (x - y).abs() <= 1e-5 * x.abs().max(y.abs()) + 1e-6
}

/// Equal bits (so `-0.0` differs from `+0.0`, which `==` would not
/// tell), both NaN, or finite and at most 4 ulps apart. Infinities must be
/// exact: `f32::MAX` is one ulp from `inf` by bits.
fn close(a: Scalar, b: Scalar) -> bool {
    match (a, b) {
        (Scalar::F32(x), Scalar::F32(y)) => {
            x.to_bits() == y.to_bits()
                || (x.is_nan() && y.is_nan())
                || (x.is_finite() && y.is_finite() && (x.to_bits() as i64 - y.to_bits() as i64).abs() <= 4)
        }
        (Scalar::F64(x), Scalar::F64(y)) => {
            x.to_bits() == y.to_bits()
                || (x.is_nan() && y.is_nan())
                || (x.is_finite() && y.is_finite() && (x.to_bits() as i128 - y.to_bits() as i128).abs() <= 4)
        }
        _ => a == b,
    }
}

fn same(a: &[Value], b: &[Value], math: MathMode) -> bool {
    let equal = |x: Scalar, y: Scalar| match math {
        MathMode::Exact => close(x, y),
        MathMode::Fast => near(x, y),
    };
    a.len() == b.len()
        && a.iter().zip(b).all(|(x, y)| match (x, y) {
            (Value::Tensor(x), Value::Tensor(y)) => {
                x.shape() == y.shape()
                    && x.element_type() == y.element_type()
                    && (0..x.len()).all(|i| equal(x.get(i), y.get(i)))
            }
            _ => x == y,
        })
}

/// Runs `source` both ways on `inputs`; returns a description of any
/// difference.
fn differ(source: &str, inputs: &[Tensor], state: &StateStore, math: MathMode) -> Option<String> {
    let context = new_context().unwrap();
    let collector = DiagnosticCollector::attach(&context);
    let mut module =
        parse_module(&context, source).unwrap_or_else(|| panic!("{:?}\n{source}", collector.take()));
    optimize(
        &context,
        &mut module,
        &Pipeline::default(),
        &OptimizeOptions::default(),
    )
    .unwrap_or_else(|_| panic!("{:?}\n{source}", collector.take()));
    let args = || inputs.iter().cloned().map(Value::tensor).collect::<Vec<_>>();
    let mut interpreted_state = state.clone();
    let interpreted = Interpreter::new(&module).run("main", args(), &mut interpreted_state);
    let options = CodegenOptions {
        math,
        ..CodegenOptions::default()
    };
    let compiled =
        CpuModule::compile_with(&context, &mut module, &options).unwrap_or_else(|e| panic!("{e}\n{source}"));
    if let Some((kernel, reason)) = compiled.interpreted_kernels().first() {
        return Some(format!("kernel @{kernel} was not compiled: {reason}"));
    }
    let mut compiled_state = state.clone();
    let native = compiled.run(&module, "main", args(), &mut compiled_state);
    match (interpreted, native) {
        (Ok(a), Ok(b)) if same(&a, &b, math) && states_match(&interpreted_state, &compiled_state, math) => {
            None
        }
        (Err(_), Err(_)) => None,
        (a, b) => Some(format!("interpreter: {a:?}\ncompiled: {b:?}")),
    }
}

fn states_match(a: &StateStore, b: &StateStore, math: MathMode) -> bool {
    let values = |s: &StateStore| {
        s.iter()
            .map(|(k, v)| (k.to_owned(), Value::tensor(v.clone())))
            .collect::<Vec<_>>()
    };
    let (a, b) = (values(a), values(b));
    a.len() == b.len()
        && a.iter().zip(&b).all(|((ka, va), (kb, vb))| {
            ka == kb && same(std::slice::from_ref(va), std::slice::from_ref(vb), math)
        })
}

const FLOATS: &[&str] = &["f32", "f64"];

/// A special value of float `element`, as literal text: a signed zero, an
/// infinity, NaN or a subnormal of either sign.
fn special(rng: &mut Rng, element: &str) -> &'static str {
    let tiny = if element == "f32" {
        ["1e-40", "-1e-40"]
    } else {
        ["1e-310", "-1e-310"]
    };
    rng.pick(&["0", "-0", "inf", "-inf", "NaN", tiny[0], tiny[1]])
}

fn generate(seed: u64) -> (String, Vec<Tensor>) {
    let mut rng = Rng(seed.max(1));
    let element = rng.pick(&["f32", "f64", "i32", "i64", "i1"]);
    let float = FLOATS.contains(&element);
    let (a, b) = ([1, 2, 3, 5, 7][rng.below(5)], [1, 2, 4, 7, 8][rng.below(5)]);
    let full = format!("tensor<{a}x{b}x{element}>");
    let reduced = format!("tensor<{a}x{element}>");
    let columns = format!("tensor<{b}x{element}>");
    let mask = format!("tensor<{a}x{b}xi1>");
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
                let map = map.replace('a', &a.to_string());
                body += &format!(
                    "  {r} = \"meta.reindex_reduce\"({last}) {{kind = \"{kind}\", indices = affine_map<{map}>}} : ({full}) -> {kept}\n"
                );
                body += &format!(
                    "  {name} = \"meta.reindex\"({r}) {{indices = affine_map<{back}>}} : ({kept}) -> {full}\n"
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
                    "  {name} = \"meta.reindex\"({last}) {{indices = affine_map<{map}>, overflow_value = {overflow}{condition}}} : ({full}) -> {full}\n"
                );
            }
            _ => {
                // A round trip through another element type.
                let via = rng.pick(&["f32", "f64", "i32", "i64", "i1"]);
                let middle = format!("tensor<{a}x{b}x{via}>");
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
    let text = format!(
        "func.func @main(%x: {full}, %y: {full}) -> {full} {{\n{body}  return {result} : {full}\n}}\n"
    );
    let mut literal = || {
        let numbers: Vec<String> = (0..a * b)
            .map(|_| match element {
                "i1" => ["true", "false"][rng.below(2)].to_owned(),
                "i32" | "i64" => (rng.below(21) as i64 - 10).to_string(),
                _ if rng.below(8) == 0 => special(&mut rng, element).to_owned(),
                _ => format!("{}", (rng.below(81) as f64 - 40.0) / 16.0),
            })
            .collect();
        Tensor::parse_literal(&format!("{a}x{b}x{element}={}", numbers.join(" "))).unwrap()
    };
    let inputs = vec![literal(), literal()];
    (text, inputs)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    #[test]
    fn compiled_equals_interpreted(seed in any::<u64>()) {
        let (source, inputs) = generate(seed);
        if let Some(difference) = differ(&source, &inputs, &StateStore::new(), MathMode::Exact) {
            prop_assert!(false, "{difference}\nprogram:\n{source}\ninputs: {inputs:?}");
        }
    }
}

#[test]
fn every_example_matches() {
    let cases: &[(&str, &[&[usize]])] = &[
        ("conv.mlir", &[&[2, 3, 5, 5], &[4, 3, 3, 3]]),
        ("instance_norm.mlir", &[&[2, 3, 4, 4]]),
        ("sigmoid.mlir", &[&[1024]]),
        ("softmax.mlir", &[&[4, 8]]),
        ("matmul.mlir", &[&[4, 3], &[3, 5]]),
        ("mlp.mlir", &[&[2, 4], &[4, 8], &[8], &[8, 3], &[3]]),
        ("rnn.mlir", &[&[5, 4, 6], &[6, 8], &[8, 8]]),
    ];
    for (name, shapes) in cases {
        let inputs: Vec<Tensor> = shapes
            .iter()
            .enumerate()
            .map(|(i, s)| random(s, 7 + i as u64))
            .collect();
        let mut state = StateStore::new();
        state.insert("rnn.h", random(&[4, 8], 99));
        if let Some(difference) = differ(&example(name), &inputs, &state, MathMode::Fast) {
            panic!("{name}: {difference}");
        }
    }
}

/// Large element-wise kernels are split across threads (when the machine
/// has several cores); the parts must add up to the interpreter's result.
#[test]
fn kernels_split_across_threads_match() {
    let source = r#"func.func @main(%x: tensor<257x256xf32>, %y: tensor<257x256xf32>) -> (tensor<257x256xf32>, tensor<257xf32>) {
  %t = "meta.unary"(%x) {kind = "tanh"} : (tensor<257x256xf32>) -> tensor<257x256xf32>
  %f = "meta.reindex"(%y) {indices = affine_map<(i, j) -> (256 - i, 255 - j)>} : (tensor<257x256xf32>) -> tensor<257x256xf32>
  %m = "meta.binary"(%t, %f) {kind = "lt"} : (tensor<257x256xf32>, tensor<257x256xf32>) -> tensor<257x256xi1>
  %s = "meta.ternary"(%m, %t, %f) {kind = "select"} : (tensor<257x256xi1>, tensor<257x256xf32>, tensor<257x256xf32>) -> tensor<257x256xf32>
  %r = "meta.reindex_reduce"(%x) {kind = "add", indices = affine_map<(i, j) -> (i)>} : (tensor<257x256xf32>) -> tensor<257xf32>
  return %s, %r : tensor<257x256xf32>, tensor<257xf32>
}"#;
    assert!(jitc_runtime::cpu::thread_count() >= 1);
    let inputs = vec![random(&[257, 256], 3), random(&[257, 256], 4)];
    if let Some(difference) = differ(source, &inputs, &StateStore::new(), MathMode::Fast) {
        panic!("{difference}");
    }
}
