//! The registry of jitc's own passes: one list, used by pipelines,
//! `--list-passes` and the test that every pass has docs and a lit test.

use crate::{
    Error,
    pass::{OptionKind, Options, PassInfo},
    transforms::{
        batch::Batch, cse::Cse, dce::Dce, fast_math::FastMath, fuse::Fuse, grad::Grad, inline::Inline,
        merge::Merge, refine::Refine, specialize::Specialize, unroll::Unroll, verify::Verify,
    },
};
use jitc_dialect::profile::Profile;
use jitc_dialect::{emit_error, verify::verify};
use melior::{
    ContextRef,
    ir::{OperationRef, operation::OperationLike, r#type::TypeId},
    pass::{ExternalPass, Pass, RunExternalPass, create_external},
};
use std::{
    collections::{BTreeMap, HashMap},
    panic::AssertUnwindSafe,
    sync::Arc,
};

/// Profiles a pipeline's passes read, keyed by the text of the `profile`
/// option that names them; the caller loads the files.
pub type Profiles = HashMap<String, Arc<Profile>>;

/// Every jitc pass, in `--list-passes` order.
pub static PASSES: &[PassInfo] = &[
    Batch::INFO,
    Cse::INFO,
    Dce::INFO,
    FastMath::INFO,
    Fuse::INFO,
    Grad::INFO,
    Inline::INFO,
    Merge::INFO,
    Refine::INFO,
    Specialize::INFO,
    Unroll::INFO,
    Verify::INFO,
];

/// Finds a jitc pass by its argument.
pub fn find(argument: &str) -> Option<&'static PassInfo> {
    PASSES.iter().find(|p| p.argument == argument)
}

/// Parses `key=value` pairs separated by spaces against `info`'s options.
pub fn parse_options(info: &PassInfo, text: &str) -> Result<Options, Error> {
    let mut options: BTreeMap<&'static str, String> = info
        .options
        .iter()
        .map(|o| (o.name, o.default.to_owned()))
        .collect();
    for pair in text.split_whitespace() {
        let (key, value) = pair.split_once('=').unwrap_or((pair, "true"));
        let Some(option) = info.options.iter().find(|o| o.name == key) else {
            let known = if info.options.is_empty() {
                "it takes no options".to_owned()
            } else {
                format!(
                    "it takes {}",
                    info.options.iter().map(|o| o.name).collect::<Vec<_>>().join(", ")
                )
            };
            return Err(Error::Pipeline(format!(
                "pass '{}' has no option '{key}'; {known}",
                info.argument
            )));
        };
        options.insert(option.name, value.to_owned());
    }
    for option in info.options {
        let value = options.get(option.name).map_or("", String::as_str);
        match option.kind {
            OptionKind::WholeNumber if value.parse::<u64>().is_err() => {
                return Err(Error::Pipeline(format!(
                    "pass '{}': option {} must be a whole number, got '{value}'",
                    info.argument, option.name
                )));
            }
            OptionKind::Required if value.is_empty() => {
                return Err(Error::Pipeline(format!(
                    "pass '{}' needs {}=...: {}",
                    info.argument, option.name, option.description
                )));
            }
            _ => {}
        }
    }
    Ok(Options::new(options))
}

/// Creates an MLIR pass that runs `info` with the given option text. A
/// `profile` option must name one of `profiles`: passes read no files.
pub fn create(info: &'static PassInfo, options: &str, profiles: &Profiles) -> Result<Pass, Error> {
    let mut options = parse_options(info, options)?;
    if let Some(path) = options.get("profile").filter(|p| !p.is_empty()) {
        let Some(profile) = profiles.get(path) else {
            return Err(Error::Pipeline(format!(
                "pass '{}' names the profile '{path}', which was not loaded",
                info.argument
            )));
        };
        options = options.with_profile(Arc::clone(profile));
    }
    Ok(create_external(
        External { info, options },
        TypeId::create(info),
        info.name,
        info.argument,
        info.summary,
        "",
        &[],
    ))
}

#[derive(Clone)]
struct External {
    info: &'static PassInfo,
    options: Options,
}

impl<'c> RunExternalPass<'c> for External {
    fn initialize(&mut self, _context: ContextRef<'c>) {}

    fn run(&mut self, op: OperationRef<'c, '_>, pass: ExternalPass<'_>) {
        // This runs inside MLIR, where a panic cannot unwind: turn one into
        // a diagnostic.
        let info = self.info;
        let outcome = std::panic::catch_unwind(AssertUnwindSafe(|| {
            (info.run)(op, &self.options) && verified_after(info, op)
        }));
        match outcome {
            Ok(true) => {}
            Ok(false) => pass.signal_failure(),
            Err(payload) => {
                let what = payload
                    .downcast_ref::<&str>()
                    .map(|s| s.to_string())
                    .or_else(|| payload.downcast_ref::<String>().cloned())
                    .unwrap_or_default();
                emit_error(
                    op.location(),
                    &format!(
                        "internal compiler error: pass '{}' panicked: {what}",
                        info.argument
                    ),
                );
                pass.signal_failure();
            }
        }
    }
}

/// Runs the semantic verifier after a pass; a failure is a compiler bug.
fn verified_after(info: &PassInfo, op: OperationRef) -> bool {
    if verify(op) {
        return true;
    }
    emit_error(
        op.location(),
        &format!(
            "internal compiler error: the meta verifier failed after pass '{}'",
            info.argument
        ),
    );
    false
}

/// The `--list-passes` text for jitc's passes.
pub fn list() -> String {
    let mut out = String::new();
    for pass in PASSES {
        out.push_str(&format!("  --{:<24}{}\n", pass.argument, pass.summary));
        for option in pass.options {
            let default = if option.default.is_empty() {
                String::new()
            } else {
                format!(" (default: {})", option.default)
            };
            out.push_str(&format!(
                "      {}=<value>  {}{default}\n",
                option.name, option.description
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn workspace() -> &'static Path {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .parent()
            .expect("compiler/ has a parent")
    }

    #[test]
    fn every_pass_has_docs_and_a_lit_test() {
        for pass in PASSES {
            let doc: Vec<&str> = pass.source.lines().take_while(|l| l.starts_with("//!")).collect();
            assert!(
                doc.len() >= 5,
                "{} needs a //! doc at the top of {}",
                pass.argument,
                pass.source_file
            );
            assert!(
                pass.source.contains("Algorithm"),
                "{}'s doc needs an 'Algorithm' section",
                pass.argument
            );
            assert!(
                workspace().join(pass.source_file).is_file(),
                "{} is missing",
                pass.source_file
            );
            let stem = Path::new(pass.source_file).file_stem().unwrap().to_str().unwrap();
            // `meta-fast-math` → `fast_math.rs` → `FastMath`.
            assert_eq!(
                pass.argument,
                format!("meta-{}", stem.replace('_', "-")),
                "pass argument and file name disagree"
            );
            assert_eq!(
                pass.name.to_lowercase(),
                stem.replace('_', ""),
                "pass type and file name disagree"
            );
            let lit = workspace().join(format!("test/Transforms/{stem}.mlir"));
            assert!(
                lit.is_file(),
                "{} has no lit test at {}",
                pass.argument,
                lit.display()
            );
            assert!(!pass.summary.is_empty());
        }
    }

    #[test]
    fn unroll_default_is_the_shared_constant() {
        let info = find("meta-unroll").unwrap();
        assert_eq!(
            info.options[0].default,
            crate::transforms::unroll::MAX_OPS.to_string()
        );
    }

    #[test]
    fn list_passes_snapshot() {
        insta::assert_snapshot!(list());
    }

    #[test]
    fn rejects_unknown_options() {
        let info = find("meta-dce").unwrap();
        let error = parse_options(info, "fanout=3").unwrap_err().to_string();
        assert_eq!(
            error,
            "invalid pass pipeline: pass 'meta-dce' has no option 'fanout'; it takes no options"
        );
    }
}
