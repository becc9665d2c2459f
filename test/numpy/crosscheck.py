#!/usr/bin/env python3
"""Cross-checks `jitc run` (the interpreter, or compiled code) against NumPy.

Runs the convolution, instance norm, softmax and matmul examples on random
inputs, and a few hundred random reindex / reindex_reduce programs (padding,
flips, strides, broadcasts, overflow conditions, every reduction kind),
then compares each result with a NumPy reference.

Tolerance: float32 results must satisfy |jitc - numpy| <= ATOL + RTOL * |numpy|
with RTOL = 1e-5 and ATOL = 1e-5 (the interpreter sums in row-major order,
NumPy pairwise; compiled code may reassociate sums kept in registers);
integer and boolean results must be equal.

Usage: crosscheck.py JITC_BINARY [--backend interp|cpu] [--cases N] [--seed S]
"""

import argparse
import os
import pathlib
import subprocess
import sys
import tempfile

import numpy as np

RTOL = 1e-5
ATOL = 1e-5
ROOT = pathlib.Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"


class Runner:
    def __init__(self, jitc, workdir, backend):
        self.jitc = jitc
        self.backend = backend
        self.workdir = pathlib.Path(workdir)
        self.count = 0

    def run(self, module, inputs, function="main"):
        """Runs `module` (a path or MLIR text) on numpy inputs; returns the result."""
        self.count += 1
        case = self.workdir / f"case{self.count}"
        case.mkdir()
        if isinstance(module, str):
            path = case / "module.mlir"
            path.write_text(module)
        else:
            path = module
        args = [self.jitc, "run", str(path), "--backend", self.backend, "--function", function]
        args += ["--output", f"@{case / 'out.npy'}"]
        for i, array in enumerate(inputs):
            np.save(case / f"in{i}.npy", array)
            args += ["--input", f"@{case / f'in{i}.npy'}"]
        done = subprocess.run(args, capture_output=True, text=True)
        if done.returncode != 0:
            raise RuntimeError(f"jitc run failed ({done.returncode}):\n{done.stderr}\nmodule:\n{path.read_text()}")
        return np.load(case / "out.npy")


def close(got, want):
    if got.shape != want.shape or got.dtype != want.dtype:
        return False, f"shape/dtype {got.shape} {got.dtype} vs {want.shape} {want.dtype}"
    if got.dtype.kind == "f":
        ok = np.allclose(got, want, rtol=RTOL, atol=ATOL, equal_nan=True)
        with np.errstate(invalid="ignore"):
            difference = np.abs(got.astype(np.float64) - want.astype(np.float64))
        error = np.nanmax(difference) if got.size and not np.isnan(difference).all() else 0.0
        return ok, f"max abs error {error:.3g}"
    return bool(np.array_equal(got, want)), "exact"


# ---------------------------------------------------------------- examples

def conv_reference(x, w):
    n, c, h, wd = x.shape
    o = w.shape[0]
    padded = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (1, 1), (1, 1)))
    y = np.zeros((n, o, h, wd))
    for kh in range(3):
        for kw in range(3):
            patch = padded[:, :, kh:kh + h, kw:kw + wd]
            y += np.einsum("nchw,oc->nohw", patch, w[:, :, kh, kw].astype(np.float64))
    return y.astype(np.float32)


def instance_norm_reference(x):
    x64 = x.astype(np.float64)
    mean = x64.mean(axis=(0, 2, 3), keepdims=True)
    var = (x64 * x64).mean(axis=(0, 2, 3), keepdims=True) - mean * mean
    return ((x64 - mean) / np.sqrt(var + 1e-5)).astype(np.float32)


def softmax_reference(x):
    e = np.exp(x.astype(np.float64) - x.max(axis=1, keepdims=True))
    return (e / e.sum(axis=1, keepdims=True)).astype(np.float32)


def example_cases(rng):
    f32 = lambda *shape: rng.standard_normal(shape).astype(np.float32)
    x, w = f32(2, 3, 5, 5), f32(4, 3, 3, 3)
    yield "conv (Listing 1)", EXAMPLES / "conv.mlir", [x, w], conv_reference(x, w)
    x = f32(2, 3, 4, 4) * 3 + 1
    yield "instance norm (Listing 5)", EXAMPLES / "instance_norm.mlir", [x], instance_norm_reference(x)
    x = f32(4, 8) * 4
    yield "softmax", EXAMPLES / "softmax.mlir", [x], softmax_reference(x)
    a, b = f32(4, 3), f32(3, 5)
    yield "matmul", EXAMPLES / "matmul.mlir", [a, b], (a.astype(np.float64) @ b).astype(np.float32)


# ------------------------------------------------------- random programs

def affine_text(coefficient, dim, offset):
    terms = []
    if coefficient != 0:
        terms.append(f"d{dim}" if coefficient == 1 else f"d{dim} * {coefficient}")
    if offset != 0 or not terms:
        terms.append(str(offset))
    return " + ".join(terms)


def random_exprs(rng, count, dims, sizes_from, sizes_to):
    """One (coefficient, dim, offset) per result: copies, shifts (padding),
    flips, strides and constants."""
    exprs = []
    for k in range(count):
        dim = int(rng.integers(dims))
        style = rng.choice(["copy", "shift", "flip", "stride", "constant"])
        if style == "copy":
            exprs.append((1, dim, 0))
        elif style == "shift":
            exprs.append((1, dim, int(rng.integers(-2, 3))))
        elif style == "flip":
            exprs.append((-1, dim, int(sizes_from[dim]) - 1 + int(rng.integers(-1, 2))))
        elif style == "stride":
            exprs.append((2, dim, int(rng.integers(-1, 2))))
        else:
            exprs.append((0, dim, int(rng.integers(-1, sizes_to[k] + 1))))
    return exprs


def shape_text(shape, element):
    return "tensor<" + "".join(f"{d}x" for d in shape) + element + ">"


def random_reindex(rng):
    in_shape = tuple(int(d) for d in rng.choice([1, 2, 3, 5, 7], size=rng.integers(1, 4)))
    out_shape = tuple(int(d) for d in rng.choice([1, 2, 3, 4, 5], size=rng.integers(1, 4)))
    exprs = random_exprs(rng, len(in_shape), len(out_shape), out_shape, in_shape)
    overflow = float(rng.choice([0.0, -1.5, 7.0]))
    dims = ", ".join(f"d{i}" for i in range(len(out_shape)))
    results = ", ".join(affine_text(*e) for e in exprs)
    condition = None
    attributes = f"indices = affine_map<({dims}) -> ({results})>, overflow_value = {overflow} : f32"
    if rng.random() < 0.3:
        dim = int(rng.integers(len(out_shape)))
        bound = int(rng.integers(0, out_shape[dim] + 1))
        condition = (dim, bound)
        attributes += f", overflow_conditions = [affine_set<({dims}) : (d{dim} - {bound} >= 0)>]"
    t_in, t_out = shape_text(in_shape, "f32"), shape_text(out_shape, "f32")
    module = (
        f"func.func @main(%x: {t_in}) -> {t_out} {{\n"
        f'  %y = "meta.reindex"(%x) {{{attributes}}} : ({t_in}) -> {t_out}\n'
        f"  return %y : {t_out}\n}}\n"
    )
    x = rng.standard_normal(in_shape).astype(np.float32)
    want = np.full(out_shape, overflow, dtype=np.float32)
    for o in np.ndindex(*out_shape):
        if condition and o[condition[0]] >= condition[1]:
            continue
        source = tuple(c * o[d] + b for c, d, b in exprs)
        if all(0 <= s < n for s, n in zip(source, in_shape)):
            want[o] = x[source]
    return module, [x], want


REDUCTIONS = {
    "add": (np.float32, 0.0, lambda a, b: a + b),
    "mul": (np.float32, 1.0, lambda a, b: a * b),
    "max": (np.float32, -np.inf, max),
    "min": (np.float32, np.inf, min),
    "and": (np.bool_, True, lambda a, b: a and b),
    "or": (np.bool_, False, lambda a, b: a or b),
}


def random_reindex_reduce(rng):
    kind = str(rng.choice(list(REDUCTIONS)))
    dtype, identity, combine = REDUCTIONS[kind]
    element = "i1" if dtype is np.bool_ else "f32"
    in_shape = tuple(int(d) for d in rng.choice([1, 2, 3, 4, 5], size=rng.integers(1, 4)))
    out_shape = tuple(int(d) for d in rng.choice([1, 2, 3, 5], size=rng.integers(1, 3)))
    exprs = random_exprs(rng, len(out_shape), len(in_shape), in_shape, out_shape)
    dims = ", ".join(f"d{i}" for i in range(len(in_shape)))
    results = ", ".join(affine_text(*e) for e in exprs)
    attributes = f'kind = "{kind}", indices = affine_map<({dims}) -> ({results})>'
    condition = None
    if rng.random() < 0.3:
        dim = int(rng.integers(len(in_shape)))
        condition = (dim, int(rng.integers(0, in_shape[dim] + 1)))
        attributes += f", overflow_conditions = [affine_set<({dims}) : (d{dim} - {condition[1]} >= 0)>]"
    t_in, t_out = shape_text(in_shape, element), shape_text(out_shape, element)
    module = (
        f"func.func @main(%x: {t_in}) -> {t_out} {{\n"
        f'  %y = "meta.reindex_reduce"(%x) {{{attributes}}} : ({t_in}) -> {t_out}\n'
        f"  return %y : {t_out}\n}}\n"
    )
    if dtype is np.bool_:
        x = rng.random(in_shape) < 0.5
    else:
        # Values near 1 keep products of up to 60 factors in range.
        x = (rng.standard_normal(in_shape) * 0.5 + (1.0 if kind == "mul" else 0.0)).astype(np.float32)
    want = np.full(out_shape, identity, dtype=dtype)
    for i in np.ndindex(*in_shape):
        if condition and i[condition[0]] >= condition[1]:
            continue
        target = tuple(c * i[d] + b for c, d, b in exprs)
        if all(0 <= t < n for t, n in zip(target, out_shape)):
            want[target] = dtype(combine(want[target], x[i]))
    return module, [x], want


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("jitc", help="path to the jitc binary")
    parser.add_argument("--backend", choices=["interp", "cpu"], default="interp", help="what runs (default interp)")
    parser.add_argument("--cases", type=int, default=300, help="random programs to generate (default 300)")
    parser.add_argument("--seed", type=int, default=20261121, help="random seed (default 20261121)")
    options = parser.parse_args()
    rng = np.random.default_rng(options.seed)
    passed, failed = 0, 0
    with tempfile.TemporaryDirectory(prefix="jitc-crosscheck-") as workdir:
        runner = Runner(os.path.abspath(options.jitc), workdir, options.backend)
        cases = list(example_cases(rng))
        for n in range(options.cases):
            make = random_reindex if n % 2 == 0 else random_reindex_reduce
            module, inputs, want = make(rng)
            cases.append((f"random {make.__name__} #{n}", module, inputs, want))
        for name, module, inputs, want in cases:
            try:
                got = runner.run(module, inputs)
                ok, detail = close(got, want)
            except RuntimeError as error:
                ok, detail = False, str(error)
            if ok:
                passed += 1
            else:
                failed += 1
                print(f"FAIL {name}: {detail}")
                if isinstance(module, str):
                    print(module)
    print(
        f"numpy cross-check ({options.backend}): {len(cases)} programs, rtol {RTOL}, atol {ATOL}, seed {options.seed}"
    )
    print(f"crosscheck: {passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
