//! A host plan frees each value after its last use, so a chain of kernels
//! over large tensors reuses buffers within one call: a kernel writes its
//! result into an argument that dies at the call, when nothing else holds
//! it, and the pool hands other dead values to the next kernel's results.
//! (Its own test binary: the buffer pool and its counters are
//! process-wide, so its tests also take [`POOL`] in turn: a test that
//! returned buffers to the pool while another counted would change the
//! count.)

use jitc_compiler::{DiagnosticCollector, new_context, parse_module};
use jitc_interp::{
    Scalar, StateStore, Tensor, Value,
    storage::{clear_pool, pool_stats},
};
use jitc_runtime::CpuModule;
use std::sync::{Mutex, MutexGuard};

/// Held by each test for its whole run (see the module doc).
static POOL: Mutex<()> = Mutex::new(());

/// [`POOL`], even after a test that held it failed.
fn pool() -> MutexGuard<'static, ()> {
    POOL.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

#[test]
fn a_dead_intermediate_is_reused_within_the_call() {
    let _pool = pool();
    // Three kernels ({a}, {b, c}, {d, e}: a reindex never fuses with its
    // producer), over 1 MiB tensors, the pool's sizes.
    let t = "tensor<256x1024xf32>";
    let source = format!(
        r#"func.func @main(%x: {t}) -> {t} {{
  %a = "meta.unary"(%x) {{kind = "neg"}} : ({t}) -> {t}
  %b = "meta.reindex"(%a) {{indices = affine_map<(i, j) -> (255 - i, j)>}} : ({t}) -> {t}
  %c = "meta.unary"(%b) {{kind = "abs"}} : ({t}) -> {t}
  %d = "meta.reindex"(%c) {{indices = affine_map<(i, j) -> (255 - i, j)>}} : ({t}) -> {t}
  %e = "meta.unary"(%d) {{kind = "neg"}} : ({t}) -> {t}
  return %e : {t}
}}"#
    );
    let context = new_context().unwrap();
    let _collector = DiagnosticCollector::attach(&context);
    let mut module = parse_module(&context, &source).unwrap();
    let compiled = CpuModule::compile(&context, &mut module).unwrap();
    assert_eq!(compiled.fallback(&module, "main"), None);
    let x = Value::tensor(Tensor::splat(vec![256, 1024], Scalar::F32(-2.0)));
    clear_pool();
    let before = pool_stats();
    let results = compiled
        .run(&module, "main", vec![x], &mut StateStore::new())
        .unwrap();
    let after = pool_stats();
    let Value::Tensor(e) = &results[0] else {
        panic!("a tensor")
    };
    assert_eq!(e.get(0), Scalar::F32(-2.0));
    // From an empty pool, one fresh buffer: the first kernel writes `%a`
    // into the buffer of `%x`, which dies there (the plan owns the
    // arguments it is given); the second kernel's `%c` needs a buffer (its
    // reindex reads `%a` at other points, so not in place); `%a` then dies
    // and the third kernel's `%e` takes its buffer from the pool. Values
    // kept to the end of the call would need three fresh buffers, and
    // buffers reused only through the pool two.
    let allocated = after.allocated - before.allocated;
    let reused = after.reused - before.reused;
    assert!(
        reused == 1 && allocated == 1,
        "{allocated} allocated, {reused} reused"
    );
}

/// `@main` of one element-wise kernel (two ops fused) over a 1 MiB tensor.
const NEGATE: &str = r#"func.func @main(%x: tensor<256x1024xf32>) -> tensor<256x1024xf32> {
  %y = "meta.unary"(%x) {kind = "neg"} : (tensor<256x1024xf32>) -> tensor<256x1024xf32>
  %z = "meta.unary"(%y) {kind = "abs"} : (tensor<256x1024xf32>) -> tensor<256x1024xf32>
  return %z : tensor<256x1024xf32>
}"#;

#[test]
fn a_kernel_writes_its_result_into_an_argument_that_dies() {
    let _pool = pool();
    let context = new_context().unwrap();
    let mut module = parse_module(&context, NEGATE).unwrap();
    let compiled = CpuModule::compile(&context, &mut module).unwrap();
    let x = Tensor::splat(vec![256, 1024], Scalar::F32(-2.0));
    let address = x.buffer().as_ptr();
    let results = compiled
        .run(&module, "main", vec![Value::tensor(x)], &mut StateStore::new())
        .unwrap();
    let Value::Tensor(z) = &results[0] else {
        panic!("a tensor")
    };
    assert_eq!(z.get(1000), Scalar::F32(2.0));
    assert_eq!(
        z.buffer().as_ptr(),
        address,
        "the result is not in the argument's buffer"
    );
}

#[test]
fn an_argument_the_caller_still_holds_is_never_written() {
    let _pool = pool();
    let context = new_context().unwrap();
    let mut module = parse_module(&context, NEGATE).unwrap();
    let compiled = CpuModule::compile(&context, &mut module).unwrap();
    let x = Value::tensor(Tensor::splat(vec![256, 1024], Scalar::F32(-2.0)));
    let held = x.clone();
    let results = compiled
        .run(&module, "main", vec![x], &mut StateStore::new())
        .unwrap();
    let (Value::Tensor(z), Value::Tensor(held)) = (&results[0], &held) else {
        panic!("tensors")
    };
    assert_eq!(z.get(5), Scalar::F32(2.0));
    assert_eq!(
        held.get(5),
        Scalar::F32(-2.0),
        "the caller's tensor was overwritten"
    );
    assert_ne!(z.buffer().as_ptr(), held.buffer().as_ptr());
}
