//! Benchmark workload generators: the structure of real benchmark tools rebuilt as
//! behaviour programs (`spec/workloads.md` §3).
//!
//! A generator reads the tool's options from `[workload]` (long option names, dashes
//! turned into underscores) and emits a [`WorkloadSpec`] whose programs follow the
//! tool's own code path: who creates which file descriptors, who forks whom, who
//! waits for whom, and where the tool takes its timestamps. The programs record the
//! tool's raw measurements as workload metrics; the generator's [`Tool`] turns them
//! back into the tool's printed result (and the numbers behind it, which go into the
//! result JSON under `workload.tool`), so a simulated number can sit beside a real one.
//!
//! Every generator registers here: its kind name and one-line description in
//! [`GENERATORS`] and its parser in [`parse`].

pub mod adrestia;
pub mod background;
pub mod forkbench;
pub mod hackbench;
pub mod schbench;
pub mod sysbench;
pub mod tpcc;
pub mod uperf;

use crate::config::TableReader;
use crate::error::InputError;
use crate::machine::Machine;
use crate::stats::LatencyHist;
use crate::workload::program::{MetricTable, WorkloadSpec};
use std::collections::BTreeMap;
use std::fmt::Debug;
use std::sync::Arc;

/// Generator kinds known to this build, with a one-line description each.
pub const GENERATORS: &[(&str, &str)] = &[
    (
        "hackbench",
        "hackbench: groups of senders/receivers over sockets or pipes",
    ),
    (
        "perf-messaging",
        "perf bench sched messaging (hackbench structure)",
    ),
    (
        "perf-pipe",
        "perf bench sched pipe: two tasks ping-ponging over two pipes",
    ),
    (
        "rtapp",
        "rt-app: threads described by an rt-app JSON file (`file`)",
    ),
    (
        "uperf-pingpong",
        "uperf pingpong profile: master/slave thread pairs over loopback TCP",
    ),
    ("forkbench", "forkbench: serial fork, child exit, wait"),
    (
        "oracle-tpcc",
        "Oracle TPC-C as seed 003 ran it: HammerDB's mix, one shadow per user, remote clients, LGWR group commit with per-session posts",
    ),
    (
        "schbench",
        "schbench (2016-2020): message threads waking spinning workers",
    ),
    (
        "schbench-new",
        "schbench (2023+): wakeup and request latency, RPS",
    ),
    (
        "sysbench-threads",
        "sysbench threads: lock/yield/unlock events on shared mutexes",
    ),
    (
        "sysbench-cpu",
        "sysbench cpu: prime-counting events, optional pinned groups",
    ),
    (
        "adrestia",
        "adrestia: wakeup cost of pipe-woken threads, single and periodic",
    ),
    (
        "replay",
        "a recorded scheduler trace (`file`: tracefs or trace-cmd text) replayed",
    ),
];

/// What a finished run hands to a tool's report.
#[derive(Clone, Copy, Debug)]
pub struct ToolInput<'a> {
    /// The workload's declared metrics, index-aligned with `hists`.
    pub metrics: &'a MetricTable,
    pub hists: &'a [LatencyHist],
    /// Simulated time at the end of the run (ns).
    pub sim_time_ns: u64,
}

impl<'a> ToolInput<'a> {
    /// The histogram of metric `name`, if declared.
    pub fn hist(&self, name: &str) -> Option<&'a LatencyHist> {
        self.metrics.index_of(name).map(|i| &self.hists[i])
    }
}

/// A tool's result: its printed lines and the numbers behind them.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ToolResult {
    pub text: String,
    pub values: BTreeMap<String, f64>,
}

/// How a benchmark tool reports: rebuilds the tool's output from the metrics its
/// programs recorded. `None` when the run ended before the tool would have printed
/// (e.g. a fixed-work tool stopped by the scenario's duration).
pub trait Tool: Debug + Send + Sync {
    fn report(&self, input: &ToolInput<'_>) -> Option<ToolResult>;
}

/// A generated workload and its tool.
#[derive(Clone, Debug)]
pub struct Generated {
    pub spec: WorkloadSpec,
    pub tool: Arc<dyn Tool>,
}

/// Parse `[workload]` of generator kind `kind` on machine `m`; `Ok(None)` when
/// `kind` is not a generator.
pub fn parse(
    kind: &str,
    w: &TableReader<'_>,
    m: &Machine,
) -> Result<Option<Generated>, InputError> {
    Ok(Some(match kind {
        "hackbench" | "perf-messaging" | "perf-pipe" => hackbench::parse(kind, w)?,
        "rtapp" => crate::workload::rtapp::parse(w, m)?,
        "uperf-pingpong" => uperf::parse(w, m)?,
        "forkbench" => forkbench::parse(w, m)?,
        "oracle-tpcc" => tpcc::parse(w)?,
        "tpcc-proxy" => {
            return Err(w.err(
                "kind",
                "kind `tpcc-proxy` was replaced by `oracle-tpcc` (docs/scenarios.md): \
                 a model of seed 003's Oracle TPC-C with its sources, not a proxy",
            ))
        }
        "schbench" | "schbench-new" => schbench::parse(kind, w, m)?,
        "sysbench-threads" | "sysbench-cpu" => sysbench::parse(kind, w, m)?,
        "adrestia" => adrestia::parse(w)?,
        "replay" => crate::workload::replay::parse(w, m)?,
        _ => return Ok(None),
    }))
}

/// The workload's `file` (`[workload] file = "..."`, relative to the scenario file)
/// and its text. `need` says what the key should name when it is missing, `what` is
/// the file's kind in a read error ("rt-app file", "trace file").
pub(crate) fn workload_file(
    w: &TableReader<'_>,
    need: &str,
    what: &str,
) -> Result<(std::path::PathBuf, String), InputError> {
    let rel = w.str("file")?.ok_or_else(|| w.err("file", need))?;
    let base = w
        .doc
        .file
        .parent()
        .map(std::path::Path::to_path_buf)
        .unwrap_or_default();
    let path = base.join(rel);
    let text = crate::input::read_text(&path).map_err(|e| {
        w.err(
            "file",
            format!("cannot read {what} {}: {}", path.display(), e.msg),
        )
    })?;
    Ok((path, text))
}

/// Read a positive integer option `key` (default `def`).
pub fn pos(w: &TableReader<'_>, key: &'static str, def: u32) -> Result<u32, InputError> {
    match w.int(key)? {
        None => Ok(def),
        Some(v) if v >= 1 && v <= u32::MAX as i64 => Ok(v as u32),
        Some(v) => Err(w.err(
            key,
            format!("`{key}` must be an integer in 1..={}, found {v}", u32::MAX),
        )),
    }
}

/// A number of seconds as a tool's option gives it (an integer or a decimal), in
/// ns: `None` unless it is finite, `>= 0` and within the engine's
/// [`MAX_TIME_NS`](crate::engine::MAX_TIME_NS).
pub(crate) fn secs_to_ns(v: &crate::config::Val) -> Option<u64> {
    use crate::config::Val;
    use crate::engine::{checked_ns, checked_ns_f64, NSEC_PER_SEC};
    match *v {
        Val::Int(i) if i >= 0 => checked_ns(i as u64, NSEC_PER_SEC),
        Val::Float(f) if f >= 0.0 => checked_ns_f64(f, NSEC_PER_SEC),
        _ => None,
    }
}

/// A positive number of seconds under `key` (default `def_ns`), as ns.
pub(crate) fn secs_opt(
    w: &TableReader<'_>,
    key: &'static str,
    def_ns: u64,
) -> Result<u64, InputError> {
    let Some(n) = w.get(key) else {
        return Ok(def_ns);
    };
    match secs_to_ns(&n.val) {
        Some(v) if v > 0 => Ok(v),
        _ => Err(w.err(
            key,
            format!(
                "`{key}` must be a positive number of seconds (at most {})",
                crate::engine::MAX_TIME_NS / crate::engine::NSEC_PER_SEC
            ),
        )),
    }
}

/// `ns` as the `S.mmm` seconds most tools print (truncated to milliseconds).
pub(crate) fn secs_ms(ns: u64) -> String {
    let ms = ns / 1_000_000;
    format!("{}.{:03}", ms / 1000, ms % 1000)
}

/// The fixed compute amounts of program `p`, in order (generator tests).
#[cfg(test)]
pub(crate) fn const_computes(p: &crate::workload::program::Program) -> Vec<u64> {
    use crate::workload::{dist::Dist, program::Op};
    p.ops
        .iter()
        .filter_map(|o| match o {
            Op::Compute(Dist::Const(w)) => Some(*w),
            _ => None,
        })
        .collect()
}
