//! Any bytes as a module: parsing and the semantic verifier never panic or
//! crash, whatever they are given.
#![no_main]

use jitc_fuzz::{module_text, with_context};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some(text) = module_text(data) else { return };
    with_context(|context| {
        jitc_fuzz::log_input(data);
        if let Some(module) = jitc_compiler::parse_module(context, &text) {
            let _ = jitc_compiler::verify(&module);
        }
    });
});
