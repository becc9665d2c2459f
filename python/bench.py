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


class _Dense:
    def __init__(self, n, m, rng):
        self.w = jitc.Var(rng.standard_normal((n, m), dtype=np.float32) * np.float32(1 / np.sqrt(n)))
        self.b = jitc.Var(np.zeros(m, dtype=np.float32))


class _SubLayerMLP:
    """An MLP of sub-layers (`self.layers[k].w`), trained by plain SGD on
    their attributes."""

    def __init__(self, sizes, seed=0):
        rng = np.random.default_rng(seed)
        self.layers = [_Dense(n, m, rng) for n, m in zip(sizes, sizes[1:])]

    def step(self, x, y, lr):
        h = x
        for k, layer in enumerate(self.layers):
            h = jitc.matmul(h, layer.w) + layer.b
            if k < len(self.layers) - 1:
                h = jitc.relu(h)
        error = h - y
        loss = jitc.mean(error * error)
        grads = jitc.grad(loss, [p for layer in self.layers for p in (layer.w, layer.b)])
        for k, layer in enumerate(self.layers):
            layer.w = layer.w - lr * grads[2 * k]
            layer.b = layer.b - lr * grads[2 * k + 1]
        return loss

    staged = jitc.function(step)


def sublayer_training():
    """One SGD step of a 3-layer MLP held as sub-layers (batch 64, 256 ->
    512 -> 512 -> 10): through `@jitc.function` (the sub-layers' tensors
    are state of the staged graph) against the same step run imperatively
    on the lazy graph."""
    rng = np.random.default_rng(2)
    x = rng.standard_normal((64, 256), dtype=np.float32)
    y = rng.standard_normal((64, 10), dtype=np.float32)
    staged, imperative = _SubLayerMLP((256, 512, 512, 10)), _SubLayerMLP((256, 512, 512, 10))
    start = time.perf_counter()
    for _ in range(6):
        staged.staged(x, y, 0.01).item()
        imperative.step(jitc.Var(x), jitc.Var(y), 0.01).item()
    warm = time.perf_counter() - start
    stats = _SubLayerMLP.staged.stats()
    assert stats["staged"] >= 1 and stats["imperative"] == 0, _SubLayerMLP.staged.explain()
    times = {
        "staged": median_time(lambda: staged.staged(x, y, 0.01).item(), 15),
        "imperative": median_time(lambda: imperative.step(jitc.Var(x), jitc.Var(y), 0.01).item(), 15),
    }
    print(f"  {'sub-layer MLP step (64x256)':<28} jitc.function {times['staged'] * 1e3:8.3f} ms   "
          f"imperative {times['imperative'] * 1e3:8.3f} ms   ratio {times['imperative'] / times['staged']:5.2f}x "
          f"(warm-up, compiles included: {warm:.1f} s)")


class _OptimizerMLP:
    """examples/python/mlp_train.py's 784-512-10 MLP, its parameters and
    Adam's moments and step counts in named state (`jitc.optim`)."""

    def __init__(self, prefix):
        import mlp_train

        self.loss_of = mlp_train.loss_of
        parameters = mlp_train.initial_parameters()
        self.opt = jitc.optim.Adam({prefix + k: v for k, v in parameters.items()}, lr=1e-3)

    def step(self, x, y):
        loss = self.loss_of(x, y, *self.opt.parameters())
        self.opt.step(loss)
        return loss

    staged = jitc.function(step)


def optimizer_training():
    """One Adam step of the 784-512-10 MLP at batch 256 (forward,
    `jitc.grad`, the updates as named-state writes): through
    `@jitc.function` (the named state is state of the staged graph)
    against the same step run imperatively on the lazy graph."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples" / "python"))
    import mlp_train

    x, y = mlp_train.data(mlp_train.BATCH)
    staged, imperative = _OptimizerMLP("bench.s."), _OptimizerMLP("bench.p.")
    start = time.perf_counter()
    for _ in range(6):
        staged.staged(x, y).item()
        imperative.step(jitc.Var(x), jitc.Var(y)).item()
    warm = time.perf_counter() - start
    stats = _OptimizerMLP.staged.stats()
    assert stats["staged"] >= 1 and stats["imperative"] == 0, _OptimizerMLP.staged.explain()
    times = {
        "staged": median_time(lambda: staged.staged(x, y).item(), 15),
        "imperative": median_time(lambda: imperative.step(jitc.Var(x), jitc.Var(y)).item(), 15),
    }
    print(f"  {'Adam MLP step (b256)':<28} jitc.function {times['staged'] * 1e3:8.3f} ms   "
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


class _Model:
    """A method whose object holds two `jitc.Var` attributes and three
    Python values: what a served call's facts cover."""

    def __init__(self):
        self.w = jitc.Var(np.full((16, 16), 0.01, np.float32))
        self.b = jitc.Var(np.zeros(16, np.float32))
        self.scale, self.name, self.layers = 2.0, "m", 3

    @jitc.function
    def __call__(self, x):
        return jitc.tanh(jitc.matmul(x, self.w) + self.b) * self.scale


def served_call_facts():
    """A served `@jitc.function` call (a method on an 8x16 `jitc.Var`, and
    the alternating-path `layer`) with its facts computed natively
    (`jitc._jitc.Facts`) against their Python definition (`_fact_py`,
    `_facts_of_py`), alternating in one process: medians of 9 x 300 calls,
    the smallest of five rounds."""
    from jitc import _function as F

    root = Path(__file__).resolve().parents[1]
    sys.path.insert(0, str(root / "examples" / "python"))
    import terra_alternating as t

    model = _Model()
    x = jitc.Var(np.random.default_rng(1).random((8, 16), dtype=np.float32))
    data = list(t.calls(8))
    for _ in range(6):
        model(x).numpy()
    for a, w in data:
        t.merged(a, jitc.Var(w)).numpy()
    layer_args = (data[0][0], jitc.Var(data[0][1]))

    def definition(v, depth=0, input=False, level=0):
        return F._fact_py(v, depth, input, level, fact=definition)

    def python_facts(self, owner, args, kwargs, tensors, relaxed, listed, aliases):
        return self._facts_of_py(owner, args, kwargs, tensors, relaxed, listed, aliases, definition)

    native = F.Function._facts_of
    cases = {"method": lambda: model(x), "layer": lambda: t.merged(*layer_args)}
    best = {}
    try:
        for _ in range(5):
            for name, impl in (("python", python_facts), ("native", native)):
                F.Function._facts_of = impl
                for case, call in cases.items():
                    time_ = median_time(lambda: [call() for _ in range(300)], 9) / 300
                    best[name, case] = min(best.get((name, case), time_), time_)
    finally:
        F.Function._facts_of = native
    for case in cases:
        print(f"  {'served call, ' + case:<28} native facts {best['native', case] * 1e6:6.1f} µs   "
              f"Python facts {best['python', case] * 1e6:6.1f} µs   "
              f"ratio {best['python', case] / best['native', case]:5.2f}x")


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
    served_call_facts()
    sublayer_training()
    optimizer_training()
    janus_rnn()


if __name__ == "__main__":
    main()
