//! The disk cache of compiled code, across processes of the `jitc`
//! binary: hits in a second process, bad entries detected and rebuilt, a
//! writer killed mid-write, racing writers, eviction, and `jitc cache
//! explain` naming the part of the key that differs.

use std::{
    path::{Path, PathBuf},
    process::{Command, Output},
};

const SOFTMAX: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../examples/softmax.mlir");
/// A softmax input whose rows differ.
const SOFTMAX_INPUT: &str =
    "4x8xf32=[1 2 3 4 5 6 7 8][8 7 6 5 4 3 2 1][0 0 0 0 1 1 1 1][-1 -2 -3 -4 -5 -6 -7 -8]";
const SIGMOID: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../examples/sigmoid.mlir");

/// Runs `jitc` with the disk cache in `cache`.
fn jitc(cache: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_jitc"))
        .args(args)
        .env("JITC_CACHE_DIR", cache)
        .env_remove("JITC_CACHE")
        .env_remove("JITC_CACHE_MAX_BYTES")
        .envs(env.iter().copied())
        .output()
        .expect("jitc starts")
}

/// `jitc run` of the softmax example with `--timings`: its stdout, and its
/// stderr (which says where the code came from).
fn run_softmax(cache: &Path, extra: &[&str], env: &[(&str, &str)]) -> (String, String) {
    let mut args = vec!["run", SOFTMAX, "--input", SOFTMAX_INPUT, "--timings"];
    args.extend(extra);
    let out = jitc(cache, &args, env);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "jitc run failed: {stderr}");
    (String::from_utf8_lossy(&out.stdout).into_owned(), stderr)
}

fn loaded(stderr: &str) -> bool {
    stderr.contains("the code was loaded from the disk cache")
}

fn compiled(stderr: &str) -> bool {
    stderr.contains("the code was compiled")
}

fn entries(cache: &Path) -> Vec<PathBuf> {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(cache)
        .map(|dir| {
            dir.flatten()
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|x| x == "entry"))
                .collect()
        })
        .unwrap_or_default();
    entries.sort();
    entries
}

fn stats(cache: &Path) -> String {
    let out = jitc(cache, &["cache", "stats"], &[]);
    assert!(out.status.success());
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn a_second_process_loads_the_code_and_runs_no_llvm() {
    let cache = tempfile::tempdir().unwrap();
    let (first, stderr) = run_softmax(cache.path(), &[], &[]);
    assert!(compiled(&stderr), "{stderr}");
    assert!(stderr.contains("LLVM default<O3>"), "{stderr}");
    let (second, stderr) = run_softmax(cache.path(), &[], &[]);
    assert!(loaded(&stderr), "{stderr}");
    for phase in [
        "fuse",
        "lower kernels",
        "convert to the LLVM dialect",
        "LLVM default<O3>",
        "machine code",
    ] {
        assert!(!stderr.contains(phase), "a hit ran '{phase}': {stderr}");
    }
    assert_eq!(first, second);
    let stats = stats(cache.path());
    assert!(stats.contains("entries: 1\n"), "{stats}");
    assert!(
        stats.contains("hits: 1\n") && stats.contains("misses: 1\n"),
        "{stats}"
    );
}

#[test]
fn a_corrupt_truncated_or_foreign_entry_is_rebuilt_and_never_loaded() {
    let cache = tempfile::tempdir().unwrap();
    let (expected, _) = run_softmax(cache.path(), &[], &[]);
    let entry = entries(cache.path()).pop().expect("an entry");
    let good = std::fs::read(&entry).unwrap();

    // One byte flipped in the object code, a file cut in half, a file that
    // is no entry at all.
    let mut flipped = good.clone();
    let last = flipped.len() - 100;
    flipped[last] ^= 0x40;
    let cases: [(&str, Vec<u8>, &str); 3] = [
        ("flipped", flipped, "fails its checksum"),
        ("truncated", good[..good.len() / 2].to_vec(), "fails its checksum"),
        ("garbage", b"not an entry".to_vec(), "is not a jitc cache entry"),
    ];
    for (what, bytes, problem) in cases {
        std::fs::write(&entry, bytes).unwrap();
        let (output, stderr) = run_softmax(cache.path(), &[], &[]);
        assert_eq!(output, expected, "{what}");
        assert!(compiled(&stderr), "{what}: {stderr}");
        assert_eq!(
            stderr.matches("jitc: warning: the cache entry").count(),
            1,
            "{what}: {stderr}"
        );
        assert!(stderr.contains(problem), "{what}: {stderr}");
        // Rebuilt: the next process loads it, with no warning.
        let (_, stderr) = run_softmax(cache.path(), &[], &[]);
        assert!(loaded(&stderr) && !stderr.contains("warning"), "{what}: {stderr}");
    }

    // A whole, valid entry of another program under this program's name.
    run_sigmoid(cache.path());
    let other = entries(cache.path())
        .into_iter()
        .find(|p| *p != entry)
        .expect("the sigmoid's entry");
    std::fs::copy(&other, &entry).unwrap();
    let (output, stderr) = run_softmax(cache.path(), &[], &[]);
    assert_eq!(output, expected);
    assert!(
        compiled(&stderr) && stderr.contains("belongs to another key"),
        "{stderr}"
    );
}

fn run_sigmoid(cache: &Path) -> Output {
    let out = jitc(cache, &["run", SIGMOID, "--input", "1024xf32=0.5"], &[]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    out
}

#[test]
fn a_writer_killed_mid_write_leaves_no_entry_that_loads() {
    let cache = tempfile::tempdir().unwrap();
    let args = ["run", SOFTMAX, "--input", "4x8xf32=1"];
    let killed = jitc(cache.path(), &args, &[("JITC_CACHE_FAULT", "abort-mid-write")]);
    if !cfg!(debug_assertions) {
        // The fault is injected in debug builds only.
        return;
    }
    assert!(!killed.status.success(), "the writer was to die mid-write");
    assert!(
        entries(cache.path()).is_empty(),
        "a half-written entry is visible"
    );
    let strays = std::fs::read_dir(cache.path()).unwrap().count();
    assert!(strays >= 1, "the dead writer's temporary file is left");
    let (expected, stderr) = run_softmax(cache.path(), &[], &[]);
    assert!(compiled(&stderr) && !stderr.contains("warning"), "{stderr}");
    let (output, stderr) = run_softmax(cache.path(), &[], &[]);
    assert!(loaded(&stderr), "{stderr}");
    assert_eq!(output, expected);
    let out = jitc(cache.path(), &["cache", "clear"], &[]);
    assert!(out.status.success());
    assert_eq!(
        std::fs::read_dir(cache.path()).unwrap().count(),
        0,
        "clear leaves nothing"
    );
}

#[test]
fn processes_racing_on_one_key_all_succeed() {
    // Four processes started before any finishes compile and store the
    // same key at once.
    let cache = tempfile::tempdir().unwrap();
    let children: Vec<_> = (0..4)
        .map(|_| {
            Command::new(env!("CARGO_BIN_EXE_jitc"))
                .args(["run", SIGMOID, "--input", "1024xf32=0.5"])
                .env("JITC_CACHE_DIR", cache.path())
                .env_remove("JITC_CACHE")
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .expect("jitc starts")
        })
        .collect();
    let outputs: Vec<Output> = children
        .into_iter()
        .map(|c| c.wait_with_output().expect("jitc finishes"))
        .collect();
    for out in &outputs {
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        assert!(out.stderr.is_empty(), "{}", String::from_utf8_lossy(&out.stderr));
        assert_eq!(out.stdout, outputs[0].stdout);
    }
    assert_eq!(entries(cache.path()).len(), 1);
    let again = jitc(
        cache.path(),
        &["run", SIGMOID, "--input", "1024xf32=0.5", "--timings"],
        &[],
    );
    assert!(loaded(&String::from_utf8_lossy(&again.stderr)));
    assert_eq!(again.stdout, outputs[0].stdout);
}

#[test]
fn the_entries_used_least_recently_go_first_past_the_limit() {
    let cache = tempfile::tempdir().unwrap();
    run_sigmoid(cache.path());
    let sigmoid = entries(cache.path()).pop().unwrap();
    let size = std::fs::metadata(&sigmoid).unwrap().len();
    // Room for the softmax's entry and not for both.
    let softmax_size = {
        let scratch = tempfile::tempdir().unwrap();
        run_softmax(scratch.path(), &[], &[]);
        std::fs::metadata(entries(scratch.path()).pop().unwrap())
            .unwrap()
            .len()
    };
    let limit = (softmax_size + size / 2).to_string();
    run_softmax(cache.path(), &[], &[("JITC_CACHE_MAX_BYTES", &limit)]);
    let left = entries(cache.path());
    assert_eq!(left.len(), 1, "{left:?}");
    assert_ne!(left[0], sigmoid, "the older entry went");
}

#[test]
fn no_cache_when_turned_off() {
    let cache = tempfile::tempdir().unwrap();
    let dir = cache.path().join("never");
    let out = jitc(
        &dir,
        &["run", SIGMOID, "--input", "1024xf32=1"],
        &[("JITC_CACHE", "0")],
    );
    assert!(out.status.success());
    assert!(!dir.exists());
    let out = jitc(&dir, &["cache", "stats"], &[("JITC_CACHE", "0")]);
    assert!(!out.status.success());
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "jitc cache: error: the disk cache is off (JITC_CACHE=0)\n"
    );
}

/// Runs the softmax twice, each process with the cache in `cache`; checks
/// that each succeeds and warns exactly once, and returns their stderr.
fn two_runs_that_warn_once(cache: &Path) -> Vec<String> {
    (0..2)
        .map(|_| {
            let out = jitc(cache, &["run", SOFTMAX, "--input", SOFTMAX_INPUT], &[]);
            let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
            assert!(out.status.success(), "{stderr}");
            assert_eq!(stderr.matches("warning").count(), 1, "{stderr}");
            stderr
        })
        .collect()
}

#[test]
fn a_cache_that_cannot_be_written_costs_a_warning_not_the_run() {
    // The cache's directory is a file: nothing can be stored, every run
    // still succeeds, and each process says so once.
    let scratch = tempfile::tempdir().unwrap();
    let file = scratch.path().join("a-file");
    std::fs::write(&file, b"not a directory").unwrap();
    for stderr in two_runs_that_warn_once(&file) {
        assert!(
            stderr.starts_with("jitc: warning: cannot store compiled code in the cache ")
                && stderr.contains("JITC_CACHE=0"),
            "{stderr}"
        );
    }
    assert_eq!(std::fs::read(&file).unwrap(), b"not a directory");
}

#[test]
fn a_size_limit_that_is_no_size_is_reported_and_the_default_kept() {
    let cache = tempfile::tempdir().unwrap();
    let out = jitc(
        cache.path(),
        &["run", SIGMOID, "--input", "1024xf32=1"],
        &[("JITC_CACHE_MAX_BYTES", "lots")],
    );
    assert!(out.status.success());
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "jitc: warning: JITC_CACHE_MAX_BYTES='lots' is not a size (bytes, or a number with K, M or G); the cache keeps its default limit of 1G\n"
    );
    assert_eq!(entries(cache.path()).len(), 1);
    // Sizes with a unit are sizes; `off` turns the cache off.
    let out = jitc(
        cache.path(),
        &["run", SOFTMAX, "--input", SOFTMAX_INPUT],
        &[("JITC_CACHE_MAX_BYTES", "64M")],
    );
    assert!(out.status.success() && out.stderr.is_empty());
    assert_eq!(entries(cache.path()).len(), 2);
    let out = jitc(cache.path(), &["cache", "stats"], &[("JITC_CACHE", "off")]);
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "jitc cache: error: the disk cache is off (JITC_CACHE=off)\n"
    );
}

#[test]
fn a_directory_others_can_write_is_not_used() {
    use std::os::unix::fs::PermissionsExt;
    // Entries are code the process runs: a cache directory anyone can
    // write in could hold an entry planted for this program's key.
    let cache = tempfile::tempdir().unwrap();
    std::fs::set_permissions(cache.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
    for stderr in two_runs_that_warn_once(cache.path()) {
        assert!(
            stderr.contains("with mode 777; jitc runs the code a cache holds"),
            "{stderr}"
        );
        assert!(entries(cache.path()).is_empty(), "an entry was stored");
    }
    // Private again, it is used.
    std::fs::set_permissions(cache.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
    let (_, stderr) = run_softmax(cache.path(), &[], &[]);
    assert!(compiled(&stderr) && !stderr.contains("warning"), "{stderr}");
    assert_eq!(entries(cache.path()).len(), 1);
}

/// `jitc cache explain`'s report.
fn explain(cache: &Path, args: &[&str]) -> String {
    let mut all = vec!["cache", "explain"];
    all.extend(args);
    let out = jitc(cache, &all, &[]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Rewrites the entry at `path` with `change` applied to its key's parts
/// (and a checksum that matches), as another build or machine would have
/// written it, under another name.
fn forge(path: &Path, change: impl Fn(&mut serde_json::Value)) -> PathBuf {
    const MAGIC: usize = 12;
    const CHECKSUM: usize = 64;
    let bytes = std::fs::read(path).unwrap();
    let body = &bytes[MAGIC + CHECKSUM..];
    let length = u64::from_le_bytes(body[..8].try_into().unwrap()) as usize;
    let mut header: serde_json::Value = serde_json::from_slice(&body[8..8 + length]).unwrap();
    change(&mut header["key"]);
    let header = serde_json::to_vec(&header).unwrap();
    let object = &body[8 + length..];
    let length = (header.len() as u64).to_le_bytes();
    let checksum = jitc_compiler::blake3_hex(&[&length, &header, object]);
    let mut forged = bytes[..MAGIC].to_vec();
    for part in [checksum.as_bytes(), &length, &header, object] {
        forged.extend_from_slice(part);
    }
    let target = path.with_file_name("forged.entry");
    std::fs::write(&target, forged).unwrap();
    target
}

#[test]
fn explain_names_the_one_part_of_the_key_that_differs() {
    let cache = tempfile::tempdir().unwrap();
    assert!(explain(cache.path(), &[SOFTMAX]).starts_with("miss: "));
    run_softmax(cache.path(), &[], &[]);
    assert!(explain(cache.path(), &[SOFTMAX]).starts_with("hit: "));

    let one_part = |report: &str, words: &str| {
        assert!(report.starts_with("miss: "), "{report}");
        assert!(report.contains("differs in 1 part:"), "{report}");
        assert!(report.contains(words), "{report}");
    };
    one_part(
        &explain(cache.path(), &[SOFTMAX, "--math", "exact"]),
        "the options differ: math: Exact here, math: Fast there",
    );
    one_part(
        &explain(cache.path(), &[SOFTMAX, "--check-bounds"]),
        "check_bounds: true here, check_bounds: false there",
    );
    one_part(
        &explain(cache.path(), &[SIGMOID]),
        "the program differs (its canonical IR, with its assumptions and locations)",
    );

    // The parts a test cannot change on this machine: another machine's
    // features, another LLVM, another build of jitc.
    let entry = entries(cache.path()).pop().unwrap();
    let cases: [(&str, &str, &str); 3] = [
        (
            "features",
            "+jitc-test-feature",
            "CPU features differ: none here, +jitc-test-feature there",
        ),
        ("llvm", "21.1.0", "the LLVM version differs: "),
        ("jitc", "0.0.0-other", "the jitc build differs: "),
    ];
    let original = std::fs::read(&entry).unwrap();
    for (part, value, words) in cases {
        let forged = forge(&entry, |key| {
            key[part] = match part {
                "features" => format!("{},{value}", key[part].as_str().unwrap()).into(),
                _ => value.into(),
            };
        });
        std::fs::remove_file(&entry).unwrap();
        one_part(&explain(cache.path(), &[SOFTMAX]), words);
        // A forged entry is never loaded: its key is another.
        let (_, stderr) = run_softmax(cache.path(), &[], &[]);
        assert!(compiled(&stderr), "{part}: {stderr}");
        std::fs::remove_file(forged).unwrap();
        std::fs::write(&entry, &original).unwrap();
    }
}

#[test]
fn explain_refuses_what_the_cache_does_not_hold() {
    let cache = tempfile::tempdir().unwrap();
    let out = jitc(
        cache.path(),
        &["cache", "explain", SOFTMAX, "--backend", "interp"],
        &[],
    );
    assert!(!out.status.success());
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "jitc cache: error: the disk cache holds CPU code; --backend interp does not use it\n"
    );
    let out = jitc(cache.path(), &["cache", "explain", "/nonexistent.mlir"], &[]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).starts_with("jitc cache: error: "));
}

#[test]
fn explain_refuses_a_function_jitc_run_would_refuse() {
    let cache = tempfile::tempdir().unwrap();
    let out = jitc(
        cache.path(),
        &["cache", "explain", SOFTMAX, "--function", "nope"],
        &[],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(
        stderr.contains("jitc cache: error: no function @nope; the module has @main"),
        "{stderr}"
    );
    // Every function of the module shares the module's entry.
    run_softmax(cache.path(), &[], &[]);
    assert!(explain(cache.path(), &[SOFTMAX, "--function", "main"]).starts_with("hit: "));
}
