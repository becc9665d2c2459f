//! Float `min`/`max` of compiled code against the interpreter, bit for
//! bit: NaN propagates and `-0.0` orders below `+0.0`
//! (`docs/semantics.md`), element-wise and in `min`/`max` reductions that
//! accumulate in registers (`@rows`, the folded dimension innermost) or in
//! memory (`@cols`), for f32 and f64, under both math modes.
//!
//! The general differential test compares floats with `==`, to which
//! `-0.0` and `+0.0` are equal; this one compares bits (NaN equals any
//! NaN: the payload is not specified).

use jitc_compiler::{
    CodegenOptions, DiagnosticCollector, MathMode, OptimizeOptions, Pipeline, new_context, optimize,
    parse_module,
};
use jitc_interp::{Interpreter, StateStore, Tensor, Value};
use jitc_runtime::CpuModule;
use jitc_test_support::Match;

fn source(element: &str) -> String {
    let full = format!("tensor<2x4x{element}>");
    let rows = format!("tensor<2x{element}>");
    let cols = format!("tensor<4x{element}>");
    format!(
        r#"func.func @rows(%x: {full}, %y: {full}) -> ({full}, {full}, {rows}, {rows}) {{
  %min = "meta.binary"(%x, %y) {{kind = "min"}} : ({full}, {full}) -> {full}
  %max = "meta.binary"(%x, %y) {{kind = "max"}} : ({full}, {full}) -> {full}
  %rmin = "meta.reindex_reduce"(%x) {{kind = "min", indices = affine_map<(i, j) -> (i)>}} : ({full}) -> {rows}
  %rmax = "meta.reindex_reduce"(%y) {{kind = "max", indices = affine_map<(i, j) -> (i)>}} : ({full}) -> {rows}
  return %min, %max, %rmin, %rmax : {full}, {full}, {rows}, {rows}
}}
func.func @cols(%x: {full}, %y: {full}) -> ({cols}, {cols}) {{
  %cmin = "meta.reindex_reduce"(%x) {{kind = "min", indices = affine_map<(i, j) -> (j)>}} : ({full}) -> {cols}
  %cmax = "meta.reindex_reduce"(%y) {{kind = "max", indices = affine_map<(i, j) -> (j)>}} : ({full}) -> {cols}
  return %cmin, %cmax : {cols}, {cols}
}}
"#
    )
}

/// Runs `function` of the `element` program on `x` and `y` (literal
/// values) in the interpreter and compiled with `math`; panics on any
/// difference.
fn check(element: &str, function: &str, x: &str, y: &str, math: MathMode) {
    let source = source(element);
    let context = new_context().unwrap();
    let collector = DiagnosticCollector::attach(&context);
    let mut module =
        parse_module(&context, &source).unwrap_or_else(|| panic!("{:?}\n{source}", collector.take()));
    optimize(
        &context,
        &mut module,
        &Pipeline::default(),
        &OptimizeOptions::default(),
    )
    .unwrap_or_else(|_| panic!("{:?}\n{source}", collector.take()));
    let inputs = [x, y].map(|v| Tensor::parse_literal(&format!("2x4x{element}={v}")).unwrap());
    let args = || inputs.iter().cloned().map(Value::tensor).collect::<Vec<_>>();
    let expected = Interpreter::new(&module)
        .run(function, args(), &mut StateStore::new())
        .unwrap();
    let options = CodegenOptions {
        math,
        ..CodegenOptions::default()
    };
    let compiled = CpuModule::compile_with(&context, &mut module, &options).unwrap();
    assert!(
        compiled.interpreted_kernels().is_empty(),
        "{:?}",
        compiled.interpreted_kernels()
    );
    let actual = compiled
        .run(&module, function, args(), &mut StateStore::new())
        .unwrap();
    assert_eq!(expected.len(), actual.len());
    for (i, (e, a)) in expected.iter().zip(&actual).enumerate() {
        let (Value::Tensor(e), Value::Tensor(a)) = (e, a) else {
            panic!("result {i} is not a tensor")
        };
        assert!(
            Match::Identical.tensors(e, a),
            "@{function} {element} {math:?}, x = {x}, y = {y}: result {i} is {a}, the interpreter's {e}"
        );
    }
}

/// The signed zeros of issue 15: min(-0, 0) is -0 and max(-0, 0) is +0
/// whichever operand comes first, and a `min` fold of [-0 0 -0 0] is -0.
#[test]
fn min_and_max_order_negative_zero_below_zero() {
    let x = "[-0 0 -0 0][0 -0 0 -0]";
    let y = "[0 -0 -0 0][-0 0 0 -0]";
    for element in ["f32", "f64"] {
        for math in [MathMode::Exact, MathMode::Fast] {
            check(element, "rows", x, y, math);
            check(element, "cols", x, y, math);
            check(element, "cols", y, x, math);
        }
    }
}

/// NaN on either side propagates; infinities and subnormals order as
/// numbers.
#[test]
fn min_and_max_propagate_nan() {
    for (element, tiny) in [("f32", "1e-40"), ("f64", "1e-310")] {
        let x = format!("[NaN 1 -inf {tiny}][inf -0 2 -{tiny}]");
        let y = format!("[1 NaN 0 -{tiny}][-inf 0 NaN {tiny}]");
        for math in [MathMode::Exact, MathMode::Fast] {
            check(element, "rows", &x, &y, math);
            check(element, "rows", &y, &x, math);
            check(element, "cols", &x, &y, math);
        }
    }
}
