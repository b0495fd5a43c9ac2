//! A/B comparison: baseline vs patch over many paired runs, in the seeds' tables.
//!
//! A scheduler patch is judged by running the same benchmark many times on the
//! baseline and on the patched kernel and comparing distributions (seed 002 ran
//! 15 000–25 000 iterations per arm). `compare` runs the two arms of one scenario
//! over the same seeds (run `i` of A and of B share seed `seed + i`, so the pair sees
//! the same workload draws and a paired test applies), on a pool of `jobs` threads;
//! every run is independent and results are collected in seed order, so the output
//! does not depend on `jobs`.
//!
//! An arm is a SPEC: comma-separated items, each a scheduler feature word (`NAME` /
//! `NO_NAME`) or a `key=value` scenario override (`--set`); empty = the scenario as
//! written. For every scalar a run reports — the tool's own numbers
//! (`workload.tool`), wakeup latency and runqueue wait, migrations, context switches,
//! per-function probes and charged cost — the comparison gives each arm's
//! [`Describe`], Δ% of the means, whether lower or higher is better when the name
//! says so, and the paired Wilcoxon signed-rank and unpaired Mann-Whitney U tests
//! ([`crate::stats`]). Rates (ops/s, events/s, throughput) are summarised by their
//! harmonic mean (`hmean`), everything else by the arithmetic mean (`amean`), as
//! mmtests does. The verdict on a metric is its *effect*: the paired relative change
//! of each seed's pair, with its Hodges–Lehmann estimate and 95 % interval
//! ([`crate::stats::verdict`]). B differs only where that interval excludes 0 and
//! the change is at least [`EFFECT_FLOOR_PCT`]; an interval inside ±that floor is a
//! null (no change that matters); anything else is unclear: the runs are too few,
//! or too noisy, to see a change of that size.

use crate::error::InputError;
use crate::experiment::{relabel, run, Overrides, RunOpts, RunResult, Scenario, Source};
use crate::stats::verdict::{effect, paired_change_pct, Effect, Interval};
use crate::stats::{hmean, mann_whitney_u, wilcoxon_signed_rank, Describe, TestResult};
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// One arm: a label and its overrides.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct ArmSpec {
    /// The SPEC as given (`""` = the scenario as written).
    pub spec: String,
    pub sets: Vec<String>,
    pub features: Vec<String>,
}

impl ArmSpec {
    /// Parse a SPEC: items containing `=` are overrides, the others feature words.
    pub fn parse(spec: &str) -> ArmSpec {
        let mut a = ArmSpec {
            spec: spec.to_string(),
            sets: vec![],
            features: vec![],
        };
        for item in spec.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            if item.contains('=') {
                a.sets.push(item.to_string());
            } else {
                a.features.push(item.to_string());
            }
        }
        a
    }

    pub(crate) fn overrides(&self, extra_sets: &[String], native_scheduler: bool) -> Overrides {
        let mut sets = extra_sets.to_vec();
        sets.extend(self.sets.iter().cloned());
        Overrides {
            sets,
            features: (!self.features.is_empty()).then(|| self.features.join(",")),
            seed: None,
            native_scheduler,
        }
    }
}

/// Which direction is an improvement.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Better {
    Lower,
    Higher,
    Unknown,
}

/// How a metric's centre is summarised.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum MeanKind {
    Amean,
    Hmean,
}

/// Direction and mean kind from a metric's name.
pub(crate) fn classify(name: &str) -> (Better, MeanKind) {
    let n = name.to_ascii_lowercase();
    let has = |w: &[&str]| w.iter().any(|x| n.contains(x));
    if has(&[
        "per_sec",
        "ops",
        "rps",
        "gbps",
        "throughput",
        "tpm",
        "bytes",
        "events",
    ]) {
        (Better::Higher, MeanKind::Hmean)
    } else if has(&[
        "time",
        "lat",
        "usecs",
        "_us",
        "cost",
        "wait",
        "probed",
        "migrations",
        "p50",
        "p99",
        "energy",
        "joules",
    ]) {
        (Better::Lower, MeanKind::Amean)
    } else {
        (Better::Unknown, MeanKind::Amean)
    }
}

/// The scalars of one run, by name.
pub fn scalars(r: &RunResult) -> BTreeMap<String, f64> {
    let mut m = BTreeMap::new();
    for (k, v) in &r.workload.tool {
        m.insert(format!("tool.{k}"), *v);
    }
    let us = |ns: f64| ns / 1000.0;
    let w = &r.metrics.wakeup_latency_ns;
    if w.count > 0 {
        m.insert("wakeup_latency_us.mean".into(), us(w.mean));
        m.insert("wakeup_latency_us.p99".into(), us(w.p99 as f64));
    }
    let q = &r.metrics.runqueue_wait_ns;
    if q.count > 0 {
        m.insert("runqueue_wait_us.mean".into(), us(q.mean));
    }
    m.insert(
        "migrations".into(),
        r.metrics.migrations.values().sum::<u64>() as f64,
    );
    m.insert("context_switches".into(), r.metrics.context_switches as f64);
    if let Some(sh) = &r.metrics.sis_shadow {
        let c = &sh.counts;
        let frac = |n: u64, d: u64| if d == 0 { 0.0 } else { n as f64 / d as f64 };
        m.insert("sis_shadow.reached_frac".into(), frac(c.reached, c.calls));
        m.insert(
            "sis_shadow.differ_frac".into(),
            frac(c.reached - c.same_cpu, c.reached),
        );
        m.insert(
            "sis_shadow.other_core_frac".into(),
            frac(c.other_core(), c.reached),
        );
    }
    if let Some(e) = r.metrics.energy_joules.total {
        m.insert("energy_j".into(), e);
    }
    for (f, s) in &r.metrics.functions {
        if s.calls > 0 {
            m.insert(
                format!("{f}.cpus_probed_per_call"),
                s.cpus_probed as f64 / s.calls as f64,
            );
            m.insert(
                format!("{f}.cost_ns_per_call"),
                s.cost_ns as f64 / s.calls as f64,
            );
        }
    }
    for (name, wm) in &r.workload.metrics {
        if wm.unit == "ns" && wm.summary.count > 0 {
            m.insert(format!("workload.{name}_us.mean"), us(wm.summary.mean));
        }
    }
    m
}

/// One metric of a comparison.
#[derive(Clone, Debug, serde::Serialize)]
pub struct MetricRow {
    pub name: String,
    pub better: Better,
    pub mean_kind: MeanKind,
    pub a: Describe,
    pub b: Describe,
    /// The centre per `mean_kind`.
    pub a_centre: f64,
    pub b_centre: f64,
    /// `(b − a) / a × 100` of the centres.
    pub delta_pct: f64,
    pub wilcoxon: Option<TestResult>,
    pub mann_whitney: Option<TestResult>,
    /// The paired relative change `100 (b_i / a_i − 1)` over the seeds: its
    /// Hodges–Lehmann estimate and 95 % interval (`stats::verdict`); `None` when a
    /// baseline run is 0.
    pub change_pct: Option<Interval>,
}

impl MetricRow {
    /// The table's rows `(label, a, b)`: the centre, std, min, percentiles, max.
    /// Percentile labels are `50<suffix>` (`"%"` in text, `""` with a `p` in CSV).
    pub(crate) fn stat_rows(&self, suffix: &str) -> [(String, f64, f64); 7] {
        let mk = match self.mean_kind {
            MeanKind::Amean => "amean",
            MeanKind::Hmean => "hmean",
        };
        let pl = |n: u32| {
            if suffix.is_empty() {
                format!("p{n}")
            } else {
                format!("{n}{suffix}")
            }
        };
        let (a, b) = (&self.a, &self.b);
        [
            (mk.to_string(), self.a_centre, self.b_centre),
            ("std".into(), a.std, b.std),
            ("min".into(), a.min, b.min),
            (pl(50), a.p50, b.p50),
            (pl(75), a.p75, b.p75),
            (pl(99), a.p99, b.p99),
            ("max".into(), a.max, b.max),
        ]
    }
}

/// The significance level of the tests printed beside each metric (Wilcoxon
/// signed-rank; Mann-Whitney U without pairs). The verdicts do not rest on them but
/// on the paired change's interval ([`MetricRow::effect`]).
pub const ALPHA: f64 = 0.05;

/// The smallest relative change (%) that counts as an effect, in `compare` and in
/// `reproduce` alike (pre-registered in docs/reproduction.md): a change is an
/// effect only when its 95 % interval excludes 0 and its estimate is at least this
/// large, and a null when its whole interval lies within ±this.
pub const EFFECT_FLOOR_PCT: f64 = 1.0;

/// The benchmark tools' headline numbers, in order of preference: the number each
/// tool's users quote first (hackbench's `Time:`, sysbench's events per second,
/// uperf's throughput, schbench's p99, ...).
const PRIMARY: [&str; 9] = [
    "tool.time_s",
    "tool.total_time_s",
    "tool.ops_per_sec",
    "tool.throughput_gbps",
    "tool.p99_us",
    "tool.average_rps",
    "tool.response_time_us",
    "tool.max_total_time_s",
    "wakeup_latency_us.mean",
];

/// How the metrics of a comparison group in the report.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Group {
    /// The benchmark's own numbers (`tool.*`, `workload.*`).
    Workload,
    /// Wakeup latency and runqueue wait.
    Latency,
    /// Migrations and context switches.
    Placement,
    /// Probes and charged cost of the scheduler's functions.
    Cost,
    Energy,
}

impl Group {
    pub fn of(name: &str) -> Group {
        if name.starts_with("tool.") || name.starts_with("workload.") {
            Group::Workload
        } else if name.starts_with("wakeup_latency") || name.starts_with("runqueue_wait") {
            Group::Latency
        } else if name == "migrations" || name == "context_switches" {
            Group::Placement
        } else if name.starts_with("energy") {
            Group::Energy
        } else {
            Group::Cost
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Group::Workload => "workload",
            Group::Latency => "latency",
            Group::Placement => "placement",
            Group::Cost => "cost",
            Group::Energy => "energy",
        }
    }
}

impl MetricRow {
    /// The p-value of the row's difference: the paired test's, else the unpaired.
    pub fn p(&self) -> Option<f64> {
        self.wilcoxon.or(self.mann_whitney).map(|t| t.p)
    }

    /// Whether the difference is significant at [`ALPHA`].
    pub fn significant(&self) -> bool {
        self.p().is_some_and(|p| p < ALPHA)
    }

    /// What the paired change's interval says, with [`EFFECT_FLOOR_PCT`] as the
    /// smallest change that matters: an effect (up or down), a null, or unclear.
    /// Identical runs in both arms are a null; no interval (a zero baseline) is
    /// unclear.
    pub fn effect(&self) -> Effect {
        match &self.change_pct {
            Some(iv) => effect(iv, EFFECT_FLOOR_PCT),
            None => Effect::Unclear,
        }
    }

    /// Whether B improves on A (by the metric's direction); `None` without a
    /// direction or without a difference.
    pub fn b_better(&self) -> Option<bool> {
        match (self.better, self.delta_pct.partial_cmp(&0.0)) {
            (Better::Lower, Some(std::cmp::Ordering::Less))
            | (Better::Higher, Some(std::cmp::Ordering::Greater)) => Some(true),
            (Better::Lower, Some(std::cmp::Ordering::Greater))
            | (Better::Higher, Some(std::cmp::Ordering::Less)) => Some(false),
            _ => None,
        }
    }
}

impl Comparison {
    /// The row of the scenario's headline metric: the benchmark's own number
    /// (first of `PRIMARY` present), else the mean wakeup latency, else the first.
    pub fn primary(&self) -> Option<usize> {
        PRIMARY
            .iter()
            .find_map(|n| self.rows.iter().position(|r| r.name == *n))
            .or((!self.rows.is_empty()).then_some(0))
    }

    /// The rows in report order: the primary metric, then by [`Group`], each
    /// group in name order.
    pub fn report_order(&self) -> Vec<usize> {
        let p = self.primary();
        let mut rest: Vec<usize> = (0..self.rows.len()).filter(|&i| Some(i) != p).collect();
        rest.sort_by_key(|&i| (Group::of(&self.rows[i].name), self.rows[i].name.clone()));
        p.into_iter().chain(rest).collect()
    }
}

#[derive(Clone, Debug, serde::Serialize)]
pub struct Comparison {
    pub scenario: String,
    pub seeds: Vec<u64>,
    pub a: ArmSpec,
    pub b: ArmSpec,
    pub rows: Vec<MetricRow>,
    /// Every run's scalars, flat: one entry per (arm, seed, metric), arm A's
    /// seeds first.
    pub per_seed: Vec<SeedValue>,
}

/// One scalar of one run of a comparison (the flat per-seed table).
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct SeedValue {
    /// `a` or `b`.
    pub arm: &'static str,
    pub seed: u64,
    pub metric: String,
    pub value: f64,
}

/// What a report needs from one run beyond the comparison's scalars.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct RunDetail {
    pub seed: u64,
    /// The run's scalars (`scalars`), the values behind the boxplots.
    pub scalars: BTreeMap<String, f64>,
    /// Busy fraction per CPU.
    pub cpu_busy: Vec<f64>,
    pub wakeup_latency_count: u64,
    /// `(ns, fraction of wakeups ≤ ns)`.
    pub wakeup_latency_cdf: Vec<(u64, f64)>,
    pub migrations: BTreeMap<String, u64>,
    pub placement_reasons: BTreeMap<String, u64>,
    pub energy_total: Option<f64>,
    pub energy_per_cluster: Vec<f64>,
    pub energy_note: Option<String>,
}

impl RunDetail {
    pub fn of(r: &RunResult) -> RunDetail {
        let m = &r.metrics;
        let owned = |x: &BTreeMap<&'static str, u64>| -> BTreeMap<String, u64> {
            x.iter().map(|(k, v)| (k.to_string(), *v)).collect()
        };
        RunDetail {
            seed: r.seed,
            scalars: scalars(r),
            cpu_busy: m.cpu_busy.clone(),
            wakeup_latency_count: m.wakeup_latency_ns.count,
            wakeup_latency_cdf: m.wakeup_latency_cdf.clone(),
            migrations: owned(&m.migrations),
            placement_reasons: owned(&m.placement_reasons),
            energy_total: m.energy_joules.total,
            energy_per_cluster: m.energy_joules.per_cluster.clone(),
            energy_note: m.energy_joules.note.clone(),
        }
    }
}

/// Load both arms of `path` (each with `sets` first, then its own overrides);
/// `native_scheduler`: the user's word that a C scheduler may run
/// ([`Overrides::native_scheduler`]).
pub fn load_arms(
    source: Source<'_>,
    a: &ArmSpec,
    b: &ArmSpec,
    sets: &[String],
    native_scheduler: bool,
) -> Result<(Scenario, Scenario), InputError> {
    // The shared `--set`s alone first, so an arm's error is the arm's.
    source.load(&ArmSpec::parse("").overrides(sets, native_scheduler))?;
    let sa = source
        .load(&a.overrides(sets, native_scheduler))
        .map_err(|e| relabel(e, &format!("--a `{}`", a.spec)))?;
    let sb = source
        .load(&b.overrides(sets, native_scheduler))
        .map_err(|e| relabel(e, &format!("--b `{}`", b.spec)))?;
    Ok((sa, sb))
}

/// Run `runs` paired seeds of both arms on `jobs` threads, returning the comparison
/// and each arm's per-run details (in seed order, for the HTML report,
/// [`crate::report`]). `progress(events)` is called after each finished run (from
/// worker threads).
pub fn compare_detailed(
    sa: &Scenario,
    sb: &Scenario,
    a: &ArmSpec,
    b: &ArmSpec,
    runs: u32,
    jobs: usize,
    progress: &(dyn Fn(u64) + Sync),
) -> Result<(Comparison, [Vec<RunDetail>; 2]), String> {
    use rayon::prelude::*;
    let seeds: Vec<u64> = (0..runs as u64).map(|i| sa.seed.wrapping_add(i)).collect();
    let work: Vec<(usize, u64)> = [0usize, 1]
        .iter()
        .flat_map(|&arm| seeds.iter().map(move |&s| (arm, s)))
        .collect();
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(jobs.max(1))
        .build()
        .map_err(|e| e.to_string())?;
    let results: Vec<Result<RunDetail, String>> = pool.install(|| {
        work.par_iter()
            .with_max_len(1)
            .map(|&(arm, seed)| {
                let sc = if arm == 0 { sa } else { sb };
                let (r, _) = run(sc, seed, 0, &RunOpts::default())
                    .map_err(|e| format!("arm {} seed {seed}: {e}", ["A", "B"][arm]))?;
                progress(r.events);
                Ok(RunDetail::of(&r))
            })
            .collect()
    });
    let mut details: [Vec<RunDetail>; 2] = [vec![], vec![]];
    for (i, r) in results.into_iter().enumerate() {
        details[i / seeds.len().max(1)].push(r?);
    }
    let per_arm = [0, 1].map(|k| {
        details[k]
            .iter()
            .map(|d| (d.seed, &d.scalars))
            .collect::<Vec<_>>()
    });
    let cmp = comparison_of(&sa.name, a, b, &per_arm);
    Ok((cmp, details))
}

/// The comparison of two arms from each run's scalars, `(seed, scalars)` per arm
/// in seed order (run *i* of A and of B paired). The metrics are those of A's
/// first run that every run of both arms has.
pub(crate) fn comparison_of(
    scenario: &str,
    a: &ArmSpec,
    b: &ArmSpec,
    per_arm: &[Vec<(u64, &BTreeMap<String, f64>)>; 2],
) -> Comparison {
    let names: Vec<String> = per_arm[0]
        .first()
        .map(|(_, m)| m.keys().cloned().collect())
        .unwrap_or_default();
    let mut rows = vec![];
    for name in names {
        let col = |arm: usize| -> Option<Vec<f64>> {
            per_arm[arm]
                .iter()
                .map(|(_, m)| m.get(&name).copied())
                .collect()
        };
        let (Some(xa), Some(xb)) = (col(0), col(1)) else {
            continue;
        };
        let (better, mean_kind) = classify(&name);
        let (da, db) = (Describe::of(&xa), Describe::of(&xb));
        let centre = |x: &[f64], d: &Describe| match mean_kind {
            MeanKind::Hmean => hmean(x),
            MeanKind::Amean => d.mean,
        };
        let (ca, cb) = (centre(&xa, &da), centre(&xb, &db));
        rows.push(MetricRow {
            delta_pct: if ca != 0.0 {
                (cb - ca) / ca * 100.0
            } else {
                0.0
            },
            name,
            better,
            mean_kind,
            a: da,
            b: db,
            a_centre: ca,
            b_centre: cb,
            wilcoxon: wilcoxon_signed_rank(&xa, &xb),
            mann_whitney: mann_whitney_u(&xa, &xb),
            change_pct: paired_change_pct(&xa, &xb),
        });
    }
    Comparison {
        scenario: scenario.to_string(),
        seeds: per_arm[0].iter().map(|(s, _)| *s).collect(),
        a: a.clone(),
        b: b.clone(),
        rows,
        per_seed: per_arm
            .iter()
            .zip(["a", "b"])
            .flat_map(|(runs, arm)| {
                runs.iter().flat_map(move |(seed, m)| {
                    m.iter().map(move |(metric, &value)| SeedValue {
                        arm,
                        seed: *seed,
                        metric: metric.clone(),
                        value,
                    })
                })
            })
            .collect(),
    }
}

impl Comparison {
    /// One line per (metric, statistic): `metric,stat,a,b,delta_pct`, then the tests.
    pub fn csv(&self) -> String {
        let mut s = String::from("metric,stat,a,b,delta_pct\n");
        for r in &self.rows {
            let d = |a: f64, b: f64| {
                if a != 0.0 {
                    format!("{}", (b - a) / a * 100.0)
                } else {
                    String::new()
                }
            };
            for (k, a, b) in r.stat_rows("") {
                let _ = writeln!(s, "{},{k},{a},{b},{}", r.name, d(a, b));
            }
            for (k, t) in [
                ("wilcoxon_p", &r.wilcoxon),
                ("mann_whitney_p", &r.mann_whitney),
            ] {
                let p = t.map(|t| t.p.to_string()).unwrap_or_default();
                let _ = writeln!(s, "{},{k},{p},,", r.name);
            }
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spec_splits_features_and_overrides() {
        let a = ArmSpec::parse("IDLE_CPU_MASK, workload.groups=4,NO_SIS_PROP");
        assert_eq!(a.features, vec!["IDLE_CPU_MASK", "NO_SIS_PROP"]);
        assert_eq!(a.sets, vec!["workload.groups=4"]);
        let e = ArmSpec::parse("");
        assert!(e.features.is_empty() && e.sets.is_empty());
        let o = a.overrides(&["run.duration_ms=5".into()], false);
        assert_eq!(o.sets, vec!["run.duration_ms=5", "workload.groups=4"]);
        assert_eq!(o.features.as_deref(), Some("IDLE_CPU_MASK,NO_SIS_PROP"));
    }

    #[test]
    fn metric_directions() {
        assert_eq!(classify("tool.time_s"), (Better::Lower, MeanKind::Amean));
        assert_eq!(
            classify("tool.ops_per_sec"),
            (Better::Higher, MeanKind::Hmean)
        );
        assert_eq!(
            classify("tool.total_events"),
            (Better::Higher, MeanKind::Hmean)
        );
        assert_eq!(
            classify("select_idle_cpu.cpus_probed_per_call"),
            (Better::Lower, MeanKind::Amean)
        );
        assert_eq!(
            classify("context_switches"),
            (Better::Unknown, MeanKind::Amean)
        );
    }
}
