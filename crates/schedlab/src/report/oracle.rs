//! The oracle's output: the sched-domain and decision comparisons as text, and the
//! self-contained HTML page of `schedlab oracle`.
//!
//! The oracle ([`crate::experiment::oracle`]) boots real kernels in guests, reads
//! their sched domains and scheduler traces, and compares them with schedlab's:
//! per CPU the domain chain, per case the statistics of the decisions with a
//! distance and a verdict. This module prints those comparisons — one line per CPU
//! (runs of identical CPUs folded), a fixed-width table per case with the verdict
//! totals — and lays them out as one page per report. It reads the comparisons and
//! computes nothing.

use super::html::{esc, footer, head};
use super::text::{interval, num, Num};
use crate::experiment::oracle::ab::AbOutcome;
use crate::experiment::oracle::decisions::effects::{Delta, EffectComparison, EffectScore};
use crate::experiment::oracle::decisions::verdicts::{RunComparison, RunVerdict};
use crate::experiment::oracle::decisions::{Comparison, Verdict};
use crate::experiment::oracle::domains::{CpuChains, DomainComparison};
use crate::stats::verdict::Grade;
use std::fmt::Write as _;

impl Comparison {
    /// Fixed-width side-by-side table: statistic, real, simulated, their event
    /// counts, distance (and its kind), verdict; then the verdict totals.
    pub fn text(&self) -> String {
        let opt = |x: Option<f64>| x.map_or("-".to_string(), |x| num(x, Num::Stat));
        let mut s = String::new();
        let h = [
            "statistic",
            "real",
            "sim",
            "real_n",
            "sim_n",
            "distance",
            "by",
            "verdict",
        ];
        let _ = writeln!(
            s,
            "{:<34} {:>14} {:>14} {:>9} {:>9} {:>14} {:<6} {}",
            h[0], h[1], h[2], h[3], h[4], h[5], h[6], h[7]
        );
        for r in &self.rows {
            let _ = writeln!(
                s,
                "{:<34} {:>14} {:>14} {:>9} {:>9} {:>14} {:<6} {}",
                r.statistic,
                opt(r.real),
                opt(r.sim),
                r.real_n,
                r.sim_n,
                opt(r.distance),
                r.kind.distance_name(),
                r.verdict.name()
            );
        }
        let _ = writeln!(
            s,
            "match {}  close {}  differ {}  n/a {}",
            self.count(Verdict::Match),
            self.count(Verdict::Close),
            self.count(Verdict::Differ),
            self.count(Verdict::NoData)
        );
        s
    }
}

impl RunComparison {
    /// Fixed-width table of the comparison over runs: statistic, each side's value
    /// and runs (events), the difference with its 95 % interval (sim − real, or
    /// `ln(sim/real)` for counts, rates and times), the verdict, and what the
    /// deliberately wrong model `control` got (a statistic it does not make differ
    /// is `non-discriminating`); then the totals.
    pub fn text(&self, control: &RunComparison) -> String {
        let opt = |x: Option<f64>| x.map_or("-".to_string(), |x| num(x, Num::Stat));
        let mut s = String::new();
        let _ = writeln!(
            s,
            "{:<34} {:>12} {:>12} {:>11} {:>11} {:>30} {:<13} control",
            "statistic", "real", "sim", "real runs/n", "sim runs/n", "diff [95 % CI]", "verdict",
        );
        // Runs and the events behind them; a per-run value has runs only (a run of
        // an event statistic with data has events).
        let runs_n = |runs: usize, n: u64| {
            if n == 0 && runs > 0 {
                format!("{runs}/-")
            } else {
                format!("{runs}/{n}")
            }
        };
        for (i, r) in self.rows.iter().enumerate() {
            let c = control.rows.get(i).map(|c| {
                if c.verdict == RunVerdict::Differs {
                    "differs".to_string()
                } else {
                    format!("{} (non-discriminating)", c.verdict.name())
                }
            });
            let _ = writeln!(
                s,
                "{:<34} {:>12} {:>12} {:>11} {:>11} {:>30} {:<13} {}",
                r.statistic,
                opt(r.real),
                opt(r.sim),
                runs_n(r.real_runs, r.real_n),
                runs_n(r.sim_runs, r.sim_n),
                interval(&r.diff),
                r.verdict.name(),
                c.unwrap_or_default()
            );
        }
        let _ = writeln!(
            s,
            "consistent {}  differs {}  underpowered {}  n/a {}; the control differs on {} of {} statistics",
            self.count(RunVerdict::Consistent),
            self.count(RunVerdict::Differs),
            self.count(RunVerdict::Underpowered),
            self.count(RunVerdict::NoData),
            control.count(RunVerdict::Differs),
            control.rows.len() - control.count(RunVerdict::NoData)
        );
        s
    }
}

impl EffectScore {
    /// `powered 12: sign 11/12, size 9/12; real nulls 20 (model agrees 18); inconclusive 4`.
    pub fn text(&self) -> String {
        format!(
            "powered {}: sign {}/{}, size {}/{}; real nulls {} (model agrees {}); inconclusive {}",
            self.powered,
            self.sign,
            self.powered,
            self.size,
            self.powered,
            self.real_null,
            self.agree_null,
            self.underpowered
        )
    }
}

impl EffectComparison {
    /// Fixed-width table: per statistic, each side's arms and Δ (B − A, or
    /// `ln(B/A)` for counts, rates and times) with its 95 % interval and effect, the
    /// verdict, and the no-effect control's verdict; then the scores of both.
    pub fn text(&self, control: &EffectComparison) -> String {
        let opt = |x: Option<f64>| x.map_or("-".to_string(), |x| num(x, Num::Stat));
        let d = |x: &Delta| format!("{} {}", interval(&x.delta), x.effect.word());
        let mut s = String::new();
        let _ = writeln!(
            s,
            "{:<34} {:>10} {:>10} {:>38} {:>10} {:>10} {:>38} {:<20} control",
            "statistic",
            "real A",
            "real B",
            "real Δ [95 % CI]",
            "sim A",
            "sim B",
            "sim Δ [95 % CI]",
            "verdict",
        );
        for (i, r) in self.rows.iter().enumerate() {
            let c = control.rows.get(i).map_or("", |c| c.grade.word());
            let _ = writeln!(
                s,
                "{:<34} {:>10} {:>10} {:>38} {:>10} {:>10} {:>38} {:<20} {c}",
                r.statistic,
                opt(r.real.a),
                opt(r.real.b),
                d(&r.real),
                opt(r.sim.a),
                opt(r.sim.b),
                d(&r.sim),
                r.grade.word(),
            );
        }
        let totals: Vec<String> = Grade::ALL
            .iter()
            .map(|g| format!("{} {}", g.word(), self.count(*g)))
            .collect();
        let _ = writeln!(s, "{}", totals.join(", "));
        let _ = writeln!(s, "model:   {}", self.score().text());
        let _ = writeln!(
            s,
            "control: {} (the model that predicts no effect)",
            control.score().text()
        );
        s
    }
}

impl AbOutcome {
    /// The case's heading, how its arms were checked, and its effect table.
    pub fn text(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(
            s,
            "== {}: A = {} ({}), B = {} ({}); simulated as {} / {} on the {}",
            self.case,
            self.arms[0],
            self.releases[0],
            self.arms[1],
            self.releases[1],
            self.presets[0],
            self.presets[1],
            self.machine
        );
        let _ = writeln!(
            s,
            "-- real runs {} + {} over {} boot(s), simulated seeds {} per arm; arms checked in every run:",
            self.real_runs[0], self.real_runs[1], self.boots, self.sim_seeds
        );
        for l in &self.arm_checks {
            let _ = writeln!(s, "   {l}");
        }
        let _ = writeln!(
            s,
            "-- effects (B vs A; docs/validation.md, \"A/B on real kernels\")"
        );
        s.push_str(&self.effects.text(&self.control));
        s
    }
}

/// The HTML page of A/B cases: per case its arms, then per statistic the real and
/// the simulated Δ with their intervals and the verdict (matches green,
/// mismatches red).
pub fn ab_html(title: &str, intro: &str, cases: &[&AbOutcome]) -> String {
    let mut out = String::new();
    head(&mut out, title);
    let _ = writeln!(
        out,
        "<h1>{}</h1>\n<p class=\"note\">{}</p>",
        esc(title),
        esc(intro)
    );
    let opt = |v: Option<f64>| v.map_or("–".to_string(), |x| num(x, Num::Short));
    for c in cases {
        let _ = writeln!(
            out,
            "<h2>{}: A = {} ({}), B = {} ({})</h2>\n<p class=\"note\">simulated as {} / {} on the {}; real runs {} + {}, simulated seeds {} per arm. Model: {}. Control (no effect): {}.</p>",
            esc(&c.case),
            esc(&c.arms[0]),
            esc(&c.releases[0]),
            esc(&c.arms[1]),
            esc(&c.releases[1]),
            esc(&c.presets[0]),
            esc(&c.presets[1]),
            esc(&c.machine),
            c.real_runs[0],
            c.real_runs[1],
            c.sim_seeds,
            esc(&c.effects.score().text()),
            esc(&c.control.score().text())
        );
        out.push_str("<table><tr><th class=\"l\">statistic</th><th>real A</th><th>real B</th><th>real Δ [95 % CI]</th><th>sim A</th><th>sim B</th><th>sim Δ [95 % CI]</th><th class=\"l\">verdict</th><th class=\"l\">control</th></tr>\n");
        for (i, r) in c.effects.rows.iter().enumerate() {
            let cls = match r.grade {
                Grade::Match | Grade::AgreeNull => " better",
                g if g.is_mismatch() => " worse",
                _ => "",
            };
            let ctl = c.control.rows.get(i).map_or("", |x| x.grade.word());
            let _ = writeln!(
                out,
                "<tr><td class=\"l\"><code>{}</code></td><td>{}</td><td>{}</td><td>{} {}</td><td>{}</td><td>{}</td><td>{} {}</td><td class=\"l{cls}\">{}</td><td class=\"l\">{}</td></tr>",
                esc(&r.statistic),
                opt(r.real.a),
                opt(r.real.b),
                esc(&interval(&r.real.delta)),
                r.real.effect.word(),
                opt(r.sim.a),
                opt(r.sim.b),
                esc(&interval(&r.sim.delta)),
                r.sim.effect.word(),
                esc(r.grade.word()),
                esc(ctl)
            );
        }
        out.push_str("</table>\n");
    }
    footer(&mut out);
    out
}

impl DomainComparison {
    /// One line per CPU (`=` when it matches), each difference indented below;
    /// runs of CPUs with identical results folded into one line.
    pub fn text(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(
            s,
            "sched domains, kernel {} vs schedlab: {} of {} CPUs match",
            self.kernel_version,
            self.matching_cpus,
            self.cpus.len()
        );
        let mut i = 0;
        while i < self.cpus.len() {
            let c = &self.cpus[i];
            let same = |o: &CpuChains| o.real == c.real && o.sim == c.sim && o.diffs == c.diffs;
            let mut j = i + 1;
            while j < self.cpus.len() && same(&self.cpus[j]) && self.cpus[j].cpu == c.cpu + (j - i)
            {
                j += 1;
            }
            let cpus = if j - i > 1 {
                format!("cpu{}-{}", c.cpu, self.cpus[j - 1].cpu)
            } else {
                format!("cpu{}", c.cpu)
            };
            if c.diffs.is_empty() {
                let _ = writeln!(s, "{cpus:<10} = {}", c.real.join(" "));
            } else {
                let _ = writeln!(
                    s,
                    "{cpus:<10} real {} | sim {}",
                    c.real.join(" "),
                    c.sim.join(" ")
                );
                for d in &c.diffs {
                    let _ = writeln!(
                        s,
                        "{:<12}domain{} {}: real {} | sim {}",
                        "", d.level, d.field, d.real, d.sim
                    );
                }
            }
            i = j;
        }
        s
    }
}

/// One guest boot in an oracle report: its domain comparison and its cases.
pub struct OracleSection<'a> {
    pub heading: String,
    pub domains: &'a crate::experiment::oracle::domains::DomainComparison,
    pub cases: Vec<&'a crate::experiment::oracle::CaseOutcome>,
}

/// `schedlab oracle`'s self-contained HTML page: per guest boot, the sched-domain
/// comparison, then each case's decision statistics real beside simulated, with the
/// distance and the verdict (matches green, differences red).
pub fn oracle_html(title: &str, intro: &str, sections: &[OracleSection<'_>]) -> String {
    use crate::experiment::oracle::decisions::Verdict;
    let mut out = String::new();
    head(&mut out, title);
    let _ = writeln!(
        out,
        "<h1>{}</h1>\n<p class=\"note\">{}</p>",
        esc(title),
        esc(intro)
    );
    for s in sections {
        let _ = writeln!(out, "<h2>{}</h2>", esc(&s.heading));
        let cls = if s.domains.all_match() {
            "better"
        } else {
            "worse"
        };
        let _ = writeln!(
            out,
            "<h3>sched domains, real vs schedlab</h3>\n<table><tr><td class=\"l {cls}\"><pre>{}</pre></td></tr></table>",
            esc(&s.domains.text())
        );
        for c in &s.cases {
            let cmp = &c.comparison;
            let _ = writeln!(
                out,
                "<h3>{} — simulated as {} on the {}</h3>\n<p class=\"note\">match {}, close {}, differ {}, no data {}</p>\n<table><tr><th class=\"l\">statistic</th><th>real</th><th>simulated</th><th>real n</th><th>sim n</th><th>distance</th><th class=\"l\">by</th><th class=\"l\">verdict</th></tr>",
                esc(&c.case),
                esc(&c.preset),
                esc(&c.machine),
                cmp.count(Verdict::Match),
                cmp.count(Verdict::Close),
                cmp.count(Verdict::Differ),
                cmp.count(Verdict::NoData)
            );
            let num = |v: Option<f64>| v.map_or("–".to_string(), |x| num(x, Num::Short));
            for r in &cmp.rows {
                let vc = match r.verdict {
                    Verdict::Match => " better",
                    Verdict::Differ => " worse",
                    Verdict::Close | Verdict::NoData => "",
                };
                let _ = writeln!(
                    out,
                    "<tr><td class=\"l\"><code>{}</code></td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td class=\"l\">{}</td><td class=\"l{vc}\">{}</td></tr>",
                    esc(&r.statistic),
                    num(r.real),
                    num(r.sim),
                    r.real_n,
                    r.sim_n,
                    num(r.distance),
                    esc(r.kind.distance_name()),
                    r.verdict.name()
                );
            }
            out.push_str("</table>\n");
        }
    }
    footer(&mut out);
    out
}
