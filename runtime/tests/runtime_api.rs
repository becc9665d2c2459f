//! The runtime as a frontend uses it from Rust: parse, compile, run on
//! buffers, errors as values; the kernel cache and the buffer pool.

use jitc_compiler::{CodegenOptions, DiagnosticCollector, new_context, parse_module};
use jitc_interp::{Buffer, StateStore, Tensor, Value, storage};
use jitc_runtime::{CpuModule, cpu};

const ADD: &str = r#"func.func @main(%x: tensor<512x512xf32>, %y: tensor<512x512xf32>) -> tensor<512x512xf32> {
  %s = "meta.binary"(%x, %y) {kind = "add"} : (tensor<512x512xf32>, tensor<512x512xf32>) -> tensor<512x512xf32>
  return %s : tensor<512x512xf32>
}"#;

fn tensor(n: usize, f: impl Fn(usize) -> f32) -> Tensor {
    Tensor::new(vec![512, 512], Buffer::F32((0..n).map(f).collect())).unwrap()
}

#[test]
fn a_second_compile_of_the_same_module_hits_the_cache() {
    let compile = || {
        let context = new_context().unwrap();
        let mut module = parse_module(&context, ADD).unwrap();
        let compiled = CpuModule::compile(&context, &mut module).unwrap();
        let (x, y) = (
            tensor(512 * 512, |i| i as f32),
            tensor(512 * 512, |i| 2.0 * i as f32),
        );
        let out = compiled
            .run(
                &module,
                "main",
                vec![Value::tensor(x), Value::tensor(y)],
                &mut StateStore::new(),
            )
            .unwrap();
        (compiled.cache_hit(), out)
    };
    let (_, first) = compile();
    let (hit, second) = compile();
    assert!(hit, "the second compile should come from the cache");
    assert!(cpu::cached_compilations() >= 1);
    assert_eq!(first, second);
    let Value::Tensor(t) = &first[0] else { panic!() };
    assert_eq!(t.get(1000).as_f64(), 3000.0);
}

/// The bounds-checked mode is part of the cache key: a checked compile
/// never gets the unchecked kernels, or the other way round. The checked
/// kernels run split across threads, each part with its own status record,
/// and compute the same.
#[test]
fn checked_and_unchecked_kernels_never_share_a_cache_entry() {
    // This test reads the optimized LLVM IR, which code loaded from the
    // disk cache does not have: this process keeps to its own cache.
    cpu::set_disk_cache(None);
    let compile = |check_bounds: bool| {
        let context = new_context().unwrap();
        let mut module = parse_module(&context, ADD).unwrap();
        let options = CodegenOptions {
            check_bounds,
            ..CodegenOptions::default()
        };
        let compiled = CpuModule::compile_with(&context, &mut module, &options).unwrap();
        let (x, y) = (tensor(512 * 512, |i| i as f32), tensor(512 * 512, |_| 1.0));
        let out = compiled
            .run(
                &module,
                "main",
                vec![Value::tensor(x), Value::tensor(y)],
                &mut StateStore::new(),
            )
            .unwrap();
        (compiled.cache_hit(), compiled.llvm_ir().contains("cmpxchg"), out)
    };
    let (_, unchecked_has_checks, unchecked) = compile(false);
    let (hit, checked_has_checks, checked) = compile(true);
    assert!(!hit, "the checked compile must not reuse the unchecked kernels");
    assert!(!unchecked_has_checks);
    assert!(checked_has_checks, "the checked kernels check their accesses");
    assert_eq!(unchecked, checked);
    let (hit, has_checks, _) = compile(true);
    assert!(hit && has_checks, "a second checked compile hits its own entry");
}

#[test]
fn outputs_reuse_pooled_buffers() {
    let context = new_context().unwrap();
    let mut module = parse_module(&context, ADD).unwrap();
    let compiled = CpuModule::compile(&context, &mut module).unwrap();
    let run = || {
        let (x, y) = (tensor(512 * 512, |i| i as f32), tensor(512 * 512, |_| 1.0));
        compiled
            .run(
                &module,
                "main",
                vec![Value::tensor(x), Value::tensor(y)],
                &mut StateStore::new(),
            )
            .unwrap()
    };
    drop(run());
    let before = storage::pool_stats().reused;
    let out = run();
    assert!(
        storage::pool_stats().reused > before,
        "{:?}",
        storage::pool_stats()
    );
    let Value::Tensor(t) = &out[0] else { panic!() };
    assert_eq!(t.buffer().as_ptr() as usize % storage::ALIGNMENT, 0);
    assert_eq!(t.get(7).as_f64(), 8.0);
}

#[test]
fn run_time_errors_are_values() {
    let source = r#"func.func @main(%x: tensor<4xi32>, %y: tensor<4xi32>) -> tensor<4xi32> {
  %q = "meta.binary"(%x, %y) {kind = "div"} : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi32>
  return %q : tensor<4xi32>
}"#;
    let context = new_context().unwrap();
    let collector = DiagnosticCollector::attach(&context);
    let mut module = parse_module(&context, source).unwrap_or_else(|| panic!("{:?}", collector.take()));
    let compiled = CpuModule::compile(&context, &mut module).unwrap();
    let x = Tensor::parse_literal("4xi32=1 2 3 4").unwrap();
    let y = Tensor::parse_literal("4xi32=1 0 1 1").unwrap();
    let error = compiled
        .run(
            &module,
            "main",
            vec![Value::tensor(x), Value::tensor(y)],
            &mut StateStore::new(),
        )
        .unwrap_err();
    assert!(error.to_string().contains("division by zero"), "{error}");
    // A wrong argument is an error too, not a crash; a large one is named
    // by its shape and type, so the message does not grow with it.
    let refused = |wrong: Tensor| {
        compiled
            .run(
                &module,
                "main",
                vec![Value::tensor(wrong.clone()), Value::tensor(wrong)],
                &mut StateStore::new(),
            )
            .unwrap_err()
            .to_string()
    };
    assert_eq!(
        refused(Tensor::parse_literal("3xi32=1 2 3").unwrap()),
        "argument 0 of @main must be tensor<4xi32>, got 3xi32=1 2 3"
    );
    assert_eq!(
        refused(Tensor::splat(vec![1 << 20], jitc_interp::Scalar::I32(1))),
        "argument 0 of @main must be tensor<4xi32>, got 1048576xi32 (1048576 elements)"
    );
}
