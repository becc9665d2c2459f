"""Listing 1 of the Jittor paper from Python: a convolution as a reindex of
the image, a broadcast of the weights, a multiply and a sum, checked
against NumPy. Run: .venv/bin/python examples/python/conv.py"""

import numpy as np

import jitc


def conv(x, w, padding=1):
    n, c, h, wd = x.shape
    o, _, kh, kw = w.shape
    shape = [n, o, h + 2 * padding - kh + 1, wd + 2 * padding - kw + 1, c, kh, kw]
    xx = x.reindex(shape, ["i0", "i4", f"i2 - {padding} + i5", f"i3 - {padding} + i6"], 0.0)
    ww = w.reindex(shape, ["i1", "i4", "i5", "i6"])
    return (xx * ww).reindex_reduce("add", shape[:4], ["i0", "i1", "i2", "i3"])


def reference(x, w, padding=1):
    xp = np.pad(x, ((0, 0), (0, 0), (padding, padding), (padding, padding)))
    o, _, kh, kw = w.shape
    ho, wo = xp.shape[2] - kh + 1, xp.shape[3] - kw + 1
    out = np.zeros((x.shape[0], o, ho, wo), np.float32)
    for i in range(kh):
        for j in range(kw):
            out += np.einsum("nchw,oc->nohw", xp[:, :, i:i + ho, j:j + wo], w[:, :, i, j])
    return out


def main():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((2, 8, 16, 16), dtype=np.float32)
    w = rng.standard_normal((4, 8, 3, 3), dtype=np.float32)
    y = conv(jitc.Var(x), jitc.Var(w)).numpy()
    error = np.abs(y - reference(x, w)).max()
    print(f"conv {y.shape}: max |jitc - numpy| = {error:.2e}")
    return error


if __name__ == "__main__":
    main()
