//! GPU tests: every example runs on the CUDA backend and must equal the
//! interpreter (relative tolerance 1e-5, absolute 1e-6 near zero, as the
//! CPU's fast-math examples in `differential.rs`: the GPU uses the same
//! polynomial `exp`/`tanh` and block reductions reassociate sums), with
//! `--math exact` kernels compared within 4 ulps. The fast-math examples
//! also run in the bounds-checked mode (`GpuOptions::check_bounds`), where
//! an access out of bounds would fail the run.
//!
//! Beside the examples it checks split block reductions (exact sums, the
//! same bits twice) and the device plans: which functions get
//! one, that a run with values kept on the device gives the same bits as
//! a run from the host, and that run-time errors (a division by zero, a
//! wrong argument) come back as errors, host plans with deferred checks
//! against the same plans waiting for each kernel, GPU row chains, and contractions as
//! shared-memory tiles (`GpuOptions::tiles`: matmuls and a convolution
//! against the CPU backend). Last, it sweeps each math
//! function the GPU computes (jitc's fast-math polynomials, libdevice's
//! f32 and f64 functions) against libm, value by value over the inputs of
//! the CPU's `approximations.rs`, and prints the largest error in ulps
//! ([`SWEEPS`] gives each one's bound).
//!
//! This file has its own `main` (no libtest harness) so that a machine
//! without a GPU says so: it prints `SKIPPED` and the number of tests not
//! run, and counts none of them as passed. Set `JITC_REQUIRE_GPU=1` to make
//! a missing GPU a failure (on the GPU machine).

use jitc_compiler::{
    DiagnosticCollector, GpuOptions, MathMode, OptimizeOptions, Pipeline, new_context, optimize, parse_module,
};
use jitc_interp::{Buffer, Interpreter, StateStore, Tensor, Value};
use jitc_runtime::cuda::{CudaDevice, CudaModule, DeviceValue, Schedule};
use std::process::ExitCode;

// The bench's workloads (`median` and `flops` are the bench's alone).
#[allow(dead_code)]
#[path = "../benches/workloads/mod.rs"]
mod workloads;

use jitc_test_support::{
    Match, STATIC_EXAMPLES, absolute, contraction_source, example, floats, random, random_inputs, random_of,
    sweep,
};

/// `@main` dividing its first argument by its second, element by element.
const DIVIDE: &str = r#"func.func @main(%x: tensor<4xi32>, %y: tensor<4xi32>) -> tensor<4xi32> {
  %q = "meta.binary"(%x, %y) {kind = "div"} : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi32>
  return %q : tensor<4xi32>
}"#;

/// `@looped` dividing its first argument by its second `%n` times.
const LOOPED: &str = r#"func.func @looped(%x: tensor<4xi32>, %y: tensor<4xi32>, %n: index) -> tensor<4xi32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%a = %x) -> (tensor<4xi32>) {
    %q = "meta.binary"(%a, %y) {kind = "div"} : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi32>
    scf.yield %q : tensor<4xi32>
  }
  return %r : tensor<4xi32>
}"#;

/// Example `name` parsed and optimized as the CLI optimizes it.
fn optimized_example<'c>(context: &'c melior::Context, name: &str) -> Result<melior::ir::Module<'c>, String> {
    let collector = DiagnosticCollector::attach(context);
    let mut module =
        parse_module(context, &example(name)).ok_or_else(|| format!("{:?}", collector.take()))?;
    optimize(
        context,
        &mut module,
        &Pipeline::default(),
        &OptimizeOptions::default(),
    )
    .map_err(|e| e.to_string())?;
    Ok(module)
}

/// Exact math on the GPU calls libdevice, not the interpreter's libm: 4
/// ulps ([`Match::Ulps4`]); fast math as on the CPU, but for example
/// `name`'s long sums ([`Match::Reassociated`]: IndRNN's projections add
/// 64 terms, which the GPU's kernel adds in another order than the
/// interpreter, further from it than `Match::Relative` allows).
fn gpu_tolerance(math: MathMode, name: &str) -> Match {
    match math {
        MathMode::Exact => Match::Ulps4,
        MathMode::Fast if name == "indrnn.mlir" => Match::Reassociated,
        MathMode::Fast => Match::Relative,
    }
}

/// Runs example `name` on `shapes` of random inputs on the GPU (bounds
/// checked or not) and in the interpreter; `Err` describes a difference.
fn check(name: &str, shapes: &[&[usize]], math: MathMode, check_bounds: bool) -> Result<(), String> {
    let context = new_context().map_err(|e| e.to_string())?;
    let mut module = optimized_example(&context, name)?;
    let inputs = random_inputs(shapes, 7);
    let args = || inputs.iter().cloned().map(Value::tensor).collect::<Vec<_>>();
    let mut state = StateStore::new();
    state.insert("rnn.h", random(&[4, 8], 99));
    if name == "indrnn.mlir" {
        state.insert("rnn.h", random(&[16, 64], 99));
    }
    let mut expected_state = state.clone();
    let expected = Interpreter::new(&module)
        .run("main", args(), &mut expected_state)
        .map_err(|e| format!("the interpreter failed: {e}"))?;
    let options = GpuOptions {
        math,
        check_bounds,
        ..GpuOptions::default()
    };
    let compiled = CudaModule::compile(&context, &mut module, &options).map_err(|e| e.to_string())?;
    let mut gpu_state = state.clone();
    let got = compiled
        .run(&module, "main", args(), &mut gpu_state)
        .map_err(|e| format!("the GPU run failed: {e}"))?;
    if !gpu_tolerance(math, name).values(&expected, &got) {
        return Err(format!("results differ\ninterpreter: {expected:?}\ngpu: {got:?}"));
    }
    for (key, value) in expected_state.iter() {
        let other = gpu_state
            .get(key)
            .ok_or_else(|| format!("state '{key}' was not written"))?;
        if !gpu_tolerance(math, name).tensors(value, other) {
            return Err(format!("state '{key}' differs"));
        }
    }
    // Every kernel of the examples runs on the GPU with fast math (IndRNN's
    // dynamic-length one too, given the length); exact math leaves libm
    // functions (exp, tanh) to the interpreter when libdevice is missing.
    let interpreted = compiled.interpreted_kernels();
    if math == MathMode::Fast && !interpreted.is_empty() {
        return Err(format!("kernels ran in the interpreter: {interpreted:?}"));
    }
    // The examples with a loop and state, and those with a kernel left to
    // the interpreter, run their host code on the CPU: a host plan with its
    // values kept on the GPU (the RNN), or the interpreter, a round trip
    // per kernel call; every other example is one device plan.
    let schedule = compiled.schedule(&module, "main").map_err(|e| e.to_string())?;
    let host = matches!(name, "rnn.mlir" | "indrnn.mlir") || !interpreted.is_empty();
    if host != matches!(schedule, Schedule::Host(_) | Schedule::Interpreted(_)) {
        return Err(format!("unexpected schedule: {schedule:?}"));
    }
    // Values kept on the device give the same bits as a run from the host.
    if let Schedule::Device { .. } = schedule {
        let device = compiled.device();
        let on_device = inputs
            .iter()
            .map(|t| device.upload(t).map(DeviceValue::Device))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| e.to_string())?;
        let resident = compiled
            .run_on_device(&module, "main", on_device)
            .and_then(|results| {
                results
                    .into_iter()
                    .map(|r| compiled.to_host(r))
                    .collect::<Result<Vec<_>, _>>()
            })
            .map_err(|e| format!("the device-resident run failed: {e}"))?;
        if resident != got {
            return Err(format!(
                "the device-resident run differs\nfrom the host: {got:?}\non the device: {resident:?}"
            ));
        }
    }
    Ok(())
}

/// Run-time errors on the GPU are errors: an integer division by zero, in
/// a device plan and in a kernel the interpreter calls, a good call after
/// them (the status records are reused), a timed call, and a wrong
/// argument.
fn errors() -> Result<(), String> {
    let source = format!("{DIVIDE}\n{LOOPED}");
    let context = new_context().map_err(|e| e.to_string())?;
    let collector = DiagnosticCollector::attach(&context);
    let mut module = parse_module(&context, &source).ok_or_else(|| format!("{:?}", collector.take()))?;
    let compiled =
        CudaModule::compile(&context, &mut module, &GpuOptions::default()).map_err(|e| e.to_string())?;
    let x = Value::tensor(Tensor::parse_literal("4xi32=8 6 4 2").map_err(|e| e.to_string())?);
    let zero = Value::tensor(Tensor::parse_literal("4xi32=1 0 1 1").map_err(|e| e.to_string())?);
    let two = Value::tensor(Tensor::parse_literal("4xi32=2 2 2 2").map_err(|e| e.to_string())?);
    let run = |name: &str, args: Vec<Value>| compiled.run(&module, name, args, &mut StateStore::new());
    let halved = run("main", vec![x.clone(), two.clone()]).map_err(|e| e.to_string())?;
    if halved
        != [Value::tensor(
            Tensor::parse_literal("4xi32=4 3 2 1").map_err(|e| e.to_string())?,
        )]
    {
        return Err(format!("8 6 4 2 / 2 gave {halved:?}"));
    }
    for (name, args) in [
        ("main", vec![x.clone(), zero.clone()]),
        ("looped", vec![x.clone(), zero.clone(), Value::Index(2)]),
    ] {
        match run(name, args) {
            Err(e) if e.to_string().contains("integer division by zero") => {}
            other => return Err(format!("@{name} divided by zero and gave {other:?}")),
        }
    }
    // The status records are reused: a call after a failed one must not
    // see its failure, and a timed call reports its GPU time.
    compiled.set_timing(true);
    let again =
        run("main", vec![x.clone(), two.clone()]).map_err(|e| format!("a call after a failure: {e}"))?;
    if again != halved {
        return Err(format!("8 6 4 2 / 2 after a failure gave {again:?}"));
    }
    if compiled.last_gpu_time().is_none_or(|t| t.is_zero()) {
        return Err(format!("a timed call reported {:?}", compiled.last_gpu_time()));
    }
    compiled.set_timing(false);
    if compiled.last_gpu_time().is_some() {
        return Err("timing off still reports a GPU time".into());
    }
    let short = Value::tensor(Tensor::parse_literal("3xi32=1 2 3").map_err(|e| e.to_string())?);
    match run("main", vec![short, two]) {
        Err(e)
            if e.to_string()
                .contains("argument 0 of @main must be tensor<4xi32>") =>
        {
            Ok(())
        }
        other => Err(format!("a wrong argument gave {other:?}")),
    }
}

/// Deferred checks (`CudaModule::set_deferred_checks`): host plans whose
/// kernel calls are queued without waiting for each give the bits, state
/// and errors of the same plans waiting for each call. The RNN and the
/// IndRNN (lengths 1, 5 and 40) with their state; then errors: a
/// division by zero in a loop whose later iterations run on the failed
/// kernel's output, two different kernels that both fail (the first
/// queued is the one reported), a failure followed by a state read of a
/// missing name (the kernel's error, not the state's), a failing call's
/// state write (nothing committed), and a good call after each (the status
/// records are zeroed). Deferred, the RNNs' calls wait once each
/// (`CudaModule::host_plan_waits`).
fn deferred_checks() -> Result<(), String> {
    let runs: [(&str, &[&[usize]]); 4] = [
        ("rnn.mlir", &[&[5, 4, 6], &[6, 8], &[8, 8]]),
        ("indrnn.mlir", &[&[1, 16, 64], &[64, 64], &[64]]),
        ("indrnn.mlir", &[&[5, 16, 64], &[64, 64], &[64]]),
        ("indrnn.mlir", &[&[40, 16, 64], &[64, 64], &[64]]),
    ];
    for (name, shapes) in runs {
        let context = new_context().map_err(|e| e.to_string())?;
        let mut module = optimized_example(&context, name)?;
        let inputs = random_inputs(shapes, 5);
        let compiled =
            CudaModule::compile(&context, &mut module, &GpuOptions::default()).map_err(|e| e.to_string())?;
        let mut outcomes = Vec::new();
        let mut waits = Vec::new();
        for deferred in [false, true] {
            compiled.set_deferred_checks(deferred);
            let before = compiled.host_plan_waits();
            let mut state = StateStore::new();
            let hidden = if name == "rnn.mlir" { [4, 8] } else { [16, 64] };
            state.insert("rnn.h", random(&hidden, 13));
            // Twice: the second call starts from the state the first left.
            let mut results = Vec::new();
            for _ in 0..2 {
                let args = inputs.iter().cloned().map(Value::tensor).collect();
                results.push(
                    compiled
                        .run(&module, "main", args, &mut state)
                        .map_err(|e| format!("{name} (deferred {deferred}): {e}"))?,
                );
            }
            let mut kept: Vec<(String, Tensor)> =
                state.iter().map(|(k, v)| (k.to_owned(), v.clone())).collect();
            kept.sort_by(|a, b| a.0.cmp(&b.0));
            outcomes.push((results, kept));
            waits.push(compiled.host_plan_waits() - before);
        }
        // Deferred, each call waits once (the loops read nothing on the
        // host); waiting for each kernel call, every call waits more.
        if waits[1] != 2 || waits[0] <= waits[1] {
            return Err(format!(
                "{name} with {} steps: two calls waited {} times for their kernels, {} times deferred",
                shapes[0][0], waits[0], waits[1]
            ));
        }
        if outcomes[0] != outcomes[1] {
            return Err(format!(
                "{name} with {} steps: deferred checks changed the results or the state",
                shapes[0][0]
            ));
        }
    }
    let source = DIVIDE.replace("@main", "@first")
        + "\n"
        + LOOPED
        + r#"
func.func @second(%x: tensor<4xi32>, %y: tensor<4xi32>) -> tensor<4xi32> {
  %q = "meta.binary"(%y, %x) {kind = "mod"} : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi32>
  return %q : tensor<4xi32>
}
func.func @both(%x: tensor<4xi32>, %y: tensor<4xi32>, %n: index) -> tensor<4xi32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%a = %x) -> (tensor<4xi32>) {
    %p = func.call @first(%a, %y) : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi32>
    %q = func.call @second(%y, %p) : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi32>
    scf.yield %q : tensor<4xi32>
  }
  return %r : tensor<4xi32>
}
func.func @missing(%x: tensor<4xi32>, %y: tensor<4xi32>) -> tensor<4xi32> {
  %c1 = arith.constant 1 : index
  %q = func.call @looped(%x, %y, %c1) : (tensor<4xi32>, tensor<4xi32>, index) -> tensor<4xi32>
  %s = "meta.state_read"() {name = "absent"} : () -> tensor<4xi32>
  %t = "meta.binary"(%q, %s) {kind = "add"} : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi32>
  return %t : tensor<4xi32>
}
func.func @stateful(%x: tensor<4xi32>, %y: tensor<4xi32>) -> tensor<4xi32> {
  %q = "meta.binary"(%x, %y) {kind = "div"} : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi32>
  "meta.state_write"(%q) {name = "s"} : (tensor<4xi32>) -> ()
  %r = "meta.binary"(%q, %y) {kind = "mul"} : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi32>
  return %r : tensor<4xi32>
}"#;
    let context = new_context().map_err(|e| e.to_string())?;
    let collector = DiagnosticCollector::attach(&context);
    let mut module = parse_module(&context, &source).ok_or_else(|| format!("{:?}", collector.take()))?;
    let compiled =
        CudaModule::compile(&context, &mut module, &GpuOptions::default()).map_err(|e| e.to_string())?;
    let tensor = |literal: &str| {
        Tensor::parse_literal(literal)
            .map(Value::tensor)
            .map_err(|e| e.to_string())
    };
    let x = tensor("4xi32=8 6 4 2")?;
    let zero = tensor("4xi32=1 0 1 1")?;
    let two = tensor("4xi32=2 2 2 2")?;
    let s = Tensor::parse_literal("4xi32=5 5 5 5").map_err(|e| e.to_string())?;
    let calls: [(&str, Vec<Value>); 8] = [
        ("looped", vec![x.clone(), two.clone(), Value::Index(3)]),
        ("looped", vec![x.clone(), zero.clone(), Value::Index(3)]),
        ("both", vec![x.clone(), zero.clone(), Value::Index(2)]),
        ("both", vec![x.clone(), two.clone(), Value::Index(2)]),
        ("missing", vec![x.clone(), zero.clone()]),
        ("stateful", vec![x.clone(), zero.clone()]),
        ("stateful", vec![x.clone(), two.clone()]),
        ("looped", vec![x.clone(), two.clone(), Value::Index(1)]),
    ];
    let mut outcomes = Vec::new();
    for deferred in [false, true] {
        compiled.set_deferred_checks(deferred);
        let mut seen = Vec::new();
        for (name, args) in &calls {
            let mut state = StateStore::new();
            state.insert("s", s.clone());
            let result = compiled
                .run(&module, name, args.clone(), &mut state)
                .map_err(|e| e.to_string());
            seen.push((name, result, state.get("s").cloned()));
        }
        outcomes.push(seen);
    }
    for (waited, deferred) in outcomes[0].iter().zip(&outcomes[1]) {
        if waited != deferred {
            return Err(format!(
                "@{}: deferred checks gave {:?}, waiting for each call {:?}",
                waited.0, deferred, waited
            ));
        }
    }
    // The failures are failures, and the first kernel's.
    for (i, needle) in [
        (1, "integer division by zero"),
        (2, "integer division by zero"),
        (4, "integer division by zero"),
        (5, "integer division by zero"),
    ] {
        if !outcomes[1][i].1.as_ref().is_err_and(|e| e.contains(needle)) {
            return Err(format!("call {i} gave {:?}, not {needle}", outcomes[1][i]));
        }
    }
    if outcomes[1][5].2.as_ref() != Some(&s) {
        return Err("a failed call committed its state write".into());
    }
    Ok(())
}

/// Split block reductions (rule 6 of `lower::schedule::gpu`): 64 row
/// sums and row maxima of a 64x65536 tensor, 16 blocks per row, whose
/// partial results the last block of each row combines. The elements are
/// quarters of small integers, so every order of summing them is exact:
/// the GPU must give the interpreter's bits, twice in a row (the counters
/// the kernel leaves zeroed are reused by the second call).
fn split_reductions() -> Result<(), String> {
    let (rows, columns) = (64usize, 65536usize);
    let source = format!(
        r#"func.func @main(%x: tensor<{rows}x{columns}xf32>) -> (tensor<{rows}xf32>, tensor<{rows}xf32>) {{
  %s = "meta.reindex_reduce"(%x) {{kind = "add", indices = affine_map<(i, j) -> (i)>}} : (tensor<{rows}x{columns}xf32>) -> tensor<{rows}xf32>
  %m = "meta.reindex_reduce"(%x) {{kind = "max", indices = affine_map<(i, j) -> (i)>}} : (tensor<{rows}x{columns}xf32>) -> tensor<{rows}xf32>
  return %s, %m : tensor<{rows}xf32>, tensor<{rows}xf32>
}}"#
    );
    let context = new_context().map_err(|e| e.to_string())?;
    let collector = DiagnosticCollector::attach(&context);
    let mut module = parse_module(&context, &source).ok_or_else(|| format!("{:?}", collector.take()))?;
    let values: Vec<f32> = (0..rows * columns)
        .map(|i| ((i * 7919 + i / columns * 13) % 61) as f32 / 4.0 - 7.5)
        .collect();
    let x = Tensor::new(vec![rows, columns], Buffer::F32(values.into())).ok_or("the input tensor")?;
    let args = || vec![Value::tensor(x.clone())];
    let expected = Interpreter::new(&module)
        .run("main", args(), &mut StateStore::new())
        .map_err(|e| format!("the interpreter failed: {e}"))?;
    let compiled =
        CudaModule::compile(&context, &mut module, &GpuOptions::default()).map_err(|e| e.to_string())?;
    let split = compiled.ptx().contains("atom.global.add.u32");
    if !split {
        return Err("the kernel was not split across blocks (no atomic count in its PTX)".into());
    }
    for call in ["first", "second"] {
        let got = compiled
            .run(&module, "main", args(), &mut StateStore::new())
            .map_err(|e| format!("the {call} GPU run failed: {e}"))?;
        if !Match::Identical.values(&expected, &got) {
            return Err(format!(
                "the {call} call differs\ninterpreter: {expected:?}\ngpu: {got:?}"
            ));
        }
    }
    Ok(())
}

/// GPU row chains (`GpuOptions::row_chains`, the default): softmax and
/// layer norm + GELU at the bench's sizes (4096 and 8192 rows of 1024)
/// become one launch of a block per row, which must match the interpreter,
/// and give the bits of the same kernels launched one by one (each row is
/// reduced in the same order either way; `row_chains` off, not
/// `jittor_rules`, whose fusion runs no `meta-fast-math`).
fn row_chains() -> Result<(), String> {
    let chained = workloads::workloads()
        .into_iter()
        .filter(|w| w.name.starts_with("softmax") || w.name.starts_with("layer norm"));
    for workload in chained {
        let context = new_context().map_err(|e| e.to_string())?;
        let collector = DiagnosticCollector::attach(&context);
        let parse =
            || parse_module(&context, &workload.source).ok_or_else(|| format!("{:?}", collector.take()));
        let shapes: Vec<&[usize]> = workload.inputs.iter().map(Vec::as_slice).collect();
        let inputs = random_inputs(&shapes, 11);
        let args = || inputs.iter().cloned().map(Value::tensor).collect::<Vec<_>>();
        let module = parse()?;
        let expected = Interpreter::new(&module)
            .run("main", args(), &mut StateStore::new())
            .map_err(|e| format!("the interpreter failed: {e}"))?;
        let mut runs = Vec::new();
        for row_chains in [true, false] {
            let mut module = parse()?;
            let options = GpuOptions {
                row_chains,
                ..GpuOptions::default()
            };
            let compiled = CudaModule::compile(&context, &mut module, &options).map_err(|e| e.to_string())?;
            if row_chains != compiled.ptx().contains("_rows(") {
                return Err(format!(
                    "{}: row chains {row_chains}, but the PTX {} one",
                    workload.name,
                    if row_chains { "has no" } else { "has" }
                ));
            }
            if !compiled.interpreted_kernels().is_empty() {
                return Err(format!(
                    "{}: kernels ran in the interpreter: {:?}",
                    workload.name,
                    compiled.interpreted_kernels()
                ));
            }
            let got = compiled
                .run(&module, "main", args(), &mut StateStore::new())
                .map_err(|e| format!("{}: the GPU run failed: {e}", workload.name))?;
            runs.push(got);
        }
        if !Match::Relative.values(&expected, &runs[0]) {
            return Err(format!(
                "{}: the chain differs from the interpreter",
                workload.name
            ));
        }
        if !Match::Identical.values(&runs[1], &runs[0]) {
            return Err(format!(
                "{}: the chain differs from its kernels one by one",
                workload.name
            ));
        }
    }
    Ok(())
}

/// Contractions as shared-memory tiles (`GpuOptions::tiles`): matmuls
/// whose sides are not multiples of a tile (one with 2 x 4 outputs per
/// thread), a transposed f64 one, and a padded convolution, against the CPU backend (which equals the
/// interpreter bit for bit in exact math): bit for bit in exact math, where
/// each output adds its products in the interpreter's order, and within
/// `2 γ(k) Σ|a b|` in fast math (a fused multiply-add per step). Sizes
/// that compute-sanitizer also gets through quickly; the bench times the
/// large ones.
fn tiled_contractions() -> Result<(), String> {
    let cases = [
        (
            "matmul 300x260x270",
            contraction_source(
                &[300, 260, 270],
                (&[300, 270], "d0, d2"),
                (&[270, 260], "d2, d1"),
                (&[300, 260], "d0, d1"),
                "f32",
                None,
            ),
            vec![vec![300, 270], vec![270, 260]],
            270,
        ),
        (
            // 2 x 4 outputs per thread, partial tiles and a partial chunk.
            "matmul 1000x520x37",
            contraction_source(
                &[1000, 520, 37],
                (&[1000, 37], "d0, d2"),
                (&[37, 520], "d2, d1"),
                (&[1000, 520], "d0, d1"),
                "f32",
                None,
            ),
            vec![vec![1000, 37], vec![37, 520]],
            37,
        ),
        (
            "matmul 70x90x33, f64, transposed",
            contraction_source(
                &[70, 90, 33],
                (&[33, 70], "d2, d0"),
                (&[90, 33], "d1, d2"),
                (&[70, 90], "d0, d1"),
                "f64",
                None,
            ),
            vec![vec![33, 70], vec![90, 33]],
            33,
        ),
        (
            "conv 2x32x30x30, 3x3, pad 1",
            contraction_source(
                &[2, 32, 30, 30, 32, 3, 3],
                (&[2, 32, 30, 30], "d0, d4, d2 + d5 - 1, d3 + d6 - 1"),
                (&[32, 32, 3, 3], "d1, d4, d5, d6"),
                (&[2, 32, 30, 30], "d0, d1, d2, d3"),
                "f32",
                None,
            ),
            vec![vec![2, 32, 30, 30], vec![32, 32, 3, 3]],
            32 * 9,
        ),
    ];
    for (name, source, shapes, depth) in cases {
        let context = new_context().map_err(|e| e.to_string())?;
        let collector = DiagnosticCollector::attach(&context);
        let parse = || parse_module(&context, &source).ok_or_else(|| format!("{:?}", collector.take()));
        let element = if source.contains("f64>") { "f64" } else { "f32" };
        let inputs: Vec<Value> = shapes
            .iter()
            .enumerate()
            .map(|(i, shape)| Value::tensor(random_of(shape, element, 13 + i as u64)))
            .collect();
        let on_cpu = |args: Vec<Value>| -> Result<Vec<Value>, String> {
            let mut module = parse()?;
            let options = jitc_compiler::CodegenOptions {
                math: MathMode::Exact,
                ..Default::default()
            };
            let compiled = jitc_runtime::CpuModule::compile_with(&context, &mut module, &options)
                .map_err(|e| e.to_string())?;
            compiled
                .run(&module, "main", args, &mut StateStore::new())
                .map_err(|e| e.to_string())
        };
        let expected = on_cpu(inputs.clone())?;
        let magnitudes = on_cpu(inputs.iter().map(absolute).collect())?;
        let unit = if element == "f64" {
            f64::EPSILON / 2.0
        } else {
            f64::from(f32::EPSILON) / 2.0
        };
        let gamma = depth as f64 * unit / (1.0 - depth as f64 * unit);
        for math in [MathMode::Exact, MathMode::Fast] {
            let mut module = parse()?;
            let options = GpuOptions {
                math,
                tiles: true,
                ..GpuOptions::default()
            };
            let compiled = CudaModule::compile(&context, &mut module, &options).map_err(|e| e.to_string())?;
            if !compiled.ptx().contains("_tile_shared0") {
                return Err(format!("{name}: not tiled"));
            }
            let got = compiled
                .run(&module, "main", inputs.clone(), &mut StateStore::new())
                .map_err(|e| format!("{name}: the GPU run failed: {e}"))?;
            let (got, want, size) = (floats(&got[0]), floats(&expected[0]), floats(&magnitudes[0]));
            for (n, ((got, want), size)) in got.iter().zip(&want).zip(&size).enumerate() {
                let bound = match math {
                    MathMode::Exact => 0.0,
                    MathMode::Fast => 2.0 * gamma * size,
                };
                if (got - want).abs() > bound || got.is_nan() != want.is_nan() {
                    return Err(format!(
                        "{name} ({math:?}): output {n} is {got}, the CPU's {want} (bound {bound})"
                    ));
                }
            }
        }
    }
    Ok(())
}

/// The math sweeps: each function on the GPU against libm (the
/// interpreter), value by value over [`sweep::inputs`] (or
/// [`sweep::log_inputs`]), and the bound it must keep in ulps. Fast math
/// runs jitc's polynomials (the CPU's bounds, `approximations.rs`); exact
/// math runs NVIDIA's libdevice, whose documented f32 bounds are 1 to 2
/// ulps from the true value, to which libm's own error adds: 4 ulps, the
/// tolerance of the examples' exact-math runs ([`Match::Ulps4`]).
const SWEEPS: &[(&str, &str, MathMode, u64)] = &[
    ("exp", "f32", MathMode::Fast, 2),
    ("log", "f32", MathMode::Fast, 2),
    ("tanh", "f32", MathMode::Fast, 4),
    ("sigmoid", "f32", MathMode::Fast, 4),
    ("sqrt", "f32", MathMode::Fast, 0),
    ("exp", "f32", MathMode::Exact, 4),
    ("log", "f32", MathMode::Exact, 4),
    ("tanh", "f32", MathMode::Exact, 4),
    ("sigmoid", "f32", MathMode::Exact, 4),
    ("sin", "f32", MathMode::Exact, 4),
    ("cos", "f32", MathMode::Exact, 4),
    ("erf", "f32", MathMode::Exact, 4),
    ("exp", "f64", MathMode::Exact, 4),
    ("log", "f64", MathMode::Exact, 4),
    ("tanh", "f64", MathMode::Exact, 4),
    ("sin", "f64", MathMode::Exact, 4),
    ("cos", "f64", MathMode::Exact, 4),
    ("erf", "f64", MathMode::Exact, 4),
];

/// `kind` over the sweep on the GPU: the largest distance from libm in
/// ulps, with the input, libm's value and the GPU's where it was largest;
/// `Err` when the kernel does not compile for the GPU or a run fails.
fn sweep(kind: &str, element: &str, math: MathMode) -> Result<(u64, f64, f64, f64), String> {
    let values = if kind == "log" {
        sweep::log_inputs()
    } else {
        sweep::inputs()
    };
    let n = values.len();
    let source = sweep::unary_module(kind, element, n);
    let context = new_context().map_err(|e| e.to_string())?;
    let collector = DiagnosticCollector::attach(&context);
    let mut module = parse_module(&context, &source).ok_or_else(|| format!("{:?}", collector.take()))?;
    let buffer = match element {
        "f32" => Buffer::F32(values.iter().copied().collect()),
        _ => Buffer::F64(values.iter().map(|&x| f64::from(x)).collect()),
    };
    let input = Tensor::new(vec![n], buffer).ok_or("the input tensor")?;
    let args = || vec![Value::tensor(input.clone())];
    let expected = Interpreter::new(&module)
        .run("main", args(), &mut StateStore::new())
        .map_err(|e| format!("the interpreter failed: {e}"))?;
    let options = GpuOptions {
        math,
        ..GpuOptions::default()
    };
    let compiled = CudaModule::compile(&context, &mut module, &options).map_err(|e| e.to_string())?;
    if !compiled.interpreted_kernels().is_empty() {
        return Err(format!(
            "runs in the interpreter: {:?}",
            compiled.interpreted_kernels()
        ));
    }
    let got = compiled
        .run(&module, "main", args(), &mut StateStore::new())
        .map_err(|e| format!("the GPU run failed: {e}"))?;
    let (Value::Tensor(expected), Value::Tensor(got)) = (&expected[0], &got[0]) else {
        return Err("a result is not a tensor".into());
    };
    let mut worst = (0, 0.0, 0.0, 0.0);
    for (i, &x) in values.iter().enumerate() {
        let (e, g) = (expected.get(i).as_f64(), got.get(i).as_f64());
        let distance = match element {
            "f32" => sweep::ulps(e as f32, g as f32),
            _ => sweep::ulps64(e, g),
        };
        if distance > worst.0 {
            worst = (distance, f64::from(x), e, g);
        }
    }
    Ok(worst)
}

fn main() -> ExitCode {
    // IndRNN's sequence is of dynamic length: its projection kernel takes
    // the length as a parameter (each case compiles the module afresh).
    let indrnn: [(&str, &[&[usize]]); 2] = [
        ("indrnn.mlir", &[&[3, 16, 64], &[64, 64], &[64]]),
        ("indrnn.mlir", &[&[7, 16, 64], &[64, 64], &[64]]),
    ];
    let cases: Vec<_> = STATIC_EXAMPLES.iter().copied().chain(indrnn).collect();
    let modes = [
        (MathMode::Fast, false),
        (MathMode::Exact, false),
        (MathMode::Fast, true),
    ];
    let total = cases.len() * modes.len() + 5 + SWEEPS.len();
    if let Err(reason) = CudaDevice::get() {
        println!("cuda tests: SKIPPED, {total} tests not run: {reason}");
        if std::env::var_os("JITC_REQUIRE_GPU").is_some() {
            println!("cuda tests: FAILED: JITC_REQUIRE_GPU is set and there is no GPU");
            return ExitCode::FAILURE;
        }
        return ExitCode::SUCCESS;
    }
    let mut failures = 0;
    for &(name, shapes) in &cases {
        for (math, check_bounds) in modes {
            let mut mode = if check_bounds {
                format!("{math:?}, bounds checked")
            } else {
                format!("{math:?}")
            };
            if name == "indrnn.mlir" {
                mode += &format!(", length {}", shapes[0][0]);
            }
            match check(name, shapes, math, check_bounds) {
                Ok(()) => println!("test {name} ({mode}) on the GPU ... ok"),
                Err(difference) => {
                    failures += 1;
                    println!("test {name} ({mode}) on the GPU ... FAILED\n{difference}");
                }
            }
        }
    }
    match split_reductions() {
        Ok(()) => println!("test split block reductions on the GPU ... ok"),
        Err(difference) => {
            failures += 1;
            println!("test split block reductions on the GPU ... FAILED\n{difference}");
        }
    }
    match errors() {
        Ok(()) => println!("test run-time errors on the GPU ... ok"),
        Err(difference) => {
            failures += 1;
            println!("test run-time errors on the GPU ... FAILED\n{difference}");
        }
    }
    match row_chains() {
        Ok(()) => println!("test GPU row chains on the GPU ... ok"),
        Err(difference) => {
            failures += 1;
            println!("test GPU row chains on the GPU ... FAILED\n{difference}");
        }
    }
    match deferred_checks() {
        Ok(()) => println!("test deferred checks on the GPU ... ok"),
        Err(difference) => {
            failures += 1;
            println!("test deferred checks on the GPU ... FAILED\n{difference}");
        }
    }
    match tiled_contractions() {
        Ok(()) => println!("test tiled contractions on the GPU ... ok"),
        Err(difference) => {
            failures += 1;
            println!("test tiled contractions on the GPU ... FAILED\n{difference}");
        }
    }
    for &(kind, element, math, bound) in SWEEPS {
        let name = format!("test {kind} ({element}, {math:?}) swept against libm on the GPU");
        match sweep(kind, element, math) {
            Ok((ulps, ..)) if ulps <= bound => {
                println!("{name} ... ok: at most {ulps} ulps (bound {bound})")
            }
            Ok((ulps, x, libm, gpu)) => {
                failures += 1;
                println!(
                    "{name} ... FAILED\n{kind}({x:e}) = {gpu:e}, libm {libm:e}: {ulps} ulps, over {bound}"
                );
            }
            Err(error) => {
                failures += 1;
                println!("{name} ... FAILED\n{error}");
            }
        }
    }
    println!("cuda tests: {} passed, {failures} failed", total - failures);
    if failures == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
