//! Kernels compiled on several threads (`codegen::jit`): groups of kernels
//! that share no code go to threads of their own, each compiling a copy of
//! the module that keeps only its share, and the objects are linked
//! together. The MLP training step (ten kernel groups) compiled that way
//! computes what the interpreter computes, and comes back from the disk
//! cache the same.

use jitc_compiler::{CodegenOptions, DiagnosticCollector, MathMode, new_context, parse_module};
use jitc_interp::{Interpreter, StateStore, Value};
use jitc_runtime::{CpuModule, cpu, disk_cache::DiskCache};
use jitc_test_support::{Match, example, random};

/// The example's training step on a smaller batch and layers (the
/// interpreter is the oracle, and it is slow in a debug build): the same
/// kernels and code, over 8 examples of 24 features, 16 hidden units.
fn source() -> String {
    example("mlp_step.mlir")
        .replace("256x784", "8x24")
        .replace("784x512", "24x16")
        .replace("256x512", "8x16")
        .replace("512x10", "16x10")
        .replace("256x10", "8x10")
        .replace("tensor<512x", "tensor<16x")
        .replace("tensor<512xf32>", "tensor<16xf32>")
        .replace("tensor<784x", "tensor<24x")
        .replace("tensor<256x", "tensor<8x")
}

fn inputs() -> Vec<Value> {
    let shapes: [&[usize]; 7] = [&[8, 24], &[8, 10], &[24, 16], &[16], &[16, 10], &[10], &[]];
    shapes
        .iter()
        .enumerate()
        .map(|(i, shape)| Value::tensor(random(shape, 40 + i as u64)))
        .collect()
}

#[test]
fn kernels_compiled_on_threads_of_their_own_match_the_interpreter() {
    let source = source();
    let context = new_context().unwrap();
    let collector = DiagnosticCollector::attach(&context);
    let oracle =
        parse_module(&context, &source).unwrap_or_else(|| panic!("{:?}\n{source}", collector.take()));
    let expected = Interpreter::new(&oracle)
        .run("main", inputs(), &mut StateStore::new())
        .unwrap();
    let options = CodegenOptions {
        math: MathMode::Exact,
        ..CodegenOptions::default()
    };
    // A disk cache of this test's own: the first compile is a miss that
    // stores, the second (after the process's cache is cleared) a hit.
    let dir = tempfile::tempdir().unwrap();
    cpu::set_disk_cache(Some(DiskCache::new(dir.path().to_owned(), 1 << 30)));
    for round in ["compiled", "loaded from disk"] {
        cpu::clear_cache();
        let mut module = parse_module(&context, &source).unwrap();
        let compiled = CpuModule::compile_with(&context, &mut module, &options).unwrap();
        assert_eq!(compiled.disk_hit(), round == "loaded from disk");
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
        if threads >= 2 {
            assert!(compiled.object_count() >= 2, "{round}: one object");
        }
        let actual = compiled
            .run(&module, "main", inputs(), &mut StateStore::new())
            .unwrap();
        assert!(Match::for_math(true).values(&expected, &actual), "{round}");
    }
}
