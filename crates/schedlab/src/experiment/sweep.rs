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
use crate::experiment::{relabel, run, write_atomic, Overrides, RunOpts, Scenario};
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

/// Run the sweep of `scenario` over `axes` × `runs` seeds into `out`.
/// `progress()` is called after each run.
pub fn sweep(
    scenario: &Path,
    axes: &[Axis],
    runs: u32,
    jobs: usize,
    out: &Path,
    progress: &(dyn Fn() + Sync),
) -> Result<SweepSummary, InputError> {
    use rayon::prelude::*;
    check_size(axes, runs)?;
    std::fs::create_dir_all(out)
        .map_err(|e| InputError::in_file(out, None, format!("cannot create: {e}")))?;
    let jsonl = out.join("results.jsonl");
    let pts = points(axes);
    let bytes = std::fs::read(scenario)
        .map_err(|e| InputError::in_file(scenario, None, format!("cannot read: {e}")))?;
    // Validate every point up front: bad input fails before any run.
    let mut scs: Vec<Scenario> = Vec::with_capacity(pts.len());
    let mut point_sets: Vec<Vec<String>> = Vec::with_capacity(pts.len());
    for p in &pts {
        let sets: Vec<String> = p.iter().map(|(k, v)| set_of(k, v)).collect();
        let label = p
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>();
        scs.push(
            Scenario::load(
                scenario,
                &Overrides {
                    sets: sets.clone(),
                    features: None,
                    seed: None,
                },
            )
            .map_err(|e| relabel(e, &format!("--grid point {}", label.join(" "))))?,
        );
        point_sets.push(sets);
    }
    let id_of = |point: usize, seed: u64| identity(&bytes, &point_sets[point], seed);
    let mut done = read_done(&jsonl)?;
    // Reuse only records of this very experiment; refuse to mix in any other.
    let foreign: Vec<&Record> = done
        .iter()
        .filter(|r| r.point >= pts.len() || r.id != id_of(r.point, r.seed))
        .collect();
    if let Some(r) = foreign.first() {
        return Err(InputError::in_file(
            &jsonl,
            None,
            format!(
                "holds {} of {} results from a different scenario, grid or schedlab \
                 version (the first: point {} seed {}), which this sweep will not mix with \
                 its own; pick a new --out directory, or move this one away to start over",
                foreign.len(),
                done.len(),
                r.point,
                r.seed
            ),
        ));
    }
    // Rewrite so a torn tail is gone before appending.
    let mut text = String::new();
    for r in &done {
        text.push_str(&serde_json::to_string(r).expect("record serialises"));
        text.push('\n');
    }
    write_atomic(&jsonl, text.as_bytes())
        .map_err(|e| InputError::in_file(&jsonl, None, format!("cannot write: {e}")))?;
    let have: BTreeSet<(usize, u64)> = done.iter().map(|r| (r.point, r.seed)).collect();
    let todo: Vec<(usize, u64)> = (0..pts.len())
        .flat_map(|i| {
            let base = scs[i].seed;
            (0..runs as u64).map(move |k| (i, base.wrapping_add(k)))
        })
        .filter(|x| !have.contains(x))
        .collect();
    let file = std::fs::OpenOptions::new()
        .append(true)
        .open(&jsonl)
        .map_err(|e| InputError::in_file(&jsonl, None, format!("cannot open: {e}")))?;
    let file = Mutex::new(file);
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(jobs.max(1))
        .build()
        .map_err(|e| InputError::new(e.to_string()))?;
    let results: Vec<Result<Record, InputError>> = pool.install(|| {
        todo.par_iter()
            .map(|&(i, seed)| {
                let (r, _) = run(&scs[i], seed, 0, &RunOpts::default()).map_err(|e| {
                    InputError::in_file(scenario, None, format!("point {i} seed {seed}: {e}"))
                })?;
                let rec = Record {
                    point: i,
                    params: pts[i].iter().cloned().collect(),
                    seed,
                    metrics: scalars(&r),
                    id: id_of(i, seed),
                };
                let mut line = serde_json::to_string(&rec).expect("record serialises");
                line.push('\n');
                {
                    let mut f = file.lock().expect("writer lock");
                    f.write_all(line.as_bytes())
                        .and_then(|()| f.flush())
                        .map_err(|e| {
                            InputError::in_file(&jsonl, None, format!("cannot write: {e}"))
                        })?;
                }
                progress();
                Ok(rec)
            })
            .collect()
    });
    let ran = results.len();
    for r in results {
        done.push(r?);
    }
    done.sort_by_key(|r| (r.point, r.seed));
    // Final files in (point, seed) order.
    let mut text = String::new();
    let mut csv = String::from("point");
    for a in axes {
        csv.push(',');
        csv.push_str(&a.key);
    }
    csv.push_str(",seed,metric,value\n");
    for r in &done {
        text.push_str(&serde_json::to_string(r).expect("record serialises"));
        text.push('\n');
        for (m, v) in &r.metrics {
            csv.push_str(&r.point.to_string());
            for a in axes {
                csv.push(',');
                csv.push_str(r.params.get(&a.key).map_or("", String::as_str));
            }
            csv.push_str(&format!(",{},{m},{v}\n", r.seed));
        }
    }
    write_atomic(&jsonl, text.as_bytes())
        .map_err(|e| InputError::in_file(&jsonl, None, format!("cannot write: {e}")))?;
    let csvp = out.join("results.csv");
    write_atomic(&csvp, csv.as_bytes())
        .map_err(|e| InputError::in_file(&csvp, None, format!("cannot write: {e}")))?;
    Ok(SweepSummary {
        points: pts.len(),
        runs_total: pts.len() * runs as usize,
        already_done: have.len(),
        ran,
    })
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
        let go = |axes: &[Axis], runs| sweep(&sc, axes, runs, 1, &out, &|| {});
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
