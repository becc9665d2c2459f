//! Reading a module from a file or standard input, for the subcommands that
//! take exactly one module (`run`, `explain`), and reading and writing
//! profiles: the tools do the I/O, the compiler takes values.

use jitc_compiler::{DiagnosticCollector, Pipeline, Profile, parse_module, render_diagnostic, verify};
use melior::{Context, ir::Module};
use std::{
    io::Read,
    path::Path,
    sync::atomic::{AtomicUsize, Ordering},
};

/// Reads `path` (or standard input for `-`): its display name and text.
/// Invalid UTF-8 becomes U+FFFD, which the lexer reports with a location.
pub fn read_source(path: &Path) -> Result<(String, String), String> {
    let mut bytes = Vec::new();
    let name = if path.as_os_str() == "-" {
        std::io::stdin()
            .read_to_end(&mut bytes)
            .map_err(|e| format!("cannot read standard input: {e}"))?;
        "<stdin>".to_owned()
    } else {
        bytes = std::fs::read(path).map_err(|e| format!("cannot read '{}': {e}", path.display()))?;
        path.display().to_string()
    };
    let text = String::from_utf8_lossy(&bytes).into_owned();
    jitc_compiler::check_nesting(&text, NESTING.load(Ordering::Relaxed))
        .map_err(|e| format!("'{name}' {e}"))?;
    Ok((name, text))
}

/// The deepest nesting of brackets of any kind (regions, dictionaries,
/// parentheses, arrays, types) jitc reads. MLIR's parser and walks and
/// jitc's interpreter recurse once per level; the tool's worker stack
/// holds this many, and a deeper file is refused in one sentence before
/// anything recurses.
pub const MAX_NESTING: usize = 10_000;

static NESTING: AtomicUsize = AtomicUsize::new(MAX_NESTING);

/// Lowers the nesting limit, for a run on a smaller stack.
pub fn limit_nesting(levels: usize) {
    NESTING.store(levels, Ordering::Relaxed);
}

/// Parses and verifies the module at `path`, printing its diagnostics to
/// stderr when it is not valid.
pub fn load_module<'c>(context: &'c Context, path: &Path) -> Result<Module<'c>, String> {
    let (name, text) = read_source(path)?;
    parse_source(context, &name, &text)
}

/// Parses and verifies `text` (read from `name`), printing its diagnostics
/// to stderr when it is not valid: for a command that needs the module more
/// than once and reads it once (standard input can be read only once).
pub fn parse_source<'c>(context: &'c Context, name: &str, text: &str) -> Result<Module<'c>, String> {
    let collector = DiagnosticCollector::attach(context);
    let module = parse_module(context, text).and_then(|module| verify(&module).ok().map(|()| module));
    module.ok_or_else(|| {
        let rendered: String = collector
            .take()
            .iter()
            .map(|d| render_diagnostic(d, name, text))
            .collect();
        eprint!("{rendered}");
        format!("'{name}' is not a valid module")
    })
}

/// Reads the profile file at `path`.
pub fn load_profile(path: &Path) -> Result<Profile, String> {
    let text =
        std::fs::read_to_string(path).map_err(|e| format!("cannot read profile {}: {e}", path.display()))?;
    Profile::from_json(&text).map_err(|e| format!("{}: {e}", path.display()))
}

/// Merges `profile` into the profile file at `path` (created when
/// missing), under a lock so that concurrent runs each add theirs, and
/// all-or-nothing.
pub fn merge_into_profile(path: &Path, profile: &Profile) -> Result<(), String> {
    crate::output::update_locked(path, |current| {
        let mut merged = match current {
            Some(text) => Profile::from_json(&text).map_err(|e| format!("{}: {e}", path.display()))?,
            None => Profile::new(),
        };
        merged
            .merge(profile)
            .map_err(|e| format!("cannot merge this run into {}: {e}", path.display()))?;
        Ok(merged.to_json() + "\n")
    })
}

/// Loads every profile file `pipeline`'s passes name into it.
pub fn load_pipeline_profiles(pipeline: &mut Pipeline) -> Result<(), String> {
    for path in pipeline.profile_paths().map_err(|e| e.to_string())? {
        let profile = load_profile(Path::new(&path))?;
        pipeline.provide_profile(&path, profile);
    }
    Ok(())
}
