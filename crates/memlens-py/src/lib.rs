//! MemLens for Python: the thin PyO3 layer under the Python package `memlens`.
//!
//! One handle type ([`RawPool`], wrapped by the package's `memlens.MemoryPool`), options in,
//! plain objects out; token counting, import, inspection and simulation as functions. The logic
//! lives in `memlens-pool` (the same pool the npm package wraps) and in the core; this file only
//! converts values and turns errors into Python exceptions: `TypeError` for a malformed message,
//! `ValueError` for bad options, policies, labels or trace files. Heavy work (import, inspect,
//! simulate) runs with the interpreter detached, so other Python threads go on.
//!
//! Reports cross as JSON text (the wrapper parses it with `json.loads`): one string instead of a
//! Python object per field, and exactly the JSON the CLI's `--json` prints. The columnar tables
//! (`tables_ipc`) cross as Arrow IPC streams.
//!
//! The package itself is in `python/memlens`: `MemoryPool`, `columns` (pyarrow tables), `spark`
//! (the tables over a Spark DataFrame, one `mapInArrow` each; `examples/spark/fleet_report.py`),
//! the drop-ins, typed (`py.typed`, stubs); maturin builds it into one abi3 wheel
//! (`scripts/py.sh`).

use memlens_core::policy::BUILTIN;
use memlens_core::report::summarize;
use memlens_core::simulate::simulate as simulate_traces;
use memlens_import::{import, live, ImportOptions};
use memlens_pool::{
    budget_from_f64, label_from_str, parse_timestamp, policy_from_value, AddOptions, Pool,
    PoolError, PoolOptions, Rendered,
};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyTuple};
use serde::Serialize;
use serde_json::Value;

/// `refs` entries at or above this are indices into `extras` (as in the npm package).
const EXTRA: u32 = 0x8000_0000;

fn value_error(e: impl std::fmt::Display) -> PyErr {
    PyValueError::new_err(e.to_string())
}

/// A malformed message is a `TypeError`; everything else the pool refuses is a `ValueError`.
fn pool_error(e: PoolError) -> PyErr {
    match e {
        PoolError::Message(_) => PyTypeError::new_err(e.to_string()),
        other => value_error(other),
    }
}

/// How deep data handed to MemLens may nest: serde_json's limit for JSON text. The conversion
/// below recurses, so a dict nested 100,000 levels deep would overflow the stack and abort the
/// interpreter; deeper data is refused first, by a walk that does not recurse.
const MAX_DEPTH: usize = 128;

fn check_depth(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<()> {
    let mut stack = vec![(obj.clone(), 1usize)];
    while let Some((o, depth)) = stack.pop() {
        let children: Vec<Bound<'_, PyAny>> = if let Ok(d) = o.cast::<PyDict>() {
            d.values().iter().collect()
        } else if let Ok(l) = o.cast::<PyList>() {
            l.iter().collect()
        } else if let Ok(t) = o.cast::<PyTuple>() {
            t.iter().collect()
        } else {
            continue;
        };
        if depth > MAX_DEPTH {
            return Err(PyTypeError::new_err(format!(
                "{what} is nested more than {MAX_DEPTH} levels deep"
            )));
        }
        stack.extend(children.into_iter().map(|c| (c, depth + 1)));
    }
    Ok(())
}

/// A Python object (dict, list, str, number, bool, None) as JSON.
fn to_value(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<Value> {
    check_depth(obj, what)?;
    pythonize::depythonize(obj)
        .map_err(|e| PyTypeError::new_err(format!("{what} is not JSON-like data: {e}")))
}

fn to_py<'py, T: Serialize>(py: Python<'py>, value: &T) -> PyResult<Bound<'py, PyAny>> {
    pythonize::pythonize(py, value).map_err(value_error)
}

fn to_json<T: Serialize>(value: &T) -> PyResult<String> {
    serde_json::to_string(value).map_err(value_error)
}

/// A policy as the bindings take it: `None`, a built-in name, JSON/TOML text, or a dict.
fn policy_arg(policy: Option<&Bound<'_, PyAny>>) -> PyResult<memlens_core::policy::PolicyConfig> {
    let value = match policy {
        None => Value::Null,
        Some(p) if p.is_none() => Value::Null,
        Some(p) if p.is_instance_of::<pyo3::types::PyString>() => Value::String(p.extract()?),
        Some(p) if p.is_instance_of::<PyDict>() => to_value(p, "the policy")?,
        Some(p) => {
            return Err(PyTypeError::new_err(format!(
                "policy must be a built-in name, JSON or TOML text, or a dict; got {}",
                p.get_type().name()?
            )))
        }
    };
    policy_from_value(&value).map_err(pool_error)
}

fn dialect_arg(dialect: Option<&str>) -> PyResult<Option<live::Dialect>> {
    match dialect {
        None => Ok(None),
        Some("openai") => Ok(Some(live::Dialect::OpenAi)),
        Some("anthropic") => Ok(Some(live::Dialect::Anthropic)),
        Some(other) => Err(PyValueError::new_err(format!(
            "invalid options: dialect {other:?}: expected \"openai\" or \"anthropic\""
        ))),
    }
}

/// A time as `add` takes it: seconds since the epoch (a number, not a bool) or ISO 8601 text.
fn timestamp_arg(timestamp: Option<&Bound<'_, PyAny>>) -> PyResult<Option<f64>> {
    match timestamp {
        None => Ok(None),
        Some(t) if t.is_none() => Ok(None),
        Some(t) if t.is_instance_of::<pyo3::types::PyString>() => {
            let text: String = t.extract()?;
            parse_timestamp(&text).map(Some).map_err(pool_error)
        }
        Some(t)
            if !t.is_instance_of::<pyo3::types::PyBool>()
                && (t.is_instance_of::<pyo3::types::PyFloat>()
                    || t.is_instance_of::<pyo3::types::PyInt>()) =>
        {
            Ok(Some(t.extract()?))
        }
        Some(t) => Err(PyTypeError::new_err(format!(
            "timestamp must be a datetime, seconds since the epoch or an ISO 8601 string, got {}",
            t.get_type().name()?
        ))),
    }
}

/// The live memory pool (see `memlens.MemoryPool`, which wraps it).
#[pyclass(module = "memlens._memlens")]
struct RawPool {
    /// `None` once closed.
    pool: Option<Pool>,
}

impl RawPool {
    fn pool(&mut self) -> PyResult<&mut Pool> {
        self.pool
            .as_mut()
            .ok_or_else(|| PyValueError::new_err("this MemoryPool was closed"))
    }
}

#[pymethods]
impl RawPool {
    #[new]
    #[pyo3(signature = (*, budget, model=None, policy=None, summarizer=false, dialect=None, keep_history=true))]
    fn new(
        budget: Option<f64>,
        model: Option<String>,
        policy: Option<&Bound<'_, PyAny>>,
        summarizer: bool,
        dialect: Option<&str>,
        keep_history: bool,
    ) -> PyResult<RawPool> {
        let pool = Pool::new(PoolOptions {
            model,
            budget: budget_from_f64(budget).map_err(pool_error)?,
            policy: policy_arg(policy)?,
            summarizer,
            dialect: dialect_arg(dialect)?,
            keep_history,
        })
        .map_err(pool_error)?;
        Ok(RawPool { pool: Some(pool) })
    }

    /// Adds one message dict; returns its chunk ids. `timestamp`: seconds since the epoch or
    /// ISO 8601 text (`memlens.MemoryPool.add` passes its clock's time unless given; none: no
    /// time); `latency_ms` and `preference`: see `memlens_pool::AddOptions`.
    #[pyo3(signature = (message, timestamp=None, latency_ms=None, preference=false))]
    fn add(
        &mut self,
        message: &Bound<'_, PyAny>,
        timestamp: Option<&Bound<'_, PyAny>>,
        latency_ms: Option<f64>,
        preference: bool,
    ) -> PyResult<Vec<u32>> {
        if !message.is_instance_of::<PyDict>() {
            return Err(PyTypeError::new_err(format!(
                "invalid message: expected a dict with a \"role\", got {}",
                message.get_type().name()?
            )));
        }
        let options = AddOptions {
            timestamp: timestamp_arg(timestamp)?,
            latency_ms,
            preference,
        };
        let value = to_value(message, "the message")?;
        self.pool()?.add_with(value, options).map_err(pool_error)
    }

    /// Decides the next context: `{refs, extras, tokens, full_tokens, over_budget, compressed,
    /// evicted, retrieved, released_messages}`; `refs[i] < 2**31` is the index of a message sent unchanged,
    /// otherwise `extras[refs[i] - 2**31]` is a patched message or a summary to produce.
    #[pyo3(signature = (query=None))]
    fn context<'py>(
        &mut self,
        py: Python<'py>,
        query: Option<&str>,
    ) -> PyResult<Bound<'py, PyDict>> {
        let ctx = self.pool()?.context(query);
        let mut refs = Vec::with_capacity(ctx.items.len());
        let extras = PyList::empty(py);
        for item in ctx.items.iter() {
            match item {
                Rendered::Original { message } => refs.push(*message),
                other => {
                    refs.push(EXTRA | extras.len() as u32);
                    extras.append(to_py(py, other)?)?;
                }
            }
        }
        let out = PyDict::new(py);
        out.set_item("refs", refs)?;
        out.set_item("extras", extras)?;
        out.set_item("tokens", ctx.tokens)?;
        out.set_item("full_tokens", ctx.full_tokens)?;
        out.set_item("over_budget", ctx.over_budget)?;
        out.set_item("compressed", ctx.compressed)?;
        out.set_item("evicted", ctx.evicted)?;
        out.set_item("retrieved", ctx.retrieved)?;
        out.set_item("released_messages", ctx.released_messages)?;
        Ok(out)
    }

    /// Does now the value work the next context would do first (see `Pool::prepare`).
    fn prepare(&mut self) -> PyResult<()> {
        self.pool()?.prepare();
        Ok(())
    }

    /// Running totals (the npm package's `stats()`, keys as it names them).
    fn stats<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let stats = self.pool()?.stats();
        to_py(py, &stats)
    }

    /// Value factors of one chunk and why it was kept or dropped.
    fn explain<'py>(&mut self, py: Python<'py>, chunk: u32) -> PyResult<Bound<'py, PyAny>> {
        let explanation = self.pool()?.explain(chunk).map_err(pool_error)?;
        to_py(py, &explanation)
    }

    /// Switches policy, replaying the run so far (see the npm package's `setPolicy`).
    #[pyo3(signature = (policy))]
    fn set_policy(&mut self, policy: Option<&Bound<'_, PyAny>>) -> PyResult<()> {
        let policy = policy_arg(policy)?;
        self.pool()?.set_policy(policy).map_err(pool_error)
    }

    /// Sets (or clears, with `None`) a chunk's value in `[0, 1]`, as a scorer would.
    #[pyo3(signature = (chunk, value))]
    fn set_value(&mut self, chunk: u32, value: Option<f64>) -> PyResult<()> {
        if value.is_some_and(|v| !v.is_finite()) {
            return Err(PyValueError::new_err(
                "a value must be a finite number in [0, 1] or None",
            ));
        }
        self.pool()?
            .set_value(chunk, value.map(|v| v as f32))
            .map_err(pool_error)
    }

    /// Labels a chunk `"important"` (kept) or `"useless"`; `None` clears the label.
    #[pyo3(signature = (chunk, label))]
    fn label(&mut self, chunk: u32, label: Option<&str>) -> PyResult<()> {
        let label = label_from_str(label).map_err(pool_error)?;
        self.pool()?.label(chunk, label).map_err(pool_error)
    }

    /// Records the provider's usage dict (OpenAI or Anthropic shape) for the latest call.
    fn record_usage(&mut self, usage: &Bound<'_, PyAny>) -> PyResult<()> {
        let value = to_value(usage, "the usage")?;
        let usage = live::parse_usage(&value).map_err(value_error)?;
        self.pool()?.record_usage(usage);
        Ok(())
    }

    /// The run so far in the native MemLens format (JSON Lines).
    fn export_trace(&mut self) -> PyResult<String> {
        self.pool()?.export().map_err(pool_error)
    }

    /// The native-format lines not returned before (see `Pool::trace_lines`).
    #[pyo3(signature = (finish = false))]
    fn trace_lines(&mut self, finish: bool) -> PyResult<String> {
        self.pool()?.trace_lines(finish).map_err(pool_error)
    }

    /// Tokens of a text with this pool's encoding.
    fn count_tokens(&mut self, text: &str) -> PyResult<u32> {
        Ok(self.pool()?.counter().count(text))
    }

    /// Frees the pool; using it afterwards raises `ValueError`.
    fn close(&mut self) {
        self.pool = None;
    }

    /// True once closed.
    #[getter]
    fn closed(&self) -> bool {
        self.pool.is_none()
    }
}

/// Tokens of a text for a model (OpenAI names count exactly; others of the price table are
/// estimated; default `gpt-4o`'s o200k).
#[pyfunction]
#[pyo3(signature = (text, model=None))]
fn count_tokens(py: Python<'_>, text: &str, model: Option<&str>) -> PyResult<u32> {
    let counter = memlens_pool::counter_for(model).map_err(pool_error)?;
    Ok(py.detach(|| counter.count(text)))
}

/// The built-in policy names.
#[pyfunction]
fn builtin_policies() -> Vec<&'static str> {
    BUILTIN.to_vec()
}

/// A policy in full (defaults filled in), as JSON text.
#[pyfunction]
#[pyo3(signature = (policy=None))]
fn policy_config(policy: Option<&Bound<'_, PyAny>>) -> PyResult<String> {
    to_json(&policy_arg(policy)?)
}

fn import_bytes(
    name: &str,
    data: &[u8],
    format: Option<String>,
    model: Option<String>,
) -> Result<memlens_import::Import, PyErr> {
    import(name, data, &ImportOptions { format, model }).map_err(value_error)
}

/// `{format, traces, warnings, warning_count}` as JSON text: an import's format and warnings
/// beside what was made of its traces (the traces themselves, summaries, analyses).
fn imported_json<T: Serialize>(result: &memlens_import::Import, traces: &T) -> PyResult<String> {
    #[derive(Serialize)]
    struct Out<'a, T> {
        format: &'a str,
        traces: &'a T,
        warnings: &'a [memlens_import::Warning],
        warning_count: usize,
    }
    to_json(&Out {
        format: result.format,
        traces,
        warnings: &result.warnings,
        warning_count: result.warning_count,
    })
}

/// Imports a trace file's bytes, gzipped or not (`name` is what errors call it): JSON text of
/// `{format, traces, warnings, warning_count}`.
#[pyfunction]
#[pyo3(signature = (data, name, format=None, model=None))]
fn import_trace(
    py: Python<'_>,
    data: Vec<u8>,
    name: &str,
    format: Option<String>,
    model: Option<String>,
) -> PyResult<String> {
    py.detach(|| {
        let result = import_bytes(name, &data, format, model)?;
        imported_json(&result, &result.traces)
    })
}

/// Each trace's summary, as `memlens inspect --json` gives it: JSON text of
/// `{format, traces: [summary...], warnings, warning_count}`.
#[pyfunction]
#[pyo3(signature = (data, name, format=None, model=None, top=10))]
fn inspect_trace(
    py: Python<'_>,
    data: Vec<u8>,
    name: &str,
    format: Option<String>,
    model: Option<String>,
    top: usize,
) -> PyResult<String> {
    py.detach(|| {
        let result = import_bytes(name, &data, format, model)?;
        let prices = memlens_pool::prices();
        let summaries: Vec<_> = result
            .traces
            .iter()
            .map(|t| summarize(t, prices, top))
            .collect();
        imported_json(&result, &summaries)
    })
}

/// The web analyzer's analysis of each trace (what the npm package's `analyzeTrace` returns:
/// per call, per chunk, categories, values, references): JSON text of `{format, traces,
/// warnings, warning_count}`.
#[pyfunction]
#[pyo3(signature = (data, name, format=None, model=None))]
fn analyze_trace(
    py: Python<'_>,
    data: Vec<u8>,
    name: &str,
    format: Option<String>,
    model: Option<String>,
) -> PyResult<String> {
    use memlens_core::analysis::{analyze, Analysis, AnalysisOptions};
    py.detach(|| {
        let result = import_bytes(name, &data, format, model)?;
        let options = AnalysisOptions::default();
        let analyses: Vec<Analysis> = result
            .traces
            .iter()
            .map(|t| analyze(t, memlens_pool::prices(), &options))
            .collect();
        imported_json(&result, &analyses)
    })
}

/// Replays a trace file's traces under a policy at a budget: JSON text of the report
/// `memlens simulate --json` prints.
#[pyfunction]
#[pyo3(signature = (data, name, policy=None, budget=None, format=None, model=None))]
fn simulate(
    py: Python<'_>,
    data: Vec<u8>,
    name: &str,
    policy: Option<&Bound<'_, PyAny>>,
    budget: Option<f64>,
    format: Option<String>,
    model: Option<String>,
) -> PyResult<String> {
    let policy = policy_arg(policy)?;
    let budget = match budget {
        Some(b) => budget_from_f64(Some(b)).map_err(pool_error)?,
        None => policy.budget.ok_or_else(|| {
            PyValueError::new_err(format!(
                "policy {:?} sets no budget: pass budget=N",
                policy.name
            ))
        })?,
    };
    py.detach(|| {
        let result = import_bytes(name, &data, format, model)?;
        let report = simulate_traces(&result.traces, &policy, budget, memlens_pool::prices())
            .map_err(value_error)?;
        to_json(&report)
    })
}

/// The columnar tables (memlens-columns) of a batch of trace files: the input is an Arrow IPC
/// stream with `name` and `trace` columns, the output `(table name, IPC stream)` pairs —
/// traces, calls, chunks, simulations (when policies and budgets are given; `tables` picks),
/// errors. The wrapper builds and reads the streams with pyarrow: no Python object per row or per field.
#[pyfunction]
#[pyo3(signature = (input, format=None, model=None, policies=None, budgets=None, tables=None))]
fn tables_ipc<'py>(
    py: Python<'py>,
    input: Vec<u8>,
    format: Option<String>,
    model: Option<String>,
    policies: Option<Vec<Bound<'py, PyAny>>>,
    budgets: Option<Vec<u32>>,
    tables: Option<Vec<String>>,
) -> PyResult<Vec<(&'static str, Bound<'py, pyo3::types::PyBytes>)>> {
    let policies = policies
        .unwrap_or_default()
        .iter()
        .map(|p| policy_arg(Some(p)))
        .collect::<PyResult<Vec<_>>>()?;
    let request = memlens_columns::ipc::IpcRequest {
        format,
        model,
        policies,
        budgets: budgets.unwrap_or_default(),
        tables: tables.unwrap_or_default(),
    };
    let tables = py
        .detach(|| memlens_columns::ipc::tables_from_ipc(&input, &request, memlens_pool::prices()));
    Ok(tables
        .map_err(value_error)?
        .into_iter()
        .map(|(name, bytes)| (name, pyo3::types::PyBytes::new(py, &bytes)))
        .collect())
}

/// The native module `memlens._memlens`.
#[pymodule]
fn _memlens(m: &Bound<'_, PyModule>) -> PyResult<()> {
    // Gzipped traces decompress within the CLI's limit for files (a third of the memory
    // available, or MEMLENS_MAX_INPUT_BYTES), not the library's fixed default: a gzip bomb is
    // refused before it takes the machine.
    let (limit, _) = memlens_import::gzip::limit_for_memory(
        std::env::var("MEMLENS_MAX_INPUT_BYTES").ok().as_deref(),
        std::fs::read_to_string("/proc/meminfo").ok().as_deref(),
    );
    memlens_import::gzip::set_limit(limit);
    m.add_class::<RawPool>()?;
    m.add_function(wrap_pyfunction!(count_tokens, m)?)?;
    m.add_function(wrap_pyfunction!(builtin_policies, m)?)?;
    m.add_function(wrap_pyfunction!(policy_config, m)?)?;
    m.add_function(wrap_pyfunction!(import_trace, m)?)?;
    m.add_function(wrap_pyfunction!(inspect_trace, m)?)?;
    m.add_function(wrap_pyfunction!(analyze_trace, m)?)?;
    m.add_function(wrap_pyfunction!(simulate, m)?)?;
    m.add_function(wrap_pyfunction!(tables_ipc, m)?)?;
    Ok(())
}
