"""jitc from Python: Jittor's meta-operators, recorded lazily, then fused,
compiled (MLIR and LLVM) and run when a value is fetched.

    import numpy as np, jitc
    x = jitc.Var(np.random.rand(4, 8).astype(np.float32))
    y = jitc.softmax(x * 2.0)          # recorded, nothing runs yet
    print(y.numpy())                   # fused, compiled (or a cache hit), run

Everything here is built from the three meta-operators of the native
graph (`jitc._jitc`):

- ``reindex(x, shape, indices, overflow_value, overflow_conditions)``: the
  output element at index ``(i0, i1, ...)`` is ``x`` at ``indices``, one
  Jittor index expression per dimension of ``x`` (``"i1"``, ``"i0 - 1"``,
  ``"i2 * 2 + i5"``), or ``overflow_value`` where that is out of bounds or
  an overflow condition (``"i0 < 1"``) holds. Broadcast, pad, slice and
  transpose are all reindexes.
- ``reindex_reduce(x, op, shape, indices)``: each element of ``x`` goes to
  the output index ``indices`` (expressions of ``x``'s indices) and meets
  the others there through ``op``: ``add``, ``mul``, ``max``, ``min``,
  ``and``, ``or``. Sums and maxima over axes are all reindex-reduces.
- ``unary``, ``binary`` and ``ternary`` (``select``) element-wise ops.

A `Var` takes NumPy's basic indexing (ints, slices, None, an ellipsis),
each index one reindex, and iterates over its first axis.

Gradients are meta-operators too: ``jitc.grad(loss, params)`` records the
backward pass (Jittor's backward closure), which fuses with the forward
one when they are fetched together; ``jitc.optim`` has SGD with momentum
and Adam, whose updates are deferred, all-or-nothing state writes.

Values are fetched with ``Var.numpy()`` (or ``jitc.fetch``), and every
pending value that shares work with a fetch is computed by it, so the ops
of several iterations of a loop fuse together (one of them that fails
fails only its own fetch). Repeated loop bodies are
cache hits (``jitc.stats()``). Errors are ``jitc.JitcError``.
"""

import builtins as _builtins
import math as _math
import operator as _operator

import numpy as _np

from . import _jitc
from ._jitc import GuardFailed, JitcError
from ._tracing import _call, _eager_guard, _own_thread, _reads, _tracing

__all__ = [
    "Var", "JitcError", "flags", "fetch", "sync", "stats", "dump",
    "set_state", "get_state", "read_state", "write_state",
    "reindex", "reindex_reduce", "unary", "binary", "ternary",
    "array", "broadcast", "sum", "mean", "max", "min", "matmul", "conv2d",
    "pad", "transpose", "reshape", "stack", "concatenate", "relu", "sigmoid", "tanh", "exp", "log",
    "softmax", "log_softmax", "cross_entropy", "layer_norm", "batch_norm",
    "grad", "full", "zeros", "optim", "guard", "function", "explain", "GuardFailed",
]

_TO_JITC = {
    _np.dtype(_np.float32): "f32",
    _np.dtype(_np.float64): "f64",
    _np.dtype(_np.int32): "i32",
    _np.dtype(_np.int64): "i64",
    _np.dtype(_np.bool_): "i1",
}
_TO_NUMPY = {name: dtype for dtype, name in _TO_JITC.items()}


def _as_array(data, dtype=None):
    """`data` as a C-contiguous array of a type jitc has: Python numbers and
    lists default to float32 and int32, as in Jittor."""
    if dtype is not None:
        array = _np.asarray(data, dtype=dtype)
    elif isinstance(data, (_np.ndarray, _np.generic, Var)):
        # A Var is fetched in its own type (not read as a list of Python
        # numbers, which would narrow float64 to float32).
        array = _np.asarray(data)
    else:
        array = _np.asarray(data)
        if array.dtype == _np.float64:
            array = array.astype(_np.float32)
        elif array.dtype == _np.int64:
            info = _np.iinfo(_np.int32)
            if array.size and (array.min() < info.min or array.max() > info.max):
                raise OverflowError(
                    f"{data!r} does not fit int32, jitc's type for Python ints; "
                    "give dtype=numpy.int64"
                )
            array = array.astype(_np.int32)
    if array.dtype not in _TO_JITC:
        raise JitcError(
            f"jitc has no element type for NumPy's {array.dtype} "
            "(float32, float64, int32, int64 and bool)"
        )
    # ascontiguousarray makes a rank-0 array rank 1; keep the shape.
    return _np.ascontiguousarray(array).reshape(array.shape)


class Var:
    """A value of the lazy graph: data, or a recorded op computed on the
    first fetch that needs it."""

    __slots__ = ("_v",)

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        # NumPy's ufuncs on a `Var` (an array + a `Var`, `np.tanh(v)`)
        # record jitc's op where it computes the same (not an object
        # array of `Var`s); others (`out=`, reductions, a ufunc jitc has
        # no op for) are a TypeError.
        if method != "__call__" or kwargs:
            return NotImplemented
        name = ufunc.__name__
        if ufunc.nin == 1 and name in _UFUNC_UNARY:
            return unary(inputs[0], _UFUNC_UNARY[name])
        if name in ("maximum", "minimum") and all(_is_bool(x) for x in inputs):
            # NumPy's max and min of booleans are or and and.
            return binary(*inputs, "or" if name == "maximum" else "and")
        if ufunc.nin == 2 and name in _UFUNC_BINARY:
            return _arith(inputs[0], inputs[1], _UFUNC_BINARY[name])
        if ufunc.nin == 2 and name in _UFUNC_BITWISE:
            return _bitwise(inputs[0], inputs[1], *_UFUNC_BITWISE[name])
        if name == "invert" and isinstance(inputs[0], Var):
            return ~inputs[0]
        if name in _UFUNC_LOGICAL and all(_is_bool(x) for x in inputs):
            # (On booleans only: jitc's `and`/`or`/`xor`/`not` are bitwise.)
            return (unary if ufunc.nin == 1 else binary)(*inputs, _UFUNC_LOGICAL[name])
        return NotImplemented

    def __init__(self, data, dtype=None):
        if isinstance(data, _Number):
            self._v = data._as(dtype if dtype is not None else _NUMBER_DEFAULTS[data._kind])._v
        elif isinstance(data, Var):
            self._v = (data if dtype is None else data.astype(dtype))._v
        elif isinstance(data, _jitc.Var):
            self._v = data
        elif _holds_var(data):
            # A list of `Var`s: stacked in the graph, not computed.
            nested = _nested(data)
            self._v = (nested if dtype is None else nested.astype(dtype))._v
        else:
            array = _as_array(data, dtype)
            self._v = _call(_jitc.Var.from_bytes, array.tobytes(), list(array.shape), _TO_JITC[array.dtype])

    # -- what it is ---------------------------------------------------------
    @property
    def shape(self):
        with _own_thread:
            return tuple(self._v.shape)

    @property
    def dtype(self):
        with _own_thread:
            return _TO_NUMPY[self._v.dtype]

    @property
    def ndim(self):
        return len(self.shape)

    def __len__(self):
        if not self.shape:
            raise TypeError("len() of a rank-0 jitc.Var")
        return self.shape[0]

    def is_computed(self):
        """Whether the value is known (data, or computed by a fetch)."""
        with _own_thread:
            return self._v.is_computed()

    def numpy(self):
        """The value as a new NumPy array, computed first if needed."""
        return self._fetched("Var.numpy() or Var.item()")

    def _fetched(self, what):
        """The value as a new array; the tracer is told `what` read it."""
        if _tracing.tracer is not None:
            _reads(what)
        v = self._v
        with _own_thread:
            return _np.frombuffer(v.fetch_bytes(), dtype=_TO_NUMPY[v.dtype]).reshape(v.shape)

    def item(self):
        return self.numpy().item()

    # A `Var` is an immutable value: a copy is the value itself, and a
    # pickle holds its data (computed first), which unpickles as data.
    def __copy__(self):
        return self

    def __deepcopy__(self, memo):
        return self

    def __reduce__(self):
        return (Var, (self._fetched("pickle"),))

    def __float__(self):
        return float(self._one("float"))

    def __int__(self):
        return int(self._one("int"))

    def _one(self, what):
        # NumPy 2's rule: rank 0 only (`.item()` takes any one element).
        if self.shape:
            raise TypeError(
                f"only a rank-0 jitc.Var converts to a Python {what}, not shape {self.shape} (use .item())"
            )
        return self.item()

    def __array__(self, dtype=None, copy=None):
        # `np.asarray(v)`: the value, computed into a new array (NumPy 2's
        # `copy=False` asks for none: the value is always copied out).
        if copy is False:
            raise ValueError("a jitc.Var's value is always copied out of the runtime; use copy=None")
        array = self._fetched("np.asarray() (or another NumPy conversion)")
        return array if dtype is None else array.astype(dtype)

    # -- indexing: NumPy's basic indexing, as reindexes ----------------------
    def __getitem__(self, key):
        return _getitem(self, key)

    def __iter__(self):
        # Rows along the first axis, as NumPy iterates (each a reindex).
        if not self.shape:
            raise TypeError("iteration over a rank-0 jitc.Var")
        return (_getitem(self, i) for i in range(self.shape[0]))

    def __contains__(self, value):
        # NumPy's `value in a`: `(a == value).any()`.
        return bool(_reduce(_arith(self, value, "eq"), "or", None, False))

    def __setitem__(self, key, value):
        raise TypeError(
            "a jitc.Var is an immutable value of the lazy graph and takes no item assignment; "
            "build the new value instead (jitc.ternary to choose elements, jitc.pad or "
            "jitc.reindex with an overflow value to place a block)"
        )

    def __bool__(self):
        # As NumPy: one element has a truth value (computing it), more do not.
        size = 1
        for n in self.shape:
            size *= n
        if size != 1:
            raise JitcError(
                f"the truth value of a jitc.Var of shape {self.shape} is ambiguous "
                "(compare its .numpy() with .any() or .all())"
            )
        tracer = _tracing.tracer
        if tracer is not None:
            return tracer.decide(self)
        return bool(self.item())

    def __repr__(self):
        state = "computed" if self.is_computed() else "pending"
        return f"jitc.Var(shape={self.shape}, dtype={self.dtype}, {state})"

    # -- meta-operators -----------------------------------------------------
    def reindex(self, shape, indices, overflow_value=None, overflow_conditions=()):
        return reindex(self, shape, indices, overflow_value, overflow_conditions)

    def reindex_reduce(self, op, shape, indices):
        return reindex_reduce(self, op, shape, indices)

    def astype(self, dtype):
        dtype = _np.dtype(dtype)
        if dtype not in _TO_JITC:
            raise JitcError(f"jitc has no element type for NumPy's {dtype}")
        if dtype == self.dtype:
            return self
        return Var(_call(_jitc.Var.cast, self._v, _TO_JITC[dtype]))

    # -- operators ----------------------------------------------------------
    def __add__(self, other):
        return _arith(self, other, "add")

    def __radd__(self, other):
        return _arith(other, self, "add")

    def __sub__(self, other):
        return _arith(self, other, "sub")

    def __rsub__(self, other):
        return _arith(other, self, "sub")

    def __mul__(self, other):
        return _arith(self, other, "mul")

    def __rmul__(self, other):
        return _arith(other, self, "mul")

    def __truediv__(self, other):
        return _arith(self, other, "div")

    def __rtruediv__(self, other):
        return _arith(other, self, "div")

    def __pow__(self, other):
        return _arith(self, other, "pow")

    def __rpow__(self, other):
        return _arith(other, self, "pow")

    def __floordiv__(self, other):
        return _floor_division(self, other)[0]

    def __rfloordiv__(self, other):
        return _floor_division(other, self)[0]

    def __mod__(self, other):
        return _floor_division(self, other)[1]

    def __rmod__(self, other):
        return _floor_division(other, self)[1]

    def __divmod__(self, other):
        return _floor_division(self, other)

    def __rdivmod__(self, other):
        return _floor_division(other, self)

    def __neg__(self):
        return unary(self, "neg")

    def __pos__(self):
        if self.dtype == _np.bool_:
            raise TypeError("unary + is not defined on booleans, as in NumPy")
        return self

    def __abs__(self):
        return unary(self, "abs")

    def __and__(self, other):
        return _bitwise(self, other, "and", "&")

    def __rand__(self, other):
        return _bitwise(other, self, "and", "&")

    def __or__(self, other):
        return _bitwise(self, other, "or", "|")

    def __ror__(self, other):
        return _bitwise(other, self, "or", "|")

    def __xor__(self, other):
        return _bitwise(self, other, "xor", "^")

    def __rxor__(self, other):
        return _bitwise(other, self, "xor", "^")

    def __invert__(self):
        # `not` is logical on booleans and bitwise on integers.
        if self.dtype.kind == "f":
            raise TypeError(f"~ is not defined on {self.dtype}, as in NumPy (only on integers and booleans)")
        return unary(self, "not")

    def __round__(self, digits=None):
        value = self._one("number")
        return round(value) if digits is None else round(value, digits)

    def __format__(self, spec):
        if not spec:
            return str(self)
        return format(self._one("number"), spec)

    def __lt__(self, other):
        return _arith(self, other, "lt")

    def __le__(self, other):
        return _arith(self, other, "le")

    def __gt__(self, other):
        return _arith(self, other, "gt")

    def __ge__(self, other):
        return _arith(self, other, "ge")

    def __eq__(self, other):
        return _arith(self, other, "eq")

    def __ne__(self, other):
        return _arith(self, other, "ne")

    __hash__ = object.__hash__

    def __matmul__(self, other):
        return matmul(self, other)

    # -- the op library, as methods -------------------------------------------
    def sum(self, axis=None, keepdims=False):
        return sum(self, axis, keepdims)

    def mean(self, axis=None, keepdims=False):
        return mean(self, axis, keepdims)

    def max(self, axis=None, keepdims=False):
        return max(self, axis, keepdims)

    def min(self, axis=None, keepdims=False):
        return min(self, axis, keepdims)

    def exp(self):
        return exp(self)

    def log(self):
        return log(self)

    def tanh(self):
        return tanh(self)

    def sigmoid(self):
        return sigmoid(self)

    def sqrt(self):
        return unary(self, "sqrt")

    def relu(self):
        return relu(self)

    def reshape(self, *shape):
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = shape[0]
        return reshape(self, shape)

    def transpose(self, *axes):
        if len(axes) == 1 and isinstance(axes[0], (tuple, list)):
            axes = axes[0]
        return transpose(self, axes or None)

    @property
    def T(self):
        return transpose(self)

    def broadcast(self, shape, dims=None):
        return broadcast(self, shape, dims)


def array(data, dtype=None):
    """A `Var` holding `data` (a NumPy array, a number or a nested list)."""
    return Var(data, dtype)


def _var(x, like=None):
    """`x` as a `Var`; a number takes `like`'s element type."""
    if isinstance(like, _Number):
        like = None
    if isinstance(x, _Number):
        return x._as(like.dtype if like is not None else _NUMBER_DEFAULTS[x._kind])
    if isinstance(x, Var):
        return x
    if _holds_var(x):
        return _nested(x)
    if like is not None and not isinstance(x, _np.ndarray):
        if _np.asarray(x).dtype.kind not in "biuf":
            raise TypeError(f"a jitc.Var does not compute with {type(x).__name__} {x!r}")
        return Var(_np.asarray(x, dtype=like.dtype))
    return Var(x)


# -- flags, fetches and inspection ----------------------------------------------

class _Flags:
    """How jitc compiles and runs: ``math`` (``"fast"``: polynomial f32
    exp/tanh/sigmoid, reassociated float reductions, a division by a
    loop-invariant or shared divisor as a multiplication by its reciprocal, and
    the rewrites of ``docs/semantics.md``, each within a stated bound;
    ``"exact"``:
    bit-identical to the reference interpreter), ``check_bounds`` (every
    element access checked; for finding compiler bugs), ``threads`` (set
    before anything runs, or with ``JITC_NUM_THREADS``) and ``backend``
    (``"cpu"``, fused and compiled; ``"interp"``, the reference
    interpreter, to compare with; the GPU is reached through the command
    line for now)."""

    def __init__(self):
        self._math = "fast"
        self._check_bounds = False
        self._backend = "cpu"

    @property
    def math(self):
        return self._math

    @math.setter
    def math(self, mode):
        _jitc.set_codegen(mode, self._check_bounds)
        self._math = mode

    @property
    def check_bounds(self):
        return self._check_bounds

    @check_bounds.setter
    def check_bounds(self, on):
        _jitc.set_codegen(self._math, bool(on))
        self._check_bounds = bool(on)

    @property
    def threads(self):
        return _jitc.thread_count()

    @threads.setter
    def threads(self, count):
        if int(count) < 1:
            raise JitcError(f"flags.threads must be at least 1, not {count}")
        _jitc.set_thread_count(int(count))

    @property
    def backend(self):
        return self._backend

    @backend.setter
    def backend(self, name):
        _jitc.set_backend(name)
        self._backend = name

    def __repr__(self):
        return (f"jitc.flags(math={self.math!r}, check_bounds={self.check_bounds}, "
                f"threads={self.threads}, backend={self.backend!r})")


flags = _Flags()


def fetch(*vars):
    """Computes `vars` together; returns their values as NumPy arrays."""
    vars = [_var(v) for v in vars]
    _reads("jitc.fetch")
    with _own_thread:
        datas = _jitc.fetch([v._v for v in vars])
    return [_np.frombuffer(d, dtype=v.dtype).reshape(v.shape) for d, v in zip(datas, vars)]


def sync():
    """Computes every pending value a handle holds: the pending state
    writes first (with what shares their work), so a value that fails
    elsewhere does not drop them, then the rest."""
    _reads("jitc.sync")
    _jitc.sync()


def stats():
    """What jitc has done in this thread: fetches, compiles, cache hits and
    kernels run."""
    return dict(_jitc.stats())


def dump(vars, directory):
    """Writes what a fetch of `vars` runs into `directory` as `fetch.mlir`
    (its first line is the `jitc run` command that reproduces the fetch)
    and `.npy` inputs; returns the `.mlir` file's path."""
    if isinstance(vars, Var):
        vars = [vars]
    with _own_thread:
        return _jitc.dump([_var(v)._v for v in vars], str(directory))


# -- state ------------------------------------------------------------------------

def set_state(name, value):
    """Sets the piece of state `name` to `value` (an array) now."""
    _reads("jitc.set_state", "it calls jitc.set_state, which sets state now, as no graph can "
                             "(jitc.write_state is staged)")
    array = _as_array(value)
    _jitc.set_state(str(name), array.tobytes(), list(array.shape), _TO_JITC[array.dtype])


def get_state(name):
    """The committed value of the piece of state `name` as an array (writes
    not computed yet are not in it), or None."""
    _reads("jitc.get_state", "it calls jitc.get_state, which reads committed state into Python "
                             "(jitc.read_state is staged)")
    found = _jitc.get_state(str(name))
    if found is None:
        return None
    data, shape, dtype = found
    return _np.frombuffer(data, dtype=_TO_NUMPY[dtype]).reshape(shape)


def read_state(name):
    """The piece of state `name` as the program sees it now: the last write
    recorded, or the committed value. In a call `jitc.function` traces,
    the graph reads it with `meta.state_read`."""
    tracer = _tracing.tracer
    if tracer is not None:
        return Var(tracer.read_state(str(name)))
    return Var(_jitc.read_state(str(name)))


def write_state(name, value):
    """Records a write of `value` to the piece of state `name`: deferred, it
    is committed by the fetch (or `sync`) that computes `value`, and only if
    that fetch succeeds (a fetch that fails drops it). In a call
    `jitc.function` traces, the graph writes it with `meta.state_write`."""
    tracer = _tracing.tracer
    if tracer is not None:
        tracer.write_state(str(name), _var(value)._v)
        return
    with _own_thread:
        _jitc.write_state(str(name), _var(value)._v)


# -- the meta-operators ----------------------------------------------------------

def _shape(shape, what):
    """`shape` as a list of ints; a negative size is a `JitcError` naming
    `what` (instead of the native call's "can't convert negative int")."""
    shape = [int(d) for d in shape]
    if any(d < 0 for d in shape):
        raise JitcError(f"{what}: shape {tuple(shape)} has a negative size")
    return shape


def _number(value, dtype):
    """`value` (a Python or NumPy number) as a constant of type `dtype`, as
    NumPy's ``np.full`` takes it: a Python ``int`` (exact, past 2**53) for
    integer and boolean types, a ``float`` for float types; an integer out
    of an integer type's range is NumPy's ``OverflowError``, a NaN or
    infinity made an integer its ``ValueError``, a float made an integer
    is truncated toward zero."""
    if isinstance(value, Var) and not isinstance(value, _Number):
        if value.shape:
            raise TypeError(
                f"a constant is one number, not a jitc.Var of shape {value.shape} (use jitc.ternary to "
                "choose values)"
            )
        value = value.item()
    if isinstance(value, _np.ndarray):
        if value.ndim:
            raise TypeError(f"a constant is one number, not an array of shape {value.shape}")
        value = value.item()
    if isinstance(value, _Number):
        # A relaxed number of `jitc.function`: read into Python (which
        # the tracer records), as its int or float.
        value = int(value) if value._kind in ("int", "bool") else float(value)
    if dtype.kind == "f":
        return float(value)
    if dtype.kind == "b":
        return int(bool(value))
    if isinstance(value, (bool, _np.bool_, int, _np.integer)):
        value = int(value)
    else:
        value = float(value)
        if not _math.isfinite(value):
            raise ValueError(f"cannot convert float {value} to integer")
        value = int(value)
    info = _np.iinfo(dtype)
    if not info.min <= value <= info.max:
        raise OverflowError(f"Python integer {value} out of bounds for {dtype}")
    return value


def reindex(x, shape, indices, overflow_value=None, overflow_conditions=()):
    """`meta.reindex`: see the module's documentation. `indices` is a list of
    Jittor index expressions, or a callable that takes the output's index
    names (``"i0"``, ``"i1"``, ...) and returns them."""
    x = _var(x)
    shape = _shape(shape, "reindex")
    if callable(indices):
        indices = indices(*[f"i{k}" for k in range(len(shape))])
    return Var(_call(
        _jitc.Var.reindex, x._v,
        shape, [str(e) for e in indices],
        None if overflow_value is None else _number(overflow_value, x.dtype),
        [str(c) for c in overflow_conditions],
    ))


def reindex_reduce(x, op, shape, indices):
    """`meta.reindex_reduce`: see the module's documentation. `indices` may be
    a callable of the input's index names, as for `reindex`."""
    x = _var(x)
    if callable(indices):
        indices = indices(*[f"i{k}" for k in range(x.ndim)])
    shape = _shape(shape, "reindex_reduce")
    return Var(_call(_jitc.Var.reindex_reduce, x._v, str(op), shape, [str(e) for e in indices]))


def unary(x, op):
    """`meta.unary` of kind `op` (``exp``, ``log``, ``neg``, ``abs``,
    ``sqrt``, ``rsqrt``, ``sin``, ``cos``, ``tanh``, ``erf``, ``sigmoid``,
    ``floor``, ``ceil``, ``round``, ``not``); casts are `Var.astype`."""
    return Var(_call(_jitc.Var.unary, _var(x)._v, str(op)))


def _broadcast_pair(a, b):
    """`a` and `b` broadcast to one shape, NumPy's way, each by a reindex
    where its shape differs."""
    if a.shape == b.shape:
        return a, b
    rank = _builtins.max(a.ndim, b.ndim)
    sa = (1,) * (rank - a.ndim) + a.shape
    sb = (1,) * (rank - b.ndim) + b.shape
    shape = []
    for p, q in zip(sa, sb):
        if p != q and p != 1 and q != 1:
            raise JitcError(f"shapes {a.shape} and {b.shape} do not broadcast together")
        # An extent of 1 takes the other's, 0 included (NumPy's rule).
        shape.append(q if p == 1 else p)
    return broadcast(a, shape), broadcast(b, shape)


def binary(x, y, op):
    """`meta.binary` of kind `op` (``add``, ``sub``, ``mul``, ``div``,
    ``mod``, ``pow``, ``max``, ``min``, ``and``, ``or``, ``xor``, and the
    comparisons ``eq``, ``ne``, ``lt``, ``le``, ``gt``, ``ge``, which give
    booleans), broadcasting as NumPy does; a number takes the other
    operand's type."""
    if not isinstance(x, Var) and not isinstance(y, Var):
        raise JitcError("binary needs at least one jitc.Var")
    if not _is_tensor(x) and not _is_tensor(y):
        return _Number._binary(x, y, op)
    x = _var(x, like=y if isinstance(y, Var) else None)
    y = _var(y, like=x)
    x, y = _broadcast_pair(x, y)
    return Var(_call(_jitc.Var.binary, x._v, str(op), y._v))


def _bitwise(x, y, op, symbol):
    """`&`, `|` and `^` (`op`: ``and``, ``or``, ``xor``): logical on
    booleans, bitwise on integers (a boolean meeting an integer is that
    integer), and NumPy's `TypeError` on floats and non-numbers."""
    x = _nested(x) if _holds_var(x) else x
    y = _nested(y) if _holds_var(y) else y
    for v in (x, y):
        if isinstance(v, Var):
            kind = v.dtype.kind
        elif isinstance(v, (bool, _np.bool_)):
            kind = "b"
        elif isinstance(v, (int, _np.integer)):
            kind = "i"
        elif isinstance(v, (float, _np.floating)):
            kind = "f"
        elif isinstance(v, _np.ndarray):
            kind = v.dtype.kind
        elif isinstance(v, (list, tuple)):
            kind = _sequence_kind(v)
        else:
            kind = None
        if kind not in ("b", "i", "u"):
            what = "floats" if kind == "f" else type(v).__name__
            raise TypeError(f"{symbol} is not defined on {what}, as in NumPy (only on integers and booleans)")
    return _arith(x, y, op)


def _is_tensor(x):
    return isinstance(x, Var) and not isinstance(x, _Number)


def _arith(x, y, op):
    """What Python's operator `op` computes on a `Var`: `binary`, after
    Jittor's and NumPy's promotion (`_promoted`). Integers and booleans
    that meet a float tensor or array take its type; with a float number
    (a Python or NumPy one, a 0-d array, a list of floats, a relaxed float)
    or in a true division ``/``, they compute in float32, or float64 where
    an operand is an int64 tensor or array (so ``x * 0.5`` and ``x < 0.5``
    on an int32 `x` are float32's, and ``x / 2`` is true division). Two
    tensors or arrays of one kind but different widths compute in the wider
    type (float32 with float64 is float64, int32 with int64 is int64, a
    boolean with an integer is that integer). Otherwise a number takes the
    tensor's type, as in `binary`, except that a boolean tensor meeting an
    integer number computes in int32. As NumPy: ``+`` and ``*`` of two
    booleans are ``or`` and ``and``, ``-`` of two booleans is an error, and
    ``**`` of integers is an integer (`_integer_power`)."""
    # A list of `Var`s is the tensor NumPy would make of it.
    x = _nested(x) if _holds_var(x) else x
    y = _nested(y) if _holds_var(y) else y
    if not (_is_tensor(x) or _is_tensor(y)):
        return binary(x, y, op)
    x, y = _promoted(x, y, op)
    if op in ("add", "mul", "sub") and _is_bool(x) and _is_bool(y):
        if op == "sub":
            raise JitcError(
                "- of two booleans is not supported, as in NumPy: use ^ (xor) "
                "or convert them with astype(np.int32)"
            )
        return binary(x, y, "or" if op == "add" else "and")
    if op == "pow" and not _float_kind(x) and not _float_kind(y):
        return _integer_power(x, y)
    if op == "pow" and _is_tensor(x):
        # (`_promoted` made a number a float; an array of one element that
        # does not widen `x` counts as its number, as in NumPy's loop.)
        if isinstance(y, _np.ndarray) and y.size == 1 and y.ndim <= x.ndim:
            y = float(y.reshape(()))
        if type(y) is float:
            quick = _scalar_power(x, y)
            if quick is not None:
                return quick
    return binary(x, y, op)


def _scalar_power(x, exponent):
    """NumPy's quick ``x ** exponent`` of a float tensor by one number (its
    power loop's, for an exponent of stride 0, and `fast_scalar_power`'s):
    ``2`` is ``x * x``, ``0.5`` the square root (``-0.0`` stays ``-0.0``
    and ``-inf`` gives NaN, as NumPy's), ``-1`` a division, ``1`` `x`
    itself, ``0`` ones (still reading `x`, so that what computing it
    raises is raised); each is NumPy's result bit for bit, and a multiply
    where ``pow`` is a libm call per element. None for any other
    exponent."""
    if exponent == 2.0:
        return binary(x, x, "mul")
    if exponent == 0.5:
        return unary(x, "sqrt")
    if exponent == -1.0:
        return binary(1.0, x, "div")
    if exponent == 1.0:
        return x
    if exponent == 0.0:
        return _ones_reading(x)
    return None


def _ones_reading(x):
    """Ones of `x`'s shape and type that still read `x` (a select of ones
    either way), so a failure in computing `x` is still raised."""
    ones = full(x.shape, 1, x.dtype)
    return ternary(binary(x, x, "eq"), ones, ones)


# Integer types by width, for `_promoted`.
_INTEGER_RANK = {_np.dtype(_np.bool_): 0, _np.dtype(_np.int32): 1, _np.dtype(_np.int64): 2}


def _promoted(x, y, op):
    """`x` and `y` as `_arith` promotes them for `op`."""
    if not (_is_tensor(x) or _is_tensor(y)):
        return x, y
    x, y = _scalar(x), _scalar(y)
    kinds = (_float_kind(x), _float_kind(y))
    strong = {k for k in kinds if isinstance(k, _np.dtype)}
    if strong:
        # A float tensor or array: its type, the wider of two.
        target = _builtins.max(strong, key=lambda d: d.itemsize)
    elif "weak" in kinds or op == "div":
        wide = any(v.dtype == _np.int64 for v in (x, y) if _is_array(v))
        target = _np.dtype(_np.float64 if wide else _np.float32)
    else:
        target = _integer_target(x, y, op)
    if target is None:
        return x, y
    return tuple(v if not _is_array(v) and _float_kind(v) is not None else _as_type(v, target) for v in (x, y))


def _integer_target(x, y, op):
    """The integer type that integer and boolean operands compute `op` in:
    the wider of two tensors' or arrays' types; int32 for booleans that meet
    an integer number, or a ``**``, ``//`` or ``%`` of booleans (NumPy's
    int8, which jitc does not have); None where they keep their types."""
    integers = [v.dtype for v in (x, y) if _is_array(v) and _INTEGER_RANK.get(v.dtype, 0) > 0]
    if integers:
        return _builtins.max(integers, key=_INTEGER_RANK.__getitem__)
    if any(_number_kind(v) == "int" or _sequence_kind(v) == "i" for v in (x, y)) or op in ("pow", "floordiv", "mod"):
        return _np.dtype(_np.int32)
    return None


def _sequence_kind(x):
    """The NumPy kind (``"b"``, ``"i"``, ``"f"``, ...) of the list or tuple
    `x`, or None for anything else."""
    if _holds_var(x):
        return _nested(x).dtype.kind
    if isinstance(x, (list, tuple)):
        return _np.asarray(x).dtype.kind
    return None


def _integer_power(x, y):
    """NumPy's ``x ** y`` of integers: an integer, wrapping as a product of
    that width does. An exponent that is a Python number is unrolled by
    squaring (``x ** 2`` is one multiply); a negative one, or one the
    base's type cannot hold, is NumPy's error. A tensor of exponents (a
    relaxed number in `jitc.function` is a rank-0 one by now) takes one
    step per bit (31 for int32, 63 for int64) and a guard that none is
    negative, which the fetch checks."""
    if not isinstance(y, (Var, _np.ndarray, list, tuple)):
        n = int(y)
        if n < 0:
            raise JitcError(
                "integers to negative integer powers are not allowed, as in NumPy: "
                "convert the base with astype(np.float32) first"
            )
        base = _var(x)
        if n > _np.iinfo(base.dtype).max:
            raise JitcError(f"the exponent {n} is out of bounds for {base.dtype}, as in NumPy")
        result, square = None, base
        while True:
            if n & 1:
                result = square if result is None else binary(result, square, "mul")
            n >>= 1
            if not n:
                break
            square = binary(square, square, "mul")
        return result if result is not None else _ones_reading(base)
    x = _var(x, like=y if isinstance(y, Var) else None)
    y = _var(y, like=x)
    x, y = _broadcast_pair(x, y)
    nonnegative = binary(reindex_reduce(y, "min", [], []), 0, "ge")
    y = Var(_checked(y._v, nonnegative._v, "integers to negative integer powers are not allowed"))
    two = full(y.shape, 2, y.dtype)
    zero = full(y.shape, 0, y.dtype)
    result, square = full(x.shape, 1, x.dtype), x
    steps = 8 * y.dtype.itemsize - 1
    for step in range(steps):
        odd = binary(binary(y, two, "mod"), zero, "ne")
        result = ternary(odd, binary(result, square, "mul"), result)
        if step < steps - 1:
            y = binary(y, two, "div")
            square = binary(square, square, "mul")
    return result


def _floor_division(x, y):
    """NumPy's ``divmod(x, y)`` of a tensor: the quotient rounded toward
    negative infinity and the remainder with the divisor's sign, after
    `_arith`'s promotion. On integers (where a zero divisor is an error, as
    in `binary`) from the truncating ``div`` and ``mod``; on floats as
    NumPy's ``npy_divmod`` does, from ``fmod`` (a zero divisor gives
    ``x / y`` and NaN)."""
    x, y = _promoted(x, y, "floordiv")
    x = _var(x, like=y if isinstance(y, Var) else None)
    y = _var(y, like=x)
    x, y = _broadcast_pair(x, y)
    if x.dtype.kind != "f":
        q, r = binary(x, y, "div"), binary(x, y, "mod")
        adjust = _both(r != 0, binary(r < 0, y < 0, "xor"))
        return ternary(adjust, q - 1, q), ternary(adjust, r + y, r)

    def copysign_zero(v):
        # -0.0 where `v` has its sign bit set (a -0.0 too), else 0.0.
        negative = binary(v < 0, _both(v == 0, binary(1.0, v, "div") < 0), "or")
        return ternary(negative, full(x.shape, -0.0, x.dtype), full(x.shape, 0.0, x.dtype))

    fmod = binary(x, y, "mod")
    div = binary(x - fmod, y, "div")
    nonzero = fmod != 0
    adjust = _both(nonzero, binary(y < 0, fmod < 0, "xor"))
    mod = ternary(adjust, fmod + y, ternary(nonzero, fmod, copysign_zero(y)))
    div = ternary(adjust, div - 1, div)
    floor = unary(div, "floor")
    floor = ternary(div - floor > 0.5, floor + 1, floor)
    quotient = binary(x, y, "div")
    floordiv = ternary(div != 0, floor, copysign_zero(quotient))
    by_zero = y == 0
    return ternary(by_zero, quotient, floordiv), ternary(by_zero, fmod, mod)


def _both(a, b):
    """The booleans `a` and `b`, element by element."""
    return binary(a, b, "and")


def _is_array(x):
    """Whether `x` is a tensor: a `Var` that is not a number, or an array."""
    return _is_tensor(x) or isinstance(x, _np.ndarray)


def _scalar(x):
    """A NumPy scalar or 0-d array as the Python number it holds (which
    meets a tensor as a Python number does, as in Jittor)."""
    if isinstance(x, _np.generic) or (isinstance(x, _np.ndarray) and x.ndim == 0):
        return x.item()
    return x


def _float_kind(x):
    """What float `x` brings to an operator: a float tensor's or array's
    type; ``"weak"`` for a float number, a relaxed float or a list of
    floats (which take the other operand's type); None for integers and
    booleans."""
    if isinstance(x, _Number):
        return "weak" if x._kind == "float" else None
    if isinstance(x, (Var, _np.ndarray)):
        return x.dtype if x.dtype.kind == "f" else None
    if isinstance(x, float):
        return "weak"
    if isinstance(x, (list, tuple)):
        return "weak" if _sequence_kind(x) == "f" else None
    return None


def _as_type(x, dtype):
    """The operand `x` converted to `dtype`: a tensor or an array cast, a
    number as the float it is where `dtype` is a float (else as it is; it
    takes the other operand's type). An array of a type jitc lacks is
    cast only where NumPy casts it safely (int8 or uint16 to int32, float16
    to float32); otherwise it is left as it is, for the error that names
    its type (a uint32 array is not wrapped into int32)."""
    if isinstance(x, _Number):
        return x._as(dtype)
    if isinstance(x, Var):
        return x.astype(dtype)
    if isinstance(x, _np.ndarray):
        if x.dtype not in _TO_JITC and not _np.can_cast(x.dtype, dtype, "safe"):
            return x
        return _np.asarray(x, dtype=dtype)
    if isinstance(x, (list, tuple)):
        return _np.asarray(x, dtype=dtype)
    if isinstance(x, (bool, int)) and dtype.kind == "f":
        return float(x)
    return x


# -- Python numbers as graph inputs (`jitc.function`'s relaxation) -----------------

# A relaxed number's native type, by its Python kind, and what a number
# becomes alone (`_as_array`): float32, int32, bool.
_NUMBER_DTYPES = {"float": "f64", "int": "i64", "bool": "i1"}
_NUMBER_DEFAULTS = {"float": _np.float32, "int": _np.int32, "bool": _np.bool_}
_NUMBER_OPS = {
    "add": _operator.add, "sub": _operator.sub, "mul": _operator.mul, "div": _operator.truediv,
    "eq": _operator.eq, "ne": _operator.ne, "lt": _operator.lt, "le": _operator.le,
    "gt": _operator.gt, "ge": _operator.ge,
}
_COMPARISONS = ("eq", "ne", "lt", "le", "gt", "ge")


def _number_kind(x):
    """A number's Python kind (``bool``, ``int``, ``float``), or None."""
    if isinstance(x, _Number):
        return x._kind
    return {bool: "bool", int: "int", float: "float"}.get(type(x))


# NumPy's ufuncs that are jitc ops (`Var.__array_ufunc__`): a binary one
# computes what its Python operator on a `Var` does (`np.add(a, v)` is
# `a + v`); the logical ones only on booleans (jitc's `and`/`or`/`xor`/
# `not` are bitwise on integers).
_UFUNC_UNARY = {
    "negative": "neg", "absolute": "abs", "exp": "exp", "log": "log", "sqrt": "sqrt", "sin": "sin", "cos": "cos",
    "tanh": "tanh", "floor": "floor", "ceil": "ceil",
}
_UFUNC_LOGICAL = {"logical_not": "not", "logical_and": "and", "logical_or": "or", "logical_xor": "xor"}
_UFUNC_BINARY = {
    "add": "add", "subtract": "sub", "multiply": "mul", "divide": "div", "true_divide": "div", "power": "pow",
    "equal": "eq", "not_equal": "ne", "less": "lt", "less_equal": "le", "greater": "gt", "greater_equal": "ge",
    # NaN-propagating, as NumPy's; jitc orders -0.0 below +0.0.
    "maximum": "max", "minimum": "min",
}
# `&`, `|`, `^` and `~`: NumPy's operators on an array meeting a `Var` come
# here as these ufuncs.
_UFUNC_BITWISE = {"bitwise_and": ("and", "&"), "bitwise_or": ("or", "|"), "bitwise_xor": ("xor", "^")}


def _is_bool(x):
    """Whether `x` is a boolean `Var`, array, list or Python value."""
    if isinstance(x, (Var, _np.ndarray)):
        return x.dtype == _np.bool_
    if isinstance(x, (list, tuple)):
        return _sequence_kind(x) == "b"
    return isinstance(x, (bool, _np.bool_))


class _Number(Var):
    """A Python number that a staged graph takes as an input (JANUS's
    relaxed assumption): while `jitc.function` traces a call, it stands in
    for an ``int`` or ``float`` argument or attribute whose value changed
    between calls. It computes what the number would: with a `jitc.Var`
    it takes the Var's element type (`_var`), except that a float promotes
    an integer tensor to a float type (`_arith`); with other numbers it follows
    Python's kinds (``int`` with ``int`` is an ``int``, ``/`` gives a
    ``float``, a comparison a ``bool``), in 64 bits; alone it becomes
    float32 or int32, as a number does. Anything that reads its value into
    Python (``float()``, ``int()``, an index, formatting, hashing, NumPy,
    ``**``) gets the real value and marks the trace, which then cannot be
    staged with the number relaxed."""

    __slots__ = ("_kind", "_value")

    # (NumPy's operators defer to the reflected ones below, which read the
    # number into Python with an array, as the real number would meet it.)
    __array_ufunc__ = None

    @classmethod
    def of(cls, value):
        """`value` as a graph input: its native is not recorded by a
        tracer (the trace's input, not an op)."""
        kind = _number_kind(value)
        array = _np.asarray(value, dtype=_TO_NUMPY[_NUMBER_DTYPES[kind]])
        return cls._made(_jitc.Var.from_bytes(array.tobytes(), [], _NUMBER_DTYPES[kind]), kind, value)

    @classmethod
    def _made(cls, native, kind, value):
        number = object.__new__(cls)
        number._v, number._kind, number._value = native, kind, value
        return number

    def _as(self, dtype):
        """A plain `Var` of `dtype`, as ``np.asarray(number, dtype)``:
        NumPy raises where an int does not fit a narrower integer type, so
        the graph guards that it fits; other conversions to integers or
        booleans read the value into Python."""
        target = _TO_JITC[_np.dtype(dtype)]
        if target == self._v.dtype:
            return Var(self._v)
        if target in ("i1", "i32", "i64") and self._kind != "int":
            self._python(f"becoming a {_np.dtype(dtype)} tensor")
        native = self._v
        if target == "i32":
            native = _within(native, -(2**31), 2**31 - 1, "an int that fits int32")
        if target in ("f32", "f16", "bf16") and self._kind == "int" and native.dtype == "i64":
            # NumPy rounds a Python int to a double first, then to the
            # narrower float: the same two roundings.
            native = _call(_jitc.Var.cast, native, "f64")
        return Var(_call(_jitc.Var.cast, native, target))

    def __getattr__(self, name):
        # An attribute of the number itself that a `Var` has not
        # (`n.denominator`, `x.is_integer()`): the real number's, read into
        # Python (without it, the stand-in would raise AttributeError and
        # its run could take another way in Python, with other effects).
        value = object.__getattribute__(self, "_value")
        if name.startswith("__") or not hasattr(value, name):
            raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")
        return getattr(self._python(f"its attribute {name}"), name)

    def _python(self, why):
        """The real value, read into Python: the trace is marked."""
        tracer = _tracing.tracer
        if tracer is not None:
            tracer.relax_failed(f"its value is read into Python ({why})")
        return self._value

    @staticmethod
    def _binary(x, y, op):
        kinds = (_number_kind(x), _number_kind(y))
        values = [v._value if isinstance(v, _Number) else v for v in (x, y)]
        numbers = [v for v in (x, y) if isinstance(v, _Number)]
        real = _NUMBER_OPS.get(op)
        if real is None or None in kinds or ("bool" in kinds and op not in _COMPARISONS):
            # Python computes it (pow, bitwise, a bool in arithmetic, a
            # NumPy scalar): the value is Python's, and the trace is marked.
            for n in numbers:
                n._python(f"the operator {op}")
            if op == "pow":
                return _builtins.pow(*values)
            if op not in _PY_FALLBACK:
                raise JitcError("binary needs at least one jitc.Var")
            return _PY_FALLBACK[op](*values)
        value = real(*values)
        # Where 64 bits are not Python's numbers, the graph guards (a failed
        # guard reruns the call imperatively): an int past 2**53 meeting a
        # float, an int product or sum that could leave 64 bits, a
        # division by a number that is zero.
        limit = None
        if "float" in kinds or op == "div":
            limit = 2**53
        elif op == "mul":
            limit = 2**31
        elif op in ("add", "sub"):
            limit = 2**62
        guards = []
        for v, k in zip((x, y), kinds):
            if k != "int" or limit is None:
                continue
            if isinstance(v, _Number):
                guards.append((v._v, -limit, limit, f"an int within 2**{limit.bit_length() - 1}"))
            elif abs(v) >= limit:
                for n in numbers:
                    n._python(f"the operator {op} with {v}")
                return value
        if "float" in kinds or op == "div":
            operand = "float"
        elif "int" in kinds:
            operand = "int"
        else:
            operand = "bool"
        kind = "bool" if op in _COMPARISONS else operand
        dtype = _NUMBER_DTYPES[operand]
        natives = []
        for v in (x, y):
            if isinstance(v, _Number):
                native = v._v
                for guarded, low, high, what in guards:
                    if guarded is native:
                        native = _within(native, low, high, what)
                natives.append(native if native.dtype == dtype else _call(_jitc.Var.cast, native, dtype))
            else:
                natives.append(Var(_np.asarray(v, dtype=_TO_NUMPY[dtype]))._v)
        if op == "div" and isinstance(y, _Number):
            zero = Var(_np.asarray(0, dtype=_TO_NUMPY[dtype]))._v
            natives[1] = _checked(natives[1], _call(_jitc.Var.binary, natives[1], "ne", zero), "a divisor that is not zero")
        return _Number._made(_call(_jitc.Var.binary, natives[0], op, natives[1]), kind, value)

    def _unary(self, op, real):
        if self._kind == "bool":
            return real(self._python(f"the operator {op} on a bool"))
        native = self._v
        if self._kind == "int":
            # -(-2**63) and abs(-2**63) leave 64 bits, where Python's ints
            # do not: the graph guards.
            native = _within(native, -(2**63) + 1, 2**63 - 1, "an int above -2**63")
        return _Number._made(_call(_jitc.Var.unary, native, op), self._kind, real(self._value))

    def __neg__(self):
        return self._unary("neg", _operator.neg)

    def __pos__(self):
        return self if self._kind != "bool" else +self._python("unary +")

    def __abs__(self):
        return self._unary("abs", _builtins.abs)

    def __invert__(self):
        # Python's `~`: bitwise on ints (64 bits hold it), -2 and -1 of a
        # bool, an error on a float.
        if self._kind == "float":
            raise TypeError("bad operand type for unary ~: 'float'")
        return self._unary("not", _operator.invert)

    def __len__(self):
        raise TypeError(f"object of type '{self._kind}' has no len()")

    def __getitem__(self, key):
        return self._python("a subscript")[key]

    def __setitem__(self, key, value):
        self._python("item assignment")[key] = value

    def __iter__(self):
        return iter(self._python("iteration"))

    def __reversed__(self):
        return reversed(self._python("reversed()"))

    def __contains__(self, value):
        return value in self._python("in")

    def __float__(self):
        return float(self._python("float()"))

    def __int__(self):
        return int(self._python("int()"))

    def __index__(self):
        if self._kind == "float":
            raise TypeError("'float' object cannot be interpreted as an integer")
        return _operator.index(self._python("an index"))

    def __complex__(self):
        return complex(self._python("complex()"))

    def __round__(self, digits=None):
        value = self._python("round()")
        return round(value) if digits is None else round(value, digits)

    def __trunc__(self):
        return _math.trunc(self._python("math.trunc()"))

    def __floor__(self):
        return _math.floor(self._python("math.floor()"))

    def __ceil__(self):
        return _math.ceil(self._python("math.ceil()"))

    def __format__(self, spec):
        return format(self._python("formatting"), spec)

    def __str__(self):
        return str(self._python("str()"))

    def __repr__(self):
        return repr(self._python("repr()"))

    def __hash__(self):
        return hash(self._python("hash()"))

    def __array__(self, dtype=None, copy=None):
        return _np.asarray(self._python("NumPy"), dtype=dtype)

    def __pow__(self, other):
        return _Number._binary(self, other, "pow")

    def __rpow__(self, other):
        return _Number._binary(other, self, "pow")

    def __floordiv__(self, other):
        return _Number._binary(self, other, "floordiv")

    def __rfloordiv__(self, other):
        return _Number._binary(other, self, "floordiv")

    def __mod__(self, other):
        return _Number._binary(self, other, "mod")

    def __rmod__(self, other):
        return _Number._binary(other, self, "mod")


def _checked(native, condition, reason):
    """`native` (of any shape), computed only where the rank-0 `i1`
    `condition` holds: a guard the value depends on (so it is in every
    graph that reads it), and that staged graphs check even where nothing
    reads the value (`_eager_guard`)."""
    ok = _call(_eager_guard, condition, reason)
    if native.shape:
        ok = broadcast(Var(ok), list(native.shape))._v
    return _call(_jitc.Var.select, ok, native, native)


def _within(native, low, high, what):
    """The rank-0 integer `native`, guarded to lie in `[low, high]`."""
    lowest = Var(_np.asarray(low, dtype=_TO_NUMPY[native.dtype]))._v
    highest = Var(_np.asarray(high, dtype=_TO_NUMPY[native.dtype]))._v
    above = _call(_jitc.Var.binary, native, "ge", lowest)
    below = _call(_jitc.Var.binary, native, "le", highest)
    return _checked(native, _call(_jitc.Var.binary, above, "and", below), what)


_PY_FALLBACK = {
    "floordiv": _operator.floordiv, "mod": _operator.mod, "max": _builtins.max, "min": _builtins.min,
    "and": _operator.and_, "or": _operator.or_, "xor": _operator.xor,
    **_NUMBER_OPS,
}


def ternary(condition, x, y):
    """`meta.ternary` ``select``: where `condition` holds, `x`, else `y`,
    the three broadcast together as NumPy's ``where`` does; a number takes
    the other choice's type, as in `binary`."""
    condition = _var(condition)
    x = _var(x, like=y if isinstance(y, Var) else None)
    y = _var(y, like=x)
    x, y = _broadcast_pair(x, y)
    condition, x = _broadcast_pair(condition, x)
    condition, y = _broadcast_pair(condition, y)
    return Var(_call(_jitc.Var.select, condition._v, x._v, y._v))


# -- the op library: meta-operators only, as Jittor's is -------------------------


def broadcast(x, shape, dims=None):
    """`x` broadcast to `shape`: NumPy's rule (trailing dimensions align,
    size-1 dimensions stretch), or, with `dims`, Jittor's: `dims` are the
    new dimensions of `shape`, the others are `x`'s in order."""
    x = _var(x)
    shape = _shape(shape, "broadcast")
    if dims is None:
        offset = len(shape) - x.ndim
        if offset < 0:
            raise JitcError(f"cannot broadcast shape {x.shape} to {tuple(shape)}: fewer dimensions")
        indices = []
        for d, n in enumerate(x.shape):
            target = shape[offset + d]
            if n == target:
                indices.append(f"i{offset + d}")
            elif n == 1:
                indices.append("0")
            else:
                raise JitcError(f"cannot broadcast shape {x.shape} to {tuple(shape)}")
    else:
        dims = [d % len(shape) for d in dims]
        kept = [d for d in range(len(shape)) if d not in dims]
        if len(kept) != x.ndim or any(shape[k] != n and n != 1 for k, n in zip(kept, x.shape)):
            raise JitcError(f"cannot broadcast shape {x.shape} to {tuple(shape)} with new dimensions {dims}")
        indices = [f"i{k}" if n != 1 or shape[k] == 1 else "0" for k, n in zip(kept, x.shape)]
    if tuple(shape) == x.shape:
        return x
    return reindex(x, shape, indices)


def _axes(x, axis):
    if axis is None:
        return list(range(x.ndim))
    if isinstance(axis, (int, _np.integer)):
        axis = [int(axis)]
    axes = []
    for a in axis:
        if not -x.ndim <= a < x.ndim:
            raise JitcError(f"axis {a} is out of range for a rank-{x.ndim} value")
        if a % x.ndim in axes:
            raise JitcError(f"axis {a} is given twice")
        axes.append(a % x.ndim)
    return sorted(axes)


def _reduce(x, op, axis, keepdims):
    x = _var(x)
    axes = _axes(x, axis)
    if op in ("max", "min") and any(x.shape[d] == 0 for d in axes):
        # As NumPy: there is no identity to give over no elements.
        raise JitcError(f"{op} over an axis of size 0 of a {x.shape} value has no elements to take")
    shape, indices = [], []
    for d, n in enumerate(x.shape):
        if d in axes:
            if keepdims:
                shape.append(1)
                indices.append("0")
        else:
            shape.append(n)
            indices.append(f"i{d}")
    return reindex_reduce(x, op, shape, indices)


def sum(x, axis=None, keepdims=False):
    """The sum over `axis` (an int, a tuple, or every axis). Booleans are
    counted in int64, as NumPy does; other types keep theirs (an int32 sum
    wraps, as Jittor's does, where NumPy's is int64)."""
    x = _var(x)
    if x.dtype == _np.bool_:
        x = x.astype(_np.int64)
    return _reduce(x, "add", axis, keepdims)


def _extreme(x, op, axis, keepdims):
    """`max` or `min` (`op`); of booleans, a boolean (taken over int32,
    since reductions take numbers)."""
    x = _var(x)
    if x.dtype == _np.bool_:
        return _reduce(x.astype(_np.int32), op, axis, keepdims) != 0
    return _reduce(x, op, axis, keepdims)


def max(x, axis=None, keepdims=False):
    """The maximum over `axis` (an error over an axis of size 0)."""
    return _extreme(x, "max", axis, keepdims)


def min(x, axis=None, keepdims=False):
    """The minimum over `axis` (an error over an axis of size 0)."""
    return _extreme(x, "min", axis, keepdims)


def mean(x, axis=None, keepdims=False):
    """The mean over `axis`. Integers and booleans are summed as floats, of
    the type their true division gives (float32, float64 for int64), so the
    sum does not wrap."""
    x = _var(x)
    if x.dtype.kind in "biu":
        x = x.astype(_np.float64 if x.dtype == _np.int64 else _np.float32)
    count = 1
    for d in _axes(x, axis):
        count *= x.shape[d]
    return sum(x, axis, keepdims) / float(count)


def matmul(a, b):
    """The matrix product of (n, k) and (k, m) values, or of batches of them
    (b, n, k) and (b, k, m): a broadcast of each, a multiply and a sum, as
    in Jittor."""
    a, b = _var(a), _var(b)
    if a.ndim == 2 and b.ndim == 2:
        (n, k), (k2, m) = a.shape, b.shape
        if k != k2:
            raise JitcError(f"matmul of {a.shape} and {b.shape}: inner dimensions differ")
        aa = reindex(a, [n, m, k], ["i0", "i2"])
        bb = reindex(b, [n, m, k], ["i2", "i1"])
        return reindex_reduce(aa * bb, "add", [n, m], ["i0", "i1"])
    if a.ndim == 3 and b.ndim == 3:
        (batch, n, k), (batch2, k2, m) = a.shape, b.shape
        if k != k2 or batch != batch2:
            raise JitcError(f"matmul of {a.shape} and {b.shape}: batch or inner dimensions differ")
        aa = reindex(a, [batch, n, m, k], ["i0", "i1", "i3"])
        bb = reindex(b, [batch, n, m, k], ["i0", "i3", "i2"])
        return reindex_reduce(aa * bb, "add", [batch, n, m], ["i0", "i1", "i2"])
    raise JitcError(f"matmul takes two rank-2 or two rank-3 values, not {a.shape} and {b.shape}")


def conv2d(x, w, stride=1, padding=0):
    """A 2-D convolution of `x` (N, C, H, W) with `w` (O, C, Kh, Kw), zero
    padding: Listing 1 of the Jittor paper (a reindex of the image, a
    broadcast of the weights, a multiply and a sum)."""
    x, w = _var(x), _var(w)
    if x.ndim != 4 or w.ndim != 4 or x.shape[1] != w.shape[1]:
        raise JitcError(f"conv2d of {x.shape} with {w.shape}: needs (N, C, H, W) and (O, C, Kh, Kw)")
    n, c, h, wd = x.shape
    o, _, kh, kw = w.shape
    s, p = int(stride), int(padding)
    if s < 1 or p < 0:
        raise JitcError(f"conv2d: the stride must be 1 or more and the padding not negative, got {s} and {p}")
    ho, wo = (h + 2 * p - kh) // s + 1, (wd + 2 * p - kw) // s + 1
    if ho <= 0 or wo <= 0:
        raise JitcError(f"conv2d of {x.shape} with {w.shape}: the kernel is larger than the padded image")
    shape = [n, o, ho, wo, c, kh, kw]
    xx = reindex(x, shape, ["i0", "i4", f"i2 * {s} - {p} + i5", f"i3 * {s} - {p} + i6"], 0.0)
    ww = reindex(w, shape, ["i1", "i4", "i5", "i6"])
    return reindex_reduce(xx * ww, "add", [n, o, ho, wo], ["i0", "i1", "i2", "i3"])


def pad(x, pad_width, value=0.0):
    """`x` with `pad_width[d] = (before, after)` elements of `value` around
    dimension `d`."""
    x = _var(x)
    if len(pad_width) != x.ndim:
        raise JitcError(f"pad of a rank-{x.ndim} value needs {x.ndim} (before, after) pairs")
    if any(int(w) < 0 for pair in pad_width for w in pair):
        raise JitcError(f"pad widths must not be negative: {pad_width}")
    shape = [n + int(b) + int(a) for n, (b, a) in zip(x.shape, pad_width)]
    indices = [f"i{d} - {int(b)}" for d, (b, _) in enumerate(pad_width)]
    return reindex(x, shape, indices, value)


def transpose(x, axes=None):
    """`x` with its dimensions permuted (reversed by default)."""
    x = _var(x)
    if axes is not None:
        for a in axes:
            if not -x.ndim <= a < x.ndim:
                raise JitcError(f"transpose axis {a} is out of range for a rank-{x.ndim} value")
    axes = list(reversed(range(x.ndim))) if axes is None else [a % x.ndim for a in axes]
    if sorted(axes) != list(range(x.ndim)):
        raise JitcError(f"transpose axes {axes} are not a permutation of a rank-{x.ndim} value's")
    shape = [x.shape[a] for a in axes]
    indices = [""] * x.ndim
    for j, a in enumerate(axes):
        indices[a] = f"i{j}"
    return reindex(x, shape, indices)


def reshape(x, shape):
    """`x` with a new shape of as many elements (one size may be -1)."""
    x = _var(x)
    shape = [int(d) for d in shape]
    count = 1
    for n in x.shape:
        count *= n
    if shape.count(-1) > 1:
        raise JitcError("reshape: at most one size may be -1")
    if any(d < -1 for d in shape):
        raise JitcError(f"reshape: shape {tuple(shape)} has a negative size (only one -1, inferred, may be)")
    if -1 in shape:
        known = 1
        for d in shape:
            if d != -1:
                known *= d
        if known == 0 or count % known:
            raise JitcError(f"cannot reshape {x.shape} to {tuple(shape)}")
        shape[shape.index(-1)] = count // known
    total = 1
    for d in shape:
        total *= d
    if total != count:
        raise JitcError(f"cannot reshape {x.shape} ({count} elements) to {tuple(shape)} ({total})")
    if tuple(shape) == x.shape:
        return x
    if count == 0:
        # No element to place: a flat position would divide by a size of 0.
        return reindex(x, shape, ["0"] * x.ndim)
    # The output's flat position, then each input index from it.
    # (A dimension of size 1 adds nothing: its index is 0, and so is its
    # digit below.)
    stride, terms = 1, []
    for d in reversed(range(len(shape))):
        if shape[d] != 1:
            terms.append(f"i{d} * {stride}")
        stride *= shape[d]
    flat = " + ".join(reversed(terms)) if terms else "0"
    indices, stride = [], 1
    for n in reversed(x.shape):
        indices.append("0" if n == 1 else f"(({flat}) floordiv {stride}) mod {n}")
        stride *= n
    return reindex(x, shape, list(reversed(indices)))


def _combine(parts):
    """The sum of `parts`, each a value in its own slots and the identity of
    the sum elsewhere (``-0.0``: ``x + -0.0`` is `x` for every float, the
    sign of a zero included, a signalling NaN made quiet as any arithmetic
    makes it; ``0`` for integers; ``or`` for booleans)."""
    kind = "or" if parts[0].dtype == _np.bool_ else "add"
    total = parts[0]
    for part in parts[1:]:
        total = binary(total, part, kind)
    return total


def _gap(dtype):
    """What a part of `_combine` holds outside its slots."""
    return -0.0 if _np.dtype(dtype).kind == "f" else 0


def _same_type(values):
    """`values` (tensors, arrays, numbers, lists) as `Var`s of one type
    (`_common_type`); a list holding `Var`s is the tensor `_nested` makes
    of it."""
    values = [_nested(v) if _holds_var(v) else v for v in values]
    target = _common_type(values)
    return [_as_var_of(v, target) for v in values]


def _common_type(values):
    """The type `values` (tensors, arrays, numbers, lists of numbers; no
    `Var` inside a list) meet in, as `_arith` would meet them: NumPy's
    result type of the tensors and arrays; numbers and lists of numbers
    (NumPy scalars among them, as in `_arith`) take it, unless they are of
    a higher kind: a float makes integers and booleans float32 (float64
    with int64), an int makes booleans int32. With no tensor or array, the
    numbers' own type (float32, int32 or bool, as `jitc.Var` makes them)."""
    rank = {"b": 0, "i": 1, "u": 1, "f": 2}
    strong = [v.dtype for v in values if _is_array(v)]
    weak = []
    for v in values:
        if _is_array(v):
            continue
        kind = _sequence_kind(v) if isinstance(v, (list, tuple)) else {
            "bool": "b", "int": "i", "float": "f"}.get(_number_kind(_scalar(v)))
        if kind is None:
            raise JitcError(f"cannot stack or concatenate a {type(v).__name__}")
        weak.append(kind)
    if not strong:
        return _as_array([_scalar(v) if not isinstance(v, _Number) else v._value for v in values]).dtype
    target = _np.result_type(*strong)
    highest = _builtins.max(weak, key=rank.__getitem__, default="b")
    if rank[highest] > rank.get(target.kind, 2):
        if highest == "f":
            target = _np.dtype(_np.float64 if target == _np.int64 else _np.float32)
        else:
            target = _np.dtype(_np.int32)
    if target not in _TO_JITC:
        raise JitcError(f"jitc has no element type for NumPy's {target}")
    return target


def _as_var_of(v, dtype):
    """`v` (a tensor, a relaxed number, an array or a number) as a `Var` of
    `dtype`."""
    if isinstance(v, _Number):
        return v._as(dtype)
    if isinstance(v, Var):
        return v.astype(dtype)
    return Var(v, dtype)


def concatenate(values, axis=0):
    """`values` joined along the existing axis `axis`, as `numpy.concatenate`:
    each placed by a reindex that reads past its ends elsewhere (the
    identity of a sum there), and the parts added, all fused into one
    kernel. Gradients flow to every part. The meta-operators have no
    concatenation of their own (this is Jittor's reindex-and-sum form), so
    a kernel that joins `n` parts reads every part at every element; more
    than 16 parts are joined as a tree of joins of 16 at most (`_joined`),
    so the work grows as the output's size times about `16 log16(n)`
    (128 stacked parts of 16x256: 1.4 ms a call, against 3.8 ms joined in
    one kernel)."""
    values = _same_type(list(values))
    if not values:
        raise JitcError("concatenate needs at least one value")
    rank = values[0].ndim
    if rank == 0:
        raise JitcError("zero-dimensional values cannot be concatenated")
    if not -rank <= axis < rank:
        raise JitcError(f"axis {axis} is out of bounds for rank-{rank} values")
    axis %= rank
    for v in values:
        if v.ndim != rank or any(n != m for d, (n, m) in enumerate(zip(v.shape, values[0].shape)) if d != axis):
            raise JitcError(
                f"concatenate: every value must have shape {values[0].shape} but along axis {axis}, not {v.shape}"
            )
    return _joined(values, axis)


# Parts one kernel of `concatenate` joins at most.
_JOIN_FAN_IN = 16


def _joined(values, axis):
    """`values` (checked, of one type) joined along `axis`: a tree of joins
    of at most `_JOIN_FAN_IN` parts each. A join's kernel reads each of its
    parts at every element it writes (its parts are placed by reindexes and
    added), so one join of `n` parts costs `n` times its output; the tree
    costs about `16 log16(n)` times (a reindex never fuses with its
    producer, Jittor's rule 1, so each level's joins are computed before
    the next level reads them). Up to 16 parts, one kernel is as fast."""
    if len(values) == 1:
        return values[0]
    if len(values) > _JOIN_FAN_IN:
        size = -(-len(values) // _JOIN_FAN_IN)
        values = [_joined(values[k:k + size], axis) for k in range(0, len(values), size)]
    shape = list(values[0].shape)
    shape[axis] = _builtins.sum(v.shape[axis] for v in values)
    rank = len(shape)
    parts, offset = [], 0
    for v in values:
        indices = [f"i{d}" if d != axis else f"i{d} - {offset}" for d in range(rank)]
        parts.append(reindex(v, shape, indices, _gap(v.dtype)))
        offset += v.shape[axis]
    return _combine(parts)


def stack(values, axis=0):
    """`values` of one shape stacked along a new axis `axis`, as
    `numpy.stack` (see `concatenate`)."""
    values = _same_type(list(values))
    if not values:
        raise JitcError("stack needs at least one value")
    shape = values[0].shape
    for v in values:
        if v.shape != shape:
            raise JitcError(f"stack: every value must have one shape, not {shape} and {v.shape}")
    rank = len(shape) + 1
    if not -rank <= axis < rank:
        raise JitcError(f"axis {axis} is out of bounds for rank-{rank} results")
    axis %= rank
    key = (slice(None),) * axis + (None,)
    return concatenate([_getitem(v, key) for v in values], axis)


def _holds_var(x, depth=0):
    """Whether the list or tuple `x` holds a `jitc.Var`, at any depth
    (NumPy's 64 dimensions at most)."""
    return (isinstance(x, (list, tuple)) and depth < 64
            and any(isinstance(i, Var) or _holds_var(i, depth + 1) for i in x))


def _nested(x):
    """The list or tuple `x`, holding `jitc.Var`s, as one `Var`: what
    ``numpy.array`` makes of it, built in the graph (`stack` at each level),
    so the values stay pending and gradients reach them."""
    leaves = []

    def collect(v):
        if isinstance(v, (list, tuple)):
            for i in v:
                collect(i)
        else:
            leaves.append(v)

    collect(x)
    target = _common_type(leaves)

    def build(v):
        if isinstance(v, (list, tuple)):
            items = [build(i) for i in v]
            if not items:
                raise JitcError("an empty list inside a list of jitc.Vars")
            shapes = {i.shape for i in items}
            if len(shapes) > 1:
                raise JitcError(
                    "a list of jitc.Vars must be rectangular, as NumPy's arrays are: "
                    f"its items have shapes {sorted(shapes)}"
                )
            return stack(items)
        return _as_var_of(v, target)

    return build(x)


_INDEX_KINDS = "integers, slices (`:`), an ellipsis (`...`) and None (numpy.newaxis)"


def _index_item(item):
    """One item of an index: a slice, None, Ellipsis, or an int (NumPy's
    integer types and objects with `__index__` included); what NumPy's
    advanced indexing takes (arrays, lists, booleans, tensors) is an
    IndexError, since it gathers, which no affine reindex does."""
    if item is None or item is Ellipsis or isinstance(item, slice):
        return item
    if isinstance(item, (bool, _np.bool_)):
        raise IndexError(f"jitc.Var takes no boolean index (a mask); its indices are {_INDEX_KINDS}")
    if isinstance(item, Var) and not isinstance(item, _Number):
        raise IndexError(
            f"jitc.Var takes no jitc.Var as an index (a gather, not a reindex); its indices are "
            f"{_INDEX_KINDS}; read a computed index with int(v.item())"
        )
    if isinstance(item, _np.ndarray) and item.ndim == 0 and item.dtype.kind in "iu":
        return int(item)  # (NumPy takes a 0-d integer array as its integer)
    if isinstance(item, (_np.ndarray, list, tuple)):
        raise IndexError(
            f"jitc.Var takes no array or list as an index (NumPy's advanced indexing gathers, "
            f"which no affine reindex does); its indices are {_INDEX_KINDS}"
        )
    try:
        return _operator.index(item)
    except TypeError:
        if isinstance(item, _Number):
            item = item._python("an index")
        raise IndexError(
            f"jitc.Var indices are {_INDEX_KINDS}, not {type(item).__name__} {item!r}"
        ) from None


def _getitem(x, key):
    """NumPy's basic indexing, `x[key]`, as one reindex: an int picks one
    position of its axis (negative ones count from the end) and drops the
    axis; a slice keeps the positions ``start + step * i`` (any step but 0,
    clamped as NumPy clamps); None adds an axis of size 1; an ellipsis
    stands for every axis not named. Out-of-range ints are an IndexError,
    as in NumPy (a reindex would read its overflow value there)."""
    items = [_index_item(item) for item in (key if isinstance(key, tuple) else (key,))]
    ellipses = _builtins.sum(1 for item in items if item is Ellipsis)
    if ellipses > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    named = _builtins.sum(1 for item in items if item is not None and item is not Ellipsis)
    if named > x.ndim:
        raise IndexError(
            f"too many indices for jitc.Var: it is {x.ndim}-dimensional, but {named} were indexed"
        )
    rest = [slice(None)] * (x.ndim - named)
    if ellipses:
        at = items.index(Ellipsis)
        items[at:at + 1] = rest
    else:
        items += rest
    ints = _builtins.sum(1 for item in items if isinstance(item, int))
    nones = _builtins.sum(1 for item in items if item is None)
    if nones + x.ndim - ints > 64:
        raise IndexError("an index can make at most 64 dimensions, as NumPy's")
    shape, indices, axis = [], [], 0
    for item in items:
        if item is None:
            shape.append(1)
            continue
        n = x.shape[axis]
        if isinstance(item, slice):
            bounds = item.indices(n)
            start, _, step = bounds
            out = f"i{len(shape)}"
            length = len(range(*bounds))
            shape.append(length)
            if length <= 1:
                step = 1  # (any step picks the one position; 2**63 is no index)
            if step == 1:
                indices.append(out if start == 0 else f"{out} + {start}")
            elif step > 0:
                indices.append(f"{out} * {step} + {start}")
            else:
                indices.append(f"{start} - {out} * {-step}")
        else:
            if not -n <= item < n:
                raise IndexError(f"index {item} is out of bounds for axis {axis} with size {n}")
            indices.append(str(item % n))
        axis += 1
    if tuple(shape) == x.shape and indices == [f"i{d}" for d in range(x.ndim)]:
        return x
    return reindex(x, shape, indices)


def relu(x):
    """max(x, 0)."""
    return binary(x, 0.0 if _var(x).dtype.kind == "f" else 0, "max")


def sigmoid(x):
    return unary(x, "sigmoid")


def tanh(x):
    return unary(x, "tanh")


def exp(x):
    return unary(x, "exp")


def log(x):
    return unary(x, "log")


def softmax(x, axis=-1):
    """exp(x - max) / sum(exp(x - max)) over `axis`."""
    x = _var(x)
    shifted = x - max(x, axis, keepdims=True)
    e = exp(shifted)
    return e / sum(e, axis, keepdims=True)


def layer_norm(x, weight=None, bias=None, eps=1e-5, axes=1):
    """Normalization over the last `axes` dimensions, then `weight` and
    `bias` (of those dimensions' shape) when given."""
    x = _var(x)
    dims = tuple(range(x.ndim - axes, x.ndim))
    centered = x - mean(x, dims, keepdims=True)
    variance = mean(centered * centered, dims, keepdims=True)
    return _scaled(centered, variance, eps, weight, bias, lambda v: _var(v, like=x))


def _scaled(centered, variance, eps, weight, bias, shaped):
    """`centered / sqrt(variance + eps)`, times `weight` and plus `bias` when
    given (each made to broadcast by `shaped`)."""
    y = centered * unary(variance + eps, "rsqrt")
    if weight is not None:
        y = y * shaped(weight)
    if bias is not None:
        y = y + shaped(bias)
    return y


def batch_norm(x, weight=None, bias=None, running_mean=None, running_var=None, eps=1e-5):
    """Batch normalization of `x` (N, C, ...) per channel: with the batch's
    statistics over every axis but 1, or with `running_mean` and
    `running_var` when given (inference); then `weight` and `bias` (C,)."""
    x = _var(x)
    if x.ndim < 2:
        raise JitcError(f"batch_norm needs (N, C, ...), got {x.shape}")
    channels = [1, x.shape[1]] + [1] * (x.ndim - 2)
    per_channel = lambda v: reshape(_var(v, like=x), channels)  # noqa: E731
    axes = tuple(d for d in range(x.ndim) if d != 1)
    if running_mean is not None and running_var is not None:
        centered = x - per_channel(running_mean)
        variance = per_channel(running_var)
    else:
        centered = x - mean(x, axes, keepdims=True)
        variance = mean(centered * centered, axes, keepdims=True)
    return _scaled(centered, variance, eps, weight, bias, per_channel)


def log_softmax(x, axis=-1):
    """x - max - log(sum(exp(x - max))) over `axis`."""
    x = _var(x)
    shifted = x - max(x, axis, keepdims=True)
    return shifted - log(sum(exp(shifted), axis, keepdims=True))


def cross_entropy(logits, target):
    """The mean over the batch (axis 0) of ``-sum(target * log_softmax(logits))``
    over the classes (the last axis). `target` is one probability row per
    example (one-hot, say), or an integer array of class indices, made
    one-hot here."""
    logits = _var(logits)
    if _holds_var(target):
        target = _nested(target)
    if not isinstance(target, Var):
        array = _np.asarray(target)
        if array.dtype.kind in "iu":
            if array.shape != logits.shape[:-1]:
                raise JitcError(
                    f"{array.shape} class indices for logits of shape {logits.shape}"
                )
            classes = logits.shape[-1]
            if array.size and (array.min() < 0 or array.max() >= classes):
                raise JitcError(f"class indices must lie in [0, {classes})")
            array = _np.eye(classes, dtype=logits.dtype)[array]
        target = Var(array, dtype=logits.dtype)
    if target.shape != logits.shape:
        raise JitcError(f"target of shape {target.shape} for logits of shape {logits.shape}")
    per_example = -sum(target * log_softmax(logits), axis=-1)
    return mean(per_example)


# -- gradients ----------------------------------------------------------------------

def grad(loss, params):
    """The gradients of the scalar `loss` with respect to `params` (one
    `Var`, or a list of them): one `Var` of each param's shape, or a list.

    The gradient is recorded as meta-operators that read the forward pass's
    values, so fetching the loss and the gradients together computes the
    forward pass once, fused with the backward one. Gradients flow through
    ops recorded and not computed yet, so take them before fetching: a
    value already computed (fetched, computed by a fetch of another value
    that shares its work, or returned by a staged ``jitc.function`` call)
    is a constant through which no gradient passes, and a param the loss
    does not depend on gets zeros. The rules (ties
    of max and min, the kinds with zero gradient) are in
    ``docs/semantics.md``, "Gradients"."""
    if not isinstance(loss, Var):
        raise TypeError(f"grad's loss is a jitc.Var the params were recorded into, not {type(loss).__name__}")
    single = isinstance(params, Var)
    if not single:
        if isinstance(params, (str, bytes)) or not hasattr(params, "__iter__"):
            raise TypeError(f"grad's params are a jitc.Var or a list of them, not {type(params).__name__}")
        params = list(params)
        if not all(isinstance(p, Var) for p in params):
            kinds = sorted({type(p).__name__ for p in params if not isinstance(p, Var)})
            raise TypeError(
                f"grad's params are jitc.Vars (a gradient flows to a recorded value), not {', '.join(kinds)}"
            )
    params = [params] if single else params
    gradients = [Var(g) for g in _call(_jitc.grad, loss._v, [p._v for p in params])]
    return gradients[0] if single else gradients


def full(shape, value, dtype=_np.float32):
    """`value` everywhere in `shape`: a splat constant, recorded and never
    materialized unless fetched."""
    dtype = _np.dtype(dtype)
    if dtype not in _TO_JITC:
        raise JitcError(f"jitc has no element type for NumPy's {dtype}")
    shape = _shape(shape, "full")
    return Var(_call(_jitc.full, shape, _TO_JITC[dtype], _number(value, dtype)))


def zeros(shape, dtype=_np.float32):
    """Zeros of `shape` (see `full`)."""
    return full(shape, 0.0, dtype)


from . import optim  # noqa: E402  (it uses the names above)


def guard(condition, reason):
    """Records a check that the rank-0 boolean `condition` holds: the fetch
    that computes the returned value raises `jitc.GuardFailed` (a
    `JitcError`) and commits no state write when it does not."""
    condition = _var(condition)
    return Var(_call(_jitc.guard, condition._v, str(reason)))


from ._function import function  # noqa: E402


def explain(fn):
    """What the `jitc.function` `fn` is now (staged graphs, facts,
    fallbacks, give-ups) and why."""
    return fn.explain()
