//! CPU backend throughput against this machine's memory bandwidth.
//!
//! Run with `cargo bench -p jitc-runtime --bench cpu`. In one run it
//! 1. measures memory bandwidth with a STREAM-style triad
//!    (`a[i] = b[i] + s * c[i]`, 3 x 64 MiB of f64, single thread, and
//!    with both cores), and the FMA peak: independent chains of fused
//!    multiply-adds on the widest vectors, on every core (as
//!    `scripts/fma-peak.c` does in C);
//! 2. times each workload through `CpuModule` (fuse, compile, run):
//!    compile time cold, and again from the kernel cache (a fresh context
//!    parsing the same source: key, lookup and parsing the cached fused IR),
//!    then the median and minimum of seven calls after a warm-up (on
//!    inputs of varied values, not a constant), and for
//!    the compute-bound conv and matmul, GFLOP/s at the median.
//!    The last column is the median of the same workload compiled with
//!    `jittor_rules` (Jittor's fusion alone, no row chains) in the same
//!    run. Timings include allocating the outputs (from the buffer pool after
//!    the first call) and the interpreter's host schedule around the
//!    kernels. Bytes moved are the inputs read plus the outputs written
//!    once, so GB/s is a lower bound on the traffic.
//!
//! 3. times the small contractions of the contraction issue's goals, each
//!    compiled cold (a fresh kernel cache) and then called 30 times after a
//!    warm-up, GFLOP/s at the median against the FMA peak: one SGD step of
//!    the 784-512-10 MLP at batch 256 (`examples/mlp_step.mlir`), and the
//!    32-step RNN (batch 16, hidden and input 256) unrolled by
//!    `meta-unroll`, its state `rnn.h` carried from call to call.
//!
//! Kernels are split across `JITC_NUM_THREADS` worker threads (default:
//! all cores) along a dimension every reduction keeps, so the percentage is
//! of the all-core triad.

use jitc_compiler::{
    CodegenOptions, DiagnosticCollector, OptimizeOptions, Pipeline, new_context, optimize, parse_module,
};
use jitc_interp::{Interpreter, Scalar, StateStore, Tensor, Value, ValueType};
use jitc_runtime::{CpuModule, cpu::affinity};
use std::time::Instant;

#[path = "workloads/rnn.rs"]
mod rnn;
mod workloads;

use workloads::{median, workloads};

/// GB/s of the triad over `threads` threads, each pinned to a CPU of its
/// own as the runtime's workers are (where there are enough CPUs); the
/// median of 11.
fn triad(threads: usize) -> f64 {
    let n = 8 << 20;
    let (mut a, b, c) = (vec![0.0f64; n], vec![1.0f64; n], vec![2.0f64; n]);
    let cpus = affinity::allowed_cpus();
    let mut samples = Vec::new();
    for _ in 0..11 {
        let start = Instant::now();
        let chunk = n.div_ceil(threads);
        std::thread::scope(|scope| {
            for (i, ((a, b), c)) in a
                .chunks_mut(chunk)
                .zip(b.chunks(chunk))
                .zip(c.chunks(chunk))
                .enumerate()
            {
                let cpu = (threads > 1 && cpus.len() >= threads).then(|| cpus[i]);
                scope.spawn(move || {
                    if let Some(cpu) = cpu {
                        affinity::pin_to(cpu);
                    }
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

/// Independent FMA chains per thread: more than the FMA latency times
/// the FMA ports, so the loop is bound by FMA throughput alone.
const CHAINS: usize = 12;
/// Steps of every chain per measurement.
const FMA_STEPS: usize = 4_000_000;

/// One thread's chains on 512-bit vectors.
///
/// # Safety
/// The CPU must have AVX-512F.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn fma_chains_512() -> f32 {
    use std::arch::{asm, x86_64::*};
    let (mut a, b) = (_mm512_set1_ps(0.999_999), _mm512_set1_ps(1e-7));
    let mut acc = [_mm512_set1_ps(1.0); CHAINS];
    for _ in 0..FMA_STEPS {
        // Once per step, so the multiplier is not known to the compiler
        // (and stays in its register).
        // SAFETY: an empty asm block that only names a register.
        unsafe { asm!("/* {0} */", inout(zmm_reg) a, options(pure, nomem, nostack)) };
        for chain in &mut acc {
            *chain = _mm512_fmadd_ps(*chain, a, b);
        }
    }
    acc.iter().map(|&v| _mm512_reduce_add_ps(v)).sum()
}

/// One thread's chains on 256-bit vectors.
///
/// # Safety
/// The CPU must have AVX2 and FMA.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn fma_chains_256() -> f32 {
    use std::arch::{asm, x86_64::*};
    let (mut a, b) = (_mm256_set1_ps(0.999_999), _mm256_set1_ps(1e-7));
    let mut acc = [_mm256_set1_ps(1.0); CHAINS];
    for _ in 0..FMA_STEPS {
        // SAFETY: as in `fma_chains_512`.
        unsafe { asm!("/* {0} */", inout(ymm_reg) a, options(pure, nomem, nostack)) };
        for chain in &mut acc {
            *chain = _mm256_fmadd_ps(*chain, a, b);
        }
    }
    // Every lane of every chain is used: the high half added to the low.
    acc.iter()
        .map(|&v| {
            let half = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps::<1>(v));
            let pair = _mm_add_ps(half, _mm_movehl_ps(half, half));
            _mm_cvtss_f32(_mm_add_ss(pair, _mm_shuffle_ps::<1>(pair, pair)))
        })
        .sum()
}

/// The FMA peak in GFLOP/s over `threads` threads, on the widest vectors
/// the CPU has (the width `CpuTarget::vector_bits` gives the tiles); the
/// median of 5. `None` without FMA.
#[cfg(target_arch = "x86_64")]
fn fma_peak(threads: usize) -> Option<f64> {
    let (chains, lanes): (unsafe fn() -> f32, usize) = if std::arch::is_x86_feature_detected!("avx512f") {
        (fma_chains_512, 16)
    } else if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma") {
        (fma_chains_256, 8)
    } else {
        return None;
    };
    let mut samples = Vec::new();
    for _ in 0..5 {
        let start = Instant::now();
        std::thread::scope(|scope| {
            for _ in 0..threads {
                // SAFETY: the feature was detected above.
                scope.spawn(move || std::hint::black_box(unsafe { chains() }));
            }
        });
        samples.push(start.elapsed());
    }
    let flops = (threads * FMA_STEPS * CHAINS * lanes * 2) as f64;
    Some(flops / median(samples).as_secs_f64() / 1e9)
}

#[cfg(not(target_arch = "x86_64"))]
fn fma_peak(_threads: usize) -> Option<f64> {
    None
}

/// A tensor of `shape` with values in [-3, 3) from a fixed sequence. Not
/// a constant: a division's time depends on its operands on this machine
/// (a zero dividend is fast), and a constant input makes every normalized
/// value 0, which flattered instance norm by a third.
fn varied(shape: &[usize], seed: u64) -> Tensor {
    let mut tensor = Tensor::splat(shape.to_vec(), Scalar::F32(0.0));
    let mut rng = jitc_test_support::Rng(0x9e37_79b9_7f4a_7c15 ^ seed);
    for i in 0..tensor.len() {
        let value = (rng.next() >> 40) as f32 / (1u64 << 24) as f32 * 6.0 - 3.0;
        tensor.buffer_mut().set(i, Scalar::F32(value));
    }
    tensor
}

fn main() {
    let cores = jitc_runtime::cpu::thread_count();
    let all_cores = triad(cores);
    println!(
        "memory bandwidth (STREAM triad): 1 thread {:.1} GB/s, {cores} threads {all_cores:.1} GB/s",
        triad(1)
    );
    let peak = fma_peak(cores);
    match peak {
        Some(peak) => println!("FMA peak: {peak:.1} GFLOP/s on {cores} threads"),
        None => println!("FMA peak: not measured (no AVX2/FMA)"),
    }
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
            .enumerate()
            .map(|(i, s)| varied(s, i as u64 + 1))
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
    // floating-point operations against the FMA peak does.
    for (name, gflops) in contractions {
        match peak {
            Some(peak) => println!(
                "{name}: {gflops:.0} GFLOP/s at the median, {:.0}% of the FMA peak",
                100.0 * gflops / peak
            ),
            None => println!("{name}: {gflops:.0} GFLOP/s at the median"),
        }
    }
    small_contractions(peak);
}

/// The contraction issue's small workloads: compile time cold, the median
/// and minimum of 30 calls, GFLOP/s against the FMA peak.
fn small_contractions(peak: Option<f64>) {
    println!(
        "{:<22} {:>12} {:>12} {:>10} {:>9} {:>9}",
        "small contractions", "compile (ms)", "median (ms)", "min (ms)", "GFLOP/s", "of peak"
    );
    // Forward x W1 and h W2, backward dW2, dh and dW1 (the multiply-adds
    // of the six contractions; the element-wise work is not counted).
    let mlp_flops = 2 * 256 * 784 * 512 * 2 + 2 * 256 * 512 * 10 * 3;
    let (steps, batch, hidden) = (32, 16, 256);
    let rnn_flops = steps * 2 * (2 * batch * hidden * hidden);
    let cases = [
        (
            "MLP step, batch 256",
            jitc_test_support::example("mlp_step.mlir"),
            mlp_flops as u64,
            false,
        ),
        (
            "RNN 32 steps, unrolled",
            unrolled_rnn(steps, batch, hidden),
            rnn_flops as u64,
            true,
        ),
    ];
    for (name, source, flops, rnn_state) in cases {
        // No cache on disk or in the process: the compile is cold.
        jitc_runtime::cpu::set_disk_cache(None);
        jitc_runtime::cpu::clear_cache();
        let context = new_context().expect("context");
        let _collector = DiagnosticCollector::attach(&context);
        let mut module = parse_module(&context, &source).expect("the workload parses");
        let start = Instant::now();
        let compiled = CpuModule::compile(&context, &mut module).expect("the workload compiles");
        let compile = start.elapsed();
        assert!(compiled.interpreted_kernels().is_empty(), "every kernel compiles");
        let inputs: Vec<Value> = if rnn_state {
            rnn::inputs(steps, batch, hidden)
        } else {
            // Varied values of the shapes `@main` takes.
            let signature = Interpreter::new(&module).signature("main").expect("@main");
            signature
                .inputs
                .iter()
                .enumerate()
                .map(|(i, input)| {
                    let ValueType::Tensor(shape, _) = input else {
                        panic!("tensor arguments expected")
                    };
                    let shape: Vec<usize> = shape.iter().map(|d| d.expect("a static shape")).collect();
                    Value::tensor(varied(&shape, i as u64 + 1))
                })
                .collect()
        };
        let mut state = if rnn_state {
            rnn::state(batch, hidden)
        } else {
            StateStore::new()
        };
        let mut samples = Vec::new();
        for call in 0..33 {
            let args = inputs.clone();
            let start = Instant::now();
            compiled
                .run(&module, "main", args, &mut state)
                .expect("the workload runs");
            // Three warm-up calls.
            if call >= 3 {
                samples.push(start.elapsed());
            }
        }
        let minimum = *samples.iter().min().unwrap();
        let median = median(samples);
        let gflops = flops as f64 / median.as_secs_f64() / 1e9;
        let of_peak = peak.map_or("-".to_owned(), |p| format!("{:.0}%", 100.0 * gflops / p));
        println!(
            "{:<22} {:>12.1} {:>12.3} {:>10.3} {:>9.0} {:>9}",
            name,
            compile.as_secs_f64() * 1e3,
            median.as_secs_f64() * 1e3,
            minimum.as_secs_f64() * 1e3,
            gflops,
            of_peak
        );
    }
}

/// The host bench's RNN with its loop unrolled by `meta-unroll` (and
/// `meta-inline`, `canonicalize` and `cse`, as `jitc opt` would), as text.
fn unrolled_rnn(steps: usize, batch: usize, hidden: usize) -> String {
    let source = rnn::rnn(steps, batch, hidden).replacen(
        &format!("    scf.yield %hn : tensor<{batch}x{hidden}xf32>\n  }}"),
        &format!("    scf.yield %hn : tensor<{batch}x{hidden}xf32>\n  }} {{meta.unroll = {steps} : i64}}"),
        1,
    );
    assert!(source.contains("meta.unroll"), "the loop is marked");
    let context = new_context().expect("context");
    let mut module = parse_module(&context, &source).expect("the RNN parses");
    let unroll = Pipeline::parse("builtin.module(meta-unroll, meta-inline, canonicalize, cse)")
        .expect("the pipeline parses");
    optimize(&context, &mut module, &unroll, &OptimizeOptions::default()).expect("the loop unrolls");
    module.as_operation().to_string()
}
