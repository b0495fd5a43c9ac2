//! The oracle suite: recorded real-kernel runs across topologies, checked without
//! QEMU.
//!
//! A validation that needs a ten-minute emulator run is a validation nobody runs.
//! So the suite separates the two halves of the oracle. *Recording* boots each
//! kernel once per topology of `scenarios/oracle/suite.toml` and runs, under one
//! trace each, the guest calibration and every case of that topology; the run's
//! artifacts (sysfs snapshot, domain dumps, traces, `schedstat`, `meta.json`; not
//! the console log) are packed into one deterministic `tar.gz` per topology and
//! kernel. *Checking* unpacks each bundle, imports the guest machine, compares the
//! domain chains and, case by case, the real trace's decisions with the simulated
//! ones: that is what `cargo test` does against the committed bundles, so a model
//! change that moves a decision statistic across a verdict threshold shows up as a
//! changed verdict table.
//!
//! A topology is named by its machine file's stem (`machines/2s4c2t-2n.toml` →
//! `2s4c2t-2n`), a bundle by topology and kernel (`2s4c2t-2n-5.10.tar.gz`).

use super::decisions::verdicts::RunVerdict;
use super::decisions::Verdict;
use super::domains::DomainComparison;
use super::guest::qemu::GuestTopology;
use super::guest::{bundle_name, pack, unpack, GuestJob, GuestMeta, GuestRequest, KernelChoice};
#[cfg(test)]
use super::CALIBRATE_COMMAND;
use super::{Artifacts, CaseOutcome, CALIBRATE_JOB};
use crate::error::InputError;
use crate::machine::file::load_machine_file;
use serde::{Deserialize, Serialize};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SuiteFile {
    kernels: Vec<String>,
    /// Real runs of every case per boot (default 1).
    repetitions: Option<u32>,
    /// Simulated seeds per case (default 5).
    sim_seeds: Option<u32>,
    /// `run.noise` of the simulated runs when a case sets none (default 0.05).
    noise: Option<f64>,
    /// Per case: the `--set`s of its deliberately wrong model (default: random
    /// placement, [`super::DEFAULT_CONTROL`]).
    #[serde(default)]
    controls: std::collections::BTreeMap<String, Vec<String>>,
    /// `--set`s of every simulation of every case, the model's and the control's
    /// (default [`super::GUEST_MODEL`], the guests' kernel threads; `[]` for none).
    model: Option<Vec<String>>,
    topology: Vec<TopologyFile>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TopologyFile {
    machine: String,
    cases: Vec<String>,
}

/// The suite as loaded and checked.
#[derive(Clone, Debug)]
pub struct Suite {
    /// The directory of the suite file (cases and machines are relative to it).
    pub dir: PathBuf,
    pub kernels: Vec<String>,
    pub topologies: Vec<SuiteTopology>,
    /// Real runs of every case per boot.
    pub repetitions: u32,
    /// Simulated seeds per case and their noise.
    pub sim_seeds: u32,
    pub noise: f64,
    /// Per case: its control's overrides, where not the default.
    pub controls: std::collections::BTreeMap<String, Vec<String>>,
    /// Overrides of every simulation (model and control).
    pub model: Vec<String>,
}

/// One topology and its cases.
#[derive(Clone, Debug)]
pub struct SuiteTopology {
    pub name: String,
    pub machine: PathBuf,
    pub guest: GuestTopology,
    pub cases: Vec<String>,
}

impl SuiteTopology {
    /// The overrides that put a case on this topology.
    pub fn sets(&self) -> Vec<String> {
        vec![format!("machine.file={}", self.machine.display())]
    }
}

impl Suite {
    /// Load `path`, checking that every machine loads and fits QEMU and every case
    /// exists and has a real program.
    pub fn load(path: &Path) -> Result<Suite, InputError> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| InputError::in_file(path, None, format!("cannot read: {e}")))?;
        let f: SuiteFile = toml::from_str(&text).map_err(|e| {
            let line = e.span().map(|s| crate::error::line_of(&text, s.start));
            InputError::in_file(path, line, e.message().to_string())
        })?;
        let dir = path.parent().unwrap_or(Path::new("")).to_path_buf();
        let dir = std::path::absolute(&dir).unwrap_or(dir);
        let err = |msg: String| InputError::in_file(path, None, msg);
        for k in &f.kernels {
            KernelChoice::parse(k).map_err(|e| err(format!("kernel `{k}`: {e}")))?;
        }
        let mut topologies = Vec::new();
        for t in &f.topology {
            let machine = dir.join(&t.machine);
            let m = load_machine_file(&machine)?;
            let guest = GuestTopology::from_machine(&m)
                .map_err(|e| err(format!("machine `{}`: {e}", t.machine)))?;
            let name = machine
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default();
            if topologies.iter().any(|x: &SuiteTopology| x.name == name) {
                return Err(err(format!("topology `{name}` listed twice")));
            }
            let topo = SuiteTopology {
                name,
                machine,
                guest,
                cases: t.cases.clone(),
            };
            for c in &t.cases {
                if c == CALIBRATE_JOB {
                    return Err(err(format!("`{c}` is the calibration job's name")));
                }
                super::OracleCase::load(&dir.join(format!("{c}.toml")), &topo.sets(), false)?;
            }
            topologies.push(topo);
        }
        let repetitions = f.repetitions.unwrap_or(1);
        if !(1..=50).contains(&repetitions) {
            return Err(err(format!(
                "repetitions = {repetitions}: must be 1 ..= 50"
            )));
        }
        let sim_seeds = f.sim_seeds.unwrap_or(5);
        if !(1..=100).contains(&sim_seeds) {
            return Err(err(format!("sim_seeds = {sim_seeds}: must be 1 ..= 100")));
        }
        let noise = f.noise.unwrap_or(0.05);
        if !(0.0..1.0).contains(&noise) {
            return Err(err(format!("noise = {noise}: must be in [0, 1)")));
        }
        for c in f.controls.keys() {
            if !topologies.iter().any(|t| t.cases.contains(c)) {
                return Err(err(format!("controls: `{c}` is no case of the suite")));
            }
        }
        Ok(Suite {
            dir,
            kernels: f.kernels,
            topologies,
            repetitions,
            sim_seeds,
            noise,
            controls: f.controls,
            model: f
                .model
                .unwrap_or_else(|| super::GUEST_MODEL.iter().map(|s| s.to_string()).collect()),
        })
    }

    /// How case `case` is simulated for the comparison over runs.
    pub fn runs_cfg(&self, case: &str) -> super::RunsCfg {
        super::RunsCfg {
            sim_seeds: self.sim_seeds,
            noise: self.noise,
            model: self.model.clone(),
            control: self
                .controls
                .get(case)
                .cloned()
                .unwrap_or_else(|| vec![super::DEFAULT_CONTROL.to_string()]),
        }
    }

    pub(crate) fn case_path(&self, case: &str) -> PathBuf {
        self.dir.join(format!("{case}.toml"))
    }

    /// The guest jobs of one topology's boot: the calibration (when given), then
    /// every case.
    pub(crate) fn guest_jobs(
        &self,
        topo: &SuiteTopology,
        calibrate: Option<GuestJob>,
        kernel: &KernelChoice,
    ) -> Result<Vec<GuestJob>, String> {
        let mut jobs: Vec<GuestJob> = calibrate.into_iter().collect();
        for c in &topo.cases {
            let case = super::OracleCase::load(&self.case_path(c), &topo.sets(), false)
                .map_err(|e| e.to_string())?;
            jobs.push(case.job(c, kernel)?);
        }
        Ok(jobs)
    }
}

/// Boot `kernel` on `topo`, run the calibration with the schedlab binary `exe` and
/// every case, and pack the run as `data_dir/<bundle>`. `adjust` may change the
/// request (timeouts, cache).
pub fn record(
    suite: &Suite,
    topo: &SuiteTopology,
    kernel: &str,
    exe: &Path,
    data_dir: &Path,
    adjust: &dyn Fn(&mut GuestRequest),
) -> Result<GuestMeta, String> {
    let choice = KernelChoice::parse(kernel)?;
    let jobs = suite.guest_jobs(topo, Some(super::calibrate_job(exe)?), &choice)?;
    let mut req = GuestRequest::new(topo.guest.clone(), choice, jobs);
    req.repetitions = suite.repetitions;
    adjust(&mut req);
    let work = std::env::temp_dir().join(format!(
        "schedlab-oracle-record-{}-{}-{kernel}",
        std::process::id(),
        topo.name
    ));
    let _ = std::fs::remove_dir_all(&work);
    let run = super::guest::run_guest(&req, &work)?;
    std::fs::create_dir_all(data_dir).map_err(|e| format!("{}: {e}", data_dir.display()))?;
    let r = pack(&work, &data_dir.join(bundle_name(&topo.name, kernel)));
    let _ = std::fs::remove_dir_all(&work);
    r.map(|_| run.meta)
}

/// One recorded boot, checked.
#[derive(Clone, Debug, Serialize)]
pub struct BootCheck {
    pub topology: String,
    pub kernel: String,
    pub release: String,
    pub domains: DomainComparison,
    pub cases: Vec<CaseOutcome>,
}

/// Check every recorded bundle of `suite` found in `data_dir` (topology and kernel
/// names may be restricted); bundles not recorded are listed in the second value.
pub fn check(
    suite: &Suite,
    data_dir: &Path,
    only_topology: Option<&str>,
    only_kernel: Option<&str>,
) -> Result<(Vec<BootCheck>, Vec<String>), String> {
    use rayon::prelude::*;
    let mut boots = Vec::new();
    let mut missing = Vec::new();
    for topo in &suite.topologies {
        if only_topology.is_some_and(|t| t != topo.name) {
            continue;
        }
        for kernel in &suite.kernels {
            if only_kernel.is_some_and(|k| k != kernel) {
                continue;
            }
            let name = bundle_name(&topo.name, kernel);
            let bundle = data_dir.join(&name);
            if !bundle.exists() {
                missing.push(name);
                continue;
            }
            boots.push((topo, kernel, bundle));
        }
    }
    // The boots are independent (each its own simulations): checked in parallel, in
    // suite order.
    let out = boots
        .par_iter()
        .map(|(topo, kernel, bundle)| {
            let tmp = std::env::temp_dir().join(format!(
                "schedlab-oracle-check-{}-{}-{kernel}",
                std::process::id(),
                topo.name
            ));
            let _ = std::fs::remove_dir_all(&tmp);
            let r = check_bundle(suite, topo, kernel, bundle, &tmp);
            let _ = std::fs::remove_dir_all(&tmp);
            r
        })
        .collect::<Result<Vec<_>, String>>()?;
    Ok((out, missing))
}

fn check_bundle(
    suite: &Suite,
    topo: &SuiteTopology,
    kernel: &str,
    bundle: &Path,
    tmp: &Path,
) -> Result<BootCheck, String> {
    unpack(bundle, tmp)?;
    let art = Artifacts::open(tmp)?;
    let domains = art.domains()?;
    let mut cases = Vec::new();
    for c in &topo.cases {
        let o = super::OracleCase::load(&suite.case_path(c), &[], false)
            .map_err(|e| e.to_string())
            .and_then(|case| super::compare_job(&art, c, &case, &suite.runs_cfg(c)))
            .map_err(|e| format!("{}: case {c}: {e}", bundle.display()))?;
        cases.push(o);
    }
    Ok(BootCheck {
        topology: topo.name.clone(),
        kernel: kernel.to_string(),
        release: art.release.clone(),
        domains,
        cases,
    })
}

/// Every verdict, one line each (`topology kernel case statistic verdict`), in
/// suite order: the golden form `cargo test` compares.
pub fn verdict_lines(checks: &[BootCheck]) -> String {
    let mut s = String::new();
    for b in checks {
        let d = if b.domains.all_match() {
            "match"
        } else {
            "differ"
        };
        let _ = writeln!(s, "{} {} domains {d}", b.topology, b.kernel);
        for c in &b.cases {
            for r in &c.comparison.rows {
                let over = |x: Option<&super::decisions::verdicts::RunComparison>| {
                    x.and_then(|x| x.row(&r.statistic))
                        .map_or("-", |x| x.verdict.name())
                };
                let _ = writeln!(
                    s,
                    "{} {} {} {} {} | runs {} control {}",
                    b.topology,
                    b.kernel,
                    c.case,
                    r.statistic,
                    r.verdict.name(),
                    over(Some(&c.runs)),
                    over(Some(&c.control))
                );
            }
            // Rows compared over runs only (the tool's printed time).
            for r in &c.runs.rows {
                if c.comparison.rows.iter().any(|x| x.statistic == r.statistic) {
                    continue;
                }
                let control = c
                    .control
                    .row(&r.statistic)
                    .map_or("-", |x| x.verdict.name());
                let _ = writeln!(
                    s,
                    "{} {} {} {} - | runs {} control {control}",
                    b.topology,
                    b.kernel,
                    c.case,
                    r.statistic,
                    r.verdict.name()
                );
            }
        }
    }
    s
}

/// The comparison over runs, as a Markdown table: one row per topology, kernel and
/// case with its real and simulated runs and its verdict counts over every
/// statistic; then, over the [`HEADLINE`] statistics with data, how many are
/// powered (consistent or differs), how many consistent, and how many the control
/// makes differ (*discriminating*). Then the totals per kernel: the share of powered
/// headline statistics that are consistent, and the share the control makes differ.
pub fn runs_markdown(checks: &[BootCheck]) -> String {
    use super::decisions::verdicts::RunVerdict as V;
    let mut s = String::from(
        "| topology | kernel | case | real runs | sim runs | consistent | differs | underpowered | n/a | headline: powered | consistent | control differs |\n|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n",
    );
    let mut totals: std::collections::BTreeMap<String, [usize; 4]> = Default::default();
    for b in checks {
        for c in &b.cases {
            let r = &c.runs;
            let runs = |f: &dyn Fn(&super::decisions::verdicts::RunRow) -> usize| {
                r.rows.iter().map(f).max().unwrap_or(0)
            };
            let (rr, sr) = (runs(&|x| x.real_runs), runs(&|x| x.sim_runs));
            let mut h = [0usize; 4]; // headline: with data, powered, consistent, control differs
            for st in HEADLINE {
                let Some(row) = r.row(st) else { continue };
                if row.verdict == V::NoData {
                    continue;
                }
                h[0] += 1;
                if matches!(row.verdict, V::Consistent | V::Differs) {
                    h[1] += 1;
                }
                if row.verdict == V::Consistent {
                    h[2] += 1;
                }
                if c.control.row(st).is_some_and(|x| x.verdict == V::Differs) {
                    h[3] += 1;
                }
            }
            let t = totals.entry(b.kernel.clone()).or_default();
            for (a, x) in t.iter_mut().zip(h) {
                *a += x;
            }
            let _ = writeln!(
                s,
                "| {} | {} | {} | {rr} | {sr} | {} | {} | {} | {} | {} of {} | {} | {} of {} |",
                b.topology,
                b.kernel,
                c.case,
                r.count(V::Consistent),
                r.count(V::Differs),
                r.count(V::Underpowered),
                r.count(V::NoData),
                h[1],
                h[0],
                h[2],
                h[3],
                h[0],
            );
        }
    }
    s.push('\n');
    let pct = |a: usize, b: usize| {
        if b == 0 {
            "-".to_string()
        } else {
            format!("{:.0} %", 100.0 * a as f64 / b as f64)
        }
    };
    for (k, t) in &totals {
        let _ = writeln!(
            s,
            "{k}: {} of {} headline statistics with data are powered; {} of them consistent ({}); the control differs on {} of {} ({}).",
            t[1],
            t[0],
            t[2],
            pct(t[2], t[1]),
            t[3],
            t[0],
            pct(t[3], t[0])
        );
    }
    s
}

/// The verdicts over runs per kernel and statistic family (the name's first word:
/// `fork`, `wakeup`, `migrations`, `spread`, `occupancy`, `tool`), over every
/// statistic with data: first the powered ones (consistent or differs) and the
/// share of them consistent, then the underpowered, then how many the control
/// makes differ (the discriminating ones).
pub fn families_markdown(checks: &[BootCheck]) -> String {
    let t = tally(run_rows(checks), |kernel, statistic| {
        let family = statistic.split('.').next().unwrap_or("");
        Some((kernel.to_string(), family.to_string()))
    });
    let mut s = String::from(
        "| kernel | family | powered | consistent | differs | underpowered | control differs |\n|---|---|---:|---:|---:|---:|---:|\n",
    );
    for ((k, f), e) in &t {
        let powered = e[0] + e[1];
        let with_data = powered + e[2];
        let share = if powered == 0 {
            "-".to_string()
        } else {
            format!("{} ({:.0} %)", e[0], 100.0 * e[0] as f64 / powered as f64)
        };
        let _ = writeln!(
            s,
            "| {k} | {f} | {powered} of {with_data} | {share} | {} | {} | {} of {with_data} |",
            e[1], e[2], e[3]
        );
    }
    s
}

/// Every statistic compared over runs: (kernel, statistic, verdict, the control's).
fn run_rows(
    checks: &[BootCheck],
) -> impl Iterator<Item = (&str, &str, RunVerdict, Option<RunVerdict>)> {
    checks.iter().flat_map(|b| {
        b.cases.iter().flat_map(move |c| {
            c.runs.rows.iter().map(move |r| {
                let control = c.control.row(&r.statistic).map(|x| x.verdict);
                (b.kernel.as_str(), r.statistic.as_str(), r.verdict, control)
            })
        })
    })
}

/// The verdicts over runs of the rows with data, grouped by `key(kernel, statistic)`
/// (`None`: left out): `[consistent, differs, underpowered, control differs]`.
fn tally<'a, K: Ord>(
    rows: impl Iterator<Item = (&'a str, &'a str, RunVerdict, Option<RunVerdict>)>,
    key: impl Fn(&str, &str) -> Option<K>,
) -> std::collections::BTreeMap<K, [usize; 4]> {
    let mut t: std::collections::BTreeMap<K, [usize; 4]> = Default::default();
    for (kernel, statistic, v, control) in rows {
        if v == RunVerdict::NoData {
            continue;
        }
        let Some(k) = key(kernel, statistic) else {
            continue;
        };
        let e = t.entry(k).or_default();
        match v {
            RunVerdict::Consistent => e[0] += 1,
            RunVerdict::Differs => e[1] += 1,
            _ => e[2] += 1,
        }
        if control == Some(RunVerdict::Differs) {
            e[3] += 1;
        }
    }
    t
}

/// The [`tally`] of the [`HEADLINE`] statistics, by (statistic, kernel).
fn headline_counts<'a>(
    rows: impl Iterator<Item = (&'a str, &'a str, RunVerdict, Option<RunVerdict>)>,
) -> std::collections::BTreeMap<(String, String), [usize; 4]> {
    tally(rows, |kernel, statistic| {
        HEADLINE
            .contains(&statistic)
            .then(|| (statistic.to_string(), kernel.to_string()))
    })
}

/// What each [`HEADLINE`] statistic can tell over runs, per kernel (Markdown): one row
/// per statistic, a cell per kernel of `consistent / differs / underpowered (control
/// differs)` over the cases with data.
pub fn headline_runs_markdown(checks: &[BootCheck]) -> String {
    let t = headline_counts(run_rows(checks));
    let kernels: std::collections::BTreeSet<&str> =
        checks.iter().map(|b| b.kernel.as_str()).collect();
    let mut s = String::from("| statistic |");
    for k in &kernels {
        let _ = write!(
            s,
            " {k}: consistent / differs / underpowered (control differs) |"
        );
    }
    s.push_str("\n|---|");
    for _ in &kernels {
        s.push_str("---|");
    }
    s.push('\n');
    for h in HEADLINE {
        let _ = write!(s, "| {h} |");
        for k in &kernels {
            match t.get(&(h.to_string(), k.to_string())) {
                Some(e) => {
                    let _ = write!(s, " {} / {} / {} ({}) |", e[0], e[1], e[2], e[3]);
                }
                None => s.push_str(" - |"),
            }
        }
        s.push('\n');
    }
    s
}

/// The time each tool-timed case's tool printed (hackbench's `Time:`), real against
/// simulated: the means over runs, their ratio with its 95 % interval, the verdict
/// (a factor of 1.5 is the size that matters).
pub fn tool_times_markdown(checks: &[BootCheck]) -> String {
    let mut s = String::from(
        "| topology | kernel | case | real s (runs) | sim s (runs) | sim / real | 95 % interval | verdict |\n|---|---|---|---:|---:|---:|---|---|\n",
    );
    for b in checks {
        for c in &b.cases {
            let Some(r) = c.runs.row(super::workload::TOOL_TIME) else {
                continue;
            };
            let v = |x: Option<f64>| x.map_or("-".to_string(), |x| format!("{x:.3}"));
            let ratio = match (r.real, r.sim) {
                (Some(a), Some(b)) if a > 0.0 => format!("{:.2}", b / a),
                _ => "-".to_string(),
            };
            let iv = r.diff.map_or("-".to_string(), |d| {
                format!("{:.2} … {:.2}", d.lo.exp(), d.hi.exp())
            });
            let _ = writeln!(
                s,
                "| {} | {} | {} | {} ({}) | {} ({}) | {ratio} | {iv} | {} |",
                b.topology,
                b.kernel,
                c.case,
                v(r.real),
                r.real_runs,
                v(r.sim),
                r.sim_runs,
                r.verdict.name()
            );
        }
    }
    s
}

/// The suite as a Markdown table: one row per topology, kernel and case with its
/// verdict counts and the statistics that differ.
pub fn summary_markdown(checks: &[BootCheck]) -> String {
    let mut s = String::from(
        "| topology | kernel | case | match | close | differ | n/a | differing statistics |\n|---|---|---|---:|---:|---:|---:|---|\n",
    );
    for b in checks {
        let d = if b.domains.all_match() {
            "all CPUs match".to_string()
        } else {
            "**differ** (see the domain table)".to_string()
        };
        let _ = writeln!(
            s,
            "| {} | {} ({}) | domains | | | | | {d} |",
            b.topology, b.kernel, b.release
        );
        for c in &b.cases {
            let cmp = &c.comparison;
            let differ: Vec<&str> = cmp
                .rows
                .iter()
                .filter(|r| r.verdict == Verdict::Differ)
                .map(|r| r.statistic.as_str())
                .collect();
            let _ = writeln!(
                s,
                "| {} | {} | {} | {} | {} | {} | {} | {} |",
                b.topology,
                b.kernel,
                c.case,
                cmp.count(Verdict::Match),
                cmp.count(Verdict::Close),
                cmp.count(Verdict::Differ),
                cmp.count(Verdict::NoData),
                differ.join(", ")
            );
        }
    }
    s
}

/// The statistics of the per-case table: one per decision family (the per-class
/// rows under a distribution are in the full comparison).
pub const HEADLINE: &[&str] = &[
    "fork.level",
    "fork.reach.core",
    "wakeup.class",
    "wakeup.vs_waker",
    "migrations.level",
    "migrations.wakeup_share",
    "migrations.rate.wakeup",
    "migrations.rate.balance",
    "spread.core.ms",
    "spread.node.ms",
    "occupancy.imbalance.core",
    "occupancy.idle_while_overloaded",
];

/// The per-case, per-statistic table of [`HEADLINE`] statistics (Markdown): each
/// cell is the verdict (`M` match, `C` close, `D` differ, `–` no data or not
/// compared) and the distance.
pub fn headline_markdown(checks: &[BootCheck]) -> String {
    let mut s = String::from("| topology | kernel | case |");
    for h in HEADLINE {
        let _ = write!(s, " {h} |");
    }
    s.push_str("\n|---|---|---|");
    for _ in HEADLINE {
        s.push_str("---|");
    }
    s.push('\n');
    for b in checks {
        for c in &b.cases {
            let _ = write!(s, "| {} | {} | {} |", b.topology, b.kernel, c.case);
            for h in HEADLINE {
                let cell = match c.comparison.rows.iter().find(|r| r.statistic == *h) {
                    None => "–".to_string(),
                    Some(r) => {
                        let v = match r.verdict {
                            Verdict::Match => "M",
                            Verdict::Close => "C",
                            Verdict::Differ => "D",
                            Verdict::NoData => "–",
                        };
                        match r.distance {
                            Some(d) => format!("{v} {d:.2}"),
                            None => v.to_string(),
                        }
                    }
                };
                let _ = write!(s, " {cell} |");
            }
            s.push('\n');
        }
    }
    s
}

/// Per statistic and kernel, how many cases match, are close, differ or have no
/// data: where the model is right across topologies and where it is not.
pub fn by_statistic_markdown(checks: &[BootCheck]) -> String {
    use std::collections::BTreeMap;
    let mut kernels: Vec<&str> = checks.iter().map(|b| b.kernel.as_str()).collect();
    kernels.sort();
    kernels.dedup();
    let mut order: Vec<String> = Vec::new();
    let mut counts: BTreeMap<(String, String), [usize; 4]> = BTreeMap::new();
    for b in checks {
        for c in &b.cases {
            for r in &c.comparison.rows {
                if !order.contains(&r.statistic) {
                    order.push(r.statistic.clone());
                }
                let e = counts
                    .entry((r.statistic.clone(), b.kernel.clone()))
                    .or_default();
                e[match r.verdict {
                    Verdict::Match => 0,
                    Verdict::Close => 1,
                    Verdict::Differ => 2,
                    Verdict::NoData => 3,
                }] += 1;
            }
        }
    }
    let mut s = String::from("| statistic |");
    for k in &kernels {
        let _ = write!(s, " {k}: match / close / differ / n/a |");
    }
    s.push_str("\n|---|");
    for _ in &kernels {
        s.push_str("---|");
    }
    s.push('\n');
    for st in &order {
        let _ = write!(s, "| {st} |");
        for k in &kernels {
            let c = counts
                .get(&(st.clone(), k.to_string()))
                .copied()
                .unwrap_or_default();
            let _ = write!(s, " {} / {} / {} / {} |", c[0], c[1], c[2], c[3]);
        }
        s.push('\n');
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn suite_path() -> PathBuf {
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/oracle/suite.toml")
    }

    #[test]
    fn the_suite_spans_four_topologies_both_kernels_and_twelve_cases() {
        let s = Suite::load(&suite_path()).unwrap();
        assert_eq!(s.kernels, ["5.10", "6.12"]);
        assert!(s.topologies.len() >= 4);
        let cases: usize = s.topologies.iter().map(|t| t.cases.len()).sum();
        assert!(cases >= 12, "{cases}");
        let t = s.topologies.iter().find(|t| t.name == "4s2c2t-4n").unwrap();
        assert_eq!((t.guest.sockets, t.guest.cores, t.guest.threads), (4, 2, 2));
        assert_eq!(t.guest.distances[0], [10, 20, 30, 30]);
        let cal = GuestJob {
            name: CALIBRATE_JOB.into(),
            command: CALIBRATE_COMMAND.into(),
            files: Vec::new(),
        };
        let jobs = s.guest_jobs(t, Some(cal), &KernelChoice::V5_10).unwrap();
        assert_eq!(jobs[0].name, CALIBRATE_JOB);
        assert_eq!(jobs.len(), t.cases.len() + 1);
        assert_eq!(jobs[1].name, "hog-spread");
        assert_eq!(jobs[1].command, "timeout -s KILL 12 rt-app hog-spread.json");
    }

    #[test]
    fn headline_counts_tally_each_kernel_and_skip_the_rest() {
        use RunVerdict as V;
        let rows = [
            ("5.10", "fork.level", V::Consistent, Some(V::Differs)),
            ("5.10", "fork.level", V::Differs, Some(V::Consistent)),
            ("5.10", "fork.level", V::Underpowered, None),
            ("5.10", "fork.level", V::NoData, Some(V::Differs)),
            ("6.12", "fork.level", V::Differs, Some(V::Differs)),
            // Not a headline statistic: left out.
            ("5.10", "fork.level.same", V::Differs, Some(V::Differs)),
        ];
        let t = headline_counts(rows.into_iter());
        assert_eq!(t.len(), 2);
        assert_eq!(t[&("fork.level".into(), "5.10".into())], [1, 1, 1, 1]);
        assert_eq!(t[&("fork.level".into(), "6.12".into())], [0, 1, 0, 1]);
    }

    #[test]
    fn a_bad_suite_names_file_and_line() {
        let dir = std::env::temp_dir().join(format!("schedlab-suite-bad-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("suite.toml");
        std::fs::write(
            &p,
            "kernels = [\"5.10\"]\n\n[[topology]]\nmachine = \"m.toml\"\ncase = []\n",
        )
        .unwrap();
        let e = Suite::load(&p).unwrap_err();
        assert_eq!(e.line, Some(5), "{e}");
        assert!(e.msg.contains("case"), "{e}");
        std::fs::write(&p, "kernels = [\"4.19\"]\ntopology = []\n").unwrap();
        let e = Suite::load(&p).unwrap_err();
        assert!(e.msg.contains("kernel `4.19`"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
