//! The text reports: what `schedlab run`, `compare` and `reproduce` print.
//!
//! A run's summary is the first thing a person sees of a scenario: the machine
//! and kernel it ran on, the simulated time, the latency table, migrations and
//! placement reasons, energy, the per-function probes and the workload's own
//! metrics. A comparison prints one table per metric in the layout the seeds use
//! on the mailing list (centre, std, min, percentiles, max, Δ, then the paired and
//! unpaired tests). A reproduction prints each seed's tables in the seed's layout
//! (their cells are filled when the rows are judged, so its JSON carries them too),
//! the seed's single runs and the headline checks. All are written here from the finished results, with the
//! numbers of [`super::text`]; the runs and the statistics are computed in
//! [`crate::experiment`], which does not know how they are printed.

use super::text::{num, p_value, pct, render_table, Num};
use crate::experiment::compare::{ArmSpec, Better, Comparison};
use crate::experiment::reproduce::{Headline, Reproduction};
use crate::experiment::seed_tables::{seed_title, SeedTables};
use crate::experiment::RunResult;
use crate::stats::verdict::Grade;
use std::fmt::Write as _;

fn us(ns: u64) -> f64 {
    ns as f64 / 1e3
}

impl RunResult {
    /// The human-readable summary `schedlab run` prints.
    pub fn summary_text(&self) -> String {
        run_summary(self, false, true)
    }

    /// [`RunResult::summary_text`] with every feature switch listed when `verbose`
    /// (also those the modelled fair class does not have, `schedlab run
    /// --verbose`), and without the notes that say the same for every run of a
    /// scenario (the energy note) unless `notes`: `run --runs N` prints them once.
    pub fn summary_text_with(&self, verbose: bool, notes: bool) -> String {
        run_summary(self, verbose, notes)
    }
}

/// The summary `schedlab run` prints: head, latencies, counts, energy, functions,
/// workload metrics.
pub(crate) fn run_summary(r: &RunResult, verbose: bool, notes: bool) -> String {
    let mut s = String::new();
    run_head(&mut s, r, verbose);
    latency_table(&mut s, r);
    counts(&mut s, r);
    energy(&mut s, r, notes);
    functions(&mut s, r);
    workload_metrics(&mut s, r);
    s
}

/// Scenario, machine, kernel, seed, the non-default features and the run's length.
fn run_head(s: &mut String, r: &RunResult, verbose: bool) {
    let ms = |ns: u64| ns as f64 / 1e6;
    let class = match &r.kernel.scheduler {
        Some(name) => format!(" (sched_ext: {name})"),
        None => String::new(),
    };
    let _ = writeln!(
        s,
        "scenario {}  machine {} ({} CPUs)  kernel {}{class}  seed {}",
        r.scenario, r.machine.name, r.machine.nr_cpus, r.kernel.preset, r.seed
    );
    let _ = writeln!(
        s,
        "{}: {}",
        if verbose {
            "features (every switch)"
        } else {
            "features"
        },
        r.shown_features(verbose)
            .iter()
            .map(|f| f.as_str())
            .collect::<Vec<_>>()
            .join(" ")
    );
    let _ = writeln!(
        s,
        "simulated {:.3} ms in {} events ({:.3} s wall, {:.2} M events/s); stop: {:?}",
        ms(r.sim_time_ns),
        r.events,
        r.wall_seconds,
        r.events as f64 / r.wall_seconds.max(1e-9) / 1e6,
        r.workload.stop_reason
    );
    if let Some(x) = &r.kernel.scheduler_exit {
        let _ = writeln!(
            s,
            "sched_ext: scheduler `{}` failed at {:.3} ms and was disabled: {}; the fair class ran every task after that",
            r.kernel.scheduler.as_deref().unwrap_or("?"),
            ms(x.t_ns),
            x.reason
        );
    }
}

/// Wakeup latency and runqueue wait, in microseconds.
fn latency_table(s: &mut String, r: &RunResult) {
    let _ = writeln!(
        s,
        "\n{:<20} {:>9} {:>10} {:>10} {:>10} {:>10} {:>10}",
        "latency (us)", "count", "mean", "p50", "p99", "p99.9", "max"
    );
    for (name, h) in [
        ("wakeup", &r.metrics.wakeup_latency_ns),
        ("runqueue wait", &r.metrics.runqueue_wait_ns),
    ] {
        let _ = writeln!(
            s,
            "{:<20} {:>9} {:>10.2} {:>10.2} {:>10.2} {:>10.2} {:>10.2}",
            name,
            h.count,
            h.mean / 1e3,
            us(h.p50),
            us(h.p99),
            us(h.p999),
            us(h.max)
        );
    }
}

/// Switches, wakeups, migrations per level, mean busy, placement reasons.
fn counts(s: &mut String, r: &RunResult) {
    let m = &r.metrics;
    let mig: Vec<String> = m
        .migrations
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    let busy = m.cpu_busy.iter().sum::<f64>() / m.cpu_busy.len().max(1) as f64;
    let _ = writeln!(
        s,
        "\nswitches {}  wakeups {}  migrations: {}  mean CPU busy {:.1}%",
        m.context_switches,
        m.wakeups,
        mig.join(" "),
        busy * 100.0
    );
    let reasons: Vec<String> = m
        .placement_reasons
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    let _ = writeln!(s, "placement reasons: {}", reasons.join(" "));
    if let Some(sh) = &m.sis_shadow {
        let c = &sh.counts;
        let _ = writeln!(
            s,
            "shadow {f}: {} of {} select_idle_sibling calls reached the scans; with {other} \
             they chose the same CPU {}, its SMT sibling {}, another core {}",
            c.reached,
            c.calls,
            c.same_cpu,
            c.same_core,
            c.other_core(),
            f = sh.feature,
            other = if r.kernel.features.contains(&sh.feature) {
                format!("NO_{}", sh.feature)
            } else {
                sh.feature.clone()
            },
        );
    }
}

/// Energy in joules, or why there is none.
fn energy(s: &mut String, r: &RunResult, notes: bool) {
    let e = &r.metrics.energy_joules;
    match e.total {
        Some(total) => {
            let cl: Vec<String> = e.per_cluster.iter().map(|j| format!("{j:.6}")).collect();
            let clusters = e
                .clusters
                .map(|j| format!(", clusters {j:.6}"))
                .unwrap_or_default();
            let _ = writeln!(
                s,
                "energy {:.6} J (busy {:.6}, idle loop {:.6}, idle states {:.6}{clusters}); \
                 per cluster: {}",
                total,
                e.busy.unwrap_or(0.0),
                e.idle_loop.unwrap_or(0.0),
                e.idle_states.unwrap_or(0.0),
                cl.join(" ")
            );
            if let Some(n) = e.note.as_ref().filter(|_| notes) {
                let _ = writeln!(s, "  energy note: {n}");
            }
        }
        None => {
            let _ = writeln!(s, "energy: {}", e.note.as_deref().unwrap_or("not computed"));
        }
    }
}

/// The probed scheduler functions: calls, CPUs probed and charged cost per call.
fn functions(s: &mut String, r: &RunResult) {
    if r.metrics.functions.is_empty() {
        return;
    }
    let skips = r.metrics.functions.values().any(|f| f.cpus_skipped > 0);
    let _ = write!(
        s,
        "\n{:<22} {:>10} {:>16} {:>20}",
        "function", "calls", "CPUs probed/call", "charged ns/call"
    );
    let _ = writeln!(s, "{}", if skips { "   CPUs skipped/call" } else { "" });
    for (name, f) in &r.metrics.functions {
        let (pm, ps) = f.probed_mean_std();
        let (cm, cs) = f.cost_mean_std();
        let _ = write!(
            s,
            "{:<22} {:>10} {:>8.2} ± {:<6.2} {:>10.1} ± {:<8.1}",
            name, f.calls, pm, ps, cm, cs
        );
        if skips {
            let per = f.cpus_skipped as f64 / f.calls.max(1) as f64;
            let _ = write!(s, " {per:>12.2}");
        }
        let _ = writeln!(s);
    }
}

/// The workload's own metrics (and the tool's output it rebuilds).
fn workload_metrics(s: &mut String, r: &RunResult) {
    if r.workload.metrics.is_empty() && r.workload.tool_output.is_none() {
        return;
    }
    let _ = writeln!(s, "\nworkload `{}` metrics:", r.workload.kind);
    if let Some(t) = &r.workload.tool_output {
        let _ = writeln!(s, "{t}");
    }
    for (name, m) in &r.workload.metrics {
        if m.unit == "ns" {
            let _ = writeln!(
                s,
                "  {:<24} n={:<8} mean={:.2}us p50={:.2}us p99={:.2}us max={:.2}us",
                name,
                m.summary.count,
                m.summary.mean / 1e3,
                us(m.summary.p50),
                us(m.summary.p99),
                us(m.summary.max)
            );
        } else {
            let _ = writeln!(s, "  {:<24} {}", name, m.summary.count);
        }
    }
}

/// An arm's SPEC, or `(as written)` for the scenario unchanged.
pub(crate) fn arm_label(a: &ArmSpec) -> String {
    if a.spec.is_empty() {
        "(as written)".into()
    } else {
        a.spec.clone()
    }
}

/// `lower is better`, `higher is better` or `no preferred direction`.
pub fn direction(b: Better) -> &'static str {
    match b {
        Better::Lower => "lower is better",
        Better::Higher => "higher is better",
        Better::Unknown => "no preferred direction",
    }
}

impl Comparison {
    /// Fixed-width text, one table per metric, in the seeds' layout.
    pub fn text(&self) -> String {
        comparison_text(self)
    }
}

/// A paired change's 95 % interval as text: `[-5.1, -3.3] %`, or why there is none.
pub(crate) fn interval_text(iv: &crate::stats::verdict::Interval) -> String {
    if iv.lo.is_finite() && iv.hi.is_finite() {
        format!("[{:+.1}, {:+.1}] %", iv.lo + 0.0, iv.hi + 0.0)
    } else {
        "(no 95 % interval: fewer than 6 paired runs)".to_string()
    }
}

/// The verdict line a comparison opens with: the primary metric's paired change
/// with its 95 % interval and what it shows (an effect, a null, or too few runs to
/// tell), and how many other metrics show an effect.
pub(crate) fn verdict(c: &Comparison) -> String {
    use crate::experiment::compare::EFFECT_FLOOR_PCT as FLOOR;
    use crate::stats::verdict::Effect;
    let Some(p) = c.primary() else {
        return "verdict: no metrics".into();
    };
    let r = &c.rows[p];
    let n = c.seeds.len();
    let (est, ci) = match &r.change_pct {
        Some(iv) => (iv.est, interval_text(iv)),
        None => (
            r.delta_pct,
            "(no interval: a baseline run is 0)".to_string(),
        ),
    };
    let head = match r.effect() {
        Effect::Up | Effect::Down => {
            let how = match r.b_better() {
                Some(true) => "better",
                Some(false) => "worse",
                None => "different",
            };
            format!(
                "B is {how} on {}: {est:+.1} % {ci} ({}; {n} paired runs)",
                r.name,
                direction(r.better)
            )
        }
        Effect::Null => format!(
            "no change of {FLOOR} % or more on {}: {est:+.1} % {ci} ({n} paired runs)",
            r.name
        ),
        Effect::Unclear => format!(
            "cannot tell on {}: {est:+.1} % {ci}: {n} paired runs cannot show a change of {FLOOR} % or its absence (underpowered)",
            r.name
        ),
    };
    let others = c.rows.len() - 1;
    let changed = c
        .rows
        .iter()
        .enumerate()
        .filter(|(i, r)| *i != p && r.effect().is_effect())
        .count();
    format!(
        "verdict: {head}; {changed} of {others} other metrics change by {FLOOR} % or more (95 % interval of the paired change off 0)"
    )
}

/// A warning when every seed gave the same numbers in both arms: the scenario draws
/// nothing at random and sets no `run.noise`, so the runs are copies and the tests
/// have nothing to test.
pub(crate) fn same_seeds_warning(c: &Comparison) -> Option<String> {
    let all_same = c.seeds.len() > 1
        && !c.rows.is_empty()
        && c.rows.iter().all(|r| r.a.std == 0.0 && r.b.std == 0.0);
    all_same.then(|| {
        format!(
            "warning: all {} seeds gave identical results in both arms: the scenario has no \
             source of run-to-run variation (set `run.noise`, e.g. --set run.noise=0.05), so \
             the runs are copies of one and the tests below mean nothing",
            c.seeds.len()
        )
    })
}

/// A metric's verdict after its paired change's interval: ` (B better)` / ` (B
/// worse)` for an effect, ` (no change)` for a null, ` (cannot tell)` otherwise.
pub(crate) fn row_verdict(r: &crate::experiment::compare::MetricRow) -> &'static str {
    use crate::stats::verdict::Effect;
    match (r.effect(), r.b_better()) {
        (Effect::Up | Effect::Down, Some(true)) => " (B better)",
        (Effect::Up | Effect::Down, Some(false)) => " (B worse)",
        (Effect::Up | Effect::Down, None) => " (differs)",
        (Effect::Null, _) => " (no change)",
        (Effect::Unclear, _) => " (cannot tell)",
    }
}

/// The line under a metric's table: its paired change with the interval, and the
/// rank tests.
pub(crate) fn row_note(r: &crate::experiment::compare::MetricRow) -> String {
    let change = match &r.change_pct {
        Some(iv) => format!("paired change {:+.1} % {}", iv.est + 0.0, interval_text(iv)),
        None => "paired change -".to_string(),
    };
    format!(
        "{change}{}; wilcoxon (paired) {}  mann-whitney {}",
        row_verdict(r),
        p_value(&r.wilcoxon),
        p_value(&r.mann_whitney)
    )
}

/// What `schedlab compare` prints: the verdict, the arms, then one table per
/// metric, the primary metric first and the rest by group.
pub(crate) fn comparison_text(c: &Comparison) -> String {
    use crate::experiment::compare::Group;
    let mut s = String::new();
    let _ = writeln!(s, "{}\n", verdict(c));
    if let Some(w) = same_seeds_warning(c) {
        let _ = writeln!(s, "{w}\n");
    }
    let _ = writeln!(
        s,
        "scenario `{}`, {} paired runs (seeds {}..={})",
        c.scenario,
        c.seeds.len(),
        c.seeds.first().unwrap_or(&0),
        c.seeds.last().unwrap_or(&0)
    );
    let _ = writeln!(s, "A: {}\nB: {}", arm_label(&c.a), arm_label(&c.b));
    if c.seeds.len() < 10 {
        let _ = writeln!(
            s,
            "(fewer than 10 runs: the tests' normal approximation is rough)"
        );
    }
    let mut group = None;
    for (k, i) in c.report_order().into_iter().enumerate() {
        let r = &c.rows[i];
        let g = Group::of(&r.name);
        if k == 0 {
            let _ = writeln!(s, "\n== primary metric");
        } else if group != Some(g) {
            let _ = writeln!(s, "\n== {}", g.name());
            group = Some(g);
        }
        let _ = writeln!(s, "\n{} ({})", r.name, direction(r.better));
        let _ = writeln!(
            s,
            "| {:<5} | {:>14} | {:>14} | {:>8} |",
            "", "A", "B", "DELTA"
        );
        let _ = writeln!(s, "|-------+----------------+----------------+----------|");
        for (k, a, b) in r.stat_rows("%") {
            let _ = writeln!(
                s,
                "| {:<5} | {:>14} | {:>14} | {:>8} |",
                k,
                num(a, Num::Stat),
                num(b, Num::Stat),
                pct(a, b)
            );
        }
        let _ = writeln!(s, "{}", row_note(r));
    }
    s
}

impl Reproduction {
    /// The tables as text (Markdown-compatible), seed by seed.
    pub fn text(&self) -> String {
        reproduction_text(self)
    }
}

/// What `schedlab reproduce` prints: per seed its tables, the single runs and the
/// headline checks, with the verdict counts first and last.
pub(crate) fn reproduction_text(r: &Reproduction) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "schedlab {} reproduce: {} paired runs per arm{}, noise {} (A = the seed's baseline, B = the seed's feature; Δ = (B - A) / A)",
        r.version,
        r.runs,
        if r.quick { " (quick mode: headline tables, shortened runs)" } else { "" },
        r.noise
    );
    let _ = writeln!(s, "{}", reproduction_verdict(r));
    for &seed in &r.seeds {
        let _ = writeln!(s, "\n## {}\n", seed_title(seed));
        for t in r.tables.iter().filter(|t| t.seed == seed) {
            let _ = writeln!(s, "### {}\n\n{}\n", t.title, t.setup);
            s.push_str(&render_table(&t.columns, &t.cells));
            s.push('\n');
        }
        if !r.single_runs.is_empty() {
            single_runs(&mut s, seed, &r.single_runs);
        }
        let hs: Vec<&Headline> = r.headlines.iter().filter(|h| h.seed == seed).collect();
        if !hs.is_empty() {
            let _ = writeln!(s, "Headline checks:");
            for h in hs {
                let _ = writeln!(
                    s,
                    "  [{}] {}: {}",
                    if h.holds { "ok" } else { "FAILS" },
                    h.claim,
                    h.detail
                );
            }
        }
    }
    let _ = writeln!(s, "\n{}", reproduction_verdict(r));
    s
}

/// Grade counts as text: `3 match, 1 direction, 0 inconclusive, 2 MISMATCH (1
/// missed, 1 opposite)`, over the grades `of` that occur in `rows`.
fn grade_counts(grades: &[Grade], of: &[Grade]) -> String {
    let n = |g: Grade| grades.iter().filter(|x| **x == g).count();
    let mut parts: Vec<String> = of
        .iter()
        .filter(|g| !g.is_mismatch())
        .map(|&g| format!("{} {}", n(g), g.word()))
        .collect();
    let mism: Vec<String> = of
        .iter()
        .filter(|g| n(**g) > 0)
        .filter_map(|&g| g.mismatch_kind().map(|k| format!("{} {k}", n(g))))
        .collect();
    let total: usize = of.iter().filter(|g| g.is_mismatch()).map(|&g| n(g)).sum();
    if of.iter().any(|g| g.is_mismatch()) {
        parts.push(if mism.is_empty() {
            format!("{total} MISMATCH")
        } else {
            format!("{total} MISMATCH ({})", mism.join(", "))
        });
    }
    parts.join(", ")
}

/// The line a reproduction opens and closes with: the grades over the rows where
/// the seed shows an effect, beside the identical-arms control's; then over the
/// rows where the seed shows no change; how many rows the seed's own data cannot
/// decide; and how many headline checks hold.
pub(crate) fn reproduction_verdict(r: &Reproduction) -> String {
    use crate::experiment::reproduce::Dir;
    let rows: Vec<_> = r
        .tables
        .iter()
        .filter(|t| t.counted)
        .flat_map(|t| &t.rows)
        .collect();
    let by = |pred: &dyn Fn(Dir) -> bool| -> (Vec<Grade>, Vec<Grade>) {
        let sel: Vec<_> = rows
            .iter()
            .filter(|x| x.reported_dir.is_some_and(pred) && x.grade.is_some())
            .collect();
        (
            sel.iter().filter_map(|x| x.grade).collect(),
            sel.iter().filter_map(|x| x.control).collect(),
        )
    };
    let (eff, eff_ctl) = by(&|d| matches!(d, Dir::Better | Dir::Worse | Dir::Changed));
    let (null, null_ctl) = by(&|d| d == Dir::Same);
    let (unclear, _) = by(&|d| d == Dir::Unclear);
    let on_effect = [
        Grade::Match,
        Grade::Direction,
        Grade::Inconclusive,
        Grade::Missed,
        Grade::Opposite,
    ];
    let on_null = [Grade::AgreeNull, Grade::Inconclusive, Grade::Invented];
    let holds = r.headlines.iter().filter(|h| h.holds).count();
    format!(
        "verdict: over the {} rows where the seed shows an effect: {} (the identical-arms control: {}); over the {} rows where the seed shows no change: {} (control: {}); {} rows where the seed's own data cannot tell are inconclusive. {} of {} headline checks hold.",
        eff.len(),
        grade_counts(&eff, &on_effect),
        grade_counts(&eff_ctl, &on_effect),
        null.len(),
        grade_counts(&null, &on_null),
        grade_counts(&null_ctl, &on_null),
        unclear.len(),
        holds,
        r.headlines.len()
    )
}

/// The simulated single runs beside the ones seed `seed`'s file reports (if any).
fn single_runs(s: &mut String, seed: u8, runs: &[(String, String, Vec<f64>)]) {
    let reported = match SeedTables::load(seed) {
        Ok(t) if !t.single_runs.is_empty() => t.single_runs,
        _ => return,
    };
    let _ = writeln!(
        s,
        "### Single runs with completion time of each unpinned task (s)\n"
    );
    let times = |v: &[f64]| {
        v.iter()
            .map(|x| format!("{x:.4}"))
            .collect::<Vec<_>>()
            .join(" ")
    };
    let columns: Vec<String> = [
        "machine",
        "kernel",
        "simulated (sorted)",
        "reported (sorted)",
    ]
    .iter()
    .map(|c| c.to_string())
    .collect();
    let cells: Vec<Vec<String>> = runs
        .iter()
        .map(|(m, arm, sim)| {
            let rep = reported
                .iter()
                .find(|r| &r.machine == m && &r.kernel == arm)
                .map(|r| times(&r.reported))
                .unwrap_or_default();
            vec![m.clone(), arm.clone(), times(sim), rep]
        })
        .collect();
    s.push_str(&render_table(&columns, &cells));
    s.push('\n');
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiment::compare::{classify, MetricRow};
    use crate::stats::verdict::Interval;
    use crate::stats::{Describe, TestResult};

    fn row(name: &str, delta_pct: f64, p: Option<f64>) -> MetricRow {
        let (better, mean_kind) = classify(name);
        let d = Describe::of(&[1.0, 2.0]);
        MetricRow {
            name: name.into(),
            better,
            mean_kind,
            a: d,
            b: d,
            a_centre: 1.0,
            b_centre: 1.0 + delta_pct / 100.0,
            delta_pct,
            wilcoxon: p.map(|p| TestResult { statistic: 0.0, p }),
            mann_whitney: None,
            // A significant row's interval excludes 0 (Δ × [0.5, 1.5]); any other
            // spans 0 and Δ, 5 % beyond each.
            change_pct: Some(match p {
                Some(p) if p < 0.05 => {
                    let (x, y) = (0.5 * delta_pct, 1.5 * delta_pct);
                    Interval {
                        est: delta_pct,
                        lo: x.min(y),
                        hi: x.max(y),
                    }
                }
                _ => Interval {
                    est: delta_pct,
                    lo: delta_pct.min(0.0) - 5.0,
                    hi: delta_pct.max(0.0) + 5.0,
                },
            }),
        }
    }

    fn cmp(rows: Vec<MetricRow>) -> Comparison {
        Comparison {
            scenario: "s".into(),
            seeds: (1..=20).collect(),
            a: ArmSpec::parse(""),
            b: ArmSpec::parse("X"),
            rows,
            per_seed: vec![],
        }
    }

    #[test]
    fn the_verdict_names_the_primary_metric_and_counts_the_rest() {
        // Alphabetical rows, as compare builds them: the tool's number is not first.
        let c = cmp(vec![
            row("context_switches", 3.0, Some(0.01)),
            row("migrations", -10.0, Some(0.2)),
            row("select_idle_cpu.cpus_probed_per_call", -30.0, Some(0.001)),
            row("tool.time_s", -4.2, Some(0.003)),
            row("wakeup_latency_us.mean", 1.0, None),
        ]);
        assert_eq!(c.primary(), Some(3));
        assert_eq!(
            verdict(&c),
            "verdict: B is better on tool.time_s: -4.2 % [-6.3, -2.1] % (lower is better; 20 paired runs); 2 of 4 other metrics change by 1 % or more (95 % interval of the paired change off 0)"
        );
        // Primary first, then workload, latency, placement, cost.
        let names: Vec<&str> = c
            .report_order()
            .into_iter()
            .map(|i| c.rows[i].name.as_str())
            .collect();
        assert_eq!(
            names,
            [
                "tool.time_s",
                "wakeup_latency_us.mean",
                "context_switches",
                "migrations",
                "select_idle_cpu.cpus_probed_per_call"
            ]
        );
        let text = comparison_text(&c);
        assert!(text.starts_with("verdict: B is better on tool.time_s"));
        // An interval across 0: neutral, whatever the sign.
        assert!(
            text.contains("paired change -10.0 % [-15.0, +5.0] % (cannot tell); wilcoxon (paired) p=0.2000  mann-whitney p=-"),
            "{text}"
        );
        assert!(
            text.contains(
                "paired change +3.0 % [+1.5, +4.5] % (differs); wilcoxon (paired) p=0.0100"
            ),
            "{text}"
        );
    }

    #[test]
    fn identical_seeds_are_warned_about() {
        let mut c = cmp(vec![row("tool.time_s", 0.0, None)]);
        c.rows[0].a = Describe::of(&[1.0, 1.0]);
        c.rows[0].b = Describe::of(&[1.0, 1.0]);
        assert!(comparison_text(&c).contains("warning: all 20 seeds gave identical results"));
        c.rows[0].b = Describe::of(&[1.0, 2.0]);
        assert!(same_seeds_warning(&c).is_none());
    }

    #[test]
    fn a_non_significant_primary_is_said_so() {
        let c = cmp(vec![row("tool.time_s", 0.4, Some(0.97))]);
        assert_eq!(
            verdict(&c),
            "verdict: cannot tell on tool.time_s: +0.4 % [-5.0, +5.4] %: 20 paired runs cannot show a change of 1 % or its absence (underpowered); 0 of 0 other metrics change by 1 % or more (95 % interval of the paired change off 0)"
        );
        // An interval within ±1 %: a null, said as such.
        let mut c = cmp(vec![row("tool.time_s", 0.2, None)]);
        c.rows[0].change_pct = Some(Interval {
            est: 0.2,
            lo: -0.3,
            hi: 0.7,
        });
        assert_eq!(
            verdict(&c),
            "verdict: no change of 1 % or more on tool.time_s: +0.2 % [-0.3, +0.7] % (20 paired runs); 0 of 0 other metrics change by 1 % or more (95 % interval of the paired change off 0)"
        );
        assert!(comparison_text(&c).contains("(no change); wilcoxon"));
        // Fewer than 6 runs: no interval, and the verdict says so.
        c.rows[0].change_pct = Some(Interval::unbounded(0.2));
        assert!(
            verdict(&c).contains(
                "+0.2 % (no 95 % interval: fewer than 6 paired runs): 20 paired runs cannot show"
            ),
            "{}",
            verdict(&c)
        );
        // Without a tool number, the mean wakeup latency leads.
        let c = cmp(vec![
            row("migrations", 1.0, None),
            row("wakeup_latency_us.mean", 1.0, None),
        ]);
        assert_eq!(c.primary(), Some(1));
    }
}
