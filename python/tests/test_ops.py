"""Every op of the Python package against NumPy, on random shapes: the
meta-operators (padded, strided and flipped reindexes, overflow conditions,
every reduction kind) and the op library built from them."""

import numpy as np
import pytest

import jitc

RNG = np.random.default_rng(20261124)


def rand(*shape, dtype=np.float32):
    return RNG.uniform(-2.0, 2.0, size=shape).astype(dtype)


def close(got, want, rtol=1e-5, atol=1e-5):
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol)


def shapes(count, rank, low=1, high=7):
    return [tuple(int(n) for n in RNG.integers(low, high, size=rank)) for _ in range(count)]


# -- the meta-operators ------------------------------------------------------------

@pytest.mark.parametrize("shape", shapes(4, 2))
def test_reindex_pads_strides_flips_and_transposes(shape):
    a, b = shape
    x = rand(a, b)
    v = jitc.Var(x)
    padded = np.full((a + 2, b + 2), -1.5, np.float32)
    padded[1:-1, 1:-1] = x
    close(jitc.reindex(v, [a + 2, b + 2], ["i0 - 1", "i1 - 1"], -1.5).numpy(), padded)
    close(jitc.reindex(v, [a, (b + 1) // 2], ["i0", "i1 * 2"]).numpy(), x[:, ::2])
    close(jitc.reindex(v, [a, b], [f"{a - 1} - i0", f"{b - 1} - i1"]).numpy(), x[::-1, ::-1])
    close(jitc.reindex(v, [b, a], ["i1", "i0"]).numpy(), x.T)
    close(jitc.reindex(v, [3, a, b], lambda i0, i1, i2: [i1, i2]).numpy(), np.broadcast_to(x, (3, a, b)))


def test_overflow_conditions_blank_what_they_hold_for():
    x = rand(4, 5)
    v = jitc.Var(x)
    got = jitc.reindex(v, [4, 5], ["i0", "i1"], 9.0, ["i0 < 1", "i1 >= 3"]).numpy()
    want = x.copy()
    want[0, :] = 9.0
    want[:, 3:] = 9.0
    close(got, want)


@pytest.mark.parametrize("kind,reference", [
    ("add", np.sum), ("mul", np.prod), ("max", np.max), ("min", np.min),
])
@pytest.mark.parametrize("shape", shapes(3, 3))
def test_every_float_reduction(kind, reference, shape):
    x = rand(*shape)
    v = jitc.Var(x)
    close(jitc.reindex_reduce(v, kind, [shape[0]], ["i0"]).numpy(), reference(x, axis=(1, 2)), rtol=1e-4)
    close(jitc.reindex_reduce(v, kind, [shape[2], shape[1]], ["i2", "i1"]).numpy(),
          reference(x, axis=0).T, rtol=1e-4)
    close(jitc.reindex_reduce(v, kind, [], []).numpy(), reference(x), rtol=1e-4)


@pytest.mark.parametrize("kind,reference", [("and", np.all), ("or", np.any)])
def test_boolean_reductions(kind, reference):
    x = RNG.integers(0, 2, size=(5, 6)).astype(bool)
    got = jitc.reindex_reduce(jitc.Var(x), kind, [5], ["i0"]).numpy()
    np.testing.assert_array_equal(got, reference(x, axis=1))


def test_integer_ops():
    x = RNG.integers(-50, 50, size=(4, 3)).astype(np.int32)
    y = RNG.integers(1, 9, size=(4, 3)).astype(np.int32)
    vx, vy = jitc.Var(x), jitc.Var(y)
    np.testing.assert_array_equal((vx + vy).numpy(), x + y)
    np.testing.assert_array_equal((vx * 3).numpy(), x * 3)
    np.testing.assert_array_equal(jitc.sum(vx, 1).numpy(), x.sum(axis=1))
    np.testing.assert_array_equal(jitc.relu(vx).numpy(), np.maximum(x, 0))


def test_integers_meeting_floats_promote_and_true_division_gives_floats():
    # As Jittor: an int or bool tensor that meets a float number computes in
    # float32 (float64 for int64), with a float tensor in that tensor's
    # type, and `/` of integers is true division.
    x = RNG.integers(-50, 50, size=(4, 3)).astype(np.int32)
    y = RNG.integers(1, 9, size=(4, 3)).astype(np.int32)
    f = RNG.standard_normal((4, 3)).astype(np.float32)
    vx, vy, vf = jitc.Var(x), jitc.Var(y), jitc.Var(f)
    b = x > 0
    for got, want, dtype in [
        (vx / vy, x / y, np.float32),
        (vx / 2, x / 2, np.float32),
        (7 / vy, 7 / y, np.float32),
        (vx * 0.5, x * 0.5, np.float32),
        (0.25 + vx, 0.25 + x, np.float32),
        (vx - 1.5, x - 1.5, np.float32),
        (abs(vx) ** 0.5, np.abs(x) ** 0.5, np.float32),
        (np.true_divide(x, vy), x / y, np.float32),
        (jitc.Var(b) + 0.5, b + 0.5, np.float32),
        (jitc.Var(b) / jitc.Var(b | True), b / True, np.float32),
        # NumPy scalars, 0-d arrays and lists of floats meet a tensor as
        # Python floats do.
        (vx * np.float64(0.5), x * 0.5, np.float32),
        (vx * np.array(0.5), x * 0.5, np.float32),
        (vx + [0.5, 1.5, 2.5], x + np.array([0.5, 1.5, 2.5]), np.float32),
        (vf + vx * np.sqrt(2.0), f + x * np.float32(np.sqrt(2.0)), np.float32),
        # A float32 tensor with an int tensor: float32.
        (vf * vx, f * x.astype(np.float32), np.float32),
        (jitc.mean(vx), x.mean(), np.float32),
    ]:
        assert got.dtype == dtype
        close(got.numpy(), np.asarray(want).astype(dtype), rtol=1e-6)
    # int64 computes in float64 (exact where float32 is not).
    big = np.array([2**40 + 1, -3, 5], np.int64)
    vbig = jitc.Var(big)
    for got, want in [(vbig * 0.5, big * 0.5), (vbig / vbig, big / big), (vbig / 2, big / 2)]:
        assert got.dtype == np.float64
        np.testing.assert_array_equal(got.numpy(), want)
    np.testing.assert_array_equal((vbig == 2.0**40).numpy(), big == 2.0**40)
    # A float64 tensor keeps its precision, with ints and with numbers.
    z = RNG.standard_normal((4, 3))
    for got, want in [(vx * jitc.Var(z), x * z), (jitc.Var(z) * 0.1, z * 0.1)]:
        assert got.dtype == np.float64
        np.testing.assert_array_equal(got.numpy(), want)
    # Comparisons with a float compare the values (the old rule compared
    # with the float truncated to the tensor's type).
    for got, want in [
        (vx < 0.5, x < 0.5), (vx == 0.5, x == 0.5), (vx != 0.5, x != 0.5), (vx >= -0.5, x >= -0.5),
        (0.5 > vx, 0.5 > x), (vx < [1.5, -0.5, 0.5], x < np.array([1.5, -0.5, 0.5])),
    ]:
        np.testing.assert_array_equal(got.numpy(), want)
    # Division by zero is IEEE's, as in NumPy.
    zero = np.zeros(3, np.int32)
    with np.errstate(divide="ignore", invalid="ignore"):
        np.testing.assert_array_equal(
            (jitc.Var(np.array([1, -1, 0], np.int32)) / jitc.Var(zero)).numpy(),
            (np.array([1, -1, 0], np.int32) / zero).astype(np.float32),
        )
    # Integers with integers stay integers.
    assert (vx * 3).dtype == np.int32 and (vx + vy).dtype == np.int32 and (vx * np.int64(3)).dtype == np.int32
    # The explicit op keeps its rule: a number takes the tensor's type.
    np.testing.assert_array_equal(jitc.binary(vx, 0.5, "mul").numpy(), x * 0)


def test_mixed_widths_promote_to_the_wider_type_as_numpy():
    # Two tensors (or a tensor and an array) of one kind but different
    # widths compute in the wider type; a boolean meeting an integer
    # tensor takes its type, and an integer number makes it int32 (NumPy's
    # default int is int64; jitc's, as Jittor's, int32).
    f, d = rand(3, 4), RNG.standard_normal((3, 4))
    i = RNG.integers(-9, 9, size=(3, 4)).astype(np.int32)
    j = RNG.integers(-9, 9, size=(3, 4)).astype(np.int64)
    b = RNG.integers(0, 2, size=(3, 4)).astype(bool)
    vf, vd, vi, vj, vb = (jitc.Var(a) for a in (f, d, i, j, b))
    for got, want, dtype in [
        (vf + vd, f + d, np.float64),
        (vd * vf, d * f, np.float64),
        (vf - d, f - d, np.float64),
        (vf < vd, f < d, np.bool_),
        (vi + vj, i + j, np.int64),
        (vj * vi, j * i, np.int64),
        (vi + j, i + j, np.int64),
        (vi + np.arange(4), i + np.arange(4), np.int64),
        (vb + vi, b + i, np.int32),
        (vj - vb, j - b, np.int64),
        (vb * 3, b.astype(np.int32) * 3, np.int32),
        (vb == 2, b == 2, np.bool_),
    ]:
        assert got.dtype == dtype, (got.dtype, dtype)
        np.testing.assert_array_equal(got.numpy(), np.asarray(want).astype(dtype))
    nonzero = np.where(j == 0, 5, j)
    got = vi // jitc.Var(nonzero)
    assert got.dtype == np.int64
    np.testing.assert_array_equal(got.numpy(), i // nonzero)
    # Booleans with booleans, as NumPy: + is or, * is and, - is an error.
    c = RNG.integers(0, 2, size=(3, 4)).astype(bool)
    vc = jitc.Var(c)
    row = [True, False, True, True]
    for got, want in [(vb + vc, b + c), (vb * vc, b * c), (vb + True, b + True), (vb + row, b + row), (row * vb, b * row)]:
        assert got.dtype == np.bool_
        np.testing.assert_array_equal(got.numpy(), want)
    got = vb + [1, 2, 3, 4]
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got.numpy(), b + np.array([1, 2, 3, 4]))
    for bad in (lambda: vb - vc, lambda: vb - row):
        with pytest.raises(jitc.JitcError, match="- of two booleans is not supported"):
            bad()
    # An array of a type jitc lacks: cast where NumPy casts it safely,
    # otherwise the error that names it (never wrapped).
    small = np.array([255, 1, 2, 3], np.uint8)
    got = vi + small
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got.numpy(), i + small)
    with pytest.raises(jitc.JitcError, match="no element type for NumPy's uint32"):
        vi + np.array([2**32 - 1, 5, 2**31, 0], np.uint32)


def test_float_powers_by_numpys_quick_exponents_are_numpys_bit_for_bit():
    # NumPy computes x ** 2 as a square, ** 0.5 as sqrt, ** -1 as a
    # reciprocal, ** 1 and ** 0 without pow: jitc records the same ops, so
    # the results agree to the bit, special values included.
    specials = np.array([-0.0, 0.0, -np.inf, np.inf, np.nan, 1e-30, -1e30, -3.5, 2.0], np.float32)
    for a in (np.concatenate([specials, rand(200)]), RNG.standard_normal(50)):
        v = jitc.Var(a)
        for e in (2, 2.0, 0.5, -1, -1.0, 1, 0, True, np.float32(2)):
            with np.errstate(all="ignore"):
                want = a ** e
            got = (v ** e).numpy()
            assert got.dtype == a.dtype
            np.testing.assert_array_equal(got, want)
            np.testing.assert_array_equal(np.signbit(got), np.signbit(want))
        # An array of one element that does not widen the base, as NumPy.
        one = np.array([0.5], a.dtype)
        with np.errstate(all="ignore"):
            want = a ** one
        got = (v ** one).numpy()
        np.testing.assert_array_equal(got, want)
        np.testing.assert_array_equal(np.signbit(got), np.signbit(want))
        # Other exponents are pow.
        with np.errstate(all="ignore"):
            close((v ** 3).numpy(), a ** 3, rtol=1e-5)
    # ** 0 is ones, but still computes its base: a failure there is raised.
    broken = jitc.Var(np.array([1, 2], np.int32)) // jitc.Var(np.array([0, 1], np.int32))
    for base in (broken, broken.astype(np.float32)):
        with pytest.raises(jitc.JitcError, match="division by zero"):
            (base ** 0).numpy()
    # An int tensor to 0.5 computes in float32 (jitc's rule for a float
    # number), then takes the square root.
    i = np.array([0, 1, 4, 9], np.int32)
    got = jitc.Var(i) ** 0.5
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got.numpy(), np.sqrt(i.astype(np.float32)))


def test_integer_powers_are_integers_as_numpy():
    x = RNG.integers(-6, 7, size=(5, 4)).astype(np.int32)
    e = RNG.integers(0, 9, size=(5, 4)).astype(np.int32)
    vx, ve = jitc.Var(x), jitc.Var(e)
    big = np.array([3, 5, 7, -3, 2, -1, 0, 1], np.int32)
    huge = np.array([2**31 - 1, 123456789, 40, 31, 31, 2**30 + 1, 0, 77], np.int32)
    for got, want in [
        (vx ** 2, x ** 2),
        (vx ** 0, x ** 0),
        (vx ** 1, x ** 1),
        (vx ** 7, x ** 7),
        (vx ** np.int64(3), x ** 3),
        (vx ** True, x ** 1),
        (vx ** ve, x ** e),
        (2 ** ve, 2 ** e),
        (vx ** e, x ** e),
        (np.power(x, ve), x ** e),
        # Wrapping as NumPy's products of that width do.
        (jitc.Var(big) ** 19, big ** 19),
        (jitc.Var(big) ** jitc.Var(huge), big ** huge),
    ]:
        assert got.dtype == np.int32
        np.testing.assert_array_equal(got.numpy(), want)
    # int64 takes 63 steps per tensor of exponents, and an int32 tensor
    # meeting an int64 one computes in int64.
    y = RNG.integers(-4, 5, size=6).astype(np.int64)
    f = np.array([0, 1, 62, 63, 64, 2**40 + 3], np.int64)
    for got, want in [(jitc.Var(y) ** jitc.Var(f), y ** f), (2 ** jitc.Var(f), 2 ** f),
                      (jitc.Var(y.astype(np.int32)) ** jitc.Var(f), y ** f)]:
        assert got.dtype == np.int64
        np.testing.assert_array_equal(got.numpy(), want)
    # Booleans compute in int32 (NumPy's int8, which jitc lacks).
    b = np.array([True, False, True])
    got = jitc.Var(b) ** jitc.Var(np.array([True, True, False]))
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got.numpy(), [1, 0, 1])
    # A negative exponent is NumPy's error: at once for a number, at the
    # fetch for a tensor.
    with pytest.raises(jitc.JitcError, match="negative integer powers are not allowed"):
        vx ** -1
    with pytest.raises(jitc.JitcError, match="out of bounds for int32"):
        vx ** 2**40
    with pytest.raises(jitc.JitcError, match="negative integer powers are not allowed"):
        (vx ** jitc.Var(-e - 1)).numpy()
    # A float anywhere makes it a float power.
    assert (vx ** 2.0).dtype == np.float32 and (2.0 ** ve).dtype == np.float32


def test_floor_division_and_remainder_are_numpys():
    # Integers: toward negative infinity, the remainder with the divisor's
    # sign (from jitc's truncating div and mod); a zero divisor is an error.
    a = RNG.integers(-20, 20, size=60).astype(np.int32)
    b = RNG.integers(-6, 7, size=60).astype(np.int32)
    b[b == 0] = 3
    va, vb = jitc.Var(a), jitc.Var(b)
    for got, want in [
        (va // vb, a // b), (va % vb, a % b), (va // 3, a // 3), (7 % vb, 7 % b),
        (divmod(va, vb)[0], a // b), (divmod(va, vb)[1], a % b), (-7 // vb, -7 // b),
    ]:
        assert got.dtype == np.int32
        np.testing.assert_array_equal(got.numpy(), want)
    with pytest.raises(jitc.JitcError, match="division by zero"):
        (va // jitc.Var(np.zeros(60, np.int32))).numpy()
    # Floats: NumPy's npy_divmod, signed zeros, infinities and NaNs
    # included; a zero divisor gives x / 0 and NaN.
    x = np.concatenate([RNG.standard_normal(40).astype(np.float32) * 10,
                        np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 5.0, -5.0, 1e-30, 7.0, -7.0, 6.0, -6.0], np.float32)])
    y = np.concatenate([RNG.standard_normal(40).astype(np.float32),
                        np.array([3.0, 3.0, 2.0, -2.0, 1.0, 0.0, -0.0, -3.0, np.inf, np.inf, 3.0, 3.0], np.float32)])
    vx, vy = jitc.Var(x), jitc.Var(y)
    with np.errstate(all="ignore"):
        wants = [(vx // vy, np.floor_divide(x, y)), (vx % vy, np.mod(x, y)), (vx // 0.5, np.floor_divide(x, np.float32(0.5))),
                 (2.5 % vy, np.mod(np.float32(2.5), y))]
    for got, want in wants:
        got = got.numpy()
        assert got.dtype == np.float32
        np.testing.assert_array_equal(got, want)
        np.testing.assert_array_equal(np.signbit(got), np.signbit(want))
    # An int tensor with a float divides as floats.
    got = va // 2.5
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got.numpy(), np.floor_divide(a.astype(np.float32), np.float32(2.5)))
    # A number to a tensor's power.
    close((2.0 ** jitc.Var(x[:5])).numpy(), 2.0 ** x[:5])


def test_element_wise_and_select():
    x, y = rand(6, 4), rand(6, 4)
    vx, vy = jitc.Var(x), jitc.Var(y)
    close((vx + vy).numpy(), x + y)
    close((vx - 1.5).numpy(), x - 1.5)
    close((2.0 * vx).numpy(), 2.0 * x)
    close((vx / (vy * vy + 1.0)).numpy(), x / (y * y + 1.0))
    close((-vx).numpy(), -x)
    close(abs(vx).numpy(), np.abs(x))
    close(jitc.ternary(vx < vy, vx, vy).numpy(), np.minimum(x, y))
    np.testing.assert_array_equal((vx >= vy).numpy(), x >= y)
    np.testing.assert_array_equal(vx.astype(np.int32).numpy(), x.astype(np.int32))
    close(jitc.unary(jitc.Var(np.abs(x) + 0.5), "sqrt").numpy(), np.sqrt(np.abs(x) + 0.5))


def test_numpy_broadcasting_in_operators():
    x, row, column = rand(5, 4), rand(4), rand(5, 1)
    vx = jitc.Var(x)
    close((vx + jitc.Var(row)).numpy(), x + row)
    close((vx * jitc.Var(column)).numpy(), x * column)
    close(jitc.broadcast(jitc.Var(row), [3, 5, 4]).numpy(), np.broadcast_to(row, (3, 5, 4)))
    close(jitc.broadcast(jitc.Var(row), [4, 3], dims=[1]).numpy(), np.broadcast_to(row[:, None], (4, 3)))


def test_numpy_ufuncs_on_a_var_are_jitc_ops():
    """An array (or a NumPy scalar) with a `Var` on its right is a `Var`,
    as in the other order, not an object array holding `Var`s; NumPy's
    ufuncs that jitc has an op for (`np.tanh(v)`, `np.add(x, v)`) record
    it (`Var.__array_ufunc__`); others, and `out=`, are a TypeError."""
    x, row = rand(5, 4), rand(4)
    vrow = jitc.Var(row)
    for got, want in [(x + vrow, x + row), (x * vrow, x * row), (x - vrow, x - row), (x / vrow, x / row),
                      (np.float32(2.0) * vrow, 2.0 * row), (np.add(x, vrow), x + row), (np.tanh(vrow), np.tanh(row)),
                      (np.exp(vrow), np.exp(row)), (np.negative(vrow), -row)]:
        assert isinstance(got, jitc.Var), type(got)
        close(got.numpy(), want)
    assert isinstance(x > vrow, jitc.Var)
    # The logical ones on booleans (jitc's are bitwise on integers).
    mask, other = x[0] > 0.5, x[1] > 0.5
    for ufunc in (np.logical_and, np.logical_or, np.logical_xor):
        got = ufunc(jitc.Var(mask), other)
        assert isinstance(got, jitc.Var)
        np.testing.assert_array_equal(got.numpy(), ufunc(mask, other))
    np.testing.assert_array_equal(np.logical_not(jitc.Var(mask)).numpy(), ~mask)
    for ufunc in (np.fmax, np.logical_and):
        with pytest.raises(TypeError, match="NotImplemented"):
            ufunc(x, vrow)
    with pytest.raises(TypeError, match="NotImplemented"):
        np.logical_not(jitc.Var(np.arange(3, dtype=np.int32)))
    with pytest.raises(TypeError):
        x += vrow


# -- the op library ------------------------------------------------------------------

@pytest.mark.parametrize("shape", shapes(3, 3))
def test_reductions_over_axes(shape):
    x = rand(*shape)
    v = jitc.Var(x)
    for axis in [None, 0, 1, -1, (0, 2)]:
        for keepdims in [False, True]:
            close(jitc.sum(v, axis, keepdims).numpy(), x.sum(axis=axis, keepdims=keepdims), rtol=1e-4)
            close(jitc.mean(v, axis, keepdims).numpy(), x.mean(axis=axis, keepdims=keepdims), rtol=1e-4)
            close(jitc.max(v, axis, keepdims).numpy(), x.max(axis=axis, keepdims=keepdims))
            close(jitc.min(v, axis, keepdims).numpy(), x.min(axis=axis, keepdims=keepdims))


@pytest.mark.parametrize("n,k,m", [(1, 1, 1), (3, 5, 2), (7, 4, 6), (16, 9, 3)])
def test_matmul(n, k, m):
    a, b = rand(n, k), rand(k, m)
    close(jitc.matmul(jitc.Var(a), jitc.Var(b)).numpy(), a @ b, rtol=1e-4, atol=1e-4)
    batch_a, batch_b = rand(2, n, k), rand(2, k, m)
    close((jitc.Var(batch_a) @ jitc.Var(batch_b)).numpy(), batch_a @ batch_b, rtol=1e-4, atol=1e-4)


def conv2d_reference(x, w, stride, padding):
    n, c, h, wd = x.shape
    o, _, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (padding, padding), (padding, padding)))
    ho, wo = (h + 2 * padding - kh) // stride + 1, (wd + 2 * padding - kw) // stride + 1
    out = np.zeros((n, o, ho, wo), np.float64)
    for i in range(ho):
        for j in range(wo):
            window = xp[:, :, i * stride:i * stride + kh, j * stride:j * stride + kw]
            out[:, :, i, j] = np.einsum("nchw,ochw->no", window, w)
    return out


@pytest.mark.parametrize("stride,padding", [(1, 0), (1, 1), (2, 1), (2, 0)])
def test_conv2d(stride, padding):
    x, w = rand(2, 3, 7, 6), rand(4, 3, 3, 3)
    got = jitc.conv2d(jitc.Var(x), jitc.Var(w), stride, padding).numpy()
    close(got, conv2d_reference(x, w, stride, padding), rtol=1e-4, atol=1e-4)


def test_pad_transpose_reshape():
    x = rand(3, 4, 5)
    v = jitc.Var(x)
    close(jitc.pad(v, [(1, 0), (0, 2), (2, 2)], 7.0).numpy(),
          np.pad(x, [(1, 0), (0, 2), (2, 2)], constant_values=7.0))
    close(jitc.transpose(v).numpy(), x.transpose())
    close(jitc.transpose(v, (1, 2, 0)).numpy(), x.transpose(1, 2, 0))
    close(v.T.numpy(), x.T)
    for shape in [(12, 5), (60,), (5, -1, 2), (2, 3, 2, 5)]:
        close(jitc.reshape(v, shape).numpy(), x.reshape(shape))


def test_activations():
    x = rand(4, 9)
    v = jitc.Var(x)
    close(jitc.relu(v).numpy(), np.maximum(x, 0))
    close(jitc.sigmoid(v).numpy(), 1 / (1 + np.exp(-x)))
    close(jitc.tanh(v).numpy(), np.tanh(x))
    close(jitc.exp(v).numpy(), np.exp(x), rtol=1e-5)
    close(jitc.log(jitc.Var(np.abs(x) + 0.1)).numpy(), np.log(np.abs(x) + 0.1))


@pytest.mark.parametrize("shape", shapes(3, 2, 1, 40))
def test_softmax(shape):
    x = rand(*shape) * 4
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    close(jitc.softmax(jitc.Var(x)).numpy(), e / e.sum(axis=-1, keepdims=True))
    e0 = np.exp(x - x.max(axis=0, keepdims=True))
    close(jitc.softmax(jitc.Var(x), axis=0).numpy(), e0 / e0.sum(axis=0, keepdims=True))


def test_layer_norm_and_batch_norm():
    x, w, b = rand(6, 16), rand(16), rand(16)
    mu, var = x.mean(axis=-1, keepdims=True), x.var(axis=-1, keepdims=True)
    want = (x - mu) / np.sqrt(var + 1e-5) * w + b
    close(jitc.layer_norm(jitc.Var(x), jitc.Var(w), jitc.Var(b)).numpy(), want, rtol=1e-4, atol=1e-4)
    images, gamma, beta = rand(4, 3, 5, 5), rand(3), rand(3)
    mu = images.mean(axis=(0, 2, 3), keepdims=True)
    var = images.var(axis=(0, 2, 3), keepdims=True)
    want = (images - mu) / np.sqrt(var + 1e-5) * gamma[None, :, None, None] + beta[None, :, None, None]
    got = jitc.batch_norm(jitc.Var(images), jitc.Var(gamma), jitc.Var(beta)).numpy()
    close(got, want, rtol=1e-4, atol=1e-4)
    running_mean, running_var = rand(3), np.abs(rand(3)) + 0.5
    want = (images - running_mean[None, :, None, None]) / np.sqrt(running_var[None, :, None, None] + 1e-5)
    got = jitc.batch_norm(jitc.Var(images), running_mean=running_mean, running_var=running_var).numpy()
    close(got, want, rtol=1e-4, atol=1e-4)


def test_exact_math_keeps_float64_precision():
    jitc.flags.math = "exact"
    try:
        x = rand(8, 8, dtype=np.float64)
        got = jitc.sum(jitc.exp(jitc.Var(x)), 1).numpy()
        want = np.zeros(8)
        for i in range(8):
            for j in range(8):
                want[i] += np.exp(x[i, j])
        np.testing.assert_allclose(got, want, rtol=1e-15)
    finally:
        jitc.flags.math = "fast"


# -- indexing: NumPy's basic indexing as reindexes ----------------------------------

def random_key(shape, rng):
    """A random basic index for `shape`: ints (negative ones too), slices
    with any step (past the ends as well), None and at most one ellipsis."""
    items = []
    for n in shape:
        roll = rng.random()
        if roll < 0.3:
            items.append(int(rng.integers(-n, n)))
        elif roll < 0.9:
            def bound():
                return None if rng.random() < 0.3 else int(rng.integers(-n - 2, n + 3))
            step = None if rng.random() < 0.3 else int(rng.choice([-3, -2, -1, 1, 2, 3]))
            items.append(slice(bound(), bound(), step))
        else:
            items.append(Ellipsis if Ellipsis not in items else slice(None))
    # Leave out trailing axes, add new ones.
    items = items[:int(rng.integers(0, len(items) + 1))]
    for _ in range(int(rng.integers(0, 3))):
        items.insert(int(rng.integers(0, len(items) + 1)), None)
    return items[0] if len(items) == 1 and rng.random() < 0.5 else tuple(items)


def test_basic_indexing_is_numpys_on_random_keys():
    rng = np.random.default_rng(7)
    for dtype in (np.float32, np.int64, np.bool_):
        for shape in [(5,), (4, 6), (3, 1, 5), (2, 3, 4, 2)]:
            x = (rng.standard_normal(shape) * 10).astype(dtype)
            v = jitc.Var(x)
            keys = [random_key(shape, rng) for _ in range(6)]
            got = jitc.fetch(*[v[key] for key in keys])
            for key, value in zip(keys, got):
                want = x[key]
                assert value.shape == want.shape and value.dtype == want.dtype, key
                np.testing.assert_array_equal(value, want, err_msg=repr(key))


def test_indexing_a_rank_0_value_and_empty_results():
    s = jitc.Var(np.float32(2.5))
    assert s[()].shape == () and s[...].shape == () and s[None].shape == (1,)
    np.testing.assert_array_equal(s[None, ..., None].numpy(), np.full((1, 1), 2.5, np.float32))
    x = rand(3, 4)
    v = jitc.Var(x)
    assert v[2:1].shape == (0, 4) and v[:, 7:].shape == (3, 0)
    assert v[:] is v and v[...] is v  # no reindex for the identity
    assert v[np.int64(-1), np.int32(2)].item() == x[-1, 2]


def test_iteration_and_numpy_conversion():
    x = rand(3, 2)
    v = jitc.Var(x)
    rows = list(v)
    assert len(rows) == 3
    for row, want in zip(rows, x):
        np.testing.assert_array_equal(row.numpy(), want)
    np.testing.assert_array_equal(np.asarray(v), x)
    assert np.asarray(v, dtype=np.float64).dtype == np.float64
    np.testing.assert_array_equal(np.stack([np.asarray(r) for r in reversed(v)]), x[::-1])
    with pytest.raises(TypeError, match="iteration over a rank-0"):
        iter(jitc.Var(np.float32(1)))


@pytest.mark.parametrize("key,error,match", [
    (5, IndexError, "index 5 is out of bounds for axis 0 with size 3"),
    ((0, -5), IndexError, "index -5 is out of bounds for axis 1 with size 4"),
    ((0, 0, 0), IndexError, "too many indices for jitc.Var: it is 2-dimensional, but 3 were indexed"),
    ((Ellipsis, 0, Ellipsis), IndexError, "a single ellipsis"),
    (1.0, IndexError, "not float 1.0"),
    ("a", IndexError, "not str 'a'"),
    ([0, 1], IndexError, "no array or list as an index"),
    (np.array([0]), IndexError, "no array or list as an index"),
    (True, IndexError, "no boolean index"),
    (np.bool_(False), IndexError, "no boolean index"),
    (slice(None, None, 0), ValueError, "slice step cannot be zero"),
    (slice(0.5, None), TypeError, "slice indices must be integers"),
])
def test_indexing_errors(key, error, match):
    v = jitc.Var(rand(3, 4))
    with pytest.raises(error, match=match):
        v[key]


def test_a_var_is_not_an_index_and_takes_no_assignment():
    v = jitc.Var(rand(3, 4))
    with pytest.raises(IndexError, match=r"no jitc.Var as an index .* int\(v.item\(\)\)"):
        v[jitc.Var(np.int64(1))]
    with pytest.raises(TypeError, match="takes no item assignment"):
        v[0] = 1.0


def test_gradients_flow_through_slices():
    x = rand(4, 5)
    w = rand(2, 3)
    v = jitc.Var(x)
    loss = jitc.sum(v[1::2, ::-2] * w) + jitc.sum(v[-1] * v[-1])
    (g,) = jitc.grad(loss, [v])
    want = np.zeros_like(x)
    want[1::2, ::-2] += w
    want[-1] += 2 * x[-1]
    close(g.numpy(), want)


def test_huge_steps_zero_d_integer_indices_and_the_dimension_limit():
    x = rand(5)
    v = jitc.Var(x)
    np.testing.assert_array_equal(v[::2**63].numpy(), x[::2**63])
    np.testing.assert_array_equal(v[::-2**63].numpy(), x[::-2**63])
    np.testing.assert_array_equal(v[np.array(3)].numpy(), x[np.array(3)])
    with pytest.raises(IndexError, match="at most 64 dimensions"):
        v[(None,) * 64]
    assert v[(None,) * 63].ndim == 64 and v[(0,) + (None,) * 64].ndim == 64


def test_membership_and_conversions_to_python_numbers():
    v = jitc.Var(np.array([[1.0, 2.0], [3.0, 4.0]], np.float32))
    assert 3.0 in v and 5.0 not in v
    assert 1.0 in jitc.Var(np.float32(1))
    assert float(v[1, 0]) == 3.0 and int(v[0, 1]) == 2
    with pytest.raises(TypeError, match="only a rank-0 jitc.Var converts"):
        float(v)
    with pytest.raises(TypeError, match="only a rank-0 jitc.Var converts"):
        int(v[0, :1])  # (NumPy 2: one element of rank 1 does not convert either)
    with pytest.raises(ValueError, match="always copied"):
        np.asarray(v, copy=False)
    np.testing.assert_array_equal(np.array(list(v[0])), [1.0, 2.0])


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int64, np.bool_])
def test_stack_and_concatenate_are_numpys(dtype):
    rng = np.random.default_rng(11)
    a, b, c = [(rng.standard_normal((2, 3)) * 5).astype(dtype) for _ in range(3)]
    va, vb, vc = jitc.Var(a), jitc.Var(b), jitc.Var(c)
    for axis in (0, 1, 2, -1):
        got = jitc.stack([va, vb, vc], axis=axis).numpy()
        assert got.dtype == dtype
        np.testing.assert_array_equal(got, np.stack([a, b, c], axis=axis))
    for axis in (0, 1, -1):
        parts = [a, b[:, :1] if axis else b[:1], c]
        got = jitc.concatenate([jitc.Var(p) for p in parts], axis=axis).numpy()
        np.testing.assert_array_equal(got, np.concatenate(parts, axis=axis))


def test_stacking_keeps_signed_zeros_and_nans():
    x = np.array([-0.0, 0.0, np.nan, -np.inf], np.float32)
    got = jitc.stack([jitc.Var(x), jitc.Var(-x)]).numpy()
    np.testing.assert_array_equal(np.signbit(got), np.signbit(np.stack([x, -x])))
    assert np.isnan(got[:, 2]).all()


def test_lists_of_vars_are_stacked_in_the_graph_and_gradients_reach_them():
    w = jitc.Var(np.arange(3, dtype=np.float32))
    (g,) = jitc.grad(jitc.sum(jitc.Var([w, w * 3.0])), [w])
    np.testing.assert_array_equal(g.numpy(), [4.0, 4.0, 4.0])
    (g,) = jitc.grad(jitc.sum(w + [w * 2.0]), [w])
    np.testing.assert_array_equal(g.numpy(), [3.0, 3.0, 3.0])
    # Types as NumPy's: float64 stays, int64 does not wrap, a number takes
    # the tensors' type.
    d = jitc.Var(np.ones(2, np.float64))
    assert jitc.Var([d, d]).dtype == np.float64
    big = jitc.Var(np.array([2**40], np.int64))
    np.testing.assert_array_equal(jitc.Var([big]).numpy(), [[2**40]])
    np.testing.assert_array_equal(jitc.Var([w[0], 7.0]).numpy(), [0.0, 7.0])
    # Stacking computes nothing.
    pending = w * 2.0
    jitc.Var([pending, pending])
    assert not pending.is_computed()
    with pytest.raises(jitc.JitcError, match="rectangular"):
        jitc.Var([w, w[:2]])
    with pytest.raises(jitc.JitcError, match="one shape"):
        jitc.stack([w, w[:2]])
    with pytest.raises(jitc.JitcError, match="but along axis 0"):
        jitc.concatenate([w, jitc.Var(np.ones((1, 3), np.float32))])


def test_stacked_gradients_and_concatenation_of_slices():
    x = rand(4, 3)
    v = jitc.Var(x)
    w = rand(8, 3)
    loss = jitc.sum(jitc.concatenate([v[2:], v, v[:2]]) * w)
    (g,) = jitc.grad(loss, [v])
    want = np.zeros_like(x)
    want[2:] += w[:2]
    want += w[2:6]
    want[:2] += w[6:]
    close(g.numpy(), want)


def test_stacked_numbers_and_lists_take_the_tensors_type_unless_of_a_higher_kind():
    i = jitc.Var(np.array([1, 2, 3], np.int32))
    b = jitc.Var(np.array([True, False, True]))
    cases = [
        # (parts, want): a float (a Python or NumPy one, or a list of them)
        # makes integers float32, an int makes booleans int32, as `_arith`.
        ([i, [1.5, 2.5, 3.5]], np.array([[1, 2, 3], [1.5, 2.5, 3.5]], np.float32)),
        ([b, [2, 3, 4]], np.array([[1, 0, 1], [2, 3, 4]], np.int32)),
        ([i[0], np.float32(1.5)], np.array([1.0, 1.5], np.float32)),
        ([b[0], 2], np.array([1, 2], np.int32)),
        ([i, [7, 8, 9]], np.array([[1, 2, 3], [7, 8, 9]], np.int32)),
    ]
    for parts, want in cases:
        got = jitc.stack(parts).numpy()
        assert got.dtype == want.dtype, (parts, got.dtype)
        np.testing.assert_array_equal(got, want)
    got = jitc.concatenate([i, [1.5]]).numpy()
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got, [1, 2, 3, 1.5])
    # A list holding a Var promotes as the same list of numbers does.
    np.testing.assert_array_equal((i[:2] * [i[0], np.float32(2.5)]).numpy(), [1.0, 5.0])


def test_many_parts_are_joined_as_a_tree_with_the_same_values_and_gradients():
    rng = np.random.default_rng(5)
    parts = [rng.standard_normal((3, 2)).astype(np.float32) for _ in range(40)]
    vs = [jitc.Var(p) for p in parts]
    for axis in (0, 1, -1):
        np.testing.assert_array_equal(jitc.stack(vs, axis=axis).numpy(), np.stack(parts, axis=axis))
        np.testing.assert_array_equal(jitc.concatenate(vs, axis=axis).numpy(), np.concatenate(parts, axis=axis))
    w = rng.standard_normal((40, 3, 2)).astype(np.float32)
    grads = jitc.grad(jitc.sum(jitc.stack(vs) * w), vs[:3] + vs[-2:])
    for g, k in zip(grads, [0, 1, 2, 38, 39]):
        np.testing.assert_array_equal(g.numpy(), w[k])


def test_lists_of_vars_inside_stack_are_tensors_and_stay_pending():
    b = jitc.Var(np.array([True, False]))
    big = jitc.Var(np.array([2**40, 3], np.int64))
    got = jitc.stack([b, [big[0], big[1]]]).numpy()
    assert got.dtype == np.int64
    np.testing.assert_array_equal(got, [[1, 0], [2**40, 3]])
    d = jitc.Var(np.array([1.5, 2.5]))
    assert jitc.stack([jitc.Var(np.array([1, 2], np.int32)), [d[0], d[1]]]).dtype == np.float64
    pending = jitc.Var(np.array([1.0, 2.0], np.float32)) * 2.0
    stacked = jitc.stack([[pending[0], pending[1]], [1.0, 2.0]])
    assert not pending.is_computed()
    np.testing.assert_array_equal(stacked.numpy(), [[2.0, 4.0], [1.0, 2.0]])


@pytest.mark.parametrize("call,match", [
    (lambda v: jitc.stack([]), "stack needs at least one value"),
    (lambda v: jitc.concatenate([]), "concatenate needs at least one value"),
    (lambda v: jitc.concatenate([v[0, 0], v[0, 1]]), "zero-dimensional values cannot be concatenated"),
    (lambda v: jitc.concatenate([v, v], axis=2), "axis 2 is out of bounds for rank-2 values"),
    (lambda v: jitc.stack([v, v], axis=-4), "axis -4 is out of bounds for rank-3 results"),
    (lambda v: jitc.stack([v, "text"]), "cannot stack or concatenate a str"),
    (lambda v: jitc.Var([[v], []]), "an empty list inside a list of jitc.Vars"),
])
def test_stack_and_concatenate_errors(call, match):
    v = jitc.Var(rand(2, 3))
    with pytest.raises(jitc.JitcError, match=match):
        call(v)


def test_the_mean_of_integers_is_taken_in_floats_and_does_not_wrap():
    # An int32 sum of 1000 x 5e6 wraps; the mean sums in float32 (the type
    # of int32's true division), int64 in float64.
    x = jitc.Var(np.full(1000, 5_000_000, np.int32))
    got = x.mean().numpy()
    assert got.dtype == np.float32
    close(got, 5e6, rtol=1e-6)
    y = jitc.Var(np.array([2**62, 2**62], np.int64))
    assert y.mean().numpy().dtype == np.float64
    close(y.mean().numpy(), 2.0**62, rtol=1e-12)
    b = jitc.Var(np.array([True, False, True, True]))
    close(jitc.mean(b).numpy(), 0.75)


@pytest.mark.parametrize("other", [None, "1", b"1", object()])
def test_operands_numpy_refuses_are_type_errors(other):
    x = jitc.Var(np.array([1.0, 2.0], np.float32))
    with pytest.raises(TypeError, match="a jitc.Var does not compute with"):
        x + other
    with pytest.raises(TypeError, match="a jitc.Var does not compute with"):
        other * x


def test_python_ints_that_do_not_fit_int32_are_refused():
    with pytest.raises(OverflowError, match="does not fit int32, jitc's type for Python ints"):
        jitc.Var(2**40)
    with pytest.raises(OverflowError, match="does not fit int32"):
        jitc.Var([2**33, 1])
    np.testing.assert_array_equal(jitc.Var([2**31 - 1, -(2**31)]).numpy(), [2**31 - 1, -(2**31)])
    np.testing.assert_array_equal(jitc.Var([2**40], dtype=np.int64).numpy(), [2**40])


def test_a_var_given_a_dtype_is_converted():
    v = jitc.Var(np.array([1.5, -2.5]))
    assert jitc.Var(v, dtype=np.int32).dtype == np.int32
    np.testing.assert_array_equal(jitc.array(v, np.int32).numpy(), [1, -2])
    assert jitc.Var(v).dtype == np.float64


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: jitc.max(rand(0, 3), axis=0), "max over an axis of size 0"),
        (lambda: jitc.min(rand(2, 0), axis=1), "min over an axis of size 0"),
        (lambda: jitc.max(rand(0, 3)), "max over an axis of size 0"),
        (lambda: jitc.sum(rand(2, 3), axis=(0, 0)), "axis 0 is given twice"),
        (lambda: jitc.mean(rand(2, 3), axis=(1, -1)), "axis -1 is given twice"),
        (lambda: jitc.Var(rand(2, 3, 4)).transpose(5, 0, 1), "transpose axis 5 is out of range"),
        (lambda: jitc.pad(rand(3), [(-1, 0)]), "pad widths must not be negative"),
    ],
)
def test_reductions_and_shapes_numpy_refuses_are_errors(call, match):
    with pytest.raises(jitc.JitcError, match=match):
        call()


def test_max_over_a_nonempty_axis_of_an_empty_value_is_empty():
    # Only the reduced axes must have elements, as in NumPy.
    assert jitc.max(rand(0, 3), axis=1).numpy().shape == (0,)
    close(jitc.sum(rand(0, 3), axis=0).numpy(), np.zeros(3))


@pytest.mark.parametrize(
    "shape, new",
    [((0, 3), (3, -1)), ((0, 3), (0, 5)), ((2, 0), (0,)), ((0,), (2, 0, 3)), ((4, 0, 2), (0, 8))],
)
def test_values_with_no_elements_reshape_as_numpy_does(shape, new):
    x = np.zeros(shape, np.float32)
    got = jitc.Var(x).reshape(new).numpy()
    assert got.shape == x.reshape(new).shape
