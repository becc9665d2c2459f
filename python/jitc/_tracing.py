"""The hooks `jitc.function` traces through: every call into the native
graph that records a value goes through `_call`, which logs it while a
tracer is active on this thread; reading a value into Python goes through
`_reads`, which tells the tracer the function cannot be staged."""

import threading

from . import _jitc


class _Local(threading.local):
    tracer = None


_tracing = _Local()


class _OwnThread:
    """Turns the panic of the native objects (`jitc.Var`'s values, staged
    graphs), which belong to the thread that made them, into a
    `JitcError` that says so, where another thread touches one."""

    def __enter__(self):
        return self

    def __exit__(self, kind, error, traceback):
        if error is not None and kind.__name__ == "PanicException" and "unsendable" in str(error):
            raise _jitc.JitcError(
                "jitc values (jitc.Var, and the graphs a jitc.function stages) belong to the thread "
                "that made them; this thread cannot use one (make it here, or compute it there and "
                "pass the NumPy array)"
            ) from None
        return False


_own_thread = _OwnThread()


def _call(native, *args):
    """`native(*args)`, logged by the active tracer (if any)."""
    with _own_thread:
        result = native(*args)
    tracer = _tracing.tracer
    if tracer is not None:
        tracer.log(native, args, result)
    return result


def _reads(what, reason=None):
    """A value is read into Python (or state is touched) by `what`; the
    tracer is told the function cannot be staged, and why (`reason`, or
    that it reads a value it computes)."""
    tracer = _tracing.tracer
    if tracer is not None:
        tracer.unstageable(reason or f"it calls {what} on a value it computes", depth=3)


def _eager_guard(condition, reason):
    """`_jitc.guard` for a check Python makes at once (a relaxed number's
    in `jitc.function`: an int that fits, a divisor that is not zero).
    Staged graphs check it even where nothing reads the value it guards,
    since the real run raised even then; a `jitc.guard` is checked only
    by the fetch that computes it."""
    return _jitc.guard(condition, reason)
