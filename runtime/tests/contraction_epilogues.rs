//! Contraction epilogues (`lower::epilogue`): a register-tiled contraction
//! and the element-wise kernel that reads its result run as one kernel,
//! the consumer's ops on each tile as it finishes. Random contractions
//! (matmuls plain, transposed either way, batched, with a fold long
//! enough to pack; padded and strided convolutions) with random consumers
//! (a bias and ReLU with its mask, `tanh` of a sum with another input,
//! `sigmoid(z) z`, a scale by a host constant, a row of a sequence read by
//! a symbol) agree with the interpreter: bit for bit in exact math, and
//! within the contraction's bound plus a few ulps of the consumer in fast
//! math. Each case checks whether the epilogue was made (not for a
//! contraction that packs its operand) and whether the contraction still
//! writes its own sums (when they are returned too). A consumer that
//! divides by zero fails as the interpreter does.

use jitc_compiler::{CodegenOptions, MathMode, new_context, parse_module};
use jitc_interp::{Buffer, Interpreter, Scalar, StateStore, Tensor, Value};
use jitc_runtime::CpuModule;
use jitc_test_support::{Match, Rng, absolute, floats, random_of, tensor_type};
use melior::ir::operation::OperationLike;

/// How the contraction reads its operands.
#[derive(Debug, Clone, Copy)]
enum Form {
    /// `z[i, j] = Σ_k a[i, k] b[k, j]`.
    Matmul,
    /// `a` stored as `[k, i]`.
    TransposedA,
    /// `b` stored as `[j, k]` (gathered into the packed panel).
    TransposedB,
    /// A batch of 2.
    Batched,
    /// A convolution of `x[1, c, h, w]` by `p[o, c, 3, 3]`, padded by 1
    /// with `stride`: `z[o, y, x]`.
    Conv { stride: usize },
}

/// What the consumer computes from the sums `z`.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Consumer {
    /// `max(z + bias[j], 0)` and the mask `z + bias[j] > 0`.
    BiasRelu,
    /// `tanh(z + other)`, `other` of `z`'s shape.
    TanhSum,
    /// `sigmoid(z) * z`: the sums read twice.
    Swish,
    /// `z * 0.5` (the constant is fused into the consumer's kernel).
    Scale,
    /// `tanh(z + seq[t, ...])`: a row of a sequence, `t` a symbol.
    Step,
    /// The same with `t` a constant made in the host code between the two
    /// calls (it moves before the contraction).
    StepAtConstant,
}

struct Case {
    form: Form,
    /// Rows, columns, fold (for a convolution: out channels, the output's
    /// side, in channels).
    m: usize,
    n: usize,
    k: usize,
    element: &'static str,
    consumer: Consumer,
    /// The function returns the sums too.
    returns_sums: bool,
}

/// A contraction's shapes: the sums `z`, the operands `a` and `b`, the
/// domain; the maps of `a`, `b` and `z`; and whether `a` is read padded.
struct Shapes {
    z: Vec<usize>,
    a: Vec<usize>,
    b: Vec<usize>,
    domain: Vec<usize>,
    maps: [String; 3],
    padded: bool,
}

impl Case {
    /// The contraction's shapes and maps.
    fn contraction(&self) -> Shapes {
        let (m, n, k) = (self.m, self.n, self.k);
        let shapes =
            |z: Vec<usize>, a: Vec<usize>, b: Vec<usize>, domain: Vec<usize>, maps: [&str; 3]| Shapes {
                z,
                a,
                b,
                domain,
                maps: maps.map(str::to_owned),
                padded: false,
            };
        match self.form {
            Form::Matmul => shapes(
                vec![m, n],
                vec![m, k],
                vec![k, n],
                vec![m, n, k],
                ["d0, d2", "d2, d1", "d0, d1"],
            ),
            Form::TransposedA => shapes(
                vec![m, n],
                vec![k, m],
                vec![k, n],
                vec![m, n, k],
                ["d2, d0", "d2, d1", "d0, d1"],
            ),
            Form::TransposedB => shapes(
                vec![m, n],
                vec![m, k],
                vec![n, k],
                vec![m, n, k],
                ["d0, d2", "d1, d2", "d0, d1"],
            ),
            Form::Batched => shapes(
                vec![2, m, n],
                vec![2, m, k],
                vec![2, k, n],
                vec![2, m, n, k],
                ["d0, d1, d3", "d0, d3, d2", "d0, d1, d2"],
            ),
            Form::Conv { stride } => {
                // Output side n, input side so that a 3x3 window with
                // padding 1 and this stride covers it.
                let side = (n - 1) * stride + 1;
                Shapes {
                    z: vec![m, n, n],
                    a: vec![1, k, side, side],
                    b: vec![m, k, 3, 3],
                    domain: vec![m, n, n, k, 3, 3],
                    maps: [
                        format!("0, d3, d1 * {stride} + d4 - 1, d2 * {stride} + d5 - 1"),
                        "d0, d3, d4, d5".into(),
                        "d0, d1, d2".into(),
                    ],
                    padded: true,
                }
            }
        }
    }

    /// The program, and the shapes of its arguments (the index `t` of a
    /// step is not among them).
    fn source(&self) -> (String, Vec<Vec<usize>>) {
        self.program(false)
    }

    /// The program, or with `sums_only` the same function returning the
    /// sums alone, and the shapes of its arguments.
    fn program(&self, sums_only: bool) -> (String, Vec<Vec<usize>>) {
        let Shapes {
            z,
            a,
            b,
            domain,
            maps: [map_a, map_b, map_z],
            padded,
        } = self.contraction();
        let e = self.element;
        let t = |shape: &[usize]| tensor_type(shape, e);
        let dims: Vec<String> = (0..domain.len()).map(|d| format!("d{d}")).collect();
        let dims = dims.join(", ");
        let zdims: Vec<String> = (0..z.len()).map(|d| format!("d{d}")).collect();
        let zdims = zdims.join(", ");
        let last = z[z.len() - 1];
        let sequence = {
            let mut shape = vec![3];
            shape.extend(&z);
            shape
        };
        let (extra, extra_type, extra_shape) = match self.consumer {
            Consumer::BiasRelu => (", %bias: ", t(&[last]), vec![vec![last]]),
            Consumer::TanhSum => (", %other: ", t(&z), vec![z.clone()]),
            Consumer::Step => (
                ", %seq: ",
                format!("{}, %t: index", t(&sequence)),
                vec![sequence.clone()],
            ),
            Consumer::StepAtConstant => (", %seq: ", t(&sequence), vec![sequence.clone()]),
            _ => ("", String::new(), Vec::new()),
        };
        let extra = if extra.is_empty() {
            String::new()
        } else {
            format!("{extra}{extra_type}")
        };
        let padding = match padded {
            true => format!(", overflow_value = 0.0 : {e}"),
            false => String::new(),
        };
        let mut results = Vec::new();
        let mut body = format!(
            r#"  %ab = "meta.reindex"(%a) {{indices = affine_map<({dims}) -> ({map_a})>{padding}}} : ({ta}) -> {td}
  %bb = "meta.reindex"(%b) {{indices = affine_map<({dims}) -> ({map_b})>}} : ({tb}) -> {td}
  %p = "meta.binary"(%ab, %bb) {{kind = "mul"}} : ({td}, {td}) -> {td}
  %z = "meta.reindex_reduce"(%p) {{kind = "add", indices = affine_map<({dims}) -> ({map_z})>}} : ({td}) -> {tz}
"#,
            ta = t(&a),
            tb = t(&b),
            td = t(&domain),
            tz = t(&z),
        );
        let tz = t(&z);
        let mask = tensor_type(&z, "i1");
        match self.consumer {
            Consumer::BiasRelu => {
                body += &format!(
                    r#"  %bias_b = "meta.reindex"(%bias) {{indices = affine_map<({zdims}) -> (d{})>}} : ({}) -> {tz}
  %s = "meta.binary"(%z, %bias_b) {{kind = "add"}} : ({tz}, {tz}) -> {tz}
  %zero = arith.constant dense<0.0> : {tz}
  %y = "meta.binary"(%s, %zero) {{kind = "max"}} : ({tz}, {tz}) -> {tz}
  %mask = "meta.binary"(%s, %zero) {{kind = "gt"}} : ({tz}, {tz}) -> {mask}
"#,
                    z.len() - 1,
                    t(&[last]),
                );
                results.push(("%y", tz.clone()));
                results.push(("%mask", mask));
            }
            Consumer::TanhSum => {
                body += &format!(
                    r#"  %s = "meta.binary"(%z, %other) {{kind = "add"}} : ({tz}, {tz}) -> {tz}
  %y = "meta.unary"(%s) {{kind = "tanh"}} : ({tz}) -> {tz}
"#
                );
                results.push(("%y", tz.clone()));
            }
            Consumer::Swish => {
                body += &format!(
                    r#"  %g = "meta.unary"(%z) {{kind = "sigmoid"}} : ({tz}) -> {tz}
  %y = "meta.binary"(%g, %z) {{kind = "mul"}} : ({tz}, {tz}) -> {tz}
"#
                );
                results.push(("%y", tz.clone()));
            }
            Consumer::Scale => {
                body += &format!(
                    r#"  %half = arith.constant dense<0.5> : {tz}
  %y = "meta.binary"(%z, %half) {{kind = "mul"}} : ({tz}, {tz}) -> {tz}
"#
                );
                results.push(("%y", tz.clone()));
            }
            Consumer::Step | Consumer::StepAtConstant => {
                if self.consumer == Consumer::StepAtConstant {
                    body += "  %t = arith.constant 1 : index\n";
                }
                body += &format!(
                    r#"  %row = "meta.reindex"(%seq, %t) {{indices = affine_map<({zdims})[t] -> (t, {zdims})>, overflow_value = 0.25 : {e}}} : ({}, index) -> {tz}
  %s = "meta.binary"(%z, %row) {{kind = "add"}} : ({tz}, {tz}) -> {tz}
  %y = "meta.unary"(%s) {{kind = "tanh"}} : ({tz}) -> {tz}
"#,
                    t(&sequence),
                );
                results.push(("%y", tz.clone()));
            }
        }
        if self.returns_sums {
            results.push(("%z", tz.clone()));
        }
        if sums_only {
            results = vec![("%z", tz.clone())];
        }
        let names: Vec<&str> = results.iter().map(|(n, _)| *n).collect();
        let types: Vec<String> = results.iter().map(|(_, t)| t.clone()).collect();
        let source = format!(
            "func.func @main(%a: {}, %b: {}{extra}) -> ({}) {{\n{body}  return {} : {}\n}}\n",
            t(&a),
            t(&b),
            types.join(", "),
            names.join(", "),
            types.join(", "),
        );
        let mut shapes = vec![a, b];
        shapes.extend(extra_shape);
        (source, shapes)
    }
}

/// `case` compiled with `math`: the interpreter's module, the compiled
/// one, and for each epilogue the compiler made, whether the contraction
/// still writes its sums.
fn compile<'c>(
    context: &'c melior::Context,
    source: &str,
    math: MathMode,
) -> (
    melior::ir::Module<'c>,
    melior::ir::Module<'c>,
    CpuModule,
    Vec<bool>,
) {
    let oracle = parse_module(context, source).unwrap_or_else(|| panic!("does not parse:\n{source}"));
    let options = CodegenOptions {
        math,
        ..CodegenOptions::default()
    };
    // What the compiler makes of it, seen on a copy.
    let mut planned = parse_module(context, source).unwrap();
    let plan = jitc_compiler::cpu_plan(context, &mut planned, &options).unwrap();
    let written = plan.epilogues.iter().map(|e| e.sums_written).collect();
    let mut module = parse_module(context, source).unwrap();
    let compiled = CpuModule::compile_with(context, &mut module, &options).unwrap();
    assert!(compiled.interpreted_kernels().is_empty(), "{source}");
    (oracle, module, compiled, written)
}

/// The interpreter's results on `inputs`, and the compiled code's.
fn run_both(
    oracle: &melior::ir::Module,
    module: &melior::ir::Module,
    compiled: &CpuModule,
    inputs: Vec<Value>,
) -> (Vec<Value>, Vec<Value>) {
    let expected = Interpreter::new(oracle)
        .run("main", inputs.clone(), &mut StateStore::new())
        .unwrap();
    let actual = compiled
        .run(module, "main", inputs, &mut StateStore::new())
        .unwrap();
    (expected, actual)
}

/// The elements of a float or boolean tensor, as f64s.
fn numbers(value: &Value) -> Vec<f64> {
    let Value::Tensor(t) = value else {
        panic!("a tensor expected, not {value:?}")
    };
    (0..t.len())
        .map(|i| match t.get(i) {
            Scalar::I1(b) => f64::from(u8::from(b)),
            _ => floats(value)[i],
        })
        .collect()
}

/// Runs `case` with `math` on inputs from `seed` (and each step `t` for a
/// sequence) and compares with the interpreter; returns whether an
/// epilogue was made and, if so, whether the contraction still writes its
/// sums.
fn check(what: &str, case: &Case, seed: u64, math: MathMode) -> Option<bool> {
    let (source, shapes) = case.source();
    let context = new_context().unwrap();
    let (oracle, module, compiled, written) = compile(&context, &source, math);
    let written = match written[..] {
        [] => None,
        [written] => Some(written),
        _ => panic!(
            "{what}: {} epilogues, one at most expected\n{source}",
            written.len()
        ),
    };
    // The epilogue function is what the host calls.
    let epilogues = jitc_dialect::ops::functions(module.body())
        .values()
        .filter(|f| f.has_attribute("meta.epilogue"))
        .count();
    assert_eq!(epilogues, usize::from(written.is_some()), "{what}");
    let tensors: Vec<Value> = shapes
        .iter()
        .enumerate()
        .map(|(i, shape)| Value::tensor(random_of(shape, case.element, seed ^ (i as u64 * 0x9e37))))
        .collect();
    let steps: &[i64] = match case.consumer {
        Consumer::Step => &[0, 2, 3, -1],
        _ => &[i64::MIN],
    };
    for &t in steps {
        let mut inputs = tensors.clone();
        if t != i64::MIN {
            inputs.push(Value::Index(t));
        }
        let (expected, actual) = run_both(&oracle, &module, &compiled, inputs.clone());
        let what = format!("{what}, t = {t}, {math:?}");
        // Later calls may split the kernel across the worker team (the
        // first runs alone, to learn its speed): the same bits.
        for call in 2..=4 {
            let again = compiled
                .run(&module, "main", inputs.clone(), &mut StateStore::new())
                .unwrap();
            assert!(Match::Identical.values(&actual, &again), "{what}: call {call}");
        }
        if math == MathMode::Exact {
            assert!(Match::Identical.values(&expected, &actual), "{what}\n{source}");
            continue;
        }
        // The sums within 2 γ(n) Σ|a b| (n products each, reassociated);
        // the consumer's functions move them by at most 1.1 times as much
        // (bias, ReLU, tanh and the scale are 1-Lipschitz, sigmoid(z) z
        // 1.1-Lipschitz) and add a few ulps of their own.
        let shapes = case.contraction();
        let z_points: usize = shapes.z.iter().product();
        let products = shapes.domain.iter().product::<usize>() / z_points.max(1);
        let u = if case.element == "f64" {
            f64::EPSILON / 2.0
        } else {
            f64::from(f32::EPSILON) / 2.0
        };
        let gamma = products as f64 * u / (1.0 - products as f64 * u);
        // Σ|a b| per output: the sums alone, on the inputs' magnitudes.
        let (sums_only, _) = case.program(true);
        let sums_module = parse_module(&context, &sums_only).unwrap();
        let magnitudes = Interpreter::new(&sums_module)
            .run(
                "main",
                inputs.iter().map(absolute).collect(),
                &mut StateStore::new(),
            )
            .unwrap();
        let magnitudes = floats(&magnitudes[0]);
        for (r, (e, a)) in expected.iter().zip(&actual).enumerate() {
            let (e, a) = (numbers(e), numbers(a));
            for (i, (x, y)) in e.iter().zip(&a).enumerate() {
                let allowed = 2.2 * gamma * magnitudes[i] + 16.0 * u * x.abs() + f64::from(f32::MIN_POSITIVE);
                if r == 1 && case.consumer == Consumer::BiasRelu {
                    // The mask: wrong only where the sum is within the
                    // bound of 0.
                    if x != y {
                        let y_value = floats(&expected[0])[i];
                        assert!(y_value <= allowed, "{what}: mask {i}: {y} against {x}");
                    }
                    continue;
                }
                assert!(
                    (x - y).abs() <= allowed,
                    "{what}: result {r}, {i}: {y} against {x}"
                );
            }
        }
    }
    written
}

#[test]
fn random_contractions_with_consumers_match_the_interpreter() {
    let mut rng = Rng(0xe91_0609);
    let consumers = [
        Consumer::BiasRelu,
        Consumer::TanhSum,
        Consumer::Swish,
        Consumer::Scale,
        Consumer::Step,
        Consumer::StepAtConstant,
    ];
    let mut made = [0usize; 3];
    for round in 0..30 {
        let form = match round % 6 {
            0 | 1 => Form::Matmul,
            2 => Form::TransposedA,
            3 => Form::TransposedB,
            4 => Form::Batched,
            _ => Form::Conv {
                stride: 1 + rng.below(2),
            },
        };
        // Columns of 16 at least, so every form tiles on AVX2 and AVX-512
        // alike (convolutions: an output side of 8 or more, half a vector).
        let (m, n, k) = match form {
            Form::Conv { .. } => (1 + rng.below(12), 8 + rng.below(6), 1 + rng.below(6)),
            _ => (1 + rng.below(30), 16 + rng.below(70), 1 + rng.below(40)),
        };
        let case = Case {
            form,
            m,
            n,
            k,
            element: if round % 7 == 6 { "f64" } else { "f32" },
            consumer: consumers[rng.below(consumers.len())],
            returns_sums: rng.below(4) == 0,
        };
        let what = format!(
            "round {round}: {form:?} {m}x{n}x{k} {} {:?}",
            case.element, case.consumer
        );
        let seed = rng.below(1 << 30) as u64;
        let exact = check(&what, &case, seed, MathMode::Exact);
        let fast = check(&what, &case, seed, MathMode::Fast);
        assert_eq!(exact, fast, "{what}");
        // A transposed `b` is gathered into packed blocks, and a stride of
        // 2 along the output's last dimension is no register tile (module
        // doc of `lower::contract`): no epilogue. The others have one,
        // which writes the sums only when they are returned too.
        let apart = matches!(form, Form::TransposedB | Form::Conv { stride: 2 });
        let expected = (!apart).then_some(case.returns_sums);
        assert_eq!(exact, expected, "{what}");
        made[match exact {
            None => 0,
            Some(false) => 1,
            Some(true) => 2,
        }] += 1;
    }
    assert!(made.iter().all(|&n| n > 0), "not every way was taken: {made:?}");
}

#[test]
fn a_contraction_that_packs_keeps_its_consumer_apart() {
    // K = 600: the fold runs in packed blocks (module doc of
    // `lower::epilogue`), and the two kernels stay apart, still right.
    for consumer in [Consumer::BiasRelu, Consumer::TanhSum] {
        let case = Case {
            form: Form::Matmul,
            m: 37,
            n: 70,
            k: 600,
            element: "f32",
            consumer,
            returns_sums: false,
        };
        for math in [MathMode::Exact, MathMode::Fast] {
            let made = check(&format!("37x70x600 {consumer:?}"), &case, 9, math);
            assert_eq!(made, None);
        }
    }
}

#[test]
fn a_consumer_split_across_threads_matches_the_interpreter() {
    // Long enough (1.3 M multiply-adds, some tens of microseconds) for the
    // worker team to split it once a call has shown its speed (`check`
    // calls it four times); 157 rows leave a remainder of tiles in every
    // part, 130 columns a masked last vector.
    let case = Case {
        form: Form::Matmul,
        m: 157,
        n: 130,
        k: 64,
        element: "f32",
        consumer: Consumer::BiasRelu,
        returns_sums: false,
    };
    for math in [MathMode::Exact, MathMode::Fast] {
        assert_eq!(check("157x130x64", &case, 11, math), Some(false));
    }
}

/// A consumer that converts the sums to integers and divides by `d`.
const DIVIDING: &str = r#"func.func @main(%a: tensor<8x20xf32>, %b: tensor<20x32xf32>, %d: tensor<8x32xi32>) -> tensor<8x32xi32> {
  %ab = "meta.reindex"(%a) {indices = affine_map<(d0, d1, d2) -> (d0, d2)>} : (tensor<8x20xf32>) -> tensor<8x32x20xf32>
  %bb = "meta.reindex"(%b) {indices = affine_map<(d0, d1, d2) -> (d2, d1)>} : (tensor<20x32xf32>) -> tensor<8x32x20xf32>
  %p = "meta.binary"(%ab, %bb) {kind = "mul"} : (tensor<8x32x20xf32>, tensor<8x32x20xf32>) -> tensor<8x32x20xf32>
  %z = "meta.reindex_reduce"(%p) {kind = "add", indices = affine_map<(d0, d1, d2) -> (d0, d1)>} : (tensor<8x32x20xf32>) -> tensor<8x32xf32>
  %i = "meta.unary"(%z) {kind = "cast"} : (tensor<8x32xf32>) -> tensor<8x32xi32>
  %q = "meta.binary"(%i, %d) {kind = "div"} : (tensor<8x32xi32>, tensor<8x32xi32>) -> tensor<8x32xi32>
  return %q : tensor<8x32xi32>
}"#;

#[test]
fn a_consumer_that_divides_by_zero_fails_as_the_interpreter_does() {
    let context = new_context().unwrap();
    let (oracle, module, compiled, written) = compile(&context, DIVIDING, MathMode::Exact);
    assert_eq!(written, [false], "the division's kernel is an epilogue");
    let a = Value::tensor(random_of(&[8, 20], "f32", 1));
    let b = Value::tensor(random_of(&[20, 32], "f32", 2));
    for zero_at in [None, Some(0), Some(200), Some(255)] {
        let mut divisors: Vec<i64> = (0..256).map(|i| 1 + i % 5).collect();
        if let Some(at) = zero_at {
            divisors[at] = 0;
        }
        let divisors: Vec<i32> = divisors.iter().map(|&x| x as i32).collect();
        let d = Value::tensor(Tensor::new(vec![8, 32], Buffer::I32(divisors.into())).unwrap());
        let inputs = vec![a.clone(), b.clone(), d];
        let expected = Interpreter::new(&oracle).run("main", inputs.clone(), &mut StateStore::new());
        let actual = compiled.run(&module, "main", inputs, &mut StateStore::new());
        match (expected, actual) {
            (Ok(e), Ok(a)) => assert!(Match::Identical.values(&e, &a), "zero at {zero_at:?}"),
            (Err(e), Err(a)) => assert_eq!(e.to_string(), a.to_string(), "zero at {zero_at:?}"),
            (e, a) => panic!("zero at {zero_at:?}: the interpreter gave {e:?}, the compiled code {a:?}"),
        }
    }
}

/// Two layers of one input: two contractions, then their consumers, the
/// second contraction's call between the first and its consumer.
const TWO_LAYERS: &str = r#"func.func @main(%x: tensor<16x32xf32>, %w1: tensor<32x48xf32>, %w2: tensor<32x40xf32>) -> (tensor<16x48xf32>, tensor<16x40xf32>) {
  %x1 = "meta.reindex"(%x) {indices = affine_map<(d0, d1, d2) -> (d0, d2)>} : (tensor<16x32xf32>) -> tensor<16x48x32xf32>
  %b1 = "meta.reindex"(%w1) {indices = affine_map<(d0, d1, d2) -> (d2, d1)>} : (tensor<32x48xf32>) -> tensor<16x48x32xf32>
  %p1 = "meta.binary"(%x1, %b1) {kind = "mul"} : (tensor<16x48x32xf32>, tensor<16x48x32xf32>) -> tensor<16x48x32xf32>
  %z1 = "meta.reindex_reduce"(%p1) {kind = "add", indices = affine_map<(d0, d1, d2) -> (d0, d1)>} : (tensor<16x48x32xf32>) -> tensor<16x48xf32>
  %x2 = "meta.reindex"(%x) {indices = affine_map<(d0, d1, d2) -> (d0, d2)>} : (tensor<16x32xf32>) -> tensor<16x40x32xf32>
  %b2 = "meta.reindex"(%w2) {indices = affine_map<(d0, d1, d2) -> (d2, d1)>} : (tensor<32x40xf32>) -> tensor<16x40x32xf32>
  %p2 = "meta.binary"(%x2, %b2) {kind = "mul"} : (tensor<16x40x32xf32>, tensor<16x40x32xf32>) -> tensor<16x40x32xf32>
  %z2 = "meta.reindex_reduce"(%p2) {kind = "add", indices = affine_map<(d0, d1, d2) -> (d0, d1)>} : (tensor<16x40x32xf32>) -> tensor<16x40xf32>
  %y1 = "meta.unary"(%z1) {kind = "tanh"} : (tensor<16x48xf32>) -> tensor<16x48xf32>
  %y2 = "meta.unary"(%z2) {kind = "sigmoid"} : (tensor<16x40xf32>) -> tensor<16x40xf32>
  return %y1, %y2 : tensor<16x48xf32>, tensor<16x40xf32>
}"#;

#[test]
fn two_contractions_then_their_consumers_make_two_epilogues() {
    for math in [MathMode::Exact, MathMode::Fast] {
        let context = new_context().unwrap();
        let (oracle, module, compiled, written) = compile(&context, TWO_LAYERS, math);
        assert_eq!(written, [false, false], "{math:?}");
        let inputs: Vec<Value> = [vec![16, 32], vec![32, 48], vec![32, 40]]
            .iter()
            .enumerate()
            .map(|(i, shape)| Value::tensor(random_of(shape, "f32", 40 + i as u64)))
            .collect();
        let (expected, actual) = run_both(&oracle, &module, &compiled, inputs);
        let exact = math == MathMode::Exact;
        let matching = if exact {
            Match::Identical
        } else {
            Match::for_math(false)
        };
        assert!(matching.values(&expected, &actual), "{math:?}");
    }
}

/// A consumer that divides by zero, with a division of its own between
/// the contraction's call and the consumer's.
const DIVIDING_BETWEEN: &str = r#"func.func @main(%a: tensor<8x20xf32>, %b: tensor<20x32xf32>, %d: tensor<8x32xi32>, %n: tensor<4xi32>, %m: tensor<4xi32>) -> (tensor<8x32xi32>, tensor<4xi32>) {
  %ab = "meta.reindex"(%a) {indices = affine_map<(d0, d1, d2) -> (d0, d2)>} : (tensor<8x20xf32>) -> tensor<8x32x20xf32>
  %bb = "meta.reindex"(%b) {indices = affine_map<(d0, d1, d2) -> (d2, d1)>} : (tensor<20x32xf32>) -> tensor<8x32x20xf32>
  %p = "meta.binary"(%ab, %bb) {kind = "mul"} : (tensor<8x32x20xf32>, tensor<8x32x20xf32>) -> tensor<8x32x20xf32>
  %z = "meta.reindex_reduce"(%p) {kind = "add", indices = affine_map<(d0, d1, d2) -> (d0, d1)>} : (tensor<8x32x20xf32>) -> tensor<8x32xf32>
  %r = "meta.binary"(%n, %m) {kind = "div"} : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi32>
  %i = "meta.unary"(%z) {kind = "cast"} : (tensor<8x32xf32>) -> tensor<8x32xi32>
  %q = "meta.binary"(%i, %d) {kind = "div"} : (tensor<8x32xi32>, tensor<8x32xi32>) -> tensor<8x32xi32>
  return %q, %r : tensor<8x32xi32>, tensor<4xi32>
}"#;

#[test]
fn a_consumer_never_moves_before_an_op_that_can_fail() {
    // Both divisions may fail: whichever the interpreter meets first is
    // the one reported, whatever the fusion and the epilogue do.
    let context = new_context().unwrap();
    let (oracle, module, compiled, written) = compile(&context, DIVIDING_BETWEEN, MathMode::Exact);
    // The host calls the contraction, the division of `n` by `m`, then
    // the consumer: the consumer may not move before the division.
    assert!(written.is_empty(), "an epilogue across a division: {written:?}");
    let i32s = |shape: Vec<usize>, values: Vec<i32>| {
        Value::tensor(Tensor::new(shape, Buffer::I32(values.into())).unwrap())
    };
    let a = Value::tensor(random_of(&[8, 20], "f32", 1));
    let b = Value::tensor(random_of(&[20, 32], "f32", 2));
    for (zero_in_d, zero_in_m) in [(false, false), (true, false), (false, true), (true, true)] {
        let mut d: Vec<i32> = (0..256).map(|i| 1 + i % 5).collect();
        if zero_in_d {
            d[17] = 0;
        }
        let m = if zero_in_m {
            vec![1, 0, 2, 3]
        } else {
            vec![1, 2, 2, 3]
        };
        let inputs = vec![
            a.clone(),
            b.clone(),
            i32s(vec![8, 32], d),
            i32s(vec![4], vec![7, 8, 9, 10]),
            i32s(vec![4], m),
        ];
        let expected = Interpreter::new(&oracle).run("main", inputs.clone(), &mut StateStore::new());
        let actual = compiled.run(&module, "main", inputs, &mut StateStore::new());
        let what = format!("zero in d: {zero_in_d}, zero in m: {zero_in_m}");
        match (expected, actual) {
            (Ok(e), Ok(a)) => assert!(Match::Identical.values(&e, &a), "{what}"),
            (Err(e), Err(a)) => assert_eq!(e.to_string(), a.to_string(), "{what}"),
            (e, a) => panic!("{what}: the interpreter gave {e:?}, the compiled code {a:?}"),
        }
    }
}
