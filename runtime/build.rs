//! Build script of jitc-runtime: the rpaths of every crate that links MLIR
//! (`../dialects/rpath.rs`), and `JITC_BUILD_ID`, a hash of the sources
//! that decide compiled code and the disk cache's format (the compiler,
//! the dialect, the runtime and the locked dependency versions). The disk
//! cache keys entries by it, so a rebuilt jitc never loads what another
//! build compiled, even when the version number did not change.

#[path = "../dialects/rpath.rs"]
mod rpath;

use std::{
    hash::{DefaultHasher, Hasher},
    path::{Path, PathBuf},
};

const SOURCES: [&str; 6] = [
    "../compiler/src",
    "../dialects/src",
    "../dialects/irdl",
    "../runtime/src",
    "../Cargo.lock",
    "../python/Cargo.lock",
];

fn main() {
    rpath::main();
    let mut files = Vec::new();
    for source in SOURCES {
        println!("cargo:rerun-if-changed={source}");
        collect(Path::new(source), &mut files);
    }
    files.sort();
    let mut hasher = DefaultHasher::new();
    for file in &files {
        hasher.write(file.to_string_lossy().as_bytes());
        hasher.write(&std::fs::read(file).unwrap_or_default());
    }
    println!(
        "cargo:rustc-env=JITC_BUILD_ID={}-{:016x}",
        std::env::var("CARGO_PKG_VERSION").unwrap_or_default(),
        hasher.finish()
    );
}

/// Every file under `path` (or `path` itself).
fn collect(path: &Path, files: &mut Vec<PathBuf>) {
    if path.is_file() {
        files.push(path.to_owned());
    } else if let Ok(entries) = std::fs::read_dir(path) {
        for entry in entries.flatten() {
            collect(&entry.path(), files);
        }
    }
}
