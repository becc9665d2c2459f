//! `jitc._jitc`, the native half of the Python package `jitc`: the lazy
//! graph of `jitc_runtime::graph` for Python. The Python half
//! (`python/jitc/`) wraps it in `jitc.Var` with NumPy conversion, Python
//! operators and the op library.
//!
//! Data crosses as bytes: a NumPy array's contiguous buffer in, a fetched
//! tensor's buffer out (the Python half makes arrays of them with
//! `numpy.frombuffer`), with the dtype as jitc's element type name (`f32`,
//! `f64`, `i32`, `i64`, `i1`). Every jitc error becomes a `jitc.JitcError`
//! carrying jitc's message (a constant's Python int past 64 bits is an
//! `OverflowError`). A graph belongs to the thread that made it
//! (`unsendable`).

mod facts;

use jitc_compiler::{CodegenOptions, MathMode};
use jitc_dialect::kinds::ElementType;
use jitc_interp::{Buffer, Tensor};
use jitc_runtime::graph::{self, Scalar, Var};
use pyo3::{
    create_exception,
    exceptions::{PyException, PyOverflowError},
    prelude::*,
    types::{PyByteArray, PyInt},
};

create_exception!(
    _jitc,
    JitcError,
    PyException,
    "An error jitc reported, with its message."
);

create_exception!(
    _jitc,
    GuardFailed,
    JitcError,
    "A guard (`jitc.guard`, or a speculation of `jitc.function`) was false: \
     the fetch computed nothing and committed no state write."
);

fn error(e: impl std::fmt::Display) -> PyErr {
    JitcError::new_err(e.to_string())
}

/// A fetch's error: `GuardFailed` for a failed guard, else `JitcError`.
fn run_error(e: jitc_runtime::Error) -> PyErr {
    match e {
        jitc_runtime::Error::Run(jitc_interp::Error::GuardFailed { .. }) => {
            GuardFailed::new_err(e.to_string())
        }
        other => error(other),
    }
}

fn element(name: &str) -> PyResult<ElementType> {
    ElementType::parse(name).ok_or_else(|| {
        error(format!(
            "unknown element type '{name}' (f32, f64, i32, i64 or i1)"
        ))
    })
}

/// A tensor holding a copy of `data`: the bytes of a C-contiguous array of
/// `shape` and element type `dtype`.
fn tensor(data: &[u8], shape: Vec<usize>, dtype: &str) -> PyResult<Tensor> {
    let element = element(dtype)?;
    let count = jitc_interp::tensor::checked_len(&shape).map_err(error)?;
    let width = element.byte_width();
    if data.len() != count * width {
        return Err(error(format!(
            "{} bytes do not hold a {shape:?} array of {dtype} ({} bytes)",
            data.len(),
            count * width
        )));
    }
    // (NumPy's booleans as it reads them: any byte but 0 is true.)
    let buffer = Buffer::try_from_bytes(element, data).map_err(error)?;
    Tensor::new(shape, buffer).ok_or_else(|| error("the data does not fit its shape"))
}

/// A value of the lazy graph.
#[pyclass(unsendable, name = "Var", module = "jitc._jitc")]
struct PyVar(Var);

#[pymethods]
impl PyVar {
    /// A value holding `data`: the bytes of a C-contiguous array of
    /// `shape` and element type `dtype`.
    #[staticmethod]
    fn from_bytes(data: &[u8], shape: Vec<usize>, dtype: &str) -> PyResult<Self> {
        Ok(Self(Var::new(tensor(data, shape, dtype)?)))
    }

    /// The shape.
    #[getter]
    fn shape(&self) -> Vec<usize> {
        self.0.shape().to_vec()
    }

    /// The element type's name: `f32`, `f64`, `i32`, `i64` or `i1`.
    #[getter]
    fn dtype(&self) -> &'static str {
        self.0.element().name()
    }

    /// Whether the value is known (data, or computed by a fetch).
    fn is_computed(&self) -> bool {
        self.0.is_computed()
    }

    /// The value's bytes (C order, a `bytearray` a NumPy array can own
    /// without another copy), computed first if needed.
    fn fetch_bytes<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyByteArray>> {
        let tensor = self.0.fetch().map_err(run_error)?;
        Ok(bytes(py, &tensor))
    }

    /// `meta.reindex` (see `jitc.reindex`).
    #[pyo3(signature = (shape, indices, overflow_value=None, overflow_conditions=Vec::new()))]
    fn reindex(
        &self,
        shape: Vec<usize>,
        indices: Vec<String>,
        overflow_value: Option<&Bound<'_, PyAny>>,
        overflow_conditions: Vec<String>,
    ) -> PyResult<Self> {
        let indices: Vec<&str> = indices.iter().map(String::as_str).collect();
        let conditions: Vec<&str> = overflow_conditions.iter().map(String::as_str).collect();
        let overflow_value = overflow_value.map(scalar).transpose()?;
        self.0
            .reindex_with(&shape, &indices, overflow_value, &conditions)
            .map(Self)
            .map_err(error)
    }

    /// `meta.reindex_reduce` (see `jitc.reindex_reduce`).
    fn reindex_reduce(&self, kind: &str, shape: Vec<usize>, indices: Vec<String>) -> PyResult<Self> {
        let indices: Vec<&str> = indices.iter().map(String::as_str).collect();
        self.0
            .reindex_reduce(kind, &shape, &indices)
            .map(Self)
            .map_err(error)
    }

    /// `meta.unary` of `kind`.
    fn unary(&self, kind: &str) -> PyResult<Self> {
        self.0.unary(kind).map(Self).map_err(error)
    }

    /// `meta.unary` `cast` to the element type `dtype`.
    fn cast(&self, dtype: &str) -> PyResult<Self> {
        self.0.cast(element(dtype)?).map(Self).map_err(error)
    }

    /// `meta.binary` of `kind` with `other`.
    fn binary(&self, kind: &str, other: PyRef<'_, PyVar>) -> PyResult<Self> {
        self.0.binary(kind, &other.0).map(Self).map_err(error)
    }

    /// `meta.ternary` `select`: this `i1` value chooses between `then` and
    /// `otherwise`.
    fn select(&self, then: PyRef<'_, PyVar>, otherwise: PyRef<'_, PyVar>) -> PyResult<Self> {
        self.0.select(&then.0, &otherwise.0).map(Self).map_err(error)
    }

    fn __repr__(&self) -> String {
        format!("{:?}", self.0)
    }
}

/// A Python number as a constant's value: an `int` kept exact (one past
/// `i64` is an `OverflowError`), anything else as a float.
fn scalar(value: &Bound<'_, PyAny>) -> PyResult<Scalar> {
    if value.is_instance_of::<PyInt>() {
        return value
            .extract::<i64>()
            .map(Scalar::Int)
            .map_err(|_| PyOverflowError::new_err(format!("{value} is out of range for a 64-bit integer")));
    }
    Ok(Scalar::Float(value.extract::<f64>()?))
}

fn bytes<'py>(py: Python<'py>, tensor: &Tensor) -> Bound<'py, PyByteArray> {
    PyByteArray::new(py, tensor.buffer().as_bytes())
}

/// Computes `vars` together (and every pending value that shares work with
/// them); returns their bytes, in order. A failure drops the state writes
/// the fetch was to compute, unless `keep_writes` (a look the package takes
/// itself, not the program's fetch).
#[pyfunction]
#[pyo3(signature = (vars, keep_writes=false))]
fn fetch<'py>(
    py: Python<'py>,
    vars: Vec<PyRef<'py, PyVar>>,
    keep_writes: bool,
) -> PyResult<Vec<Bound<'py, PyByteArray>>> {
    let refs: Vec<&Var> = vars.iter().map(|v| &v.0).collect();
    let tensors = graph::fetch_with(&refs, !keep_writes).map_err(run_error)?;
    Ok(tensors.iter().map(|t| bytes(py, t)).collect())
}

/// Computes every pending value a handle holds.
#[pyfunction]
fn sync() -> PyResult<()> {
    graph::sync().map_err(run_error)
}

/// What the graph of this thread has done: a dict of `fetches`,
/// `compiles`, `cache_hits` and `kernels`.
#[pyfunction]
fn stats() -> Vec<(&'static str, u64)> {
    let s = graph::stats();
    vec![
        ("fetches", s.fetches),
        ("compiles", s.compiles),
        ("cache_hits", s.cache_hits),
        ("kernels", s.kernels),
    ]
}

/// Sets the math mode (`fast` or `exact`) and the bounds-checked mode for
/// later compilations.
#[pyfunction]
fn set_codegen(math: &str, check_bounds: bool) -> PyResult<()> {
    let math = match math {
        "fast" => MathMode::Fast,
        "exact" => MathMode::Exact,
        other => return Err(error(format!("unknown math mode '{other}' (fast or exact)"))),
    };
    let options = CodegenOptions {
        math,
        check_bounds,
        ..CodegenOptions::default()
    };
    graph::set_options(options).map_err(error)
}

/// Sets what runs later fetches: `cpu` (fused and compiled) or `interp`
/// (the reference interpreter).
#[pyfunction]
fn set_backend(name: &str) -> PyResult<()> {
    let backend = match name {
        "cpu" => graph::Backend::Cpu,
        "interp" => graph::Backend::Interpreter,
        other => {
            return Err(error(format!(
                "unknown backend '{other}' for the Python package (cpu or interp; the GPU is reached \
                 through `jitc run --backend cuda` for now)"
            )));
        }
    };
    graph::set_backend(backend).map_err(error)
}

/// The number of threads kernels are split across.
#[pyfunction]
fn thread_count() -> usize {
    jitc_runtime::cpu::thread_count()
}

/// Sets the number of threads kernels are split across, before any kernel
/// has run in this process.
#[pyfunction]
fn set_thread_count(threads: usize) -> PyResult<()> {
    match jitc_runtime::cpu::set_thread_count(threads) {
        Ok(()) => Ok(()),
        Err(current) if current == threads.max(1) => Ok(()),
        Err(current) => Err(error(format!(
            "the thread count is {current} for the rest of this process: it is fixed once anything \
             has run (set jitc.flags.threads, or JITC_NUM_THREADS, first)"
        ))),
    }
}

/// Writes what a fetch of `vars` runs into the folder `dir` as `fetch.mlir`
/// and `.npy` inputs; returns the `.mlir` file's path.
#[pyfunction]
fn dump(vars: Vec<PyRef<'_, PyVar>>, dir: &str) -> PyResult<String> {
    let refs: Vec<&Var> = vars.iter().map(|v| &v.0).collect();
    graph::dump(&refs, std::path::Path::new(dir))
        .map(|p| p.display().to_string())
        .map_err(error)
}

/// Sets the piece of state `name` to the bytes of a C-contiguous array of
/// `shape` and `dtype`.
#[pyfunction]
fn set_state(name: &str, data: &[u8], shape: Vec<usize>, dtype: &str) -> PyResult<()> {
    graph::set_state(name, tensor(data, shape, dtype)?).map_err(error)
}

/// The committed value of the piece of state `name`: its bytes, shape and
/// element type, or `None`.
#[pyfunction]
fn get_state<'py>(
    py: Python<'py>,
    name: &str,
) -> Option<(Bound<'py, PyByteArray>, Vec<usize>, &'static str)> {
    graph::get_state(name).map(|t| (bytes(py, &t), t.shape().to_vec(), t.element_type().name()))
}

/// The piece of state `name` as the program sees it now (the last write
/// recorded, or the committed value).
#[pyfunction]
fn read_state(name: &str) -> PyResult<PyVar> {
    graph::read_state(name).map(PyVar).map_err(error)
}

/// Records a deferred write of `value` to the piece of state `name`.
#[pyfunction]
fn write_state(name: &str, value: PyRef<'_, PyVar>) -> PyResult<()> {
    graph::write_state(name, &value.0).map_err(error)
}

/// The gradients of the scalar `loss` with respect to each of `wrt`
/// (see `jitc.grad`).
#[pyfunction]
fn grad(loss: PyRef<'_, PyVar>, wrt: Vec<PyRef<'_, PyVar>>) -> PyResult<Vec<PyVar>> {
    let refs: Vec<&Var> = wrt.iter().map(|v| &v.0).collect();
    let gradients = graph::grad(&loss.0, &refs).map_err(error)?;
    Ok(gradients.into_iter().map(PyVar).collect())
}

/// A splat constant: `value` everywhere in `shape`, of element type
/// `dtype`.
#[pyfunction]
fn full(shape: Vec<usize>, dtype: &str, value: &Bound<'_, PyAny>) -> PyResult<PyVar> {
    let value = scalar(value)?;
    graph::full(&shape, element(dtype)?, value)
        .map(PyVar)
        .map_err(error)
}

/// Records a check that the rank-0 boolean `condition` holds (see
/// `jitc_runtime::graph::guard`); returns the condition.
#[pyfunction]
fn guard(condition: PyRef<'_, PyVar>, reason: &str) -> PyResult<PyVar> {
    graph::guard(&condition.0, reason).map(PyVar).map_err(error)
}

/// A function staged from the lazy graph (see `jitc_runtime::graph::stage`).
#[pyclass(unsendable, name = "Staged", module = "jitc._jitc")]
struct PyStaged(graph::Staged);

#[pymethods]
impl PyStaged {
    /// Runs it on `inputs`; returns its outputs, computed. A false guard
    /// raises `GuardFailed`.
    fn call(&self, inputs: Vec<PyRef<'_, PyVar>>) -> PyResult<Vec<PyVar>> {
        let refs: Vec<&Var> = inputs.iter().map(|v| &v.0).collect();
        let outputs = self.0.call(&refs).map_err(run_error)?;
        Ok(outputs.into_iter().map(PyVar).collect())
    }

    /// Kernels it runs per call.
    #[getter]
    fn kernels(&self) -> usize {
        self.0.kernels()
    }

    /// The staged function in the textual contract, as compiled (traces
    /// merged, what no path reads dropped, before fusion).
    #[getter]
    fn text(&self) -> String {
        self.0.text().to_owned()
    }

    /// `(reads, writes)`: the names of the state it reads with
    /// `meta.state_read` and writes with `meta.state_write`.
    #[getter]
    fn state(&self) -> (Vec<String>, Vec<String>) {
        let names = |bound: &[(usize, String)]| bound.iter().map(|(_, n)| n.clone()).collect();
        (names(&self.0.state().reads), names(&self.0.state().writes))
    }

    fn __repr__(&self) -> String {
        format!("{:?}", self.0)
    }
}

/// Named state of a staged function: `(input index, name)` pairs read
/// with `meta.state_read`, `(output index, name)` pairs written with
/// `meta.state_write` (see `jitc_runtime::graph::StateBinding`).
type PyStateBinding = (Vec<(usize, String)>, Vec<(usize, String)>);

fn binding(state: Option<PyStateBinding>) -> graph::StateBinding {
    let (reads, writes) = state.unwrap_or_default();
    graph::StateBinding { reads, writes }
}

/// Stages the ops computing `outputs` from the data `inputs` as one
/// compiled function; `state` is `(reads, writes)` of named state.
#[pyfunction]
#[pyo3(signature = (inputs, outputs, state=None))]
fn stage(
    inputs: Vec<PyRef<'_, PyVar>>,
    outputs: Vec<PyRef<'_, PyVar>>,
    state: Option<PyStateBinding>,
) -> PyResult<PyStaged> {
    let inputs: Vec<&Var> = inputs.iter().map(|v| &v.0).collect();
    let outputs: Vec<&Var> = outputs.iter().map(|v| &v.0).collect();
    graph::stage(&inputs, &outputs, &binding(state))
        .map(PyStaged)
        .map_err(error)
}

/// Records the ops made from now on at `site` (`None`: at none); see
/// `jitc_runtime::graph::set_site`.
#[pyfunction]
#[pyo3(signature = (site=None))]
fn set_site(site: Option<&str>) -> PyResult<()> {
    graph::set_site(site).map_err(error)
}

/// Records that a trace's branch on the rank-0 boolean `condition` went
/// the way `taken` (see `jitc_runtime::graph::decision`); returns the
/// guard.
#[pyfunction]
fn decision(condition: PyRef<'_, PyVar>, taken: bool, reason: &str) -> PyResult<PyVar> {
    graph::decision(&condition.0, taken, reason)
        .map(PyVar)
        .map_err(error)
}

/// One trace for `stage_merged`: its outputs, and its effects (guards).
type PyTrace<'py> = (Vec<PyRef<'py, PyVar>>, Vec<PyRef<'py, PyVar>>);

/// Stages several traces, each `(outputs, effects)`, as one merged graph
/// (see `jitc_runtime::graph::stage_merged`); `state` as `stage`'s.
#[pyfunction]
#[pyo3(signature = (inputs, traces, state=None))]
fn stage_merged(
    inputs: Vec<PyRef<'_, PyVar>>,
    traces: Vec<PyTrace<'_>>,
    state: Option<PyStateBinding>,
) -> PyResult<PyStaged> {
    let inputs: Vec<&Var> = inputs.iter().map(|v| &v.0).collect();
    let traces: Vec<(Vec<&Var>, Vec<&Var>)> = traces
        .iter()
        .map(|(outputs, effects)| {
            (
                outputs.iter().map(|v| &v.0).collect(),
                effects.iter().map(|v| &v.0).collect(),
            )
        })
        .collect();
    graph::stage_merged(&inputs, &traces, &binding(state))
        .map(PyStaged)
        .map_err(error)
}

/// The native values of `list`.
fn refs<'a>(list: &'a [PyRef<'_, PyVar>]) -> Vec<&'a Var> {
    list.iter().map(|v| &v.0).collect()
}

/// Stages a loop on a tensor condition as one function with an
/// `scf.while` (see `jitc_runtime::graph::stage_loop`); `state` as
/// `stage`'s.
#[pyfunction]
#[allow(clippy::too_many_arguments)]
#[pyo3(signature = (inputs, init, effects_before, condition, params, next, next_condition, results, outputs, effects_after, state=None, effects_body=Vec::new()))]
fn stage_loop(
    inputs: Vec<PyRef<'_, PyVar>>,
    init: Vec<PyRef<'_, PyVar>>,
    effects_before: Vec<PyRef<'_, PyVar>>,
    condition: PyRef<'_, PyVar>,
    params: Vec<PyRef<'_, PyVar>>,
    next: Vec<PyRef<'_, PyVar>>,
    next_condition: PyRef<'_, PyVar>,
    results: Vec<PyRef<'_, PyVar>>,
    outputs: Vec<PyRef<'_, PyVar>>,
    effects_after: Vec<PyRef<'_, PyVar>>,
    state: Option<PyStateBinding>,
    effects_body: Vec<PyRef<'_, PyVar>>,
) -> PyResult<PyStaged> {
    let (inputs, init, effects_before, params, next, effects_body, results, outputs, effects_after) = (
        refs(&inputs),
        refs(&init),
        refs(&effects_before),
        refs(&params),
        refs(&next),
        refs(&effects_body),
        refs(&results),
        refs(&outputs),
        refs(&effects_after),
    );
    let parts = graph::LoopParts {
        init: &init,
        effects_before: &effects_before,
        condition: &condition.0,
        params: &params,
        next: &next,
        next_condition: &next_condition.0,
        effects_body: &effects_body,
        results: &results,
        outputs: &outputs,
        effects_after: &effects_after,
    };
    graph::stage_loop(&inputs, &parts, &binding(state))
        .map(PyStaged)
        .map_err(error)
}

/// The native module.
/// Whether a panic's `message` is PyO3's check that an object of an
/// `unsendable` class (a `Var`, a staged graph) is used on the thread that
/// made it. The Python half turns that panic into a `JitcError` that says
/// so (`_tracing._OwnThread`), so it is not printed.
fn is_thread_check(message: &str) -> bool {
    message.contains("is unsendable, but")
}

/// Keeps the panic hook from printing PyO3's thread check, which the
/// Python half reports as a `JitcError`; every other panic is printed by
/// the hook that was there before.
fn quiet_thread_checks() {
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let message = info
            .payload()
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| info.payload().downcast_ref::<&str>().copied())
            .unwrap_or("");
        if !is_thread_check(message) {
            previous(info);
        }
    }));
}

#[pymodule]
fn _jitc(m: &Bound<'_, PyModule>) -> PyResult<()> {
    quiet_thread_checks();
    m.add_class::<PyVar>()?;
    m.add_class::<PyStaged>()?;
    m.add_class::<facts::Facts>()?;
    m.add("JitcError", m.py().get_type::<JitcError>())?;
    m.add("GuardFailed", m.py().get_type::<GuardFailed>())?;
    m.add_function(wrap_pyfunction!(fetch, m)?)?;
    m.add_function(wrap_pyfunction!(sync, m)?)?;
    m.add_function(wrap_pyfunction!(stats, m)?)?;
    m.add_function(wrap_pyfunction!(set_codegen, m)?)?;
    m.add_function(wrap_pyfunction!(set_backend, m)?)?;
    m.add_function(wrap_pyfunction!(thread_count, m)?)?;
    m.add_function(wrap_pyfunction!(set_thread_count, m)?)?;
    m.add_function(wrap_pyfunction!(dump, m)?)?;
    m.add_function(wrap_pyfunction!(set_state, m)?)?;
    m.add_function(wrap_pyfunction!(get_state, m)?)?;
    m.add_function(wrap_pyfunction!(read_state, m)?)?;
    m.add_function(wrap_pyfunction!(write_state, m)?)?;
    m.add_function(wrap_pyfunction!(grad, m)?)?;
    m.add_function(wrap_pyfunction!(full, m)?)?;
    m.add_function(wrap_pyfunction!(guard, m)?)?;
    m.add_function(wrap_pyfunction!(stage, m)?)?;
    m.add_function(wrap_pyfunction!(set_site, m)?)?;
    m.add_function(wrap_pyfunction!(decision, m)?)?;
    m.add_function(wrap_pyfunction!(stage_merged, m)?)?;
    m.add_function(wrap_pyfunction!(stage_loop, m)?)?;
    Ok(())
}
