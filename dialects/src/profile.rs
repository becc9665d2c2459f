//! Profiles: what earlier runs of a program observed, as `meta-specialize`
//! and the runtime's speculation manager read it (JANUS §3).
//!
//! A profile is a join-semilattice. Each fact is either one value seen on
//! every observation, or "varied"; merging two profiles joins fact by fact,
//! so `(4, 8)` and `(3, 8)` become `(?, 8)`, a scalar seen as `2` and `3`
//! loses its value, a branch seen both ways keeps both counts, and a loop
//! whose trip count changed loses its count. Merging is how a profile is
//! relaxed after a guard fails, and how profiles of several runs combine.
//!
//! Observations are keyed by a stable *site id* ([`site_id`]): the op's
//! `meta.site` attribute when it has one, else `line:col` of its file
//! location, else its position (`@fn/2.0.5`).
//!
//! Saved as JSON (`jitc run --profile-out`):
//!
//! ```json
//! {"version": 1, "runs": 3,
//!  "functions": {"main": {"calls": 3, "arguments": [
//!     {"type": "tensor<?x8xf32>", "shape": [4, 8]},
//!     {"type": "tensor<f32>", "shape": [], "value": {"float": 0.5}}]}},
//!  "sites": {"12:5": {"kind": "if", "then": 3, "else": 0},
//!            "14:10": {"kind": "loop", "trips": 32, "runs": 3},
//!            "20:7": {"kind": "call", "callee": "cell", "calls": 96}}}
//! ```

use melior::ir::{BlockLike, Location, OperationRef, operation::OperationLike};
use serde::{Deserialize, Serialize};
use std::{collections::BTreeMap, fmt};

/// The profile format written by this version.
pub const PROFILE_VERSION: u32 = 1;

/// What earlier runs observed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Profile {
    /// The format version ([`PROFILE_VERSION`]).
    pub version: u32,
    /// How many runs were merged into this profile.
    pub runs: u64,
    /// Entry functions, by name.
    #[serde(default)]
    pub functions: BTreeMap<String, FunctionProfile>,
    /// Control-flow and call sites, by site id.
    #[serde(default)]
    pub sites: BTreeMap<String, SiteProfile>,
}

impl Default for Profile {
    fn default() -> Self {
        Self {
            version: PROFILE_VERSION,
            runs: 0,
            functions: BTreeMap::new(),
            sites: BTreeMap::new(),
        }
    }
}

/// The arguments an entry function was called with.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FunctionProfile {
    /// Calls observed.
    pub calls: u64,
    /// One entry per argument.
    pub arguments: Vec<ArgumentProfile>,
}

/// One argument of an entry function.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ArgumentProfile {
    /// The declared type, e.g. `tensor<?x8xf32>` or `index`. Its element
    /// type is the argument's dtype, which a function fixes.
    #[serde(rename = "type")]
    pub r#type: String,
    /// Observed sizes, `null` where they varied; empty for scalars and
    /// indices.
    pub shape: Vec<Option<u64>>,
    /// The value of a scalar (rank-0 tensor) or index argument.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<Observed>,
}

/// A scalar value seen on every observation, or `varied`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Observed {
    /// An integer, index or i1 (as 0 or 1).
    Int(i64),
    /// A float, exactly (f32 values convert to f64 without loss).
    Float(f64),
    /// Not always the same.
    Varied,
}

impl Observed {
    fn join(self, other: Self) -> Self {
        match (self, other) {
            (Self::Int(a), Self::Int(b)) if a == b => self,
            // Bitwise, so that 0.0 and -0.0 differ.
            (Self::Float(a), Self::Float(b)) if a.to_bits() == b.to_bits() => self,
            _ => Self::Varied,
        }
    }
}

/// What one site observed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum SiteProfile {
    /// An `scf.if`: how often each way was taken.
    If {
        /// Times the condition was true.
        then: u64,
        /// Times it was false.
        #[serde(rename = "else")]
        r#else: u64,
    },
    /// An `scf.for` or `scf.while`: its trip count, `null` once it varied.
    Loop {
        /// The trip count seen every time.
        trips: Option<u64>,
        /// Times the loop ran.
        runs: u64,
    },
    /// A `func.call`: its callee, `null` once it varied.
    Call {
        /// The callee seen every time.
        callee: Option<String>,
        /// Calls observed.
        calls: u64,
    },
}

impl SiteProfile {
    fn kind(&self) -> &'static str {
        match self {
            Self::If { .. } => "if",
            Self::Loop { .. } => "loop",
            Self::Call { .. } => "call",
        }
    }

    /// The kind in words, with an article.
    fn described(&self) -> &'static str {
        match self {
            Self::If { .. } => "an scf.if",
            Self::Loop { .. } => "a loop",
            Self::Call { .. } => "a call",
        }
    }

    /// Joins `other` into `self`.
    fn join(&mut self, other: &Self) -> Result<(), String> {
        match (self, other) {
            (Self::If { then, r#else }, Self::If { then: t, r#else: e }) => {
                *then = then.saturating_add(*t);
                *r#else = r#else.saturating_add(*e);
            }
            (Self::Loop { trips, runs }, Self::Loop { trips: t, runs: r }) => {
                if *trips != *t {
                    *trips = None;
                }
                *runs = runs.saturating_add(*r);
            }
            (Self::Call { callee, calls }, Self::Call { callee: c, calls: n }) => {
                if *callee != *c {
                    *callee = None;
                }
                *calls = calls.saturating_add(*n);
            }
            (this, other) => {
                return Err(format!(
                    "it is `{}` in one and `{}` in the other",
                    this.kind(),
                    other.kind()
                ));
            }
        }
        Ok(())
    }
}

/// Why a profile could not be read or merged.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProfileError(pub String);

impl fmt::Display for ProfileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ProfileError {}

impl Profile {
    /// An empty profile.
    pub fn new() -> Self {
        Self::default()
    }

    /// Parses a profile from JSON.
    pub fn from_json(text: &str) -> Result<Self, ProfileError> {
        let profile: Self =
            serde_json::from_str(text).map_err(|e| ProfileError(format!("not a jitc profile: {e}")))?;
        if profile.version != PROFILE_VERSION {
            return Err(ProfileError(format!(
                "profile version {} is not supported (this jitc writes version {PROFILE_VERSION})",
                profile.version
            )));
        }
        Ok(profile)
    }

    /// The profile as pretty-printed JSON.
    pub fn to_json(&self) -> String {
        // Serializing these types cannot fail: every map key is a string.
        serde_json::to_string_pretty(self).unwrap_or_default()
    }

    /// Joins `other` into `self`: facts that disagree become varied and
    /// counts add up (saturating: they come from files). Fails, leaving `self` unchanged, when the two
    /// profiles describe different programs.
    pub fn merge(&mut self, other: &Profile) -> Result<(), ProfileError> {
        let mut merged = self.clone();
        merged.runs = merged.runs.saturating_add(other.runs);
        for (name, theirs) in &other.functions {
            match merged.functions.get_mut(name) {
                None => {
                    merged.functions.insert(name.clone(), theirs.clone());
                }
                Some(ours) => {
                    if ours.arguments.len() != theirs.arguments.len() {
                        return Err(ProfileError(format!(
                            "@{name} takes {} arguments in one profile and {} in the other",
                            ours.arguments.len(),
                            theirs.arguments.len()
                        )));
                    }
                    ours.calls = ours.calls.saturating_add(theirs.calls);
                    for (i, (a, b)) in ours.arguments.iter_mut().zip(&theirs.arguments).enumerate() {
                        if a.r#type != b.r#type || a.shape.len() != b.shape.len() {
                            return Err(ProfileError(format!(
                                "argument {i} of @{name} is {} in one profile and {} in the other",
                                a.r#type, b.r#type
                            )));
                        }
                        for (x, y) in a.shape.iter_mut().zip(&b.shape) {
                            if *x != *y {
                                *x = None;
                            }
                        }
                        a.value = match (a.value, b.value) {
                            (Some(x), Some(y)) => Some(x.join(y)),
                            (x, y) => x.or(y),
                        };
                    }
                }
            }
        }
        for (site, theirs) in &other.sites {
            match merged.sites.get_mut(site) {
                None => {
                    merged.sites.insert(site.clone(), theirs.clone());
                }
                Some(ours) => ours
                    .join(theirs)
                    .map_err(|e| ProfileError(format!("site {site} differs: {e}")))?,
            }
        }
        *self = merged;
        Ok(())
    }

    /// Checks that what this profile recorded of entry function `name`, if
    /// anything, was recorded on a function taking arguments of `types` (as
    /// MLIR prints them): a profile of another program is refused before
    /// it is used, rather than failing guards or merges later.
    pub fn check_signature(&self, name: &str, types: &[String]) -> Result<(), ProfileError> {
        let Some(recorded) = self.functions.get(name) else {
            return Ok(());
        };
        let theirs: Vec<&str> = recorded.arguments.iter().map(|a| a.r#type.as_str()).collect();
        if theirs.iter().eq(types.iter()) {
            return Ok(());
        }
        Err(ProfileError(format!(
            "the profile was recorded on another program: its @{name} takes ({}) but this program's @{name} takes ({})",
            theirs.join(", "),
            types.join(", ")
        )))
    }

    /// Checks that every site this profile recorded is, in the program
    /// under `root`, an op of the kind recorded there (an `scf.if`, a
    /// loop, a call): a profile of another program, or of an edited one
    /// whose sites moved, is refused before anything runs, rather than
    /// failing a merge after the run or specializing the wrong ops.
    pub fn check_sites(&self, root: OperationRef) -> Result<(), ProfileError> {
        if self.sites.is_empty() {
            return Ok(());
        }
        let mut program = BTreeMap::new();
        for op in crate::verify::collect_ops(root) {
            let name = crate::verify::op_name(op);
            if let Some(kind) = site_kind(&name) {
                program.insert(site_id(op), (kind, name));
            }
        }
        for (site, recorded) in &self.sites {
            match program.get(site) {
                Some((kind, _)) if *kind == recorded.kind() => {}
                Some((_, name)) => {
                    return Err(ProfileError(format!(
                        "the profile was recorded on another program: its site {site} is {}, but this program's op there is {name}",
                        recorded.described()
                    )));
                }
                None => {
                    return Err(ProfileError(format!(
                        "the profile was recorded on another program: its site {site} is {} but this program has no branch, loop or call there",
                        recorded.described()
                    )));
                }
            }
        }
        Ok(())
    }

    /// Records one execution of an `scf.if` at `site`.
    pub fn record_branch(&mut self, site: String, taken: bool) {
        self.record_site(
            site,
            SiteProfile::If {
                then: u64::from(taken),
                r#else: u64::from(!taken),
            },
        );
    }

    /// Records one execution of a loop at `site` that ran `trips` times.
    pub fn record_loop(&mut self, site: String, trips: u64) {
        self.record_site(
            site,
            SiteProfile::Loop {
                trips: Some(trips),
                runs: 1,
            },
        );
    }

    /// Records one call at `site` to `callee`.
    pub fn record_call(&mut self, site: String, callee: &str) {
        self.record_site(
            site,
            SiteProfile::Call {
                callee: Some(callee.to_owned()),
                calls: 1,
            },
        );
    }

    /// Joins one observation into `site`; one of another kind replaces it
    /// (the program changed).
    fn record_site(&mut self, site: String, fresh: SiteProfile) {
        match self.sites.get_mut(&site) {
            Some(existing) => {
                if existing.join(&fresh).is_err() {
                    *existing = fresh;
                }
            }
            None => {
                self.sites.insert(site, fresh);
            }
        }
    }

    /// Records a call of entry function `name` with these arguments.
    pub fn record_entry(&mut self, name: &str, arguments: Vec<ArgumentProfile>) {
        let fresh = Profile {
            functions: BTreeMap::from([(name.to_owned(), FunctionProfile { calls: 1, arguments })]),
            ..Profile::default()
        };
        if self.merge(&fresh).is_err() {
            // The function changed signature: start its record again.
            self.functions
                .insert(name.to_owned(), fresh.functions[name].clone());
        }
    }
}

/// The argument types of `function` (a `func.func`, declarations
/// included) as MLIR prints them: what a profile records of an entry
/// function's arguments, and what [`Profile::check_signature`] compares.
pub fn argument_types(function: OperationRef) -> Vec<String> {
    crate::verify::function_type(function).map_or_else(Vec::new, |signature| {
        (0..signature.input_count())
            .filter_map(|i| signature.input(i).ok())
            .map(|r#type| r#type.to_string())
            .collect()
    })
}

/// The attribute that pins an op's site id, so that it survives fusion,
/// unrolling and inlining whatever its location.
pub const SITE_ATTRIBUTE: &str = "meta.site";

/// The stable id of `op`'s site: its `meta.site` string attribute, else
/// `line:col` of its file location, else its position in its function
/// (`@main/1.0.3`: op 1 of the body, its region 0, op 3).
pub fn site_id(op: OperationRef) -> String {
    if let Some(site) = op
        .attribute(SITE_ATTRIBUTE)
        .ok()
        .and_then(crate::ops::string_attribute)
    {
        return site.to_owned();
    }
    if let Some(site) = file_position(op.location()) {
        return site;
    }
    position(op)
}

fn file_position(location: Location) -> Option<String> {
    location.is_file_line_col_range().then(|| {
        format!(
            "{}:{}",
            location.file_line_col_range_start_line(),
            location.file_line_col_range_start_column()
        )
    })
}

fn position(op: OperationRef) -> String {
    let mut path = Vec::new();
    let mut current = op;
    loop {
        // Its index in its block, counted from the block's first op
        // (melior 0.27's `previous_in_block` is not implemented: it panics).
        let mut index = 0;
        let mut next = current.block().and_then(|b| b.first_operation());
        while let Some(op) = next
            && op != current
        {
            index += 1;
            next = op.next_in_block();
        }
        path.push(index.to_string());
        let Some(parent) = current.parent_operation() else {
            break;
        };
        if crate::verify::op_name(parent) != "func.func" {
            // Which region of the parent the op is in (`scf.if`'s `then` or
            // `else`).
            let region = current.block().and_then(|b| b.parent_region());
            let number = (0..parent.region_count())
                .find(|&r| parent.region(r).ok() == region)
                .unwrap_or(0);
            path.push(number.to_string());
        }
        if crate::verify::op_name(parent) == "func.func" {
            let name = parent
                .attribute("sym_name")
                .ok()
                .and_then(crate::ops::string_attribute)
                .unwrap_or("?");
            path.reverse();
            return format!("@{name}/{}", path.join("."));
        }
        current = parent;
    }
    path.reverse();
    format!("/{}", path.join("."))
}

/// The kind of site ([`SiteProfile::kind`]) an op named `name` is, if it
/// is one.
fn site_kind(name: &str) -> Option<&'static str> {
    match name {
        "scf.if" => Some("if"),
        "scf.for" | "scf.while" => Some("loop"),
        "func.call" => Some("call"),
        _ => None,
    }
}

/// Pins the site id of every `scf.if`, `scf.for`, `scf.while` and
/// `func.call` under `root` as a `meta.site` attribute, so that it survives
/// what changes locations or positions: printing and re-parsing (the kernel
/// cache does), fusion, unrolling and inlining.
pub fn pin_sites(root: OperationRef) {
    for op in crate::verify::collect_ops(root) {
        let name = crate::verify::op_name(op);
        if site_kind(&name).is_some() && op.attribute(SITE_ATTRIBUTE).is_err() {
            let site = site_id(op);
            let context_ref = op.context();
            // SAFETY: `to_ref` hands out a reference into `context_ref`,
            // which lives until the end of this block.
            let context = unsafe { context_ref.to_ref() };
            let attribute = melior::ir::attribute::StringAttribute::new(context, &site);
            crate::ops::set_attribute(op, SITE_ATTRIBUTE, attribute.into());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(shape: &[u64], value: Option<Observed>) -> Profile {
        let mut profile = Profile {
            runs: 1,
            ..Profile::default()
        };
        profile.record_entry(
            "main",
            vec![ArgumentProfile {
                r#type: "tensor<?x8xf32>".into(),
                shape: shape.iter().map(|&d| Some(d)).collect(),
                value,
            }],
        );
        profile
    }

    #[test]
    fn merging_walks_up_the_lattice() {
        let mut profile = entry(&[4, 8], None);
        profile.merge(&entry(&[4, 8], None)).unwrap();
        assert_eq!(
            profile.functions["main"].arguments[0].shape,
            vec![Some(4), Some(8)]
        );
        profile.merge(&entry(&[3, 8], None)).unwrap();
        assert_eq!(profile.functions["main"].arguments[0].shape, vec![None, Some(8)]);
        assert_eq!(profile.functions["main"].calls, 3);
        assert_eq!(profile.runs, 3);

        let mut value = entry(&[], Some(Observed::Float(0.5)));
        value.merge(&entry(&[], Some(Observed::Float(0.5)))).unwrap();
        assert_eq!(
            value.functions["main"].arguments[0].value,
            Some(Observed::Float(0.5))
        );
        value.merge(&entry(&[], Some(Observed::Float(-0.0)))).unwrap();
        assert_eq!(value.functions["main"].arguments[0].value, Some(Observed::Varied));

        let mut sites = Profile::new();
        sites.record_branch("3:5".into(), true);
        sites.record_loop("4:5".into(), 7);
        sites.record_loop("4:5".into(), 7);
        sites.record_call("5:5".into(), "f");
        assert_eq!(
            sites.sites["4:5"],
            SiteProfile::Loop {
                trips: Some(7),
                runs: 2
            }
        );
        sites.record_branch("3:5".into(), false);
        sites.record_loop("4:5".into(), 8);
        assert_eq!(sites.sites["3:5"], SiteProfile::If { then: 1, r#else: 1 });
        assert_eq!(sites.sites["4:5"], SiteProfile::Loop { trips: None, runs: 3 });
    }

    #[test]
    fn json_round_trips_and_bad_profiles_are_errors() {
        let mut profile = entry(&[4, 8], Some(Observed::Int(3)));
        profile.record_loop("4:5".into(), 7);
        let text = profile.to_json();
        assert_eq!(Profile::from_json(&text).unwrap(), profile);

        let error = Profile::from_json("{\"version\": 9, \"runs\": 1}").unwrap_err();
        let mut recorded = Profile::new();
        recorded.record_entry(
            "main",
            vec![ArgumentProfile {
                r#type: "tensor<5x4x6xf32>".into(),
                shape: vec![Some(5), Some(4), Some(6)],
                value: None,
            }],
        );
        assert!(
            recorded
                .check_signature("main", &["tensor<5x4x6xf32>".into()])
                .is_ok()
        );
        assert!(recorded.check_signature("other", &["f32".into()]).is_ok());
        let mismatch = recorded
            .check_signature("main", &["tensor<?x16x64xf32>".into()])
            .unwrap_err();
        assert_eq!(
            mismatch.0,
            "the profile was recorded on another program: its @main takes (tensor<5x4x6xf32>) but this program's @main takes (tensor<?x16x64xf32>)"
        );
        assert_eq!(
            error.to_string(),
            "profile version 9 is not supported (this jitc writes version 1)"
        );
        assert!(
            Profile::from_json("\"a string\"")
                .unwrap_err()
                .to_string()
                .starts_with("not a jitc profile")
        );

        let mut a = Profile::new();
        a.record_branch("3:5".into(), true);
        let mut b = Profile::new();
        b.record_loop("3:5".into(), 2);
        let before = a.clone();
        let error = a.merge(&b).unwrap_err();
        assert_eq!(
            error.to_string(),
            "site 3:5 differs: it is `if` in one and `loop` in the other"
        );
        assert_eq!(a, before, "a failed merge changes nothing");
    }

    #[test]
    fn a_site_without_a_file_location_is_its_position() {
        // An op with an unknown location (as passes create them) is named
        // by its path in its function: `scf.if` is op 1 of @f's body, the
        // second in the `then` region.
        let context = crate::new_context().unwrap();
        let source = r#"func.func @f(%c: i1) {
  %z = arith.constant 0 : index loc(unknown)
  scf.if %c {
    %a = arith.constant 1 : index loc(unknown)
    scf.if %c {
    } loc(unknown)
  } loc(unknown)
  return
}"#;
        let module = melior::ir::Module::parse(&context, source).unwrap();
        let ifs: Vec<String> = crate::verify::collect_ops(module.as_operation())
            .into_iter()
            .filter(|op| crate::verify::op_name(*op) == "scf.if")
            .map(site_id)
            .collect();
        assert_eq!(ifs, ["@f/1", "@f/1.0.1"]);
    }
}
