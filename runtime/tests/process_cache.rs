//! The process's cache of compilations is bounded: past its capacity the
//! least recently used compilation is dropped, and modules that hold it
//! keep working. (Its own test binary: the capacity is process-wide.)

use jitc_compiler::{new_context, parse_module};
use jitc_interp::{Buffer, StateStore, Tensor, Value};
use jitc_runtime::{CpuModule, cpu};

fn source(kind: &str) -> String {
    format!(
        r#"func.func @main(%x: tensor<8xf32>) -> tensor<8xf32> {{
  %y = "meta.unary"(%x) {{kind = "{kind}"}} : (tensor<8xf32>) -> tensor<8xf32>
  return %y : tensor<8xf32>
}}"#
    )
}

#[test]
fn the_least_recently_used_compilation_is_dropped_past_the_capacity() {
    cpu::set_disk_cache(None);
    assert_eq!(cpu::cache_capacity(), cpu::DEFAULT_CACHE_CAPACITY);
    cpu::set_cache_capacity(2);
    assert_eq!(cpu::cache_capacity(), 2);
    let context = new_context().unwrap();
    let compile = |kind: &str| {
        let mut module = parse_module(&context, &source(kind)).unwrap();
        let compiled = CpuModule::compile(&context, &mut module).unwrap();
        (compiled, module)
    };
    let (first, first_module) = compile("exp");
    assert!(!first.cache_hit());
    compile("tanh");
    assert!(compile("exp").0.cache_hit(), "exp is kept");
    compile("sigmoid"); // drops tanh, the least recently used
    assert_eq!(cpu::cached_compilations(), 2);
    assert!(compile("exp").0.cache_hit(), "exp is still kept");
    assert!(
        !compile("tanh").0.cache_hit(),
        "tanh was dropped and compiles again"
    );
    // The compilation that was dropped first still runs in the module that
    // holds it.
    cpu::clear_cache();
    let x = Tensor::new(vec![8], Buffer::F32((0..8).map(|_| 0.5f32).collect())).unwrap();
    let out = first
        .run(
            &first_module,
            "main",
            vec![Value::tensor(x)],
            &mut StateStore::new(),
        )
        .unwrap();
    let Value::Tensor(t) = &out[0] else {
        panic!("a tensor")
    };
    assert!((t.get(3).as_f64() - 0.5f64.exp()).abs() < 1e-6);
}
