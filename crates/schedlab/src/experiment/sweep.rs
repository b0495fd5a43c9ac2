//! Sweeps: a scenario over the cartesian product of scenario keys × seeds, with
//! results that survive being killed.
//!
//! A scheduler study rarely asks about one point: it asks how an effect moves with
//! the machine, the group count, the thread count, the feature set. `sweep` runs
//! every point of a grid (`--grid KEY=V1,V2,...`, repeated; each point is a set of
//! `--set` overrides; in `kernel.features` values, `+` joins several feature words)
//! for `runs` seeds each, on a pool of worker threads, and appends one JSON line per
//! finished run to `results.jsonl` in the output directory — written with one
//! `write` and flushed, so a sweep killed at any moment (even `kill -9`) leaves only
//! whole lines plus at most one torn last line. Restarting the same command reads the
//! file, drops a torn tail, skips every (point, seed) already done and runs the rest.
//! At the end both files are rewritten atomically in (point, seed) order: the JSON
//! Lines file and `results.csv` in long form (`point,<keys...>,seed,metric,value`),
//! which pandas and polars read directly. Each run's numbers depend only on its
//! scenario and seed, so the files do not depend on the thread count or on
//! interruptions.
//!
//! A resumed sweep must never mix results of different experiments. Each record
//! therefore carries the identity of its (point, seed): a SHA-256 of the schedlab
//! version and result schema, the scenario file's bytes, the point's `--set`
//! overrides and the seed. On restart a record is reused only if its identity is the
//! one the current command computes for its (point, seed); if the directory holds
//! any other record (another scenario, another grid, another schedlab version, or a
//! file from before identities), the sweep refuses, naming the file, rather than
//! silently keeping or dropping those results. Raising `--runs` keeps every finished
//! seed and runs the new ones only. (Files the scenario itself names, such as a
//! machine file, are not part of the identity.)

use crate::error::InputError;
use crate::experiment::compare::scalars;
use crate::experiment::{relabel, run, write_atomic, Overrides, RunOpts, Scenario, Source};
use std::collections::{BTreeMap, BTreeSet};
use std::io::Write as _;
use std::path::Path;
use std::sync::Mutex;

/// One grid axis: a scenario key and its values.
#[derive(Clone, Debug, PartialEq)]
pub struct Axis {
    pub key: String,
    pub values: Vec<String>,
}

impl Axis {
    /// Parse `KEY=V1,V2,...`.
    pub fn parse(s: &str) -> Result<Axis, InputError> {
        let (k, v) = s
            .split_once('=')
            .ok_or_else(|| InputError::new(format!("--grid `{s}`: expected KEY=V1,V2,...")))?;
        let values: Vec<String> = v
            .split(',')
            .map(str::trim)
            .filter(|x| !x.is_empty())
            .map(str::to_string)
            .collect();
        if k.trim().is_empty() || values.is_empty() {
            return Err(InputError::new(format!(
                "--grid `{s}`: expected KEY=V1,V2,... with at least one value"
            )));
        }
        Ok(Axis {
            key: k.trim().to_string(),
            values,
        })
    }
}

/// The most runs one sweep may hold: points × seeds (every finished run is kept in
/// memory until the files are rewritten at the end).
pub const MAX_SWEEP_RUNS: u64 = 100_000;

/// Refuse a grid whose points × `runs` exceeds [`MAX_SWEEP_RUNS`], before a single
/// point is built.
pub(crate) fn check_size(axes: &[Axis], runs: u32) -> Result<(), InputError> {
    if runs == 0 || runs > crate::experiment::MAX_RUNS {
        return Err(InputError::new(format!(
            "--runs {runs}: must be in 1..={}",
            crate::experiment::MAX_RUNS
        )));
    }
    let total = axes
        .iter()
        .try_fold(u64::from(runs), |n, a| n.checked_mul(a.values.len() as u64));
    match total {
        Some(n) if n <= MAX_SWEEP_RUNS => Ok(()),
        _ => Err(InputError::new(format!(
            "--grid × --runs: {} points × {runs} seeds is more than the limit of {MAX_SWEEP_RUNS} runs per sweep (see docs/limits.md)",
            axes.iter()
                .map(|a| a.values.len().to_string())
                .collect::<Vec<_>>()
                .join(" × ")
        ))),
    }
}

/// The points of a grid: every combination, first axis slowest.
pub fn points(axes: &[Axis]) -> Vec<Vec<(String, String)>> {
    let mut pts: Vec<Vec<(String, String)>> = vec![vec![]];
    for a in axes {
        pts = pts
            .into_iter()
            .flat_map(|p| {
                a.values.iter().map(move |v| {
                    let mut q = p.clone();
                    q.push((a.key.clone(), v.clone()));
                    q
                })
            })
            .collect();
    }
    pts
}

/// One finished run, as a JSON line.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Record {
    pub point: usize,
    pub params: BTreeMap<String, String>,
    pub seed: u64,
    pub metrics: BTreeMap<String, f64>,
    /// The identity of (point, seed) (`identity`); empty in files written before
    /// identities existed, which therefore never match.
    #[serde(default)]
    pub id: String,
}

/// The identity of one run of a sweep: SHA-256 (hex) of the schedlab version and
/// result schema, the scenario file's bytes, the point's `--set` overrides in order
/// and the seed, each length-prefixed so no two inputs share an encoding.
pub(crate) fn identity(scenario: &[u8], sets: &[String], seed: u64) -> String {
    use sha2::{Digest, Sha256};
    let mut h = Sha256::new();
    let mut field = |b: &[u8]| {
        h.update((b.len() as u64).to_le_bytes());
        h.update(b);
    };
    field(concat!("schedlab ", env!("CARGO_PKG_VERSION")).as_bytes());
    field(&crate::experiment::SCHEMA_VERSION.to_le_bytes());
    field(scenario);
    for s in sets {
        field(s.as_bytes());
    }
    field(&seed.to_le_bytes());
    h.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

/// The `--set` form of a grid value (`+` joins feature words).
fn set_of(key: &str, value: &str) -> String {
    if key == "kernel.features" {
        format!("{key}={}", value.replace('+', ","))
    } else {
        format!("{key}={value}")
    }
}

/// Read the whole lines of an existing results file; a torn last line is dropped.
pub fn read_done(path: &Path) -> Result<Vec<Record>, InputError> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(vec![]),
        Err(e) => return Err(InputError::in_file(path, None, format!("cannot read: {e}"))),
    };
    let mut out = vec![];
    let lines: Vec<&str> = text.split('\n').collect();
    for (i, l) in lines.iter().enumerate() {
        if l.trim().is_empty() {
            continue;
        }
        match serde_json::from_str::<Record>(l) {
            Ok(r) => out.push(r),
            // Only the last line can be torn by a kill.
            Err(_) if i + 1 >= lines.len() - 1 => {}
            Err(e) => {
                return Err(InputError::in_file(
                    path,
                    Some(i + 1),
                    format!("not a sweep result line: {e}"),
                ))
            }
        }
    }
    Ok(out)
}

/// What a sweep did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SweepSummary {
    pub points: usize,
    pub runs_total: usize,
    pub already_done: usize,
    pub ran: usize,
}

/// One (point, seed) of a sweep, self-contained: what a worker on another host
/// needs to run it ([`run_point`]) and what the record must carry.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct PointTask {
    /// The scenario's text and the name it was read under (relative paths inside
    /// it resolve against that name's directory).
    pub text: String,
    pub file: std::path::PathBuf,
    pub sets: Vec<String>,
    pub point: usize,
    pub params: Vec<(String, String)>,
    pub seed: u64,
    pub id: String,
    /// The driver's word that a C scheduler may run ([`Overrides::native_scheduler`]).
    #[serde(default)]
    pub native_scheduler: bool,
}

/// Run one (point, seed) from its task, anywhere. A C scheduler runs only with
/// the driver's word in the task *and* the worker's own (`worker_native`: on
/// Dask, `SCHEDLAB_ALLOW_NATIVE_SCHEDULER=1` in the worker's environment).
pub fn run_point(t: &PointTask, worker_native: bool) -> Result<Record, InputError> {
    let doc = crate::config::Doc::parse(&t.text, &t.file)?;
    let sc = Scenario::from_doc(
        doc,
        &Overrides {
            sets: t.sets.clone(),
            features: None,
            seed: None,
            native_scheduler: t.native_scheduler && worker_native,
        },
    )
    .map_err(|e| {
        if t.native_scheduler && !worker_native {
            InputError::new(format!(
                "{e} (the driver allowed it; this worker does not: \
                 SCHEDLAB_ALLOW_NATIVE_SCHEDULER=1 is not in its environment)"
            ))
        } else {
            e
        }
    })?;
    record_of(&sc, t.point, &t.params, t.seed, t.id.clone(), &t.file)
}

/// Run point `point` (scenario `sc`) with `seed` into its record.
fn record_of(
    sc: &Scenario,
    point: usize,
    params: &[(String, String)],
    seed: u64,
    id: String,
    file: &Path,
) -> Result<Record, InputError> {
    let (r, _) = run(sc, seed, 0, &RunOpts::default())
        .map_err(|e| InputError::in_file(file, None, format!("point {point} seed {seed}: {e}")))?;
    Ok(Record {
        point,
        params: params.iter().cloned().collect(),
        seed,
        metrics: scalars(&r),
        id,
    })
}

/// A sweep's steps, for any driver: the local thread pool ([`sweep`]) or a
/// distributed one (the Python package's Dask driver). [`SweepPlan::new`]
/// validates every point and takes over the output directory (refusing records of
/// another experiment); [`SweepPlan::append`] adds each finished run as one
/// flushed line; [`SweepPlan::finish`] writes the final files in (point, seed)
/// order.
pub struct SweepPlan {
    text: String,
    file: std::path::PathBuf,
    axes: Vec<Axis>,
    pts: Vec<Vec<(String, String)>>,
    scs: Vec<Scenario>,
    point_sets: Vec<Vec<String>>,
    runs: u32,
    out: std::path::PathBuf,
    done: Mutex<Vec<Record>>,
    have: Mutex<BTreeSet<(usize, u64)>>,
    already_done: usize,
    appended: Mutex<usize>,
    journal: Journal,
    native_scheduler: bool,
}

impl SweepPlan {
    /// Validate the grid's points and open `out` for appending, after checking
    /// that every record already there belongs to this very experiment;
    /// `native_scheduler`: the user's word that a C scheduler may run
    /// ([`Overrides::native_scheduler`]).
    pub fn new(
        source: Source<'_>,
        axes: &[Axis],
        runs: u32,
        out: &Path,
        native_scheduler: bool,
    ) -> Result<SweepPlan, InputError> {
        check_size(axes, runs)?;
        let (text, file) = source.text()?;
        let doc = crate::config::Doc::parse(&text, &file)?;
        std::fs::create_dir_all(out)
            .map_err(|e| InputError::in_file(out, None, format!("cannot create: {e}")))?;
        let jsonl = out.join("results.jsonl");
        let pts = points(axes);
        // Validate every point up front: bad input fails before any run.
        let mut scs: Vec<Scenario> = Vec::with_capacity(pts.len());
        let mut point_sets: Vec<Vec<String>> = Vec::with_capacity(pts.len());
        for p in &pts {
            let sets: Vec<String> = p.iter().map(|(k, v)| set_of(k, v)).collect();
            let label = p
                .iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect::<Vec<_>>();
            let ov = Overrides {
                sets: sets.clone(),
                features: None,
                seed: None,
                native_scheduler,
            };
            scs.push(
                Scenario::from_doc(doc.clone(), &ov)
                    .map_err(|e| relabel(e, &format!("--grid point {}", label.join(" "))))?,
            );
            point_sets.push(sets);
        }
        let owns = |r: &Record| {
            r.point < pts.len() && r.id == identity(text.as_bytes(), &point_sets[r.point], r.seed)
        };
        let (journal, done) = Journal::open(&jsonl, owns, |n, total, r| {
            format!(
                "holds {n} of {total} results from a different scenario, grid or schedlab \
                 version (the first: point {} seed {}), which this sweep will not mix with \
                 its own; pick a new --out directory, or move this one away to start over",
                r.point, r.seed
            )
        })?;
        let have: BTreeSet<(usize, u64)> = done.iter().map(|r| (r.point, r.seed)).collect();
        Ok(SweepPlan {
            text,
            file,
            axes: axes.to_vec(),
            pts,
            scs,
            point_sets,
            runs,
            out: out.to_path_buf(),
            already_done: have.len(),
            done: Mutex::new(done),
            have: Mutex::new(have),
            appended: Mutex::new(0),
            journal,
            native_scheduler,
        })
    }

    /// The identity of (point, seed) in this experiment.
    fn id_of(&self, point: usize, seed: u64) -> String {
        identity(self.text.as_bytes(), &self.point_sets[point], seed)
    }

    /// Whether `r` is a run of this experiment.
    fn owns(&self, r: &Record) -> bool {
        r.point < self.pts.len() && r.id == self.id_of(r.point, r.seed)
    }

    /// The grid's points.
    pub fn points(&self) -> usize {
        self.pts.len()
    }

    /// Points × seeds.
    pub fn runs_total(&self) -> usize {
        self.pts.len() * self.runs as usize
    }

    /// Runs found finished in the directory when the plan was made.
    pub fn already_done(&self) -> usize {
        self.already_done
    }

    /// The (point, seed) pairs still to run, in (point, seed) order.
    pub fn todo(&self) -> Vec<(usize, u64)> {
        let have = self.have.lock().expect("sweep lock");
        (0..self.pts.len())
            .flat_map(|i| {
                let base = self.scs[i].seed;
                (0..self.runs as u64).map(move |k| (i, base.wrapping_add(k)))
            })
            .filter(|x| !have.contains(x))
            .collect()
    }

    /// The self-contained task of (point, seed), for a worker elsewhere.
    pub fn task(&self, point: usize, seed: u64) -> Result<PointTask, InputError> {
        if point >= self.pts.len() {
            return Err(InputError::new(format!(
                "point {point}: the grid has {} points",
                self.pts.len()
            )));
        }
        Ok(PointTask {
            text: self.text.clone(),
            file: self.file.clone(),
            sets: self.point_sets[point].clone(),
            point,
            params: self.pts[point].clone(),
            seed,
            id: self.id_of(point, seed),
            native_scheduler: self.native_scheduler,
        })
    }

    /// Run (point, seed) here, with the point's already validated scenario.
    pub fn run_here(&self, point: usize, seed: u64) -> Result<Record, InputError> {
        record_of(
            &self.scs[point],
            point,
            &self.pts[point],
            seed,
            self.id_of(point, seed),
            &self.file,
        )
    }

    /// Append one finished run as a flushed line. A record of another experiment
    /// is refused; a (point, seed) already recorded is ignored (a retried task
    /// whose first attempt finished too).
    pub fn append(&self, rec: Record) -> Result<(), InputError> {
        if !self.owns(&rec) {
            return Err(InputError::new(format!(
                "a result for point {} seed {} that is not of this sweep (its identity differs)",
                rec.point, rec.seed
            )));
        }
        let mut have = self.have.lock().expect("sweep lock");
        if !have.insert((rec.point, rec.seed)) {
            return Ok(());
        }
        self.journal.append(&rec)?;
        *self.appended.lock().expect("sweep lock") += 1;
        self.done.lock().expect("sweep lock").push(rec);
        Ok(())
    }

    /// Write the final files in (point, seed) order: `results.jsonl`,
    /// `results.csv` and, with `parquet`, `results.parquet` (the CSV's long table).
    pub fn finish(self, parquet: bool) -> Result<(SweepSummary, Vec<Record>), InputError> {
        let mut done = self.done.into_inner().expect("sweep lock");
        done.sort_by_key(|r| (r.point, r.seed));
        let keys: Vec<String> = self.axes.iter().map(|a| a.key.clone()).collect();
        let mut csv = String::from("point");
        for k in &keys {
            csv.push(',');
            csv.push_str(k);
        }
        csv.push_str(",seed,metric,value\n");
        for r in &done {
            for (m, v) in &r.metrics {
                csv.push_str(&r.point.to_string());
                for k in &keys {
                    csv.push(',');
                    csv.push_str(r.params.get(k).map_or("", String::as_str));
                }
                csv.push_str(&format!(",{},{m},{v}\n", r.seed));
            }
        }
        let write = |name: &str, bytes: &[u8]| {
            let p = self.out.join(name);
            write_atomic(&p, bytes)
                .map_err(|e| InputError::in_file(&p, None, format!("cannot write: {e}")))
        };
        write("results.jsonl", lines(&done).as_bytes())?;
        write("results.csv", csv.as_bytes())?;
        if parquet {
            let t = crate::experiment::frames::sweep_long(&keys, &done);
            write("results.parquet", &crate::frame::parquet(&t))?;
        }
        let summary = SweepSummary {
            points: self.pts.len(),
            runs_total: self.pts.len() * self.runs as usize,
            already_done: self.already_done,
            ran: self.appended.into_inner().expect("sweep lock"),
        };
        Ok((summary, done))
    }
}

/// Whether every point's seeds gave identical metrics (with at least two seeds
/// somewhere): the scenario has no source of run-to-run variation and the seeds
/// are copies.
pub fn seeds_identical(records: &[Record]) -> bool {
    let mut by_point: BTreeMap<usize, Vec<&BTreeMap<String, f64>>> = BTreeMap::new();
    for r in records {
        by_point.entry(r.point).or_default().push(&r.metrics);
    }
    by_point.values().any(|v| v.len() > 1)
        && by_point
            .values()
            .all(|v| v.windows(2).all(|w| w[0] == w[1]))
}

/// Records as JSON lines.
fn lines(records: &[Record]) -> String {
    let mut text = String::new();
    for r in records {
        text.push_str(&serde_json::to_string(r).expect("record serialises"));
        text.push('\n');
    }
    text
}

/// An append-only file of [`Record`] lines that survives being killed: each
/// record is one `write`, flushed, so a kill leaves whole lines and at most one
/// torn last line. The sweep and `reproduce --out` keep their runs in one.
pub(crate) struct Journal {
    path: std::path::PathBuf,
    writer: Mutex<std::fs::File>,
}

impl Journal {
    /// Read the records already in `path` (a torn tail dropped), refuse the file if
    /// any record is not `owns`'s (`refusal(foreign, total, first foreign)` says
    /// why), rewrite it without the torn tail and open it for appending.
    pub(crate) fn open(
        path: &Path,
        owns: impl Fn(&Record) -> bool,
        refusal: impl Fn(usize, usize, &Record) -> String,
    ) -> Result<(Journal, Vec<Record>), InputError> {
        let done = read_done(path)?;
        // Reuse only records of this very experiment; refuse to mix in any other.
        let foreign: Vec<&Record> = done.iter().filter(|r| !owns(r)).collect();
        if let Some(r) = foreign.first() {
            return Err(InputError::in_file(
                path,
                None,
                refusal(foreign.len(), done.len(), r),
            ));
        }
        // Rewrite so a torn tail is gone before appending.
        write_atomic(path, lines(&done).as_bytes())
            .map_err(|e| InputError::in_file(path, None, format!("cannot write: {e}")))?;
        let writer = std::fs::OpenOptions::new()
            .append(true)
            .open(path)
            .map_err(|e| InputError::in_file(path, None, format!("cannot open: {e}")))?;
        Ok((
            Journal {
                path: path.to_path_buf(),
                writer: Mutex::new(writer),
            },
            done,
        ))
    }

    /// Append `rec` as one flushed line.
    pub(crate) fn append(&self, rec: &Record) -> Result<(), InputError> {
        let mut line = serde_json::to_string(rec).expect("record serialises");
        line.push('\n');
        let mut f = self.writer.lock().expect("writer lock");
        f.write_all(line.as_bytes())
            .and_then(|()| f.flush())
            .map_err(|e| InputError::in_file(&self.path, None, format!("cannot write: {e}")))
    }
}

/// Run the sweep of `scenario` over `axes` × `runs` seeds into `out` on `jobs`
/// threads (`parquet`: also `results.parquet`; `native_scheduler`: the user's
/// word that a C scheduler may run). `progress()` is called after each run.
#[allow(clippy::too_many_arguments)]
pub fn sweep(
    scenario: &Path,
    axes: &[Axis],
    runs: u32,
    jobs: usize,
    out: &Path,
    parquet: bool,
    native_scheduler: bool,
    progress: &(dyn Fn() + Sync),
) -> Result<SweepSummary, InputError> {
    sweep_from(
        Source::File(scenario),
        axes,
        runs,
        jobs,
        out,
        parquet,
        native_scheduler,
        progress,
    )
    .map(|(s, _)| s)
}

/// [`sweep`] of a scenario from any [`Source`]; also returns every record.
#[allow(clippy::too_many_arguments)]
pub fn sweep_from(
    source: Source<'_>,
    axes: &[Axis],
    runs: u32,
    jobs: usize,
    out: &Path,
    parquet: bool,
    native_scheduler: bool,
    progress: &(dyn Fn() + Sync),
) -> Result<(SweepSummary, Vec<Record>), InputError> {
    use rayon::prelude::*;
    let plan = SweepPlan::new(source, axes, runs, out, native_scheduler)?;
    let todo = plan.todo();
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(jobs.max(1))
        .build()
        .map_err(|e| InputError::new(e.to_string()))?;
    pool.install(|| {
        todo.par_iter().with_max_len(1).try_for_each(|&(i, seed)| {
            plan.append(plan.run_here(i, seed)?)?;
            progress();
            Ok::<(), InputError>(())
        })
    })?;
    plan.finish(parquet)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grid_points_are_the_cartesian_product() {
        let a = Axis::parse("machine.preset=juno-r0,xeon-88").unwrap();
        let b = Axis::parse("workload.groups=1,2,4").unwrap();
        let p = points(&[a, b]);
        assert_eq!(p.len(), 6);
        assert_eq!(
            p[1],
            vec![
                ("machine.preset".into(), "juno-r0".into()),
                ("workload.groups".into(), "2".into())
            ]
        );
        assert!(check_size(&[], 0).unwrap_err().msg.contains("1..=10000"));
        assert!(check_size(&[], 1).is_ok());
        assert!(check_size(&[], crate::experiment::MAX_RUNS + 1).is_err());
        assert!(Axis::parse("nokey").is_err());
        assert!(Axis::parse("k=").is_err());
        assert_eq!(
            set_of("kernel.features", "SMT_BALANCE+IDLE_CPU_MASK"),
            "kernel.features=SMT_BALANCE,IDLE_CPU_MASK"
        );
    }

    /// A fresh directory that outlives the test (kept for inspection).
    fn scratch(tag: &str) -> std::path::PathBuf {
        tempfile::Builder::new()
            .prefix(&format!("schedlab-sweep-{tag}-"))
            .tempdir()
            .unwrap()
            .keep()
    }

    const SCENARIO: &str = r#"
[machine]
preset = "juno-r0"
[run]
duration_ms = 5
[workload]
kind = "tasks"
[[workload.task]]
name = "w"
count = 2
program = [ { op = "loop", body = [ { op = "compute", work = "300us" }, { op = "sleep", time = "200us" } ] } ]
"#;

    #[test]
    fn identical_seeds_are_recognised() {
        let rec = |point, seed, v: f64| Record {
            point,
            params: BTreeMap::new(),
            seed,
            metrics: [("m".to_string(), v)].into_iter().collect(),
            id: String::new(),
        };
        assert!(seeds_identical(&[
            rec(0, 1, 1.0),
            rec(0, 2, 1.0),
            rec(1, 1, 3.0)
        ]));
        assert!(!seeds_identical(&[rec(0, 1, 1.0), rec(0, 2, 1.5)]));
        // One seed per point: nothing to compare.
        assert!(!seeds_identical(&[rec(0, 1, 1.0), rec(1, 1, 1.0)]));
    }

    #[test]
    fn identity_covers_version_scenario_sets_and_seed() {
        let sets = vec!["a=1".to_string()];
        let id = identity(b"x", &sets, 1);
        assert_eq!(id.len(), 64);
        assert_eq!(id, identity(b"x", &sets, 1));
        assert_ne!(id, identity(b"y", &sets, 1));
        assert_ne!(id, identity(b"x", &["a=2".to_string()], 1));
        assert_ne!(id, identity(b"x", &sets, 2));
        // Length prefixes: moving bytes between fields changes the identity.
        assert_ne!(
            identity(b"x", &["ab".into(), "c".into()], 1),
            identity(b"x", &["a".into(), "bc".into()], 1)
        );
    }

    #[test]
    fn resume_reuses_only_the_same_experiment() {
        let d = scratch("resume");
        let sc = d.join("s.toml");
        std::fs::write(&sc, SCENARIO).unwrap();
        let out = d.join("out");
        let axes = [Axis::parse("machine.preset=juno-r0,hikey960").unwrap()];
        let go = |axes: &[Axis], runs| sweep(&sc, axes, runs, 1, &out, false, false, &|| {});
        let s = go(&axes, 1).unwrap();
        assert_eq!((s.already_done, s.ran), (0, 2));
        let first = std::fs::read_to_string(out.join("results.jsonl")).unwrap();
        // The same command: nothing to run, same file.
        let s = go(&axes, 1).unwrap();
        assert_eq!((s.already_done, s.ran), (2, 0));
        assert_eq!(
            std::fs::read_to_string(out.join("results.jsonl")).unwrap(),
            first
        );
        // More runs: the finished seeds stay, only the new ones run.
        let s = go(&axes, 2).unwrap();
        assert_eq!((s.already_done, s.ran), (2, 2));
        let recs = read_done(&out.join("results.jsonl")).unwrap();
        assert_eq!(recs.len(), 4);
        for r in read_done_str(&first) {
            assert!(recs.contains(&r), "a finished run was recomputed or lost");
        }
        // Another grid: refused, naming the file, and the results stay as they were.
        let before = std::fs::read_to_string(out.join("results.jsonl")).unwrap();
        let other = [Axis::parse("machine.preset=juno-r0,pixel6").unwrap()];
        let e = go(&other, 2).unwrap_err();
        assert_eq!(e.file.as_deref(), Some(out.join("results.jsonl").as_path()));
        assert!(e.msg.contains("different scenario, grid"), "{e}");
        assert!(e.msg.contains("--out"), "{e}");
        assert_eq!(
            std::fs::read_to_string(out.join("results.jsonl")).unwrap(),
            before
        );
        // The same grid over an edited scenario: refused too.
        std::fs::write(&sc, SCENARIO.replace("300us", "400us")).unwrap();
        let e = go(&axes, 2).unwrap_err();
        assert!(e.msg.contains("holds 4 of 4 results"), "{e}");
        std::fs::remove_dir_all(&d).unwrap();
    }

    fn read_done_str(text: &str) -> Vec<Record> {
        text.lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }
}
