//! CUDA backend throughput against the GPU's copy bandwidth.
//!
//! Run with `cargo bench -p jitc-runtime --bench cuda` on a machine with
//! an NVIDIA GPU (sm_80 or newer); elsewhere it prints `SKIPPED` and the
//! reason. In one run it
//! 1. measures the card's copy bandwidth: a device-to-device copy of
//!    512 MiB, timed with CUDA events, counting bytes read and written;
//! 2. times each workload of the CPU bench (`workloads/mod.rs`) through
//!    `CudaModule` with fast math: compile time (fuse, PTX, load), then the
//!    median and minimum of calls of `run_on_device` on inputs already on
//!    the GPU, each call synchronized (the wall clock from the first launch
//!    queued to the last kernel done, output allocation included), the
//!    median GPU time of those calls (`CudaModule::set_timing`: CUDA
//!    events on the compute stream just before the first launch and just
//!    after the last, so the kernels and the gaps between them, without
//!    the host's share of the call), and the
//!    median of `run` from host tensors (uploads, kernels and downloads,
//!    overlapped as the device plan allows), after the pieces of such a
//!    call timed alone for one 64 MiB tensor: a host clone, an upload and
//!    a download.
//!
//!    Softmax and layer norm + GELU run as GPU row chains (one block per
//!    row, the default), then again without them (`(jittor)`,
//!    `GpuOptions::jittor_rules`: one launch per kernel). The convolution
//!    and the matmul run as shared-memory tiles (the default), then one
//!    thread per output (`(threads)`, `GpuOptions::tiles` off).
//!
//! 3. times host code on the GPU: the host bench's 32-step RNN (an
//!    `scf.for` over a sequence, its state read and written; B16, H256)
//!    through `CudaModule::run`, a host plan with its values kept on the
//!    GPU (`Schedule::Host`), waiting for each kernel call and then with
//!    deferred checks (`CudaModule::set_deferred_checks`, the default), against the CPU
//!    backend's host plan in the same run: medians per call.
//!
//! `JITC_BENCH_ONLY=softmax,layer` runs only the rows whose names contain
//! one of the comma-separated words (lower case; `rnn` names section 3),
//! as `scripts/gpu-check.sh` does under Nsight Compute.
//!
//! Bytes moved are the inputs read plus the outputs written once, so GB/s
//! is a lower bound on the traffic. `scripts/bench_torch.py` measures the
//! same workloads in PyTorch eager the same way.

use cudarc::driver::sys::CUevent_flags;
use jitc_compiler::{DiagnosticCollector, GpuOptions, new_context, parse_module};
use jitc_interp::{Scalar, StateStore, Tensor, Value};
use jitc_runtime::{
    CpuModule,
    cuda::{CudaDevice, CudaModule, DeviceValue, Schedule},
};
use std::time::{Duration, Instant};

#[path = "workloads/rnn.rs"]
mod rnn;
mod workloads;

use workloads::{median, workloads};

/// GB/s of a device-to-device copy, bytes read plus bytes written.
fn copy_bandwidth(device: &CudaDevice) -> Result<f64, cudarc::driver::DriverError> {
    let stream = device.compute_stream();
    let bytes = 512 << 20;
    let source = stream.alloc_zeros::<u8>(bytes)?;
    let mut target = stream.alloc_zeros::<u8>(bytes)?;
    let mut samples = Vec::new();
    for repetition in 0..12 {
        let start = device
            .context()
            .new_event(Some(CUevent_flags::CU_EVENT_DEFAULT))?;
        let end = device
            .context()
            .new_event(Some(CUevent_flags::CU_EVENT_DEFAULT))?;
        start.record(stream)?;
        stream.memcpy_dtod(&source, &mut target)?;
        end.record(stream)?;
        end.synchronize()?;
        if repetition >= 2 {
            samples.push(Duration::from_secs_f64(start.elapsed_ms(&end)? as f64 / 1e3));
        }
    }
    Ok((2 * bytes) as f64 / median(samples).as_secs_f64() / 1e9)
}

/// Median wall clock of `f` over `n` calls after one warm-up call.
fn timed(n: usize, mut f: impl FnMut()) -> Duration {
    f();
    median(
        (0..n)
            .map(|_| {
                let start = Instant::now();
                f();
                start.elapsed()
            })
            .collect(),
    )
}

/// The pieces of a call from host tensors, for one 64 MiB f32 tensor:
/// a host clone, an upload and a download, each waited for.
fn host_copies(device: &CudaDevice) {
    let tensor = Tensor::splat(vec![1 << 24], Scalar::F32(0.5));
    let bytes = (tensor.len() * 4) as f64;
    let clone = timed(5, || drop(std::hint::black_box(tensor.clone())));
    let upload = timed(5, || drop(device.upload(&tensor).expect("the upload runs")));
    let on_device = device.upload(&tensor).expect("the upload runs");
    let download = timed(5, || {
        drop(device.download(&on_device).expect("the download runs"))
    });
    let rate = |d: Duration| bytes / d.as_secs_f64() / 1e9;
    println!(
        "host copies of 64 MiB (medians): clone {:.2} ms ({:.1} GB/s); upload {:.2} ms ({:.1} GB/s); \
         download {:.2} ms ({:.1} GB/s)",
        clone.as_secs_f64() * 1e3,
        rate(clone),
        upload.as_secs_f64() * 1e3,
        rate(upload),
        download.as_secs_f64() * 1e3,
        rate(download)
    );
}

/// The RNN of the host bench on the GPU (a host plan over device values)
/// and on the CPU, medians of 21 calls after a warm-up.
fn host_code() {
    let (steps, batch, hidden) = (32, 16, 256);
    let source = rnn::rnn(steps, batch, hidden);
    let args = || rnn::inputs(steps, batch, hidden);
    let state = rnn::state(batch, hidden);
    let context = new_context().expect("context");
    let _collector = DiagnosticCollector::attach(&context);
    let mut gpu_module = parse_module(&context, &source).expect("the RNN parses");
    let gpu =
        CudaModule::compile(&context, &mut gpu_module, &GpuOptions::default()).expect("the RNN compiles");
    let schedule = gpu.schedule(&gpu_module, "main").expect("a schedule");
    assert!(
        matches!(schedule, Schedule::Host(_)),
        "the RNN runs as a host plan: {schedule:?}"
    );
    let mut gpu_state = state.clone();
    gpu.set_deferred_checks(false);
    let waits = gpu.host_plan_waits();
    let on_gpu = timed(21, || {
        gpu.run(&gpu_module, "main", args(), &mut gpu_state)
            .expect("the RNN runs on the GPU");
    });
    let waited = gpu.host_plan_waits() - waits;
    gpu.set_deferred_checks(true);
    let waits = gpu.host_plan_waits();
    let mut deferred_state = state.clone();
    let deferred = timed(21, || {
        gpu.run(&gpu_module, "main", args(), &mut deferred_state)
            .expect("the RNN runs on the GPU with deferred checks");
    });
    let deferred_waits = gpu.host_plan_waits() - waits;
    let mut cpu_module = parse_module(&context, &source).expect("the RNN parses");
    let cpu = CpuModule::compile(&context, &mut cpu_module).expect("the RNN compiles");
    let mut cpu_state = state;
    let on_cpu = timed(21, || {
        cpu.run(&cpu_module, "main", args(), &mut cpu_state)
            .expect("the RNN runs on the CPU");
    });
    println!(
        "host code: RNN scf.for, {steps} steps, B{batch} H{hidden} (medians per call): GPU host plan {:.3} ms \
         ({:.1} us per step, {} waits for kernels a call), with deferred checks {:.3} ms ({:.1} us per step, \
         {} waits a call), CPU host plan {:.3} ms, ratios to the CPU {:.2}x and {:.2}x",
        on_gpu.as_secs_f64() * 1e3,
        on_gpu.as_secs_f64() * 1e6 / steps as f64,
        waited as f64 / 22.0,
        deferred.as_secs_f64() * 1e3,
        deferred.as_secs_f64() * 1e6 / steps as f64,
        deferred_waits as f64 / 22.0,
        on_cpu.as_secs_f64() * 1e3,
        on_cpu.as_secs_f64() / on_gpu.as_secs_f64(),
        on_cpu.as_secs_f64() / deferred.as_secs_f64()
    );
}

fn main() {
    let device = match CudaDevice::get() {
        Ok(device) => device,
        Err(reason) => {
            println!("cuda bench: SKIPPED: {reason}");
            return;
        }
    };
    let copy = copy_bandwidth(&device).expect("the copy runs");
    println!(
        "device: {} (sm_{}{}); copy bandwidth (device to device, read + write): {copy:.0} GB/s",
        device.name(),
        device.capability().0,
        device.capability().1
    );
    host_copies(&device);
    println!(
        "{:<28} {:>12} {:>12} {:>10} {:>9} {:>8} {:>10} {:>8} {:>15}",
        "workload",
        "compile (ms)",
        "median (ms)",
        "min (ms)",
        "GB/s",
        "of copy",
        "GPU (ms)",
        "of copy",
        "from host (ms)"
    );
    let chosen = |name: &str| {
        std::env::var("JITC_BENCH_ONLY").map_or(true, |only| {
            only.split(',')
                .any(|part| name.to_lowercase().contains(part.trim()))
        })
    };
    for workload in workloads().into_iter().filter(|w| chosen(w.name)) {
        // The normalizations run as GPU row chains (the default), then by
        // Jittor's rules alone (`--jittor-rules`), one launch per kernel.
        // The contractions run as shared-memory tiles (the default), then
        // one thread per output (`--no-gpu-tiles`).
        let chains = ["softmax", "layer norm"]
            .iter()
            .any(|n| workload.name.starts_with(n));
        let contraction = workload.name.starts_with("conv") || workload.name.starts_with("matmul");
        let variants: &[(bool, bool, &str)] = if chains {
            &[(false, true, ""), (true, true, " (jittor)")]
        } else if contraction {
            &[(false, true, ""), (false, false, " (threads)")]
        } else {
            &[(false, true, "")]
        };
        for &(jittor_rules, tiles, suffix) in variants {
            // A workload that fails (the first runs on a new GPU) is
            // reported and the others still run.
            let name = format!("{}{suffix}", workload.name);
            let options = GpuOptions {
                jittor_rules,
                tiles,
                ..GpuOptions::default()
            };
            let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                bench(&device, copy, &workload, &name, &options)
            }));
            if outcome.is_err() {
                println!("{name:<28} FAILED (the panic above)");
            }
        }
    }
    if chosen("rnn host code") && std::panic::catch_unwind(host_code).is_err() {
        println!("host code: FAILED (the panic above)");
    }
}

/// Times one workload compiled with `options` and prints its row, `name`.
fn bench(device: &CudaDevice, copy: f64, workload: &workloads::Workload, name: &str, options: &GpuOptions) {
    let context = new_context().expect("context");
    let _collector = DiagnosticCollector::attach(&context);
    let mut module = parse_module(&context, &workload.source).expect("the workload parses");
    let start = Instant::now();
    let compiled = CudaModule::compile(&context, &mut module, options).expect("the workload compiles");
    let compile = start.elapsed();
    assert!(
        compiled.interpreted_kernels().is_empty(),
        "every kernel of {} compiles: {:?}",
        name,
        compiled.interpreted_kernels()
    );
    let schedule = compiled.schedule(&module, "main").expect("a schedule");
    assert!(
        matches!(schedule, Schedule::Device { .. }),
        "{name} runs as a device plan: {schedule:?}"
    );
    let inputs: Vec<Tensor> = workload
        .inputs
        .iter()
        .map(|s| Tensor::splat(s.clone(), Scalar::F32(0.5)))
        .collect();
    let on_device: Vec<DeviceValue> = inputs
        .iter()
        .map(|t| {
            device
                .upload(t)
                .map(DeviceValue::Device)
                .expect("the upload runs")
        })
        .collect();
    let bytes_in: usize = inputs.iter().map(|t| t.len() * 4).sum();
    let heavy = workload.name.starts_with("conv") || workload.name.starts_with("matmul");
    let repetitions = if heavy { 5 } else { 20 };
    let mut samples = Vec::new();
    let mut gpu_samples = Vec::new();
    let mut bytes_out = 0;
    compiled.set_timing(true);
    for repetition in 0..=repetitions {
        let start = Instant::now();
        let results = compiled
            .run_on_device(&module, "main", on_device.clone())
            .expect("the workload runs");
        let elapsed = start.elapsed();
        let gpu = compiled.last_gpu_time().expect("the call was timed");
        bytes_out = results
            .iter()
            .map(|r| match r {
                DeviceValue::Device(t) => t.bytes(),
                DeviceValue::Host(_) => 0,
            })
            .sum();
        // The first call is a warm-up.
        if repetition > 0 {
            samples.push(elapsed);
            gpu_samples.push(gpu);
        }
    }
    let gpu_median = median(gpu_samples);
    compiled.set_timing(false);
    let minimum = *samples.iter().min().unwrap();
    let median_device = median(samples);
    let mut from_host = Vec::new();
    for repetition in 0..=repetitions.min(8) {
        let args = inputs.iter().cloned().map(Value::tensor).collect();
        let start = Instant::now();
        compiled
            .run(&module, "main", args, &mut StateStore::new())
            .expect("the workload runs");
        if repetition > 0 {
            from_host.push(start.elapsed());
        }
    }
    let gbs = (bytes_in + bytes_out) as f64 / median_device.as_secs_f64() / 1e9;
    let gpu_gbs = (bytes_in + bytes_out) as f64 / gpu_median.as_secs_f64() / 1e9;
    println!(
        "{:<28} {:>12.1} {:>12.3} {:>10.3} {:>9.1} {:>7.0}% {:>10.3} {:>7.0}% {:>15.2}",
        name,
        compile.as_secs_f64() * 1e3,
        median_device.as_secs_f64() * 1e3,
        minimum.as_secs_f64() * 1e3,
        gbs,
        100.0 * gbs / copy,
        gpu_median.as_secs_f64() * 1e3,
        100.0 * gpu_gbs / copy,
        median(from_host).as_secs_f64() * 1e3
    );
    if workload.flops > 0 {
        println!(
            "  {name}: {:.0} GFLOP/s at the kernel's median",
            workload.flops as f64 / gpu_median.as_secs_f64() / 1e9
        );
    }
}
