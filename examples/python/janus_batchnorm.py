"""A model with a training/eval branch on a Python attribute, as the CNNs
of the JANUS paper have: in training, batch normalization uses the
batch's statistics and updates running averages kept in attributes; in
eval, it uses the running averages. `self.training` is a Python value, so
each mode is its own set of facts and gets its own staged graph; the
running averages are attribute reads and writes (JANUS's PyGetAttrOp and
PySetAttrOp). Checked against a twin run imperatively.

Run: .venv/bin/python examples/python/janus_batchnorm.py
"""

import numpy as np

import jitc


class Normalized:
    def __init__(self, channels=4, seed=0):
        rng = np.random.default_rng(seed)
        self.weight = jitc.Var(rng.standard_normal((channels, channels), dtype=np.float32))
        self.running_mean = jitc.Var(np.zeros(channels, dtype=np.float32))
        self.running_var = jitc.Var(np.ones(channels, dtype=np.float32))
        self.training = True

    def __call__(self, x):
        y = jitc.matmul(x, self.weight)
        if self.training:
            mean = jitc.mean(y, axis=0)
            centered = y - mean
            var = jitc.mean(centered * centered, axis=0)
            self.running_mean = self.running_mean * 0.9 + mean * 0.1
            self.running_var = self.running_var * 0.9 + var * 0.1
        else:
            centered = y - self.running_mean
            var = self.running_var
        return jitc.relu(centered * jitc.unary(var + 1e-5, "rsqrt"))


class StagedNormalized(Normalized):
    __call__ = jitc.function(Normalized.__call__)


def main(calls=16):
    rng = np.random.default_rng(1)
    staged, imperative = StagedNormalized(), Normalized()
    worst = 0.0
    for k in range(calls):
        training = k % 8 < 5
        staged.training = imperative.training = training
        x = rng.standard_normal((6, 4), dtype=np.float32)
        a, b = staged(x).numpy(), imperative(x).numpy()
        worst = max(worst, float(np.abs(a - b).max()),
                    float(np.abs(staged.running_mean.numpy() - imperative.running_mean.numpy()).max()),
                    float(np.abs(staged.running_var.numpy() - imperative.running_var.numpy()).max()))
    print(f"largest difference from the imperative run: {worst:.2e}")
    print(StagedNormalized.__call__.explain())
    return worst


if __name__ == "__main__":
    main()
