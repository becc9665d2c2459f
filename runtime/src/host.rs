//! The host plan: a function's host code (everything around its kernels)
//! read from the IR once and run without it, by a tight loop over
//! numbered value slots, as IREE's VM runs its command buffers.
//!
//! After `meta-fuse`, a function's body is host code: calls of `meta.fused`
//! kernels, calls of other functions, `scf.for`/`scf.if`/`scf.while`/
//! `scf.index_switch`,
//! `arith` and `tensor` ops on scalars, indices and small tensors,
//! `meta.guard` and `meta.state_read`/`meta.state_write`. [`HostPlan::build`]
//! resolves all of it once:
//! - every SSA value becomes a slot of its function's frame (one numbering
//!   per function; nested regions share their function's slots);
//! - constants are materialized at build time and only shared (an `Arc`
//!   clone) at run time;
//! - `arith` and `tensor` ops are decoded into the interpreter's
//!   [`ArithOp`]/[`TensorOp`], so host arithmetic has one meaning in both;
//! - callees are numbered, and kernels are named for the executor's
//!   [`Kernels`], which runs them natively.
//!
//! ```text
//! func.func @main(%xs, %w, %u) {              params: s0 s1 s2
//!   %h0 = meta.state_read "rnn.h"             state_read rnn.h -> s3
//!   %c0, %c1, %c5 = arith.constant ...        const -> s4, s5, s6
//!   %h = scf.for %t = %c0 to %c5 step %c1     for s4..s6 step s5, iv s7,
//!        iter_args(%hp = %h0) {                 carried s8 <- s3, -> s9
//!     %a = call @main_fused_0(%xs, %t, %w)      kernel main_fused_0 (s0 s7 s1) -> s10
//!     ...
//!     scf.yield %hn                             yield s12
//!   }
//!   meta.state_write %h "rnn.h"               state_write rnn.h <- s9
//!   return %h                                 return s9
//! }
//! ```
//!
//! What the plan cannot hold fails the build with a reason that names the
//! op (a kernel that was not compiled, an op the interpreter does not
//! know); the runtime then runs that function in the interpreter, and
//! says so ([`crate::Executor::schedule_note`]). Running a plan never
//! enters the interpreter ([`jitc_interp::runs_started`] proves it in the
//! tests).
//!
//! Semantics are the interpreter's (`interp/src/eval.rs`), failures
//! included and worded the same: state writes are deferred and committed
//! only when the whole run succeeds, a failed guard or a kernel error
//! commits nothing, calls nest at most [`MAX_CALL_DEPTH`] deep. Profiling
//! runs (`run_profiled`) stay in the interpreter, which records what a
//! profile needs.
//!
//! An executor may queue its kernels without waiting for them
//! ([`Kernels::defers`]: the GPU with deferred checks). The plan then
//! keeps the call sites of the kernels queued and settles them
//! ([`Kernels::settle`]) before host code reads a value a kernel made,
//! after every [`SETTLE_AFTER`] calls, at the end of a loop iteration that
//! queued none, and when the run ends, whether it succeeded or not: the
//! first queued
//! kernel that failed fails the run at its own call site, ahead of any
//! error, failed guard or missing state that came after it, so the run
//! fails as it would have had each kernel been waited for.

use jitc_dialect::{
    ops::{GuardOp, StateReadOp, StateWriteOp, string_attribute},
    profile::{Profile, site_id},
    verify::{location_line, op_name},
};
use jitc_interp::{ArithOp, Error, Signature, StateStore, TensorOp, Value, ValueType};
use melior::ir::{
    BlockLike, BlockRef, Module, OperationRef, RegionLike, ValueLike,
    attribute::{FlatSymbolRefAttribute, TypeAttribute},
    operation::OperationLike,
    r#type::FunctionType,
};
use std::collections::{BTreeMap, HashMap};

/// Calls may nest this deep before a run is stopped (the interpreter's
/// limit).
pub(crate) const MAX_CALL_DEPTH: usize = 256;

/// Kernel calls queued without waiting ([`Kernels::defers`]) after which
/// the plan settles even though host code has read nothing: it bounds
/// what the queue holds (a status record per call), and how far a run goes
/// past a kernel that failed before it stops.
pub(crate) const SETTLE_AFTER: usize = 1024;

/// Runs kernels for a plan, on values of the executor's own kind
/// ([`Kernels::Value`]): the CPU's host values, or values that stay in GPU
/// memory from the kernel that made them to the kernels that read them
/// (`crate::cuda::OnDevice`). The plan asks for a value on the host only
/// where host code reads it: a host op's operands, a condition, a loop
/// bound or switch selector, and a state write when the run commits.
pub(crate) trait Kernels {
    /// What a slot of the plan holds.
    type Value: Clone;

    /// Runs kernel `name` on `args`; `Err` is the reason it failed (the
    /// plan adds the kernel's name and line). `None` when this call cannot
    /// run natively (a kernel over a dynamic domain whose sizes do not fit
    /// it): the run stops with [`Stop::Interpret`]. An argument that dies
    /// at the call is moved in, so when nothing else holds its buffer, a
    /// result may be written into it
    /// (`jitc_compiler::KernelSignature::in_place`).
    fn launch(
        &self,
        name: &str,
        args: Vec<Self::Value>,
    ) -> Option<Result<Vec<Self::Value>, jitc_compiler::KernelFailure>>;

    /// A value made on the host (a host op's result, a state read, an
    /// induction variable) as a slot holds it.
    fn hold(&self, value: Value) -> Self::Value;

    /// A constant of the plan as a slot holds it, each time the constant
    /// runs (an executor may make it once and share it).
    fn constant(&self, value: &Value) -> Result<Self::Value, String> {
        Ok(self.hold(value.clone()))
    }

    /// `value` on the host; `Err` says why it could not be brought there.
    fn to_host(&self, value: &Self::Value) -> Result<Value, String>;

    /// `value`, which a kernel is about to read, in the form kernels read
    /// it, when that differs (a host tensor copied to the device): the
    /// slot keeps it, so later kernels (a loop's next iterations) read it
    /// without another copy. `None`: as it is.
    fn to_device(&self, _value: &Self::Value) -> Result<Option<Self::Value>, String> {
        Ok(None)
    }

    /// Whether `value` is a tensor.
    fn is_tensor(&self, value: &Self::Value) -> bool;

    /// Checks `args` against the inputs of function `name`, with the
    /// interpreter's messages.
    fn check_arguments(&self, name: &str, inputs: &[ValueType], args: &[Self::Value]) -> Result<(), Error>;

    /// Whether [`Self::launch`] only queues its kernel and returns its
    /// results before the kernel ran, leaving its failure to
    /// [`Self::settle`]. The plan then settles before host code reads a
    /// value that is not [`Self::made_on_host`], and before a run ends,
    /// either way.
    fn defers(&self) -> bool {
        false
    }

    /// Whether `value` was made on the host (an argument, a host op's
    /// result, a state read), so that no kernel has to finish before host
    /// code reads it.
    fn made_on_host(&self, _value: &Self::Value) -> bool {
        true
    }

    /// Waits for the kernels queued since the last settle; the first that
    /// failed, in the order they were queued: its number in that order and
    /// its failure.
    fn settle(&self) -> Result<(), (usize, jitc_compiler::KernelFailure)> {
        Ok(())
    }
}

/// Runs kernels on host values: each executor whose kernels read and
/// write host memory (the CPU), or that copies every kernel call's values
/// to its device and back (the GPU's profiling runs).
pub(crate) trait HostKernels {
    /// [`Kernels::launch`] on host values.
    fn launch_on_host(
        &self,
        name: &str,
        args: Vec<Value>,
    ) -> Option<Result<Vec<Value>, jitc_compiler::KernelFailure>>;
}

impl<T: HostKernels + ?Sized> Kernels for T {
    type Value = Value;

    fn launch(
        &self,
        name: &str,
        args: Vec<Value>,
    ) -> Option<Result<Vec<Value>, jitc_compiler::KernelFailure>> {
        self.launch_on_host(name, args)
    }

    fn hold(&self, value: Value) -> Value {
        value
    }

    fn to_host(&self, value: &Value) -> Result<Value, String> {
        Ok(value.clone())
    }

    fn is_tensor(&self, value: &Value) -> bool {
        matches!(value, Value::Tensor(_))
    }

    fn check_arguments(&self, name: &str, inputs: &[ValueType], args: &[Value]) -> Result<(), Error> {
        jitc_interp::check_arguments(name, inputs, args)
    }
}

/// Why a run of a plan stopped before its end.
#[derive(Debug)]
pub(crate) enum Stop {
    /// It failed, as the interpreter would have.
    Failed(Error),
    /// A kernel call could not run natively; nothing was committed, and
    /// the function must run in the interpreter instead
    /// ([`run_host_code`]).
    Interpret,
}

impl From<Error> for Stop {
    fn from(error: Error) -> Self {
        Stop::Failed(error)
    }
}

/// Runs function `name` of `module` on `args`, profiling into `profile`
/// when given: as `plan` when the function has one (`Err`: why not), else
/// in the interpreter with the kernels of `runner`. When one of the plan's
/// kernel calls cannot run natively, the function runs again from the start
/// in the interpreter; the first run committed nothing, so the second sees
/// the same state.
#[allow(clippy::too_many_arguments)]
pub(crate) fn run_host_code<K: Kernels<Value = Value> + ?Sized>(
    plan: &Result<HostPlan, String>,
    kernels: &K,
    runner: &dyn jitc_interp::KernelRunner,
    module: &Module,
    name: &str,
    args: Vec<Value>,
    state: &mut StateStore,
    mut profile: Option<&mut Profile>,
) -> Result<Vec<Value>, Error> {
    let interpret = |args: Vec<Value>, state: &mut StateStore, profile: Option<&mut Profile>| {
        let interpreter = jitc_interp::Interpreter::new(module).with_kernels(runner);
        match profile {
            None => interpreter.run(name, args, state),
            Some(profile) => interpreter.run_profiled(name, args, state, profile),
        }
    };
    let Ok(plan) = plan else {
        return interpret(args, state, profile);
    };
    // The plan owns its arguments (it frees each after its last use), so
    // they are kept for a second run only when one may be needed.
    let retry = plan.may_interpret.then(|| args.clone());
    let stopped = match profile.as_deref_mut() {
        None => plan.run(kernels, args, state),
        Some(profile) => plan.run_profiled(kernels, args, state, profile),
    };
    match stopped {
        Ok(values) => Ok(values),
        Err(Stop::Failed(error)) => Err(error),
        Err(Stop::Interpret) => interpret(retry.unwrap_or_default(), state, profile),
    }
}

/// Where an op is, for its errors, and its id in a profile.
#[derive(Debug, Clone)]
struct Site {
    op: String,
    line: Option<usize>,
    /// `jitc_dialect::profile::site_id`.
    id: String,
}

impl Site {
    fn of(op: OperationRef) -> Self {
        Self {
            op: op_name(op),
            line: location_line(op.location()),
            id: site_id(op),
        }
    }

    fn error(&self, message: impl Into<String>) -> Error {
        Error::Eval {
            op: self.op.clone(),
            line: self.line,
            message: message.into(),
        }
    }
}

/// An `arith` or `tensor` op, decoded by the interpreter.
#[derive(Debug)]
enum HostOp {
    Arith(ArithOp),
    Tensor(TensorOp),
}

impl HostOp {
    fn apply(&self, args: &[Value]) -> Result<Value, String> {
        match self {
            HostOp::Arith(op) => op.apply(args),
            HostOp::Tensor(op) => op.apply(args),
        }
    }
}

/// One op of a block.
#[derive(Debug)]
enum Op {
    /// A materialized constant.
    Const {
        value: Value,
        to: usize,
    },
    /// An `arith` or `tensor` op on host values.
    Host {
        op: HostOp,
        args: Vec<usize>,
        to: usize,
        site: Site,
    },
    /// A compiled kernel.
    Kernel {
        name: String,
        args: Vec<usize>,
        to: Vec<usize>,
        /// The kernel's `func.func`, where the interpreter reports its
        /// failures.
        site: Site,
    },
    /// A call of function number `function` of the plan.
    Call {
        function: usize,
        args: Vec<usize>,
        to: Vec<usize>,
        site: Site,
    },
    For {
        bounds: [usize; 3],
        inits: Vec<usize>,
        body: Block,
        to: Vec<usize>,
        site: Site,
    },
    If {
        condition: usize,
        then: Block,
        otherwise: Block,
        to: Vec<usize>,
        site: Site,
    },
    While {
        inits: Vec<usize>,
        before: Block,
        after: Block,
        to: Vec<usize>,
        site: Site,
    },
    /// `scf.index_switch`: the block of the case equal to the selector,
    /// else the default.
    Switch {
        selector: usize,
        cases: Vec<(i64, Block)>,
        default: Block,
        to: Vec<usize>,
        site: Site,
    },
    Guard {
        condition: usize,
        id: i64,
        reason: String,
        site_name: Option<String>,
        site: Site,
    },
    StateRead {
        name: String,
        r#type: ValueType,
        to: usize,
        site: Site,
    },
    StateWrite {
        name: String,
        value: usize,
        site: Site,
    },
}

/// How a block ends.
#[derive(Debug)]
enum End {
    Return(Vec<usize>),
    Yield(Vec<usize>),
    Condition(usize, Vec<usize>, Site),
}

/// A block: the slots its arguments go to, its ops, and its terminator.
#[derive(Debug)]
struct Block {
    params: Vec<usize>,
    ops: Vec<Op>,
    end: End,
    /// After op `i`, the slots of this block that nothing reads later
    /// (their last reader, or their definition when nothing reads them):
    /// cleared then, so a dead tensor goes back to the buffer pool and
    /// the next allocation of its size reuses it.
    dead: Vec<Vec<usize>>,
    /// Per parameter, whether anything reads it: an argument nothing reads
    /// is dropped on entry instead of stored and cleared (a specialized
    /// function whose arguments all became constants under entry guards
    /// spent about 8 ns per argument on that).
    read: Vec<bool>,
}

impl Block {
    fn new(params: Vec<usize>, ops: Vec<Op>, end: End) -> Self {
        let mut block = Self {
            params,
            ops,
            end,
            dead: Vec::new(),
            read: Vec::new(),
        };
        let mut reads = Vec::new();
        block.reads(&mut reads);
        block.read = block.params.iter().map(|p| reads.contains(p)).collect();
        block.dead = block.liveness();
        block
    }

    /// Every slot this block's ops and terminator read, nested blocks
    /// included.
    fn reads(&self, out: &mut Vec<usize>) {
        for op in &self.ops {
            op.reads(out);
        }
        self.end.reads(out);
    }

    /// [`Self::dead`]: slots defined here (parameters and results of this
    /// block's ops) that the terminator does not read, each after the last
    /// op that reads it; a value read inside a nested block lives until
    /// the op that owns the block is done.
    fn liveness(&self) -> Vec<Vec<usize>> {
        // Parameters nothing reads are never stored (see `read`).
        let mut defined: Vec<(usize, usize)> = self
            .params
            .iter()
            .zip(&self.read)
            .filter(|(_, read)| **read)
            .map(|(&s, _)| (s, 0))
            .collect();
        let mut last: HashMap<usize, usize> = HashMap::new();
        let mut reads = Vec::new();
        for (i, op) in self.ops.iter().enumerate() {
            reads.clear();
            op.reads(&mut reads);
            for &slot in &reads {
                last.insert(slot, i);
            }
            defined.extend(op.results().iter().map(|&s| (s, i)));
        }
        let mut kept = Vec::new();
        self.end.reads(&mut kept);
        let mut dead = vec![Vec::new(); self.ops.len()];
        for (slot, definition) in defined {
            if kept.contains(&slot) || self.ops.is_empty() {
                continue;
            }
            let after = last.get(&slot).copied().unwrap_or(definition).max(definition);
            dead[after].push(slot);
        }
        dead
    }
}

impl End {
    /// The slots the terminator reads.
    fn reads(&self, out: &mut Vec<usize>) {
        match self {
            End::Return(slots) | End::Yield(slots) => out.extend(slots),
            End::Condition(condition, slots, _) => {
                out.push(*condition);
                out.extend(slots);
            }
        }
    }
}

impl Op {
    /// The slots this op reads, nested blocks included.
    fn reads(&self, out: &mut Vec<usize>) {
        match self {
            Op::Const { .. } | Op::StateRead { .. } => {}
            Op::Host { args, .. } | Op::Kernel { args, .. } | Op::Call { args, .. } => out.extend(args),
            Op::For {
                bounds, inits, body, ..
            } => {
                out.extend(bounds);
                out.extend(inits);
                body.reads(out);
            }
            Op::If {
                condition,
                then,
                otherwise,
                ..
            } => {
                out.push(*condition);
                then.reads(out);
                otherwise.reads(out);
            }
            Op::While {
                inits, before, after, ..
            } => {
                out.extend(inits);
                before.reads(out);
                after.reads(out);
            }
            Op::Switch {
                selector,
                cases,
                default,
                ..
            } => {
                out.push(*selector);
                for (_, block) in cases {
                    block.reads(out);
                }
                default.reads(out);
            }
            Op::Guard { condition, .. } => out.push(*condition),
            Op::StateWrite { value, .. } => out.push(*value),
        }
    }

    /// The slots this op defines in its own block.
    fn results(&self) -> Vec<usize> {
        match self {
            Op::Const { to, .. } | Op::Host { to, .. } | Op::StateRead { to, .. } => {
                vec![*to]
            }
            Op::Kernel { to, .. }
            | Op::Call { to, .. }
            | Op::For { to, .. }
            | Op::If { to, .. }
            | Op::While { to, .. }
            | Op::Switch { to, .. } => to.clone(),
            Op::Guard { .. } | Op::StateWrite { .. } => Vec::new(),
        }
    }
}

/// One function of the plan.
#[derive(Debug)]
struct Function {
    name: String,
    site: Site,
    signature: Signature,
    /// Its argument types as a profile spells them.
    declared: Vec<String>,
    slots: usize,
    body: Block,
}

/// The host code of one function and of every function it calls.
#[derive(Debug)]
pub(crate) struct HostPlan {
    functions: Vec<Function>,
    /// Some kernel of the plan may decline a call ([`Kernels::launch`]
    /// returns `None`), so a run may stop with [`Stop::Interpret`].
    may_interpret: bool,
}

enum Flow<V> {
    Return(Vec<V>),
    Yield(Vec<V>),
    Condition(bool, Vec<V>),
}

/// The state of one run: what it reads and the writes it defers (each
/// with its `meta.state_write`).
struct Run<'s, 'p, V> {
    state: &'s StateStore,
    pending: Vec<(&'p str, V, &'p Site)>,
    depth: usize,
    /// What this run observed, when profiling (the interpreter's facts:
    /// branch directions, trip counts, callees).
    profile: Option<Profile>,
    /// The kernel calls queued and not yet settled, where the kernels
    /// defer ([`Kernels::defers`]): each kernel's name and call site.
    queued: Vec<(&'p str, &'p Site)>,
    /// Kernel calls queued in the whole run.
    launched: usize,
}

impl<V> Run<'_, '_, V> {
    /// At the end of a loop iteration that queued no kernel call, given
    /// the count of calls before it: settles what earlier code queued, so
    /// a loop of host code alone after a kernel that failed (which may not
    /// end, steered by host values) does not run on where waiting for each
    /// call would have stopped at the kernel. An iteration that queued
    /// calls (a loop of kernels) does not wait.
    fn settle_if_idle<K: Kernels + ?Sized>(&mut self, kernels: &K, launched: usize) -> Result<(), Stop> {
        if self.launched == launched {
            self.settle(kernels)?;
        }
        Ok(())
    }

    /// Waits for the kernel calls queued so far ([`Kernels::settle`]); the
    /// first that failed fails the run, at its own call site.
    fn settle<K: Kernels + ?Sized>(&mut self, kernels: &K) -> Result<(), Stop> {
        if self.queued.is_empty() {
            return Ok(());
        }
        let queued = std::mem::take(&mut self.queued);
        kernels.settle().map_err(|(number, failure)| {
            let Some((name, site)) = queued.get(number) else {
                return Stop::Failed(Error::Arguments(format!(
                    "kernel call {number} failed, but only {} were queued",
                    queued.len()
                )));
            };
            Error::from_kernel(failure, |message| {
                site.error(format!("kernel @{name}: {message}"))
            })
            .into()
        })
    }
}

fn key(value: melior::ir::Value) -> usize {
    value.to_raw().ptr as usize
}

/// How a compiled kernel runs, for [`HostPlan::build`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Compiled {
    /// Natively, every call.
    Always,
    /// Natively when the call's sizes fit the kernel (a kernel over a
    /// dynamic domain); [`Kernels::launch`] declines the others.
    MayDecline,
}

/// Whether kernel `name` was compiled (`Some`: how it runs), for
/// [`HostPlan::build`]: `Err` is the reason the compiler gave in `skipped`
/// for leaving it out.
pub(crate) fn compiled_or_skipped(
    compiled: Option<Compiled>,
    skipped: &[(String, String)],
    name: &str,
) -> Result<Compiled, String> {
    if let Some(compiled) = compiled {
        return Ok(compiled);
    }
    Err(skipped
        .iter()
        .find(|(kernel, _)| kernel == name)
        .map_or_else(|| "it was not compiled".to_owned(), |(_, reason)| reason.clone()))
}

/// `'op' at line N`, for messages.
pub(crate) fn describe(op: OperationRef) -> String {
    match location_line(op.location()) {
        Some(line) => format!("'{}' at line {line}", op_name(op)),
        None => format!("'{}'", op_name(op)),
    }
}

/// The callee of a `func.call`.
pub(crate) fn callee(op: OperationRef) -> Option<String> {
    op.attribute("callee")
        .ok()
        .and_then(|a| FlatSymbolRefAttribute::try_from(a).ok())
        .map(|a| a.value().to_owned())
}

fn value_type(t: melior::ir::Type) -> Result<ValueType, String> {
    ValueType::from_mlir(t).ok_or_else(|| format!("type {t} cannot be held"))
}

fn signature(function: OperationRef) -> Result<Signature, String> {
    let function_type = function
        .attribute("function_type")
        .ok()
        .and_then(|a| TypeAttribute::try_from(a).ok())
        .and_then(|t| FunctionType::try_from(t.value()).ok())
        .ok_or_else(|| format!("{} has no function type", describe(function)))?;
    let types = |types: Vec<Result<melior::ir::Type, _>>| {
        types
            .into_iter()
            .map(|t| t.map_err(|_| "a missing type".to_owned()).and_then(value_type))
            .collect::<Result<Vec<_>, _>>()
    };
    Ok(Signature {
        inputs: types(
            (0..function_type.input_count())
                .map(|i| function_type.input(i))
                .collect(),
        )?,
        results: types(
            (0..function_type.result_count())
                .map(|i| function_type.result(i))
                .collect(),
        )?,
    })
}

/// Builds the plans of one module's functions.
struct Builder<'c, 'a, 'k> {
    functions: BTreeMap<String, OperationRef<'c, 'a>>,
    compiled: &'k dyn Fn(&str) -> Result<Compiled, String>,
    /// Whether some kernel reached so far may decline a call.
    may_interpret: bool,
    /// Plan functions by name, in the order they were reached.
    numbers: HashMap<String, usize>,
    plan: Vec<Option<Function>>,
}

/// The slots of one function being built.
struct Slots {
    of: HashMap<usize, usize>,
    count: usize,
}

impl Slots {
    fn define(&mut self, value: melior::ir::Value) -> usize {
        let slot = self.count;
        self.count += 1;
        self.of.insert(key(value), slot);
        slot
    }

    fn get(&self, op: OperationRef, value: melior::ir::Value) -> Result<usize, String> {
        self.of
            .get(&key(value))
            .copied()
            .ok_or_else(|| format!("{} uses a value defined outside its function", describe(op)))
    }

    fn operands(&self, op: OperationRef) -> Result<Vec<usize>, String> {
        (0..op.operand_count())
            .map(|i| {
                let value = op
                    .operand(i)
                    .map_err(|_| format!("{} lacks an operand", describe(op)))?;
                self.get(op, value)
            })
            .collect()
    }

    fn results(&mut self, op: OperationRef) -> Result<Vec<usize>, String> {
        (0..op.result_count())
            .map(|i| {
                let value = op
                    .result(i)
                    .map_err(|_| format!("{} lacks a result", describe(op)))?;
                Ok(self.define(value.into()))
            })
            .collect()
    }
}

impl HostPlan {
    /// The plan of function `name` of `module` (fused), whose kernels run
    /// natively where `compiled` is `Ok` (`Err`: why a kernel was not
    /// compiled). `Err` says, for a note, what keeps the function in the
    /// interpreter.
    pub fn build(
        module: &Module,
        name: &str,
        compiled: &dyn Fn(&str) -> Result<Compiled, String>,
    ) -> Result<Self, String> {
        let mut builder = Builder {
            functions: jitc_dialect::ops::functions(module.body()),
            may_interpret: false,
            compiled,
            numbers: HashMap::new(),
            plan: Vec::new(),
        };
        builder.function(name)?;
        Ok(Self {
            functions: builder.plan.into_iter().flatten().collect(),
            may_interpret: builder.may_interpret,
        })
    }

    /// Runs the plan's entry function on `args`; state writes are
    /// committed to `state` only when the whole run succeeds.
    pub fn run<K: Kernels + ?Sized>(
        &self,
        kernels: &K,
        args: Vec<K::Value>,
        state: &mut StateStore,
    ) -> Result<Vec<K::Value>, Stop> {
        self.run_with(kernels, args, state, None, Ok)
            .map(|(results, _)| results)
    }

    /// [`Self::run`] with the results brought to the host
    /// ([`Kernels::to_host`]) before any state write is committed, so a
    /// result that cannot be brought back fails the run with nothing
    /// committed.
    pub fn run_to_host<K: Kernels + ?Sized>(
        &self,
        kernels: &K,
        args: Vec<K::Value>,
        state: &mut StateStore,
    ) -> Result<Vec<Value>, Stop> {
        let site = &self.functions[0].site;
        let finish = |results: Vec<K::Value>| {
            results
                .iter()
                .map(|r| kernels.to_host(r).map_err(|m| Stop::Failed(site.error(m))))
                .collect()
        };
        self.run_with(kernels, args, state, None, finish)
            .map(|(results, _)| results)
    }

    /// [`Self::run`], also merging into `profile` what the run observed,
    /// as `Interpreter::run_profiled` does: the arguments, the direction of
    /// every `scf.if`, the trip count of every loop and the callee of
    /// every call of a function (not of a kernel). A run that fails
    /// records nothing.
    pub fn run_profiled<K: Kernels<Value = Value> + ?Sized>(
        &self,
        kernels: &K,
        args: Vec<Value>,
        state: &mut StateStore,
        profile: &mut Profile,
    ) -> Result<Vec<Value>, Stop> {
        let entry = &self.functions[0];
        let mut observed = Profile::new();
        observed.runs = 1;
        observed.record_entry(
            &entry.name,
            jitc_interp::argument_profiles(&entry.declared, &args),
        );
        let (results, observed) = self.run_with(kernels, args, state, Some(observed), Ok)?;
        if let Some(observed) = observed {
            profile.merge(&observed).map_err(|e| {
                Stop::Failed(Error::Arguments(format!(
                    "the profile is of another program: {e}"
                )))
            })?;
        }
        Ok(results)
    }

    /// Runs the entry function; `finish` makes the run's results what it
    /// returns, before anything is committed.
    fn run_with<K: Kernels + ?Sized, R>(
        &self,
        kernels: &K,
        args: Vec<K::Value>,
        state: &mut StateStore,
        profile: Option<Profile>,
        finish: impl FnOnce(Vec<K::Value>) -> Result<R, Stop>,
    ) -> Result<(R, Option<Profile>), Stop> {
        let entry = &self.functions[0];
        kernels.check_arguments(&entry.name, &entry.signature.inputs, &args)?;
        let mut run = Run {
            state,
            pending: Vec::new(),
            depth: 0,
            profile,
            queued: Vec::new(),
            launched: 0,
        };
        // A kernel queued before the run stopped failed first: its failure
        // is the run's.
        let called = self.call(&mut run, kernels, 0, args);
        run.settle(kernels)?;
        let results = called?;
        let pending = std::mem::take(&mut run.pending);
        let profile = run.profile.take();
        // The results and every write are brought to the host before any
        // write is committed.
        let results = finish(results)?;
        let mut writes = Vec::with_capacity(pending.len());
        for (name, value, site) in pending {
            writes.push((name, kernels.to_host(&value).map_err(|m| site.error(m))?));
        }
        for (name, value) in writes {
            if let Value::Tensor(tensor) = value {
                state.insert_shared(name.to_owned(), tensor);
            }
        }
        Ok((results, profile))
    }

    fn call<'p, K: Kernels + ?Sized>(
        &'p self,
        run: &mut Run<'_, 'p, K::Value>,
        kernels: &K,
        number: usize,
        args: Vec<K::Value>,
    ) -> Result<Vec<K::Value>, Stop> {
        let function = &self.functions[number];
        if run.depth >= MAX_CALL_DEPTH {
            return Err(function
                .site
                .error(format!("calls nest deeper than {MAX_CALL_DEPTH}"))
                .into());
        }
        run.depth += 1;
        let mut frame: Vec<Option<K::Value>> = vec![None; function.slots];
        let flow = self.block(run, kernels, &mut frame, &function.body, args);
        run.depth -= 1;
        match flow? {
            Flow::Return(values) => Ok(values),
            _ => Err(function.site.error("body does not end in func.return").into()),
        }
    }

    /// Runs the region an `scf.if` or `scf.index_switch` chose; its
    /// values.
    fn branch<'p, K: Kernels + ?Sized>(
        &'p self,
        run: &mut Run<'_, 'p, K::Value>,
        kernels: &K,
        frame: &mut [Option<K::Value>],
        block: &'p Block,
        site: &Site,
    ) -> Result<Vec<K::Value>, Stop> {
        match self.block(run, kernels, frame, block, Vec::new())? {
            Flow::Yield(values) => Ok(values),
            _ => Err(site.error("region does not end in scf.yield").into()),
        }
    }

    fn block<'p, K: Kernels + ?Sized>(
        &'p self,
        run: &mut Run<'_, 'p, K::Value>,
        kernels: &K,
        frame: &mut [Option<K::Value>],
        block: &'p Block,
        args: Vec<K::Value>,
    ) -> Result<Flow<K::Value>, Stop> {
        for ((&slot, arg), &read) in block.params.iter().zip(args).zip(&block.read) {
            if read {
                frame[slot] = Some(arg);
            }
        }
        for (op, dead) in block.ops.iter().zip(&block.dead) {
            self.op(run, kernels, frame, op, dead)?;
            for &slot in dead {
                frame[slot] = None;
            }
        }
        let values = |frame: &[Option<K::Value>], slots: &[usize]| -> Vec<K::Value> {
            slots.iter().map(|&s| get(frame, s)).collect()
        };
        Ok(match &block.end {
            End::Return(slots) => Flow::Return(values(frame, slots)),
            End::Yield(slots) => Flow::Yield(values(frame, slots)),
            End::Condition(condition, slots, site) => {
                let go = host(run, kernels, frame, *condition, site)?
                    .condition()
                    .map_err(|m| site.error(m))?;
                Flow::Condition(go, values(frame, slots))
            }
        })
    }

    fn op<'p, K: Kernels + ?Sized>(
        &'p self,
        run: &mut Run<'_, 'p, K::Value>,
        kernels: &K,
        frame: &mut [Option<K::Value>],
        op: &'p Op,
        dead: &[usize],
    ) -> Result<(), Stop> {
        let args = |frame: &[Option<K::Value>], slots: &[usize]| -> Vec<K::Value> {
            slots.iter().map(|&s| get(frame, s)).collect()
        };
        let store = |frame: &mut [Option<K::Value>], to: &[usize], values: Vec<K::Value>| {
            for (&slot, value) in to.iter().zip(values) {
                frame[slot] = Some(value);
            }
        };
        match op {
            Op::Const { value, to } => {
                let value = kernels.constant(value).map_err(|message| Error::Eval {
                    op: "arith.constant".into(),
                    line: None,
                    message,
                })?;
                frame[*to] = Some(value);
            }
            Op::Host {
                op,
                args: slots,
                to,
                site,
            } => {
                let operands = slots
                    .iter()
                    .map(|&s| host(run, kernels, frame, s, site))
                    .collect::<Result<Vec<_>, _>>()?;
                let value = op.apply(&operands).map_err(|m| site.error(m))?;
                frame[*to] = Some(kernels.hold(value));
            }
            Op::Kernel {
                name,
                args: slots,
                to,
                site,
            } => {
                for &slot in slots {
                    if let Some(moved) = kernels
                        .to_device(defined(frame, slot))
                        .map_err(|m| site.error(format!("kernel @{name}: {m}")))?
                    {
                        frame[slot] = Some(moved);
                    }
                }
                // What dies here is moved in, not shared: the kernel may
                // write a result into its buffer.
                let mut inputs = Vec::with_capacity(slots.len());
                for &slot in slots {
                    let once = slots.iter().filter(|&&s| s == slot).count() == 1;
                    match frame[slot].take() {
                        Some(value) if once && dead.contains(&slot) => inputs.push(value),
                        value => {
                            frame[slot] = value;
                            inputs.push(get(frame, slot));
                        }
                    }
                }
                let values = kernels
                    .launch(name, inputs)
                    .ok_or(Stop::Interpret)?
                    .map_err(|failure| {
                        Error::from_kernel(failure, |message| {
                            site.error(format!("kernel @{name}: {message}"))
                        })
                    })?;
                if kernels.defers() {
                    run.launched += 1;
                    run.queued.push((name, site));
                    if run.queued.len() >= SETTLE_AFTER {
                        run.settle(kernels)?;
                    }
                }
                store(frame, to, values);
            }
            Op::Call {
                function,
                args: slots,
                to,
                site,
            } => {
                if let Some(profile) = &mut run.profile {
                    profile.record_call(site.id.clone(), &self.functions[*function].name);
                }
                let values = self.call(run, kernels, *function, args(frame, slots))?;
                store(frame, to, values);
            }
            Op::For {
                bounds,
                inits,
                body,
                to,
                site,
            } => {
                let index = |v: &Value| v.index().map_err(|m| site.error(m));
                let lower = host(run, kernels, frame, bounds[0], site)?;
                let mut iv = index(&lower)?;
                let upper = index(&host(run, kernels, frame, bounds[1], site)?)?;
                let step = index(&host(run, kernels, frame, bounds[2], site)?)?;
                if step <= 0 {
                    return Err(site.error(format!("step must be positive, got {step}")).into());
                }
                let mut carried = args(frame, inits);
                let mut trips = 0;
                while iv < upper {
                    trips += 1;
                    let mut values = Vec::with_capacity(carried.len() + 1);
                    values.push(kernels.hold(lower.clone_as_index(iv)));
                    values.extend(carried);
                    let launched = run.launched;
                    carried = match self.block(run, kernels, frame, body, values)? {
                        Flow::Yield(values) => values,
                        _ => return Err(site.error("body does not end in scf.yield").into()),
                    };
                    run.settle_if_idle(kernels, launched)?;
                    iv = iv
                        .checked_add(step)
                        .ok_or_else(|| site.error("induction variable overflows"))?;
                }
                if let Some(profile) = &mut run.profile {
                    profile.record_loop(site.id.clone(), trips);
                }
                store(frame, to, carried);
            }
            Op::If {
                condition,
                then,
                otherwise,
                to,
                site,
            } => {
                let taken = host(run, kernels, frame, *condition, site)?
                    .condition()
                    .map_err(|m| site.error(m))?;
                if let Some(profile) = &mut run.profile {
                    profile.record_branch(site.id.clone(), taken);
                }
                let block = if taken { then } else { otherwise };
                let values = self.branch(run, kernels, frame, block, site)?;
                store(frame, to, values);
            }
            Op::Switch {
                selector,
                cases,
                default,
                to,
                site,
            } => {
                let selector = host(run, kernels, frame, *selector, site)?
                    .index()
                    .map_err(|m| site.error(m))?;
                let block = cases
                    .iter()
                    .find(|(value, _)| *value == selector)
                    .map_or(default, |(_, block)| block);
                let values = self.branch(run, kernels, frame, block, site)?;
                store(frame, to, values);
            }
            Op::While {
                inits,
                before,
                after,
                to,
                site,
            } => {
                let mut values = args(frame, inits);
                let mut trips = 0;
                loop {
                    let launched = run.launched;
                    let (go, forwarded) = match self.block(run, kernels, frame, before, values)? {
                        Flow::Condition(go, forwarded) => (go, forwarded),
                        _ => return Err(site.error("'before' region does not end in scf.condition").into()),
                    };
                    if !go {
                        if let Some(profile) = &mut run.profile {
                            profile.record_loop(site.id.clone(), trips);
                        }
                        store(frame, to, forwarded);
                        break;
                    }
                    trips += 1;
                    values = match self.block(run, kernels, frame, after, forwarded)? {
                        Flow::Yield(values) => values,
                        _ => return Err(site.error("'after' region does not end in scf.yield").into()),
                    };
                    run.settle_if_idle(kernels, launched)?;
                }
            }
            Op::Guard {
                condition,
                id,
                reason,
                site_name,
                site,
            } => {
                if !host(run, kernels, frame, *condition, site)?
                    .condition()
                    .map_err(|m| site.error(m))?
                {
                    return Err(Error::GuardFailed {
                        id: *id,
                        reason: reason.clone(),
                        line: site.line,
                        site: site_name.clone(),
                    }
                    .into());
                }
            }
            Op::StateRead {
                name,
                r#type,
                to,
                site,
            } => {
                let value = run.state.get_shared(name).ok_or_else(|| Error::StateMissing {
                    name: name.clone(),
                    line: site.line,
                })?;
                let value = Value::Tensor(std::sync::Arc::clone(value));
                r#type.check(&value).map_err(|m| site.error(m))?;
                frame[*to] = Some(kernels.hold(value));
            }
            Op::StateWrite { name, value, site } => {
                let value = get(frame, *value);
                if !kernels.is_tensor(&value) {
                    let value = kernels.to_host(&value).map_err(|m| site.error(m))?;
                    return Err(site.error(format!("operand 0 is {value}, not a tensor")).into());
                }
                // A later write of the same name replaces an earlier one
                // (the last one is what a commit would leave), so writes in
                // a loop hold one value each, not one per iteration.
                match run.pending.iter_mut().find(|(n, _, _)| *n == name.as_str()) {
                    Some(pending) => *pending = (name, value, site),
                    None => run.pending.push((name, value, site)),
                }
            }
        }
        Ok(())
    }
}

/// The value in `slot`; the builder defines every slot before its uses,
/// in the order the ops run.
fn get<V: Clone>(frame: &[Option<V>], slot: usize) -> V {
    defined(frame, slot).clone()
}

/// The value in `slot`, borrowed (see [`get`]).
fn defined<V>(frame: &[Option<V>], slot: usize) -> &V {
    frame[slot]
        .as_ref()
        .expect("the plan defines every slot before it is read")
}

/// The value in `slot` on the host, for the host code of the op at `site`;
/// one a kernel made, once the kernels queued before it have run and
/// succeeded.
fn host<K: Kernels + ?Sized, V>(
    run: &mut Run<'_, '_, V>,
    kernels: &K,
    frame: &[Option<K::Value>],
    slot: usize,
    site: &Site,
) -> Result<Value, Stop> {
    let value = defined(frame, slot);
    if !kernels.made_on_host(value) {
        run.settle(kernels)?;
    }
    Ok(kernels.to_host(value).map_err(|m| site.error(m))?)
}

impl<'c, 'a> Builder<'c, 'a, '_> {
    /// The number of function `name` in the plan, building it on first use.
    fn function(&mut self, name: &str) -> Result<usize, String> {
        if let Some(&number) = self.numbers.get(name) {
            return Ok(number);
        }
        let function = *self
            .functions
            .get(name)
            .ok_or_else(|| format!("there is no function @{name}"))?;
        let number = self.plan.len();
        self.numbers.insert(name.to_owned(), number);
        self.plan.push(None);
        let body = function
            .region(0)
            .ok()
            .and_then(|r| r.first_block())
            .ok_or_else(|| format!("@{name} is a declaration"))?;
        let mut slots = Slots {
            of: HashMap::new(),
            count: 0,
        };
        let body = self.block(&mut slots, function, body)?;
        if !matches!(body.end, End::Return(_)) {
            return Err(format!("@{name} does not end in func.return"));
        }
        self.plan[number] = Some(Function {
            name: name.to_owned(),
            site: Site::of(function),
            signature: signature(function)?,
            declared: jitc_dialect::profile::argument_types(function),
            slots: slots.count,
            body,
        });
        Ok(number)
    }

    /// The only block of region `index` of `op`.
    fn region_block(op: OperationRef<'c, 'a>, index: usize) -> Result<BlockRef<'c, 'a>, String> {
        let region = op
            .region(index)
            .map_err(|_| format!("{} lacks region {index}", describe(op)))?;
        let block = region
            .first_block()
            .ok_or_else(|| format!("{} has an empty region", describe(op)))?;
        if block.next_in_region().is_some() {
            return Err(format!("{} has a region with several blocks", describe(op)));
        }
        Ok(block)
    }

    fn block(
        &mut self,
        slots: &mut Slots,
        parent: OperationRef<'c, 'a>,
        block: BlockRef<'c, 'a>,
    ) -> Result<Block, String> {
        if block.next_in_region().is_some() {
            return Err(format!("{} has a region with several blocks", describe(parent)));
        }
        let params = (0..block.argument_count())
            .map(|i| {
                block
                    .argument(i)
                    .map(|a| slots.define(a.into()))
                    .map_err(|_| format!("{} lacks a block argument", describe(parent)))
            })
            .collect::<Result<_, _>>()?;
        let mut ops = Vec::new();
        let mut next = block.first_operation();
        while let Some(op) = next {
            next = op.next_in_block();
            let name = op_name(op);
            let end = match name.as_str() {
                "func.return" => Some(End::Return(slots.operands(op)?)),
                "scf.yield" => Some(End::Yield(slots.operands(op)?)),
                "scf.condition" => {
                    let mut operands = slots.operands(op)?;
                    if operands.is_empty() {
                        return Err(format!("{} has no condition", describe(op)));
                    }
                    let condition = operands.remove(0);
                    Some(End::Condition(condition, operands, Site::of(op)))
                }
                _ => None,
            };
            if let Some(end) = end {
                return Ok(Block::new(params, ops, end));
            }
            ops.push(self.op(slots, op, &name)?);
        }
        Err(format!("a block of {} has no terminator", describe(parent)))
    }

    fn op(&mut self, slots: &mut Slots, op: OperationRef<'c, 'a>, name: &str) -> Result<Op, String> {
        let site = Site::of(op);
        Ok(match name {
            "arith.constant" => {
                let value = jitc_interp::constant(op).map_err(|e| e.to_string())?;
                Op::Const {
                    value,
                    to: slots.results(op)?[0],
                }
            }
            _ if name.starts_with("arith.") || name.starts_with("tensor.") => {
                let prepared = if name.starts_with("arith.") {
                    jitc_interp::prepare_arith(op).map(HostOp::Arith)
                } else {
                    jitc_interp::prepare_tensor(op).map(HostOp::Tensor)
                }
                .map_err(|e| e.to_string())?;
                Op::Host {
                    op: prepared,
                    args: slots.operands(op)?,
                    to: single(op, slots.results(op)?)?,
                    site,
                }
            }
            "func.call" => {
                let callee = callee(op).ok_or_else(|| format!("{} has no callee", describe(op)))?;
                let target = *self
                    .functions
                    .get(&callee)
                    .ok_or_else(|| format!("{} calls @{callee}, which is not defined", describe(op)))?;
                let args = slots.operands(op)?;
                if target.has_attribute("meta.fused") {
                    match (self.compiled)(&callee) {
                        Err(reason) => {
                            return Err(format!("kernel @{callee} runs in the interpreter: {reason}"));
                        }
                        Ok(Compiled::MayDecline) => self.may_interpret = true,
                        Ok(Compiled::Always) => {}
                    }
                    Op::Kernel {
                        name: callee,
                        args,
                        to: slots.results(op)?,
                        site: Site::of(target),
                    }
                } else {
                    Op::Call {
                        function: self.function(&callee)?,
                        args,
                        to: slots.results(op)?,
                        site,
                    }
                }
            }
            "scf.for" => {
                let operands = slots.operands(op)?;
                if operands.len() < 3 {
                    return Err(format!("{} needs bounds and a step", describe(op)));
                }
                let body = self.block(slots, op, Self::region_block(op, 0)?)?;
                Op::For {
                    bounds: [operands[0], operands[1], operands[2]],
                    inits: operands[3..].to_vec(),
                    body,
                    to: slots.results(op)?,
                    site,
                }
            }
            "scf.if" => {
                let condition = slots.operands(op)?[0];
                let then = self.block(slots, op, Self::region_block(op, 0)?)?;
                // An `scf.if` without results may have an empty `else`.
                let otherwise = match op.region(1).ok().and_then(|r| r.first_block()) {
                    Some(_) => self.block(slots, op, Self::region_block(op, 1)?)?,
                    None => Block::new(Vec::new(), Vec::new(), End::Yield(Vec::new())),
                };
                Op::If {
                    condition,
                    then,
                    otherwise,
                    to: slots.results(op)?,
                    site,
                }
            }
            "scf.index_switch" => {
                let selector = slots.operands(op)?[0];
                let values = op
                    .attribute("cases")
                    .ok()
                    .and_then(jitc_dialect::ops::i64_array_attribute)
                    .ok_or_else(|| format!("{} has no cases", describe(op)))?;
                // Region 0 is the default; region k + 1 is case k.
                let default = self.block(slots, op, Self::region_block(op, 0)?)?;
                let mut cases = Vec::with_capacity(values.len());
                for (k, value) in values.into_iter().enumerate() {
                    cases.push((value, self.block(slots, op, Self::region_block(op, k + 1)?)?));
                }
                Op::Switch {
                    selector,
                    cases,
                    default,
                    to: slots.results(op)?,
                    site,
                }
            }
            "scf.while" => {
                let inits = slots.operands(op)?;
                let before = self.block(slots, op, Self::region_block(op, 0)?)?;
                let after = self.block(slots, op, Self::region_block(op, 1)?)?;
                Op::While {
                    inits,
                    before,
                    after,
                    to: slots.results(op)?,
                    site,
                }
            }
            "meta.guard" => {
                let guard = GuardOp::cast(op).ok_or_else(|| format!("{} is malformed", describe(op)))?;
                Op::Guard {
                    condition: slots.operands(op)?[0],
                    id: guard.id().unwrap_or(-1),
                    reason: guard.reason().unwrap_or_default().to_owned(),
                    site_name: op
                        .attribute("site")
                        .ok()
                        .and_then(string_attribute)
                        .map(str::to_owned),
                    site,
                }
            }
            "meta.state_read" => {
                let read = StateReadOp::cast(op).ok_or_else(|| format!("{} is malformed", describe(op)))?;
                let result = op
                    .result(0)
                    .map_err(|_| format!("{} has no result", describe(op)))?;
                Op::StateRead {
                    name: read.state_name().unwrap_or_default().to_owned(),
                    r#type: value_type(result.r#type())?,
                    to: slots.results(op)?[0],
                    site,
                }
            }
            "meta.state_write" => {
                let write = StateWriteOp::cast(op).ok_or_else(|| format!("{} is malformed", describe(op)))?;
                Op::StateWrite {
                    name: write.state_name().unwrap_or_default().to_owned(),
                    value: slots.operands(op)?[0],
                    site,
                }
            }
            _ => return Err(format!("{} runs only in the interpreter", describe(op))),
        })
    }
}

fn single(op: OperationRef, results: Vec<usize>) -> Result<usize, String> {
    match results.as_slice() {
        [one] => Ok(*one),
        _ => Err(format!("{} does not have one result", describe(op))),
    }
}
