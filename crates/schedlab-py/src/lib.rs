//! `schedlab._native`: the Rust side of the Python package.
//!
//! Scheduler researchers read results in notebooks; this module gives Python the
//! same experiments as the CLI with nothing re-implemented: a run, a comparison, a
//! sweep, a machine's domains are computed by the library's own functions, and
//! their results cross into Python as the CLI's JSON text (byte-identical) plus
//! Arrow IPC streams of the library's tables (`experiment::frames`), which pyarrow
//! and polars map into DataFrames without a Python object per row. Every
//! simulation runs with the GIL released (`Python::detach`), so a notebook stays
//! responsive and Python threads can run simulations side by side.
//!
//! Bad input raises `InputError` (a `ValueError`) whose text is the CLI's
//! (`FILE:LINE: message`) and whose `file`, `line` and `key` attributes locate it.
//! The sweep is exposed twice: whole (`sweep`, the library's thread pool) and as
//! its steps (`SweepPlan`, `run_point`), which the package's Dask driver
//! distributes with the library's own identity and resume rules.

use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};
use schedlab::error::InputError as LibInputError;
use schedlab::experiment::compare::{compare_detailed, load_arms, ArmSpec};
use schedlab::experiment::sweep::{
    self as lib_sweep, Axis, PointTask, Record, SweepPlan, SweepSummary,
};
use schedlab::experiment::{self as exp, frames, Overrides, RunOpts, Source, TraceFormat};
use schedlab::frame::{ipc, RecordBatch};
use std::path::{Path, PathBuf};

pyo3::create_exception!(
    _native,
    InputError,
    PyValueError,
    "Bad input: the CLI's error text; `file`, `line`, `key` and `msg` locate it."
);

/// The Python exception of a library input error.
fn input_err(e: LibInputError) -> PyErr {
    Python::attach(|py| {
        let err = InputError::new_err(e.to_string());
        let v = err.value(py);
        let file = e.file.as_ref().map(|p| p.display().to_string());
        let _ = v.setattr("file", file);
        let _ = v.setattr("line", e.line);
        let _ = v.setattr("key", e.key.clone());
        let _ = v.setattr("msg", e.msg.clone());
        err
    })
}

/// A failed simulation: bad input (as the CLI reports it) or an internal error.
fn sim_err(e: schedlab::sim::SimError, file: &Path) -> PyErr {
    if e.is_input_error() {
        input_err(LibInputError::in_file(file, None, e.to_string()))
    } else {
        PyRuntimeError::new_err(format!("internal error: {e}"))
    }
}

/// A scenario given as a path, TOML text or a JSON object's text.
struct Scen {
    /// The TOML text (for `toml` and `json`), or `None` for a file.
    text: Option<String>,
    path: PathBuf,
}

impl Scen {
    fn new(source: &str, kind: &str) -> PyResult<Scen> {
        match kind {
            "path" => Ok(Scen {
                text: None,
                path: PathBuf::from(source),
            }),
            "toml" => Ok(Scen {
                text: Some(source.to_string()),
                path: PathBuf::from("<string>"),
            }),
            "json" => {
                let name = PathBuf::from("<dict>");
                let v: serde_json::Value = serde_json::from_str(source)
                    .map_err(|e| input_err(LibInputError::in_file(&name, None, e.to_string())))?;
                let t = toml::Value::try_from(v).map_err(|e| {
                    input_err(LibInputError::in_file(
                        &name,
                        None,
                        format!("not a scenario table: {e}"),
                    ))
                })?;
                let text = toml::to_string(&t).map_err(|e| {
                    input_err(LibInputError::in_file(
                        &name,
                        None,
                        format!("not a scenario table: {e}"),
                    ))
                })?;
                Ok(Scen {
                    text: Some(text),
                    path: name,
                })
            }
            k => Err(PyValueError::new_err(format!(
                "kind must be \"path\", \"toml\" or \"json\", not {k:?}"
            ))),
        }
    }

    fn source(&self) -> Source<'_> {
        match &self.text {
            None => Source::File(&self.path),
            Some(t) => Source::Text {
                text: t,
                name: &self.path,
            },
        }
    }
}

fn bytes<'py>(py: Python<'py>, b: &RecordBatch) -> Bound<'py, PyBytes> {
    PyBytes::new(py, &ipc(b))
}

/// Run a scenario (replication 0 of its seed); see the package's `schedlab.run`.
#[pyfunction]
#[pyo3(signature = (source, kind, seed=None, sets=vec![], features=None, events=false, trace=None, allow_native_scheduler=false, sched_tp=false))]
#[allow(clippy::too_many_arguments)]
fn run<'py>(
    py: Python<'py>,
    source: &str,
    kind: &str,
    seed: Option<u64>,
    sets: Vec<String>,
    features: Option<String>,
    events: bool,
    trace: Option<PathBuf>,
    allow_native_scheduler: bool,
    sched_tp: bool,
) -> PyResult<Bound<'py, PyDict>> {
    let scen = Scen::new(source, kind)?;
    let ov = Overrides {
        sets,
        features,
        seed,
        native_scheduler: allow_native_scheduler,
    };
    if let Some(p) = &trace {
        schedlab::files::check_all(std::iter::once(p)).map_err(input_err)?;
    }
    let out = py.detach(|| -> Result<_, PyErr> {
        let sc = scen.source().load(&ov).map_err(input_err)?;
        let kind = trace.as_deref().map(TraceFormat::of);
        let trace_bytes;
        let mut log = None;
        let logged = matches!(
            kind,
            Some(TraceFormat::Ftrace | TraceFormat::Perfetto | TraceFormat::Dat)
        );
        let r = if events || logged {
            let perfetto = kind == Some(TraceFormat::Perfetto);
            let lopts = RunOpts {
                sched_tp,
                ..RunOpts::default()
            };
            let (r, l, tasks) = exp::run_logged(&sc, sc.seed, 0, &lopts, perfetto)
                .map_err(|e| sim_err(e, &scen.path))?;
            trace_bytes = match kind {
                Some(TraceFormat::Ftrace) => Some(
                    schedlab::metrics::ftrace::render(
                        &l,
                        &tasks,
                        sc.machine.nr_cpus(),
                        RunOpts::default().layout(&sc),
                    )
                    .into_bytes(),
                ),
                Some(TraceFormat::Perfetto) => Some(schedlab::metrics::perfetto::render(
                    &l,
                    &tasks,
                    &sc.machine,
                    sc.kernel_preset,
                )),
                Some(TraceFormat::Dat) => Some(
                    schedlab::metrics::tracedat::render(&l, &tasks, sc.machine.nr_cpus())
                        .map_err(|e| PyRuntimeError::new_err(format!("trace.dat: {e}")))?,
                ),
                _ => None,
            };
            if events {
                log = Some(frames::events(&l, &tasks, sc.machine.nr_cpus()));
            }
            r
        } else {
            let opts = RunOpts {
                trace: kind.is_some(),
                ..RunOpts::default()
            };
            let (r, t) = exp::run(&sc, sc.seed, 0, &opts).map_err(|e| sim_err(e, &scen.path))?;
            trace_bytes = t.map(String::into_bytes);
            r
        };
        let mut trace_bytes = trace_bytes;
        if kind == Some(TraceFormat::Decision) && events {
            // The decision trace is its own observer: a second, identical run.
            let opts = RunOpts {
                trace: true,
                ..RunOpts::default()
            };
            let (_, t) = exp::run(&sc, sc.seed, 0, &opts).map_err(|e| sim_err(e, &scen.path))?;
            trace_bytes = t.map(String::into_bytes);
        }
        if let (Some(p), Some(b)) = (&trace, &trace_bytes) {
            exp::write_atomic(p, b).map_err(|e| {
                input_err(LibInputError::in_file(
                    p,
                    None,
                    format!("cannot write: {e}"),
                ))
            })?;
        }
        let scalars = exp::compare::scalars(&r);
        Ok((r, log, scalars))
    })?;
    let (r, log, scalars) = out;
    let d = PyDict::new(py);
    d.set_item("json", r.to_json())?;
    d.set_item("text", r.summary_text())?;
    d.set_item("scalars", scalars)?;
    d.set_item("tasks", bytes(py, &frames::tasks(&r)))?;
    d.set_item("functions", bytes(py, &frames::functions(&r)))?;
    d.set_item("latency", bytes(py, &frames::latency(&r)))?;
    d.set_item("events", log.map(|b| bytes(py, &b)))?;
    Ok(d)
}

/// Compare two arms over paired runs; see the package's `schedlab.compare`.
#[pyfunction]
#[pyo3(signature = (source, kind, a="", b="", runs=20, jobs=None, sets=vec![], allow_native_scheduler=false))]
#[allow(clippy::too_many_arguments)]
fn compare<'py>(
    py: Python<'py>,
    source: &str,
    kind: &str,
    a: &str,
    b: &str,
    runs: u32,
    jobs: Option<usize>,
    sets: Vec<String>,
    allow_native_scheduler: bool,
) -> PyResult<Bound<'py, PyDict>> {
    if runs == 0 || runs > exp::MAX_RUNS {
        return Err(input_err(LibInputError::new(format!(
            "runs must be in 1..={}",
            exp::MAX_RUNS
        ))));
    }
    let scen = Scen::new(source, kind)?;
    let (a, b) = (ArmSpec::parse(a), ArmSpec::parse(b));
    let cmp = py.detach(|| -> Result<_, PyErr> {
        let (sa, sb) =
            load_arms(scen.source(), &a, &b, &sets, allow_native_scheduler).map_err(input_err)?;
        let (cmp, _) = compare_detailed(&sa, &sb, &a, &b, runs, exp::jobs_or_all(jobs), &|_| {})
            .map_err(PyRuntimeError::new_err)?;
        Ok(cmp)
    })?;
    let mut json =
        serde_json::to_string_pretty(&cmp).map_err(|e| PyRuntimeError::new_err(e.to_string()))?;
    json.push('\n');
    let d = PyDict::new(py);
    d.set_item("json", json)?;
    d.set_item("text", cmp.text())?;
    d.set_item("table", bytes(py, &frames::compare_table(&cmp)))?;
    d.set_item("runs", bytes(py, &frames::compare_runs(&cmp)))?;
    Ok(d)
}

fn axes(grid: &[String]) -> PyResult<Vec<Axis>> {
    grid.iter()
        .map(|g| Axis::parse(g).map_err(input_err))
        .collect()
}

fn summary_dict<'py>(
    py: Python<'py>,
    s: &SweepSummary,
    keys: &[String],
    records: &[Record],
) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("points", s.points)?;
    d.set_item("runs_total", s.runs_total)?;
    d.set_item("already_done", s.already_done)?;
    d.set_item("ran", s.ran)?;
    d.set_item("table", bytes(py, &frames::sweep_long(keys, records)))?;
    Ok(d)
}

/// A local sweep into `out` (resumable); see the package's `schedlab.sweep`.
#[pyfunction]
#[pyo3(signature = (source, kind, grid, runs=1, jobs=None, out=PathBuf::new(), parquet=false, allow_native_scheduler=false))]
#[allow(clippy::too_many_arguments)]
fn sweep<'py>(
    py: Python<'py>,
    source: &str,
    kind: &str,
    grid: Vec<String>,
    runs: u32,
    jobs: Option<usize>,
    out: PathBuf,
    parquet: bool,
    allow_native_scheduler: bool,
) -> PyResult<Bound<'py, PyDict>> {
    let scen = Scen::new(source, kind)?;
    let axes = axes(&grid)?;
    schedlab::files::check_writable_dir(&out).map_err(input_err)?;
    let (s, records) = py.detach(|| {
        lib_sweep::sweep_from(
            scen.source(),
            &axes,
            runs,
            exp::jobs_or_all(jobs),
            &out,
            parquet,
            allow_native_scheduler,
            &|| {},
        )
        .map_err(input_err)
    })?;
    let keys: Vec<String> = axes.iter().map(|a| a.key.clone()).collect();
    summary_dict(py, &s, &keys, &records)
}

/// A sweep's steps for a distributed driver (the package's Dask sweep).
#[pyclass(name = "SweepPlan", module = "schedlab._native")]
struct PySweepPlan {
    plan: Option<SweepPlan>,
    keys: Vec<String>,
}

impl PySweepPlan {
    fn plan(&self) -> PyResult<&SweepPlan> {
        self.plan
            .as_ref()
            .ok_or_else(|| PyRuntimeError::new_err("this SweepPlan is finished"))
    }
}

#[pymethods]
impl PySweepPlan {
    #[new]
    #[pyo3(signature = (source, kind, grid, runs, out, allow_native_scheduler=false))]
    fn new(
        py: Python<'_>,
        source: &str,
        kind: &str,
        grid: Vec<String>,
        runs: u32,
        out: PathBuf,
        allow_native_scheduler: bool,
    ) -> PyResult<Self> {
        let scen = Scen::new(source, kind)?;
        let axes = axes(&grid)?;
        schedlab::files::check_writable_dir(&out).map_err(input_err)?;
        let plan = py.detach(|| {
            SweepPlan::new(scen.source(), &axes, runs, &out, allow_native_scheduler)
                .map_err(input_err)
        })?;
        Ok(PySweepPlan {
            plan: Some(plan),
            keys: axes.iter().map(|a| a.key.clone()).collect(),
        })
    }

    #[getter]
    fn points(&self) -> PyResult<usize> {
        Ok(self.plan()?.points())
    }

    #[getter]
    fn runs_total(&self) -> PyResult<usize> {
        Ok(self.plan()?.runs_total())
    }

    #[getter]
    fn already_done(&self) -> PyResult<usize> {
        Ok(self.plan()?.already_done())
    }

    /// The (point, seed) pairs still to run.
    fn todo(&self) -> PyResult<Vec<(usize, u64)>> {
        Ok(self.plan()?.todo())
    }

    /// The arguments of `run_point` for (point, seed).
    #[allow(clippy::type_complexity)]
    fn task(
        &self,
        point: usize,
        seed: u64,
    ) -> PyResult<(
        String,
        String,
        Vec<String>,
        usize,
        Vec<(String, String)>,
        u64,
        String,
        bool,
    )> {
        let t = self.plan()?.task(point, seed).map_err(input_err)?;
        Ok((
            t.text,
            t.file.to_string_lossy().into_owned(),
            t.sets,
            t.point,
            t.params,
            t.seed,
            t.id,
            t.native_scheduler,
        ))
    }

    /// Append one finished run (a `run_point` line).
    fn append(&self, line: &str) -> PyResult<()> {
        let rec: Record = serde_json::from_str(line)
            .map_err(|e| input_err(LibInputError::new(format!("not a sweep result line: {e}"))))?;
        self.plan()?.append(rec).map_err(input_err)
    }

    /// Write the final files; returns the summary and the table.
    #[pyo3(signature = (parquet=false))]
    fn finish<'py>(&mut self, py: Python<'py>, parquet: bool) -> PyResult<Bound<'py, PyDict>> {
        let plan = self
            .plan
            .take()
            .ok_or_else(|| PyRuntimeError::new_err("this SweepPlan is finished"))?;
        let (s, records) = py.detach(|| plan.finish(parquet).map_err(input_err))?;
        summary_dict(py, &s, &self.keys, &records)
    }
}

/// Run one (point, seed) of a sweep from its task (`SweepPlan.task`); returns
/// the result line. A C scheduler runs only if the driver allowed it (the
/// task's last field) and this process does too:
/// `SCHEDLAB_ALLOW_NATIVE_SCHEDULER=1` in its environment (a Dask worker's).
#[pyfunction]
#[pyo3(signature = (text, file, sets, point, params, seed, id, native_scheduler=false))]
#[allow(clippy::too_many_arguments)]
fn run_point(
    py: Python<'_>,
    text: String,
    file: String,
    sets: Vec<String>,
    point: usize,
    params: Vec<(String, String)>,
    seed: u64,
    id: String,
    native_scheduler: bool,
) -> PyResult<String> {
    let t = PointTask {
        text,
        file: PathBuf::from(file),
        sets,
        point,
        params,
        seed,
        id,
        native_scheduler,
    };
    let worker = std::env::var_os("SCHEDLAB_ALLOW_NATIVE_SCHEDULER").is_some_and(|v| v == "1");
    let rec = py.detach(|| lib_sweep::run_point(&t, worker).map_err(input_err))?;
    serde_json::to_string(&rec).map_err(|e| PyRuntimeError::new_err(e.to_string()))
}

/// Machine presets: (name, description).
#[pyfunction]
fn machines() -> Vec<(&'static str, &'static str)> {
    schedlab::machine::presets::preset_names().to_vec()
}

/// Scheduler features: (name, on in v5.6, origin, description).
#[pyfunction]
fn features() -> Vec<(&'static str, bool, &'static str, &'static str)> {
    schedlab::sched::features::SchedFeat::ALL
        .iter()
        .map(|f| (f.name(), f.v5_6_default(), f.origin(), f.doc()))
        .collect()
}

/// Kernel presets: (name, description).
#[pyfunction]
fn kernels() -> Vec<(&'static str, &'static str)> {
    schedlab::sched::features::KERNEL_PRESETS
        .iter()
        .map(|k| (k.name, k.description))
        .collect()
}

/// Workload kinds: (name, description).
#[pyfunction]
fn workloads() -> Vec<(&'static str, &'static str)> {
    exp::workload_kinds()
}

/// A machine (preset, machine file or `host`) and its v5.6 sched domains.
#[pyfunction]
fn topology<'py>(py: Python<'py>, machine: &str) -> PyResult<Bound<'py, PyDict>> {
    let m = schedlab::machine::resolve(machine, None).map_err(input_err)?;
    let d = PyDict::new(py);
    d.set_item("text", schedlab::report::topology_text(&m))?;
    d.set_item("domains", bytes(py, &frames::domains(&m)))?;
    d.set_item("cpus", bytes(py, &frames::cpus(&m)))?;
    d.set_item("toml", schedlab::machine::file::machine_to_toml(&m))?;
    Ok(d)
}

/// `schedlab topology MACHINE --export-lisa`: the machine as LISA's PlatformInfo YAML.
#[pyfunction]
#[pyo3(signature = (machine, kernel = "v5.6", hz = 250, rtapp_calib = None))]
fn lisa_platform(
    machine: &str,
    kernel: &str,
    hz: u32,
    rtapp_calib: Option<u64>,
) -> PyResult<String> {
    let rtapp_calib = rtapp_calib.unwrap_or(schedlab::report::lisa::DEFAULT_RTAPP_NS_PER_LOOP);
    let m = schedlab::machine::resolve(machine, None).map_err(input_err)?;
    let o = schedlab::report::lisa::LisaOpts::parse(kernel, hz, rtapp_calib)
        .map_err(|e| input_err(LibInputError::new(e)))?;
    Ok(schedlab::report::lisa::platform_info_yaml(&m, &o))
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add("InputError", m.py().get_type::<InputError>())?;
    m.add_function(wrap_pyfunction!(run, m)?)?;
    m.add_function(wrap_pyfunction!(compare, m)?)?;
    m.add_function(wrap_pyfunction!(sweep, m)?)?;
    m.add_function(wrap_pyfunction!(run_point, m)?)?;
    m.add_class::<PySweepPlan>()?;
    m.add_function(wrap_pyfunction!(machines, m)?)?;
    m.add_function(wrap_pyfunction!(features, m)?)?;
    m.add_function(wrap_pyfunction!(kernels, m)?)?;
    m.add_function(wrap_pyfunction!(workloads, m)?)?;
    m.add_function(wrap_pyfunction!(topology, m)?)?;
    m.add_function(wrap_pyfunction!(lisa_platform, m)?)?;
    Ok(())
}
