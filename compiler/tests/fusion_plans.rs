//! Snapshots of the fusion plans `jitc explain` prints for the examples.

use jitc_compiler::{
    DiagnosticCollector,
    explain::blocks_with_fusable_ops,
    explain::{self as fusion},
    new_context, parse_module,
};

fn plan_text(example: &str) -> String {
    let source = jitc_test_support::example(example);
    let context = new_context().expect("context");
    let collector = DiagnosticCollector::attach(&context);
    let module = parse_module(&context, &source).unwrap_or_else(|| panic!("{:?}", collector.take()));
    let mut text = String::new();
    for function in fusion::block_ops(module.body()) {
        for block in blocks_with_fusable_ops(function) {
            let plan = fusion::prepare_and_plan(block, fusion::Options::default());
            text += &fusion::text(example, &plan);
        }
    }
    text
}

#[test]
fn conv_plan() {
    insta::assert_snapshot!(plan_text("conv.mlir"));
}

#[test]
fn instance_norm_plan() {
    insta::assert_snapshot!(plan_text("instance_norm.mlir"));
}

#[test]
fn sigmoid_plan() {
    insta::assert_snapshot!(plan_text("sigmoid.mlir"));
}

#[test]
fn softmax_plan() {
    insta::assert_snapshot!(plan_text("softmax.mlir"));
}

#[test]
fn mlp_plan() {
    insta::assert_snapshot!(plan_text("mlp.mlir"));
}

#[test]
fn rnn_plan() {
    insta::assert_snapshot!(plan_text("rnn.mlir"));
}
