//! `meta-specialize`: turns what earlier runs observed into assumptions,
//! each under a `meta.guard` (JANUS §3).
//!
//! It takes a profile (`profile=FILE`, written by `jitc run --profile-out`;
//! see `jitc_dialect::profile`; the tool that builds the pipeline reads the
//! file and hands the pass the [`Profile`] value, since passes do no I/O)
//! and, for every site whose observations
//! agree, makes one assumption and guards it. Each guard has a fresh id, a
//! readable reason and a `site` attribute naming the profile entry it
//! relies on, so a failure can be traced and relaxed.
//!
//! ```mlir
//! // profile: @main's %arg0 was always 4x8, the branch at 7:8 always taken
//! func.func @main(%x: tensor<?x8xf32>, %c: i1) -> tensor<?x8xf32> {
//!   %d = tensor.dim %x, %c0 : tensor<?x8xf32>
//!   %ok = arith.cmpi eq, %d, %c4 : index
//!   %t = tensor.from_elements %ok : tensor<i1>
//!   "meta.guard"(%t) {id = 1 : i64, reason = "shape(%arg0)[0] == 4", site = "@main(%arg0)"} : (tensor<i1>) -> ()
//!   %xs = tensor.cast %x : tensor<?x8xf32> to tensor<4x8xf32>
//!   ... uses of %x now use %xs; the branch's ops follow its guard inline ...
//! ```
//!
//! Algorithm, per function:
//! 1. **Arguments** (entry guards, placed before every other op so that they
//!    are checked before anything runs):
//!    - a dynamic dimension always seen with one size gets a guard
//!      `shape(%argN)[d] == n`; the argument is then `tensor.cast` to the
//!      more static type and every use takes the cast;
//!    - a scalar (rank-0 tensor, index or arith scalar) always seen with one
//!      value gets a guard `value(%argN) == v` and every use takes a
//!      constant. Float zeros are not specialized: `oeq` cannot tell 0.0
//!      from -0.0. NaNs never agree, so they are never specialized either;
//!    - dtypes are fixed by the function's signature, which every run
//!      checks, so they need no guard.
//! 2. **Branches**: an `scf.if` that always went one way is replaced by that
//!    way's ops, after a guard on its condition (`branch at S taken` / `not
//!    taken`). Inner branches are handled before outer ones.
//! 3. **Loops**: an `scf.for` or `scf.while` that always ran the same number
//!    of times is marked `meta.unroll = n` (and its site pinned in
//!    `meta.site`); `meta-unroll` unrolls it and guards the trip count.
//!
//! Sites the caller lists as given up (the runtime's speculation manager
//! does, after repeated failures) are left generic. Shapes made static here
//! spread through the function with `meta-refine`.

use crate::rewrite::{move_before, with_context};
use crate::{
    pass::{OptionKind, Options, PassInfo, PassOption},
    rewrite::{self, Builder, DYNAMIC, GuardIds, body_ops, dims, replace_uses, set_operand, uses, with_dims},
};
use jitc_dialect::{
    emit_error,
    kinds::extent_bytes,
    ops::{set_attribute, string_attribute},
    profile::{Observed, Profile, SITE_ATTRIBUTE, SiteProfile, argument_types, site_id},
    verify::{collect_ops, op_name},
};
use melior::{
    Context,
    ir::{
        Attribute, BlockLike, OperationRef, RegionLike, Type, TypeLike, Value, ValueLike,
        attribute::{FloatAttribute, IntegerAttribute, StringAttribute},
        operation::OperationLike,
        r#type::{IntegerType, RankedTensorType, ShapedTypeLike},
    },
};
use std::collections::BTreeSet;

/// The `meta-specialize` pass.
pub struct Specialize;

impl Specialize {
    /// Registry entry.
    pub const INFO: PassInfo = PassInfo {
        argument: "meta-specialize",
        name: "Specialize",
        summary: "Assume what a profile observed (shapes, values, branches, trip counts), under guards",
        options: &[PassOption {
            name: "profile",
            description: "the profile JSON file to specialize for (write one with `jitc run --profile-out FILE`)",
            default: "",
            kind: OptionKind::Required,
        }],
        source_file: "compiler/src/transforms/specialize.rs",
        source: include_str!("specialize.rs"),
        run: Self::run,
    };

    /// Runs the pass on a module, with the profile its caller loaded.
    pub fn run(root: OperationRef, options: &Options) -> bool {
        let Some(profile) = options.profile() else {
            emit_error(
                root.location(),
                "meta-specialize needs a profile: meta-specialize{profile=FILE} (write one with `jitc run --profile-out FILE`)",
            );
            return false;
        };
        match with_context(root, |context| {
            specialize(context, root, profile, &SpecializeOptions::default())
        }) {
            Ok(_) => true,
            Err(message) => {
                emit_error(root.location(), &format!("meta-specialize: {message}"));
                false
            }
        }
    }
}

/// How [`specialize`] runs.
#[derive(Debug, Clone)]
pub struct SpecializeOptions {
    /// Sites never to speculate on: argument sites (`@main(%arg0)`) and
    /// control-flow sites (as in the profile).
    pub given_up: BTreeSet<String>,
    /// The largest loop (body ops times trip count) marked for unrolling,
    /// `meta-unroll`'s `max-ops`: a larger one would not be unrolled, so
    /// its trip count is neither assumed nor reported.
    pub unroll_max_ops: u64,
}

impl Default for SpecializeOptions {
    fn default() -> Self {
        Self {
            given_up: BTreeSet::new(),
            unroll_max_ops: crate::transforms::unroll::MAX_OPS,
        }
    }
}

/// One assumption made, and the guard that checks it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Assumption {
    /// The function it is in.
    pub function: String,
    /// The guard's id (0 for a loop mark, whose guard `meta-unroll` adds).
    pub guard: i64,
    /// The site it relies on.
    pub site: String,
    /// What it assumes.
    pub reason: String,
}

/// The site id of argument `index` of `function`.
pub fn argument_site(function: &str, index: usize) -> String {
    format!("@{function}(%arg{index})")
}

/// Specializes every function of `module` for `profile`; returns the
/// assumptions made.
pub fn specialize(
    context: &Context,
    module: OperationRef,
    profile: &Profile,
    options: &SpecializeOptions,
) -> Result<Vec<Assumption>, String> {
    let mut made = Vec::new();
    let Some(body) = module.region(0).ok().and_then(|r| r.first_block()) else {
        return Ok(made);
    };
    // Refuse a profile of another program before changing anything: the
    // signatures it recorded, then its sites.
    let mut function = body.first_operation();
    while let Some(op) = function {
        function = op.next_in_block();
        if let Some(name) = op.attribute("sym_name").ok().and_then(string_attribute)
            && op_name(op) == "func.func"
            && !op.has_attribute("meta.fused")
        {
            profile
                .check_signature(name, &argument_types(op))
                .map_err(|e| e.to_string())?;
        }
    }
    profile.check_sites(module).map_err(|e| e.to_string())?;
    let mut next = body.first_operation();
    while let Some(function) = next {
        next = function.next_in_block();
        if op_name(function) != "func.func" || function.has_attribute("meta.fused") {
            continue;
        }
        let Some(name) = function
            .attribute("sym_name")
            .ok()
            .and_then(string_attribute)
            .map(str::to_owned)
        else {
            continue;
        };
        let Some(entry) = function.region(0).ok().and_then(|r| r.first_block()) else {
            continue;
        };
        let mut ids = GuardIds::of(function);
        let mut specializer = Specializer {
            context,
            function: &name,
            ids: &mut ids,
            made: &mut made,
            unroll_max_ops: options.unroll_max_ops,
        };
        if let Some(observed) = profile.functions.get(&name)
            && observed.arguments.len() == entry.argument_count()
            && let Some(first) = entry.first_operation()
        {
            for (index, argument) in observed.arguments.iter().enumerate() {
                let site = argument_site(&name, index);
                if options.given_up.contains(&site) {
                    continue;
                }
                let value: Value = entry.argument(index).map_err(|e| e.to_string())?.into();
                specializer
                    .argument(first, value, index, &site, &argument.shape, argument.value)
                    .ok_or_else(|| format!("could not specialize argument {index} of @{name}"))?;
            }
        }
        // Inner ops before outer ones: each op comes after its parent in
        // pre-order.
        let ops = collect_ops(function);
        for &op in ops.iter().rev() {
            let kind = op_name(op);
            if !matches!(kind.as_str(), "scf.if" | "scf.for" | "scf.while") {
                continue;
            }
            let site = site_id(op);
            if options.given_up.contains(&site) {
                continue;
            }
            match (kind.as_str(), profile.sites.get(&site)) {
                ("scf.if", Some(&SiteProfile::If { then, r#else })) if (then == 0) != (r#else == 0) => {
                    specializer
                        .branch(op, then > 0, &site)
                        .ok_or_else(|| format!("could not inline the branch at {site}"))?;
                }
                (
                    "scf.for" | "scf.while",
                    Some(&SiteProfile::Loop {
                        trips: Some(trips), ..
                    }),
                ) => specializer.mark_loop(op, trips, &site),
                _ => {}
            }
        }
    }
    Ok(made)
}

struct Specializer<'s> {
    context: &'s Context,
    function: &'s str,
    ids: &'s mut GuardIds,
    made: &'s mut Vec<Assumption>,
    unroll_max_ops: u64,
}

impl Specializer<'_> {
    fn record(&mut self, guard: i64, site: &str, reason: String) {
        self.made.push(Assumption {
            function: self.function.to_owned(),
            guard,
            site: site.to_owned(),
            reason,
        });
    }

    /// Entry guards for argument `value`, inserted before `first`.
    fn argument<'c, 'a>(
        &mut self,
        first: OperationRef<'c, 'a>,
        value: Value<'c, 'a>,
        index: usize,
        site: &str,
        shape: &[Option<u64>],
        observed: Option<Observed>,
    ) -> Option<()> {
        let context = self.context;
        let builder = Builder::before(context, first)?;
        let r#type = value.r#type();
        let users = uses(value);
        if let Ok(tensor) = RankedTensorType::try_from(r#type) {
            if tensor.rank() == 0 {
                let Some(attribute) = observed.and_then(|o| scalar_attribute(context, tensor.element(), o))
                else {
                    return Some(());
                };
                let scalar = builder.extract(value)?;
                let reason = format!("value(%arg{index}) == {}", show(observed?));
                let ok = self.equal(&builder, scalar, attribute)?;
                let id = builder.guard(ok, self.ids, &reason, site)?;
                self.record(id, site, reason);
                let constant = builder.splat(r#type, attribute)?;
                for (user, operand) in users {
                    set_operand(user, operand, constant);
                }
                return Some(());
            }
            let mut sizes = dims(tensor);
            // A shape no tensor can have (a hand-edited profile) is not
            // assumed: its bytes would not fit in the index arithmetic of
            // every later pass.
            let assumed = sizes
                .iter()
                .enumerate()
                .map(|(d, &size)| match shape.get(d).copied().flatten() {
                    Some(observed) if size == DYNAMIC => observed,
                    // A `?` left dynamic counts as 1, as a size of 0 does.
                    _ => u64::try_from(size).unwrap_or(1),
                });
            if extent_bytes(assumed, 8).is_none() {
                return Some(());
            }
            for (d, size) in sizes.iter_mut().enumerate() {
                if *size == DYNAMIC
                    && let Some(observed) = shape.get(d).copied().flatten()
                {
                    let actual = builder.dim(value, d)?;
                    let expected = builder.index(observed as i64)?;
                    let ok = builder.compare("arith.cmpi", 0, actual, expected)?;
                    let reason = format!("shape(%arg{index})[{d}] == {observed}");
                    let id = builder.guard(ok, self.ids, &reason, site)?;
                    self.record(id, site, reason);
                    *size = observed as i64;
                }
            }
            let refined = with_dims(tensor, &sizes);
            if refined != r#type {
                let cast = builder.cast(value, refined)?;
                for (user, operand) in users {
                    set_operand(user, operand, cast);
                }
            }
            return Some(());
        }
        // An index or arith scalar argument.
        let Some(attribute) = observed.and_then(|o| scalar_attribute(context, r#type, o)) else {
            return Some(());
        };
        let reason = format!("value(%arg{index}) == {}", show(observed?));
        let ok = self.equal(&builder, value, attribute)?;
        let id = builder.guard(ok, self.ids, &reason, site)?;
        self.record(id, site, reason);
        let constant = builder.constant(attribute)?;
        for (user, operand) in users {
            set_operand(user, operand, constant);
        }
        Some(())
    }

    /// `scalar == attribute` as an i1.
    fn equal<'c, 'a>(
        &self,
        builder: &Builder<'c, 'a>,
        scalar: Value<'c, 'a>,
        attribute: Attribute<'c>,
    ) -> Option<Value<'c, 'a>> {
        let expected = builder.constant(attribute)?;
        if scalar.r#type().is_float() {
            builder.compare("arith.cmpf", 1, scalar, expected)
        } else {
            builder.compare("arith.cmpi", 0, scalar, expected)
        }
    }

    /// Inlines the way `branch` always went, after a guard on its condition.
    fn branch(&mut self, branch: OperationRef, taken: bool, site: &str) -> Option<()> {
        let builder = Builder::before(self.context, branch)?;
        let condition: Value = branch.operand(0).ok()?;
        let (holds, reason) = if taken {
            (condition, format!("branch at {site} taken"))
        } else {
            let one = builder
                .constant(IntegerAttribute::new(IntegerType::new(self.context, 1).into(), 1).into())?;
            let negated = builder.arith("arith.xori", condition, one)?;
            (negated, format!("branch at {site} not taken"))
        };
        let id = builder.guard(holds, self.ids, &reason, site)?;
        self.record(id, site, reason);
        let region = branch.region(if taken { 0 } else { 1 }).ok()?;
        if let Some(block) = region.first_block() {
            for op in body_ops(block) {
                move_before(op, branch);
            }
            let terminator = block.terminator()?;
            for i in 0..branch.result_count() {
                replace_uses(branch.result(i).ok()?.into(), terminator.operand(i).ok()?);
            }
        }
        if branch.results().any(|r| !uses(r.into()).is_empty()) {
            return None;
        }
        // Its results are unused and nothing refers to it again.
        rewrite::erase(branch);
        Some(())
    }

    /// Marks a loop for `meta-unroll`, unless it is too large to unroll
    /// (then nothing is assumed: an assumption is only made with its guard).
    fn mark_loop(&mut self, op: OperationRef, trips: u64, site: &str) {
        let body_size = collect_ops(op).len().saturating_sub(1) as u64;
        if trips > i64::MAX as u64 || body_size.saturating_mul(trips) > self.unroll_max_ops {
            return;
        }
        let i64_type = IntegerType::new(self.context, 64).into();
        set_attribute(
            op,
            "meta.unroll",
            IntegerAttribute::new(i64_type, trips as i64).into(),
        );
        set_attribute(
            op,
            SITE_ATTRIBUTE,
            StringAttribute::new(self.context, site).into(),
        );
        self.record(0, site, format!("trip count of the loop at {site} == {trips}"));
    }
}

/// The constant for an observed scalar of type `r#type`, when it may be
/// assumed.
fn scalar_attribute<'c>(context: &'c Context, r#type: Type<'c>, observed: Observed) -> Option<Attribute<'c>> {
    match observed {
        Observed::Varied => None,
        Observed::Float(x) if r#type.is_float() && x != 0.0 && !x.is_nan() => {
            Some(FloatAttribute::new(context, r#type, x).into())
        }
        Observed::Int(n) if r#type.is_index() || r#type.is_integer() => {
            Some(IntegerAttribute::new(r#type, n).into())
        }
        _ => None,
    }
}

fn show(observed: Observed) -> String {
    match observed {
        Observed::Int(n) => n.to_string(),
        Observed::Float(x) => format!("{x:?}"),
        Observed::Varied => "?".to_owned(),
    }
}
