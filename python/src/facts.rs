//! The common cases of `jitc._function._fact` in Rust: what a staged graph
//! of `@jitc.function` assumes about a Python value, computed on every call
//! that a graph may serve (so its cost is a served call's overhead).
//!
//! [`Facts::fact`] gives exactly what the Python definition
//! (`_function._fact_py`) gives, the same tuples, for the values calls
//! usually hold: Python's simple values, `jitc.Var`s, tuples, lists, dicts
//! and plain objects (their attributes). Every other value (NumPy arrays
//! and scalars, sets, functions, methods, `functools.partial`s, modules,
//! classes, objects with `__slots__`, and nesting past the limit, which
//! raises) is handed to `_fact_py`, whose parts come back here. The Python
//! package's tests compare the two on a corpus of values.

use crate::PyVar;
use pyo3::{
    intern,
    prelude::*,
    types::{
        PyBool, PyBytes, PyCFunction, PyComplex, PyDict, PyFloat, PyFrozenSet, PyInt, PyList, PyModule,
        PyString, PyTuple,
    },
};
use std::collections::HashMap;

/// What `_fact` needs from the Python side, looked up once.
#[pyclass(frozen, name = "Facts", module = "jitc._jitc")]
pub struct Facts {
    /// `jitc.Var`.
    var: Py<PyAny>,
    /// `_SIMPLE`: the types whose values are facts by `repr`.
    simple: Py<PyTuple>,
    /// The types handed to `slow` wherever they occur.
    delegated: Py<PyTuple>,
    /// `(jitc.Function, jitc._Bound)`: objects that are not facts by their
    /// attributes.
    functions: Py<PyTuple>,
    /// `_Identity`.
    identity: Py<PyAny>,
    /// `_class_reads(obj, names)`.
    class_reads: Py<PyAny>,
    /// `_fact_py(x, depth, input, level)`.
    slow: Py<PyAny>,
    /// `_jitc_dtype_name`: NumPy's name of a jitc element type.
    dtype_name: Py<PyAny>,
    /// `_MAX_FACT_DEPTH`.
    max_level: usize,
    /// `_MAX_OBJECT_DEPTH`.
    max_object_depth: usize,
    /// The types of values that are not objects whose attributes are
    /// facts (`_is_object`): classes, functions, methods, modules.
    plain: Py<PyTuple>,
    /// `_BY_IDENTITY`: the exact types of globals that are facts as
    /// themselves.
    by_identity: Py<PyFrozenSet>,
}

/// Where one value's fact is taken: the call's tensors by native id
/// (`aliases`), the names its code uses (`names`), and the names of the
/// relaxed numbers of its objects by the object's id (`relaxed`,
/// `_relaxed_objects`: such a number is a fact by its type wherever the
/// facts meet the object).
struct Scope<'a, 'py> {
    aliases: Option<&'a Bound<'py, PyDict>>,
    names: &'a Bound<'py, PyFrozenSet>,
    relaxed: Option<&'a Bound<'py, PyDict>>,
}

impl<'py> Scope<'_, 'py> {
    /// The names of `x`'s relaxed numbers, if it is one of the call's
    /// objects with any (`relaxed`).
    fn relaxed_names(&self, x: &Bound<'py, PyAny>) -> PyResult<Option<Bound<'py, PyAny>>> {
        match self.relaxed {
            Some(map) => map.get_item(x.as_ptr() as usize),
            None => Ok(None),
        }
    }
}

#[pymethods]
impl Facts {
    #[new]
    #[allow(clippy::too_many_arguments)]
    fn new(
        var: Py<PyAny>,
        simple: Py<PyTuple>,
        delegated: Py<PyTuple>,
        functions: Py<PyTuple>,
        identity: Py<PyAny>,
        class_reads: Py<PyAny>,
        slow: Py<PyAny>,
        dtype_name: Py<PyAny>,
        max_level: usize,
        max_object_depth: usize,
        plain: Py<PyTuple>,
        by_identity: Py<PyFrozenSet>,
    ) -> Self {
        Self {
            var,
            simple,
            delegated,
            functions,
            identity,
            class_reads,
            slow,
            dtype_name,
            max_level,
            max_object_depth,
            plain,
            by_identity,
        }
    }

    /// `_fact(x, depth, input, level)` with the call's `aliases` (native id
    /// of each input tensor -> its position; None: none), `names` and
    /// `relaxed` (`_relaxed_objects`; None: none).
    #[pyo3(signature = (x, depth, input, level, aliases, names, relaxed=None))]
    #[allow(clippy::too_many_arguments)]
    fn fact<'py>(
        &self,
        x: &Bound<'py, PyAny>,
        depth: usize,
        input: bool,
        level: usize,
        aliases: Option<&Bound<'py, PyDict>>,
        names: &Bound<'py, PyFrozenSet>,
        relaxed: Option<&Bound<'py, PyDict>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        self.of(
            x,
            depth,
            input,
            level,
            &Scope {
                aliases,
                names,
                relaxed,
            },
        )
    }

    /// A call's facts (`Function._facts_of` defines them): each argument's
    /// (an input), each keyword argument's by name, `self`'s; which of the
    /// call's `tensors` are one, which of its objects (`listed`, the
    /// call's `_objects`) are one; and the `globals`, `(label, value)`
    /// pairs (`Function._global_values`). A number at a `relaxed` position
    /// (`("arg", i)`, `("kwarg", name)`, `("self",)`) is a fact by its type
    /// only, and so is a relaxed attribute of one of the call's objects
    /// wherever the facts meet it (`relaxed_objects`, `_relaxed_objects`
    /// of `listed` and `relaxed`: the object's id -> those names). With
    /// `keyword_order` (the function takes `**kwargs`), the keyword
    /// arguments' order is a fact.
    #[pyo3(signature = (args, kwargs, owner, tensors, listed, relaxed, aliases, names, globals, keyword_order, relaxed_objects=None))]
    #[allow(clippy::too_many_arguments)]
    fn key<'py>(
        &self,
        args: &Bound<'py, PyAny>,
        kwargs: &Bound<'py, PyDict>,
        owner: Option<&Bound<'py, PyAny>>,
        tensors: &Bound<'py, PyAny>,
        listed: &Bound<'py, PyAny>,
        relaxed: &Bound<'py, PyAny>,
        aliases: &Bound<'py, PyDict>,
        names: &Bound<'py, PyFrozenSet>,
        globals: &Bound<'py, PyAny>,
        keyword_order: bool,
        relaxed_objects: Option<&Bound<'py, PyDict>>,
    ) -> PyResult<Bound<'py, PyTuple>> {
        let py = args.py();
        let scope = Scope {
            aliases: Some(aliases),
            names,
            relaxed: relaxed_objects,
        };
        let (objects, object_firsts) = first_occurrences(listed)?;
        let call = Call {
            relaxed: if relaxed.is_truthy()? { Some(relaxed) } else { None },
            objects,
        };
        let mut parts = Vec::new();
        for (i, a) in args.try_iter()?.enumerate() {
            let a = a?;
            parts.push(self.top(
                &call,
                || (intern!(py, "arg"), i).into_pyobject(py).map(|t| t.into_any()),
                &a,
                &scope,
            )?);
        }
        let keys = PyList::new(py, kwargs.keys())?;
        keys.sort()?;
        for k in keys.iter() {
            let v = kwargs
                .get_item(&k)?
                .ok_or_else(|| pyo3::exceptions::PyKeyError::new_err(k.clone().unbind()))?;
            let position = || {
                (intern!(py, "kwarg"), k.clone())
                    .into_pyobject(py)
                    .map(|t| t.into_any())
            };
            let fact = self.top(&call, position, &v, &scope)?;
            parts.push(tuple(py, [k.clone(), fact])?);
        }
        if keyword_order && kwargs.len() > 1 {
            // (With `**kwargs`, their order is what it iterates in.)
            parts.push(tuple(
                py,
                [
                    intern!(py, "keyword order").clone().into_any(),
                    PyTuple::new(py, kwargs.keys())?.into_any(),
                ],
            )?);
        }
        if let Some(owner) = owner {
            let position = || (intern!(py, "self"),).into_pyobject(py).map(|t| t.into_any());
            let fact = self.top(&call, position, owner, &scope)?;
            parts.push(tuple(py, [intern!(py, "self").clone().into_any(), fact])?);
        }
        // Which tensor arguments are one object (a staged graph's inputs
        // are distinct), and which objects are one (a write through one is
        // seen by both).
        for (label, firsts) in [
            (intern!(py, "aliases"), first_occurrences(tensors)?.1),
            (intern!(py, "objects"), object_firsts),
        ] {
            parts.push(tuple(
                py,
                [label.clone().into_any(), PyTuple::new(py, firsts)?.into_any()],
            )?);
        }
        let by_identity = self.by_identity.bind(py);
        let mut held = Vec::new();
        for pair in globals.try_iter()? {
            let pair = pair?;
            let (label, value): (Bound<'py, PyAny>, Bound<'py, PyAny>) = pair.extract()?;
            let fact = match global_fact(by_identity, &value)? {
                Some(fact) => fact,
                None => self.of(&value, 1, false, 0, &scope)?,
            };
            held.push(tuple(py, [label, fact])?);
        }
        parts.push(tuple(
            py,
            [
                intern!(py, "globals").clone().into_any(),
                PyTuple::new(py, held)?.into_any(),
            ],
        )?);
        PyTuple::new(py, parts)
    }
}

/// What `Facts::key` holds for one call.
struct Call<'a, 'py> {
    /// The relaxed positions, when there are any.
    relaxed: Option<&'a Bound<'py, PyAny>>,
    /// The id of each of the call's objects -> its first index.
    objects: HashMap<usize, usize>,
}

/// For the items of `listed`: `id(o) -> the first index of o`, and each
/// item as the index of its first occurrence.
fn first_occurrences(listed: &Bound<'_, PyAny>) -> PyResult<(HashMap<usize, usize>, Vec<usize>)> {
    let mut found = HashMap::new();
    let mut firsts = Vec::new();
    for (k, o) in listed.try_iter()?.enumerate() {
        firsts.push(*found.entry(o?.as_ptr() as usize).or_insert(k));
    }
    Ok((found, firsts))
}

/// `_bound_builtin(x)`: a builtin
/// method bound to an object (`table.get`), which is a fact by what the
/// object holds, not as itself. Builtin functions are bound to their
/// module, or to nothing.
fn bound_builtin(x: &Bound<'_, PyAny>) -> PyResult<bool> {
    if !x.is_instance_of::<PyCFunction>() {
        return Ok(false);
    }
    let owner = x.getattr(intern!(x.py(), "__self__"))?;
    Ok(!owner.is_none() && !owner.is_instance_of::<PyModule>())
}

/// `_global_fact(x)` when the global `x` is a fact as itself
/// (`_by_identity`): itself, or a function with simple defaults as
/// `(x, x.__defaults__)`. None when it is not (a builtin bound method, a
/// function that holds state: a closure, keyword-only defaults,
/// attributes or a default that is not a simple value): its fact is
/// taken instead.
fn global_fact<'py>(
    by_identity: &Bound<'py, PyFrozenSet>,
    x: &Bound<'py, PyAny>,
) -> PyResult<Option<Bound<'py, PyAny>>> {
    let py = x.py();
    if !by_identity.contains(x.get_type())? || bound_builtin(x)? {
        return Ok(None);
    }
    if x.get_type().name()?.to_cow()? != "function" {
        return Ok(Some(x.clone()));
    }
    if x.getattr(intern!(py, "__closure__"))?.is_truthy()?
        || x.getattr(intern!(py, "__kwdefaults__"))?.is_truthy()?
        || x.getattr(intern!(py, "__dict__"))?.is_truthy()?
    {
        return Ok(None);
    }
    let defaults = x.getattr(intern!(py, "__defaults__"))?;
    if !defaults.is_truthy()? {
        return Ok(Some(x.clone()));
    }
    for d in defaults.try_iter()? {
        if !exact_simple(&d?) {
            return Ok(None);
        }
    }
    Ok(Some(tuple(py, [x.clone(), defaults])?))
}

/// `_relaxable(x)`: a float, or an int (not a bool) that fits in 64 bits.
fn relaxable(x: &Bound<'_, PyAny>) -> bool {
    x.is_exact_instance_of::<PyFloat>() || (x.is_exact_instance_of::<PyInt>() && x.extract::<i64>().is_ok())
}

/// `("relaxed", type(x).__name__)`.
fn relaxed_fact<'py>(x: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
    let py = x.py();
    tuple(
        py,
        [
            intern!(py, "relaxed").clone().into_any(),
            x.get_type().name()?.into_any(),
        ],
    )
}

impl Facts {
    /// The fact of an argument, keyword argument or `self` at `position`
    /// (made only when some position is relaxed).
    fn top<'py>(
        &self,
        call: &Call<'_, 'py>,
        position: impl FnOnce() -> PyResult<Bound<'py, PyAny>>,
        x: &Bound<'py, PyAny>,
        scope: &Scope<'_, 'py>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let py = x.py();
        if let Some(relaxed) = call.relaxed
            && relaxable(x)
            && relaxed.contains(position()?)?
        {
            return relaxed_fact(x);
        }
        let id = x.as_ptr() as usize;
        if !call.objects.contains_key(&id) || !self.is_object(x)? {
            return self.of(x, 0, true, 0, scope);
        }
        // An object of the call: its attributes (a relaxed number by its
        // type, `scope.relaxed`), and its class's that the code may read
        // through it.
        let held = scope.relaxed_names(x)?;
        let attributes = x.getattr(intern!(py, "__dict__"))?.cast_into::<PyDict>()?;
        let mut own = Vec::new();
        for (name, v) in attributes.iter() {
            let fact = match &held {
                Some(names) if relaxable(&v) && names.contains(&name)? => relaxed_fact(&v)?,
                _ => self.of(&v, 1, false, 0, scope)?,
            };
            own.push(tuple(py, [name, fact])?);
        }
        let own = PyList::new(py, own)?;
        own.sort()?;
        let reads = self
            .class_reads
            .bind(py)
            .call1((x, scope.names))?
            .cast_into::<PyDict>()?;
        let class = reads
            .iter()
            .map(|(name, v)| tuple(py, [name, self.of(&v, 1, false, 0, scope)?]))
            .collect::<PyResult<Vec<_>>>()?;
        let class = PyList::new(py, class)?;
        class.sort()?;
        let kind = self.identity.bind(py).call1((x.get_type(),))?;
        tuple(
            py,
            [
                intern!(py, "object").clone().into_any(),
                kind,
                own.to_tuple().into_any(),
                class.to_tuple().into_any(),
            ],
        )
    }

    /// `_is_object(x)`: an instance with attributes, not a class,
    /// function, method, module or `jitc.Var`.
    fn is_object(&self, x: &Bound<'_, PyAny>) -> PyResult<bool> {
        let py = x.py();
        Ok(x.hasattr(intern!(py, "__dict__"))?
            && !x.is_instance(self.plain.bind(py))?
            && !x.is_instance(self.var.bind(py))?)
    }

    fn of<'py>(
        &self,
        x: &Bound<'py, PyAny>,
        depth: usize,
        input: bool,
        level: usize,
        scope: &Scope<'_, 'py>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let py = x.py();
        if level > self.max_level {
            // `_fact_py` raises the error.
            return self.slow(x, depth, input, level);
        }
        if exact_simple(x) {
            return value(x);
        }
        if x.is_instance(self.var.bind(py))? {
            let native = x.getattr(intern!(py, "_v"))?;
            let position = match scope.aliases {
                Some(aliases) => aliases.get_item(native.as_ptr() as usize)?,
                None => None,
            };
            let (shape, dtype) = {
                let v = native.cast::<PyVar>()?.borrow();
                (v.0.shape().to_vec(), v.0.element().name())
            };
            let dtype = self.dtype_name.bind(py).call1((dtype,))?;
            return tuple(
                py,
                [
                    intern!(py, "tensor").clone().into_any(),
                    PyTuple::new(py, shape)?.into_any(),
                    dtype,
                    position.unwrap_or_else(|| py.None().into_bound(py)),
                ],
            );
        }
        if x.is_instance(self.delegated.bind(py))? {
            return self.slow(x, depth, input, level);
        }
        if x.is_instance(self.simple.bind(py))? {
            return value(x);
        }
        if (x.is_instance_of::<PyTuple>() || x.is_instance_of::<PyList>() || x.is_instance_of::<PyDict>())
            && !(x.is_exact_instance_of::<PyTuple>()
                || x.is_exact_instance_of::<PyList>()
                || x.is_exact_instance_of::<PyDict>())
        {
            // A subclass's instance (a named tuple, a list with
            // attributes): `_fact_py` gives its kind and attributes.
            return self.slow(x, depth, input, level);
        }
        if let Ok(items) = x.cast::<PyTuple>() {
            let input = input && level == 0;
            let facts = items
                .iter()
                .map(|v| self.of(&v, depth, input, level + 1, scope))
                .collect::<PyResult<Vec<_>>>()?;
            return sequence(x, facts);
        }
        if let Ok(items) = x.cast::<PyList>() {
            let input = input && level == 0;
            let facts = items
                .iter()
                .map(|v| self.of(&v, depth, input, level + 1, scope))
                .collect::<PyResult<Vec<_>>>()?;
            return sequence(x, facts);
        }
        if let Ok(dict) = x.cast::<PyDict>() {
            let facts = dict
                .iter()
                .map(|(k, v)| {
                    let key = self.key_fact(&k, depth, level, scope)?;
                    tuple(py, [key, self.of(&v, depth, false, level + 1, scope)?])
                })
                .collect::<PyResult<Vec<_>>>()?;
            return tuple(
                py,
                [
                    intern!(py, "dict").clone().into_any(),
                    PyTuple::new(py, facts)?.into_any(),
                ],
            );
        }
        // An object with a `__dict__` (the types with one that are not
        // objects, functions, classes and modules, are delegated above).
        let Ok(attributes) = x.getattr_opt(intern!(py, "__dict__")) else {
            return self.slow(x, depth, input, level);
        };
        let Some(attributes) = attributes else {
            // `__slots__`, or a value by identity.
            return self.slow(x, depth, input, level);
        };
        let Ok(attributes) = attributes.cast_into::<PyDict>() else {
            return self.slow(x, depth, input, level);
        };
        if x.is_instance(self.functions.bind(py))? {
            return identity_fact(self.identity.bind(py), x);
        }
        let named = !scope.names.is_empty();
        let held: Vec<(Bound<'py, PyAny>, Bound<'py, PyAny>)> = if depth <= 1 {
            attributes.iter().collect()
        } else if depth <= self.max_object_depth && named {
            // Deeper, the attributes the code names (`self.a.b.c`).
            attributes
                .iter()
                .filter_map(|(k, v)| match scope.names.contains(&k) {
                    Ok(true) => Some(Ok((k, v))),
                    Ok(false) => None,
                    Err(e) => Some(Err(e)),
                })
                .collect::<PyResult<_>>()?
        } else {
            return identity_fact(self.identity.bind(py), x);
        };
        // (A number of one of the call's objects at a relaxed position, met
        // deeper than `self` or an argument: `self.bn.n`.)
        let relaxed = scope.relaxed_names(x)?;
        let own = self.sorted_facts(py, held, depth, level, scope, relaxed.as_ref())?;
        let class = if named {
            let reads = self.class_reads.bind(py).call1((x, scope.names))?;
            let reads = reads.cast_into::<PyDict>()?;
            self.sorted_facts(py, reads.iter().collect(), depth, level, scope, None)?
        } else {
            PyTuple::empty(py).into_any()
        };
        let kind = self.identity.bind(py).call1((x.get_type(),))?;
        tuple(py, [intern!(py, "object").clone().into_any(), kind, own, class])
    }

    /// `_key_fact`: a dict key by `repr` if a simple value, an object by
    /// which object it is and its fact, a tuple item by item.
    fn key_fact<'py>(
        &self,
        k: &Bound<'py, PyAny>,
        depth: usize,
        level: usize,
        scope: &Scope<'_, 'py>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let py = k.py();
        if exact_simple(k) {
            return Ok(k.repr()?.into_any());
        }
        if self.is_object(k)? {
            return tuple(
                py,
                [
                    intern!(py, "key").clone().into_any(),
                    self.identity.bind(py).call1((k,))?,
                    self.of(k, depth, false, level + 1, scope)?,
                ],
            );
        }
        if k.is_exact_instance_of::<PyTuple>() && level <= self.max_level {
            let items = k
                .try_iter()?
                .map(|v| self.key_fact(&v?, depth, level + 1, scope))
                .collect::<PyResult<Vec<_>>>()?;
            return tuple(
                py,
                [
                    intern!(py, "key tuple").clone().into_any(),
                    PyTuple::new(py, items)?.into_any(),
                ],
            );
        }
        self.of(k, depth, false, level + 1, scope)
    }

    /// `tuple(sorted((k, fact(v)) for k, v in held))`, one level down; a
    /// number named in `relaxed` by its type.
    fn sorted_facts<'py>(
        &self,
        py: Python<'py>,
        held: Vec<(Bound<'py, PyAny>, Bound<'py, PyAny>)>,
        depth: usize,
        level: usize,
        scope: &Scope<'_, 'py>,
        relaxed: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let pairs = held
            .into_iter()
            .map(|(k, v)| {
                let fact = match relaxed {
                    Some(names) if relaxable(&v) && names.contains(&k)? => relaxed_fact(&v)?,
                    _ => self.of(&v, depth + 1, false, level + 1, scope)?,
                };
                tuple(py, [k, fact])
            })
            .collect::<PyResult<Vec<_>>>()?;
        let list = PyList::new(py, pairs)?;
        list.sort()?;
        Ok(list.to_tuple().into_any())
    }

    fn slow<'py>(
        &self,
        x: &Bound<'py, PyAny>,
        depth: usize,
        input: bool,
        level: usize,
    ) -> PyResult<Bound<'py, PyAny>> {
        self.slow.bind(x.py()).call1((x, depth, input, level))
    }
}

/// `type(x) in _EXACT_SIMPLE`.
fn exact_simple(x: &Bound<'_, PyAny>) -> bool {
    x.is_exact_instance_of::<PyBool>()
        || x.is_exact_instance_of::<PyInt>()
        || x.is_exact_instance_of::<PyFloat>()
        || x.is_exact_instance_of::<PyString>()
        || x.is_none()
        || x.is_exact_instance_of::<PyBytes>()
        || x.is_exact_instance_of::<PyComplex>()
}

fn tuple<'py, const N: usize>(py: Python<'py>, items: [Bound<'py, PyAny>; N]) -> PyResult<Bound<'py, PyAny>> {
    Ok(PyTuple::new(py, items)?.into_any())
}

/// `("value", type(x).__name__, repr(x))`.
fn value<'py>(x: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
    let py = x.py();
    tuple(
        py,
        [
            intern!(py, "value").clone().into_any(),
            x.get_type().name()?.into_any(),
            x.repr()?.into_any(),
        ],
    )
}

/// `("sequence", type(x).__name__, facts)` of a tuple or a list (a
/// subclass's instance is `_fact_py`'s).
fn sequence<'py>(x: &Bound<'py, PyAny>, facts: Vec<Bound<'py, PyAny>>) -> PyResult<Bound<'py, PyAny>> {
    let py = x.py();
    tuple(
        py,
        [
            intern!(py, "sequence").clone().into_any(),
            x.get_type().name()?.into_any(),
            PyTuple::new(py, facts)?.into_any(),
        ],
    )
}

/// `("identity", _Identity(x))`.
fn identity_fact<'py>(identity: &Bound<'py, PyAny>, x: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
    let py = x.py();
    tuple(
        py,
        [intern!(py, "identity").clone().into_any(), identity.call1((x,))?],
    )
}
