//! Snapshots of the fusion plans `jitc explain` prints for the examples.

use jitc_compiler::{
    diagnostics::DiagnosticCollector,
    fusion::{self, render},
    new_context,
    source::parse_module,
    transforms::fuse::blocks_with_fusable_ops,
};
use std::path::Path;

fn plan_text(example: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../examples")
        .join(example);
    let source = std::fs::read_to_string(&path).expect("the example exists");
    let context = new_context().expect("context");
    let collector = DiagnosticCollector::attach(&context);
    let module = parse_module(&context, &source).unwrap_or_else(|| panic!("{:?}", collector.take()));
    let mut text = String::new();
    for function in fusion::block_ops(module.body()) {
        for block in blocks_with_fusable_ops(function) {
            let plan = fusion::prepare_and_plan(block, fusion::Options::default());
            text += &render::text(example, &plan);
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
