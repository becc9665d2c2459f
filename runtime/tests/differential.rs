//! Compiled code equals the interpreter: every example, and a few hundred
//! random programs per run (`jitc_test_support::random_program`) covering
//! every element-wise kind, every reduction kind, every element type, and
//! reindex maps with padding, flips, strides and overflow conditions, on
//! shapes with size-1 and prime dimensions.
//!
//! Random inputs: one element in eight is a special value (a signed zero,
//! an infinity, NaN or a subnormal; an integer extreme), where IEEE's
//! rules and the interpreter's (`-0.0` below `+0.0` in `min`/`max`, NaN
//! propagating, wrapping integer arithmetic) are easiest to get wrong.
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

use jitc_test_support::{Rng, example, random, random_program};

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

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    #[test]
    fn compiled_equals_interpreted(seed in any::<u64>()) {
        let (source, inputs) = random_program(&mut Rng(seed.max(1)));
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
