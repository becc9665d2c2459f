//! Every named pipeline on any module that verifies: `fuse`, the
//! `default` pipeline, the speculation passes with an empty profile (which
//! must leave the program correct and never crash), and `meta-grad`
//! (which may refuse a module, with a diagnostic). A verifier failure
//! after a pipeline, or an internal compiler error (a pass that panicked,
//! caught at the pass boundary), is a compiler bug, and a panic.
#![no_main]

use jitc_compiler::{DiagnosticCollector, Error, OptimizeOptions, Pipeline, optimize, parse_module, verify};
use jitc_fuzz::{module_text, with_context};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some(text) = module_text(data) else { return };
    with_context(|context| {
        jitc_fuzz::log_input(data);
        for name in ["fuse", "fuse-fast", "default", "speculation", "grad"] {
            let collector = DiagnosticCollector::attach(context);
            let Some(mut module) = parse_module(context, &text) else {
                return;
            };
            if verify(&module).is_err() {
                return;
            }
            let mut pipeline = match name {
                "grad" => Pipeline::parse("builtin.module(meta-grad)").expect("meta-grad parses"),
                _ => Pipeline::named(name).expect("a named pipeline"),
            };
            for path in pipeline.profile_paths().unwrap_or_default() {
                pipeline.provide_profile(&path, jitc_compiler::Profile::new());
            }
            if let Err(Error::VerifierFailedAfterPipeline(pipeline)) =
                optimize(context, &mut module, &pipeline, &OptimizeOptions::default())
            {
                panic!("the meta verifier failed after the {pipeline} pipeline");
            }
            if let Some(ice) = collector
                .take()
                .into_iter()
                .find(|d| d.message.contains("internal compiler error"))
            {
                panic!("{name}: {}", ice.message);
            }
        }
    });
});
