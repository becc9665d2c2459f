"""`@jitc.function`: an imperative Python function (or method) becomes a
staged, speculative graph, as JANUS does it (`papers/janus.txt`).

    @jitc.function
    def step(x, w):
        h = jitc.tanh(x @ w)
        if jitc.sum(h) > 0:          # a branch on a tensor value
            h = h * 2.0
        return h

**Profile.** The first calls with a given set of *facts* (each argument's
shape and type, the values of Python arguments, the attributes of `self`
and of object arguments, the Python-valued globals and closure variables
the function names) run imperatively on the lazy graph while a tracer
records every op, every branch taken on a tensor value (the *decisions*)
and which attributes the call rebinds. Calls into Python that could have
side effects (`print`, `list.append`, I/O, random numbers, anything
outside a small set of pure builtins), reading a computed value into
Python (`item()`, `numpy()`) and named state make the function stay
imperative, with the reason reported (`jitc.explain(fn)`).

**Generate.** After `profile` traced calls (3 by default) with the same
facts, the last trace is replayed into one graph: the arguments and the
`jitc.Var` attributes it reads become its inputs, its return values and
the attributes it rebinds become its outputs, and every decision becomes a
`meta.guard` that the condition still goes the way it went (JANUS's
speculative assumptions). The graph is fused and compiled once
(`jitc_runtime::graph::stage`).

**Serve.** A later call with the same facts runs the compiled graph on its
inputs without running the Python function. If a guard fails, the call
computes and commits nothing, and the function runs imperatively instead
(a *fallback*), traced; the graph is then staged again from that trace
(*restaged*), and after `max_fallbacks` fallbacks for the same facts they
are *given up*: those calls stay imperative. Facts never seen before are
profiled first. Every fallback, restaging and give-up is counted
(`fn.stats()`) and logged with its reason (`jitc.explain(fn)`).

What is not done yet: control flow on tensors is speculated, not staged
(no `scf.if`/`scf.while` from AutoGraph-style conversion, so a branch that
alternates falls back every other call), traces that took different paths
are not merged (Terra), and attribute writes of Python values (a counter
in `self`) make the function imperative.
"""

import os
import sys
import types
from collections import Counter

import numpy as np

from . import _jitc
from ._tracing import _tracing

# Builtins a staged function may call: pure, and deterministic.
_PURE_BUILTINS = frozenset({
    "len", "range", "isinstance", "issubclass", "min", "max", "abs", "int", "float", "bool", "str",
    "repr", "format", "tuple", "list", "dict", "set", "frozenset", "zip", "enumerate", "reversed",
    "sorted", "sum", "any", "all", "map", "filter", "iter", "next", "getattr", "hasattr", "callable",
    "divmod", "round", "pow", "type", "id", "hash", "super", "slice", "object", "__build_class__",
    "items", "keys", "values", "get", "index", "count", "startswith", "endswith", "join", "split",
    "__len__", "__getitem__", "__contains__",
})
_PACKAGE = os.path.dirname(os.path.abspath(__file__))
_NUMPY = os.path.dirname(os.path.abspath(np.__file__))
_SIMPLE = (bool, int, float, complex, str, bytes, type(None))


def _site(frame):
    """The first frame outside jitc, as `file:line`."""
    while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE):
        frame = frame.f_back
    if frame is None:
        return "<unknown>"
    return f"{os.path.basename(frame.f_code.co_filename)}:{frame.f_lineno}"


class _Tracer:
    """What one traced call did: the native calls that recorded values,
    the decisions on tensor values, and what cannot be staged."""

    def __init__(self):
        self.entries = []
        self.decisions = []
        self.reasons = []

    def log(self, native, args, result):
        self.entries.append(("call", native, args, result))

    def decide(self, var):
        # The value, computed without logging a read.
        data = var._v.fetch_bytes()
        value = bool(np.frombuffer(data, dtype=var.dtype).reshape(-1)[0])
        site = _site(sys._getframe(1))
        self.entries.append(("decide", var._v, value, site))
        self.decisions.append((site, value))
        return value

    def unstageable(self, reason, depth=2):
        self.reasons.append(f"{reason} at {_site(sys._getframe(depth))}")

    def profile(self, frame, event, arg):
        if event != "c_call":
            return
        # Calls made beneath jitc's own code (its op library, the tracer)
        # or NumPy's are not the function's.
        outer = frame
        while outer is not None and outer.f_code is not _PLAIN_CODE:
            file = outer.f_code.co_filename
            if file.startswith(_PACKAGE) or file.startswith(_NUMPY):
                return
            outer = outer.f_back
        file = frame.f_code.co_filename
        name = getattr(arg, "__name__", "?")
        if name not in _PURE_BUILTINS:
            where = f"{os.path.basename(file)}:{frame.f_lineno}"
            self.reasons.append(f"it calls {name}(), which may have side effects, at {where}")


def _is_var(x):
    from . import Var
    return isinstance(x, Var)


def _is_object(x):
    """An instance whose attributes a call may read and write (not a
    function, class or module, which are compared by identity)."""
    plain = (type, types.FunctionType, types.MethodType, types.ModuleType, types.BuiltinFunctionType)
    return hasattr(x, "__dict__") and not isinstance(x, plain) and not _is_var(x)


def _fact(x, depth=0):
    """What a staged graph assumes about `x`: shapes and types of tensors,
    values of Python values, attributes of objects (one level)."""
    if _is_var(x) or isinstance(x, np.ndarray):
        return ("tensor", tuple(x.shape), str(x.dtype))
    if isinstance(x, _SIMPLE):
        return ("value", type(x).__name__, repr(x))
    if isinstance(x, (tuple, list)):
        return ("sequence", type(x).__name__, tuple(_fact(v, depth) for v in x))
    if isinstance(x, dict):
        return ("dict", tuple((repr(k), _fact(v, depth)) for k, v in x.items()))
    if _is_object(x) and depth == 0:
        return ("object", id(type(x)), tuple(sorted((k, _fact(v, 1)) for k, v in vars(x).items())))
    return ("identity", id(x))


class _Trace:
    """One traced call, ready to be replayed into a graph."""

    def __init__(self, tracer, inputs, outputs, structure, writes):
        self.tracer = tracer
        self.inputs = inputs          # [(source, native)] in input order
        self.outputs = outputs        # natives of the return value's tensors
        self.structure = structure    # the return value, tensors replaced by ("out", k)
        self.writes = writes          # [(object index, name, output index)]


class _Variant:
    """A staged graph for one set of facts."""

    def __init__(self, staged, trace, guards):
        self.staged = staged
        self.trace = trace
        self.guards = guards


class _Facts:
    """What is known for one set of facts."""

    def __init__(self):
        self.traced = 0
        self.fallbacks = 0
        self.variant = None
        self.given_up = None


class Function:
    """A function made speculative by `jitc.function`; see the module's
    documentation."""

    def __init__(self, fn, profile=3, max_fallbacks=3):
        if profile < 1:
            raise ValueError("profile must be at least 1")
        self.fn = fn
        self.profile = profile
        self.max_fallbacks = max_fallbacks
        self.__name__ = getattr(fn, "__name__", "function")
        self.__doc__ = getattr(fn, "__doc__", None)
        self.__wrapped__ = fn
        self._facts = {}
        self._imperative = None
        self._counts = Counter()
        self._log = []

    # -- calling ---------------------------------------------------------------
    def __get__(self, obj, objtype=None):
        if obj is None:
            return self
        return _Bound(self, obj)

    def __call__(self, *args, **kwargs):
        return self._invoke(None, args, kwargs)

    def _invoke(self, owner, args, kwargs):
        self._counts["calls"] += 1
        args, kwargs = _as_vars(args, kwargs)
        if self._imperative is not None:
            self._counts["imperative"] += 1
            return self._plain(owner, args, kwargs)
        try:
            key = self._key(owner, args, kwargs)
            hash(key)
        except TypeError as e:
            self._give_up_all(f"its arguments cannot be compared between calls ({e})")
            self._counts["imperative"] += 1
            return self._plain(owner, args, kwargs)
        facts = self._facts.setdefault(key, _Facts())
        if facts.given_up is not None:
            self._counts["imperative"] += 1
            return self._plain(owner, args, kwargs)
        if facts.variant is not None:
            try:
                result = self._serve(facts.variant, owner, args, kwargs)
                self._counts["staged"] += 1
                return result
            except _jitc.GuardFailed as e:
                facts.fallbacks += 1
                self._counts["fallbacks"] += 1
                self._note("fallback", str(e))
                if facts.fallbacks >= self.max_fallbacks:
                    facts.variant = None
                    facts.given_up = f"{facts.fallbacks} fallbacks (last: {e})"
                    self._counts["give_ups"] += 1
                    self._note("give up", facts.given_up)
                    self._counts["imperative"] += 1
                    return self._plain(owner, args, kwargs)
        result, trace = self._traced(owner, args, kwargs)
        if trace is None:
            return result
        facts.traced += 1
        if facts.variant is not None or facts.traced >= self.profile:
            restage = facts.variant is not None
            try:
                facts.variant = self._stage(trace)
            except (_Unstageable, _jitc.JitcError) as e:
                facts.variant = None
                self._give_up_all(f"its trace cannot be staged: {e}")
                return result
            self._counts["restaged" if restage else "staged_graphs"] += 1
            self._note("restage" if restage else "stage",
                       f"{len(facts.variant.guards)} guards, {facts.variant.staged.kernels} kernels")
        return result

    def _plain(self, owner, args, kwargs):
        return self.fn(owner, *args, **kwargs) if owner is not None else self.fn(*args, **kwargs)

    # -- facts -----------------------------------------------------------------
    def _key(self, owner, args, kwargs):
        parts = [_fact(a) for a in args]
        parts += [(k, _fact(v)) for k, v in sorted(kwargs.items())]
        if owner is not None:
            parts.append(("self", _fact(owner)))
        # Which tensor arguments are one object (a staged graph's inputs are
        # distinct).
        seen = {}
        parts.append(("aliases", tuple(seen.setdefault(id(v), k) for k, v in enumerate(self._tensors(owner, args, kwargs)))))
        parts.append(("globals", self._globals()))
        return tuple(parts)

    def _globals(self):
        """The Python values the function's code names as globals or
        closure variables (functions and modules by identity)."""
        code = self.fn.__code__
        scope = getattr(self.fn, "__globals__", {})
        names = [(n, scope[n]) for n in code.co_names if n in scope]
        cells = zip(code.co_freevars, self.fn.__closure__ or ())
        names += [(n, c.cell_contents) for n, c in cells if _cell_filled(c)]
        return tuple((n, _fact(v, 1)) for n, v in names)

    def _tensors(self, owner, args, kwargs):
        """The tensors a call passes, in input order: arguments (one level
        into sequences), then attributes of `self` and of object arguments."""
        found = []
        for a in list(args) + [kwargs[k] for k in sorted(kwargs)]:
            if _is_var(a) or isinstance(a, np.ndarray):
                found.append(a)
            elif isinstance(a, (tuple, list)):
                found += [v for v in a if _is_var(v) or isinstance(v, np.ndarray)]
        for obj in self._objects(owner, args):
            found += [v for _, v in sorted(vars(obj).items()) if _is_var(v)]
        return found

    def _objects(self, owner, args):
        objects = [owner] if owner is not None else []
        return objects + [a for a in args if _is_object(a)]

    # -- tracing ---------------------------------------------------------------
    def _traced(self, owner, args, kwargs):
        """Runs the function imperatively, traced; returns its result and
        the trace (None when the call cannot be staged)."""
        from . import fetch

        self._counts["traced"] += 1
        # The tensors, computed: a staged graph's inputs are data.
        tensors = self._tensors(owner, args, kwargs)
        pending = [t for t in tensors if not t.is_computed()]
        if pending:
            fetch(*pending)
        objects = self._objects(owner, args)
        before = [dict(vars(o)) for o in objects]
        tracer = _Tracer()
        previous_profile = sys.getprofile()
        _tracing.tracer = tracer
        sys.setprofile(tracer.profile)
        try:
            result = self._plain(owner, args, kwargs)
        finally:
            sys.setprofile(previous_profile)
            _tracing.tracer = None
        writes = []
        outputs = []
        for k, (obj, old) in enumerate(zip(objects, before)):
            for name, value in vars(obj).items():
                if name in old and old[name] is value:
                    continue
                if _is_var(value):
                    writes.append((k, name, len(outputs)))
                    outputs.append(value._v)
                else:
                    tracer.reasons.append(f"it sets the attribute {name} to a Python value ({type(value).__name__})")
        structure = self._structure(result, outputs, tracer)
        if tracer.reasons:
            self._give_up_all(tracer.reasons[0])
            return result, None
        inputs = []
        seen = set()
        for t in tensors:
            if id(t._v) not in seen:
                seen.add(id(t._v))
                inputs.append(t._v)
        return result, _Trace(tracer, inputs, outputs, structure, writes)

    def _structure(self, value, outputs, tracer):
        if _is_var(value):
            outputs.append(value._v)
            return ("out", len(outputs) - 1)
        if isinstance(value, (tuple, list)):
            return (type(value).__name__, [self._structure(v, outputs, tracer) for v in value])
        if isinstance(value, _SIMPLE):
            return ("value", value)
        tracer.reasons.append(f"it returns a {type(value).__name__}, which a graph cannot return")
        return ("value", None)

    def _give_up_all(self, reason):
        if self._imperative is None:
            self._imperative = reason
            self._counts["give_ups"] += 1
            self._note("imperative", reason)

    def _note(self, event, reason):
        self._log.append((event, reason))
        del self._log[:-100]

    # -- staging -----------------------------------------------------------------
    def _stage(self, trace):
        """Replays `trace` on its inputs into a new graph and stages it."""
        mapping = {id(n): n for n in trace.inputs}
        guards = []

        def mapped(a):
            if isinstance(a, _jitc.Var):
                found = mapping.get(id(a))
                if found is None:
                    raise _Unstageable(
                        "it reads a jitc.Var that is not an argument, an attribute of self or of an "
                        "argument, or made in the call (a global or closure variable?)"
                    )
                return found
            if isinstance(a, list):
                return [mapped(v) for v in a]
            return a

        for entry in trace.tracer.entries:
            if entry[0] == "call":
                _, native, args, result = entry
                new = native(*[mapped(a) for a in args])
                if isinstance(result, list):
                    for old, fresh in zip(result, new):
                        mapping[id(old)] = fresh
                else:
                    mapping[id(result)] = new
            else:
                _, var, value, site = entry
                guards.append(_jitc.guard(_condition(mapped(var), value), f"branch at {site} goes {value}"))
        outputs = [mapped(o) for o in trace.outputs]
        staged = _jitc.stage(trace.inputs, outputs + guards)
        return _Variant(staged, trace, [g for g in guards])

    def _serve(self, variant, owner, args, kwargs):
        from . import Var

        tensors = self._tensors(owner, args, kwargs)
        unique = []
        seen = set()
        for t in tensors:
            if id(t._v) not in seen:
                seen.add(id(t._v))
                unique.append(t._v)
        values = variant.staged.call(unique)
        outputs = [Var(v) for v in values[:len(variant.trace.outputs)]]
        objects = self._objects(owner, args)
        for k, name, index in variant.trace.writes:
            setattr(objects[k], name, outputs[index])
        return _rebuild(variant.trace.structure, outputs)

    # -- reporting ---------------------------------------------------------------
    def stats(self):
        """Counts: calls, staged (served by a graph), traced (run
        imperatively while tracing), imperative (run without tracing),
        staged_graphs, restaged, fallbacks, give_ups."""
        keys = ["calls", "staged", "traced", "imperative", "staged_graphs", "restaged", "fallbacks", "give_ups"]
        return {k: self._counts[k] for k in keys}

    def explain(self):
        """What the function is now and why: staged graphs per set of
        facts, fallbacks and give-ups with their reasons."""
        lines = [f"jitc.function {self.__name__}: {self.stats()}"]
        if self._imperative is not None:
            lines.append(f"  imperative: {self._imperative}")
        for k, facts in enumerate(self._facts.values()):
            if facts.variant is not None:
                v = facts.variant
                lines.append(
                    f"  facts {k}: staged, {len(v.trace.inputs)} inputs, {len(v.trace.outputs)} outputs, "
                    f"{len(v.guards)} guards, {v.staged.kernels} kernels; fallbacks {facts.fallbacks}"
                )
                runs = []
                for decision in v.trace.tracer.decisions:
                    if runs and runs[-1][0] == decision:
                        runs[-1][1] += 1
                    else:
                        runs.append([decision, 1])
                for (site, value), count in runs:
                    times = f" ({count} times in a row)" if count > 1 else ""
                    lines.append(f"    speculates: branch at {site} goes {value}{times}")
            elif facts.given_up is not None:
                lines.append(f"  facts {k}: imperative after {facts.given_up}")
            else:
                lines.append(f"  facts {k}: profiling ({facts.traced} of {self.profile} traced calls)")
        for event, reason in self._log[-10:]:
            lines.append(f"  {event}: {reason}")
        return "\n".join(lines)

    def __repr__(self):
        return f"<jitc.function {self.__name__}>"


class _Unstageable(Exception):
    pass


# Where the traced function is called from: the walk up from a call stops
# there.
_PLAIN_CODE = Function._plain.__code__


class _Bound:
    """A `jitc.function` method bound to an object."""

    def __init__(self, function, owner):
        self._function = function
        self._owner = owner

    def __call__(self, *args, **kwargs):
        return self._function._invoke(self._owner, args, kwargs)

    def stats(self):
        return self._function.stats()

    def explain(self):
        return self._function.explain()


def _as_vars(args, kwargs):
    """NumPy array arguments (also inside tuples and lists) as `jitc.Var`s:
    a function sees the same types whether it runs imperatively or staged."""
    from . import Var

    def one(a):
        if isinstance(a, np.ndarray):
            return Var(a)
        if isinstance(a, (tuple, list)):
            return type(a)(Var(v) if isinstance(v, np.ndarray) else v for v in a)
        return a
    return [one(a) for a in args], {k: one(v) for k, v in kwargs.items()}


def _cell_filled(cell):
    try:
        cell.cell_contents
        return True
    except ValueError:
        return False


def _condition(v, value):
    """The rank-0 `i1` that holds when the native value `v`'s truth is
    `value` (Python's: nonzero)."""
    shape = v.shape
    if shape:
        v = _jitc.Var.reindex(v, [], ["0"] * len(shape), None, [])
    if v.dtype != "i1":
        v = _jitc.Var.binary(v, "ne", _jitc.full([], v.dtype, 0.0))
    if not value:
        v = _jitc.Var.unary(v, "not")
    return v


def _rebuild(structure, outputs):
    kind = structure[0]
    if kind == "out":
        return outputs[structure[1]]
    if kind == "value":
        return structure[1]
    items = [_rebuild(s, outputs) for s in structure[1]]
    return tuple(items) if kind == "tuple" else items


def function(fn=None, *, profile=3, max_fallbacks=3):
    """Makes `fn` a speculative, staged function (see `jitc._function`'s
    documentation): `@jitc.function` or `@jitc.function(profile=2)`."""
    if fn is None:
        return lambda f: Function(f, profile=profile, max_fallbacks=max_fallbacks)
    return Function(fn, profile=profile, max_fallbacks=max_fallbacks)
