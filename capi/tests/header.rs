//! `include/jitc.h` is what cbindgen generates from `src/lib.rs` with
//! `cbindgen.toml`; `JITC_BLESS=1` rewrites it after an intended change.

use std::path::Path;

#[test]
fn the_checked_in_header_is_up_to_date() {
    let crate_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let config = cbindgen::Config::from_file(crate_dir.join("cbindgen.toml")).expect("cbindgen.toml reads");
    let mut generated = Vec::new();
    cbindgen::Builder::new()
        .with_config(config)
        .with_src(crate_dir.join("src/lib.rs"))
        .generate()
        .expect("cbindgen generates the header")
        .write(&mut generated);
    let path = crate_dir.join("include/jitc.h");
    if std::env::var_os("JITC_BLESS").is_some() {
        std::fs::write(&path, &generated).expect("the header writes");
        return;
    }
    let checked_in = std::fs::read(&path).unwrap_or_default();
    assert!(
        checked_in == generated,
        "include/jitc.h is out of date with src/lib.rs; regenerate it with \
         JITC_BLESS=1 cargo test -p jitc-capi --test header"
    );
}
