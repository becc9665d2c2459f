//! Running a [`Plan`] on the GPU: uploads, launches and downloads on two
//! streams, with values kept on the device between kernels.
//!
//! Phases, per call:
//! 1. **Launches in plan order.** Before each launch, the arguments it reads
//!    that are still on the host are staged into page-locked memory and
//!    uploaded on the copy (upload) stream. The launch goes on the compute stream,
//!    which waits only for the copies it reads (cudarc records an event per
//!    buffer write), so a kernel runs while the next kernel's inputs upload.
//! 2. **Downloads as results appear.** A result wanted on the host is
//!    copied back on the download stream right after its kernel is queued,
//!    into page-locked memory, while later kernels run and later inputs
//!    upload (a stream of its own, so a download that waits for its kernel
//!    holds up no upload). A result returned at several positions is
//!    downloaded once.
//! 3. **Early frees.** An intermediate is freed once the last launch that
//!    reads it is queued (the free is ordered after that read). cudarc
//!    keeps one read event per buffer, the last reader's, and a free waits
//!    only for it; so a buffer that is downloaded is never freed early (it
//!    is a result, kept to the end), and on an early error `downloads` is
//!    dropped, each staging buffer waiting for its copy, before `values`.
//! 4. **One synchronization** at the end (of the streams the call used);
//!    then the status records (one [`KernelStatus`] per launch, set on an
//!    integer division by zero or, in the bounds-checked mode, an access
//!    out of bounds; in mapped page-locked memory, [`StatusRecords`]) are checked,
//!    worded by `KernelSignature::failure` as on the CPU, and the staged
//!    results are copied into host tensors.
//!
//! Every kernel writes every element of its outputs (the lowering's
//! invariant, shared with the CPU), so outputs are allocated uninitialized.

use super::{CudaDevice, CudaModule, plan::Operand, plan::Plan};
use crate::Error;
use cudarc::driver::{CudaSlice, CudaStream, LaunchConfig, PinnedHostSlice, PushKernelArg};
use jitc_compiler::{KernelStatus, Slot};
use jitc_dialect::kinds::ElementType;
use jitc_interp::{Tensor, Value};
use std::{collections::HashMap, sync::Arc};

/// A tensor in device memory. Kernels never write their arguments, so a
/// device tensor is immutable once made and can be shared.
pub struct DeviceTensor {
    buffer: CudaSlice<u8>,
    shape: Vec<usize>,
    element: ElementType,
}

impl std::fmt::Debug for DeviceTensor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "DeviceTensor({})",
            jitc_interp::tensor::shape_prefix(&self.shape, self.element)
        )
    }
}

impl DeviceTensor {
    /// Its shape.
    pub fn shape(&self) -> &[usize] {
        &self.shape
    }

    /// Its element type.
    pub fn element_type(&self) -> ElementType {
        self.element
    }

    /// Its size in bytes (`i1` elements are bytes).
    pub fn bytes(&self) -> usize {
        self.shape.iter().product::<usize>() * self.element.byte_width()
    }
}

/// An argument or result of a run that keeps values on the GPU.
#[derive(Debug, Clone)]
pub enum DeviceValue {
    /// A tensor in device memory.
    Device(Arc<DeviceTensor>),
    /// A value on the host: an index, or a tensor still to be uploaded (as
    /// an argument) or never on the device (a constant or argument that is
    /// returned as it is).
    Host(Value),
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

pub(super) fn failed(what: &str) -> impl Fn(cudarc::driver::DriverError) -> Error + '_ {
    move |e| Error::Cuda(format!("CUDA {what} failed: {e}"))
}

/// Page-locked staging buffers kept for reuse, at most this many.
const STAGING_KEPT: usize = 16;

impl CudaDevice {
    /// A page-locked buffer of exactly `bytes` bytes (at least one), reused
    /// when one is free. Exactly: cudarc copies a page-locked buffer whole.
    fn staging(&self, bytes: usize) -> Result<PinnedHostSlice<u8>, Error> {
        let bytes = bytes.max(1);
        if let Ok(mut kept) = self.staging.lock()
            && let Some(i) = kept.iter().position(|b| b.len() == bytes)
        {
            return Ok(kept.swap_remove(i));
        }
        // Not write-combined: downloads read these on the host.
        // SAFETY: the memory is written (by a host copy or a download)
        // before it is read.
        unsafe { self.context.alloc_pinned_with_flags::<u8>(bytes, 0) }
            .map_err(failed("page-locked allocation"))
    }

    /// Keeps `buffers` for reuse (each waits for its last copy before it is
    /// written again), the newest [`STAGING_KEPT`].
    fn keep(&self, buffers: impl IntoIterator<Item = PinnedHostSlice<u8>>) {
        if let Ok(mut kept) = self.staging.lock() {
            kept.extend(buffers);
            let excess = kept.len().saturating_sub(STAGING_KEPT);
            kept.drain(..excess);
        }
    }

    /// Queues an upload of `tensor` on the copy stream through a staging
    /// buffer, which goes to `staged` until the streams are synchronized.
    fn upload_async(
        &self,
        tensor: &Tensor,
        staged: &mut Vec<PinnedHostSlice<u8>>,
    ) -> Result<DeviceTensor, Error> {
        let bytes = tensor_bytes(tensor);
        // An empty tensor has no copy to order its allocation before the
        // kernels, so it is allocated on the stream that reads it.
        let stream = if bytes.is_empty() {
            &self.compute
        } else {
            &self.copy
        };
        // SAFETY: a non-empty buffer is written by the upload below before
        // any kernel reads it (the compute stream waits for the copy); an
        // empty one holds no element a kernel uses (one that reads a tensor
        // of dynamic shape selects the overflow value past its sizes).
        // Empty: 64 bytes, so that such a read (at offset 0, its value
        // selected away) stays inside the allocation.
        let mut buffer = unsafe { stream.alloc::<u8>(bytes.len().max(64)) }.map_err(failed("allocation"))?;
        if !bytes.is_empty() {
            let mut stage = self.staging(bytes.len())?;
            stage.as_mut_slice().map_err(failed("page-locked copy"))?[..bytes.len()].copy_from_slice(bytes);
            self.copy
                .memcpy_htod(&stage, &mut buffer)
                .map_err(failed("upload"))?;
            staged.push(stage);
        }
        Ok(DeviceTensor {
            buffer,
            shape: tensor.shape().to_vec(),
            element: tensor.element_type(),
        })
    }

    /// Copies `tensor` to the device and waits for the copy.
    pub fn upload(&self, tensor: &Tensor) -> Result<Arc<DeviceTensor>, Error> {
        let mut staged = Vec::new();
        let uploaded = self.upload_async(tensor, &mut staged)?;
        self.copy.synchronize().map_err(failed("synchronize"))?;
        self.keep(staged);
        Ok(Arc::new(uploaded))
    }

    /// Copies `tensor` back to the host, after the work queued on it.
    pub fn download(&self, tensor: &DeviceTensor) -> Result<Tensor, Error> {
        let mut host = Tensor::for_overwrite(tensor.shape.clone(), tensor.element).map_err(Error::Cuda)?;
        let bytes = tensor_bytes_mut(&mut host);
        if !bytes.is_empty() {
            self.download
                .memcpy_dtoh(&tensor.buffer.slice(..bytes.len()), bytes)
                .map_err(failed("download"))?;
        }
        self.download.synchronize().map_err(failed("synchronize"))?;
        Ok(host)
    }
}

impl CudaDevice {
    /// `words` zeroed `i64`s of page-locked host memory mapped into the
    /// GPU's address space, and their device address.
    pub(super) fn mapped_words(&self, words: usize) -> Result<(PinnedHostSlice<i64>, u64), Error> {
        // SAFETY: the words are zeroed below before anything reads them.
        let mut host = unsafe {
            self.context
                .alloc_pinned_with_flags::<i64>(words, cudarc::driver::sys::CU_MEMHOSTALLOC_DEVICEMAP)
        }
        .map_err(failed("page-locked allocation"))?;
        host.as_mut_slice().map_err(failed("page-locked copy"))?.fill(0);
        let pointer = host.as_ptr().map_err(failed("page-locked allocation"))?;
        let mut device = 0;
        // SAFETY: `pointer` is page-locked memory this context allocated
        // with `CU_MEMHOSTALLOC_DEVICEMAP`, alive as long as `host`, which
        // the caller keeps as long as it uses the address.
        unsafe { cudarc::driver::sys::cuMemHostGetDevicePointer_v2(&mut device, pointer as *mut _, 0) }
            .result()
            .map_err(failed("mapping page-locked memory"))?;
        Ok((host, device))
    }
}

/// The status records of a module's calls: page-locked host memory that
/// the GPU writes directly (mapped into its address space), so a call
/// needs no allocation, no zeroing launch and no download to check them.
/// Kernels write a record only when they fail, so a call that succeeds
/// moves no bytes across the bus for it.
pub(super) struct StatusRecords {
    host: PinnedHostSlice<i64>,
    /// The device address of `host`.
    device: u64,
    /// Whether kernels of a call may still write the records: set when a
    /// call hands them out, cleared when it has read them. A call that
    /// returned early (a launch that failed) leaves it set, and the next
    /// call waits for the compute stream before zeroing them.
    busy: bool,
    /// The stream whose kernels write them.
    compute: Arc<CudaStream>,
}

impl Drop for StatusRecords {
    fn drop(&mut self) {
        // Kernels of a call that returned early may still write them.
        if self.busy {
            let _ = self.compute.synchronize();
        }
    }
}

impl CudaModule {
    /// `words` zeroed status words for a call's launches: their device
    /// address.
    fn status_records(&self, words: usize) -> Result<u64, Error> {
        let mut slot = self.status.borrow_mut();
        if slot.as_ref().is_some_and(|records| records.busy) {
            self.device.compute.synchronize().map_err(failed("synchronize"))?;
        }
        if slot.as_ref().is_none_or(|records| records.host.len() < words) {
            let (host, device) = self.device.mapped_words(words.max(64))?;
            *slot = Some(StatusRecords {
                host,
                device,
                busy: false,
                compute: Arc::clone(&self.device.compute),
            });
        }
        let records = slot.as_mut().expect("the records were just made");
        records.host.as_mut_slice().map_err(failed("page-locked copy"))?[..words].fill(0);
        records.busy = true;
        Ok(records.device)
    }

    /// The first `words` status words, after the compute stream has been
    /// waited for.
    fn read_status_records(&self, words: usize) -> Result<Vec<i64>, Error> {
        let mut slot = self.status.borrow_mut();
        let records = slot
            .as_mut()
            .ok_or_else(|| Error::Cuda("the status records are missing".into()))?;
        records.busy = false;
        Ok(records.host.as_slice().map_err(failed("page-locked copy"))?[..words].to_vec())
    }
}

/// A download under way: the result's positions and its staging buffer.
struct Download {
    positions: Vec<usize>,
    stage: PinnedHostSlice<u8>,
    shape: Vec<usize>,
    element: ElementType,
}

impl CudaModule {
    /// Runs `plan` on `args` (constants are `constants`, index-aligned with
    /// the plan's). With `to_host`, results computed on the GPU come back as
    /// host tensors; otherwise they stay on the device.
    pub(crate) fn execute(
        &self,
        plan: &Plan,
        constants: &[DeviceValue],
        args: Vec<DeviceValue>,
        to_host: bool,
    ) -> Result<Vec<DeviceValue>, Error> {
        if args.len() != plan.arguments {
            return Err(Error::Cuda(format!(
                "the plan takes {} arguments, {} given",
                plan.arguments,
                args.len()
            )));
        }
        let device = &*self.device;
        // Errors that cudarc recorded where it could not return them (in
        // drops) belong to an earlier call.
        device
            .context
            .check_err()
            .map_err(failed("an operation of an earlier call"))?;
        let (compute, download) = (&device.compute, &device.download);
        let mut values: HashMap<Operand, DeviceValue> = args
            .into_iter()
            .enumerate()
            .map(|(i, v)| (Operand::Argument(i), v))
            .chain(
                constants
                    .iter()
                    .enumerate()
                    .map(|(i, v)| (Operand::Constant(i), v.clone())),
            )
            .collect();
        // Host values uploaded for the launches, apart from `values`, which
        // keeps what a result that returns an argument gives back.
        let mut uploaded: HashMap<Operand, Arc<DeviceTensor>> = HashMap::new();
        let last_reads = plan.last_reads();
        let mut wanted: HashMap<Operand, Vec<usize>> = HashMap::new();
        for (position, operand) in plan.results.iter().enumerate() {
            wanted.entry(*operand).or_default().push(position);
        }
        let mut staged = Vec::new();
        let mut downloads = Vec::new();
        // One status record per launch, two i64 words each, in mapped
        // host memory.
        let record = std::mem::size_of::<KernelStatus>() / std::mem::size_of::<i64>();
        let words = record * plan.launches.len().max(1);
        let status = self.status_records(words)?;
        let record_bytes = (record * std::mem::size_of::<i64>()) as u64;
        let timing = if self.timing.get() {
            let event = || {
                device
                    .context
                    .new_event(Some(cudarc::driver::sys::CUevent_flags::CU_EVENT_DEFAULT))
                    .map_err(failed("event"))
            };
            let start = event()?;
            start.record(compute).map_err(failed("event"))?;
            Some((start, event()?))
        } else {
            None
        };
        for (i, step) in plan.launches.iter().enumerate() {
            let loaded = self.loaded(&step.kernel, step.args.len())?;
            // Phase 1: what the launch reads, uploading host tensors.
            let mut inputs = Vec::with_capacity(step.args.len());
            for (position, (operand, slot)) in
                step.args.iter().zip(&loaded.kernel.signature.inputs).enumerate()
            {
                let value = values
                    .get(operand)
                    .ok_or_else(|| mismatch(&step.kernel, position))?;
                let arg = argument(&step.kernel, position, value, slot, |tensor| {
                    if let Some(on_device) = uploaded.get(operand) {
                        return Ok(Arc::clone(on_device));
                    }
                    let on_device = Arc::new(device.upload_async(tensor, &mut staged)?);
                    uploaded.insert(*operand, Arc::clone(&on_device));
                    Ok(on_device)
                })?;
                inputs.push(arg);
            }
            let outputs = self.queue(&step.kernel, loaded, &inputs, status + record_bytes * i as u64)?;
            drop(inputs);
            // Phase 2: results wanted on the host start downloading.
            for (index, output) in outputs.into_iter().enumerate() {
                let operand = Operand::Result { launch: i, index };
                let output = Arc::new(output);
                if to_host && let Some(positions) = wanted.get(&operand) {
                    let bytes = output.bytes();
                    let mut stage = device.staging(bytes)?;
                    if bytes > 0 {
                        download
                            .memcpy_dtoh(&output.buffer, &mut stage)
                            .map_err(failed("download"))?;
                    }
                    downloads.push(Download {
                        positions: positions.clone(),
                        stage,
                        shape: output.shape.clone(),
                        element: output.element,
                    });
                }
                values.insert(operand, DeviceValue::Device(output));
            }
            // Phase 3: free what no later launch reads.
            for operand in &step.args {
                if last_reads.get(operand) == Some(&i) {
                    uploaded.remove(operand);
                    if matches!(operand, Operand::Result { .. }) && !wanted.contains_key(operand) {
                        values.remove(operand);
                    }
                }
            }
        }
        if let Some((_, end)) = &timing {
            end.record(compute).map_err(failed("event"))?;
        }
        // Phase 4: wait, check, and collect. A stream this call queued
        // nothing on is not waited for (each wait costs microseconds).
        compute.synchronize().map_err(failed("synchronize"))?;
        if !downloads.is_empty() {
            download.synchronize().map_err(failed("synchronize"))?;
        }
        if !staged.is_empty() {
            device.copy.synchronize().map_err(failed("synchronize"))?;
        }
        let words = self.read_status_records(words)?;
        if let Some((start, end)) = &timing {
            let elapsed = start.elapsed_ms(end).map_err(failed("event"))?;
            self.gpu_time
                .set(Some(std::time::Duration::from_secs_f64(f64::from(elapsed) / 1e3)));
        }
        device.context.check_err().map_err(failed("a queued operation"))?;
        let failure = plan
            .launches
            .iter()
            .zip(words.chunks(record))
            .find_map(|(step, words)| self.status_error(&step.kernel, KernelStatus::try_from(words).ok()?));
        if let Some(failure) = failure {
            device.keep(staged.into_iter().chain(downloads.into_iter().map(|d| d.stage)));
            return Err(failure);
        }
        let mut results: Vec<Option<DeviceValue>> = plan
            .results
            .iter()
            .map(|operand| values.get(operand).cloned())
            .collect();
        let mut kept = staged;
        for finished in downloads {
            let mut tensor = Tensor::for_overwrite(finished.shape, finished.element).map_err(Error::Cuda)?;
            let bytes = tensor_bytes_mut(&mut tensor);
            let staged = finished.stage.as_slice().map_err(failed("page-locked copy"))?;
            bytes.copy_from_slice(&staged[..bytes.len()]);
            let value = Value::tensor(tensor);
            for position in finished.positions {
                results[position] = Some(DeviceValue::Host(value.clone()));
            }
            kept.push(finished.stage);
        }
        device.keep(kept);
        results
            .into_iter()
            .enumerate()
            .map(|(i, r)| r.ok_or_else(|| Error::Cuda(format!("result {i} of the plan has no value"))))
            .collect()
    }
}

/// What a launch reads: a device buffer or an `index`.
pub(super) enum Arg {
    Buffer(Arc<DeviceTensor>),
    Index(i64),
}

/// The error for argument `position` of kernel `kernel` that does not fit
/// it.
fn mismatch(kernel: &str, position: usize) -> Error {
    Error::Cuda(format!(
        "argument {position} of kernel @{kernel} does not match the compiled kernel"
    ))
}

/// `value` as argument `position` of `kernel`, whose slot is `slot`; a
/// host tensor is put on the device by `upload`.
pub(super) fn argument(
    kernel: &str,
    position: usize,
    value: &DeviceValue,
    slot: &Slot,
    upload: impl FnOnce(&Arc<Tensor>) -> Result<Arc<DeviceTensor>, Error>,
) -> Result<Arg, Error> {
    let arg = match (value, slot) {
        (DeviceValue::Host(Value::Index(n)), Slot::Index) => Arg::Index(*n),
        (DeviceValue::Host(Value::Tensor(tensor)), Slot::Tensor(..) | Slot::Dynamic(..)) => {
            Arg::Buffer(upload(tensor)?)
        }
        (DeviceValue::Device(tensor), Slot::Tensor(..) | Slot::Dynamic(..)) => {
            Arg::Buffer(Arc::clone(tensor))
        }
        _ => return Err(mismatch(kernel, position)),
    };
    if let Arg::Buffer(tensor) = &arg
        && !slot.fits(&tensor.shape, tensor.element)
    {
        return Err(mismatch(kernel, position));
    }
    Ok(arg)
}

impl CudaModule {
    /// Kernel `name`, loaded, when it takes `args` arguments.
    pub(super) fn loaded(&self, name: &str, args: usize) -> Result<&super::Loaded, Error> {
        let loaded = self
            .kernels
            .get(name)
            .ok_or_else(|| Error::Cuda(format!("kernel @{name} was not loaded")))?;
        let inputs = loaded.kernel.signature.inputs.len();
        if args != inputs {
            return Err(Error::Cuda(format!(
                "kernel @{name} takes {inputs} arguments, {args} given"
            )));
        }
        Ok(loaded)
    }

    /// Queues kernel `name` (`loaded`) on the compute stream on `inputs`
    /// (checked by [`argument`]), its status record at the device address
    /// `status`; its outputs, allocated here, which it writes once it runs.
    pub(super) fn queue(
        &self,
        name: &str,
        loaded: &super::Loaded,
        inputs: &[Arg],
        status: u64,
    ) -> Result<Vec<DeviceTensor>, Error> {
        let compute = &self.device.compute;
        let signature = &loaded.kernel.signature;
        // The sizes of the inputs' dynamic dimensions, passed last.
        let sizes: Vec<i64> = signature
            .dynamic_dims()
            .map(|(input, dim)| match &inputs[input] {
                Arg::Buffer(tensor) => tensor.shape[dim] as i64,
                Arg::Index(_) => 0,
            })
            .collect();
        let mut outputs = Vec::with_capacity(signature.outputs.len());
        for slot in &signature.outputs {
            let Slot::Tensor(shape, element) = slot else {
                return Err(Error::Cuda(format!("kernel @{name} returns an index")));
            };
            let bytes = jitc_interp::tensor::checked_len(shape).map_err(Error::Cuda)? * element.byte_width();
            // SAFETY: the kernel writes every element before anything
            // reads them (module docs).
            let buffer = unsafe { compute.alloc::<u8>(bytes.max(1)) }.map_err(failed("allocation"))?;
            outputs.push(DeviceTensor {
                buffer,
                shape: shape.clone(),
                element: *element,
            });
        }
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
            for input in inputs {
                match input {
                    Arg::Buffer(tensor) => builder.arg(&tensor.buffer),
                    Arg::Index(n) => builder.arg(n),
                };
            }
            for output in &mut outputs {
                builder.arg(&mut output.buffer);
            }
            builder.arg(&status);
            if let Some(scratch) = &loaded.scratch {
                builder.arg(scratch);
            }
            for size in &sizes {
                builder.arg(size);
            }
            let config = LaunchConfig {
                grid_dim: (grid, 1, 1),
                block_dim: (block, 1, 1),
                shared_mem_bytes: 0,
            };
            // SAFETY: the kernel was compiled with exactly these
            // parameters: one device buffer per tensor argument of its
            // shape and type (checked by `argument`), an i64 per index
            // argument, one buffer per result of its size, its status
            // record, when it has some, its scratch memory of the size it
            // asked for, and an i64 per dynamic dimension of its arguments
            // (their sizes, checked by `argument` to be the rank and
            // static sizes it was compiled for); the launch dimensions are
            // the ones its code assumes.
            unsafe { builder.launch(config) }.map_err(failed("launch"))?;
        }
        Ok(outputs)
    }

    /// The error a launch of kernel `kernel` that left `status` in its
    /// record reports, worded as on the CPU; `None` when it succeeded.
    pub(super) fn status_error(&self, kernel: &str, status: KernelStatus) -> Option<Error> {
        if status[0] == 0 {
            return None;
        }
        // A failure is never dropped, even one no table can word.
        let failure = self
            .kernels
            .get(kernel)
            .and_then(|loaded| loaded.kernel.signature.failure(status));
        Some(match failure {
            // Located in the kernel's body (a division by zero): reported
            // at its op, as the interpreter reports it.
            Some(jitc_dialect::KernelFailure {
                op: Some((op, line)),
                message,
            }) => Error::Run(jitc_interp::Error::Eval { op, line, message }),
            Some(failure) => Error::Cuda(format!("kernel @{kernel}: {}", failure.message)),
            None => Error::Cuda(format!(
                "kernel @{kernel}: the kernel failed with the status {}",
                status[0]
            )),
        })
    }
}
