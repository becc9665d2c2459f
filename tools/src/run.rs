//! `jitc run`: runs a function on inputs and prints or saves its results,
//! following `iree-run-module`'s conventions.

use crate::{
    compile::MathArg,
    input::{load_profile, merge_into_profile},
    output::Transaction,
};
use clap::{Args, ValueEnum};
use jitc_compiler::{CodegenOptions, GpuOptions, Profile};
use jitc_interp::{Interpreter, Signature, StateStore, Tensor, Value, ValueType, npy};
use jitc_runtime::{CompileCache, CpuModule, Executor, cuda::CudaModule};
use melior::{
    Context,
    ir::{Module, RegionLike, operation::OperationLike},
};
use std::{
    path::{Path, PathBuf},
    process::ExitCode,
};

/// Run a function on inputs and print its results, as iree-run-module does.
///
/// Inputs are given in argument order, each either `@file.npy` or an inline
/// literal `SHAPExTYPE=VALUES` such as `2x3xf32=1 2 3 4 5 6` (brackets and
/// commas are allowed: `2x3xf32=[1 2 3][4 5 6]`). A scalar argument takes
/// `f32=2.5`; an `index` argument takes `index=4`.
///
/// State read with `meta.state_read` comes from `--state`; writes with
/// `meta.state_write` are committed only when the whole run succeeds (a
/// failed guard commits nothing), then printed and saved with
/// `--state-output`.
///
/// Exit status: 0 on success, 1 on any error.
#[derive(Debug, Args)]
#[command(
    after_long_help = "Examples:\n  jitc run examples/matmul.mlir --input \"4x3xf32=1 2 3 4 5 6 7 8 9 10 11 12\" --input 3x5xf32=2\n  jitc run examples/conv.mlir --input @x.npy --input @w.npy --output @y.npy\n  jitc run examples/rnn.mlir --state rnn.h=@h0.npy --input @xs.npy --state-output rnn.h=@h.npy"
)]
pub struct RunArgs {
    #[command(flatten)]
    program: ProgramArgs,

    /// Save the result with the same position to a .npy file, as
    /// `@file.npy`. Repeat for later results.
    #[arg(long = "output", value_name = "@FILE.npy")]
    outputs: Vec<String>,

    /// Save a piece of state after the run: `NAME=@file.npy`.
    #[arg(long = "state-output", value_name = "NAME=@FILE.npy")]
    state_outputs: Vec<String>,

    /// Record what the run observes (argument shapes and scalar values,
    /// branch directions, trip counts, callees) into this profile JSON
    /// file, merging with what the file already holds (under a file lock,
    /// so concurrent runs all count). Feed it to
    /// `jitc opt --meta-specialize=profile=FILE`.
    #[arg(long, value_name = "FILE", conflicts_with = "speculate")]
    profile_out: Option<PathBuf>,

    /// Run speculatively: specialize the function for this profile (shapes,
    /// scalar values, branches and trip counts made constant under guards),
    /// and if a guard fails, re-run the call on the generic program and say
    /// which assumption broke. Decisions are printed on stderr. A profile
    /// recorded on another program is refused; after a failed guard the
    /// relaxed profile is written back to the file.
    #[arg(long, value_name = "PROFILE")]
    speculate: Option<PathBuf>,

    /// Print at most this many elements of a value; larger ones are
    /// summarized (save them with --output).
    #[arg(long, default_value_t = 4096, value_name = "N")]
    print_max_elements: usize,
}

/// The flags `jitc run` and `jitc bench` share: what to run, on what, and
/// how.
#[derive(Debug, Args)]
pub struct ProgramArgs {
    /// The module (.mlir); `-` reads standard input.
    #[arg(value_name = "FILE")]
    pub file: PathBuf,

    /// The function to run.
    #[arg(long, default_value = "main", value_name = "NAME")]
    pub function: String,

    /// An input, in argument order: `@file.npy` or a literal such as
    /// `2x3xf32=1 2 3 4 5 6`. Repeat once per argument.
    #[arg(long = "input", value_name = "VALUE", allow_hyphen_values = true)]
    pub inputs: Vec<String>,

    /// Initial value of a piece of state: `NAME=@file.npy` or
    /// `NAME=SHAPExTYPE=VALUES`.
    #[arg(long = "state", value_name = "NAME=VALUE", allow_hyphen_values = true)]
    pub states: Vec<String>,

    /// What executes the function.
    #[arg(long, value_enum, default_value_t = Backend::Cpu)]
    pub backend: Backend,

    /// With `--backend cpu` or `cuda`: how closely float arithmetic follows
    /// the interpreter (`exact` matches it bit for bit).
    #[arg(long, value_enum, default_value_t = MathArg::Fast)]
    pub math: MathArg,

    /// With `--backend cpu` or `cuda`: check every element load and store
    /// of the compiled kernels against its buffer's extent, as
    /// `-fsanitize=bounds` does; an access out of bounds is an error that
    /// names the op, the buffer and the offset. Slower; for finding
    /// compiler bugs.
    #[arg(long)]
    pub check_bounds: bool,

    /// With `--backend cpu` or `cuda`: fuse by Jittor's rules only, with
    /// no row chains (kernels that share their rows, such as softmax's
    /// three, then each stream their tensors through memory on their own).
    /// Without it, such kernels become one: a loop over rows on the CPU,
    /// one launch of a thread block per row on the GPU (fast math without
    /// `--check-bounds` there).
    #[arg(long)]
    pub jittor_rules: bool,

    /// Row chains on the GPU, which are now the default (`--jittor-rules`
    /// turns them off); kept so that scripts that name it still run.
    #[arg(long, hide = true)]
    pub gpu_row_chains: bool,

    /// Contraction tiles on the GPU, which are now the default
    /// (`--no-gpu-tiles` turns them off); kept so that scripts that name
    /// it still run.
    #[arg(long, hide = true)]
    pub gpu_tiles: bool,

    /// With `--backend cuda`: run contractions (matmul, convolution) with
    /// one thread per output, instead of as shared-memory tiles (the
    /// default: a block of 16 x 16 threads per tile of the output; never
    /// with `--check-bounds`).
    #[arg(long, conflicts_with = "gpu_tiles")]
    pub no_gpu_tiles: bool,

    /// Print to stderr how long each phase of compiling took, and where
    /// the code came from: compiled, or loaded from the disk cache (see
    /// `jitc cache`), where no MLIR or LLVM pass runs.
    #[arg(long)]
    pub timings: bool,
}

impl ProgramArgs {
    /// The CPU code generation options these flags ask for.
    pub fn codegen_options(&self) -> CodegenOptions {
        CodegenOptions {
            math: self.math.into(),
            check_bounds: self.check_bounds,
            jittor_rules: self.jittor_rules,
            ..Default::default()
        }
    }
}

/// Executors of `jitc run` and `jitc bench`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Backend {
    /// The reference interpreter: exact and slow.
    Interp,
    /// Native code (the default): fused kernels compiled through MLIR and
    /// LLVM for this CPU, dynamic shapes included, and the host code
    /// around them (calls, loops, branches, guards, state) run by a host
    /// plan built once (`jitc explain --host` shows it); a function no plan
    /// holds runs its host code in the interpreter.
    Cpu,
    /// An NVIDIA GPU through the CUDA driver: the kernels of static shape
    /// compiled to PTX for the device's architecture; the host code runs as
    /// on the CPU, and each kernel call copies its inputs and results.
    /// Fails with one sentence when there is no driver or GPU.
    Cuda,
}

impl Backend {
    /// The name `--backend` takes.
    pub fn name(self) -> String {
        self.to_possible_value()
            .map(|v| v.get_name().to_owned())
            .unwrap_or_default()
    }
}

/// Runs `jitc run`.
pub fn run(context: &Context, args: RunArgs) -> ExitCode {
    match execute(context, &args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("jitc run: error: {message}");
            ExitCode::FAILURE
        }
    }
}

fn at_path(text: &str) -> Option<&Path> {
    text.strip_prefix('@').map(Path::new)
}

/// Reads `@file.npy` or a literal into a value of type `want`.
fn read_value(text: &str, want: &ValueType) -> Result<Value, String> {
    if let Some(number) = text.strip_prefix("index=") {
        if !matches!(want, ValueType::Index) {
            // The literal's own message would say to write `index=N`.
            return Err(format!(
                "the argument is {want}, not an index; give it as a literal such as `2x3xf32=1 2 3 4 5 6` or as `@file.npy`"
            ));
        }
        return number
            .trim()
            .parse()
            .map(Value::Index)
            .map_err(|_| format!("`{number}` is not an index"));
    }
    let tensor = match at_path(text) {
        Some(path) => npy::read(path)?,
        None => Tensor::parse_literal(text)?,
    };
    Ok(match want {
        ValueType::Scalar(_) if tensor.shape().is_empty() => Value::Scalar(tensor.get(0)),
        _ => Value::tensor(tensor),
    })
}

fn describe(value: &Value) -> String {
    match value {
        Value::Tensor(t) => t.type_name(),
        Value::Scalar(s) => s.element_type().to_string(),
        Value::Index(_) => "index".to_owned(),
    }
}

/// `value` as printed, or its type and size past `max` elements, with the
/// flag that saves it (`--output` for a result, `--state-output` for
/// state).
fn show(value: &Value, max: usize, save: &str) -> String {
    match value {
        Value::Tensor(t) if t.len() > max => format!(
            "{} ({} elements, more than --print-max-elements={max}; save it with {save})",
            t.type_name(),
            t.len()
        ),
        other => other.to_string(),
    }
}

fn execute(context: &Context, args: &RunArgs) -> Result<(), String> {
    let outputs: Vec<&Path> = args
        .outputs
        .iter()
        .map(|o| at_path(o).ok_or_else(|| format!("--output takes `@file.npy`, got `{o}`")))
        .collect::<Result<_, _>>()?;
    let state_outputs: Vec<(&str, &Path)> = args
        .state_outputs
        .iter()
        .map(|s| {
            s.split_once('=')
                .and_then(|(name, path)| Some((name, at_path(path)?)))
                .ok_or_else(|| format!("--state-output takes `NAME=@file.npy`, got `{s}`"))
        })
        .collect::<Result<_, _>>()?;

    let common = &args.program;
    if args.speculate.is_some() && common.backend == Backend::Cuda {
        return Err(
            "--speculate runs on the cpu or interp backend; the cuda backend does not speculate yet".into(),
        );
    }
    let program = Program::load(context, common, "run")?;
    if args.profile_out.is_some() {
        // Sites are named by where ops sit in the file; pin them before any
        // pass could move an op.
        jitc_dialect::profile::pin_sites(program.module.as_operation());
    }
    let interpreter = program.interpreter();
    let signature = interpreter
        .signature(&common.function)
        .map_err(|e| e.to_string())?;
    let function = &common.function;
    if outputs.len() > signature.results.len() {
        return Err(format!(
            "@{function} has {} results but {} --output paths were given",
            signature.results.len(),
            outputs.len()
        ));
    }
    let inputs = read_inputs(&signature, &common.inputs, function)?;
    let mut state = read_states(&common.states)?;

    let results = match (&args.profile_out, &args.speculate) {
        (_, Some(path)) => {
            let profile = load_profile(path)?;
            check_profile(&profile, path, function, &program.module)?;
            let text = &program.source.1;
            let options = jitc_runtime::SessionOptions {
                codegen: common.codegen_options(),
                compile: common.backend == Backend::Cpu,
                log: true,
                ..Default::default()
            };
            let mut session = jitc_runtime::Session::new(context, text, function, options)
                .map_err(|e| e.to_string())?
                .with_profile(profile);
            let results = session.call(inputs, &mut state).map_err(|e| e.to_string())?;
            if session.stats().fallbacks > 0 {
                // Keep the relaxation: the next process must not speculate
                // on the fact that just broke.
                merge_into_profile(path, session.observed())
                    .map_err(|e| format!("cannot write the relaxed profile back: {e}"))?;
                eprintln!(
                    "jitc run: note: a guard failed; the relaxed profile is written back to {}",
                    path.display()
                );
            }
            return finish(args, results, state, &outputs, &state_outputs);
        }
        (None, None) => {
            program.note_schedule(function, "run");
            program.run(function, inputs, &mut state)
        }
        (Some(path), None) => {
            // Read the old profile first: a bad file, or one recorded on
            // another program, is reported before anything runs and is
            // never overwritten.
            if path.exists() {
                check_profile(&load_profile(path)?, path, function, &program.module)?;
            }
            let mut profile = Profile::new();
            let results = program.run_profiled(function, inputs, &mut state, &mut profile)?;
            // Another process may have merged into the file meanwhile:
            // merge this run into what it holds now.
            merge_into_profile(path, &profile)?;
            Ok(results)
        }
    }?;
    finish(args, results, state, &outputs, &state_outputs)
}

/// Saves results and state, all files or none, then prints them. Files
/// come first: a run whose standard output closes early (`| head`) has
/// still committed its state.
fn finish(
    args: &RunArgs,
    results: Vec<Value>,
    state: StateStore,
    outputs: &[&Path],
    state_outputs: &[(&str, &Path)],
) -> Result<(), String> {
    let mut files = Transaction::new();
    for (value, path) in results.iter().zip(outputs) {
        let tensor = match value {
            Value::Tensor(t) => (**t).clone(),
            Value::Scalar(s) => Tensor::scalar(*s),
            Value::Index(i) => Tensor::scalar(jitc_interp::Scalar::I64(*i)),
        };
        files.stage(path, |w| npy::write_to(w, &tensor))?;
    }
    for &(name, path) in state_outputs {
        let value = state
            .get(name)
            .ok_or_else(|| format!("--state-output names '{name}', which the run never set"))?;
        files.stage(path, |w| npy::write_to(w, value))?;
    }
    files.commit()?;
    let mut text = String::new();
    for (i, value) in results.iter().enumerate() {
        text += &format!(
            "result[{i}]: {}\n",
            show(value, args.print_max_elements, "--output")
        );
    }
    for (name, value) in state.iter() {
        text += &format!(
            "state[{name}]: {}\n",
            show(
                &Value::tensor(value.clone()),
                args.print_max_elements,
                "--state-output"
            )
        );
    }
    crate::output::print(&text)
}

/// A module ready to execute: verified, and for `cpu` and `cuda` fused and
/// compiled.
pub struct Program<'c> {
    /// The module (fused, for `cpu` and `cuda`).
    pub module: melior::ir::Module<'c>,
    /// Its compiled kernels, for `cpu` and `cuda`.
    pub compiled: Option<Box<dyn Executor>>,
    /// How long fusing and compiling took.
    pub compile_time: std::time::Duration,
    /// The file's display name and text, read once (standard input can be
    /// read only once): what a second load of the program
    /// ([`Self::from_source`]) or a session parses.
    pub source: (String, String),
}

impl<'c> Program<'c> {
    /// Loads the module `args` name for its backend; `tool` names the
    /// subcommand in notes.
    pub fn load(context: &'c Context, args: &ProgramArgs, tool: &str) -> Result<Self, String> {
        Self::load_with(context, None, args, tool)
    }

    /// [`Self::load`], compiling for the CPU through `cache` (a compile of
    /// a module `cache` has seen is a copy of its fused module, no
    /// compilation) when one is given.
    pub fn load_with(
        context: &'c Context,
        cache: Option<&CompileCache<'c>>,
        args: &ProgramArgs,
        tool: &str,
    ) -> Result<Self, String> {
        let source = crate::input::read_source(&args.file)?;
        Self::from_source(context, cache, args, tool, source)
    }

    /// [`Self::load_with`] from the `source` (name and text) read before.
    pub fn from_source(
        context: &'c Context,
        cache: Option<&CompileCache<'c>>,
        args: &ProgramArgs,
        tool: &str,
        source: (String, String),
    ) -> Result<Self, String> {
        if args.gpu_tiles && args.backend != Backend::Cuda {
            return Err("--gpu-tiles needs --backend cuda".into());
        }
        if args.no_gpu_tiles && args.backend != Backend::Cuda {
            return Err("--no-gpu-tiles needs --backend cuda".into());
        }
        if args.gpu_tiles && args.check_bounds {
            eprintln!("jitc {tool}: note: {}", crate::compile::GPU_TILES_UNCHECKED);
        }
        let mut module = crate::input::parse_source(context, &source.0, &source.1)?;
        // A missing function or a declaration is reported before anything
        // is compiled.
        runnable(&module, &args.function)?;
        let start = std::time::Instant::now();
        let recording = args.timings.then(jitc_compiler::timings::Recording::start);
        let mut origin = "compiled";
        let compiled: Option<Box<dyn Executor>> = match args.backend {
            Backend::Interp => None,
            Backend::Cpu => {
                let options = args.codegen_options();
                let compiled = match cache {
                    Some(cache) => cache.compile(&mut module, &options),
                    None => CpuModule::compile_with(context, &mut module, &options),
                }
                .map_err(|e| e.to_string())?;
                if compiled.disk_hit() {
                    origin = "loaded from the disk cache";
                }
                Some(Box::new(compiled))
            }
            Backend::Cuda => {
                let options = GpuOptions {
                    math: args.math.into(),
                    check_bounds: args.check_bounds,
                    jittor_rules: args.jittor_rules,
                    tiles: !args.no_gpu_tiles,
                    ..Default::default()
                };
                let compiled =
                    CudaModule::compile(context, &mut module, &options).map_err(|e| e.to_string())?;
                Some(Box::new(compiled))
            }
        };
        if let Some(recording) = recording {
            let title = format!("jitc {tool}: compile timings (wall clock); the code was {origin}");
            eprint!(
                "{}",
                crate::compile::report(&title, &recording.finish(), start.elapsed())
            );
        }
        for (kernel, reason) in compiled.iter().flat_map(|c| c.interpreted_kernels()) {
            eprintln!("jitc {tool}: note: kernel @{kernel} runs in the interpreter: {reason}");
        }
        Ok(Self {
            module,
            compiled,
            compile_time: start.elapsed(),
            source,
        })
    }

    /// Runs `function` on the compiled executor (on the GPU as a device
    /// plan when the cuda backend has one for it), else in the interpreter.
    pub fn run(
        &self,
        function: &str,
        args: Vec<Value>,
        state: &mut StateStore,
    ) -> Result<Vec<Value>, String> {
        match &self.compiled {
            Some(compiled) => compiled
                .run(&self.module, function, args, state)
                .map_err(|e| e.to_string()),
            None => self
                .interpreter()
                .run(function, args, state)
                .map_err(|e| e.to_string()),
        }
    }

    /// [`Self::run`], also merging what the run observed into `profile`.
    pub fn run_profiled(
        &self,
        function: &str,
        args: Vec<Value>,
        state: &mut StateStore,
        profile: &mut Profile,
    ) -> Result<Vec<Value>, String> {
        match &self.compiled {
            Some(compiled) => compiled
                .run_profiled(&self.module, function, args, state, profile)
                .map_err(|e| e.to_string()),
            None => self
                .interpreter()
                .run_profiled(function, args, state, profile)
                .map_err(|e| e.to_string()),
        }
    }

    /// Says when `function`'s host code keeps it off the device (the cuda
    /// backend without a device plan); `tool` names the subcommand.
    pub fn note_schedule(&self, function: &str, tool: &str) {
        if let Some(note) = self
            .compiled
            .as_ref()
            .and_then(|c| c.schedule_note(&self.module, function))
        {
            eprintln!("jitc {tool}: note: {note}");
        }
    }

    /// An interpreter for the host schedule, handing kernels to native code
    /// when there is some.
    pub fn interpreter(&self) -> Interpreter<'c, '_> {
        match &self.compiled {
            Some(compiled) => Interpreter::new(&self.module).with_kernels(compiled.as_ref()),
            None => Interpreter::new(&self.module),
        }
    }
}

/// Refuses a profile recorded on another program: its record of
/// `function` must have been made on the argument types `module` declares.
fn check_profile(profile: &Profile, path: &Path, function: &str, module: &Module) -> Result<(), String> {
    let types = jitc_dialect::ops::functions(module.body())
        .get(function)
        .map(|&op| jitc_dialect::profile::argument_types(op))
        .unwrap_or_default();
    profile
        .check_signature(function, &types)
        .and_then(|()| profile.check_sites(module.as_operation()))
        .map_err(|e| format!("{}: {e}", path.display()))
}

/// Reads the `--input`s of `function`, checking count, shape and type.
pub fn read_inputs(signature: &Signature, texts: &[String], function: &str) -> Result<Vec<Value>, String> {
    if texts.len() != signature.inputs.len() {
        return Err(format!(
            "@{function} takes {} arguments ({}) but {} --input {} given",
            signature.inputs.len(),
            signature
                .inputs
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(", "),
            texts.len(),
            if texts.len() == 1 { "was" } else { "were" }
        ));
    }
    let mut inputs = Vec::new();
    for (i, (text, want)) in texts.iter().zip(&signature.inputs).enumerate() {
        let value = read_value(text, want).map_err(|e| format!("input {i} (`{text}`): {e}"))?;
        if !want.accepts(&value) {
            return Err(format!(
                "input {i} (`{text}`) is {} but argument {i} of @{function} is {want}",
                describe(&value)
            ));
        }
        inputs.push(value);
    }
    Ok(inputs)
}

/// Reads `--state NAME=VALUE` entries.
pub fn read_states(entries: &[String]) -> Result<StateStore, String> {
    let mut state = StateStore::new();
    for entry in entries {
        let (name, text) = entry
            .split_once('=')
            .ok_or_else(|| format!("--state takes `NAME=VALUE`, got `{entry}`"))?;
        if name.trim().is_empty() {
            return Err(format!("--state `{entry}` names no state (NAME=VALUE)"));
        }
        if state.get(name).is_some() {
            return Err(format!("--state gives '{name}' twice"));
        }
        let tensor = match at_path(text) {
            Some(path) => npy::read(path),
            None => Tensor::parse_literal(text),
        }
        .map_err(|e| format!("state '{name}': {e}"))?;
        state.insert(name, tensor);
    }
    Ok(state)
}

/// Whether `module` has a function `name` with a body to run: the error
/// `jitc run`, `bench` and `cache explain` give before compiling anything.
pub fn runnable(module: &melior::ir::Module, name: &str) -> Result<(), String> {
    Interpreter::new(module)
        .signature(name)
        .map_err(|e| e.to_string())?;
    if let Some(&function) = jitc_dialect::ops::functions(module.body()).get(name)
        && function.region(0).ok().and_then(|r| r.first_block()).is_none()
    {
        return Err(format!("@{name} is a declaration, with no body to run"));
    }
    Ok(())
}
