//! Property test of trace merging (`meta-merge` through
//! `graph::stage_merged`, what `@jitc.function` does): random programs
//! with nested branches on computed values (one element of a variable,
//! by site, so that nested branches go their ways independently) and
//! variables reassigned in them (by ops, or copied from another variable
//! with no op, so that ways may differ only in which value later ops
//! read) are traced on random inputs, the traces merged into one graph,
//! and the graph run on every traced input and on new ones. On an input
//! whose path a trace took, it must give the program's result bit for bit
//! (`--math exact`); on any other, that result or a failed guard, never
//! another number. Merges the pass refuses (in words) are counted, and
//! must stay a minority; some graphs must hold an `scf.if` and some an
//! `scf.index_switch`.

use jitc_compiler::{CodegenOptions, MathMode};
use jitc_dialect::kinds::ElementType;
use jitc_interp::Tensor;
use jitc_runtime::graph::{self, StateBinding, Var};
use jitc_test_support::{Rng, random};

/// A statement of a random program over four variables of `tensor<4xf32>`.
#[derive(Debug, Clone)]
enum Stmt {
    /// `v[to] = kind(v[a], v[b])` (binary) or `kind(v[a])` (unary).
    Assign {
        to: usize,
        kind: &'static str,
        a: usize,
        b: usize,
        site: usize,
    },
    /// `v[to] = v[from]`: no op, so branches whose ways only copy
    /// differ in which value later ops read (way nodes).
    Copy { to: usize, from: usize },
    /// `if v[on][site % 4] > 0 { then } else { otherwise }`.
    If {
        on: usize,
        site: usize,
        then: Vec<Stmt>,
        otherwise: Vec<Stmt>,
    },
}

const UNARY: &[&str] = &["neg", "tanh", "abs"];
const BINARY: &[&str] = &["add", "sub", "mul", "max", "min"];

fn block(rng: &mut Rng, depth: usize, sites: &mut usize) -> Vec<Stmt> {
    let count = rng.below(4);
    (0..count)
        .map(|_| {
            *sites += 1;
            let site = *sites;
            if depth > 0 && rng.below(4) == 0 {
                Stmt::Copy {
                    to: rng.below(4),
                    from: rng.below(4),
                }
            } else if depth < 2 && rng.below(3) == 0 {
                Stmt::If {
                    on: rng.below(4),
                    site,
                    then: block(rng, depth + 1, sites),
                    otherwise: block(rng, depth + 1, sites),
                }
            } else {
                let kinds: Vec<&'static str> = UNARY.iter().chain(BINARY).copied().collect();
                Stmt::Assign {
                    to: rng.below(4),
                    kind: kinds[rng.below(kinds.len())],
                    a: rng.below(4),
                    b: rng.below(4),
                    site,
                }
            }
        })
        .collect()
}

/// Runs `program` on `input` through the lazy graph, as a tracer sees
/// it: each op at its statement's site; each branch decided by fetching
/// its condition, or forced the ways `forced` gives (then recorded as a
/// decision). Returns the result (variable 0), the ways taken and the
/// decisions recorded.
fn run(program: &[Stmt], input: &Var, forced: Option<&[bool]>) -> (Var, Vec<bool>, Vec<Var>) {
    struct State<'f> {
        vars: Vec<Var>,
        ways: Vec<bool>,
        forced: Option<&'f [bool]>,
        decisions: Vec<Var>,
    }
    fn go(stmts: &[Stmt], state: &mut State) {
        for stmt in stmts {
            match stmt {
                Stmt::Assign { to, kind, a, b, site } => {
                    graph::set_site(Some(&format!("p.py:{site}"))).unwrap();
                    let value = if UNARY.contains(kind) {
                        state.vars[*a].unary(kind).unwrap()
                    } else {
                        state.vars[*a].binary(kind, &state.vars[*b]).unwrap()
                    };
                    state.vars[*to] = value;
                }
                Stmt::Copy { to, from } => state.vars[*to] = state.vars[*from].clone(),
                Stmt::If {
                    on,
                    site,
                    then,
                    otherwise,
                } => {
                    graph::set_site(Some(&format!("p.py:{site}"))).unwrap();
                    let zero = graph::full(&[], ElementType::F32, 0.0).unwrap();
                    // One element, by site: branches on different
                    // elements go their ways independently.
                    let element = (site % 4).to_string();
                    let picked = state.vars[*on].reindex(&[], &[&element], None, &[]).unwrap();
                    let condition = picked.binary("gt", &zero).unwrap();
                    let way = match state.forced {
                        Some(ways) => {
                            let way = ways[state.ways.len()];
                            state.decisions.push(
                                graph::decision(&condition, way, &format!("branch at p.py:{site}")).unwrap(),
                            );
                            way
                        }
                        None => condition.fetch().unwrap().get(0).as_f64() != 0.0,
                    };
                    state.ways.push(way);
                    go(if way { then } else { otherwise }, state);
                }
            }
        }
    }
    let mut state = State {
        vars: vec![input.clone(); 4],
        ways: Vec::new(),
        forced,
        decisions: Vec::new(),
    };
    go(program, &mut state);
    graph::set_site(None).unwrap();
    (state.vars.swap_remove(0), state.ways, state.decisions)
}

fn bits(tensor: &Tensor) -> Vec<u64> {
    (0..tensor.len())
        .map(|i| tensor.get(i).as_f64().to_bits())
        .collect()
}

#[test]
fn merged_traces_compute_each_traced_path_and_guard_the_rest() {
    graph::set_options(CodegenOptions {
        math: MathMode::Exact,
        ..CodegenOptions::default()
    })
    .unwrap();
    let mut rng = Rng(20261124);
    let (mut merged, mut refused, mut served, mut guarded) = (0, 0, 0, 0);
    // Merged graphs with an scf.if (two ways of one branch) and with an
    // scf.index_switch: both forms are exercised.
    let (mut ifs, mut switches) = (0, 0);
    for case in 0..150 {
        let mut sites = 0;
        let program = block(&mut rng, 0, &mut sites);
        let inputs: Vec<Tensor> = (0..10)
            .map(|k| random(&[4], (case * 100 + k + 1) as u64))
            .collect();
        let (traced, fresh) = inputs.split_at(2 + rng.below(3));
        // Trace on each traced input's path, recording on one input value.
        let placeholder = Var::new(traced[0].clone());
        let mut paths: Vec<Vec<bool>> = Vec::new();
        let mut recorded = Vec::new();
        for x in traced {
            let (_, ways, _) = run(&program, &Var::new(x.clone()), None);
            let (out, _, decisions) = run(&program, &placeholder, Some(&ways));
            paths.push(ways);
            recorded.push((out, decisions));
        }
        let traces: Vec<(Vec<&Var>, Vec<&Var>)> = recorded
            .iter()
            .map(|(out, decisions)| (vec![out], decisions.iter().collect()))
            .collect();
        let staged = match graph::stage_merged(&[&placeholder], &traces, &StateBinding::default()) {
            Ok(staged) => staged,
            Err(e) => {
                let message = e.to_string();
                assert!(
                    message.contains("the traces do not merge"),
                    "case {case}: {message}\n{program:?}"
                );
                refused += 1;
                continue;
            }
        };
        merged += 1;
        let text = staged.text();
        ifs += usize::from(text.contains("scf.if"));
        switches += usize::from(text.contains("scf.index_switch"));
        for x in traced.iter().chain(fresh) {
            let (want, ways, _) = run(&program, &Var::new(x.clone()), None);
            let want = bits(&want.fetch().unwrap());
            match staged.call(&[&Var::new(x.clone())]) {
                Ok(outputs) => {
                    assert_eq!(
                        bits(&outputs[0].fetch().unwrap()),
                        want,
                        "case {case}: the merged graph differs on {x:?}\n{program:?}"
                    );
                    served += 1;
                }
                Err(e) => {
                    // Only a path no trace took may fail, and only a guard.
                    assert!(
                        !paths.contains(&ways),
                        "case {case}: a traced path failed: {e}\n{program:?}"
                    );
                    assert!(e.to_string().contains("guard"), "case {case}: {e}");
                    guarded += 1;
                }
            }
        }
    }
    eprintln!(
        "merged {merged} ({ifs} with scf.if, {switches} with scf.index_switch), refused {refused}; \
         calls served {served}, guarded {guarded}"
    );
    assert!(merged > refused, "merged {merged}, refused {refused}");
    assert!(
        ifs > 0 && switches > 0,
        "scf.if in {ifs}, scf.index_switch in {switches}"
    );
    assert!(served > 0 && guarded > 0, "served {served}, guarded {guarded}");
}
