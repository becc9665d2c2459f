//! What speculation buys and what its guards cost.
//!
//! Run with `cargo bench -p jitc-runtime --bench speculation`. In one run:
//!
//! 1. **IndRNN** (`examples/indrnn.mlir`, batch 16, hidden 64, 16 steps),
//!    per call through a [`Session`], median of 15 calls after a warm-up:
//!    - *generic*: as written (dynamic sequence length, a loop of 16
//!      steps; the kernel that reads `%xs` takes its length at run time);
//!    - *shape only*: specialized on the shapes but with the loop kept (the
//!      profile's trip count forgotten), so every kernel compiles but each
//!      step is its own kernel launches;
//!    - *specialized*: shapes fixed, loop unrolled, the 16 recurrences
//!      fused into one kernel and the 16 input projections into another.
//! 2. **Guard cost**: functions of 16 and 64 `index` arguments that return
//!    the first. Specialized, they check one entry guard per argument
//!    (`value(%argN) == N`) before anything runs; the slope between the two
//!    is the cost of one entry guard. A guard on a computed value (a branch
//!    on a kernel's result) is evaluated by the host plan;
//!    it is timed against the `scf.if` it replaces.

use jitc_compiler::{CodegenOptions, new_context};
use jitc_dialect::profile::SiteProfile;
use jitc_interp::{Scalar, StateStore, Tensor, Value};
use jitc_runtime::{Session, SessionOptions};
use std::time::{Duration, Instant};

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

fn time_calls(
    session: &mut Session,
    args: &dyn Fn() -> Vec<Value>,
    state: &mut StateStore,
    n: usize,
) -> Duration {
    let mut samples = Vec::with_capacity(n);
    for _ in 0..n {
        let args = args();
        let start = Instant::now();
        std::hint::black_box(session.call(args, state).expect("the call runs"));
        samples.push(start.elapsed());
    }
    median(samples)
}

fn rnn() {
    let source = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../examples/indrnn.mlir"))
        .expect("examples/indrnn.mlir");
    let steps = 16;
    let args = || {
        vec![
            Value::tensor(Tensor::splat(vec![steps, 16, 64], Scalar::F32(0.1))),
            Value::tensor(Tensor::splat(vec![64, 64], Scalar::F32(0.01))),
            Value::tensor(Tensor::splat(vec![64], Scalar::F32(0.5))),
        ]
    };
    let fresh_state = || {
        let mut state = StateStore::new();
        state.insert("rnn.h", Tensor::splat(vec![16, 64], Scalar::F32(0.0)));
        state
    };
    // A profile of three calls, as a session records it.
    let profile = {
        let context = new_context().expect("context");
        let mut session =
            Session::new(&context, &source, "main", SessionOptions::default()).expect("session");
        let mut state = fresh_state();
        for _ in 0..3 {
            session.call(args(), &mut state).expect("profiling call");
        }
        session.profile().clone()
    };
    let mut loop_kept = profile.clone();
    for site in loop_kept.sites.values_mut() {
        if let SiteProfile::Loop { trips, .. } = site {
            *trips = None;
        }
    }
    println!("IndRNN, batch 16, hidden 64, {steps} steps, per call (median of 15):");
    let mut generic_time = Duration::ZERO;
    for (name, profile) in [
        ("generic", None),
        ("shape only", Some(loop_kept)),
        ("specialized", Some(profile)),
    ] {
        let context = new_context().expect("context");
        let options = SessionOptions {
            speculate: profile.is_some(),
            codegen: CodegenOptions::default(),
            ..Default::default()
        };
        let mut session = Session::new(&context, &source, "main", options).expect("session");
        if let Some(profile) = profile {
            session = session.with_profile(profile);
        }
        let mut state = fresh_state();
        // Warm-up: compiles the specialized executable.
        session.call(args(), &mut state).expect("warm-up");
        let time = time_calls(&mut session, &args, &mut state, 15);
        if name == "generic" {
            generic_time = time;
        }
        let kernels = session
            .specialized_ir()
            .map_or(0, |ir| ir.matches("meta.fused").count());
        println!(
            "  {name:<12} {:>9.3} ms   {:>5.1}x vs generic   {}",
            time.as_secs_f64() * 1e3,
            generic_time.as_secs_f64() / time.as_secs_f64(),
            if kernels > 0 {
                format!("{kernels} fused kernels")
            } else {
                "loop of step kernels".to_owned()
            }
        );
        assert_eq!(session.stats().fallbacks, 0);
    }
}

/// A function of `n` index arguments that returns the first.
fn index_function(n: usize) -> String {
    let arguments: Vec<String> = (0..n).map(|i| format!("%a{i}: index")).collect();
    format!(
        "func.func @main({}) -> index {{\n  return %a0 : index\n}}\n",
        arguments.join(", ")
    )
}

/// Median time per call of a session over `source`, speculating or not,
/// and the number of assumptions it made.
fn per_call(source: &str, args: &dyn Fn() -> Vec<Value>, speculate: bool) -> (Duration, usize) {
    let context = new_context().expect("context");
    let options = SessionOptions {
        profile_runs: 1,
        speculate,
        ..Default::default()
    };
    let mut session = Session::new(&context, source, "main", options).expect("session");
    let mut state = StateStore::new();
    session.call(args(), &mut state).expect("profiling call");
    session.call(args(), &mut state).expect("warm-up");
    let time = time_calls(&mut session, args, &mut state, 2001);
    (time, session.assumptions().map_or(0, <[_]>::len))
}

fn guard_cost() {
    println!("guard cost (median of 2001 calls each):");
    for n in [16, 64] {
        let source = index_function(n);
        let args = || (0..n).map(|i| Value::Index(i as i64)).collect::<Vec<_>>();
        let (generic, _) = per_call(&source, &args, false);
        let (specialized, guards) = per_call(&source, &args, true);
        assert_eq!(guards, n, "every argument is guarded");
        println!(
            "  {n:>2} entry guards: {:>6} ns per call checking them, {:>6} ns generic: {:.0} ns more per guard",
            specialized.as_nanos(),
            generic.as_nanos(),
            (specialized.as_nanos() as f64 - generic.as_nanos() as f64) / n as f64
        );
    }
    // The checks alone, as `Session::call` makes them before running.
    {
        let n = 64;
        let source = index_function(n);
        let context = new_context().expect("context");
        let options = SessionOptions {
            profile_runs: 1,
            ..Default::default()
        };
        let mut session = Session::new(&context, &source, "main", options).expect("session");
        let args: Vec<Value> = (0..n).map(|i| Value::Index(i as i64)).collect();
        let mut state = StateStore::new();
        session.call(args.clone(), &mut state).expect("profiling call");
        session.call(args.clone(), &mut state).expect("specialized call");
        assert_eq!(session.entry_guard_count(), n);
        let rounds = 100_000;
        let mut samples = Vec::new();
        for _ in 0..9 {
            let start = Instant::now();
            for _ in 0..rounds {
                assert!(session.entry_guards_pass(std::hint::black_box(&args)) == Some(true));
            }
            samples.push(start.elapsed());
        }
        println!(
            "  per guard, the native check alone: {:.2} ns ({n} guards x {rounds} rounds)",
            median(samples).as_nanos() as f64 / (n * rounds) as f64
        );
    }
    let branch = r#"func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %c0 = arith.constant 0 : index
  %n = "meta.unary"(%x) {kind = "neg"} : (tensor<4xf32>) -> tensor<4xf32>
  %first = tensor.extract %n[%c0] : tensor<4xf32>
  %zero = arith.constant 0.0 : f32
  %negative = arith.cmpf olt, %first, %zero : f32
  %y = scf.if %negative -> (tensor<4xf32>) {
    scf.yield %x : tensor<4xf32>
  } else {
    scf.yield %n : tensor<4xf32>
  }
  return %y : tensor<4xf32>
}"#;
    let args = || vec![Value::tensor(Tensor::splat(vec![4], Scalar::F32(1.0)))];
    let (generic, _) = per_call(branch, &args, false);
    let (specialized, guards) = per_call(branch, &args, true);
    assert_eq!(guards, 1);
    println!(
        "  a branch on a computed value: {} ns per call guarded and inlined, {} ns as scf.if",
        specialized.as_nanos(),
        generic.as_nanos()
    );
}

fn main() {
    rnn();
    guard_cost();
}
