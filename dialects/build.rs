//! Builds `libMLIR-C.so`, the shared MLIR C API that `mlir-sys` links in shared
//! mode.
//!
//! Debian ships `libMLIR.so` but only static archives of the C API
//! (`libMLIRCAPI*.a`). Linking those archives whole into one shared object,
//! against `libMLIR` and `libLLVM`, keeps exactly one LLVM in the process: the
//! same `libLLVM.so.22.1` that inkwell loads (see `shared/TOOLCHAIN.md`).
//!
//! Dependent crates read the library's folder from `DEP_JITC_MLIR_CAPI_LIBDIR`
//! and `DEP_JITC_MLIR_CAPI_LLVM_LIBDIR` to set their rpaths.

use std::{env, fs, path::PathBuf, process::Command};

fn main() {
    if let Err(message) = run() {
        eprintln!("error: {message}");
        std::process::exit(1);
    }
}

fn run() -> Result<(), String> {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=MLIR_SYS_220_PREFIX");
    println!("cargo:rerun-if-env-changed=CXX");

    let prefix = env::var("MLIR_SYS_220_PREFIX").unwrap_or_else(|_| "/usr/lib/llvm-22".into());
    let llvm_lib = PathBuf::from(&prefix).join("lib");
    let out = PathBuf::from(env::var("OUT_DIR").map_err(|e| e.to_string())?);

    let mut archives: Vec<PathBuf> = fs::read_dir(&llvm_lib)
        .map_err(|e| {
            format!(
                "cannot read {}: {e}; run scripts/setup.sh to install LLVM/MLIR 22",
                llvm_lib.display()
            )
        })?
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|path| {
            path.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("libMLIRCAPI") && n.ends_with(".a"))
        })
        .collect();
    archives.sort();
    if archives.is_empty() {
        return Err(format!(
            "no libMLIRCAPI*.a in {}; install libmlir-22-dev (scripts/setup.sh)",
            llvm_lib.display()
        ));
    }
    for archive in &archives {
        println!("cargo:rerun-if-changed={}", archive.display());
    }

    let library = out.join("libMLIR-C.so");
    let cxx = env::var("CXX").unwrap_or_else(|_| "c++".into());
    let status = Command::new(&cxx)
        .arg("-shared")
        .arg("-o")
        .arg(&library)
        .arg("-Wl,-soname,libMLIR-C.so")
        .arg("-Wl,--whole-archive")
        .args(&archives)
        .arg("-Wl,--no-whole-archive")
        .arg(format!("-L{}", llvm_lib.display()))
        .args(["-lMLIR", "-lLLVM", "-Wl,--no-undefined"])
        .arg(format!("-Wl,-rpath,{}", llvm_lib.display()))
        .status()
        .map_err(|e| format!("cannot run the C++ linker `{cxx}`: {e}"))?;
    if !status.success() {
        return Err(format!("linking {} failed ({status})", library.display()));
    }

    println!("cargo:rustc-link-search=native={}", out.display());
    println!("cargo:libdir={}", out.display());
    println!("cargo:llvm_libdir={}", llvm_lib.display());
    // This crate's own tests need the rpaths too; dependents set theirs from
    // the `DEP_JITC_MLIR_CAPI_*` variables.
    println!("cargo:rustc-link-arg=-Wl,-rpath,{}", out.display());
    println!("cargo:rustc-link-arg=-Wl,-rpath,{}", llvm_lib.display());
    Ok(())
}
