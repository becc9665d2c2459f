//! A lazy-graph fetch dumped by `jitc_runtime::graph::dump` is reproduced
//! by the command line its first line gives: `jitc run` on the dumped
//! module and inputs computes the values the fetch computed, bit for bit.

use jitc_interp::{Scalar, Tensor};
use jitc_runtime::graph::{self, Var};
use std::process::Command;

#[test]
fn jitc_run_reproduces_a_dumped_fetch() {
    let mut x = Tensor::splat(vec![3, 4], Scalar::F32(0.0));
    for k in 0..12 {
        x.buffer_mut().set(k, Scalar::F32(k as f32 / 3.0 - 2.0));
    }
    let x = Var::new(x);
    let w = Var::new(Tensor::splat(vec![4], Scalar::F32(0.5)));
    let padded = x.reindex(&[3, 6], &["i0", "i1 - 1"], Some(-1.0), &[]).unwrap();
    let wide = w.reindex(&[3, 6], &["i1 - 1"], Some(0.0), &[]).unwrap();
    let y = padded
        .binary("mul", &wide)
        .unwrap()
        .unary("tanh")
        .unwrap()
        .reindex_reduce("add", &[3], &["i0"])
        .unwrap();
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("graph-dump");
    let _ = std::fs::remove_dir_all(&dir);
    let path = graph::dump(&[&y], &dir).unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    let command = text
        .lines()
        .next()
        .unwrap()
        .strip_prefix("// ")
        .unwrap()
        .to_owned();
    let want = y.fetch().unwrap();
    // The dump's command, run in its folder, saving the last result (`y`:
    // `padded` and `wide` are held too, so they are results before it).
    let mut args: Vec<&str> = command.split(' ').skip(1).collect();
    args.extend(["--output", "@a.npy", "--output", "@b.npy", "--output", "@y.npy"]);
    let out = Command::new(env!("CARGO_BIN_EXE_jitc"))
        .args(&args)
        .current_dir(&dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let got = jitc_interp::npy::read(&dir.join("y.npy")).unwrap();
    assert_eq!(got.shape(), want.shape());
    for k in 0..want.len() {
        assert_eq!(got.get(k), want.get(k), "element {k}");
    }
}
