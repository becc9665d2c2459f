"""A model with a training/eval branch on a Python attribute, as the CNNs
of the JANUS paper have: in training, batch normalization uses the
batch's statistics and updates running averages kept in attributes; in
eval, it uses the running averages. The batch norm is a sub-layer
(`self.bn`) that also counts the batches it has seen in a Python int,
as PyTorch's does. `self.bn.training` is a Python value, so each mode is
its own set of facts and gets its own staged graph; the running averages
and the count are attribute reads and writes of the sub-layer (JANUS's
PyGetAttrOp and PySetAttrOp), and the count, which changes on every
training call, is a graph input rather than a new set of facts per call.
Checked against a twin run imperatively.

Run: .venv/bin/python examples/python/janus_batchnorm.py
"""

import numpy as np

import jitc


class BatchNorm:
    """Batch normalization over the batch dimension, as PyTorch's
    `BatchNorm1d(momentum=None)`: the running averages are cumulative,
    each batch weighted by one over the count of batches seen so far,
    `num_batches_tracked`, a Python int that changes on every training
    call. Held by the model, it is a sub-layer: its tensors are state of
    the staged graph (`self.bn.running_mean`), and so is its counter, a
    graph input once it is seen to change (`self.bn.num_batches_tracked`)."""

    def __init__(self, channels):
        self.running_mean = jitc.Var(np.zeros(channels, dtype=np.float32))
        self.running_var = jitc.Var(np.ones(channels, dtype=np.float32))
        self.num_batches_tracked = 0
        self.training = True

    def __call__(self, y):
        if self.training:
            self.num_batches_tracked += 1
            factor = 1.0 / self.num_batches_tracked
            mean = jitc.mean(y, axis=0)
            centered = y - mean
            var = jitc.mean(centered * centered, axis=0)
            self.running_mean = self.running_mean + (mean - self.running_mean) * factor
            self.running_var = self.running_var + (var - self.running_var) * factor
        else:
            centered = y - self.running_mean
            var = self.running_var
        return centered * jitc.unary(var + 1e-5, "rsqrt")


class Normalized:
    def __init__(self, channels=4, seed=0):
        rng = np.random.default_rng(seed)
        self.weight = jitc.Var(rng.standard_normal((channels, channels), dtype=np.float32))
        self.bn = BatchNorm(channels)

    def train(self, mode=True):
        self.bn.training = mode

    def __call__(self, x):
        return jitc.relu(self.bn(jitc.matmul(x, self.weight)))


class StagedNormalized(Normalized):
    __call__ = jitc.function(Normalized.__call__)


def main(calls=16):
    rng = np.random.default_rng(1)
    staged, imperative = StagedNormalized(), Normalized()
    worst = 0.0
    for k in range(calls):
        training = k % 8 < 5
        staged.train(training)
        imperative.train(training)
        x = rng.standard_normal((6, 4), dtype=np.float32)
        a, b = staged(x).numpy(), imperative(x).numpy()
        worst = max(worst, float(np.abs(a - b).max()),
                    float(np.abs(staged.bn.running_mean.numpy() - imperative.bn.running_mean.numpy()).max()),
                    float(np.abs(staged.bn.running_var.numpy() - imperative.bn.running_var.numpy()).max()))
        assert staged.bn.num_batches_tracked == imperative.bn.num_batches_tracked
    print(f"largest difference from the imperative run: {worst:.2e}")
    print(StagedNormalized.__call__.explain())
    return worst


if __name__ == "__main__":
    main()
