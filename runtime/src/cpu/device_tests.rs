//! The host plan on an executor whose values live apart from the host
//! ([`Kernels`] with a value type of its own, as the GPU's
//! `crate::cuda::OnDevice`), modelled on the CPU so that it runs without a
//! GPU: [`Device`] hands each kernel call to the CPU module, keeps its
//! results "on the device", and counts every tensor that crosses to it
//! (an upload) and back (a download).
//!
//! - The examples with host code (an `scf.for` over a sequence, state)
//!   give the CPU's results bit for bit, and move the same tensors across
//!   whatever the trip count: a loop's carried values never leave the
//!   device.
//! - Random host programs (nested loops, branches on computed values,
//!   calls, guards, host division, state) give the same results, errors
//!   and committed state as the CPU's own host plan.

use super::CpuModule;
use crate::host::{HostKernels, Kernels, Stop};
use jitc_compiler::{CodegenOptions, MathMode, new_context, parse_module};
use jitc_interp::{StateStore, Tensor, Value, ValueType};
use jitc_test_support::{Match, Rng, example, random, random_host_program, random_inputs};
use melior::{Context, ir::Module};
use std::{
    cell::{Cell, RefCell},
    collections::HashMap,
    sync::Arc,
};

/// A value as [`Device`] holds it.
#[derive(Debug, Clone)]
enum Held {
    /// Made on the host (an argument, a host op's result, a state read).
    Host(Value),
    /// A kernel's result or an uploaded constant, "in device memory".
    Device(Value),
}

/// A device modelled on the CPU module, counting transfers. As
/// `crate::cuda::OnDevice` does, it copies a host tensor to the device
/// once per run (however many slots hold it) and keeps the host copy, so
/// bringing such a tensor back costs nothing, and brings a kernel's result
/// back once however often host code reads it.
struct Device<'m> {
    cpu: &'m CpuModule,
    uploads: Cell<usize>,
    downloads: Cell<usize>,
    launches: Cell<usize>,
    /// The tensors on both sides (uploaded, or downloaded), by address
    /// (held, so it is not reused).
    uploaded: RefCell<HashMap<usize, Arc<Tensor>>>,
    /// Whether a download fails (a lost device, say).
    broken: bool,
}

impl<'m> Device<'m> {
    fn new(cpu: &'m CpuModule) -> Self {
        Self {
            cpu,
            uploads: Cell::new(0),
            downloads: Cell::new(0),
            launches: Cell::new(0),
            uploaded: RefCell::new(HashMap::new()),
            broken: false,
        }
    }
}

impl Kernels for Device<'_> {
    type Value = Held;

    fn launch(&self, name: &str, args: Vec<Held>) -> Option<Result<Vec<Held>, jitc_compiler::KernelFailure>> {
        self.launches.set(self.launches.get() + 1);
        let args = args
            .into_iter()
            .map(|arg| match arg {
                Held::Device(value) => value,
                Held::Host(value) => {
                    if matches!(value, Value::Tensor(_)) {
                        self.uploads.set(self.uploads.get() + 1);
                    }
                    value
                }
            })
            .collect();
        Some(
            self.cpu
                .launch_on_host(name, args)?
                .map(|results| results.into_iter().map(Held::Device).collect()),
        )
    }

    fn hold(&self, value: Value) -> Held {
        Held::Host(value)
    }

    fn constant(&self, value: &Value) -> Result<Held, String> {
        // Uploaded once per module on the GPU: not counted.
        Ok(match value {
            Value::Tensor(_) => Held::Device(value.clone()),
            _ => Held::Host(value.clone()),
        })
    }

    fn to_host(&self, value: &Held) -> Result<Value, String> {
        Ok(match value {
            Held::Host(value) => value.clone(),
            Held::Device(value) => {
                if let Value::Tensor(tensor) = value {
                    let key = Arc::as_ptr(tensor) as usize;
                    if !self.uploaded.borrow().contains_key(&key) {
                        if self.broken {
                            return Err("the download failed".into());
                        }
                        // Downloaded once, and kept.
                        self.downloads.set(self.downloads.get() + 1);
                        self.uploaded.borrow_mut().insert(key, Arc::clone(tensor));
                    }
                }
                value.clone()
            }
        })
    }

    fn to_device(&self, value: &Held) -> Result<Option<Held>, String> {
        Ok(match value {
            Held::Host(Value::Tensor(tensor)) => {
                let key = Arc::as_ptr(tensor) as usize;
                if !self.uploaded.borrow().contains_key(&key) {
                    self.uploads.set(self.uploads.get() + 1);
                    self.uploaded.borrow_mut().insert(key, Arc::clone(tensor));
                }
                Some(Held::Device(Value::Tensor(Arc::clone(tensor))))
            }
            _ => None,
        })
    }

    fn is_tensor(&self, value: &Held) -> bool {
        matches!(
            value,
            Held::Host(Value::Tensor(_)) | Held::Device(Value::Tensor(_))
        )
    }

    fn check_arguments(
        &self,
        name: &str,
        inputs: &[ValueType],
        args: &[Held],
    ) -> Result<(), jitc_interp::Error> {
        let args: Vec<Value> = args
            .iter()
            .map(|arg| match arg {
                Held::Host(value) | Held::Device(value) => value.clone(),
            })
            .collect();
        jitc_interp::check_arguments(name, inputs, &args)
    }
}

/// `source` parsed and compiled for the CPU with exact math; panics with
/// the source when it does not compile (these are tests).
fn compiled<'c>(context: &'c Context, source: &str) -> (Module<'c>, CpuModule) {
    let mut module = parse_module(context, source).unwrap_or_else(|| panic!("does not parse:\n{source}"));
    let options = CodegenOptions {
        math: MathMode::Exact,
        ..CodegenOptions::default()
    };
    let cpu =
        CpuModule::compile_with(context, &mut module, &options).unwrap_or_else(|e| panic!("{e}\n{source}"));
    (module, cpu)
}

/// What a run through [`Device`] gave: its results (on the host) or its
/// error, and the transfers (uploads, downloads, launches).
type Outcome = (Result<Vec<Value>, String>, [usize; 3]);

/// Runs `@main` of `cpu`'s module through [`Device`] on `args` and `state`.
fn on_device(cpu: &CpuModule, module: &Module, args: Vec<Value>, state: &mut StateStore) -> Outcome {
    on(Device::new(cpu), cpu, module, args, state)
}

/// [`on_device`] through `device`.
fn on(device: Device, cpu: &CpuModule, module: &Module, args: Vec<Value>, state: &mut StateStore) -> Outcome {
    let plan = cpu.plan(module, "main");
    let plan = plan.as_ref().as_ref().expect("the function has a host plan");
    let args = args.into_iter().map(Held::Host).collect();
    let results = match plan.run_to_host(&device, args, state) {
        Ok(results) => Ok(results),
        Err(Stop::Failed(error)) => Err(error.to_string()),
        Err(Stop::Interpret) => panic!("a kernel declined a call"),
    };
    let counts = [
        device.uploads.get(),
        device.downloads.get(),
        device.launches.get(),
    ];
    (results, counts)
}

#[test]
fn loops_keep_their_carried_values_on_the_device() {
    // IndRNN over sequences of several lengths: the sequence, the weights
    // and the state go to the device once each, the final state comes back
    // once, to be returned and committed; the launches grow with the
    // length, the transfers do not.
    let context = new_context().unwrap();
    let (module, cpu) = compiled(&context, &example("indrnn.mlir"));
    let mut transfers = Vec::new();
    for length in [1, 3, 8] {
        let shapes: [&[usize]; 3] = [&[length, 16, 64], &[64, 64], &[64]];
        let args: Vec<Value> = random_inputs(&shapes, length as u64)
            .into_iter()
            .map(Value::tensor)
            .collect();
        let mut state = StateStore::new();
        state.insert("rnn.h", random(&[16, 64], 3));
        let mut expected_state = state.clone();
        let expected = cpu
            .run(&module, "main", args.clone(), &mut expected_state)
            .unwrap();
        let (got, [uploads, downloads, launches]) = on_device(&cpu, &module, args, &mut state);
        let got = got.unwrap();
        assert!(Match::Identical.values(&expected, &got), "length {length}");
        assert!(
            Match::Identical.states(&expected_state, &state),
            "length {length}"
        );
        assert!(launches >= length, "length {length}: {launches} launches");
        transfers.push((uploads, downloads));
    }
    assert!(transfers.iter().all(|t| *t == transfers[0]), "{transfers:?}");
    assert_eq!(transfers[0], (4, 1), "{transfers:?}");
}

#[test]
fn a_tensor_crosses_once_per_run_whatever_the_trip_count() {
    // `%w` goes to @step in every iteration (a new frame each time), and
    // the state is written in every iteration: the transfers stay the
    // same for every trip count.
    let source = r#"func.func @step(%h: tensor<4xf32>, %w: tensor<4xf32>) -> tensor<4xf32> {
  %p = "meta.binary"(%h, %w) {kind = "mul"} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %t = "meta.unary"(%p) {kind = "tanh"} : (tensor<4xf32>) -> tensor<4xf32>
  return %t : tensor<4xf32>
}
func.func @main(%x: tensor<4xf32>, %w: tensor<4xf32>, %n: index) -> tensor<4xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %h = scf.for %i = %c0 to %n step %c1 iter_args(%a = %x) -> (tensor<4xf32>) {
    %b = func.call @step(%a, %w) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    "meta.state_write"(%b) {name = "h"} : (tensor<4xf32>) -> ()
    scf.yield %b : tensor<4xf32>
  }
  return %h : tensor<4xf32>
}"#;
    let context = new_context().unwrap();
    let (module, cpu) = compiled(&context, source);
    for n in [1, 4, 9] {
        let args = vec![
            Value::tensor(random(&[4], 1)),
            Value::tensor(random(&[4], 2)),
            Value::Index(n),
        ];
        let mut expected_state = StateStore::new();
        let expected = cpu
            .run(&module, "main", args.clone(), &mut expected_state)
            .unwrap();
        let mut state = StateStore::new();
        let (got, [uploads, downloads, launches]) = on_device(&cpu, &module, args, &mut state);
        assert!(Match::Identical.values(&expected, &got.unwrap()), "n = {n}");
        assert!(Match::Identical.states(&expected_state, &state), "n = {n}");
        assert!(launches >= n as usize, "n = {n}: {launches} launches");
        // `%x` and `%w` up; the result, which is also the last state
        // write, down once.
        assert_eq!((uploads, downloads), (2, 1), "n = {n}");
    }
}

#[test]
fn a_result_that_cannot_come_back_commits_nothing() {
    // The state write needs no download (its value is the argument, on
    // the host), the result does, and the download fails: the run fails,
    // and the write is not committed.
    let source = r#"func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  "meta.state_write"(%x) {name = "h"} : (tensor<4xf32>) -> ()
  %e = "meta.unary"(%x) {kind = "exp"} : (tensor<4xf32>) -> tensor<4xf32>
  return %e : tensor<4xf32>
}"#;
    let context = new_context().unwrap();
    let (module, cpu) = compiled(&context, source);
    let args = || vec![Value::tensor(random(&[4], 8))];
    let mut state = StateStore::new();
    let (got, _) = on_device(&cpu, &module, args(), &mut state);
    got.unwrap();
    assert!(state.get("h").is_some(), "a good run commits the write");
    let mut state = StateStore::new();
    let device = Device {
        broken: true,
        ..Device::new(&cpu)
    };
    let (got, _) = on(device, &cpu, &module, args(), &mut state);
    let error = got.unwrap_err();
    assert!(error.contains("the download failed"), "{error}");
    assert!(state.get("h").is_none(), "the failed run committed its write");
}

#[test]
fn the_rnn_example_matches_the_cpu() {
    let context = new_context().unwrap();
    let (module, cpu) = compiled(&context, &example("rnn.mlir"));
    let shapes: [&[usize]; 3] = [&[5, 4, 6], &[6, 8], &[8, 8]];
    let args: Vec<Value> = random_inputs(&shapes, 5).into_iter().map(Value::tensor).collect();
    let mut state = StateStore::new();
    state.insert("rnn.h", random(&[4, 8], 99));
    let mut expected_state = state.clone();
    let expected = cpu
        .run(&module, "main", args.clone(), &mut expected_state)
        .unwrap();
    let (got, [uploads, downloads, launches]) = on_device(&cpu, &module, args, &mut state);
    assert!(Match::Identical.values(&expected, &got.unwrap()));
    assert!(Match::Identical.states(&expected_state, &state));
    assert!(launches >= 5, "{launches} launches");
    // The three arguments and the state up, the final state (returned and
    // committed) down once.
    assert_eq!((uploads, downloads), (4, 1));
}

#[test]
fn random_host_programs_match_the_cpu() {
    let (mut successes, mut failures) = (0, 0);
    for seed in 1..=40u64 {
        let source = random_host_program(&mut Rng(seed * 7919));
        let context = new_context().unwrap();
        let (module, cpu) = compiled(&context, &source);
        let mut rng = Rng(seed);
        for run in 0..5u64 {
            let mut state = StateStore::new();
            if rng.below(8) != 0 {
                state.insert("acc", random(&[4], seed * 17 + run));
            }
            let length = rng.below(4);
            let args = vec![
                Value::tensor(random(&[4], seed * 31 + run)),
                Value::Index(rng.below(4) as i64),
                Value::tensor(random(&[length, 4], seed * 13 + run)),
            ];
            let mut expected_state = state.clone();
            let expected = cpu
                .run(&module, "main", args.clone(), &mut expected_state)
                .map_err(|e| e.to_string());
            let (got, _) = on_device(&cpu, &module, args, &mut state);
            let case = format!("seed {seed}, run {run}\n{source}");
            match (&expected, &got) {
                (Ok(expected), Ok(got)) => {
                    successes += 1;
                    assert!(Match::Identical.values(expected, got), "{case}");
                }
                (Err(expected), Err(got)) => {
                    failures += 1;
                    assert_eq!(expected, got, "{case}");
                }
                _ => panic!("{case}\nthe CPU gives {expected:?}, the device {got:?}"),
            }
            assert!(Match::Identical.states(&expected_state, &state), "{case}");
        }
    }
    // Both outcomes are exercised.
    assert!(
        successes > 40 && failures > 20,
        "{successes} successes, {failures} failures"
    );
}
