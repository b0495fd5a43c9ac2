//! The single-run comparison: every statistic of a real trace's [`Decisions`]
//! against a simulated one's, in table order ([`statistics`]), with a distance by
//! its [`Kind`] and a verdict by fixed bands ([`Thresholds`]): match, close, differ
//! or n/a. The comparison over runs ([`super::verdicts`]) reads the same statistics.

use super::{Decisions, IdleWait, Level, PerLevel, Unit, WakeClasses};
use serde::Serialize;

/// How close a simulated statistic is to the real one.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    Match,
    Close,
    Differ,
    /// Neither side has data for it.
    #[serde(rename = "n/a")]
    NoData,
}

impl Verdict {
    pub fn name(self) -> &'static str {
        match self {
            Verdict::Match => "match",
            Verdict::Close => "close",
            Verdict::Differ => "differ",
            Verdict::NoData => "n/a",
        }
    }
}

/// The kind of a statistic, which fixes its distance.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// A class distribution: total-variation distance.
    Distribution,
    /// A fraction in 0..1: absolute difference.
    Fraction,
    /// A mean number of tasks: absolute difference.
    Tasks,
    /// A mean number of CPUs per call (CPUs a wakeup scan tested): absolute
    /// difference, sized like tasks.
    Cpus,
    /// Events per second of guest time: `|ln(real/sim)|`.
    Rate,
    /// A count: `|ln(real/sim)|`.
    Count,
    /// A duration in guest time: `|ln(real/sim)|`.
    Time,
}

impl Kind {
    pub(crate) fn distance_name(self) -> &'static str {
        match self {
            Kind::Distribution => "tvd",
            Kind::Fraction | Kind::Tasks | Kind::Cpus => "abs",
            Kind::Rate | Kind::Count | Kind::Time => "|ln r|",
        }
    }
}

/// Verdict thresholds: `distance ≤ match_max` is a match, `≤ close_max` close,
/// else differ.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Band {
    pub match_max: f64,
    pub close_max: f64,
}

/// The thresholds per [`Kind`].
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Thresholds {
    /// TVD: 0.05 / 0.15.
    pub distribution: Band,
    /// Absolute difference of fractions: 0.05 / 0.15.
    pub fraction: Band,
    /// Absolute difference of mean task counts: 0.25 / 0.75 tasks.
    pub tasks: Band,
    /// Rates, guest time: within ×1.5 / ×3.
    pub rate: Band,
    /// Counts: within ×1.5 / ×3.
    pub count: Band,
    /// Times, guest time: within ×2 / ×4 (TCG stretches guest time unevenly).
    pub time: Band,
}

impl Default for Thresholds {
    fn default() -> Self {
        Thresholds {
            distribution: Band {
                match_max: 0.05,
                close_max: 0.15,
            },
            fraction: Band {
                match_max: 0.05,
                close_max: 0.15,
            },
            tasks: Band {
                match_max: 0.25,
                close_max: 0.75,
            },
            rate: Band {
                match_max: 1.5f64.ln(),
                close_max: 3f64.ln(),
            },
            count: Band {
                match_max: 1.5f64.ln(),
                close_max: 3f64.ln(),
            },
            time: Band {
                match_max: 2f64.ln(),
                close_max: 4f64.ln(),
            },
        }
    }
}

impl Thresholds {
    fn band(&self, k: Kind) -> Band {
        match k {
            Kind::Distribution => self.distribution,
            Kind::Fraction => self.fraction,
            Kind::Tasks | Kind::Cpus => self.tasks,
            Kind::Rate => self.rate,
            Kind::Count => self.count,
            Kind::Time => self.time,
        }
    }
}

/// One compared statistic.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Row {
    pub statistic: String,
    pub kind: Kind,
    /// `None`: the side has no data (no events of that kind, or never reached).
    pub real: Option<f64>,
    pub sim: Option<f64>,
    /// Events behind each side's value (for distributions and fractions), so a
    /// verdict on 3 events can be read as such.
    pub real_n: u64,
    pub sim_n: u64,
    /// `None` when undefined (one side missing, or a log-ratio with a zero).
    pub distance: Option<f64>,
    pub verdict: Verdict,
}

/// A real trace's decisions against a simulated one's.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Comparison {
    pub thresholds: Thresholds,
    pub rows: Vec<Row>,
}

/// The verdict of `distance` under `band`.
pub fn verdict(distance: f64, band: Band) -> Verdict {
    if distance <= band.match_max + 1e-12 {
        Verdict::Match
    } else if distance <= band.close_max + 1e-12 {
        Verdict::Close
    } else {
        Verdict::Differ
    }
}

/// Total-variation distance between two distributions given as counts (each
/// normalised by its own sum); `None` when either is empty.
pub(crate) fn tvd(a: &[u64], b: &[u64]) -> Option<f64> {
    let (sa, sb): (u64, u64) = (a.iter().sum(), b.iter().sum());
    if sa == 0 || sb == 0 {
        return None;
    }
    Some(
        0.5 * a
            .iter()
            .zip(b)
            .map(|(&x, &y)| (x as f64 / sa as f64 - y as f64 / sb as f64).abs())
            .sum::<f64>(),
    )
}

struct Builder<'a> {
    th: &'a Thresholds,
    rows: Vec<Row>,
}

impl Builder<'_> {
    /// A scalar row; `n` the events behind each side (0 with a value present
    /// means "no events", which for fractions makes the value undefined).
    fn scalar(
        &mut self,
        name: String,
        kind: Kind,
        real: Option<f64>,
        sim: Option<f64>,
        n: (u64, u64),
    ) {
        let distance = match (real, sim) {
            (Some(a), Some(b)) => match kind {
                Kind::Distribution | Kind::Fraction | Kind::Tasks | Kind::Cpus => {
                    Some((a - b).abs())
                }
                Kind::Rate | Kind::Count | Kind::Time => {
                    if a == 0.0 && b == 0.0 {
                        Some(0.0)
                    } else if a > 0.0 && b > 0.0 {
                        Some((a / b).ln().abs())
                    } else {
                        None
                    }
                }
            },
            _ => None,
        };
        let v = match (real, sim, distance) {
            (None, None, _) => Verdict::NoData,
            (_, _, Some(d)) => verdict(d, self.th.band(kind)),
            _ => Verdict::Differ,
        };
        self.rows.push(Row {
            statistic: name,
            kind,
            real,
            sim,
            real_n: n.0,
            sim_n: n.1,
            distance,
            verdict: v,
        });
    }

    /// A distribution row (TVD); its classes follow as fraction rows.
    fn dist(&mut self, name: &str, real: &[u64], sim: &[u64]) {
        let (sr, ss): (u64, u64) = (real.iter().sum(), sim.iter().sum());
        let d = tvd(real, sim);
        let v = match (sr, ss, d) {
            (0, 0, _) => Verdict::NoData,
            (_, _, Some(d)) => verdict(d, self.th.distribution),
            _ => Verdict::Differ,
        };
        self.rows.push(Row {
            statistic: name.to_string(),
            kind: Kind::Distribution,
            real: None,
            sim: None,
            real_n: sr,
            sim_n: ss,
            distance: d,
            verdict: v,
        });
    }
}

fn levels(p: &PerLevel<u64>) -> Vec<u64> {
    Level::ALL.iter().map(|&l| p.get(l)).collect()
}

const LEVEL_NAMES: [&str; 5] = ["same", "smt", "llc", "node", "remote"];

/// Compare a real trace's decisions with a simulated one's under the default
/// [`Thresholds`].
pub fn compare(real: &Decisions, sim: &Decisions) -> Comparison {
    compare_with(real, sim, &Thresholds::default())
}

/// [`compare`] with explicit thresholds.
pub(crate) fn compare_with(real: &Decisions, sim: &Decisions, th: &Thresholds) -> Comparison {
    let mut b = Builder {
        th,
        rows: Vec::new(),
    };
    let spread = real.spread.released || sim.spread.released;
    let frac = |k: u64, n: u64| (n > 0).then(|| k as f64 / n as f64);
    for (r, s) in statistics(real, spread)
        .into_iter()
        .zip(statistics(sim, spread))
    {
        match (r.obs, s.obs) {
            (Obs::Dist(a), Obs::Dist(c)) => b.dist(&r.name, &a, &c),
            (Obs::Events(kr, nr), Obs::Events(ks, ns)) => {
                b.scalar(r.name, r.kind, frac(kr, nr), frac(ks, ns), (nr, ns))
            }
            (Obs::Value(vr), Obs::Value(vs)) => b.scalar(r.name, r.kind, vr, vs, (r.n, s.n)),
            _ => unreachable!("both sides list the same statistics"),
        }
    }
    Comparison {
        thresholds: *th,
        rows: b.rows,
    }
}

/// One side's observation of one statistic in one run.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Obs {
    /// `k` of the run's `n` events are of the class.
    Events(u64, u64),
    /// A per-run value (`None`: undefined in this run).
    Value(Option<f64>),
    /// The counts of a class distribution (its classes follow as `Events` rows).
    Dist(Vec<u64>),
}

/// A statistic's name and kind, and its observation in one run.
pub(crate) struct Stat {
    pub(crate) name: String,
    pub(crate) kind: Kind,
    pub(crate) obs: Obs,
    /// The events behind a per-run value (forks, migrations of the level, released
    /// tasks, occupancy samples), which the single-run table prints.
    pub(crate) n: u64,
}

/// Every compared statistic of one trace, in table order; `spread`: include the
/// spread statistics (some trace of either side had its tasks released from one
/// CPU: for tasks that never sat together on one CPU they measure nothing). Both the
/// single-run comparison ([`compare`]) and the one over runs
/// ([`super::verdicts::compare_runs`]) read these.
pub(crate) fn statistics(d: &Decisions, spread: bool) -> Vec<Stat> {
    let mut out = Vec::new();
    let dist = |out: &mut Vec<Stat>, name: &str, classes: &[&str], counts: Vec<u64>| {
        let n: u64 = counts.iter().sum();
        for (c, &k) in classes.iter().zip(&counts) {
            out.push(Stat {
                name: format!("{name}.{c}"),
                kind: Kind::Fraction,
                obs: Obs::Events(k, n),
                n,
            });
        }
        let at = out.len() - classes.len();
        out.insert(
            at,
            Stat {
                name: name.to_string(),
                kind: Kind::Distribution,
                obs: Obs::Dist(counts),
                n,
            },
        );
    };
    let value = |name: String, kind: Kind, v: Option<f64>, n: u64| Stat {
        name,
        kind,
        obs: Obs::Value(v),
        n,
    };
    dist(
        &mut out,
        "fork.level",
        &LEVEL_NAMES,
        levels(&d.fork.level_counts),
    );
    for u in Unit::ALL {
        let x = d.fork.reach.get(u);
        out.push(value(
            format!("fork.reach.{}", u.name()),
            Kind::Fraction,
            (x.ideal > 0).then_some(x.ratio),
            d.fork.count,
        ));
    }
    dist(
        &mut out,
        "wakeup.class",
        &WakeClasses::<u64>::NAMES,
        d.wakeup.class_counts.values().to_vec(),
    );
    dist(
        &mut out,
        "wakeup.vs_waker",
        &LEVEL_NAMES,
        levels(&d.wakeup.vs_waker_counts),
    );
    dist(
        &mut out,
        "wakeup.vs_prev",
        &LEVEL_NAMES,
        levels(&d.wakeup.vs_prev_counts),
    );
    dist(
        &mut out,
        "wakeup.idle_wait",
        &IdleWait::<u64>::NAMES,
        d.wakeup.idle_wait_counts.values().to_vec(),
    );
    let m = &d.migrations;
    dist(
        &mut out,
        "migrations.level",
        &LEVEL_NAMES[1..],
        levels(&m.by_level)[1..].to_vec(),
    );
    dist(
        &mut out,
        "migrations.wakeup.level",
        &LEVEL_NAMES[1..],
        levels(&m.wakeup)[1..].to_vec(),
    );
    dist(
        &mut out,
        "migrations.balance.level",
        &LEVEL_NAMES[1..],
        levels(&m.balance)[1..].to_vec(),
    );
    out.push(Stat {
        name: "migrations.wakeup_share".into(),
        kind: Kind::Fraction,
        obs: Obs::Events(m.wakeup.total(), m.count),
        n: m.count,
    });
    let rate = |x: f64| (m.window_s > 0.0).then_some(x);
    for lv in &Level::ALL[1..] {
        out.push(value(
            format!("migrations.rate.{}", lv.name()),
            Kind::Rate,
            rate(m.rate_per_s.get(*lv)),
            m.by_level.get(*lv),
        ));
    }
    out.push(value(
        "migrations.rate.wakeup".into(),
        Kind::Rate,
        rate(m.wakeup_rate_per_s),
        m.wakeup.total(),
    ));
    out.push(value(
        "migrations.rate.balance".into(),
        Kind::Rate,
        rate(m.balance_rate_per_s),
        m.balance.total(),
    ));
    for u in Unit::ALL.into_iter().filter(|_| spread) {
        let at = d.spread.at.get(u);
        out.push(value(
            format!("spread.{}.ms", u.name()),
            Kind::Time,
            at.after_ns.map(|x| x as f64 / 1e6),
            d.spread.tasks,
        ));
        out.push(value(
            format!("spread.{}.migrations", u.name()),
            Kind::Count,
            at.migrations.map(|x| x as f64),
            d.spread.tasks,
        ));
    }
    let sampled = d.occupancy.samples > 0;
    for u in Unit::ALL {
        out.push(value(
            format!("occupancy.imbalance.{}", u.name()),
            Kind::Tasks,
            sampled.then_some(d.occupancy.imbalance.get(u)),
            d.occupancy.samples,
        ));
    }
    out.push(value(
        "occupancy.idle_while_overloaded".into(),
        Kind::Fraction,
        sampled.then_some(d.occupancy.idle_while_overloaded),
        d.occupancy.samples,
    ));
    out
}

impl Comparison {
    /// Rows with a given verdict.
    pub fn count(&self, v: Verdict) -> usize {
        self.rows.iter().filter(|r| r.verdict == v).count()
    }

    /// JSON (serde; rows in the table's order).
    pub fn json(&self) -> String {
        serde_json::to_string_pretty(self).expect("comparison serialises")
    }
}
