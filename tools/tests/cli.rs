//! End-to-end tests of the `jitc` binary: help text, exit codes, and
//! malformed input that must give a located diagnostic, never a crash.

use std::{
    io::Write,
    path::{Path, PathBuf},
    process::{Command, Output, Stdio},
};

fn jitc(args: &[&str], stdin: Option<&[u8]>) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_jitc"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("jitc starts");
    let mut input = child.stdin.take().expect("stdin is piped");
    input
        .write_all(stdin.unwrap_or_default())
        .expect("stdin accepts the input");
    drop(input);
    child.wait_with_output().expect("jitc finishes")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn scratch(name: &str, contents: &[u8]) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("cli");
    std::fs::create_dir_all(&dir).expect("scratch dir");
    let path = dir.join(name);
    std::fs::write(&path, contents).expect("scratch file");
    path
}

#[test]
fn top_level_help() {
    let out = jitc(&["--help"], None);
    assert!(out.status.success());
    insta::assert_snapshot!(text(&out.stdout));
}

#[test]
fn opt_help() {
    let out = jitc(&["opt", "--help"], None);
    assert!(out.status.success());
    insta::assert_snapshot!(text(&out.stdout));
}

#[test]
fn run_help() {
    let out = jitc(&["run", "--help"], None);
    assert!(out.status.success());
    insta::assert_snapshot!(text(&out.stdout));
}

#[test]
fn explain_help() {
    let out = jitc(&["explain", "--help"], None);
    assert!(out.status.success());
    insta::assert_snapshot!(text(&out.stdout));
}

#[test]
fn compile_help() {
    let out = jitc(&["compile", "--help"], None);
    assert!(out.status.success());
    insta::assert_snapshot!(text(&out.stdout));
}

#[test]
fn bench_help() {
    let out = jitc(&["bench", "--help"], None);
    assert!(out.status.success());
    insta::assert_snapshot!(text(&out.stdout));
}

#[test]
fn no_arguments_prints_help_and_fails() {
    let out = jitc(&[], None);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("Usage: jitc"));
}

/// Each case: file name, contents, and the located diagnostic it must give.
const BAD_INPUTS: &[(&str, &[u8], &str)] = &[
    ("syntax.mlir", b"func.func @f( {\n  return\n}\n", "syntax.mlir:1:14: error: expected non-function type"),
    (
        "unknown-op.mlir",
        b"func.func @f() {\n  \"meta.nope\"() : () -> ()\n  return\n}\n",
        "unknown-op.mlir:2:3: error: unregistered operation 'meta.nope'",
    ),
    (
        "wrong-attribute.mlir",
        b"func.func @f(%x: tensor<4xf32>) {\n  %0 = \"meta.unary\"(%x) {kind = 1.0 : f32} : (tensor<4xf32>) -> tensor<4xf32>\n  return\n}\n",
        "wrong-attribute.mlir:2:8: error: expected base attribute 'builtin.string' but got 'builtin.float'",
    ),
    (
        "rank.mlir",
        b"func.func @f(%x: tensor<4xf32>) {\n  %0 = \"meta.reindex\"(%x) {indices = affine_map<(d0) -> (d0, d0)>} : (tensor<4xf32>) -> tensor<4xf32>\n  return\n}\n",
        "rank.mlir:2:8: error: 'meta.reindex' op indices map has 2 results but the input has rank 1",
    ),
    ("empty.mlir", b"", "empty.mlir:1:1: error: the input is empty; expected MLIR operations"),
    ("blank.mlir", b"  \n\n", "blank.mlir:1:1: error: the input is empty"),
    ("garbage.mlir", b"\x7fELF\x02\x01\x01\0\0\xff\xfe\x80\x81 junk", "garbage.mlir:1:1: error: unexpected character"),
    ("nul.mlir", b"func.func @f() {\0}\n", "nul.mlir:1:17: error: unexpected character"),
];

#[test]
fn malformed_input_gives_located_diagnostic_and_exit_1() {
    for (name, contents, expected) in BAD_INPUTS {
        let path = scratch(name, contents);
        let out = jitc(&["opt", path.to_str().unwrap()], None);
        let stderr = text(&out.stderr);
        assert_eq!(
            out.status.code(),
            Some(1),
            "{name}: exit status {:?}, stderr:\n{stderr}",
            out.status
        );
        assert!(
            stderr.contains(expected),
            "{name}: expected {expected:?} in:\n{stderr}"
        );
        assert!(!stderr.contains("panicked"), "{name} panicked:\n{stderr}");
        assert!(out.stdout.is_empty(), "{name}: nothing is printed on error");
    }
}

#[test]
fn reads_standard_input() {
    let out = jitc(&["opt"], Some(b"func.func @from_stdin() {\n  return\n}\n"));
    assert!(out.status.success());
    assert!(text(&out.stdout).contains("func.func @from_stdin"));
    let out = jitc(&["opt", "-"], Some(b"func.func @f( {"));
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).starts_with("<stdin>:1:"));
}

#[test]
fn an_argument_that_is_not_utf8_is_refused_in_words() {
    use std::os::unix::ffi::OsStrExt;
    let bad = std::ffi::OsStr::from_bytes(b"n\xffu.mlir");
    for args in [
        vec![std::ffi::OsStr::new("run"), bad],
        vec![std::ffi::OsStr::new("opt"), bad],
        vec![bad],
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_jitc"))
            .args(&args)
            .output()
            .expect("jitc runs");
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {stderr}");
        assert!(
            stderr.contains("(n\u{fffd}u.mlir) is not valid UTF-8; jitc reads its arguments, file names included, as UTF-8"),
            "{args:?}: {stderr}"
        );
        assert!(!stderr.contains("panicked"), "{stderr}");
    }
}

#[test]
fn bench_calls_that_cannot_be_counted_are_refused() {
    let file = env!("CARGO_MANIFEST_DIR").to_owned() + "/../examples/matmul.mlir";
    for (warmup, repetitions) in [("2", "18446744073709551615"), ("18446744073709551615", "1")] {
        let out = jitc(
            &[
                "bench",
                &file,
                "--input",
                "4x3xf32=1",
                "--input",
                "3x5xf32=1",
                "--warmup",
                warmup,
                "--repetitions",
                repetitions,
            ],
            None,
        );
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{stderr}");
        assert!(
            stderr.contains(&format!(
                "--warmup {warmup} and --repetitions {repetitions} are more calls than can be counted"
            )),
            "{stderr}"
        );
    }
}

#[test]
fn jitc_num_threads_is_checked_and_capped() {
    let file = env!("CARGO_MANIFEST_DIR").to_owned() + "/../examples/matmul.mlir";
    let run = |threads: &str| {
        Command::new(env!("CARGO_BIN_EXE_jitc"))
            .args(["run", &file, "--input", "4x3xf32=1", "--input", "3x5xf32=1"])
            .env("JITC_NUM_THREADS", threads)
            .output()
            .expect("jitc runs")
    };
    for bad in ["abc", "0", "-1", ""] {
        let out = run(bad);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{bad:?}: {stderr}");
        assert!(
            stderr.contains(&format!(
                "jitc: error: JITC_NUM_THREADS must be a positive integer (threads, at most 1024 are used), not '{bad}'"
            )),
            "{stderr}"
        );
    }
    let out = run("30000");
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains("jitc: note: JITC_NUM_THREADS is 30000: kernels use at most 1024 threads"),
        "{stderr}"
    );
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(
        text(&out.stdout).contains("4x5xf32=[3 3 3 3 3]"),
        "{}",
        text(&out.stdout)
    );
}

#[test]
fn usage_errors_exit_1() {
    for args in [
        &["opt", "--no-such-flag"][..],
        &["opt", "--pass-pipeline"],
        &["frobnicate"],
    ] {
        let out = jitc(args, None);
        assert_eq!(out.status.code(), Some(1), "{args:?}");
    }
}

#[test]
fn gpu_tiles_with_check_bounds_says_it_does_nothing() {
    // Said before the GPU is looked for, so with or without one.
    let file = env!("CARGO_MANIFEST_DIR").to_owned() + "/../examples/matmul.mlir";
    let note = "--gpu-tiles does nothing with --check-bounds: tiled loads are not checked, so contractions keep one thread per output";
    for tool in ["run", "bench"] {
        let out = jitc(
            &[
                tool,
                &file,
                "--backend",
                "cuda",
                "--gpu-tiles",
                "--check-bounds",
                "--input",
                "4x3xf32=1",
                "--input",
                "3x5xf32=1",
            ],
            None,
        );
        let stderr = text(&out.stderr);
        assert!(stderr.contains(&format!("jitc {tool}: note: {note}")), "{stderr}");
    }
}

#[test]
fn explain_host_is_text_only() {
    let file = env!("CARGO_MANIFEST_DIR").to_owned() + "/../examples/softmax.mlir";
    let out = jitc(&["explain", &file, "--format", "dot", "--host"], None);
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stdout.is_empty(), "{}", text(&out.stdout));
    assert_eq!(
        text(&out.stderr),
        "jitc explain: error: --host says in text how each function's host code runs; it does not combine with --format dot\n"
    );
    let out = jitc(&["explain", &file, "--format", "text", "--host"], None);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("host code on the cpu backend:"));
}
