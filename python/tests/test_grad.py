"""Gradients (`jitc.grad`) and optimizers (`jitc.optim`) from Python: a whole
MLP's gradients against a NumPy backward written by hand, one training step
against the hand-written `examples/mlp_step.mlir`, SGD with momentum and
Adam against their formulas, all-or-nothing updates, and the errors."""

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import jitc

ROOT = Path(__file__).resolve().parents[2]


def load_example(name):
    spec = importlib.util.spec_from_file_location(name, ROOT / "examples" / "python" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def jitc_binary():
    target = Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target"))
    binary = Path(os.environ.get("JITC_BIN_DIR", target / "debug")) / "jitc"
    assert binary.exists(), f"no jitc binary at {binary}: build it, or set JITC_BIN_DIR"
    return binary


def numpy_mlp_backward(x, y, w1, b1, w2, b2):
    """The loss and gradients of mean cross-entropy(relu(x w1 + b1) w2 + b2),
    derived by hand."""
    a1 = x @ w1 + b1
    h = np.maximum(a1, 0)
    logits = h @ w2 + b2
    shifted = logits - logits.max(axis=1, keepdims=True)
    logp = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
    batch = x.shape[0]
    loss = -(y * logp).sum() / batch
    dlogits = (np.exp(logp) - y) / batch
    dh = dlogits @ w2.T
    da1 = dh * (a1 > 0)
    return loss, [x.T @ da1, da1.sum(axis=0), h.T @ dlogits, dlogits.sum(axis=0)]


def test_mlp_gradients_match_a_numpy_backward_written_by_hand():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((8, 20))
    y = np.eye(5)[rng.integers(0, 5, 8)]
    params = [rng.standard_normal((20, 16)) * 0.3, rng.standard_normal(16) * 0.1,
              rng.standard_normal((16, 5)) * 0.3, rng.standard_normal(5) * 0.1]
    vars = [jitc.Var(p) for p in params]
    hidden = jitc.relu(jitc.matmul(jitc.Var(x), vars[0]) + vars[1])
    loss = jitc.cross_entropy(jitc.matmul(hidden, vars[2]) + vars[3], y)
    grads = jitc.grad(loss, vars)
    got = jitc.fetch(loss, *grads)
    want_loss, want = numpy_mlp_backward(x, y, *params)
    np.testing.assert_allclose(got[0], want_loss, rtol=1e-12)
    for g, w in zip(got[1:], want):
        assert g.shape == w.shape
        np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-12)


def test_one_training_step_equals_the_hand_written_mlir_step(tmp_path):
    train = load_example("mlp_train")
    x, y = train.data(8 * train.BATCH)
    x, y = x[: train.BATCH], y[: train.BATCH]
    start = train.initial_parameters()
    opt = train.make_optimizer(lr=0.05)
    loss = train.step(opt, x, y)
    after = opt.state()

    inputs = [x, y, *start.values(), np.float32(0.05)]
    args = []
    for k, value in enumerate(inputs):
        np.save(tmp_path / f"in{k}.npy", value)
        args += ["--input", f"@in{k}.npy"]
    outputs = []
    for k in range(5):
        outputs += ["--output", f"@out{k}.npy"]
    subprocess.run([str(jitc_binary()), "run", str(ROOT / "examples" / "mlp_step.mlir"), *args, *outputs],
                   cwd=tmp_path, check=True, capture_output=True)
    want = [np.load(tmp_path / f"out{k}.npy") for k in range(5)]
    assert abs(loss - want[0]) <= 1e-5
    for name, w in zip(start, want[1:]):
        np.testing.assert_allclose(after[name], w, rtol=0, atol=1e-5, err_msg=name)
        # The step moved the parameter, so the comparison means something.
        assert np.abs(after[name] - start[name]).max() > 1e-4


def quadratic(opt):
    """loss = sum((p - 3)^2) for the optimizer's one parameter `p`."""
    (p,) = opt.parameters()
    loss = jitc.sum((p - 3.0) * (p - 3.0))
    opt.step(loss)
    return loss.item()


def test_sgd_with_momentum_follows_its_formula():
    p0 = np.array([0.0, 1.0, 5.0])
    opt = jitc.optim.SGD({"sgd.p": p0}, lr=0.1, momentum=0.9, weight_decay=0.01)
    p, v = p0.copy(), np.zeros(3)
    for _ in range(4):
        quadratic(opt)
        g = 2 * (p - 3) + 0.01 * p
        v = 0.9 * v + g
        p = p - 0.1 * v
        np.testing.assert_allclose(jitc.get_state("sgd.p"), p, rtol=1e-12)
        np.testing.assert_allclose(jitc.get_state("sgd.p.momentum"), v, rtol=1e-12)


def test_adam_follows_its_formula():
    p0 = np.array([0.0, 1.0, 5.0])
    opt = jitc.optim.Adam({"adam.p": p0}, lr=0.1)
    p, m, v = p0.copy(), np.zeros(3), np.zeros(3)
    for t in range(1, 5):
        quadratic(opt)
        g = 2 * (p - 3)
        m = 0.9 * m + 0.1 * g
        v = 0.999 * v + 0.001 * g * g
        p = p - 0.1 / (1 - 0.9**t) * m / (np.sqrt(v) / np.sqrt(1 - 0.999**t) + 1e-8)
        np.testing.assert_allclose(jitc.get_state("adam.p"), p, rtol=1e-12)
    # Every step after the first reused its compilation: the changing bias
    # corrections are data.
    assert jitc.stats()["cache_hits"] >= 3


def test_each_list_of_parameters_has_its_own_learning_rate():
    """Optimizers over different parameter lists that start with the same
    parameter keep their own rates; a parameter named like a rate (`e.lr`)
    is not overwritten by one, and one named like a rate already made is
    an error."""
    p0 = np.array([0.0, 1.0, 5.0])
    jitc.set_state("own.q", np.zeros(3))
    slow = jitc.optim.SGD({"own.p": p0}, lr=0.1)
    fast = jitc.optim.SGD(["own.p", "own.q"], lr=0.5)
    assert (slow.lr, fast.lr) == (0.1, 0.5) and (slow.lr_name, fast.lr_name) == ("own.p.lr", "own.p.lr.2")
    p = p0.copy()
    for opt, lr in [(slow, 0.1), (fast, 0.5), (slow, 0.1)]:
        params = opt.parameters()
        loss = jitc.sum((params[0] - 3.0) * (params[0] - 3.0))
        for q in params[1:]:
            loss = loss + jitc.sum(q * q)
        opt.step(loss)
        loss.item()
        p = p - lr * 2 * (p - 3)
        np.testing.assert_allclose(jitc.get_state("own.p"), p, rtol=1e-12)
    named = jitc.optim.SGD({"e": p0, "e.lr": np.full(3, 7.0)}, lr=0.2)
    assert named.lr_name == "e.lr.2" and named.lr == 0.2
    np.testing.assert_array_equal(jitc.get_state("e.lr"), np.full(3, 7.0))
    np.testing.assert_array_equal(jitc.get_state("e.lr.2"), np.asarray(0.2))
    # A parameter that would be a rate is an error, and sets nothing.
    first = jitc.optim.SGD({"f": p0}, lr=0.1)
    with pytest.raises(jitc.JitcError, match=r"the parameter 'f.lr' is the learning rate of the optimizers over "
                                             r"\['f'\]"):
        jitc.optim.SGD({"g": np.ones(3), "f.lr": np.full(3, 7.0)}, lr=0.5)
    assert first.lr == 0.1 and jitc.get_state("g") is None


def test_an_optimizer_made_again_resumes_its_rate():
    """An optimizer made again over the same parameters has the same rate's
    name (a step staged with `jitc.function` keeps its facts), as it
    resumes their slots."""
    names = [jitc.optim.SGD({"again.p": np.zeros(2)}, lr=0.1).lr_name for _ in range(3)]
    assert names == ["again.p.lr"] * 3


def test_a_parameter_named_like_an_optimizer_slot_is_an_error():
    with pytest.raises(jitc.JitcError, match="the parameter 'slot.w.momentum' has the name of the momentum state "
                                             "of the parameter 'slot.w'"):
        jitc.optim.SGD({"slot.w": np.ones(2), "slot.w.momentum": np.ones(2)}, lr=0.1, momentum=0.9)
    for suffix in ("adam_m", "adam_v", "adam_step"):
        with pytest.raises(jitc.JitcError, match=f"{suffix} state"):
            jitc.optim.Adam({"slot.a": np.ones(2), f"slot.a.{suffix}": np.ones(2)})
    # Nothing was set by the optimizers that failed.
    assert jitc.get_state("slot.w") is None and jitc.get_state("slot.a") is None


def test_a_training_step_is_one_fetch():
    train = load_example("mlp_train")
    x, y = train.data(train.BATCH, seed=5)
    opt = train.make_optimizer()
    train.step(opt, x, y)
    before = jitc.stats()
    train.step(opt, x, y)
    after = jitc.stats()
    assert after["fetches"] - before["fetches"] == 1
    assert after["cache_hits"] - before["cache_hits"] == 1
    assert after["compiles"] == before["compiles"]


def test_a_failed_step_commits_nothing():
    opt = jitc.optim.SGD({"fail.p": np.array([1.0, 2.0], dtype=np.float32)}, lr=0.5)
    (p,) = opt.parameters()
    # An integer division by zero in the same fetch as the update.
    zero = jitc.Var(np.array([0, 0], dtype=np.int32))
    broken = jitc.binary(jitc.Var(np.array([1, 1], dtype=np.int32)), zero, "div").astype(np.float32)
    loss = jitc.sum(p * p + broken * 0.0)
    opt.step(loss)
    with pytest.raises(jitc.JitcError, match="division by zero"):
        loss.item()
    np.testing.assert_array_equal(jitc.get_state("fail.p"), [1.0, 2.0])


def test_the_training_example_runs_and_its_loss_falls():
    run = subprocess.run([sys.executable, str(ROOT / "examples" / "python" / "mlp_train.py"), "--steps", "24"],
                         capture_output=True, text=True)
    assert run.returncode == 0, run.stderr + run.stdout
    assert "1 compile" in run.stdout


def test_bad_gradient_and_optimizer_requests_are_errors():
    x = jitc.Var(np.ones(3, dtype=np.float32))
    with pytest.raises(jitc.JitcError, match="the loss must be a scalar"):
        jitc.grad(x * 2.0, x)
    opt = jitc.optim.SGD({"bad.p": np.ones(2, dtype=np.float32)}, lr=0.1)
    with pytest.raises(jitc.JitcError, match="call parameters"):
        opt.step(jitc.sum(x))
    with pytest.raises(jitc.JitcError, match="there is no state 'nowhere'"):
        jitc.optim.Adam(["nowhere"])
    with pytest.raises(jitc.JitcError, match="class indices must lie in"):
        jitc.cross_entropy(jitc.Var(np.ones((2, 3), dtype=np.float32)), np.array([0, 3]))


def test_a_full_reduction_is_rank_0():
    x = jitc.Var(np.ones((4, 3), dtype=np.float32))
    assert jitc.mean(x).shape == ()
    assert (jitc.sum(x) / 2.0).shape == ()


def test_conv_net_gradients_match_finite_differences():
    # conv_train.py's net (conv, batch norm, relu, pool, linear head) in
    # f64 on a small batch: sampled elements of every parameter's gradient
    # against central differences.
    train = load_example("conv_train")
    rng = np.random.default_rng(7)
    x, labels = train.data(4, seed=3)
    x = x.astype(np.float64)
    params = {k: v.astype(np.float64) + rng.standard_normal(v.shape) * 0.1
              for k, v in train.initial_parameters().items()}

    def loss_of(values):
        vars = [jitc.Var(v) for v in values]
        return jitc.cross_entropy(train.logits_of(jitc.Var(x), *vars), labels), vars

    values = list(params.values())
    loss, vars = loss_of(values)
    grads = [g.numpy() for g in jitc.grad(loss, vars)]
    step = 1e-6
    for k, value in enumerate(values):
        for flat in rng.choice(value.size, size=min(6, value.size), replace=False):
            index = np.unravel_index(flat, value.shape)
            moved = [v.copy() for v in values]
            moved[k][index] += step
            up = loss_of(moved)[0].item()
            moved[k][index] -= 2 * step
            down = loss_of(moved)[0].item()
            numeric = (up - down) / (2 * step)
            assert abs(grads[k][index] - numeric) <= 1e-6 * (1 + abs(numeric)), (list(params)[k], index)


def test_the_conv_training_example_runs_and_its_loss_falls():
    run = subprocess.run([sys.executable, str(ROOT / "examples" / "python" / "conv_train.py"), "--steps", "25"],
                         capture_output=True, text=True)
    assert run.returncode == 0, run.stderr + run.stdout
    assert "1 compile" in run.stdout
