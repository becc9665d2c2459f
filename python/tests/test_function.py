"""`@jitc.function` (JANUS-style speculation): every call's results and
the attributes after it equal plain imperative execution on random call
sequences that change shapes, values and paths; the counts of a scripted
call sequence; what cannot be staged stays imperative with its reason; the
examples."""

import collections
import functools
import importlib.util
import io
from pathlib import Path

import numpy as np
import pytest

import jitc

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "python"


def load_example(name):
    spec = importlib.util.spec_from_file_location(name, EXAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def branchy(x, w, scale):
    h = jitc.tanh(jitc.matmul(x, w)) * scale
    if jitc.sum(h) > 0:
        h = h - 1.0
    else:
        h = h * h
    return h, jitc.max(h)


def test_random_call_sequences_agree_with_imperative_execution():
    staged = jitc.function(branchy, profile=2)
    rng = np.random.default_rng(0)
    for _ in range(40):
        rows, inner = rng.choice([2, 3]), rng.choice([3, 4])
        x = rng.standard_normal((rows, inner)).astype(np.float32) + np.float32(rng.choice([-1.0, 1.0]))
        w = rng.standard_normal((inner, 2)).astype(np.float32)
        scale = float(rng.choice([1.0, 2.0]))
        got = staged(x, jitc.Var(w), scale)
        want = branchy(jitc.Var(x), jitc.Var(w), scale)
        for g, v in zip(got, want):
            np.testing.assert_allclose(g.numpy(), v.numpy(), rtol=1e-6, atol=1e-6)
    stats = staged.stats()
    assert stats["calls"] == 40
    # Shapes and the Python scale change the facts; paths change within
    # them: each kind of event happened.
    assert stats["staged"] > 0 and stats["fallbacks"] > 0 and stats["staged_graphs"] >= 4


class Counter:
    def __init__(self):
        self.total = jitc.Var(np.zeros(3, dtype=np.float32))

    def __call__(self, x):
        self.total = self.total + x
        if jitc.sum(x) > 0:
            return self.total * 2.0
        return self.total


class StagedCounter(Counter):
    __call__ = jitc.function(Counter.__call__, profile=2, max_fallbacks=2)


def test_traces_of_both_ways_merge_so_an_alternating_branch_stops_falling_back():
    staged, plain = StagedCounter(), Counter()
    signs = [1, 1, 1, 1, -1, -1, -1, 1, 1, -1, 1]
    for sign in signs:
        x = np.full(3, sign, dtype=np.float32)
        np.testing.assert_array_equal(staged(x).numpy(), plain(x).numpy())
        np.testing.assert_array_equal(staged.total.numpy(), plain.total.numpy())
    # Calls 1-2 profile and stage (speculating "positive" under a guard);
    # 3-4 are served; 5 fails the guard, runs imperatively, and its trace
    # merges with the others into one graph (meta-merge: the branch is an
    # scf.if; the negative way ends at once, and passes the rest through);
    # 6-11 are all served, whichever way they go.
    assert StagedCounter.__call__.stats() == {
        "calls": 11, "staged": 8, "traced": 3, "imperative": 0, "staged_graphs": 1,
        "restaged": 1, "fallbacks": 1, "give_ups": 0, "relaxations": 0, "relaxations_undone": 0,
        "reprofiles": 0, "raised": 0,
    }
    text = jitc.explain(StagedCounter.__call__)
    assert "fallback: guard" in text and "one graph merged from 3 traces" in text, text
    # The two ways of the one branch are the two regions of an scf.if on
    # its condition (AutoGraph's staged if), not cases of a switch.
    [graph] = StagedCounter.__call__.graphs()
    assert "scf.if" in graph and "scf.index_switch" not in graph, graph


def pick(x, best):
    a = x * 2.0
    b = x - 1.0
    if jitc.sum(x) > 0:
        h = a
    else:
        h = b
    if jitc.sum(h) > jitc.sum(best):
        best = h
    return h * 3.0, best


def test_branches_that_only_pick_a_value_merge_into_one_graph():
    # Both branches run no op of their own: they decide which value later
    # ops read (`h = a` or `h = b`, both computed before; a best-so-far
    # update). meta-merge passes the value each way decides through a way
    # node, so the traces merge into one graph (scf.ifs yielding the
    # values), not a tree chosen between in Python.
    staged = jitc.function(pick, profile=2, max_fallbacks=8)
    rng = np.random.default_rng(17)
    for _ in range(24):
        x = rng.standard_normal(3).astype(np.float32) + np.float32(rng.choice([-1.0, 1.0]))
        # Wide enough that the update goes both ways after either way of
        # the first branch: all four paths are traced.
        best = (rng.standard_normal(3) * 10).astype(np.float32)
        got = staged(x, best)
        want = pick(jitc.Var(x), jitc.Var(best))
        for g, w in zip(got, want):
            np.testing.assert_array_equal(g.numpy(), w.numpy())
    stats = staged.stats()
    # Four paths: each is traced once (two profiled, the others after a
    # fallback), and then every call is served.
    assert stats["fallbacks"] <= 3 and stats["give_ups"] == 0 and stats["staged"] >= 20, stats
    text = staged.explain()
    assert "one graph merged from" in text and "tree:" not in text, text
    # Each fallback took a path no trace had: the last graph merges all
    # four (the best-so-far update is picked in an scf.if nested in what
    # the first branch picks).
    assert "one graph merged from 4 traces" in text, text
    [graph] = staged.graphs()
    assert graph.count("scf.if") == 2 and "scf.index_switch" not in graph, graph


def test_traces_that_do_not_merge_into_one_graph_are_staged_as_a_tree():
    # The two ways return different things (a tensor, a Python number), so
    # no one graph returns both: the traces are staged as a tree, which
    # chooses between its pieces in Python.
    @jitc.function(profile=2)
    def f(x):
        if jitc.sum(x) > 0:
            return x * 2.0, 1
        return x - 1.0, 2

    for sign in [1, -1, 1, -1, 1, -1]:
        x = np.full(3, sign, dtype=np.float32)
        got, tag = f(x)
        want, want_tag = f.__wrapped__(jitc.Var(x))
        np.testing.assert_array_equal(got.numpy(), want.numpy())
        assert tag == want_tag
    text = jitc.explain(f)
    assert "do not merge into one graph" in text and "(both ways traced)" in text, text
    # Both ways were profiled, so every later call is served.
    assert f.stats()["staged"] == 4 and f.stats()["fallbacks"] == 0, f.stats()


def test_a_scripted_call_sequence_gives_these_counts():
    @jitc.function(profile=2, max_fallbacks=2)
    def halve(x):
        while jitc.max(x) > 1:
            x = x * 0.5
        return x

    for top in [0.5, 0.5, 0.5, 1.5, 1.5, 0.5, 3.0, 3.0]:
        x = np.array([top, 0.25], dtype=np.float32)
        want = x.copy()
        while want.max() > 1:
            want = want * np.float32(0.5)
        np.testing.assert_array_equal(halve(x).numpy(), want)
    # 1-2 profile (no iteration) and stage; 3 is served; 4 takes one
    # iteration: the guard on the loop test fails, it falls back, and the
    # merged tree branches at the first test; 5 and 6 are served; 7 takes a
    # second iteration, fails the guard on the second test, and that second
    # fallback gives these facts up: 7 and 8 run imperatively.
    assert halve.stats() == {
        "calls": 8, "staged": 3, "traced": 3, "imperative": 2, "staged_graphs": 1,
        "restaged": 1, "fallbacks": 2, "give_ups": 1, "relaxations": 0, "relaxations_undone": 0,
        "reprofiles": 0, "raised": 0,
    }
    text = jitc.explain(halve)
    assert "imperative after 2 fallbacks" in text and "give up" in text, text


def test_a_failed_guard_commits_no_attribute():
    staged = StagedCounter()
    for _ in range(2):
        staged(np.ones(3, dtype=np.float32))
    before = staged.total.numpy().copy()
    # The staged graph speculates "positive"; a negative call fails the
    # guard, and only the imperative rerun updates the attribute, once
    # (the staged pieces commit attributes only when the whole call
    # succeeds).
    staged(np.full(3, -1, dtype=np.float32))
    np.testing.assert_array_equal(staged.total.numpy(), before - 1)


@pytest.mark.parametrize("body,reason", [
    ("print('hi'); return x * 2.0", "it calls print()"),
    ("return x * float(jitc.sum(x).item())", "Var.numpy() or Var.item()"),
    ("seen.append(1); return x", "it changes the global or closure variable"),
    ("return x * box.a", "held where the facts reach"),
])
def test_what_cannot_be_staged_stays_imperative_and_says_why(body, reason):
    box = _Slotted(jitc.Var(np.ones(3, dtype=np.float32)))
    scope = {"jitc": jitc, "seen": [], "box": box}
    exec(f"def f(x):\n    {body}\n", scope)
    fn = jitc.function(scope["f"], profile=1)
    x = np.arange(3, dtype=np.float32)
    for _ in range(3):
        want = scope["f"](jitc.Var(x)).numpy()
        np.testing.assert_array_equal(fn(x).numpy(), want)
    assert fn.stats()["staged"] == 0
    assert reason in jitc.explain(fn), jitc.explain(fn)


def test_what_a_call_does_to_a_list_or_dict_argument_holding_arrays_is_done_to_the_callers():
    """The list and dict a call passes are made again with `jitc.Var`s for
    its NumPy arrays; an item the function appends or a key it sets reaches
    the caller's list and dict (it was lost in the copy), and the arrays
    are the caller's again after the call."""
    def keep(xs, seen):
        y = xs[0] * 2.0 + seen["bias"]
        xs.append(y)
        seen["last"] = y
        del seen["drop"]
        return y

    fn = jitc.function(keep)
    for k in range(4):
        first, bias = np.full(3, float(k), dtype=np.float32), np.full(3, 0.5, dtype=np.float32)
        xs, seen = [first], {"bias": bias, "drop": 1}
        got = fn(xs, seen)
        want = keep([jitc.Var(first)], {"bias": jitc.Var(bias), "drop": 1})
        np.testing.assert_array_equal(got.numpy(), want.numpy())
        assert len(xs) == 2 and xs[0] is first and xs[1] is got, xs
        assert list(seen) == ["bias", "last"] and seen["bias"] is bias and seen["last"] is got, seen
    # (Changing an argument's contents is not staged: every call runs it.)
    assert fn.stats()["staged"] == 0 and "changes the contents of an argument" in fn.explain()


def test_a_list_or_dict_argument_is_the_callers_own_in_the_call_and_when_returned():
    """Arrays in a list or dict argument are made `jitc.Var`s in place and
    put back after the call, so the function holds the caller's own
    container: one it keeps (`self.d = d`) is the caller's, a write through
    another reference to it is seen through the argument, and one it
    returns is the argument itself (such a call is not staged: a graph
    would return a copy, and which argument it was is not a fact)."""
    class Model:
        def __init__(self):
            self.d, self.kept = {}, None

        def step(self, d, xs):
            self.kept = xs
            return d["x"] * self.d["scale"], d

    class Staged(Model):
        step = jitc.function(Model.step)

    model = Staged()
    for k in range(6):
        x = np.full(3, float(k), dtype=np.float32)
        d = {"x": x, "scale": np.float32(2.0)}
        model.d = d
        xs = [x]
        got, same = model.step(d, xs)
        np.testing.assert_array_equal(got.numpy(), x * 2.0)
        assert same is d and model.kept is xs and d["x"] is x and xs[0] is x, k
    assert Staged.step.stats()["staged"] == 0, "a list kept in an attribute is state a graph cannot set"

    def passthrough(d):
        return d["x"] + 1.0, d

    fn = jitc.function(passthrough)
    for k in range(6):
        d = {"x": np.full(3, float(k), dtype=np.float32)}
        got, same = fn(d)
        np.testing.assert_array_equal(got.numpy(), d["x"] + 1.0)
        assert same is d, k
    assert fn.stats()["staged"] == 0 and "it returns a dict that existed before the call" in fn.explain(), \
        fn.explain()

    # The same for a list an attribute holds: the caller's appends to the
    # returned list are the attribute's.
    class Logged:
        def __init__(self):
            self.history = []

        def step(self, x):
            return x * 2.0, self.history

    staged, plain = Logged(), Logged()
    logged = jitc.function(Logged.step)
    for k in range(6):
        x = np.full(3, float(k), dtype=np.float32)
        (got, kept), (want, plain_kept) = logged(staged, x), Logged.step(plain, jitc.Var(x))
        np.testing.assert_array_equal(got.numpy(), want.numpy())
        kept.append(k)
        plain_kept.append(k)
        assert kept is staged.history and staged.history == plain.history, k
    # An array jitc has no type for: an error, and the caller's list and
    # dict as they were (not half made `Var`s).
    x, labels = np.ones(3, dtype=np.float32), np.ones(3, dtype=np.uint8)
    batch, named = [x, labels], {"x": x, "labels": labels}
    for call in (lambda: fn({"x": x}, batch), lambda: fn(named), lambda: fn([x], labels)):
        with pytest.raises(jitc.JitcError, match="uint8"):
            call()
        assert batch[0] is x and named["x"] is x


def test_a_positional_only_parameter_and_a_keyword_of_one_name_are_not_one_relaxed_path():
    """`def step(cfg, /, x, **kw)` called with `cfg=` too: two objects
    labelled `cfg`. A relaxed path must name one object, so neither's
    counter is relaxed (before, both were, and the second was staged as a
    constant: the served calls left it behind)."""
    class Counter:
        def __init__(self):
            self.n = 0

    def step(cfg, /, x, **kw):
        cfg.n += 1
        kw["cfg"].n += 1
        return x * cfg.n + kw["cfg"].n * 2.0

    fn = jitc.function(step)
    staged, plain = (Counter(), Counter()), (Counter(), Counter())
    for k in range(20):
        x = np.full(3, 0.5 * k, dtype=np.float32)
        got = fn(staged[0], x, cfg=staged[1])
        want = step(plain[0], jitc.Var(x), cfg=plain[1])
        np.testing.assert_array_equal(got.numpy(), want.numpy())
        assert (staged[0].n, staged[1].n) == (plain[0].n, plain[1].n), k


def test_arrays_in_a_dict_argument_are_graph_inputs_and_one_array_passed_twice_is_one_tensor():
    """A dict argument's arrays are inputs, like a list's: a new batch in
    the same dict is the same facts (they were constants, so each batch was
    a new set of facts until the function gave up). An array passed twice
    is one `jitc.Var` (`x is y` holds, as it does for the array)."""
    def loss(batch, x, y):
        d = batch["inputs"] * batch["weights"]
        return jitc.sum(d * x) if x is y else jitc.sum(d * (x - y))

    fn = jitc.function(loss)
    rng = np.random.default_rng(9)
    for k in range(24):
        batch = {"inputs": rng.standard_normal(4).astype(np.float32),
                 "weights": rng.standard_normal(4).astype(np.float32)}
        a, b = rng.standard_normal(4).astype(np.float32), rng.standard_normal(4).astype(np.float32)
        args = (a, a) if k % 2 else (a, b)
        plain = {name: jitc.Var(v) for name, v in batch.items()}
        va, vb = jitc.Var(a), jitc.Var(b)
        want = loss(plain, va, va if k % 2 else vb)
        np.testing.assert_allclose(fn(batch, *args).numpy(), want.numpy(), rtol=1e-6)
    stats = fn.stats()
    # Two sets of facts (the two arguments one tensor or two), 3 traced
    # calls each, then served.
    assert stats["staged_graphs"] == 2 and stats["staged"] == 24 - 6 and stats["give_ups"] == 0, stats


def test_a_python_number_that_changes_every_call_becomes_a_graph_input():
    def step(x, lr, decay=0.5):
        return x - lr * x * decay

    fn = jitc.function(step, profile=2)
    x = np.arange(3, dtype=np.float32)
    for k in range(8):
        lr = 0.1 / (k + 1)
        want = step(jitc.Var(x), lr, decay=0.5 + k % 2).numpy()
        np.testing.assert_array_equal(fn(x, lr, decay=0.5 + k % 2).numpy(), want)
    stats = fn.stats()
    # Call 2 changes both numbers: both become inputs, calls 2-3 profile
    # and stage, and 4-8 are served by one graph.
    assert stats["relaxations"] == 2 and stats["staged"] == 5 and stats["staged_graphs"] == 1, stats
    assert "argument 1, keyword argument decay" in jitc.explain(fn), jitc.explain(fn)


@pytest.mark.parametrize("body,why", [
    ("return x - jitc.full(x.shape, lr)", "read into Python (float())"),
    ("return x * (lr ** 2)", "the operator pow"),
    ("return x * round(lr, 3)", "read into Python (round())"),
    ("return x * (2.0 if isinstance(lr, float) else 1.0)", "inspects types (isinstance)"),
])
def test_a_python_number_that_python_reads_stays_a_fact_by_value_and_is_named(body, why):
    scope = {"jitc": jitc}
    exec(f"def step(x, lr):\n    {body}\n", scope)
    step = scope["step"]
    fn = jitc.function(step, profile=2, max_facts=4)
    x = np.arange(3, dtype=np.float32)
    for k in range(8):
        lr = 0.1 / (k + 1)
        want = step(jitc.Var(x), lr).numpy()
        np.testing.assert_array_equal(fn(x, lr).numpy(), want)
    stats = fn.stats()
    # The relaxed run's value was read by Python (or the relaxed run
    # differed from the real one): the number goes back to being a fact by
    # value, every call is new facts, and after four the function stays
    # imperative, naming the number.
    assert stats["relaxations"] == 1 and stats["relaxations_undone"] == 1, stats
    assert stats["calls"] == 8 and stats["staged"] == 0 and stats["give_ups"] == 1, stats
    assert fn._facts == {}
    text = jitc.explain(fn)
    assert why in text, text
    assert "its facts changed 4 times (argument 1)" in text and "pass it as a jitc.Var" in text, text


def _mixed(x):
    v = x
    if jitc.sum(x) > 0:
        v = jitc.exp(x)
    if jitc.max(x) > 2:
        v = -x
    return jitc.tanh(v)


def _clip(h):
    if jitc.sum(h) > 0:
        return h
    return h * 0.0


def _same_line_two_calls(x):
    if jitc.max(x) > 3:
        return jitc.exp(_clip(x * 2.0))
    return -_clip(x + 1.0)


_ZEROS, _NEGATIVE_ZEROS = np.zeros(4, np.float32), np.full(4, -0.0, np.float32)


def _signed_zeros(x):
    if jitc.sum(x) > 0:
        return x + jitc.Var(_ZEROS)
    return x / jitc.Var(_NEGATIVE_ZEROS)


@pytest.mark.parametrize("body,traced,served", [
    # Each way of each branch was traced, not this mix of them: the merged
    # graph's guard fails and the call runs imperatively.
    (_mixed, [[1, 1, 1, 1], [3, -5, -5, -5], [1, 1, 1, 1]], [-1, -1, -1, -1]),
    # One line reached through two calls is two sites.
    (_same_line_two_calls, [[4, 1, 1, 1], [1, 1, 1, 1], [4, 1, 1, 1]], [1, 1, 1, 1]),
    # Captured constants are told apart bit for bit: -0.0 is not 0.0.
    (_signed_zeros, [[1, 1, 1, 1], [-1, -1, -1, -1], [1, 1, 1, 1]], [-1, -1, -1, -1]),
])
def test_merged_graphs_give_what_the_function_gives(body, traced, served):
    fn = jitc.function(body)
    for x in traced:
        fn(np.array(x, np.float32))
    x = np.array(served, np.float32)
    with np.errstate(divide="ignore"):
        np.testing.assert_array_equal(fn(x).numpy(), body(jitc.Var(x)).numpy())
    assert "merged from 3 traces" in jitc.explain(fn), jitc.explain(fn)


def test_a_nested_function_on_an_object_outside_the_facts_stays_imperative():
    class Layer:
        def __init__(self):
            self.scale = 2.0

        @jitc.function
        def forward(self, h):
            return h * self.scale

    layer = Layer()

    @jitc.function(profile=1)
    def step(x):
        return layer.forward(jitc.exp(x))

    x = np.zeros(3, np.float32)
    for _ in range(2):
        np.testing.assert_array_equal(step(x).numpy(), np.full(3, 2.0, np.float32))
    # The layer's attributes are not facts of `step`: a staged graph would
    # keep the old scale.
    layer.scale = 10.0
    np.testing.assert_array_equal(step(x).numpy(), np.full(3, 10.0, np.float32))
    assert "on a Layer that is not self or an argument" in jitc.explain(step), jitc.explain(step)


def test_nested_and_recursive_functions_are_part_of_the_callers_trace():
    @jitc.function(profile=1)
    def inner(x):
        return jitc.tanh(x) * 2.0

    @jitc.function(profile=1)
    def outer(x):
        return inner(x) + inner(x * 3.0)

    @jitc.function(profile=1)
    def halvings(x, n):
        return x if n == 0 else halvings(x * 0.5, n - 1) + 1.0

    x = np.linspace(-1, 1, 5).astype(np.float32)
    for _ in range(3):
        want = (np.tanh(x) * 2 + np.tanh(x * 3) * 2).astype(np.float32)
        np.testing.assert_allclose(outer(x).numpy(), want, rtol=1e-6, atol=1e-6)
        np.testing.assert_allclose(halvings(x, 4).numpy(), x / 16 + 4, rtol=1e-6)
    assert outer.stats()["staged"] == 2 and inner.stats()["calls"] == 0, (outer.stats(), inner.stats())
    assert halvings.stats()["staged"] == 2, halvings.stats()
    # Deeper than the limit: the outermost call stays imperative, and says so.
    np.testing.assert_allclose(halvings(x, 40).numpy(), x / 2**40 + 40, rtol=1e-6)
    assert "recurses) more than 32 deep" in jitc.explain(halvings), jitc.explain(halvings)


class Steps:
    """A counter and a mode in Python attributes, as JANUS's PySetAttr."""

    def __init__(self):
        self.count = 0
        self.mode = "warmup"

    def __call__(self, x):
        self.count += 1
        if self.count > 2:
            self.mode = "train"
        return x * 2.0 + self.count, self.count, self.count / 4


class StagedSteps(Steps):
    __call__ = jitc.function(Steps.__call__)


def test_python_attribute_writes_are_staged_and_a_counter_becomes_a_graph_input():
    staged, plain = StagedSteps(), Steps()
    for _ in range(10):
        x = np.ones(2, dtype=np.float32)
        got, count, quarter = staged(x)
        want, want_count, want_quarter = plain(jitc.Var(x))
        np.testing.assert_array_equal(got.numpy(), want.numpy())
        # The Python kinds survive the graph: an int stays an int, `/`
        # gives a float.
        assert (count, quarter) == (want_count, want_quarter)
        assert type(count) is int and type(quarter) is float and type(staged.count) is int
        assert (staged.count, staged.mode) == (plain.count, plain.mode)
    stats = StagedSteps.__call__.stats()
    # Call 2 sees the counter change: from then on it is an input of the
    # graph (its comparison with 2 a guard). Call 3 sets the mode (a Python
    # value, a fact), so calls 4-6 profile the new facts, and 7-10 are
    # served, each writing the counter back as an int.
    assert stats["relaxations"] == 1 and stats["relaxations_undone"] == 0, stats
    assert stats["traced"] == 6 and stats["staged"] == 4 and stats["give_ups"] == 0, stats
    text = StagedSteps.__call__.explain()
    assert "graph inputs (relaxed Python numbers): self.count" in text, text
    # The relaxed counter is an attribute like a tensor's: the graph reads
    # it with meta.state_read and writes it back with meta.state_write (a
    # 64-bit int; Python gets an int back). The mode, a string, is set in
    # Python.
    [graph] = StagedSteps.__call__.graphs()
    assert '"meta.state_read"() {name = "self.count"} : () -> tensor<i64>' in graph, graph
    assert 'name = "self.count"} : (tensor<i64>) -> ()' in graph, graph
    assert "self.mode" not in graph, graph
    assert "state: reads self.count; writes self.count" in text, text


class RunningMean:
    """A batch-norm-style sub-layer: a running mean over the batches seen,
    and their count as a Python int (PyTorch's `num_batches_tracked`)."""

    def __init__(self, n):
        self.mean = jitc.Var(np.zeros(n, dtype=np.float32))
        self.seen = 0

    def __call__(self, x):
        self.seen += 1
        self.mean = self.mean + (jitc.mean(x, 0) - self.mean) * (1.0 / self.seen)
        return x - self.mean


class Normalized:
    def __init__(self):
        self.norm = RunningMean(4)
        self.scale = jitc.Var(np.full(4, 2.0, dtype=np.float32))

    def step(self, x):
        return self.norm(x) * self.scale


class StagedNormalized(Normalized):
    step = jitc.function(Normalized.step)


def test_a_counter_of_a_sub_layer_becomes_a_graph_input():
    """`self.norm.seen += 1` changes a number held by a sub-layer on every
    call: it is relaxed as `self.seen` is (read and written as the state
    `self.norm.seen`), not a new set of facts per call (which gave up after
    `max_facts`)."""
    staged, plain = StagedNormalized(), Normalized()
    rng = np.random.default_rng(5)
    for _ in range(24):
        x = rng.standard_normal((8, 4)).astype(np.float32)
        np.testing.assert_allclose(staged.step(x).numpy(), plain.step(jitc.Var(x)).numpy(), rtol=1e-6, atol=1e-6)
        assert staged.norm.seen == plain.norm.seen and type(staged.norm.seen) is int
        np.testing.assert_allclose(staged.norm.mean.numpy(), plain.norm.mean.numpy(), rtol=1e-6, atol=1e-6)
    stats = StagedNormalized.step.stats()
    # Call 1 finds the sub-layer's writes (profiling again with it among
    # the call's objects), and so does the next (`RunningMean.__call__`'s
    # code); call 4 sees the count change, and is profiled again with it
    # relaxed; from call 7 on, one graph serves.
    assert stats["relaxations"] == 1 and stats["give_ups"] == 0 and stats["staged_graphs"] == 1, stats
    assert stats["staged"] == 18 and stats["imperative"] == 0, stats
    text = StagedNormalized.step.explain()
    assert "graph inputs (relaxed Python numbers): self.norm.seen" in text, text
    assert "writes self.norm.mean, self.norm.seen" in text, text


def _twins(make, step, calls, before=lambda obj, k: None, args=lambda k, x: ()):
    """Calls `step` made a `jitc.function` on one object and plainly on a
    twin, `calls` times (`before(obj, k)` first on each), and checks that
    results and attributes agree after each; returns the Function."""
    fn = jitc.function(step)
    staged, plain = make(), make()
    for k in range(calls):
        x = np.full(3, 0.5 + k, dtype=np.float32)
        before(staged, k)
        before(plain, k)
        got, want = fn(staged, x, *args(k, staged)), step(plain, jitc.Var(x), *args(k, plain))
        np.testing.assert_array_equal(got.numpy(), want.numpy(), err_msg=f"call {k}\n{fn.explain()}")
        assert repr(vars(staged)) == repr(vars(plain)) or _attrs(staged) == _attrs(plain), k
    return fn


def _attrs(obj, depth=0):
    """An object's attributes, compared by value (tensors by contents)."""
    out = {}
    for name, v in vars(obj).items():
        if isinstance(v, jitc.Var):
            out[name] = v.numpy().tolist()
        elif hasattr(v, "__dict__") and depth < 3:
            out[name] = _attrs(v, depth + 1)
        else:
            out[name] = (type(v).__name__, v)
    return out


class _Settings:
    def __init__(self, reps=2):
        self.reps, self.n = reps, 2


class _Counted:
    def __init__(self):
        self.n = 0
        self.m = jitc.Var(np.zeros(3, dtype=np.float32))


def test_a_setting_read_into_python_keeps_its_value_without_taking_the_counter_that_staged_with_it():
    """`self.steps` stages relaxed; then a sub-object's setting read by
    `range` changes once: relaxing it fails, and only it goes back to a
    fact by value (before, every relaxed number of the call did, so
    `self.steps` made new facts every call and the function gave up)."""
    class Model:
        def __init__(self):
            # (A sub-layer's tensor read: the objects held deeper are the
            # call's, `self.cfg` too.)
            self.steps, self.cfg, self.layer = 0, _Settings(), _Counted()

    def step(self, x):
        self.steps += 1
        h = x + self.layer.m
        for _ in range(self.cfg.reps):
            h = h * 0.5 + self.steps
        return h

    def before(obj, k):
        if k == 12:
            obj.cfg.reps = 3

    fn = _twins(Model, step, 40, before)
    stats = fn.stats()
    assert stats["give_ups"] == 0 and stats["staged"] >= 30 and stats["relaxations_undone"] == 1, stats
    text = fn.explain()
    assert "graph inputs (relaxed Python numbers): self.steps\n" in text, text
    assert "keep values: self.cfg.reps stays a fact by value" in text, text


def test_a_relaxed_attribute_is_named_by_its_path_so_an_object_argument_does_not_shift_it():
    """A call that passes an object argument puts it before the sub-layers
    among the call's objects; relaxed positions are paths (`self.bn.n`),
    not indices, so the argument's own number (read by `range`) is not
    taken for the counter, and the counter stays a graph input."""
    class Model:
        def __init__(self):
            self.bn = _Counted()

    def step(self, x, cfg=None):
        self.bn.n += 1
        self.bn.m = self.bn.m + x
        h = self.bn.m * self.bn.n
        if cfg is not None:
            for _ in range(cfg.n):
                h = h + 1.0
        return h

    settings = _Settings()
    fn = _twins(Model, step, 30, args=lambda k, obj: (settings,) if k == 8 else ())
    stats = fn.stats()
    assert stats["give_ups"] == 0 and stats["relaxations_undone"] == 0 and stats["staged"] >= 20, stats
    assert "graph inputs (relaxed Python numbers): self.bn.n" in fn.explain()


def test_a_number_is_a_fact_by_type_only_where_it_is_a_graph_input():
    """An object first met deeper than an attribute (`self.a.inner`), whose
    numbers are inputs only where the code names them, is also `self.z`,
    where the facts cover all its attributes: a number relaxed when the
    object was only `self.z` (`hidden`, read through a name held in data)
    stays a fact by value there. It was a fact by type and no input, so
    the graph served its traced value after it changed."""
    class Holder:
        def __init__(self, inner):
            self.inner = inner

    class Hidden:
        def __init__(self):
            self.hidden = 0
            self.w = jitc.Var(np.ones(3, dtype=np.float32))

    class Model:
        def __init__(self):
            self.mode_b, self.key, self.a, self.z = False, "hid" + "den", _Settings(), Hidden()

    def read(o):
        return getattr(o.z, o.key) + 0.0 * o.a.inner.w

    def step(self, x):
        if self.mode_b:
            return x * read(self)
        return x * self.z.w

    def before(obj, k):
        if k < 8:
            obj.z.hidden = k
            return
        if not obj.mode_b:
            obj.mode_b = True
            obj.z = Hidden()
            obj.a = Holder(obj.z)
        obj.z.hidden = 1 if k < 14 else k

    _twins(Model, step, 24, before)


def test_a_relaxed_number_whose_own_attribute_the_code_reads_stays_a_fact():
    """`n.denominator` is an attribute of the number, which a stand-in
    (a `jitc.Var`) did not have: its run raised AttributeError where the
    real one did not, and took another way in Python. It is the number's
    now, read into Python, so the number stays a fact by value."""
    log = []

    class Model:
        def __init__(self):
            self.bn = _Counted()

    def step(self, x):
        self.bn.n += 1
        try:
            bits = self.bn.n.denominator
        except AttributeError:
            log.append(1)
            bits = 0
        return x * bits

    fn = _twins(Model, step, 8)
    assert log == [] and "its value is read into Python (its attribute denominator)" in fn.explain()


def test_what_a_run_on_stand_ins_did_that_the_real_run_did_not_is_a_reason_to_keep_values():
    """A stand-in has what the number has not (`.shape`): a run on it that
    changes a global where the real one did not is caught (the number
    stays a fact by value) instead of being staged."""
    class Box:
        hits = 0

    box = Box()

    class Model:
        def __init__(self):
            self.steps = 0

    def step(self, x):
        self.steps += 1
        try:
            self.steps.shape
            box.hits += 1
        except AttributeError:
            pass
        return x * self.steps

    fn = _twins(Model, step, 8)
    assert "did what the real one did not: it changes the global or closure variable closure box" in fn.explain(), \
        fn.explain()
    assert fn.stats()["relaxations_undone"] == 1


def test_a_change_to_an_object_that_is_a_dict_key_keeps_the_call_imperative():
    """The state a traced call is checked for covers a dict's keys that
    are objects: a call that changes one (`key.count = ...`) is not staged
    (before, a key counted by its `repr`, and served calls left it as it
    was)."""
    class Key:
        def __init__(self):
            self.count = 0

    class Model:
        def __init__(self):
            self.steps, self.table = 0, {Key(): 1.0}

    def step(self, x):
        self.steps += 1
        for key in self.table:
            key.count = 1 - key.count
        return x * self.steps

    fn = jitc.function(step)
    staged, plain = Model(), Model()
    for k in range(10):
        x = np.full(3, float(k), dtype=np.float32)
        np.testing.assert_array_equal(fn(staged, x).numpy(), step(plain, jitc.Var(x)).numpy())
        assert [key.count for key in staged.table] == [key.count for key in plain.table], k
    assert fn.stats()["staged"] == 0 and "changes what the attribute table holds" in fn.explain(), fn.explain()


def test_a_staged_function_does_not_keep_the_objects_of_its_calls_alive():
    """The traces a `jitc.function` keeps hold neither the call's objects
    nor the function: a model dropped by its caller is freed (before, a
    trace's tracer held both, so every model a staged method was called on
    lived as long as the method)."""
    import gc
    import weakref

    class Model:
        def __init__(self):
            self.w, self.n = jitc.Var(np.ones(3, dtype=np.float32)), 0

        def step(self, x):
            self.n += 1
            self.w = self.w * 0.5 + x
            return self.w * self.n

    class Staged(Model):
        step = jitc.function(Model.step)

    model = Staged()
    for k in range(6):
        model.step(np.full(3, float(k), dtype=np.float32)).numpy()
    assert Staged.step.stats()["staged"] >= 1
    dropped = weakref.ref(model)
    del model
    gc.collect()
    assert dropped() is None


class Decaying:
    """Python numbers everywhere: an int counter and a float scale in
    attributes, a float argument, a branch on a tensor and one on a
    relaxed number."""

    def __init__(self):
        self.steps = 0
        self.scale = 1.0
        self.h = jitc.Var(np.zeros(3, dtype=np.float32))

    def __call__(self, x, lr):
        self.steps += 1
        self.h = self.h * (1.0 - lr) + x * self.scale
        if jitc.sum(self.h) > 0:
            out = self.h * lr
        else:
            out = self.h - self.steps
        if lr > 0.05:
            self.scale = self.scale * 0.5
        return out, self.steps


class StagedDecaying(Decaying):
    __call__ = jitc.function(Decaying.__call__, profile=2)


def test_random_calls_with_changing_python_numbers_agree_with_imperative_execution():
    staged, plain = StagedDecaying(), Decaying()
    rng = np.random.default_rng(3)
    for k in range(30):
        x = rng.standard_normal(3).astype(np.float32)
        lr = float(rng.choice([0.01, 0.02, 0.1, 0.2]))
        if k % 7 == 6:
            staged.scale = plain.scale = float(rng.choice([1.0, 3.0]))
        got, steps = staged(x, lr)
        want, want_steps = plain(jitc.Var(x), lr)
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-5, atol=1e-6)
        assert steps == want_steps and type(steps) is int
        assert (staged.steps, staged.scale) == (plain.steps, plain.scale), (staged.scale, plain.scale)
        assert type(staged.scale) is float and type(staged.steps) is int
        np.testing.assert_allclose(staged.h.numpy(), plain.h.numpy(), rtol=1e-5, atol=1e-6)
    stats = StagedDecaying.__call__.stats()
    assert stats["calls"] == 30 and stats["relaxations"] >= 2 and stats["staged"] > 0, stats


def test_a_mutable_python_attribute_write_or_a_delete_stays_imperative():
    class Log:
        def __init__(self):
            self.seen = ()
            self.scratch = 1

        @jitc.function(profile=1)
        def add(self, x):
            self.seen = [1]
            return x * 2.0

        @jitc.function(profile=1)
        def drop(self, x):
            if hasattr(self, "scratch"):
                del self.scratch
            return x

    log = Log()
    for _ in range(3):
        log.add(np.ones(2, dtype=np.float32))
        log.drop(np.ones(2, dtype=np.float32))
    assert log.seen == [1] and not hasattr(log, "scratch")
    assert "sets the attribute seen to a list, a mutable Python value" in Log.add.explain(), Log.add.explain()
    assert "deletes the attribute scratch" in Log.drop.explain(), Log.drop.explain()


def shrink(x, w):
    base = x + 1.0
    while jitc.max(x) > 1:
        x = x * 0.5 + w
    return x * 2.0 + base


def test_a_while_loop_on_a_tensor_is_staged_as_one_scf_while():
    fn = jitc.function(shrink, profile=2)
    rng = np.random.default_rng(5)
    w = (rng.standard_normal(3) * 0.1).astype(np.float32)
    # The first two calls run the loop 6 and 2 times; the later ones from 0
    # to 17 times, counts no trace saw, all served by the one graph.
    tops = [40.0, 3.0] + [float(t) for t in rng.choice([0.5, 3.0, 40.0, 1e5], size=10)]
    for top in tops:
        x = (rng.random(3) * top).astype(np.float32)
        x[0] = top
        want = shrink(jitc.Var(x), jitc.Var(w)).numpy()
        np.testing.assert_array_equal(fn(x, w).numpy(), want)
    stats = fn.stats()
    assert stats["staged"] == 10 and stats["fallbacks"] == 0 and stats["staged_graphs"] == 1, stats
    assert "with the loop at test_function.py" in jitc.explain(fn) and "as an scf.while" in jitc.explain(fn)


def _step_alike(staged, plain, x):
    """`step` on `x` staged and on its plain twin: the same result, or
    both raise ZeroDivisionError (then True)."""
    try:
        want = plain.step(jitc.Var(x)).numpy()
    except ZeroDivisionError:
        with pytest.raises(ZeroDivisionError):
            staged.step(x)
        return True
    np.testing.assert_array_equal(staged.step(x).numpy(), want)
    return False


class Halving:
    """Counts the halvings of all its calls in a Python attribute, and
    adds a term that divides by zero when the count reaches `limit`."""

    def __init__(self, limit):
        self.count, self.limit = 0, limit

    def step(self, x):
        h = x
        while jitc.max(h) > 0.25:
            h = h * 0.5 + 0.01 / (self.limit - self.count)
            self.count += 1
        return h


class StagedHalving(Halving):
    step = jitc.function(Halving.step)


def test_a_while_loop_that_counts_in_a_python_attribute_folds():
    """`self.count += 1` in the loop: the counter is relaxed (a graph
    input), so the loop's Python state is the same at every test and it
    folds, the count carried by the `scf.while`. Its guards (an int within
    2**62, a divisor that is not zero) are checked in every iteration:
    when the count reaches the limit in a served call, the guard fails,
    nothing is committed, and the imperative rerun raises
    ZeroDivisionError as the plain call does (leaving the count it had
    reached)."""
    staged, plain = StagedHalving(100), Halving(100)
    rng = np.random.default_rng(3)
    raised = 0
    for k in range(30):
        x = (rng.random(3) * 2.0 ** int(rng.integers(0, 9))).astype(np.float32)
        raised += _step_alike(staged, plain, x)
        assert staged.count == plain.count and type(staged.count) is int, k
    # (From the call that reaches the limit on, every call raises.)
    assert plain.count == 100 and raised >= 2, (plain.count, raised)
    stats = StagedHalving.step.stats()
    text = StagedHalving.step.explain()
    assert "as an scf.while" in text and "graph inputs (relaxed Python numbers): self.count" in text, text
    assert stats["staged"] >= 10 and stats["fallbacks"] >= 1, stats


class Rated:
    """Divides by a relaxed number and by nothing else the result needs:
    Python raises at the division all the same."""

    def __init__(self, limit, loop):
        self.count, self.limit, self.loop = 0, limit, loop

    def step(self, x):
        h = x
        if self.loop:
            while jitc.max(h) > 0.25:
                rate = 0.01 / (self.limit - self.count)
                del rate
                h = h * 0.5
                self.count += 1
        else:
            rate = 0.01 / (self.limit - self.count)
            del rate
            h = h * 0.5
            self.count += 1
        return h


class StagedRated(Rated):
    step = jitc.function(Rated.step)


@pytest.mark.parametrize("loop", [True, False])
def test_a_relaxed_numbers_check_is_kept_where_nothing_reads_its_value(loop):
    """A relaxed number's checks stand for what Python raises at once (a
    division by zero): staged graphs keep them where the value they guard
    is dropped (a folded loop's body, a straight piece), so the served call
    falls back and the imperative rerun raises ZeroDivisionError. Before,
    the check went with the value, and served calls counted past the
    limit."""
    # (The loop runs 3 or 4 times a call.)
    limit = 100 if loop else 24
    staged, plain = StagedRated(limit, loop), Rated(limit, loop)
    raised = 0
    for k in range(40):
        raised += _step_alike(staged, plain, np.full(3, 2.0 + k % 3, dtype=np.float32))
        assert staged.count == plain.count, (k, staged.count, plain.count)
    assert raised >= 2 and StagedRated.step.stats()["staged"] >= 5, (raised, StagedRated.step.stats())


def counted(x):
    steps = 0
    while jitc.max(x) > 1:
        x = x * 0.5
        steps += 1
    return x, steps


def broken(x):
    for _ in range(100):
        if jitc.max(x) <= 1:
            break
        x = x * 0.5
    return x


def newton(a):
    x = a
    for _ in range(6):
        update = 0.5 * (x + a / x) - x
        x = x + update
        if jitc.max(abs(update)) < 1e-3:
            break
    return x


def test_a_for_loop_ended_by_a_break_on_a_tensor_is_one_scf_while_with_a_counter():
    # The body ends with `if ...: break`, and the loop runs over range(6):
    # one scf.while that stops on the break or after 6 iterations. Small
    # inputs break after 3-4 iterations, large ones run out of the range.
    fn = jitc.function(newton, profile=2)
    rng = np.random.default_rng(7)
    for scale in [2.0, 3.0, 2.0, 1e6, 5.0, 1e8, 1.5, 1e7]:
        a = ((rng.random(4) + 1.0) * scale).astype(np.float32)
        np.testing.assert_array_equal(fn(a).numpy(), newton(jitc.Var(a)).numpy())
    stats = fn.stats()
    assert stats["staged"] == 6 and stats["fallbacks"] == 0, stats
    assert "as an scf.while" in jitc.explain(fn), jitc.explain(fn)


def pulled(x):
    factors = iter([0.5] * 100)
    while jitc.max(x) > 1:
        x = x * next(factors)
    return x


def indexed(x):
    for step in range(100):
        x = x * 0.5 if step < 3 else x * 0.25
        if jitc.max(x) <= 1:
            break
    return x


def two_back(x, c, limit):
    # `a` reads what `b` held two iterations ago; with `a = b = x` a trace
    # of two iterations cannot tell that from reading `x` again.
    a = b = x
    while jitc.sum(b + c) < limit:
        a, b = b, a * 2.0
        c = c + 1.0
    return c


def flagged(x):
    # Served with no iteration, the flag must stay 0.
    flag = 0
    while jitc.sum(x) < 100.0:
        x = x * 2.0
        flag = 1
    return x, flag


class Box:
    def __init__(self):
        self.n = 0


def boxed(x):
    # State the loop changes in an object that is neither self nor an
    # argument.
    box = Box()
    while jitc.sum(x) < 100.0:
        x = x * 2.0
        box.n += 1
    return x, box.n


def one_line(x):
    # A decision of the body on the test's line is not a loop test.
    while (x := x * 2.0).sum() < 100.0: x = x if (x := x * 2.0).sum() < 100.0 else x * 3.0  # noqa: E701
    return x


@pytest.mark.parametrize("fn,calls", [
    (two_back, [(1.0, 3.5), (1.0, 3.6), (1.0, 20.0), (1.0, 50.0)]),
    (flagged, [3.0, 5.0, 7.0, 200.0, 1.0]),
    (boxed, [3.0, 5.0, 0.5, 200.0, 1.0]),
    (one_line, [1.0, 1.5, 0.2, 0.75]),
])
def test_loops_the_review_found_folded_wrongly_now_agree_with_imperative_execution(fn, calls):
    staged = jitc.function(fn, profile=2)
    for call in calls:
        if fn is two_back:
            args = [np.array([call[0]], np.float32), np.array([0.0], np.float32), jitc.Var(np.float32(call[1]))]
        else:
            args = [np.full(2, call, np.float32)]
        got = staged(*args)
        want = fn(*[jitc.Var(a) if isinstance(a, np.ndarray) else a for a in args])
        got, want = (got, want) if isinstance(want, tuple) else ((got,), (want,))
        for g, w in zip(got, want):
            if isinstance(w, jitc.Var):
                np.testing.assert_array_equal(g.numpy(), w.numpy())
            else:
                assert g == w and type(g) is type(w)


@pytest.mark.parametrize("fn", [counted, broken, pulled, indexed])
def test_loops_that_python_state_could_end_are_not_folded(fn):
    # A Python counter the loop changes (and returns), a `for` loop whose
    # `break` is not the end of its body (the loop's rest would run after
    # the test), a `next()` in the loop, a `for` loop whose body reads its
    # target (its fourth iteration does something else than its first
    # three, which the first traces cannot show): each iteration may do something
    # else in Python, or the loop is not one scf.while can be cut from, so
    # each trip count stays a path of its own (guards, fallbacks), and
    # every result is still the imperative one.
    staged = jitc.function(fn, profile=2)
    for top in [40.0, 3.0, 40.0, 9.0, 3.0]:
        x = np.array([top, 0.25], dtype=np.float32)
        got, want = staged(x), fn(jitc.Var(x))
        if isinstance(want, tuple):
            assert got[1] == want[1]
            got, want = got[0], want[0]
        np.testing.assert_array_equal(got.numpy(), want.numpy())
    assert "scf.while" not in jitc.explain(staged), jitc.explain(staged)


def test_a_raise_under_a_tensor_condition_is_raised_by_the_imperative_rerun():
    @jitc.function(profile=1)
    def checked(x):
        if jitc.min(x) < 0:
            raise ValueError("negative input")
        return jitc.unary(x, "sqrt")

    for _ in range(2):
        checked(np.ones(4, dtype=np.float32))
    assert checked.stats()["staged"] == 1
    with pytest.raises(ValueError, match="negative input"):
        checked(np.full(4, -1.0, dtype=np.float32))
    assert checked.stats()["fallbacks"] == 1 and checked.stats()["raised"] == 1
    assert "raised: ValueError: negative input" in checked.explain()
    # Nothing was staged from the raising call: the graph still serves.
    np.testing.assert_array_equal(checked(np.full(4, 4.0, dtype=np.float32)).numpy(), np.full(4, 2.0))
    assert checked.stats()["staged"] == 2 and checked.stats()["give_ups"] == 0


def test_figure_1_rnn_trains_with_changing_lengths_as_the_imperative_model():
    module = load_example("janus_rnn")
    staged, plain = module.StagedRNN(inputs=4, hidden=5, batch=2), module.RNNModel(inputs=4, hidden=5, batch=2)
    for sequence, target in module.batches(9, batch=2, inputs=4, hidden=5, lengths=(2, 3)):
        a = staged(sequence, target, 0.1).item()
        b = plain(sequence, target, 0.1).item()
        assert abs(a - b) <= 1e-5
        for name in ("w", "u", "b", "state"):
            np.testing.assert_allclose(getattr(staged, name).numpy(), getattr(plain, name).numpy(),
                                       rtol=1e-5, atol=1e-6, err_msg=name)
    stats = module.StagedRNN.__call__.stats()
    assert stats["staged_graphs"] == 2 and stats["staged"] > 0 and stats["fallbacks"] == 0


def test_the_rnn_on_random_lengths_and_rates_keeps_every_attribute_as_the_imperative_model():
    """Random sequences of calls that change shapes (the length), a
    Python number (the learning rate, relaxed into a graph input) and the
    object's state, compared after every call."""
    module = load_example("janus_rnn")
    staged, plain = module.StagedRNN(inputs=3, hidden=4, batch=2), module.RNNModel(inputs=3, hidden=4, batch=2)
    rng = np.random.default_rng(7)
    for _ in range(16):
        length = int(rng.choice([1, 2, 3]))
        sequence = rng.standard_normal((length, 2, 3), dtype=np.float32)
        target = rng.standard_normal((2, 4), dtype=np.float32)
        lr = float(rng.choice([0.05, 0.1]))
        a = staged(sequence, target, lr).item()
        b = plain(sequence, target, lr).item()
        assert abs(a - b) <= 1e-5 * max(1.0, abs(b))
        for name in ("w", "u", "b", "state"):
            np.testing.assert_allclose(getattr(staged, name).numpy(), getattr(plain, name).numpy(),
                                       rtol=1e-5, atol=1e-6, err_msg=name)
    stats = module.StagedRNN.__call__.stats()
    # Three lengths, three graphs; the rate became an input on its first
    # change, so it made no new facts.
    assert stats["calls"] == 16 and stats["staged"] == 5 and stats["staged_graphs"] == 3, stats
    assert stats["relaxations"] == 1 and stats["fallbacks"] == 0, stats


def test_the_autograph_example_serves_every_trip_count_from_one_scf_while():
    module = load_example("autograph_while")
    worst, error = module.main()
    # The staged loop runs the same f32 ops in the same order as the
    # imperative one; a compiled kernel may contract to FMA, hence not 0.
    assert worst <= 1e-6 and error < 1e-3
    stats = module.square_root.stats()
    assert stats["fallbacks"] == 0 and stats["staged"] == 12 - 3, stats
    assert "as an scf.while" in module.square_root.explain()


def test_the_batch_norm_example_agrees_with_its_imperative_twin_and_is_served_in_both_modes():
    module = load_example("janus_batchnorm")
    assert module.main(calls=16) < 1e-5
    # Modes by call: 5 training, 3 eval, 5 training, 3 eval. Call 1 finds
    # that the call rebinds the sub-layer's attributes, call 2 runs its
    # code for the first time: profiling starts again after each. Call 4
    # sees the count of batches change: it becomes a graph input (one
    # relaxation, not a new set of facts per call). Each mode is its own
    # facts, profiled 3 times (training: calls 3-5 and 9; eval: 6-8),
    # then served: 4 + 3.
    stats = module.StagedNormalized.__call__.stats()
    assert stats["staged_graphs"] == 2 and stats["fallbacks"] == 0 and stats["give_ups"] == 0, stats
    assert stats["staged"] == 7 and stats["traced"] == 9 and stats["relaxations"] == 1, stats
    text = module.StagedNormalized.__call__.explain()
    assert "graph inputs (relaxed Python numbers): self.bn.num_batches_tracked" in text, text


def test_alternating_paths_are_served_by_the_merged_graph_without_fallbacks():
    module = load_example("terra_alternating")
    assert module.main(count=12) < 1e-6
    merged, tree, single = module.merged.stats(), module.tree.stats(), module.single.stats()
    assert merged["fallbacks"] == 0 and merged["staged"] == 12 - 3
    assert "one graph merged from 3 traces" in module.merged.explain()
    assert tree["fallbacks"] == 0 and tree["staged"] == 12 - 3
    assert "(both ways traced)" in module.tree.explain()
    # The single speculated path falls back on every change of path.
    assert single["fallbacks"] == 12 - 3 and single["staged"] == 0


def test_guards_from_python():
    x = jitc.Var(np.array(2.0, dtype=np.float32))
    ok = jitc.guard(x > 1.0, "x above 1")
    assert bool(ok.numpy())
    with pytest.raises(jitc.GuardFailed, match="x above 3"):
        jitc.guard(x > 3.0, "x above 3").numpy()
    with pytest.raises(jitc.JitcError, match="rank-0 i1"):
        jitc.guard(jitc.Var(np.ones(2, dtype=np.float32)), "not a condition")


# -- what a review of relaxation and loop staging found ------------------------


class Counted:
    def __init__(self, n=0):
        self.n = n


class Sub:
    def __init__(self):
        self.calls = 0


class Model:
    def __init__(self):
        self.scale = 1.0
        self.sub = Sub()

    def step(self, x):
        self.sub.calls += 1
        return x * self.scale


class StagedModel(Model):
    step = jitc.function(Model.step, profile=2)


class Config:
    scale = 1.0


CONFIG = Config()


def _outcome(fn, args):
    try:
        value = fn(*args)
    except Exception as e:  # noqa: BLE001 -- the kind of error is compared
        return ("raises", type(e).__name__)
    values = value if isinstance(value, tuple) else (value,)
    return ("ok", [v.numpy().tolist() if isinstance(v, jitc.Var) else (type(v).__name__, v) for v in values])


def ratio(x, n, m):
    return x * (n / m)


def square(x, n):
    return x * (n * n)


def shifted(x, n):
    return x.astype(np.int32) + n


def both(x, a, b):
    a.n = a.n + 1
    b.n = b.n + 1
    return x * 2.0


def scaled_by_config(x):
    return x * CONFIG.scale


def scaled_by(x, s):
    return x * s


@pytest.mark.parametrize("fn,calls", [
    # Division by a relaxed number that is zero raises, as Python does.
    (ratio, [(1, 2), (3, 4), (5, 6), (7, 0), (1.0, 0.0), (2, 3)]),
    # An int product past 64 bits is Python's big int, not a wrapped one.
    (square, [(2,), (3,), (4,), (2**40,), (5,)]),
    # An int that does not fit int32 raises where NumPy raises.
    (shifted, [(1,), (2,), (3,), (2**31,), (4,)]),
])
def test_relaxed_numbers_raise_and_overflow_as_python_does(fn, calls):
    staged = jitc.function(fn, profile=2)
    x = np.full(2, 3.0, np.float32)
    for call in calls:
        got = _outcome(staged, (x, *call))
        want = _outcome(fn, (jitc.Var(x), *call))
        assert got == want, (call, got, want)


def test_objects_passed_twice_nested_state_numpy_scalars_and_global_objects_agree():
    x = np.ones(2, np.float32)
    # One object passed for two parameters is another fact than two.
    staged = jitc.function(both, profile=2)
    for k in range(4):
        staged(x, Counted(k), Counted(k))
    a, b = Counted(7), Counted(7)
    staged(x, a, a)
    both(jitc.Var(x), b, b)
    assert a.n == b.n == 9
    # An attribute's own attribute rebound (a counter in `self.sub`): the
    # first call reprofiles with `self.sub` among the call's objects, whose
    # counter is then set after each call (and is a fact by value, so no
    # graph serves a stale one): every call counts.
    model, plain = StagedModel(), Model()
    for k in range(4):
        model.scale = plain.scale = 1.0 + k
        model.step(x)
        plain.step(jitc.Var(x))
        assert model.sub.calls == plain.sub.calls == k + 1
    assert "rebinds an attribute, held deeper" in StagedModel.step.explain()
    assert StagedModel.step.stats()["staged"] == 0
    # A NumPy scalar is a fact by value (its address is reused).
    staged = jitc.function(scaled_by, profile=2)
    for k in range(6):
        s = np.float32(k)
        np.testing.assert_array_equal(staged(x, s).numpy(), np.full(2, k, np.float32))
        del s
    # An attribute of a global object is a fact.
    staged = jitc.function(scaled_by_config, profile=2)
    for scale in [1.0, 1.0, 3.0, 3.0, 5.0]:
        CONFIG.scale = scale
        np.testing.assert_array_equal(staged(x).numpy(), np.full(2, scale, np.float32))


# -- state the function reaches beyond its own code's names ---------------------
# Each of these was staged with the first traces' value baked in, and
# later calls returned it after the state had changed.

HELPER_SCALE = 1.0
HELPER_TABLE = np.ones(4, dtype=np.float32)


def _scaled_by_helper(x):
    return x * HELPER_SCALE


def through_helper(x):
    return _scaled_by_helper(x)


def by_table(x):
    return x * HELPER_TABLE


class Settings:
    gain = 1.0


def by_class_attribute(x):
    return x * Settings.gain


class Gained:
    gain = 1.0

    def __call__(self, x):
        return x * self.gain


class StagedGained(Gained):
    __call__ = jitc.function(Gained.__call__, profile=2)


def _agree(staged, plain, x, change, rounds=6):
    for k in range(rounds):
        change(float(k // 3))
        np.testing.assert_array_equal(staged(x).numpy(), plain(jitc.Var(x)).numpy())


def test_globals_read_by_helpers_module_and_class_attributes_and_array_contents_are_facts():
    x = np.arange(4, dtype=np.float32)

    def set_scale(v):
        global HELPER_SCALE
        HELPER_SCALE = v

    def set_table(v):
        HELPER_TABLE[:] = v  # in place: the same array, other contents

    def set_gain(v):
        Settings.gain = v

    def set_class_gain(v):
        Gained.gain = v

    cases = [
        (through_helper, set_scale),
        (by_table, set_table),
        (by_class_attribute, set_gain),
    ]
    for fn, change in cases:
        staged = jitc.function(fn, profile=2)
        _agree(staged, fn, x, change)
        # Two values, three calls each: each its own facts, profiled twice
        # and then served.
        stats = staged.stats()
        assert stats["staged"] == 2 and stats["fallbacks"] == 0, (fn.__name__, stats)
    # A class attribute read through self.
    staged, plain = StagedGained(), Gained()
    _agree(staged, plain, x, set_class_gain)
    assert StagedGained.__call__.stats()["staged"] > 0


SHARED_ITERATOR = iter(range(1000))


def draws(x):
    return x * next(SHARED_ITERATOR)


def test_a_call_that_advances_an_iterator_stays_imperative():
    global SHARED_ITERATOR
    staged = jitc.function(draws, profile=2)
    x = np.ones(3, dtype=np.float32)
    SHARED_ITERATOR = iter(range(1000))
    got = [staged(x).numpy()[0] for _ in range(6)]
    assert got == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]
    assert staged.stats()["give_ups"] == 1
    assert "changes the global or closure variable" in staged.explain() and "SHARED_ITERATOR" in staged.explain()


LOG_STREAM = io.StringIO("1\n2\n3\n4\n5\n6\n7\n8\n")


def logged(x):
    return x if LOG_STREAM is None else x * 2.0


def reads_a_line(x):
    return x * float(next(LOG_STREAM))


def test_a_stream_held_by_a_global_is_state_by_its_position():
    """A stream (a file, `io.StringIO`) is an iterator whose position is
    `tell()`: a call that only names it is staged, and one that reads a
    line from it (`next`) stays imperative, since it changes the global."""
    staged, reading = jitc.function(logged, profile=2), jitc.function(reads_a_line, profile=2)
    x = np.ones(2, dtype=np.float32)
    for k in range(6):
        np.testing.assert_array_equal(staged(x).numpy(), x * 2.0)
        np.testing.assert_array_equal(reading(x).numpy(), x * (k + 1))
    assert staged.stats()["staged"] == 4, staged.explain()
    assert reading.stats()["staged"] == 0, reading.explain()
    assert "changes the global or closure variable" in reading.explain() and "LOG_STREAM" in reading.explain()


NEXT_NUMBER = iter([1.0, 2.0, 3.0, 4.0, 5.0, 6.0]).__next__
NUMBERS = {"w": 2.0}
SET_NUMBER = NUMBERS.__setitem__


def test_a_method_wrapper_held_by_a_global_is_state_by_its_object():
    """`it.__next__` or `table.__setitem__` held by a global (a
    method-wrapper, whose calls the tracer does not see): what its object
    holds is compared before and after a traced call, so a call that
    changes it stays imperative, never served stale."""
    drawn = jitc.function(lambda x: x * NEXT_NUMBER(), profile=2)
    setting = jitc.function(lambda x: (SET_NUMBER("w", 5.0), x * 2.0)[1], profile=2)
    x = np.ones(1, dtype=np.float32)
    assert [float(drawn(x).numpy()[0]) for _ in range(6)] == [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]
    for _ in range(6):
        NUMBERS["w"] = 2.0
        setting(x)
        assert NUMBERS["w"] == 5.0
    for fn, name in [(drawn, "NEXT_NUMBER"), (setting, "SET_NUMBER")]:
        assert fn.stats()["staged"] == 0 and f"changes the global or closure variable {__name__}.{name}" in fn.explain()


def test_a_method_named_like_a_pure_builtin_is_not_taken_for_one():
    import queue

    items = queue.SimpleQueue()
    for k in range(10):
        items.put(float(k))

    def take(x):
        return x * items.get()

    staged = jitc.function(take, profile=2)
    x = np.ones(2, dtype=np.float32)
    assert [staged(x).numpy()[0] for _ in range(5)] == [0.0, 1.0, 2.0, 3.0, 4.0]
    assert "it calls get(), which may have side effects" in staged.explain()
    # `dict.get` is still pure.
    table = {"w": 2.0}
    staged = jitc.function(lambda x: x * table.get("w"), profile=2)
    for _ in range(4):
        np.testing.assert_array_equal(staged(x).numpy(), x * 2.0)
    assert staged.stats()["staged"] == 2


class _Config:
    def __init__(self, scale):
        self.scale, self.calls = scale, 0


@jitc.function
def _scaled_by(x, cfg):
    return x * cfg.scale


_DEFAULT_CONFIG = _Config(2.0)


def _with_default(x, cfg=_DEFAULT_CONFIG, *, count=_DEFAULT_CONFIG):
    count.calls += 1
    return _scaled_by(x, cfg) + 1.0


def test_an_object_default_is_one_of_the_calls_objects():
    """An object a parameter defaults to (`cfg=CONFIG`, keyword-only too)
    is one of the call's objects, as if passed: a nested `jitc.function`
    called on it is part of the call (it used to keep the caller
    imperative), its attributes are facts (a changed scale is profiled
    anew), and rebinding one is state of the graph."""
    staged = jitc.function(_with_default)
    x = np.arange(3, dtype=np.float32)
    for k in range(10):
        _DEFAULT_CONFIG.scale = 2.0 if k < 6 else 3.0
        before = _DEFAULT_CONFIG.calls
        np.testing.assert_array_equal(staged(x).numpy(), x * _DEFAULT_CONFIG.scale + 1.0)
        assert _DEFAULT_CONFIG.calls == before + 1
    # Passed explicitly, another object is used instead.
    other = _Config(5.0)
    np.testing.assert_array_equal(staged(x, other, count=other).numpy(), x * 5.0 + 1.0)
    assert other.calls == 1
    stats = staged.stats()
    assert stats["staged"] >= 3 and stats["give_ups"] == 0, staged.explain()


LOOKUP_TABLE = {"w": 2.0}
LOOKUP = LOOKUP_TABLE.get


def looked_up(x):
    return x * LOOKUP("w")


class Pushing:
    def __init__(self, table):
        self.get = table.get

    @jitc.function(profile=2)
    def __call__(self, x):
        return x * self.get("w")


def test_a_builtin_method_held_by_a_global_or_an_attribute_is_a_fact_by_its_object():
    """`LOOKUP = LOOKUP_TABLE.get` (or `self.get = table.get`) is a fact by
    what the table holds, not by the method's identity: a graph staged
    while the table held 2.0 does not serve a call after it holds 3.0."""
    staged = jitc.function(looked_up, profile=2)
    table = {"w": 2.0}
    model = Pushing(table)
    x = np.arange(3, dtype=np.float32)
    for k in range(10):
        LOOKUP_TABLE["w"] = table["w"] = 2.0 if k < 5 else 3.0
        np.testing.assert_array_equal(staged(x).numpy(), x * LOOKUP_TABLE["w"])
        np.testing.assert_array_equal(model(x).numpy(), x * table["w"])
    for fn in (staged, Pushing.__call__):
        stats = fn.stats()
        assert stats["staged"] == 6 and stats["staged_graphs"] == 2 and stats["give_ups"] == 0, fn.explain()
    LOOKUP_TABLE["w"] = 2.0
    # A method of a table made anew for each call: the same facts each
    # time (by identity, a new fact per call, and the function would give up).
    staged = jitc.function(lambda x, get: x * get("w"), profile=2)
    for _ in range(6):
        np.testing.assert_array_equal(staged(x, {"w": 3.0}.get).numpy(), x * 3.0)
    assert staged.stats()["staged"] == 4 and staged.stats()["give_ups"] == 0, staged.explain()


class Layered:
    def scale(self):
        return HELPER_SCALE

    def __call__(self, x):
        return x * self.scale()


class StagedLayered(Layered):
    __call__ = jitc.function(Layered.__call__, profile=2)


def test_code_first_seen_in_a_traced_call_starts_profiling_again():
    global HELPER_SCALE
    HELPER_SCALE = 1.0
    staged, plain = StagedLayered(), Layered()
    x = np.arange(3, dtype=np.float32)
    for k in range(8):
        HELPER_SCALE = 2.0 if k >= 5 else 1.0
        np.testing.assert_array_equal(staged(x).numpy(), plain(jitc.Var(x)).numpy())
    # Call 1 finds the method `scale`, which reads a global: its facts are
    # dropped; calls 2-3 profile; 4-5 are served; 6 has new facts and
    # profiles with 7; 8 is served.
    assert StagedLayered.__call__.stats() == {
        "calls": 8, "staged": 3, "traced": 5, "imperative": 0, "staged_graphs": 2,
        "restaged": 0, "fallbacks": 0, "give_ups": 0, "relaxations": 0, "relaxations_undone": 0,
        "reprofiles": 1, "raised": 0,
    }
    assert "the call ran scale" in StagedLayered.__call__.explain()


def test_an_argument_that_contains_itself_is_a_reason_not_a_crash():
    nested = []
    nested.append(nested)
    staged = jitc.function(lambda x, n: x * 2.0, profile=2)
    x = np.ones(2, dtype=np.float32)
    for _ in range(3):
        np.testing.assert_array_equal(staged(x, nested).numpy(), x * 2.0)
    assert "cannot be compared between calls" in staged.explain()


def test_explain_lists_every_event_not_only_the_last_ten():
    staged = jitc.function(branchy, profile=1, merge=False, max_fallbacks=100)
    w = jitc.Var(np.eye(3, 2, dtype=np.float32))
    for k in range(16):
        sign = 1.0 if k % 2 else -1.0
        staged(np.full((2, 3), sign, dtype=np.float32), w, 1.0)
    stats, text = staged.stats(), staged.explain()
    assert stats["fallbacks"] == 15, stats
    listed = [line for line in text.splitlines() if line.startswith("  fallback: ")]
    counted = sum(int(line.rsplit("(", 1)[1].split()[0]) if line.endswith("in a row)") else 1 for line in listed)
    assert counted == 15, text


COUNTS = np.zeros(100, dtype=np.float32)


def counted(x):
    COUNTS[:] += 1.0  # in place, on a global array larger than 64 elements
    return x * 2.0


def test_a_call_that_changes_a_large_global_array_in_place_stays_imperative():
    staged = jitc.function(counted, profile=2)
    x = np.ones(2, dtype=np.float32)
    for _ in range(4):
        staged(x)
    assert COUNTS[0] == 4.0
    assert staged.stats()["give_ups"] == 1
    assert "changes the global or closure variable" in staged.explain()


SETTINGS = Settings()


def by_default(x, settings=SETTINGS, *, table=[1.0]):  # noqa: B006 -- the mutable default is the point
    return x * settings.gain * table[0]


def test_default_argument_values_are_facts():
    staged = jitc.function(by_default, profile=2)
    x = np.arange(3, dtype=np.float32)

    def change(v):
        SETTINGS.gain = v  # an attribute of a default object (shadows the class's)
        by_default.__kwdefaults__["table"][0] = v + 1.0  # a default list, in place

    _agree(staged, by_default, x, change)
    assert staged.stats()["staged"] == 2 and staged.stats()["fallbacks"] == 0


ALIASED = jitc.Var(np.full(3, 5.0, dtype=np.float32))


def plus_aliased(x):
    return x + ALIASED


def test_a_global_var_that_is_the_argument_in_some_calls_is_not_taken_for_it():
    staged = jitc.function(plus_aliased, profile=2)
    other = jitc.Var(np.full(3, 1.0, dtype=np.float32))
    for x in [ALIASED, ALIASED, ALIASED, other]:
        np.testing.assert_array_equal(staged(x).numpy(), plus_aliased(x).numpy())


FLAGS = set()
BUFFER = bytearray(b"\x01")
QUEUE = collections.deque([1.0])


def by_containers(x):
    return x * (2.0 if "double" in FLAGS else 1.0) * float(BUFFER[0]) * QUEUE[0]


def test_sets_bytearrays_and_deques_are_facts_by_contents():
    staged = jitc.function(by_containers, profile=2)
    x = np.ones(2, dtype=np.float32)

    def change(v):
        FLAGS.clear()
        if v:
            FLAGS.add("double")
        BUFFER[0] = int(v) + 1
        QUEUE[0] = v + 1.0

    _agree(staged, by_containers, x, change)
    assert staged.stats()["staged"] == 2


class Marks:
    def __init__(self):
        self.n = 0

    def mark(self, x, n):
        self.n = n
        return None


class StagedMarks(Marks):
    mark = jitc.function(Marks.mark, profile=2)


def test_a_trace_with_no_tensor_outputs_is_staged():
    # Its graph has no results; it used to print `return  :`, which did
    # not parse, and the function went imperative with "a jitc bug".
    staged = jitc.function(lambda x: 1.5, profile=2)
    x = np.ones(3, dtype=np.float32)
    assert [staged(x) for _ in range(3)] == [1.5, 1.5, 1.5]
    assert staged.stats()["staged"] == 1 and staged.stats()["give_ups"] == 0, staged.explain()
    marks = StagedMarks()
    for n in [3, 3, 3, 4, 4, 4]:
        assert marks.mark(x, n) is None and marks.n == n
    assert StagedMarks.mark.stats()["give_ups"] == 0 and StagedMarks.mark.stats()["staged"] > 0


# -- state reached through more than names: a review's probes -----------------


class Holder:
    pass


DEEP = Holder()
DEEP.a = Holder()
DEEP.a.b = Holder()
DEEP.a.b.c = 1.0


def deep_read(x):
    return x * DEEP.a.b.c


class Base:
    k = 1.0


class Derived(Base):
    k = 10.0

    def read(self, x):
        return x * super().k


DERIVED = Derived()


def super_read(x):
    return DERIVED.read(x)


class Named:
    value = 1.0


def constant_getattr(x):
    return x * getattr(Named, "value")


class Slotted:
    __slots__ = ("k",)

    def __init__(self):
        self.k = 1.0


SLOTTED = Slotted()


def slots_read(x):
    return x * SLOTTED.k


def _counter_factory():
    box = Holder()
    box.k = 1.0

    def scaled(x):
        return x * box.k
    return scaled, box


HELPER_WITH_CLOSURE, CLOSED_BOX = _counter_factory()


def closure_helper(x):
    return HELPER_WITH_CLOSURE(x)


class Scaler:
    def __init__(self):
        self.k = 1.0

    def apply(self, x):
        return x * self.k


SCALER = Scaler()
BOUND = SCALER.apply
PARTIAL_BOX = Holder()
PARTIAL_BOX.k = 1.0


def _times(box, x):
    return x * box.k


PARTIAL = functools.partial(_times, PARTIAL_BOX)


def bound_method(x):
    return BOUND(x)


def partial_call(x):
    return PARTIAL(x)


class WithDefault:
    def helper(self, x, box=PARTIAL_BOX):
        return x * box.k

    def __call__(self, x):
        return self.helper(x)


WITH_DEFAULT = WithDefault()


def method_default(x):
    return WITH_DEFAULT(x)


def _set(holder, name):
    return lambda v: setattr(holder, name, v)


@pytest.mark.parametrize("fn,change", [
    (deep_read, _set(DEEP.a.b, "c")),
    (super_read, _set(Base, "k")),
    (constant_getattr, _set(Named, "value")),
    (slots_read, _set(SLOTTED, "k")),
    (closure_helper, _set(CLOSED_BOX, "k")),
    (bound_method, _set(SCALER, "k")),
    (partial_call, _set(PARTIAL_BOX, "k")),
    (method_default, _set(PARTIAL_BOX, "k")),
], ids=lambda p: getattr(p, "__name__", ""))
def test_state_reached_through_attributes_closures_and_bound_callables_is_a_fact(fn, change):
    staged = jitc.function(fn, profile=2)
    _agree(staged, fn, np.arange(3, dtype=np.float32), change, rounds=9)
    assert staged.stats()["staged"] > 0 and staged.stats()["fallbacks"] == 0, staged.explain()


def test_a_function_argument_is_a_fact_with_what_its_closure_holds():
    box = Holder()
    box.k = 1.0

    def apply(x, fn):
        return fn(x)

    staged = jitc.function(apply, profile=2)
    scaled = lambda t: t * box.k  # noqa: E731
    x = np.arange(3, dtype=np.float32)
    for k in range(9):
        box.k = float(k // 3)
        np.testing.assert_array_equal(staged(x, scaled).numpy(), apply(jitc.Var(x), scaled).numpy())


def times_number(x, n):
    return x * n


def negated(x, n):
    return x, -n, abs(n)


def test_relaxed_ints_round_and_negate_as_python_and_numpy_do():
    x = np.ones(3, dtype=np.float32)
    staged = jitc.function(times_number, profile=2)
    for n in [1, 2, 3, 2**60 + 2**36 + 1, -(2**60 + 2**36 + 1)]:
        # NumPy rounds the int to a double, then to float32.
        np.testing.assert_array_equal(staged(x, n).numpy(), times_number(jitc.Var(x), n).numpy())
    assert staged.stats()["relaxations"] == 1
    staged = jitc.function(negated, profile=2)
    for n in [1, 2, 3, -(2**63)]:
        got, want = staged(x, n), negated(jitc.Var(x), n)
        assert (got[1], got[2]) == (want[1], want[2]) == (-n, abs(n))


def test_a_relaxed_float_promotes_an_integer_tensor_as_a_float_does():
    # An int32 tensor times a float that changes between calls computes in
    # float32, staged (the float relaxed to an input) as imperatively.
    x = np.arange(-3, 3, dtype=np.int32)
    staged = jitc.function(times_number, profile=2)
    for n in [0.5, 0.5, 0.25, 1.5, -2.5]:
        got = staged(x, n)
        assert got.dtype == np.float32
        np.testing.assert_array_equal(got.numpy(), (x * np.float32(n)).astype(np.float32))
    assert staged.stats()["relaxations"] == 1
    # Relaxed ints divide an int tensor truly (by 0 too, as NumPy does),
    # relaxed floats compare with its values, and a float64 tensor keeps
    # float64.
    cases = [
        (lambda x, n: x / n, x, [2, 2, 3, 0, -4]),
        (lambda x, n: x < n, x, [0.5, 0.5, -0.5, 1.5, 2.5]),
        (lambda x, n: x * n, np.linspace(-1, 1, 6), [0.1, 0.1, 0.3, 0.7, -0.2]),
    ]
    for fn, arg, numbers in cases:
        staged = jitc.function(fn, profile=2)
        for n in numbers:
            got, want = staged(arg, n), fn(jitc.Var(arg), n)
            assert got.dtype == want.dtype
            np.testing.assert_array_equal(got.numpy(), want.numpy())
        assert staged.stats()["relaxations"] == 1, staged.explain()
    # (The imperative runs above are NumPy's: 0 / 0 is NaN.)
    with np.errstate(divide="ignore", invalid="ignore"):
        np.testing.assert_array_equal((jitc.Var(x) / 0).numpy(), (x / 0).astype(np.float32))


class OneSlot:
    __slots__ = "value"  # one slot, written as a string

    def __init__(self, value):
        self.value = value


class PrivateSlot:
    __slots__ = ("__scale",)

    def __init__(self, scale):
        self.__scale = scale

    def scale(self):
        return self.__scale


class Late:
    pass


class Stepper:
    def __init__(self):
        self.k = 2.0
        self.callbacks = [self.step]
        self.labels = np.array([object()] * 100, dtype=object)

    def step(self, x):
        return x * self.k


def test_what_a_review_of_the_wider_facts_found():
    x = np.ones(2, dtype=np.float32)
    # Slots named by a string, and private (mangled) slots, by value.
    one = jitc.function(lambda x, o: x * o.value, profile=2)
    private = jitc.function(lambda x, o: x * o.scale(), profile=2)
    for v in [1.0, 1.0, 1.0, 2.0, 2.0, 2.0]:
        assert one(x, OneSlot(v)).numpy()[0] == v
        assert private(x, PrivateSlot(v)).numpy()[0] == v
    # A class attribute added after the first calls (read with a default).
    late = jitc.function(lambda x: x * getattr(Late, "scale", 1.0), profile=2)
    for k in range(6):
        if k == 3:
            Late.scale = 3.0
        assert late(x).numpy()[0] == (3.0 if k >= 3 else 1.0)
    # An object array and a bound method of self among the attributes: no
    # error escapes, and the method is still staged.
    staged = jitc.function(Stepper.step, profile=2)
    stepper = Stepper()
    for _ in range(4):
        assert staged(stepper, x).numpy()[0] == 2.0
    assert staged.stats()["staged"] == 2 and staged.stats()["give_ups"] == 0, staged.explain()


# A module global with the name of an attribute the function reads: only
# `self.TWIN` is read, so the global's contents are not a fact.
TWIN = np.zeros(3, dtype=np.float32)
TWIN_SCALE = 2.0


class Twin:
    def __init__(self):
        self.TWIN = jitc.Var(np.ones(3, dtype=np.float32))

    def __call__(self, x):
        return x * self.TWIN * TWIN_SCALE


class StagedTwin(Twin):
    __call__ = jitc.function(Twin.__call__, profile=2)


def test_a_global_named_like_an_attribute_is_not_a_fact_but_a_global_read_is():
    global TWIN_SCALE
    staged, plain = StagedTwin(), Twin()
    x = np.arange(3, dtype=np.float32)
    for k in range(6):
        TWIN[:] = k  # never read: the same facts every call
        np.testing.assert_array_equal(staged(x).numpy(), plain(jitc.Var(x)).numpy())
    stats = StagedTwin.__call__.stats()
    assert stats["traced"] == 2 and stats["staged"] == 4, stats
    # The global the code does read (LOAD_GLOBAL) is a fact: a new value
    # is profiled, then served with its own value.
    TWIN_SCALE = 3.0
    for _ in range(3):
        np.testing.assert_array_equal(staged(x).numpy(), x * 3.0)
    stats = StagedTwin.__call__.stats()
    assert stats["traced"] == 4 and stats["staged"] == 5 and stats["fallbacks"] == 0, stats


class Accumulator:
    """State in attributes of `self` and of an object argument, read and
    rebound under a branch on a tensor (`ways`) or a `while` loop on one."""

    def __init__(self):
        self.h = jitc.Var(np.zeros(3, dtype=np.float32))
        self.calls = jitc.Var(np.zeros((), dtype=np.float32))

    def ways(self, x, cfg):
        if jitc.sum(x) > 0:
            h = self.h + x * cfg.gain
        else:
            h = self.h * 0.5 - x
        self.h = h
        self.calls = self.calls + 1.0
        return jitc.sum(h)

    def halve(self, x, cfg):
        while jitc.max(x) > 1:
            x = x * 0.5
        cfg.gain = cfg.gain + x
        self.h = self.h + x
        return x


class Config:
    def __init__(self):
        self.gain = jitc.Var(np.full(3, 2.0, dtype=np.float32))


@pytest.mark.parametrize("method,merge", [("ways", True), ("ways", "tree"), ("halve", True)])
def test_attributes_are_state_reads_and_writes_of_the_graph(method, merge):
    # JANUS's PyGetAttrOp and PySetAttrOp: the graph reads `self.h` (and
    # `cfg.gain`, an object argument's attribute) with meta.state_read and
    # writes what the call rebinds with meta.state_write, committed only
    # when the whole call succeeds; the attributes after every call equal
    # the imperative twin's, for the merged graph, the tree and the loop.
    class Staged(Accumulator):
        pass

    setattr(Staged, method, jitc.function(getattr(Accumulator, method), merge=merge))
    staged, plain = Staged(), Accumulator()
    staged_cfg, plain_cfg = Config(), Config()
    rng = np.random.default_rng(11)
    for _ in range(12):
        x = (rng.standard_normal(3) * 3).astype(np.float32)
        got = getattr(staged, method)(jitc.Var(x), staged_cfg)
        want = getattr(plain, method)(jitc.Var(x), plain_cfg)
        np.testing.assert_array_equal(got.numpy(), want.numpy())
        for name in vars(plain):
            np.testing.assert_array_equal(getattr(staged, name).numpy(), getattr(plain, name).numpy())
        np.testing.assert_array_equal(staged_cfg.gain.numpy(), plain_cfg.gain.numpy())
    fn = getattr(Staged, method)
    assert fn.stats()["staged"] > 0, fn.explain()
    graphs = fn.graphs()
    assert graphs, fn.explain()
    text = "\n".join(graphs)
    assert '"meta.state_read"() {name = "self.h"} : () -> tensor<3xf32>' in text, text
    assert '"meta.state_read"() {name = "cfg.gain"} : () -> tensor<3xf32>' in text, text
    assert 'name = "self.h"} : (tensor<3xf32>) -> ()' in text, text
    if method == "ways":
        assert 'name = "self.calls"} : (tensor<f32>) -> ()' in text, text
        # Read, never rebound: no write.
        assert not [line for line in text.splitlines() if "meta.state_write" in line and "cfg.gain" in line], text
    else:
        assert 'name = "cfg.gain"} : (tensor<3xf32>) -> ()' in text, text
        # An attribute the graph does not use is not read (it stays an
        # unused argument).
        assert "self.calls" not in text, text
    # explain says which state each piece reads and writes.
    if method == "ways":
        assert "state: reads cfg.gain, self.calls, self.h; writes self.calls, self.h" in fn.explain(), fn.explain()
    # A tree's pieces before its branch write nothing.
    if merge == "tree":
        assert len(graphs) == 3 and "meta.state_write" not in graphs[0], graphs
        # The way that does not use `cfg.gain` does not read it.
        assert "state: reads self.calls, self.h; writes self.calls, self.h" in fn.explain(), fn.explain()


def test_an_attribute_passed_as_an_argument_too_stays_an_argument():
    class Model:
        def __init__(self):
            self.h = jitc.Var(np.ones(3, dtype=np.float32))

        @jitc.function
        def step(self, x):
            self.h = self.h + x
            return self.h * 2.0

    model = Model()
    for _ in range(4):
        model.step(model.h)
    np.testing.assert_array_equal(model.h.numpy(), np.full(3, 16.0, dtype=np.float32))
    (text,) = Model.step.graphs()
    assert "meta.state_read" not in text and 'meta.state_write"(' in text, text


def test_an_attribute_whose_name_needs_escaping_is_state_all_the_same():
    class Model:
        def __init__(self):
            setattr(self, 'odd"name', jitc.Var(np.ones(3, dtype=np.float32)))
            self.total = jitc.Var(np.zeros(3, dtype=np.float32))

        @jitc.function
        def step(self, x):
            # (`setattr` would keep the function imperative.)
            self.total = getattr(self, 'odd"name') + x
            return self.total

    model = Model()
    for k in range(5):
        got = model.step(np.full(3, k, dtype=np.float32))
        np.testing.assert_array_equal(got.numpy(), np.full(3, k + 1.0, dtype=np.float32))
        np.testing.assert_array_equal(model.total.numpy(), np.full(3, k + 1.0, dtype=np.float32))
    assert Model.step.stats()["staged"] == 2, Model.step.explain()
    (text,) = Model.step.graphs()
    assert """"meta.state_read"() {name = "self.odd'name"}""" in text, text


class _Colour(__import__("enum").IntEnum):
    RED = 1


class _Slotted:
    __slots__ = ("a", "b")

    def __init__(self, a):
        self.a = a


class _Holder:
    scale = 3.0

    def __init__(self, **held):
        self.__dict__.update(held)

    def method(self):
        return self


class _Mapping(dict):
    pass


def _random_value(rng, depth, leaves):
    """A random Python value of the kinds calls hold, nested."""
    if depth > 3 or rng.random() < 0.35:
        return leaves[rng.integers(len(leaves))]
    kind = rng.integers(7)
    items = [_random_value(rng, depth + 1, leaves) for _ in range(rng.integers(4))]
    if kind == 0:
        return tuple(items)
    if kind == 1:
        return items
    if kind == 2:
        return {f"k{i}": v for i, v in enumerate(items)} | {3: "int key"}
    if kind == 3:
        return _Mapping({str(i): v for i, v in enumerate(items)})
    if kind == 4:
        return _Holder(**{f"a{i}": v for i, v in enumerate(items)})
    if kind == 5:
        return collections.namedtuple("Pair", "x y")(items[:1], items[1:])
    return collections.deque(items)


def test_the_native_facts_equal_their_python_definition():
    """`_fact` computes the common values natively (`jitc._jitc.Facts`) and
    hands the others to `_fact_py`, the definition: on random nestings of
    every kind of value, at every depth, with and without the call's
    names and aliases, both give the same facts (and the same error past
    the nesting limit)."""
    from jitc import _function as f

    def definition(x, depth=0, input=False, level=0):
        return f._fact_py(x, depth, input, level, fact=definition)

    var = jitc.Var(np.ones((2, 3), dtype=np.float32))
    other = jitc.Var(np.zeros(4, dtype=np.int32))
    closure = 5
    leaves = [
        0, -7, 2**80, True, None, 1.5, float("nan"), -0.0, 2j, "s", b"b", _Colour.RED, np.float32(2.5),
        np.int64(3), np.arange(4), np.zeros((2, 2), dtype=np.float64), var, other, {1, 2}, frozenset({"a"}),
        bytearray(b"xy"), memoryview(b"z"), lambda: closure, functools.partial(max, 1), _Holder().method,
        np, _Holder, len, _Slotted(1), jitc.function(lambda x: x), object(), range(3), type(None),
        {"w": 1.0}.get, [1, 2].append, np.arange(3).sum, (1).__add__, _Holder(x=1).__eq__,
        {(_Holder(x=1), 0): 1.0, ("a", (1, 2.5)): 2.0, _Holder(y=2): 3.0, frozenset({1}): 4.0},
    ]
    rng = np.random.default_rng(7)
    contexts = [(None, frozenset()), ({id(var._v): 0, id(other._v): 1}, frozenset({"a0", "a1", "scale", "x"}))]
    checked = 0
    for _ in range(400):
        value = _random_value(rng, 0, leaves)
        for aliases, names in contexts:
            f._stack('aliases').append(aliases if aliases is not None else {})
            f._stack('names').append(names)
            try:
                for depth in range(4):
                    for input in (False, True):
                        assert f._fact(value, depth, input) == definition(value, depth, input), (value, depth)
                        checked += 1
            finally:
                f._stack('aliases').pop()
                f._stack('names').pop()
    assert checked == 400 * 2 * 4 * 2
    deep = []
    for _ in range(60):
        deep = [deep]
    with pytest.raises(TypeError, match="nests more than 48 deep"):
        f._fact(deep)
    with pytest.raises(TypeError, match="nests more than 48 deep"):
        definition(deep)


SCALE = 2.0
_TABLE = {"k": 1.0}
_TABLE_GET = _TABLE.get
_TABLE_LEN = _TABLE.__len__
_EXP = __import__("math").exp
_UNBOUND = __import__("builtins").len.__call__


def _with_defaults(x, k=2.0, flag=False):
    return x


def _with_list_default(x, held=[]):  # noqa: B006 -- a default that is not a simple value
    return x


def test_the_native_call_facts_equal_their_python_definition():
    """A call's facts (`Function._facts_of`, native) equal their Python
    definition (`_facts_of_py`) on random calls of a method: arguments and
    keyword arguments of every kind, one tensor or object passed twice,
    relaxed positions (arguments, keywords, `self`, attributes) and the
    globals the code reads."""
    from jitc import _function as f

    def definition(x, depth=0, input=False, level=0):
        return f._fact_py(x, depth, input, level, fact=definition)

    class Model:
        rate = 0.5

        def __init__(self, rng):
            self.w = jitc.Var(np.ones(3, dtype=np.float32))
            self.steps = int(rng.integers(5))
            self.scale = float(rng.random())
            self.inner = _Holder(x=1, scale=2.5)

        @jitc.function
        def step(self, *args, **kwargs):
            return (self.w * SCALE * self.rate * _TABLE_GET("k") * _TABLE_LEN() * _EXP(0.0) * _UNBOUND(())
                    * _with_defaults(1.0) * _with_list_default(1.0) * _GLOBAL_ACT(1.0))

    fn = Model.step
    rng = np.random.default_rng(11)
    tensors_pool = [jitc.Var(np.ones(n, dtype=np.float32)) for n in (2, 3)]
    leaves = [0, 7, 2**70, 1.5, True, "s", None, np.float64(2.0), (1, 2), [3.0], {"a": 1}, _Holder(x=2)]
    checked = 0
    for _ in range(300):
        owner = Model(rng)
        shared = _Holder(x=int(rng.integers(3)))
        pool = leaves + tensors_pool + [shared, shared, owner, _random_value(rng, 0, leaves)]
        args = [pool[rng.integers(len(pool))] for _ in range(rng.integers(5))]
        kwargs = {f"k{j}": pool[rng.integers(len(pool))] for j in rng.permutation(rng.integers(3))}
        args, kwargs, _, _ = f._as_vars(args, kwargs)
        # (Half the calls reach the objects held deeper: `self.inner`.)
        fn._deep = bool(rng.integers(2))
        objects = fn._objects(owner, args, kwargs)
        tensors = fn._tensors(args, kwargs, objects)
        positions = [("arg", i) for i in range(len(args))] + [("kwarg", k) for k in kwargs] + [("self",)]
        positions += [("attr", label, name) for label, o in zip(objects.labels, objects) for name in vars(o)]
        relaxed = {p for p in positions if rng.random() < 0.3}
        aliases = {id(t._v): k for k, t in reversed(list(enumerate(tensors)))}
        f._stack('aliases').append(aliases)
        f._stack('names').append(fn._names)
        try:
            expected = fn._facts_of_py(owner, args, kwargs, tensors, relaxed, objects, aliases, definition)
        finally:
            f._stack('aliases').pop()
            f._stack('names').pop()
        assert fn._key(owner, args, kwargs, tensors, objects, relaxed) == expected, (args, kwargs, relaxed)
        checked += 1
    assert checked == 300
    # A relaxed number of an object held deeper is a fact by its type
    # where the facts meet the object (in `self`'s attributes).
    fn._deep = True
    objects = fn._objects(owner, [], {})
    key = fn._key(owner, [], {}, fn._tensors([], {}, objects), objects, {("attr", "self.inner", "scale")})
    assert ("scale", ("relaxed", "float")) in dict(dict(key)["self"][2])["inner"][2], key
    fn._deep = False
    objects = fn._objects(owner, [], {})
    # The facts name the globals the code reads, and what relaxing covers.
    key = fn._key(owner, [], {}, fn._tensors([], {}, objects), objects, {("attr", "self", "scale")})
    assert ("scale", ("relaxed", "float")) in dict(key)["self"][2], key
    assert any(label.endswith(".SCALE") for label, _ in dict(key)["globals"]), key
    # A builtin method held by a global is a fact by what its object holds.
    held = {label.rsplit(".", 1)[1]: fact for label, fact in dict(key)["globals"]}
    assert held["_TABLE_GET"][0] == held["_TABLE_LEN"][0] == "builtin method", key
    assert held["_EXP"] is _EXP, key
    # A function with simple defaults is itself and its defaults; one with
    # a closure or another default is a fact by what it holds.
    assert held["_with_defaults"] == (_with_defaults, (2.0, False)), key
    assert held["_with_list_default"][0] == held["_GLOBAL_ACT"][0] == "function", key


def test_a_named_tuple_argument_holding_arrays_is_staged():
    """A named tuple of NumPy arrays (and one of plain values) as an
    argument: its arrays become `jitc.Var`s, as a plain tuple's do (its
    constructor takes fields, not one iterable: this was a TypeError)."""
    Batch = collections.namedtuple("Batch", "x y")

    @jitc.function
    def loss(batch, options):
        return jitc.sum((batch.x - batch.y) * options.weight)

    Options = collections.namedtuple("Options", "weight")
    for k in range(5):
        batch = Batch(np.full(4, k, dtype=np.float32), np.ones(4, dtype=np.float32))
        got = loss(batch, Options(2.0))
        assert float(got.numpy()) == 2.0 * 4 * (k - 1)
    assert loss.stats()["staged"] == 2, loss.explain()


class _Linear:
    def __init__(self, n, m, seed):
        rng = np.random.default_rng(seed)
        self.w = jitc.Var((rng.standard_normal((n, m)) * 0.3).astype(np.float32))
        self.b = jitc.Var(np.zeros(m, dtype=np.float32))

    def __call__(self, x):
        return jitc.matmul(x, self.w) + self.b


class _Stack:
    """A model of sub-layers held in a list and a dict, returning a dict:
    the usual shape of a model."""

    def __init__(self):
        self.layers = [_Linear(6, 5, 0), _Linear(5, 5, 1)]
        self.heads = {"out": _Linear(5, 3, 2)}
        self.act = "tanh"

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
            x = jitc.tanh(x) if self.act == "tanh" else jitc.relu(x)
        y = self.heads["out"](x)
        return {"y": y, "energy": jitc.sum(y * y), "depth": len(self.layers)}

    staged = jitc.function(forward)


GLOBAL_BIAS = jitc.Var(np.full(3, 0.5, dtype=np.float32))


def _with_global(x):
    return x + GLOBAL_BIAS


def test_tensors_held_by_sub_layers_and_globals_are_graph_inputs():
    """`self.layers[0].w`, `self.heads["out"].w` and a global `jitc.Var`
    are read by the staged graph as inputs (after one reprofile that says
    so), so a model built of sub-layers is staged; rebinding one of them
    to a new value of the same shape is served with the new value, and a
    new shape is new facts. Every call agrees with imperative execution."""
    model = _Stack()
    rng = np.random.default_rng(3)
    # Calls 0 and 1 are traced and dropped (the first runs `_Linear`'s
    # code, the second reads `w` deeper), 2-7 profile two shapes of `x`,
    # 8-11 are served (two of them after a layer's tensor was rebound),
    # 12-13 profile again (a new `act`).
    for k in range(14):
        if k == 9:
            model.layers[1].w = jitc.Var(np.eye(5, dtype=np.float32))
        if k == 11:
            model.heads["out"].w = jitc.Var(np.ones((5, 3), dtype=np.float32))
        if k == 12:
            model.act = "relu"
        x = rng.standard_normal((2 + k % 2, 6)).astype(np.float32)
        got = model.staged(x)
        want = model.forward(jitc.Var(x))
        assert list(got) == ["y", "energy", "depth"] and got["depth"] == 2
        np.testing.assert_allclose(got["y"].numpy(), want["y"].numpy(), rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(got["energy"].numpy(), want["energy"].numpy(), rtol=1e-5)
    stats = _Stack.staged.stats()
    assert stats["imperative"] == 0 and stats["give_ups"] == 0, _Stack.staged.explain()
    assert stats["staged"] == 4 and stats["reprofiles"] == 2, _Stack.staged.explain()
    assert "held deeper than an attribute" in _Stack.staged.explain()

    staged = jitc.function(_with_global)
    for k in range(5):
        got = staged(np.full(3, k, dtype=np.float32))
        np.testing.assert_array_equal(got.numpy(), np.full(3, k + 0.5, dtype=np.float32))
    assert staged.stats()["staged"] == 1, staged.explain()


class _Pair(tuple):
    pass


def test_dicts_and_named_tuples_are_returned_as_built_and_other_sequence_types_stay_imperative():
    """A staged call returns what the function returns: a dict (keys in
    their order), an `OrderedDict`, a named tuple (before, it came back as
    a list); a tuple subclass a graph cannot rebuild keeps the function
    imperative, with the reason."""
    Out = collections.namedtuple("Out", "y total")

    @jitc.function
    def named(x):
        y = x * 2.0
        return Out(y, jitc.sum(y))

    @jitc.function
    def mapping(x):
        return collections.OrderedDict([("b", x + 1.0), ("a", 3)])

    @jitc.function
    def odd(x):
        return _Pair((x, x))

    for k in range(6):
        x = np.full(2, k, dtype=np.float32)
        out = named(x)
        assert type(out) is Out
        np.testing.assert_array_equal(out.total.numpy(), np.float32(4 * k))
        got = mapping(x)
        assert type(got) is collections.OrderedDict and list(got) == ["b", "a"] and got["a"] == 3
        np.testing.assert_array_equal(got["b"].numpy(), x + 1)
        assert type(odd(x)) is _Pair
    # Three traced calls each; `named`'s first ran the named tuple's
    # constructor, code first seen then, and was profiled again.
    assert named.stats()["staged"] == 2 and named.stats()["reprofiles"] == 1, named.explain()
    assert mapping.stats()["staged"] == 3, mapping.explain()
    assert odd.stats()["imperative"] == 5 and "it returns a _Pair" in odd.explain()


class _Net:
    """Sub-layers trained in the staged call: it rebinds `layer.w` of each
    layer in `self.layers`, and a step counter in `self`."""

    def __init__(self):
        self.layers = [_Linear(6, 8, 4), _Linear(8, 3, 5)]
        self.steps = 0

    def step(self, x, y, lr):
        h = x
        for i, layer in enumerate(self.layers):
            h = layer(h)
            if i == 0:
                h = jitc.tanh(h)
        error = h - y
        loss = jitc.mean(error * error)
        grads = jitc.grad(loss, [p for layer in self.layers for p in (layer.w, layer.b)])
        for k, layer in enumerate(self.layers):
            layer.w = layer.w - lr * grads[2 * k]
            layer.b = layer.b - lr * grads[2 * k + 1]
        self.steps += 1
        return loss

    staged = jitc.function(step)


def test_a_model_of_sub_layers_is_trained_by_the_staged_graph_with_state_ops():
    """A training step that rebinds the tensors of sub-layers
    (`self.layers[k].w`) is staged after one reprofile: the graph reads
    and writes them as `meta.state_read`/`meta.state_write` of
    `self.layers[0].w`, ..., and every call's loss and the parameters
    after it equal an imperative twin's, also across a change of batch
    size (new facts) and a learning rate that changes (relaxed)."""
    staged, plain = _Net(), _Net()
    rng = np.random.default_rng(8)
    for k in range(20):
        rows = 4 if k < 14 else 5
        x = rng.standard_normal((rows, 6)).astype(np.float32)
        y = rng.standard_normal((rows, 3)).astype(np.float32)
        lr = 0.1 if k < 6 else 0.05
        got = staged.staged(x, y, lr).item()
        want = plain.step(jitc.Var(x), jitc.Var(y), lr).item()
        assert abs(got - want) <= 1e-5 * max(1.0, abs(want)), (k, got, want)
        for a, b in zip(staged.layers, plain.layers):
            np.testing.assert_allclose(a.w.numpy(), b.w.numpy(), rtol=1e-5, atol=1e-6)
            np.testing.assert_allclose(a.b.numpy(), b.b.numpy(), rtol=1e-5, atol=1e-6)
        assert staged.steps == plain.steps == k + 1
    stats = _Net.staged.stats()
    assert stats["imperative"] == 0 and stats["give_ups"] == 0 and stats["staged"] >= 8, _Net.staged.explain()
    text = "\n".join(_Net.staged.graphs())
    for name in ("self.layers[0].w", "self.layers[1].b"):
        assert f'"meta.state_read"() {{name = "{name}"}}' in text, text[:2000]
        assert f'name = "{name}"}} : (tensor<' in text and "meta.state_write" in text, text[:2000]


class _Flag:
    def __init__(self):
        self.on = 0


class _Paths:
    def __init__(self, a, b, c):
        self.a, self.b, self.c = a, b, c

    def step(self, x):
        self.c.on = 1
        return x * 2.0

    staged = jitc.function(step)


def test_which_paths_to_held_objects_are_one_object_is_a_fact():
    """`self.a`, `self.b`, `self.c` held objects with equal attributes, in
    two patterns of sameness (a is c; a is b): the write through
    `self.c` must land on `self.c`'s object in every served call, so the
    pattern is a fact (without it, both patterns had one key, and the
    second's calls set `self.a.on`)."""
    patterns = [lambda: (lambda f: (f, _Flag(), f))(_Flag()), lambda: (lambda f: (f, f, _Flag()))(_Flag())]
    for k in range(16):
        a, b, c = patterns[(k // 4) % 2]()
        holder = _Paths(a, b, c)
        holder.staged(np.ones(2, dtype=np.float32))
        assert (holder.a.on, holder.b.on, holder.c.on) == ((1, 0, 1) if a is c else (0, 0, 1)), k
    stats = _Paths.staged.stats()
    assert stats["staged"] >= 6 and stats["fallbacks"] == 0, _Paths.staged.explain()


def test_the_sublayers_example_trains_a_model_of_sub_layers_through_the_staged_graph():
    module = load_example("sublayers")
    assert module.main(steps=12) < 1e-4
    stats = module.StagedClassifier.train_step.stats()
    # Two reprofiles (the layers' code, then the sub-layers' tensors),
    # three traced calls, then every step served by one graph.
    assert stats["staged"] == 7 and stats["staged_graphs"] == 1 and stats["imperative"] == 0, stats
    text = module.StagedClassifier.train_step.graphs()[0]
    assert """"meta.state_read"() {name = "self.heads['logits'].w"}""" in text, text[:1500]


class _Norm:
    def __init__(self, n):
        self.g = jitc.Var(np.full(n, 2.0, dtype=np.float32))

    @jitc.function
    def __call__(self, x):
        return x * self.g


class _Collector:
    def __init__(self):
        self.norm = _Norm(3)
        self.history = []

    def outputs(self, xs):
        found = []
        for x in xs:
            found.append(self.norm(x) + 1.0)
        return found

    def logged(self, x):
        self.history.append(1)
        return x * 2.0

    staged_outputs = jitc.function(outputs)
    staged_logged = jitc.function(logged)


def test_lists_made_in_the_call_and_jitc_functions_of_sub_layers_are_staged():
    """A list the call makes and appends to (`found.append(h)`) is the
    call's own, and a `jitc.function` method of a sub-layer called inside
    is part of the caller's trace (its object is one of the caller's once
    it reaches deeper): staged, equal to imperative runs. Appending to a
    list that outlives the call (an attribute's, an argument's) is a
    change of state a staged call would not make: imperative, with the
    reason."""
    model = _Collector()
    rng = np.random.default_rng(2)
    for _ in range(7):
        xs = [rng.standard_normal(3).astype(np.float32) for _ in range(2)]
        got = model.staged_outputs(xs)
        assert type(got) is list and len(got) == 2
        for g, x in zip(got, xs):
            np.testing.assert_allclose(g.numpy(), x * 2.0 + 1.0, rtol=1e-6)
    assert _Collector.staged_outputs.stats()["staged"] >= 2, _Collector.staged_outputs.explain()
    for k in range(4):
        model.staged_logged(np.ones(3, dtype=np.float32))
        assert model.history == [1] * (k + 1)
    assert _Collector.staged_logged.stats()["staged"] == 0
    assert "changes what the attribute history holds" in _Collector.staged_logged.explain()

    @jitc.function
    def into(x, sink):
        sink.append(0)
        return x + 1.0

    sink = []
    for k in range(3):
        into(np.ones(2, dtype=np.float32), sink)
    assert sink == [0, 0, 0] and "changes the contents of an argument" in into.explain(), into.explain()


class _Inner:
    def __init__(self, n):
        self.w = jitc.Var(np.full(3, 2.0, dtype=np.float32))
        self.spare = [jitc.Var(np.zeros(n, dtype=np.float32))]


class _Encoder:
    def __init__(self):
        self.inner = _Inner(2)


class _Deep:
    def __init__(self):
        self.enc = _Encoder()

    def step(self, x):
        return x * self.enc.inner.w

    staged = jitc.function(step)


def test_tensors_the_facts_do_not_cover_are_not_graph_inputs():
    """`self.enc.inner` is two levels down, so only the attributes the code
    names are its facts: a list of tensors in an attribute it does not
    name is not read by the graph, and a new shape there is served as
    before (it was an input whose type the facts did not cover, and the
    served call failed with "input k of the staged function is ...")."""
    model = _Deep()
    for k in range(8):
        if k == 6:
            model.enc.inner.spare = [jitc.Var(np.zeros(5, dtype=np.float32))]
        got = model.staged(np.full(3, k, dtype=np.float32))
        np.testing.assert_array_equal(got.numpy(), np.full(3, 2.0 * k, dtype=np.float32))
    stats = _Deep.staged.stats()
    assert stats["staged"] >= 3 and stats["imperative"] == 0, _Deep.staged.explain()


@pytest.fixture
def exact_math():
    """Exact math: the imperative twin's fetches group ops otherwise than
    the staged graph's (a pending write computed with the next call's
    ops), and only exact math makes every grouping round alike."""
    before = jitc.flags.math
    jitc.flags.math = "exact"
    yield
    jitc.flags.math = before


def _named_step(prefix):
    """A step on named state whose paths touch different pieces of it."""

    def step(x, scale):
        w = jitc.read_state(prefix + "w")
        y = jitc.matmul(x, w)
        if jitc.sum(y) > 0:
            jitc.write_state(prefix + "w", w * 0.5 + 0.01 * scale)
        else:
            jitc.write_state(prefix + "n", jitc.read_state(prefix + "n") + 1.0)
        return jitc.sum(y * scale) + jitc.sum(jitc.read_state(prefix + "w"))

    return step


@pytest.mark.parametrize("merge", [True, "tree"])
def test_named_state_is_read_and_written_by_the_staged_graph(exact_math, merge):
    """`jitc.read_state`/`jitc.write_state` in a staged function are the
    graph's `meta.state_read`/`meta.state_write` of `jitc:<name>`: every
    call's result and the state after it equal an imperative twin's on a
    random sequence whose calls take both paths (which touch different
    names: one merged graph, or a tree's pieces, take them all), change a
    relaxed number, set the state between calls, and leave imperative
    writes pending."""
    staged = jitc.function(_named_step(f"fn.s{merge}."), merge=merge)
    plain = _named_step("fn.p.")
    for prefix in (f"fn.s{merge}.", "fn.p."):
        jitc.set_state(prefix + "w", np.ones((4, 3), np.float32))
        jitc.set_state(prefix + "n", np.zeros((), np.float32))
    rng = np.random.default_rng(21)
    for k in range(30):
        x = rng.standard_normal((2, 4)).astype(np.float32)
        scale = float(rng.integers(1, 4))
        if k == 12:
            for prefix in (f"fn.s{merge}.", "fn.p."):
                jitc.set_state(prefix + "w", np.full((4, 3), 2.0, np.float32))
        if k % 7 == 3:
            for prefix in (f"fn.s{merge}.", "fn.p."):
                jitc.write_state(prefix + "n", jitc.read_state(prefix + "n") * 2.0)
        got, want = staged(x, scale).numpy(), plain(jitc.Var(x), scale).numpy()
        np.testing.assert_array_equal(got, want, err_msg=f"call {k}")
        for name in ("w", "n"):
            np.testing.assert_array_equal(jitc.read_state(f"fn.s{merge}." + name).numpy(),
                                          jitc.read_state("fn.p." + name).numpy(), err_msg=f"{name} after {k}")
    stats = staged.stats()
    assert stats["staged"] >= 20 and stats["imperative"] == 0 and stats["give_ups"] == 0, staged.explain()
    assert ("merged from" if merge is True else "1 branch") in staged.explain(), staged.explain()
    text = "\n".join(staged.graphs())
    for name in (f"jitc:fn.s{merge}.w", f"jitc:fn.s{merge}.n"):
        assert f'"meta.state_read"() {{name = "{name}"}}' in text, text[:2000]
        assert f'"meta.state_write"' in text and f'name = "{name}"}} : (tensor<' in text, text[:2000]


def test_named_state_of_another_type_falls_back_and_restages(exact_math):
    """Named state is not among the facts: a served call first checks the
    type of every piece the graph touches, and one set to another shape
    runs imperatively (a fallback, with the reason) and is traced again."""
    staged = jitc.function(_named_step("fn.t."))
    plain = _named_step("fn.u.")
    for prefix in ("fn.t.", "fn.u."):
        jitc.set_state(prefix + "w", np.full((4, 3), -1.0, np.float32))
        jitc.set_state(prefix + "n", np.zeros((), np.float32))
    x = np.ones((2, 4), np.float32)
    for k in range(8):
        if k == 5:
            for prefix in ("fn.t.", "fn.u."):
                jitc.set_state(prefix + "n", np.zeros(2, np.float32))
        np.testing.assert_array_equal(staged(x, 2.0).numpy(), plain(jitc.Var(x), 2.0).numpy())
        np.testing.assert_array_equal(jitc.read_state("fn.t.n").numpy(), jitc.read_state("fn.u.n").numpy())
    stats = staged.stats()
    assert stats["fallbacks"] == 1 and stats["staged"] == 4, staged.explain()
    assert ("fallback: the state 'fn.t.n' is tensor<2xf32>, and the graph was staged for tensor<f32>"
            in staged.explain()), staged.explain()


class _Regression:
    def __init__(self, prefix, optimizer, **options):
        rng = np.random.default_rng(3)
        self.optimizer = optimizer({prefix + "w": rng.standard_normal((6, 3)).astype(np.float32),
                                    prefix + "b": np.zeros(3, np.float32)}, **options)

    def step(self, x, y):
        w, b = self.optimizer.parameters()
        d = jitc.tanh(jitc.matmul(x, w) + b) - y
        loss = jitc.mean(d * d)
        self.optimizer.step(loss)
        return loss

    staged = jitc.function(step)


def _step_twins(staged, plain, rng, k):
    """Step `k` of a `_Regression` through its staged method and of its
    twin run plainly, on one random batch: the losses and the parameters
    after it are equal."""
    x = rng.standard_normal((8, 6)).astype(np.float32)
    y = rng.standard_normal((8, 3)).astype(np.float32)
    got = staged.staged(x, y).numpy()
    want = plain.step(jitc.Var(x), jitc.Var(y)).numpy()
    np.testing.assert_array_equal(got, want, err_msg=f"step {k}")
    for a, b in zip(staged.optimizer.names, plain.optimizer.names):
        np.testing.assert_array_equal(jitc.read_state(a).numpy(), jitc.read_state(b).numpy())


@pytest.mark.parametrize("optimizer,options", [
    (jitc.optim.SGD, dict(lr=0.1, momentum=0.9, weight_decay=0.01)),
    (jitc.optim.Adam, dict(lr=0.01)),
])
def test_an_optimizer_step_is_staged_with_its_named_state(exact_math, optimizer, options):
    """`jitc.optim` keeps parameters and moments (and Adam's step count)
    in named state, so a training step through `jitc.function` is staged
    whole, forward, backward and update, and every step's loss and state
    equal an imperative twin's."""
    name = optimizer.__name__
    staged = _Regression(f"opt.s{name}.", optimizer, **options)
    plain = _Regression(f"opt.p{name}.", optimizer, **options)
    rng = np.random.default_rng(4)
    for k in range(12):
        _step_twins(staged, plain, rng, k)
    if optimizer is jitc.optim.Adam:
        assert staged.optimizer.steps == plain.optimizer.steps == 12
    explained = _Regression.staged.explain()
    assert f"jitc:opt.s{name}.w" in explained, explained
    graphs = [g for g in _Regression.staged.graphs() if f"opt.s{name}.w" in g]
    assert graphs and "meta.state_write" in graphs[-1], _Regression.staged.graphs()


@pytest.mark.parametrize("touch", ["get", "set"])
def test_committed_state_read_or_set_in_a_call_keeps_it_imperative(touch):
    """`jitc.get_state` reads committed state into Python and
    `jitc.set_state` sets it now: a staged graph could do neither, so the
    function stays imperative and says why."""
    jitc.set_state("fn.committed", np.ones(2, np.float32))

    def fn(x):
        if touch == "get":
            return x * jitc.Var(jitc.get_state("fn.committed"))
        jitc.set_state("fn.committed", np.full(2, 2.0, np.float32))
        return x * 2.0

    staged = jitc.function(fn)
    for _ in range(4):
        np.testing.assert_array_equal(staged(np.ones(2, np.float32)).numpy(), np.full(2, 1.0 if touch == "get" else 2.0))
    assert staged.stats()["staged"] == 0
    assert f"it calls jitc.{touch}_state, which" in staged.explain(), staged.explain()
    assert "on a value it computes" not in staged.explain(), staged.explain()


def test_a_failing_write_pending_before_a_call_fails_where_it_would_without_tracing():
    """A write pending from before the call that fails when computed (an
    integer division by zero), read by the call or passed to it: the call
    returns, as it does run plainly, and the error comes from the fetch
    that needs the failing value; nothing is committed, and later calls
    are staged as before."""
    jitc.set_state("pending.s", np.ones(2, np.float32))

    def accumulate(x, extra):
        jitc.write_state("pending.s", jitc.read_state("pending.s") + x)
        return x * 2.0 + extra

    staged = jitc.function(accumulate)
    x = np.ones(2, np.float32)
    zero = np.zeros(2, np.float32)
    broken = lambda: jitc.binary(jitc.Var(np.ones(2, np.int32)), jitc.Var(np.zeros(2, np.int32)), "div").astype(np.float32)  # noqa: E731
    for k in range(8):
        if k != 0:
            np.testing.assert_array_equal(staged(x, zero).numpy(), np.full(2, 2.0, np.float32))
        if k in (0, 2, 5):
            # (Call 0 is traced, the others served.)
            # Through the state.
            jitc.write_state("pending.s", broken())
            np.testing.assert_array_equal(staged(x, zero).numpy(), np.full(2, 2.0, np.float32))
            with pytest.raises(jitc.JitcError, match="division by zero"):
                jitc.read_state("pending.s").numpy()
            # As an argument.
            result = staged(x, broken())
            with pytest.raises(jitc.JitcError, match="division by zero"):
                result.numpy()
            jitc.set_state("pending.s", np.ones(2, np.float32))
    np.testing.assert_array_equal(jitc.read_state("pending.s").numpy(), np.full(2, 3.0, np.float32))
    stats = staged.stats()
    assert stats["staged"] >= 3 and stats["fallbacks"] == 0 and stats["give_ups"] == 0, staged.explain()
    for why in ("not staged: the write pending to pending.s fails", "not traced: an argument fails when computed",
                "not served: an input fails when computed"):
        assert why in staged.explain(), staged.explain()


def _count_up(x, limit):
    while jitc.sum(jitc.read_state("loop.a")) < limit:
        jitc.write_state("loop.a", jitc.read_state("loop.a") + x)
        jitc.write_state("loop.b", jitc.read_state("loop.b") * 0.5 + jitc.read_state("loop.a"))
    return jitc.read_state("loop.b")


def _grow(x, limit):
    h = x
    while jitc.sum(h) < limit:
        h = h * 1.5 + jitc.unary(jitc.read_state("loop.c"), "abs") + 0.1
    jitc.write_state("loop.c", jitc.read_state("loop.c") + 1.0)
    return h


def _last_written(x, limit):
    h = x
    while jitc.sum(h) < limit:
        h = h + x
        jitc.write_state("loop.d", h * 3.0)
    return h


def _write_carried(x, limit):
    c = x
    while jitc.sum(c) < limit:
        c = c + x
        jitc.write_state("loop.e", c)
    return c


def _swap_state():
    a, b = jitc.read_state("loop.f"), jitc.read_state("loop.g")
    jitc.write_state("loop.f", b)
    jitc.write_state("loop.g", a)


def _swapping(x, limit):
    c = x
    while jitc.sum(c) < limit:
        c = c + x
        _swap_state()
    return c


@pytest.mark.parametrize("fn,names,folds", [
    (_count_up, ["loop.a", "loop.b"], True),
    (_grow, ["loop.c"], True),
    (_last_written, ["loop.d"], False),
    # A carried value that is not what the name held before the loop, and
    # two names swapped each iteration: the named state is not the same
    # at every test (with 0 iterations the state must stay; with an even
    # count the swap undoes itself).
    (_write_carried, ["loop.e"], False),
    (_swapping, ["loop.f", "loop.g"], False),
])
def test_a_loop_over_named_state_folds_into_an_scf_while(exact_math, fn, names, folds):
    """Named state read and written in a `while` loop on a tensor
    condition is carried by the `scf.while` like any value: one graph
    serves every trip count, zero included, and the results and state
    equal an imperative twin's on every call. A value written in the loop
    that the next iteration does not read is not carried: that loop is
    not folded (the traces merge, and a new trip count falls back)."""
    staged = jitc.function(fn)
    rng = np.random.default_rng(12)
    for k in range(24):
        x = (np.abs(rng.standard_normal(3)) + 0.1).astype(np.float32)
        limit = np.array(rng.choice([-5.0, 1.0, 3.0, 8.0]) if k % 3 else rng.uniform(-2.0, 9.0), np.float32)
        starts = {n: rng.standard_normal(3).astype(np.float32) for n in names}
        outcomes = []
        for run in (lambda: staged(x, limit), lambda: fn(jitc.Var(x), jitc.Var(limit))):
            for n, v in starts.items():
                jitc.set_state(n, v)
            outcomes.append((run().numpy(), [jitc.read_state(n).numpy() for n in names]))
        (got, got_state), (want, want_state) = outcomes
        np.testing.assert_array_equal(got, want, err_msg=f"call {k}")
        for n, a, b in zip(names, got_state, want_state):
            np.testing.assert_array_equal(a, b, err_msg=f"{n} after call {k}")
    stats = staged.stats()
    if folds:
        assert "as an scf.while" in staged.explain() and stats["fallbacks"] == 0, staged.explain()
        assert stats["staged"] == 21, staged.explain()
    else:
        assert "scf.while" not in staged.explain(), staged.explain()


def _bump(x, limit):
    for _ in range(2):
        jitc.write_state("exit.s", jitc.read_state("exit.s") + x)
        if jitc.sum(jitc.read_state("exit.s")) > limit:
            break


def _bump_twice(x, limit):
    # (On one line: both runs' tests are at one site.)
    _bump(x, limit), _bump(x, limit)
    return jitc.read_state("exit.s")


def _while_with_break(x, limit):
    for _ in (0, 0, 0):
        while jitc.sum(jitc.read_state("exit.s")) < limit:
            jitc.write_state("exit.s", jitc.read_state("exit.s") + x)
            break
    return jitc.read_state("exit.s") * 2.0


def _make_counter():
    cell = [0]

    def count():
        cell[0] += 1
        return cell[0]

    def reset():
        cell[0] = 0

    return count, reset


_COUNT, _RESET = _make_counter()


def _counted(x, limit):
    c = x
    while jitc.sum(c) < limit:
        c = c + x
        jitc.write_state("exit.s", jitc.read_state("exit.s") + float(_COUNT() > 3))
    _RESET()
    return c


@pytest.mark.parametrize("fn,limits", [
    # One `for ... break` loop run twice (a helper called twice): its tests
    # at one site are not one run's.
    (_bump_twice, [7, 7, 7, 100, 1, 4, 10, 0, 7]),
    # A `while` left by `break` inside a Python loop.
    (_while_with_break, [5, 5, 5, 30, 0, 4, 7, 100, 5]),
    # A helper's closure changed in the loop and put back after it.
    (_counted, [10, 10, 10, 16, 0, 10, 30]),
])
def test_loops_that_do_not_fold_are_never_served_as_one(exact_math, fn, limits):
    """Loops whose tests look like one run's but are not, or whose Python
    state changes where the tests do not look: served calls give what the
    imperative calls give, state included (each was served wrong by a
    folded loop)."""
    staged = jitc.function(fn)
    x = np.ones(3, np.float32)
    for k, limit in enumerate(limits):
        limit = np.array(limit, np.float32)
        outcomes = []
        for run in (lambda: staged(x, limit), lambda: fn(jitc.Var(x), jitc.Var(limit))):
            jitc.set_state("exit.s", np.zeros(3, np.float32))
            outcomes.append((run().numpy(), jitc.read_state("exit.s").numpy()))
        (got, got_state), (want, want_state) = outcomes
        np.testing.assert_array_equal(got, want, err_msg=f"call {k}")
        np.testing.assert_array_equal(got_state, want_state, err_msg=f"state after call {k}")
    assert "scf.while" not in staged.explain(), staged.explain()


def _target_after_loop(x):
    for i in range(20):
        x = x * 2.0
        if jitc.sum(x) > 100.0:
            break
    return x, i


def _bound_rebound(x):
    n = 3

    def widen():
        nonlocal n
        n = 50

    for _ in range(n):
        widen()
        x = x * 2.0
        if jitc.sum(x) > 100.0:
            break
    return x


def _doubling(x):
    _doubling.calls += 1
    return x * 2.0


def _function_attribute(x):
    _doubling.calls = 0
    while jitc.sum(x) < 100.0:
        x = _doubling(x)
    return x, _doubling.calls


class _Steps:
    steps = 0

    def run(self, x):
        while jitc.sum(x) < 100.0:
            x = x * 2.0
            type(self).steps += 1
        n = type(self).steps
        type(self).steps = 0
        return x, n


def _doublings(x):
    while jitc.sum(x) < 100.0:
        x = x * 2.0
        yield x


def _consumed(x):
    ys = [x] + list(_doublings(x))
    return ys[-1], len(ys)


@pytest.mark.parametrize("fn", [_target_after_loop, _bound_rebound, _function_attribute, _Steps().run, _consumed],
                         ids=["target after the loop", "range bound rebound", "function attribute",
                              "class attribute through type(self)", "generator consumed by list"])
def test_loops_whose_python_side_the_tests_cannot_see_are_not_folded(exact_math, fn):
    """A `for` loop's target read after the loop, a range bound a nested
    function rebinds, a counter in a function's attribute or in a class
    attribute reached through `type(self)`, a loop in a generator that a C
    call consumes: each was served by a folded loop with the traced
    Python-side result; now each call equals the plain call."""
    staged = jitc.function(fn)

    def plain_values(result):
        return tuple(v.numpy().tolist() if isinstance(v, jitc.Var) else v
                     for v in (result if isinstance(result, tuple) else (result,)))

    for k, v in enumerate([20.0, 10.0, 30.0, 1.0, 0.5, 60.0, 3.0]):
        x = np.full(2, v, np.float32)
        assert plain_values(staged(x)) == plain_values(fn(jitc.Var(x))), (k, staged.explain())


class _Scaled:
    def __init__(self):
        self.s = 2.0

    def step(self, x):
        return x * self.s

    def __call__(self, x):
        return x * self.s


def test_what_jitc_function_takes():
    """A bound method keeps its object (also when the Function is read as
    another class's attribute), a callable object is `self` of its
    `__call__`, and anything else is a TypeError that says what to do."""
    import functools

    scaled = _Scaled()
    holder = type("Holder", (), {"s": 5.0, "g": jitc.function(scaled.step)})
    x = np.ones(2, np.float32)
    np.testing.assert_array_equal(holder().g(x).numpy(), x * 2.0)
    model = jitc.function(scaled)
    for k in range(5):
        scaled.s = 2.0 if k < 4 else 3.0
        np.testing.assert_array_equal(model(x).numpy(), x * scaled.s)
    assert model.stats()["staged"] >= 1, model.explain()
    with pytest.raises(TypeError, match="is a partial, not a Python function or method: wrap it in a def"):
        jitc.function(functools.partial(_Scaled.step, scaled))
    with pytest.raises(TypeError, match="is a jitc.function already"):
        jitc.function(model)
    with pytest.raises(TypeError, match="is a builtin_function_or_method, not a Python function"):
        jitc.function(len)


class _Shadowed:
    k = 2.0

    def __init__(self):
        self.k = 5.0

    def f(self, x):
        return x * type(self).k + self.k


def _uses_imported(x):
    import jitc_test_imported_config

    return x * jitc_test_imported_config.SCALE


def _keyword_order(x, **weights):
    for v in weights.values():
        x = x * 2.0 - v
    return x


def _set_order(x, values):
    for v in values:
        x = x * 2.0 - v
    return x


def _make_scaler(scale):
    def act(x):
        return x * scale

    def set_scale(value):
        nonlocal scale
        scale = value

    return act, set_scale


_ACT, _SET_SCALE = _make_scaler(2.0)
_GLOBAL_ACT = _make_scaler(2.0)[0]


def _acts(x):
    return _ACT(x)


class _Layers(list):
    pass


class _Key:
    def __init__(self, s):
        self.s = s


def _by_keys(x, table):
    for k, v in table.items():
        x = x * k.s + v
    return x


def test_python_state_the_facts_once_missed_is_not_served_stale(exact_math):
    """Each of these once served a graph staged for an old value: a class
    attribute the instance shadows, read through `type(self)`; a module
    imported in the body; the order of `**kwargs`; the order a set
    iterates in; the closure of a helper a factory made again; an
    attribute of a list subclass; an object key of a dict."""
    global _ACT, _SET_SCALE
    import sys
    import types as pytypes

    x = np.arange(1, 5, dtype=np.float32)

    def agree(staged, plain, *args, **kwargs):
        np.testing.assert_array_equal(staged(x, *args, **kwargs).numpy(),
                                      plain(jitc.Var(x), *args, **kwargs).numpy())

    shadowed = _Shadowed()
    staged = jitc.function(_Shadowed.f, profile=1)
    for k in range(4):
        _Shadowed.k = 2.0 if k < 3 else 7.0
        agree(lambda v: staged(shadowed, v), lambda v: _Shadowed.f(shadowed, v))
    _Shadowed.k = 2.0

    config = pytypes.ModuleType("jitc_test_imported_config")
    config.SCALE = 2.0
    sys.modules["jitc_test_imported_config"] = config
    try:
        staged = jitc.function(_uses_imported, profile=1)
        for k in range(4):
            config.SCALE = 2.0 if k < 3 else 7.0
            agree(staged, _uses_imported)
    finally:
        del sys.modules["jitc_test_imported_config"]

    staged = jitc.function(_keyword_order, profile=1)
    for _ in range(3):
        agree(staged, _keyword_order, a=1.0, b=5.0)
    agree(staged, _keyword_order, b=5.0, a=1.0)
    # (Only a function with `**kwargs` sees their order.)
    staged = jitc.function(_fixed_keywords, profile=1)
    agree(staged, _fixed_keywords, s=2.0, t=1.0)
    agree(staged, _fixed_keywords, t=1.0, s=2.0)
    assert staged.stats()["staged_graphs"] == 1 and staged.stats()["staged"] == 1, staged.explain()

    first, second = {1.0}, {9.0}
    first.add(9.0)
    second.add(1.0)
    assert list(first) != list(second)
    staged = jitc.function(_set_order, profile=1)
    for _ in range(3):
        agree(staged, _set_order, first)
    agree(staged, _set_order, second)

    _ACT, _SET_SCALE = _make_scaler(3.0)
    staged = jitc.function(_acts, profile=1)
    for k in range(4):
        if k == 3:
            _SET_SCALE(7.0)
        agree(staged, _acts)

    layers = _Layers([1.0])
    layers.scale = 2.0
    staged = jitc.function(lambda v, held: v * held.scale + held[0], profile=1)
    for k in range(4):
        layers.scale = 2.0 if k < 3 else 7.0
        agree(staged, lambda v, held: v * held.scale + held[0], layers)

    key = _Key(2.0)
    table = {key: 1.0}
    staged = jitc.function(_by_keys, profile=1)
    for k in range(4):
        key.s = 2.0 if k < 3 else 7.0
        agree(staged, _by_keys, table)


class _Mode(__import__("enum").Enum):
    TRAIN = 1
    EVAL = 2


class _ModeConfig:
    def __init__(self):
        self.mode = _Mode.TRAIN


_MODE_CONFIG = _ModeConfig()


def _by_mode(x):
    return x * 2.0 if _MODE_CONFIG.mode is _Mode.TRAIN else x + 1.0


class _Head:
    def __init__(self, size):
        self.size = size


_HEAD_A, _HEAD_B = _Head(3), _Head(3)


def _weighted(x):
    return jitc.sum(x * _WEIGHTS[_HEAD_A])


class _Source:
    def __init__(self):
        self.path = "/data"


class _Batch:
    def __init__(self, x):
        self.x, self.meta = x, _Source()


def test_which_object_an_enum_member_or_a_dict_key_is_is_a_fact():
    """An enum member held two levels down (`CONFIG.mode`), and a dict's
    object keys (two keys with equal attributes, swapped): which object it
    is, is a fact (the graph for TRAIN used to serve EVAL). An object
    rebuilt equal for each call (a batch's metadata) is no new fact."""
    global _WEIGHTS
    staged = jitc.function(_by_mode, profile=1)
    x = np.full(2, 3.0, np.float32)
    for k in range(8):
        _MODE_CONFIG.mode = _Mode.TRAIN if k < 4 else _Mode.EVAL
        np.testing.assert_array_equal(staged(x).numpy(), _by_mode(jitc.Var(x)).numpy(), err_msg=f"call {k}")
    assert staged.stats()["staged"] >= 5, staged.explain()
    staged = jitc.function(_weighted, profile=1)
    for k in range(6):
        _WEIGHTS = {_HEAD_A: 1.0, _HEAD_B: 0.0} if k < 4 else {_HEAD_B: 1.0, _HEAD_A: 0.0}
        assert staged(x).item() == _weighted(jitc.Var(x)).item(), k
    # A set's object members too.
    staged = jitc.function(lambda v, active: v * (2.0 if _HEAD_A in active else 1.0), profile=1)
    for k in range(6):
        active = {_HEAD_A} if k < 4 else {_HEAD_B}
        np.testing.assert_array_equal(staged(x, active).numpy(), x * (2.0 if k < 4 else 1.0))
    # In a tuple key too.
    staged = jitc.function(lambda v, table: jitc.sum(v * table[(_HEAD_A, 0)]), profile=1)
    for k in range(6):
        table = {(_HEAD_A, 0): 1.0, (_HEAD_B, 0): 0.0} if k < 4 else {(_HEAD_B, 0): 1.0, (_HEAD_A, 0): 0.0}
        assert staged(x, table).item() == (6.0 if k < 4 else 0.0), k
    staged = jitc.function(lambda batch: jitc.sum(batch.x * 2.0), profile=1)
    for k in range(12):
        assert staged(_Batch(jitc.Var(np.full(3, float(k), np.float32)))).item() == 6.0 * k
    assert staged.stats()["staged"] >= 10 and staged.stats()["give_ups"] == 0, staged.explain()


def test_a_container_subclass_argument_runs_imperatively():
    """An `OrderedDict` or a list subclass with attributes as an argument
    (or `self`) is an object and a container at once, which staging does
    not cover both ways yet: such calls run imperatively, say so, and give
    the plain results, items and attribute writes included (staged, the
    items were once no facts, and then the attribute writes no state)."""
    staged = jitc.function(lambda b: jitc.sum(b["x"] * b["w"]), profile=1)
    for k in range(6):
        batch = collections.OrderedDict(x=np.full(3, k, np.float32), w=float(k))
        assert staged(batch).item() == 3.0 * k * k, k

    def note(x, held):
        held.last = x * 2.0
        return x * held[1]

    noted = jitc.function(note, profile=1)
    for k in range(5):
        held = _Layers([0.0, float(k)])
        np.testing.assert_array_equal(noted(np.ones(2, np.float32), held).numpy(), np.full(2, float(k)))
        np.testing.assert_array_equal(held.last.numpy(), np.full(2, 2.0))
    for fn in (staged, noted):
        assert fn.stats()["staged"] == 0 and "a subclass of a builtin container" in fn.explain(), fn.explain()
    # Holding a NumPy array, it is left as it is (made again with a
    # jitc.Var, it lost its attributes: an AttributeError).
    scaled = jitc.function(lambda x, held: x * held.scale + held[0], profile=1)
    for k in range(3):
        held = _Layers([np.full(2, float(k), np.float32)])
        held.scale = 3.0
        np.testing.assert_array_equal(scaled(np.ones(2, np.float32), held).numpy(), np.full(2, 3.0 + k))
    assert "argument with attributes holds NumPy arrays" in scaled.explain(), scaled.explain()


def _fixed_keywords(x, s, t):
    return x * s - t


def test_a_string_constant_does_not_make_a_global_a_fact():
    """A dict key `"loss"` in the code does not make a global `loss` (the
    caller's loop variable) a fact: the step is staged and served."""
    global loss
    w = jitc.Var(np.ones((4, 1), np.float32))

    def step(x):
        out = x @ w
        return {"loss": jitc.sum(out * out)}

    staged = jitc.function(step, profile=1)
    for k in range(8):
        x = np.random.default_rng(k).random((3, 4)).astype(np.float32)
        loss = staged(x)["loss"].item()
        assert loss == step(jitc.Var(x))["loss"].item()
    assert staged.stats()["staged"] >= 6 and staged.stats()["give_ups"] == 0, staged.explain()


class _BoundStep:
    def __init__(self):
        self.h = jitc.Var(np.zeros(3, np.float32))
        self.step = jitc.function(self._step)

    def _step(self, x):
        if jitc.sum(x) > 0:
            self.h = x * 2.0
        return x


def test_a_bound_method_made_speculative_tracks_its_object():
    """`jitc.function(self._step)`: the method's object is `self` of every
    call, so the attribute the step rebinds is state of the graph (served
    calls used to leave it stale)."""
    staged, plain = _BoundStep(), _BoundStep()
    for k in range(9):
        x = np.full(3, float(k % 3) - 0.5, np.float32)
        staged.step(x)
        plain._step(jitc.Var(x))
        np.testing.assert_array_equal(staged.h.numpy(), plain.h.numpy(), err_msg=f"call {k}")
    assert staged.step.stats()["staged"] >= 4, staged.step.explain()


class _Tally:
    def __init__(self, prefix):
        self.prefix, self.count = prefix, 0

    def step(self, x):
        if jitc.sum(x) > 0:
            # Only this way rebinds an attribute: the traces write other
            # things, so they are staged as a tree, whose leaves differ.
            self.count += 1
        jitc.write_state(self.prefix + "m", jitc.read_state(self.prefix + "m") + jitc.sum(x))
        return {"h": x * 2.0, "count": self.count}

    staged = jitc.function(step)


def test_named_state_written_by_the_leaves_of_a_tree_lands_in_each_leafs_place(exact_math):
    """A tree's leaves give their outputs in their own order (one also
    gives `self.count`): each writes the named state from its own output
    (all leaves wrote it from the last trace's position, out of range for
    the other leaf), and a dict with a relaxed number in it compares with
    the imperative run (it could not, so the number stayed a fact)."""
    staged, plain = _Tally("fn.tally.s."), _Tally("fn.tally.p.")
    for prefix in (staged.prefix, plain.prefix):
        jitc.set_state(prefix + "m", np.zeros((), np.float32))
    rng = np.random.default_rng(12)
    for k in range(16):
        x = rng.standard_normal(3).astype(np.float32)
        got, want = staged.staged(x), plain.step(jitc.Var(x))
        np.testing.assert_array_equal(got["h"].numpy(), want["h"].numpy())
        assert got["count"] == want["count"] == staged.count == plain.count, k
        np.testing.assert_array_equal(jitc.read_state(staged.prefix + "m").numpy(),
                                      jitc.read_state(plain.prefix + "m").numpy())
    stats = _Tally.staged.stats()
    explained = _Tally.staged.explain()
    assert stats["staged"] >= 8 and stats["relaxations_undone"] == 0, explained
    assert "staged as a tree" in explained, explained


def test_appends_through_a_bound_list_method_passed_in_are_not_lost():
    """`emit=log.append` passed in (or held by a global): an append through
    it changes a list that outlives the call, so the function stays
    imperative; the list's contents are state the call is compared on
    (it was compared by the method's identity, and served calls dropped
    the appends)."""

    def fn(x, emit):
        y = x * 2.0
        emit(y)
        return y + 1.0

    staged = jitc.function(fn)
    got, want = [], []
    for k in range(6):
        x = np.full(2, float(k), np.float32)
        np.testing.assert_array_equal(staged(x, got.append).numpy(), fn(jitc.Var(x), want.append).numpy())
    assert len(got) == len(want) == 6
    for a, b in zip(got, want):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    assert staged.stats()["staged"] == 0
    assert "it changes the contents of an argument" in staged.explain(), staged.explain()


def test_named_tuples_of_one_name_are_told_apart_by_their_class():
    """Two named tuple classes may share a name (and differ in their
    fields' order): the class is a fact by identity, so a call with the
    other class is profiled on its own, and a returned named tuple is of
    the class the call built."""
    first = collections.namedtuple("Pair", "a b")
    second = collections.namedtuple("Pair", "b a")
    staged = jitc.function(lambda p: (p.a * 2.0, p))
    one, ten = jitc.Var(np.ones(2, np.float32)), jitc.Var(np.full(2, 10.0, np.float32))
    for _ in range(4):
        staged(first(one, ten))
    result, same = staged(second(one, ten))
    np.testing.assert_array_equal(result.numpy(), np.full(2, 20.0, np.float32))
    assert type(same) is second
    result, same = staged(first(one, ten))
    np.testing.assert_array_equal(result.numpy(), np.full(2, 2.0, np.float32))
    assert type(same) is first and staged.stats()["staged"] >= 1, staged.explain()


def test_an_error_computing_a_served_call_surfaces_where_the_plain_call_raises_it():
    """An integer division by zero fails the fetch that computes it: a
    served call that fails so falls back, and the imperative run's
    result raises it when fetched, as the plain function's does (the
    served call raised it at the call)."""

    def fn(x, d):
        return jitc.binary(x, d, "div") + 1

    staged = jitc.function(fn)
    x = np.arange(4, dtype=np.int32)
    for _ in range(4):
        np.testing.assert_array_equal(staged(x, np.full(4, 2, np.int32)).numpy(), x // 2 + 1)
    result = staged(x, np.zeros(4, np.int32))
    with pytest.raises(jitc.JitcError):
        result.numpy()
    with pytest.raises(jitc.JitcError):
        fn(jitc.Var(x), jitc.Var(np.zeros(4, np.int32))).numpy()
    stats = staged.stats()
    assert stats["staged"] >= 1 and stats["fallbacks"] == 1, staged.explain()


class _SlotBase:
    __slots__ = ("scale",)


class _SlotsAndDict(_SlotBase):
    """Slots from a base, and a `__dict__`."""


def test_slots_an_object_with_a_dict_inherits_are_facts():
    """A slot of a base class is not in the object's `__dict__`: its value
    is a fact all the same (through the class reads of the names the code
    uses), so a changed value is profiled anew, not served stale; a call
    that sets one stays imperative."""

    def scaled(x, cfg):
        return x * cfg.scale

    def bump(x, cfg):
        cfg.scale = cfg.scale + 1.0
        return x * cfg.scale

    staged, bumped = jitc.function(scaled), jitc.function(bump)
    cfg, counter, twin = _SlotsAndDict(), _SlotsAndDict(), _SlotsAndDict()
    counter.scale = twin.scale = 0.0
    x = np.ones(2, np.float32)
    for k in range(8):
        cfg.scale = 2.0 if k < 5 else 5.0
        np.testing.assert_array_equal(staged(x, cfg).numpy(), np.full(2, cfg.scale, np.float32))
        np.testing.assert_array_equal(bumped(x, counter).numpy(), bump(jitc.Var(x), twin).numpy())
        assert counter.scale == twin.scale == k + 1
    assert staged.stats()["staged"] >= 2, staged.explain()
    assert bumped.stats()["staged"] == 0, bumped.explain()


class _Scheduled(_Regression):
    staged = jitc.function(_Regression.step)


@pytest.mark.parametrize("optimizer", [jitc.optim.SGD, jitc.optim.Adam])
def test_a_learning_rate_schedule_keeps_serving_one_graph(exact_math, optimizer):
    """`opt.lr` is state: a schedule that sets it before every step
    (24 values, more than `max_facts`) changes no fact, so one staged
    graph serves every step after profiling, and each step equals an
    imperative twin's."""
    name = optimizer.__name__
    staged = _Scheduled(f"opt.lr.s{name}.", optimizer, lr=0.1)
    plain = _Regression(f"opt.lr.p{name}.", optimizer, lr=0.1)
    rng = np.random.default_rng(6)
    before = _Scheduled.staged.stats()
    for k in range(24):
        staged.optimizer.lr = plain.optimizer.lr = 0.1 / (1 + k)
        _step_twins(staged, plain, rng, k)
    assert staged.optimizer.lr == plain.optimizer.lr == 0.1 / 24
    after = _Scheduled.staged.stats()
    assert after["staged"] - before["staged"] == 21 and after["give_ups"] == 0, _Scheduled.staged.explain()


class _Remade(_Regression):
    staged = jitc.function(_Regression.step)


def test_a_model_made_again_keeps_its_staged_step(exact_math):
    """A model (and its optimizer) made again for each of 20 trials: the
    new optimizer over the same parameters has the same rate's name, so
    the staged step's facts repeat, and it never gives up."""
    rng = np.random.default_rng(9)
    for trial in range(20):
        staged = _Remade("opt.again.s.", jitc.optim.SGD, lr=0.1)
        plain = _Regression("opt.again.p.", jitc.optim.SGD, lr=0.1)
        for k in range(2):
            _step_twins(staged, plain, rng, (trial, k))
    stats = _Remade.staged.stats()
    assert stats["give_ups"] == 0 and stats["staged"] >= 30 and stats["staged_graphs"] <= 2, _Remade.staged.explain()


class _Clipped(_Regression):
    """A step that branches on the learning rate, as a value of the graph."""

    def step(self, x, y):
        loss = _Regression.step(self, x, y)
        return loss * 2.0 if jitc.read_state(self.optimizer.lr_name) > 0.05 else loss

    staged = jitc.function(step)


class _Printed(_Regression):
    """A step that reads the learning rate into Python."""

    def step(self, x, y):
        loss = _Regression.step(self, x, y)
        return loss * 2.0 if self.optimizer.lr > 0.05 else loss

    staged = jitc.function(step)


def test_a_step_that_branches_on_the_learning_rate_is_staged(exact_math):
    """The rate as a value of the graph (`jitc.read_state(opt.lr_name)`):
    a branch on it is staged, a new rate that takes the other way falls
    back once and is merged in, never served stale. Read into Python
    (`opt.lr`), it keeps the step imperative, and the reason says so."""
    for cls, prefix in [(_Clipped, "opt.clip."), (_Printed, "opt.print.")]:
        staged = cls(prefix + "s.", jitc.optim.SGD, lr=0.1)
        plain = cls(prefix + "p.", jitc.optim.SGD, lr=0.1)
        rng = np.random.default_rng(8)
        for k in range(12):
            staged.optimizer.lr = plain.optimizer.lr = 0.1 if k < 6 or k % 2 else 0.01
            _step_twins(staged, plain, rng, k)
    stats = _Clipped.staged.stats()
    assert stats["staged"] >= 7 and stats["fallbacks"] == 1 and stats["give_ups"] == 0, _Clipped.staged.explain()
    stats = _Printed.staged.stats()
    assert stats["staged"] == 0, _Printed.staged.explain()
    assert "it reads the learning rate into Python (opt.lr)" in _Printed.staged.explain(), _Printed.staged.explain()


def indexed_by(x, n):
    return x[n] * 2.0 + x[-1:][0] + x[:n + 1].sum()


def sequence_sum(x):
    total = x[0] * 0.0
    for row in x:
        total = total + row * row
    return total


def number_as_sequence(x, n):
    # What an int raises where a tensor would index or iterate.
    caught = []
    for attempt in (lambda: n[0], lambda: iter(n), lambda: reversed(n), lambda: 1 in n):
        try:
            attempt()
        except TypeError as e:
            caught.append(str(e))
    return x * float(len(caught)), "; ".join(caught)


def assigns_into_number(x, n):
    try:
        n[0] = 1
    except TypeError as e:
        return x * 2.0, str(e)
    return x, ""


@pytest.mark.parametrize("fn,calls", [
    # An int argument used as an index and a slice bound: a fact by value
    # (the index reads it), each new value new facts, every result right.
    (indexed_by, [(0,), (1,), (2,), (1,), (3,), (0,), (2,)]),
    # A relaxed int meets subscripts, iteration, reversed() and `in` as an
    # int does: Python's own TypeErrors.
    (number_as_sequence, [(1,), (2,), (3,), (4,), (5,)]),
    (assigns_into_number, [(1,), (2,), (3,), (4,)]),
])
def test_indexing_with_and_into_python_numbers_agrees_with_imperative_execution(fn, calls):
    staged = jitc.function(fn, profile=2)
    x = np.arange(12, dtype=np.float32).reshape(4, 3)
    for call in calls:
        got = _outcome(staged, (x, *call))
        want = _outcome(fn, (jitc.Var(x), *call))
        assert got == want, (call, got, want)


def test_a_loop_over_a_tensors_rows_is_staged_per_length():
    staged = jitc.function(sequence_sum, profile=2)
    rng = np.random.default_rng(3)
    for length in (2, 3, 2, 3, 2, 3, 4, 2):
        x = rng.standard_normal((length, 5)).astype(np.float32)
        np.testing.assert_allclose(staged(x).numpy(), (x * x).sum(axis=0), rtol=1e-5, atol=1e-6)
    stats = staged.stats()
    assert stats["staged"] >= 3 and stats["give_ups"] == 0 and stats["fallbacks"] == 0, stats
