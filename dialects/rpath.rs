//! Build script shared by every crate that links MLIR through
//! `jitc-dialect`: sets the rpaths that let its binaries and tests find
//! `libMLIR-C.so` (built by `dialects/build.rs`) and LLVM 22's libraries.
//!
//! Cargo passes `DEP_JITC_MLIR_CAPI_*` only to direct dependents of
//! `jitc-dialect`, so each such crate names this file as its `build`.

/// Sets the rpaths (the whole build script of most crates; part of
/// jitc-runtime's).
pub fn main() {
    for key in ["DEP_JITC_MLIR_CAPI_LIBDIR", "DEP_JITC_MLIR_CAPI_LLVM_LIBDIR"] {
        println!("cargo:rerun-if-env-changed={key}");
        match std::env::var(key) {
            Ok(dir) => println!("cargo:rustc-link-arg=-Wl,-rpath,{dir}"),
            Err(_) => {
                eprintln!("error: {key} is not set; this crate must depend on jitc-dialect directly");
                std::process::exit(1);
            }
        }
    }
}
