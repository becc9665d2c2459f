//! CPU backend throughput against this machine's memory bandwidth.
//!
//! Run with `cargo bench -p jitc-runtime --bench cpu`. In one run it
//! 1. measures memory bandwidth with a STREAM-style triad
//!    (`a[i] = b[i] + s * c[i]`, 3 x 64 MiB of f64, single thread, and
//!    with both cores);
//! 2. times each workload through `CpuModule` (fuse, compile, run):
//!    compile time cold, and again from the kernel cache (a fresh context
//!    parsing the same source: key, lookup and parsing the cached fused IR),
//!    then the median and minimum of several calls after a warm-up.
//!    Timings include allocating the outputs (from the buffer pool after
//!    the first call) and the interpreter's host schedule around the
//!    kernels. Bytes moved are the inputs read plus the outputs written
//!    once, so GB/s is a lower bound on the traffic.
//!
//! Kernels are split across `JITC_NUM_THREADS` worker threads (default:
//! all cores) along a dimension every reduction keeps, so the percentage is
//! of the all-core triad.

use jitc_compiler::{diagnostics::DiagnosticCollector, new_context, source::parse_module};
use jitc_interp::{Scalar, StateStore, Tensor, Value};
use jitc_runtime::CpuModule;
use std::time::{Duration, Instant};

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

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

struct Workload {
    name: &'static str,
    source: String,
    inputs: Vec<Vec<usize>>,
}

fn workloads() -> Vec<Workload> {
    let sigmoid = |n: usize| {
        format!(
            r#"func.func @main(%x: tensor<{n}xf32>) -> tensor<{n}xf32> {{
  %one = arith.constant dense<1.0> : tensor<f32>
  %ones = "meta.reindex"(%one) {{indices = affine_map<(d0) -> ()>}} : (tensor<f32>) -> tensor<{n}xf32>
  %e = "meta.unary"(%x) {{kind = "exp"}} : (tensor<{n}xf32>) -> tensor<{n}xf32>
  %d = "meta.binary"(%e, %ones) {{kind = "add"}} : (tensor<{n}xf32>, tensor<{n}xf32>) -> tensor<{n}xf32>
  %y = "meta.binary"(%e, %d) {{kind = "div"}} : (tensor<{n}xf32>, tensor<{n}xf32>) -> tensor<{n}xf32>
  return %y : tensor<{n}xf32>
}}"#
        )
    };
    let softmax = |r: usize, c: usize| {
        let t = format!("tensor<{r}x{c}xf32>");
        let v = format!("tensor<{r}xf32>");
        format!(
            r#"func.func @main(%x: {t}) -> {t} {{
  %max = "meta.reindex_reduce"(%x) {{kind = "max", indices = affine_map<(i, j) -> (i)>}} : ({t}) -> {v}
  %max_b = "meta.reindex"(%max) {{indices = affine_map<(i, j) -> (i)>}} : ({v}) -> {t}
  %s = "meta.binary"(%x, %max_b) {{kind = "sub"}} : ({t}, {t}) -> {t}
  %e = "meta.unary"(%s) {{kind = "exp"}} : ({t}) -> {t}
  %sum = "meta.reindex_reduce"(%e) {{kind = "add", indices = affine_map<(i, j) -> (i)>}} : ({t}) -> {v}
  %sum_b = "meta.reindex"(%sum) {{indices = affine_map<(i, j) -> (i)>}} : ({v}) -> {t}
  %y = "meta.binary"(%e, %sum_b) {{kind = "div"}} : ({t}, {t}) -> {t}
  return %y : {t}
}}"#
        )
    };
    let add = |n: usize| {
        format!(
            r#"func.func @main(%x: tensor<{n}xf32>, %y: tensor<{n}xf32>) -> tensor<{n}xf32> {{
  %s = "meta.binary"(%x, %y) {{kind = "add"}} : (tensor<{n}xf32>, tensor<{n}xf32>) -> tensor<{n}xf32>
  return %s : tensor<{n}xf32>
}}"#
        )
    };
    let layer_norm_gelu = |r: usize, c: usize| {
        let t = format!("tensor<{r}x{c}xf32>");
        let v = format!("tensor<{r}xf32>");
        let splat = |name: &str, value: f64| {
            format!(
                "  %{name}_s = arith.constant dense<{value:.10e}> : tensor<f32>\n  %{name} = \"meta.reindex\"(%{name}_s) {{indices = affine_map<(i, j) -> ()>}} : (tensor<f32>) -> {t}\n"
            )
        };
        let mut body = String::new();
        for (name, value) in [
            ("n", c as f64),
            ("eps", 1e-5),
            ("half", 0.5),
            ("one", 1.0),
            ("k", 0.7978845608028654),
            ("a", 0.044715),
        ] {
            body += &splat(name, value);
        }
        let bin = |out: &str, kind: &str, l: &str, r: &str| {
            format!("  %{out} = \"meta.binary\"(%{l}, %{r}) {{kind = \"{kind}\"}} : ({t}, {t}) -> {t}\n")
        };
        let reduce_broadcast = |out: &str, input: &str| {
            format!(
                "  %{out}_r = \"meta.reindex_reduce\"(%{input}) {{kind = \"add\", indices = affine_map<(i, j) -> (i)>}} : ({t}) -> {v}\n  %{out} = \"meta.reindex\"(%{out}_r) {{indices = affine_map<(i, j) -> (i)>}} : ({v}) -> {t}\n"
            )
        };
        body += &reduce_broadcast("sum", "x");
        body += &bin("mean", "div", "sum", "n");
        body += &bin("d", "sub", "x", "mean");
        body += &bin("d2", "mul", "d", "d");
        body += &reduce_broadcast("ssum", "d2");
        body += &bin("var", "div", "ssum", "n");
        body += &bin("ve", "add", "var", "eps");
        body += &format!("  %std = \"meta.unary\"(%ve) {{kind = \"sqrt\"}} : ({t}) -> {t}\n");
        body += &bin("y", "div", "d", "std");
        body += &bin("y2", "mul", "y", "y");
        body += &bin("y3", "mul", "y2", "y");
        body += &bin("ay3", "mul", "a", "y3");
        body += &bin("inner", "add", "y", "ay3");
        body += &bin("scaled", "mul", "k", "inner");
        body += &format!("  %th = \"meta.unary\"(%scaled) {{kind = \"tanh\"}} : ({t}) -> {t}\n");
        body += &bin("p1", "add", "one", "th");
        body += &bin("hy", "mul", "half", "y");
        body += &bin("gelu", "mul", "hy", "p1");
        format!("func.func @main(%x: {t}) -> {t} {{\n{body}  return %gelu : {t}\n}}\n")
    };
    let examples = |name: &str| {
        std::fs::read_to_string(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../examples")
                .join(name),
        )
        .expect("the example exists")
    };
    // The examples, scaled to the issue's workload shapes.
    let conv = examples("conv.mlir")
        .replace("2x3x5x5x", "8x64x56x56x")
        .replace("4x3x3x3x", "64x64x3x3x")
        .replace("2x4x5x5x3x3x3x", "8x64x56x56x64x3x3x")
        .replace("2x4x5x5x", "8x64x56x56x");
    let matmul = examples("matmul.mlir")
        .replace("4x3x", "1024x1024x")
        .replace("3x5x", "1024x1024x")
        .replace("4x5x3x", "1024x1024x1024x")
        .replace("4x5x", "1024x1024x");
    let instance_norm = examples("instance_norm.mlir")
        .replace("2x3x4x4x", "32x64x56x56x")
        .replace("1x3x1x1x", "1x64x1x1x")
        .replace("dense<32.0>", "dense<100352.0>");
    vec![
        Workload {
            name: "add, 16M f32",
            source: add(1 << 24),
            inputs: vec![vec![1 << 24], vec![1 << 24]],
        },
        Workload {
            name: "sigmoid, 16M f32",
            source: sigmoid(1 << 24),
            inputs: vec![vec![1 << 24]],
        },
        Workload {
            name: "softmax, 4096x1024",
            source: softmax(4096, 1024),
            inputs: vec![vec![4096, 1024]],
        },
        Workload {
            name: "instance norm",
            source: instance_norm,
            inputs: vec![vec![32, 64, 56, 56]],
        },
        Workload {
            name: "layer norm + GELU",
            source: layer_norm_gelu(8192, 1024),
            inputs: vec![vec![8192, 1024]],
        },
        Workload {
            name: "conv 8x64x56x56",
            source: conv,
            inputs: vec![vec![8, 64, 56, 56], vec![64, 64, 3, 3]],
        },
        Workload {
            name: "matmul 1024^3",
            source: matmul,
            inputs: vec![vec![1024, 1024], vec![1024, 1024]],
        },
    ]
}

fn main() {
    let cores = jitc_runtime::cpu::thread_count();
    let all_cores = triad(cores);
    println!(
        "memory bandwidth (STREAM triad): 1 thread {:.1} GB/s, {cores} threads {all_cores:.1} GB/s",
        triad(1)
    );
    println!(
        "{:<22} {:>12} {:>11} {:>12} {:>10} {:>9} {:>9}",
        "workload", "compile (ms)", "cached (ms)", "median (ms)", "min (ms)", "GB/s", "of triad"
    );
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
        let mut samples = Vec::new();
        let mut bytes_out = 0;
        let repetitions = if workload.name.starts_with("conv") || workload.name.starts_with("matmul") {
            3
        } else {
            8
        };
        for repetition in 0..repetitions {
            let args = inputs.iter().cloned().map(Value::tensor).collect();
            let start = Instant::now();
            let results = compiled
                .run(&module, "main", args, &mut StateStore::new())
                .expect("the workload runs");
            let elapsed = start.elapsed();
            bytes_out = results
                .iter()
                .map(|r| if let Value::Tensor(t) = r { t.len() * 4 } else { 0 })
                .sum();
            // The first call is a warm-up.
            if repetition > 0 {
                samples.push(elapsed);
            }
        }
        let minimum = *samples.iter().min().unwrap();
        let median = median(samples);
        let gbs = (bytes_in + bytes_out) as f64 / median.as_secs_f64() / 1e9;
        println!(
            "{:<22} {:>12.1} {:>11.2} {:>12.2} {:>10.2} {:>9.2} {:>8.0}%",
            workload.name,
            compile.as_secs_f64() * 1e3,
            cached.as_secs_f64() * 1e3,
            median.as_secs_f64() * 1e3,
            minimum.as_secs_f64() * 1e3,
            gbs,
            100.0 * gbs / all_cores
        );
    }
}
