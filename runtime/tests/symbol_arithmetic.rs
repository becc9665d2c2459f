//! Affine maps that read symbols, compiled for the CPU against the
//! interpreter, over symbol values that make their arithmetic overflow
//! i64 or divide by a value that is not positive: on every pair of values
//! both backends give the same tensors, or both fail with the same words
//! (`docs/semantics.md`, "Affine arithmetic"). The verifier cannot check
//! these maps, so only the run-time checks of `lower::index` stand between
//! a compiled kernel and a wrapped index.

use jitc_compiler::{
    CodegenOptions, DiagnosticCollector, OptimizeOptions, Pipeline, new_context, optimize, parse_module,
};
use jitc_interp::{Interpreter, StateStore, Tensor, Value};
use jitc_runtime::CpuModule;
use jitc_test_support::Match;

/// Each function reads `%x` through a map of two symbols, one of them
/// behind an overflow condition that itself reads a symbol.
const SOURCE: &str = r#"
func.func @scaled(%x: tensor<8xf32>, %a: index, %b: index) -> tensor<8xf32> {
  %y = "meta.reindex"(%x, %a, %b) {indices = affine_map<(d0)[s0, s1] -> ((d0 * s0 + s1) mod 8)>} : (tensor<8xf32>, index, index) -> tensor<8xf32>
  return %y : tensor<8xf32>
}
func.func @divided(%x: tensor<8xf32>, %a: index, %b: index) -> tensor<8xf32> {
  %y = "meta.reindex"(%x, %a, %b) {indices = affine_map<(d0)[s0, s1] -> ((d0 + s1) floordiv s0 - (s0 * s1) ceildiv 3)>, overflow_value = -1.0 : f32} : (tensor<8xf32>, index, index) -> tensor<8xf32>
  return %y : tensor<8xf32>
}
func.func @guarded(%x: tensor<8xf32>, %a: index, %b: index) -> tensor<8xf32> {
  %y = "meta.reindex"(%x, %a, %b) {indices = affine_map<(d0)[s0, s1] -> ((d0 * s1) mod 8)>, overflow_conditions = [affine_set<(d0)[s0, s1] : (d0 * s0 - 4 >= 0)>], overflow_value = -1.0 : f32} : (tensor<8xf32>, index, index) -> tensor<8xf32>
  return %y : tensor<8xf32>
}
func.func @reduced(%x: tensor<8xf32>, %a: index, %b: index) -> tensor<4xf32> {
  %s = "meta.reindex_reduce"(%x, %a, %b) {kind = "add", indices = affine_map<(d0)[s0, s1] -> ((d0 * s0 + d0 * s1) mod 4)>} : (tensor<8xf32>, index, index) -> tensor<4xf32>
  return %s : tensor<4xf32>
}
"#;

/// Symbol values: small ones, and ones whose products and sums with the
/// indices 0..8 leave i64 at some index but not at others.
const VALUES: [i64; 14] = [
    0,
    1,
    -1,
    3,
    -7,
    1 << 31,
    (1 << 62) + 1,
    -(1 << 62),
    i64::MAX / 3,
    i64::MAX / 7 + 1,
    i64::MAX - 4,
    i64::MAX,
    i64::MIN + 2,
    i64::MIN,
];

/// The words of a failure, without where it happened (the interpreter
/// names the op, a kernel the function and the kernel).
fn words(message: &str) -> &str {
    ["affine index arithmetic overflows i64", "affine division by"]
        .into_iter()
        .find_map(|words| message.find(words).map(|at| &message[at..]))
        .unwrap_or(message)
}

#[test]
fn compiled_symbol_arithmetic_fails_where_the_interpreter_does() {
    let context = new_context().unwrap();
    let collector = DiagnosticCollector::attach(&context);
    let mut module = parse_module(&context, SOURCE).unwrap_or_else(|| panic!("{:?}", collector.take()));
    optimize(
        &context,
        &mut module,
        &Pipeline::default(),
        &OptimizeOptions::default(),
    )
    .unwrap_or_else(|_| panic!("{:?}", collector.take()));
    let compiled = CpuModule::compile_with(&context, &mut module, &CodegenOptions::default()).unwrap();
    assert!(
        compiled.interpreted_kernels().is_empty(),
        "{:?}",
        compiled.interpreted_kernels()
    );
    let x = Tensor::parse_literal("8xf32=1 2 3 4 5 6 7 8").unwrap();
    let (mut failures, mut successes) = (0, 0);
    for function in ["scaled", "divided", "guarded", "reduced"] {
        for a in VALUES {
            for b in VALUES {
                let args = || vec![Value::tensor(x.clone()), Value::Index(a), Value::Index(b)];
                let expected = Interpreter::new(&module).run(function, args(), &mut StateStore::new());
                let actual = compiled.run(&module, function, args(), &mut StateStore::new());
                let case = format!("@{function} with s0 = {a}, s1 = {b}");
                match (expected, actual) {
                    (Ok(expected), Ok(actual)) => {
                        successes += 1;
                        for (e, a) in expected.iter().zip(&actual) {
                            let (Value::Tensor(e), Value::Tensor(a)) = (e, a) else {
                                panic!("{case}: a result is not a tensor")
                            };
                            assert!(Match::Identical.tensors(e, a), "{case}: {e:?} != {a:?}");
                        }
                    }
                    (Err(expected), Err(actual)) => {
                        failures += 1;
                        let (expected, actual) = (expected.to_string(), actual.to_string());
                        assert_eq!(words(&expected), words(&actual), "{case}");
                    }
                    (expected, actual) => panic!(
                        "{case}: the interpreter gives {:?}, the compiled code {:?}",
                        expected.map(|_| "results"),
                        actual.map(|_| "results")
                    ),
                }
            }
        }
    }
    // Both outcomes are exercised, so the comparison tests something
    // either way.
    assert!(
        failures > 50 && successes > 50,
        "{failures} failures, {successes} successes"
    );
}
