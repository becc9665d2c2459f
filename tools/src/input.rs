//! Reading a module from a file or standard input, for the subcommands that
//! take exactly one module (`run`, `explain`).

use jitc_compiler::{
    OptimizeOptions,
    diagnostics::{DiagnosticCollector, render},
    optimize,
    source::parse_module,
};
use melior::{Context, ir::Module};
use std::{io::Read, path::Path};

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
    Ok((name, String::from_utf8_lossy(&bytes).into_owned()))
}

/// Parses and verifies the module at `path`, printing its diagnostics to
/// stderr when it is not valid.
pub fn load_module<'c>(context: &'c Context, path: &Path) -> Result<Module<'c>, String> {
    let (name, text) = read_source(path)?;
    let collector = DiagnosticCollector::attach(context);
    let module = parse_module(context, &text).and_then(|mut module| {
        optimize(context, &mut module, &[], &OptimizeOptions::default())
            .ok()
            .map(|()| module)
    });
    module.ok_or_else(|| {
        let rendered: String = collector.take().iter().map(|d| render(d, &name, &text)).collect();
        eprint!("{rendered}");
        format!("'{name}' is not a valid module")
    })
}
