//! Lowering and LLVM code generation, for the CPU and for NVPTX, on any
//! module that verifies: each either compiles or says why not, never
//! crashes.
#![no_main]

use jitc_compiler::{CodegenOptions, GpuOptions, MathMode, compile_cpu, compile_ptx, parse_module, verify};
use jitc_fuzz::{module_text, with_context};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some(text) = module_text(data) else { return };
    with_context(|context| {
        jitc_fuzz::log_input(data);
        for math in [MathMode::Fast, MathMode::Exact] {
            let Some(mut module) = parse_module(context, &text) else {
                return;
            };
            if verify(&module).is_err() {
                return;
            }
            let options = CodegenOptions {
                math,
                ..CodegenOptions::default()
            };
            let _ = compile_cpu(context, &mut module, &options, Some("main"));
            let Some(mut module) = parse_module(context, &text) else {
                return;
            };
            let options = GpuOptions {
                math,
                ..GpuOptions::default()
            };
            let _ = compile_ptx(context, &mut module, &options);
        }
    });
});
