"""Trains a 784-512-10 MLP (ReLU, softmax cross-entropy) with SGD and
momentum on synthetic, seeded data: the labels come from a random linear
teacher, so the loss can fall. Each step is one fetch: the forward pass,
the backward pass (`jitc.grad`) and the parameter updates (deferred state
writes) fuse and compile once, and later steps are cache hits.

Run: .venv/bin/python examples/python/mlp_train.py [--steps N] [--lr LR]
"""

import argparse
import time

import numpy as np

import jitc

BATCH, INPUTS, HIDDEN, CLASSES = 256, 784, 512, 10


def data(examples, seed=0):
    """Inputs and one-hot labels from a random linear teacher."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((examples, INPUTS), dtype=np.float32)
    teacher = rng.standard_normal((INPUTS, CLASSES), dtype=np.float32)
    labels = np.argmax(x @ teacher, axis=1)
    return x, np.eye(CLASSES, dtype=np.float32)[labels]


def initial_parameters(seed=1):
    """He-initialized weights, zero biases."""
    rng = np.random.default_rng(seed)
    return {
        "mlp.w1": rng.standard_normal((INPUTS, HIDDEN), dtype=np.float32) * np.float32(np.sqrt(2 / INPUTS)),
        "mlp.b1": np.zeros(HIDDEN, dtype=np.float32),
        "mlp.w2": rng.standard_normal((HIDDEN, CLASSES), dtype=np.float32) * np.float32(np.sqrt(2 / HIDDEN)),
        "mlp.b2": np.zeros(CLASSES, dtype=np.float32),
    }


def loss_of(x, y, w1, b1, w2, b2):
    hidden = jitc.relu(jitc.matmul(x, w1) + b1)
    return jitc.cross_entropy(jitc.matmul(hidden, w2) + b2, y)


def make_optimizer(lr=0.05, momentum=0.9):
    return jitc.optim.SGD(initial_parameters(), lr=lr, momentum=momentum)


def step(opt, x, y):
    """One training step on a batch; returns the loss before the update
    (one fetch computes it, the gradients and the updates)."""
    loss = loss_of(jitc.Var(x), jitc.Var(y), *opt.parameters())
    opt.step(loss)
    return loss.item()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=40, help="training steps (default 40)")
    parser.add_argument("--lr", type=float, default=0.05, help="learning rate (default 0.05)")
    args = parser.parse_args()
    x, y = data(8 * BATCH)
    opt = make_optimizer(lr=args.lr)
    losses = []
    start = time.perf_counter()
    for k in range(args.steps):
        at = (k % 8) * BATCH
        losses.append(step(opt, x[at:at + BATCH], y[at:at + BATCH]))
        if k % 8 == 0 or k == args.steps - 1:
            print(f"step {k:3d}: loss {losses[-1]:.4f}")
    elapsed = time.perf_counter() - start
    stats = jitc.stats()
    print(
        f"{args.steps} steps in {elapsed:.2f} s ({stats['compiles']} compile, "
        f"{stats['cache_hits']} cache hits); loss {losses[0]:.4f} -> {losses[-1]:.4f}"
    )
    if not losses[-1] < 0.5 * losses[0]:
        raise SystemExit("the loss did not fall to half its first value")


if __name__ == "__main__":
    main()
