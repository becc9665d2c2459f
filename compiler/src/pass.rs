//! What a jitc pass is: its registry entry ([`PassInfo`]), the options it
//! declares ([`PassOption`]) and the values one instance runs with
//! ([`Options`]).
//!
//! This module is a leaf: passes in `transforms/` depend on it, and the
//! registry (`passes`) depends on the passes, so nothing here may name a
//! pass. A pass receives everything it reads through [`Options`], including
//! values a tool loaded from files (a profile), so that no pass does I/O.

use jitc_dialect::profile::Profile;
use melior::ir::OperationRef;
use std::{collections::BTreeMap, sync::Arc};

/// An option a pass takes, as `pass{name=value}`.
#[derive(Debug)]
pub struct PassOption {
    /// The option's name.
    pub name: &'static str,
    /// What it does.
    pub description: &'static str,
    /// Its value when not given.
    pub default: &'static str,
    /// What values it takes: checked when the pipeline is parsed, before
    /// any input is read, so a bad value is an option error, not an error
    /// at some op.
    pub kind: OptionKind,
}

/// The values a [`PassOption`] takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OptionKind {
    /// Any text.
    Text,
    /// A whole number (`0`, `16`).
    WholeNumber,
    /// Any text, and it must be given.
    Required,
}

/// Option values given to one pass instance (defaults filled in), and the
/// profile its `profile` option names, loaded by the caller.
#[derive(Debug, Clone, Default)]
pub struct Options {
    values: BTreeMap<&'static str, String>,
    profile: Option<Arc<Profile>>,
}

impl Options {
    /// Options with the given values and no profile.
    pub(crate) fn new(values: BTreeMap<&'static str, String>) -> Self {
        Self {
            values,
            profile: None,
        }
    }

    /// The value of option `name` (its default when it was not given).
    pub fn get(&self, name: &str) -> Option<&str> {
        self.values.get(name).map(String::as_str)
    }

    /// The profile the `profile` option names, when the caller provided it.
    pub fn profile(&self) -> Option<&Profile> {
        self.profile.as_deref()
    }

    /// These options with `profile` provided.
    pub(crate) fn with_profile(mut self, profile: Arc<Profile>) -> Self {
        self.profile = Some(profile);
        self
    }
}

/// One of jitc's passes.
#[derive(Debug)]
pub struct PassInfo {
    /// The pipeline name, e.g. `meta-dce`.
    pub argument: &'static str,
    /// The type name, e.g. `Dce`.
    pub name: &'static str,
    /// One line for `--list-passes`.
    pub summary: &'static str,
    /// The options it takes.
    pub options: &'static [PassOption],
    /// The file the pass lives in, relative to the workspace root (read by
    /// the registry's test that every pass has docs and a lit test).
    #[cfg_attr(not(test), expect(dead_code))]
    pub source_file: &'static str,
    /// The pass's file, whose `//!` doc is its documentation.
    #[cfg_attr(not(test), expect(dead_code))]
    pub source: &'static str,
    /// Runs the pass on one op; `false` after emitting an error.
    pub run: fn(OperationRef, &Options) -> bool,
}
