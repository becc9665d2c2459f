//! Kernels over a dynamic domain (reductions, reindexes and element-wise
//! ops whose sizes are known at run time only), compiled with their sizes
//! read at each call, against the interpreter: random programs of this
//! kind, each run on many random sizes (0 and 1 among them), give the
//! interpreter's results bit for bit under `--math exact`, with and without
//! the bounds-checked mode, or fail with its words. A call whose sizes fit
//! the kernel never enters the interpreter; one whose sizes disagree is
//! handed to it, which the interpreter's run counter shows.

use jitc_compiler::{CodegenOptions, DiagnosticCollector, MathMode, new_context, parse_module};
use jitc_interp::{Interpreter, Scalar, StateStore, Tensor, Value, runs_started};
use jitc_runtime::CpuModule;
use jitc_test_support::{Match, Rng};

fn options(check_bounds: bool) -> CodegenOptions {
    CodegenOptions {
        math: MathMode::Exact,
        check_bounds,
        ..CodegenOptions::default()
    }
}

/// A module of functions over dynamic domains, with static sizes `k` and
/// `m` and the kinds drawn from `rng`.
fn program(rng: &mut Rng) -> (String, usize, usize) {
    let k = 1 + rng.below(9);
    let m = 1 + rng.below(9);
    let padded = k + 2;
    let reduce = ["add", "mul", "max", "min"];
    let (r1, r2, r3) = (rng.pick(&reduce), rng.pick(&reduce), rng.pick(&reduce));
    let binary = rng.pick(&["add", "mul", "sub", "max"]);
    let unary = rng.pick(&["exp", "abs", "neg", "tanh"]);
    let source = format!(
        r#"
func.func @rows(%x: tensor<?x{k}xf32>, %w: tensor<{k}xf32>) -> (tensor<?xf32>, tensor<{k}xf32>) {{
  %c0 = arith.constant 0 : index
  %n = tensor.dim %x, %c0 : tensor<?x{k}xf32>
  %bw = "meta.reindex"(%w, %n) {{indices = affine_map<(d0, d1) -> (d1)>}} : (tensor<{k}xf32>, index) -> tensor<?x{k}xf32>
  %p = "meta.binary"(%x, %bw) {{kind = "{binary}"}} : (tensor<?x{k}xf32>, tensor<?x{k}xf32>) -> tensor<?x{k}xf32>
  %r = "meta.reindex_reduce"(%p, %n) {{kind = "{r1}", indices = affine_map<(d0, d1) -> (d0)>}} : (tensor<?x{k}xf32>, index) -> tensor<?xf32>
  %c = "meta.reindex_reduce"(%p) {{kind = "{r2}", indices = affine_map<(d0, d1) -> (d1)>}} : (tensor<?x{k}xf32>) -> tensor<{k}xf32>
  return %r, %c : tensor<?xf32>, tensor<{k}xf32>
}}
func.func @padded(%x: tensor<?x{k}xf32>) -> tensor<?xf32> {{
  %c0 = arith.constant 0 : index
  %n = tensor.dim %x, %c0 : tensor<?x{k}xf32>
  %p = "meta.reindex"(%x, %n) {{indices = affine_map<(d0, d1) -> (d0, d1 - 1)>, overflow_value = -1.5 : f32}} : (tensor<?x{k}xf32>, index) -> tensor<?x{padded}xf32>
  %e = "meta.unary"(%p) {{kind = "{unary}"}} : (tensor<?x{padded}xf32>) -> tensor<?x{padded}xf32>
  %s = "meta.reindex_reduce"(%e, %n) {{kind = "{r3}", indices = affine_map<(d0, d1) -> (d0)>}} : (tensor<?x{padded}xf32>, index) -> tensor<?xf32>
  return %s : tensor<?xf32>
}}
func.func @columns(%x: tensor<{m}x?xf32>) -> (tensor<{m}xf32>, tensor<?x{m}xf32>) {{
  %c1 = arith.constant 1 : index
  %n = tensor.dim %x, %c1 : tensor<{m}x?xf32>
  %s = "meta.reindex_reduce"(%x) {{kind = "add", indices = affine_map<(d0, d1) -> (d0)>}} : (tensor<{m}x?xf32>) -> tensor<{m}xf32>
  %t = "meta.reindex"(%x, %n) {{indices = affine_map<(d0, d1) -> (d1, d0)>}} : (tensor<{m}x?xf32>, index) -> tensor<?x{m}xf32>
  return %s, %t : tensor<{m}xf32>, tensor<?x{m}xf32>
}}
func.func @total(%x: tensor<?x?xf32>) -> tensor<f32> {{
  %s = "meta.reindex_reduce"(%x) {{kind = "{r1}", indices = affine_map<(d0, d1) -> ()>}} : (tensor<?x?xf32>) -> tensor<f32>
  return %s : tensor<f32>
}}
func.func @halves(%x: tensor<?x{k}xf32>, %h: index) -> tensor<?xf32> {{
  %s = "meta.reindex_reduce"(%x, %h) {{kind = "add", indices = affine_map<(d0, d1) -> (d0 floordiv 2)>}} : (tensor<?x{k}xf32>, index) -> tensor<?xf32>
  return %s : tensor<?xf32>
}}
func.func @mixed(%x: tensor<?x{k}xf32>) -> (tensor<{k}xf32>, tensor<?xf32>) {{
  %c0 = arith.constant 0 : index
  %n = tensor.dim %x, %c0 : tensor<?x{k}xf32>
  %c = "meta.reindex_reduce"(%x) {{kind = "{r2}", indices = affine_map<(d0, d1) -> (d1)>}} : (tensor<?x{k}xf32>) -> tensor<{k}xf32>
  %r = "meta.reindex_reduce"(%x, %n, %n) {{kind = "{r3}", indices = affine_map<(d0, d1)[s0] -> (s0 - 1 - d0)>}} : (tensor<?x{k}xf32>, index, index) -> tensor<?xf32>
  return %c, %r : tensor<{k}xf32>, tensor<?xf32>
}}
func.func @flipped(%x: tensor<?x{k}xf32>) -> tensor<?x{k}xf32> {{
  %c0 = arith.constant 0 : index
  %n = tensor.dim %x, %c0 : tensor<?x{k}xf32>
  %f = "meta.reindex"(%x, %n, %n) {{indices = affine_map<(d0, d1)[s0] -> (s0 - d0 - 1, d1)>}} : (tensor<?x{k}xf32>, index, index) -> tensor<?x{k}xf32>
  %g = "meta.binary"(%f, %x) {{kind = "{binary}"}} : (tensor<?x{k}xf32>, tensor<?x{k}xf32>) -> tensor<?x{k}xf32>
  return %g : tensor<?x{k}xf32>
}}
"#
    );
    (source, k, m)
}

/// A random tensor of `shape`: small numbers, with a zero, a negative zero
/// and an infinity now and then.
fn tensor(rng: &mut Rng, shape: Vec<usize>) -> Value {
    let count: usize = shape.iter().product();
    let values: Vec<String> = (0..count)
        .map(|_| match rng.below(40) {
            0 => "0".to_owned(),
            1 => "-0".to_owned(),
            2 => "inf".to_owned(),
            _ => format!("{}", (rng.below(2001) as f32 - 1000.0) / 256.0),
        })
        .collect();
    let dims: String = shape.iter().map(|d| format!("{d}x")).collect();
    Value::tensor(Tensor::parse_literal(&format!("{dims}f32={}", values.join(" "))).unwrap())
}

/// A size for a dynamic dimension: 0 and 1 often, up to 70 otherwise.
fn size(rng: &mut Rng) -> usize {
    match rng.below(6) {
        0 => 0,
        1 => 1,
        _ => rng.below(71),
    }
}

/// The arguments of function `name` for one run.
fn arguments(rng: &mut Rng, name: &str, k: usize, m: usize) -> Vec<Value> {
    let n = size(rng);
    match name {
        "rows" => vec![tensor(rng, vec![n, k]), tensor(rng, vec![k])],
        "columns" => vec![tensor(rng, vec![m, n])],
        "total" => {
            let other = size(rng);
            vec![tensor(rng, vec![n, other])]
        }
        // Output sizes short of, equal to and past what the input reaches,
        // and now and then a negative one (an error).
        "halves" => {
            let h = rng.below(n.div_ceil(2) + 3) as i64 - i64::from(rng.below(10) == 0) * 5;
            vec![tensor(rng, vec![n, k]), Value::Index(h)]
        }
        _ => vec![tensor(rng, vec![n, k])],
    }
}

const FUNCTIONS: [&str; 7] = ["rows", "padded", "columns", "total", "halves", "mixed", "flipped"];

#[test]
fn random_dynamic_kernels_match_the_interpreter_and_stay_native() {
    let mut rng = Rng(0x5eed_d1a6);
    let context = new_context().unwrap();
    let collector = DiagnosticCollector::attach(&context);
    let mut runs = 0;
    for program_number in 0..6 {
        let (source, k, m) = program(&mut rng);
        let oracle = parse_module(&context, &source).unwrap_or_else(|| panic!("{:?}", collector.take()));
        let interpreter = Interpreter::new(&oracle);
        for check_bounds in [false, true] {
            let mut module = parse_module(&context, &source).unwrap();
            let compiled = CpuModule::compile_with(&context, &mut module, &options(check_bounds)).unwrap();
            assert!(
                compiled.interpreted_kernels().is_empty(),
                "program {program_number}: {:?}",
                compiled.interpreted_kernels()
            );
            for name in FUNCTIONS {
                assert_eq!(compiled.fallback(&module, name), None, "@{name}");
                for _ in 0..12 {
                    let args = arguments(&mut rng, name, k, m);
                    let want = interpreter.run(name, args.clone(), &mut StateStore::new());
                    let before = runs_started();
                    let got = compiled.run(&module, name, args.clone(), &mut StateStore::new());
                    let context = || format!("program {program_number}, @{name} on {args:?}\n{source}");
                    match (&want, &got) {
                        (Ok(want), Ok(got)) => {
                            assert!(
                                Match::Identical.values(want, got),
                                "{}: {want:?} != {got:?}",
                                context()
                            );
                            assert_eq!(runs_started(), before, "{}: entered the interpreter", context());
                        }
                        (Err(want), Err(got)) => {
                            assert_eq!(want.to_string(), got.to_string(), "{}", context())
                        }
                        _ => panic!("{}: {want:?} vs {got:?}", context()),
                    }
                    runs += 1;
                }
            }
        }
    }
    assert_eq!(runs, 6 * 2 * FUNCTIONS.len() * 12);
}

/// Found by the `differential` fuzz target: a kernel whose static result
/// comes before its dynamic one read the dynamic result's sizes from the
/// static one's place in the sizes array, and wrote past its buffer (the
/// bounds-checked mode checked against the same wrong sizes).
#[test]
fn a_static_result_before_a_dynamic_one_reads_its_own_sizes() {
    let source = r#"func.func @main(%x: tensor<?x8xi64>, %y: tensor<?x8xi64>) -> tensor<?x8xi64> {
  %zero = arith.constant 0 : index
  %n = tensor.dim %x, %zero : tensor<?x8xi64>
  %m0 = "meta.binary"(%y, %y) {kind = "eq"} : (tensor<?x8xi64>, tensor<?x8xi64>) -> tensor<?x8xi1>
  %v0 = "meta.ternary"(%m0, %y, %y) {kind = "select"} : (tensor<?x8xi1>, tensor<?x8xi64>, tensor<?x8xi64>) -> tensor<?x8xi64>
  %r2 = "meta.reindex_reduce"(%v0) {kind = "mul", indices = affine_map<(d0, d1) -> (d1)>} : (tensor<?x8xi64>) -> tensor<8xi64>
  %v2 = "meta.reindex"(%r2, %n) {indices = affine_map<(d0, d1) -> (d1)>} : (tensor<8xi64>, index) -> tensor<?x8xi64>
  %r3 = "meta.reindex_reduce"(%v0, %n, %n) {kind = "mul", indices = affine_map<(d0, d1)[s0] -> (s0 - 1 - d0)>} : (tensor<?x8xi64>, index, index) -> tensor<?xi64>
  %v3 = "meta.reindex"(%r3, %n) {indices = affine_map<(d0, d1) -> (d0)>} : (tensor<?xi64>, index) -> tensor<?x8xi64>
  %v4 = "meta.binary"(%v3, %v2) {kind = "add"} : (tensor<?x8xi64>, tensor<?x8xi64>) -> tensor<?x8xi64>
  return %v4 : tensor<?x8xi64>
}"#;
    let context = new_context().unwrap();
    let oracle = parse_module(&context, source).unwrap();
    for check_bounds in [false, true] {
        let mut module = parse_module(&context, source).unwrap();
        let compiled = CpuModule::compile_with(&context, &mut module, &options(check_bounds)).unwrap();
        for (x_rows, y_rows) in [(1, 2), (3, 3), (5, 2), (0, 4)] {
            let x = Value::tensor(Tensor::splat(vec![x_rows, 8], Scalar::I64(1)));
            let y = Value::tensor(Tensor::splat(vec![y_rows, 8], Scalar::I64(2)));
            let args = vec![x, y];
            let want = Interpreter::new(&oracle)
                .run("main", args.clone(), &mut StateStore::new())
                .unwrap();
            let got = compiled
                .run(&module, "main", args, &mut StateStore::new())
                .unwrap();
            assert!(Match::Identical.values(&want, &got), "{x_rows} and {y_rows} rows");
        }
    }
}

#[test]
fn a_large_dynamic_kernel_splits_across_threads_and_matches() {
    // Enough rows for the kernel to be split once its speed is known: the
    // split dimension's size is read at run time.
    let (source, k, _) = program(&mut Rng(7));
    let context = new_context().unwrap();
    let oracle = parse_module(&context, &source).unwrap();
    let mut module = parse_module(&context, &source).unwrap();
    let compiled = CpuModule::compile_with(&context, &mut module, &options(false)).unwrap();
    let mut rng = Rng(11);
    let args = vec![tensor(&mut rng, vec![40_000, k]), tensor(&mut rng, vec![k])];
    let want = Interpreter::new(&oracle)
        .run("rows", args.clone(), &mut StateStore::new())
        .unwrap();
    for _ in 0..3 {
        let got = compiled
            .run(&module, "rows", args.clone(), &mut StateStore::new())
            .unwrap();
        assert!(Match::Identical.values(&want, &got));
    }
}

#[test]
fn a_call_whose_sizes_disagree_runs_in_the_interpreter_with_its_result_or_error() {
    // `%m` sizes the reindex and the reduction; `%x` has its own size. The
    // compiled kernel has one domain, so it runs only when they agree.
    let source = r#"func.func @main(%x: tensor<?x4xf32>, %w: tensor<4xf32>, %m: index, %k: index) -> tensor<?xf32> {
  %bw = "meta.reindex"(%w, %m) {indices = affine_map<(d0, d1) -> (d1)>} : (tensor<4xf32>, index) -> tensor<?x4xf32>
  %p = "meta.binary"(%x, %bw) {kind = "mul"} : (tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x4xf32>
  %s = "meta.reindex_reduce"(%p, %k) {kind = "add", indices = affine_map<(d0, d1) -> (d0)>} : (tensor<?x4xf32>, index) -> tensor<?xf32>
  return %s : tensor<?xf32>
}"#;
    let context = new_context().unwrap();
    let oracle = parse_module(&context, source).unwrap();
    let mut module = parse_module(&context, source).unwrap();
    let compiled = CpuModule::compile_with(&context, &mut module, &options(true)).unwrap();
    assert_eq!(compiled.fallback(&module, "main"), None);
    let mut rng = Rng(3);
    let x = tensor(&mut rng, vec![3, 4]);
    let w = tensor(&mut rng, vec![4]);
    // (m, k, whether the kernel runs natively)
    for (m, k, native) in [
        (3, 3, true),
        (3, 2, false),
        (3, 5, false),
        (2, 2, false),
        (-1, 3, false),
    ] {
        let args = vec![x.clone(), w.clone(), Value::Index(m), Value::Index(k)];
        let want = Interpreter::new(&oracle).run("main", args.clone(), &mut StateStore::new());
        let before = runs_started();
        let got = compiled.run(&module, "main", args, &mut StateStore::new());
        assert_eq!(runs_started() - before, u64::from(!native), "m={m} k={k}");
        match (&want, &got) {
            (Ok(want), Ok(got)) => assert!(Match::Identical.values(want, got), "m={m} k={k}"),
            (Err(want), Err(got)) => assert_eq!(want.to_string(), got.to_string()),
            _ => panic!("m={m} k={k}: {want:?} vs {got:?}"),
        }
    }
    // The mismatched call that fails does so with the interpreter's words.
    let args = vec![x, w, Value::Index(2), Value::Index(2)];
    let error = compiled
        .run(&module, "main", args, &mut StateStore::new())
        .unwrap_err()
        .to_string();
    assert!(
        error.contains("operands have shapes [3, 4] and [2, 4] at run time"),
        "{error}"
    );
}
