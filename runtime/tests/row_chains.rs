//! Row chains (`lower::rows`): kernels that share their rows run one
//! block of rows at a time, values only the chain reads kept in scratch.
//! Random normalizations (softmax, layer norm, their column and 3-D
//! forms, every reduce kind, rows too long for the scratch) compiled in
//! exact math give the interpreter's results bit for bit, and a chain is
//! made exactly where the rules say.

use jitc_compiler::{CodegenOptions, DiagnosticCollector, MathMode, new_context, parse_module};
use jitc_interp::{Interpreter, StateStore, Tensor, Value};
use jitc_runtime::CpuModule;
use jitc_test_support::{Match, Rng, random};
use melior::ir::operation::OperationLike;

/// A row-wise normalization: `y = (x - r1(x)) op r2(f(x - r1(x)))` with the
/// reductions over `folded` of a tensor of `shape`, kept dims broadcast
/// back.
struct Case {
    shape: Vec<usize>,
    /// The results of the reductions' map, e.g. `d0` for `(d0, d1) -> (d0)`.
    reduce: String,
    /// The reductions' shape.
    out: Vec<usize>,
    first: &'static str,
    second: &'static str,
    element: &'static str,
}

impl Case {
    fn source(&self) -> String {
        let dims: Vec<String> = (0..self.shape.len()).map(|d| format!("d{d}")).collect();
        let t = format!(
            "tensor<{}x{}>",
            self.shape
                .iter()
                .map(|n| n.to_string())
                .collect::<Vec<_>>()
                .join("x"),
            self.element
        );
        let v = format!(
            "tensor<{}x{}>",
            self.out
                .iter()
                .map(|n| n.to_string())
                .collect::<Vec<_>>()
                .join("x"),
            self.element
        );
        let map = format!("affine_map<({}) -> ({})>", dims.join(", "), self.reduce);
        let body = if self.element == "f32" { "exp" } else { "abs" };
        format!(
            r#"func.func @main(%x: {t}) -> {t} {{
  %r1 = "meta.reindex_reduce"(%x) {{kind = "{first}", indices = {map}}} : ({t}) -> {v}
  %b1 = "meta.reindex"(%r1) {{indices = {map}}} : ({v}) -> {t}
  %s = "meta.binary"(%x, %b1) {{kind = "sub"}} : ({t}, {t}) -> {t}
  %e = "meta.unary"(%s) {{kind = "{body}"}} : ({t}) -> {t}
  %r2 = "meta.reindex_reduce"(%e) {{kind = "{second}", indices = {map}}} : ({t}) -> {v}
  %b2 = "meta.reindex"(%r2) {{indices = {map}}} : ({v}) -> {t}
  %y = "meta.binary"(%e, %b2) {{kind = "{combine}"}} : ({t}, {t}) -> {t}
  return %y : {t}
}}"#,
            first = self.first,
            second = self.second,
            combine = if self.element == "f32" { "div" } else { "sub" },
        )
    }
}

/// Compiles `source` with `options`, runs it on `x` and compares with the
/// interpreter bit for bit; returns whether a chain was made.
fn check(what: &str, source: &str, x: Value, options: &CodegenOptions) -> bool {
    let context = new_context().unwrap();
    let collector = DiagnosticCollector::attach(&context);
    let oracle = parse_module(&context, source).unwrap_or_else(|| panic!("{what}: {:?}", collector.take()));
    let mut module = parse_module(&context, source).unwrap();
    let compiled = CpuModule::compile_with(&context, &mut module, options).unwrap();
    assert!(
        compiled.interpreted_kernels().is_empty(),
        "{what}: {:?}",
        compiled.interpreted_kernels()
    );
    let chained = jitc_dialect::ops::functions(module.body())
        .values()
        .any(|f| f.has_attribute("meta.chain"));
    let expected = Interpreter::new(&oracle)
        .run("main", vec![x.clone()], &mut StateStore::new())
        .unwrap();
    let actual = compiled
        .run(&module, "main", vec![x], &mut StateStore::new())
        .unwrap();
    assert!(Match::Identical.values(&expected, &actual), "{what}\n{source}");
    chained
}

fn exact(jittor_rules: bool) -> CodegenOptions {
    CodegenOptions {
        math: MathMode::Exact,
        jittor_rules,
        ..CodegenOptions::default()
    }
}

#[test]
fn random_normalizations_chained_match_the_interpreter() {
    let mut rng = Rng(0x2075);
    let float_kinds = [
        ("max", "add"),
        ("min", "add"),
        ("max", "max"),
        ("add", "min"),
        ("max", "mul"),
    ];
    let (mut chains, mut norms) = (0, 0);
    for round in 0..24 {
        let (first, second) = float_kinds[round % float_kinds.len()];
        let integer = round % 6 == 5;
        let element = if integer { "i32" } else { "f32" };
        let case = match round % 4 {
            // Softmax over the last dimension: a chain, the exponentials in
            // scratch.
            0 => {
                let (r, c) = (2 + rng.below(40), 1 + rng.below(300));
                Case {
                    shape: vec![r, c],
                    reduce: "d0".into(),
                    out: vec![r],
                    first,
                    second,
                    element,
                }
            }
            // Over the first dimension (a column softmax): the split is
            // the kept inner dimension; only the reductions fit scratch.
            1 => {
                let (r, c) = (1 + rng.below(30), 2 + rng.below(70));
                Case {
                    shape: vec![r, c],
                    reduce: "d1".into(),
                    out: vec![c],
                    first,
                    second,
                    element,
                }
            }
            // 3-D, reducing the last dimension of each (b, r).
            2 => {
                let (b, r, c) = (2 + rng.below(5), 1 + rng.below(9), 1 + rng.below(40));
                Case {
                    shape: vec![b, r, c],
                    reduce: "d0, d1".into(),
                    out: vec![b, r],
                    first,
                    second,
                    element,
                }
            }
            // Instance norm's shape: statistics over (0, 2, 3) into
            // (0, c, 0, 0) of a (n, c, h, w) tensor.
            _ => {
                let (n, c, h, w) = (
                    1 + rng.below(3),
                    2 + rng.below(6),
                    1 + rng.below(7),
                    1 + rng.below(9),
                );
                Case {
                    shape: vec![n, c, h, w],
                    reduce: "0, d1, 0, 0".into(),
                    out: vec![1, c, 1, 1],
                    first,
                    second,
                    element,
                }
            }
        };
        let source = case.source();
        let seed = rng.below(1 << 30) as u64;
        let x = if integer {
            let n: usize = case.shape.iter().product();
            let values: Vec<String> = (0..n).map(|_| (rng.below(41) as i64 - 20).to_string()).collect();
            let prefix: String = case.shape.iter().map(|d| format!("{d}x")).collect();
            Tensor::parse_literal(&format!("{prefix}i32={}", values.join(" "))).unwrap()
        } else {
            random(&case.shape, seed)
        };
        let what = format!(
            "round {round}: {:?} {} {first}/{second} {element}",
            case.shape, case.reduce
        );
        let chained = check(&what, &source, Value::tensor(x.clone()), &exact(false));
        chains += usize::from(chained);
        norms += usize::from(chained && round % 4 == 3);
        // The same program by Jittor's rules alone: never a chain.
        assert!(!check(&what, &source, Value::tensor(x), &exact(true)), "{what}");
    }
    eprintln!("{chains} of 24 programs made a chain");
    assert!(chains >= 12, "only {chains} of 24 programs made a chain");
    assert_eq!(norms, 6, "every instance-norm-shaped program made a chain");
}

#[test]
fn a_row_longer_than_the_scratch_is_not_chained() {
    // 40,000 f32 per row: 160 KB, more than the 128 KB of scratch.
    let case = Case {
        shape: vec![3, 40_000],
        reduce: "d0".into(),
        out: vec![3],
        first: "max",
        second: "add",
        element: "f32",
    };
    let x = Value::tensor(random(&case.shape, 5));
    assert!(!check("long rows", &case.source(), x, &exact(false)));
    // A row that fits is chained.
    let case = Case {
        shape: vec![3, 4_000],
        ..case
    };
    let x = Value::tensor(random(&case.shape, 6));
    assert!(check("short rows", &case.source(), x, &exact(false)));
}

/// Instance norm's chain runs along the channels the statistics keep: the
/// element-wise stage, which would split along the batch by itself, is
/// given the channels (`meta.split`), and a block has as many channels of
/// `x` as fit `REREAD_BYTES` (`x` is read again by the last stage). Both a
/// block of several channels and channels larger than the budget (one per
/// block) give the interpreter's bits.
#[test]
fn instance_norm_chains_along_the_channels() {
    let example = jitc_test_support::example("instance_norm.mlir");
    // (n, c, h, w), and the channels a block should hold.
    for (n, c, h, w, block) in [(2, 8, 128, 128, 4), (2, 4, 256, 256, 1), (3, 5, 7, 9, 5)] {
        let source = example
            .replace("2x3x4x4x", &format!("{n}x{c}x{h}x{w}x"))
            .replace("1x3x1x1x", &format!("1x{c}x1x1x"))
            .replace("dense<32.0>", &format!("dense<{}.0>", n * h * w));
        let what = format!("instance norm ({n}, {c}, {h}, {w})");
        let x = Value::tensor(random(&[n, c, h, w], (n * c * h * w) as u64));
        assert!(check(&what, &source, x, &exact(false)), "{what}: not chained");
        let context = new_context().unwrap();
        let mut module = parse_module(&context, &source).unwrap();
        CpuModule::compile_with(&context, &mut module, &exact(false)).unwrap();
        let functions = jitc_dialect::ops::functions(module.body());
        let chain = functions
            .values()
            .find(|f| f.has_attribute("meta.chain"))
            .unwrap_or_else(|| panic!("{what}: no chain"));
        let integer = |f: &melior::ir::operation::OperationRef, name: &str| {
            f.attribute(name)
                .ok()
                .and_then(|a| melior::ir::attribute::IntegerAttribute::try_from(a).ok())
                .map(|a| a.value())
        };
        assert_eq!(integer(chain, "meta.block"), Some(block), "{what}: block");
        let given: Vec<i64> = functions
            .values()
            .filter(|f| f.has_attribute("meta.stage"))
            .filter_map(|f| integer(f, "meta.split"))
            .collect();
        assert_eq!(
            given,
            vec![1],
            "{what}: the element-wise stage splits along the channels"
        );
    }
}

#[test]
fn a_stage_that_may_divide_by_zero_is_not_chained() {
    // An integer division may stop the run; in a chain the failure would
    // be met in block order, not in the interpreter's order of ops.
    let source = r#"func.func @main(%x: tensor<8x16xi32>) -> tensor<8x16xi32> {
  %m = "meta.reindex_reduce"(%x) {kind = "max", indices = affine_map<(i, j) -> (i)>} : (tensor<8x16xi32>) -> tensor<8xi32>
  %b = "meta.reindex"(%m) {indices = affine_map<(i, j) -> (i)>} : (tensor<8xi32>) -> tensor<8x16xi32>
  %y = "meta.binary"(%x, %b) {kind = "div"} : (tensor<8x16xi32>, tensor<8x16xi32>) -> tensor<8x16xi32>
  return %y : tensor<8x16xi32>
}"#;
    let values: Vec<String> = (0..128).map(|i| (i % 9 + 1).to_string()).collect();
    let x = Tensor::parse_literal(&format!("8x16xi32={}", values.join(" "))).unwrap();
    assert!(!check(
        "integer division",
        source,
        Value::tensor(x),
        &exact(false)
    ));
    // The same with a float division is chained.
    let source = source.replace("i32", "f32");
    let x = Value::tensor(random(&[8, 16], 3));
    assert!(check("float division", &source, x, &exact(false)));
}

/// Results of 8 MiB or more that the host function returns are written
/// with non-temporal stores (`lower::stream`), from both threads' parts of
/// a chain and of a plain kernel: the values are the interpreter's, bit
/// for bit, with and without row chains, and the stores are there.
#[test]
fn streamed_results_match_the_interpreter() {
    let case = Case {
        shape: vec![2048, 1024],
        reduce: "d0".into(),
        out: vec![2048],
        first: "max",
        second: "add",
        element: "f32",
    };
    let source = case.source();
    let x = Value::tensor(random(&case.shape, 0x057e_a3ed));
    // A compile served from the disk cache (an earlier run's) loads the
    // object without LLVM IR, which the checks below read: this process
    // compiles afresh (the other tests of this binary lose nothing but
    // the cache).
    jitc_runtime::cpu::set_disk_cache(None);
    for jittor_rules in [false, true] {
        let options = exact(jittor_rules);
        check(
            &format!("streamed softmax, jittor_rules {jittor_rules}"),
            &source,
            x.clone(),
            &options,
        );
        let context = new_context().unwrap();
        let mut module = parse_module(&context, &source).unwrap();
        let compiled = CpuModule::compile_with(&context, &mut module, &options).unwrap();
        if cfg!(target_arch = "x86_64") {
            assert!(
                compiled.llvm_ir().contains("!nontemporal"),
                "jittor_rules {jittor_rules}: no streaming store"
            );
            assert!(compiled.llvm_ir().contains("@llvm.x86.sse.sfence"));
        }
    }
}
