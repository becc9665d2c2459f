//! `CompileCache`: compilations of one context served again from a
//! structural fingerprint and a copy of the fused module, with no printing
//! or parsing.

use jitc_compiler::{CodegenOptions, new_context, parse_module};
use jitc_interp::{Buffer, StateStore, Tensor, Value};
use jitc_runtime::{CompileCache, CpuModule};
use melior::ir::Module;

const SOFTMAX: &str = r#"func.func @main(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %m = "meta.reindex_reduce"(%x) {kind = "max", indices = affine_map<(d0, d1) -> (d0)>} : (tensor<4x8xf32>) -> tensor<4xf32>
  %b = "meta.reindex"(%m) {indices = affine_map<(d0, d1) -> (d0)>} : (tensor<4xf32>) -> tensor<4x8xf32>
  %d = "meta.binary"(%x, %b) {kind = "sub"} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %e = "meta.unary"(%d) {kind = "exp"} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %s = "meta.reindex_reduce"(%e) {kind = "add", indices = affine_map<(d0, d1) -> (d0)>} : (tensor<4x8xf32>) -> tensor<4xf32>
  %t = "meta.reindex"(%s) {indices = affine_map<(d0, d1) -> (d0)>} : (tensor<4xf32>) -> tensor<4x8xf32>
  %y = "meta.binary"(%e, %t) {kind = "div"} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}"#;

fn input() -> Vec<Value> {
    let values = (0..32).map(|i| (i as f32 * 0.37).sin() * 3.0).collect();
    vec![Value::tensor(
        Tensor::new(vec![4, 8], Buffer::F32(values)).unwrap(),
    )]
}

fn run(compiled: &CpuModule, module: &Module) -> Vec<Value> {
    compiled
        .run(module, "main", input(), &mut StateStore::new())
        .unwrap()
}

fn text(module: &Module) -> String {
    module.as_operation().to_string()
}

#[test]
fn an_equal_module_is_served_with_a_copy_of_the_fused_module() {
    let context = new_context().unwrap();
    let cache = CompileCache::new(&context);
    let options = CodegenOptions::default();
    let mut first = parse_module(&context, SOFTMAX).unwrap();
    let compiled = cache.compile(&mut first, &options).unwrap();
    assert_eq!((cache.hits(), cache.misses(), cache.len()), (0, 1, 1));
    let mut second = parse_module(&context, SOFTMAX).unwrap();
    let again = cache.compile(&mut second, &options).unwrap();
    assert_eq!((cache.hits(), cache.misses(), cache.len()), (1, 1, 1));
    assert!(again.cache_hit());
    assert_eq!(text(&second), text(&first), "the hit hands back the fused module");
    assert!(text(&second).contains("meta.fused"), "{}", text(&second));
    assert_eq!(run(&again, &second), run(&compiled, &first));
    // The copy is the caller's: changing it leaves the kept one alone.
    drop(second);
    let mut third = parse_module(&context, SOFTMAX).unwrap();
    let third_compiled = cache.compile(&mut third, &options).unwrap();
    assert_eq!(cache.hits(), 2);
    assert_eq!(run(&third_compiled, &third), run(&compiled, &first));
}

#[test]
fn other_options_another_module_or_another_context_miss() {
    let other = new_context().unwrap();
    let context = new_context().unwrap();
    let cache = CompileCache::new(&context);
    let mut base = parse_module(&context, SOFTMAX).unwrap();
    cache.compile(&mut base, &CodegenOptions::default()).unwrap();
    let checked = CodegenOptions {
        check_bounds: true,
        ..CodegenOptions::default()
    };
    let mut module = parse_module(&context, SOFTMAX).unwrap();
    cache.compile(&mut module, &checked).unwrap();
    assert_eq!(
        (cache.hits(), cache.misses()),
        (0, 2),
        "the options are part of the key"
    );
    let mut changed = parse_module(&context, &SOFTMAX.replace("\"exp\"", "\"tanh\"")).unwrap();
    cache.compile(&mut changed, &CodegenOptions::default()).unwrap();
    assert_eq!((cache.hits(), cache.misses()), (0, 3), "a changed op misses");
    // Moved one line down: the locations differ, and a hit would hand back
    // a module whose errors name the wrong lines.
    let mut moved = parse_module(&context, &format!("\n{SOFTMAX}")).unwrap();
    cache.compile(&mut moved, &CodegenOptions::default()).unwrap();
    assert_eq!(
        (cache.hits(), cache.misses()),
        (0, 4),
        "locations are part of the key"
    );
    // A module of another context is refused, in a sentence, and left as
    // it was.
    let mut foreign = parse_module(&other, SOFTMAX).unwrap();
    let before = text(&foreign);
    let error = cache
        .compile(&mut foreign, &CodegenOptions::default())
        .err()
        .expect("a module of another context is refused");
    assert!(error.to_string().contains("another context"), "{error}");
    assert_eq!(text(&foreign), before);
    assert_eq!((cache.hits(), cache.misses(), cache.len()), (0, 4, 4));
}

/// Modules whose words could not stand for them are compiled and never
/// kept: an op of a dialect whose properties the C API does not show, and
/// a use before its definition (blocks out of dominance order).
#[test]
fn modules_without_a_fingerprint_are_compiled_and_not_kept() {
    let context = new_context().unwrap();
    let cache = CompileCache::new(&context);
    let foreign_dialect = r#"func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %e = "meta.unary"(%x) {kind = "exp"} : (tensor<4xf32>) -> tensor<4xf32>
  cf.br ^done
^done:
  return %e : tensor<4xf32>
}"#;
    let forward_use = r#"func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  cf.br ^make
^use:
  return %e : tensor<4xf32>
^make:
  %e = "meta.unary"(%x) {kind = "exp"} : (tensor<4xf32>) -> tensor<4xf32>
  cf.br ^use
}"#;
    for source in [foreign_dialect, forward_use] {
        let module = parse_module(&context, source).unwrap();
        assert!(jitc_compiler::fingerprint(&module).is_none(), "{source}");
        // (Functions of several blocks do not run yet; compiling them is
        // what the cache does.)
        for _ in 0..2 {
            let mut module = parse_module(&context, source).unwrap();
            cache.compile(&mut module, &CodegenOptions::default()).unwrap();
        }
    }
    assert_eq!((cache.hits(), cache.misses(), cache.len()), (0, 4, 0));
}

#[test]
fn the_least_recently_used_compilation_goes_first() {
    let context = new_context().unwrap();
    let cache = CompileCache::with_capacity(&context, 2);
    let options = CodegenOptions::default();
    let sources = [
        SOFTMAX.to_owned(),
        SOFTMAX.replace("\"exp\"", "\"tanh\""),
        SOFTMAX.replace("\"exp\"", "\"sigmoid\""),
    ];
    let compile = |source: &str| {
        let mut module = parse_module(&context, source).unwrap();
        cache.compile(&mut module, &options).unwrap();
    };
    compile(&sources[0]);
    compile(&sources[1]);
    compile(&sources[0]); // a hit: source 1 is now the least recently used
    assert_eq!((cache.hits(), cache.len()), (1, 2));
    compile(&sources[2]); // evicts source 1
    assert_eq!(cache.len(), 2);
    compile(&sources[0]);
    assert_eq!(cache.hits(), 2, "source 0 was kept");
    compile(&sources[1]);
    assert_eq!(cache.hits(), 2, "source 1 was evicted");
}

#[test]
fn entry_compiles_keep_their_guards_on_a_hit() {
    let source = r#"func.func @main(%x: tensor<?xf32>) -> tensor<?xf32> {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %x, %c0 : tensor<?xf32>
  %c4 = arith.constant 4 : index
  %ok = arith.cmpi eq, %n, %c4 : index
  %t = tensor.from_elements %ok : tensor<i1>
  "meta.guard"(%t) {id = 0 : i64, reason = "shape(%arg0)[0] == 4"} : (tensor<i1>) -> ()
  %e = "meta.unary"(%x) {kind = "exp"} : (tensor<?xf32>) -> tensor<?xf32>
  return %e : tensor<?xf32>
}"#;
    let context = new_context().unwrap();
    let cache = CompileCache::new(&context);
    let options = CodegenOptions::default();
    let mut first = parse_module(&context, source).unwrap();
    let miss = cache.compile_entry(&mut first, &options, "main").unwrap();
    let mut second = parse_module(&context, source).unwrap();
    let hit = cache.compile_entry(&mut second, &options, "main").unwrap();
    assert_eq!(cache.hits(), 1);
    assert_eq!(miss.entry_guards().len(), 1, "the guard was taken out");
    assert_eq!(hit.entry_guards(), miss.entry_guards());
    assert_eq!(text(&second), text(&first));
    // The same module compiled without an entry is another key.
    let mut third = parse_module(&context, source).unwrap();
    cache.compile(&mut third, &options).unwrap();
    assert_eq!((cache.hits(), cache.misses()), (1, 2));
}
