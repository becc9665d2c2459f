//! What a compiled call costs around its kernels: the host plan against
//! the interpreter running the same host code (the path every compiled
//! call took before host plans), in one run.
//!
//! Run with `cargo bench -p jitc-runtime --bench host`. Each workload is
//! compiled once (`--math fast`, the default) and called through
//! [`CpuModule::run`] (its host plan) and through the interpreter with the
//! same native kernels; each figure is the median of many calls after a
//! warm-up, and the ratio is taken between the two in the same run:
//!
//! 1. **identity**: a function that returns its `tensor<1024xf32>`
//!    argument (no kernel: the fixed cost of a call);
//! 2. **100-op chain**: 100 element-wise ops on 1,024 floats, each with
//!    its own splat constant, fused into one kernel;
//! 3. **guard on a computed value**: one kernel computes a `tensor<i1>`,
//!    then 0 or 64 `meta.guard`s check it; the slope is one guard;
//! 4. **RNN, 32 steps**: an Elman RNN as an `scf.for` over a sequence
//!    (batch 16, hidden and input 256), three kernels per step.

use jitc_compiler::{DiagnosticCollector, new_context, parse_module};
use jitc_interp::{Interpreter, Scalar, StateStore, Tensor, Value};
use jitc_runtime::CpuModule;
use std::time::{Duration, Instant};

#[path = "workloads/rnn.rs"]
mod rnn;

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

/// Median time per call of `call`, over `rounds` samples of `batch` calls.
fn time(rounds: usize, batch: usize, call: &mut dyn FnMut()) -> Duration {
    for _ in 0..batch.max(3) {
        call();
    }
    let samples = (0..rounds)
        .map(|_| {
            let start = Instant::now();
            for _ in 0..batch {
                call();
            }
            start.elapsed() / batch as u32
        })
        .collect();
    median(samples)
}

/// The plan's and the interpreter's time per call of `@main` of `source`.
fn compare(
    source: &str,
    args: &dyn Fn() -> Vec<Value>,
    state: &StateStore,
    rounds: usize,
    batch: usize,
) -> (Duration, Duration) {
    let context = new_context().expect("context");
    let _collector = DiagnosticCollector::attach(&context);
    let mut module = parse_module(&context, source).expect("the workload parses");
    let compiled = CpuModule::compile(&context, &mut module).expect("the workload compiles");
    assert!(compiled.interpreted_kernels().is_empty(), "every kernel compiles");
    assert_eq!(
        compiled.fallback(&module, "main"),
        None,
        "the host code has a plan"
    );
    let inputs = args();
    let plan = time(rounds, batch, &mut || {
        let mut state = state.clone();
        std::hint::black_box(
            compiled
                .run(&module, "main", inputs.clone(), &mut state)
                .expect("the call runs"),
        );
    });
    let interpreter = Interpreter::new(&module).with_kernels(&compiled);
    let interpreted = time(rounds, batch, &mut || {
        let mut state = state.clone();
        std::hint::black_box(
            interpreter
                .run("main", inputs.clone(), &mut state)
                .expect("the call runs"),
        );
    });
    (plan, interpreted)
}

fn report(name: &str, (plan, interpreted): (Duration, Duration)) {
    println!(
        "  {name:<28} {:>11.3} µs {:>13.3} µs {:>8.1}x",
        plan.as_secs_f64() * 1e6,
        interpreted.as_secs_f64() * 1e6,
        interpreted.as_secs_f64() / plan.as_secs_f64()
    );
}

fn chain(ops: usize) -> String {
    let t = "tensor<1024xf32>";
    let mut text = format!("func.func @main(%x: {t}) -> {t} {{\n");
    let mut current = "%x".to_owned();
    for i in 0..ops {
        let (kind, value) = match i % 4 {
            0 => ("mul", "1.0001"),
            1 => ("add", "0.001"),
            2 => ("sub", "0.0005"),
            _ => ("max", "-100.0"),
        };
        text += &format!("  %c{i} = arith.constant dense<{value}> : {t}\n");
        text += &format!(
            "  %v{i} = \"meta.binary\"({current}, %c{i}) {{kind = \"{kind}\"}} : ({t}, {t}) -> {t}\n"
        );
        current = format!("%v{i}");
    }
    text += &format!("  return {current} : {t}\n}}\n");
    text
}

fn guards(n: usize) -> String {
    let t = "tensor<1024xf32>";
    let mut text = format!(
        r#"func.func @main(%x: {t}) -> tensor<i1> {{
  %max = "meta.reindex_reduce"(%x) {{kind = "max", indices = affine_map<(d0) -> ()>}} : ({t}) -> tensor<f32>
  %limit = arith.constant dense<100.0> : tensor<f32>
  %ok = "meta.binary"(%max, %limit) {{kind = "lt"}} : (tensor<f32>, tensor<f32>) -> tensor<i1>
"#
    );
    for i in 0..n {
        text += &format!(
            "  \"meta.guard\"(%ok) {{id = {} : i64, reason = \"max < 100\"}} : (tensor<i1>) -> ()\n",
            i + 1
        );
    }
    text += "  return %ok : tensor<i1>\n}\n";
    text
}

fn main() {
    let threads = jitc_runtime::cpu::thread_count();
    println!(
        "host code per call, {threads} threads (median; interpreter = the same kernels under the interpreted host code):"
    );
    println!(
        "  {:<28} {:>14} {:>16} {:>9}",
        "workload", "host plan", "interpreter", "ratio"
    );
    let vector = || vec![Value::tensor(Tensor::splat(vec![1024], Scalar::F32(0.5)))];
    let none = StateStore::new();
    let identity =
        "func.func @main(%x: tensor<1024xf32>) -> tensor<1024xf32> {\n  return %x : tensor<1024xf32>\n}\n";
    report("identity", compare(identity, &vector, &none, 51, 2000));
    report(
        "100-op chain, 1024 floats",
        compare(&chain(100), &vector, &none, 51, 200),
    );
    let unguarded = compare(&guards(0), &vector, &none, 51, 500);
    let guarded = compare(&guards(64), &vector, &none, 51, 500);
    report("guards: 1 kernel, 0 guards", unguarded);
    report("guards: 1 kernel, 64 guards", guarded);
    let slope = |with: Duration, without: Duration| (with.as_secs_f64() - without.as_secs_f64()) * 1e9 / 64.0;
    println!(
        "  one guard on a computed value: {:.1} ns on the host plan, {:.1} ns interpreted",
        slope(guarded.0, unguarded.0),
        slope(guarded.1, unguarded.1)
    );
    let (steps, batch, hidden) = (32, 16, 256);
    let args = move || rnn::inputs(steps, batch, hidden);
    let state = rnn::state(batch, hidden);
    report(
        "RNN scf.for, 32 steps, B16 H256",
        compare(&rnn::rnn(steps, batch, hidden), &args, &state, 21, 1),
    );
}
