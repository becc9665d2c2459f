//! Every pass pipeline jitc runs, in one place, and the [`Pipeline`] value
//! that tools and the runtime hand to [`crate::optimize`].
//!
//! A pipeline is MLIR's textual syntax anchored on `builtin.module`
//! (`builtin.module(meta-dce, func.func(cse))`), parsed once into a tree of
//! [`Element`]s. The named ones below are the only pipeline texts in the
//! code; `jitc opt --list-pipelines` prints them, and a unit test snapshots
//! that list and builds every one of them.
//!
//! | name | where it runs |
//! |---|---|
//! | `default` | DESIGN.md's default pipeline up to fusion (verify, unroll and inline, canonicalize and cse, fuse); lowering and code generation follow per target |
//! | `fuse` | before code generation, in `jitc compile`, `jitc run` and the runtime's CPU and CUDA modules, under `--math exact` |
//! | `fuse-fast` | instead of `fuse` under `--math fast` (the default): `meta-fast-math`'s rewrites, then `fuse` |
//! | `speculation` | after `meta-specialize`, in the runtime's speculation manager |
//! | `entry-guards` | after the entry guards are taken out of a module |
//! | `llvm` | on lowered kernels: MLIR's conversions to the LLVM dialect, for the CPU and the GPU |
//!
//! Passes do no I/O, so a pipeline that names a profile file
//! (`meta-specialize{profile=FILE}`) carries the loaded profile with it:
//! the caller reads each path of [`Pipeline::profile_paths`] and hands the
//! value to [`Pipeline::provide_profile`].
//!
//! ```
//! use jitc_compiler::pipelines::Pipeline;
//! let fuse = Pipeline::named("fuse").unwrap();
//! assert_eq!(fuse.render(), "meta-batch,meta-fuse{rules=jitc}");
//! ```

use crate::{
    Error,
    pass::Options,
    passes::{self, Profiles},
    pipeline,
};
use jitc_dialect::profile::Profile;
use melior::{
    Context,
    ir::{Module, operation::OperationPrintingFlags},
    pass::PassIrPrintingOptions,
};
use std::sync::Arc;

pub use crate::pipeline::Element;

/// A pipeline with a name, as `--list-pipelines` shows it.
#[derive(Debug)]
pub struct NamedPipeline {
    /// Its name.
    pub name: &'static str,
    /// Where jitc runs it.
    pub summary: &'static str,
    /// Its text.
    pub text: &'static str,
}

/// `meta-unroll`'s default `max-ops`, also the speculation manager's.
pub const UNROLL_MAX_OPS: u64 = crate::transforms::unroll::MAX_OPS;

/// Every named pipeline, in `--list-pipelines` order.
pub static PIPELINES: &[NamedPipeline] = &[
    NamedPipeline {
        name: "default",
        summary: "DESIGN.md's default pipeline up to fusion; lowering and code generation follow per target",
        text: "builtin.module(meta-verify, meta-unroll, meta-inline, canonicalize, cse, meta-fuse)",
    },
    NamedPipeline {
        name: "fuse",
        summary: "run before code generation by jitc compile, jitc run and the runtime under --math exact",
        text: "builtin.module(meta-batch, meta-fuse{rules=jitc})",
    },
    NamedPipeline {
        name: "fuse-fast",
        summary: "run instead of fuse under --math fast (the default): fast-math rewrites first",
        text: "builtin.module(meta-fast-math, meta-batch, meta-fuse{rules=jitc})",
    },
    NamedPipeline {
        name: "fuse-jittor",
        summary: "run instead of fuse with --jittor-rules: the paper's fusion alone",
        text: "builtin.module(meta-fuse)",
    },
    NamedPipeline {
        name: "speculation",
        summary: "run after meta-specialize by the speculation manager (max-ops is its unroll limit)",
        text: "builtin.module(meta-unroll{max-ops=4096}, meta-inline, canonicalize, meta-refine, canonicalize, cse, meta-dce, symbol-dce)",
    },
    NamedPipeline {
        name: "entry-guards",
        summary: "run after the entry guards are taken out of a specialized module",
        text: "builtin.module(canonicalize)",
    },
    // `arith-expand` turns `arith.minimumf`/`maximumf` into a compare and
    // select blind to the sign of zero, so the lowering emits float
    // min/max as `llvm.intr.minimum`/`maximum` (`lower::scalar`).
    NamedPipeline {
        name: "llvm",
        summary: "lowered kernels to the LLVM dialect, for the CPU and the GPU",
        text: "builtin.module(func.func(arith-expand), convert-scf-to-cf, convert-math-to-llvm, \
               convert-math-to-libm, convert-arith-to-llvm, convert-index-to-llvm, convert-cf-to-llvm, \
               convert-func-to-llvm, reconcile-unrealized-casts)",
    },
];

/// The `--list-pipelines` text.
pub fn list() -> String {
    let mut out = String::new();
    for pipeline in PIPELINES {
        out.push_str(&format!("  {:<14}{}\n", pipeline.name, pipeline.summary));
        let text = pipeline.text.split_whitespace().collect::<Vec<_>>().join(" ");
        out.push_str(&format!("      {text}\n"));
    }
    out
}

/// A parsed pass pipeline, with the profiles its passes read.
#[derive(Debug, Clone, Default)]
pub struct Pipeline {
    elements: Vec<Element>,
    profiles: Profiles,
}

impl Pipeline {
    /// Parses a textual pipeline anchored on `builtin.module`, as given to
    /// `--pass-pipeline`.
    pub fn parse(text: &str) -> Result<Self, Error> {
        Ok(Self::from_elements(pipeline::parse(text)?))
    }

    /// The pipeline of `elements`, in order.
    pub fn from_elements(elements: Vec<Element>) -> Self {
        Self {
            elements,
            profiles: Profiles::new(),
        }
    }

    /// The named pipeline `name` (see [`PIPELINES`]).
    pub fn named(name: &str) -> Option<Self> {
        let named = PIPELINES.iter().find(|p| p.name == name)?;
        Self::parse(named.text).ok()
    }

    /// The `speculation` pipeline with `meta-unroll`'s limit set to
    /// `unroll_max_ops`.
    pub fn speculation(unroll_max_ops: u64) -> Self {
        let mut pipeline = Self::named("speculation").unwrap_or_default();
        for element in &mut pipeline.elements {
            if let Element::Pass { name, options } = element
                && name == "meta-unroll"
            {
                *options = format!("max-ops={unroll_max_ops}");
            }
        }
        pipeline
    }

    /// Its top-level elements.
    pub fn elements(&self) -> &[Element] {
        &self.elements
    }

    /// Whether it runs nothing.
    pub fn is_empty(&self) -> bool {
        self.elements.is_empty()
    }

    /// The text inside `builtin.module(...)`.
    pub fn render(&self) -> String {
        pipeline::render(&self.elements)
    }

    /// The profile files its passes name (`meta-specialize{profile=FILE}`),
    /// which the caller must load and [`Self::provide_profile`].
    pub fn profile_paths(&self) -> Result<Vec<String>, Error> {
        fn walk(elements: &[Element], out: &mut Vec<String>) -> Result<(), Error> {
            for element in elements {
                match element {
                    Element::Nested { elements, .. } => walk(elements, out)?,
                    Element::Pass { name, options } => {
                        if let Some(info) = passes::find(name) {
                            let options: Options = passes::parse_options(info, options)?;
                            if let Some(path) = options.get("profile").filter(|p| !p.is_empty())
                                && !out.iter().any(|p| p == path)
                            {
                                out.push(path.to_owned());
                            }
                        }
                    }
                }
            }
            Ok(())
        }
        let mut out = Vec::new();
        walk(&self.elements, &mut out)?;
        Ok(out)
    }

    /// Provides the profile that `path` (as written in a `profile` option)
    /// names.
    pub fn provide_profile(&mut self, path: &str, profile: Profile) {
        self.profiles.insert(path.to_owned(), Arc::new(profile));
    }

    /// Builds the MLIR pass manager that runs it (without the verifier
    /// around it that [`optimize`] adds).
    pub fn build<'c>(&self, context: &'c Context) -> Result<melior::pass::PassManager<'c>, Error> {
        pipeline::build(context, &self.elements, &self.profiles)
    }
}

impl Pipeline {
    /// The pipeline as mlir-opt's `--dump-pass-pipeline` prints it: `Pass
    /// Manager with N passes:`, then MLIR's textual form with every option
    /// spelled out, one element per line, nested elements indented.
    pub fn dump(&self, context: &Context) -> Result<String, Error> {
        let manager = self.build(context)?;
        // The manager is built unanchored ("any"); jitc's pipelines run on
        // the module, as mlir-opt's do.
        let flat = crate::pipeline::textual(&manager);
        let flat = match flat.strip_prefix("any(") {
            Some(rest) => format!("builtin.module({rest}"),
            None => flat,
        };
        let top = crate::pipeline::parse(&flat).map_or(0, |elements| match elements.as_slice() {
            [crate::pipeline::Element::Nested { elements, .. }] => elements.len(),
            other => other.len(),
        });
        let mut out = format!("Pass Manager with {top} passes:\n");
        let (mut depth, mut braces) = (0usize, 0usize);
        for c in flat.chars() {
            match c {
                '{' => {
                    braces += 1;
                    out.push(c);
                }
                '}' => {
                    braces = braces.saturating_sub(1);
                    out.push(c);
                }
                '(' if braces == 0 => {
                    depth += 1;
                    out.push_str("(\n");
                    out.push_str(&"  ".repeat(depth));
                }
                ',' if braces == 0 => {
                    out.push_str(",\n");
                    out.push_str(&"  ".repeat(depth));
                }
                ')' if braces == 0 => {
                    depth = depth.saturating_sub(1);
                    out.push('\n');
                    out.push_str(&"  ".repeat(depth));
                    out.push(')');
                }
                _ => out.push(c),
            }
        }
        out.push_str("\n\n");
        Ok(out)
    }
}

/// Checks that `pipeline` builds in `context`: every pass and option is
/// known and every profile it names was provided.
pub fn check(context: &Context, pipeline: &Pipeline) -> Result<(), Error> {
    pipeline.build(context).map(drop)
}

/// How MLIR prints the IR to the standard error around passes (mlir-opt's
/// `--mlir-print-ir-*` flags).
#[derive(Debug, Default, Clone, Copy)]
pub struct IrPrinting {
    /// Before every pass.
    pub before_all: bool,
    /// After every pass.
    pub after_all: bool,
    /// The whole module, not only the op the pass ran on.
    pub module_scope: bool,
    /// After a pass only when it changed the IR.
    pub after_change: bool,
    /// After a pass only when it failed.
    pub after_failure: bool,
    /// In generic form.
    pub generic: bool,
    /// With locations.
    pub debuginfo: bool,
    /// In local scope.
    pub local_scope: bool,
    /// Locations in their readable form (with `debuginfo`).
    pub pretty_debuginfo: bool,
    /// Elements attributes larger than this many elements elided.
    pub elide_elements_above: Option<usize>,
}

impl IrPrinting {
    /// How each op is printed: generic form, locations, local scope.
    pub fn flags(&self) -> OperationPrintingFlags {
        let mut flags = OperationPrintingFlags::new();
        if self.generic {
            flags = flags.print_generic_operation_form();
        }
        if self.debuginfo {
            flags = flags.enable_debug_info(true, self.pretty_debuginfo);
        }
        if let Some(limit) = self.elide_elements_above {
            flags = flags.elide_large_elements_attributes(limit);
        }
        if self.local_scope {
            flags = flags.use_local_scope();
        }
        flags
    }
}

/// How [`optimize`] runs.
#[derive(Debug, Default, Clone)]
pub struct OptimizeOptions {
    /// Print the IR around passes to stderr, as MLIR does.
    pub ir_printing: Option<IrPrinting>,
    /// Do not run MLIR's verifier after each pass (`--verify-each=false`;
    /// jitc's meta verifier still runs before and after the pipeline).
    pub no_verify_each: bool,
    /// Report each pass's time to stderr (`--mlir-timing`).
    pub timing: bool,
}

/// Verifies `module`, runs `pipeline` on it, and verifies the result.
/// Errors are also reported through the context's diagnostic handlers.
pub fn optimize(
    context: &Context,
    module: &mut Module,
    pipeline: &Pipeline,
    options: &OptimizeOptions,
) -> Result<(), Error> {
    if !jitc_dialect::verify::verify(module.as_operation()) {
        return Err(Error::Verify);
    }
    if pipeline.is_empty() {
        return Ok(());
    }
    let manager = pipeline.build(context)?;
    if let Some(printing) = options.ir_printing {
        let flags = printing.flags();
        manager.enable_ir_printing(&PassIrPrintingOptions {
            before_all: printing.before_all,
            after_all: printing.after_all,
            module_scope: printing.module_scope,
            on_change: printing.after_change,
            on_failure: printing.after_failure,
            flags,
            tree_printing_path: Default::default(),
        });
    }
    if options.no_verify_each {
        manager.enable_verifier(false);
    }
    if options.timing {
        crate::pipeline::enable_timing(&manager);
    }
    manager.run(module).map_err(|_| Error::PassFailed)?;
    if !jitc_dialect::verify::verify(module.as_operation()) {
        return Err(Error::VerifierFailedAfterPipeline(pipeline.render()));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn list_pipelines_snapshot() {
        insta::assert_snapshot!(list());
    }

    #[test]
    fn every_named_pipeline_builds() {
        let context = crate::context::new_context().unwrap();
        for named in PIPELINES {
            let pipeline = Pipeline::named(named.name).unwrap_or_else(|| panic!("{} parses", named.name));
            assert!(!pipeline.is_empty(), "{} is empty", named.name);
            pipeline
                .build(&context)
                .unwrap_or_else(|e| panic!("{} does not build: {e}", named.name));
        }
    }

    #[test]
    fn speculation_takes_the_unroll_limit() {
        assert_eq!(
            Pipeline::speculation(7).render(),
            "meta-unroll{max-ops=7},meta-inline,canonicalize,meta-refine,canonicalize,cse,meta-dce,symbol-dce"
        );
        assert_eq!(
            Pipeline::speculation(UNROLL_MAX_OPS).render(),
            Pipeline::named("speculation").unwrap().render()
        );
    }

    #[test]
    fn profiles_are_named_and_required() {
        let context = crate::context::new_context().unwrap();
        let mut pipeline =
            Pipeline::parse("builtin.module(meta-specialize{profile=p.json}, meta-dce)").unwrap();
        assert_eq!(pipeline.profile_paths().unwrap(), vec!["p.json".to_owned()]);
        let error = pipeline.build(&context).err().unwrap().to_string();
        assert_eq!(
            error,
            "invalid pass pipeline: pass 'meta-specialize' names the profile 'p.json', which was not loaded"
        );
        pipeline.provide_profile("p.json", Profile::new());
        assert!(pipeline.build(&context).is_ok());
    }
}
