//! How fusion time grows with graph size: 1k, 10k and 100k meta ops.
//!
//! Run with `cargo bench -p jitc-compiler --bench fuse`. For each size it
//! prints the median of several runs of
//! - extracting the graph from the IR (`fusion::extract`: walking ops,
//!   use lists and types through the MLIR C API),
//! - planning (`fusion::plan::plan`: petgraph DAG, greedy contraction,
//!   rule checks on every merge), and
//! - the whole `meta-fuse` pass (planning plus outlining every group into a
//!   kernel through MLIR),
//!
//! and the time per op, so linear growth shows as a flat last column. Two
//! shapes: a DL-like graph, and a fan-out (one value read by every other
//! op, the shape that was quadratic: a set of groups kept as a list).

use jitc_compiler::{
    DiagnosticCollector, Pipeline,
    explain::{self as fusion, Options},
    new_context, parse_module,
};
use melior::ir::{BlockLike, RegionLike, operation::OperationLike};
use std::time::{Duration, Instant};

/// A DL-like graph of `ops` meta ops over 64x64 tensors: element-wise
/// chains with fan-in from earlier values, a row reduction and broadcast
/// back every eighth op (rule 1 and 2 boundaries), and occasional
/// `stop_fuse`.
fn program(ops: usize) -> String {
    let t = "tensor<64x64xf32>";
    let r = "tensor<64xf32>";
    let mut text = format!("func.func @main(%x: {t}, %y: {t}) -> {t} {{\n");
    let mut values = vec!["%x".to_owned(), "%y".to_owned()];
    let mut rng = jitc_test_support::Rng(0x9E37_79B9_7F4A_7C15);
    let mut next = |n: usize| rng.below(n);
    let mut i = 0;
    while i < ops {
        let last = values.last().unwrap().clone();
        let produced = format!("%v{i}");
        if i % 8 == 7 && i + 1 < ops {
            text += &format!(
                "  %r{i} = \"meta.reindex_reduce\"({last}) {{kind = \"add\", indices = affine_map<(a, b) -> (a)>}} : ({t}) -> {r}\n"
            );
            text += &format!(
                "  %v{i} = \"meta.reindex\"(%r{i}) {{indices = affine_map<(a, b) -> (a)>}} : ({r}) -> {t}\n"
            );
            i += 2;
        } else if next(3) == 0 {
            let stop = if next(50) == 0 { ", stop_fuse" } else { "" };
            text += &format!("  %v{i} = \"meta.unary\"({last}) {{kind = \"tanh\"{stop}}} : ({t}) -> {t}\n");
            i += 1;
        } else {
            let window = values.len().min(16);
            let other = values[values.len() - 1 - next(window)].clone();
            text += &format!(
                "  %v{i} = \"meta.binary\"({last}, {other}) {{kind = \"add\"}} : ({t}, {t}) -> {t}\n"
            );
            i += 1;
        }
        values.push(produced);
    }
    text += &format!("  return {} : {t}\n}}\n", values.last().unwrap());
    text
}

/// One value read by `ops` element-wise ops, each a result of its own
/// group (more consumers than the fan-out limit, so none fuses with it).
fn fan_out(ops: usize) -> String {
    let t = "tensor<64xf32>";
    let mut text = format!("func.func @main(%x: {t}) -> {t} {{\n");
    text += &format!("  %a = \"meta.unary\"(%x) {{kind = \"exp\"}} : ({t}) -> {t}\n");
    let mut last = "%a".to_owned();
    for i in 0..ops.saturating_sub(1) {
        text += &format!("  %u{i} = \"meta.unary\"(%a) {{kind = \"neg\"}} : ({t}) -> {t}\n");
        last = format!("%u{i}");
    }
    text += &format!("  return {last} : {t}\n}}\n");
    text
}

/// A benchmark shape: its name and the program of a given size.
type Shape = (&'static str, fn(usize) -> String);

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

fn main() {
    let context = new_context().expect("context");
    let _collector = DiagnosticCollector::attach(&context);
    println!(
        "{:>8} {:>8} {:>13} {:>8} {:>11} {:>8} {:>15} {:>8}",
        "shape", "ops", "extract (ms)", "ns/op", "plan (ms)", "ns/op", "meta-fuse (ms)", "ns/op"
    );
    let shapes: [Shape; 2] = [("dl-like", program), ("fan-out", fan_out)];
    for (shape, ops) in shapes
        .into_iter()
        .flat_map(|s| [1_000, 10_000, 100_000].map(|n| (s, n)))
    {
        let (shape, make) = shape;
        let text = make(ops);
        let repetitions = if ops >= 100_000 { 3 } else { 7 };
        let mut extract_times = Vec::new();
        let mut plan_times = Vec::new();
        let mut pass_times = Vec::new();
        for _ in 0..repetitions {
            let mut module = parse_module(&context, &text).expect("the program parses");
            let function = module.body().first_operation().unwrap();
            let block = function.region(0).unwrap().first_block().unwrap();
            let nodes = fusion::all_ops(block);
            let options = Options {
                labels: false,
                ..Options::default()
            };
            let start = Instant::now();
            let (graph, values) = fusion::extract(&nodes, options);
            extract_times.push(start.elapsed());
            let start = Instant::now();
            let plan = fusion::plan(graph, &values, options);
            plan_times.push(start.elapsed());
            assert!(plan.groups.len() < ops || shape == "fan-out", "something fused");

            let passes = Pipeline::named("fuse").unwrap().build(&context).unwrap();
            let start = Instant::now();
            passes.run(&mut module).expect("meta-fuse succeeds");
            pass_times.push(start.elapsed());
        }
        let (extract, plan, pass) = (median(extract_times), median(plan_times), median(pass_times));
        println!(
            "{shape:>8} {ops:>8} {:>13.2} {:>8.0} {:>11.2} {:>8.0} {:>15.2} {:>8.0}",
            extract.as_secs_f64() * 1e3,
            extract.as_nanos() as f64 / ops as f64,
            plan.as_secs_f64() * 1e3,
            plan.as_nanos() as f64 / ops as f64,
            pass.as_secs_f64() * 1e3,
            pass.as_nanos() as f64 / ops as f64
        );
    }
}
