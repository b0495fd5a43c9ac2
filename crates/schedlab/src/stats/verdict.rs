//! Verdicts that know their noise: effects as intervals, and the rules that turn two
//! intervals into a grade.
//!
//! **The concept.** A comparison of two systems (a patched and an unpatched kernel,
//! a simulated and a reported table) is only as good as its noise estimate. A
//! difference of +1 % between two means says nothing until it is set against how
//! much the means move from one set of runs to the next; "no difference" from runs
//! too few to see one is *underpowered*, not agreement. So every effect here is an
//! [`Interval`]: a point estimate with a 95 % confidence interval taken from the
//! side's own repetitions, and an effect *exists* only where the interval excludes
//! zero **and** the estimate is at least a stated floor (an effect too small to
//! matter is not an effect, however sure). An interval that lies inside ±floor is a
//! positive *null*: the side shows there is no effect of a size that matters. Any
//! other interval is *unclear*: the data cannot tell.
//!
//! * The simulation's side comes from paired runs (seed *i* of arm A with seed *i*
//!   of arm B): the relative change of each pair, `100 (b/a − 1)`, summarised by its
//!   Hodges–Lehmann estimate (the median of the Walsh averages) with the
//!   distribution-free interval of the Wilcoxon signed-rank test (exact null
//!   distribution up to 100 pairs, normal beyond). It needs six pairs to exclude
//!   zero at 95 %; with fewer the interval is unbounded.
//! * A reported side (a patch series' table) comes from its means, spreads and run
//!   counts: Welch's interval for the difference of two means, relative to the
//!   baseline mean. Where a table gives no spread or count, the caller supplies a
//!   stated default (docs/reproduction.md).
//!
//! [`grade`] then compares the two sides' [`Effect`]s: both an effect of one sign is
//! a match (or only a `direction` when the sizes disagree), opposite signs, an effect
//! one side *missed* or *invented* are mismatches, two nulls agree, and anything
//! unclear is inconclusive, never a match.

use serde::Serialize;
use statrs::distribution::{ContinuousCDF, Normal, StudentsT};

/// Two-sided confidence of every interval here.
pub const CONFIDENCE: f64 = 0.95;

/// A point estimate and its [`CONFIDENCE`] interval (`lo ≤ est ≤ hi`; infinite
/// bounds when the data cannot bound it).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Interval {
    pub est: f64,
    pub lo: f64,
    pub hi: f64,
}

impl Interval {
    /// An estimate the data cannot bound.
    pub fn unbounded(est: f64) -> Interval {
        Interval {
            est,
            lo: f64::NEG_INFINITY,
            hi: f64::INFINITY,
        }
    }

    /// An exact value (no spread: identical runs).
    pub fn point(v: f64) -> Interval {
        Interval {
            est: v,
            lo: v,
            hi: v,
        }
    }

    /// Half the interval's width (infinite when unbounded).
    pub fn half_width(&self) -> f64 {
        (self.hi - self.lo) / 2.0
    }

    /// Whether the two intervals share a point.
    pub fn overlaps(&self, o: &Interval) -> bool {
        self.lo <= o.hi && o.lo <= self.hi
    }
}

/// What an interval says about an effect, given the smallest effect that matters.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Effect {
    /// The interval excludes zero and the estimate is at least the floor, above 0.
    Up,
    /// ... below 0.
    Down,
    /// The whole interval lies within ±floor: no effect of a size that matters.
    Null,
    /// Anything else: the data cannot tell (too few runs, too much spread).
    Unclear,
}

impl Effect {
    pub fn word(self) -> &'static str {
        match self {
            Effect::Up => "up",
            Effect::Down => "down",
            Effect::Null => "null",
            Effect::Unclear => "unclear",
        }
    }

    /// Up or Down.
    pub fn is_effect(self) -> bool {
        matches!(self, Effect::Up | Effect::Down)
    }
}

/// The [`Effect`] of `iv` with the smallest effect that matters `floor` (> 0, in
/// the interval's units).
pub fn effect(iv: &Interval, floor: f64) -> Effect {
    let big = iv.est.abs() >= floor;
    if iv.lo > 0.0 && big {
        Effect::Up
    } else if iv.hi < 0.0 && big {
        Effect::Down
    } else if iv.lo >= -floor && iv.hi <= floor {
        Effect::Null
    } else {
        Effect::Unclear
    }
}

/// How two sides' effects compare.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Grade {
    /// The same effect, of a size that agrees.
    Match,
    /// The same sign of effect, of another size.
    Direction,
    /// Both sides show there is no effect that matters.
    AgreeNull,
    /// One side (or both) cannot tell.
    Inconclusive,
    /// The reference shows an effect the other side shows to be null.
    Missed,
    /// The other side shows an effect the reference shows to be null.
    Invented,
    /// Effects of opposite signs.
    Opposite,
}

impl Grade {
    /// `match`, `direction`, `agree (null)`, `inconclusive`, `MISMATCH (missed)`,
    /// `MISMATCH (invented)`, `MISMATCH (opposite)`.
    pub fn word(self) -> &'static str {
        match self {
            Grade::Match => "match",
            Grade::Direction => "direction",
            Grade::AgreeNull => "agree (null)",
            Grade::Inconclusive => "inconclusive",
            Grade::Missed => "MISMATCH (missed)",
            Grade::Invented => "MISMATCH (invented)",
            Grade::Opposite => "MISMATCH (opposite)",
        }
    }

    /// Every grade, in report order.
    pub const ALL: [Grade; 7] = [
        Grade::Match,
        Grade::Direction,
        Grade::AgreeNull,
        Grade::Inconclusive,
        Grade::Missed,
        Grade::Invented,
        Grade::Opposite,
    ];

    /// A mismatch of any kind.
    pub fn is_mismatch(self) -> bool {
        matches!(self, Grade::Missed | Grade::Invented | Grade::Opposite)
    }
}

/// The grade of `side` against the reference `reference`; `size_ok` says whether
/// two same-signed effects agree in size (the caller's rule).
pub fn grade(side: Effect, reference: Effect, size_ok: bool) -> Grade {
    use Effect::*;
    match (side, reference) {
        (Up, Up) | (Down, Down) if size_ok => Grade::Match,
        (Up, Up) | (Down, Down) => Grade::Direction,
        (Up, Down) | (Down, Up) => Grade::Opposite,
        (Null, Null) => Grade::AgreeNull,
        (Null, Up | Down) => Grade::Missed,
        (Up | Down, Null) => Grade::Invented,
        (Unclear, _) | (_, Unclear) => Grade::Inconclusive,
    }
}

/// The null distribution of the Wilcoxon signed-rank statistic `W+` for `n` pairs
/// without ties: `P(W+ ≤ w)` for `w = 0 ..= n(n+1)/2`.
fn signed_rank_cdf(n: usize) -> Vec<f64> {
    let m = n * (n + 1) / 2;
    // Number of subsets of {1..n} with each sum, in f64 (2^n overflows u64 past 64).
    let mut c = vec![0.0f64; m + 1];
    c[0] = 1.0;
    for k in 1..=n {
        for s in (k..=k * (k + 1) / 2).rev() {
            c[s] += c[s - k];
        }
    }
    let total = 2f64.powi(n as i32);
    let mut acc = 0.0;
    c.iter()
        .map(|x| {
            acc += x / total;
            acc
        })
        .collect()
}

/// The largest `c` with `P(W+ ≤ c) ≤ α/2` for `n` pairs at [`CONFIDENCE`]
/// (`None` when even `W+ = 0` is too likely: fewer than six pairs).
fn signed_rank_critical(n: usize) -> Option<usize> {
    let half_alpha = (1.0 - CONFIDENCE) / 2.0;
    if n <= 100 {
        let cdf = signed_rank_cdf(n);
        cdf.iter().rposition(|&p| p <= half_alpha + 1e-12)
    } else {
        let nf = n as f64;
        let mean = nf * (nf + 1.0) / 4.0;
        let sd = (nf * (nf + 1.0) * (2.0 * nf + 1.0) / 24.0).sqrt();
        let z = Normal::new(0.0, 1.0)
            .expect("standard normal")
            .inverse_cdf(1.0 - half_alpha);
        let c = (mean - z * sd - 0.5).floor();
        (c >= 0.0).then_some(c as usize)
    }
}

/// The Hodges–Lehmann estimate of the centre of `d` (the median of its Walsh
/// averages `(d_i + d_j) / 2`, `i ≤ j`) with the [`CONFIDENCE`] interval of the
/// Wilcoxon signed-rank test (order statistics of the Walsh averages). `None` for
/// no data; unbounded with fewer than six values.
pub fn hodges_lehmann(d: &[f64]) -> Option<Interval> {
    let n = d.len();
    if n == 0 || d.iter().any(|x| !x.is_finite()) {
        return None;
    }
    let mut w = Vec::with_capacity(n * (n + 1) / 2);
    for i in 0..n {
        for j in i..n {
            w.push((d[i] + d[j]) / 2.0);
        }
    }
    w.sort_by(f64::total_cmp);
    let m = w.len();
    let est = if m % 2 == 1 {
        w[m / 2]
    } else {
        (w[m / 2 - 1] + w[m / 2]) / 2.0
    };
    Some(match signed_rank_critical(n) {
        // [W_(c+1), W_(M−c)], 1-based.
        Some(c) if c < m / 2 => Interval {
            est,
            lo: w[c],
            hi: w[m - 1 - c],
        },
        _ => Interval::unbounded(est),
    })
}

/// The paired relative change of `b` over `a` in %, `100 (b_i / a_i − 1)` per pair,
/// as a Hodges–Lehmann [`Interval`]. `None` without pairs, with unequal lengths, or
/// when a baseline value is 0.
pub fn paired_change_pct(a: &[f64], b: &[f64]) -> Option<Interval> {
    if a.len() != b.len() || a.contains(&0.0) {
        return None;
    }
    let d: Vec<f64> = a
        .iter()
        .zip(b)
        .map(|(&x, &y)| 100.0 * (y / x - 1.0))
        .collect();
    hodges_lehmann(&d)
}

/// A reported mean with its spread: standard deviation of the runs and how many.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Reported {
    pub mean: f64,
    pub std: f64,
    pub runs: u32,
}

/// The relative change of `b`'s mean over `a`'s in %, with Welch's [`CONFIDENCE`]
/// interval for the difference of the means (taken relative to `a`'s mean as if it
/// were exact). `None` when `a`'s mean is 0 or a side has under two runs.
pub fn welch_change_pct(a: Reported, b: Reported) -> Option<Interval> {
    if a.mean == 0.0 || a.runs < 2 || b.runs < 2 {
        return None;
    }
    let (va, vb) = (
        a.std * a.std / f64::from(a.runs),
        b.std * b.std / f64::from(b.runs),
    );
    let scale = 100.0 / a.mean.abs();
    let est = (b.mean - a.mean) * scale;
    let se = (va + vb).sqrt();
    if se == 0.0 {
        return Some(Interval::point(est));
    }
    // Welch–Satterthwaite degrees of freedom.
    let df =
        (va + vb).powi(2) / (va * va / f64::from(a.runs - 1) + vb * vb / f64::from(b.runs - 1));
    let t = StudentsT::new(0.0, 1.0, df)
        .expect("positive degrees of freedom")
        .inverse_cdf(1.0 - (1.0 - CONFIDENCE) / 2.0);
    Some(Interval {
        est,
        lo: est - t * se * scale,
        hi: est + t * se * scale,
    })
}

/// `E[max of n standard normal draws − their mean]`: how far the largest of `n`
/// runs lies above their average, in standard deviations (1.539 for 10), by
/// quadrature. Turns a reported maximum into a spread estimate.
pub fn expected_max_over_mean(n: u32) -> f64 {
    let nd = Normal::new(0.0, 1.0).expect("standard normal");
    let nf = f64::from(n);
    let (lo, hi, steps) = (-10.0, 10.0, 20_000);
    let h = (hi - lo) / f64::from(steps);
    (0..=steps)
        .map(|i| {
            let x = lo + f64::from(i) * h;
            let w = if i == 0 || i == steps { 0.5 } else { 1.0 };
            let pdf = (-x * x / 2.0).exp() / (2.0 * std::f64::consts::PI).sqrt();
            w * x * nf * pdf * nd.cdf(x).powf(nf - 1.0)
        })
        .sum::<f64>()
        * h
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_signed_rank_null_distribution_is_exact() {
        // n = 3: W+ ∈ {0,1,2,3,3,4,5,6} over the 8 sign patterns.
        let c = signed_rank_cdf(3);
        let want = [1.0, 2.0, 3.0, 5.0, 6.0, 7.0, 8.0].map(|x| x / 8.0);
        for (got, w) in c.iter().zip(want) {
            assert!((got - w).abs() < 1e-12, "{c:?}");
        }
        // The classic table values: the largest c with P(W+ ≤ c) ≤ 0.025.
        assert_eq!(signed_rank_critical(5), None);
        assert_eq!(signed_rank_critical(6), Some(0));
        assert_eq!(signed_rank_critical(10), Some(8));
        assert_eq!(signed_rank_critical(20), Some(52));
        assert_eq!(signed_rank_critical(30), Some(137));
        // The normal approximation beyond 100 pairs continues the exact values.
        let exact = signed_rank_critical(100).unwrap() as f64;
        let nf = 100.0f64;
        let approx = nf * (nf + 1.0) / 4.0
            - 1.959964 * (nf * (nf + 1.0) * (2.0 * nf + 1.0) / 24.0).sqrt()
            - 0.5;
        assert!((exact - approx).abs() <= 2.0, "{exact} {approx}");
    }

    #[test]
    fn hodges_lehmann_by_hand() {
        // d = 1, 2, 3, 4, 5, 6: 21 Walsh averages from 1 to 6; median 3.5; n = 6
        // gives c = 0, so the interval is the extreme averages [1, 6].
        let iv = hodges_lehmann(&[4.0, 1.0, 6.0, 2.0, 5.0, 3.0]).unwrap();
        assert_eq!((iv.est, iv.lo, iv.hi), (3.5, 1.0, 6.0));
        // Five values: no 95 % interval.
        let iv = hodges_lehmann(&[1.0, 2.0, 3.0, 4.0, 5.0]).unwrap();
        assert_eq!(iv.est, 3.0);
        assert!(iv.lo.is_infinite() && iv.hi.is_infinite());
        assert_eq!(hodges_lehmann(&[]), None);
        // Identical values: a point.
        let iv = hodges_lehmann(&[2.0; 8]).unwrap();
        assert_eq!((iv.est, iv.lo, iv.hi), (2.0, 2.0, 2.0));
    }

    #[test]
    fn paired_change_is_relative_per_pair() {
        let a = [100.0, 200.0, 50.0, 100.0, 400.0, 10.0];
        let b = [110.0, 220.0, 55.0, 110.0, 440.0, 11.0];
        let iv = paired_change_pct(&a, &b).unwrap();
        assert!((iv.est - 10.0).abs() < 1e-9 && (iv.lo - 10.0).abs() < 1e-9);
        assert_eq!(paired_change_pct(&[0.0], &[1.0]), None);
        assert_eq!(paired_change_pct(&[1.0], &[1.0, 2.0]), None);
    }

    #[test]
    fn welch_interval_by_hand() {
        // Equal spreads 2 on means 100 and 104, 8 runs each: se = 1, df = 14,
        // t(0.975, 14) = 2.1448: +4 % ± 2.14 %.
        let a = Reported {
            mean: 100.0,
            std: 2.0,
            runs: 8,
        };
        let b = Reported {
            mean: 104.0,
            std: 2.0,
            runs: 8,
        };
        let iv = welch_change_pct(a, b).unwrap();
        assert!((iv.est - 4.0).abs() < 1e-12);
        assert!((iv.hi - iv.est - 2.1448).abs() < 1e-3, "{iv:?}");
        // No spread: a point.
        let iv = welch_change_pct(Reported { std: 0.0, ..a }, Reported { std: 0.0, ..b }).unwrap();
        assert_eq!((iv.lo, iv.hi), (4.0, 4.0));
        assert_eq!(welch_change_pct(Reported { runs: 1, ..a }, b), None);
    }

    #[test]
    fn effects_need_both_an_interval_off_zero_and_a_size() {
        let iv = |est, lo, hi| Interval { est, lo, hi };
        assert_eq!(effect(&iv(3.0, 1.5, 4.5), 1.0), Effect::Up);
        assert_eq!(effect(&iv(-3.0, -4.5, -1.5), 1.0), Effect::Down);
        // Sure but too small: within the floor, a null.
        assert_eq!(effect(&iv(0.5, 0.2, 0.8), 1.0), Effect::Null);
        // Sure, a bit small, not within the floor: unclear.
        assert_eq!(effect(&iv(0.8, 0.2, 1.4), 1.0), Effect::Unclear);
        // Wide: unclear, never null.
        assert_eq!(effect(&iv(0.0, -5.0, 5.0), 1.0), Effect::Unclear);
        assert_eq!(effect(&Interval::unbounded(4.0), 1.0), Effect::Unclear);
        assert_eq!(effect(&Interval::point(0.0), 1.0), Effect::Null);
    }

    #[test]
    fn grades_of_every_pair_of_effects() {
        use Effect::*;
        assert_eq!(grade(Up, Up, true), Grade::Match);
        assert_eq!(grade(Down, Down, false), Grade::Direction);
        assert_eq!(grade(Up, Down, true), Grade::Opposite);
        assert_eq!(grade(Null, Null, false), Grade::AgreeNull);
        assert_eq!(grade(Null, Down, true), Grade::Missed);
        assert_eq!(grade(Up, Null, true), Grade::Invented);
        for e in [Up, Down, Null, Unclear] {
            assert_eq!(grade(Unclear, e, true), Grade::Inconclusive);
            assert_eq!(grade(e, Unclear, true), Grade::Inconclusive);
        }
        assert!(Grade::Missed.is_mismatch() && !Grade::Inconclusive.is_mismatch());
    }

    #[test]
    fn the_expected_maximum_of_normal_draws() {
        // Tabulated E[max] of n standard normals: 0.5642 (2), 1.0294 (4), 1.5388 (10).
        for (n, want) in [(2, 0.5642), (4, 1.0294), (10, 1.5388)] {
            let got = expected_max_over_mean(n);
            assert!((got - want).abs() < 2e-3, "n={n}: {got}");
        }
        assert!(expected_max_over_mean(1).abs() < 1e-9);
    }
}
