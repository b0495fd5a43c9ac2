//! The effect of a switch: an A/B on a real kernel against the same A/B in the model.
//!
//! **What an A/B asks.** A scheduler engineer flipping `NO_WA_IDLE` or raising
//! `sched_migration_cost_ns` wants to know what the change does: which way each
//! decision moves, and by how much. A model can place tasks much as a kernel does
//! and still predict the wrong effect of a change (a heuristic it models whose
//! influence it over- or underrates), so the oracle checks effects, not only levels:
//! per statistic, the change from arm A to arm B on the real kernel (its runs of
//! both arms, interleaved in one boot, or two boots for a kernel A/B) against the
//! change from A to B in the simulation (its seeds of both arms).
//!
//! **Each side's Δ** is measured exactly as a level difference is over runs
//! ([`super::verdicts`]): arm B against arm A, a pooled-fraction difference for
//! event classes, Welch on per-run values, a log-ratio for counts, rates and times,
//! each with its 95 % interval from that side's own run-to-run spread; the sizes that
//! matter are the pre-registered [`super::verdicts::SIZES`]. Each Δ is then an
//! [`Effect`]: up, down, null (no change of a size that matters, surely) or unclear.
//!
//! **The verdict** ([`Grade`]) compares the simulated effect with the real one:
//!
//! * `match`: the same sign, and the simulated Δ lies inside the real Δ's interval
//!   (the "same sign and size within the intervals");
//! * `direction`: the same sign, another size ("sign only");
//! * `MISMATCH (opposite)`: opposite signs;
//! * `agree (null)`: neither side moves by a size that matters ("no effect on
//!   either side"), the verdict a control switch must get;
//! * `MISMATCH (missed)` / `MISMATCH (invented)`: an effect the model shows to be
//!   null, or a null the model turns into an effect;
//! * `inconclusive`: one side cannot tell, which is *underpowered*, never a match.
//!
//! Distribution rows are summaries of their classes and are left out: each class is
//! a statistic of its own. The headline ([`EffectComparison::score`]) counts, over
//! the statistics where the real kernel shows an effect (the powered ones), those
//! the model gives the real sign and those it gives a size within the real
//! interval.
//!
//! **Negative control.** A simulator that does nothing predicts no effect at all.
//! The same comparison against *the model's arm A on both sides* (seeds `n..2n` as
//! "B") is that simulator: it must score 0 on sign for every powered statistic, so
//! a case where it does not is one whose real effects are not effects.

use super::verdicts::{rows_over_runs, value_row, RunRow, Sizes, SIZES};
use super::{Decisions, Kind};
use crate::stats::verdict::{effect, grade, Effect, Grade, Interval};
use serde::Serialize;

/// One side's runs of both arms.
pub struct ArmRuns<'a> {
    pub a: &'a [Decisions],
    pub b: &'a [Decisions],
    /// Statistics with one value per run outside the trace's decisions: the time
    /// the workload's tool printed (hackbench's `Time:`), the seed kit's probes per
    /// wakeup scan. Each: (name, kind, arm A's values, arm B's values); a statistic
    /// one side lacks is left out.
    pub values: Vec<RunValues<'a>>,
}

/// One statistic's values per run of both arms.
pub struct RunValues<'a> {
    pub statistic: &'a str,
    pub kind: Kind,
    pub a: &'a [f64],
    pub b: &'a [f64],
}

/// One side's change from arm A to arm B on one statistic.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Delta {
    /// Arm A's and arm B's value (the pooled fraction or the mean over runs).
    pub a: Option<f64>,
    pub b: Option<f64>,
    /// Runs with data per arm.
    pub runs: (usize, usize),
    /// B − A (fractions, tasks) or `ln(B / A)` (counts, rates, times), 95 %.
    pub delta: Option<Interval>,
    pub effect: Effect,
}

impl Delta {
    fn of(r: &RunRow, size: f64) -> Delta {
        Delta {
            a: r.real,
            b: r.sim,
            runs: (r.real_runs, r.sim_runs),
            delta: r.diff,
            effect: r.diff.map_or(Effect::Unclear, |iv| effect(&iv, size)),
        }
    }
}

/// One statistic's real and simulated effect.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct EffectRow {
    pub statistic: String,
    pub kind: Kind,
    pub real: Delta,
    pub sim: Delta,
    /// The simulated Δ's estimate lies inside the real Δ's interval.
    pub size_within: bool,
    pub grade: Grade,
    /// The real runs came from several boots and some boot's own Δ does not have
    /// the pooled effect's sign: the effect is one boot's, not the kernel's, so
    /// the real side counts as unclear ([`EffectComparison::require_every_boot`]).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub boot_dependent: bool,
}

/// Every statistic's effects in one A/B case.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct EffectComparison {
    pub sizes: Sizes,
    pub rows: Vec<EffectRow>,
}

/// The headline of an effect comparison.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct EffectScore {
    /// Statistics where the real kernel shows an effect (up or down).
    pub powered: usize,
    /// ... whose simulated Δ has the real sign (match or direction).
    pub sign: usize,
    /// ... whose simulated Δ has the real sign and lies in the real interval.
    pub size: usize,
    /// Statistics where the real kernel shows a null, and how many the model
    /// agrees on.
    pub real_null: usize,
    pub agree_null: usize,
    /// Statistics where either side cannot tell (inconclusive).
    pub underpowered: usize,
}

impl EffectScore {
    /// Add another case's score.
    pub fn add(&mut self, o: &EffectScore) {
        self.powered += o.powered;
        self.sign += o.sign;
        self.size += o.size;
        self.real_null += o.real_null;
        self.agree_null += o.agree_null;
        self.underpowered += o.underpowered;
    }
}

impl EffectComparison {
    /// With real runs from several boots: keep a real effect only where every
    /// boot's own Δ estimate (`per_boot`, per boot the statistic's estimate) has its
    /// sign; elsewhere the real side is unclear and the row inconclusive.
    pub fn require_every_boot(&mut self, per_boot: &[Vec<(String, Option<f64>)>]) {
        for r in &mut self.rows {
            let sign = match r.real.effect {
                Effect::Up => 1.0,
                Effect::Down => -1.0,
                _ => continue,
            };
            let agrees = per_boot.iter().all(|b| {
                b.iter()
                    .find(|(s, _)| *s == r.statistic)
                    .and_then(|(_, e)| *e)
                    .is_some_and(|e| e * sign > 0.0)
            });
            if !agrees {
                r.boot_dependent = true;
                r.real.effect = Effect::Unclear;
                r.grade = grade(r.sim.effect, Effect::Unclear, r.size_within);
            }
        }
    }

    /// Rows graded `g`.
    pub fn count(&self, g: Grade) -> usize {
        self.rows.iter().filter(|r| r.grade == g).count()
    }

    /// The row of `statistic`.
    pub fn row(&self, statistic: &str) -> Option<&EffectRow> {
        self.rows.iter().find(|r| r.statistic == statistic)
    }

    /// The headline counts.
    pub fn score(&self) -> EffectScore {
        let mut s = EffectScore::default();
        for r in &self.rows {
            match r.real.effect {
                Effect::Up | Effect::Down => {
                    s.powered += 1;
                    if matches!(r.grade, Grade::Match | Grade::Direction) {
                        s.sign += 1;
                    }
                    if r.grade == Grade::Match {
                        s.size += 1;
                    }
                }
                Effect::Null => {
                    s.real_null += 1;
                    if r.grade == Grade::AgreeNull {
                        s.agree_null += 1;
                    }
                }
                Effect::Unclear => {}
            }
            if r.grade == Grade::Inconclusive {
                s.underpowered += 1;
            }
        }
        s
    }
}

/// The real A/B `real` against the simulated A/B `sim`, statistic by statistic.
pub fn compare_effects(real: &ArmRuns<'_>, sim: &ArmRuns<'_>) -> EffectComparison {
    // The values both sides have, in the real side's order.
    let mut r = rows_over_runs(real.a, real.b);
    let mut s = rows_over_runs(sim.a, sim.b);
    for v in &real.values {
        let Some(w) = sim.values.iter().find(|w| w.statistic == v.statistic) else {
            continue;
        };
        if v.a.is_empty() && v.b.is_empty() {
            continue;
        }
        r.push(value_row(v.statistic, v.kind, v.a, v.b));
        s.push(value_row(v.statistic, v.kind, w.a, w.b));
    }
    let rows = r
        .iter()
        .zip(&s)
        .filter(|(x, _)| x.kind != Kind::Distribution)
        .map(|(x, y)| {
            let size = SIZES.of(x.kind);
            let (rd, sd) = (Delta::of(x, size), Delta::of(y, size));
            let size_within = match (rd.delta, sd.delta) {
                (Some(ri), Some(si)) => ri.lo <= si.est && si.est <= ri.hi,
                _ => false,
            };
            EffectRow {
                statistic: x.statistic.clone(),
                kind: x.kind,
                grade: grade(sd.effect, rd.effect, size_within),
                real: rd,
                sim: sd,
                size_within,
                boot_dependent: false,
            }
        })
        .collect();
    EffectComparison { sizes: SIZES, rows }
}

#[cfg(test)]
mod tests {
    use super::super::verdicts::tests::run;
    use super::*;

    fn runs(smt: u64, rates: &[f64]) -> Vec<Decisions> {
        rates.iter().map(|&r| run(smt, 100, r)).collect()
    }

    fn ab<'a>(a: &'a [Decisions], b: &'a [Decisions]) -> ArmRuns<'a> {
        ArmRuns {
            a,
            b,
            values: vec![],
        }
    }

    fn grade_of(c: &EffectComparison, s: &str) -> Grade {
        c.row(s).unwrap_or_else(|| panic!("no row {s}")).grade
    }

    /// Real: SMT forks 30 % → 60 % (+0.30 ± ~0.09 over 5×100 forks each arm), LLC
    /// migrations 10 → 30 /s. Each branch of the verdict, by hand.
    #[test]
    fn each_verdict_by_hand() {
        let ra = runs(30, &[9.0, 10.0, 11.0, 10.0, 10.0]);
        let rb = runs(60, &[29.0, 30.0, 31.0, 30.0, 30.0]);
        let real = ab(&ra, &rb);
        // The model moves the same way by the same amounts: match on both.
        let sa = runs(31, &[10.0, 10.5, 9.5, 10.0, 10.0]);
        let sb = runs(62, &[30.0, 31.0, 29.0, 30.0, 30.0]);
        let c = compare_effects(&real, &ab(&sa, &sb));
        assert_eq!(grade_of(&c, "fork.level.smt"), Grade::Match);
        assert_eq!(grade_of(&c, "fork.level.llc"), Grade::Match);
        assert_eq!(grade_of(&c, "migrations.rate.llc"), Grade::Match);
        let r = c.row("fork.level.smt").unwrap();
        assert!((r.real.delta.unwrap().est - 0.30).abs() < 1e-12);
        assert!((r.sim.delta.unwrap().est - 0.31).abs() < 1e-12);
        assert_eq!((r.real.effect, r.sim.effect), (Effect::Up, Effect::Up));
        assert!(
            c.row("fork.level").is_none(),
            "distribution rows are left out"
        );
        // The same sign, far smaller: 30 % → 45 % (+0.15, outside +0.30's interval).
        let sb = runs(45, &[30.0, 31.0, 29.0, 30.0, 30.0]);
        let c = compare_effects(&real, &ab(&sa, &sb));
        assert_eq!(grade_of(&c, "fork.level.smt"), Grade::Direction);
        // Opposite: 31 % → 10 %.
        let sb = runs(10, &[3.0, 3.5, 2.5, 3.0, 3.0]);
        let c = compare_effects(&real, &ab(&sa, &sb));
        assert_eq!(grade_of(&c, "fork.level.smt"), Grade::Opposite);
        assert_eq!(grade_of(&c, "migrations.rate.llc"), Grade::Opposite);
        // The model does not move: missed.
        let c = compare_effects(&real, &ab(&sa, &sa));
        assert_eq!(grade_of(&c, "fork.level.smt"), Grade::Missed);
        let s = c.score();
        assert_eq!((s.powered, s.sign, s.size), (3, 0, 0));
        // A real null (the control switch) the model agrees on, and one it invents.
        let c = compare_effects(&ab(&ra, &ra), &ab(&sa, &sa));
        assert_eq!(grade_of(&c, "fork.level.smt"), Grade::AgreeNull);
        let c = compare_effects(&ab(&ra, &ra), &ab(&sa, &sb));
        assert_eq!(grade_of(&c, "fork.level.smt"), Grade::Invented);
        // Nulls: SMT, LLC, the LLC rate (invented) and the three fork levels no
        // fork reaches on either side (0 of 500, agreed).
        let s = c.score();
        assert_eq!((s.powered, s.real_null, s.agree_null), (0, 6, 3));
        // One real run per arm: its spread is unknown, so nothing can be told.
        let c = compare_effects(&ab(&ra[..1], &rb[..1]), &ab(&sa, &sb));
        assert_eq!(grade_of(&c, "migrations.rate.llc"), Grade::Inconclusive);
        assert_eq!(grade_of(&c, "fork.level.smt"), Grade::Inconclusive);
        assert!(c.score().underpowered >= 2);
    }

    /// A pooled real effect some boot does not show is one boot's: unclear.
    #[test]
    fn an_effect_one_boot_does_not_share_is_not_the_kernels() {
        let ra = runs(30, &[10.0; 5]);
        let rb = runs(60, &[30.0; 5]);
        let sb = runs(62, &[30.0; 5]);
        let mut c = compare_effects(&ab(&ra, &rb), &ab(&ra, &sb));
        assert_eq!(grade_of(&c, "fork.level.smt"), Grade::Match);
        let boots = vec![
            vec![("fork.level.smt".to_string(), Some(0.4))],
            vec![("fork.level.smt".to_string(), Some(-0.05))],
        ];
        c.require_every_boot(&boots);
        let r = c.row("fork.level.smt").unwrap();
        assert!(r.boot_dependent);
        assert_eq!(
            (r.real.effect, r.grade),
            (Effect::Unclear, Grade::Inconclusive)
        );
        // Both boots up: kept.
        let mut c = compare_effects(&ab(&ra, &rb), &ab(&ra, &sb));
        let boots = vec![
            vec![("fork.level.smt".to_string(), Some(0.4))],
            vec![("fork.level.smt".to_string(), Some(0.2))],
        ];
        c.require_every_boot(&boots);
        assert_eq!(grade_of(&c, "fork.level.smt"), Grade::Match);
        assert!(!c.row("fork.level.smt").unwrap().boot_dependent);
    }

    /// The tool's time is one more statistic when the runs printed one; a value
    /// only one side has is left out.
    #[test]
    fn per_run_values_are_effects_too() {
        let d = runs(30, &[10.0; 5]);
        let (ta, tb) = ([1.0, 1.1, 0.9, 1.0, 1.0], [2.0, 2.1, 1.9, 2.0, 2.0]);
        let time = super::super::super::workload::TOOL_TIME;
        let only_real = RunValues {
            statistic: "scan.core_per_call",
            kind: Kind::Cpus,
            a: &ta,
            b: &tb,
        };
        let real = ArmRuns {
            a: &d,
            b: &d,
            values: vec![
                RunValues {
                    statistic: time,
                    kind: Kind::Time,
                    a: &ta,
                    b: &tb,
                },
                only_real,
            ],
        };
        let sim = ArmRuns {
            a: &d,
            b: &d,
            values: vec![RunValues {
                statistic: time,
                kind: Kind::Time,
                a: &ta,
                b: &ta,
            }],
        };
        let c = compare_effects(&real, &sim);
        let r = c.row(time).unwrap();
        assert!((r.real.delta.unwrap().est - 2f64.ln()).abs() < 1e-12);
        assert_eq!(r.grade, Grade::Missed);
        assert!(c.row("scan.core_per_call").is_none());
    }
}
