"""The lazy graph from Python: bad arguments as `jitc.JitcError`s that say
why, fusion across a loop's iterations, cache hits, values that share
work, flags, and dumps that `jitc run` reproduces."""

import gc
import os
import subprocess
from pathlib import Path

import numpy as np
import pytest

import jitc

ROOT = Path(__file__).resolve().parents[2]


def test_bad_arguments_raise_clear_errors():
    x = jitc.Var(np.ones((2, 3), np.float32))
    with pytest.raises(jitc.JitcError, match=r"shapes \(2, 3\) and \(3, 2\) do not broadcast together"):
        x + jitc.Var(np.ones((3, 2), np.float32))
    # (The operator `+` promotes the integers to float32; the op does not.)
    with pytest.raises(jitc.JitcError, match="operands must have one shape and element type"):
        jitc.binary(x, jitc.Var(np.ones((2, 3), np.int32)), "add")
    with pytest.raises(jitc.JitcError, match="reindex of a rank-2 value needs 2 index expressions"):
        jitc.reindex(x, [2, 3], ["i0"])
    with pytest.raises(jitc.JitcError, match="i2 is not an index of this op"):
        jitc.reindex(x, [2, 3], ["i0", "i2"])
    with pytest.raises(jitc.JitcError, match="unknown reduction 'sum'"):
        jitc.reindex_reduce(x, "sum", [2], ["i0"])
    with pytest.raises(jitc.JitcError, match="unknown unary kind 'exq'"):
        jitc.unary(x, "exq")
    with pytest.raises(jitc.JitcError, match="takes"):
        jitc.unary(jitc.Var(np.ones(3, np.int32)), "exp")
    with pytest.raises(jitc.JitcError, match="matmul of"):
        jitc.matmul(x, x)
    with pytest.raises(jitc.JitcError, match="no element type for NumPy's float16"):
        jitc.Var(np.ones(3, np.float16))
    with pytest.raises(jitc.JitcError, match="axis 2 is out of range"):
        jitc.sum(x, 2)
    with pytest.raises(jitc.JitcError, match="cannot reshape"):
        jitc.reshape(x, (4, 2))
    with pytest.raises(jitc.JitcError, match="unknown backend 'cuda'"):
        jitc.flags.backend = "cuda"
    with pytest.raises(jitc.JitcError, match="unknown math mode 'quick'"):
        jitc.flags.math = "quick"
    assert jitc.flags.math == "fast"


def step(h, w):
    """One iteration of a user's loop: a row-normalized tanh layer."""
    y = jitc.tanh(h * w)
    return y - jitc.mean(y, 1, keepdims=True)


def test_two_iterations_fuse_into_fewer_kernels_than_two_fetches():
    h0 = np.linspace(-1, 1, 64, dtype=np.float32).reshape(4, 16)
    w = jitc.Var(np.full((4, 16), 0.5, np.float32))
    before = jitc.stats()["kernels"]
    h = jitc.Var(h0)
    for _ in range(2):
        h = step(h, w)
        h.numpy()
    separate = jitc.stats()["kernels"] - before
    separate_value = h.numpy()
    before = jitc.stats()["kernels"]
    h = jitc.Var(h0)
    for _ in range(2):
        h = step(h, w)
    together_value = h.numpy()
    together = jitc.stats()["kernels"] - before
    np.testing.assert_array_equal(separate_value, together_value)
    assert together < separate, (together, separate)


def test_a_repeated_loop_body_hits_the_cache():
    w = jitc.Var(np.full((8, 8), 0.25, np.float32))
    h = jitc.Var(np.eye(8, dtype=np.float32))
    h = step(h, w)
    h.numpy()
    before = jitc.stats()
    for _ in range(5):
        h = step(h, w)
        h.numpy()
    after = jitc.stats()
    assert after["compiles"] == before["compiles"]
    assert after["cache_hits"] - before["cache_hits"] == 5


def test_values_that_share_work_are_computed_together():
    # (`jitc.sync` computes every pending value a handle holds: none that
    # earlier tests left to the garbage collector, some of which fail.)
    gc.collect()
    x = jitc.Var(np.arange(6, dtype=np.float32))
    shared = jitc.exp(x)
    a, b = -shared, shared * 2.0
    unrelated = x + 1.0
    a.numpy()
    assert b.is_computed() and shared.is_computed()
    assert not unrelated.is_computed()
    jitc.sync()
    assert unrelated.is_computed()
    first, second = jitc.fetch(a, b)
    np.testing.assert_allclose(second, -2.0 * first)


def test_dump_reproduces_with_jitc_run(tmp_path):
    x = jitc.Var(np.arange(12, dtype=np.float32).reshape(3, 4) / 7)
    y = jitc.softmax(x)
    path = jitc.dump(y, tmp_path)
    command = Path(path).read_text().splitlines()[0].removeprefix("// ").split()
    want = y.numpy()
    # The `jitc` that `cargo test` built (scripts/test.sh says where).
    target = Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target"))
    binary = Path(os.environ.get("JITC_BIN_DIR", target / "debug")) / "jitc"
    assert binary.exists(), f"no jitc binary at {binary}: build it, or set JITC_BIN_DIR"
    subprocess.run([str(binary), *command[1:], "--output", "@y.npy"], cwd=tmp_path, check=True)
    np.testing.assert_array_equal(np.load(tmp_path / "y.npy"), want)


def test_flags_and_stats_report():
    assert jitc.flags.threads >= 1
    assert jitc.flags.backend == "cpu"
    stats = jitc.stats()
    assert set(stats) == {"fetches", "compiles", "cache_hits", "kernels"}
    jitc.flags.check_bounds = True
    try:
        z = jitc.Var(np.ones((3, 3), np.float32))
        np.testing.assert_array_equal(jitc.pad(z, [(1, 1), (1, 1)]).numpy(), np.pad(np.ones((3, 3)), 1))
    finally:
        jitc.flags.check_bounds = False


def test_state_writes_are_deferred_until_computed():
    jitc.set_state("w", np.ones(4, np.float32))
    grad = jitc.Var(np.full(4, 0.5, np.float32))
    for _ in range(3):
        w = jitc.read_state("w")
        jitc.write_state("w", w - grad * 0.5)
    np.testing.assert_array_equal(jitc.get_state("w"), np.ones(4, np.float32))
    before = jitc.stats()["fetches"]
    jitc.sync()
    assert jitc.stats()["fetches"] - before == 1
    np.testing.assert_array_equal(jitc.get_state("w"), np.full(4, 0.25, np.float32))
    with pytest.raises(jitc.JitcError, match="there is no state 'nope'"):
        jitc.read_state("nope")
    with pytest.raises(jitc.JitcError, match="cannot take a tensor<3xf32>"):
        jitc.write_state("w", jitc.Var(np.ones(3, np.float32)))
    assert jitc.get_state("nope") is None


def test_the_interpreter_backend_agrees_with_the_compiled_one():
    x = np.linspace(-2, 2, 60, dtype=np.float32).reshape(6, 10)
    compiled = jitc.softmax(jitc.Var(x) * 3.0).numpy()
    jitc.flags.backend = "interp"
    try:
        before = jitc.stats()
        interpreted = jitc.softmax(jitc.Var(x) * 3.0).numpy()
        assert jitc.stats()["kernels"] == before["kernels"], "the interpreter ran kernels"
    finally:
        jitc.flags.backend = "cpu"
    np.testing.assert_allclose(compiled, interpreted, rtol=1e-6, atol=1e-7)


def test_truth_values_are_those_of_numpy():
    assert jitc.Var(np.float32(2.0)) > 1.0
    assert not (jitc.Var(np.ones(1, np.float32)) < 0.0)
    with pytest.raises(jitc.JitcError, match="truth value of a jitc.Var of shape \\(3,\\) is ambiguous"):
        bool(jitc.Var(np.ones(3, np.float32)) == 1.0)


def test_values_used_from_another_thread_raise_a_jitc_error(capfd, tmp_path):
    # The graph's values belong to the thread that made them: another
    # thread gets a JitcError that says so (not PyO3's PanicException),
    # whether it computes with a Var, fetches one, writes it to state,
    # dumps it or calls a staged function, and Rust's panic hook prints
    # nothing.
    import threading

    x = jitc.Var(np.ones(4, np.float32)) * 2.0

    @jitc.function
    def f(a):
        return a * 2.0 + 1.0

    for _ in range(4):
        f(np.ones(3, np.float32))
    caught = []

    def use(action):
        try:
            action()
        except BaseException as error:  # a PanicException is a BaseException
            # Not the error itself: its traceback holds the thread's values.
            caught.append((type(error), str(error)))

    actions = [
        lambda: x + 1.0,
        x.numpy,
        lambda: x.shape,
        lambda: f(np.ones(3, np.float32)),
        lambda: jitc.write_state("from another thread", x),
        lambda: jitc.dump(x, tmp_path),
    ]
    for action in actions:
        thread = threading.Thread(target=use, args=(action,))
        thread.start()
        thread.join()
    assert len(caught) == len(actions)
    assert "panicked" not in capfd.readouterr().err
    for kind, message in caught:
        assert kind is jitc.JitcError, (kind, message)
        assert "belong to the thread that made them" in message
    # The thread that made them still uses them.
    np.testing.assert_array_equal((x + 1.0).numpy(), np.full(4, 3.0, np.float32))


def test_a_thread_count_below_one_is_an_error():
    with pytest.raises(jitc.JitcError, match="flags.threads must be at least 1, not 0"):
        jitc.flags.threads = 0
