//! How long a compile takes when it is served from a cache, per example.
//!
//! Run with `cargo bench -p jitc-runtime --bench compile_cache`. For each
//! module of `examples/` (parsing is never timed; the disk cache is off):
//! - **cold**: fuse and compile (one run);
//! - **process hit**: [`CpuModule::compile_with`] in a fresh context, served
//!   by the process's cache of printed modules (print the module with its
//!   locations, look it up, parse the cached fused module);
//! - **context hit**: [`CompileCache::compile`] in the context that compiled
//!   it (a structural fingerprint, a lookup, a copy of the fused module),
//!   and its two parts alone: the fingerprint and the copy.
//!
//! The last row is `examples/rnn.mlir` at B16, H256, I256 with its 32 steps
//! unrolled. Hits are medians of 201 runs (51 for the process hits of conv).

use jitc_compiler::{
    CodegenOptions, OptimizeOptions, Pipeline, clone_module, fingerprint, new_context, optimize, parse_module,
};
use jitc_runtime::{CompileCache, CpuModule, cpu};
use melior::ir::operation::{OperationLike, WalkOrder, WalkResult};
use std::time::{Duration, Instant};

/// The median of `samples`.
fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

fn micros(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1e6
}

/// `examples/rnn.mlir` at B16, H256, I256 over 32 steps, its loop
/// unrolled by `meta-unroll` (96 kernel calls of 3 distinct kernels).
fn unrolled_rnn() -> String {
    let example = include_str!("../../examples/rnn.mlir");
    let source = example
        .replace("5x4x6", "32x16x256")
        .replace("4x8x6", "16x256x256")
        .replace("4x8x8", "16x256x256")
        .replace("6x8", "256x256")
        .replace("8x8", "256x256")
        .replace("4x8", "16x256")
        .replace("constant 5 :", "constant 32 :")
        .replace(
            "scf.yield %hn : tensor<16x256xf32>\n  }",
            "scf.yield %hn : tensor<16x256xf32>\n  } {meta.unroll = 32 : i64}",
        );
    let context = new_context().expect("context");
    let mut module = parse_module(&context, &source).expect("the RNN parses");
    let unroll = Pipeline::parse("builtin.module(meta-unroll)").expect("the pipeline parses");
    optimize(&context, &mut module, &unroll, &OptimizeOptions::default()).expect("the loop unrolls");
    module.as_operation().to_string()
}

fn main() {
    cpu::set_disk_cache(None);
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../examples");
    let mut paths: Vec<_> = std::fs::read_dir(root)
        .expect("examples/ is there")
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|path| path.extension().is_some_and(|e| e == "mlir"))
        .collect();
    paths.sort();
    println!(
        "{:<16} {:>5} {:>10} {:>17} {:>17} {:>16} {:>11}",
        "example",
        "ops",
        "cold (ms)",
        "process hit (µs)",
        "context hit (µs)",
        "fingerprint (µs)",
        "copy (µs)"
    );
    let options = CodegenOptions::default();
    let runs = 201;
    let mut programs: Vec<(String, String)> = paths
        .iter()
        .map(|path| {
            let name = path.file_stem().unwrap().to_string_lossy().into_owned();
            (name, std::fs::read_to_string(path).expect("the example reads"))
        })
        .collect();
    programs.push(("rnn, unrolled".to_owned(), unrolled_rnn()));
    for (name, source) in programs {
        let context = new_context().expect("context");
        let cache = CompileCache::new(&context);
        let mut module = parse_module(&context, &source).expect("the example parses");
        let mut ops = 0;
        module.as_operation().walk(WalkOrder::PreOrder, |_| {
            ops += 1;
            WalkResult::Advance
        });
        let start = Instant::now();
        cache
            .compile(&mut module, &options)
            .expect("the example compiles");
        let cold = start.elapsed();
        let process = median(
            (0..runs)
                .map(|_| {
                    let context = new_context().expect("context");
                    let mut module = parse_module(&context, &source).expect("the example parses");
                    let start = Instant::now();
                    let compiled =
                        CpuModule::compile_with(&context, &mut module, &options).expect("compiles");
                    let elapsed = start.elapsed();
                    assert!(compiled.cache_hit());
                    elapsed
                })
                .take(if name == "conv" { 51 } else { runs })
                .collect(),
        );
        let hits_before = cache.hits();
        let mut hit = Vec::new();
        let mut print = Vec::new();
        let mut copy = Vec::new();
        for _ in 0..runs {
            let mut module = parse_module(&context, &source).expect("the example parses");
            let start = Instant::now();
            std::hint::black_box(fingerprint(&module));
            print.push(start.elapsed());
            let start = Instant::now();
            cache.compile(&mut module, &options).expect("compiles");
            hit.push(start.elapsed());
            let start = Instant::now();
            std::hint::black_box(clone_module(&module));
            copy.push(start.elapsed());
        }
        assert_eq!(cache.hits() - hits_before, runs as u64, "every run was a hit");
        println!(
            "{:<16} {:>5} {:>10.1} {:>17.1} {:>17.2} {:>16.2} {:>11.2}",
            name,
            ops,
            cold.as_secs_f64() * 1e3,
            micros(process),
            micros(median(hit)),
            micros(median(print)),
            micros(median(copy)),
        );
    }
}
