//! A host plan frees each value after its last use, so a chain of kernels
//! over large tensors reuses buffers within one call: the pool hands the
//! dead input of one kernel to the output of the next. (Its own test
//! binary: the buffer pool's counters are process-wide.)

use jitc_compiler::{DiagnosticCollector, new_context, parse_module};
use jitc_interp::{
    Scalar, StateStore, Tensor, Value,
    storage::{clear_pool, pool_stats},
};
use jitc_runtime::CpuModule;

#[test]
fn a_dead_intermediate_is_reused_within_the_call() {
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
    // From an empty pool, only the first kernel's output needs a fresh
    // buffer: `%x` dies once `%a` is computed (the plan owns the
    // arguments it is given) and the second kernel takes its buffer, and
    // `%a` dies in turn for the third. Values kept to the end of the call
    // would need three.
    let allocated = after.allocated - before.allocated;
    let reused = after.reused - before.reused;
    assert!(
        reused == 2 && allocated == 1,
        "{allocated} allocated, {reused} reused"
    );
}
