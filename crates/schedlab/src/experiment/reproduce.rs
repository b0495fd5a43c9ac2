//! Reproducing the seeds: each patch series' own experiments, run as paired
//! comparisons on its own machine and printed beside the numbers it reports.
//!
//! A scheduler patch is posted with a results section: a machine, a benchmark with
//! its options, sometimes a background load, and a table of baseline vs patched
//! numbers. That table is the claim a reviewer weighs. `reproduce` rebuilds every
//! such table in simulation: for each seed (000 … 004) it runs the scenarios of
//! `scenarios/seeds/` (compiled into the binary, so the command works from any
//! directory) as paired comparisons — arm A the baseline the seed measured against,
//! arm B the seed's feature switched on — and prints the seed's table layout with the
//! reported values in extra columns and a verdict per row. What runs and which
//! numbers each table reports are data, one file per seed in
//! `scenarios/seeds/tables/` ([`super::seed_tables`]); this module runs the
//! experiments, judges the rows and fills the cells, and [`crate::report`] prints
//! the text and HTML.
//!
//! **The verdict knows each side's noise.** Each side of a row gets a relative
//! change with a 95 % interval from its own noise ([`crate::stats::verdict`]): the
//! simulation from its paired runs (Hodges–Lehmann over the per-pair changes), the
//! seed from its reported means, spreads and run counts (Welch), which the table
//! files hold as data (`reported_std`, `reported_cv_pct`, `reported_max`,
//! `reported_runs`), with stated defaults where a seed gives none
//! ([`DEFAULT_CV_PCT`](super::seed_tables::DEFAULT_CV_PCT),
//! [`DEFAULT_RUNS`](super::seed_tables::DEFAULT_RUNS)). On either side a change is
//! an *effect* only where its interval excludes 0 and it is at least
//! [`EFFECT_FLOOR_PCT`]; a *null* where its whole
//! interval lies within ±that floor; else *unclear*. Grades: `match` (the same
//! effect, the size within [`SIZE_TOLERANCE`]× and, in tables whose units and run
//! lengths compare, the baseline within [`BASELINE_TOLERANCE`]×), `direction` (the
//! same effect, another size or baseline), `agree (null)`, `inconclusive` (a side
//! cannot tell), and `MISMATCH (missed | invented | opposite)`. Every row is also
//! graded as if the simulator's two arms were identical (a null of width 0): the
//! *identical-arms control*, a simulator that does nothing, which must score no
//! match on a row where the seed shows an effect. The counts over those rows come
//! first. Absolute values are printed either way, but a model is calibrated from
//! anchors (`docs/calibration.md`), never tuned to a row of these tables.
//!
//! Arms, per seed: 000 `NO_IDLE_CPU_MASK` → `IDLE_CPU_MASK`; 001 `NO_BREAK_EVEN` →
//! `BREAK_EVEN`; 002 `LEGACY_SD_FLAG` (v5.6's combined walk) → `NO_LEGACY_SD_FLAG`;
//! 003 `NO_SMT_BALANCE` → `SMT_BALANCE`; 004 `NO_MISFIT` (the seed's "tip") →
//! `MISFIT`. Everything else is the v5.6 preset. Runs get `[run] noise = 0.05` unless
//! the scenario sets its own, so that paired seeds differ the way repeated runs of a
//! real benchmark do. Where a seed leaves a parameter out, the scenario file states
//! the choice, and so does the table's set-up line.
//!
//! With [`ReproOpts::out`] every finished run is a line of a journal in the sweep's
//! record format ([`JOURNAL`]), keyed by the run's identity; the same reproduction
//! started again reuses those lines, so a long reproduction survives an interrupt.
//!
//! A reduced mode (`quick`) keeps only each seed's headline table with shortened
//! runs; it is what the test suite runs, asserting the direction of each seed's
//! headline effect (see [`Headline`]).

use super::compare::{self, ArmSpec, Better, Comparison, MetricRow, EFFECT_FLOOR_PCT};
use super::seed_tables::{plan, Exp, Layout, RowSpec, TableSpec};
use super::{run, RunOpts, Scenario};
use crate::config::Doc;
use crate::error::InputError;
use crate::report::text::{delta_pct, num, opt_num, Num};
use crate::stats::verdict::{effect, grade, welch_change_pct, Effect, Grade, Interval};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

macro_rules! seed_files {
    ($($name:literal),* $(,)?) => {
        &[$(($name, include_str!(concat!("../../../../scenarios/seeds/", $name, ".toml")))),*]
    };
}

/// The seed scenarios (`scenarios/seeds/*.toml`), compiled in.
pub const SEED_SCENARIOS: &[(&str, &str)] = seed_files![
    "000-perf-messaging-g1-spinners",
    "000-schbench-m44-t1-spinners",
    "000-schbench-m44-t1",
    "001-adrestia-periodic-hikey960",
    "001-adrestia-periodic-synquacer",
    "001-adrestia-single-hikey960",
    "001-adrestia-single-synquacer",
    "001-forkbench-hikey960",
    "001-schbench-hikey960",
    "001-schbench-synquacer",
    "002-hackbench-juno",
    "002-hackbench-l1000-xeon-e5-40",
    "002-sysbench-threads-40-xeon-e5-40",
    "002-sysbench-threads-juno",
    "003-hackbench-16",
    "003-oracle-tpcc-100",
    "003-uperf-pingpong-32",
    "004-sysbench-cpu-misfit-hikey960",
    "004-sysbench-cpu-misfit-juno",
];

/// The seeds `reproduce` knows.
pub const SEEDS: [u8; 5] = [0, 1, 2, 3, 4];

/// Relative noise given to runs of scenarios that do not set their own.
pub const DEFAULT_NOISE: f64 = 0.05;

/// A matching direction is a full match only when simulated Δ / reported Δ lies in
/// [1/x, x]. A factor of two is deliberately loose: the model is calibrated from
/// anchors, not fitted to these rows, so "the same size" can only mean the same
/// order; outside it the model and the seed disagree on how much the change matters.
pub const SIZE_TOLERANCE: f64 = 2.0;

/// ... and when simulated baseline / reported baseline lies in [1/x, x].
pub const BASELINE_TOLERANCE: f64 = 2.0;

/// Load seed scenario `name` with `sets` applied, and the features of `arm`.
pub(crate) fn seed_scenario(
    name: &str,
    sets: &[String],
    arm: &ArmSpec,
) -> Result<Scenario, InputError> {
    let (_, text) = SEED_SCENARIOS
        .iter()
        .find(|(n, _)| *n == name)
        .ok_or_else(|| InputError::new(format!("unknown seed scenario `{name}`")))?;
    let path = format!("scenarios/seeds/{name}.toml");
    let doc = Doc::parse(text, Path::new(&path))?;
    Scenario::from_doc(doc, &arm.overrides(sets, false))
}

/// What a side's change means for the metric: an effect that is better or worse
/// by the metric's direction (`changed` when it has none), no change, or unclear.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Dir {
    Better,
    Worse,
    Changed,
    Same,
    Unclear,
}

impl Dir {
    fn word(self) -> &'static str {
        match self {
            Dir::Better => "better",
            Dir::Worse => "worse",
            Dir::Changed => "changed",
            Dir::Same => "same",
            Dir::Unclear => "unclear",
        }
    }

    fn of(e: Effect, better: Better) -> Dir {
        match (e, better) {
            (Effect::Null, _) => Dir::Same,
            (Effect::Unclear, _) => Dir::Unclear,
            (_, Better::Unknown) => Dir::Changed,
            (Effect::Down, Better::Lower) | (Effect::Up, Better::Higher) => Dir::Better,
            (Effect::Down, Better::Higher) | (Effect::Up, Better::Lower) => Dir::Worse,
        }
    }
}

/// One finished row: simulated vs reported, with the verdict.
#[derive(Clone, Debug, serde::Serialize)]
pub struct RowResult {
    pub label: String,
    pub metric: Option<String>,
    /// Simulated (A, B) centres (amean or hmean), scaled; std of each arm.
    pub sim: Option<(f64, f64)>,
    pub sim_std: Option<(f64, f64)>,
    pub sim_delta_pct: Option<f64>,
    pub wilcoxon_p: Option<f64>,
    /// The simulated paired change (%) with its 95 % interval.
    pub sim_change: Option<Interval>,
    pub reported: (Option<f64>, Option<f64>),
    pub reported_delta_pct: Option<f64>,
    /// The reported change (%) with its 95 % interval (Welch, from the seed's
    /// spreads and run counts or the stated defaults).
    pub reported_change: Option<Interval>,
    /// Which stated defaults stood in for the seed (`runs`, `spread`).
    pub reported_defaults: Vec<&'static str>,
    pub sim_dir: Option<Dir>,
    pub reported_dir: Option<Dir>,
    /// The grade ([`Grade`]); `None` when the model has no such number.
    pub grade: Option<Grade>,
    /// The grade a simulator whose two arms are identical would get.
    pub control: Option<Grade>,
    /// The grade's word (`match`, `direction`, `agree (null)`, `inconclusive`,
    /// `MISMATCH (missed)`, ...) or `n/a`.
    pub verdict: String,
    /// Simulated Δ / reported Δ, when both are non-zero.
    pub size_ratio: Option<f64>,
    /// Simulated baseline / reported baseline, in tables whose absolute values
    /// compare.
    pub baseline_ratio: Option<f64>,
    /// Why a matching direction is not a match (`size beyond x2`, ...).
    pub off: Vec<String>,
}

/// One finished table, ready to print.
#[derive(Clone, Debug, serde::Serialize)]
pub struct TableResult {
    pub seed: u8,
    pub title: String,
    pub setup: String,
    pub columns: Vec<String>,
    pub cells: Vec<Vec<String>>,
    pub rows: Vec<RowResult>,
    /// In the verdict line's counts (`counted` of the table file; false for a
    /// table shown beside another).
    pub counted: bool,
}

/// A seed's headline claim, checked on the simulated runs.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Headline {
    pub seed: u8,
    pub claim: String,
    pub holds: bool,
    pub detail: String,
}

/// The whole reproduction.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Reproduction {
    pub seeds: Vec<u8>,
    pub runs: u32,
    pub quick: bool,
    pub noise: f64,
    pub tables: Vec<TableResult>,
    pub headlines: Vec<Headline>,
    /// Seed 004's single runs: (machine, arm label, completion times of the
    /// unpinned tasks in seconds, sorted).
    pub single_runs: Vec<(String, String, Vec<f64>)>,
    pub version: String,
}

/// Options of a reproduction.
#[derive(Clone, Debug)]
pub struct ReproOpts {
    pub seeds: Vec<u8>,
    pub runs: u32,
    pub jobs: usize,
    pub quick: bool,
    pub noise: f64,
    /// A directory whose journal ([`JOURNAL`]) keeps every finished run, so that
    /// an interrupted reproduction resumes where it stopped.
    pub out: Option<std::path::PathBuf>,
}

/// Whether `x` lies within a factor `tol` of 1.
fn within(x: f64, tol: f64) -> bool {
    x.is_finite() && x > 0.0 && (1.0 / tol..=tol).contains(&x)
}

/// Why two same-signed effects are not a full match: the size (simulated over
/// reported change) or the baseline beyond their tolerances.
fn off_reasons(size_ratio: Option<f64>, baseline_ratio: Option<f64>) -> Vec<String> {
    let mut off = vec![];
    if size_ratio.is_some_and(|x| !within(x, SIZE_TOLERANCE)) {
        off.push(format!("size beyond x{SIZE_TOLERANCE}"));
    }
    if baseline_ratio.is_some_and(|x| !within(x, BASELINE_TOLERANCE)) {
        off.push(format!("baseline beyond x{BASELINE_TOLERANCE}"));
    }
    off
}

/// Judge one row from the comparison's metric row (if any).
fn judge(spec: &RowSpec, m: Option<&MetricRow>, norm: Option<f64>) -> RowResult {
    let metric = spec.metric.clone();
    let (better, _) = compare::classify(spec.metric.as_deref().unwrap_or(""));
    let reported_delta = match spec.reported {
        (Some(a), Some(b)) if a != 0.0 => Some((b - a) / a * 100.0),
        _ => None,
    };
    let sides = spec.reported_sides();
    let reported_change = sides
        .as_ref()
        .and_then(|(a, b, _)| welch_change_pct(*a, *b));
    let reported_defaults = sides.map(|s| s.2).unwrap_or_default();
    let reported_effect = reported_change.map(|iv| effect(&iv, EFFECT_FLOOR_PCT));
    let reported_dir = reported_effect.map(|e| Dir::of(e, better));
    // The identical-arms control: a change of exactly 0.
    let control =
        reported_effect.map(|r| grade(effect(&Interval::point(0.0), EFFECT_FLOOR_PCT), r, false));
    let Some(m) = m else {
        return RowResult {
            label: spec.label.clone(),
            metric,
            sim: None,
            sim_std: None,
            sim_delta_pct: None,
            wilcoxon_p: None,
            sim_change: None,
            reported: spec.reported,
            reported_delta_pct: reported_delta,
            reported_change,
            reported_defaults,
            sim_dir: None,
            reported_dir,
            grade: None,
            control,
            verdict: "n/a".into(),
            size_ratio: None,
            baseline_ratio: None,
            off: vec![],
        };
    };
    // Normalised rows (seed 003's TPC-C) divide by the baseline mean.
    let scale = norm.map(|n| 1.0 / n).unwrap_or(spec.scale);
    let p = m.wilcoxon.as_ref().map(|t| t.p);
    let sim_effect = m.effect();
    let sim_dir = Dir::of(sim_effect, better);
    let sim_est = m.change_pct.map_or(m.delta_pct, |iv| iv.est);
    let size_ratio = match reported_change {
        Some(r) if r.est != 0.0 && sim_est.is_finite() => Some(sim_est / r.est),
        _ => None,
    };
    let baseline_ratio = match spec.reported.0 {
        Some(r) if spec.absolute && norm.is_none() && r != 0.0 => Some(m.a_centre * scale / r),
        _ => None,
    };
    let off = off_reasons(size_ratio, baseline_ratio);
    let g = reported_effect.map(|r| grade(sim_effect, r, off.is_empty()));
    let off = if g == Some(Grade::Direction) {
        off
    } else {
        vec![]
    };
    RowResult {
        label: spec.label.clone(),
        metric,
        sim: Some((m.a_centre * scale, m.b_centre * scale)),
        sim_std: Some((m.a.std * scale, m.b.std * scale)),
        sim_delta_pct: Some(m.delta_pct),
        wilcoxon_p: p,
        sim_change: m.change_pct,
        reported: spec.reported,
        reported_delta_pct: reported_delta,
        reported_change,
        reported_defaults,
        sim_dir: Some(sim_dir),
        reported_dir,
        grade: g,
        control,
        verdict: g.map_or("n/a", Grade::word).into(),
        size_ratio,
        baseline_ratio,
        off,
    }
}

fn verdict_cell(r: &RowResult) -> String {
    match (r.sim_dir, r.reported_dir) {
        (Some(s), Some(p)) => {
            let mut v = format!("{} (sim {}, seed {})", r.verdict, s.word(), p.word());
            if let (Some(x), Grade::Match | Grade::Direction) =
                (r.size_ratio, r.grade.unwrap_or(Grade::Inconclusive))
            {
                let _ = write!(v, ", size x{:.2}", x + 0.0);
            }
            if let Some(x) = r.baseline_ratio {
                let _ = write!(v, ", baseline x{:.2}", x + 0.0);
            }
            if !r.off.is_empty() {
                let _ = write!(v, "; {}", r.off.join(", "));
            }
            if !r.reported_defaults.is_empty() {
                let _ = write!(v, "; seed's {} assumed", r.reported_defaults.join(" and "));
            }
            v
        }
        _ => "n/a: not modelled".into(),
    }
}

fn split(x: Option<(f64, f64)>) -> (Option<f64>, Option<f64>) {
    x.map_or((None, None), |(a, b)| (Some(a), Some(b)))
}

/// A change's 95 % interval as a cell: `[-5.1, +2.0]`, `unbounded`, or `-`.
fn interval_cell(iv: Option<Interval>) -> String {
    match iv {
        Some(iv) if iv.lo.is_finite() && iv.hi.is_finite() => {
            format!("[{:+.1}, {:+.1}]", iv.lo + 0.0, iv.hi + 0.0)
        }
        Some(_) => "unbounded".into(),
        None => "-".into(),
    }
}

/// The effect columns of a row: the simulated Δ and its interval, the reported
/// pair (patch first when `patch_first`, as seed 001 prints it), the reported Δ
/// and its interval, and the verdict.
fn effect_cells(r: &RowResult, patch_first: bool) -> [String; 7] {
    let (ra, rb) = r.reported;
    let (x, y) = if patch_first { (rb, ra) } else { (ra, rb) };
    [
        delta_pct(r.sim_change.map(|iv| iv.est).or(r.sim_delta_pct)),
        interval_cell(r.sim_change),
        opt_num(x),
        opt_num(y),
        delta_pct(r.reported_delta_pct),
        interval_cell(r.reported_change),
        verdict_cell(r),
    ]
}

/// The effect columns' headers after the simulated values, with the seed's names
/// for its two reported columns.
fn effect_columns(reported: [&str; 2]) -> Vec<String> {
    vec![
        "Δ".into(),
        "95 % CI".into(),
        format!("reported {}", reported[0]),
        format!("reported {}", reported[1]),
        "reported Δ".into(),
        "reported 95 % CI".into(),
        "verdict".into(),
    ]
}

/// Lay out a finished table in the seed's form.
fn layout(t: &TableSpec, rows: Vec<RowResult>, dist: Option<(&MetricRow, f64)>) -> TableResult {
    let mut columns: Vec<String>;
    let mut cells = vec![];
    match t.layout {
        Layout::MeanStd => {
            columns = strings(&["", "Baseline", "stddev", "Patch", "stddev"]);
            columns.extend(effect_columns(["Baseline", "Patch"]));
            for r in &rows {
                let (sa, sb) = split(r.sim);
                let (da, db) = split(r.sim_std);
                let mut c = vec![
                    r.label.clone(),
                    opt_num(sa),
                    opt_num(da),
                    opt_num(sb),
                    opt_num(db),
                ];
                c.extend(effect_cells(r, false));
                cells.push(c);
            }
        }
        Layout::PatchFirst => {
            let head = t.title.split('|').next().unwrap_or("").trim().to_string();
            columns = strings(&[head.as_str(), "With", "Without"]);
            columns.extend(effect_columns(["With", "Without"]));
            for r in &rows {
                let (sa, sb) = split(r.sim);
                let mut c = vec![r.label.clone(), opt_num(sb), opt_num(sa)];
                c.extend(effect_cells(r, true));
                cells.push(c);
            }
        }
        Layout::Distribution => {
            columns = strings(&[
                "",
                "-PATCH",
                "+PATCH",
                "DELTA",
                "reported -PATCH",
                "reported +PATCH",
                "reported DELTA",
            ]);
            if let Some((m, scale)) = dist {
                let reported = rows.first().map(|r| r.reported).unwrap_or((None, None));
                let stats = [
                    ("mean", m.a.mean, m.b.mean),
                    ("std", m.a.std, m.b.std),
                    ("min", m.a.min, m.b.min),
                    ("50%", m.a.p50, m.b.p50),
                    ("75%", m.a.p75, m.b.p75),
                    ("99%", m.a.p99, m.b.p99),
                    ("max", m.a.max, m.b.max),
                ];
                for (i, (l, a, b)) in stats.iter().enumerate() {
                    let d = if *a != 0.0 {
                        Some((b - a) / a * 100.0)
                    } else {
                        None
                    };
                    let (ra, rb) = if i == 0 { reported } else { (None, None) };
                    let rd = match (ra, rb) {
                        (Some(x), Some(y)) if x != 0.0 => Some((y - x) / x * 100.0),
                        _ => None,
                    };
                    cells.push(vec![
                        l.to_string(),
                        num(a * scale, Num::Seed),
                        num(b * scale, Num::Seed),
                        delta_pct(d),
                        opt_num(ra),
                        opt_num(rb),
                        delta_pct(rd),
                    ]);
                }
            }
        }
    }
    if t.layout == Layout::Distribution {
        columns.extend(strings(&[
            "Δ (paired)",
            "95 % CI",
            "reported 95 % CI",
            "verdict (mean)",
        ]));
        for (i, c) in cells.iter_mut().enumerate() {
            match rows.first().filter(|_| i == 0) {
                Some(r) => c.extend([
                    delta_pct(r.sim_change.map(|iv| iv.est)),
                    interval_cell(r.sim_change),
                    interval_cell(r.reported_change),
                    verdict_cell(r),
                ]),
                None => c.extend(std::iter::repeat_n(String::new(), 4)),
            }
        }
    }
    TableResult {
        seed: t.seed,
        title: t.title.clone(),
        setup: t.setup.clone(),
        columns,
        cells,
        rows,
        counted: t.counted,
    }
}

/// Seed 002's decision-equivalence check: both walks, domain-walk cost 0 so that
/// timing cannot diverge, must give byte-identical decision traces. Returns the
/// number of placements compared, or the first differing line.
pub(crate) fn decision_equivalence(name: &str, extra: &[String]) -> Result<usize, String> {
    let opts = RunOpts {
        trace: true,
        ..Default::default()
    };
    let mut traces = vec![];
    for arm in ["LEGACY_SD_FLAG", "NO_LEGACY_SD_FLAG"] {
        let mut sc = seed_scenario(name, extra, &ArmSpec::parse(arm)).map_err(|e| e.to_string())?;
        sc.machine.cost.domain_visit = 0;
        let (_, tr) = run(&sc, sc.seed, 0, &opts).map_err(|e| e.to_string())?;
        traces.push(tr.unwrap_or_default());
    }
    if traces[0] == traces[1] {
        return Ok(traces[0].lines().filter(|l| l.contains(" place ")).count());
    }
    let (i, (a, b)) = traces[0]
        .lines()
        .zip(traces[1].lines())
        .enumerate()
        .find(|(_, (a, b))| a != b)
        .unwrap_or((0, ("(length)", "(length)")));
    Err(format!("line {i}: v5.6 `{a}` vs seed 002 `{b}`"))
}

/// Number of simulated runs `reproduce` will report progress for.
pub fn total_runs(opts: &ReproOpts) -> u64 {
    let exps = plan(&opts.seeds, opts.quick).map_or(0, |(e, _)| e.len());
    exps as u64 * 2 * opts.runs as u64
}

/// The comparisons of a reproduction, by experiment key.
type Done = BTreeMap<String, Comparison>;

/// The metric row `metric` of experiment `exp`, if it ran and has it.
fn find<'a>(done: &'a Done, exp: &str, metric: &str) -> Option<&'a MetricRow> {
    done.get(exp)?.rows.iter().find(|r| r.name == metric)
}

/// A seed scenario for `arm`, with the reproduction's noise unless it sets its own.
fn noisy_scenario(
    name: &str,
    sets: &[String],
    arm: &ArmSpec,
    noise: f64,
) -> Result<Scenario, String> {
    let mut sc = seed_scenario(name, sets, arm).map_err(|e| e.to_string())?;
    if sc.noise == 0.0 {
        sc.noise = noise;
    }
    Ok(sc)
}

/// What `reproduce` reports while it works.
#[derive(Clone, Debug, PartialEq)]
pub enum Progress {
    /// Runs found in the `--out` journal (`reused`) of `total`, before any runs.
    Resumed { reused: u64, total: u64 },
    /// One simulated run finished (`events` simulated).
    Run { events: u64 },
    /// Experiment `index` (1-based) of `of` finished: `ran` runs now, `reused`
    /// from the journal.
    Experiment {
        key: String,
        index: usize,
        of: usize,
        ran: u64,
        reused: u64,
    },
}

/// The file under `--out` that keeps every finished run of a reproduction.
pub const JOURNAL: &str = "runs.jsonl";

/// One arm of one experiment, ready to run.
struct Cell {
    sc: Scenario,
    /// What, beside the scenario's bytes and the seed, makes a run's identity.
    id_sets: Vec<String>,
    text: &'static str,
}

impl Cell {
    fn id(&self, seed: u64) -> String {
        super::sweep::identity(self.text.as_bytes(), &self.id_sets, seed)
    }
}

/// Run every experiment as a paired comparison; with `opts.out`, each finished run
/// is appended to its journal and a run already there is not run again.
fn run_experiments(
    exps: &[Exp],
    opts: &ReproOpts,
    progress: &(dyn Fn(Progress) + Sync),
) -> Result<Done, String> {
    use super::sweep::{Journal, Record};
    use rayon::prelude::*;
    use std::collections::HashMap;
    type Scalars = BTreeMap<String, f64>;
    let mut cells: Vec<[Cell; 2]> = vec![];
    for e in exps {
        let (_, text) = SEED_SCENARIOS
            .iter()
            .find(|(n, _)| *n == e.scenario)
            .ok_or_else(|| format!("unknown seed scenario `{}`", e.scenario))?;
        let cell = |arm: &str| -> Result<Cell, String> {
            let mut id_sets = e.sets.clone();
            id_sets.push(format!("reproduce.arm={arm}"));
            id_sets.push(format!("reproduce.noise={}", opts.noise));
            Ok(Cell {
                sc: noisy_scenario(e.scenario, &e.sets, &ArmSpec::parse(arm), opts.noise)?,
                id_sets,
                text,
            })
        };
        cells.push([cell(&e.a)?, cell(&e.b)?]);
    }
    let seeds_of = |c: &[Cell; 2]| -> Vec<u64> {
        (0..opts.runs as u64)
            .map(|i| c[0].sc.seed.wrapping_add(i))
            .collect()
    };
    // Every (experiment, arm, seed) by its identity.
    let mut ids: HashMap<String, (usize, usize, u64)> = HashMap::new();
    for (i, c) in cells.iter().enumerate() {
        for seed in seeds_of(c) {
            for (arm, cell) in c.iter().enumerate() {
                ids.insert(cell.id(seed), (i, arm, seed));
            }
        }
    }
    let mut have: BTreeMap<(usize, usize, u64), Scalars> = BTreeMap::new();
    let journal = match &opts.out {
        Some(dir) => {
            std::fs::create_dir_all(dir)
                .map_err(|e| format!("{}: cannot create: {e}", dir.display()))?;
            // The journal is a cache by identity: runs of other reproductions
            // (other seeds, --quick, --noise, another version) stay, unused.
            let (j, done) = Journal::open(&dir.join(JOURNAL), |_| true, |_, _, _| String::new())
                .map_err(|e| e.to_string())?;
            for r in done {
                if let Some(&k) = ids.get(&r.id) {
                    have.insert(k, r.metrics);
                }
            }
            Some(j)
        }
        None => None,
    };
    progress(Progress::Resumed {
        reused: have.len() as u64,
        total: ids.len() as u64,
    });
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(opts.jobs.max(1))
        .build()
        .map_err(|e| e.to_string())?;
    let have = std::sync::Mutex::new(have);
    let mut done = Done::new();
    for (i, (e, c)) in exps.iter().zip(&cells).enumerate() {
        let seeds = seeds_of(c);
        let todo: Vec<(usize, u64)> = {
            let h = have.lock().expect("reproduce lock");
            (0..2)
                .flat_map(|arm| seeds.iter().map(move |&s| (arm, s)))
                .filter(|&(arm, s)| !h.contains_key(&(i, arm, s)))
                .collect()
        };
        pool.install(|| {
            todo.par_iter()
                .with_max_len(1)
                .try_for_each(|&(arm, seed)| {
                    let cell = &c[arm];
                    let (r, _) = run(&cell.sc, seed, 0, &RunOpts::default()).map_err(|err| {
                        format!("{}: arm {} seed {seed}: {err}", e.key, ["A", "B"][arm])
                    })?;
                    let metrics = compare::scalars(&r);
                    if let Some(j) = &journal {
                        let rec = Record {
                            point: 2 * i + arm,
                            params: BTreeMap::from([
                                ("experiment".to_string(), e.key.clone()),
                                ("arm".to_string(), [&e.a, &e.b][arm].clone()),
                            ]),
                            seed,
                            metrics: metrics.clone(),
                            id: cell.id(seed),
                        };
                        j.append(&rec).map_err(|err| err.to_string())?;
                    }
                    have.lock()
                        .expect("reproduce lock")
                        .insert((i, arm, seed), metrics);
                    progress(Progress::Run { events: r.events });
                    Ok::<(), String>(())
                })
        })?;
        let h = have.lock().expect("reproduce lock");
        let per_arm = [0, 1].map(|arm| {
            seeds
                .iter()
                .map(|&s| (s, &h[&(i, arm, s)]))
                .collect::<Vec<_>>()
        });
        let (a, b) = (ArmSpec::parse(&e.a), ArmSpec::parse(&e.b));
        done.insert(
            e.key.clone(),
            compare::comparison_of(&c[0].sc.name, &a, &b, &per_arm),
        );
        progress(Progress::Experiment {
            key: e.key.clone(),
            index: i + 1,
            of: exps.len(),
            ran: todo.len() as u64,
            reused: 2 * seeds.len() as u64 - todo.len() as u64,
        });
    }
    Ok(done)
}

/// Judge every row of `t` and lay the table out.
fn finish_table(t: &TableSpec, done: &Done) -> TableResult {
    let rows: Vec<RowResult> = t
        .rows
        .iter()
        .map(|r| {
            let m = r.metric.as_deref().and_then(|k| find(done, &r.exp, k));
            let norm = if r.scale.is_nan() {
                Some(m.map(|m| m.a_centre).unwrap_or(1.0))
            } else {
                None
            };
            judge(r, m, norm)
        })
        .collect();
    let dist = (t.layout == Layout::Distribution)
        .then(|| {
            let r = t.rows.first()?;
            Some((find(done, &r.exp, r.metric.as_deref()?)?, r.scale))
        })
        .flatten();
    layout(t, rows, dist)
}

/// "B lower than A" on `metric` of experiment `key`.
fn lower(done: &Done, seed: u8, claim: &str, key: &str, metric: &str) -> Option<Headline> {
    let m = find(done, key, metric)?;
    Some(Headline {
        seed,
        claim: claim.into(),
        holds: m.b_centre < m.a_centre,
        detail: format!(
            "{metric}: A {} -> B {} ({})",
            num(m.a_centre, Num::Seed),
            num(m.b_centre, Num::Seed),
            delta_pct(Some(m.delta_pct))
        ),
    })
}

/// Seed 001: energy on hikey960 not higher with BREAK_EVEN beyond noise.
fn energy_headlines(done: &Done, headlines: &mut Vec<Headline>) {
    for (key, what) in [
        ("001-h-schbench", "schbench"),
        ("001-h-periodic", "adrestia"),
        ("001-h-fork", "forkbench"),
    ] {
        if let Some(m) = find(done, key, "energy_j") {
            headlines.push(Headline {
                seed: 1,
                claim: format!("{what} energy on hikey960 not higher with BREAK_EVEN beyond noise"),
                // "Beyond noise": an effect by the paired change's interval (off 0,
                // at least EFFECT_FLOOR_PCT) that is an increase.
                holds: m.effect() != Effect::Up,
                detail: format!(
                    "energy_j: A {} -> B {} (paired change {} {}: {})",
                    num(m.a_centre, Num::Seed),
                    num(m.b_centre, Num::Seed),
                    delta_pct(m.change_pct.map(|iv| iv.est)),
                    interval_cell(m.change_pct),
                    m.effect().word()
                ),
            });
        }
    }
}

/// Seed 002: both walks give identical decisions.
fn equivalence_headlines(quick: bool, headlines: &mut Vec<Headline>) {
    let scs: &[&str] = if quick {
        &["002-hackbench-juno"]
    } else {
        &[
            "002-hackbench-juno",
            "002-hackbench-l1000-xeon-e5-40",
            "002-sysbench-threads-juno",
            "002-sysbench-threads-40-xeon-e5-40",
        ]
    };
    for sc in scs {
        let extra: Vec<String> = if sc.contains("hackbench") {
            vec!["workload.loops=20".into()]
        } else {
            vec!["workload.max_time=0.05".into()]
        };
        let r = decision_equivalence(sc, &extra);
        headlines.push(Headline {
            seed: 2,
            claim: format!("identical decisions with and without LEGACY_SD_FLAG ({sc})"),
            holds: r.is_ok(),
            detail: match r {
                Ok(n) => format!(
                    "{n} placements, byte-identical decision traces ({})",
                    extra.join(" ")
                ),
                Err(e) => e,
            },
        });
    }
}

/// Seed 004: the longest unpinned task, and one single run per arm and machine.
fn misfit_headlines(
    done: &Done,
    noise: f64,
    headlines: &mut Vec<Headline>,
    single_runs: &mut Vec<(String, String, Vec<f64>)>,
) -> Result<(), String> {
    for (key, sc) in [
        ("004-juno", "004-sysbench-cpu-misfit-juno"),
        ("004-hikey", "004-sysbench-cpu-misfit-hikey960"),
    ] {
        let claim = format!("longest unpinned task earlier with MISFIT ({sc})");
        headlines.extend(lower(done, 4, &claim, key, "tool.max_total_time_s"));
        for arm in ["NO_MISFIT", "MISFIT"] {
            let s = noisy_scenario(sc, &[], &ArmSpec::parse(arm), noise)?;
            let (r, _) = run(&s, s.seed, 0, &RunOpts::default()).map_err(|e| e.to_string())?;
            let mut times = unpinned_times(&r);
            times.sort_by(f64::total_cmp);
            let label = if arm == "MISFIT" { "misfit" } else { "tip" };
            single_runs.push((s.machine.name.clone(), label.to_string(), times));
        }
    }
    Ok(())
}

/// Run the reproduction, telling `progress` as runs and experiments finish.
pub fn reproduce(
    opts: &ReproOpts,
    progress: &(dyn Fn(Progress) + Sync),
) -> Result<Reproduction, String> {
    let (exps, tables) = plan(&opts.seeds, opts.quick).map_err(|e| e.to_string())?;
    let done = run_experiments(&exps, opts, progress)?;
    let out_tables = tables.iter().map(|t| finish_table(t, &done)).collect();
    let mut headlines = vec![];
    let mut single_runs = vec![];
    for &seed in &opts.seeds {
        match seed {
            0 => headlines.extend(lower(
                &done,
                0,
                "select_idle_cpu cost lower with IDLE_CPU_MASK",
                "000-schbench",
                "select_idle_cpu.cost_ns_per_call",
            )),
            1 => energy_headlines(&done, &mut headlines),
            2 => equivalence_headlines(opts.quick, &mut headlines),
            3 => headlines.extend(lower(
                &done,
                3,
                "select_idle_sibling cost lower with SMT_BALANCE",
                "003-hb-cost",
                "select_idle_sibling.cost_ns_per_call",
            )),
            4 => misfit_headlines(&done, opts.noise, &mut headlines, &mut single_runs)?,
            _ => {}
        }
    }
    Ok(Reproduction {
        seeds: opts.seeds.clone(),
        runs: opts.runs,
        quick: opts.quick,
        noise: opts.noise,
        tables: out_tables,
        headlines,
        single_runs,
        version: env!("CARGO_PKG_VERSION").to_string(),
    })
}

/// Completion times (s) of seed 004's unpinned tasks: the sysbench groups of
/// 1000 requests (the pinned hogs run REQUESTS / 4).
fn unpinned_times(r: &super::RunResult) -> Vec<f64> {
    let tool = &r.workload.tool;
    (0..)
        .map_while(|g| Some((tool.get(&format!("g{g}.events"))?, g)))
        .filter(|(e, _)| **e >= 1000.0)
        .filter_map(|(_, g)| tool.get(&format!("g{g}.total_time_s")).copied())
        .collect()
}

/// Owned copies of a table's column names.
fn strings(names: &[&str]) -> Vec<String> {
    names.iter().map(|s| s.to_string()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiment::seed_tables::Spread;
    use crate::stats::{Describe, TestResult};

    fn metric_row(a: &[f64], b: &[f64], p: f64) -> MetricRow {
        let (da, db) = (Describe::of(a), Describe::of(b));
        MetricRow {
            name: "tool.time_s".into(),
            better: Better::Lower,
            mean_kind: compare::MeanKind::Amean,
            a_centre: da.mean,
            b_centre: db.mean,
            delta_pct: (db.mean - da.mean) / da.mean * 100.0,
            a: da,
            b: db,
            wilcoxon: Some(TestResult { statistic: 0.0, p }),
            mann_whitney: None,
            change_pct: crate::stats::verdict::paired_change_pct(a, b),
        }
    }

    /// Eight pairs: A at `a`, B at `a × (1 + change/100)` for each change of
    /// `changes` in turn.
    fn pairs(a: f64, changes: &[f64]) -> MetricRow {
        let xa = vec![a; 8];
        let xb: Vec<f64> = (0..8)
            .map(|i| a * (1.0 + changes[i % changes.len()] / 100.0))
            .collect();
        metric_row(&xa, &xb, 0.01)
    }

    /// A row whose seed reports `r` with standard deviations `std` over 8 runs.
    fn row(label: &str, exp: &str, metric: Option<&str>, scale: f64, r: (f64, f64)) -> RowSpec {
        RowSpec {
            label: label.into(),
            exp: exp.into(),
            metric: metric.map(str::to_string),
            scale,
            reported: (Some(r.0), Some(r.1)),
            spread: Spread::Std(0.1, 0.1),
            runs: Some(8),
            absolute: true,
            full_only: false,
        }
    }

    #[test]
    fn directions_follow_the_metric_and_the_effect() {
        assert_eq!(Dir::of(Effect::Down, Better::Lower), Dir::Better);
        assert_eq!(Dir::of(Effect::Down, Better::Higher), Dir::Worse);
        assert_eq!(Dir::of(Effect::Up, Better::Higher), Dir::Better);
        assert_eq!(Dir::of(Effect::Up, Better::Lower), Dir::Worse);
        assert_eq!(Dir::of(Effect::Up, Better::Unknown), Dir::Changed);
        assert_eq!(Dir::of(Effect::Null, Better::Lower), Dir::Same);
        assert_eq!(Dir::of(Effect::Unclear, Better::Lower), Dir::Unclear);
    }

    #[test]
    fn each_side_gets_an_interval_from_its_own_noise() {
        // Reported 2.0 -> 1.8 (-10 %), std 0.1 over 8 runs each: se 0.05, Welch
        // df 14, t 2.1448: -10 % ± 5.36 % -> an effect, better (lower).
        let spec = row("x", "e", Some("tool.time_s"), 1.0, (2.0, 1.8));
        let r = judge(&spec, None, None);
        let iv = r.reported_change.unwrap();
        assert!(
            (iv.est + 10.0).abs() < 1e-9 && (iv.hi + 4.638).abs() < 1e-2,
            "{iv:?}"
        );
        assert_eq!(r.reported_dir, Some(Dir::Better));
        assert_eq!((r.verdict.as_str(), r.grade), ("n/a", None));
        // No spread and no count: the stated defaults (5 % of each mean, 5 runs):
        // 2.0 -> 1.9 (-5 %) is then within the noise.
        let bare = RowSpec {
            spread: Spread::None,
            runs: None,
            ..row("x", "e", Some("tool.time_s"), 1.0, (2.0, 1.9))
        };
        let r = judge(&bare, None, None);
        assert_eq!(r.reported_dir, Some(Dir::Unclear));
        assert_eq!(r.reported_defaults, vec!["runs", "spread"]);
        // %stdev (seed 003) and a maximum of 10 runs (seed 004) as spreads.
        let cv = RowSpec {
            spread: Spread::CvPct(10.0, 5.0),
            ..row("x", "e", None, 1.0, (2.0, 1.8))
        };
        let (a, b, d) = cv.reported_sides().unwrap();
        assert!((a.std - 0.2).abs() < 1e-12 && (b.std - 0.09).abs() < 1e-12 && d.is_empty());
        let max = RowSpec {
            spread: Spread::Max(1.7469, 1.6192),
            runs: Some(10),
            ..row("x", "e", None, 1.0, (1.7465, 1.6016))
        };
        let (a, b, _) = max.reported_sides().unwrap();
        assert!((a.std - 0.0004 / 1.5388).abs() < 1e-5, "{a:?}");
        assert!((b.std - 0.0176 / 1.5388).abs() < 1e-4, "{b:?}");
    }

    #[test]
    fn grades_by_hand_for_each_pair_of_effects() {
        let spec = row("x", "e", Some("tool.time_s"), 1.0, (2.0, 1.8));
        // Simulated -5 % in every pair: an effect of the same sign, size x0.50 and
        // baseline x0.50 on the edge of x2: a match. The identical-arms control
        // missed it.
        let r = judge(&spec, Some(&pairs(1.0, &[-5.0])), None);
        assert_eq!(
            (r.grade, r.control),
            (Some(Grade::Match), Some(Grade::Missed))
        );
        assert_eq!(r.verdict, "match");
        assert!((r.size_ratio.unwrap() - 0.5).abs() < 1e-9);
        assert!(verdict_cell(&r).starts_with("match (sim better, seed better), size x0.50"));
        // Pairs of -5 % and +5 %: the interval spans 0: inconclusive, not a match.
        let r = judge(&spec, Some(&pairs(1.0, &[-5.0, 5.0])), None);
        assert_eq!(
            (r.grade, r.sim_dir),
            (Some(Grade::Inconclusive), Some(Dir::Unclear))
        );
        // Within ±0.5 %: a simulated null against the seed's effect: missed.
        let r = judge(&spec, Some(&pairs(1.0, &[-0.5, 0.3, 0.0])), None);
        assert_eq!(r.grade, Some(Grade::Missed));
        assert_eq!(r.verdict, "MISMATCH (missed)");
        // +10 %: opposite.
        let r = judge(&spec, Some(&pairs(1.0, &[10.0])), None);
        assert_eq!(r.grade, Some(Grade::Opposite));
        // -1.2 %: the right way, size x0.12: the direction only, and why.
        let r = judge(&spec, Some(&pairs(1.0, &[-1.2])), None);
        assert_eq!(
            (r.grade, r.off.clone()),
            (Some(Grade::Direction), vec!["size beyond x2".to_string()])
        );
        // The right size from a baseline 4x the seed's: the direction only ...
        let r = judge(&spec, Some(&pairs(8.0, &[-10.0])), None);
        assert_eq!(r.off, vec!["baseline beyond x2".to_string()]);
        // ... unless the table's absolute values do not compare (other units).
        let other_units = RowSpec {
            absolute: false,
            ..spec.clone()
        };
        let r = judge(&other_units, Some(&pairs(8.0, &[-10.0])), None);
        assert_eq!((r.grade, r.baseline_ratio), (Some(Grade::Match), None));
        // A seed null (2.0 -> 1.999, std 0.001 over 100 runs): a simulated effect
        // is invented, a simulated null agrees, and so does the control.
        let null = RowSpec {
            spread: Spread::Std(0.001, 0.001),
            runs: Some(100),
            ..row("x", "e", Some("tool.time_s"), 1.0, (2.0, 1.999))
        };
        let r = judge(&null, Some(&pairs(1.0, &[-5.0])), None);
        assert_eq!(
            (r.grade, r.reported_dir),
            (Some(Grade::Invented), Some(Dir::Same))
        );
        let r = judge(&null, Some(&pairs(1.0, &[0.2, -0.2])), None);
        assert_eq!(
            (r.grade, r.control),
            (Some(Grade::AgreeNull), Some(Grade::AgreeNull))
        );
        // Identical runs in both arms: a null of width 0, as the control.
        let r = judge(&spec, Some(&pairs(1.0, &[0.0])), None);
        assert_eq!(r.grade, r.control);
        // No simulated metric: n/a.
        let r = judge(&spec, None, None);
        assert_eq!((r.verdict.as_str(), r.sim), ("n/a", None));
        // Normalised rows have no baseline to compare.
        let r = judge(&spec, Some(&pairs(1.0, &[10.0])), Some(2.0));
        assert_eq!(r.baseline_ratio, None);
    }

    #[test]
    fn scaling_and_normalisation_apply_to_the_printed_values() {
        let spec = row("x", "e", Some("tool.time_s"), 10.0, (1.0, 1.0));
        let m = metric_row(&[2.0, 2.0], &[3.0, 3.0], 0.5);
        assert_eq!(judge(&spec, Some(&m), None).sim, Some((20.0, 30.0)));
        // Normalised to the baseline mean: 1 and 1.5.
        assert_eq!(judge(&spec, Some(&m), Some(2.0)).sim, Some((1.0, 1.5)));
    }

    #[test]
    fn every_row_has_its_experiment_and_every_scenario_exists() {
        for quick in [false, true] {
            let (exps, tables) = plan(&SEEDS, quick).unwrap();
            for s in SEEDS {
                assert!(tables.iter().any(|t| t.seed == s), "seed {s} quick={quick}");
            }
            for t in &tables {
                assert!(!t.rows.is_empty(), "{}", t.title);
                for r in &t.rows {
                    assert!(
                        exps.iter().any(|e| e.key == r.exp),
                        "{} -> {}",
                        t.title,
                        r.exp
                    );
                    assert!(r.reported.0.is_some() && r.reported.1.is_some());
                }
            }
            let mut keys: Vec<&str> = exps.iter().map(|e| e.key.as_str()).collect();
            keys.sort_unstable();
            let n = keys.len();
            keys.dedup();
            assert_eq!(keys.len(), n, "experiment keys are unique");
            for e in &exps {
                for arm in [&e.a, &e.b] {
                    seed_scenario(e.scenario, &e.sets, &ArmSpec::parse(arm))
                        .unwrap_or_else(|err| panic!("{} {arm}: {err}", e.key));
                }
            }
        }
    }

    #[test]
    fn every_seed_scenario_file_is_compiled_in() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../scenarios/seeds");
        let mut on_disk: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".toml"))
            .map(|n| n.trim_end_matches(".toml").to_string())
            .collect();
        on_disk.sort();
        let mut compiled: Vec<String> = SEED_SCENARIOS.iter().map(|(n, _)| n.to_string()).collect();
        compiled.sort();
        assert_eq!(on_disk, compiled);
    }

    #[test]
    fn tables_render_aligned() {
        let cols = vec!["".to_string(), "A".into(), "verdict".into()];
        let cells = vec![
            vec!["row".to_string(), "1.5".into(), "match".into()],
            vec!["longer row".to_string(), "10.25".into(), "n/a".into()],
        ];
        let t = crate::report::text::render_table(&cols, &cells);
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(lines.len(), 4);
        assert!(lines
            .iter()
            .all(|l| l.chars().count() == lines[0].chars().count()));
        assert_eq!(lines[2], "| row        |   1.5 | match   |");
        assert_eq!(lines[1], "|------------|------:|---------|");
    }
}
