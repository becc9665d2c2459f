"""Benchmarks of the Python package (not tests): what recording an op, a
cache-hit fetch, and whole workloads cost from Python, against the same
programs through `jitc bench`.

    JITC_PYTHON_RELEASE=1 bash scripts/python.sh      # an optimized build
    .venv/bin/python python/bench.py [path/to/release/jitc]

Medians of repeated runs; the machine is shared, so compare ratios taken in
one run. The `jitc bench` comparison runs the function a fetch compiles
(written out by `jitc.dump`) on the same inputs.
"""

import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

import jitc


def median_time(run, repeat, inner=1):
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        for _ in range(inner):
            run()
        samples.append((time.perf_counter() - start) / inner)
    return statistics.median(samples)


def record_one_op():
    x = jitc.Var(np.ones(1024, np.float32))
    w = jitc.Var(np.ones(1024, np.float32))

    def record():
        for _ in range(1000):
            x * w
    return median_time(record, 15) / 1000


def chain_fetch():
    """A 100-op element-wise chain on 1,024 floats, recorded and fetched
    from Python on every call (the cache hits after the first): the whole
    call, and the fetch alone."""
    w = jitc.Var(np.full(1024, 0.999, np.float32))
    b = jitc.Var(np.full(1024, 0.001, np.float32))
    data = np.linspace(-1, 1, 1024, dtype=np.float32)

    def record():
        y = jitc.Var(data)
        for k in range(50):
            y = y * w
            y = y + b
        return y
    record().numpy()
    hits = jitc.stats()["cache_hits"]
    whole = median_time(lambda: record().numpy(), 15, 20)
    fetches = []
    for _ in range(300):
        y = record()
        start = time.perf_counter()
        y.numpy()
        fetches.append(time.perf_counter() - start)
    assert jitc.stats()["cache_hits"] - hits == 15 * 20 + 300, "the chain recompiled"
    return whole, statistics.median(fetches)


def workload(name, build, inputs, jitc_binary):
    """`build` run from Python (record and fetch, cache hits), against
    `jitc bench` on the function its fetch runs."""
    vars_ = [jitc.Var(a) for a in inputs]
    build(*vars_).numpy()

    def call():
        build(*[jitc.Var(a) for a in inputs]).numpy()
    python = median_time(call, 10)
    with tempfile.TemporaryDirectory() as folder:
        fetch = build(*[jitc.Var(a) for a in inputs])
        path = jitc.dump(fetch, folder)
        command = Path(path).read_text().splitlines()[0].removeprefix("// ").split()
        out = subprocess.run([jitc_binary, "bench", "fetch.mlir", *command[3:]], cwd=folder,
                             capture_output=True, text=True, check=True).stdout
    median = float(re.search(r"median ([0-9.]+) ms", out).group(1)) / 1e3
    print(f"  {name:<28} python {python * 1e3:8.3f} ms   jitc bench {median * 1e3:8.3f} ms   ratio {python / median:5.2f}x")


def training_step(jitc_binary):
    """One SGD step of the 784-512-10 MLP at batch 256 from Python (record
    the forward pass, `jitc.grad`, the updates as state writes, and one
    fetch), against `jitc bench` on the hand-written examples/mlp_step.mlir
    with the same data and parameters."""
    root = Path(__file__).resolve().parents[1]
    sys.path.insert(0, str(root / "examples" / "python"))
    import mlp_train

    x, y = mlp_train.data(mlp_train.BATCH)
    opt = mlp_train.make_optimizer(lr=0.01, momentum=0.0)
    mlp_train.step(opt, x, y)
    python = median_time(lambda: mlp_train.step(opt, x, y), 15)
    with tempfile.TemporaryDirectory() as folder:
        inputs = [x, y, *mlp_train.initial_parameters().values(), np.float32(0.01)]
        args = []
        for k, value in enumerate(inputs):
            np.save(Path(folder) / f"in{k}.npy", value)
            args += ["--input", f"@in{k}.npy"]
        out = subprocess.run([jitc_binary, "bench", str(root / "examples" / "mlp_step.mlir"), *args,
                              "--repetitions", "15"],
                             cwd=folder, capture_output=True, text=True, check=True).stdout
    median = float(re.search(r"median ([0-9.]+) ms", out).group(1)) / 1e3
    flop = 2 * 256 * (784 * 512 * 2 + 512 * 10 * 3)
    print(f"  {'MLP training step (b256)':<28} python {python * 1e3:8.3f} ms   jitc bench {median * 1e3:8.3f} ms"
          f"   ratio {python / median:5.2f}x   ({flop / python / 1e9:.0f} / {flop / median / 1e9:.0f} GFLOP/s)")


def janus_rnn():
    """JANUS's Figure 1 RNN (sequence 32, batch 16, hidden 256, inputs
    256), one training step (forward, `jitc.grad`, SGD on attributes):
    through `@jitc.function` (served by the staged graph) against the same
    model run imperatively on the lazy graph (record every op, cache-hit
    fetch)."""
    root = Path(__file__).resolve().parents[1]
    sys.path.insert(0, str(root / "examples" / "python"))
    import janus_rnn as m

    sizes = dict(inputs=256, hidden=256, batch=16)
    staged, imperative = m.StagedRNN(**sizes), m.RNNModel(**sizes)
    data = list(m.batches(6, lengths=(32,), **sizes))
    start = time.perf_counter()
    for sequence, target in data[:4]:
        staged(sequence, target, 0.01).item()
        imperative(sequence, target, 0.01).item()
    warm = time.perf_counter() - start
    assert m.StagedRNN.__call__.stats()["staged"] == 1, m.StagedRNN.__call__.stats()
    times = {}
    for name, model in (("staged", staged), ("imperative", imperative)):
        sequence, target = data[5]
        times[name] = median_time(lambda: model(sequence, target, 0.01).item(), 15)
    print(f"  {'Figure 1 RNN step (32x16x256)':<28} jitc.function {times['staged'] * 1e3:8.3f} ms   "
          f"imperative {times['imperative'] * 1e3:8.3f} ms   ratio {times['imperative'] / times['staged']:5.2f}x "
          f"(warm-up, compiles included: {warm:.1f} s)")


def terra_alternating():
    """A function whose calls alternate between two paths
    (examples/python/terra_alternating.py): the one merged graph against
    the trace tree and the single speculated path, which falls back on
    every change of path."""
    root = Path(__file__).resolve().parents[1]
    sys.path.insert(0, str(root / "examples" / "python"))
    import terra_alternating as m

    data = list(m.calls(40))
    times = {}
    for name, fn in (("merged", m.merged), ("tree", m.tree), ("single", m.single)):
        for x, w in data[:6]:
            fn(x, jitc.Var(w)).item()
        samples = []
        for x, w in data[6:]:
            start = time.perf_counter()
            fn(x, jitc.Var(w)).item()
            samples.append(time.perf_counter() - start)
        times[name] = statistics.median(samples)
    print(f"  {'alternating paths (8x16)':<28} merged graph {times['merged'] * 1e6:8.1f} µs   "
          f"tree {times['tree'] * 1e6:8.1f} µs   "
          f"single path + fallbacks {times['single'] * 1e6:8.1f} µs   "
          f"ratios {times['tree'] / times['merged']:5.2f}x / {times['single'] / times['merged']:5.2f}x   "
          f"(fallbacks: {m.merged.stats()['fallbacks']} / {m.tree.stats()['fallbacks']} / {m.single.stats()['fallbacks']})")


def pick(x):
    a = x * 2.0 + 1.0
    b = jitc.tanh(x)
    if jitc.mean(x) > 0:
        h = a
    else:
        h = b
    return jitc.sum(h * h)


def picked_value():
    """A branch that only picks a value (`h = a if ... else b`, both
    computed before it), called with inputs that alternate its way: one
    merged graph (an `scf.if` yielding `a` or `b`) against the trace tree,
    whose pieces are chosen between in Python."""
    rng = np.random.default_rng(5)
    data = [rng.standard_normal((256, 1024), dtype=np.float32) + np.float32(1 if k % 2 else -1) for k in range(40)]
    times, staged = {}, {}
    for name, merge in (("merged", True), ("tree", "tree")):
        fn = staged[name] = jitc.function(pick, merge=merge)
        for x in data[:6]:
            fn(x).item()
        samples = []
        for x in data[6:]:
            start = time.perf_counter()
            fn(x).item()
            samples.append(time.perf_counter() - start)
        times[name] = statistics.median(samples)
    print(f"  {'picked value (256x1024)':<28} merged graph {times['merged'] * 1e6:8.1f} µs   "
          f"tree {times['tree'] * 1e6:8.1f} µs   ratio {times['tree'] / times['merged']:5.2f}x   "
          f"(fallbacks: {staged['merged'].stats()['fallbacks']} / {staged['tree'].stats()['fallbacks']})")


def conv(x, w):
    return jitc.conv2d(x, w, 1, 1)


def main():
    binary = sys.argv[1] if len(sys.argv) > 1 else str(Path(__file__).resolve().parents[1] / "target" / "release" / "jitc")
    print(f"jitc Python package, {jitc.flags}")
    print(f"  record one binary op (1,024 floats):  {record_one_op() * 1e6:.3f} µs")
    whole, fetch_only = chain_fetch()
    print(f"  100-op chain on 1,024 floats: record + cache-hit fetch {whole * 1e6:.2f} µs, the fetch alone {fetch_only * 1e6:.2f} µs")
    rng = np.random.default_rng(0)
    workload("Listing 1 conv (8,64,56,56)", conv,
             [rng.standard_normal((8, 64, 56, 56), dtype=np.float32),
              rng.standard_normal((64, 64, 3, 3), dtype=np.float32)], binary)
    workload("softmax (4096, 1024)", jitc.softmax,
             [rng.standard_normal((4096, 1024), dtype=np.float32)], binary)
    training_step(binary)
    terra_alternating()
    picked_value()
    janus_rnn()


if __name__ == "__main__":
    main()
