//! `JITC_DUMP_DIR` makes every fetch of the lazy graph write its dump,
//! numbered in order. (Its own test binary: the variable is read by every
//! fetch of the process.)

use jitc_interp::{Scalar, Tensor};
use jitc_runtime::graph::Var;

#[test]
fn every_fetch_is_dumped_when_asked() {
    let dir = std::env::temp_dir().join(format!("jitc-dump-env-{}", std::process::id()));
    // SAFETY: no other thread of this test binary reads the environment.
    unsafe { std::env::set_var("JITC_DUMP_DIR", &dir) };
    let x = Var::new(Tensor::splat(vec![4], Scalar::F32(1.0)));
    let y = x.unary("exp").unwrap();
    y.fetch().unwrap();
    let z = y.unary("neg").unwrap();
    z.fetch().unwrap();
    // Computed already: nothing runs, nothing is dumped.
    z.fetch().unwrap();
    for (number, op) in [
        (0, "meta.unary\"(%a0) {kind = \"exp\"}"),
        (1, "meta.unary\"(%a0) {kind = \"neg\"}"),
    ] {
        let text = std::fs::read_to_string(dir.join(format!("fetch-{number}/fetch.mlir"))).unwrap();
        assert!(
            text.starts_with("// jitc run fetch.mlir --input @input0.npy\n"),
            "{text}"
        );
        assert!(text.contains(op), "{text}");
        assert!(dir.join(format!("fetch-{number}/input0.npy")).exists());
    }
    assert!(!dir.join("fetch-2").exists());
    std::fs::remove_dir_all(&dir).unwrap();
}
