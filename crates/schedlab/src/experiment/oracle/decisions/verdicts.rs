//! Verdicts over runs: a case's real runs against its simulated runs, statistic by
//! statistic, each with an interval from both sides' own run-to-run spread.
//!
//! **Why runs.** One real run of a case says what one kernel did once. A fraction
//! over eight forks moves by an eighth when one fork lands elsewhere, and a real
//! kernel does not repeat itself either: which CPU the balancer pulls from, which
//! idle CPU a scan meets first, depend on timing. So a case is recorded as several
//! real runs and simulated over several seeds with `run.noise`, and every
//! statistic is compared as a distribution over runs ([`crate::stats::verdict`]):
//!
//! * **event fractions** (a class of fork levels, wakeup classes, migration levels;
//!   the share of wakeup migrations): the pooled fraction of each side's events,
//!   `Σk / Σn`, with an overdispersed binomial variance (`φ` from the spread of the
//!   runs' own fractions: events of one run are not independent draws);
//! * **per-run fractions and task counts** (reach of the fork spread, occupancy):
//!   Welch's interval for the difference of the run means;
//! * **counts, rates, times**: the log-ratio of the run means, Welch on the delta
//!   method's variance (counts offset by ½).
//!
//! A statistic is **consistent** when the whole interval of the difference lies
//! within the size that matters for its kind ([`Sizes`], pre-registered in
//! docs/validation.md), **differs** when the interval excludes 0 and the estimate is
//! at least that size, and **underpowered** otherwise: the runs could not tell a
//! difference of that size — never counted as agreement. A single real run always
//! leaves the real spread unknown: underpowered. A class distribution row sums up its
//! classes: it differs when one of them does, is consistent when all are, else
//! underpowered.
//!
//! **Negative control.** The same comparison of the real runs against a
//! deliberately wrong model (the case's `control` features, e.g. no wake-affine)
//! tells which statistics can tell a wrong model from the right one at all: a
//! statistic the control does not make *differ* is *non-discriminating* for that
//! case, reported as such rather than as a match.

use super::{statistics, Decisions, Kind, Obs, Stat};
use crate::stats::verdict::{
    effect, fraction_difference, log_ratio, mean_difference, Effect, Interval,
};
use serde::Serialize;

/// The size of a difference that matters, per kind of statistic (pre-registered in
/// docs/validation.md, "Verdicts over runs").
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Sizes {
    /// Fractions (event classes, shares, per-run fractions): absolute.
    pub fraction: f64,
    /// Mean task counts (occupancy imbalance): tasks.
    pub tasks: f64,
    /// Counts, rates and times: a factor (compared as `|ln ratio| ≥ ln factor`).
    pub factor: f64,
}

/// The pre-registered sizes: 0.10 of a fraction, half a task, a factor of 1.5.
pub const SIZES: Sizes = Sizes {
    fraction: 0.10,
    tasks: 0.5,
    factor: 1.5,
};

impl Sizes {
    pub(crate) fn of(&self, k: Kind) -> f64 {
        match k {
            Kind::Distribution | Kind::Fraction => self.fraction,
            Kind::Tasks | Kind::Cpus => self.tasks,
            Kind::Rate | Kind::Count | Kind::Time => self.factor.ln(),
        }
    }
}

/// How a statistic's simulated runs compare with its real runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum RunVerdict {
    /// The difference is smaller than the size that matters, surely.
    Consistent,
    /// The difference is at least that size, surely.
    Differs,
    /// The runs cannot tell a difference of that size.
    Underpowered,
    /// Neither side has data for it.
    #[serde(rename = "n/a")]
    NoData,
}

impl RunVerdict {
    pub const ALL: [RunVerdict; 4] = [
        RunVerdict::Consistent,
        RunVerdict::Differs,
        RunVerdict::Underpowered,
        RunVerdict::NoData,
    ];

    pub fn name(self) -> &'static str {
        match self {
            RunVerdict::Consistent => "consistent",
            RunVerdict::Differs => "differs",
            RunVerdict::Underpowered => "underpowered",
            RunVerdict::NoData => "n/a",
        }
    }

    fn of(iv: Option<Interval>, size: f64, has_data: bool) -> RunVerdict {
        match iv {
            None if !has_data => RunVerdict::NoData,
            None => RunVerdict::Underpowered,
            Some(iv) => match effect(&iv, size) {
                Effect::Up | Effect::Down => RunVerdict::Differs,
                Effect::Null => RunVerdict::Consistent,
                Effect::Unclear => RunVerdict::Underpowered,
            },
        }
    }
}

/// One statistic compared over runs.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RunRow {
    pub statistic: String,
    pub kind: Kind,
    /// Each side's value over its runs: the pooled fraction of events, or the mean
    /// of the per-run values (`None`: no data).
    pub real: Option<f64>,
    pub sim: Option<f64>,
    /// Runs with data.
    pub real_runs: usize,
    pub sim_runs: usize,
    /// Events behind each side (event fractions and distributions; 0 otherwise).
    pub real_n: u64,
    pub sim_n: u64,
    /// Simulated minus real (fractions, tasks) or `ln(sim / real)` (counts, rates,
    /// times), with its 95 % interval.
    pub diff: Option<Interval>,
    pub verdict: RunVerdict,
}

/// A case's real runs against its simulated runs.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RunComparison {
    pub sizes: Sizes,
    pub rows: Vec<RunRow>,
}

impl RunComparison {
    /// Rows with verdict `v`.
    pub fn count(&self, v: RunVerdict) -> usize {
        self.rows.iter().filter(|r| r.verdict == v).count()
    }

    /// The row of `statistic`.
    pub fn row(&self, statistic: &str) -> Option<&RunRow> {
        self.rows.iter().find(|r| r.statistic == statistic)
    }
}

/// Compare the real runs `real` with the simulated runs `sim` (each one
/// [`Decisions`] per run).
pub fn compare_runs(real: &[Decisions], sim: &[Decisions]) -> RunComparison {
    RunComparison {
        sizes: SIZES,
        rows: rows_over_runs(real, sim),
    }
}

/// Every statistic's row of `side` against `reference` over their runs (`real` is
/// the reference's value, `sim` the side's, `diff` side − reference), distribution
/// rows summing up their classes. [`compare_runs`] reads a real side against a
/// simulated one; an A/B ([`super::effects`]) reads arm B against arm A on each side.
pub(crate) fn rows_over_runs(reference: &[Decisions], side: &[Decisions]) -> Vec<RunRow> {
    let (real, sim) = (reference, side);
    let spread = real.iter().chain(sim).any(|d| d.spread.released);
    let per_run =
        |ds: &[Decisions]| -> Vec<Vec<Stat>> { ds.iter().map(|d| statistics(d, spread)).collect() };
    let (r, s) = (per_run(real), per_run(sim));
    let names: Vec<(String, Kind)> = statistics(&Decisions::default(), spread)
        .into_iter()
        .map(|x| (x.name, x.kind))
        .collect();
    let mut rows: Vec<RunRow> = Vec::with_capacity(names.len());
    for (i, (name, kind)) in names.into_iter().enumerate() {
        let col = |side: &[Vec<Stat>]| -> Vec<Obs> {
            side.iter().map(|run| run[i].obs.clone()).collect()
        };
        let (ro, so) = (col(&r), col(&s));
        rows.push(row(name, kind, &ro, &so));
    }
    // A distribution row sums up its class rows (the rows after it, `name.class`).
    for i in 0..rows.len() {
        if rows[i].kind != Kind::Distribution {
            continue;
        }
        let prefix = format!("{}.", rows[i].statistic);
        let classes: Vec<RunVerdict> = rows[i + 1..]
            .iter()
            .take_while(|x| x.statistic.starts_with(&prefix) && x.kind == Kind::Fraction)
            .map(|x| x.verdict)
            .filter(|v| *v != RunVerdict::NoData)
            .collect();
        rows[i].verdict = if classes.is_empty() {
            RunVerdict::NoData
        } else if classes.contains(&RunVerdict::Differs) {
            RunVerdict::Differs
        } else if classes.iter().all(|v| *v == RunVerdict::Consistent) {
            RunVerdict::Consistent
        } else {
            RunVerdict::Underpowered
        };
    }
    rows
}

/// The row of a time the workload's tool printed (hackbench's `Time:`), one value
/// per run of each side that printed one, compared as a log-ratio like every time.
pub fn tool_time_row(statistic: &str, real: &[f64], sim: &[f64]) -> RunRow {
    value_row(statistic, Kind::Time, real, sim)
}

/// The row of a statistic with one value per run on each side, outside the
/// decisions a trace holds (a tool's time, a wakeup scan's probes per call).
pub fn value_row(statistic: &str, kind: Kind, real: &[f64], sim: &[f64]) -> RunRow {
    let obs = |v: &[f64]| -> Vec<Obs> { v.iter().map(|&x| Obs::Value(Some(x))).collect() };
    row(statistic.to_string(), kind, &obs(real), &obs(sim))
}

/// One statistic's row from both sides' per-run observations.
fn row(statistic: String, kind: Kind, real: &[Obs], sim: &[Obs]) -> RunRow {
    let events = |o: &[Obs]| -> Vec<(u64, u64)> {
        o.iter()
            .filter_map(|x| match x {
                Obs::Events(k, n) => Some((*k, *n)),
                _ => None,
            })
            .collect()
    };
    let values = |o: &[Obs]| -> Vec<f64> {
        o.iter()
            .filter_map(|x| match x {
                Obs::Value(v) => *v,
                _ => None,
            })
            .collect()
    };
    let dist_n = |o: &[Obs]| -> u64 {
        o.iter()
            .map(|x| match x {
                Obs::Dist(c) => c.iter().sum(),
                Obs::Events(_, n) => *n,
                Obs::Value(_) => 0,
            })
            .sum()
    };
    let size = SIZES.of(kind);
    let (real_n, sim_n) = (dist_n(real), dist_n(sim));
    let (rv, sv, rr, sr, diff, has) = match real.first().or(sim.first()) {
        Some(Obs::Events(..)) => {
            let (re, se) = (events(real), events(sim));
            let pooled = |e: &[(u64, u64)]| {
                let n: u64 = e.iter().map(|x| x.1).sum();
                (n > 0).then(|| e.iter().map(|x| x.0).sum::<u64>() as f64 / n as f64)
            };
            let runs = |e: &[(u64, u64)]| e.iter().filter(|x| x.1 > 0).count();
            (
                pooled(&re),
                pooled(&se),
                runs(&re),
                runs(&se),
                fraction_difference(&re, &se),
                real_n > 0 || sim_n > 0,
            )
        }
        Some(Obs::Value(_)) => {
            let (rv, sv) = (values(real), values(sim));
            let mean = |x: &[f64]| (!x.is_empty()).then(|| x.iter().sum::<f64>() / x.len() as f64);
            let diff = match kind {
                Kind::Rate | Kind::Time => log_ratio(&rv, &sv, 0.0),
                Kind::Count => log_ratio(&rv, &sv, 0.5),
                _ => mean_difference(&rv, &sv),
            };
            let has = !rv.is_empty() || !sv.is_empty();
            (mean(&rv), mean(&sv), rv.len(), sv.len(), diff, has)
        }
        Some(Obs::Dist(_)) | None => {
            let runs = |o: &[Obs]| {
                o.iter()
                    .filter(|x| matches!(x, Obs::Dist(c) if c.iter().sum::<u64>() > 0))
                    .count()
            };
            (
                None,
                None,
                runs(real),
                runs(sim),
                None,
                real_n > 0 || sim_n > 0,
            )
        }
    };
    RunRow {
        statistic,
        kind,
        real: rv,
        sim: sv,
        real_runs: rr,
        sim_runs: sr,
        real_n,
        sim_n,
        diff,
        verdict: RunVerdict::of(diff, size, has),
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    /// A run whose `n` forks land `smt` of them on an SMT sibling of the forking CPU
    /// and the rest elsewhere in its LLC, and whose migrations within an LLC run at
    /// `rate` per second over 1 s.
    pub(in crate::experiment::oracle::decisions) fn run(smt: u64, n: u64, rate: f64) -> Decisions {
        let mut d = Decisions::default();
        d.fork.count = n;
        d.fork.level_counts.smt = smt;
        d.fork.level_counts.llc = n - smt;
        d.migrations.window_s = 1.0;
        d.migrations.rate_per_s.llc = rate;
        d
    }

    fn verdict(c: &RunComparison, s: &str) -> RunVerdict {
        c.row(s).unwrap_or_else(|| panic!("no row {s}")).verdict
    }

    #[test]
    fn fractions_over_runs_by_hand() {
        // 5 real runs of 100 forks with 30 on SMT; 5 simulated with 32: pooled
        // 0.30 vs 0.32, binomial spread only: ±0.06 around +0.02, inside ±0.10.
        let real: Vec<Decisions> = (0..5).map(|_| run(30, 100, 10.0)).collect();
        let close: Vec<Decisions> = (0..5).map(|_| run(32, 100, 10.0)).collect();
        let c = compare_runs(&real, &close);
        let r = c.row("fork.level.smt").unwrap();
        assert_eq!(
            (r.real_runs, r.sim_runs, r.real_n, r.sim_n),
            (5, 5, 500, 500)
        );
        assert!((r.diff.unwrap().est - 0.02).abs() < 1e-12);
        assert_eq!(r.verdict, RunVerdict::Consistent);
        assert_eq!(verdict(&c, "fork.level"), RunVerdict::Consistent);
        let d = c.row("fork.level").unwrap();
        assert_eq!((d.real_runs, d.sim_runs, d.real_n), (5, 5, 500));
        // 50 on SMT: +0.20, surely: differs, and so does the distribution.
        let far: Vec<Decisions> = (0..5).map(|_| run(50, 100, 10.0)).collect();
        let c = compare_runs(&real, &far);
        assert_eq!(verdict(&c, "fork.level.smt"), RunVerdict::Differs);
        assert_eq!(verdict(&c, "fork.level"), RunVerdict::Differs);
        // 8 forks a run: +0.05 but too few events to tell ±0.10.
        let few_r: Vec<Decisions> = (0..5).map(|_| run(2, 8, 10.0)).collect();
        let few_s: Vec<Decisions> = (0..5).map(|_| run(3, 8, 10.0)).collect();
        let c = compare_runs(&few_r, &few_s);
        assert_eq!(verdict(&c, "fork.level.smt"), RunVerdict::Underpowered);
        assert_eq!(verdict(&c, "fork.level"), RunVerdict::Underpowered);
        // One real run: the real spread is unknown, whatever the counts.
        let c = compare_runs(&real[..1], &close);
        assert_eq!(verdict(&c, "fork.level.smt"), RunVerdict::Underpowered);
        // No forks on either side: n/a.
        let none: Vec<Decisions> = (0..5).map(|_| Decisions::default()).collect();
        let c = compare_runs(&none, &none);
        assert_eq!(verdict(&c, "fork.level"), RunVerdict::NoData);
        assert_eq!(verdict(&c, "fork.level.smt"), RunVerdict::NoData);
    }

    #[test]
    fn rates_compare_as_log_ratios_against_the_runs_spread() {
        let with_rates =
            |rates: &[f64]| -> Vec<Decisions> { rates.iter().map(|&x| run(0, 1, x)).collect() };
        // Real 9-11 /s, simulated 10-12: ratio 1.1, inside ×1.5 surely.
        let real = with_rates(&[9.0, 10.0, 10.0, 11.0, 10.0]);
        let c = compare_runs(&real, &with_rates(&[11.0, 10.0, 12.0, 11.0, 11.0]));
        assert_eq!(verdict(&c, "migrations.rate.llc"), RunVerdict::Consistent);
        // Simulated 30 /s: ×3: differs.
        let c = compare_runs(&real, &with_rates(&[29.0, 30.0, 31.0, 30.0, 30.0]));
        assert_eq!(verdict(&c, "migrations.rate.llc"), RunVerdict::Differs);
        let r = c.row("migrations.rate.llc").unwrap();
        assert!((r.diff.unwrap().est - 3f64.ln()).abs() < 1e-12);
        // Real runs spread from 2 to 20 /s: cannot tell.
        let wild = with_rates(&[2.0, 20.0, 5.0, 15.0, 8.0]);
        let c = compare_runs(&wild, &with_rates(&[11.0, 10.0, 12.0, 11.0, 11.0]));
        assert_eq!(verdict(&c, "migrations.rate.llc"), RunVerdict::Underpowered);
    }
}
