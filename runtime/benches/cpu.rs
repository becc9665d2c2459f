//! CPU backend throughput against this machine's memory bandwidth.
//!
//! Run with `cargo bench -p jitc-runtime --bench cpu`. In one run it
//! 1. measures memory bandwidth with a STREAM-style triad
//!    (`a[i] = b[i] + s * c[i]`, 3 x 64 MiB of f64, single thread, and
//!    with both cores);
//! 2. times each workload through `CpuModule` (fuse, compile, run):
//!    compile time cold, and again from the kernel cache (a fresh context
//!    parsing the same source: key, lookup and parsing the cached fused IR),
//!    then the median and minimum of seven calls after a warm-up, and for
//!    the compute-bound conv and matmul, GFLOP/s at the median.
//!    The last column is the median of the same workload compiled with
//!    `jittor_rules` (Jittor's fusion alone, no row chains) in the same
//!    run. Timings include allocating the outputs (from the buffer pool after
//!    the first call) and the interpreter's host schedule around the
//!    kernels. Bytes moved are the inputs read plus the outputs written
//!    once, so GB/s is a lower bound on the traffic.
//!
//! Kernels are split across `JITC_NUM_THREADS` worker threads (default:
//! all cores) along a dimension every reduction keeps, so the percentage is
//! of the all-core triad.

use jitc_compiler::{CodegenOptions, DiagnosticCollector, new_context, parse_module};
use jitc_interp::{Scalar, StateStore, Tensor, Value};
use jitc_runtime::CpuModule;
use std::time::Instant;

mod workloads;

use workloads::{median, workloads};

/// GB/s of the triad over `threads` threads.
fn triad(threads: usize) -> f64 {
    let n = 8 << 20;
    let (mut a, b, c) = (vec![0.0f64; n], vec![1.0f64; n], vec![2.0f64; n]);
    let mut samples = Vec::new();
    for _ in 0..7 {
        let start = Instant::now();
        let chunk = n.div_ceil(threads);
        std::thread::scope(|scope| {
            for ((a, b), c) in a.chunks_mut(chunk).zip(b.chunks(chunk)).zip(c.chunks(chunk)) {
                scope.spawn(move || {
                    for i in 0..a.len() {
                        a[i] = b[i] + 3.0 * c[i];
                    }
                });
            }
        });
        samples.push(start.elapsed());
        std::hint::black_box(&a);
    }
    (3 * n * 8) as f64 / median(samples).as_secs_f64() / 1e9
}

fn main() {
    let cores = jitc_runtime::cpu::thread_count();
    let all_cores = triad(cores);
    println!(
        "memory bandwidth (STREAM triad): 1 thread {:.1} GB/s, {cores} threads {all_cores:.1} GB/s",
        triad(1)
    );
    println!(
        "{:<22} {:>12} {:>11} {:>12} {:>10} {:>9} {:>9} {:>14}",
        "workload",
        "compile (ms)",
        "cached (ms)",
        "median (ms)",
        "min (ms)",
        "GB/s",
        "of triad",
        "jittor (ms)"
    );
    let mut contractions = Vec::new();
    for workload in workloads() {
        let context = new_context().expect("context");
        let _collector = DiagnosticCollector::attach(&context);
        let mut module = parse_module(&context, &workload.source).expect("the workload parses");
        let start = Instant::now();
        let compiled = CpuModule::compile(&context, &mut module).expect("the workload compiles");
        let compile = start.elapsed();
        assert!(compiled.interpreted_kernels().is_empty(), "every kernel compiles");
        let cached = {
            let context = new_context().expect("context");
            let mut module = parse_module(&context, &workload.source).expect("the workload parses");
            let start = Instant::now();
            let again = CpuModule::compile(&context, &mut module).expect("the workload compiles");
            assert!(again.cache_hit(), "the second compile comes from the cache");
            start.elapsed()
        };
        let inputs: Vec<Tensor> = workload
            .inputs
            .iter()
            .map(|s| Tensor::splat(s.clone(), Scalar::F32(0.5)))
            .collect();
        let bytes_in: usize = inputs.iter().map(|t| t.len() * 4).sum();
        let repetitions = 8;
        // Median and minimum call time, and the bytes of the results.
        let time = |compiled: &CpuModule, module: &melior::ir::Module| {
            let mut samples = Vec::new();
            let mut bytes_out = 0;
            for repetition in 0..repetitions {
                let args = inputs.iter().cloned().map(Value::tensor).collect();
                let start = Instant::now();
                let results = compiled
                    .run(module, "main", args, &mut StateStore::new())
                    .expect("the workload runs");
                let elapsed = start.elapsed();
                bytes_out = results
                    .iter()
                    .map(|r| if let Value::Tensor(t) = r { t.len() * 4 } else { 0 })
                    .sum::<usize>();
                // The first call is a warm-up.
                if repetition > 0 {
                    samples.push(elapsed);
                }
            }
            let minimum = *samples.iter().min().unwrap();
            (median(samples), minimum, bytes_out)
        };
        let (median, minimum, bytes_out) = time(&compiled, &module);
        // The same workload fused by Jittor's rules alone (no row chains),
        // in the same run.
        let jittor = {
            let mut module = parse_module(&context, &workload.source).expect("the workload parses");
            let options = CodegenOptions {
                jittor_rules: true,
                ..CodegenOptions::default()
            };
            let compiled =
                CpuModule::compile_with(&context, &mut module, &options).expect("the workload compiles");
            time(&compiled, &module).0
        };
        let gbs = (bytes_in + bytes_out) as f64 / median.as_secs_f64() / 1e9;
        println!(
            "{:<22} {:>12.1} {:>11.2} {:>12.2} {:>10.2} {:>9.2} {:>8.0}% {:>14.2}",
            workload.name,
            compile.as_secs_f64() * 1e3,
            cached.as_secs_f64() * 1e3,
            median.as_secs_f64() * 1e3,
            minimum.as_secs_f64() * 1e3,
            gbs,
            100.0 * gbs / all_cores,
            jittor.as_secs_f64() * 1e3
        );
        if workload.flops > 0 {
            contractions.push((workload.name, workload.flops as f64 / median.as_secs_f64() / 1e9));
        }
    }
    // Compute-bound workloads: GB/s says little; their rate of
    // floating-point operations does (compare with scripts/fma-peak.c).
    for (name, gflops) in contractions {
        println!("{name}: {gflops:.0} GFLOP/s at the median");
    }
}
