//! The speculation manager against the reference interpreter: every call's
//! results and state must equal a plain interpreter run of the original
//! program, whether the call was profiled, specialized, or fell back.

use jitc_compiler::{CodegenOptions, MathMode, new_context, parse_module};
use jitc_interp::{Buffer, Interpreter, Scalar, StateStore, Tensor, Value};
use jitc_runtime::{Event, Session, SessionOptions};

/// Arguments: a dynamic batch (shape site), a scale (value site), a flag
/// (drives the branch at 14:8 through a computed `not not flag`, so that
/// the branch guard tests a value computed in the graph) and a count in a rank-1 tensor (drives the
/// loop at 23:8 and is not itself a scalar argument). The state `acc` is
/// written *before* the branch, so a failed branch guard comes after the
/// write has executed, and must still leave `acc` untouched.
const PROGRAM: &str = r#"func.func @main(%x: tensor<?x8xf32>, %s: tensor<f32>, %flag: tensor<i1>, %cnt: tensor<1xi64>) -> tensor<?x8xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %acc = "meta.state_read"() {name = "acc"} : () -> tensor<8xf32>
  %col = "meta.reindex_reduce"(%x) {kind = "add", indices = affine_map<(d0, d1) -> (d1)>} : (tensor<?x8xf32>) -> tensor<8xf32>
  %acc2 = "meta.binary"(%acc, %col) {kind = "add"} : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  "meta.state_write"(%acc2) {name = "acc"} : (tensor<8xf32>) -> ()
  %d = tensor.dim %x, %c0 : tensor<?x8xf32>
  %sb = "meta.reindex"(%s, %d) {indices = affine_map<(d0, d1) -> ()>} : (tensor<f32>, index) -> tensor<?x8xf32>
  %y = "meta.binary"(%x, %sb) {kind = "mul"} : (tensor<?x8xf32>, tensor<?x8xf32>) -> tensor<?x8xf32>
  %nf = "meta.unary"(%flag) {kind = "not"} : (tensor<i1>) -> tensor<i1>
  %nnf = "meta.unary"(%nf) {kind = "not"} : (tensor<i1>) -> tensor<i1>
  %f = tensor.extract %nnf[] : tensor<i1>
  %z = scf.if %f -> (tensor<?x8xf32>) {
    %e = "meta.unary"(%y) {kind = "exp"} : (tensor<?x8xf32>) -> tensor<?x8xf32>
    scf.yield %e : tensor<?x8xf32>
  } else {
    %n = "meta.unary"(%y) {kind = "neg"} : (tensor<?x8xf32>) -> tensor<?x8xf32>
    scf.yield %n : tensor<?x8xf32>
  }
  %k = tensor.extract %cnt[%c0] : tensor<1xi64>
  %trips = arith.index_cast %k : i64 to index
  %r = scf.for %i = %c0 to %trips step %c1 iter_args(%a = %z) -> (tensor<?x8xf32>) {
    %t = "meta.unary"(%a) {kind = "tanh"} : (tensor<?x8xf32>) -> tensor<?x8xf32>
    scf.yield %t : tensor<?x8xf32>
  }
  return %r : tensor<?x8xf32>
}"#;

#[derive(Clone, Copy)]
struct Call {
    rows: usize,
    scale: f32,
    flag: bool,
    count: i64,
    seed: usize,
}

const BASE: Call = Call {
    rows: 4,
    scale: 0.5,
    flag: true,
    count: 3,
    seed: 0,
};

fn args(call: Call) -> Vec<Value> {
    let x: Vec<f32> = (0..call.rows * 8)
        .map(|i| ((i * 7 + call.seed * 13) % 17) as f32 / 17.0 - 0.5)
        .collect();
    vec![
        Value::tensor(Tensor::new(vec![call.rows, 8], Buffer::F32(x.into_iter().collect())).unwrap()),
        Value::tensor(Tensor::scalar(Scalar::F32(call.scale))),
        Value::tensor(Tensor::scalar(Scalar::I1(call.flag))),
        Value::tensor(Tensor::new(vec![1], Buffer::I64([call.count].into_iter().collect())).unwrap()),
    ]
}

fn initial_state() -> StateStore {
    let mut state = StateStore::new();
    state.insert("acc", Tensor::splat(vec![8], Scalar::F32(0.0)));
    state
}

fn options() -> SessionOptions {
    SessionOptions {
        codegen: CodegenOptions {
            math: MathMode::Exact,
            ..Default::default()
        },
        ..Default::default()
    }
}

/// Runs `calls` through a session and through the interpreter, checking
/// every result and the state after every call; returns the session's
/// events and stats.
fn check(calls: &[Call], options: SessionOptions) -> (Vec<Event>, jitc_runtime::Stats, Vec<String>) {
    let context = new_context().unwrap();
    let mut session = Session::new(&context, PROGRAM, "main", options).unwrap();
    check_session(&mut session, calls);
    let assumptions = session
        .assumptions()
        .map(|a| a.iter().map(|a| a.reason.clone()).collect())
        .unwrap_or_default();
    (session.events().to_vec(), session.stats(), assumptions)
}

/// [`check`]'s comparison with the interpreter, for a given session.
fn check_session(session: &mut Session, calls: &[Call]) {
    let reference_context = new_context().unwrap();
    let reference = parse_module(&reference_context, PROGRAM).unwrap();
    let interpreter = Interpreter::new(&reference);
    let (mut state, mut expected_state) = (initial_state(), initial_state());
    for (i, &call) in calls.iter().enumerate() {
        let got = session.call(args(call), &mut state).unwrap();
        let want = interpreter.run("main", args(call), &mut expected_state).unwrap();
        assert_eq!(got, want, "results of call {i}");
        assert_eq!(state, expected_state, "state after call {i}");
    }
}

fn fallbacks(events: &[Event]) -> Vec<&str> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::Fallback { reason, .. } => Some(reason.as_str()),
            _ => None,
        })
        .collect()
}

#[test]
fn stable_calls_are_served_specialized_without_fallback() {
    let (events, stats, assumptions) = check(&[BASE; 6], options());
    assert_eq!(stats.profiled, 3);
    assert_eq!(stats.specialized, 3);
    assert_eq!(stats.fallbacks, 0);
    assert_eq!(stats.specializations, 1);
    assert!(fallbacks(&events).is_empty());
    for expected in [
        "shape(%arg0)[0] == 4",
        "value(%arg1) == 0.5",
        "value(%arg2) == 1",
        "branch at 14:8 taken",
        "trip count of the loop at 23:8 == 3",
    ] {
        assert!(
            assumptions.iter().any(|a| a == expected),
            "missing assumption {expected:?} in {assumptions:?}"
        );
    }
}

/// One pattern change after profiling: exactly one fallback, then one
/// relaxed recompile, and the new pattern (and a third one on the same
/// lattice level) runs specialized.
fn one_change(changed: Call, again: Call, broken: &str, relaxed_absent: &str) {
    let calls = [BASE, BASE, BASE, BASE, changed, changed, again, BASE];
    let (events, stats, assumptions) = check(&calls, options());
    assert_eq!(fallbacks(&events), vec![broken], "events: {events:#?}");
    assert_eq!(stats.fallbacks, 1);
    assert_eq!(stats.recompiles, 1);
    assert_eq!(stats.specialized, 4);
    assert!(
        events.iter().any(|e| matches!(e, Event::Relaxed { .. })),
        "no relaxation in {events:#?}"
    );
    assert!(
        !assumptions.iter().any(|a| a.starts_with(relaxed_absent)),
        "{relaxed_absent} is still assumed: {assumptions:?}"
    );
}

#[test]
fn a_shape_change_falls_back_then_relaxes_to_a_dynamic_dimension() {
    one_change(
        Call { rows: 3, ..BASE },
        Call { rows: 5, ..BASE },
        "shape(%arg0)[0] == 4",
        "shape(%arg0)[0]",
    );
}

#[test]
fn a_value_change_falls_back_then_relaxes_to_any_value() {
    one_change(
        Call { scale: 0.25, ..BASE },
        Call { scale: 2.0, ..BASE },
        "value(%arg1) == 0.5",
        "value(%arg1)",
    );
}

#[test]
fn a_branch_flip_falls_back_then_keeps_the_branch() {
    // The flag is a scalar argument too: its value guard is the one that
    // fails first, and relaxing it leaves the branch to its own guard,
    // which the fallback's observation relaxes at the same time.
    let calls = [
        BASE,
        BASE,
        BASE,
        BASE,
        Call { flag: false, ..BASE },
        Call { flag: false, ..BASE },
        BASE,
    ];
    let (events, stats, assumptions) = check(&calls, options());
    assert_eq!(
        fallbacks(&events),
        vec!["value(%arg2) == 1"],
        "events: {events:#?}"
    );
    assert_eq!(stats.fallbacks, 1);
    assert!(
        !assumptions.iter().any(|a| a.starts_with("branch at")),
        "{assumptions:?}"
    );
}

/// A session started from a profile of three `BASE` calls in which the
/// flag's value is forgotten, so the branch is guarded in the graph (after
/// the state write has executed) rather than at entry.
fn branch_only_session(context: &melior::Context) -> Session<'_> {
    let mut profile = jitc_dialect::profile::Profile::new();
    let reference_context = new_context().unwrap();
    let reference = parse_module(&reference_context, PROGRAM).unwrap();
    for _ in 0..3 {
        Interpreter::new(&reference)
            .run_profiled("main", args(BASE), &mut initial_state(), &mut profile)
            .unwrap();
    }
    profile.functions.get_mut("main").unwrap().arguments[2].value =
        Some(jitc_dialect::profile::Observed::Varied);
    Session::new(context, PROGRAM, "main", options())
        .unwrap()
        .with_profile(profile)
}

#[test]
fn a_branch_flip_behind_a_computed_condition_fails_its_in_graph_guard() {
    let context = new_context().unwrap();
    let mut session = branch_only_session(&context);
    let flipped = Call { flag: false, ..BASE };
    check_session(&mut session, &[BASE, flipped, flipped, BASE]);
    assert_eq!(fallbacks(session.events()), vec!["branch at 14:8 taken"]);
    assert_eq!(session.stats().fallbacks, 1);
}

#[test]
fn a_failed_guard_commits_no_state() {
    // In the specialized program the write of `acc` executes before the
    // branch guard; when that guard fails, the state must be untouched.
    let context = new_context().unwrap();
    let mut session = branch_only_session(&context);
    let mut state = initial_state();
    session.call(args(BASE), &mut state).unwrap();
    let ir = session.specialized_ir().unwrap();
    let write = ir.find("meta.state_write").unwrap();
    let guard = ir.find("branch at 14:8 taken").unwrap();
    assert!(
        write < guard,
        "the write should come before the branch guard:\n{ir}"
    );
    let specialized_context = new_context().unwrap();
    let specialized = parse_module(&specialized_context, &ir).unwrap();
    let before = state.clone();
    let error = Interpreter::new(&specialized)
        .run("main", args(Call { flag: false, ..BASE }), &mut state)
        .unwrap_err();
    assert!(
        matches!(&error, jitc_interp::Error::GuardFailed { reason, .. } if reason == "branch at 14:8 taken"),
        "{error}"
    );
    assert_eq!(state, before, "a failed guard changed the state");
}

#[test]
fn a_trip_count_change_falls_back_then_keeps_the_loop() {
    one_change(
        Call { count: 5, ..BASE },
        Call { count: 2, ..BASE },
        "trip count of the loop at 23:8 == 3",
        "trip count",
    );
}

#[test]
fn a_site_that_keeps_failing_is_given_up() {
    let options = SessionOptions {
        give_up_after: 1,
        ..options()
    };
    let calls = [
        BASE,
        BASE,
        BASE,
        Call { rows: 3, ..BASE },
        Call { rows: 6, ..BASE },
        BASE,
    ];
    let (events, stats, assumptions) = check(&calls, options);
    assert_eq!(stats.given_up, 1);
    assert!(
        events
            .iter()
            .any(|e| matches!(e, Event::GaveUp { site, .. } if site == "@main(%arg0)"))
    );
    assert!(
        !assumptions.iter().any(|a| a.contains("%arg0")),
        "{assumptions:?}"
    );
    assert_eq!(stats.fallbacks, 1);
}

#[test]
fn a_program_guard_that_fails_is_an_error_even_after_fallback() {
    let source = r#"func.func @main(%x: tensor<i1>) -> tensor<i1> {
  "meta.guard"(%x) {id = 1 : i64, reason = "x must hold"} : (tensor<i1>) -> ()
  return %x : tensor<i1>
}"#;
    let context = new_context().unwrap();
    let options = SessionOptions {
        profile_runs: 1,
        ..options()
    };
    let mut session = Session::new(&context, source, "main", options).unwrap();
    let ok = vec![Value::tensor(Tensor::scalar(Scalar::I1(true)))];
    session.call(ok.clone(), &mut StateStore::new()).unwrap();
    let bad = vec![Value::tensor(Tensor::scalar(Scalar::I1(false)))];
    let error = session.call(bad, &mut StateStore::new()).unwrap_err().to_string();
    // The speculated value of %x fails first; the generic re-run then hits
    // the program's own guard, whose failure is the caller's error.
    assert!(error.contains("x must hold"), "{error}");
    assert_eq!(fallbacks(session.events()), vec!["value(%arg0) == 1"]);
}

/// Random call sequences (xorshift, fixed seeds): whatever mix of shape,
/// value, branch and trip-count changes arrives, every call matches the
/// interpreter and the state never diverges. Kernels run in the interpreter
/// here (this checks the transformations and the manager; the compiled
/// path is covered above), with a small give-up limit so that give-ups are
/// exercised too.
#[test]
fn random_call_sequences_match_the_interpreter() {
    let mut rng = jitc_test_support::Rng(0x9e37_79b9_7f4a_7c15);
    let mut next = |n: u64| rng.next() % n;
    let mut fallbacks_seen = 0;
    for sequence in 0..24u64 {
        let options = SessionOptions {
            compile: false,
            give_up_after: 2,
            profile_runs: 1 + next(3) as usize,
            ..options()
        };
        let calls: Vec<Call> = (0..10)
            .map(|i| {
                // Mostly stable, with occasional changes of each kind.
                let other_rows = 1 + next(6);
                let other_count = next(5);
                Call {
                    rows: if next(4) == 0 { other_rows } else { 4 } as usize,
                    scale: if next(5) == 0 { 0.25 } else { 0.5 },
                    flag: next(6) != 0,
                    count: if next(4) == 0 { other_count } else { 3 } as i64,
                    seed: (sequence * 10 + i) as usize,
                }
            })
            .collect();
        let (events, stats, _) = check(&calls, options);
        fallbacks_seen += stats.fallbacks;
        assert_eq!(fallbacks(&events).len() as u64, stats.fallbacks);
    }
    assert!(
        fallbacks_seen > 10,
        "the sequences should exercise fallbacks ({fallbacks_seen})"
    );
}
