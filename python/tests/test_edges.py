"""Edge cases a first user meets, each once a defect: broadcasting against
a size-0 axis, reductions of booleans, integer constants (exact, and
range-checked when recorded), `ternary` broadcasting as `np.where`, and
the messages of index expressions, shapes and arguments."""

import numpy as np
import pytest

import jitc


def test_a_size_zero_axis_broadcasts_as_in_numpy():
    empty = np.zeros((0, 3), np.float32)
    e = jitc.Var(empty)
    assert (e + 1.0).numpy().shape == (0, 3)
    assert jitc.relu(e).numpy().shape == (0, 3)
    assert e.mean(1).numpy().shape == (0,)
    assert (jitc.Var(np.ones((1, 3), np.float32)) + e).numpy().shape == (0, 3)
    assert jitc.grad((e * 2.0).sum(), e).numpy().shape == (0, 3)
    with pytest.raises(jitc.JitcError, match="do not broadcast"):
        e + jitc.Var(np.ones((2, 3), np.float32))


@pytest.mark.parametrize("axis", [None, 0, 1, -1, (0, 1), np.int64(1)])
@pytest.mark.parametrize("name", ["sum", "max", "min"])
def test_reductions_of_booleans_are_numpys(name, axis):
    a = np.array([[1.0, -2.0, 3.0], [-1.0, 0.5, -7.0]], np.float32) > 0
    got = getattr(jitc.Var(a), name)(axis=axis).numpy()
    want = getattr(a, name)(axis=axis)
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)


def test_integer_constants_are_exact_and_checked_when_recorded():
    big = 2**53 + 1
    np.testing.assert_array_equal(jitc.full((2,), big, np.int64).numpy(), np.full(2, big, np.int64))
    i64 = jitc.Var(np.arange(6, dtype=np.int64).reshape(2, 3))
    assert jitc.pad(i64, [(1, 1), (0, 0)], big).numpy()[0, 0] == big
    assert jitc.full((1,), 2**63 - 1, np.int64).numpy()[0] == 2**63 - 1
    assert jitc.full((1,), -(2**63), np.int64).numpy()[0] == -(2**63)
    # Out of range: NumPy's OverflowError, before anything is recorded.
    i32 = jitc.Var(np.arange(6, dtype=np.int32).reshape(2, 3))
    for record in [
        lambda: jitc.full((2,), 2**40, np.int32),
        lambda: jitc.pad(i32, [(1, 1), (0, 0)], 2**40),
        lambda: jitc.reindex(i32, [3, 5], ["i0", "i1"], 2**40),
        lambda: jitc.full((2,), 2**63, np.int64),
    ]:
        with pytest.raises(OverflowError, match="out of bounds for int"):
            record()
    jitc.sync()
    # Floats made integers: truncated, as NumPy's casts; NaN is an error.
    np.testing.assert_array_equal(jitc.full((2,), -2.7, np.int32).numpy(), [-2, -2])
    with pytest.raises(ValueError, match="cannot convert float nan to integer"):
        jitc.full((2,), float("nan"), np.int64)
    # A float type takes any number.
    assert jitc.full((1,), 2**70, np.float32).numpy()[0] == np.float32(2.0**70)
    assert jitc.full((1,), 3, np.bool_).numpy()[0]


def test_ternary_broadcasts_as_numpys_where():
    a = np.array([[1.0, -2.0, 3.0], [-1.0, 0.5, -7.0]], np.float32)
    x = jitc.Var(a)
    np.testing.assert_array_equal(jitc.ternary(x > 0, x, 0.0).numpy(), np.where(a > 0, a, 0.0))
    row = np.array([True, False, True])
    np.testing.assert_array_equal(jitc.ternary(jitc.Var(row), x, -x).numpy(), np.where(row, a, -a))
    np.testing.assert_array_equal(jitc.ternary(x > 0, 1.0, x[0]).numpy(), np.where(a > 0, 1.0, a[0]))
    grad = jitc.grad(jitc.sum(jitc.ternary(x > 0, x * 2.0, 0.0)), x)
    np.testing.assert_array_equal(grad.numpy(), np.where(a > 0, 2.0, 0.0))


def test_index_expressions_say_what_to_write():
    x = jitc.Var(np.ones((3, 4), np.float32))
    with pytest.raises(jitc.JitcError, match="write '%' as 'mod'"):
        jitc.reindex(x, [3, 4], ["i0", "i1 % 2"])
    with pytest.raises(jitc.JitcError, match="write '/' as 'floordiv'"):
        jitc.reindex(x, [3, 4], ["i0", "i1 / 2"])
    with pytest.raises(jitc.JitcError, match="overflow condition 'i0 > 1 and i1 < 2': 'and' does not join"):
        jitc.reindex(x, [3, 4], ["i0", "i1"], 0.0, ["i0 > 1 and i1 < 2"])
    # Refused when recorded: a failing op would fail every fetch sharing its work.
    with pytest.raises(jitc.JitcError, match="divides by 0: a divisor must be a positive constant"):
        jitc.reindex(x, [3, 4], ["i0", "i1 mod 0"])
    with pytest.raises(jitc.JitcError, match="',' is not part of one"):
        jitc.reindex(x, [3, 4], ["i0, i1", "i1"])


def test_shapes_and_arguments_get_clear_errors():
    x = jitc.Var(np.ones((3, 4), np.float32))
    for record, what in [
        (lambda: jitc.full((-1,), 1.0), "full: shape \\(-1,\\) has a negative size"),
        (lambda: jitc.reindex(x, [-3, 4], ["i0", "i1"]), "reindex: shape \\(-3, 4\\) has a negative size"),
        (lambda: x.reshape(-3, -1), "reshape: shape \\(-3, -1\\) has a negative size"),
        (lambda: jitc.conv2d(jitc.Var(np.ones((1, 1, 4, 4), np.float32)),
                             jitc.Var(np.ones((1, 1, 2, 2), np.float32)), stride=0),
         "the stride must be 1 or more"),
    ]:
        with pytest.raises(jitc.JitcError, match=what):
            record()
    with pytest.raises(TypeError, match="grad's loss is a jitc.Var"):
        jitc.grad(3.0, x)
    with pytest.raises(TypeError, match="grad's params are a jitc.Var or a list of them, not float"):
        jitc.grad(x.sum(), 3.0)
    with pytest.raises(TypeError, match="grad's params are jitc.Vars"):
        jitc.grad(x.sum(), [x, 3.0])
    np.testing.assert_array_equal(x.sum(axis=np.int64(0)).numpy(), np.full(4, 3.0, np.float32))


def test_bitwise_operators_are_numpys():
    a = np.array([[1.0, -2.0, 3.0], [-1.0, 0.5, -7.0]], np.float32)
    x = jitc.Var(a)
    np.testing.assert_array_equal(((x > 0) & (x < 2)).numpy(), (a > 0) & (a < 2))
    np.testing.assert_array_equal(((x > 0) | (x < -5)).numpy(), (a > 0) | (a < -5))
    np.testing.assert_array_equal(((x > 0) ^ True).numpy(), (a > 0) ^ True)
    np.testing.assert_array_equal((~(x > 0)).numpy(), ~(a > 0))
    i = np.array([5, -3, 12], np.int32)
    v = jitc.Var(i)
    np.testing.assert_array_equal((v & 6).numpy(), i & 6)
    np.testing.assert_array_equal((3 | v).numpy(), 3 | i)
    np.testing.assert_array_equal((~v).numpy(), ~i)
    np.testing.assert_array_equal((v ^ np.int32(9)).numpy(), i ^ 9)
    for record in [lambda: x & x, lambda: ~x, lambda: 1 | x, lambda: +(x > 0)]:
        with pytest.raises(TypeError, match="not defined on"):
            record()


def test_a_rank_0_var_formats_and_rounds_as_its_number():
    s = jitc.Var(np.float32(2.345))
    assert f"{s:.2f}" == "2.35"
    assert round(s) == 2 and round(s, 1) == 2.3
    assert +s is s


def test_bitwise_operators_with_numpy_on_the_left():
    i = np.array([1, 2, 3], np.int32)
    a = jitc.Var(i)
    m = jitc.Var(np.array([True, False, True]))
    np.testing.assert_array_equal((i & a).numpy(), i & i)
    np.testing.assert_array_equal((np.int32(3) | a).numpy(), 3 | i)
    np.testing.assert_array_equal((np.True_ ^ m).numpy(), [False, True, False])
    np.testing.assert_array_equal(np.bitwise_and(a, a).numpy(), i)
    np.testing.assert_array_equal(np.invert(a).numpy(), ~i)
    np.testing.assert_array_equal(np.invert(m).numpy(), [False, True, False])
    with pytest.raises(TypeError, match="not defined on NoneType"):
        a & None


def test_invert_of_a_relaxed_int_stays_a_64_bit_number():
    # `~n` of a Python int that jitc.function relaxes into a graph input
    # computes in 64 bits, as Python does, whichever call staged it.
    x = jitc.Var(np.ones(1, np.float64))
    f = jitc.function(lambda x, n: x * ((~n) * 100000))
    for n in [1, 2, 3, 4, 5, 6, 100000]:
        np.testing.assert_array_equal(f(x, n).numpy(), [(~n) * 100000])


def test_constants_from_arrays_and_rank_0_vars():
    big = 2**62 + 1
    assert jitc.full([1], np.array(big), np.int64).numpy()[0] == big
    np.testing.assert_array_equal(jitc.full([2], jitc.Var(np.float32(3.5))).numpy(), [3.5, 3.5])
    with pytest.raises(TypeError, match="a constant is one number"):
        jitc.full([2], np.ones(2))


def test_grad_takes_any_iterable_of_params():
    x = jitc.Var(np.ones(3, np.float32))
    (g,) = jitc.grad((x * 2.0).sum(), (p for p in [x]))
    np.testing.assert_array_equal(g.numpy(), [2.0, 2.0, 2.0])


def test_a_var_copies_as_itself_and_pickles_as_its_data():
    import copy
    import pickle

    x = jitc.Var(np.arange(3, dtype=np.float32)) * 2.0
    assert copy.copy(x) is x
    assert copy.deepcopy({"w": x})["w"] is x
    back = pickle.loads(pickle.dumps(x))
    assert isinstance(back, jitc.Var) and back.dtype == np.float32
    np.testing.assert_array_equal(back.numpy(), [0.0, 2.0, 4.0])


def test_index_arithmetic_that_leaves_64_bits_is_refused_when_recorded():
    # MLIR folds an affine expression's constants modulo 2**64 as it
    # parses: (i1 * 2**62) * 4 would become i1 * 0, reading column 0.
    x = jitc.Var(np.ones((3, 4), np.float32))
    with pytest.raises(jitc.JitcError, match="its arithmetic leaves 64 bits"):
        jitc.reindex(x, [3, 4], ["i0", "(i1 * 4611686018427387904) * 4"], -1.0)


def test_bool_bytes_other_than_0_and_1_are_true_as_numpy_reads_them():
    raw = np.array([0, 1, 2, 255], np.uint8).view(np.bool_)
    np.testing.assert_array_equal((~jitc.Var(raw)).numpy(), [True, False, False, False])
    np.testing.assert_array_equal(jitc.Var(raw).astype(np.int32).numpy(), [0, 1, 1, 1])


def test_a_reshape_of_many_size_1_dimensions_records():
    # Size-1 dimensions add no terms to the flat position, so a rank of
    # hundreds stays within an index expression's 4 KiB.
    big = jitc.full((2**20, 2**20), 1.0)
    assert big.reshape((1,) * 200 + (2**20, 2**20)).shape == (1,) * 200 + (2**20, 2**20)
    small = np.arange(6, dtype=np.float32).reshape(2, 3)
    np.testing.assert_array_equal(
        jitc.Var(small).reshape((1, 3, 1, 2)).numpy(), small.reshape((1, 3, 1, 2))
    )


def test_a_state_write_whose_fetch_fails_is_dropped():
    jitc.set_state("edges.n", np.array([7, 7], np.int32))
    n = jitc.read_state("edges.n")
    # (jitc.binary: an integer division, which fails on a zero divisor.)
    jitc.write_state("edges.n", jitc.binary(n, jitc.Var(np.zeros(2, np.int32)), "div"))
    with pytest.raises(jitc.JitcError, match="division by zero"):
        jitc.sync()
    del n
    jitc.sync()
    np.testing.assert_array_equal(jitc.read_state("edges.n").numpy(), [7, 7])
    np.testing.assert_array_equal(jitc.get_state("edges.n"), [7, 7])


def test_a_held_value_that_fails_does_not_fail_a_fetch_sharing_its_work():
    a = jitc.Var(np.array([1, 2, 3], np.int32))
    x = a + 1
    bad = jitc.binary(x, jitc.Var(np.zeros(3, np.int32)), "div")
    good = x * 2
    np.testing.assert_array_equal(good.numpy(), [4, 6, 8])
    with pytest.raises(jitc.JitcError, match="division by zero"):
        bad.numpy()


def test_set_state_from_a_var_keeps_its_type():
    jitc.set_state("edges.f64", jitc.Var(np.array([1e-300, 1 + 1e-12])))
    assert jitc.get_state("edges.f64").dtype == np.float64
    np.testing.assert_array_equal(jitc.get_state("edges.f64"), [1e-300, 1 + 1e-12])
    jitc.set_state("edges.i64", jitc.Var(np.array([2**40], np.int64)))
    np.testing.assert_array_equal(jitc.get_state("edges.i64"), np.array([2**40], np.int64))


def test_numpy_maximum_and_minimum_record_max_and_min():
    a = np.array([1.0, np.nan, 3.0, -2.0], np.float32)
    b = np.array([2.0, 0.0, np.nan, -5.0], np.float32)
    np.testing.assert_array_equal(np.maximum(a, jitc.Var(b)).numpy(), np.maximum(a, b))
    np.testing.assert_array_equal(np.minimum(jitc.Var(b), 2.5).numpy(), np.minimum(b, 2.5))
    p, q = np.array([True, True, False]), np.array([True, False, False])
    np.testing.assert_array_equal(np.maximum(jitc.Var(p), q).numpy(), np.maximum(p, q))
    np.testing.assert_array_equal(np.minimum(p, jitc.Var(q)).numpy(), np.minimum(p, q))


def test_grad_by_an_integer_value_says_which_and_why():
    w = jitc.Var(np.array([1.0, 2.0], np.float32))
    n = jitc.Var(np.array([1, 2], np.int32))
    loss = jitc.sum(w * n)
    with pytest.raises(jitc.JitcError, match=r"position 1 \(counting from 0\) is i32"):
        jitc.grad(loss, [w, n])


def test_a_failing_staged_call_does_not_drop_state_writes_at_sync():
    @jitc.function
    def divide(x, y):
        return x // y

    with pytest.raises(jitc.JitcError, match="division by zero"):
        divide(jitc.Var(np.array([5], np.int32)), jitc.Var(np.array([0], np.int32))).numpy()
    jitc.set_state("edges.sync", np.zeros(2))
    jitc.write_state("edges.sync", jitc.read_state("edges.sync") + 1.0)
    # The function keeps its trace (and the value that failed): sync still
    # reports it, but commits the write first.
    with pytest.raises(jitc.JitcError, match="division by zero"):
        jitc.sync()
    np.testing.assert_array_equal(jitc.get_state("edges.sync"), [1.0, 1.0])
