//! The CPU executor's host plans against the interpreter.
//!
//! - The examples run as host plans from entry to exit: the interpreter
//!   starts no run ([`jitc_interp::runs_started`], counted per thread).
//! - Random host programs ([`random_host_program`]: nested loops, branches
//!   on computed values, calls, guards, host division, state) give
//!   bit-identical results and committed state (`--math exact`), or the
//!   same error with nothing committed, on the plan and in the
//!   interpreter.

use jitc_compiler::{CodegenOptions, DiagnosticCollector, MathMode, new_context, parse_module};
use jitc_dialect::profile::Profile;
use jitc_interp::{Interpreter, StateStore, Tensor, Value, runs_started};
use jitc_runtime::CpuModule;
use jitc_test_support::{Match, Rng, STATIC_EXAMPLES, example, random, random_host_program, random_inputs};

fn exact() -> CodegenOptions {
    CodegenOptions {
        math: MathMode::Exact,
        ..CodegenOptions::default()
    }
}

/// Compiles `source` (which must run natively) and runs `@main` on each of
/// `runs` (arguments and state) as a host plan and in the interpreter;
/// panics on any difference or if the plan enters the interpreter.
fn runs_natively(what: &str, source: &str, runs: Vec<(Vec<Value>, StateStore)>) {
    let context = new_context().unwrap();
    let collector = DiagnosticCollector::attach(&context);
    let oracle = parse_module(&context, source).unwrap_or_else(|| panic!("{what}: {:?}", collector.take()));
    let mut module = parse_module(&context, source).unwrap();
    let compiled = CpuModule::compile_with(&context, &mut module, &exact()).unwrap();
    assert!(compiled.interpreted_kernels().is_empty(), "{what}");
    assert_eq!(compiled.fallback(&module, "main"), None, "{what}");
    for (run, (args, mut state)) in runs.into_iter().enumerate() {
        let mut expected_state = state.clone();
        let expected = Interpreter::new(&oracle)
            .run("main", args.clone(), &mut expected_state)
            .unwrap();
        let before = runs_started();
        let actual = compiled.run(&module, "main", args, &mut state).unwrap();
        assert_eq!(
            runs_started(),
            before,
            "{what}, run {run}: entered the interpreter"
        );
        assert!(Match::Identical.values(&expected, &actual), "{what}, run {run}");
        assert!(
            Match::Identical.states(&expected_state, &state),
            "{what}, run {run}"
        );
    }
}

fn tensors(tensors: Vec<Tensor>) -> Vec<Value> {
    tensors.into_iter().map(Value::tensor).collect()
}

#[test]
fn examples_run_without_entering_the_interpreter() {
    for (name, shapes) in STATIC_EXAMPLES {
        let mut state = StateStore::new();
        if *name == "rnn.mlir" {
            state.insert("rnn.h", random(&[4, 8], 99));
        }
        runs_natively(
            name,
            &example(name),
            vec![(tensors(random_inputs(shapes, 7)), state)],
        );
    }
}

#[test]
fn an_index_switch_runs_natively_and_takes_each_case() {
    // Each case, the default (a value no case names), and a case whose
    // kernel fuses two ops; the result feeds a kernel after the switch.
    let source = r#"func.func @main(%x: tensor<4xf32>, %s: index) -> tensor<4xf32> {
  %r = scf.index_switch %s -> tensor<4xf32>
  case 0 {
    %e = "meta.unary"(%x) {kind = "exp"} : (tensor<4xf32>) -> tensor<4xf32>
    scf.yield %e : tensor<4xf32>
  }
  case 7 {
    %n = "meta.unary"(%x) {kind = "neg"} : (tensor<4xf32>) -> tensor<4xf32>
    %a = "meta.binary"(%n, %x) {kind = "mul"} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    scf.yield %a : tensor<4xf32>
  }
  default {
    scf.yield %x : tensor<4xf32>
  }
  %t = "meta.unary"(%r) {kind = "tanh"} : (tensor<4xf32>) -> tensor<4xf32>
  return %t : tensor<4xf32>
}"#;
    let runs = [0i64, 7, 3, -1]
        .into_iter()
        .map(|selector| {
            let x = Value::tensor(random(&[4], selector.unsigned_abs() + 11));
            (vec![x, Value::Index(selector)], StateStore::new())
        })
        .collect();
    runs_natively("index_switch", source, runs);
}

#[test]
fn indrnn_of_any_length_runs_natively() {
    // Its projection kernel reads the dynamic-length sequence: compiled
    // with the sizes passed at run time, for every length.
    let runs = [0, 1, 5]
        .into_iter()
        .map(|length| {
            let mut state = StateStore::new();
            state.insert("rnn.h", random(&[16, 64], 3));
            let shapes: [&[usize]; 3] = [&[length, 16, 64], &[64, 64], &[64]];
            (tensors(random_inputs(&shapes, length as u64)), state)
        })
        .collect();
    runs_natively("indrnn.mlir", &example("indrnn.mlir"), runs);
}

#[test]
fn a_function_without_a_plan_says_why_and_still_runs() {
    // A call of a function declared without a body cannot be planned, so
    // the host code around it runs in the interpreter, and says so; a run
    // that takes the other branch never reaches the declaration.
    let context = new_context().unwrap();
    let source = r#"func.func private @external(tensor<2xf32>) -> tensor<2xf32>
func.func @main(%x: tensor<2xf32>, %b: i1) -> tensor<2xf32> {
  %y = scf.if %b -> (tensor<2xf32>) {
    %e = func.call @external(%x) : (tensor<2xf32>) -> tensor<2xf32>
    scf.yield %e : tensor<2xf32>
  } else {
    %n = "meta.unary"(%x) {kind = "neg"} : (tensor<2xf32>) -> tensor<2xf32>
    scf.yield %n : tensor<2xf32>
  }
  return %y : tensor<2xf32>
}"#;
    let mut module = parse_module(&context, source).unwrap();
    let compiled = CpuModule::compile_with(&context, &mut module, &exact()).unwrap();
    assert_eq!(
        compiled.fallback(&module, "main").as_deref(),
        Some("@external is a declaration")
    );
    let x = Value::tensor(Tensor::parse_literal("2xf32=1 -2").unwrap());
    let y = compiled
        .run(
            &module,
            "main",
            vec![x, Value::Scalar(jitc_interp::Scalar::I1(false))],
            &mut StateStore::new(),
        )
        .unwrap();
    let expected = Tensor::parse_literal("2xf32=-1 2").unwrap();
    assert!(Match::Identical.values(&[Value::tensor(expected)], &y));
    assert_eq!(
        compiled.fallback(&module, "nope").as_deref(),
        Some("there is no function @nope")
    );
}

/// Runs `source` with `x`, `n` and the state `acc` (absent when `None`)
/// in the interpreter and as a host plan; panics on any difference.
fn check(source: &str, seed: u64, runs: usize) -> (usize, usize) {
    let context = new_context().unwrap();
    let collector = DiagnosticCollector::attach(&context);
    let oracle = parse_module(&context, source)
        .unwrap_or_else(|| panic!("seed {seed}: {:?}\n{source}", collector.take()));
    let mut module = parse_module(&context, source).unwrap();
    let compiled = CpuModule::compile_with(&context, &mut module, &exact())
        .unwrap_or_else(|e| panic!("seed {seed}: {e}\n{source}"));
    assert_eq!(compiled.fallback(&module, "main"), None, "seed {seed}\n{source}");
    let (mut successes, mut failures) = (0, 0);
    let mut rng = Rng(seed.max(1));
    for run in 0..runs {
        let x = random(&[4], seed * 31 + run as u64);
        let n = rng.below(4) as i64;
        let mut state = StateStore::new();
        if rng.below(8) != 0 {
            state.insert("acc", random(&[4], seed * 17 + run as u64));
        }
        let length = rng.below(4);
        let seq = random(&[length, 4], seed * 13 + run as u64);
        let args = vec![Value::tensor(x), Value::Index(n), Value::tensor(seq)];
        let mut expected_state = state.clone();
        // Profiled on both sides: the plan records what the interpreter
        // does (branches, trip counts, callees, arguments).
        let (mut expected_profile, mut actual_profile) = (Profile::new(), Profile::new());
        let expected = Interpreter::new(&oracle).run_profiled(
            "main",
            args.clone(),
            &mut expected_state,
            &mut expected_profile,
        );
        let before = runs_started();
        let actual = compiled.run_profiled(&module, "main", args, &mut state, &mut actual_profile);
        assert_eq!(runs_started(), before, "seed {seed}: entered the interpreter");
        let case = format!("seed {seed}, run {run}, n = {n}\n{source}");
        assert_eq!(expected_profile, actual_profile, "{case}");
        match (expected, actual) {
            (Ok(expected), Ok(actual)) => {
                successes += 1;
                assert!(Match::Identical.values(&expected, &actual), "{case}");
            }
            (Err(expected), Err(actual)) => {
                failures += 1;
                let (expected, actual) = (expected.to_string(), actual.to_string());
                // A division by zero is reported at its op by both. When
                // several divisions of one kernel fail, the compiled kernel
                // reports the first to fail in loop order, the interpreter
                // the first in program order.
                let division = |m: &str| {
                    m.starts_with("'meta.binary' at line ") && m.ends_with(": integer division by zero")
                };
                if !(division(&expected) && division(&actual)) {
                    assert_eq!(expected, actual, "{case}");
                }
            }
            (expected, actual) => panic!(
                "{case}\nthe interpreter gives {:?}, the plan {:?}",
                expected.map(|_| "results"),
                actual.map(|_| "results")
            ),
        }
        assert!(Match::Identical.states(&expected_state, &state), "{case}");
    }
    (successes, failures)
}

#[test]
fn random_host_programs_match_the_interpreter() {
    let (mut successes, mut failures) = (0, 0);
    for seed in 1..=60u64 {
        let source = random_host_program(&mut Rng(seed * 7919));
        let (s, f) = check(&source, seed, 6);
        successes += s;
        failures += f;
    }
    // Both outcomes are exercised.
    assert!(
        successes > 60 && failures > 30,
        "{successes} successes, {failures} failures"
    );
}

#[test]
fn a_failed_run_commits_nothing() {
    let source = r#"func.func @main(%x: tensor<4xf32>, %n: index) -> (tensor<4xf32>, index) {
  %s = "meta.state_read"() {name = "acc"} : () -> tensor<4xf32>
  %y = "meta.binary"(%s, %x) {kind = "add"} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  "meta.state_write"(%y) {name = "acc"} : (tensor<4xf32>) -> ()
  %c12 = arith.constant 12 : index
  %q = arith.divsi %c12, %n : index
  return %y, %q : tensor<4xf32>, index
}"#;
    let context = new_context().unwrap();
    let mut module = parse_module(&context, source).unwrap();
    let compiled = CpuModule::compile_with(&context, &mut module, &exact()).unwrap();
    let start = Tensor::parse_literal("4xf32=1 2 3 4").unwrap();
    let mut state = StateStore::new();
    state.insert("acc", start.clone());
    let x = Value::tensor(Tensor::parse_literal("4xf32=1 1 1 1").unwrap());
    let error = compiled
        .run(&module, "main", vec![x.clone(), Value::Index(0)], &mut state)
        .unwrap_err();
    assert_eq!(
        error.to_string(),
        "'arith.divsi' at line 6: integer division by zero"
    );
    assert!(Match::Identical.tensors(state.get("acc").unwrap(), &start));
    let results = compiled
        .run(&module, "main", vec![x, Value::Index(4)], &mut state)
        .unwrap();
    assert!(matches!(results[1], Value::Index(3)));
    let expected = Tensor::parse_literal("4xf32=2 3 4 5").unwrap();
    assert!(Match::Identical.tensors(state.get("acc").unwrap(), &expected));
}

#[test]
fn element_wise_kernels_of_dynamic_shape_run_flat() {
    // Every shape runs the one compiled kernel (the first parallel split
    // starts at 32,768 elements), bit for bit the interpreter's.
    let source = r#"func.func @main(%x: tensor<?x3xf32>, %y: tensor<?x3xf32>) -> (tensor<?x3xf32>, tensor<?x3xi1>) {
  %t = "meta.unary"(%x) {kind = "tanh"} : (tensor<?x3xf32>) -> tensor<?x3xf32>
  %m = "meta.binary"(%t, %y) {kind = "mul"} : (tensor<?x3xf32>, tensor<?x3xf32>) -> tensor<?x3xf32>
  %c = "meta.binary"(%x, %y) {kind = "lt"} : (tensor<?x3xf32>, tensor<?x3xf32>) -> tensor<?x3xi1>
  %s = "meta.ternary"(%c, %m, %x) {kind = "select"} : (tensor<?x3xi1>, tensor<?x3xf32>, tensor<?x3xf32>) -> tensor<?x3xf32>
  return %s, %c : tensor<?x3xf32>, tensor<?x3xi1>
}"#;
    let runs = [0, 1, 7, 12_000]
        .into_iter()
        .map(|rows| {
            (
                tensors(random_inputs(&[&[rows, 3], &[rows, 3]], rows as u64)),
                StateStore::new(),
            )
        })
        .collect();
    runs_natively("flat", source, runs);
    let context = new_context().unwrap();
    let mut module = parse_module(&context, source).unwrap();
    let compiled = CpuModule::compile_with(&context, &mut module, &exact()).unwrap();
    // Operands that disagree: the interpreter's words.
    let args = tensors(random_inputs(&[&[2, 3], &[4, 3]], 1));
    let error = compiled
        .run(&module, "main", args, &mut StateStore::new())
        .unwrap_err()
        .to_string();
    assert!(
        error.ends_with("operands have shapes [2, 3] and [4, 3] at run time"),
        "{error}"
    );
}

/// A random element-wise program over arguments of one dynamic shape
/// `tensor<?x{cols}x{element}>`: unary, binary, comparison and select ops.
fn random_flat_program(rng: &mut Rng, cols: usize) -> String {
    let t = format!("tensor<?x{cols}xf32>");
    let b = format!("tensor<?x{cols}xi1>");
    let mut text = format!("func.func @main(%a: {t}, %b: {t}, %c: {t}) -> ({t}, {b}) {{\n");
    let mut values = vec!["%a".to_owned(), "%b".to_owned(), "%c".to_owned()];
    let mut last_bool = None;
    for i in 0..2 + rng.below(8) {
        let pick = |rng: &mut Rng, values: &[String]| values[rng.below(values.len())].clone();
        let (x, y) = (pick(rng, &values), pick(rng, &values));
        let line = match rng.below(4) {
            0 => {
                let kind = rng.pick(&["neg", "abs", "exp", "tanh", "sqrt", "log", "floor"]);
                format!("%v{i} = \"meta.unary\"({x}) {{kind = \"{kind}\"}} : ({t}) -> {t}")
            }
            1 | 2 => {
                let kind = rng.pick(&["add", "sub", "mul", "div", "max", "min", "pow"]);
                format!("%v{i} = \"meta.binary\"({x}, {y}) {{kind = \"{kind}\"}} : ({t}, {t}) -> {t}")
            }
            _ => {
                let kind = rng.pick(&["lt", "ge", "eq", "ne"]);
                text += &format!(
                    "  %p{i} = \"meta.binary\"({x}, {y}) {{kind = \"{kind}\"}} : ({t}, {t}) -> {b}\n"
                );
                last_bool = Some(format!("%p{i}"));
                format!(
                    "%v{i} = \"meta.ternary\"(%p{i}, {x}, {y}) {{kind = \"select\"}} : ({b}, {t}, {t}) -> {t}"
                )
            }
        };
        text += &format!("  {line}\n");
        values.push(format!("%v{i}"));
    }
    let condition = match last_bool {
        Some(p) => p,
        None => {
            text += &format!("  %p = \"meta.binary\"(%a, %b) {{kind = \"lt\"}} : ({t}, {t}) -> {b}\n");
            "%p".to_owned()
        }
    };
    let result = values.last().expect("at least one op");
    text += &format!("  return {result}, {condition} : {t}, {b}\n}}\n");
    text
}

#[test]
fn random_flat_programs_match_the_interpreter() {
    for seed in 1..=40u64 {
        let mut rng = Rng(seed * 104_729);
        let cols = 1 + rng.below(4);
        let source = random_flat_program(&mut rng, cols);
        let runs = [0, 1 + rng.below(9), 12_000 + rng.below(100)]
            .into_iter()
            .map(|rows| {
                let shape: &[usize] = &[rows, cols];
                (
                    tensors(random_inputs(&[shape, shape, shape], seed + rows as u64)),
                    StateStore::new(),
                )
            })
            .collect();
        runs_natively(&format!("seed {seed}\n{source}"), &source, runs);
    }
}

#[test]
fn a_speculating_session_never_enters_the_interpreter() {
    // Its profiling calls record through the host plan, its specialized
    // executable checks entry guards natively, and a call that breaks one
    // falls back to the generic executable's plan.
    use jitc_runtime::{Session, SessionOptions};
    let context = new_context().unwrap();
    let options = SessionOptions {
        speculate: true,
        codegen: exact(),
        ..SessionOptions::default()
    };
    let mut session = Session::new(&context, &example("indrnn.mlir"), "main", options).unwrap();
    let mut state = StateStore::new();
    state.insert("rnn.h", random(&[16, 64], 3));
    let before = runs_started();
    for length in [3, 3, 3, 3, 3, 5, 3] {
        let shapes: [&[usize]; 3] = [&[length, 16, 64], &[64, 64], &[64]];
        session
            .call(tensors(random_inputs(&shapes, length as u64)), &mut state)
            .unwrap();
    }
    assert_eq!(runs_started(), before, "{:?}", session.stats());
    assert!(
        session.stats().specialized > 0 && session.stats().fallbacks > 0,
        "{:?}",
        session.stats()
    );
}
