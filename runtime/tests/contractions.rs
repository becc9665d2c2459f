//! Contractions (schedule rule 6, `lower::contract`): kernels that sum
//! products of two reindexed operands run as register tiles. Random
//! matmuls (plain, transposed in either operand, batched, f64, the dot
//! form of fast math), convolutions (padded,
//! strided, with a nonzero padding value) and a large matmul split across
//! threads agree with the interpreter: bit for bit in exact math, and in
//! fast math (a fused multiply-add per step) within the bound
//! `docs/semantics.md` states, `2 γ(n) Σ|a_i b_i|` per output. Each case
//! also says whether it must be a contraction, so the rule is checked to
//! apply exactly where its doc says. A property test draws matmul shapes
//! and forms at random and shrinks any failure to the smallest.

use jitc_compiler::{CodegenOptions, CpuTarget, DiagnosticCollector, MathMode, new_context, parse_module};
use jitc_interp::{Interpreter, StateStore, Tensor, Value};
use jitc_runtime::CpuModule;
use jitc_test_support::{Match, Rng, absolute, contraction_source, floats, random, random_of};

/// A contraction `y = Σ a[map_a] * b[map_b]` over `domain`, `y` indexed by
/// `map_y`; `padding` is the overflow value of `a`'s reindex.
struct Case {
    domain: Vec<usize>,
    a: (Vec<usize>, String),
    b: (Vec<usize>, String),
    y: (Vec<usize>, String),
    element: &'static str,
    padding: Option<f64>,
}

impl Case {
    fn source(&self) -> String {
        contraction_source(
            &self.domain,
            (&self.a.0, &self.a.1),
            (&self.b.0, &self.b.1),
            (&self.y.0, &self.y.1),
            self.element,
            self.padding,
        )
    }
}

/// The elements of a tensor result as f64s.
fn elements(values: &[Value]) -> Vec<f64> {
    let [value] = values else {
        panic!("one result expected")
    };
    floats(value)
}

/// The interpreter's result on the magnitudes of `inputs`: `Σ|a_i b_i|`
/// per output (the padding value is not negative; indices, a step `t`,
/// pass unchanged).
fn magnitudes(oracle: &melior::ir::Module, inputs: &[Value]) -> Vec<f64> {
    elements(
        &Interpreter::new(oracle)
            .run(
                "main",
                inputs.iter().map(absolute).collect(),
                &mut StateStore::new(),
            )
            .unwrap(),
    )
}

/// `source` parsed twice: the interpreter's copy, and one compiled with
/// `options` (every kernel native).
fn compile<'c>(
    context: &'c melior::Context,
    source: &str,
    options: &CodegenOptions,
) -> (melior::ir::Module<'c>, melior::ir::Module<'c>, CpuModule) {
    let collector = DiagnosticCollector::attach(context);
    let oracle = parse_module(context, source).unwrap_or_else(|| panic!("{:?}\n{source}", collector.take()));
    let mut module = parse_module(context, source).unwrap();
    let compiled = CpuModule::compile_with(context, &mut module, options).unwrap();
    assert!(compiled.interpreted_kernels().is_empty(), "{source}");
    (oracle, module, compiled)
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

/// Compiles `case` with `math`, runs it on random inputs from `seed` and
/// compares with the interpreter; returns whether its kernel was a
/// contraction.
fn check(what: &str, case: &Case, seed: u64, math: MathMode) -> bool {
    check_on(what, case, seed, math, CpuTarget::default())
}

/// [`check`], compiled for `target`.
fn check_on(what: &str, case: &Case, seed: u64, math: MathMode, target: CpuTarget) -> bool {
    let source = case.source();
    let context = new_context().unwrap();
    let options = CodegenOptions {
        math,
        target,
        ..CodegenOptions::default()
    };
    let (oracle, module, compiled) = compile(&context, &source, &options);
    let contracted = !jitc_compiler::contractions(&module, &options).is_empty();
    let inputs: Vec<Value> = [(&case.a.0, seed), (&case.b.0, seed ^ 0x5a5a)]
        .into_iter()
        .map(|(shape, seed)| Value::tensor(random_of(shape, case.element, seed)))
        .collect();
    let (expected, actual) = run_both(&oracle, &module, &compiled, inputs.clone());
    if math == MathMode::Exact {
        assert!(
            Match::Identical.values(&expected, &actual),
            "{what} (exact)\n{source}"
        );
        return contracted;
    }
    // Fast: within 2 γ(n) Σ|a_i b_i| of the interpreter, n the products
    // per output.
    let n = case.domain.iter().product::<usize>() / case.y.0.iter().product::<usize>().max(1);
    let u = if case.element == "f64" {
        f64::EPSILON / 2.0
    } else {
        f64::from(f32::EPSILON) / 2.0
    };
    let gamma = n as f64 * u / (1.0 - n as f64 * u);
    let bounds = magnitudes(&oracle, &inputs);
    for (i, ((e, a), s)) in elements(&expected)
        .iter()
        .zip(elements(&actual))
        .zip(bounds)
        .enumerate()
    {
        assert!(
            (e - a).abs() <= 2.0 * gamma * s,
            "{what} (fast): element {i} is {a}, the interpreter's {e}, more than 2γ({n}) x {s} apart\n{source}"
        );
    }
    contracted
}

fn matmul(m: usize, n: usize, k: usize, element: &'static str) -> Case {
    Case {
        domain: vec![m, n, k],
        a: (vec![m, k], "d0, d2".into()),
        b: (vec![k, n], "d2, d1".into()),
        y: (vec![m, n], "d0, d1".into()),
        element,
        padding: None,
    }
}

#[test]
fn random_matmuls_match_the_interpreter() {
    let mut rng = Rng(0x7e11);
    let mut contracted = 0;
    for round in 0..24 {
        let (m, n, k) = (1 + rng.below(40), 1 + rng.below(90), 1 + rng.below(50));
        let element = if round % 5 == 4 { "f64" } else { "f32" };
        let case = match round % 4 {
            // C = A B.
            0 | 1 => matmul(m, n, k, element),
            // C = Aᵀ B: A is read down a column, still broadcast along j.
            2 => Case {
                a: (vec![k, m], "d2, d0".into()),
                ..matmul(m, n, k, element)
            },
            // A batch of them.
            _ => Case {
                domain: vec![3, m, n, k],
                a: (vec![3, m, k], "d0, d1, d3".into()),
                b: (vec![3, k, n], "d0, d3, d2".into()),
                y: (vec![3, m, n], "d0, d1, d2".into()),
                element,
                padding: None,
            },
        };
        let what = format!("round {round}: {:?} {element}", case.domain);
        let seed = rng.below(1 << 30) as u64;
        let tiled = check(&what, &case, seed, MathMode::Exact);
        assert_eq!(tiled, check(&what, &case, seed, MathMode::Fast), "{what}");
        // The vector dimension must fill half a vector at least: with
        // AVX-512, 8 f32 or 4 f64 lanes (AVX2 needs half that).
        if n >= 8 {
            assert!(tiled, "{what}: not a contraction");
        }
        contracted += usize::from(tiled);
    }
    assert!(contracted >= 12, "only {contracted} of 24 were contractions");
}

#[test]
fn transposed_operands_are_gathered_into_the_packed_panel() {
    // B read as B[j, k] moves along j by a stride of k: not contiguous
    // along the output's last dimension. It is gathered, lane by lane,
    // into the packed panel the tiles read, in either math mode. Random
    // shapes of A Bᵀ in f32 and f64, and of a[i] B[j, k] (an operand
    // constant along k, broadcast).
    let mut rng = Rng(0xd07);
    for round in 0..12 {
        let (m, n, k) = (1 + rng.below(30), 8 + rng.below(40), 1 + rng.below(70));
        let case = match round % 3 {
            0 => Case {
                b: (vec![n, k], "d1, d2".into()),
                ..matmul(m, n, k, "f32")
            },
            1 => Case {
                b: (vec![n, k], "d1, d2".into()),
                ..matmul(m, n, k, "f64")
            },
            // y[i, j] = Σ_k a[i] B[j, k]: a constant along k.
            _ => Case {
                a: (vec![m], "d0".into()),
                b: (vec![n, k], "d1, d2".into()),
                ..matmul(m, n, k, "f32")
            },
        };
        let what = format!("round {round}: {:?} {}", case.domain, case.element);
        let seed = rng.below(1 << 30) as u64;
        assert!(check(&what, &case, seed, MathMode::Exact), "{what}: not gathered");
        assert!(check(&what, &case, seed, MathMode::Fast), "{what}: not gathered");
    }
}

/// y[i, j] = Σ_{k1, k2} a[i, k1, k2] b[j, k1, k2]: b strided along j, and
/// a fold of two dimensions, which packing does not take.
fn two_folds(m: usize, n: usize, k1: usize, k2: usize) -> Case {
    Case {
        domain: vec![m, n, k1, k2],
        a: (vec![m, k1, k2], "d0, d2, d3".into()),
        b: (vec![n, k1, k2], "d1, d2, d3".into()),
        y: (vec![m, n], "d0, d1".into()),
        element: "f32",
        padding: None,
    }
}

#[test]
fn strided_operands_over_two_folds_take_the_dot_form_under_fast_math() {
    // Exact math keeps the loop nest; fast math sums along k2 in vectors
    // (the dot form) where k2 is two vectors long at least.
    let mut rng = Rng(0xd08);
    for round in 0..8 {
        let (m, n) = (1 + rng.below(20), 1 + rng.below(30));
        let (k1, k2) = (1 + rng.below(4), 1 + rng.below(70));
        let case = two_folds(m, n, k1, k2);
        let what = format!("round {round}: {:?}", case.domain);
        let seed = rng.below(1 << 30) as u64;
        assert!(!check(&what, &case, seed, MathMode::Exact), "{what}");
        let tiled = check(&what, &case, seed, MathMode::Fast);
        // Two vectors along k2 at least (16 lanes with AVX-512).
        if k2 >= 32 {
            assert!(tiled, "{what}: no dot form");
        }
    }
}

#[test]
fn the_dot_forms_last_vector_adds_nothing_past_the_fold() {
    // y[i, j] = Σ_{k1, k2} a[i] B[j, k1, k2] with a[0] infinite and B
    // positive: the sums of row 0 are +inf. The last vector along k2
    // (40 = 32 + 8) has lanes past k2's extent, where B reads 0; inf * 0
    // would be a NaN if those lanes were added.
    let source = r#"func.func @main(%a: tensor<3xf32>, %b: tensor<8x2x40xf32>) -> tensor<3x8xf32> {
  %aa = "meta.reindex"(%a) {indices = affine_map<(i, j, k, l) -> (i)>} : (tensor<3xf32>) -> tensor<3x8x2x40xf32>
  %bb = "meta.reindex"(%b) {indices = affine_map<(i, j, k, l) -> (j, k, l)>} : (tensor<8x2x40xf32>) -> tensor<3x8x2x40xf32>
  %p = "meta.binary"(%aa, %bb) {kind = "mul"} : (tensor<3x8x2x40xf32>, tensor<3x8x2x40xf32>) -> tensor<3x8x2x40xf32>
  %y = "meta.reindex_reduce"(%p) {kind = "add", indices = affine_map<(i, j, k, l) -> (i, j)>}
       : (tensor<3x8x2x40xf32>) -> tensor<3x8xf32>
  return %y : tensor<3x8xf32>
}"#;
    let context = new_context().unwrap();
    let options = CodegenOptions::default();
    let (oracle, module, compiled) = compile(&context, source, &options);
    let tiles = jitc_compiler::contractions(&module, &options);
    assert!(
        tiles.iter().any(|(_, t, _)| t.starts_with("dot form")),
        "{tiles:?}"
    );
    let a = Tensor::parse_literal("3xf32=inf 1 -2").unwrap();
    let values: Vec<String> = (0..640).map(|i| format!("{}", 0.5 + (i % 7) as f32)).collect();
    let b = Tensor::parse_literal(&format!("8x2x40xf32={}", values.join(" "))).unwrap();
    let inputs = vec![Value::tensor(a), Value::tensor(b)];
    let (expected, actual) = run_both(&oracle, &module, &compiled, inputs);
    assert!(
        elements(&actual)[..8].iter().all(|&x| x == f64::INFINITY),
        "{actual:?}"
    );
    assert!(Match::Relative.values(&expected, &actual));
}

#[test]
fn random_convolutions_match_the_interpreter() {
    let mut rng = Rng(0xc0de);
    for round in 0..12 {
        let (n, c, o) = (1 + rng.below(2), 1 + rng.below(5), 1 + rng.below(11));
        let (h, w) = (1 + rng.below(9), 3 + rng.below(40));
        let (kh, kw) = (1 + rng.below(3), 1 + rng.below(3));
        let stride = if round % 4 == 3 { 2 } else { 1 };
        let dilation = if round % 3 == 1 { 2 } else { 1 };
        // A flipped window: the weight read from its far corner.
        let flipped = round % 5 == 2;
        let pad = rng.below(2);
        let padding = [0.0, 1.5][round % 2];
        // Output extents of a padded, strided, dilated convolution (at
        // least 1: the window may then reach past the padding, and read
        // the padding value there).
        let extent =
            |x: usize, k: usize| ((x + 2 * pad).saturating_sub(dilation * (k - 1) + 1) / stride + 1).max(1);
        let (oh, ow) = (extent(h, kh), extent(w, kw));
        let (sh, sw) = if stride == 1 {
            ("d2".to_owned(), "d3".to_owned())
        } else {
            ("d2 * 2".to_owned(), "d3 * 2".to_owned())
        };
        let (wh, ww) = if dilation == 1 {
            ("d5".to_owned(), "d6".to_owned())
        } else {
            ("d5 * 2".to_owned(), "d6 * 2".to_owned())
        };
        let weight = if flipped {
            format!("d1, d4, {} - d5, {} - d6", kh - 1, kw - 1)
        } else {
            "d1, d4, d5, d6".to_owned()
        };
        let case = Case {
            domain: vec![n, o, oh, ow, c, kh, kw],
            a: (
                vec![n, c, h, w],
                format!("d0, d4, {sh} + {wh} - {pad}, {sw} + {ww} - {pad}"),
            ),
            b: (vec![o, c, kh, kw], weight),
            y: (vec![n, o, oh, ow], "d0, d1, d2, d3".into()),
            element: "f32",
            padding: Some(padding),
        };
        let what = format!(
            "round {round}: x {:?} w {:?} stride {stride} dilation {dilation} flipped {flipped} pad {pad}",
            case.a.0, case.b.0
        );
        let seed = rng.below(1 << 30) as u64;
        let tiled = check(&what, &case, seed, MathMode::Exact);
        assert_eq!(tiled, check(&what, &case, seed, MathMode::Fast), "{what}");
        // Stride 2 moves x by 2 along w: not contiguous, so a loop nest.
        if stride == 2 {
            assert!(!tiled, "{what}");
        } else if ow >= 8 {
            assert!(tiled, "{what}: not a contraction");
        }
    }
}

#[test]
fn integer_and_one_sized_contractions_match_the_interpreter() {
    // Integer sums keep the loop nest (exact in any order, but not
    // tiled); 1-sized dimensions, as rows, columns or fold, tile or not
    // as their widths say, and agree either way.
    let integer = matmul(5, 20, 7, "i32");
    assert!(!check("5x20x7 i32", &integer, 3, MathMode::Exact));
    for (m, n, k) in [(1, 40, 9), (9, 1, 40), (9, 40, 1), (1, 1, 1)] {
        let case = matmul(m, n, k, "f32");
        let what = format!("{m}x{n}x{k}");
        check(&what, &case, 4, MathMode::Exact);
        check(&what, &case, 4, MathMode::Fast);
    }
}

#[test]
fn a_matmul_split_across_threads_matches_the_interpreter() {
    // Large enough to be split; 157 rows leave a remainder of tiles in
    // every part, and 70 columns a masked last vector.
    let case = matmul(157, 70, 64, "f32");
    assert!(check("157x70x64", &case, 11, MathMode::Exact));
    assert!(check("157x70x64", &case, 11, MathMode::Fast));
}

/// The RNN's input projection at step `%t` of a sequence of 5.
const STEP_PROJECTION: &str = r#"func.func @main(%xs: tensor<5x6x20xf32>, %w: tensor<20x24xf32>, %t: index) -> tensor<6x24xf32> {
  %xb = "meta.reindex"(%xs, %t) {indices = affine_map<(i, j, k)[t] -> (t, i, k)>, overflow_value = 0.5 : f32}
        : (tensor<5x6x20xf32>, index) -> tensor<6x24x20xf32>
  %wb = "meta.reindex"(%w) {indices = affine_map<(i, j, k) -> (k, j)>} : (tensor<20x24xf32>) -> tensor<6x24x20xf32>
  %p = "meta.binary"(%xb, %wb) {kind = "mul"} : (tensor<6x24x20xf32>, tensor<6x24x20xf32>) -> tensor<6x24x20xf32>
  %y = "meta.reindex_reduce"(%p) {kind = "add", indices = affine_map<(i, j, k) -> (i, j)>}
       : (tensor<6x24x20xf32>) -> tensor<6x24xf32>
  return %y : tensor<6x24xf32>
}"#;

#[test]
fn an_operand_indexed_by_a_symbol_matches_the_interpreter() {
    // The RNN's input projection: step `t` of a sequence (an `index`
    // argument, a symbol of the map) times a weight. A `t` outside the
    // sequence reads the padding value, as the interpreter does.
    let source = STEP_PROJECTION;
    let context = new_context().unwrap();
    let options = CodegenOptions {
        math: MathMode::Exact,
        ..CodegenOptions::default()
    };
    let (oracle, module, compiled) = compile(&context, source, &options);
    assert_eq!(jitc_compiler::contractions(&module, &options).len(), 1);
    let (xs, w) = (random(&[5, 6, 20], 3), random(&[20, 24], 4));
    for t in [0, 3, 4, 5, -1, i64::MAX] {
        let inputs = vec![
            Value::tensor(xs.clone()),
            Value::tensor(w.clone()),
            Value::Index(t),
        ];
        let (expected, actual) = run_both(&oracle, &module, &compiled, inputs);
        assert!(Match::Identical.values(&expected, &actual), "t = {t}");
    }
}

/// The same with a sequence of any length (`tensor<?x6x20xf32>`, the
/// IndRNN's generic form): still a contraction, its step checked against
/// the length read at run time, for sequences of several lengths and steps
/// inside and outside each.
#[test]
fn an_operand_of_dynamic_length_indexed_by_a_symbol_matches_the_interpreter() {
    let source = STEP_PROJECTION.replace("tensor<5x6x20xf32>", "tensor<?x6x20xf32>");
    for math in [MathMode::Exact, MathMode::Fast] {
        let context = new_context().unwrap();
        let options = CodegenOptions {
            math,
            ..CodegenOptions::default()
        };
        let (oracle, module, compiled) = compile(&context, &source, &options);
        assert_eq!(
            jitc_compiler::contractions(&module, &options).len(),
            1,
            "{math:?}"
        );
        let w = random(&[20, 24], 4);
        for length in [1, 5, 9] {
            let xs = random(&[length, 6, 20], length as u64);
            for t in [0, length as i64 - 1, length as i64, -1, i64::MAX] {
                let inputs = vec![
                    Value::tensor(xs.clone()),
                    Value::tensor(w.clone()),
                    Value::Index(t),
                ];
                let (expected, actual) = run_both(&oracle, &module, &compiled, inputs.clone());
                let what = format!("{math:?}, length {length}, t = {t}");
                if math == MathMode::Exact {
                    assert!(Match::Identical.values(&expected, &actual), "{what}");
                    continue;
                }
                // Within 2 γ(20) Σ|x w| of the interpreter (20 products
                // per output, reassociated).
                let u = f64::from(f32::EPSILON) / 2.0;
                let gamma = 20.0 * u / (1.0 - 20.0 * u);
                let bounds = magnitudes(&oracle, &inputs);
                for ((e, a), s) in elements(&expected).iter().zip(elements(&actual)).zip(bounds) {
                    assert!((e - a).abs() <= 2.0 * gamma * s, "{what}: {a} against {e}");
                }
            }
        }
    }
}

#[test]
fn a_long_fold_packs_its_operand_in_blocks_and_matches_the_interpreter() {
    // K = 600: two blocks of 256 and one of 88, each output going on from
    // what the blocks before left; 70 columns leave a masked last vector
    // (packed as zeros), and 37 rows leave remainder tiles.
    let case = matmul(37, 70, 600, "f32");
    for math in [MathMode::Exact, MathMode::Fast] {
        assert!(check("37x70x600", &case, 5, math));
    }
    let context = new_context().unwrap();
    let mut module = parse_module(&context, &case.source()).unwrap();
    let options = CodegenOptions::default();
    CpuModule::compile_with(&context, &mut module, &options).unwrap();
    let tiles = jitc_compiler::contractions(&module, &options);
    assert!(tiles[0].1.contains("packed in blocks of 256"), "{tiles:?}");
}

#[test]
fn avx2_tiles_match_the_interpreter() {
    // Compiled for x86-64-v3 (256-bit vectors: 8 lanes, tiles of 6 x 16),
    // which this machine runs whether it has AVX-512 or not: matmuls with
    // remainders in both directions, a padded convolution, a transposed
    // operand (gathered), the dot form and a packed fold.
    let avx2 = || CpuTarget {
        cpu: Some("x86-64-v3".into()),
        features: None,
    };
    assert_eq!(avx2().vector_bits(), 256);
    let conv = Case {
        domain: vec![1, 5, 6, 21, 3, 3, 3],
        a: (vec![1, 3, 6, 21], "d0, d4, d2 + d5 - 1, d3 + d6 - 1".into()),
        b: (vec![5, 3, 3, 3], "d1, d4, d5, d6".into()),
        y: (vec![1, 5, 6, 21], "d0, d1, d2, d3".into()),
        element: "f32",
        padding: Some(0.0),
    };
    let transposed = Case {
        b: (vec![19, 40], "d1, d2".into()),
        ..matmul(11, 19, 40, "f32")
    };
    let cases = [
        ("13x21x9", matmul(13, 21, 9, "f32"), true),
        ("7x12x30 f64", matmul(7, 12, 30, "f64"), true),
        ("conv", conv, true),
        ("11x19x40 Bᵀ", transposed, true),
        ("two folds", two_folds(5, 11, 2, 40), false),
        ("9x20x520", matmul(9, 20, 520, "f32"), true),
    ];
    for (what, case, exact_tiles) in cases {
        assert_eq!(
            check_on(what, &case, 9, MathMode::Exact, avx2()),
            exact_tiles,
            "{what}"
        );
        assert!(check_on(what, &case, 9, MathMode::Fast, avx2()), "{what}");
    }
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig { cases: 32, ..Default::default() })]

    /// Any matmul-shaped contraction, in any of its forms (plain, Aᵀ, Bᵀ,
    /// batched) and float type, agrees with the interpreter in both math
    /// modes (shrinking to the smallest shape that does not).
    #[test]
    fn any_matmul_form_matches_the_interpreter(
        m in 1usize..24,
        n in 1usize..72,
        k in 1usize..48,
        form in 0usize..4,
        f64 in proptest::bool::ANY,
        seed in 1u64..1 << 30,
    ) {
        let element = if f64 { "f64" } else { "f32" };
        let case = match form {
            0 => matmul(m, n, k, element),
            1 => Case {
                a: (vec![k, m], "d2, d0".into()),
                ..matmul(m, n, k, element)
            },
            2 => Case {
                b: (vec![n, k], "d1, d2".into()),
                ..matmul(m, n, k, element)
            },
            _ => Case {
                domain: vec![2, m, n, k],
                a: (vec![2, m, k], "d0, d1, d3".into()),
                b: (vec![2, k, n], "d0, d3, d2".into()),
                y: (vec![2, m, n], "d0, d1, d2".into()),
                element,
                padding: None,
            },
        };
        let what = format!("{m}x{n}x{k} form {form} {element}");
        check(&what, &case, seed, MathMode::Exact);
        check(&what, &case, seed, MathMode::Fast);
    }
}

#[test]
fn an_index_with_a_huge_constant_keeps_the_loop_nest() {
    // A's column index is k + 2^62, always past A's end: every product
    // reads the padding value 0.5. The constant is too large for the
    // tiles' compile-time shifts, so the kernel keeps the loop nest, and
    // both agree with the interpreter.
    let case = Case {
        a: (vec![9, 12], "d0, d2 + 4611686018427387904".into()),
        padding: Some(0.5),
        ..matmul(9, 40, 12, "f32")
    };
    assert!(!check("k + 2^62", &case, 6, MathMode::Exact));
    assert!(!check("k + 2^62", &case, 6, MathMode::Fast));
}
