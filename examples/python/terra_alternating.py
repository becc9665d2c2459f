"""A function whose calls alternate between two paths by a tensor value,
as in Terra's evaluation (`papers/terra-supplement.txt`): after profiling,
`@jitc.function` merges the traces of both paths into one graph (`meta-merge`:
the two ways are the branches of an `scf.if`), so later calls are all
served by one staged graph, with no fallback. `merge="tree"` stages them as a
tree of graphs chosen between in Python; with `merge=False` (JANUS's single
speculated path) every call that changes path fails its guard and falls
back. All three are checked against imperative execution.

Run: .venv/bin/python examples/python/terra_alternating.py
"""

import time

import numpy as np

import jitc


def layer(x, w):
    h = jitc.matmul(x, w)
    if jitc.mean(h) > 0:
        h = jitc.tanh(h) * 2.0
    else:
        h = jitc.sigmoid(h) - 0.5
    return jitc.sum(h * h)


merged = jitc.function(layer)
tree = jitc.function(layer, merge="tree")
single = jitc.function(layer, merge=False, max_fallbacks=1000)


def calls(count, seed=3):
    rng = np.random.default_rng(seed)
    w = rng.standard_normal((16, 16), dtype=np.float32)
    for k in range(count):
        sign = np.float32(1.0 if k % 2 == 0 else -1.0)
        x = np.abs(rng.standard_normal((8, 16), dtype=np.float32)) * sign
        yield x, np.abs(w) * sign * sign  # w >= 0: the sign of x decides the path


def main(count=20):
    worst = 0.0
    timings = {}
    for name, fn in (("merged", merged), ("tree", tree), ("single path", single)):
        start = time.perf_counter()
        for x, w in calls(count):
            got = fn(x, jitc.Var(w)).item()
            want = layer(jitc.Var(x), jitc.Var(w)).item()
            worst = max(worst, abs(got - want) / max(1.0, abs(want)))
        timings[name] = time.perf_counter() - start
        print(f"{name}: {fn.stats()}")
    print(merged.explain())
    print(f"largest relative difference from imperative runs: {worst:.2e}")
    return worst


if __name__ == "__main__":
    main()
