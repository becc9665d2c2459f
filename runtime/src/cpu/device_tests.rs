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
    /// With deferred checks, the output of a kernel that failed, or that
    /// read such an output: unspecified values, which host code must never
    /// read (the plan settles first, and the failure stops the run).
    Failed,
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
    /// Whether launches only queue their kernels, as the GPU's do with
    /// deferred checks (`crate::cuda::CudaModule::set_deferred_checks`):
    /// a failure is recorded, the outputs are [`Held::Failed`], and
    /// [`Kernels::settle`] reports the first.
    deferred: bool,
    /// With `deferred`, each queued kernel's failure, if it failed.
    queued: RefCell<Vec<Option<jitc_compiler::KernelFailure>>>,
    /// Settles that found kernels queued.
    settles: Cell<usize>,
    /// Host reads made while a failed kernel was queued: how far host code
    /// ran on past it.
    reads_past_failure: Cell<usize>,
    /// The launch (counted from 1) that fails whatever its inputs, as a
    /// kernel that divides by zero would.
    fail_at: Option<usize>,
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
            deferred: false,
            queued: RefCell::new(Vec::new()),
            settles: Cell::new(0),
            reads_past_failure: Cell::new(0),
            fail_at: None,
        }
    }

    fn deferred(cpu: &'m CpuModule) -> Self {
        Self {
            deferred: true,
            ..Self::new(cpu)
        }
    }
}

impl Kernels for Device<'_> {
    type Value = Held;

    fn launch(&self, name: &str, args: Vec<Held>) -> Option<Result<Vec<Held>, jitc_compiler::KernelFailure>> {
        self.launches.set(self.launches.get() + 1);
        let injected = (self.fail_at == Some(self.launches.get())).then(|| jitc_compiler::KernelFailure {
            op: None,
            message: format!("injected failure of launch {}", self.launches.get()),
        });
        let failed = args.iter().any(|arg| matches!(arg, Held::Failed));
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
                Held::Failed => Value::Index(0),
            })
            .collect();
        if !self.deferred {
            if let Some(failure) = injected {
                return Some(Err(failure));
            }
            return Some(
                self.cpu
                    .launch_on_host(name, args)?
                    .map(|results| results.into_iter().map(Held::Device).collect()),
            );
        }
        let outputs = self.cpu.signature(name)?.outputs.len();
        let ran = if let Some(failure) = injected {
            Err(Some(failure))
        } else if failed {
            // On unspecified inputs: whatever it does, the run fails at an
            // earlier kernel.
            Err(None)
        } else {
            self.cpu.launch_on_host(name, args)?.map_err(Some)
        };
        let (failure, results) = match ran {
            Ok(results) => (None, results.into_iter().map(Held::Device).collect()),
            Err(failure) => (failure, vec![Held::Failed; outputs]),
        };
        self.queued.borrow_mut().push(failure);
        Some(Ok(results))
    }

    fn defers(&self) -> bool {
        self.deferred
    }

    fn made_on_host(&self, value: &Held) -> bool {
        match value {
            Held::Host(_) => true,
            // Uploaded, a constant, or already brought back: as
            // `OnDevice` does.
            Held::Device(Value::Tensor(tensor)) => self
                .uploaded
                .borrow()
                .contains_key(&(Arc::as_ptr(tensor) as usize)),
            Held::Device(_) | Held::Failed => false,
        }
    }

    fn settle(&self) -> Result<(), (usize, jitc_compiler::KernelFailure)> {
        self.settles.set(self.settles.get() + 1);
        let queued = std::mem::take(&mut *self.queued.borrow_mut());
        match queued.into_iter().enumerate().find_map(|(i, f)| Some((i, f?))) {
            Some(first) => Err(first),
            None => Ok(()),
        }
    }

    fn hold(&self, value: Value) -> Held {
        Held::Host(value)
    }

    fn constant(&self, value: &Value) -> Result<Held, String> {
        // Uploaded once per module on the GPU: not counted, and kept on
        // both sides (reading it back costs nothing).
        Ok(match value {
            Value::Tensor(tensor) => {
                self.uploaded
                    .borrow_mut()
                    .insert(Arc::as_ptr(tensor) as usize, Arc::clone(tensor));
                Held::Device(value.clone())
            }
            _ => Held::Host(value.clone()),
        })
    }

    fn to_host(&self, value: &Held) -> Result<Value, String> {
        if self.queued.borrow().iter().any(Option::is_some) {
            self.reads_past_failure.set(self.reads_past_failure.get() + 1);
        }
        Ok(match value {
            // A bug of the plan, not an error of the run: on a GPU it
            // would steer host code by unspecified values.
            Held::Failed => panic!("host code read a failed kernel's output before settling"),
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
            Held::Host(Value::Tensor(_)) | Held::Device(Value::Tensor(_)) | Held::Failed
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
                Held::Failed => Value::Index(0),
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
    on(&Device::new(cpu), cpu, module, args, state)
}

/// [`on_device`] through `device`.
fn on(
    device: &Device,
    cpu: &CpuModule,
    module: &Module,
    args: Vec<Value>,
    state: &mut StateStore,
) -> Outcome {
    let plan = cpu.plan(module, "main");
    let plan = plan.as_ref().as_ref().expect("the function has a host plan");
    let args = args.into_iter().map(Held::Host).collect();
    let results = match plan.run_to_host(device, args, state) {
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
    let (got, _) = on(&device, &cpu, &module, args(), &mut state);
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
    random_programs(false);
}

#[test]
fn random_host_programs_with_deferred_checks_match_the_cpu() {
    // Kernels queued without waiting, a failure seen only when the plan
    // settles: the same results, the same first error (at the failing
    // kernel's call site, not at the host code that came after it) and
    // the same committed state.
    random_programs(true);
}

#[test]
fn deferred_checks_report_the_failed_kernel_where_waiting_would() {
    // Each random program, with one of its kernel calls made to fail:
    // queued without waiting, the run fails with the error it gives when
    // each call is waited for (the failing call's site, before a later
    // host error, guard or missing state), and commits nothing.
    let mut checked = 0;
    for seed in 1..=40u64 {
        let source = random_host_program(&mut Rng(seed * 7919));
        let context = new_context().unwrap();
        let (module, cpu) = compiled(&context, &source);
        let mut rng = Rng(seed + 1000);
        for run in 0..5u64 {
            let (mut state, args) = random_run(&mut rng, seed, run);
            let (_, [_, _, launches]) = on_device(&cpu, &module, args.clone(), &mut state.clone());
            if launches == 0 {
                continue;
            }
            let fail_at = Some(1 + rng.below(launches));
            let mut waited_state = state.clone();
            let waited = Device {
                fail_at,
                ..Device::new(&cpu)
            };
            let (waited, _) = on(&waited, &cpu, &module, args.clone(), &mut waited_state);
            let deferred = Device {
                fail_at,
                ..Device::deferred(&cpu)
            };
            let (got, _) = on(&deferred, &cpu, &module, args, &mut state);
            let case = format!("seed {seed}, run {run}, launch {fail_at:?} fails\n{source}");
            assert_eq!(waited, got, "{case}");
            assert!(Match::Identical.states(&waited_state, &state), "{case}");
            checked += usize::from(waited.is_err_and(|e| e.contains("injected failure")));
        }
    }
    assert!(checked > 100, "{checked} runs failed at their injected kernel");
}

#[test]
fn deferred_checks_put_a_failed_kernel_before_later_errors() {
    // The loop's kernel fails; then a host division by zero, or the state
    // read finds nothing. Waited for, the kernel's failure is the error;
    // queued, it must be too, and nothing is committed.
    let source = r#"func.func @main(%x: tensor<4xf32>, %n: index, %z: index) -> tensor<4xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %h = scf.for %i = %c0 to %n step %c1 iter_args(%a = %x) -> (tensor<4xf32>) {
    %e = "meta.unary"(%a) {kind = "exp"} : (tensor<4xf32>) -> tensor<4xf32>
    "meta.state_write"(%e) {name = "h"} : (tensor<4xf32>) -> ()
    scf.yield %e : tensor<4xf32>
  }
  %q = arith.divsi %n, %z : index
  %s = "meta.state_read"() {name = "absent"} : () -> tensor<4xf32>
  %t = "meta.binary"(%h, %s) {kind = "add"} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %t : tensor<4xf32>
}"#;
    let context = new_context().unwrap();
    let (module, cpu) = compiled(&context, source);
    for (z, later) in [(0, "division by zero"), (1, "absent")] {
        let args = vec![Value::tensor(random(&[4], 1)), Value::Index(3), Value::Index(z)];
        let (clean, _) = on_device(&cpu, &module, args.clone(), &mut StateStore::new());
        let clean = clean.unwrap_err();
        assert!(clean.contains(later), "z = {z}: {clean}");
        for fail_at in [1, 2, 3] {
            let mut outcomes = Vec::new();
            for deferred in [false, true] {
                let device = Device {
                    fail_at: Some(fail_at),
                    deferred,
                    ..Device::new(&cpu)
                };
                let mut state = StateStore::new();
                let (got, _) = on(&device, &cpu, &module, args.clone(), &mut state);
                assert!(state.get("h").is_none(), "z = {z}, launch {fail_at}: committed");
                outcomes.push(got.unwrap_err());
            }
            assert!(outcomes[0].contains("injected failure"), "{outcomes:?}");
            assert_eq!(outcomes[0], outcomes[1], "z = {z}, launch {fail_at}");
        }
    }
}

#[test]
fn deferred_checks_stop_a_host_loop_after_a_failed_kernel() {
    // The kernel fails; a loop of host code alone follows, steered by host
    // values. Waiting for the kernel, the run stops before the loop;
    // queued, it settles at the end of the loop's first iteration, not
    // after all of them.
    let source = r#"func.func @main(%x: tensor<4xf32>, %n: index) -> tensor<4xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %e = "meta.unary"(%x) {kind = "exp"} : (tensor<4xf32>) -> tensor<4xf32>
  %k = scf.while (%i = %c0) : (index) -> index {
    %go = arith.cmpi slt, %i, %n : index
    scf.condition(%go) %i : index
  } do {
  ^bb0(%j: index):
    %next = arith.addi %j, %c1 : index
    scf.yield %next : index
  }
  return %e : tensor<4xf32>
}"#;
    let context = new_context().unwrap();
    let (module, cpu) = compiled(&context, source);
    let args = vec![Value::tensor(random(&[4], 1)), Value::Index(1000)];
    let device = Device {
        fail_at: Some(1),
        ..Device::deferred(&cpu)
    };
    let (got, _) = on(&device, &cpu, &module, args, &mut StateStore::new());
    let error = got.expect_err("the failed kernel was not reported");
    assert!(error.contains("injected failure"), "{error}");
    // One iteration's reads (the comparison's two operands, the
    // condition, the increment's two operands), not 1,000 iterations'.
    let reads = device.reads_past_failure.get();
    assert!(reads <= 5, "host code read {reads} values past the failed kernel");
}

#[test]
fn deferred_checks_settle_once_for_a_loop_of_kernels() {
    // IndRNN and the RNN read nothing on the host inside their loops: one
    // settle at the end of the run, however many kernels were queued, and
    // the CPU's bits and state.
    let context = new_context().unwrap();
    for (name, shapes, hidden) in [
        ("indrnn.mlir", [&[6, 16, 64][..], &[64, 64], &[64]], [16, 64]),
        ("rnn.mlir", [&[5, 4, 6][..], &[6, 8], &[8, 8]], [4, 8]),
    ] {
        let (module, cpu) = compiled(&context, &example(name));
        let args: Vec<Value> = random_inputs(&shapes, 3).into_iter().map(Value::tensor).collect();
        let mut state = StateStore::new();
        state.insert("rnn.h", random(&hidden, 4));
        let mut expected_state = state.clone();
        let expected = cpu
            .run(&module, "main", args.clone(), &mut expected_state)
            .unwrap();
        let device = Device::deferred(&cpu);
        let (got, _) = on(&device, &cpu, &module, args, &mut state);
        let got = got.unwrap_or_else(|e| panic!("{name} failed: {e}"));
        assert!(Match::Identical.values(&expected, &got), "{name}");
        assert!(Match::Identical.states(&expected_state, &state), "{name}");
        assert!(
            device.launches.get() >= 5,
            "{name}: {} launches",
            device.launches.get()
        );
        assert_eq!(device.settles.get(), 1, "{name}");
    }
    // A loop of more calls than `SETTLE_AFTER` settles every that many
    // calls, however little host code reads.
    let source = r#"func.func @main(%x: tensor<4xf32>, %n: index) -> tensor<4xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %h = scf.for %i = %c0 to %n step %c1 iter_args(%a = %x) -> (tensor<4xf32>) {
    %e = "meta.unary"(%a) {kind = "tanh"} : (tensor<4xf32>) -> tensor<4xf32>
    scf.yield %e : tensor<4xf32>
  }
  return %h : tensor<4xf32>
}"#;
    let (module, cpu) = compiled(&context, source);
    // One more than `SETTLE_AFTER`: a settle when the queue reaches it,
    // one at the end.
    let calls = crate::host::SETTLE_AFTER + 1;
    let args = vec![Value::tensor(random(&[4], 1)), Value::Index(calls as i64)];
    let expected = cpu
        .run(&module, "main", args.clone(), &mut StateStore::new())
        .unwrap();
    let device = Device::deferred(&cpu);
    let (got, _) = on(&device, &cpu, &module, args, &mut StateStore::new());
    let got = got.unwrap_or_else(|e| panic!("the loop failed: {e}"));
    assert!(Match::Identical.values(&expected, &got));
    assert_eq!(device.launches.get(), calls);
    assert_eq!(device.settles.get(), 2);
}

/// The state and arguments of run `run` of the random host program of
/// `seed` (`random_host_program`'s `@main(%x, %n, %xs)`, reading `acc`,
/// sometimes missing).
fn random_run(rng: &mut Rng, seed: u64, run: u64) -> (StateStore, Vec<Value>) {
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
    (state, args)
}

/// Random host programs through [`Device`] (`deferred`: queuing its
/// kernels) against the CPU's own host plan.
fn random_programs(deferred: bool) {
    let (mut successes, mut failures) = (0, 0);
    for seed in 1..=40u64 {
        let source = random_host_program(&mut Rng(seed * 7919));
        let context = new_context().unwrap();
        let (module, cpu) = compiled(&context, &source);
        let mut rng = Rng(seed);
        for run in 0..5u64 {
            let (mut state, args) = random_run(&mut rng, seed, run);
            let mut expected_state = state.clone();
            let expected = cpu
                .run(&module, "main", args.clone(), &mut expected_state)
                .map_err(|e| e.to_string());
            let device = if deferred {
                Device::deferred(&cpu)
            } else {
                Device::new(&cpu)
            };
            let (got, _) = on(&device, &cpu, &module, args, &mut state);
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
