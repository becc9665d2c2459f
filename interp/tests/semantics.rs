//! Each op kind of the interpreter against hand-computed values.

use jitc_compiler::{DiagnosticCollector, OptimizeOptions, Pipeline, new_context, optimize, parse_module};
use jitc_interp::{Error, Interpreter, StateStore, Tensor, Value};

/// Runs `@main` of `source` on literal inputs; results as literals.
fn run_with(source: &str, inputs: &[&str], state: &mut StateStore) -> Result<Vec<String>, Error> {
    let context = new_context().expect("context");
    let collector = DiagnosticCollector::attach(&context);
    let mut module =
        parse_module(&context, source).unwrap_or_else(|| panic!("parse: {:?}", collector.take()));
    optimize(
        &context,
        &mut module,
        &Pipeline::default(),
        &OptimizeOptions::default(),
    )
    .unwrap_or_else(|_| panic!("verify: {:?}", collector.take()));
    let interpreter = Interpreter::new(&module);
    let signature = interpreter.signature("main")?;
    let args = inputs
        .iter()
        .zip(&signature.inputs)
        .map(|(text, want)| match want {
            jitc_interp::ValueType::Index => Value::Index(text.trim_start_matches("index=").parse().unwrap()),
            jitc_interp::ValueType::Scalar(_) => Value::Scalar(Tensor::parse_literal(text).unwrap().get(0)),
            _ => Value::tensor(Tensor::parse_literal(text).unwrap()),
        })
        .collect();
    Ok(interpreter
        .run("main", args, state)?
        .iter()
        .map(ToString::to_string)
        .collect())
}

fn run(source: &str, inputs: &[&str]) -> Vec<String> {
    run_with(source, inputs, &mut StateStore::new()).unwrap_or_else(|e| panic!("run failed: {e}"))
}

fn one(body: &str, signature: &str, inputs: &[&str]) -> String {
    let source = format!("func.func @main({signature} {{\n{body}\n}}");
    run(&source, inputs).remove(0)
}

#[test]
fn reindex_broadcast_transpose_flip_stride() {
    let broadcast = r#"%b = "meta.reindex"(%x) {indices = affine_map<(d0, d1) -> (d1)>} : (tensor<3xf32>) -> tensor<2x3xf32>
  return %b : tensor<2x3xf32>"#;
    assert_eq!(
        one(
            broadcast,
            "%x: tensor<3xf32>) -> tensor<2x3xf32>",
            &["3xf32=1 2 3"]
        ),
        "2x3xf32=[1 2 3][1 2 3]"
    );
    let transpose = r#"%t = "meta.reindex"(%x) {indices = affine_map<(d0, d1) -> (d1, d0)>} : (tensor<2x3xi32>) -> tensor<3x2xi32>
  return %t : tensor<3x2xi32>"#;
    assert_eq!(
        one(
            transpose,
            "%x: tensor<2x3xi32>) -> tensor<3x2xi32>",
            &["2x3xi32=1 2 3 4 5 6"]
        ),
        "3x2xi32=[1 4][2 5][3 6]"
    );
    let flip = r#"%f = "meta.reindex"(%x) {indices = affine_map<(d0) -> (3 - d0)>} : (tensor<4xi64>) -> tensor<4xi64>
  return %f : tensor<4xi64>"#;
    assert_eq!(
        one(flip, "%x: tensor<4xi64>) -> tensor<4xi64>", &["4xi64=1 2 3 4"]),
        "4xi64=4 3 2 1"
    );
    let stride = r#"%s = "meta.reindex"(%x) {indices = affine_map<(d0) -> (d0 * 2 + 1)>} : (tensor<6xf64>) -> tensor<3xf64>
  return %s : tensor<3xf64>"#;
    assert_eq!(
        one(
            stride,
            "%x: tensor<6xf64>) -> tensor<3xf64>",
            &["6xf64=0 1 2 3 4 5"]
        ),
        "3xf64=1 3 5"
    );
}

#[test]
fn reindex_padding_uses_overflow_value_and_conditions() {
    let pad = r#"%p = "meta.reindex"(%x) {indices = affine_map<(d0) -> (d0 - 1)>, overflow_value = -1.0 : f32} : (tensor<3xf32>) -> tensor<5xf32>
  return %p : tensor<5xf32>"#;
    assert_eq!(
        one(pad, "%x: tensor<3xf32>) -> tensor<5xf32>", &["3xf32=1 2 3"]),
        "5xf32=-1 1 2 3 -1"
    );
    // The default overflow value is zero; a condition masks in-bounds reads.
    let masked = r#"%p = "meta.reindex"(%x) {indices = affine_map<(d0) -> (d0)>, overflow_conditions = [affine_set<(d0) : (d0 - 2 >= 0)>]} : (tensor<4xi32>) -> tensor<4xi32>
  return %p : tensor<4xi32>"#;
    assert_eq!(
        one(masked, "%x: tensor<4xi32>) -> tensor<4xi32>", &["4xi32=5 6 7 8"]),
        "4xi32=5 6 0 0"
    );
}

#[test]
fn reindex_symbols_and_dynamic_sizes() {
    let source = r#"func.func @main(%x: tensor<3x2xf32>, %t: index) -> tensor<2xf32> {
  %r = "meta.reindex"(%x, %t) {indices = affine_map<(d0)[s0] -> (s0, d0)>} : (tensor<3x2xf32>, index) -> tensor<2xf32>
  return %r : tensor<2xf32>
}"#;
    assert_eq!(
        run(source, &["3x2xf32=1 2 3 4 5 6", "index=2"]),
        vec!["2xf32=5 6"]
    );
    let dynamic = r#"func.func @main(%x: tensor<?xf32>) -> tensor<?x2xf32> {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %x, %c0 : tensor<?xf32>
  %b = "meta.reindex"(%x, %n) {indices = affine_map<(d0, d1) -> (d0)>} : (tensor<?xf32>, index) -> tensor<?x2xf32>
  return %b : tensor<?x2xf32>
}"#;
    assert_eq!(run(dynamic, &["3xf32=7 8 9"]), vec!["3x2xf32=[7 7][8 8][9 9]"]);
}

#[test]
fn reindex_reduce_kinds_identities_and_dropping() {
    let reduce = |kind: &str, ty: &str, input: &str| {
        let body = format!(
            r#"%s = "meta.reindex_reduce"(%x) {{kind = "{kind}", indices = affine_map<(d0, d1) -> (d0 + 1)>}} : (tensor<2x3x{ty}>) -> tensor<4x{ty}>
  return %s : tensor<4x{ty}>"#
        );
        one(
            &body,
            &format!("%x: tensor<2x3x{ty}>) -> tensor<4x{ty}>"),
            &[input],
        )
    };
    // Rows map to outputs 1 and 2; outputs 0 and 3 keep the identity.
    assert_eq!(reduce("add", "f32", "2x3xf32=1 2 3 4 5 6"), "4xf32=0 6 15 0");
    assert_eq!(reduce("mul", "i32", "2x3xi32=1 2 3 4 5 6"), "4xi32=1 6 120 1");
    assert_eq!(
        reduce("max", "f32", "2x3xf32=1 -2 3 -4 -5 -6"),
        "4xf32=-inf 3 -4 -inf"
    );
    assert_eq!(
        reduce("min", "i64", "2x3xi64=1 -2 3 -4 -5 -6"),
        "4xi64=9223372036854775807 -2 -6 9223372036854775807"
    );
    assert_eq!(
        reduce("and", "i1", "2x3xi1=1 1 1 1 0 1"),
        "4xi1=true true false true"
    );
    assert_eq!(
        reduce("or", "i1", "2x3xi1=0 0 0 0 1 0"),
        "4xi1=false false true false"
    );
    // Inputs that map out of bounds, or into a condition, are dropped.
    let dropped = r#"%s = "meta.reindex_reduce"(%x) {kind = "add", indices = affine_map<(d0) -> (d0 - 1)>, overflow_conditions = [affine_set<(d0) : (d0 - 3 == 0)>]} : (tensor<4xf32>) -> tensor<2xf32>
  return %s : tensor<2xf32>"#;
    assert_eq!(
        one(dropped, "%x: tensor<4xf32>) -> tensor<2xf32>", &["4xf32=1 2 3 4"]),
        "2xf32=2 3"
    );
    // Scatter-add: several inputs into one output.
    let scatter = r#"%s = "meta.reindex_reduce"(%x) {kind = "add", indices = affine_map<(d0) -> (d0 mod 2)>} : (tensor<5xi32>) -> tensor<2xi32>
  return %s : tensor<2xi32>"#;
    assert_eq!(
        one(
            scatter,
            "%x: tensor<5xi32>) -> tensor<2xi32>",
            &["5xi32=1 2 3 4 5"]
        ),
        "2xi32=9 6"
    );
}

#[test]
fn elementwise_kinds() {
    let unary = |kind: &str, from: &str, to: &str, input: &str| {
        let body = format!(
            r#"%y = "meta.unary"(%x) {{kind = "{kind}"}} : (tensor<3x{from}>) -> tensor<3x{to}>
  return %y : tensor<3x{to}>"#
        );
        one(
            &body,
            &format!("%x: tensor<3x{from}>) -> tensor<3x{to}>"),
            &[input],
        )
    };
    assert_eq!(unary("neg", "i32", "i32", "3xi32=1 -2 0"), "3xi32=-1 2 0");
    assert_eq!(unary("abs", "f64", "f64", "3xf64=-1.5 2 -0"), "3xf64=1.5 2 0");
    assert_eq!(unary("sqrt", "f32", "f32", "3xf32=4 9 0.25"), "3xf32=2 3 0.5");
    assert_eq!(unary("rsqrt", "f32", "f32", "3xf32=4 1 0.25"), "3xf32=0.5 1 2");
    assert_eq!(unary("floor", "f32", "f32", "3xf32=1.5 -1.5 2"), "3xf32=1 -2 2");
    assert_eq!(unary("ceil", "f32", "f32", "3xf32=1.5 -1.5 2"), "3xf32=2 -1 2");
    assert_eq!(unary("round", "f32", "f32", "3xf32=0.5 -0.5 1.4"), "3xf32=1 -1 1");
    assert_eq!(unary("sigmoid", "f64", "f64", "3xf64=0 0 0"), "3xf64=0.5 0.5 0.5");
    assert_eq!(
        unary("exp", "f64", "f64", "3xf64=0 1 0"),
        "3xf64=1 2.718281828459045 1"
    );
    assert_eq!(unary("log", "f64", "f64", "3xf64=1 1 1"), "3xf64=0 0 0");
    assert_eq!(unary("not", "i1", "i1", "3xi1=1 0 1"), "3xi1=false true false");
    assert_eq!(
        unary("cast", "f32", "i32", "3xf32=2.9 -2.9 1e20"),
        "3xi32=2 -2 2147483647"
    );
    assert_eq!(unary("cast", "i32", "i1", "3xi32=0 5 -1"), "3xi1=false true true");
    assert_eq!(unary("cast", "i1", "f32", "3xi1=1 0 1"), "3xf32=1 0 1");

    let binary = |kind: &str, ty: &str, out: &str, a: &str, b: &str| {
        let body = format!(
            r#"%y = "meta.binary"(%a, %b) {{kind = "{kind}"}} : (tensor<3x{ty}>, tensor<3x{ty}>) -> tensor<3x{out}>
  return %y : tensor<3x{out}>"#
        );
        one(
            &body,
            &format!("%a: tensor<3x{ty}>, %b: tensor<3x{ty}>) -> tensor<3x{out}>"),
            &[a, b],
        )
    };
    assert_eq!(
        binary("add", "i32", "i32", "3xi32=2147483647 1 2", "3xi32=1 1 2"),
        "3xi32=-2147483648 2 4"
    );
    assert_eq!(
        binary("sub", "f32", "f32", "3xf32=1 2 3", "3xf32=3 2 1"),
        "3xf32=-2 0 2"
    );
    assert_eq!(
        binary("mul", "i64", "i64", "3xi64=2 3 4", "3xi64=5 6 7"),
        "3xi64=10 18 28"
    );
    assert_eq!(
        binary("div", "i32", "i32", "3xi32=7 -7 7", "3xi32=2 2 -2"),
        "3xi32=3 -3 -3"
    );
    assert_eq!(
        binary("mod", "i32", "i32", "3xi32=7 -7 7", "3xi32=2 2 -2"),
        "3xi32=1 -1 1"
    );
    assert_eq!(
        binary("mod", "f64", "f64", "3xf64=7.5 -7.5 1", "3xf64=2 2 1"),
        "3xf64=1.5 -1.5 0"
    );
    assert_eq!(
        binary("pow", "f32", "f32", "3xf32=2 3 4", "3xf32=3 2 0.5"),
        "3xf32=8 9 2"
    );
    assert_eq!(
        binary("max", "f32", "f32", "3xf32=1 NaN 3", "3xf32=2 1 NaN"),
        "3xf32=2 NaN NaN"
    );
    assert_eq!(
        binary("min", "i32", "i32", "3xi32=1 5 -3", "3xi32=2 1 -4"),
        "3xi32=1 1 -4"
    );
    assert_eq!(
        binary("lt", "f32", "i1", "3xf32=1 NaN 3", "3xf32=2 1 3"),
        "3xi1=true false false"
    );
    assert_eq!(
        binary("ne", "f32", "i1", "3xf32=1 NaN 3", "3xf32=2 1 3"),
        "3xi1=true true false"
    );
    assert_eq!(
        binary("ge", "i64", "i1", "3xi64=1 2 3", "3xi64=2 2 2"),
        "3xi1=false true true"
    );
    assert_eq!(
        binary("and", "i32", "i32", "3xi32=12 10 -1", "3xi32=10 6 7"),
        "3xi32=8 2 7"
    );
    assert_eq!(
        binary("xor", "i1", "i1", "3xi1=1 1 0", "3xi1=1 0 0"),
        "3xi1=false true false"
    );

    let select = r#"%y = "meta.ternary"(%c, %a, %b) {kind = "select"} : (tensor<3xi1>, tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  return %y : tensor<3xf32>"#;
    assert_eq!(
        one(
            select,
            "%c: tensor<3xi1>, %a: tensor<3xf32>, %b: tensor<3xf32>) -> tensor<3xf32>",
            &["3xi1=1 0 1", "3xf32=1 2 3", "3xf32=4 5 6"]
        ),
        "3xf32=1 5 3"
    );
}

#[test]
fn integer_division_by_zero_is_an_error() {
    let source = r#"func.func @main(%a: tensor<2xi32>, %b: tensor<2xi32>) -> tensor<2xi32> {
  %y = "meta.binary"(%a, %b) {kind = "div"} : (tensor<2xi32>, tensor<2xi32>) -> tensor<2xi32>
  return %y : tensor<2xi32>
}"#;
    let error = run_with(source, &["2xi32=1 2", "2xi32=1 0"], &mut StateStore::new()).unwrap_err();
    assert_eq!(
        error.to_string(),
        "'meta.binary' at line 2: integer division by zero"
    );
}

const GUARDED: &str = r#"func.func @main(%x: tensor<f32>) -> tensor<2xf32> {
  %h = "meta.state_read"() {name = "h"} : () -> tensor<2xf32>
  %one = arith.constant dense<1.0> : tensor<2xf32>
  %h2 = "meta.binary"(%h, %one) {kind = "add"} : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  "meta.state_write"(%h2) {name = "h"} : (tensor<2xf32>) -> ()
  %zero = arith.constant dense<0.0> : tensor<f32>
  %ok = "meta.binary"(%x, %zero) {kind = "gt"} : (tensor<f32>, tensor<f32>) -> tensor<i1>
  "meta.guard"(%ok) {id = 4 : i64, reason = "x > 0"} : (tensor<i1>) -> ()
  %again = "meta.state_read"() {name = "h"} : () -> tensor<2xf32>
  return %again : tensor<2xf32>
}"#;

#[test]
fn state_writes_commit_only_after_success() {
    let mut state = StateStore::new();
    state.insert("h", Tensor::parse_literal("2xf32=1 2").unwrap());
    // Reads in a run see the state as it was when the run started.
    assert_eq!(
        run_with(GUARDED, &["f32=1"], &mut state).unwrap(),
        vec!["2xf32=1 2"]
    );
    assert_eq!(state.get("h").unwrap().to_string(), "2xf32=2 3");
    // A failed guard names itself and commits nothing.
    let error = run_with(GUARDED, &["f32=-1"], &mut state).unwrap_err();
    assert_eq!(error.to_string(), "guard 4 failed at line 8: x > 0");
    assert_eq!(state.get("h").unwrap().to_string(), "2xf32=2 3");
    // A read of state nobody set is an error that names it.
    let error = run_with(GUARDED, &["f32=1"], &mut StateStore::new()).unwrap_err();
    assert_eq!(
        error.to_string(),
        "state 'h' is read at line 2 but the state store has no value for it"
    );
}

#[test]
fn control_flow_and_calls() {
    let source = r#"func.func @main(%x: tensor<2xi32>, %n: index) -> (tensor<2xi32>, i32) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %x) -> (tensor<2xi32>) {
    %d = func.call @double(%acc) : (tensor<2xi32>) -> tensor<2xi32>
    scf.yield %d : tensor<2xi32>
  }
  %c3 = arith.constant 3 : index
  %big = arith.cmpi sgt, %n, %c3 : index
  %k = scf.if %big -> (i32) {
    %a = arith.constant 100 : i32
    scf.yield %a : i32
  } else {
    %b = arith.constant -100 : i32
    scf.yield %b : i32
  }
  %limit = arith.constant 50 : i32
  %w = scf.while (%v = %k) : (i32) -> i32 {
    %go = arith.cmpi slt, %v, %limit : i32
    scf.condition(%go) %v : i32
  } do {
  ^bb0(%v: i32):
    %c7 = arith.constant 7 : i32
    %next = arith.addi %v, %c7 : i32
    scf.yield %next : i32
  }
  return %r, %w : tensor<2xi32>, i32
}
func.func private @double(%x: tensor<2xi32>) -> tensor<2xi32> {
  %y = "meta.binary"(%x, %x) {kind = "add"} : (tensor<2xi32>, tensor<2xi32>) -> tensor<2xi32>
  return %y : tensor<2xi32>
}"#;
    assert_eq!(
        run(source, &["2xi32=1 -3", "index=3"]),
        vec!["2xi32=8 -24", "i32=54"]
    );
    assert_eq!(
        run(source, &["2xi32=1 -3", "index=4"]),
        vec!["2xi32=16 -48", "i32=100"]
    );
}

#[test]
fn arith_and_tensor_ops() {
    let source = r#"func.func @main(%x: tensor<2x3xf32>) -> (f32, tensor<2xf32>, tensor<2x2xf32>, index, i32, f64) {
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %e = tensor.extract %x[%c1, %c2] : tensor<2x3xf32>
  %half = arith.constant 0.5 : f32
  %m = arith.mulf %e, %half : f32
  %t = tensor.from_elements %m, %e : tensor<2xf32>
  %s = tensor.extract_slice %x[0, 1] [2, 2] [1, 1] : tensor<2x3xf32> to tensor<2x2xf32>
  %d = tensor.dim %x, %c1 : tensor<2x3xf32>
  %big = arith.constant 2147483647 : i32
  %one = arith.constant 1 : i32
  %wrap = arith.addi %big, %one : i32
  %f = arith.sitofp %wrap : i32 to f64
  return %m, %t, %s, %d, %wrap, %f : f32, tensor<2xf32>, tensor<2x2xf32>, index, i32, f64
}"#;
    assert_eq!(
        run(source, &["2x3xf32=1 2 3 4 5 6"]),
        vec![
            "f32=3",
            "2xf32=3 6",
            "2x2xf32=[2 3][5 6]",
            "index=3",
            "i32=-2147483648",
            "f64=-2147483648"
        ]
    );
}

#[test]
fn dense_constants() {
    let source = r#"func.func @main() -> (tensor<2x2xi64>, tensor<3xi1>) {
  %a = arith.constant dense<[[1, 2], [3, 4]]> : tensor<2x2xi64>
  %b = arith.constant dense<true> : tensor<3xi1>
  return %a, %b : tensor<2x2xi64>, tensor<3xi1>
}"#;
    assert_eq!(
        run(source, &[]),
        vec!["2x2xi64=[1 2][3 4]", "3xi1=true true true"]
    );
}

#[test]
fn argument_errors_name_the_argument() {
    let source = r#"func.func @main(%x: tensor<2xf32>) -> tensor<2xf32> {
  return %x : tensor<2xf32>
}"#;
    let error = run_with(source, &["3xf32=1 2 3"], &mut StateStore::new()).unwrap_err();
    assert_eq!(
        error.to_string(),
        "argument 0 of @main must be tensor<2xf32>, got 3xf32=1 2 3"
    );
}

#[test]
fn a_large_refused_argument_is_named_by_its_type_not_its_elements() {
    let source = r#"func.func @main(%x: tensor<2xf32>) -> tensor<2xf32> {
  return %x : tensor<2xf32>
}"#;
    let values = vec!["1"; 17].join(" ");
    let error = run_with(source, &[&format!("17xf32={values}")], &mut StateStore::new()).unwrap_err();
    assert_eq!(
        error.to_string(),
        "argument 0 of @main must be tensor<2xf32>, got 17xf32 (17 elements)"
    );
    // Up to 16 elements are still shown.
    let values = vec!["1"; 16].join(" ");
    let error = run_with(source, &[&format!("16xf32={values}")], &mut StateStore::new()).unwrap_err();
    assert_eq!(
        error.to_string(),
        format!("argument 0 of @main must be tensor<2xf32>, got 16xf32={values}")
    );
}

#[test]
fn huge_results_are_an_error_not_an_abort() {
    let source = r#"func.func @main(%x: tensor<2xf32>) -> tensor<100000x100000xf32> {
  %b = "meta.reindex"(%x) {indices = affine_map<(d0, d1) -> (0)>} : (tensor<2xf32>) -> tensor<100000x100000xf32>
  return %b : tensor<100000x100000xf32>
}"#;
    let error = run_with(source, &["2xf32=1 2"], &mut StateStore::new()).unwrap_err();
    assert!(error.to_string().contains("jitc's limit"), "{error}");
}
