"""Trains a small conv net, all meta-operators, with Adam on synthetic,
seeded data: a Listing 1 convolution (3 -> 8 channels, 3x3, pad 1), batch
normalization with learned scale and shift, ReLU, a 2x2 average pool
(a reindex_reduce), and a linear head over 4 classes. Each image holds a
bright blob in one quadrant, and the quadrant is the label, so the loss
can fall. Each step is one fetch (forward, `jitc.grad` backward and the
Adam updates) that compiles once.

Run: .venv/bin/python examples/python/conv_train.py [--steps N]
"""

import argparse
import time

import numpy as np

import jitc

BATCH, CHANNELS, SIZE, FILTERS, CLASSES = 16, 3, 12, 8, 4


def data(examples, seed=0):
    """Noisy images with a blob in quadrant `label`."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((examples, CHANNELS, SIZE, SIZE)).astype(np.float32) * 0.5
    labels = rng.integers(0, CLASSES, examples)
    half = SIZE // 2
    for n, label in enumerate(labels):
        top, left = (label // 2) * half, (label % 2) * half
        x[n, :, top + 2:top + half - 2, left + 2:left + half - 2] += 1.5
    return x, labels


def initial_parameters(seed=1):
    rng = np.random.default_rng(seed)
    fan_in = CHANNELS * 9
    features = FILTERS * (SIZE // 2) ** 2
    return {
        "cnn.conv": (rng.standard_normal((FILTERS, CHANNELS, 3, 3)) * np.sqrt(2 / fan_in)).astype(np.float32),
        "cnn.gamma": np.ones(FILTERS, dtype=np.float32),
        "cnn.beta": np.zeros(FILTERS, dtype=np.float32),
        "cnn.head": (rng.standard_normal((features, CLASSES)) * np.sqrt(1 / features)).astype(np.float32),
        "cnn.bias": np.zeros(CLASSES, dtype=np.float32),
    }


def average_pool(x):
    """2x2 average pooling: each output is the mean of a 2x2 window."""
    n, c, h, w = x.shape
    pooled = jitc.reindex_reduce(x, "add", (n, c, h // 2, w // 2),
                                 lambda i0, i1, i2, i3: [i0, i1, f"{i2} floordiv 2", f"{i3} floordiv 2"])
    return pooled * 0.25


def logits_of(x, conv, gamma, beta, head, bias):
    y = jitc.conv2d(x, conv, 1, 1)
    y = jitc.relu(jitc.batch_norm(y, gamma, beta))
    y = average_pool(y)
    y = jitc.reshape(y, (y.shape[0], -1))
    return jitc.matmul(y, head) + bias


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=30, help="training steps (default 30)")
    args = parser.parse_args()
    x, labels = data(4 * BATCH)
    opt = jitc.optim.Adam(initial_parameters(), lr=0.01)
    losses = []
    start = time.perf_counter()
    for k in range(args.steps):
        at = (k % 4) * BATCH
        logits = logits_of(jitc.Var(x[at:at + BATCH]), *opt.parameters())
        loss = jitc.cross_entropy(logits, labels[at:at + BATCH])
        opt.step(loss)
        losses.append(loss.item())
        if k % 5 == 0 or k == args.steps - 1:
            print(f"step {k:3d}: loss {losses[-1]:.4f}")
    stats = jitc.stats()
    print(
        f"{args.steps} steps in {time.perf_counter() - start:.2f} s ({stats['compiles']} compile, "
        f"{stats['cache_hits']} cache hits); loss {losses[0]:.4f} -> {losses[-1]:.4f}"
    )
    if not losses[-1] < 0.5 * losses[0]:
        raise SystemExit("the loss did not fall to half its first value")


if __name__ == "__main__":
    main()
