//! `graph::stage_loop` (what `@jitc.function` stages a `while` loop on a
//! tensor condition as): one function whose `scf.while` runs the body
//! while the condition holds, for any trip count. On random inputs it
//! must give, bit for bit (`--math exact`), what the same loop driven from
//! Rust gives (the condition fetched each iteration); and bad parts are
//! errors in words.

use jitc_compiler::{CodegenOptions, MathMode};
use jitc_dialect::kinds::ElementType;
use jitc_interp::Tensor;
use jitc_runtime::graph::{self, LoopParts, StateBinding, Var};
use jitc_test_support::random;

fn bits(tensor: &Tensor) -> Vec<u64> {
    (0..tensor.len())
        .map(|i| tensor.get(i).as_f64().to_bits())
        .collect()
}

/// Whether the largest element of `x` (`tensor<4xf32>`) is above `limit`:
/// a rank-0 `i1`.
fn above(x: &Var, limit: f64) -> Var {
    let top = x.reindex_reduce("max", &[], &[]).unwrap();
    let bound = graph::full(&[], ElementType::F32, limit).unwrap();
    top.binary("gt", &bound).unwrap()
}

/// One iteration: `(x, s) -> (x * 0.5 + w, s + x)`.
fn step(x: &Var, s: &Var, w: &Var) -> (Var, Var) {
    let half = graph::full(&[4], ElementType::F32, 0.5).unwrap();
    let next = x.binary("mul", &half).unwrap().binary("add", w).unwrap();
    (next, s.binary("add", x).unwrap())
}

fn data(tensor: Tensor) -> Var {
    Var::new(tensor)
}

#[test]
fn a_staged_loop_runs_any_trip_count_as_the_loop_does() {
    graph::set_options(CodegenOptions {
        math: MathMode::Exact,
        ..CodegenOptions::default()
    })
    .unwrap();
    let shape = [4usize];
    let x = data(random(&shape, 1));
    let w = data(random(&shape, 2));
    // Before: s = x - x (zeros of x's type); the first test.
    let s = x.binary("sub", &x).unwrap();
    let condition = above(&x, 1.0);
    let px = data(random(&shape, 3));
    let ps = data(random(&shape, 4));
    let (nx, ns) = step(&px, &ps, &w);
    let next_condition = above(&nx, 1.0);
    let rx = data(random(&shape, 5));
    let rs = data(random(&shape, 6));
    let out = rx.binary("add", &rs).unwrap();
    let parts = LoopParts {
        init: &[&x, &s],
        effects_before: &[],
        condition: &condition,
        params: &[&px, &ps],
        next: &[&nx, &ns],
        next_condition: &next_condition,
        results: &[&rx, &rs],
        outputs: &[&out],
        effects_after: &[],
        effects_body: &[],
    };
    let staged = graph::stage_loop(&[&x, &w], &parts, &StateBinding::default()).unwrap();
    let mut trips_seen = Vec::new();
    for case in 0..40u64 {
        // Scales from below 1 (no trip) to thousands (a dozen trips).
        let scale = [0.5, 2.0, 9.0, 300.0, 5000.0][case as usize % 5];
        let mut x0 = random(&shape, 100 + case);
        for i in 0..4 {
            let scaled = (x0.get(i).as_f64() * scale) as f32;
            x0.buffer_mut().set(i, jitc_interp::Scalar::F32(scaled));
        }
        // Small enough that the loop ends: x tends to 2 w.
        let mut w0 = random(&shape, 200 + case);
        for i in 0..4 {
            let small = (w0.get(i).as_f64() * 0.1) as f32;
            w0.buffer_mut().set(i, jitc_interp::Scalar::F32(small));
        }
        // The loop, driven from Rust.
        let (mut xv, mut sv) = (data(x0.clone()), data(x0.clone()));
        sv = sv.binary("sub", &sv).unwrap();
        let w_var = data(w0.clone());
        let mut trips = 0;
        while above(&xv, 1.0).fetch().unwrap().get(0).as_f64() != 0.0 {
            let (a, b) = step(&xv, &sv, &w_var);
            xv = data((*a.fetch().unwrap()).clone());
            sv = data((*b.fetch().unwrap()).clone());
            trips += 1;
            assert!(trips < 1000, "case {case}: the loop does not end");
        }
        let want = bits(&xv.binary("add", &sv).unwrap().fetch().unwrap());
        let got = staged.call(&[&data(x0), &data(w0)]).unwrap();
        assert_eq!(bits(&got[0].fetch().unwrap()), want, "case {case}, {trips} trips");
        trips_seen.push(trips);
    }
    assert!(
        trips_seen.contains(&0) && trips_seen.iter().any(|&t| t >= 5),
        "{trips_seen:?}"
    );
}

#[test]
fn bad_loop_parts_are_errors_in_words() {
    let x = data(random(&[4], 1));
    let p = data(random(&[4], 2));
    let r = data(random(&[4], 3));
    let wide = data(random(&[5], 4));
    let condition = above(&x, 1.0);
    let parts = |init: &[&Var], params: &[&Var], next: &[&Var], condition: &Var| {
        let next_condition = above(&p, 1.0);
        let parts = LoopParts {
            init,
            effects_before: &[],
            condition,
            params,
            next,
            next_condition: &next_condition,
            results: &[&r],
            outputs: &[&r],
            effects_after: &[],
            effects_body: &[],
        };
        graph::stage_loop(&[&x], &parts, &StateBinding::default())
            .unwrap_err()
            .to_string()
    };
    let message = parts(&[&x], &[&p], &[], &condition);
    assert!(
        message.contains("carries 1 values, but has 1 parameters, 0 next values"),
        "{message}"
    );
    let message = parts(&[&x], &[&p], &[&wide], &condition);
    assert!(
        message.contains("carried value 0 of a staged loop changes its type"),
        "{message}"
    );
    let message = parts(&[&x], &[&p], &[&p], &x);
    assert!(message.contains("condition must be a rank-0 i1"), "{message}");
}

#[test]
fn a_guard_among_the_body_effects_is_checked_in_every_iteration() {
    // x halves while its largest element is above 1; each iteration's
    // effect guards that its largest element is below `limit` (a check
    // whose value nothing reads, as a frontend's eager check). It fails
    // exactly when some iteration starts at `limit` or above.
    let shape = [4usize];
    let x = data(random(&shape, 1));
    let condition = above(&x, 1.0);
    let px = data(random(&shape, 3));
    let half = graph::full(&shape, ElementType::F32, 0.5).unwrap();
    let nx = px.binary("mul", &half).unwrap();
    let next_condition = above(&nx, 1.0);
    let limit = 40.0;
    let top = px.reindex_reduce("max", &[], &[]).unwrap();
    let bound = graph::full(&[], ElementType::F32, limit).unwrap();
    let check = graph::guard(&top.binary("lt", &bound).unwrap(), "below the limit").unwrap();
    let rx = data(random(&shape, 5));
    let parts = LoopParts {
        init: &[&x],
        effects_before: &[],
        condition: &condition,
        params: &[&px],
        next: &[&nx],
        next_condition: &next_condition,
        effects_body: &[&check],
        results: &[&rx],
        outputs: &[&rx],
        effects_after: &[],
    };
    let staged = graph::stage_loop(&[&x], &parts, &StateBinding::default()).unwrap();
    for (top, fails) in [
        (0.5f32, false),
        (30.0, false),
        (39.0, false),
        (41.0, true),
        (500.0, true),
    ] {
        let mut x0 = random(&shape, 7);
        for i in 0..4 {
            x0.buffer_mut()
                .set(i, jitc_interp::Scalar::F32(if i == 0 { top } else { 0.0 }));
        }
        let got = staged.call(&[&data(x0)]);
        match got {
            Ok(values) => {
                assert!(!fails, "top {top}: the guard held");
                let first = values[0].fetch().unwrap().get(0).as_f64();
                let mut want = f64::from(top);
                while want > 1.0 {
                    want *= 0.5;
                }
                assert_eq!(first, want, "top {top}");
            }
            Err(e) => {
                assert!(fails, "top {top}: {e}");
                assert!(e.to_string().contains("below the limit"), "{e}");
            }
        }
    }
}
