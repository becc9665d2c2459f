#!/usr/bin/env python3
"""JAX (XLA:CPU) on the contraction workloads of `cargo bench -p jitc-runtime --bench cpu`.

A peer for the conv/matmul figures in docs/benchmarks.md, and for the
memory-bound four (softmax, instance norm, layer norm + GELU, sigmoid). JAX is not a
dependency of jitc; run it from a venv of its own:

    python3 -m venv /tmp/peers && /tmp/peers/bin/pip install 'jax[cpu]'
    /tmp/peers/bin/python scripts/bench_jax.py

Measured the way `jitc bench` measures: inputs already in memory (f32,
uniform in [-0.5, 0.5)), the wall clock of one jitted call followed by
`block_until_ready()`, output allocation included; the median and minimum
of 20 calls after 3 warm-up calls (compiling is not timed). XLA uses every
core of the machine, as `jitc bench` does by default.

The workloads are the bench's: the Listing 1 convolution, x (8,64,56,56),
w (64,64,3,3), padding 1, as `lax.conv_general_dilated` (NCHW, OIHW), and
a 1024^3 matmul as `a @ b`, both at `Precision.HIGHEST` (f32 throughout);
and the programs of examples/mlp_step.mlir (one SGD step of a 784-512-10
MLP at batch 256, gradients by `jax.grad`) and of the host bench's RNN (32
steps of `h = tanh(x_t W + h U)`, B16 H256, as `lax.scan`).
"""

import statistics
import time

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax


def timed(function, *arguments, calls=20, warmup=3):
    for _ in range(warmup):
        function(*arguments).block_until_ready()
    samples = []
    for _ in range(calls):
        start = time.perf_counter()
        function(*arguments).block_until_ready()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples) * 1e3, min(samples) * 1e3


def main():
    rng = np.random.default_rng(0)
    uniform = lambda *shape: jnp.asarray(rng.random(shape, dtype=np.float32) - 0.5)
    highest = lax.Precision.HIGHEST

    conv = jax.jit(
        lambda x, w: lax.conv_general_dilated(
            x, w, (1, 1), ((1, 1), (1, 1)), dimension_numbers=("NCHW", "OIHW", "NCHW"), precision=highest
        )
    )
    matmul = jax.jit(lambda a, b: jnp.matmul(a, b, precision=highest))
    workloads = [
        ("conv (8,64,56,56)x(64,64,3,3), pad 1", conv, (uniform(8, 64, 56, 56), uniform(64, 64, 3, 3)), 2 * 8 * 64 * 56 * 56 * 64 * 9),
        ("matmul 1024^3", matmul, (uniform(1024, 1024), uniform(1024, 1024)), 2 * 1024**3),
    ]

    def loss(params, x, y):
        w1, b1, w2, b2 = params
        h = jnp.maximum(jnp.matmul(x, w1, precision=highest) + b1, 0.0)
        logits = jnp.matmul(h, w2, precision=highest) + b2
        return -jnp.mean(jnp.sum(y * jax.nn.log_softmax(logits), axis=1))

    @jax.jit
    def mlp_step(x, y, w1, b1, w2, b2, lr):
        value, grads = jax.value_and_grad(loss)((w1, b1, w2, b2), x, y)
        return (value, *(p - lr * g for p, g in zip((w1, b1, w2, b2), grads)))

    @jax.jit
    def rnn(xs, w, u, h0):
        def step(h, x):
            h = jnp.tanh(jnp.matmul(x, w, precision=highest) + jnp.matmul(h, u, precision=highest))
            return h, None

        return lax.scan(step, h0, xs)[0]

    labels = np.zeros((256, 10), np.float32)
    labels[np.arange(256), rng.integers(0, 10, 256)] = 1.0
    mlp_arguments = (
        uniform(256, 784),
        jnp.asarray(labels),
        uniform(784, 512) * 0.05,
        jnp.zeros(512, jnp.float32),
        uniform(512, 10) * 0.05,
        jnp.zeros(10, jnp.float32),
        jnp.float32(0.1),
    )
    mlp_flops = 2 * 256 * 784 * 512 * 3 + 2 * 256 * 512 * 10 * 3
    rnn_arguments = (uniform(32, 16, 256) * 0.1, uniform(256, 256) * 0.1, uniform(256, 256) * 0.1, jnp.zeros((16, 256)))
    workloads += [
        ("MLP 784-512-10 step, batch 256", lambda *a: mlp_step(*a)[0], mlp_arguments, mlp_flops),
        ("RNN, 32 steps, B16 H256", rnn, rnn_arguments, 32 * 2 * 2 * 16 * 256 * 256),
    ]
    # The memory-bound four of the cpu bench, as its programs write them.
    softmax = jax.jit(lambda x: jnp.exp(x - x.max(axis=1, keepdims=True)) / jnp.exp(x - x.max(axis=1, keepdims=True)).sum(axis=1, keepdims=True))

    def instance_norm(x):
        mean = x.mean(axis=(0, 2, 3), keepdims=True)
        var = (x * x).mean(axis=(0, 2, 3), keepdims=True) - mean * mean
        return (x - mean) / jnp.sqrt(var + 1e-5)

    def layer_norm_gelu(x):
        d = x - x.mean(axis=1, keepdims=True)
        y = d / jnp.sqrt((d * d).mean(axis=1, keepdims=True) + 1e-5)
        return 0.5 * y * (1.0 + jnp.tanh(0.7978845608028654 * (y + 0.044715 * y * y * y)))

    sigmoid = jax.jit(lambda x: jnp.exp(x) / (jnp.exp(x) + 1.0))
    workloads += [
        ("softmax (4096,1024)", softmax, (uniform(4096, 1024),), 0),
        ("instance norm (32,64,56,56)", jax.jit(instance_norm), (uniform(32, 64, 56, 56),), 0),
        ("layer norm + tanh-GELU (8192,1024)", jax.jit(layer_norm_gelu), (uniform(8192, 1024),), 0),
        ("sigmoid, 16M f32", sigmoid, (uniform(1 << 24),), 0),
    ]
    print(f"JAX {jax.__version__}, devices {jax.devices()}")
    print("| workload | median (ms) | min (ms) | GFLOP/s at the median |")
    print("|---|---:|---:|---:|")
    for name, function, arguments, flops in workloads:
        median, least = timed(function, *arguments)
        rate = f"{flops / median / 1e6:.0f}" if flops else "-"
        print(f"| {name} | {median:.2f} | {least:.2f} | {rate} |")


if __name__ == "__main__":
    main()
