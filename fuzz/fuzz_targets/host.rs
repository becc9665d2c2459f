//! Structure-aware, for host plans: the fuzzer's bytes steer
//! `random_host_program` (kernels inside nested loops, branches on
//! computed values, calls, guards, host division, state), and the CPU
//! executor's host plan with exact math must give the interpreter's
//! results and committed state bit for bit, or its error word for word
//! with nothing committed, and never enter the interpreter.
#![no_main]

use jitc_compiler::{CodegenOptions, MathMode, parse_module};
use jitc_fuzz::with_context;
use jitc_interp::{Interpreter, StateStore, Value, runs_started};
use jitc_runtime::CpuModule;
use jitc_test_support::{Bytes, Match, random, random_host_program};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut draw = Bytes(data);
    let source = random_host_program(&mut draw);
    // The inputs come from the bytes after the program's.
    let seed = data.iter().fold(7u64, |h, &b| h.wrapping_mul(31).wrapping_add(u64::from(b)));
    let n = (seed % 4) as i64;
    let mut state = StateStore::new();
    if seed % 8 != 0 {
        state.insert("acc", random(&[4], seed ^ 0x5eed));
    }
    let args = vec![Value::tensor(random(&[4], seed)), Value::Index(n)];
    with_context(|context| {
        let oracle = parse_module(context, &source)
            .unwrap_or_else(|| panic!("a generated program does not parse:\n{source}"));
        let mut module = parse_module(context, &source).expect("parsed once already");
        let options = CodegenOptions {
            math: MathMode::Exact,
            ..CodegenOptions::default()
        };
        let compiled = CpuModule::compile_with(context, &mut module, &options)
            .unwrap_or_else(|e| panic!("a generated program does not compile: {e}\n{source}"));
        if jitc_runtime::cpu::cached_compilations() > 256 {
            jitc_runtime::cpu::clear_cache();
        }
        assert_eq!(compiled.fallback(&module, "main"), None, "{source}");
        let mut expected_state = state.clone();
        let expected = Interpreter::new(&oracle).run("main", args.clone(), &mut expected_state);
        let before = runs_started();
        let actual = compiled.run(&module, "main", args, &mut state);
        assert_eq!(runs_started(), before, "the host plan entered the interpreter\n{source}");
        match (expected, actual) {
            (Ok(expected), Ok(actual)) => assert!(
                Match::Identical.values(&expected, &actual),
                "host plan {actual:?}\nbut the interpreter gave {expected:?}\nfor n = {n}\n{source}"
            ),
            (Err(expected), Err(actual)) => {
                let (expected, actual) = (expected.to_string(), actual.to_string());
                // A division by zero is reported at its op by both. When
                // several divisions of one kernel fail, the compiled kernel
                // reports the first to fail in loop order, the interpreter
                // the first in program order.
                let division = |m: &str| m.starts_with("'meta.binary' at line ") && m.ends_with(": integer division by zero");
                if !(division(&expected) && division(&actual)) {
                    assert_eq!(expected, actual, "n = {n}\n{source}");
                }
            }
            (expected, actual) => panic!("interpreter: {expected:?}\nhost plan: {actual:?}\nfor n = {n}\n{source}"),
        }
        assert!(
            Match::Identical.states(&expected_state, &state),
            "committed state differs for n = {n}\n{source}"
        );
    });
});
