"""An MLP forward pass (784-512-10, ReLU, softmax) from Python with the op
library, checked against NumPy. Run: .venv/bin/python examples/python/mlp.py"""

import numpy as np

import jitc


def forward(x, w1, b1, w2, b2):
    hidden = jitc.relu(jitc.matmul(x, w1) + b1)
    return jitc.softmax(jitc.matmul(hidden, w2) + b2)


def reference(x, w1, b1, w2, b2):
    hidden = np.maximum(x @ w1 + b1, 0)
    logits = hidden @ w2 + b2
    e = np.exp(logits - logits.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def main(batch=32):
    rng = np.random.default_rng(2)
    params = [
        rng.standard_normal((batch, 784), dtype=np.float32),
        rng.standard_normal((784, 512), dtype=np.float32) * 0.05,
        rng.standard_normal(512, dtype=np.float32) * 0.1,
        rng.standard_normal((512, 10), dtype=np.float32) * 0.05,
        rng.standard_normal(10, dtype=np.float32) * 0.1,
    ]
    y = forward(*[jitc.Var(p) for p in params]).numpy()
    error = np.abs(y - reference(*params)).max()
    print(f"mlp {y.shape}: max |jitc - numpy| = {error:.2e}, rows sum to {y.sum(axis=1).min():.6f}..{y.sum(axis=1).max():.6f}")
    return error


if __name__ == "__main__":
    main()
