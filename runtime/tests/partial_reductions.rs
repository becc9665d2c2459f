//! Reductions that fold every dimension (a sum to a scalar) cannot split
//! their outputs across threads, but may run in parts: each part folds a
//! range of the outermost loop into buffers of its own, and the parts are
//! combined in order (`KernelSignature::partial`). Fast math allows it for
//! float sums; max, min and integer sums allow it in exact math too, where
//! the result stays the interpreter's bit for bit.

use jitc_compiler::{CodegenOptions, DiagnosticCollector, MathMode, new_context, parse_module};
use jitc_dialect::kinds::ReduceKind;
use jitc_interp::{Interpreter, StateStore, Tensor, Value};
use jitc_runtime::CpuModule;
use jitc_test_support::{Match, random};

const SOURCE: &str = r#"func.func @main(%x: tensor<512x4096xf32>, %n: tensor<512x4096xi32>) -> (tensor<f32>, tensor<1xf32>, tensor<i32>) {
  %s = "meta.reindex_reduce"(%x) {kind = "add", indices = affine_map<(i, j) -> ()>} : (tensor<512x4096xf32>) -> tensor<f32>
  %m = "meta.reindex_reduce"(%x) {kind = "max", indices = affine_map<(i, j) -> (0)>} : (tensor<512x4096xf32>) -> tensor<1xf32>
  %k = "meta.reindex_reduce"(%n) {kind = "add", indices = affine_map<(i, j) -> ()>} : (tensor<512x4096xi32>) -> tensor<i32>
  return %s, %m, %k : tensor<f32>, tensor<1xf32>, tensor<i32>
}"#;

fn inputs() -> Vec<Value> {
    let x = random(&[512, 4096], 17);
    let values: Vec<String> = (0..512 * 4096)
        .map(|i: i64| ((i * 7919) % 2001 - 1000).to_string())
        .collect();
    let n = Tensor::parse_literal(&format!("512x4096xi32={}", values.join(" "))).unwrap();
    vec![Value::tensor(x), Value::tensor(n)]
}

/// Compiles the program with `math`; returns the kinds each kernel may run
/// in parts with, and four calls' results (the first runs whole and times
/// the kernel; later ones run in parts where that pays).
fn calls(math: MathMode) -> (Vec<Vec<ReduceKind>>, Vec<Vec<Value>>, Vec<Value>) {
    let context = new_context().unwrap();
    let collector = DiagnosticCollector::attach(&context);
    let oracle = parse_module(&context, SOURCE).unwrap_or_else(|| panic!("{:?}", collector.take()));
    let mut module = parse_module(&context, SOURCE).unwrap();
    let options = CodegenOptions {
        math,
        ..CodegenOptions::default()
    };
    let compiled = CpuModule::compile_with(&context, &mut module, &options).unwrap();
    let kinds = jitc_dialect::ops::functions(module.body())
        .keys()
        .filter_map(|name| compiled.signature(name))
        .map(|s| s.partial.clone())
        .collect();
    let results = (0..4)
        .map(|_| {
            compiled
                .run(&module, "main", inputs(), &mut StateStore::new())
                .unwrap()
        })
        .collect();
    let expected = Interpreter::new(&oracle)
        .run("main", inputs(), &mut StateStore::new())
        .unwrap();
    (kinds, results, expected)
}

#[test]
fn a_sum_to_a_scalar_runs_in_parts_in_fast_math() {
    let (kinds, results, expected) = calls(MathMode::Fast);
    // One kernel folds x (the float sum and the max), one the integers.
    assert!(
        kinds.contains(&vec![ReduceKind::Add, ReduceKind::Max]),
        "{kinds:?}"
    );
    assert!(kinds.contains(&vec![ReduceKind::Add]), "{kinds:?}");
    for result in &results {
        assert!(
            Match::Relative.values(&expected, result),
            "{result:?} against {expected:?}"
        );
        // The max and the integer sum cannot depend on the order.
        assert!(Match::Identical.values(&expected[1..], &result[1..]));
    }
    // Once split, always split the same way: the same bits every call.
    assert!(Match::Identical.values(&results[2], &results[3]));
}

#[test]
fn exact_math_splits_only_what_order_cannot_change() {
    let (kinds, results, expected) = calls(MathMode::Exact);
    // The kernel with the float sum stays whole; the integer sum may split.
    assert!(kinds.contains(&Vec::new()), "{kinds:?}");
    assert!(kinds.contains(&vec![ReduceKind::Add]), "{kinds:?}");
    for result in &results {
        assert!(Match::Identical.values(&expected, result));
    }
}
