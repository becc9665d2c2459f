//! The speculation manager (JANUS §4): profile, specialize, serve, and on a
//! broken assumption fall back, relax and recompile.
//!
//! A [`Session`] owns one program (its source text) and one entry function:
//!
//! 1. the first [`SessionOptions::profile_runs`] calls run the *generic*
//!    executable (fused and compiled as written) while recording a
//!    [`Profile`];
//! 2. it then builds a *specialized* executable: `meta-specialize` for the
//!    profile, then `meta-unroll`, `meta-inline`, `canonicalize`,
//!    `meta-refine`, `cse`, `meta-dce`, `symbol-dce`, fusion and code
//!    generation. Executables are cached by their assumption set;
//! 3. later calls run the specialized executable. Entry guards are checked
//!    before anything runs, in-graph guards as their values appear, and state
//!    writes are committed only after the whole run passed, so a failed guard
//!    changes nothing.
//!
//! When a guard of a speculation site fails, the call is re-run on the
//! generic executable (the caller gets correct results and state is written
//! once), that run's observations are merged into the profile, which moves
//! the broken fact one step up its lattice (value → shape → `?`, one-way
//! branch → `scf.if`, fixed count → loop), and the next call uses an
//! executable specialized for the relaxed profile. A site whose guards have
//! failed [`SessionOptions::give_up_after`] times is no longer speculated
//! on at all. Every fallback, relaxation, give-up and compile is counted in
//! [`Stats`] and logged as an [`Event`] (and on stderr with
//! [`SessionOptions::log`]).

use crate::{CpuModule, Error};
use jitc_compiler::{
    ArgumentCheck, Assumption, CodegenOptions, EntryGuard, OptimizeOptions, Pipeline, SpecializeOptions,
    optimize, parse_module, pipelines::UNROLL_MAX_OPS, specialize, take_entry_guards,
};
use jitc_dialect::profile::{Observed, Profile, SiteProfile, pin_sites};
use jitc_interp::{Interpreter, StateStore, Value};
use melior::{Context, ir::Module};
use std::{
    collections::{BTreeMap, BTreeSet, HashMap},
    fmt,
    rc::Rc,
};

/// How a [`Session`] speculates.
#[derive(Debug, Clone)]
pub struct SessionOptions {
    /// Calls profiled before specializing (JANUS uses 3).
    pub profile_runs: usize,
    /// Guard failures at one site after which the site is no longer
    /// speculated on.
    pub give_up_after: usize,
    /// `meta-unroll`'s `max-ops`: the largest unrolled loop accepted.
    pub unroll_max_ops: u64,
    /// Code generation for both executables.
    pub codegen: CodegenOptions,
    /// Compile kernels to native code (`false`: everything runs in the
    /// reference interpreter, for checking).
    pub compile: bool,
    /// Print every event on stderr as it happens.
    pub log: bool,
    /// Speculate at all (`false`: every call runs the generic executable,
    /// unprofiled).
    pub speculate: bool,
}

impl Default for SessionOptions {
    fn default() -> Self {
        Self {
            profile_runs: 3,
            give_up_after: 3,
            unroll_max_ops: UNROLL_MAX_OPS,
            codegen: CodegenOptions::default(),
            compile: true,
            log: false,
            speculate: true,
        }
    }
}

/// What a session did, by count.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stats {
    /// Calls served.
    pub calls: u64,
    /// Calls run generically while profiling.
    pub profiled: u64,
    /// Calls that completed on a specialized executable.
    pub specialized: u64,
    /// Guard failures (each one also a fallback).
    pub guard_failures: u64,
    /// Calls re-run on the generic executable after a guard failure.
    pub fallbacks: u64,
    /// Specialized executables built (compiled or taken from the cache).
    pub specializations: u64,
    /// Of those, builds that replaced an earlier one after a failure.
    pub recompiles: u64,
    /// Sites no longer speculated on.
    pub given_up: u64,
}

/// One decision of a session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    /// A specialized executable now serves calls.
    Specialized {
        /// Its assumptions, one reason each.
        assumptions: Vec<String>,
        /// Whether it came from the session's cache.
        cached: bool,
        /// Why it was built.
        why: String,
    },
    /// A guard failed; the call was re-run on the generic executable.
    Fallback {
        /// The guard's id.
        guard: i64,
        /// The site it speculated on.
        site: String,
        /// Its reason.
        reason: String,
    },
    /// A site's fact moved up its lattice.
    Relaxed {
        /// The site.
        site: String,
        /// What is assumed about it now.
        now: String,
    },
    /// A site is no longer speculated on.
    GaveUp {
        /// The site.
        site: String,
        /// Its failures.
        failures: usize,
    },
}

impl fmt::Display for Event {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Specialized {
                assumptions,
                cached,
                why,
            } => write!(
                f,
                "{} a specialized executable ({why}) under {} assumption{}{}",
                if *cached { "reusing" } else { "compiled" },
                assumptions.len(),
                if assumptions.len() == 1 { "" } else { "s" },
                if assumptions.is_empty() {
                    String::new()
                } else {
                    format!(": {}", assumptions.join("; "))
                }
            ),
            Self::Fallback { guard, site, reason } => write!(
                f,
                "guard {guard} failed ({reason}, site {site}); re-ran the call on the generic executable"
            ),
            Self::Relaxed { site, now } => write!(f, "relaxed site {site}: now {now}; recompiling"),
            Self::GaveUp { site, failures } => write!(
                f,
                "gave up speculating on site {site} after {failures} guard failures"
            ),
        }
    }
}

/// A module ready to run, with its kernels.
struct Executable<'c> {
    module: Module<'c>,
    kernels: Option<CpuModule>,
    assumptions: Vec<Assumption>,
    /// Entry guards checked natively before the host schedule runs (and
    /// taken out of `module`).
    entry: Vec<EntryGuard>,
    /// Whether `module` still holds guards (on computed values), which can
    /// fail after the run has taken its arguments.
    computed_guards: bool,
}

/// Whether `check` holds for `args`.
fn holds(check: &ArgumentCheck, args: &[Value]) -> bool {
    let scalar = |arg: usize| match args.get(arg) {
        Some(Value::Scalar(s)) => Some(*s),
        Some(Value::Tensor(t)) if t.shape().is_empty() => Some(t.get(0)),
        _ => None,
    };
    match *check {
        ArgumentCheck::Dim { arg, dim, size } => {
            matches!(args.get(arg), Some(Value::Tensor(t)) if t.shape().get(dim) == Some(&size))
        }
        ArgumentCheck::Int { arg, value } => match args.get(arg) {
            Some(Value::Index(i)) => *i == value,
            _ => scalar(arg).is_some_and(|s| s.as_i64() == value),
        },
        ArgumentCheck::Float { arg, value } => scalar(arg).is_some_and(|s| s.as_f64() == value),
    }
}

impl<'c> Executable<'c> {
    /// The failure of the first entry guard that `args` break.
    fn entry_failure(&self, args: &[Value]) -> Option<jitc_interp::Error> {
        self.entry
            .iter()
            .find(|entry| !holds(&entry.check, args))
            .map(|entry| jitc_interp::Error::GuardFailed {
                id: entry.id,
                reason: entry.reason.clone(),
                line: None,
                site: entry.site.clone(),
            })
    }

    fn run(
        &self,
        function: &str,
        args: Vec<Value>,
        state: &mut StateStore,
        profile: Option<&mut Profile>,
    ) -> Result<Vec<Value>, jitc_interp::Error> {
        if let Some(failure) = self.entry_failure(&args) {
            return Err(failure);
        }
        self.run_body(function, args, state, profile)
    }

    /// [`Self::run`] once the entry guards hold.
    fn run_body(
        &self,
        function: &str,
        args: Vec<Value>,
        state: &mut StateStore,
        profile: Option<&mut Profile>,
    ) -> Result<Vec<Value>, jitc_interp::Error> {
        // Compiled kernels run under the host plan, which also records
        // what a profile holds; without them, the interpreter runs all.
        match (&self.kernels, profile) {
            (Some(kernels), profile) => kernels.run_host(&self.module, function, args, state, profile),
            (None, Some(profile)) => {
                Interpreter::new(&self.module).run_profiled(function, args, state, profile)
            }
            (None, None) => Interpreter::new(&self.module).run(function, args, state),
        }
    }
}

/// Runs one function of one program speculatively; see the module docs.
pub struct Session<'c> {
    context: &'c Context,
    source: String,
    function: String,
    options: SessionOptions,
    generic: Executable<'c>,
    profile: Profile,
    /// What this session's own calls observed, without the profile it
    /// may have started from.
    observed: Profile,
    /// Specialized executables by assumption set.
    cache: HashMap<Vec<String>, Rc<Executable<'c>>>,
    current: Option<Rc<Executable<'c>>>,
    /// Why the next specialization is built.
    pending_reason: String,
    failures: BTreeMap<String, usize>,
    given_up: BTreeSet<String>,
    events: Vec<Event>,
    stats: Stats,
}

impl<'c> Session<'c> {
    /// A session for `function` of the program `source` (MLIR text).
    pub fn new(
        context: &'c Context,
        source: &str,
        function: &str,
        options: SessionOptions,
    ) -> Result<Self, Error> {
        let mut session = Self {
            context,
            source: source.to_owned(),
            function: function.to_owned(),
            generic: Executable {
                module: Module::new(melior::ir::Location::unknown(context)),
                kernels: None,
                assumptions: Vec::new(),
                entry: Vec::new(),
                computed_guards: true,
            },
            options,
            profile: Profile::new(),
            observed: Profile::new(),
            cache: HashMap::new(),
            current: None,
            pending_reason: "after profiling".to_owned(),
            failures: BTreeMap::new(),
            given_up: BTreeSet::new(),
            events: Vec::new(),
            stats: Stats::default(),
        };
        let module = session.parse()?;
        jitc_interp::Interpreter::new(&module).signature(function)?;
        session.generic = session.build(module, Vec::new())?;
        Ok(session)
    }

    /// Starts from a profile recorded earlier (e.g. by `jitc run
    /// --profile-out`) instead of profiling: the next call is served by an
    /// executable specialized for it.
    pub fn with_profile(mut self, profile: Profile) -> Self {
        self.stats.profiled = self.options.profile_runs as u64;
        self.profile = profile;
        self.pending_reason = "from the given profile".to_owned();
        self
    }

    fn parse(&self) -> Result<Module<'c>, Error> {
        let module =
            parse_module(self.context, &self.source).ok_or(Error::Compile(jitc_compiler::Error::Parse))?;
        pin_sites(module.as_operation());
        Ok(module)
    }

    fn build(&self, mut module: Module<'c>, assumptions: Vec<Assumption>) -> Result<Executable<'c>, Error> {
        let kernels = if self.options.compile {
            Some(CpuModule::compile_with(
                self.context,
                &mut module,
                &self.options.codegen,
            )?)
        } else {
            None
        };
        Ok(Executable {
            module,
            kernels,
            assumptions,
            entry: Vec::new(),
            // Generic: only `run`, which never needs to keep arguments.
            computed_guards: true,
        })
    }

    /// Builds a specialized executable, its entry guards taken out of the
    /// module to be checked natively before each call.
    fn build_specialized(
        &self,
        mut module: Module<'c>,
        assumptions: Vec<Assumption>,
    ) -> Result<Executable<'c>, Error> {
        let (kernels, entry) = if self.options.compile {
            let kernels =
                CpuModule::compile_entry(self.context, &mut module, &self.options.codegen, &self.function)?;
            let entry = kernels.entry_guards().to_vec();
            (Some(kernels), entry)
        } else {
            let entry = take_entry_guards(self.context, &mut module, &self.function)?;
            (None, entry)
        };
        let computed_guards = jitc_dialect::verify::collect_ops(module.as_operation())
            .into_iter()
            .any(|op| jitc_dialect::verify::op_name(op) == "meta.guard");
        Ok(Executable {
            module,
            kernels,
            assumptions,
            entry,
            computed_guards,
        })
    }

    /// The specialized executable for the current profile and give-ups.
    fn specialized(&mut self) -> Result<Rc<Executable<'c>>, Error> {
        if let Some(current) = &self.current {
            return Ok(Rc::clone(current));
        }
        let mut module = self.parse()?;
        let options = SpecializeOptions {
            given_up: self.given_up.clone(),
            unroll_max_ops: self.options.unroll_max_ops,
        };
        let assumptions = specialize(self.context, module.as_operation(), &self.profile, &options)
            .map_err(|e| Error::Compile(jitc_compiler::Error::Lowering(e)))?;
        let key: Vec<String> = assumptions.iter().map(|a| a.reason.clone()).collect();
        let (executable, cached) = match self.cache.get(&key) {
            Some(executable) => (Rc::clone(executable), true),
            None => {
                optimize(
                    self.context,
                    &mut module,
                    &Pipeline::speculation(self.options.unroll_max_ops),
                    &OptimizeOptions::default(),
                )?;
                let executable = Rc::new(self.build_specialized(module, assumptions)?);
                self.cache.insert(key.clone(), Rc::clone(&executable));
                (executable, false)
            }
        };
        // Only a failed guard drops the executable serving calls, so every
        // build after the first is a recompile.
        if self.stats.specializations > 0 {
            self.stats.recompiles += 1;
        }
        self.stats.specializations += 1;
        let why = std::mem::take(&mut self.pending_reason);
        self.event(Event::Specialized {
            assumptions: key,
            cached,
            why,
        });
        self.current = Some(Rc::clone(&executable));
        Ok(executable)
    }

    fn event(&mut self, event: Event) {
        if self.options.log {
            eprintln!("jitc: speculation: {event}");
        }
        self.events.push(event);
    }

    /// Runs the generic executable, merging what it observed into the
    /// profile.
    fn run_generic_profiled(
        &mut self,
        args: Vec<Value>,
        state: &mut StateStore,
    ) -> Result<Vec<Value>, Error> {
        let mut observed = Profile::new();
        let results = self
            .generic
            .run(&self.function, args, state, Some(&mut observed))?;
        let failed =
            |e: jitc_dialect::profile::ProfileError| Error::Run(jitc_interp::Error::Arguments(e.to_string()));
        self.profile.merge(&observed).map_err(failed)?;
        self.observed.merge(&observed).map_err(failed)?;
        Ok(results)
    }

    /// Calls the function on `args`, reading and writing `state`.
    pub fn call(&mut self, args: Vec<Value>, state: &mut StateStore) -> Result<Vec<Value>, Error> {
        self.stats.calls += 1;
        if !self.options.speculate {
            return Ok(self.generic.run(&self.function, args, state, None)?);
        }
        if self.stats.profiled < self.options.profile_runs as u64 {
            self.stats.profiled += 1;
            return self.run_generic_profiled(args, state);
        }
        let executable = self.specialized()?;
        // The arguments are kept for a fallback only while a guard can still
        // fail: the entry guards are checked before the run takes them, so
        // an executable without computed guards needs no copy.
        let (outcome, kept) = if executable.computed_guards {
            let outcome = executable.run(&self.function, args.clone(), state, None);
            (outcome, Some(args))
        } else if let Some(failure) = executable.entry_failure(&args) {
            (Err(failure), Some(args))
        } else {
            (executable.run_body(&self.function, args, state, None), None)
        };
        match outcome {
            Err(jitc_interp::Error::GuardFailed {
                id,
                reason,
                site: Some(site),
                ..
            }) if kept.is_some() => {
                let args = kept.expect("checked by the guard");
                self.stats.guard_failures += 1;
                self.stats.fallbacks += 1;
                self.event(Event::Fallback {
                    guard: id,
                    site: site.clone(),
                    reason: reason.clone(),
                });
                // Joining what this call saw relaxes the broken fact.
                let results = self.run_generic_profiled(args, state)?;
                let failures = self.failures.entry(site.clone()).or_insert(0);
                *failures += 1;
                let failures = *failures;
                if failures >= self.options.give_up_after {
                    self.given_up.insert(site.clone());
                    self.stats.given_up += 1;
                    self.event(Event::GaveUp {
                        site: site.clone(),
                        failures,
                    });
                } else {
                    let now = self.describe(&site);
                    self.event(Event::Relaxed {
                        site: site.clone(),
                        now,
                    });
                }
                self.pending_reason = format!("guard {id} failed: {reason}");
                self.current = None;
                Ok(results)
            }
            Err(other) => Err(other.into()),
            Ok(results) => {
                self.stats.specialized += 1;
                Ok(results)
            }
        }
    }

    /// What the profile says about `site` now, in words.
    fn describe(&self, site: &str) -> String {
        if let Some((function, index)) = parse_argument_site(site)
            && let Some(argument) = self
                .profile
                .functions
                .get(function)
                .and_then(|f| f.arguments.get(index))
        {
            let shape: Vec<String> = argument
                .shape
                .iter()
                .map(|d| d.map_or("?".to_owned(), |n| n.to_string()))
                .collect();
            return match argument.value {
                Some(Observed::Int(n)) => format!("value {n}"),
                Some(Observed::Float(x)) => format!("value {x:?}"),
                Some(Observed::Varied) if argument.shape.is_empty() => "any value".to_owned(),
                _ => format!("shape ({})", shape.join(", ")),
            };
        }
        match self.profile.sites.get(site) {
            Some(SiteProfile::If { .. }) => "a branch both ways (scf.if kept)".to_owned(),
            Some(SiteProfile::Loop { trips: None, .. }) => "a loop of varying trip count (kept)".to_owned(),
            Some(SiteProfile::Loop { trips: Some(n), .. }) => format!("a loop of {n} trips"),
            Some(SiteProfile::Call { .. }) => "a call".to_owned(),
            None => "unobserved".to_owned(),
        }
    }

    /// The profile so far.
    pub fn profile(&self) -> &Profile {
        &self.profile
    }

    /// What this session's calls observed (profiled calls and the generic
    /// re-runs after failed guards), without the profile it started from:
    /// what to merge into a profile file that others may have changed.
    pub fn observed(&self) -> &Profile {
        &self.observed
    }

    /// Counters.
    pub fn stats(&self) -> Stats {
        self.stats
    }

    /// Every decision so far, oldest first.
    pub fn events(&self) -> &[Event] {
        &self.events
    }

    /// Sites no longer speculated on.
    pub fn given_up(&self) -> &BTreeSet<String> {
        &self.given_up
    }

    /// The assumptions of the executable serving calls now, if one is built.
    pub fn assumptions(&self) -> Option<&[Assumption]> {
        self.current.as_ref().map(|e| e.assumptions.as_slice())
    }

    /// Whether `args` pass the entry guards of the executable serving calls
    /// now, checked natively as [`Self::call`] checks them (`None` before
    /// one is built). Every other guard is checked in the graph.
    pub fn entry_guards_pass(&self, args: &[Value]) -> Option<bool> {
        self.current
            .as_ref()
            .map(|e| e.entry.iter().all(|guard| holds(&guard.check, args)))
    }

    /// How many entry guards the executable serving calls now checks
    /// natively.
    pub fn entry_guard_count(&self) -> usize {
        self.current.as_ref().map_or(0, |e| e.entry.len())
    }

    /// The text of the specialized module serving calls now (fused).
    pub fn specialized_ir(&self) -> Option<String> {
        self.current.as_ref().map(|e| e.module.as_operation().to_string())
    }
}

/// `@main(%arg2)` → (`main`, 2).
fn parse_argument_site(site: &str) -> Option<(&str, usize)> {
    let rest = site.strip_prefix('@')?;
    let (function, rest) = rest.split_once("(%arg")?;
    let index = rest.strip_suffix(')')?.parse().ok()?;
    Some((function, index))
}
