"""Optimizers written with meta-operators.

Parameters live in jitc's named state (``jitc.set_state``), and so does an
optimizer's own state (momentum, Adam's moments). A step records the new
value of each of them as a deferred write (``jitc.write_state``): the
fetch that computes them commits them all, and a fetch that fails commits
none (JANUS's all-or-nothing update).

    opt = jitc.optim.SGD({"w": w0, "b": b0}, lr=0.1, momentum=0.9)
    for x, y in batches:
        w, b = opt.parameters()         # the state as the step sees it
        loss = jitc.cross_entropy(x @ w + b, y)
        opt.step(loss)                  # gradients and updates, recorded
        print(loss.item())              # one fetch: forward, backward, update

The learning rate is state of the optimizer's own (`opt.lr_name`; set
`opt.lr` between steps for a schedule), other hyperparameters enter as
data, and Adam's step count is state, so every step reuses one
compilation, and a step staged with `jitc.function` serves every later
step, whatever the schedule.

Optimizer state belongs to the parameters: each parameter's slots
(`<name>.momentum`, `<name>.adam_m`, `<name>.adam_v`, `<name>.adam_step`),
and the rate of each list of parameters (`opt.lr_name`: `<first>.lr`, or
`<first>.lr.2`, ... when that name is another list's rate or other
state). An optimizer made again over the same parameters resumes them
(and so has the same names, and a staged step the same facts); two
optimizers alive over the same list share them.
"""

import numpy as _np

from . import _jitc


# The parameters whose learning rate each rate's state is, by its name:
# a rate, like a slot, belongs to the parameters (the same list of names
# always has the same rate's name, so an optimizer made again over them
# resumes it, and a step staged with `jitc.function` keeps its facts).
_RATES = {}


def _rate_name(names):
    """`<first>.lr`, or `<first>.lr.2`, `.lr.3`, ...: the first name that
    is the rate of exactly these parameters, or is free (neither another
    list's rate nor other state, such as a parameter's value)."""
    base = f"{names[0]}.lr"
    name, k = base, 1
    while True:
        owner = _RATES.get(name)
        if owner == names or (owner is None and _jitc.get_state(name) is None):
            return name
        k += 1
        name = f"{base}.{k}"


class Optimizer:
    """What SGD and Adam share: the parameters by name, and a step that
    differentiates the loss with respect to them."""

    # The suffixes of each parameter's own state (`<name>.<suffix>`).
    _slot_suffixes = ()

    def __init__(self, params, lr):
        from . import JitcError, set_state

        names = [str(n) for n in params]
        if not names:
            raise JitcError("an optimizer needs at least one parameter")
        # Every name checked before any state is set.
        for name in names:
            if name in _RATES:
                raise JitcError(f"the parameter '{name}' is the learning rate of the optimizers over "
                                f"{list(_RATES[name])}: rename it")
            for suffix in self._slot_suffixes:
                if f"{name}.{suffix}" in names:
                    raise JitcError(f"the parameter '{name}.{suffix}' has the name of the {suffix} state of "
                                    f"the parameter '{name}': rename one of them")
            if not isinstance(params, dict) and _jitc.get_state(name) is None:
                raise JitcError(
                    f"there is no state '{name}': give the parameters as a dict of "
                    "initial values, or set them first with jitc.set_state"
                )
        if isinstance(params, dict):
            for name, value in params.items():
                set_state(name, value)
        self.names = names
        # The learning rate is state too, an f64 scalar of these
        # parameters': a schedule that sets it between steps changes no
        # Python value a step staged with `jitc.function` depends on.
        self.lr_name = _rate_name(tuple(names))
        _RATES[self.lr_name] = tuple(names)
        self.lr = lr
        self._params = None

    @property
    def lr(self):
        """The learning rate (committed), the state `opt.lr_name`. A step
        staged with `jitc.function` that reads it into Python stays
        imperative; `jitc.read_state(opt.lr_name)` is the rate as a value
        of the graph (and a branch on it is staged)."""
        from . import _TO_NUMPY
        from ._tracing import _reads

        _reads("opt.lr", "it reads the learning rate into Python (opt.lr), which is state: "
                         "jitc.read_state(opt.lr_name) is the rate in the graph")
        data, _, dtype = _jitc.get_state(self.lr_name)
        return float(_np.frombuffer(data, dtype=_TO_NUMPY[dtype])[0])

    @lr.setter
    def lr(self, value):
        """Sets the learning rate for the steps recorded from now on."""
        from . import set_state

        set_state(self.lr_name, _np.asarray(float(value), dtype=_np.float64))

    def parameters(self):
        """The parameters as the program sees them now (the last update
        recorded, or the committed value), in order. Build the loss from
        these: `step` differentiates with respect to them."""
        from . import read_state

        self._params = [read_state(n) for n in self.names]
        return list(self._params)

    def step(self, loss):
        """Records the gradients of `loss` with respect to the parameters of
        the last `parameters()` call and the update of every parameter (and
        of the optimizer's state) as deferred writes; nothing runs until the
        loss or an update is fetched (or `jitc.sync()`)."""
        from . import JitcError, grad

        if self._params is None:
            raise JitcError("call parameters() and build the loss from what it returns before step()")
        params, self._params = self._params, None
        gradients = grad(loss, params)
        self._update(params, gradients)

    def state(self):
        """The committed value of every parameter, by name, as arrays."""
        from . import get_state

        return {n: get_state(n) for n in self.names}

    def _scalar(self, value, like):
        """`value` as a rank-0 value of `like`'s type: data, so changing it
        does not recompile."""
        from . import Var

        return Var(_np.asarray(value, dtype=like.dtype))

    def _slots(self, suffix):
        """Optimizer state per parameter, `name.suffix`, zeros at first."""
        from . import get_state, set_state

        names = [f"{n}.{suffix}" for n in self.names]
        for param, slot in zip(self.names, names):
            if get_state(slot) is None:
                set_state(slot, _np.zeros_like(get_state(param)))
        return names

    def _update(self, params, gradients):
        raise NotImplementedError


class SGD(Optimizer):
    """Stochastic gradient descent, as PyTorch's: with `weight_decay`,
    ``g += weight_decay * p``; with `momentum`, ``v = momentum * v + g`` and
    ``p -= lr * v``; else ``p -= lr * g``."""

    def __init__(self, params, lr, momentum=0.0, weight_decay=0.0):
        self.momentum = float(momentum)
        self.weight_decay = float(weight_decay)
        self._slot_suffixes = ("momentum",) if self.momentum else ()
        super().__init__(params, lr)
        self._velocity = self._slots("momentum") if self.momentum else None

    def _update(self, params, gradients):
        from . import read_state, write_state

        for k, (name, p, g) in enumerate(zip(self.names, params, gradients)):
            if self.weight_decay:
                g = g + self._scalar(self.weight_decay, p) * p
            if self._velocity is not None:
                v = self._scalar(self.momentum, p) * read_state(self._velocity[k]) + g
                write_state(self._velocity[k], v)
                g = v
            write_state(name, p - read_state(self.lr_name).astype(p.dtype) * g)


class Adam(Optimizer):
    """Adam (Kingma and Ba), as PyTorch's: ``m = b1 m + (1 - b1) g``,
    ``v = b2 v + (1 - b2) g^2``, then
    ``p -= lr / (1 - b1^t) * m / (sqrt(v) / sqrt(1 - b2^t) + eps)``.

    Each parameter's step count `t` is state too (``name.adam_step``, an
    f64 scalar, as PyTorch's capturable Adam keeps it in a tensor), and the
    bias corrections are computed from it in f64 in the graph: no step
    changes a Python value, so a training step staged with
    `jitc.function` serves every later step."""

    _slot_suffixes = ("adam_m", "adam_v", "adam_step")

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8):
        from . import get_state, set_state

        super().__init__(params, lr)
        self.betas = (float(betas[0]), float(betas[1]))
        self.eps = float(eps)
        self._m = self._slots("adam_m")
        self._v = self._slots("adam_v")
        self._t = [f"{n}.adam_step" for n in self.names]
        for name in self._t:
            if get_state(name) is None:
                set_state(name, _np.zeros((), dtype=_np.float64))

    @property
    def steps(self):
        """The steps committed (the first parameter's count)."""
        from . import get_state

        return int(get_state(self._t[0]))

    def _update(self, params, gradients):
        from . import Var, read_state, unary, write_state

        b1, b2 = self.betas
        f64 = lambda value: Var(_np.asarray(value, dtype=_np.float64))  # noqa: E731
        for k, (name, p, g) in enumerate(zip(self.names, params, gradients)):
            t = read_state(self._t[k]) + f64(1.0)
            write_state(self._t[k], t)
            step_size = (read_state(self.lr_name) / (f64(1.0) - f64(b1) ** t)).astype(p.dtype)
            root_correction = (f64(1.0) / unary(f64(1.0) - f64(b2) ** t, "sqrt")).astype(p.dtype)
            s = lambda value: self._scalar(value, p)  # noqa: E731
            m = s(b1) * read_state(self._m[k]) + s(1.0 - b1) * g
            v = s(b2) * read_state(self._v[k]) + s(1.0 - b2) * (g * g)
            write_state(self._m[k], m)
            write_state(self._v[k], v)
            denominator = unary(v, "sqrt") * root_correction + s(self.eps)
            write_state(name, p - step_size * m / denominator)
