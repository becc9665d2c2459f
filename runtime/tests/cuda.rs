//! GPU tests: every example runs on the CUDA backend and must equal the
//! interpreter (relative tolerance 1e-5, absolute 1e-6 near zero, as the
//! CPU's fast-math examples in `differential.rs`: the GPU uses the same
//! polynomial `exp`/`tanh` and block reductions reassociate sums), with
//! `--math exact` kernels compared within 4 ulps.
//!
//! This file has its own `main` (no libtest harness) so that a machine
//! without a GPU says so: it prints `SKIPPED` and the number of tests not
//! run, and counts none of them as passed. Set `JITC_REQUIRE_GPU=1` to make
//! a missing GPU a failure (on the GPU machine).

use jitc_compiler::{
    OptimizeOptions, codegen::GpuOptions, diagnostics::DiagnosticCollector, lower::MathMode, new_context,
    optimize, source::parse_module,
};
use jitc_interp::{Interpreter, Scalar, StateStore, Tensor, Value};
use jitc_runtime::cuda::{CudaDevice, CudaModule};
use std::process::ExitCode;

mod support;

use support::{example, random};

fn equal(a: Scalar, b: Scalar, math: MathMode) -> bool {
    match (a, b, math) {
        (Scalar::F32(x), Scalar::F32(y), MathMode::Exact) => {
            x == y || (x.is_nan() && y.is_nan()) || (x.to_bits() as i64 - y.to_bits() as i64).abs() <= 4
        }
        (Scalar::F32(x), Scalar::F32(y), MathMode::Fast) => {
            let (x, y) = (x as f64, y as f64);
            x == y || (x.is_nan() && y.is_nan()) || (x - y).abs() <= 1e-5 * x.abs().max(y.abs()) + 1e-6
        }
        _ => a == b,
    }
}

fn same(a: &[Value], b: &[Value], math: MathMode) -> bool {
    a.len() == b.len()
        && a.iter().zip(b).all(|(x, y)| match (x, y) {
            (Value::Tensor(x), Value::Tensor(y)) => {
                x.shape() == y.shape()
                    && x.element_type() == y.element_type()
                    && (0..x.len()).all(|i| equal(x.get(i), y.get(i), math))
            }
            _ => x == y,
        })
}

/// Runs example `name` on `shapes` of random inputs on the GPU and in the
/// interpreter; `Err` describes a difference.
fn check(name: &str, shapes: &[&[usize]], math: MathMode) -> Result<(), String> {
    let source = example(name);
    let context = new_context().map_err(|e| e.to_string())?;
    let collector = DiagnosticCollector::attach(&context);
    let mut module = parse_module(&context, &source).ok_or_else(|| format!("{:?}", collector.take()))?;
    optimize(&context, &mut module, &[], &OptimizeOptions::default()).map_err(|e| e.to_string())?;
    let inputs: Vec<Tensor> = shapes
        .iter()
        .enumerate()
        .map(|(i, s)| random(s, 7 + i as u64))
        .collect();
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
        ..GpuOptions::default()
    };
    let compiled = CudaModule::compile(&context, &mut module, &options).map_err(|e| e.to_string())?;
    let mut gpu_state = state.clone();
    let got = compiled
        .run(&module, "main", args(), &mut gpu_state)
        .map_err(|e| format!("the GPU run failed: {e}"))?;
    if !same(&expected, &got, math) {
        return Err(format!("results differ\ninterpreter: {expected:?}\ngpu: {got:?}"));
    }
    for (key, value) in expected_state.iter() {
        let other = gpu_state
            .get(key)
            .ok_or_else(|| format!("state '{key}' was not written"))?;
        if !same(
            &[Value::tensor(value.clone())],
            &[Value::tensor(other.clone())],
            math,
        ) {
            return Err(format!("state '{key}' differs"));
        }
    }
    // Every kernel of the static-shape examples runs on the GPU with fast
    // math; exact math leaves libm functions (exp, tanh) to the
    // interpreter, and IndRNN's dynamic-length kernel always runs there.
    let interpreted = compiled.interpreted_kernels();
    if math == MathMode::Fast && name != "indrnn.mlir" && !interpreted.is_empty() {
        return Err(format!("kernels ran in the interpreter: {interpreted:?}"));
    }
    Ok(())
}

fn main() -> ExitCode {
    let cases: &[(&str, &[&[usize]])] = &[
        ("conv.mlir", &[&[2, 3, 5, 5], &[4, 3, 3, 3]]),
        ("instance_norm.mlir", &[&[2, 3, 4, 4]]),
        ("sigmoid.mlir", &[&[1024]]),
        ("softmax.mlir", &[&[4, 8]]),
        ("matmul.mlir", &[&[4, 3], &[3, 5]]),
        ("mlp.mlir", &[&[2, 4], &[4, 8], &[8], &[8, 3], &[3]]),
        ("rnn.mlir", &[&[5, 4, 6], &[6, 8], &[8, 8]]),
        ("indrnn.mlir", &[&[3, 16, 64], &[64, 64], &[64]]),
    ];
    let total = cases.len() * 2;
    if let Err(reason) = CudaDevice::get() {
        println!("cuda tests: SKIPPED, {total} tests not run: {reason}");
        if std::env::var_os("JITC_REQUIRE_GPU").is_some() {
            println!("cuda tests: FAILED: JITC_REQUIRE_GPU is set and there is no GPU");
            return ExitCode::FAILURE;
        }
        return ExitCode::SUCCESS;
    }
    let mut failures = 0;
    for (name, shapes) in cases {
        for math in [MathMode::Fast, MathMode::Exact] {
            match check(name, shapes, math) {
                Ok(()) => println!("test {name} ({math:?}) on the GPU ... ok"),
                Err(difference) => {
                    failures += 1;
                    println!("test {name} ({math:?}) on the GPU ... FAILED\n{difference}");
                }
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
