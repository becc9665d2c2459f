//! Running modules on an NVIDIA GPU through the CUDA driver (cudarc,
//! loaded at run time, so a machine without a driver still runs the CPU
//! backend).
//!
//! - [`CudaDevice`]: one context per device ordinal for the life of the
//!   process, a compute stream and two copy streams (uploads and
//!   downloads, so each direction's copy engine works on its own), the
//!   loaded PTX modules, cached by their text, so a kernel is loaded once
//!   per context, and page-locked staging buffers for copies.
//! - [`CudaModule`]: a module's kernels compiled to PTX
//!   (`jitc_compiler::compile_ptx`) and loaded. Kernels that could not be
//!   compiled for the GPU run in the interpreter.
//! - `plan`: a function whose host code is straight-line (kernel calls,
//!   constants, calls of such functions) becomes a device plan, built once
//!   per function.
//! - `execute`: runs a plan with values kept on the device between kernels,
//!   each argument uploaded on the upload stream when its first kernel needs
//!   it (so kernels overlap the uploads of later inputs), and each result
//!   downloaded on the download stream as soon as its kernel is queued.
//!
//! [`CudaModule::run`] takes the plan when the function has one
//! ([`CudaModule::schedule`] says which). Host code with loops, branches,
//! guards or state runs as the CPU's host plan (`crate::host`, one plan
//! for both backends) over [`OnDevice`]: each kernel call is a one-launch
//! device plan whose tensors stay in GPU memory, from the kernel that made
//! them to the kernels that read them, and only what host code reads (a
//! condition, a loop bound, a state write when the call commits, a result)
//! comes back to the host. A function that has no host plan either runs in
//! the interpreter, which hands each kernel call to the GPU as a one-launch
//! plan: a round trip per kernel.
//! [`CudaModule::run_on_device`] takes and returns device tensors, for
//! callers that keep values on the GPU across calls.

mod deferred;
mod execute;
mod plan;

pub use execute::{DeviceTensor, DeviceValue};

use crate::{
    Error, Executor,
    host::{Compiled, HostKernels, HostPlan, Kernels, Stop, compiled_or_skipped, run_host_code},
};
use cudarc::driver::{CudaContext, CudaFunction, CudaStream, PinnedHostSlice};
use jitc_compiler::{GpuArch, GpuKernel, GpuOptions, PtxArtifact};
use jitc_dialect::profile::Profile;
use jitc_interp::{Interpreter, KernelRunner, StateStore, Value, ValueType};
use melior::{Context, ir::Module};
use plan::{Launch as Step, Operand, Plan};
use std::{
    cell::RefCell,
    collections::HashMap,
    hash::{DefaultHasher, Hash, Hasher},
    rc::Rc,
    sync::{Arc, Mutex, OnceLock},
};

/// Why no GPU can be used, in one sentence.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Unavailable(pub String);

/// A CUDA device: its context, streams and loaded modules.
pub struct CudaDevice {
    context: Arc<CudaContext>,
    compute: Arc<CudaStream>,
    copy: Arc<CudaStream>,
    download: Arc<CudaStream>,
    modules: Mutex<HashMap<u64, Arc<cudarc::driver::CudaModule>>>,
    staging: Mutex<Vec<PinnedHostSlice<u8>>>,
    name: String,
    capability: (i32, i32),
}

fn driver_error(what: &str, error: impl std::fmt::Display) -> Error {
    Error::Cuda(format!("{what}: {error}"))
}

impl CudaDevice {
    /// Device 0, opened once per process; the error says in one sentence
    /// why there is no GPU (no driver library, no device, a driver error).
    pub fn get() -> Result<Arc<CudaDevice>, Unavailable> {
        static DEVICE: OnceLock<Result<Arc<CudaDevice>, Unavailable>> = OnceLock::new();
        DEVICE.get_or_init(|| Self::open(0).map(Arc::new)).clone()
    }

    fn open(ordinal: usize) -> Result<CudaDevice, Unavailable> {
        // SAFETY: only tries to load the driver library.
        if !unsafe { cudarc::driver::sys::is_culib_present() } {
            return Err(Unavailable(
                "no CUDA driver was found (libcuda.so is not installed), so the cuda backend cannot run; use --backend cpu"
                    .into(),
            ));
        }
        // cudarc panics inside some driver paths (a missing symbol in an
        // old driver); a panic must not reach the user.
        let opened = std::panic::catch_unwind(|| -> Result<_, String> {
            let count = CudaContext::device_count().map_err(|e| e.to_string())?;
            if count as usize <= ordinal {
                return Err("the CUDA driver sees no GPU".into());
            }
            let context = CudaContext::new(ordinal).map_err(|e| e.to_string())?;
            let compute = context.new_stream().map_err(|e| e.to_string())?;
            let copy = context.new_stream().map_err(|e| e.to_string())?;
            let download = context.new_stream().map_err(|e| e.to_string())?;
            let name = context.name().map_err(|e| e.to_string())?;
            let capability = context.compute_capability().map_err(|e| e.to_string())?;
            Ok((context, compute, copy, download, name, capability))
        });
        match opened {
            Ok(Ok((_, _, _, _, name, (major, minor)))) if major < 8 => Err(Unavailable(format!(
                "the GPU ({name}) is sm_{major}{minor}, older than the sm_80 jitc compiles for, so the cuda backend cannot run; use --backend cpu"
            ))),
            Ok(Ok((context, compute, copy, download, name, capability))) => Ok(CudaDevice {
                context,
                compute,
                copy,
                download,
                modules: Mutex::new(HashMap::new()),
                staging: Mutex::new(Vec::new()),
                name,
                capability,
            }),
            Ok(Err(reason)) => Err(Unavailable(format!(
                "the CUDA driver could not open a GPU ({reason}), so the cuda backend cannot run; use --backend cpu"
            ))),
            Err(_) => Err(Unavailable(
                "the CUDA driver failed while opening a GPU, so the cuda backend cannot run; use --backend cpu"
                    .into(),
            )),
        }
    }

    /// The device's name, e.g. `NVIDIA H100 80GB HBM3`.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The compute capability, e.g. `(9, 0)`.
    pub fn capability(&self) -> (i32, i32) {
        self.capability
    }

    /// The newest architecture jitc compiles for that this device runs.
    pub fn arch(&self) -> GpuArch {
        if self.capability.0 >= 9 {
            GpuArch::Sm90
        } else {
            GpuArch::Sm80
        }
    }

    /// The CUDA context.
    pub fn context(&self) -> &Arc<CudaContext> {
        &self.context
    }

    /// The stream kernels run on.
    pub fn compute_stream(&self) -> &Arc<CudaStream> {
        &self.compute
    }

    /// The stream uploads run on.
    pub fn copy_stream(&self) -> &Arc<CudaStream> {
        &self.copy
    }

    /// The stream device-to-host copies of a plan's results run on.
    pub fn download_stream(&self) -> &Arc<CudaStream> {
        &self.download
    }

    /// Loads `ptx` into the context, or returns the module loaded from the
    /// same text before.
    pub fn load(&self, ptx: &str) -> Result<Arc<cudarc::driver::CudaModule>, Error> {
        let mut hasher = DefaultHasher::new();
        ptx.hash(&mut hasher);
        let key = hasher.finish();
        let mut modules = self
            .modules
            .lock()
            .map_err(|_| Error::Cuda("the module cache was poisoned".into()))?;
        if let Some(module) = modules.get(&key) {
            return Ok(Arc::clone(module));
        }
        let module = self
            .context
            .load_module(cudarc::nvrtc::Ptx::from_src(ptx))
            .map_err(|e| driver_error("the driver rejected the PTX", e))?;
        modules.insert(key, Arc::clone(&module));
        Ok(module)
    }

    /// Modules loaded into the context so far.
    pub fn loaded_modules(&self) -> usize {
        self.modules.lock().map_or(0, |m| m.len())
    }
}

/// A loaded kernel: its launch and functions.
struct Loaded {
    kernel: GpuKernel,
    function: CudaFunction,
    fill: Option<CudaFunction>,
    /// Its scratch memory ([`jitc_compiler::Launch::scratch`]),
    /// zeroed once here; the kernel leaves it zeroed, and launches on the
    /// one compute stream never overlap.
    scratch: Option<cudarc::driver::CudaSlice<u8>>,
}

/// How [`CudaModule::run`] runs a function.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Schedule {
    /// As a device plan of this many kernel launches, values kept on the
    /// GPU between them.
    Device {
        /// How many launches.
        launches: usize,
    },
    /// As a host plan on the CPU (`crate::host`) with its values kept on
    /// the GPU ([`OnDevice`]), synchronizing where host code reads a value
    /// a kernel made (one per kernel call without
    /// [`CudaModule::set_deferred_checks`]), and per upload and download;
    /// the reason there is no device plan.
    Host(String),
    /// In the interpreter, a round trip per kernel call; the reason.
    Interpreted(String),
}

/// A function's device plan, with its tensor constants on the device.
struct Prepared {
    plan: Plan,
    constants: Vec<DeviceValue>,
}

/// A module whose kernels run on the GPU.
pub struct CudaModule {
    device: Arc<CudaDevice>,
    kernels: HashMap<String, Loaded>,
    ptx: PtxArtifact,
    plans: RefCell<HashMap<String, Rc<Result<Prepared, String>>>>,
    /// The status records of its calls, made on first use.
    status: RefCell<Option<execute::StatusRecords>>,
    /// Whether calls time their launches ([`Self::set_timing`]).
    timing: std::cell::Cell<bool>,
    /// The GPU time of the last timed call.
    gpu_time: std::cell::Cell<Option<std::time::Duration>>,
    /// Host plans of the functions without a device plan.
    host_plans: RefCell<HashMap<String, Rc<Result<HostPlan, String>>>>,
    /// The tensor constants of host plans on the device ([`OnDevice`]).
    constants: RefCell<Copies>,
    /// Whether host plans queue their kernel calls without waiting for
    /// each ([`Self::set_deferred_checks`]).
    deferred: std::cell::Cell<bool>,
    /// The status records of kernel calls queued that way.
    records: RefCell<deferred::Records>,
    /// Synchronizations of host plans' kernel calls ([`Self::host_plan_waits`]).
    waits: std::cell::Cell<u64>,
}

/// Host tensors and their copies on the device, both ways: by the address
/// of the host tensor, and by the address of the device tensor. Both are
/// held (in `on_device`), so neither address is reused while the pair is
/// kept.
#[derive(Default)]
struct Copies {
    on_device: HashMap<usize, (Arc<jitc_interp::Tensor>, Arc<DeviceTensor>)>,
    on_host: HashMap<usize, Arc<jitc_interp::Tensor>>,
}

impl Copies {
    fn device(&self, host: &Arc<jitc_interp::Tensor>) -> Option<Arc<DeviceTensor>> {
        let key = Arc::as_ptr(host) as usize;
        self.on_device.get(&key).map(|(_, device)| Arc::clone(device))
    }

    fn host(&self, device: &Arc<DeviceTensor>) -> Option<Arc<jitc_interp::Tensor>> {
        self.on_host.get(&(Arc::as_ptr(device) as usize)).cloned()
    }

    /// `host` on `device`: the copy these hold, else a new one, kept.
    fn upload(
        copies: &RefCell<Copies>,
        device: &CudaDevice,
        host: &Arc<jitc_interp::Tensor>,
    ) -> Result<Arc<DeviceTensor>, String> {
        if let Some(on_device) = copies.borrow().device(host) {
            return Ok(on_device);
        }
        let on_device = device.upload(host).map_err(|e| e.to_string())?;
        copies.borrow_mut().insert(host, &on_device);
        Ok(on_device)
    }

    fn insert(&mut self, host: &Arc<jitc_interp::Tensor>, device: &Arc<DeviceTensor>) {
        self.on_device
            .insert(Arc::as_ptr(host) as usize, (Arc::clone(host), Arc::clone(device)));
        self.on_host
            .insert(Arc::as_ptr(device) as usize, Arc::clone(host));
    }
}

impl CudaModule {
    /// Fuses `module` (`meta-fuse`, in place), compiles its kernels to PTX
    /// for the device's architecture (`options.arch` is replaced by it) and
    /// loads them. Fails first, in one sentence, when there is no GPU.
    pub fn compile<'c>(
        context: &'c Context,
        module: &mut Module<'c>,
        options: &GpuOptions,
    ) -> Result<Self, Error> {
        let device = CudaDevice::get().map_err(|e| Error::Unavailable(e.0))?;
        let options = GpuOptions {
            arch: device.arch(),
            ..*options
        };
        let ptx = jitc_compiler::compile_ptx(context, module, &options)?;
        let loaded = device.load(&ptx.text)?;
        let mut kernels = HashMap::new();
        for kernel in &ptx.kernels {
            let function = loaded
                .load_function(&kernel.signature.name)
                .map_err(|e| driver_error(&format!("kernel {} is missing", kernel.signature.name), e))?;
            let fill = match &kernel.launch.fill {
                Some(fill) => Some(
                    loaded
                        .load_function(&fill.name)
                        .map_err(|e| driver_error(&format!("kernel {} is missing", fill.name), e))?,
                ),
                None => None,
            };
            let scratch = match kernel.launch.scratch {
                0 => None,
                bytes => Some(
                    device
                        .compute
                        .alloc_zeros::<u8>(bytes)
                        .map_err(|e| driver_error("allocating a kernel's scratch memory", e))?,
                ),
            };
            kernels.insert(
                kernel.signature.name.clone(),
                Loaded {
                    kernel: kernel.clone(),
                    function,
                    fill,
                    scratch,
                },
            );
        }
        Ok(Self {
            device,
            kernels,
            ptx,
            plans: RefCell::new(HashMap::new()),
            status: RefCell::new(None),
            timing: std::cell::Cell::new(false),
            gpu_time: std::cell::Cell::new(None),
            host_plans: RefCell::new(HashMap::new()),
            constants: RefCell::new(Copies::default()),
            deferred: std::cell::Cell::new(true),
            records: RefCell::new(deferred::Records::default()),
            waits: std::cell::Cell::new(0),
        })
    }

    /// How often host plans run with their values on the GPU
    /// ([`Schedule::Host`]) have waited for their kernel calls since the
    /// module was compiled: once per kernel call, or, with
    /// [`Self::set_deferred_checks`], once per settle of the calls queued.
    pub fn host_plan_waits(&self) -> u64 {
        self.waits.get()
    }

    /// With `on`, a function run as a host plan with its values on the GPU
    /// ([`Schedule::Host`]) queues each kernel call and goes on without
    /// waiting for it; the kernels queued are waited for, and their status
    /// records checked in the order they were queued, only where host code
    /// reads a value a kernel made (a condition, a loop bound, a state
    /// write, a result), every `SETTLE_AFTER` calls, after a loop
    /// iteration that queued none, and when the run ends (`deferred`). The results, the state committed
    /// and the error of a run that fails are the same either way; a loop of
    /// small kernels no longer waits for each. On by default (an H200 first
    /// ran it on 2026-11-30); off, a host plan waits for each kernel call.
    pub fn set_deferred_checks(&self, on: bool) {
        self.deferred.set(on);
    }

    /// With `on`, each call of a device plan ([`Self::run`],
    /// [`Self::run_on_device`]) records CUDA events on the compute stream
    /// just before its first launch and just after its last, and
    /// [`Self::last_gpu_time`] gives the time between them: the kernels
    /// and the gaps between them, without the host's work before the first
    /// launch and after the last. A function run as a host plan is timed
    /// kernel call by kernel call, so it gives its last call's time (with
    /// [`Self::set_deferred_checks`], none). For benchmarks; off by default.
    pub fn set_timing(&self, on: bool) {
        self.timing.set(on);
        self.gpu_time.set(None);
    }

    /// The GPU time of the last call made with timing on.
    pub fn last_gpu_time(&self) -> Option<std::time::Duration> {
        self.gpu_time.get()
    }

    /// The device.
    pub fn device(&self) -> &Arc<CudaDevice> {
        &self.device
    }

    /// Kernels that run in the interpreter, with the reason.
    pub fn interpreted_kernels(&self) -> &[(String, String)] {
        &self.ptx.skipped
    }

    /// The PTX that was loaded.
    pub fn ptx(&self) -> &str {
        &self.ptx.text
    }

    /// The device plan of function `name` of `module`, built and its
    /// constants uploaded on first use.
    fn prepared(&self, module: &Module, name: &str) -> Result<Rc<Result<Prepared, String>>, Error> {
        if let Some(prepared) = self.plans.borrow().get(name) {
            return Ok(Rc::clone(prepared));
        }
        let prepared = match Plan::build(module, name, &|kernel| self.kernels.contains_key(kernel)) {
            Ok(plan) => {
                let constants = plan
                    .constants
                    .iter()
                    .map(|value| match value {
                        Value::Tensor(tensor) => self.device.upload(tensor).map(DeviceValue::Device),
                        other => Ok(DeviceValue::Host(other.clone())),
                    })
                    .collect::<Result<_, _>>()?;
                Ok(Prepared { plan, constants })
            }
            Err(reason) => Err(reason),
        };
        let prepared = Rc::new(prepared);
        self.plans
            .borrow_mut()
            .insert(name.to_owned(), Rc::clone(&prepared));
        Ok(prepared)
    }

    /// How [`Self::run`] runs function `name` of `module`.
    pub fn schedule(&self, module: &Module, name: &str) -> Result<Schedule, Error> {
        Ok(match &*self.prepared(module, name)? {
            Ok(prepared) => Schedule::Device {
                launches: prepared.plan.launches.len(),
            },
            Err(reason) => match &*self.host_plan(module, name) {
                Ok(_) => Schedule::Host(reason.clone()),
                Err(_) => Schedule::Interpreted(reason.clone()),
            },
        })
    }

    /// The host plan of function `name` of `module`, built on first use:
    /// its host code on the CPU, its kernels on the GPU. `Err` says why
    /// the function runs in the interpreter instead.
    fn host_plan(&self, module: &Module, name: &str) -> Rc<Result<HostPlan, String>> {
        if let Some(plan) = self.host_plans.borrow().get(name) {
            return Rc::clone(plan);
        }
        let plan = Rc::new(HostPlan::build(module, name, &|kernel| {
            // GPU kernels have static domains and results (an argument of
            // dynamic shape is read through a reindex, which checks its
            // indices): every call runs natively.
            let compiled = self.kernels.contains_key(kernel).then_some(Compiled::Always);
            compiled_or_skipped(compiled, &self.ptx.skipped, kernel)
        }));
        self.host_plans
            .borrow_mut()
            .insert(name.to_owned(), Rc::clone(&plan));
        plan
    }

    /// Runs function `name` of `module` (the module given to
    /// [`Self::compile`]) on `args`: as a device plan when it has one, else
    /// as a host plan with its values on the GPU ([`OnDevice`]), else in
    /// the interpreter with its kernels on the GPU.
    pub fn run(
        &self,
        module: &Module,
        name: &str,
        args: Vec<Value>,
        state: &mut StateStore,
    ) -> Result<Vec<Value>, Error> {
        let prepared = self.prepared(module, name)?;
        let Ok(prepared) = &*prepared else {
            let plan = self.host_plan(module, name);
            if let Ok(host_plan) = &*plan {
                let args = args.into_iter().map(DeviceValue::Host).collect();
                if self.deferred.get() {
                    // Not timed (`set_timing`).
                    self.gpu_time.set(None);
                }
                let on_device = OnDevice {
                    module: self,
                    copies: RefCell::new(Copies::default()),
                    queued: RefCell::new(Vec::new()),
                };
                match host_plan.run_to_host(&on_device, args, state) {
                    Ok(results) => return Ok(results),
                    Err(Stop::Failed(error)) => return Err(error.into()),
                    // GPU kernels have static domains and never decline a
                    // call (`host_plan`), so this is not reached.
                    Err(Stop::Interpret) => {
                        return Err(Error::Cuda(format!(
                            "@{name}: a kernel declined a call on the GPU"
                        )));
                    }
                }
            }
            return Ok(run_host_code(&plan, self, self, module, name, args, state, None)?);
        };
        let args: Vec<DeviceValue> = args.into_iter().map(DeviceValue::Host).collect();
        check_arguments(module, name, &args)?;
        self.execute(&prepared.plan, &prepared.constants, args, true)?
            .into_iter()
            .map(|value| self.to_host(value))
            .collect()
    }

    /// Runs function `name` of `module` on `args`, which may already be on
    /// the device, and leaves the results there (indices, and constants or
    /// arguments returned as they are, stay as given). Only for functions
    /// with a device plan; the error says why a function has none.
    pub fn run_on_device(
        &self,
        module: &Module,
        name: &str,
        args: Vec<DeviceValue>,
    ) -> Result<Vec<DeviceValue>, Error> {
        let prepared = self.prepared(module, name)?;
        match &*prepared {
            Ok(prepared) => {
                check_arguments(module, name, &args)?;
                self.execute(&prepared.plan, &prepared.constants, args, false)
            }
            Err(reason) => Err(Error::Cuda(format!(
                "@{name} cannot keep its values on the GPU: {reason}"
            ))),
        }
    }

    /// `value` on the host.
    pub fn to_host(&self, value: DeviceValue) -> Result<Value, Error> {
        match value {
            DeviceValue::Host(value) => Ok(value),
            DeviceValue::Device(tensor) => Ok(Value::tensor(self.device.download(&tensor)?)),
        }
    }
}

/// Checks `args` against the signature of function `name`, with the
/// interpreter's messages.
fn check_arguments(module: &Module, name: &str, args: &[DeviceValue]) -> Result<(), Error> {
    let signature = Interpreter::new(module).signature(name)?;
    Ok(check_inputs(name, &signature.inputs, args)?)
}

/// Checks `args` against `inputs`, the inputs of function `name`.
fn check_inputs(name: &str, inputs: &[ValueType], args: &[DeviceValue]) -> Result<(), jitc_interp::Error> {
    if args.len() != inputs.len() {
        return Err(jitc_interp::Error::argument_count(name, inputs.len(), args.len()));
    }
    for (i, (want, got)) in inputs.iter().zip(args).enumerate() {
        // Described only when refused: a tensor's text is its elements,
        // and formatting 16M of them took seconds on every call.
        let accepted = match got {
            DeviceValue::Host(value) => want.accepts(value),
            DeviceValue::Device(tensor) => matches!(want, ValueType::Tensor(shape, element)
                if *element == tensor.element_type()
                    && shape.len() == tensor.shape().len()
                    && shape.iter().zip(tensor.shape()).all(|(w, g)| w.is_none_or(|w| w == *g))),
        };
        if !accepted {
            let described = match got {
                DeviceValue::Host(value) => value.describe(),
                DeviceValue::Device(tensor) => format!("{tensor:?}"),
            };
            return Err(jitc_interp::Error::refused_argument(i, name, want, &described));
        }
    }
    Ok(())
}

impl Executor for CudaModule {
    fn interpreted_kernels(&self) -> &[(String, String)] {
        CudaModule::interpreted_kernels(self)
    }

    fn run(
        &self,
        module: &Module,
        name: &str,
        args: Vec<Value>,
        state: &mut StateStore,
    ) -> Result<Vec<Value>, Error> {
        CudaModule::run(self, module, name, args, state)
    }

    /// Profiling runs keep the host code on the CPU: a host plan, or the
    /// interpreter, with the kernels on the GPU.
    fn run_profiled(
        &self,
        module: &Module,
        name: &str,
        args: Vec<Value>,
        state: &mut StateStore,
        profile: &mut Profile,
    ) -> Result<Vec<Value>, Error> {
        let plan = self.host_plan(module, name);
        Ok(run_host_code(
            &plan,
            self,
            self,
            module,
            name,
            args,
            state,
            Some(profile),
        )?)
    }

    fn schedule_note(&self, module: &Module, function: &str) -> Option<String> {
        match self.schedule(module, function) {
            Ok(Schedule::Host(reason)) if self.deferred.get() => Some(format!(
                "@{function} runs its host code on the CPU with its values kept on the GPU, one synchronization where host code reads a value: {reason}"
            )),
            Ok(Schedule::Host(reason)) => Some(format!(
                "@{function} runs its host code on the CPU with its values kept on the GPU, one synchronization per kernel call: {reason}"
            )),
            Ok(Schedule::Interpreted(reason)) => Some(format!(
                "@{function} runs its host code in the interpreter, one round trip to the GPU per kernel call: {reason}"
            )),
            _ => None,
        }
    }
}

/// A host plan's kernel calls: each a one-launch plan, a round trip.
impl HostKernels for CudaModule {
    fn launch_on_host(
        &self,
        name: &str,
        args: Vec<Value>,
    ) -> Option<Result<Vec<Value>, jitc_compiler::KernelFailure>> {
        self.run_kernel(name, &args)
    }
}

/// The interpreter's kernel calls: each a one-launch plan, a round trip.
impl KernelRunner for CudaModule {
    fn run_kernel(
        &self,
        name: &str,
        args: &[Value],
    ) -> Option<Result<Vec<Value>, jitc_compiler::KernelFailure>> {
        let args = args.iter().cloned().map(DeviceValue::Host).collect();
        Some(
            self.launch_one(name, args, true)?
                .and_then(|results| results.into_iter().map(|r| self.to_host(r)).collect())
                .map_err(|e| kernel_failure(name, e)),
        )
    }
}

impl CudaModule {
    /// Runs kernel `name` alone on `args`, as a one-launch device plan;
    /// `None` when it was not loaded. With `to_host`, its results come back
    /// to the host; otherwise they stay on the device.
    fn launch_one(
        &self,
        name: &str,
        args: Vec<DeviceValue>,
        to_host: bool,
    ) -> Option<Result<Vec<DeviceValue>, Error>> {
        let loaded = self.kernels.get(name)?;
        let results = loaded.kernel.signature.outputs.len();
        let plan = Plan {
            arguments: args.len(),
            constants: Vec::new(),
            launches: vec![Step {
                kernel: name.to_owned(),
                args: (0..args.len()).map(Operand::Argument).collect(),
                results,
            }],
            results: (0..results)
                .map(|index| Operand::Result { launch: 0, index })
                .collect(),
        };
        Some(self.execute(&plan, &[], args, to_host))
    }
}

/// A kernel call's error as the host plan and the interpreter report a
/// kernel's failure.
fn kernel_failure(name: &str, error: Error) -> jitc_compiler::KernelFailure {
    match error {
        // A failure at an op of the kernel keeps its op.
        Error::Run(jitc_interp::Error::Eval { op, line, message }) => jitc_dialect::KernelFailure {
            op: Some((op, line)),
            message,
        },
        e => {
            // The caller names the kernel itself.
            let message = e.to_string();
            let prefix = format!("kernel @{name}: ");
            message
                .strip_prefix(&prefix)
                .map_or(message.clone(), str::to_owned)
                .into()
        }
    }
}

/// A host plan's kernel calls with their values kept on the GPU: each a
/// one-launch device plan whose results stay in device memory for the
/// kernels that read them. A host tensor (an argument, a state value, a
/// host op's result) is uploaded when a kernel first reads it, once per
/// run however many slots, frames or iterations hold it
/// ([`Kernels::to_device`]); tensor constants once per module. A tensor
/// comes back only where host code reads it ([`Kernels::to_host`]: a
/// condition, a loop bound, a committed state write, a result), once, and
/// not at all when it was a host tensor uploaded (the host copy is kept).
/// With [`CudaModule::set_deferred_checks`] (the default), a launch only
/// queues its kernel, and the plan settles the queue where host code reads
/// a value and when the run ends (`deferred`); without, each launch waits
/// for its kernel (the one-launch plan's synchronization, which also
/// checks its status record). Each upload and download waits.
pub(crate) struct OnDevice<'m> {
    module: &'m CudaModule,
    /// This run's host tensors copied to the device.
    copies: RefCell<Copies>,
    /// The kernels queued and not yet settled, by name, in the order
    /// queued: the `n`th has status record `n` of the module's
    /// `records`.
    queued: RefCell<Vec<String>>,
}

impl OnDevice<'_> {
    /// Queues kernel `name` on `args` without waiting for it: its outputs.
    fn queue(&self, name: &str, args: &[DeviceValue]) -> Result<Vec<DeviceValue>, Error> {
        let module = self.module;
        let loaded = module.loaded(name, args.len())?;
        let mut inputs = Vec::with_capacity(args.len());
        for (position, (value, slot)) in args.iter().zip(&loaded.kernel.signature.inputs).enumerate() {
            inputs.push(execute::argument(name, position, value, slot, |tensor| {
                Copies::upload(&self.copies, &module.device, tensor).map_err(Error::Cuda)
            })?);
        }
        let status = {
            let mut queued = self.queued.borrow_mut();
            let status = module
                .records
                .borrow_mut()
                .address(&module.device, queued.len())?;
            queued.push(name.to_owned());
            status
        };
        let outputs = module.queue(name, loaded, &inputs, status).inspect_err(|_| {
            // As a device plan does, a launch that fails returns its error
            // without reading its record. A kernel of it may have gone (a
            // fill), so the stream is waited for before the record can be
            // handed out again.
            self.queued.borrow_mut().pop();
            let _ = module.device.compute.synchronize();
        })?;
        Ok(outputs
            .into_iter()
            .map(|output| DeviceValue::Device(Arc::new(output)))
            .collect())
    }

    /// Waits for the queued kernels, then reads their records in order:
    /// the first failure, with the kernel's number and name. (Each record
    /// is zeroed when it is next handed out.)
    fn wait_for_queued(&self) -> Result<(), (usize, String, Error)> {
        let queued = std::mem::take(&mut *self.queued.borrow_mut());
        if queued.is_empty() {
            return Ok(());
        }
        let module = self.module;
        module.waits.set(module.waits.get() + 1);
        // A CUDA error is not a kernel's: it is put on the first queued.
        let device = &module.device;
        device
            .compute
            .synchronize()
            .map_err(execute::failed("synchronize"))
            .and_then(|()| {
                device
                    .context
                    .check_err()
                    .map_err(execute::failed("a queued operation"))
            })
            .map_err(|e| (0, queued[0].clone(), e))?;
        let records = module.records.borrow();
        for (number, name) in queued.iter().enumerate() {
            let status = records.status(number);
            if let Some(error) = status.map_or_else(Some, |status| module.status_error(name, status)) {
                return Err((number, name.clone(), error));
            }
        }
        Ok(())
    }
}

impl Drop for OnDevice<'_> {
    /// A run that stopped with kernels queued (the plan settles on every
    /// way out, so only a panic leaves them) waits for them, so no kernel
    /// still writes a record that is handed out again.
    fn drop(&mut self) {
        let _ = self.wait_for_queued();
    }
}

impl Kernels for OnDevice<'_> {
    type Value = DeviceValue;

    fn launch(
        &self,
        name: &str,
        args: Vec<DeviceValue>,
    ) -> Option<Result<Vec<DeviceValue>, jitc_compiler::KernelFailure>> {
        if self.module.deferred.get() {
            return Some(self.queue(name, &args).map_err(|e| kernel_failure(name, e)));
        }
        let launched = self.module.launch_one(name, args, false)?;
        self.module.waits.set(self.module.waits.get() + 1);
        Some(launched.map_err(|e| kernel_failure(name, e)))
    }

    fn defers(&self) -> bool {
        self.module.deferred.get()
    }

    fn made_on_host(&self, value: &DeviceValue) -> bool {
        match value {
            DeviceValue::Host(_) => true,
            // Uploaded by this run or as a constant: no kernel made it.
            DeviceValue::Device(tensor) => {
                self.copies.borrow().host(tensor).is_some()
                    || self.module.constants.borrow().host(tensor).is_some()
            }
        }
    }

    fn settle(&self) -> Result<(), (usize, jitc_compiler::KernelFailure)> {
        self.wait_for_queued()
            .map_err(|(number, name, error)| (number, kernel_failure(&name, error)))
    }

    fn hold(&self, value: Value) -> DeviceValue {
        DeviceValue::Host(value)
    }

    fn constant(&self, value: &Value) -> Result<DeviceValue, String> {
        let Value::Tensor(tensor) = value else {
            return Ok(DeviceValue::Host(value.clone()));
        };
        Copies::upload(&self.module.constants, &self.module.device, tensor).map(DeviceValue::Device)
    }

    fn to_host(&self, value: &DeviceValue) -> Result<Value, String> {
        match value {
            DeviceValue::Host(value) => Ok(value.clone()),
            DeviceValue::Device(tensor) => {
                let kept = self.copies.borrow().host(tensor);
                let kept = kept.or_else(|| self.module.constants.borrow().host(tensor));
                if let Some(host) = kept {
                    return Ok(Value::Tensor(host));
                }
                // Kept, so a value returned and also written to state (or
                // read by host code twice) comes back once.
                let host = Arc::new(self.module.device.download(tensor).map_err(|e| e.to_string())?);
                self.copies.borrow_mut().insert(&host, tensor);
                Ok(Value::Tensor(host))
            }
        }
    }

    fn to_device(&self, value: &DeviceValue) -> Result<Option<DeviceValue>, String> {
        let DeviceValue::Host(Value::Tensor(tensor)) = value else {
            return Ok(None);
        };
        Copies::upload(&self.copies, &self.module.device, tensor).map(|d| Some(DeviceValue::Device(d)))
    }

    fn is_tensor(&self, value: &DeviceValue) -> bool {
        matches!(
            value,
            DeviceValue::Device(_) | DeviceValue::Host(Value::Tensor(_))
        )
    }

    fn check_arguments(
        &self,
        name: &str,
        inputs: &[ValueType],
        args: &[DeviceValue],
    ) -> Result<(), jitc_interp::Error> {
        check_inputs(name, inputs, args)
    }
}
