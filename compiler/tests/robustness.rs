//! Bad input never panics or crashes: mutated programs go through parsing,
//! verification and jitc's passes, and either succeed or produce errors.

use jitc_compiler::{DiagnosticCollector, OptimizeOptions, Pipeline, new_context, optimize, parse_module};
use proptest::prelude::*;

const SEED: &str = r#"func.func @main(%x: tensor<4xf32>, %y: tensor<4xf32>, %ok: tensor<i1>) -> tensor<3xf32> {
  %b = "meta.reindex"(%x) {indices = affine_map<(d0, d1) -> (d1)>, overflow_value = 0.0 : f32} : (tensor<4xf32>) -> tensor<3x4xf32>
  %e = "meta.unary"(%b) {kind = "exp"} : (tensor<3x4xf32>) -> tensor<3x4xf32>
  %f = "meta.unary"(%b) {kind = "exp"} : (tensor<3x4xf32>) -> tensor<3x4xf32>
  %m = "meta.binary"(%e, %f) {kind = "mul"} : (tensor<3x4xf32>, tensor<3x4xf32>) -> tensor<3x4xf32>
  %l = "meta.binary"(%x, %y) {kind = "lt"} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xi1>
  %z = "meta.ternary"(%l, %x, %y) {kind = "select"} : (tensor<4xi1>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  "meta.guard"(%ok) {id = 1 : i64, reason = "ok"} : (tensor<i1>) -> ()
  %h = "meta.state_read"() {name = "h"} : () -> tensor<4xf32>
  "meta.state_write"(%z) {name = "h"} : (tensor<4xf32>) -> ()
  %s = "meta.reindex_reduce"(%m) {kind = "add", indices = affine_map<(d0, d1) -> (d0)>} : (tensor<3x4xf32>) -> tensor<3xf32>
  return %s : tensor<3xf32>
}
"#;

/// Text fragments that make mutations land on interesting syntax.
const FRAGMENTS: &[&str] = &[
    "",
    "0",
    "-1",
    "?",
    "x",
    "i1",
    "f16",
    "tensor<",
    ">",
    "(",
    ")",
    "{",
    "}",
    "\"",
    "%x",
    "%b",
    ",",
    "d0",
    "s0",
    "\"meta.guard\"",
    "kind",
    "\"max\"",
    "\"sqrt\"",
    "affine_map<(d0) -> ()>",
    "[",
    "]",
    "\0",
    "\u{fffd}",
];

fn mutate(seed: &str, cuts: &[(usize, usize, usize)]) -> String {
    let mut text: Vec<char> = seed.chars().collect();
    for &(at, len, fragment) in cuts {
        let at = at % (text.len() + 1);
        let end = (at + len % 8).min(text.len());
        text.splice(at..end, FRAGMENTS[fragment % FRAGMENTS.len()].chars());
    }
    text.into_iter().collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    #[test]
    fn mutated_programs_never_crash(cuts in prop::collection::vec((0usize..4096, 0usize..8, 0usize..64), 1..4)) {
        let context = new_context().expect("context");
        let collector = DiagnosticCollector::attach(&context);
        let text = mutate(SEED, &cuts);
        let passes = Pipeline::parse("builtin.module(meta-cse, meta-dce, canonicalize, meta-verify)").unwrap();
        if let Some(mut module) = parse_module(&context, &text) {
            let result = optimize(&context, &mut module, &passes, &OptimizeOptions::default());
            // Every failure explains itself with at least one error.
            prop_assert!(result.is_ok() || collector.has_errors(), "failed silently on:\n{text}");
        } else {
            prop_assert!(collector.has_errors(), "parse failed silently on:\n{text}");
        }
    }
}

#[test]
fn the_seed_is_valid() {
    let context = new_context().expect("context");
    let _collector = DiagnosticCollector::attach(&context);
    let mut module = parse_module(&context, SEED).expect("the seed parses");
    optimize(
        &context,
        &mut module,
        &Pipeline::default(),
        &OptimizeOptions::default(),
    )
    .expect("the seed verifies");
}
