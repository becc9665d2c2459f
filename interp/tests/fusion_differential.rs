//! Fusion never changes results, and no group breaks a rule: a few hundred
//! random meta-op DAGs per run, interpreted before and after `meta-fuse`.

use jitc_compiler::{
    DiagnosticCollector, OptimizeOptions, Pipeline,
    explain::{self as fusion, Blocked, NodeKind},
    new_context, optimize, parse_module,
};
use jitc_interp::{Interpreter, StateStore, Tensor, Value};
use melior::ir::{BlockLike, OperationRef, RegionLike, ValueLike, operation::OperationLike};
use proptest::prelude::*;

use jitc_test_support::Rng;

/// A random program over a full shape `a x b` and a reduced shape `a`.
struct Program {
    text: String,
    inputs: Vec<Tensor>,
}

fn generate(seed: u64) -> Program {
    let mut rng = Rng(seed.max(1));
    let a = [1, 2, 3, 5][rng.below(4)];
    let b = [1, 2, 4, 7][rng.below(4)];
    let full = format!("tensor<{a}x{b}xf32>");
    let reduced = format!("tensor<{a}xf32>");
    // Values by shape class: (name, is_full).
    let mut values: Vec<(String, bool)> =
        vec![("%x".into(), true), ("%y".into(), true), ("%r".into(), false)];
    let mut body = String::new();
    let ops = 4 + rng.below(20);
    for i in 0..ops {
        let stop = if rng.below(12) == 0 { ", stop_fuse" } else { "" };
        let pick = |rng: &mut Rng, values: &[(String, bool)], full: bool| -> String {
            let candidates: Vec<&String> = values.iter().filter(|v| v.1 == full).map(|v| &v.0).collect();
            // Prefer recent values, to grow chains.
            let n = candidates.len();
            let index = if rng.below(3) == 0 {
                rng.below(n)
            } else {
                n - 1 - rng.below(n.min(3))
            };
            candidates[index].clone()
        };
        let name = format!("%v{i}");
        match rng.below(7) {
            0 | 1 => {
                let is_full = rng.below(4) != 0;
                let ty = if is_full { &full } else { &reduced };
                let kind = ["neg", "abs", "tanh", "sigmoid", "floor"][rng.below(5)];
                let operand = pick(&mut rng, &values, is_full);
                body += &format!(
                    "  {name} = \"meta.unary\"({operand}) {{kind = \"{kind}\"{stop}}} : ({ty}) -> {ty}\n"
                );
                values.push((name, is_full));
            }
            2 | 3 => {
                let is_full = rng.below(4) != 0;
                let ty = if is_full { &full } else { &reduced };
                let kind = ["add", "sub", "mul", "max", "min"][rng.below(5)];
                let (l, r) = (pick(&mut rng, &values, is_full), pick(&mut rng, &values, is_full));
                body += &format!(
                    "  {name} = \"meta.binary\"({l}, {r}) {{kind = \"{kind}\"{stop}}} : ({ty}, {ty}) -> {ty}\n"
                );
                values.push((name, is_full));
            }
            4 => {
                let kind = ["add", "max", "min", "mul"][rng.below(4)];
                let operand = pick(&mut rng, &values, true);
                body += &format!(
                    "  {name} = \"meta.reindex_reduce\"({operand}) {{kind = \"{kind}\", indices = affine_map<(d0, d1) -> (d0)>{stop}}} : ({full}) -> {reduced}\n"
                );
                values.push((name, false));
            }
            5 => {
                let operand = pick(&mut rng, &values, false);
                body += &format!(
                    "  {name} = \"meta.reindex\"({operand}) {{indices = affine_map<(d0, d1) -> (d0)>{stop}}} : ({reduced}) -> {full}\n"
                );
                values.push((name, true));
            }
            _ => {
                let operand = pick(&mut rng, &values, true);
                let map = [
                    "(d0, d1) -> (d0, d1 - 1)",
                    "(d0, d1) -> (d0, -d1 + 1)",
                    "(d0, d1) -> (d0, d1)",
                ][rng.below(3)];
                body += &format!(
                    "  {name} = \"meta.reindex\"({operand}) {{indices = affine_map<{map}>, overflow_value = 0.5 : f32{stop}}} : ({full}) -> {full}\n"
                );
                values.push((name, true));
            }
        }
    }
    // Return the last value of each shape class, and a random middle one.
    let last_full = values.iter().rev().find(|v| v.1).map(|v| v.0.clone()).unwrap();
    let last_reduced = values.iter().rev().find(|v| !v.1).map(|v| v.0.clone()).unwrap();
    let middle = values[rng.below(values.len())].clone();
    let middle_ty = if middle.1 { &full } else { &reduced };
    body += &format!(
        "  return {last_full}, {last_reduced}, {} : {full}, {reduced}, {middle_ty}\n",
        middle.0
    );
    let text = format!(
        "func.func @main(%x: {full}, %y: {full}, %r: {reduced}) -> ({full}, {reduced}, {middle_ty}) {{\n{body}}}\n"
    );
    let mut literal = |n: usize, shape: &str| {
        let values: Vec<String> = (0..n)
            .map(|_| format!("{}", (rng.below(41) as f32 - 20.0) / 8.0))
            .collect();
        Tensor::parse_literal(&format!("{shape}xf32={}", values.join(" "))).unwrap()
    };
    let inputs = vec![
        literal(a * b, &format!("{a}x{b}")),
        literal(a * b, &format!("{a}x{b}")),
        literal(a, &a.to_string()),
    ];
    Program { text, inputs }
}

fn run(module: &melior::ir::Module, inputs: &[Tensor]) -> Vec<String> {
    let interpreter = Interpreter::new(module);
    let args = inputs.iter().cloned().map(Value::tensor).collect();
    interpreter
        .run("main", args, &mut StateStore::new())
        .expect("the program runs")
        .iter()
        .map(ToString::to_string)
        .collect()
}

fn name(op: OperationRef) -> String {
    op.name().as_string_ref().as_str().unwrap_or("").to_owned()
}

/// Checks every kernel of a fused module against rules 1 and 2, `stop_fuse`
/// and its recorded domain.
fn check_kernels(module: &melior::ir::Module) -> Result<(), String> {
    for function in fusion::block_ops(module.body()) {
        if !function.has_attribute("meta.fused") {
            continue;
        }
        let body = function.region(0).unwrap().first_block().unwrap();
        let ops = fusion::block_ops(body);
        let domain = function.attribute("meta.domain").unwrap().to_string();
        for op in &ops {
            let is_argument = |v: melior::ir::Value| v.is_block_argument();
            match fusion::kind_of(*op) {
                NodeKind::Reindex if !is_argument(op.operand(0).unwrap()) => {
                    return Err(format!("rule 1: a reindex absorbs its producer in {function}"));
                }
                NodeKind::Reduce => {
                    let result: melior::ir::Value = op.result(0).unwrap().into();
                    // SAFETY: walking the uses of a live value.
                    let only_returned = unsafe {
                        let mut operand = mlir_sys::mlirValueGetFirstUse(result.to_raw());
                        let mut ok = true;
                        while !mlir_sys::mlirOpOperandIsNull(operand) {
                            let owner = OperationRef::from_raw(mlir_sys::mlirOpOperandGetOwner(operand));
                            ok &= name(owner) == "func.return";
                            operand = mlir_sys::mlirOpOperandGetNextUse(operand);
                        }
                        ok
                    };
                    if !only_returned {
                        return Err(format!(
                            "rule 2: a reduction feeds an op of its own kernel in {function}"
                        ));
                    }
                }
                _ => {}
            }
            if op.has_attribute("stop_fuse") && ops.len() > 1 {
                return Err(format!("a stop_fuse op shares a kernel in {function}"));
            }
            let op_domain = match fusion::kind_of(*op) {
                NodeKind::Reduce => op.operand(0).unwrap().r#type().to_string(),
                _ => op.result(0).unwrap().r#type().to_string(),
            };
            let dims: String = domain
                .trim_start_matches("array<i64: ")
                .trim_end_matches('>')
                .replace(", ", "x");
            if !op_domain.starts_with(&format!("tensor<{dims}x")) {
                return Err(format!(
                    "{op_domain} does not iterate the kernel's domain {domain}"
                ));
            }
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    #[test]
    fn fusion_preserves_results_and_rules(seed in any::<u64>(), fanout in 1usize..5) {
        let program = generate(seed);
        let context = new_context().unwrap();
        let collector = DiagnosticCollector::attach(&context);
        let mut module = parse_module(&context, &program.text).expect("generated programs parse");
        optimize(&context, &mut module, &Pipeline::default(), &OptimizeOptions::default())
            .unwrap_or_else(|_| panic!("{:?}\n{}", collector.take(), program.text));
        let before = run(&module, &program.inputs);

        // The plan itself: groups form a DAG and blocked edges carry a rule.
        let entry = module.body().first_operation().unwrap().region(0).unwrap().first_block().unwrap();
        let plan = fusion::plan_block(&fusion::all_ops(entry), fusion::Options { fanout_limit: fanout, labels: false, ..fusion::Options::default() });
        let mut groups = petgraph::graph::DiGraph::<(), ()>::new();
        let nodes: Vec<_> = plan.groups.iter().map(|_| groups.add_node(())).collect();
        for edge in &plan.edges {
            if let (Some(a), Some(b)) = (plan.group_of[edge.from], plan.group_of[edge.to]) && a != b {
                groups.add_edge(nodes[a], nodes[b], ());
            }
            prop_assert!(edge.blocked.is_some() || plan.group_of[edge.from] == plan.group_of[edge.to]);
            if edge.blocked == Some(Blocked::FanOut) {
                let consumers = plan.edges.iter().filter(|e| e.from == edge.from).count();
                prop_assert!(consumers > fanout, "fan-out blocked an edge of a value with {consumers} consumers");
            }
        }
        prop_assert!(petgraph::algo::toposort(&groups, None).is_ok(), "rule 3: the group graph has a cycle");

        let passes = Pipeline::parse(&format!("builtin.module(meta-fuse{{fanout-limit={fanout}}})")).unwrap();
        optimize(&context, &mut module, &passes, &OptimizeOptions::default())
            .unwrap_or_else(|_| panic!("meta-fuse failed: {:?}\n{}", collector.take(), program.text));
        prop_assert!(module.as_operation().verify());
        let after = run(&module, &program.inputs);
        prop_assert_eq!(&before, &after, "fusion changed results of\n{}\ninto\n{}", program.text, module.as_operation());
        if let Err(problem) = check_kernels(&module) {
            prop_assert!(false, "{problem}\n{}", module.as_operation());
        }
    }
}
