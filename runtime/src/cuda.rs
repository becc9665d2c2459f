//! Running modules on an NVIDIA GPU through the CUDA driver (cudarc,
//! loaded at run time, so a machine without a driver still runs the CPU
//! backend).
//!
//! - [`CudaDevice`]: one context per device ordinal for the life of the
//!   process, a compute stream and a copy stream, and the loaded PTX
//!   modules, cached by their text, so a kernel is loaded once per
//!   context.
//! - [`CudaModule`]: a module's kernels compiled to PTX
//!   (`jitc_compiler::codegen::ptx`) and loaded. `run` executes the host
//!   schedule in the interpreter, which hands each kernel call to the GPU:
//!   the inputs are copied to device buffers on the copy stream, the
//!   compute stream waits for those copies (an event each), runs the fill
//!   launch when the kernel has one and the kernel, and the results are
//!   copied back. Kernels that could not be compiled for the GPU run in
//!   the interpreter.
//!
//! Not here yet: device-resident values between kernels and copies that
//! overlap kernels. The interpreted host schedule needs every kernel's
//! results on the host before it goes on, so each kernel call is a
//! round trip.

use crate::Error;
use cudarc::driver::{CudaContext, CudaFunction, CudaSlice, CudaStream, LaunchConfig, PushKernelArg};
use jitc_compiler::{
    OptimizeOptions,
    codegen::{self, GpuOptions, Ptx},
    lower::{Buffer as Slot, gpu::GpuKernel},
    optimize, pipeline,
};
use jitc_interp::{Interpreter, KernelRunner, StateStore, Tensor, Value};
use melior::{Context, ir::Module};
use std::{
    collections::HashMap,
    hash::{DefaultHasher, Hash, Hasher},
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
    modules: Mutex<HashMap<u64, Arc<cudarc::driver::CudaModule>>>,
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
            let name = context.name().map_err(|e| e.to_string())?;
            let capability = context.compute_capability().map_err(|e| e.to_string())?;
            Ok((context, compute, copy, name, capability))
        });
        match opened {
            Ok(Ok((_, _, _, name, (major, minor)))) if major < 8 => Err(Unavailable(format!(
                "the GPU ({name}) is sm_{major}{minor}, older than the sm_80 jitc compiles for, so the cuda backend cannot run; use --backend cpu"
            ))),
            Ok(Ok((context, compute, copy, name, capability))) => Ok(CudaDevice {
                context,
                compute,
                copy,
                modules: Mutex::new(HashMap::new()),
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
    pub fn arch(&self) -> codegen::GpuArch {
        if self.capability.0 >= 9 {
            codegen::GpuArch::Sm90
        } else {
            codegen::GpuArch::Sm80
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

    /// The stream copies run on.
    pub fn copy_stream(&self) -> &Arc<CudaStream> {
        &self.copy
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
}

/// A module whose kernels run on the GPU.
pub struct CudaModule {
    device: Arc<CudaDevice>,
    kernels: HashMap<String, Loaded>,
    ptx: Ptx,
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
        let fuse = pipeline::parse("builtin.module(meta-fuse)")?;
        optimize(context, module, &fuse, &OptimizeOptions::default())?;
        let options = GpuOptions {
            arch: device.arch(),
            ..*options
        };
        let ptx = codegen::ptx(context, module, &options)?;
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
            kernels.insert(
                kernel.signature.name.clone(),
                Loaded {
                    kernel: kernel.clone(),
                    function,
                    fill,
                },
            );
        }
        Ok(Self { device, kernels, ptx })
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

    /// Runs function `name` of `module` (the module given to
    /// [`Self::compile`]) on `args`.
    pub fn run(
        &self,
        module: &Module,
        name: &str,
        args: Vec<Value>,
        state: &mut StateStore,
    ) -> Result<Vec<Value>, Error> {
        Ok(Interpreter::new(module)
            .with_kernels(self)
            .run(name, args, state)?)
    }

    fn launch(&self, loaded: &Loaded, args: &[Value]) -> Result<Vec<Value>, String> {
        let signature = &loaded.kernel.signature;
        let device = &self.device;
        let (compute, copy) = (&device.compute, &device.copy);
        let failed = |what: &str, e: cudarc::driver::DriverError| format!("CUDA {what} failed: {e}");
        // Inputs go up on the copy stream; the kernel waits for them.
        let mut inputs: Vec<Option<CudaSlice<u8>>> = Vec::with_capacity(args.len());
        let mut indices: Vec<i64> = Vec::new();
        for (arg, slot) in args.iter().zip(&signature.inputs) {
            match (arg, slot) {
                (Value::Tensor(tensor), Slot::Tensor(shape, element))
                    if tensor.shape() == shape.as_slice() && tensor.element_type() == *element =>
                {
                    let bytes = tensor_bytes(tensor);
                    let slice = copy
                        .clone_htod(if bytes.is_empty() { &[0u8][..] } else { bytes })
                        .map_err(|e| failed("upload", e))?;
                    inputs.push(Some(slice));
                }
                (Value::Index(i), Slot::Index) => {
                    indices.push(*i);
                    inputs.push(None);
                }
                _ => {
                    return Err(format!(
                        "argument {} does not match the compiled kernel",
                        inputs.len()
                    ));
                }
            }
        }
        let uploaded = copy.record_event(None).map_err(|e| failed("event", e))?;
        compute.wait(&uploaded).map_err(|e| failed("stream wait", e))?;
        let mut outputs: Vec<(CudaSlice<u8>, Vec<usize>, jitc_dialect::kinds::ElementType)> = Vec::new();
        for slot in &signature.outputs {
            let Slot::Tensor(shape, element) = slot else {
                return Err("a kernel that returns an index".into());
            };
            let bytes = shape.iter().product::<usize>() * element.byte_width();
            let slice = compute
                .alloc_zeros::<u8>(bytes.max(1))
                .map_err(|e| failed("allocation", e))?;
            outputs.push((slice, shape.clone(), *element));
        }
        let mut status = compute
            .alloc_zeros::<i32>(1)
            .map_err(|e| failed("allocation", e))?;
        let launches = loaded
            .fill
            .iter()
            .zip(loaded.kernel.launch.fill.iter().map(|f| (f.grid, f.block)))
            .chain([(
                &loaded.function,
                (loaded.kernel.launch.grid, loaded.kernel.launch.block),
            )]);
        for (function, (grid, block)) in launches {
            let mut builder = compute.launch_builder(function);
            let mut next_index = indices.iter();
            for input in &inputs {
                match input {
                    Some(slice) => builder.arg(slice),
                    None => builder.arg(next_index.next().ok_or("an index argument is missing")?),
                };
            }
            for (slice, _, _) in &mut outputs {
                builder.arg(slice);
            }
            builder.arg(&mut status);
            let config = LaunchConfig {
                grid_dim: (grid, 1, 1),
                block_dim: (block, 1, 1),
                shared_mem_bytes: 0,
            };
            // SAFETY: the kernel was compiled with exactly these
            // parameters: one device buffer per tensor argument of its
            // shape (checked above), an i64 per index argument, one buffer
            // per result and the status word; the launch dimensions are
            // the ones its code assumes.
            unsafe { builder.launch(config) }.map_err(|e| failed("launch", e))?;
        }
        let mut results = Vec::with_capacity(outputs.len());
        for (slice, shape, element) in &outputs {
            let mut tensor = Tensor::for_overwrite(shape.clone(), *element);
            let bytes = tensor_bytes_mut(&mut tensor);
            if !bytes.is_empty() {
                compute
                    .memcpy_dtoh(&slice.slice(..bytes.len()), bytes)
                    .map_err(|e| failed("download", e))?;
            }
            results.push(Value::tensor(tensor));
        }
        let status = compute.clone_dtoh(&status).map_err(|e| failed("download", e))?;
        compute.synchronize().map_err(|e| failed("synchronize", e))?;
        if status.first().is_some_and(|&s| s != 0) {
            return Err("integer division by zero".into());
        }
        Ok(results)
    }
}

/// The bytes of a tensor's elements (`i1` as one byte each).
fn tensor_bytes(tensor: &Tensor) -> &[u8] {
    let len = tensor.len() * tensor.element_type().byte_width();
    // SAFETY: the buffer holds `len` elements of that size, contiguous,
    // and lives as long as `tensor`.
    unsafe { std::slice::from_raw_parts(tensor.buffer().as_ptr(), len) }
}

fn tensor_bytes_mut(tensor: &mut Tensor) -> &mut [u8] {
    let len = tensor.len() * tensor.element_type().byte_width();
    // SAFETY: as in `tensor_bytes`; every byte pattern is a valid element
    // except for `i1`, whose bytes the kernels write as 0 or 1.
    unsafe { std::slice::from_raw_parts_mut(tensor.buffer_mut().as_mut_ptr(), len) }
}

impl KernelRunner for CudaModule {
    fn run_kernel(&self, name: &str, args: &[Value]) -> Option<Result<Vec<Value>, String>> {
        let loaded = self.kernels.get(name)?;
        Some(self.launch(loaded, args))
    }
}
