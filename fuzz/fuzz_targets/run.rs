//! `jitc run` on any module that verifies, with small inputs full of
//! special values: the interpreter and the CPU backend (exact math) each
//! run or fail with an error, never crash, and when both run they agree bit
//! for bit. Programs with loops are skipped (a fuzzed trip count is a
//! timeout, not a bug), as are arguments of more than 4,096 elements.
//!
//! With `JITC_FUZZ_CHECK_BOUNDS` set, the kernels are compiled
//! bounds-checked (`--check-bounds`), and a kernel that reports an access
//! out of bounds is a crash with its input (whatever the interpreter did): a
//! hunt for a compiled kernel that writes past its buffers, which in the
//! unchecked build would corrupt the heap with no input to show for it
//! (`docs/fuzzing.md`).
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
        let check_bounds = std::env::var_os("JITC_FUZZ_CHECK_BOUNDS").is_some();
        let options = CodegenOptions {
            math: MathMode::Exact,
            check_bounds,
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
        match (expected, actual) {
            (Ok(expected), Ok(actual)) => assert!(
                Match::Identical.values(&expected, &actual),
                "compiled {actual:?}\nbut the interpreter gave {expected:?}\nfor\n{text}"
            ),
            // A failed check is a compiler bug whatever the interpreter
            // did: where it reported an error, the unchecked kernel would
            // still have made the access.
            (_, Err(error)) if check_bounds && error.to_string().contains("out-of-bounds access") => {
                panic!("a compiled kernel went out of bounds: {error}\nfor\n{text}")
            }
            _ => {}
        }
    });
});
