//! Any bytes as a module: parsing and the semantic verifier never panic or
//! crash, whatever they are given.
#![no_main]

use jitc_fuzz::{context, module_text};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some(text) = module_text(data) else { return };
    context().with(|context| {
        if let Some(module) = jitc_compiler::parse_module(context, &text) {
            let _ = jitc_compiler::verify(&module);
        }
    });
});
