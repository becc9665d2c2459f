//! Structure-aware: the fuzzer's bytes steer `random_program`, a generator
//! of well-formed meta programs whose inputs are one-in-eight special
//! values (±0, ±inf, NaN, subnormals, integer extremes), and the CPU
//! backend with exact math and `--check-bounds` must agree with the
//! interpreter bit for bit: an out-of-bounds access is an error the
//! interpreter does not give.
#![no_main]

use jitc_compiler::{CodegenOptions, MathMode, OptimizeOptions, Pipeline, optimize, parse_module};
use jitc_fuzz::{Match, with_context};
use jitc_interp::{Interpreter, StateStore, Value};
use jitc_runtime::CpuModule;
use jitc_test_support::{Bytes, random_program};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let (source, inputs) = random_program(&mut Bytes(data));
    with_context(|context| {
        let mut module = parse_module(context, &source)
            .unwrap_or_else(|| panic!("a generated program does not parse:\n{source}"));
        optimize(
            context,
            &mut module,
            &Pipeline::default(),
            &OptimizeOptions::default(),
        )
        .unwrap_or_else(|e| panic!("a generated program does not optimize: {e}\n{source}"));
        let args = || inputs.iter().cloned().map(Value::tensor).collect::<Vec<_>>();
        let expected = Interpreter::new(&module).run("main", args(), &mut StateStore::new());
        let options = CodegenOptions {
            math: MathMode::Exact,
            check_bounds: true,
            ..CodegenOptions::default()
        };
        let compiled = CpuModule::compile_with(context, &mut module, &options)
            .unwrap_or_else(|e| panic!("a generated program does not compile: {e}\n{source}"));
        // The process-wide kernel cache would hold every program the
        // fuzzer compiles (the campaign ran out of memory); emptied now and
        // then, it still serves the inputs that mutate into one program.
        if jitc_runtime::cpu::cached_compilations() > 256 {
            jitc_runtime::cpu::clear_cache();
        }
        let actual = compiled.run(&module, "main", args(), &mut StateStore::new());
        if let Err(error) = &actual {
            assert!(
                !error.to_string().contains("out-of-bounds"),
                "{error}\nfor\n{source}"
            );
        }
        match (expected, actual) {
            (Ok(expected), Ok(actual)) => assert!(
                Match::Identical.values(&expected, &actual),
                "compiled {actual:?}\nbut the interpreter gave {expected:?}\nfor\n{source}\non {inputs:?}"
            ),
            (Err(_), Err(_)) => {}
            (expected, actual) => panic!("interpreter: {expected:?}\ncompiled: {actual:?}\nfor\n{source}"),
        }
    });
});
