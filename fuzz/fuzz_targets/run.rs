//! `jitc run` on any module that verifies, with small inputs full of
//! special values: the interpreter and the CPU backend (exact math) each
//! run or fail with an error, never crash, and when both run they agree bit
//! for bit. Programs with loops are skipped (a fuzzed trip count is a
//! timeout, not a bug), as are arguments of more than 4,096 elements.
#![no_main]

use jitc_compiler::{CodegenOptions, MathMode, OptimizeOptions, Pipeline, optimize, parse_module, verify};
use jitc_fuzz::{Match, inputs, module_text, with_context};
use jitc_interp::{Interpreter, StateStore};
use jitc_runtime::CpuModule;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some(text) = module_text(data) else { return };
    if text.contains("scf.for") || text.contains("scf.while") || text.contains("func.call") {
        return;
    }
    with_context(|context| {
        jitc_fuzz::log_input(data);
        let Some(mut module) = parse_module(context, &text) else {
            return;
        };
        if verify(&module).is_err()
            || optimize(
                context,
                &mut module,
                &Pipeline::default(),
                &OptimizeOptions::default(),
            )
            .is_err()
        {
            return;
        }
        let interpreter = Interpreter::new(&module);
        let Ok(signature) = interpreter.signature("main") else {
            return;
        };
        let Some(args) = inputs(&signature.inputs, 3, 4096) else {
            return;
        };
        let mut state = StateStore::new();
        let expected = interpreter.run("main", args.clone(), &mut state);
        let options = CodegenOptions {
            math: MathMode::Exact,
            ..CodegenOptions::default()
        };
        let Ok(compiled) = CpuModule::compile_with(context, &mut module, &options) else {
            return;
        };
        // The process-wide kernel cache would hold every program the
        // fuzzer compiles (the campaign ran out of memory); emptied now and
        // then, it still serves the inputs that mutate into one program.
        if jitc_runtime::cpu::cached_compilations() > 256 {
            jitc_runtime::cpu::clear_cache();
        }
        let actual = compiled.run(&module, "main", args, &mut StateStore::new());
        if let (Ok(expected), Ok(actual)) = (expected, actual) {
            assert!(
                Match::Identical.values(&expected, &actual),
                "compiled {actual:?}\nbut the interpreter gave {expected:?}\nfor\n{text}"
            );
        }
    });
});
