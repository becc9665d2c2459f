//! Builders produce ops in the textual contract that pass both verifiers,
//! and the typed views read back what the builders put in.

use jitc_dialect::{
    kinds::{BinaryKind, ReduceKind, TernaryKind, UnaryKind},
    new_context,
    ops::{
        BinaryOp, GuardOp, ReindexOp, ReindexReduceOp, StateReadOp, StateWriteOp, TernaryOp, UnaryOp,
        affine_map_attribute,
    },
    verify::verify,
};
use melior::ir::{
    Attribute, BlockLike, Location, Module, RegionLike, Type, Value,
    attribute::FloatAttribute,
    operation::OperationLike,
    r#type::{IntegerType, RankedTensorType},
};

#[test]
fn builders_and_views_agree() {
    let context = new_context().expect("context");
    let module = Module::parse(
        &context,
        "func.func @f(%x: tensor<4xf32>, %ok: tensor<i1>) {\n  return\n}\n",
    )
    .expect("skeleton parses");
    let function = module.body().first_operation().expect("a function");
    let block = function.region(0).unwrap().first_block().unwrap();
    let ret = block.terminator().unwrap();
    let x: Value = block.argument(0).unwrap().into();
    let ok: Value = block.argument(1).unwrap().into();
    let location = Location::unknown(&context);
    let f32 = Type::float32(&context);
    let i1: Type = IntegerType::new(&context, 1).into();
    let t4: Type = RankedTensorType::new(&[4], f32, None).into();
    let t34: Type = RankedTensorType::new(&[3, 4], f32, None).into();
    let t3: Type = RankedTensorType::new(&[3], f32, None).into();
    let b4: Type = RankedTensorType::new(&[4], i1, None).into();
    let map = |text: &str| affine_map_attribute(Attribute::parse(&context, text).unwrap()).unwrap();
    let broadcast = map("affine_map<(d0, d1) -> (d1)>");
    let rows = map("affine_map<(d0, d1) -> (d0)>");
    let zero: Attribute = FloatAttribute::new(&context, f32, 0.0).into();

    let b = block.insert_operation_before(
        ret,
        ReindexOp::build(&context, location, x, t34, broadcast, Some(zero), &[]).unwrap(),
    );
    let s = block.insert_operation_before(
        ret,
        ReindexReduceOp::build(
            &context,
            location,
            ReduceKind::Max,
            b.result(0).unwrap().into(),
            t3,
            rows,
            &[],
        )
        .unwrap(),
    );
    let e = block.insert_operation_before(
        ret,
        UnaryOp::build(&context, location, UnaryKind::Exp, x, t4).unwrap(),
    );
    let e_value: Value = e.result(0).unwrap().into();
    let l = block.insert_operation_before(
        ret,
        BinaryOp::build(&context, location, BinaryKind::Lt, x, e_value, b4).unwrap(),
    );
    let z = block.insert_operation_before(
        ret,
        TernaryOp::build(
            &context,
            location,
            TernaryKind::Select,
            [l.result(0).unwrap().into(), x, e_value],
            t4,
        )
        .unwrap(),
    );
    let g = block.insert_operation_before(ret, GuardOp::build(&context, location, ok, 7, "x < e^x").unwrap());
    let r = block.insert_operation_before(ret, StateReadOp::build(&context, location, "rnn.h", t4).unwrap());
    let w = block.insert_operation_before(
        ret,
        StateWriteOp::build(&context, location, "rnn.h", z.result(0).unwrap().into()).unwrap(),
    );

    assert!(
        module.as_operation().verify(),
        "IRDL accepts the built ops:\n{}",
        module.as_operation()
    );
    assert!(
        verify(module.as_operation()),
        "the semantic verifier accepts them"
    );

    let reindex = ReindexOp::cast(b).unwrap();
    assert_eq!(reindex.indices(), Some(broadcast));
    assert_eq!(reindex.overflow_value(), Some(zero));
    assert!(reindex.overflow_conditions().is_none());
    assert!(reindex.index_operands().is_empty());
    assert_eq!(ReindexReduceOp::cast(s).unwrap().kind(), Some(ReduceKind::Max));
    assert_eq!(UnaryOp::cast(e).unwrap().kind(), Some(UnaryKind::Exp));
    assert_eq!(BinaryOp::cast(l).unwrap().kind(), Some(BinaryKind::Lt));
    assert_eq!(TernaryOp::cast(z).unwrap().kind(), Some(TernaryKind::Select));
    let guard = GuardOp::cast(g).unwrap();
    assert_eq!((guard.id(), guard.reason()), (Some(7), Some("x < e^x")));
    assert_eq!(StateReadOp::cast(r).unwrap().state_name(), Some("rnn.h"));
    assert_eq!(StateWriteOp::cast(w).unwrap().state_name(), Some("rnn.h"));
    assert!(UnaryOp::cast(b).is_none(), "views check the op name");

    let text = module.as_operation().to_string();
    for spelling in [
        r#""meta.reindex"(%arg0) {indices = #map, overflow_value = 0.000000e+00 : f32} : (tensor<4xf32>) -> tensor<3x4xf32>"#,
        r#"{indices = #map1, kind = "max"} : (tensor<3x4xf32>) -> tensor<3xf32>"#,
        r#""meta.guard"(%arg1) {id = 7 : i64, reason = "x < e^x"} : (tensor<i1>) -> ()"#,
        r#""meta.state_read"() {name = "rnn.h"} : () -> tensor<4xf32>"#,
    ] {
        assert!(text.contains(spelling), "missing {spelling} in:\n{text}");
    }
}
