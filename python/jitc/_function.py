"""`@jitc.function`: an imperative Python function (or method) becomes a
staged, speculative graph, as JANUS does it (`papers/janus.txt`).

    @jitc.function
    def step(x, w):
        h = jitc.tanh(x @ w)
        if jitc.sum(h) > 0:          # a branch on a tensor value
            h = h * 2.0
        return h

It takes a function, a method (in its class, or bound: `jitc.function(
model.step)`, whose object is then `self` of every call), or an object
with a Python `__call__` (a model); anything else is a `TypeError`.

**Profile.** The first calls with a given set of *facts* (each argument's
shape and type, the values of Python arguments, the attributes of `self`
and of object arguments and the class attributes the code may read
through them, the globals the code the function runs looks up as globals
(`LOAD_GLOBAL`; a global named like an attribute the code reads, `w` for
`self.w`, is not one) and its closure variables, its helpers' too, with the attributes that code names of
a module or class so read, and the contents of NumPy arrays that are not
arguments, nor items of a list, tuple or dict argument) run imperatively on the lazy graph while a tracer
records every op, every branch taken on a tensor value (the *decisions*)
and which attributes the call rebinds (to a `jitc.Var`, an output of the
graph; or to an immutable Python value, set as traced). Calls into Python that could have
side effects (`print`, I/O, random numbers, anything outside a small
set of pure builtins; changing a list, dict, set or deque in place is
not one: a change to one that outlives the call is a change of state,
below, and one the call made, `outputs.append(h)`, is its own), reading a computed value into
Python (`item()`, `numpy()`), committed named state read or set now
(`jitc.get_state`, `jitc.set_state`), and changing state a staged
call would not change (what an attribute's object holds, an argument's
contents, a global or closure variable, a class attribute, where an
iterator stands) make the function stay imperative, with the reason
reported (`jitc.explain(fn)`). The code a function runs is found before
its first call (its own, nested code, and the functions its code names
as globals or holds in closures, followed); code first seen while a call
is traced (a method, a function passed in) is added, and the facts kept
so far, taken without it, are dropped: profiling starts again
(*reprofiles*). Bound methods, `functools.partial`s and functions passed
in are facts with what they hold (their object, arguments, closure
variables and defaults), and so are the closure variables and defaults
of the helpers followed; objects past two levels are followed through
the attributes the code names (as names or as strings), up to six
levels; `__slots__` objects, sets (in the order they iterate in),
bytearrays and deques by contents; a subclass of a list, tuple or dict
with its attributes too (as `self` or an argument, such an instance
keeps the call imperative: not staged yet); a dict's object keys by which object and their attributes; the
order of keyword arguments of a function with `**kwargs`; a global function that holds a closure, defaults
or attributes (`helper.calls`) by what it holds; a module the code
imports in its body by the attributes the code names; a class attribute
the object shadows (`type(self).k`) too; an enum member by identity.
Objects are
facts with their attributes (two levels deep, globals' too), which
arguments are one object is a fact (an object a left-out parameter
defaults to, `cfg=CONFIG`, is passed by the call as if given, so it is
one of the call's objects), NumPy scalars are facts by value,
and anything else by identity (held, so its address is not reused).

**Generate.** After `profile` traced calls (3 by default) with the same
facts, the traces are staged. A loop on a tensor condition that a trace
ran at least twice becomes one `scf.while` (AutoGraph's staged loop;
`_Loop`, `jitc_runtime::graph::stage_loop`): a `while` loop, or a `for`
loop over `range(...)` whose body ends with `if ...: break` (the loop
then carries a counter, and stops on the break or at the range's end).
The ops before it, one iteration (the second, on placeholders for the
values it carries) and the ops after it are compiled as one graph that
runs any trip count, when the iterations are the same ops, nothing else
decides inside the loop, and the Python state (every frame's locals, the
attributes the facts cover, the globals, closures and defaults of all
the code the function runs, the value each piece of named state holds;
a `for` loop's target aside) is the same at the tests, so that no later iteration can do something else in Python;
the branches outside the loop are guards. Otherwise, when the traces went different ways, each is
replayed whole onto fresh nodes at its ops' Python sites, its branches as
decisions, and `jitc_runtime::graph::stage_merged` merges them into one
compiled graph (`meta-merge`, Terra's Algorithm 1): ops the traces share
are staged once, also after they part and meet again; the ways a branch
went are cases of an `scf.index_switch` chosen in the graph by the
branch's condition (an `scf.if` on it when its two ways are the only
cases there); a branch they all took one way becomes a `meta.guard`
that it still goes that way (JANUS's speculative assumptions). Each trace
holds every op it ran, also those whose values only other paths read,
and a branch whose ways differ only in which of the values computed
before it later ops read (`h = a if ... else b`, a best-so-far update)
is an `scf.if` that yields them. When one graph cannot hold the traces
(their ways return different things), they are merged into a tree
instead: ops the traces share are staged once, a decision the traces took
both ways splits the tree there, and each straight piece of the tree is
replayed into one graph and compiled once (`jitc_runtime::graph::stage`):
its inputs are the arguments, the `jitc.Var` attributes the call reads and
the values earlier pieces computed; its outputs are what later pieces
read, then the branch's condition, or the return values and the
attributes the call rebinds.

In every graph, as JANUS's `PyGetAttrOp` and `PySetAttrOp` do it, a
`jitc.Var` attribute the call reads is a `meta.state_read` of the state
`self.<name>` (`<parameter>.<name>` for an object argument's; one that is
also passed as an argument stays an argument), and one the call rebinds
to a `jitc.Var` is a `meta.state_write` (so are relaxed numbers in
attributes, below: Python gets them back as numbers), committed only when every guard
of the call held (a tree's pieces read state where they need it; only
its last piece writes). `fn.graphs()` gives the staged modules' text.
Objects held deeper (sub-layers: `self.layers[0]`, `self.heads["out"]`)
are the call's objects too once a trace reads a `jitc.Var` they hold or
rebinds one of their attributes: that trace is dropped and profiling
starts again (*reprofiles*) with them among the objects, where the facts
reach them (through tuples, lists, dicts and objects' attributes:
`_held_objects`), so their tensors are state named by path
(`meta.state_read`/`meta.state_write` of `self.layers[0].w`) and a
training step that rebinds them is staged; tensors held in a list
directly or in a global are plain graph inputs (`_reach`), and a
call that rebinds a global stays imperative. Numbers in those objects
(the attributes the code names, past the first level) are relaxed as
`self`'s are (below: a batch norm's `self.bn.num_batches_tracked += 1`
is state `self.bn.num_batches_tracked` of the graph), and a relaxed one
is a fact by its type wherever the facts meet its object
(`_relaxed_objects`). Named state (`jitc.read_state`, `jitc.write_state`, and
so `jitc.optim`'s parameters and moments) is state of the graph too,
`meta.state_read`/`meta.state_write` of `jitc:<name>`: every name a
trace with these facts touched so far is read before the call and
written after it (unchanged where the path taken did not write it), so
traces that touched different names on different paths still merge. The
state's types are not facts: a served call first checks them, and one
set to another type (`jitc.set_state`) is a fallback. A staged call's
writes are committed when it returns, as if the call were one fetch
(the imperative call's are committed by the next fetch that computes
them). In a loop on a tensor condition, named state is data like any
other: a read returns what the iteration before wrote, so a loop that
updates state folds into an `scf.while` that carries it (a value written
in the loop that the next iteration does not read keeps the loop
unfolded). A call returns tensors and Python
values, in tuples, lists, named tuples and dicts (an `OrderedDict`
too), rebuilt as the traced call built them; any other container keeps
the function imperative, and so does returning a list or dict that
existed before the call (an argument, an attribute: a graph would
return a copy).

**Serve.** A later call with the same facts runs the merged graph (or the
tree's pieces, choosing at each branch by the condition the piece
computed) on its inputs without running the Python function. If a guard fails (or a branch goes a way no
trace went, or computing the graph fails: an integer division by zero,
which the imperative run raises at the fetch that computes it), the call commits nothing (attributes are rebound only when
the whole call succeeded), and the function runs imperatively instead (a
*fallback*), traced; the tree is then staged again with that trace merged
in (*restaged*), and after `max_fallbacks` fallbacks for the same facts
they are *given up*: those calls stay imperative. Facts never seen before are
profiled first; after `max_facts` distinct sets of facts (16 by default: a
Python number that changes on every call makes a new set each time) the
whole function stays imperative, with the fact that kept changing named. Every fallback, restaging and give-up is counted
(`fn.stats()`) and logged with its reason (`jitc.explain(fn)`).

A `jitc.function` called while another call is traced (nested, or
recursive) is part of the caller's trace; nesting deeper than 32 keeps the
caller imperative, with the reason.

**Relax.** A Python `int` or `float` (an argument, a keyword argument,
or an attribute of `self`, of an object argument or of an object held
deeper that the call reaches) whose value changed
between two calls with otherwise the same facts becomes an input of the
graph instead of a fact (JANUS's relaxed assumption): later traced calls
pass a `jitc._Number` in its place, which computes as the number would
(it takes a tensor's element type; with other numbers it keeps Python's
kinds in 64 bits; a comparison is a tensor decision, so a branch on it is
a guard), and an attribute it is written back to gets a Python number
again (a counter `self.steps += 1` is read and written by the graph).
Where 64 bits differ from Python's numbers the graph guards, and a failed
guard reruns the call imperatively: a divisor that is zero, an int past
2**53 meeting a float, an int sum past 2**62 or product past 2**31 of
its operands, an int that does not fit an int32 tensor. Such a traced
call runs first imperatively on the real numbers (traced: that run is
the call's result, and one that cannot be staged runs no second time),
then again on the stand-ins; the second trace is kept only if the runs
agree exactly (results, attributes, the ways tensor branches went),
nothing read the number into Python (`float()`, `int()`, an index,
formatting, hashing, NumPy, `**`, `//`, `%`), and no code the call ran
names a type inspection (`isinstance`, `type`, `hasattr`, ...: the
stand-in is a `jitc.Var`, not an `int`; an attribute of the number
itself, `n.denominator`, is read into Python), and the run on the
stand-ins changed nothing the first run did not (a global, an
argument's contents: such a change is not undone, only seen). If not,
the numbers relaxed since the last trace kept with relaxed numbers (all
of them, when there are none) go back to being facts by value
(*relaxations_undone*), with the reason. A position is a path (`self.n`,
`cfg.n`, `self.bn.n`), so it means the same in calls whose objects
differ.

What is not done yet: a loop on tensor values that is not one of those
(a `break` that is not the end of a `for` loop's body, a `return` or
`raise` in its body, a loop run more than once in a call at one site, a loop over
something else than `range`, a loop that changes a Python number other
than a relaxed attribute (a local counter, `steps += 1`), a
second tensor decision inside the loop, or one run fewer than twice in
every trace kept) is unrolled to the trip counts traced, each count a
path of its own; relaxed integers compute in 64 bits where Python's are unbounded
(a difference only past 2**63, and only in calls served by the graph).
The facts are what can be found, not what a call read: two objects of
one class held deeper than an attribute, whose attributes the code
names are equal, are one fact even if the code tells them apart by
identity (`cfg.act is RELU`; an enum member is told apart); state reached
only through names the code does not hold (`getattr` with a computed
name deeper than two levels, `vars()` of a nested object), objects more
than six levels down, chains of modules and classes more than two
deep, and state kept inside C extension objects, are not facts, and a
staged call does not see a change to them. Every NumPy array that is not
an argument and is reachable so is hashed on every call. Attributes
rebound to Python values that are not relaxed numbers (a string, a
tuple, a number still a fact) are set in Python after the whole call
succeeded, not through state ops; a
loop over a Python `range` is unrolled (one graph per trip count); and
the guards are written by the tracer, not by `meta-specialize`, and
calls are served here, not by the runtime's `Session` (ARCHITECTURE.md
says why: a trace has no generic program to specialize, and the
fallback is the Python function).
"""

import ast
import collections
import dis
import enum
import functools
import inspect
import io
import itertools
import os
import sys
import textwrap
import threading
import types
from collections import Counter

import numpy as np

from . import _jitc
from ._tracing import _eager_guard, _own_thread, _tracing

# Names whose use in the code a call runs makes a relaxed number's stand-in
# (a `jitc.Var`, not an `int` or `float`) distinguishable.
_INTROSPECTION = frozenset({
    "type", "isinstance", "issubclass", "hasattr", "getattr", "callable", "vars", "dir", "__class__",
    "__dict__",
})

# Builtins a staged function may call: pure, and deterministic.
_PURE_BUILTINS = frozenset({
    "len", "range", "isinstance", "issubclass", "min", "max", "abs", "int", "float", "bool", "str",
    "repr", "format", "tuple", "list", "dict", "set", "frozenset", "zip", "enumerate", "reversed",
    "sorted", "sum", "any", "all", "map", "filter", "iter", "next", "getattr", "hasattr", "callable",
    "divmod", "round", "pow", "type", "id", "hash", "super", "slice", "object", "__build_class__",
    "items", "keys", "values", "get", "index", "count", "startswith", "endswith", "join", "split",
    "__len__", "__getitem__", "__contains__", "__new__",
})
_PACKAGE = os.path.dirname(os.path.abspath(__file__))
_NUMPY = os.path.dirname(os.path.abspath(np.__file__))
_SIMPLE = (bool, int, float, complex, str, bytes, type(None))
_EXACT_SIMPLE = frozenset(_SIMPLE)
# The types whose methods named in `_PURE_BUILTINS` are pure (a method is
# matched by its name and by what it is bound to: `dict.get`, not
# `queue.SimpleQueue.get`).
_PURE_TYPES = (
    dict, list, tuple, str, bytes, range, set, frozenset, types.MappingProxyType,
    type({}.keys()), type({}.values()), type({}.items()),
)
# How many code objects `_reachable_codes` follows from a function.
_MAX_CODES = 256
# How deep `_fact` follows objects' attributes (the first two levels all
# of them, deeper those the code names).
_MAX_OBJECT_DEPTH = 6
# How deep `_marker` follows containers and objects (objects past the
# third level by the attributes the code names).
_MAX_MARKER_DEPTH = 8
# How deep `_fact` follows containers inside containers.
_MAX_FACT_DEPTH = 48
_MISSING = object()
# What `_reachable_codes` follows to code.
_CALLABLES = (types.FunctionType, types.MethodType, functools.partial)
# Types whose values are facts by identity and compare by it.
_BY_IDENTITY = frozenset({types.ModuleType, types.FunctionType, types.BuiltinFunctionType, type, np.ufunc})


def _own_attributes(fn):
    """A function's attributes (`helper.calls = 0`), those `functools.wraps`
    sets (`__wrapped__`, ...) aside, sorted by name."""
    held = fn.__dict__
    if not held:
        return ()
    return tuple(sorted((k, v) for k, v in held.items() if not k.startswith("__")))


def _key_fact(k, depth, level, fact):
    """The fact of a dict's key or a set's member (`_fact_py`): a simple
    value by `repr`, an object by which object it is and its fact, a
    tuple item by item."""
    if type(k) in _EXACT_SIMPLE:
        return repr(k)
    if _is_object(k):
        return ("key", _Identity(k), fact(k, depth, False, level + 1))
    if type(k) is tuple and level <= _MAX_FACT_DEPTH:
        return ("key tuple", tuple(_key_fact(v, depth, level + 1, fact) for v in k))
    return fact(k, depth, False, level + 1)


def _subclass_attributes(x, depth, level, fact):
    """The facts of the attributes an instance of a subclass of a builtin
    container holds (none for a named tuple, which has no `__dict__`)."""
    held = getattr(x, "__dict__", None)
    if not held:
        return ()
    return tuple(sorted((k, fact(v, depth + 1, False, level + 1)) for k, v in held.items()))


def _function_holds(x):
    """Whether the function `x` holds state besides its code: a closure,
    keyword-only defaults, attributes, or a default that is not a simple
    value. A global naming it is then a fact by what it holds, not only
    by identity (a factory's new function of the same code, bound to the
    global, holds other values); a global function with simple defaults
    only (most library functions) is a fact as itself and its defaults
    (`_global_fact`)."""
    return bool(x.__closure__ or x.__kwdefaults__ or x.__dict__
                or (x.__defaults__ and any(type(d) not in _EXACT_SIMPLE for d in x.__defaults__)))


def _global_fact(x, fact):
    """The fact of the global `x`: itself when `_by_identity` (a function
    with its simple defaults: `f.__defaults__` may be set again), else
    its fact (`fact`)."""
    if not _by_identity(x):
        return fact(x, 1, False, 0)
    if type(x) is types.FunctionType and x.__defaults__:
        return (x, x.__defaults__)
    return x


def _bound_builtin(x):
    """Whether `x` is a builtin method bound to an object (`table.get`,
    `(1).__add__`), which is not a fact by identity: its object may
    change. Builtin functions (`len`, `math.exp`) are bound to their
    module, or to nothing."""
    if not isinstance(x, (types.BuiltinMethodType, types.MethodWrapperType)):
        return False
    owner = getattr(x, "__self__", None)
    return owner is not None and not isinstance(owner, types.ModuleType)


def _by_identity(x):
    """Whether the global `x` is a fact as itself (`_BY_IDENTITY`): not a
    builtin bound method, nor a function that holds state
    (`_function_holds`)."""
    return (type(x) in _BY_IDENTITY and not _bound_builtin(x)
            and not (type(x) is types.FunctionType and _function_holds(x)))


def _pure_owner(fn):
    """Whether the builtin `fn` (a `c_call`'s callee) is one of Python's
    own functions or a method of one of `_PURE_TYPES`."""
    owner = getattr(fn, "__self__", None)
    if owner is None or isinstance(owner, types.ModuleType):
        return owner is None or owner.__name__ == "builtins"
    # A method of one of them, or one of the type itself (`tuple.__new__`,
    # which a named tuple's constructor calls).
    return isinstance(owner, _PURE_TYPES) or (isinstance(owner, type) and owner in _PURE_TYPES)


# Methods that change a list, dict, set or deque in place.
_IN_PLACE = frozenset({
    "append", "extend", "insert", "pop", "remove", "clear", "sort", "reverse", "update", "setdefault", "popitem",
    "add", "discard", "difference_update", "intersection_update", "symmetric_difference_update", "appendleft",
    "extendleft", "popleft", "rotate", "__setitem__", "__delitem__", "__iadd__", "move_to_end",
})


def _in_place(fn):
    """Whether the builtin `fn` changes a list, dict, set or deque in place:
    not a side effect the hook must see. A change to one that outlives
    the call (an argument's, an attribute's, a global's contents) is found
    by comparing the state before and after the call (`_untracked`), as a
    subscript store (`d[k] = v`, which calls nothing) is; one made during
    the call (`outputs.append(h)`) is the call's own."""
    return (getattr(fn, "__name__", None) in _IN_PLACE
            and type(getattr(fn, "__self__", None)) in (list, dict, set, collections.deque, collections.OrderedDict))


def _call_site(frame):
    """Where an op is recorded, as Terra's call-id stack names it: the
    `file:line` of every frame outside jitc from the op's up to the traced
    function's, innermost first (`helper.py:3<model.py:12`), so that one
    line reached through two calls is two sites."""
    sites = []
    while frame is not None and frame.f_code is not _PLAIN_CODE:
        file = frame.f_code.co_filename
        if not file.startswith(_PACKAGE):
            sites.append(f"{os.path.basename(file)}:{frame.f_lineno}")
        frame = frame.f_back
    return "<".join(sites) if sites else "<unknown>"


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
        # How deep `jitc.function` calls made while tracing nest.
        self.depth = 0
        # The objects whose attributes the traced call's facts cover.
        self.objects = set()
        self.object_refs = []
        # Whether a reason may go away when the call's objects reach deeper
        # (`Function._reach_deeper`).
        self.deeper = False
        # Where a relaxed number's value was read into Python.
        self.relax_failures = []
        # Entry index of each decision -> (Python state, a `while` test?),
        # and the entry counts at calls of stateful builtins (`next`).
        self.boundaries = {}
        # What the facts cover beyond the stack, by label (`_python_state`):
        # set by the function that traces.
        self.held = None
        self.stateful = []
        self.codes = set()
        # Each code object the call ran -> the globals it ran with.
        self.code_globals = {}
        self.number_decisions = set()
        # Named state (`jitc.read_state`/`jitc.write_state`) the call
        # touched: each name's value before the call (computed), and what
        # it holds now in the call.
        self.named_before = {}
        # Why the call is not staged though it could be: a write pending
        # from before it failed when computed (`_touch`).
        self.pending_failed = None
        self.named = {}

    def _touch(self, name):
        """The state `name` as the call first sees it, computed: a write
        pending from before the call is computed (and so committed) now,
        for a staged graph's inputs are data. If computing it fails, the
        call runs on with it pending (its error is the error of the fetch
        that needs it, as without tracing), and is not staged
        (`pending_failed`)."""
        before = _jitc.read_state(name)
        if not before.is_computed():
            try:
                # (The call's own look: a failure keeps the write pending.)
                _jitc.fetch([before], keep_writes=True)
            except _jitc.JitcError as e:
                self.pending_failed = self.pending_failed or f"the write pending to {name} fails ({e})"
        self.named_before[name] = before
        self.named[name] = before

    def read_state(self, name):
        """`jitc.read_state` in the traced call: what the call last wrote to
        `name`, else the state's value before the call, which the graph
        reads with `meta.state_read`."""
        with _HookOff():
            if name not in self.named:
                self._touch(name)
            return self.named[name]

    def write_state(self, name, native):
        """`jitc.write_state` in the traced call: recorded as the imperative
        run records it (a deferred write), and the graph writes the
        call's last value of `name` with `meta.state_write`."""
        with _HookOff():
            if name not in self.named:
                self._touch(name)
            _jitc.write_state(name, native)
            self.named[name] = native

    def log(self, native, args, result):
        # The op's site names it when traces are merged (Terra matches ops
        # by their program location).
        with _HookOff():
            self.entries.append(("call", native, args, result, _call_site(sys._getframe(2))))

    def decide(self, var):
        # The value, computed without logging a read.
        data = var._v.fetch_bytes()
        value = bool(np.frombuffer(data, dtype=var.dtype).reshape(-1)[0])
        frame = sys._getframe(1)
        site = _site(frame)
        # For staging a loop: the Python state at this decision, whether
        # it is a `while` loop's test, and the value each piece of named
        # state holds (those not touched yet hold their value before the
        # call, `_Loop.states_agree`).
        user = _user_frame(frame)
        with _HookOff():
            test = _loop_test(user)
            self.boundaries[len(self.entries)] = (self._python_state(user, test), test, dict(self.named))
        if getattr(var, "_kind", None) is not None:
            # A branch on a relaxed number (Python branched on the number
            # itself when it was not relaxed).
            self.number_decisions.add(len(self.decisions))
        self.entries.append(("decide", var._v, value, site, _call_site(frame)))
        self.decisions.append((site, value))
        return value

    def _python_state(self, frame, test):
        """What the Python code can see at `frame` that may change while
        the call runs: the locals of every frame of the traced call, the
        globals its code names that may hold state (`_named_globals`; a
        `jitc.Var` by its native value, objects with their attributes), and
        the attributes of the objects the facts cover. At a loop's `test`,
        also everything the facts cover that the code not on the stack
        holds (`held`: the globals of all the code the function runs, the
        attributes of modules and classes it names, functions' closures
        and defaults): a helper called in the loop may change its closure
        or a global and the function put it back after the loop, which the
        before-and-after comparison (`_first_run`) cannot see, and then no
        later iteration need do in Python what the traced ones did. (Not
        at other decisions: there it cost about 0.1 ms per traced call of
        `examples/python/terra_alternating.py`.)"""
        frames = []
        while frame is not None and frame.f_code is not _PLAIN_CODE:
            if not frame.f_code.co_filename.startswith(_PACKAGE):
                frames.append((frame.f_code, _state_of(frame.f_locals),
                               _state_of(_named_globals(frame.f_code, frame.f_globals))))
            frame = frame.f_back
        objects = tuple(_state_of(vars(o)) for o in self.object_refs)
        held = ()
        if test is not None and self.held is not None:
            held = _state_of(self.held())
            # (And the class attributes the code may read through the
            # objects: `type(self).steps += 1`.)
            names = _top('names', frozenset())
            objects += tuple(_state_of(_class_reads(o, names)) for o in self.object_refs)
        return tuple(frames), (objects, held)

    def relax_failed(self, why):
        self.relax_failures.append(f"{why} at {_site(sys._getframe(2))}")

    def unstageable(self, reason, depth=2):
        self.reasons.append(f"{reason} at {_site(sys._getframe(depth))}")

    def profile(self, frame, event, arg):
        if event == "call":
            # The Python code the call runs (for `_INTROSPECTION`), not
            # jitc's or NumPy's, nor what they call.
            if frame.f_code is _PLAIN_CODE or _beneath_library(frame):
                return
            self.codes.add(frame.f_code)
            self.code_globals.setdefault(frame.f_code, frame.f_globals)
            return
        if event != "c_call":
            return
        # Calls made beneath jitc's own code (its op library, the tracer)
        # or NumPy's are not the function's.
        if _beneath_library(frame):
            return
        file = frame.f_code.co_filename
        name = getattr(arg, "__name__", "?")
        if name in ("next", "iter", "__next__"):
            self.stateful.append(len(self.entries))
        if (name not in _PURE_BUILTINS or not _pure_owner(arg)) and not _in_place(arg):
            where = f"{os.path.basename(file)}:{frame.f_lineno}"
            self.reasons.append(f"it calls {name}(), which may have side effects, at {where}")


_VAR = []


class _HookOff:
    """The profile hook (`_Tracer.profile`) off while the tracer does jitc's
    own work inside a traced call: the hook would only filter that work
    out, event by event (an op's site cost 23 us under it)."""

    __slots__ = ("hook",)

    def __enter__(self):
        self.hook = sys.getprofile()
        sys.setprofile(None)

    def __exit__(self, *exc):
        sys.setprofile(self.hook)


def _beneath_library(frame):
    """Whether `frame` runs in or under jitc's or NumPy's code, within the
    traced call."""
    while frame is not None and frame.f_code is not _PLAIN_CODE:
        file = frame.f_code.co_filename
        if file.startswith(_PACKAGE) or file.startswith(_NUMPY):
            return True
        frame = frame.f_back
    return False


def _is_var(x):
    # `jitc.Var`, looked up once (the package imports this module first).
    if not _VAR:
        _package_types()
    return isinstance(x, _VAR[0])


def _package_types():
    """`jitc.Var` and `jitc._Number`, looked up once (the package imports
    this module before it defines them)."""
    if len(_VAR) < 2:
        from . import Var, _Number

        _VAR[:] = [Var, _Number]
    return _VAR[0], _VAR[1]


def _is_object(x):
    """An instance whose attributes a call may read and write (not a
    function, class or module, which are compared by identity)."""
    return hasattr(x, "__dict__") and not isinstance(x, _PLAIN) and not _is_var(x)


_PLAIN = (type, types.FunctionType, types.MethodType, types.ModuleType, types.BuiltinFunctionType)
# Builtin containers: an instance of a subclass with attributes that is
# `self` or an argument is both an object and a container, which the
# facts and the state comparison do not cover both ways yet (`_invoke`).
_CONTAINERS = (list, tuple, dict, set, frozenset, collections.deque)


def _fact(x, depth=0, input=False, level=0):
    """What a staged graph assumes about `x` (`_fact_py` defines it), with
    the call's context (`_key`'s `aliases` and `names`)."""
    return _native_facts().fact(x, depth, input, level, _top('aliases', None), _top('names', frozenset()),
                                _top('relaxed_objects', None))


def _native_facts():
    """The native half of `_fact` (`jitc._jitc.Facts`), made once (the
    package imports this module before it defines `jitc.Var`)."""
    if not _FACTS:
        _FACTS.append(_jitc.Facts(
            _package_types()[0], _SIMPLE,
            (np.ndarray, np.generic, set, frozenset, bytearray, memoryview, collections.deque, types.FunctionType,
             types.MethodType, functools.partial, types.ModuleType, type, types.BuiltinFunctionType,
             types.MethodWrapperType, enum.Enum),
            (Function, _Bound), _Identity, _class_reads, _fact_py, _jitc_dtype_name, _MAX_FACT_DEPTH,
            _MAX_OBJECT_DEPTH, _PLAIN, _BY_IDENTITY,
        ))
    return _FACTS[0]


_FACTS = []


def _fact_py(x, depth=0, input=False, level=0, fact=None):
    """What a staged graph assumes about `x`: shapes and types of tensors
    (`input`: a graph input, or a `jitc.Var`, whose values the graph reads
    when it runs), the contents of other NumPy arrays too (a graph holds
    them as constants), values of Python values (NumPy scalars too),
    attributes of objects (two levels), anything else by identity (held, so
    that its address is not reused by another object while the facts are
    kept).

    The definition: `_fact` computes the common cases natively
    (`jitc._jitc.Facts`, the same tuples) and hands the others here;
    `fact` is what the parts are taken with (`_fact` by default)."""
    fact = fact or _fact
    if level > _MAX_FACT_DEPTH:
        raise TypeError(f"a container nests more than {_MAX_FACT_DEPTH} deep")
    if type(x) in _EXACT_SIMPLE:
        # The commonest facts first (what the `_SIMPLE` branch below gives).
        return ("value", type(x).__name__, repr(x))
    if _is_var(x):
        # Which of the call's input tensors it is, if any: a global or a
        # deeper attribute that is an argument in one call and not in the
        # next is another fact (the graph reads an input there).
        native = x._v
        return ("tensor", tuple(native.shape), _jitc_dtype_name(native.dtype), _top('aliases', {}).get(id(native)))
    if input and isinstance(x, np.ndarray):
        return ("tensor", tuple(x.shape), _dtype_name(x.dtype), None)
    if isinstance(x, np.ndarray):
        return ("array", tuple(x.shape), str(x.dtype), _digest(x))
    if isinstance(x, _SIMPLE):
        return ("value", type(x).__name__, repr(x))
    if isinstance(x, np.generic):
        return ("value", str(x.dtype), repr(x.item()))
    if isinstance(x, enum.Enum):
        # A member (not an int or str one, above) by identity: code tests
        # it with `is`, and its attributes are not ones the code names.
        return ("identity", _Identity(x))
    if isinstance(x, (tuple, list)):
        # (Two named tuple classes may share a name: a subclass by identity.)
        items = tuple(fact(v, depth, input and level == 0, level + 1) for v in x)
        if type(x) in (tuple, list):
            return ("sequence", type(x).__name__, items)
        # A subclass's instance: its attributes too (`self.layers.scale`).
        return ("sequence", _Identity(type(x)), items, _subclass_attributes(x, depth, level, fact))
    if isinstance(x, (set, frozenset)):
        # In the order it iterates in (equal sets may iterate differently);
        # an object member by which object it is, as a dict's key.
        return ("set", type(x).__name__, tuple(_key_fact(v, depth, level, fact) for v in x))
    if isinstance(x, (bytearray, memoryview)):
        return ("bytes", type(x).__name__, _bytes(x))
    if isinstance(x, collections.deque):
        return ("sequence", "deque", tuple(fact(v, depth, False, level + 1) for v in x))
    if isinstance(x, dict):
        # A key by `repr` if a simple value, an object key by which object
        # it is and its attributes, others by their facts.
        items = tuple((_key_fact(k, depth, level, fact), fact(v, depth, False, level + 1)) for k, v in x.items())
        if type(x) is dict:
            return ("dict", items)
        return ("dict", _Identity(type(x)), items, _subclass_attributes(x, depth, level, fact))
    if isinstance(x, types.FunctionType) and depth <= 1:
        # A function passed in or held: what its closure, defaults and
        # attributes (`helper.calls`) hold.
        held = [c.cell_contents for c in x.__closure__ or () if _cell_filled(c)]
        return ("function", _Identity(x), fact((held, x.__defaults__, x.__kwdefaults__, _own_attributes(x)),
                                               depth + 1, False, level + 1))
    if isinstance(x, types.MethodType):
        return ("method", _Identity(x.__func__), fact(x.__self__, depth + 1, False, level + 1))
    if _bound_builtin(x):
        # A builtin bound method (`get = table.get`, `self.push = log.append`):
        # what its object holds, as for a Python method (by identity, a
        # table changed between calls would serve the old graph).
        return ("builtin method", x.__name__, _Identity(type(x.__self__)),
                fact(x.__self__, depth + 1, False, level + 1))
    if isinstance(x, functools.partial):
        return ("partial", _Identity(x.func), fact(x.args, depth, False, level + 1),
                fact(x.keywords, depth, False, level + 1))
    names = _top('names', frozenset())
    if isinstance(x, (types.ModuleType, type)) and depth <= 1 and names:
        # A module or class as a value: the attributes the code names.
        space = [(n, _class_attribute(x, n) if isinstance(x, type) else vars(x).get(n, _MISSING)) for n in names]
        return ("namespace", _Identity(x),
                tuple(sorted((n, fact(v, depth + 1, False, level + 1)) for n, v in space if v is not _MISSING)))
    slots = _slots(x)
    if slots is not None and depth <= _MAX_OBJECT_DEPTH:
        return ("slots", _Identity(type(x)), tuple(fact(v, depth + 1, False, level + 1) for v in slots))
    if _is_object(x) and not isinstance(x, (Function, _Bound)):
        if depth <= 1:
            held = vars(x).items()
        elif depth <= _MAX_OBJECT_DEPTH and names:
            # Deeper, the attributes the code names (`self.a.b.c`): no
            # other can be read without introspection, which keeps a
            # relaxed number from being staged and is rare in models.
            held = [(k, v) for k, v in vars(x).items() if k in names]
        else:
            return ("identity", _Identity(x))
        # (A number of one of the call's objects at a relaxed position, met
        # deeper than `self` or an argument: `self.bn.n`.)
        relaxed = (_top('relaxed_objects', None) or {}).get(id(x), ())
        return ("object", _Identity(type(x)),
                tuple(sorted((k, ("relaxed", type(v).__name__) if k in relaxed and _relaxable(v)
                              else fact(v, depth + 1, False, level + 1)) for k, v in held)),
                tuple(sorted((k, fact(v, depth + 1, False, level + 1))
                             for k, v in _class_reads(x, names).items())) if names else ())
    return ("identity", _Identity(x))


_DTYPE_NAMES = {}
_JITC_DTYPE_NAMES = {}
# Per thread, while `Function._key` (and the tracing and state snapshots)
# run: `aliases`, the native id of each input tensor -> its position (read
# by `_fact`), and `names`, the names the function's code uses
# (`Function._names`: the attributes of modules, classes and objects'
# classes that are facts).
_STACKS = threading.local()


def _stack(name):
    """A per-thread stack of `_key`'s context (`aliases`, `names`)."""
    found = getattr(_STACKS, name, None)
    if found is None:
        found = []
        setattr(_STACKS, name, found)
    return found


def _top(name, default):
    found = _stack(name)
    return found[-1] if found else default


def _jitc_dtype_name(name):
    """`str` of the NumPy dtype of jitc's element type `name` (`"f32"` is
    `"float32"`), remembered."""
    found = _JITC_DTYPE_NAMES.get(name)
    if found is None:
        from . import _TO_NUMPY

        found = _JITC_DTYPE_NAMES[name] = str(_TO_NUMPY[name])
    return found


def _dtype_name(dtype):
    """`str(dtype)`, remembered (NumPy's is slow, and facts ask per call)."""
    name = _DTYPE_NAMES.get(dtype)
    if name is None:
        name = _DTYPE_NAMES[dtype] = str(dtype)
    return name


def _slots(x):
    """The values of an object's `__slots__` (in order, missing ones as
    `_MISSING`'s stand-in), or None for an object without slots or with
    a `__dict__` (whose attributes are taken from it)."""
    if hasattr(x, "__dict__") or isinstance(x, type):
        return None
    names = []
    for base in type(x).__mro__:
        held = getattr(base, "__slots__", ())
        for n in (held,) if isinstance(held, str) else held:
            if n in ("__weakref__", "__dict__"):
                continue
            # A private slot is stored under its mangled name.
            if n.startswith("__") and not n.endswith("__"):
                n = f"_{base.__name__.lstrip('_')}{n}"
            names.append(n)
    if not names:
        return None
    return tuple((n, getattr(x, n, "<unset>")) for n in names)


def _bytes(buffer):
    try:
        return bytes(buffer)
    except ValueError:  # a released memoryview
        return ("released", id(buffer))


def _digest(array):
    """The contents of a NumPy array, as a fact."""
    import hashlib

    if array.dtype.hasobject:
        # Python objects: by what they print as (a fresh token when that
        # fails, so that the array is never taken for unchanged).
        try:
            return ("objects", repr(array.tolist()))
        except Exception:  # noqa: BLE001 -- any object that cannot say what it is
            return ("unknown", object())
    data = np.ascontiguousarray(array)
    return hashlib.blake2b(data.view(np.uint8).reshape(-1) if data.size else b"", digest_size=16).hexdigest()


def _nested_codes(code):
    """`code` and the code objects defined in it (inner functions, lambdas,
    comprehensions), which run with its globals."""
    found = [code]
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            found += _nested_codes(const)
    return found


def _reachable_codes(fn):
    """The Python code `fn` may run that can be found before it runs, each
    with its globals: its own (and what is nested in it), and, following
    the functions its code names as globals and its closure holds, theirs.
    Code found only while a call runs (methods, functions passed in) is
    added by `Function._discover`. Bound methods and `functools.partial`s
    are followed to their functions. Also returns the functions followed,
    whose default values and closure variables are facts too (`_held`)."""
    codes = {}
    functions = []
    work = [fn]
    seen = set()
    while work and len(codes) < _MAX_CODES:
        f = work.pop()
        if isinstance(f, Function):
            f = f.fn
        if isinstance(f, types.MethodType):
            work.append(f.__func__)
            continue
        if isinstance(f, functools.partial):
            work.append(f.func)
            continue
        if not isinstance(f, types.FunctionType) or id(f) in seen:
            continue
        seen.add(id(f))
        functions.append(f)
        scope = f.__globals__
        for code in _nested_codes(f.__code__):
            codes.setdefault(code, scope)
            work += [scope[n] for n in code.co_names if isinstance(scope.get(n), _CALLABLES + (Function,))]
        work += [c.cell_contents for c in f.__closure__ or ()
                 if _cell_filled(c) and isinstance(c.cell_contents, _CALLABLES + (Function,))]
    return codes, functions


# What an object default of the function itself is in its held facts:
# the call passes it (`Function._object_defaults`).
_PASSED = "(passed by the call)"


def _held(functions, fn):
    """What `functions` hold besides their code, by function: default
    argument values (read by a call that omits an argument; `fn`'s that
    are objects are the call's, `Function._object_defaults`, whose facts
    are taken there) and, but for `fn`'s own (`Function._global_values`
    has those), closure variables."""
    held = {}
    for k, f in enumerate(functions):
        # Functions may share a name (made by one factory): numbered.
        of = f"{f.__module__}.{f.__qualname__} ({k})"
        defaults, kwdefaults = f.__defaults__, f.__kwdefaults__
        if f is fn and defaults:
            code = f.__code__
            first = code.co_argcount - len(defaults)
            defaults = tuple(_PASSED if first + j >= code.co_posonlyargcount and _is_object(v) else v
                             for j, v in enumerate(defaults))
        if f is fn and kwdefaults:
            kwdefaults = {n: _PASSED if _is_object(v) else v for n, v in kwdefaults.items()}
        if defaults or kwdefaults:
            held[f"defaults of {of}"] = (defaults, kwdefaults)
        if f is not fn:
            for name, cell in zip(f.__code__.co_freevars, f.__closure__ or ()):
                if _cell_filled(cell):
                    held[f"closure variable {name} of {of}"] = cell.cell_contents
    return held


def _code_names(codes):
    """The attribute and global names `codes` use, and the identifier
    strings they hold (`getattr(self, "scale")`)."""
    names = set()
    for code in codes:
        names.update(code.co_names)
        names.update(c for c in code.co_consts if type(c) is str and c.isidentifier())
    return frozenset(names)


# The instructions that name a global (or, in a class body or at module
# level, a name looked up in the globals after the locals).
_GLOBAL_OPS = frozenset({"LOAD_GLOBAL", "STORE_GLOBAL", "DELETE_GLOBAL", "LOAD_NAME", "STORE_NAME", "DELETE_NAME"})


def _global_names(code):
    """The names `code` may look up in its globals: those its instructions
    load, store or delete as globals, and, if it calls `globals`, the
    identifier strings it holds (`globals()["name"]`). A name it uses only as an attribute (`self.w`)
    is not one: a global of that name is not read."""
    names = {i.argval for i in dis.get_instructions(code) if i.opname in _GLOBAL_OPS}
    if "globals" in code.co_names:
        # (Only code that calls `globals()` can look a string up there: a
        # dict key "loss" does not make a global `loss` a fact.)
        names.update(c for c in code.co_consts if type(c) is str and c.isidentifier())
    return names


def _imported(code, scope):
    """The modules `code`'s `import` statements import, by absolute name
    (and each one's top package: `import a.b` binds `a`), sorted."""
    import importlib.util

    found = set()
    instructions = list(dis.get_instructions(code))
    for k, i in enumerate(instructions):
        if i.opname != "IMPORT_NAME":
            continue
        # (The level is the constant loaded two instructions before.)
        level = instructions[k - 2].argval if k >= 2 and instructions[k - 2].opname == "LOAD_CONST" else 0
        try:
            name = importlib.util.resolve_name("." * level + i.argval, scope.get("__package__")) if level else i.argval
        except (ImportError, ValueError, TypeError):
            continue
        found.update((name, name.split(".")[0]))
    return tuple(sorted(found))


def _global_reads(codes):
    """What the code objects `codes` (code -> globals) may read from their
    modules: each global they name (`_global_names`), and the attributes
    they name of a module or class so read (`config.SCALE`, `Cfg.scale`,
    two levels), by `module.name`."""
    reads = {}
    for code, scope in codes.items():
        found = _CODE_NAMES.get(code)
        if found is None or found[0] is not scope:
            module = scope.get("__name__", "?")
            # Each global name with its label, worked out once per code.
            found = (scope, tuple(sorted(_code_names([code]))),
                     tuple((n, f"{module}.{n}") for n in sorted(_global_names(code))),
                     _imported(code, scope))
            _remember(_CODE_NAMES, code, found)
        _, names, labelled, imported = found
        for name in imported:
            # A module the code imports (`import config` in its body: a
            # local, not a global): the attributes it names of it.
            value = sys.modules.get(name)
            if getattr(value, "__dict__", None) is not None:
                _attribute_reads(reads, f"import {name}", value, names, 2)
        for name, label in labelled:
            value = scope.get(name, _MISSING)
            if value is not _MISSING:
                reads[label] = value
                if isinstance(value, (types.ModuleType, type)) or (type(value) is types.FunctionType
                                                                   and value.__dict__):
                    # (A function's attributes too: `helper.scale`.)
                    _attribute_reads(reads, label, value, names, 2)
    return reads


# Code object -> (its globals, the names it uses (`_code_names`), and the
# global names it may read (`_global_names`), each with its label).
_CODE_NAMES = {}
# (id of a module or class, the names code uses) -> (it, the names it
# holds): which attributes `_attribute_reads` looks up, worked out once.
_HELD = {}


def _attribute_reads(reads, path, value, names, depth):
    key = (id(value), names)
    held = _HELD.get(key)
    sizes = _sizes(value)
    if held is None or held[0] is not value or held[2] != sizes:
        if isinstance(value, type):
            held = (value, tuple(n for n in names if _class_attribute(value, n) is not _MISSING), sizes)
        else:
            held = (value, tuple(n for n in names if n in vars(value)), sizes)
        _remember(_HELD, key, held)
    is_class = isinstance(value, type)
    space = None if is_class else vars(value)
    for name in held[1]:
        found = _class_attribute(value, name) if is_class else space.get(name, _MISSING)
        if found is not _MISSING:
            reads[f"{path}.{name}"] = found
            if depth > 1 and isinstance(found, (types.ModuleType, type)):
                _attribute_reads(reads, f"{path}.{name}", found, names, depth - 1)


def _sizes(value):
    """How many attributes a module or class (and each of its bases) holds:
    when an attribute is added, `_HELD`'s list is worked out again."""
    if isinstance(value, type):
        return tuple(len(vars(base)) for base in value.__mro__)
    return len(vars(value))


def _remember(cache, key, value):
    if len(cache) > 4096:
        cache.clear()
    cache[key] = value


def _class_attribute(cls, name):
    """`name` as the class `cls` holds it (searching its bases), without
    running a descriptor; `_MISSING` when no class holds it."""
    for base in getattr(cls, "__mro__", (cls,)):
        held = vars(base).get(name, _MISSING)
        if held is not _MISSING:
            return held
    return _MISSING


def _class_reads(obj, names):
    """The attributes of `obj`'s class (and its bases) that code naming
    `names` may read through the object (`self.k`, or `type(self).k`,
    `super().k` where the object holds one of that name too)."""
    cls = type(obj)
    key = (id(cls), names)
    held = _HELD.get(key)
    sizes = _sizes(cls)
    if held is None or held[0] is not cls or held[2] != sizes:
        held = (cls, tuple(sorted(n for n in names if _class_attribute(cls, n) is not _MISSING)), sizes)
        _remember(_HELD, key, held)
    found = {}
    for name in held[1]:
        # Every class that holds it, not only the first: `super().k`
        # reads a base's.
        held_by = tuple(vars(base)[name] for base in cls.__mro__ if name in vars(base))
        if held_by and isinstance(held_by[0], types.MemberDescriptorType):
            # A slot (of a base with `__slots__`, beside the object's
            # `__dict__`): its value, which the object holds.
            try:
                found[name] = ("slot", held_by[0].__get__(obj, cls))
            except AttributeError:
                found[name] = ("slot",)
        elif held_by:
            found[name] = held_by if len(held_by) > 1 else held_by[0]
    return found


class _Identity:
    """An object as a fact: equal only to itself, and kept alive."""

    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value

    def __eq__(self, other):
        return isinstance(other, _Identity) and other.value is self.value

    def __hash__(self):
        return id(self.value)

    def __repr__(self):
        return f"<{type(self.value).__name__} at {id(self.value):#x}>"


def _relaxable(x):
    """A Python number that may become a graph input: a float, or an int
    that fits in 64 bits (not a bool)."""
    return type(x) is float or (type(x) is int and -(2**63) <= x < 2**63)


def _relaxed_objects(listed, relaxed, names):
    """For the facts of a call whose objects are `listed` (`_objects`):
    `id(o) -> the names of o's attributes at relaxed positions` (those
    `Function._numbers` gives: `("attr", label, name)`, by o's first
    label, and only a name the code uses, `names`, for an object the facts
    cover by those), so that such a number is a fact by its type wherever
    the facts meet o (`self.bn.n`), exactly where it is a graph input;
    None when there are none."""
    attributes = {}
    for p in relaxed:
        if p[0] == "attr":
            attributes.setdefault(p[1], set()).add(p[2])
    if not attributes:
        return None
    found = {}
    for o, label, only in _attribute_positions(listed, names):
        held = attributes.get(label)
        if held:
            found[id(o)] = frozenset(held if only is None else held & only)
    return found or None


def _attribute_positions(listed, names):
    """`(object, label, names)` for each object of `listed` (`_objects`)
    once, by its first label: `names` are those its numbers may be
    relaxed at (the names the code uses, for an object held more than one
    level down), None for any. An object whose label another object of
    the call has too (a positional-only `cfg` and a `cfg=` in `**kwargs`;
    two dict keys with one `repr`) has none (`_Objects.labelled`)."""
    for k in listed.labelled():
        yield listed[k], listed.labels[k], names if listed.named_only[k] else None


def _immutable(x):
    """A Python value an attribute may be set to in a staged call: one a
    later call cannot change in place."""
    if isinstance(x, _SIMPLE):
        return True
    return type(x) in (tuple, frozenset) and all(_immutable(v) for v in x)


def _user_frame(frame):
    """The first frame outside jitc's package from `frame` outwards."""
    while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE):
        frame = frame.f_back
    return frame


def _marker(value, depth=0):
    """`value` as Python state is compared (the loop staging, and what a
    traced call changed): a tensor by its native value (`("tensor", id)`),
    Python values by type and `repr`, containers item by item, objects with
    their attributes, three levels deep; functions, classes and modules by
    identity."""
    if _is_var(value):
        return ("tensor", id(value._v))
    if isinstance(value, _SIMPLE):
        return (type(value).__name__, repr(value))
    if hasattr(type(value), "__next__") and not isinstance(value, (np.ndarray, np.generic)):
        return ("iterator", id(value), _position(value, depth))
    if isinstance(value, (list, dict)):
        # (Which lists and dicts the state holds, for `Function._structure`.)
        seen = _top('containers', None)
        if seen is not None:
            seen.add(id(value))
    if depth >= _MAX_MARKER_DEPTH:
        return ("object", id(value))
    if isinstance(value, (tuple, list, collections.deque)):
        return (type(value).__name__, tuple(_marker(v, depth + 1) for v in value))
    if isinstance(value, (set, frozenset)):
        return (type(value).__name__, tuple(sorted((_marker(v, depth + 1) for v in value), key=repr)))
    if isinstance(value, (bytearray, memoryview)):
        return (type(value).__name__, _bytes(value))
    if isinstance(value, dict):
        # (A key that is an object, also in a tuple, with what it holds: a
        # call may change it.)
        return ("dict", tuple((_marker(k, depth + 1) if isinstance(k, tuple) or _is_object(k) else repr(k),
                               _marker(v, depth + 1)) for k, v in value.items()))
    if isinstance(value, np.ndarray):
        return ("ndarray", id(value), value.shape, value.dtype.str,
                value.tobytes() if value.size <= 64 else _digest(value))
    if isinstance(value, types.FunctionType):
        held = [c.cell_contents for c in value.__closure__ or () if _cell_filled(c)]
        return ("function", id(value), _marker((held, value.__defaults__, value.__kwdefaults__,
                                                _own_attributes(value)), depth + 1))
    if isinstance(value, types.MethodType):
        return ("method", id(value.__func__), _marker(value.__self__, depth + 1))
    if _bound_builtin(value):
        # A builtin bound method (`log.append` passed as a callback, a
        # method-wrapper `it.__next__`): what its object holds is state the
        # call may change.
        return ("builtin method", value.__name__, _marker(value.__self__, depth + 1))
    slots = _slots(value)
    if slots is not None:
        return ("slots", id(value), _marker(slots, depth + 1))
    if isinstance(value, functools.partial):
        return ("partial", id(value.func), _marker((value.args, value.keywords), depth + 1))
    if _is_object(value) and not isinstance(value, (Function, _Bound)):
        if id(value) in _top('tracked', ()):
            return ("object", id(value))
        names = _top('names', None)
        if depth >= 3 and names is None:
            return ("object", id(value))
        # Deeper than three levels, the attributes the code names.
        held = [(k, v) for k, v in vars(value).items() if depth < 3 or k in names]
        return ("object", id(value), tuple(sorted((k, _marker(v, depth + 1)) for k, v in held)))
    return ("object", id(value))


def _position(iterator, depth):
    """Where an iterator stands, so that a call that advances one (`next`)
    is seen to change it: a generator by its frame, others by what they
    pickle as (`range`, `list`, `zip`... iterators), a stream
    (`io.StringIO`, a file not being iterated: a text file's `for line
    in f` turns `tell()` off) by `tell()`; an iterator that says none of these is a
    new position each time it is asked (so any call that can reach it is
    taken to change it)."""
    frame = getattr(iterator, "gi_frame", _MISSING)
    if frame is not _MISSING:
        if frame is None:
            return "finished"
        return (frame.f_lasti, _state_of(frame.f_locals) if depth < 3 else id(frame))
    if isinstance(iterator, io.IOBase):
        try:
            return ("stream", "closed") if iterator.closed else ("stream", iterator.tell())
        except Exception:  # noqa: BLE001 -- not seekable, or `next` turned `tell` off
            return ("unknown", object())
    try:
        reduced = iterator.__reduce__()
    except Exception:  # noqa: BLE001 -- any iterator that cannot say where it is
        return ("unknown", object())
    return _marker(reduced[1:], depth + 1)


def _named_globals(code, scope):
    """The globals `code` names that may hold state (not modules,
    functions or classes)."""
    plain = (types.ModuleType, types.FunctionType, types.BuiltinFunctionType, type, Function, _Bound)
    return {n: scope[n] for n in code.co_names
            if n in scope and (not isinstance(scope[n], plain) or _bound_builtin(scope[n]))}


def _state_of(names):
    return tuple(sorted((name, _marker(v)) for name, v in names.items()))


def _relabel_state(state, rel):
    """A Python state with each tensor marker's native id replaced by
    `rel(id)`."""
    if isinstance(state, tuple):
        if len(state) == 2 and state[0] == "tensor":
            return ("tensor", rel(state[1]))
        return tuple(_relabel_state(s, rel) for s in state)
    return state


# Code object -> {(start, end) of a loop test: what test}, from its
# source; code object -> its instructions' positions.
_LOOP_TESTS = {}
_POSITIONS = {}


def _exits(statements, nested=False):
    """Whether `statements` of a loop's body may leave the loop other than
    at its test: a `break` of that loop (not of a loop inside it), a
    `return`, a `raise` (code after the loop may catch it and run the
    loop again: its tests would look like one run's), a `yield` or
    `await` (what consumes the values is out of sight: `list(gen())`).
    Such a loop is not folded (`_loop_tests`)."""
    for node in statements:
        if isinstance(node, (ast.Return, ast.Raise, ast.Yield, ast.YieldFrom, ast.Await)) or (
                isinstance(node, ast.Break) and not nested):
            return True
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue
        if isinstance(node, (ast.For, ast.AsyncFor, ast.While)):
            # Its body's `break`s are its own; its `else`'s are the outer loop's.
            if _exits(node.body, True) or _exits(node.orelse, nested):
                return True
            continue
        if _exits(ast.iter_child_nodes(node), nested):
            return True
    return False


def _loop_tests(code):
    """The lines of `code`'s loop tests: a `while` statement's test
    (`("while",)`), and the test of an `if ...: break` that ends the body
    of a `for` loop over `range(...)` of names and constants, with no
    `else`, no assignment to those names in the loop and no read of its
    target (`("for", target, arguments)`): the only loops whose hidden
    state (a `for` loop's iterator) is known."""
    tests = _LOOP_TESTS.get(code)
    if tests is not None:
        return tests
    tests = {}
    source = ""
    try:
        source = inspect.getsource(code)
        tree = ast.parse(textwrap.dedent(source))
    except (OSError, TypeError, SyntaxError):
        tree = None
    offset = code.co_firstlineno - 1
    first = source.splitlines()[0] if tree is not None else ""
    indent = len(first) - len(first.lstrip())

    def span(node):
        # Where the test is in the file: lines, and columns undedented.
        return ((node.lineno + offset, node.col_offset + indent),
                (node.end_lineno + offset, node.end_col_offset + indent))

    for node in ast.walk(tree) if tree is not None else ():
        if isinstance(node, ast.While):
            if not _exits(node.body):
                tests[span(node.test)] = ("while",)
        elif isinstance(node, ast.For) and not node.orelse and isinstance(node.target, ast.Name) and node.body:
            last, call = node.body[-1], node.iter
            if not (isinstance(last, ast.If) and not last.orelse and len(last.body) == 1
                    and isinstance(last.body[0], ast.Break)) or _exits(node.body[:-1]):
                continue
            if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and call.func.id == "range"
                    and not call.keywords and 1 <= len(call.args) <= 3
                    and all(isinstance(a, (ast.Constant, ast.Name)) for a in call.args)):
                continue
            names = {a.id for a in call.args if isinstance(a, ast.Name)}
            assigned = {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
            # The target is left out of the Python state compared at each
            # test, so nothing may read it (in the loop or after it).
            read = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
            # The range's arguments are read again at each test: only
            # locals nothing else can rebind (no global, no variable a
            # nested function shares) have the values the loop started with.
            fixed = set(code.co_varnames) - set(code.co_cellvars)
            if names & assigned or names - fixed or node.target.id in read:
                continue
            arguments = tuple(("name", a.id) if isinstance(a, ast.Name) else ("constant", a.value)
                              for a in call.args)
            tests[span(last.test)] = ("for", node.target.id, arguments)
    _LOOP_TESTS[code] = tests
    return tests


def _loop_test(frame):
    """The loop test `frame` is at (`_loop_tests`), with a `for` loop's
    trip count: `("while",)`, `("for", target, trips)`, or None."""
    if frame is None or frame.f_lasti < 0:
        return None
    # The instruction that asked for the truth value must lie inside the
    # test (a decision in a loop's one-line body is on the test's line).
    positions = _POSITIONS.get(frame.f_code)
    if positions is None:
        positions = _POSITIONS[frame.f_code] = list(frame.f_code.co_positions())
    index = frame.f_lasti // 2
    if index >= len(positions) or None in positions[index]:
        return None
    line, end_line, column, end_column = positions[index]
    test = None
    for (begin, end), found in _loop_tests(frame.f_code).items():
        if begin <= (line, column) and (end_line, end_column) <= end:
            test = found
    if test is None or test[0] == "while":
        return test
    _, target, arguments = test
    values = []
    for kind, value in arguments:
        if kind == "name":
            scope = frame.f_locals if value in frame.f_locals else frame.f_globals
            value = scope.get(value, getattr(__builtins__, value, None) if not isinstance(__builtins__, dict)
                              else __builtins__.get(value))
        if type(value) is not int:
            return None
        values.append(value)
    if frame.f_globals.get("range", range) is not range:
        return None
    return ("for", target, len(range(*values)))


def _without(state, target):
    """A Python state (`_Tracer._python_state`) without the local `target`
    of its innermost frame (a `for` loop's target, which the loop's
    counter stands for)."""
    frames, objects = state
    if target is None or not frames:
        return state
    code, names, *rest = frames[0]
    return (((code, tuple(n for n in names if n[0] != target), *rest),) + frames[1:], objects)


def _same_number(a, b):
    return type(a) is type(b) and (a == b or (a != a and b != b))


class _Trace:
    """One traced call, ready to be replayed into a graph. Values are named
    by *keys* that are the same in every trace with the same ops: `("in",
    k)` for the k-th input, `(entry, k)` for the k-th result of an entry."""

    def __init__(self, tracer, inputs, outputs, structure, writes):
        self.tracer = tracer
        self.entries = tracer.entries
        self.inputs = inputs          # input natives, in order
        self.structure = structure    # the return value, tensors replaced by ("out", k)
        # [(object index, name, ("out", output index, number kind or None)
        # or ("value", a Python value))]
        self.writes = writes
        # ([(input index, state name)], [(output index, state name)]):
        # `_Function._state_binding`.
        self.state = ([], [])
        # The named state it takes and gives, with types (`_named_io`).
        self.named = ()
        self.named_writes = []
        keys = {id(n): ("in", k) for k, n in enumerate(inputs)}
        # Native id -> key, for the loop staging's Python state.
        self.keys = keys
        self.native = {("in", k): n for k, n in enumerate(inputs)}
        self.signature = []
        self.uses = []
        self.values = {}              # entry index -> decision value

        def key_of(a):
            found = keys.get(id(a))
            if found is None:
                raise _Unheld(
                    "it reads a jitc.Var that is not an argument, made in the call, or held where the facts "
                    "reach (attributes of self and of arguments, globals and closure variables, and the "
                    "tuples, lists, dicts and objects they hold; not sets, functions' closures or __slots__)"
                )
            return found

        def describe(a, used):
            if isinstance(a, _jitc.Var):
                k = key_of(a)
                used.append(k)
                return ("v", k)
            if isinstance(a, list):
                return tuple(describe(v, used) for v in a)
            return a

        for index, entry in enumerate(self.entries):
            used = []
            if entry[0] == "call":
                _, native, args, result, _ = entry
                self.signature.append((native.__name__, tuple(describe(a, used) for a in args)))
                results = result if isinstance(result, list) else [result]
                for k, r in enumerate(results):
                    keys[id(r)] = (index, k)
                    self.native[(index, k)] = r
            else:
                _, var, value, site, _ = entry
                self.signature.append(("decide", describe(var, used), site))
                self.values[index] = value
            self.uses.append(used)
        self.outputs = [key_of(o) for o in outputs]


class _Segment:
    """A straight piece of a trace tree, staged: it takes the function's
    inputs and the values earlier pieces computed (`live_in`), and gives
    the values later pieces need (`live_out`), then either the function's
    outputs (a leaf) or the condition of a branch both of whose ways were
    traced (`children`, by the way it goes)."""

    def __init__(self, staged, live_in, live_out, guards, site=None, children=None):
        # The number of traces merged into this one graph (`_merged`), or 0.
        self.merged = 0
        self.staged = staged
        self.live_in = live_in
        self.live_out = live_out
        self.guards = guards
        self.site = site
        self.children = children

    def walk(self, depth=0):
        yield depth, self
        for way in (True, False):
            if self.children and way in self.children:
                yield from self.children[way].walk(depth + 1)


class _Unmergeable(Exception):
    pass


def _decisions(trace):
    """`(entry index, (site, value))` of each decision of `trace`."""
    return [(i, (e[3], e[2])) for i, e in enumerate(trace.entries) if e[0] == "decide"]


def _relabel(described, where):
    """An entry's described arguments with each value key `k` replaced by
    `where(k)`."""
    if isinstance(described, tuple) and len(described) == 2 and described[0] == "v":
        return ("v", where(described[1]))
    if isinstance(described, tuple):
        return tuple(_relabel(a, where) for a in described)
    return described


def _placeholder(native):
    """Data of `native`'s type standing for a value a staged part takes."""
    from . import _TO_NUMPY

    zeros = np.zeros(native.shape, dtype=np.dtype(_TO_NUMPY[native.dtype]))
    return _jitc.Var.from_bytes(zeros.tobytes(), list(native.shape), native.dtype)


class _Loop:
    """A loop on a tensor condition in one trace, folded. Its decisions
    `ds` at one site go the same way `go` each time but the last, and
    split the trace into the entries before the loop (*pre*), iterations
    (*chunks*) of `length` entries each ending with a test, and the
    entries after the last test (*post*):

    - a `while` loop: pre ends with the first test, whose way is the
      first condition; chunk `i` follows test `i` and ends with test
      `i + 1`;
    - a `for` loop over `range` whose body ends with `if ...: break`:
      chunk `i` is iteration `i`, ending with its test; the loop goes on
      while the test does not break and a counter carried with the values
      is below the range's length (fixed by the facts).

    It folds into one `scf.while` for any trip count when: the test is
    one of those (`_loop_test`; any other loop has hidden state, such as
    a `for` loop's iterator, the trace cannot see); the Python state
    (locals of every frame, attributes of the objects the facts cover;
    a `for` loop's target aside) is the same at every test after the first
    of a `while` (at every test of a `for`), so that every later iteration
    does in Python what the template did; there are at least two chunks,
    so that the second (the template) reads the first's values where the
    first reads values from before the loop (the carried values and their
    initial values); every chunk has the same ops reading values of its
    own, of the chunk before, or from before the loop (loop invariants);
    nothing else decides inside the loop and no `next()` is called there
    (a guard in the loop, a relaxed number's, is checked in every
    iteration: it feeds the values the body carries);
    and what follows the loop reads only carried values of the last
    chunk."""

    def __init__(self, trace, ds, go, test):
        self.trace, self.ds, self.go, self.test = trace, ds, go, test
        self.site = trace.entries[ds[0]][4]
        self.where = trace.entries[ds[0]][3]
        if test[0] == "while":
            self.length = ds[1] - ds[0]
            self.start = ds[0] + 1
            self.ends = ds[1:]
        else:
            self.length = ds[1] - ds[0]
            self.start = ds[0] - self.length + 1
            self.ends = ds
        self.count = len(self.ends)
        self.starts = [self.start + i * self.length for i in range(self.count)]

    @staticmethod
    def of(trace):
        """The loop of `trace` that folds; None when it ran no loop test
        often enough to tell; False when it ran a loop that does not fold
        (then no trace's fold can be trusted)."""
        decides = [i for i, e in enumerate(trace.entries) if e[0] == "decide"]
        by_site = {}
        for i in decides:
            by_site.setdefault(trace.entries[i][4], []).append(i)
        boundaries = trace.tracer.boundaries
        found = None
        for ds in by_site.values():
            tests = {boundaries[i][1] for i in ds}
            if None in tests:
                if len(tests) > 1:
                    return False
                continue
            if len(tests) != 1:
                return False
            test = tests.pop()
            if len(ds) < (3 if test[0] == "while" else 2):
                continue
            values = [trace.entries[i][2] for i in ds]
            go = values[0]
            if any(v != go for v in values[:-1]):
                return False
            if test[0] == "while" and values[-1] == go:
                return False
            if test[0] == "for" and values[-1] == go and len(ds) != test[2]:
                return False
            if test[0] == "for" and len(ds) > test[2]:
                # More tests than the range has: the loop ran more than
                # once (called twice, or in another loop).
                return False
            if len({ds[i + 1] - ds[i] for i in range(len(ds) - 1)}) != 1:
                return False
            loop = _Loop(trace, ds, go, test)
            if loop.start < 0 or any(loop.start <= i < ds[-1] and i not in ds for i in decides):
                return False
            if any(loop.start <= p <= ds[-1] for p in trace.tracer.stateful):
                return False
            if not (loop.fold() and loop.states_agree()):
                return False
            if found is None:
                found = loop
        return found

    def states_agree(self):
        """Whether the Python state is the same at every test (a `for`
        loop's target aside), each tensor bound to the same value relative
        to its iteration; at a `while` loop's first test, each carried
        value's initial value where the others hold the carried value."""
        t = self.trace
        target = self.test[1] if self.test[0] == "for" else None
        while_loop = self.test[0] == "while"

        def relative(chunk):
            def rel(native):
                key = t.keys.get(native)
                if key is None:
                    return ("unknown", native)
                place = self._where(key, chunk)
                return ("pre", key) if place[0] == "pre" else place
            return rel

        states = []
        for j, d in enumerate(self.ds):
            chunk = j - 1 if while_loop else j
            python, _, named = t.tracer.boundaries[d]
            # Named state too: which value each name holds at the test (a
            # loop that writes a name a value that is not what it held
            # the iteration before, or swaps two names, is not the same
            # at every test, and does not fold).
            held = tuple((("named", name), ("tensor", id(named.get(name, before))))
                         for name, before in sorted(t.tracer.named_before.items()))
            states.append(_relabel_state((_without(python, target), held), relative(chunk)))
        steady = states[1:] if while_loop else states
        if any(s != steady[0] for s in steady[1:]):
            return False
        if not while_loop:
            return True
        # The first test: the same, but an initial value where the others
        # hold the carried value it starts.
        init = self.init

        def same(first, later):
            if first == later:
                return True
            if (isinstance(first, tuple) and isinstance(later, tuple) and len(first) == 2 and len(later) == 2
                    and first[0] == "tensor" and later[0] == "tensor"):
                place = later[1]
                if isinstance(place, tuple) and place[:1] == ("local",) and place[1:] in init:
                    wanted = init[place[1:]]
                    return first[1] == (("pre", wanted) if wanted[0] != "in" else wanted)
                return False
            if isinstance(first, tuple) and isinstance(later, tuple) and len(first) == len(later):
                return all(same(a, b) for a, b in zip(first, later))
            return False

        return same(states[0], states[1])

    def _where(self, key, i):
        """Key `key` as chunk `i` reads it."""
        if key[0] == "in":
            return ("in", key[1])
        index = key[0]
        if index < self.start:
            return ("pre", key)
        chunk, offset = divmod(index - self.start, self.length)
        if chunk == i:
            return ("local", offset, key[1])
        if chunk == i - 1:
            return ("carried", offset, key[1])
        return ("far", key)

    def _chunk(self, i):
        t = self.trace
        return [_relabel(t.signature[self.starts[i] + j], lambda key: self._where(key, i))
                for j in range(self.length)]

    def fold(self):
        """Finds the carried values, their initial values and the loop
        invariants; False when the loop does not fold."""
        t = self.trace
        chunks = [self._chunk(i) for i in range(self.count)]
        if any(c != chunks[1] for c in chunks[2:]):
            return False
        # The first iteration reads the carried values' initial values
        # where the second reads the carried values.
        init = {}

        def match(a, b):
            if isinstance(a, tuple) and len(a) == 2 and a[0] == "v" and isinstance(b, tuple) and b[:1] == ("v",):
                first, second = a[1], b[1]
                if second[0] == "carried":
                    if first[0] not in ("pre", "in"):
                        return False
                    raw = first[1] if first[0] == "pre" else first
                    return init.setdefault(second[1:], raw) == raw
                return first == second and first[0] != "far"
            if isinstance(a, tuple) and isinstance(b, tuple):
                return len(a) == len(b) and all(match(x, y) for x, y in zip(a, b))
            return a == b

        if not all(match(a, b) for a, b in zip(chunks[0], chunks[1])):
            return False
        reads = set()

        def collect(described):
            if isinstance(described, tuple) and len(described) == 2 and described[0] == "v":
                reads.add(described[1])
            elif isinstance(described, tuple):
                for a in described:
                    collect(a)

        for entry in chunks[1]:
            collect(entry)
        if any(r[0] == "far" for r in reads):
            return False
        invariants = {r[1] for r in reads if r[0] == "pre"}
        # After the loop: values of the last chunk must be carried ones.
        last = self.count - 1
        after = set()
        for used in t.uses[self.ds[-1] + 1:]:
            after.update(used)
        after.update(t.outputs)
        for key in after:
            if key[0] == "in" or key[0] > self.ds[-1]:
                continue
            place = self._where(key, last)
            if place[0] == "pre":
                invariants.add(key)
            elif place[0] != "local" or place[1:] not in init:
                return False
        self.init = init
        self.carried = sorted(init, key=repr)
        self.invariants = sorted(invariants, key=repr)
        return True

    def stage(self):
        """The folded loop as one compiled graph (`_jitc.stage_loop`)."""
        t = self.trace
        inputs = list(t.inputs)
        go = self.go
        counted = self.test[0] == "for"
        # Before the loop (a `while`'s first test too).
        pre = _Replay(inputs)
        effects_before = []
        for e in range(self.start - 1 if not counted else self.start):
            entry = t.entries[e]
            if entry[0] == "call":
                pre.call(e, entry[1], t.signature[e][1], effects_before)
            else:
                condition = _condition(pre.value(t.signature[e][1]), entry[2])
                effects_before.append(_jitc.guard(condition, f"branch at {entry[3]} goes {entry[2]}"))
        if counted:
            condition = _jitc.full([], "i1", 1.0)
        else:
            condition = _condition(pre.value(t.signature[self.ds[0]][1]), go)
        init = [pre.mapping[self.init[p]] for p in self.carried]
        init += [pre.mapping[key] for key in self.invariants]
        if counted:
            init.append(_jitc.full([], "i64", 0))
        # One iteration: the second chunk's ops, on placeholders.
        body = _Replay(inputs)
        params = [_placeholder(v) for v in init]
        for p, param in zip(self.carried, params):
            body.mapping[(self.starts[0] + p[0], p[1])] = param
        for key, param in zip(self.invariants, params[len(self.carried):]):
            body.mapping[key] = param
        second = self.starts[1]
        effects_body = []
        for e in range(second, self.ends[1]):
            body.call(e, t.entries[e][1], t.signature[e][1], effects_body)
        next_condition = _condition(body.value(t.signature[self.ends[1]][1]), go)
        nexts = [body.mapping[(second + p[0], p[1])] for p in self.carried]
        nexts += params[len(self.carried):len(self.carried) + len(self.invariants)]
        if counted:
            # The counter: the iteration after this one, below the range's length.
            step = _jitc.Var.binary(params[-1], "add", _jitc.full([], "i64", 1))
            more = _jitc.Var.binary(step, "lt", _jitc.full([], "i64", int(self.test[2])))
            next_condition = _jitc.Var.binary(next_condition, "and", more)
            nexts.append(step)
        # After the loop, on the values it ends with.
        post = _Replay(inputs)
        results = [_placeholder(v) for v in init]
        last = self.starts[-1]
        for p, result in zip(self.carried, results):
            post.mapping[(last + p[0], p[1])] = result
        for key, result in zip(self.invariants, results[len(self.carried):]):
            post.mapping[key] = result
        effects_after = []
        for e in range(self.ds[-1] + 1, len(t.entries)):
            entry = t.entries[e]
            if entry[0] == "call":
                post.call(e, entry[1], t.signature[e][1], effects_after)
            else:
                condition_after = _condition(post.value(t.signature[e][1]), entry[2])
                effects_after.append(_jitc.guard(condition_after, f"branch at {entry[3]} goes {entry[2]}"))
        outputs = [post.mapping[key] for key in t.outputs]
        return _jitc.stage_loop(inputs, init, effects_before, condition, params, nexts, next_condition,
                                results, outputs, effects_after, t.state, effects_body)



class _Diverged(Exception):
    pass


class _PendingFailed(Exception):
    """An input of a served call (an argument, or named state) was a
    pending value that failed when computed: the call runs plainly, so
    that the error comes from the fetch that needs it, and it is no
    fallback of the graph."""


class _Facts:
    """What is known for one set of facts: the traces kept (the most recent
    last), and the trace tree staged from them."""

    def __init__(self, relaxed):
        self.traced = 0
        self.fallbacks = 0
        self.traces = []
        self.variant = None
        self.given_up = None
        # The relaxed numbers these facts were keyed under.
        self.relaxed = relaxed


class Function:
    """A function made speculative by `jitc.function`; see the module's
    documentation."""

    def __init__(self, fn, profile=3, max_fallbacks=3, merge=True, max_facts=16):
        if profile < 1:
            raise ValueError("profile must be at least 1")
        if max_facts < 1:
            raise ValueError("max_facts must be at least 1")
        self.__wrapped__ = fn
        # A bound method (`jitc.function(self._step)`): its object is
        # `self` of every call, one of the call's objects, as for a method
        # made speculative in its class.
        self._owner = None
        if isinstance(fn, types.MethodType):
            self._owner, fn = fn.__self__, fn.__func__
        elif (not isinstance(fn, (types.FunctionType, type, Function, _Bound))
              and type(getattr(type(fn), "__call__", None)) is types.FunctionType):
            # A callable object (a model with `__call__`): the same.
            self._owner, fn = fn, type(fn).__call__
        if type(fn) is not types.FunctionType:
            what = ("a jitc.function already" if isinstance(fn, (Function, _Bound))
                    else f"a {type(fn).__name__}, not a Python function or method")
            hint = (": wrap it in a def, or pass the function and give the arguments at the call"
                    if isinstance(fn, functools.partial) else "")
            raise TypeError(f"jitc.function needs a Python function, a method, or an object with a Python "
                            f"__call__; {getattr(fn, '__name__', repr(fn))} is {what}{hint}")
        self.fn = fn
        self.profile = profile
        self.max_fallbacks = max_fallbacks
        self.max_facts = max_facts
        self.merge = merge
        self.__name__ = getattr(fn, "__name__", "function")
        self.__doc__ = getattr(fn, "__doc__", None)
        self._facts = {}
        # Numbers that are graph inputs (JANUS's relaxed assumptions), those
        # whose relaxation was undone, and each call's numbers by the rest
        # of its facts (to see which changed).
        self._relaxed = set()
        self._pinned = set()
        # Relaxed numbers a kept trace took as inputs.
        self._proven = set()
        self._numbers_seen = {}
        # Whether the tensors held deeper than attributes (`self.layers[0].w`)
        # and in globals are inputs too (`_reach_deeper`).
        self._deep = False
        # The parameters whose defaults are objects (`_object_defaults`),
        # worked out for the defaults they were found in.
        self._default_objects = None
        self._imperative = None
        self._counts = Counter()
        self._log = []
        self._dropped_events = 0
        # The Python code its calls may run, with each code's globals:
        # found before the first call (`_reachable_codes`), and while
        # traced calls run (`_discover`); and the names that code uses.
        self._codes, self._functions = _reachable_codes(fn)
        self._names = _code_names(self._codes)
        # The names of the parameters arguments bind to, without and with
        # `self` (`_objects`' labels).
        code = fn.__code__
        self._parameters = (code.co_varnames[:code.co_argcount], code.co_varnames[1:code.co_argcount])

    # -- calling ---------------------------------------------------------------
    def __get__(self, obj, objtype=None):
        if obj is None or self._owner is not None:
            # (Made from a bound method, it keeps that method's object.)
            return self
        return _Bound(self, obj)

    def __call__(self, *args, **kwargs):
        with _own_thread:
            return self._invoke(self._owner, args, kwargs)

    def _object_defaults(self, owner, args, kwargs):
        """`kwargs` with the default of each parameter the call leaves out
        whose default is an object (`def f(x, cfg=CONFIG)`) passed by name:
        it is then one of the call's objects, as if the caller had passed
        it (its attributes facts, rebinding them state), and a
        `jitc.function` called on it inside is part of the call."""
        fn = self.fn
        if type(fn) is not types.FunctionType:
            # (A `functools.partial`, a callable object: not followed.)
            return kwargs
        defaults, kwdefaults = fn.__defaults__, fn.__kwdefaults__
        if defaults is None and not kwdefaults:
            return kwargs
        found = self._default_objects
        if found is None or found[0] is not defaults or found[1] is not kwdefaults:
            code = fn.__code__
            positional = code.co_varnames[:code.co_argcount]
            listed = []
            for k, value in enumerate(defaults or ()):
                index = len(positional) - len(defaults) + k
                if index >= code.co_posonlyargcount and _is_object(value):
                    listed.append((positional[index], index, value))
            listed += [(name, None, value) for name, value in (kwdefaults or {}).items() if _is_object(value)]
            found = self._default_objects = (defaults, kwdefaults, listed)
        filled = None
        given = len(args) + (1 if owner is not None else 0)
        for name, index, value in found[2]:
            if name in kwargs or (index is not None and index < given):
                continue
            if filled is None:
                filled = dict(kwargs)
            filled[name] = value
        return kwargs if filled is None else filled

    def _unstaged(self, kind, why, owner, args, kwargs):
        """Runs a call staging does not cover yet plainly (`kind` counts
        them; the first of each kind is noted with `why`)."""
        if not self._counts[kind]:
            self._note("imperative calls", why)
        self._counts[kind] += 1
        self._counts["imperative"] += 1
        return self._plain(owner, args, kwargs)

    def _invoke(self, owner, args, kwargs):
        args, kwargs, unstaged, converted = _as_vars(args, kwargs)
        if converted is None:
            return self._invoke_converted(owner, args, kwargs, unstaged)
        try:
            return self._invoke_converted(owner, args, kwargs, unstaged)
        finally:
            _restore(converted)

    def _invoke_converted(self, owner, args, kwargs, unstaged):
        kwargs = self._object_defaults(owner, args, kwargs)
        tracer = _tracing.tracer
        if tracer is not None:
            # Called while another call is traced (a nested or recursive
            # `jitc.function`): its ops are the caller's, recorded by the
            # caller's tracer; it is not a call of its own.
            tracer.depth += 1
            try:
                if tracer.depth > _MAX_NESTING:
                    tracer.unstageable(f"it nests jitc.function calls (or recurses) more than {_MAX_NESTING} deep")
                foreign = [o for o in self._objects(owner, args, kwargs) if id(o) not in tracer.objects]
                if foreign:
                    # (An object held deeper, perhaps: a sub-layer.)
                    tracer.deeper = True
                    tracer.unstageable(
                        f"it calls the jitc.function {self.__name__} on a {type(foreign[0]).__name__} that is not "
                        f"self or an argument, whose attributes the staged graph would not track"
                    )
                return self._plain(owner, args, kwargs)
            finally:
                tracer.depth -= 1
        self._counts["calls"] += 1
        if unstaged is not None:
            return self._unstaged("unstaged calls", unstaged, owner, args, kwargs)
        if self._imperative is not None:
            self._counts["imperative"] += 1
            return self._plain(owner, args, kwargs)
        # The call's tensors, once: its facts, and a staged graph's inputs.
        objects = self._objects(owner, args, kwargs)
        container = next((o for o in objects if isinstance(o, _CONTAINERS)), None)
        if container is not None:
            # (Its items would be no facts, or its attributes no state.)
            return self._unstaged("container calls", f"self or an argument is a {type(container).__name__}, a "
                                  f"subclass of a builtin container with attributes, which is not staged yet",
                                  owner, args, kwargs)
        tensors = self._tensors(args, kwargs, objects)
        try:
            key = self._key(owner, args, kwargs, tensors, objects)
            # (The lookup hashes the key: an unhashable fact raises here.)
            facts = self._facts.get(key)
            if facts is None:
                changed = self._changed_numbers(owner, args, kwargs, tensors, objects)
                if changed:
                    self._relax(changed)
                    key = self._key(owner, args, kwargs, tensors, objects)
                    facts = self._facts.get(key)
        except (TypeError, ValueError, RecursionError) as e:
            self._give_up_all(f"its arguments cannot be compared between calls ({e})")
            self._counts["imperative"] += 1
            return self._plain(owner, args, kwargs)
        if facts is None and len(self._facts) >= self.max_facts:
            # A fact that changes on every call (a learning rate passed as
            # a Python number) would profile every call and keep every set
            # of facts: stay imperative, and say which fact changes.
            self._give_up_all(
                f"its facts changed {len(self._facts)} times "
                f"({_changed(next(reversed(self._facts)), key, _fact_names(owner, args, kwargs))}); "
                f"a Python number that changes between calls becomes a graph input, but one whose value Python "
                f"reads (or that is not an int or float) is a new set of facts each time: pass it as a "
                f"jitc.Var (data) instead, or raise max_facts"
            )
            self._facts.clear()
            self._counts["imperative"] += 1
            return self._plain(owner, args, kwargs)
        if facts is None:
            facts = self._facts[key] = _Facts(frozenset(self._relaxed))
        if facts.given_up is not None:
            self._counts["imperative"] += 1
            return self._plain(owner, args, kwargs)
        if facts.variant is not None:
            try:
                result = self._serve(facts.variant, owner, args, kwargs, tensors, objects)
                self._counts["staged"] += 1
                return result
            except _PendingFailed as e:
                self._note("not served", f"an input fails when computed ({e.__cause__})")
                self._counts["imperative"] += 1
                return self._plain(owner, args, kwargs)
            except (_jitc.JitcError, _Diverged) as e:
                # (A guard that failed, or an error computing the graph,
                # an integer division by zero: the imperative run raises
                # it where it would, at the fetch that computes it.)
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
        known = {name for t in facts.traces for name, _, _ in t.named}
        result, trace = self._traced(owner, args, kwargs, tensors, known)
        if trace is None:
            return result
        facts.traced += 1
        facts.traces = (facts.traces + [trace])[-_KEPT_TRACES:]
        if facts.variant is not None or facts.traced >= self.profile:
            restage = facts.variant is not None
            try:
                facts.variant = self._stage(facts.traces)
            except (_Unstageable, _jitc.JitcError) as e:
                facts.variant = None
                self._give_up_all(f"its trace cannot be staged: {e}")
                return result
            self._counts["restaged" if restage else "staged_graphs"] += 1
            self._note("restage" if restage else "stage", _describe_tree(facts.variant))
        return result

    def _plain(self, owner, args, kwargs):
        return self.fn(owner, *args, **kwargs) if owner is not None else self.fn(*args, **kwargs)

    # -- facts -----------------------------------------------------------------
    def _key(self, owner, args, kwargs, tensors, objects, relaxed=None):
        """The call's facts (`objects`: the call's, `_objects`). A number at
        a `relaxed` position (`_numbers`; the function's relaxed ones by
        default) is a fact by its type only."""
        aliases = {id(t._v): k for k, t in reversed(list(enumerate(tensors)))}
        _stack('aliases').append(aliases)
        _stack('names').append(self._names)
        _stack('relaxed_objects').append(
            _relaxed_objects(objects, self._relaxed if relaxed is None else relaxed, self._names))
        try:
            return self._facts_of(owner, args, kwargs, tensors, relaxed, objects, aliases)
        finally:
            _stack('aliases').pop()
            _stack('names').pop()
            _stack('relaxed_objects').pop()

    def _facts_of(self, owner, args, kwargs, tensors, relaxed, listed, aliases):
        """The call's facts, computed natively (`jitc._jitc.Facts.key`;
        `_facts_of_py` defines them)."""
        relaxed = self._relaxed if relaxed is None else relaxed
        key = _native_facts().key(
            args, kwargs, owner, tensors, listed, relaxed, aliases, self._names, self._global_values(),
            bool(self.fn.__code__.co_flags & inspect.CO_VARKEYWORDS), _top('relaxed_objects', None),
        )
        # Which of the paths to objects held deeper are one object.
        held = getattr(listed, "pattern", None)
        return key if held is None else key + (("held objects", held),)

    def _facts_of_py(self, owner, args, kwargs, tensors, relaxed, listed, aliases, fact):
        """The definition of `_facts_of`, with `fact(x, depth, input,
        level)` for `_fact` (the tests compare the two)."""
        relaxed = self._relaxed if relaxed is None else relaxed
        relaxed_objects = _relaxed_objects(listed, relaxed, self._names)
        _stack('relaxed_objects').append(relaxed_objects)
        try:
            return self._facts_of_py_in(owner, args, kwargs, tensors, relaxed, listed, fact, relaxed_objects or {})
        finally:
            _stack('relaxed_objects').pop()

    def _facts_of_py_in(self, owner, args, kwargs, tensors, relaxed, listed, fact, relaxed_objects):
        objects = {}
        for k, o in enumerate(listed):
            objects.setdefault(id(o), k)

        def top(position, x):
            if position in relaxed and _relaxable(x):
                return ("relaxed", type(x).__name__)
            if id(x) in objects and _is_object(x):
                held = relaxed_objects.get(id(x), ())
                return ("object", _Identity(type(x)), tuple(sorted(
                    (name, ("relaxed", type(v).__name__) if name in held and _relaxable(v) else fact(v, 1, False, 0))
                    for name, v in vars(x).items()
                )), tuple(sorted((name, fact(v, 1, False, 0)) for name, v in _class_reads(x, self._names).items())))
            return fact(x, 0, True, 0)

        parts = [top(("arg", i), a) for i, a in enumerate(args)]
        parts += [(k, top(("kwarg", k), v)) for k, v in sorted(kwargs.items())]
        if len(kwargs) > 1 and self.fn.__code__.co_flags & inspect.CO_VARKEYWORDS:
            # (Their order is what `**kwargs` iterates in.)
            parts.append(("keyword order", tuple(kwargs)))
        if owner is not None:
            parts.append(("self", top(("self",), owner)))
        # Which tensor arguments are one object (a staged graph's inputs are
        # distinct).
        seen = {}
        parts.append(("aliases", tuple(seen.setdefault(id(v), k) for k, v in enumerate(tensors))))
        # And which objects are one (a write through one is seen by both).
        seen = {}
        parts.append(("objects", tuple(seen.setdefault(id(o), k) for k, o in enumerate(listed))))
        # The globals: modules, functions and classes are facts by
        # identity, as themselves (they compare and hash by identity).
        parts.append(("globals", tuple((n, _global_fact(v, fact))
                                       for n, v in self._global_values())))
        held = getattr(listed, "pattern", None)
        if held is not None:
            parts.append(("held objects", held))
        return tuple(parts)

    def _global_values(self):
        """The Python values the code the function runs names as globals
        (and the attributes it names of modules and classes so read), and
        its closure variables, as `(label, value)`."""
        code = self.fn.__code__
        names = sorted(_global_reads(self._codes).items()) + sorted(_held(self._functions, self.fn).items())
        cells = zip(code.co_freevars, self.fn.__closure__ or ())
        names += [(n, c.cell_contents) for n, c in cells if _cell_filled(c)]
        return names

    def _discover(self, tracer):
        """Adds the code a traced call ran that `_codes` did not hold (a
        method, a function passed in). When that code reads globals, the
        facts of earlier calls were taken without them: they are dropped,
        and the call's trace with them, so profiling starts again with
        facts that cover it. Returns whether it did."""
        new = {c: g for c, g in tracer.code_globals.items() if c not in self._codes}
        if not new:
            return False
        self._codes.update(new)
        # The functions of the new code, for their defaults and closures
        # (`_held`): found once, through the garbage collector.
        import gc

        known = {id(f) for f in self._functions}
        self._functions += [f for f in gc.get_referrers(*new)
                            if isinstance(f, types.FunctionType) and f.__code__ in new and id(f) not in known]
        names = _code_names(self._codes)
        grown, self._names = names != self._names, names
        if not grown and not _global_reads(new):
            return False
        self._facts.clear()
        self._numbers_seen.clear()
        self._counts["reprofiles"] += 1
        if self._counts["reprofiles"] > _MAX_REPROFILES:
            self._give_up_all(f"its calls keep running code not seen before ({len(self._codes)} code objects)")
            return True
        names = ", ".join(sorted({c.co_name for c in new}))
        self._note("profile again", f"the call ran {names}, whose reads of globals and class attributes "
                                    f"are facts from now on")
        return True

    def _reach_deeper(self, error=None):
        """A trace read a `jitc.Var` that is not one of the call's tensors
        (`_Unheld`), or rebound an attribute of an object that is not one of
        the call's objects: the first time, the objects and tensors held
        deeper (`_held_objects`, `_reach`) become the call's too,
        and profiling starts again (the trace is dropped). Returns whether
        it did."""
        if (error is not None and not isinstance(error, _Unheld)) or self._deep:
            return False
        self._deep = True
        self._facts.clear()
        self._numbers_seen.clear()
        self._counts["reprofiles"] += 1
        self._note("profile again", "it reads a jitc.Var, or rebinds an attribute, held deeper than an attribute of "
                                    "self or of an argument (self.layers[0].w) or in a global: the objects and "
                                    "tensors so held are the call's from now on")
        return True

    def _numbers(self, owner, args, kwargs, objects=None):
        """The call's Python numbers that could become graph inputs, by
        position: `("arg", i)`, `("kwarg", name)`, `("attr", label, name)`
        for an attribute of an object of the call (`objects`, its
        `_objects`, each by its first label: `self`, a parameter's name, or
        the path of an object held deeper once the function reaches them,
        whose attributes the code names, `self.bn.n`; a path, not an index,
        so that a position means the same in calls whose objects differ)."""
        found = {("arg", i): a for i, a in enumerate(args) if _relaxable(a)}
        found.update({("kwarg", k): v for k, v in kwargs.items() if _relaxable(v)})
        if objects is None:
            objects = self._objects(owner, args, kwargs)
        for o, label, names in _attribute_positions(objects, self._names):
            found.update({("attr", label, name): v for name, v in vars(o).items()
                          if _relaxable(v) and (names is None or name in names)})
        return found

    def _relaxed_numbers(self, owner, args, kwargs, objects=None):
        """The call's relaxed numbers, in the order a graph takes them."""
        if not self._relaxed:
            return []
        numbers = self._numbers(owner, args, kwargs, objects)
        return sorted(((p, v) for p, v in numbers.items() if p in self._relaxed), key=lambda pv: repr(pv[0]))

    def _changed_numbers(self, owner, args, kwargs, tensors, objects):
        """The positions of numbers that differ from the last call whose
        other facts were the same (and that may be relaxed)."""
        numbers = self._numbers(owner, args, kwargs, objects)
        if not numbers:
            return set()
        loose = self._key(owner, args, kwargs, tensors, objects, relaxed=set(numbers))
        seen = self._numbers_seen.get(loose)
        if seen is None and len(self._numbers_seen) >= 4 * self.max_facts:
            self._numbers_seen.clear()
        self._numbers_seen[loose] = numbers
        if seen is None:
            return set()
        changed = {p for p, v in numbers.items() if p in seen and not _same_number(seen[p], v)}
        return changed - self._pinned - self._relaxed

    def _relax(self, positions):
        self._relaxed |= positions
        self._counts["relaxations"] += len(positions)
        names = ", ".join(_position_name(p) for p in sorted(positions, key=repr))
        self._note("relax", f"{names} changed between calls: now an input of the staged graph")
        self._drop_stale_facts()

    def _unrelax(self, positions, why):
        self._relaxed -= positions
        self._pinned |= positions
        self._counts["relaxations_undone"] += len(positions)
        names = ", ".join(_position_name(p) for p in sorted(positions, key=repr))
        self._note("keep values", f"{names} stays a fact by value: {why}")
        self._drop_stale_facts()

    def _drop_stale_facts(self):
        """Facts keyed under another set of relaxed numbers are never
        matched again."""
        current = frozenset(self._relaxed)
        for key in [k for k, f in self._facts.items() if f.relaxed != current]:
            del self._facts[key]

    def _tensors(self, args, kwargs, objects, names=None):
        """The tensors a call passes, in input order: arguments (one level
        into sequences and dicts), then attributes of `self` and of object arguments
        (`objects`, the call's `_objects`). With a list `names`, it also
        appends, for each, None (an argument) or `(object index,
        attribute)`."""
        found = []
        for a in list(args) + [kwargs[k] for k in sorted(kwargs)]:
            if _is_var(a) or isinstance(a, np.ndarray):
                found.append(a)
            elif isinstance(a, (tuple, list)):
                found += [v for v in a if _is_var(v) or isinstance(v, np.ndarray)]
            elif type(a) is dict:
                found += [v for v in a.values() if _is_var(v)]
        if names is not None:
            names += [None] * len(found)
        named_only = getattr(objects, "named_only", ())
        for k, obj in enumerate(objects):
            attributes = [(n, v) for n, v in sorted(vars(obj).items()) if _is_var(v)]
            if k < len(named_only) and named_only[k]:
                # An object held more than one level down: the attributes
                # the code names, which are its facts.
                attributes = [(n, v) for n, v in attributes if n in self._names]
            found += [v for _, v in attributes]
            if names is not None:
                names += [(k, n) for n, _ in attributes]
        if self._deep:
            # Then those held deeper (met by `_held_objects`' walk) and
            # those of the globals, where the facts reach (so that equal
            # facts list them alike), each not listed above.
            held = list(getattr(objects, "held_tensors", ()))
            for _, v in self._global_values():
                _reach(v, None, 1, self._names, held.append, lambda *_: True)
            listed = {id(v) for v in found}
            extra = [v for v in held if id(v) not in listed]
            found += extra
            if names is not None:
                names += [None] * len(extra)
        return found

    def _state_binding(self, labels, names, writes, numbers=()):
        """The named state of a trace's graph (JANUS's `PyGetAttrOp` and
        `PySetAttrOp`): each input that is an attribute (`names`, from
        `_tensors` before the call; `numbers`, `(index, position)` of the
        relaxed numbers the graph takes after the tensors) is read with
        `meta.state_read` of `self.h` (or `<parameter>.h`, `self.layers[0].w`
        for an object held deeper: `labels`, the `_objects` labels), each output an
        attribute is rebound to (a `jitc.Var`, or a relaxed number, which
        Python gets back as a number) is written with `meta.state_write`.
        Returns `(reads, writes)` of `(index, name)`; a tensor that is also
        an argument stays an argument."""
        reads, seen = [], {}
        for native, name in names:
            if id(native) in seen:
                continue
            seen[id(native)] = len(seen)
            if name is not None:
                reads.append((seen[id(native)], f"{labels[name[0]]}.{name[1]}"))
        reads += [(index, f"{position[1]}.{position[2]}") for index, position in numbers if position[0] == "attr"]
        bound = [(how[1], f"{labels[k]}.{name}") for k, name, how in writes if how[0] == "out"]
        return reads, bound

    def _input_names(self, owner, args, kwargs):
        """`(native, name)` for each of the call's tensors now, as
        `_tensors` lists them (before the call rebinds any)."""
        names = []
        tensors = self._tensors(args, kwargs, self._objects(owner, args, kwargs), names)
        return [(t._v, n) for t, n in zip(tensors, names)]

    def _objects(self, owner, args, kwargs):
        """The objects whose attributes are facts and may be rebound: `self`,
        then object arguments, then object keyword arguments by name; and
        when the function reaches deeper (`_deep`), the objects they hold
        where the facts reach (`_held_objects`: a sub-layer
        `self.layers[0]`), each once. An
        `_Objects` list, with each one's label (`self`, an object
        argument's parameter name, `args[i]` past the named ones, a
        keyword, the path of an object held deeper)."""
        objects, labels = _Objects(), []
        if owner is not None:
            objects.append(owner)
            labels.append("self")
        parameters = self._parameters[owner is not None]
        for i, a in enumerate(args):
            if _is_object(a):
                objects.append(a)
                labels.append(parameters[i] if i < len(parameters) else f"args[{i}]")
        for k in sorted(kwargs):
            if _is_object(kwargs[k]):
                objects.append(kwargs[k])
                labels.append(k)
        objects.labels = labels
        objects.named_only = [False] * len(objects)
        if self._deep:
            found, objects.pattern, objects.held_tensors = _held_objects(objects, self._names)
            for obj, label, named_only in found:
                objects.append(obj)
                objects.labels.append(label)
                objects.named_only.append(named_only)
        return objects

    # -- tracing ---------------------------------------------------------------
    def _traced(self, owner, args, kwargs, tensors, known=()):
        """Runs the function imperatively, traced; returns its result and
        the trace (None when the call cannot be staged). `tensors` are the
        call's (`_tensors`)."""
        # The tensors, computed: a staged graph's inputs are data. (A look
        # of the call's own: a failure keeps writes pending.)
        pending = [t for t in tensors if not t.is_computed()]
        if pending:
            try:
                with _own_thread:
                    _jitc.fetch([t._v for t in pending], keep_writes=True)
            except _jitc.JitcError as e:
                # An argument that fails when computed: the call runs
                # plainly, so the error is the fetch's that needs it.
                self._note("not traced", f"an argument fails when computed ({e})")
                self._counts["imperative"] += 1
                return self._plain(owner, args, kwargs), None
        self._counts["traced"] += 1
        numbers = self._relaxed_numbers(owner, args, kwargs)
        if numbers:
            return self._traced_relaxed(owner, args, kwargs, tensors, numbers, known)
        names = self._input_names(owner, args, kwargs)
        run = self._first_run(owner, args, kwargs)
        if run is None:
            return self._plain(owner, args, kwargs), None
        objects, before, result, tracer = run
        outputs = []
        writes = self._writes(objects, before, outputs, tracer)
        structure = self._structure(result, outputs, tracer, tracer.preexisting)
        if tracer.reasons:
            if not (tracer.deeper and self._reach_deeper()):
                self._give_up_all(tracer.reasons[0])
            return result, None
        if self._discover(tracer):
            return result, None
        inputs = _unique_natives(tensors)
        named = _named_io(tracer, inputs, outputs, known)
        if tracer.pending_failed:
            self._note("not staged", tracer.pending_failed)
            return result, None
        try:
            trace = _Trace(tracer, inputs, outputs, structure, writes)
        except _Unstageable as e:
            if not self._reach_deeper(e):
                self._give_up_all(str(e))
            return result, None
        trace.state = self._state_binding(objects.labels, names, writes)
        _bind_named(trace, named)
        return result, trace

    def _first_run(self, owner, args, kwargs):
        """The function run traced on the call's own values: the objects
        the facts cover, their attributes before, the result and the tracer
        (with a reason when the call changed state a staged call would
        not). An exception the call raised is raised (`_raised`). None when
        the state cannot be compared: the function stays imperative, and
        the caller runs it plain."""
        objects = self._objects(owner, args, kwargs)
        before = [dict(vars(o)) for o in objects]
        preexisting = set()
        _stack('containers').append(preexisting)
        try:
            state = self._state(objects, args, kwargs)
        except _Unstageable as e:
            self._give_up_all(str(e))
            return None
        finally:
            _stack('containers').pop()
        result, tracer, error = self._run_traced(owner, args, kwargs, objects)
        # (The lists and dicts the state held before the call.)
        tracer.preexisting = preexisting
        if error is not None:
            self._raised(error)
        why = self._untracked(objects, before, state, args, kwargs)
        if why is not None:
            tracer.reasons.append(why)
            # (A rebound attribute of an object held deeper, perhaps.)
            tracer.deeper = why.startswith("it changes what the attribute")
        return objects, before, result, tracer

    def _state(self, objects, args, kwargs):
        _stack('names').append(self._names)
        # An object of `objects` held by another is compared on its own
        # (`_marker` gives its identity there).
        _stack('tracked').append(frozenset(id(o) for o in objects))
        try:
            return self._state_unnamed(objects, args, kwargs)
        except (TypeError, ValueError, RecursionError) as e:
            raise _Unstageable(f"its state cannot be compared between calls ({type(e).__name__}: {e})") from e
        finally:
            _stack('names').pop()
            _stack('tracked').pop()

    def _held_values(self):
        """What the code the function runs can read beyond its arguments,
        by label: the globals (and attributes of modules, classes and
        functions so read) and what the functions hold (`_held`)."""
        named = _global_reads(self._codes)
        named.update(_held(self._functions, self.fn))
        return named

    def _state_unnamed(self, objects, args, kwargs):
        """What a call could change besides rebinding the covered objects'
        attributes: what those attributes hold, the arguments' contents,
        and the globals and closure variables the function names."""
        code = self.fn.__code__
        named = self._held_values()
        cells = zip(code.co_freevars, self.fn.__closure__ or ())
        named.update({f"closure {n}": c.cell_contents for n, c in cells
                      if _cell_filled(c) and not isinstance(c.cell_contents, (Function, _Bound, types.FunctionType))})
        # Objects among the arguments are covered by the attributes' part.
        plain_args = tuple(a for a in args if not _is_object(a))
        plain_kwargs = {k: v for k, v in sorted(kwargs.items()) if not _is_object(v)}
        return (
            [{k: _marker(v, 1) for k, v in vars(o).items()} for o in objects],
            _marker(plain_args, 1), _marker(plain_kwargs, 1),
            {k: _marker(v, 1) for k, v in named.items()},
            [{k: _marker(v, 1) for k, v in _class_reads(o, self._names).items()} for o in objects],
        )

    def _untracked(self, objects, before, state, args, kwargs):
        """What the call changed that a staged graph would not (None when
        nothing): the contents of an attribute it did not rebind, of an
        argument, or a global or closure variable."""
        try:
            after = self._state(objects, args, kwargs)
        except _Unstageable as e:
            return str(e)
        for obj, old, held, now in zip(objects, before, state[0], after[0]):
            for name, value in vars(obj).items():
                if name in old and old[name] is value and held.get(name) != now.get(name):
                    return f"it changes what the attribute {name} holds (state a staged call would not change)"
        if state[1] != after[1] or state[2] != after[2]:
            return "it changes the contents of an argument (state a staged call would not change)"
        for name in set(state[3]) | set(after[3]):
            if state[3].get(name) != after[3].get(name):
                return f"it changes the global or closure variable {name} (state a staged call would not change)"
        for old, now in zip(state[4], after[4]):
            for name in set(old) | set(now):
                if old.get(name) != now.get(name):
                    return f"it changes the class attribute {name} (state a staged call would not change)"
        return None

    def _traced_relaxed(self, owner, args, kwargs, tensors, numbers, known=()):
        """A traced call with relaxed numbers. The function runs first on
        the real numbers, traced: that run is the call's result, and if it
        cannot be staged (a side effect, a read into Python, state a
        staged call would not change) the function runs no second time.
        Otherwise the attributes are put back and it runs again, traced, on
        `_Number`s standing in for the numbers (so the trace takes them as
        inputs); then the first run's attributes are put back. The second
        trace is kept only when both runs agree (results, attributes and
        the ways their branches went, exactly), nothing read a relaxed
        number into Python, and no code the call ran inspects types
        (`_INTROSPECTION`); otherwise those numbers stay facts by value
        (`_unrelax`)."""
        from . import _Number

        names = self._input_names(owner, args, kwargs)
        run = self._first_run(owner, args, kwargs)
        if run is None:
            return self._plain(owner, args, kwargs), None
        objects, before, result, plain = run
        if plain.reasons:
            if not (plain.deeper and self._reach_deeper()):
                self._give_up_all(plain.reasons[0])
            return result, None
        if self._discover(plain):
            return result, None
        if plain.pending_failed:
            self._note("not staged", plain.pending_failed)
            return result, None
        finished = [dict(vars(o)) for o in objects]
        for o, old in zip(objects, before):
            vars(o).clear()
            vars(o).update(old)
        weak = {position: _Number.of(value) for position, value in numbers}
        traced_args = [weak.get(("arg", i), a) for i, a in enumerate(args)]
        traced_kwargs = {k: weak.get(("kwarg", k), v) for k, v in kwargs.items()}
        tracer = None
        try:
            by_label = dict(zip(reversed(objects.labels), reversed(objects)))
            for position, number in weak.items():
                if position[0] == "attr":
                    setattr(by_label[position[1]], position[2], number)
            # The named state as the first run found it.
            for name, before in plain.named_before.items():
                _jitc.write_state(name, before)
            start = [dict(vars(o)) for o in objects]
            state = self._state(objects, traced_args, traced_kwargs)
            traced, tracer, error = self._run_traced(owner, traced_args, traced_kwargs, objects)
            outputs, writes, structure = [], [], None
            if error is None:
                writes = self._writes(objects, start, outputs, tracer)
                structure = self._structure(traced, outputs, tracer, plain.preexisting)
            after = [dict(vars(o)) for o in objects]
            # (What the run changed that putting the objects' attributes
            # back does not undo: a run on the stand-ins that went another
            # way in Python than the real one, past every check above.)
            untracked = self._untracked(objects, start, state, traced_args, traced_kwargs)
        except _Unstageable as e:
            self._give_up_all(str(e))
            return result, None
        finally:
            for o, old in zip(objects, finished):
                vars(o).clear()
                vars(o).update(old)
            # And as the first run left it (the call's result).
            if tracer is not None:
                for name, before in tracer.named_before.items():
                    if name not in plain.named_before:
                        _jitc.write_state(name, before)
            for name, value in plain.named.items():
                _jitc.write_state(name, value)
        inspected = sorted({n for code in tracer.codes for n in code.co_names} & _INTROSPECTION)
        if error is not None:
            why = f"the call traced with it relaxed raised {type(error).__name__}: {error}"
        elif untracked is not None:
            why = f"the call traced with it relaxed did what the real one did not: {untracked}"
        elif tracer.relax_failures:
            why = tracer.relax_failures[0]
        elif inspected:
            why = f"the code the call runs inspects types ({inspected[0]})"
        elif [d for i, d in enumerate(tracer.decisions) if i not in tracer.number_decisions] != plain.decisions:
            why = "the call's branches go other ways when the number is relaxed"
        else:
            try:
                why = (_differs(traced, result, "the result") or _attributes_differ(objects, after)
                       or _named_differ(tracer, plain))
            except (_jitc.GuardFailed, _jitc.JitcError) as e:
                # The relaxed run cannot be computed for these numbers (a
                # guard of `_Number` failed): nothing to compare with.
                why = f"the relaxed run fails on this call ({e})"
        if why is not None:
            # The numbers relaxed since the last relaxed trace kept go back
            # to facts by value (a setting that changed once and is read
            # into Python, `range(self.cfg.reps)`, does not take a counter
            # that staged well with it); when there are none, all of them.
            positions = {p for p, _ in numbers}
            self._unrelax(positions - self._proven or positions, why)
            return result, None
        if tracer.reasons:
            self._give_up_all(tracer.reasons[0])
            return result, None
        natives = _unique_natives(tensors)
        inputs = natives + [n._v for n in weak.values()]
        named = _named_io(tracer, inputs, outputs, known)
        if tracer.pending_failed:
            self._note("not staged", tracer.pending_failed)
            return result, None
        try:
            trace = _Trace(tracer, inputs, outputs, structure, writes)
        except _Unstageable as e:
            if not self._reach_deeper(e):
                self._give_up_all(str(e))
            return result, None
        numbered = [(len(natives) + j, position) for j, position in enumerate(weak)]
        trace.state = self._state_binding(objects.labels, names, writes, numbered)
        _bind_named(trace, named)
        self._proven |= {p for p, _ in numbers}
        return result, trace

    def _run_traced(self, owner, args, kwargs, objects):
        """The function on `args`, traced: its result (or the exception it
        raised) and the tracer."""
        tracer = _Tracer()
        tracer.objects = {id(o) for o in objects}
        tracer.object_refs = list(objects)
        tracer.held = self._held_values
        previous_profile = sys.getprofile()
        _tracing.tracer = tracer
        sys.setprofile(tracer.profile)
        result, error = None, None
        _stack('names').append(self._names)
        try:
            result = self._plain(owner, args, kwargs)
        except Exception as e:
            error = e
        finally:
            _stack('names').pop()
            sys.setprofile(previous_profile)
            _tracing.tracer = None
            # (Only the run reads them: a trace kept holds neither the call's
            # objects nor this function, which would make a cycle that
            # keeps both, and the values its trace holds, until the garbage
            # collector runs.)
            tracer.held, tracer.object_refs = None, []
        return result, tracer, error

    def _writes(self, objects, before, outputs, tracer):
        """The attributes the traced call rebound (from `before`): a
        `jitc.Var` (or a relaxed number) is an output of the graph, an
        immutable Python value is set as it is."""
        writes = []
        for k, (obj, old) in enumerate(zip(objects, before)):
            current = vars(obj)
            for name in old:
                if name not in current:
                    tracer.reasons.append(f"it deletes the attribute {name}")
            for name, value in current.items():
                if name in old and old[name] is value:
                    continue
                if _is_var(value):
                    writes.append((k, name, ("out", len(outputs), getattr(value, "_kind", None))))
                    outputs.append(value._v)
                elif _immutable(value):
                    writes.append((k, name, ("value", value)))
                else:
                    tracer.reasons.append(
                        f"it sets the attribute {name} to a {type(value).__name__}, a mutable Python value"
                    )
        return writes

    def _structure(self, value, outputs, tracer, held=frozenset()):
        """How to rebuild the call's result `value` from the graph's
        `outputs` (`_rebuild`). Returning a list or dict the state held
        before the call (`held`: an argument, an attribute, a global, a
        default, as `_marker` met them) keeps the call imperative: a graph
        would return a copy, and which one it was is not a fact."""
        if id(value) in held and isinstance(value, (list, dict)):
            tracer.reasons.append(f"it returns a {type(value).__name__} that existed before the call (an argument, an "
                                  f"attribute, a global), which a graph would return a copy of")
            return ("value", None)
        kind = getattr(value, "_kind", None) if _is_var(value) else None
        if kind is not None:
            outputs.append(value._v)
            return ("number", kind, len(outputs) - 1)
        if _is_var(value):
            outputs.append(value._v)
            return ("out", len(outputs) - 1)
        kind = type(value)
        if kind in (tuple, list):
            return (kind.__name__, [self._structure(v, outputs, tracer, held) for v in value])
        if isinstance(value, tuple) and hasattr(kind, "_fields") and hasattr(kind, "_make"):
            # A named tuple (rebuilt with `_make`).
            return ("namedtuple", kind, [self._structure(v, outputs, tracer, held) for v in value])
        if kind in (dict, collections.OrderedDict) and all(_immutable(k) for k in value):
            return ("dict", kind, [(k, self._structure(v, outputs, tracer, held)) for k, v in value.items()])
        if isinstance(value, _SIMPLE):
            return ("value", value)
        tracer.reasons.append(f"it returns a {type(value).__name__}, which a graph cannot return")
        return ("value", None)

    def _raised(self, error):
        """A traced call raised: the exception is the imperative run's, and
        the call's outcome. Nothing is staged from it (a graph returns
        values, not exceptions); it is counted and logged, and raised. A
        `raise` under a tensor condition that the traces never took is a
        guard of the staged graph, so such calls land here (JANUS §4)."""
        self._counts["raised"] += 1
        self._note("raised", f"{type(error).__name__}: {error} (run imperatively; nothing staged from it)")
        raise error

    def _give_up_all(self, reason):
        if self._imperative is None:
            self._imperative = reason
            self._counts["give_ups"] += 1
            self._note("imperative", reason)

    def _note(self, event, reason):
        self._log.append((event, reason))
        if len(self._log) > _KEPT_EVENTS:
            self._dropped_events += len(self._log) - _KEPT_EVENTS
            del self._log[:-_KEPT_EVENTS]

    # -- staging -----------------------------------------------------------------
    def _stage(self, traces):
        """The traces staged: when they went different ways, as one merged
        graph (Terra: `meta-merge` shares what they share, and the ways
        they went are `scf.if`/`scf.index_switch` cases chosen in the graph); when
        that cannot be, as a trace tree (shared prefixes once, a branch
        chosen in Python where traces went both ways); a guard where they
        all went one way. Traces that cannot be merged at all (their ops
        differ where their decisions agree) leave the most recent alone.
        Only the traces that touched the same named state as the most
        recent, with the same types, are staged with it."""
        traces = [t for t in traces if t.named == traces[-1].named]
        variant = self._stage_traces(traces)
        variant.named = traces[-1].named
        return variant

    def _stage_traces(self, traces):
        if self.merge:
            try:
                looped = self._looped(traces)
            except Exception as e:  # noqa: BLE001 -- any failure: stage it another way
                self._note("no loop", f"the loop is not staged as an scf.while ({type(e).__name__}: {e})")
                looped = None
            if looped is not None:
                return looped
            if self.merge != "tree" and len({tuple(t.values.items()) for t in traces}) > 1:
                try:
                    return self._merged(traces)
                except (_Unmergeable, _Unstageable, _jitc.JitcError) as e:
                    self._note("tree", f"the traces do not merge into one graph ({e}); staged as a tree")
            try:
                return self._segment(traces, 0)
            except _Unmergeable:
                pass
        return self._segment(traces[-1:], 0)

    def _looped(self, traces):
        """The traces as one graph whose `while` loop on a tensor condition
        is an `scf.while` (AutoGraph), when the most recent trace that ran
        such a loop at least twice can be folded (`_Loop`) and every trace
        went the same ways outside the loop (those are guards). None when
        there is no such loop."""
        loops = [_Loop.of(t) for t in traces]
        if any(loop is False for loop in loops):
            # A trace ran a loop that does not fold: what the others show
            # may not hold for every trip count.
            return None
        found = [(t, loop) for t, loop in zip(traces, loops) if loop is not None]
        if not found:
            return None
        ref, loop = found[-1]
        outside = lambda t: [(site, v) for i, (site, v) in _decisions(t) if t.entries[i][4] != loop.site]  # noqa: E731
        if any(outside(t) != outside(ref) for t in traces):
            return None
        staged = loop.stage()
        leaf = _Segment(staged, [], [], 0)
        leaf.structure, leaf.writes, leaf.decisions = ref.structure, ref.writes, ref.tracer.decisions
        leaf.named_writes = ref.named_writes
        leaf.loop = loop.where
        return leaf

    def _merged(self, traces):
        """`traces` as one graph: each replayed whole, on the most recent
        trace's inputs, with its ops at their sites and its branches as
        decisions; `jitc_runtime::graph::stage_merged` merges them."""
        ref = traces[-1]
        for t in traces:
            if t.structure != ref.structure or t.writes != ref.writes or len(t.outputs) != len(ref.outputs):
                raise _Unmergeable("the traces return different things")
        staged_traces = []
        try:
            for t in traces:
                replay = _Replay(ref.inputs)
                effects = []
                for index, entry in enumerate(t.entries):
                    _jitc.set_site(entry[4])
                    if entry[0] == "call":
                        new = replay.call(index, entry[1], t.signature[index][1])
                        if entry[1] is _jitc.guard or entry[1] is _eager_guard:
                            effects.append(new)
                    else:
                        site, value = entry[3], entry[2]
                        condition = _condition(replay.value(t.signature[index][1]), True)
                        effects.append(_jitc.decision(condition, value, f"branch at {site} goes {value}"))
                # Every op the trace ran, also those whose values only
                # other paths read (`a` and `b` before `h = a if c else
                # b`), as Terra's traces hold them: so the traces agree
                # up to the branch (`meta-dce` drops what no path reads).
                ran = [v for key, v in replay.mapping.items() if key[0] != "in" and isinstance(v, _jitc.Var)]
                staged_traces.append(([replay.mapping[k] for k in t.outputs], effects + ran))
        finally:
            _jitc.set_site(None)
        staged = _jitc.stage_merged(list(ref.inputs), staged_traces, ref.state)
        leaf = _Segment(staged, [], [], 0)
        leaf.structure, leaf.writes, leaf.decisions = ref.structure, ref.writes, ref.tracer.decisions
        leaf.named_writes = ref.named_writes
        leaf.merged = len(traces)
        return leaf

    def _segment(self, group, start):
        ref = group[-1]
        index, split = start, None
        while index < len(ref.entries):
            if any(len(t.entries) <= index or t.signature[index] != ref.signature[index] for t in group):
                raise _Unmergeable()
            if index in ref.values and len({t.values[index] for t in group}) == 2:
                split = index
                break
            index += 1
        end = index + 1 if split is not None else index
        if split is None and any(
            len(t.entries) != end or t.outputs != ref.outputs or t.structure != ref.structure
            or t.writes != ref.writes for t in group
        ):
            raise _Unmergeable()
        # Values defined here that something after it reads (a value an
        # earlier piece defined is already out: `_serve` keeps them all).
        later = set()
        for t in group:
            for used in t.uses[end:]:
                later.update(used)
            later.update(t.outputs)
        defined_before = lambda k: k[0] != "in" and start <= k[0] < end  # noqa: E731
        live_out = sorted({k for k in later if defined_before(k)}, key=repr) if split is not None else []
        read_here = set()
        for used in ref.uses[start:end]:
            read_here.update(used)
        if split is None:
            read_here.update(ref.outputs)
        live_in = sorted({k for k in read_here if k[0] != "in" and k[0] < start}, key=repr)
        staged, guards = self._replay(ref, start, end, live_in, live_out, split)
        if split is None:
            leaf = _Segment(staged, live_in, live_out, guards)
            leaf.structure, leaf.writes, leaf.decisions = ref.structure, ref.writes, ref.tracer.decisions
            leaf.named_writes = ref.named_writes
            return leaf
        children = {}
        for way in (True, False):
            members = [t for t in group if t.values[split] == way]
            children[way] = self._segment(members, split + 1)
        return _Segment(staged, live_in, live_out, guards, ref.entries[split][3], children)

    def _replay(self, ref, start, end, live_in, live_out, split):
        """Records entries `start` to `end` of `ref` on fresh nodes and
        stages them: inputs are the function's and `live_in` (placeholders
        of their types), outputs `live_out`, then the branch condition or
        the function's outputs, then the guards (the decisions' other than
        `split`, and relaxed numbers' checks). Returns the staged graph and
        how many guards it outputs."""
        replay = _Replay(ref.inputs)
        placeholders = []
        for k in live_in:
            original = ref.native[k]
            from . import _TO_NUMPY
            dtype = np.dtype(_TO_NUMPY[original.dtype])
            zeros = np.zeros(original.shape, dtype=dtype)
            placeholder = _jitc.Var.from_bytes(zeros.tobytes(), list(original.shape), original.dtype)
            replay.mapping[k] = placeholder
            placeholders.append(placeholder)
        guard_vars = []
        condition = None
        for index in range(start, end):
            entry = ref.entries[index]
            signature = ref.signature[index]
            if entry[0] == "call":
                replay.call(index, entry[1], signature[1], guard_vars)
            else:
                var = replay.value(signature[1])
                site, value = entry[3], entry[2]
                if index == split:
                    condition = _condition(var, True)
                else:
                    guard_vars.append(_jitc.guard(_condition(var, value), f"branch at {site} goes {value}"))
        outputs = [replay.mapping[k] for k in live_out]
        outputs += [condition] if split is not None else [replay.mapping[k] for k in ref.outputs]
        # Attributes are read wherever a piece needs them; only the last
        # piece, which computes the outputs, writes them.
        reads, writes = ref.state
        writes = [(len(live_out) + k, name) for k, name in writes] if split is None else []
        return _jitc.stage(list(ref.inputs) + placeholders, outputs + guard_vars, (reads, writes)), len(guard_vars)

    def _serve(self, root, owner, args, kwargs, tensors, objects):
        Var, _Number = _package_types()
        unique = _unique_natives(tensors)
        unique += [_Number.of(v)._v for _, v in self._relaxed_numbers(owner, args, kwargs, objects)]
        unique += _named_inputs(root.named)
        pending = [v for v in unique if not v.is_computed()]
        if pending:
            try:
                # (A look at the inputs: a failure keeps writes pending.)
                _jitc.fetch(pending, keep_writes=True)
            except _jitc.JitcError as e:
                raise _PendingFailed() from e
        values = {}
        segment = root
        while True:
            results = segment.staged.call(unique + [values[k] for k in segment.live_in])
            for k, v in zip(segment.live_out, results):
                values[k] = v
            rest = results[len(segment.live_out):]
            if segment.children is None:
                break
            way = bool(np.frombuffer(rest[0].fetch_bytes(), dtype=np.bool_)[0])
            if way not in segment.children:
                raise _Diverged(f"branch at {segment.site} went {way}, which no trace took")
            segment = segment.children[way]
        trace_outputs = len(rest) - segment.guards
        outputs = [Var(v) for v in rest[:trace_outputs]]
        # Every value first, then the attributes: all or nothing.
        written = [(objects[k], name, _written(how, outputs)) for k, name, how in segment.writes]
        result = _rebuild(segment.structure, outputs)
        for obj, name, value in written:
            setattr(obj, name, value)
        for k, name in segment.named_writes:
            # (Computed, so committed at once, as the imperative call's
            # writes are by the fetch that computes them.)
            _jitc.write_state(name, outputs[k]._v)
        return result

    # -- reporting ---------------------------------------------------------------
    def stats(self):
        """Counts: calls, staged (served by a graph), traced (run
        imperatively while tracing), imperative (run without tracing),
        staged_graphs, restaged, fallbacks, give_ups, relaxations (Python
        numbers made graph inputs), relaxations_undone (numbers made facts
        by value again, since Python read them), reprofiles (profiling
        started again because a traced call ran code not seen before
        that reads globals or class attributes), raised (traced calls that
        raised an exception, which was the call's outcome)."""
        keys = ["calls", "staged", "traced", "imperative", "staged_graphs", "restaged", "fallbacks", "give_ups",
                "relaxations", "relaxations_undone", "reprofiles", "raised"]
        return {k: self._counts[k] for k in keys}

    def explain(self):
        """What the function is now and why: staged graphs per set of
        facts, fallbacks and give-ups with their reasons."""
        lines = [f"jitc.function {self.__name__}: {self.stats()}"]
        if self._imperative is not None:
            lines.append(f"  imperative: {self._imperative}")
        if self._relaxed:
            names = ", ".join(_position_name(p) for p in sorted(self._relaxed, key=repr))
            lines.append(f"  graph inputs (relaxed Python numbers): {names}")
        for k, facts in enumerate(self._facts.values()):
            if facts.variant is not None:
                lines.append(f"  facts {k}: staged as {_describe_tree(facts.variant)}; fallbacks {facts.fallbacks}")
                for depth, segment in facts.variant.walk():
                    indent = "    " + "  " * depth
                    what = (f"branch at {segment.site} (both ways traced)" if segment.children
                            else "end")
                    lines.append(f"{indent}piece: {segment.staged.kernels} kernels, {segment.guards} guards, "
                                 f"then {what}")
                    reads, writes = segment.staged.state
                    if reads or writes:
                        lines.append(f"{indent}  state: reads {', '.join(sorted(reads)) or 'nothing'}; "
                                     f"writes {', '.join(sorted(writes)) or 'nothing'}")
                    if segment.children is None:
                        for (site, value), times in _runs(segment.decisions):
                            lines.append(f"{indent}  path: branch at {site} goes {value}{times}")
            elif facts.given_up is not None:
                lines.append(f"  facts {k}: imperative after {facts.given_up}")
            else:
                lines.append(f"  facts {k}: profiling ({facts.traced} of {self.profile} traced calls)")
        # Every event kept (the last `_KEPT_EVENTS`), a repeated one once
        # with its count.
        if self._dropped_events:
            lines.append(f"  ({self._dropped_events} earlier events not kept)")
        for (event, reason), times in _runs(self._log):
            lines.append(f"  {event}: {reason}{times}")
        return "\n".join(lines)

    def graphs(self):
        """The staged graphs, each a module in the textual contract (the
        text `jitc opt` and `jitc run` read), as compiled: traces merged,
        what no path reads dropped, before fusion; attributes are `meta.state_read`s and
        `meta.state_write`s of `self.<name>` (or `<parameter>.<name>`).
        One per piece of each set of facts' staged tree, in `explain`'s
        order."""
        return [segment.staged.text for facts in self._facts.values() if facts.variant is not None
                for _, segment in facts.variant.walk()]

    def __repr__(self):
        return f"<jitc.function {self.__name__}>"


class _Unstageable(Exception):
    pass


class _Unheld(_Unstageable):
    """A trace read a `jitc.Var` that is not one of the call's tensors."""


# Where the traced function is called from: the walk up from a call stops
# there.
_PLAIN_CODE = Function._plain.__code__


class _Bound:
    """A `jitc.function` method bound to an object."""

    def __init__(self, function, owner):
        self._function = function
        self._owner = owner

    def __call__(self, *args, **kwargs):
        with _own_thread:
            return self._function._invoke(self._owner, args, kwargs)

    def stats(self):
        return self._function.stats()

    def explain(self):
        return self._function.explain()

    def graphs(self):
        return self._function.graphs()


def _runs(items):
    """Each run of equal items once, with " (N times in a row)" when N > 1."""
    for item, group in itertools.groupby(items):
        count = sum(1 for _ in group)
        yield item, f" ({count} times in a row)" if count > 1 else ""


class _Objects(list):
    """`Function._objects`: the call's objects, with `labels` (each one's
    name in state names: `self`, `self.layers[0]`) and `named_only`
    (whether only the attributes the code names are its facts)."""

    labels = ()
    named_only = ()
    # (`_held_objects`'s pattern and tensors: None when the call reaches no
    # deeper.)
    pattern = None
    held_tensors = ()
    _labelled = None

    def labelled(self):
        """The index of each object once (its first), whose label no other
        object of the call has: a path must name one object. Worked out
        once per call (the facts and the served graph's inputs both ask)."""
        if self._labelled is None:
            firsts, seen = [], set()
            for k, o in enumerate(self):
                if id(o) not in seen:
                    seen.add(id(o))
                    firsts.append(k)
            counts = Counter(self.labels[k] for k in firsts)
            self._labelled = [k for k in firsts if counts[self.labels[k]] == 1]
        return self._labelled


def _reach(value, label, depth, names, on_var, on_object, level=0):
    """Walks `value` (a value at `depth`, as `_fact` counts it) where its
    facts reach, in the facts' order: through tuples, lists, deques, dicts
    and objects' attributes (all of them at depth 1 or less, deeper those
    the code `names`); not through sets, functions, classes, modules or
    `__slots__`. Calls `on_var(v)` for each `jitc.Var`, and
    `on_object(obj, label, depth)` for each object, which says whether to
    go on into its attributes. `label` names `value` (`self.layers`);
    None: no labels are made."""
    if level > _MAX_FACT_DEPTH or type(value) in _EXACT_SIMPLE:
        return
    if _is_var(value):
        on_var(value)
    elif isinstance(value, (np.ndarray, np.generic, _SIMPLE)):
        return
    elif isinstance(value, (tuple, list, collections.deque)):
        for i, v in enumerate(value):
            _reach(v, None if label is None else f"{label}[{i}]", depth, names, on_var, on_object, level + 1)
    elif isinstance(value, dict):
        for k, v in value.items():
            _reach(v, None if label is None else f"{label}[{k!r}]", depth, names, on_var, on_object, level + 1)
    elif _is_object(value) and not isinstance(value, (Function, _Bound)) and _slots(value) is None:
        if depth <= 1:
            held = sorted(vars(value).items())
        elif depth <= _MAX_OBJECT_DEPTH and names:
            held = sorted((k, v) for k, v in vars(value).items() if k in names)
        else:
            return
        if on_object(value, label, depth):
            for k, v in held:
                _reach(v, None if label is None else f"{label}.{k}", depth + 1, names, on_var, on_object, level + 1)


def _held_objects(objects, names):
    """The objects that the attributes of `objects` (labelled by
    `objects.labels`) hold where the facts reach them (`_reach`), each
    once and not one of `objects`: `(object, label, named_only)`, in the
    facts' order; and the index (among `objects` and those) of each
    object met on the way, in order: which paths are one object, which
    the facts do not say; and the `jitc.Var`s met on the way, in order."""
    found, pattern, tensors = [], [], []
    index = {}
    for k, o in enumerate(objects):
        index.setdefault(id(o), k)

    def on_object(value, label, depth):
        met = index.get(id(value))
        pattern.append(len(objects) + len(found) if met is None else met)
        if met is not None:
            return False
        index[id(value)] = len(objects) + len(found)
        found.append((value, label, depth > 1))
        return True

    for obj, label in zip(list(objects), objects.labels):
        for k, v in sorted(vars(obj).items()):
            _reach(v, f"{label}.{k}", 1, names, tensors.append, on_object)
    return found, tuple(pattern), tensors


def _unique_natives(tensors):
    """The native values of `tensors`, each once, in order: a staged
    graph's inputs (a tensor passed twice is one input)."""
    natives, seen = [], set()
    for t in tensors:
        if id(t._v) not in seen:
            seen.add(id(t._v))
            natives.append(t._v)
    return natives


def _describe_tree(root):
    if getattr(root, "loop", None):
        return (f"one graph with the loop at {root.loop} as an scf.while (AutoGraph), "
                f"{root.staged.kernels} kernels")
    if root.merged:
        return (f"one graph merged from {root.merged} traces (Terra; scf.if/scf.index_switch where they went "
                f"different ways), {root.staged.kernels} kernels")
    segments = [s for _, s in root.walk()]
    branches = sum(1 for s in segments if s.children)
    return (f"{len(segments)} staged piece{'s' if len(segments) != 1 else ''}, {branches} "
            f"branch{'es' if branches != 1 else ''}, {sum(s.guards for s in segments)} guards, "
            f"{sum(s.staged.kernels for s in segments)} kernels")


_KEPT_TRACES = 8
# The events `explain` lists (each fallback, relaxation, restaging, give-up).
_KEPT_EVENTS = 100

# How deep `jitc.function` calls may nest (or recurse) inside a traced call
# before the function stays imperative.
_MAX_NESTING = 32
# How many times new code seen in a traced call may start profiling again.
_MAX_REPROFILES = 8


def _as_vars(args, kwargs):
    """NumPy array arguments (also inside tuples, lists and dicts) as
    `jitc.Var`s: a function sees the same types whether it runs
    imperatively or staged. A list or dict is converted in place, so that
    the function has the caller's own (`self.d = d`, `d is self.d`, a
    change through either is seen through both); `_restore` puts the
    arrays back after the call. A tuple is made again (a named tuple from
    its fields). An array passed twice is one `jitc.Var`. Returns the
    arguments; why the call cannot be staged, or None (a subclass
    instance with attributes holding arrays is left as it is, and the
    call runs plainly); and what `_restore` needs, or None when nothing
    was converted in place."""
    from . import Var

    why, changed, made = [], [], {}

    def var(v):
        found = made.get(id(v))
        if found is None:
            # (The array too, so that its id is not reused while `made` is.)
            found = made[id(v)] = (v, Var(v))
        return found[1]

    def one(a):
        if isinstance(a, np.ndarray):
            return var(a)
        if isinstance(a, (tuple, list)) and any(isinstance(v, np.ndarray) for v in a):
            if getattr(a, "__dict__", None):
                why.append(f"a {type(a).__name__} argument with attributes holds NumPy arrays (pass jitc.Vars)")
                return a
            if isinstance(a, list):
                # (All made before any is written: `Var` may raise.)
                for i, v in [(i, var(v)) for i, v in enumerate(a) if isinstance(v, np.ndarray)]:
                    a[i] = v
                changed.append(a)
                return a
            items = [var(v) if isinstance(v, np.ndarray) else v for v in a]
            return type(a)._make(items) if hasattr(type(a), "_make") else type(a)(items)
        if type(a) is dict and any(isinstance(v, np.ndarray) for v in a.values()):
            for k, v in [(k, var(v)) for k, v in a.items() if isinstance(v, np.ndarray)]:
                a[k] = v
            changed.append(a)
        return a

    try:
        converted = [one(a) for a in args], {k: one(v) for k, v in kwargs.items()}
    except BaseException:
        # (An array jitc has no type for: the caller's containers as they
        # were.)
        _restore((changed, made))
        raise
    return converted[0], converted[1], (why[0] if why else None), ((changed, made) if changed else None)


def _restore(converted):
    """Puts the caller's arrays back into the lists and dicts `_as_vars`
    converted in place (`converted`): an item that is still the
    `jitc.Var` made of an array is that array again, wherever the call
    moved it among them; what else the call did to them stays done."""
    changed, made = converted
    back = {id(v): array for array, v in made.values()}
    for container in changed:
        if isinstance(container, dict):
            for k, v in container.items():
                if id(v) in back:
                    container[k] = back[id(v)]
        else:
            for i, v in enumerate(container):
                if id(v) in back:
                    container[i] = back[id(v)]


class _Replay:
    """Replays a trace's entries onto fresh nodes: `mapping` holds the
    native value of each key (`("in", k)` the k-th of `inputs`, `(entry,
    k)` a replayed result)."""

    def __init__(self, inputs):
        self.mapping = dict(zip([("in", k) for k in range(len(inputs))], inputs))

    def value(self, a):
        """An entry's described argument (`("v", key)` for a value, tuples
        of them for a list) as native values."""
        if isinstance(a, tuple) and len(a) == 2 and a[0] == "v":
            return self.mapping[a[1]]
        if isinstance(a, tuple):
            return [self.value(v) for v in a]
        return a

    def call(self, index, native, described, effects=None):
        """Calls `native` (entry `index`) on `described` arguments and
        records its results; returns what it returned. A relaxed number's
        check (`_eager_guard`) is also appended to `effects`: staged
        graphs keep it where nothing reads its value."""
        new = native(*[self.value(a) for a in described])
        for k, r in enumerate(new if isinstance(new, list) else [new]):
            self.mapping[(index, k)] = r
        if effects is not None and native is _eager_guard:
            effects.append(new)
        return new


def _fact_names(owner, args, kwargs):
    """The names of the parts of `Function._key`'s facts, in order."""
    names = [f"argument {k}" for k in range(len(args))]
    names += [f"keyword argument {k}" for k in sorted(kwargs)]
    if owner is not None:
        names.append("the attributes of self")
    return names + ["which arguments are one tensor", "which arguments are one object",
                    "the globals or closure variables it reads"]


def _changed(old, new, names):
    """What differs between two sets of facts (`Function._key`), in words."""
    if len(old) != len(new):
        return "the number of arguments"
    changed = [name for a, b, name in zip(old, new, names) if a != b]
    return ", ".join(changed) if changed else "the facts"


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


def _python_number(var, kind):
    """A relaxed number's value, computed, as the Python kind it had."""
    from . import _TO_NUMPY

    native = var._v
    value = np.frombuffer(native.fetch_bytes(), dtype=_TO_NUMPY[native.dtype]).reshape(-1)[0].item()
    return {"bool": bool, "int": int, "float": float}[kind](value)


def _written(how, outputs):
    """The value a staged call sets an attribute to (`_Function._writes`)."""
    if how[0] == "value":
        return how[1]
    _, index, kind = how
    return outputs[index] if kind is None else _python_number(outputs[index], kind)


def _differs(traced, plain, what):
    """Why the traced call's `traced` differs from the imperative run's
    `plain` (None when they agree): a relaxed number's run and the real
    one's."""
    if traced is plain:
        return None
    kind = getattr(traced, "_kind", None) if _is_var(traced) else None
    if kind is not None:
        if type(plain).__name__ != kind:
            return f"{what} is a {type(plain).__name__}, but a {kind} when the number is relaxed"
        value = _python_number(traced, kind)
        if kind == "float" and (value == plain or (value != value and plain != plain)):
            return None
        return None if value == plain else f"{what} is {plain!r}, but {value!r} when the number is relaxed"
    if _is_var(traced):
        if not _is_var(plain) or traced.shape != plain.shape or traced.dtype != plain.dtype:
            return f"{what} is not the same kind of tensor when the number is relaxed"
        a, b = traced.numpy(), plain.numpy()
        same = np.array_equal(a, b, equal_nan=a.dtype.kind == "f")
        return None if same else f"{what} has other values when the number is relaxed"
    if isinstance(traced, (tuple, list)):
        if type(traced) is not type(plain) or len(traced) != len(plain):
            return f"{what} has another structure when the number is relaxed"
        for k, (a, b) in enumerate(zip(traced, plain)):
            why = _differs(a, b, f"{what}[{k}]")
            if why is not None:
                return why
        return None
    if isinstance(traced, dict):
        if type(traced) is not type(plain) or list(traced) != list(plain):
            return f"{what} has another structure when the number is relaxed"
        for k in traced:
            why = _differs(traced[k], plain[k], f"{what}[{k!r}]")
            if why is not None:
                return why
        return None
    try:
        return None if traced is plain or traced == plain else f"{what} differs when the number is relaxed"
    except Exception:
        return f"{what} cannot be compared"


def _attributes_differ(objects, after):
    """Why the attributes the traced run left (`after`) differ from the
    imperative run's, or None."""
    for obj, traced in zip(objects, after):
        now = vars(obj)
        if set(now) != set(traced):
            return f"the attributes of a {type(obj).__name__} differ when the number is relaxed"
        for name, value in traced.items():
            why = _differs(value, now[name], f"the attribute {name}")
            if why is not None:
                return why
    return None


def _named_inputs(named):
    """The named state a staged call takes (`_named_io`'s types), now;
    `_Diverged` (the call runs imperatively) when a piece has another
    type than when it was traced."""
    current = []
    for name, shape, dtype in named:
        value = _jitc.read_state(name)
        if tuple(value.shape) != shape or value.dtype != dtype:
            raise _Diverged(
                f"the state '{name}' is {_type_text(value.shape, value.dtype)}, and the graph was staged "
                f"for {_type_text(shape, dtype)}"
            )
        current.append(value)
    return current


def _type_text(shape, dtype):
    return f"tensor<{''.join(f'{d}x' for d in shape)}{dtype}>"


def _named_differ(traced, plain):
    """Why the named state the traced run left differs from what the
    imperative run left (tracers `traced` and `plain`), or None."""
    from . import Var

    if set(traced.named) != set(plain.named):
        return "the call touches other named state when the number is relaxed"
    for name, value in traced.named.items():
        why = _differs(Var(value), Var(plain.named[name]), f"the state '{name}'")
        if why is not None:
            return why
    return None


def _named_io(tracer, inputs, outputs, known):
    """The named state a traced call touched (and the names in `known`,
    those earlier traces with its facts touched, so that traces that took
    other paths take and give the same values), by name, as graph inputs
    and outputs: appends to `inputs` each one's value before the call, and
    to `outputs` its value after. Returns `(reads, writes, named)`: the
    `(index, name)` of each for the state binding, and the names with
    their types (what the graph takes)."""
    names = sorted(set(tracer.named_before) | set(known))
    for name in names:
        if name not in tracer.named_before:
            tracer._touch(name)
    reads = [(len(inputs) + j, name) for j, name in enumerate(names)]
    writes = [(len(outputs) + j, name) for j, name in enumerate(names)]
    inputs += [tracer.named_before[name] for name in names]
    outputs += [tracer.named[name] for name in names]
    types = tuple((name, tuple(tracer.named_before[name].shape), tracer.named_before[name].dtype)
                  for name in names)
    return reads, writes, types


def _bind_named(trace, named):
    """Adds the named state of `_named_io` to `trace`'s state binding, as
    `jitc:<name>` (which no attribute's path can be)."""
    reads, writes, trace.named = named
    trace.named_writes = writes
    trace.state = (trace.state[0] + [(k, f"jitc:{n}") for k, n in reads],
                   trace.state[1] + [(k, f"jitc:{n}") for k, n in writes])


def _position_name(position):
    """A relaxable number's position (`Function._numbers`), in words."""
    if position[0] == "arg":
        return f"argument {position[1]}"
    if position[0] == "kwarg":
        return f"keyword argument {position[1]}"
    _, label, name = position
    return f"{label}.{name}"


def _rebuild(structure, outputs):
    """A served call's result, from `structure` (`Function._structure`)."""
    kind = structure[0]
    if kind == "out":
        return outputs[structure[1]]
    if kind == "number":
        return _python_number(outputs[structure[2]], structure[1])
    if kind == "value":
        return structure[1]
    if kind == "namedtuple":
        return structure[1]._make(_rebuild(s, outputs) for s in structure[2])
    if kind == "dict":
        return structure[1]((k, _rebuild(s, outputs)) for k, s in structure[2])
    items = [_rebuild(s, outputs) for s in structure[1]]
    return tuple(items) if kind == "tuple" else items


def function(fn=None, *, profile=3, max_fallbacks=3, merge=True, max_facts=16):
    """Makes `fn` a speculative, staged function (see `jitc._function`'s
    documentation): `@jitc.function` or `@jitc.function(profile=2)`.
    `profile`: traced calls before staging; `max_fallbacks`: fallbacks
    before a set of facts stays imperative; `merge=False` stages only the
    most recent trace (JANUS's single speculated path) instead of merging
    the traces kept (Terra); `max_facts`: distinct sets of facts (shapes,
    Python values) before the function stays imperative, saying which fact
    kept changing. `merge="tree"` merges traces as a tree only (a branch
    both of whose ways were traced chooses between staged pieces in
    Python), for comparison with the one merged graph."""
    options = dict(profile=profile, max_fallbacks=max_fallbacks, merge=merge, max_facts=max_facts)
    if fn is None:
        return lambda f: Function(f, **options)
    return Function(fn, **options)
