"""A model built of sub-layers, as most models are: `Classifier` holds its
`Dense` layers in a list and its output heads in a dict, and its
`train_step` method (forward, `jitc.grad`, SGD on each layer's `w` and
`b`) is a `@jitc.function`. The first traced call finds that it reads
and rebinds tensors held by the sub-layers, so profiling starts again
with the sub-layers among the call's objects; from then on their tensors
are state of the staged graph (`meta.state_read`/`meta.state_write` of
`self.layers[0].w`, `self.heads['logits'].b`, ...), committed only when
the whole step succeeded, and later steps run the compiled graph without
running the Python method. The step returns a dict. Every step is
checked against a twin model trained imperatively on the lazy graph.

Run: .venv/bin/python examples/python/sublayers.py [--steps N]
"""

import argparse
import time

import numpy as np

import jitc


class Dense:
    """x W + b."""

    def __init__(self, inputs, outputs, rng):
        scale = np.float32(np.sqrt(2 / inputs))
        self.w = jitc.Var(rng.standard_normal((inputs, outputs), dtype=np.float32) * scale)
        self.b = jitc.Var(np.zeros(outputs, dtype=np.float32))

    def __call__(self, x):
        return jitc.matmul(x, self.w) + self.b

    def parameters(self):
        return [self.w, self.b]


class Classifier:
    """ReLU layers, then a logits head, trained with softmax cross-entropy;
    a regression head shares the hidden features."""

    def __init__(self, sizes=(16, 32, 32), classes=4, seed=0):
        rng = np.random.default_rng(seed)
        self.layers = [Dense(n, m, rng) for n, m in zip(sizes, sizes[1:])]
        self.heads = {"logits": Dense(sizes[-1], classes, rng), "value": Dense(sizes[-1], 1, rng)}

    def train_step(self, x, labels, targets, lr):
        h = x
        for layer in self.layers:
            h = jitc.relu(layer(h))
        logits = self.heads["logits"](h)
        error = self.heads["value"](h) - targets
        classification = jitc.cross_entropy(logits, labels)
        regression = jitc.mean(error * error)
        loss = classification + regression * 0.5
        modules = self.layers + [self.heads["logits"], self.heads["value"]]
        grads = jitc.grad(loss, [p for m in modules for p in m.parameters()])
        for k, m in enumerate(modules):
            m.w = m.w - lr * grads[2 * k]
            m.b = m.b - lr * grads[2 * k + 1]
        return {"loss": loss, "classification": classification, "regression": regression}


class StagedClassifier(Classifier):
    train_step = jitc.function(Classifier.train_step)


def batches(steps, batch=32, inputs=16, classes=4, seed=1):
    """Seeded inputs whose labels and targets come from a random teacher."""
    rng = np.random.default_rng(seed)
    teacher = rng.standard_normal((inputs, classes), dtype=np.float32)
    for _ in range(steps):
        x = rng.standard_normal((batch, inputs), dtype=np.float32)
        scores = x @ teacher
        labels = np.eye(classes, dtype=np.float32)[np.argmax(scores, axis=1)]
        yield x, labels, scores[:, :1].copy()


def main(steps=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=30, help="training steps (default 30)")
    args = parser.parse_args([] if steps is not None else None)
    steps = steps if steps is not None else args.steps
    staged, plain = StagedClassifier(), Classifier()
    worst, first, last = 0.0, None, None
    times = {"staged": 0.0, "imperative": 0.0}
    for k, (x, labels, targets) in enumerate(batches(steps)):
        start = time.perf_counter()
        got = {name: v.item() for name, v in staged.train_step(x, labels, targets, 0.05).items()}
        times["staged"] += time.perf_counter() - start
        start = time.perf_counter()
        want = plain.train_step(jitc.Var(x), jitc.Var(labels), jitc.Var(targets), 0.05)
        want = {name: v.item() for name, v in want.items()}
        times["imperative"] += time.perf_counter() - start
        first = got["loss"] if first is None else first
        last = got["loss"]
        worst = max([worst] + [abs(got[n] - want[n]) for n in want])
        for a, b in zip(staged.layers + list(staged.heads.values()), plain.layers + list(plain.heads.values())):
            worst = max(worst, float(np.abs(a.w.numpy() - b.w.numpy()).max()))
        if k % 10 == 0 or k == steps - 1:
            print(f"step {k:3d}: loss {got['loss']:.4f}")
    print(f"largest difference from the imperative run: {worst:.2e}")
    print(StagedClassifier.train_step.explain())
    print(f"time, compiles included: staged {times['staged']:.2f} s, imperative {times['imperative']:.2f} s; loss {first:.4f} -> {last:.4f}")
    if worst > 1e-4:
        raise SystemExit("the staged model disagrees with the imperative one")
    return worst


if __name__ == "__main__":
    main()
