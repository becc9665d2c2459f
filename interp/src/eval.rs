//! Executing functions op by op: the host schedule of calls, `scf` control
//! flow, guards and state. Ops that compute a value from their operand
//! values are handed to `arith`, `tensor_ops` and `meta_ops`.
//!
//! Every value lives in an environment keyed by its SSA identity; tensors
//! are shared (`Rc`) rather than copied. Regions run one block each: the
//! structured control flow of `scf` needs no more, and a multi-block region
//! is reported as unsupported.

use crate::{
    arith,
    error::{Error, eval_error, unsupported},
    meta_ops,
    scalar::Scalar,
    tensor::Tensor,
    tensor_ops,
    value::{Value, ValueType, as_bool, as_index, check_result},
};
use jitc_dialect::{
    ops::{GuardOp, StateReadOp, StateWriteOp, string_attribute},
    profile::{ArgumentProfile, Observed, Profile, site_id},
    verify::{location_line, op_name},
};
use melior::ir::{
    BlockLike, Module, OperationRef, RegionLike, Type, Value as MlirValue, ValueLike,
    attribute::TypeAttribute, operation::OperationLike, r#type::FunctionType,
};
use std::{
    collections::{BTreeMap, HashMap},
    sync::Arc,
};

/// A function's argument and result types.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Signature {
    /// Argument types, in order.
    pub inputs: Vec<ValueType>,
    /// Result types, in order.
    pub results: Vec<ValueType>,
}

/// Named frontend state, held by the caller across runs.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StateStore {
    /// Shared, so a read and a commit pass the tensor on without a copy.
    values: BTreeMap<String, Arc<Tensor>>,
}

impl StateStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    /// The value of `name`, if set.
    pub fn get(&self, name: &str) -> Option<&Tensor> {
        self.values.get(name).map(|v| &**v)
    }

    /// The value of `name`, if set, shared.
    pub fn get_shared(&self, name: &str) -> Option<&Arc<Tensor>> {
        self.values.get(name)
    }

    /// Sets `name`.
    pub fn insert(&mut self, name: impl Into<String>, value: Tensor) {
        self.values.insert(name.into(), Arc::new(value));
    }

    /// Sets `name` to a shared tensor (no copy).
    pub fn insert_shared(&mut self, name: impl Into<String>, value: Arc<Tensor>) {
        self.values.insert(name.into(), value);
    }

    /// Every entry, by name.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &Tensor)> {
        self.values.iter().map(|(k, v)| (k.as_str(), &**v))
    }
}

/// Runs `meta.fused` kernels another way, e.g. as compiled code; the
/// interpreter keeps everything else (the host schedule: calls, control
/// flow, guards, state).
pub trait KernelRunner {
    /// Runs kernel `name` on `args`. `None` when this runner cannot, and
    /// the interpreter runs the kernel's body instead.
    fn run_kernel(
        &self,
        name: &str,
        args: &[Value],
    ) -> Option<Result<Vec<Value>, jitc_dialect::KernelFailure>>;
}

/// What a profile records of a call's arguments, `declared_types` being
/// the function's argument types as the profile spells them
/// (`jitc_dialect::profile::argument_types`): shapes, and the values of
/// scalars, indices and rank-0 tensors. Shared with the runtime's host
/// plans, so both record the same facts.
pub fn argument_profiles(declared_types: &[String], args: &[Value]) -> Vec<ArgumentProfile> {
    args.iter()
        .enumerate()
        .map(|(i, arg)| {
            let declared = declared_types.get(i).cloned().unwrap_or_default();
            let scalar = |s: Scalar| match s {
                Scalar::F32(x) => Observed::Float(x as f64),
                Scalar::F64(x) => Observed::Float(x),
                Scalar::I32(x) => Observed::Int(x as i64),
                Scalar::I64(x) => Observed::Int(x),
                Scalar::I1(x) => Observed::Int(x as i64),
            };
            match arg {
                Value::Tensor(t) => ArgumentProfile {
                    r#type: declared,
                    shape: t.shape().iter().map(|&d| Some(d as u64)).collect(),
                    value: t.shape().is_empty().then(|| scalar(t.get(0))),
                },
                Value::Scalar(s) => ArgumentProfile {
                    r#type: declared,
                    shape: Vec::new(),
                    value: Some(scalar(*s)),
                },
                Value::Index(n) => ArgumentProfile {
                    r#type: declared,
                    shape: Vec::new(),
                    value: Some(Observed::Int(*n)),
                },
            }
        })
        .collect()
}

/// Runs functions of one module.
pub struct Interpreter<'c, 'a> {
    functions: BTreeMap<String, OperationRef<'c, 'a>>,
    kernels: Option<&'a dyn KernelRunner>,
}

enum Flow {
    Return(Vec<Value>),
    Yield(Vec<Value>),
    Condition(bool, Vec<Value>),
}

thread_local! {
    /// Runs the interpreter has started on this thread ([`runs_started`]).
    static RUNS_STARTED: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// How many runs ([`Interpreter::run`], [`Interpreter::run_profiled`]) the
/// interpreter has started on the calling thread: a test's proof that an
/// executor kept the interpreter off its path (per thread, so tests that
/// run beside it do not count).
pub fn runs_started() -> u64 {
    RUNS_STARTED.with(std::cell::Cell::get)
}

/// Calls may nest this deep before a run is stopped.
const MAX_CALL_DEPTH: usize = 256;

struct Run<'s> {
    state: &'s StateStore,
    pending: Vec<(String, Arc<Tensor>)>,
    depth: usize,
    /// What this run observed, when profiling.
    profile: Option<Profile>,
}

type Env = HashMap<usize, Value>;

fn key(value: MlirValue) -> usize {
    value.to_raw().ptr as usize
}

/// The type of a `func.func`.
fn function_type<'c>(function: OperationRef<'c, '_>) -> Result<FunctionType<'c>, Error> {
    function
        .attribute("function_type")
        .ok()
        .and_then(|a| TypeAttribute::try_from(a).ok())
        .and_then(|t| FunctionType::try_from(t.value()).ok())
        .ok_or_else(|| eval_error(function, "has no function type"))
}

impl<'c, 'a> Interpreter<'c, 'a> {
    /// Prepares to run the `func.func`s of `module`.
    pub fn new(module: &'a Module<'c>) -> Self {
        Self {
            functions: jitc_dialect::ops::functions(module.body()),
            kernels: None,
        }
    }

    /// Hands `meta.fused` kernels to `runner`.
    pub fn with_kernels(mut self, runner: &'a dyn KernelRunner) -> Self {
        self.kernels = Some(runner);
        self
    }

    /// Names of the functions, sorted.
    pub fn function_names(&self) -> Vec<&str> {
        self.functions.keys().map(String::as_str).collect()
    }

    fn function(&self, name: &str) -> Result<OperationRef<'c, 'a>, Error> {
        self.functions
            .get(name)
            .copied()
            .ok_or_else(|| Error::NoFunction {
                name: name.to_owned(),
                available: self.functions.keys().cloned().collect(),
            })
    }

    /// The signature of function `name`.
    pub fn signature(&self, name: &str) -> Result<Signature, Error> {
        let function = self.function(name)?;
        let function_type = function_type(function)?;
        let classify = |t: Result<Type, _>| {
            t.ok()
                .and_then(|t| ValueType::from_mlir(t).ok_or_else(|| t.to_string()).ok())
                .ok_or_else(|| {
                    eval_error(
                        function,
                        "has an argument or result type the interpreter cannot hold",
                    )
                })
        };
        Ok(Signature {
            inputs: (0..function_type.input_count())
                .map(|i| classify(function_type.input(i)))
                .collect::<Result<_, _>>()?,
            results: (0..function_type.result_count())
                .map(|i| classify(function_type.result(i)))
                .collect::<Result<_, _>>()?,
        })
    }

    /// Runs function `name` on `args`. State writes are committed to `state`
    /// only when the whole run succeeds; a failed guard changes nothing.
    pub fn run(&self, name: &str, args: Vec<Value>, state: &mut StateStore) -> Result<Vec<Value>, Error> {
        self.run_with(name, args, state, None).map(|(results, _)| results)
    }

    /// [`Self::run`], also recording into `profile` what the run observed:
    /// the arguments of `name`, the direction of every `scf.if`, the trip
    /// count of every `scf.for` and `scf.while`, and the callee of every
    /// `func.call` (calls of `meta.fused` kernels are not user calls and are
    /// not recorded). A run that fails records nothing.
    pub fn run_profiled(
        &self,
        name: &str,
        args: Vec<Value>,
        state: &mut StateStore,
        profile: &mut Profile,
    ) -> Result<Vec<Value>, Error> {
        let mut observed = Profile::new();
        observed.runs = 1;
        observed.record_entry(name, self.argument_profiles(name, &args)?);
        let (results, observed) = self.run_with(name, args, state, Some(observed))?;
        if let Some(observed) = observed {
            profile
                .merge(&observed)
                .map_err(|e| Error::Arguments(format!("the profile is of another program: {e}")))?;
        }
        Ok(results)
    }

    fn argument_profiles(&self, name: &str, args: &[Value]) -> Result<Vec<ArgumentProfile>, Error> {
        let declared_types = jitc_dialect::profile::argument_types(self.function(name)?);
        Ok(argument_profiles(&declared_types, args))
    }

    fn run_with(
        &self,
        name: &str,
        args: Vec<Value>,
        state: &mut StateStore,
        profile: Option<Profile>,
    ) -> Result<(Vec<Value>, Option<Profile>), Error> {
        RUNS_STARTED.with(|runs| runs.set(runs.get() + 1));
        let signature = self.signature(name)?;
        check_arguments(name, &signature.inputs, &args)?;
        let mut run = Run {
            state,
            pending: Vec::new(),
            depth: 0,
            profile,
        };
        let results = self.call(&mut run, name, args)?;
        let pending = std::mem::take(&mut run.pending);
        let profile = run.profile.take();
        for (name, value) in pending {
            state.insert_shared(name, value);
        }
        Ok((results, profile))
    }

    fn call(&self, run: &mut Run, name: &str, args: Vec<Value>) -> Result<Vec<Value>, Error> {
        let function = self.function(name)?;
        if run.depth >= MAX_CALL_DEPTH {
            return Err(eval_error(
                function,
                format!("calls nest deeper than {MAX_CALL_DEPTH}"),
            ));
        }
        if let Some(runner) = self.kernels
            && function.has_attribute("meta.fused")
            && let Some(outcome) = runner.run_kernel(name, &args)
        {
            // A failure the kernel locates (a division by zero) is reported
            // at its op, as when the interpreter runs the body.
            return outcome.map_err(|failure| {
                Error::from_kernel(failure, |message| {
                    eval_error(function, format!("kernel @{name}: {message}"))
                })
            });
        }
        let body = function.region(0).map_err(|e| eval_error(function, e))?;
        if body.first_block().is_none() {
            return Err(eval_error(
                function,
                format!("@{name} is a declaration, with no body to run"),
            ));
        }
        run.depth += 1;
        let mut env = Env::new();
        let flow = self.region(run, &mut env, function, body, args);
        run.depth -= 1;
        match flow? {
            Flow::Return(values) => Ok(values),
            _ => Err(eval_error(function, "body does not end in func.return")),
        }
    }

    fn region(
        &self,
        run: &mut Run,
        env: &mut Env,
        parent: OperationRef,
        region: melior::ir::RegionRef,
        args: Vec<Value>,
    ) -> Result<Flow, Error> {
        let Some(block) = region.first_block() else {
            return Ok(Flow::Yield(Vec::new()));
        };
        if block.next_in_region().is_some() {
            return Err(Error::Unsupported {
                op: format!("{} with several blocks", op_name(parent)),
                line: location_line(parent.location()),
            });
        }
        if block.argument_count() != args.len() {
            return Err(eval_error(
                parent,
                format!(
                    "region takes {} values, got {}",
                    block.argument_count(),
                    args.len()
                ),
            ));
        }
        for (i, arg) in args.into_iter().enumerate() {
            let argument = block.argument(i).map_err(|e| eval_error(parent, e))?;
            env.insert(key(argument.into()), arg);
        }
        let mut next = block.first_operation();
        while let Some(op) = next {
            next = op.next_in_block();
            match op_name(op).as_str() {
                "func.return" => return Ok(Flow::Return(operands(env, op)?)),
                "scf.yield" => return Ok(Flow::Yield(operands(env, op)?)),
                "scf.condition" => {
                    let mut values = operands(env, op)?;
                    if values.is_empty() {
                        return Err(eval_error(op, "has no condition"));
                    }
                    let condition = as_bool(op, &values.remove(0))?;
                    return Ok(Flow::Condition(condition, values));
                }
                _ => {
                    let results = self.op(run, env, op)?;
                    for (i, value) in results.into_iter().enumerate() {
                        let result = op.result(i).map_err(|e| eval_error(op, e))?;
                        env.insert(key(result.into()), value);
                    }
                }
            }
        }
        Err(eval_error(parent, "block has no terminator"))
    }

    fn op(&self, run: &mut Run, env: &mut Env, op: OperationRef) -> Result<Vec<Value>, Error> {
        let name = op_name(op);
        let single = |value: Value| Ok(vec![value]);
        match name.as_str() {
            "meta.reindex" => single(meta_ops::reindex(op, &operands(env, op)?)?),
            "meta.reindex_reduce" => single(meta_ops::reindex_reduce(op, &operands(env, op)?)?),
            "meta.unary" | "meta.binary" | "meta.ternary" => {
                single(meta_ops::elementwise(op, &operands(env, op)?)?)
            }
            "meta.guard" => {
                let guard = GuardOp::cast(op).ok_or_else(|| eval_error(op, "is malformed"))?;
                let condition = operand(env, op, 0)?;
                if !as_bool(op, &condition)? {
                    return Err(Error::GuardFailed {
                        id: guard.id().unwrap_or(-1),
                        reason: guard.reason().unwrap_or_default().to_owned(),
                        line: location_line(op.location()),
                        site: op
                            .attribute("site")
                            .ok()
                            .and_then(string_attribute)
                            .map(str::to_owned),
                    });
                }
                Ok(Vec::new())
            }
            "meta.state_read" => {
                let read = StateReadOp::cast(op).ok_or_else(|| eval_error(op, "is malformed"))?;
                let name = read.state_name().unwrap_or_default();
                let value = run.state.get_shared(name).ok_or_else(|| Error::StateMissing {
                    name: name.to_owned(),
                    line: location_line(op.location()),
                })?;
                let value = Value::Tensor(Arc::clone(value));
                check_result(op, 0, &value)?;
                single(value)
            }
            "meta.state_write" => {
                let write = StateWriteOp::cast(op).ok_or_else(|| eval_error(op, "is malformed"))?;
                let value = tensor_operand(env, op, 0)?;
                run.pending
                    .push((write.state_name().unwrap_or_default().to_owned(), value));
                Ok(Vec::new())
            }
            "func.call" => {
                let callee = op
                    .attribute("callee")
                    .ok()
                    .and_then(|a| melior::ir::attribute::FlatSymbolRefAttribute::try_from(a).ok())
                    .map(|a| a.value().to_owned())
                    .ok_or_else(|| eval_error(op, "has no callee"))?;
                if let Some(profile) = &mut run.profile
                    && !self.function(&callee)?.has_attribute("meta.fused")
                {
                    profile.record_call(site_id(op), &callee);
                }
                self.call(run, &callee, operands(env, op)?)
            }
            "scf.for" => self.scf_for(run, env, op),
            "scf.if" | "scf.index_switch" => {
                let taken = if name == "scf.if" {
                    let condition = as_bool(op, &operand(env, op, 0)?)?;
                    if let Some(profile) = &mut run.profile {
                        profile.record_branch(site_id(op), condition);
                    }
                    if condition { 0 } else { 1 }
                } else {
                    // Region 0 is the default; region k + 1 is case k.
                    let selector = as_index(op, &operand(env, op, 0)?)?;
                    let cases = tensor_ops::i64_array(op, "cases")?;
                    cases.iter().position(|&c| c == selector).map_or(0, |k| k + 1)
                };
                let region = op.region(taken).map_err(|e| eval_error(op, e))?;
                match self.region(run, env, op, region, Vec::new())? {
                    Flow::Yield(values) => Ok(values),
                    _ => Err(eval_error(op, "region does not end in scf.yield")),
                }
            }
            "scf.while" => self.scf_while(run, env, op),
            _ if name.starts_with("arith.") => arith::eval(op, &operands(env, op)?).map(|v| vec![v]),
            _ if name.starts_with("tensor.") => tensor_ops::eval(op, &operands(env, op)?).map(|v| vec![v]),
            _ => Err(unsupported(op)),
        }
    }

    fn scf_for(&self, run: &mut Run, env: &mut Env, op: OperationRef) -> Result<Vec<Value>, Error> {
        let mut values = operands(env, op)?;
        if values.len() < 3 {
            return Err(eval_error(op, "needs bounds and a step"));
        }
        let mut carried = values.split_off(3);
        let (lower, upper, step) = (
            as_index(op, &values[0])?,
            as_index(op, &values[1])?,
            as_index(op, &values[2])?,
        );
        if step <= 0 {
            return Err(eval_error(op, format!("step must be positive, got {step}")));
        }
        let body = op.region(0).map_err(|e| eval_error(op, e))?;
        let mut iv = lower;
        let mut trips = 0;
        while iv < upper {
            trips += 1;
            let mut args = vec![values[0].clone_as_index(iv)];
            args.extend(carried);
            carried = match self.region(run, env, op, body, args)? {
                Flow::Yield(values) => values,
                _ => return Err(eval_error(op, "body does not end in scf.yield")),
            };
            iv = iv
                .checked_add(step)
                .ok_or_else(|| eval_error(op, "induction variable overflows"))?;
        }
        if let Some(profile) = &mut run.profile {
            profile.record_loop(site_id(op), trips);
        }
        Ok(carried)
    }

    fn scf_while(&self, run: &mut Run, env: &mut Env, op: OperationRef) -> Result<Vec<Value>, Error> {
        let mut values = operands(env, op)?;
        let before = op.region(0).map_err(|e| eval_error(op, e))?;
        let after = op.region(1).map_err(|e| eval_error(op, e))?;
        let mut trips = 0;
        loop {
            let (go, forwarded) = match self.region(run, env, op, before, values)? {
                Flow::Condition(go, forwarded) => (go, forwarded),
                _ => return Err(eval_error(op, "'before' region does not end in scf.condition")),
            };
            if !go {
                if let Some(profile) = &mut run.profile {
                    profile.record_loop(site_id(op), trips);
                }
                return Ok(forwarded);
            }
            trips += 1;
            values = match self.region(run, env, op, after, forwarded)? {
                Flow::Yield(values) => values,
                _ => return Err(eval_error(op, "'after' region does not end in scf.yield")),
            };
        }
    }
}

fn operand(env: &Env, op: OperationRef, index: usize) -> Result<Value, Error> {
    let value = op.operand(index).map_err(|e| eval_error(op, e))?;
    env.get(&key(value))
        .cloned()
        .ok_or_else(|| eval_error(op, format!("operand {index} has no value")))
}

fn operands(env: &Env, op: OperationRef) -> Result<Vec<Value>, Error> {
    (0..op.operand_count()).map(|i| operand(env, op, i)).collect()
}

fn tensor_operand(env: &Env, op: OperationRef, index: usize) -> Result<Arc<Tensor>, Error> {
    match operand(env, op, index)? {
        Value::Tensor(t) => Ok(t),
        other => Err(eval_error(
            op,
            format!("operand {index} is {other}, not a tensor"),
        )),
    }
}

/// Checks `args` against the `inputs` of `@function`'s signature: their
/// number, then each one's type and shape (`?` accepts any size), in the
/// words every backend uses.
pub fn check_arguments(function: &str, inputs: &[ValueType], args: &[Value]) -> Result<(), Error> {
    if args.len() != inputs.len() {
        return Err(Error::argument_count(function, inputs.len(), args.len()));
    }
    match inputs
        .iter()
        .zip(args)
        .enumerate()
        .find(|(_, (want, got))| !want.accepts(got))
    {
        Some((i, (want, got))) => Err(Error::refused_argument(i, function, want, &got.describe())),
        None => Ok(()),
    }
}
