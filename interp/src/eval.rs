//! Executing functions op by op.
//!
//! Every value lives in an environment keyed by its SSA identity; tensors
//! are shared (`Rc`) rather than copied. Regions run one block each: the
//! structured control flow of `scf` needs no more, and a multi-block region
//! is reported as unsupported.

use crate::{
    Error,
    affine::{Map, Set},
    scalar::{self, Scalar, ScalarError},
    tensor::{Buffer, Tensor},
};
use jitc_dialect::{
    kinds::{ElementType, ReduceKind},
    ops::{
        BinaryOp, GuardOp, IntegerSet, ReindexOp, ReindexReduceOp, StateReadOp, StateWriteOp, TernaryOp,
        UnaryOp, string_attribute, tensor_type,
    },
    profile::{ArgumentProfile, Observed, Profile, site_id},
    verify::location_line,
};
use melior::ir::{
    Attribute, AttributeLike, BlockLike, Module, OperationRef, RegionLike, Type, TypeLike,
    Value as MlirValue, ValueLike,
    attribute::TypeAttribute,
    operation::OperationLike,
    r#type::{DimSize, FunctionType, RankedTensorType, ShapedTypeLike},
};
use std::{
    collections::{BTreeMap, HashMap},
    fmt,
    rc::Rc,
};

/// A runtime value.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// A tensor.
    Tensor(Rc<Tensor>),
    /// A scalar of an element type (an `arith` value, not a rank-0 tensor).
    Scalar(Scalar),
    /// An `index`.
    Index(i64),
}

impl Value {
    /// A tensor value.
    pub fn tensor(tensor: Tensor) -> Self {
        Self::Tensor(Rc::new(tensor))
    }
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Tensor(t) => write!(f, "{t}"),
            Self::Scalar(s) => write!(f, "{}={s}", s.element_type()),
            Self::Index(i) => write!(f, "index={i}"),
        }
    }
}

/// The type of a function argument or result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ValueType {
    /// A ranked tensor; `None` for a `?` dimension.
    Tensor(Vec<Option<usize>>, ElementType),
    /// A scalar.
    Scalar(ElementType),
    /// `index`.
    Index,
}

impl ValueType {
    /// Classifies an MLIR type; `None` for types the interpreter lacks.
    pub fn from_mlir(r#type: Type) -> Option<Self> {
        if let Ok(tensor) = RankedTensorType::try_from(r#type) {
            let shape = (0..tensor.rank())
                .map(|d| match tensor.dim_size(d) {
                    Ok(DimSize::Static(n)) => Some(n as usize),
                    _ => None,
                })
                .collect();
            return Some(Self::Tensor(shape, ElementType::from_type(tensor.element())?));
        }
        // SAFETY: `r#type` is a live type.
        if unsafe { mlir_sys::mlirTypeIsAIndex(r#type.to_raw()) } {
            return Some(Self::Index);
        }
        ElementType::from_type(r#type).map(Self::Scalar)
    }

    /// Whether `value` has this type.
    pub fn accepts(&self, value: &Value) -> bool {
        match (self, value) {
            (Self::Tensor(shape, element), Value::Tensor(t)) => {
                t.element_type() == *element
                    && t.shape().len() == shape.len()
                    && shape
                        .iter()
                        .zip(t.shape())
                        .all(|(want, got)| want.is_none_or(|w| w == *got))
            }
            (Self::Scalar(element), Value::Scalar(s)) => s.element_type() == *element,
            (Self::Index, Value::Index(_)) => true,
            _ => false,
        }
    }
}

impl fmt::Display for ValueType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Tensor(shape, element) => {
                f.write_str("tensor<")?;
                for d in shape {
                    match d {
                        Some(n) => write!(f, "{n}x")?,
                        None => f.write_str("?x")?,
                    }
                }
                write!(f, "{element}>")
            }
            Self::Scalar(element) => write!(f, "{element}"),
            Self::Index => f.write_str("index"),
        }
    }
}

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
    values: BTreeMap<String, Tensor>,
}

impl StateStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    /// The value of `name`, if set.
    pub fn get(&self, name: &str) -> Option<&Tensor> {
        self.values.get(name)
    }

    /// Sets `name`.
    pub fn insert(&mut self, name: impl Into<String>, value: Tensor) {
        self.values.insert(name.into(), value);
    }

    /// Every entry, by name.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &Tensor)> {
        self.values.iter().map(|(k, v)| (k.as_str(), v))
    }
}

/// Runs `meta.fused` kernels another way, e.g. as compiled code; the
/// interpreter keeps everything else (the host schedule: calls, control
/// flow, guards, state).
pub trait KernelRunner {
    /// Runs kernel `name` on `args`. `None` when this runner cannot, and
    /// the interpreter runs the kernel's body instead.
    fn run_kernel(&self, name: &str, args: &[Value]) -> Option<Result<Vec<Value>, String>>;
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

/// Calls may nest this deep before a run is stopped.
const MAX_CALL_DEPTH: usize = 256;

struct Run<'s> {
    state: &'s StateStore,
    pending: Vec<(String, Tensor)>,
    depth: usize,
    /// What this run observed, when profiling.
    profile: Option<Profile>,
}

type Env = HashMap<usize, Value>;

fn key(value: MlirValue) -> usize {
    value.to_raw().ptr as usize
}

pub(crate) use jitc_dialect::verify::op_name;

/// The type of a `func.func`.
fn function_type<'c>(function: OperationRef<'c, '_>) -> Result<FunctionType<'c>, Error> {
    function
        .attribute("function_type")
        .ok()
        .and_then(|a| TypeAttribute::try_from(a).ok())
        .and_then(|t| FunctionType::try_from(t.value()).ok())
        .ok_or_else(|| eval_error(function, "has no function type"))
}

/// The error for an op the interpreter does not run.
pub(crate) fn unsupported(op: OperationRef) -> Error {
    Error::Unsupported {
        op: op_name(op),
        line: location_line(op.location()),
    }
}

/// An evaluation error at `op`.
pub(crate) fn eval_error(op: OperationRef, message: impl fmt::Display) -> Error {
    Error::Eval {
        op: op_name(op),
        line: location_line(op.location()),
        message: message.to_string(),
    }
}

impl<'c, 'a> Interpreter<'c, 'a> {
    /// Prepares to run the `func.func`s of `module`.
    pub fn new(module: &'a Module<'c>) -> Self {
        let mut functions = BTreeMap::new();
        let mut next = module.body().first_operation();
        while let Some(op) = next {
            next = op.next_in_block();
            if op_name(op) == "func.func"
                && let Some(name) = op.attribute("sym_name").ok().and_then(string_attribute)
            {
                functions.insert(name.to_owned(), op);
            }
        }
        Self {
            functions,
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
        let function = self.function(name)?;
        let function_type = function_type(function)?;
        Ok(args
            .iter()
            .enumerate()
            .map(|(i, arg)| {
                let declared = function_type.input(i).map(|t| t.to_string()).unwrap_or_default();
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
            .collect())
    }

    fn run_with(
        &self,
        name: &str,
        args: Vec<Value>,
        state: &mut StateStore,
        profile: Option<Profile>,
    ) -> Result<(Vec<Value>, Option<Profile>), Error> {
        let signature = self.signature(name)?;
        if args.len() != signature.inputs.len() {
            return Err(Error::Arguments(format!(
                "@{name} takes {} arguments but {} were given",
                signature.inputs.len(),
                args.len()
            )));
        }
        for (i, (want, got)) in signature.inputs.iter().zip(&args).enumerate() {
            if !want.accepts(got) {
                return Err(Error::Arguments(format!(
                    "argument {i} of @{name} must be {want}, got {got}"
                )));
            }
        }
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
            state.insert(name, value);
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
            return outcome.map_err(|message| eval_error(function, format!("kernel @{name}: {message}")));
        }
        run.depth += 1;
        let mut env = Env::new();
        let body = function.region(0).map_err(|e| eval_error(function, e))?;
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
            "meta.reindex" => single(reindex(env, op)?),
            "meta.reindex_reduce" => single(reindex_reduce(env, op)?),
            "meta.unary" | "meta.binary" | "meta.ternary" => single(elementwise(env, op)?),
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
                let value = run.state.get(name).ok_or_else(|| Error::StateMissing {
                    name: name.to_owned(),
                    line: location_line(op.location()),
                })?;
                let value = Value::tensor(value.clone());
                check_result(op, 0, &value)?;
                single(value)
            }
            "meta.state_write" => {
                let write = StateWriteOp::cast(op).ok_or_else(|| eval_error(op, "is malformed"))?;
                let value = tensor_operand(env, op, 0)?;
                run.pending.push((
                    write.state_name().unwrap_or_default().to_owned(),
                    (*value).clone(),
                ));
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
            "scf.if" => {
                let condition = as_bool(op, &operand(env, op, 0)?)?;
                if let Some(profile) = &mut run.profile {
                    profile.record_branch(site_id(op), condition);
                }
                let region = op
                    .region(if condition { 0 } else { 1 })
                    .map_err(|e| eval_error(op, e))?;
                match self.region(run, env, op, region, Vec::new())? {
                    Flow::Yield(values) => Ok(values),
                    _ => Err(eval_error(op, "region does not end in scf.yield")),
                }
            }
            "scf.while" => self.scf_while(run, env, op),
            _ if name.starts_with("arith.") => crate::arith::eval(op, &operands(env, op)?).map(|v| vec![v]),
            _ if name.starts_with("tensor.") => {
                crate::tensor_ops::eval(op, &operands(env, op)?).map(|v| vec![v])
            }
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

impl Value {
    /// An index of the same kind as `self` (used for induction variables).
    fn clone_as_index(&self, value: i64) -> Value {
        match self {
            Value::Scalar(s) => Value::Scalar(Scalar::I64(value).cast(s.element_type())),
            _ => Value::Index(value),
        }
    }
}

pub(crate) fn operand(env: &Env, op: OperationRef, index: usize) -> Result<Value, Error> {
    let value = op.operand(index).map_err(|e| eval_error(op, e))?;
    env.get(&key(value))
        .cloned()
        .ok_or_else(|| eval_error(op, format!("operand {index} has no value")))
}

pub(crate) fn operands(env: &Env, op: OperationRef) -> Result<Vec<Value>, Error> {
    (0..op.operand_count()).map(|i| operand(env, op, i)).collect()
}

fn tensor_operand(env: &Env, op: OperationRef, index: usize) -> Result<Rc<Tensor>, Error> {
    match operand(env, op, index)? {
        Value::Tensor(t) => Ok(t),
        other => Err(eval_error(
            op,
            format!("operand {index} is {other}, not a tensor"),
        )),
    }
}

pub(crate) fn as_index(op: OperationRef, value: &Value) -> Result<i64, Error> {
    match value {
        Value::Index(i) => Ok(*i),
        Value::Scalar(s) if !s.element_type().is_float() => Ok(s.as_i64()),
        other => Err(eval_error(op, format!("expected an index, got {other}"))),
    }
}

fn as_bool(op: OperationRef, value: &Value) -> Result<bool, Error> {
    match value {
        Value::Scalar(Scalar::I1(b)) => Ok(*b),
        Value::Tensor(t) if t.element_type() == ElementType::I1 && t.len() == 1 => Ok(t.get(0).is_nonzero()),
        other => Err(eval_error(op, format!("expected an i1, got {other}"))),
    }
}

/// The declared type of result `index`.
fn result_type(op: OperationRef, index: usize) -> Result<ValueType, Error> {
    let result = op.result(index).map_err(|e| eval_error(op, e))?;
    ValueType::from_mlir(result.r#type())
        .ok_or_else(|| eval_error(op, format!("result type {} is not supported", result.r#type())))
}

/// Checks a computed value against the declared result type.
pub(crate) fn check_result(op: OperationRef, index: usize, value: &Value) -> Result<(), Error> {
    let declared = result_type(op, index)?;
    if declared.accepts(value) {
        Ok(())
    } else {
        let got = match value {
            Value::Tensor(t) => t.type_name(),
            other => other.to_string(),
        };
        Err(eval_error(
            op,
            format!("computed {got} but the result type is {declared}"),
        ))
    }
}

/// The result's shape: static sizes from the type, `?` sizes from `sizes`.
fn result_shape(op: OperationRef, sizes: &[i64]) -> Result<(Vec<usize>, ElementType), Error> {
    let ValueType::Tensor(shape, element) = result_type(op, 0)? else {
        return Err(eval_error(op, "result is not a tensor"));
    };
    let mut dynamic = sizes.iter();
    let shape = shape
        .into_iter()
        .map(|d| match d {
            Some(n) => Ok(n),
            None => match dynamic.next() {
                Some(&n) if n >= 0 => Ok(n as usize),
                Some(&n) => Err(eval_error(op, format!("dynamic size {n} is negative"))),
                None => Err(eval_error(op, "a dynamic size has no operand")),
            },
        })
        .collect::<Result<Vec<usize>, _>>()?;
    crate::tensor::checked_len(&shape).map_err(|e| eval_error(op, e))?;
    Ok((shape, element))
}

/// Splits the trailing index operands into dynamic sizes and symbols.
fn index_operands(env: &Env, op: OperationRef, first: usize) -> Result<(Vec<i64>, Vec<i64>), Error> {
    let result = op.result(0).map_err(|e| eval_error(op, e))?;
    let dynamic = tensor_type(result.into())
        .map(|t| {
            (0..t.rank())
                .filter(|&d| matches!(t.dim_size(d), Ok(DimSize::Dynamic)))
                .count()
        })
        .unwrap_or(0);
    let values: Vec<i64> = (first..op.operand_count())
        .map(|i| as_index(op, &operand(env, op, i)?))
        .collect::<Result<_, _>>()?;
    let split = dynamic.min(values.len());
    Ok((values[..split].to_vec(), values[split..].to_vec()))
}

fn conditions(op: OperationRef, sets: Option<Result<Vec<IntegerSet>, ()>>) -> Result<Vec<Set>, Error> {
    match sets {
        None => Ok(Vec::new()),
        Some(Ok(sets)) => Ok(sets.into_iter().map(Set::from_mlir).collect()),
        Some(Err(())) => Err(eval_error(op, "overflow_conditions is malformed")),
    }
}

/// Advances a row-major multi-index; returns false after the last one.
fn advance(index: &mut [i64], shape: &[usize]) -> bool {
    for d in (0..shape.len()).rev() {
        index[d] += 1;
        if (index[d] as usize) < shape[d] {
            return true;
        }
        index[d] = 0;
    }
    false
}

/// The flat position of `index` in `shape`, if it is in bounds.
fn flat(index: &[i64], shape: &[usize]) -> Option<usize> {
    let mut position = 0usize;
    for (&i, &n) in index.iter().zip(shape) {
        if i < 0 || i as usize >= n {
            return None;
        }
        position = position * n + i as usize;
    }
    Some(position)
}

fn any_contains(sets: &[Set], dims: &[i64], symbols: &[i64], op: OperationRef) -> Result<bool, Error> {
    for set in sets {
        if set.contains(dims, symbols).map_err(|e| eval_error(op, e))? {
            return Ok(true);
        }
    }
    Ok(false)
}

fn reindex(env: &Env, op: OperationRef) -> Result<Value, Error> {
    let view = ReindexOp::cast(op).ok_or_else(|| eval_error(op, "is malformed"))?;
    let input = tensor_operand(env, op, 0)?;
    let map = Map::from_mlir(
        view.indices()
            .ok_or_else(|| eval_error(op, "has no indices map"))?,
    );
    let (sizes, symbols) = index_operands(env, op, 1)?;
    let (shape, element) = result_shape(op, &sizes)?;
    let sets = conditions(op, view.overflow_conditions())?;
    let overflow = match view.overflow_value() {
        Some(attribute) => {
            scalar_attribute(attribute).ok_or_else(|| eval_error(op, "overflow_value is not a number"))?
        }
        None => Scalar::zero(element),
    }
    .cast(element);
    let mut out = Buffer::filled(overflow, shape.iter().product());
    let mut mapped = Mapped {
        map: &map,
        sets: &sets,
        symbols: &symbols,
        op,
    };
    mapped.for_each(&shape, |position, source| {
        if let Some(from) = flat(source, input.shape()) {
            out.set(position, input.get(from));
        }
        Ok(())
    })?;
    Ok(Value::tensor(
        Tensor::new(shape, out).expect("the buffer was sized for the shape"),
    ))
}

fn reindex_reduce(env: &Env, op: OperationRef) -> Result<Value, Error> {
    let view = ReindexReduceOp::cast(op).ok_or_else(|| eval_error(op, "is malformed"))?;
    let kind: ReduceKind = view.kind().ok_or_else(|| eval_error(op, "has an unknown kind"))?;
    let input = tensor_operand(env, op, 0)?;
    let map = Map::from_mlir(
        view.indices()
            .ok_or_else(|| eval_error(op, "has no indices map"))?,
    );
    let (sizes, symbols) = index_operands(env, op, 1)?;
    let (shape, element) = result_shape(op, &sizes)?;
    let sets = conditions(op, view.overflow_conditions())?;
    let mut out = Buffer::filled(scalar::identity(kind, element), shape.iter().product());
    let mut mapped = Mapped {
        map: &map,
        sets: &sets,
        symbols: &symbols,
        op,
    };
    mapped.for_each(input.shape(), |position, target| {
        if let Some(to) = flat(target, &shape) {
            let value =
                scalar::reduce(kind, out.get(to), input.get(position)).map_err(|e| eval_error(op, e))?;
            out.set(to, value);
        }
        Ok(())
    })?;
    Ok(Value::tensor(
        Tensor::new(shape, out).expect("the buffer was sized for the shape"),
    ))
}

/// An index map with its overflow conditions, walked over a shape: the
/// iteration both `reindex` (over output indices) and `reindex_reduce`
/// (over input indices) are made of.
struct Mapped<'m, 'c, 'a> {
    map: &'m Map,
    sets: &'m [Set],
    symbols: &'m [i64],
    op: OperationRef<'c, 'a>,
}

impl Mapped<'_, '_, '_> {
    /// Calls `visit(position, map(index))` for every index of `shape` in
    /// row-major order (`position` is its flat position), skipping indices
    /// that lie in an overflow condition.
    fn for_each(
        &mut self,
        shape: &[usize],
        mut visit: impl FnMut(usize, &[i64]) -> Result<(), Error>,
    ) -> Result<(), Error> {
        if shape.contains(&0) {
            return Ok(());
        }
        let mut index = vec![0i64; shape.len()];
        let mut mapped = Vec::with_capacity(self.map.results.len());
        let mut position = 0;
        loop {
            if !any_contains(self.sets, &index, self.symbols, self.op)? {
                self.map
                    .eval_into(&index, self.symbols, &mut mapped)
                    .map_err(|e| eval_error(self.op, e))?;
                visit(position, &mapped)?;
            }
            position += 1;
            if !advance(&mut index, shape) {
                return Ok(());
            }
        }
    }
}

fn elementwise(env: &Env, op: OperationRef) -> Result<Value, Error> {
    let inputs: Vec<Rc<Tensor>> = (0..op.operand_count())
        .map(|i| tensor_operand(env, op, i))
        .collect::<Result<_, _>>()?;
    let shape = inputs[0].shape().to_vec();
    if let Some(other) = inputs.iter().find(|t| t.shape() != shape) {
        return Err(eval_error(
            op,
            format!(
                "operands have shapes {:?} and {:?} at run time",
                shape,
                other.shape()
            ),
        ));
    }
    let ValueType::Tensor(_, element) = result_type(op, 0)? else {
        return Err(eval_error(op, "result is not a tensor"));
    };
    let mut out = Buffer::filled(Scalar::zero(element), inputs[0].len());
    let compute = |i: usize| -> Result<Scalar, ScalarError> {
        if let Some(unary) = UnaryOp::cast(op) {
            let kind = unary
                .kind()
                .ok_or_else(|| ScalarError::Type("unknown kind".into()))?;
            scalar::unary(kind, inputs[0].get(i), element)
        } else if let Some(binary) = BinaryOp::cast(op) {
            let kind = binary
                .kind()
                .ok_or_else(|| ScalarError::Type("unknown kind".into()))?;
            scalar::binary(kind, inputs[0].get(i), inputs[1].get(i))
        } else if TernaryOp::cast(op).is_some() {
            Ok(if inputs[0].get(i).is_nonzero() {
                inputs[1].get(i)
            } else {
                inputs[2].get(i)
            })
        } else {
            Err(ScalarError::Type("not an element-wise op".into()))
        }
    };
    for i in 0..out.len() {
        out.set(i, compute(i).map_err(|e| eval_error(op, e))?);
    }
    let value = Value::tensor(Tensor::new(shape, out).expect("the buffer was sized for the shape"));
    check_result(op, 0, &value)?;
    Ok(value)
}

/// The number in an integer or float attribute, with its type.
pub(crate) fn scalar_attribute(attribute: Attribute) -> Option<Scalar> {
    let element = ElementType::from_type(attribute.r#type())?;
    // SAFETY: `attribute` is a live attribute; each getter matches its kind.
    unsafe {
        if mlir_sys::mlirAttributeIsAFloat(attribute.to_raw()) {
            Some(Scalar::F64(mlir_sys::mlirFloatAttrGetValueDouble(attribute.to_raw())).cast(element))
        } else if mlir_sys::mlirAttributeIsAInteger(attribute.to_raw()) {
            let value = mlir_sys::mlirIntegerAttrGetValueInt(attribute.to_raw());
            Some(Scalar::I64(value).cast(element))
        } else {
            None
        }
    }
}
