//! Gradients of the lazy graph (`graph::grad`): every op's gradient
//! against central finite differences in f64 on random shapes, the stated
//! rules for ties and non-differentiable kinds, the errors, and the
//! forward and backward passes computed in one fused fetch.

use jitc_dialect::kinds::ElementType;
use jitc_interp::{Scalar, Tensor};
use jitc_runtime::graph::{self, Backend, Var};
use jitc_test_support::Rng;

/// A random f64 tensor of `shape` with elements in `[low, high)`.
fn uniform(rng: &mut Rng, shape: &[usize], low: f64, high: f64) -> Tensor {
    let mut tensor = Tensor::splat(shape.to_vec(), Scalar::F64(0.0));
    for k in 0..tensor.len() {
        let unit = rng.below(1_000_001) as f64 / 1_000_001.0;
        tensor.buffer_mut().set(k, Scalar::F64(low + (high - low) * unit));
    }
    tensor
}

fn f64s(tensor: &Tensor) -> Vec<f64> {
    (0..tensor.len())
        .map(|k| match tensor.get(k) {
            Scalar::F64(v) => v,
            Scalar::F32(v) => f64::from(v),
            other => panic!("not a float: {other:?}"),
        })
        .collect()
}

/// A random shape of rank 1 to 3, each dimension 1 to 4.
fn shape(rng: &mut Rng) -> Vec<usize> {
    (0..1 + rng.below(3)).map(|_| 1 + rng.below(4)).collect()
}

/// `sum(y * weights)`: a scalar whose gradient with respect to `y` is
/// `weights` (random, so every element of `y` matters differently).
fn weighted_sum(y: &Var, weights: &Tensor) -> Var {
    let w = Var::new(weights.clone());
    let product = y.binary("mul", &w).unwrap();
    product.reindex_reduce("add", &[], &[]).unwrap()
}

/// Checks the gradient of `sum(f(inputs) * w)` with respect to every input
/// against central differences (step `1e-6`, f64), elementwise within
/// `1e-6 (1 + |numeric|)`.
fn check(what: &str, rng: &mut Rng, inputs: &[Tensor], f: &dyn Fn(&[Var]) -> Var) {
    let vars: Vec<Var> = inputs.iter().map(|t| Var::new(t.clone())).collect();
    let y = f(&vars);
    let weights = uniform(rng, y.shape(), -1.0, 1.0);
    let loss = weighted_sum(&y, &weights);
    let refs: Vec<&Var> = vars.iter().collect();
    let gradients = graph::grad(&loss, &refs).unwrap_or_else(|e| panic!("{what}: {e}"));
    let loss_at = |inputs: &[Tensor]| -> f64 {
        let vars: Vec<Var> = inputs.iter().map(|t| Var::new(t.clone())).collect();
        f64s(&weighted_sum(&f(&vars), &weights).fetch().unwrap())[0]
    };
    let step = 1e-6;
    for (k, gradient) in gradients.iter().enumerate() {
        assert_eq!(
            gradient.shape(),
            inputs[k].shape(),
            "{what}: gradient {k}'s shape"
        );
        let analytic = f64s(&gradient.fetch().unwrap_or_else(|e| panic!("{what}: {e}")));
        for (j, &got) in analytic.iter().enumerate() {
            let mut moved = inputs.to_vec();
            let x = f64s(&inputs[k])[j];
            moved[k].buffer_mut().set(j, Scalar::F64(x + step));
            let up = loss_at(&moved);
            moved[k].buffer_mut().set(j, Scalar::F64(x - step));
            let down = loss_at(&moved);
            let numeric = (up - down) / (2.0 * step);
            assert!(
                (got - numeric).abs() <= 1e-6 * (1.0 + numeric.abs()),
                "{what}: d/d input {k}[{j}] (at {x}) is {got}, finite differences say {numeric}"
            );
        }
    }
}

fn unary_cases() -> Vec<(&'static str, f64, f64)> {
    vec![
        ("neg", -2.0, 2.0),
        ("abs", -2.0, 2.0),
        ("exp", -2.0, 2.0),
        ("log", 0.5, 3.0),
        ("sqrt", 0.5, 3.0),
        ("rsqrt", 0.5, 3.0),
        ("sin", -3.0, 3.0),
        ("cos", -3.0, 3.0),
        ("tanh", -2.0, 2.0),
        ("erf", -2.0, 2.0),
        ("sigmoid", -3.0, 3.0),
        ("floor", -3.0, 3.0),
        ("ceil", -3.0, 3.0),
        ("round", -3.0, 3.0),
    ]
}

#[test]
fn every_unary_gradient_matches_finite_differences() {
    let mut rng = Rng(11);
    for (kind, low, high) in unary_cases() {
        for _ in 0..3 {
            let s = shape(&mut rng);
            let x = uniform(&mut rng, &s, low, high);
            check(kind, &mut rng, &[x], &|v| v[0].unary(kind).unwrap());
        }
    }
}

#[test]
fn every_binary_gradient_matches_finite_differences() {
    let mut rng = Rng(12);
    // Each kind with the ranges its operands are drawn from.
    type Range = (f64, f64);
    let cases: [(&str, Range, Range); 8] = [
        ("add", (-2.0, 2.0), (-2.0, 2.0)),
        ("sub", (-2.0, 2.0), (-2.0, 2.0)),
        ("mul", (-2.0, 2.0), (-2.0, 2.0)),
        ("div", (-2.0, 2.0), (0.5, 2.0)),
        ("mod", (-5.0, 5.0), (0.7, 1.9)),
        ("pow", (0.5, 2.0), (-2.0, 2.0)),
        ("max", (-2.0, 2.0), (-2.0, 2.0)),
        ("min", (-2.0, 2.0), (-2.0, 2.0)),
    ];
    for (kind, a, b) in cases {
        for _ in 0..3 {
            let s = shape(&mut rng);
            let x = uniform(&mut rng, &s, a.0, a.1);
            let z = uniform(&mut rng, &s, b.0, b.1);
            check(kind, &mut rng, &[x, z], &|v| v[0].binary(kind, &v[1]).unwrap());
        }
    }
}

#[test]
fn select_routes_the_gradient_by_its_condition() {
    let mut rng = Rng(13);
    for _ in 0..3 {
        let s = shape(&mut rng);
        let inputs = [
            uniform(&mut rng, &s, -1.0, 1.0),
            uniform(&mut rng, &s, -2.0, 2.0),
            uniform(&mut rng, &s, -2.0, 2.0),
        ];
        check("select", &mut rng, &inputs, &|v| {
            let zero = graph::full(v[0].shape(), ElementType::F64, 0.0).unwrap();
            let positive = v[0].binary("gt", &zero).unwrap();
            // The condition's own input gets a gradient through `mul` only.
            let chosen = positive.select(&v[1], &v[2]).unwrap();
            chosen.binary("mul", &v[0]).unwrap()
        });
    }
}

#[test]
fn reindex_gradients_match_finite_differences() {
    let mut rng = Rng(14);
    for _ in 0..3 {
        let (m, n) = (1 + rng.below(4), 1 + rng.below(4));
        let x = uniform(&mut rng, &[m, n], -2.0, 2.0);
        let row = uniform(&mut rng, &[n], -2.0, 2.0);
        check("broadcast", &mut rng, &[row], &|v| {
            v[0].reindex(&[m, n], &["i1"], None, &[]).unwrap()
        });
        check("transpose", &mut rng, std::slice::from_ref(&x), &|v| {
            v[0].reindex(&[n, m], &["i1", "i0"], None, &[]).unwrap()
        });
        // Padding with an overflow value and a condition: neither the
        // padded border nor column 1 gets a gradient.
        check("pad", &mut rng, std::slice::from_ref(&x), &|v| {
            v[0].reindex(&[m + 2, n + 2], &["i0 - 1", "i1 - 1"], Some(0.5), &["i1 == 1"])
                .unwrap()
        });
        let flip = format!("{} - i0", n - 1);
        let long = uniform(&mut rng, &[2 * n], -2.0, 2.0);
        check("flip and stride", &mut rng, &[long], &|v| {
            let strided = v[0].reindex(&[n], &["i0 * 2 + 1"], None, &[]).unwrap();
            strided.reindex(&[n], &[&flip], None, &[]).unwrap()
        });
        // A convolution's window: each input element is read several times.
        let signal = uniform(&mut rng, &[n + 2], -2.0, 2.0);
        check("window", &mut rng, &[signal], &|v| {
            v[0].reindex(&[n, 3], &["i0 + i1"], None, &[]).unwrap()
        });
    }
}

#[test]
fn reduction_gradients_match_finite_differences() {
    let mut rng = Rng(15);
    for _ in 0..3 {
        let (m, n) = (2 + rng.below(3), 2 + rng.below(3));
        let x = uniform(&mut rng, &[m, n], -2.0, 2.0);
        for kind in ["add", "mul", "max", "min"] {
            check(kind, &mut rng, std::slice::from_ref(&x), &|v| {
                v[0].reindex_reduce(kind, &[m], &["i0"]).unwrap()
            });
            check(kind, &mut rng, std::slice::from_ref(&x), &|v| {
                v[0].reindex_reduce(kind, &[], &[]).unwrap()
            });
            // Row 0 maps out of bounds and is dropped: it gets no gradient.
            check(kind, &mut rng, std::slice::from_ref(&x), &|v| {
                v[0].reindex_reduce(kind, &[m - 1], &["i0 - 1"]).unwrap()
            });
            // Scatter: columns folded onto two outputs.
            check(kind, &mut rng, std::slice::from_ref(&x), &|v| {
                v[0].reindex_reduce(kind, &[2], &["i1 mod 2"]).unwrap()
            });
        }
    }
}

#[test]
fn a_product_gets_the_exact_gradient_at_zeros() {
    // One zero: it gets the product of the others, the rest get zero. Two
    // zeros: everything gets zero.
    for (values, want) in [
        ("4xf64=2 0 3 5", [0.0, 30.0, 0.0, 0.0]),
        ("4xf64=2 0 3 0", [0.0, 0.0, 0.0, 0.0]),
        ("4xf64=2 1 3 5", [15.0, 30.0, 10.0, 6.0]),
    ] {
        let x = Var::new(Tensor::parse_literal(values).unwrap());
        let product = x.reindex_reduce("mul", &[], &[]).unwrap();
        let dx = graph::grad(&product, &[&x]).unwrap().remove(0);
        assert_eq!(f64s(&dx.fetch().unwrap()), want, "d prod / dx at {values}");
    }
}

#[test]
fn ties_share_the_gradient_evenly() {
    let x = Var::new(Tensor::parse_literal("5xf64=1 3 3 2 3").unwrap());
    let max = x.reindex_reduce("max", &[], &[]).unwrap();
    let dx = graph::grad(&max, &[&x]).unwrap().remove(0);
    let third = 1.0 / 3.0;
    assert_eq!(f64s(&dx.fetch().unwrap()), [0.0, third, third, 0.0, third]);

    let a = Var::new(Tensor::parse_literal("3xf64=1 2 5").unwrap());
    let b = Var::new(Tensor::parse_literal("3xf64=1 4 3").unwrap());
    let larger = a.binary("max", &b).unwrap();
    let loss = larger.reindex_reduce("add", &[], &[]).unwrap();
    let grads = graph::grad(&loss, &[&a, &b]).unwrap();
    assert_eq!(f64s(&grads[0].fetch().unwrap()), [0.5, 0.0, 1.0]);
    assert_eq!(f64s(&grads[1].fetch().unwrap()), [0.5, 1.0, 0.0]);
}

#[test]
fn casts_pass_gradients_between_float_types_and_integers_stop_them() {
    let x = Var::new(Tensor::parse_literal("3xf64=1.5 -2.25 4").unwrap());
    let narrow = x.cast(ElementType::F32).unwrap();
    let wide = narrow.cast(ElementType::F64).unwrap();
    let doubled = wide.binary("add", &wide).unwrap();
    let truncated = x.cast(ElementType::I32).unwrap().cast(ElementType::F64).unwrap();
    let both = doubled.binary("add", &truncated).unwrap();
    let loss = both.reindex_reduce("add", &[], &[]).unwrap();
    let dx = graph::grad(&loss, &[&x]).unwrap().remove(0);
    assert_eq!(f64s(&dx.fetch().unwrap()), [2.0, 2.0, 2.0]);
}

#[test]
fn f32_models_get_f32_gradients() {
    let mut rng = Rng(16);
    let x = Var::new(uniform(&mut rng, &[3, 4], -1.0, 1.0))
        .cast(ElementType::F32)
        .unwrap();
    let data = x.fetch().unwrap();
    let x = Var::from_arc(data.clone());
    let y = x.unary("tanh").unwrap().reindex_reduce("add", &[], &[]).unwrap();
    let dx = graph::grad(&y, &[&x]).unwrap().remove(0);
    assert_eq!(dx.element(), ElementType::F32);
    let got = f64s(&dx.fetch().unwrap());
    for (k, x) in f64s(&data).into_iter().enumerate() {
        let want = 1.0 - x.tanh().powi(2);
        assert!((got[k] - want).abs() < 1e-6, "{} vs {want}", got[k]);
    }
}

#[test]
fn forward_and_backward_run_in_one_fused_fetch_sharing_values() {
    let x = Var::new(Tensor::parse_literal("2x3xf32=1 2 3 4 5 6").unwrap());
    let e = x.unary("exp").unwrap();
    let rows = e.reindex_reduce("add", &[2], &["i0"]).unwrap();
    let logs = rows.unary("log").unwrap();
    let loss = logs.reindex_reduce("add", &[], &[]).unwrap();
    let dx = graph::grad(&loss, &[&x]).unwrap().remove(0);
    drop((e, rows, logs));
    let dir = std::env::temp_dir().join(format!("jitc-grad-dump-{}", std::process::id()));
    let file = graph::dump(&[&loss, &dx], &dir).unwrap();
    let text = std::fs::read_to_string(&file).unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    // The backward reads the forward's exp instead of computing it again.
    assert_eq!(text.matches("kind = \"exp\"").count(), 1, "{text}");
    let before = graph::stats();
    let values = graph::fetch(&[&loss, &dx]).unwrap();
    let after = graph::stats();
    assert_eq!(after.fetches - before.fetches, 1);
    // The gradient of logsumexp per row is the row's softmax.
    let got = f64s(&values[1]);
    for row in 0..2 {
        let xs: Vec<f64> = (0..3).map(|c| (row * 3 + c + 1) as f64).collect();
        let total: f64 = xs.iter().map(|v| v.exp()).sum();
        for c in 0..3 {
            let want = xs[c].exp() / total;
            assert!((got[row * 3 + c] - want).abs() < 1e-6, "{got:?}");
        }
    }
}

#[test]
fn the_interpreter_backend_gives_the_same_gradients() {
    graph::set_backend(Backend::Interpreter).unwrap();
    let mut rng = Rng(17);
    let x = uniform(&mut rng, &[3, 4], 0.5, 2.0);
    check("interpreted softmax", &mut rng, &[x], &|v| {
        let e = v[0].unary("exp").unwrap();
        let sums = e.reindex_reduce("add", &[3], &["i0"]).unwrap();
        let back = sums.reindex(&[3, 4], &["i0"], None, &[]).unwrap();
        e.binary("div", &back).unwrap()
    });
    graph::set_backend(Backend::Cpu).unwrap();
}

#[test]
fn bad_gradient_requests_are_errors_that_say_why() {
    let x = Var::new(Tensor::parse_literal("3xf32=1 2 3").unwrap());
    let y = x.unary("exp").unwrap();
    let e = graph::grad(&y, &[&x]).unwrap_err().to_string();
    assert!(e.contains("the loss must be a scalar"), "{e}");

    let n = Var::new(Tensor::parse_literal("3xi32=1 2 3").unwrap());
    let total = y.reindex_reduce("add", &[], &[]).unwrap();
    let e = graph::grad(&total, &[&n]).unwrap_err().to_string();
    assert!(e.contains("only f32 and f64 values have gradients"), "{e}");

    total.fetch().unwrap();
    let e = graph::grad(&total, &[&x]).unwrap_err().to_string();
    assert!(e.contains("take gradients before fetching the loss"), "{e}");
    // A loss computed by the fetch of another value that shares its work.
    let h = x.binary("add", &x).unwrap();
    let loss = h
        .binary("mul", &h)
        .unwrap()
        .reindex_reduce("add", &[], &[])
        .unwrap();
    h.fetch().unwrap();
    let e = graph::grad(&loss, &[&x]).unwrap_err().to_string();
    assert!(
        e.contains("a fetch of another value that shares its work computes it too"),
        "{e}"
    );

    // A value the loss does not depend on gets zeros.
    let unrelated = Var::new(Tensor::parse_literal("2xf32=5 6").unwrap());
    let loss = x.unary("exp").unwrap().reindex_reduce("add", &[], &[]).unwrap();
    let zero = graph::grad(&loss, &[&unrelated]).unwrap().remove(0);
    assert_eq!(f64s(&zero.fetch().unwrap()), [0.0, 0.0]);
}

/// The `meta-grad` pass: `@main_grad` of `source` (whose `@main` takes
/// f64 tensors of `shapes`), run in the interpreter and compiled for the
/// CPU, against central differences of `@main` in the interpreter.
fn check_pass(what: &str, source: &str, shapes: &[&[usize]], rng: &mut Rng, low: f64, high: f64) {
    use jitc_compiler::{
        DiagnosticCollector, OptimizeOptions, Pipeline, new_context, optimize, parse_module,
    };
    use jitc_interp::{Interpreter, StateStore, Value};
    let context = new_context().unwrap();
    let collector = DiagnosticCollector::attach(&context);
    let mut module =
        parse_module(&context, source).unwrap_or_else(|| panic!("{what}: {:?}", collector.take()));
    let pipeline = Pipeline::parse("builtin.module(meta-grad)").unwrap();
    optimize(&context, &mut module, &pipeline, &OptimizeOptions::default())
        .unwrap_or_else(|_| panic!("{what}: {:?}", collector.take()));
    let inputs: Vec<Tensor> = shapes.iter().map(|s| uniform(rng, s, low, high)).collect();
    let run = |module: &melior::ir::Module, function: &str, inputs: &[Tensor]| -> Vec<Vec<f64>> {
        let args = inputs.iter().cloned().map(Value::tensor).collect();
        Interpreter::new(module)
            .run(function, args, &mut StateStore::new())
            .unwrap_or_else(|e| panic!("{what}: {e}"))
            .iter()
            .map(|v| match v {
                Value::Tensor(t) => f64s(t),
                other => panic!("{what}: {other:?}"),
            })
            .collect()
    };
    let interpreted = run(&module, "main_grad", &inputs);
    // Compiled: the same values, to rounding.
    let text = module.as_operation().to_string();
    let mut compiled_module = parse_module(&context, &text).unwrap();
    let compiled = jitc_runtime::CpuModule::compile(&context, &mut compiled_module)
        .unwrap_or_else(|e| panic!("{what}: {e}"));
    let args = inputs.iter().cloned().map(Value::tensor).collect();
    let native = compiled
        .run(&compiled_module, "main_grad", args, &mut StateStore::new())
        .unwrap_or_else(|e| panic!("{what}: {e}"));
    for (k, value) in native.iter().enumerate() {
        let Value::Tensor(t) = value else {
            panic!("{what}: not a tensor")
        };
        for (j, (got, want)) in f64s(t.as_ref()).iter().zip(&interpreted[k]).enumerate() {
            assert!(
                (got - want).abs() <= 1e-12 * (1.0 + want.abs()),
                "{what}: compiled result {k}[{j}] is {got}, interpreted {want}"
            );
        }
    }
    let step = 1e-6;
    for (k, input) in inputs.iter().enumerate() {
        for (j, (&x, &got)) in f64s(input).iter().zip(&interpreted[k + 1]).enumerate() {
            let mut moved = inputs.clone();
            moved[k].buffer_mut().set(j, Scalar::F64(x + step));
            let up = run(&module, "main", &moved)[0][0];
            moved[k].buffer_mut().set(j, Scalar::F64(x - step));
            let down = run(&module, "main", &moved)[0][0];
            let numeric = (up - down) / (2.0 * step);
            assert!(
                (got - numeric).abs() <= 1e-6 * (1.0 + numeric.abs()),
                "{what}: d/d argument {k}[{j}] is {got}, finite differences say {numeric}\n{text}"
            );
        }
    }
}

#[test]
fn the_meta_grad_pass_matches_finite_differences_on_every_kind() {
    let mut rng = Rng(18);
    // sum(w * op(x)) for each unary kind.
    for (kind, low, high) in unary_cases() {
        let source = format!(
            r#"func.func @main(%x: tensor<2x3xf64>, %w: tensor<2x3xf64>) -> tensor<f64> {{
  %u = "meta.unary"(%x) {{kind = "{kind}"}} : (tensor<2x3xf64>) -> tensor<2x3xf64>
  %p = "meta.binary"(%u, %w) {{kind = "mul"}} : (tensor<2x3xf64>, tensor<2x3xf64>) -> tensor<2x3xf64>
  %s = "meta.reindex_reduce"(%p) {{kind = "add", indices = affine_map<(d0, d1) -> ()>}} : (tensor<2x3xf64>) -> tensor<f64>
  return %s : tensor<f64>
}}"#
        );
        check_pass(kind, &source, &[&[2, 3], &[2, 3]], &mut rng, low, high);
    }
    // sum(w * (x op y)) for each binary kind, positive operands.
    for kind in ["add", "sub", "mul", "div", "pow", "max", "min", "mod"] {
        let source = format!(
            r#"func.func @main(%x: tensor<4xf64>, %y: tensor<4xf64>, %w: tensor<4xf64>) -> tensor<f64> {{
  %b = "meta.binary"(%x, %y) {{kind = "{kind}"}} : (tensor<4xf64>, tensor<4xf64>) -> tensor<4xf64>
  %p = "meta.binary"(%b, %w) {{kind = "mul"}} : (tensor<4xf64>, tensor<4xf64>) -> tensor<4xf64>
  %s = "meta.reindex_reduce"(%p) {{kind = "add", indices = affine_map<(d0) -> ()>}} : (tensor<4xf64>) -> tensor<f64>
  return %s : tensor<f64>
}}"#
        );
        check_pass(kind, &source, &[&[4], &[4], &[4]], &mut rng, 0.6, 2.0);
    }
    // Reductions of each kind over rows (one row dropped out of bounds);
    // padding with a condition, a window and select.
    for kind in ["add", "mul", "max", "min"] {
        let source = format!(
            r#"func.func @main(%x: tensor<3x4xf64>, %w: tensor<2xf64>) -> tensor<f64> {{
  %r = "meta.reindex_reduce"(%x) {{kind = "{kind}", indices = affine_map<(d0, d1) -> (d0 - 1)>}} : (tensor<3x4xf64>) -> tensor<2xf64>
  %p = "meta.binary"(%r, %w) {{kind = "mul"}} : (tensor<2xf64>, tensor<2xf64>) -> tensor<2xf64>
  %s = "meta.reindex_reduce"(%p) {{kind = "add", indices = affine_map<(d0) -> ()>}} : (tensor<2xf64>) -> tensor<f64>
  return %s : tensor<f64>
}}"#
        );
        check_pass(kind, &source, &[&[3, 4], &[2]], &mut rng, -2.0, 2.0);
    }
    let reindexes = r#"func.func @main(%x: tensor<3x4xf64>, %v: tensor<6xf64>, %w: tensor<5x6xf64>) -> tensor<f64> {
  %p = "meta.reindex"(%x) {indices = affine_map<(d0, d1) -> (d0 - 1, d1 - 1)>, overflow_value = 0.5 : f64, overflow_conditions = [affine_set<(d0, d1) : (d1 - 4 == 0)>]} : (tensor<3x4xf64>) -> tensor<5x6xf64>
  %win = "meta.reindex"(%v) {indices = affine_map<(d0, d1) -> (d0 + d1 - 4)>} : (tensor<6xf64>) -> tensor<5x6xf64>
  %zero = arith.constant dense<0.0> : tensor<5x6xf64>
  %c = "meta.binary"(%win, %zero) {kind = "gt"} : (tensor<5x6xf64>, tensor<5x6xf64>) -> tensor<5x6xi1>
  %sel = "meta.ternary"(%c, %p, %win) {kind = "select"} : (tensor<5x6xi1>, tensor<5x6xf64>, tensor<5x6xf64>) -> tensor<5x6xf64>
  %m = "meta.binary"(%sel, %w) {kind = "mul"} : (tensor<5x6xf64>, tensor<5x6xf64>) -> tensor<5x6xf64>
  %s = "meta.reindex_reduce"(%m) {kind = "add", indices = affine_map<(d0, d1) -> ()>} : (tensor<5x6xf64>) -> tensor<f64>
  return %s : tensor<f64>
}"#;
    check_pass(
        "reindexes and select",
        reindexes,
        &[&[3, 4], &[6], &[5, 6]],
        &mut rng,
        -2.0,
        2.0,
    );
}
