"""Softmax over the last dimension from Python, written with the three
meta-operators directly (a reduction, a broadcast reindex, element-wise
ops), checked against NumPy. Run: .venv/bin/python examples/python/softmax.py"""

import numpy as np

import jitc


def softmax(x):
    rows, columns = x.shape
    row_max = x.reindex_reduce("max", [rows], ["i0"])
    e = jitc.exp(x - row_max.reindex([rows, columns], ["i0"]))
    total = e.reindex_reduce("add", [rows], ["i0"])
    return e / total.reindex([rows, columns], ["i0"])


def main():
    x = np.random.default_rng(3).standard_normal((64, 1000), dtype=np.float32) * 3
    y = softmax(jitc.Var(x)).numpy()
    e = np.exp(x - x.max(axis=1, keepdims=True))
    error = np.abs(y - e / e.sum(axis=1, keepdims=True)).max()
    print(f"softmax {y.shape}: max |jitc - numpy| = {error:.2e}")
    return error


if __name__ == "__main__":
    main()
