"""JANUS's Figure 1 (`papers/janus.txt`): an RNN model whose `__call__`
loops over a sequence in Python (`for item in sequence:`, each item a
reindex of the sequence when it is a `jitc.Var`) and keeps its final state in
`self.state` for the next sequence, here trained with `jitc.grad` on
sequences whose length changes between calls. `@jitc.function` profiles
the first calls of each length, then serves later ones from one staged,
compiled graph per length, without running the Python loop. The graph
reads the attributes (`self.w`, `self.u`, `self.b`, `self.state`) with
`meta.state_read` and writes the updated ones with `meta.state_write`,
committed only when the whole step succeeded (JANUS's PyGetAttrOp and
PySetAttrOp; `explain` lists them, `StagedRNN.__call__.graphs()` gives
the text). The run is checked against a twin model run imperatively on
the lazy graph.

Run: .venv/bin/python examples/python/janus_rnn.py [--steps N]
"""

import argparse
import time

import numpy as np

import jitc


class RNNModel:
    """h' = tanh(x W + h U + b) over a sequence; the loss is the mean
    squared error of the last state against a target."""

    def __init__(self, inputs=32, hidden=64, batch=8, seed=0):
        rng = np.random.default_rng(seed)
        self.w = jitc.Var(rng.standard_normal((inputs, hidden), dtype=np.float32) * np.float32(1 / np.sqrt(inputs)))
        self.u = jitc.Var(rng.standard_normal((hidden, hidden), dtype=np.float32) * np.float32(1 / np.sqrt(hidden)))
        self.b = jitc.Var(np.zeros(hidden, dtype=np.float32))
        self.state = jitc.Var(np.zeros((batch, hidden), dtype=np.float32))

    def __call__(self, sequence, target, lr):
        state = self.state
        for item in sequence:
            state = jitc.tanh(jitc.matmul(item, self.w) + jitc.matmul(state, self.u) + self.b)
        error = state - target
        loss = jitc.mean(error * error)
        dw, du, db = jitc.grad(loss, [self.w, self.u, self.b])
        self.w = self.w - lr * dw
        self.u = self.u - lr * du
        self.b = self.b - lr * db
        self.state = state
        return loss


class StagedRNN(RNNModel):
    __call__ = jitc.function(RNNModel.__call__)


def batches(steps, batch=8, inputs=32, hidden=64, seed=1, lengths=(4, 6, 8)):
    rng = np.random.default_rng(seed)
    for k in range(steps):
        length = lengths[k % len(lengths)]
        yield (rng.standard_normal((length, batch, inputs), dtype=np.float32),
               rng.standard_normal((batch, hidden), dtype=np.float32) * np.float32(0.5))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=24, help="training steps (default 24)")
    args = parser.parse_args()
    staged, imperative = StagedRNN(), RNNModel()
    worst = 0.0
    times = {"staged": 0.0, "imperative": 0.0}
    for k, (sequence, target) in enumerate(batches(args.steps)):
        start = time.perf_counter()
        a = staged(sequence, target, 0.05).item()
        times["staged"] += time.perf_counter() - start
        start = time.perf_counter()
        b = imperative(sequence, target, 0.05).item()
        times["imperative"] += time.perf_counter() - start
        worst = max(worst, abs(a - b), float(np.abs(staged.state.numpy() - imperative.state.numpy()).max()),
                    float(np.abs(staged.w.numpy() - imperative.w.numpy()).max()))
        if k % 10 == 0 or k == args.steps - 1:
            print(f"step {k:3d} (length {sequence.shape[0]}): loss {a:.4f}")
    print(f"largest difference from the imperative run: {worst:.2e}")
    print(StagedRNN.__call__.explain())
    print(f"time: staged {times['staged']:.2f} s, imperative {times['imperative']:.2f} s")
    if worst > 1e-4:
        raise SystemExit("the staged model disagrees with the imperative one")
    return worst


if __name__ == "__main__":
    main()
