//! A C program (`tests/mlp.c`) compiled with LLVM 22's clang against the
//! generated header and `libjitc.so`: an MLP forward pass and two of its
//! gradients through the C ABI agree with plain C, and bad arguments come back as statuses and
//! sentences.

use std::{path::PathBuf, process::Command};

/// Where cargo put this crate's `libjitc.so` for this test: the `deps`
/// folder that holds the test (a test build does not copy it up to
/// `target/<profile>`, as `cargo build` does).
fn library_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("the test knows its path");
    exe.parent().expect("target/<profile>/deps").to_owned()
}

/// Compiles `tests/<name>.c` against the header and this build's
/// `libjitc.so`, runs it, and returns its standard output; fails the test
/// when either fails.
fn compile_and_run(name: &str, extra: &[&str]) -> String {
    let crate_dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let libs = library_dir();
    assert!(
        libs.join("libjitc.so").exists(),
        "no libjitc.so in {}",
        libs.display()
    );
    let out_dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    let binary = out_dir.join(name);
    let clang = "/usr/lib/llvm-22/bin/clang";
    let compiled = Command::new(clang)
        .args(["-std=c11", "-Wall", "-Wextra", "-Werror", "-O1"])
        .arg("-I")
        .arg(crate_dir.join("include"))
        .arg(crate_dir.join(format!("tests/{name}.c")))
        .arg("-o")
        .arg(&binary)
        .arg("-L")
        .arg(&libs)
        .arg(format!("-Wl,-rpath,{}", libs.display()))
        .args(["-ljitc", "-lm"])
        .args(extra)
        .output()
        .expect("clang runs (scripts/setup.sh installs clang-22)");
    assert!(
        compiled.status.success(),
        "clang failed:\n{}",
        String::from_utf8_lossy(&compiled.stderr)
    );
    // Cargo's LD_LIBRARY_PATH names target/<profile> too, whose
    // libjitc.so is whatever `cargo build` last copied there, and it would
    // win over the binary's run path: point it at this build's library.
    let run = Command::new(&binary)
        .env("LD_LIBRARY_PATH", &libs)
        .output()
        .expect("the program runs");
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert!(
        run.status.success(),
        "the program failed:\n{stdout}{}",
        String::from_utf8_lossy(&run.stderr)
    );
    stdout.into_owned()
}

#[test]
fn a_c_program_runs_an_mlp_through_the_header() {
    let stdout = compile_and_run("mlp", &[]);
    assert!(stdout.starts_with("mlp: ok"), "{stdout}");
}

#[test]
fn the_c_abi_refuses_what_would_be_undefined_and_survives_atexit() {
    let stdout = compile_and_run("edges", &["-pthread"]);
    assert!(stdout.starts_with("edges: ok"), "{stdout}");
}
