#!/usr/bin/env python3
"""PyTorch eager and torch.compile on the workloads of `cargo bench -p jitc-runtime --bench cuda`.

Run on the GPU machine: `python3 scripts/bench_torch.py` (with
`JITC_BENCH_ONLY=softmax,layer`, only the workloads whose names contain
one of the words, as in the jitc bench). Measured the way
the jitc bench measures:

- the copy bandwidth of a 512 MiB device-to-device copy, timed with CUDA
  events, counting bytes read and written;
- each workload on inputs already on the GPU (f32, every element 0.5): the
  wall clock of one call followed by `torch.cuda.synchronize()`, output
  allocation included; the median and minimum after a warm-up call (three
  for torch.compile, so that compiling and autotuning are not timed);
- GB/s as the inputs read plus the outputs written once, over the median.

Each workload is PyTorch's idiomatic eager form of the jitc program:
`torch.sigmoid` for the exp/add/div sigmoid, `torch.softmax`,
`F.batch_norm` in training mode for the example's "instance norm" (its
statistics are per channel, over N, H and W), `F.layer_norm` then
`F.gelu(approximate="tanh")`, `F.conv2d` and `@`. TF32 is off, so conv and
matmul compute in f32 as jitc does.
"""

import os
import statistics
import sys
import time

import torch
import torch.nn.functional as F


def copy_bandwidth():
    n = 512 << 20
    source = torch.zeros(n, dtype=torch.uint8, device="cuda")
    target = torch.empty_like(source)
    samples = []
    for repetition in range(12):
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        target.copy_(source)
        end.record()
        end.synchronize()
        if repetition >= 2:
            samples.append(start.elapsed_time(end) / 1e3)
    return 2 * n / statistics.median(samples) / 1e9


def workloads():
    gelu_ln = lambda x: F.gelu(F.layer_norm(x, (x.shape[-1],), eps=1e-5), approximate="tanh")
    batch_stats = lambda x: F.batch_norm(x, None, None, training=True, eps=1e-5)
    return [
        ("add, 16M f32", lambda x, y: x + y, [(1 << 24,), (1 << 24,)]),
        ("sigmoid, 16M f32", torch.sigmoid, [(1 << 24,)]),
        ("softmax, 4096x1024", lambda x: torch.softmax(x, dim=1), [(4096, 1024)]),
        ("instance norm", batch_stats, [(32, 64, 56, 56)]),
        ("layer norm + GELU", gelu_ln, [(8192, 1024)]),
        ("conv 8x64x56x56", lambda x, w: F.conv2d(x, w, padding=1), [(8, 64, 56, 56), (64, 64, 3, 3)]),
        ("matmul 1024^3", lambda x, y: x @ y, [(1024, 1024), (1024, 1024)]),
    ]


def chosen(name):
    """Whether `JITC_BENCH_ONLY` (comma-separated words, as the jitc bench
    takes it) names the workload; every workload when it is unset."""
    only = os.environ.get("JITC_BENCH_ONLY")
    return only is None or any(part.strip() in name.lower() for part in only.split(","))


def measure(function, inputs, repetitions, warm_up):
    """Wall clock of synchronized calls after `warm_up` untimed ones."""
    samples = []
    output = None
    with torch.no_grad():
        for repetition in range(repetitions + warm_up):
            torch.cuda.synchronize()
            start = time.perf_counter()
            output = function(*inputs)
            torch.cuda.synchronize()
            if repetition >= warm_up:
                samples.append(time.perf_counter() - start)
    return samples, output


def main():
    if not torch.cuda.is_available():
        print("torch bench: SKIPPED: PyTorch sees no GPU")
        return 0
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    copy = copy_bandwidth()
    print(
        f"device: {torch.cuda.get_device_name()}; torch {torch.__version__}; "
        f"copy bandwidth (device to device, read + write): {copy:.0f} GB/s"
    )
    print(
        f"{'workload':<22} {'form':<14} {'median (ms)':>12} {'min (ms)':>10} {'GB/s':>9} {'of copy':>8}"
    )
    # Every eager row first, then every torch.compile row: compiling is
    # slow on a fresh machine, and a run cut short keeps the eager figures.
    for form in ("eager", "torch.compile"):
        for name, function, shapes in workloads():
            if not chosen(name):
                continue
            inputs = [torch.full(shape, 0.5, dtype=torch.float32, device="cuda") for shape in shapes]
            heavy = name.startswith(("conv", "matmul"))
            repetitions = 5 if heavy else 20
            callable_, warm_up = function, 1
            if form == "torch.compile":
                try:
                    # Default mode (Inductor's Triton kernels); three warm-up
                    # calls so that compiling and autotuning are not timed.
                    callable_, warm_up = torch.compile(function, dynamic=False), 3
                except Exception as error:  # noqa: BLE001 - report and go on
                    print(f"{name:<22} torch.compile unavailable: {error}")
                    continue
            try:
                samples, output = measure(callable_, inputs, repetitions, warm_up)
            except Exception as error:  # noqa: BLE001 - report and go on
                print(f"{name:<22} {form:<14} failed: {type(error).__name__}: {error}")
                continue
            moved = sum(t.numel() * 4 for t in inputs) + output.numel() * 4
            median = statistics.median(samples)
            gbs = moved / median / 1e9
            print(
                f"{name:<22} {form:<14} {median * 1e3:>12.3f} {min(samples) * 1e3:>10.3f} "
                f"{gbs:>9.1f} {100 * gbs / copy:>7.0f}%",
                flush=True,
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
