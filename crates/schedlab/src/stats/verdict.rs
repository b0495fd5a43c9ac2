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
use statrs::distribution::{Continuous, ContinuousCDF, Normal, StudentsT};

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

    /// The kind of a mismatch ("missed", "invented", "opposite"); `None` for the
    /// other grades.
    pub fn mismatch_kind(self) -> Option<&'static str> {
        match self {
            Grade::Missed => Some("missed"),
            Grade::Invented => Some("invented"),
            Grade::Opposite => Some("opposite"),
            _ => None,
        }
    }

    /// A mismatch of any kind.
    pub fn is_mismatch(self) -> bool {
        self.mismatch_kind().is_some()
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

/// Welch's [`CONFIDENCE`] interval around `est` from the variances of two
/// independent estimates and their degrees of freedom (Welch–Satterthwaite; a side
/// without variance adds no term), widened by `scale`: a point when both variances
/// are 0, unbounded when either is infinite (a side with one run).
fn welch(est: f64, (va, da): (f64, f64), (vb, db): (f64, f64), scale: f64) -> Interval {
    let v = va + vb;
    if !v.is_finite() {
        return Interval::unbounded(est);
    }
    if v == 0.0 {
        return Interval::point(est);
    }
    let term = |x: f64, d: f64| if x > 0.0 { x * x / d } else { 0.0 };
    let df = v * v / (term(va, da) + term(vb, db));
    let t = StudentsT::new(0.0, 1.0, df)
        .expect("positive degrees of freedom")
        .inverse_cdf(1.0 - (1.0 - CONFIDENCE) / 2.0);
    let hw = t * v.sqrt() * scale;
    Interval {
        est,
        lo: est - hw,
        hi: est + hw,
    }
}

/// The relative change of `b`'s mean over `a`'s in %, with Welch's [`CONFIDENCE`]
/// interval for the difference of the means (taken relative to `a`'s mean as if it
/// were exact). `None` when `a`'s mean is 0 or a side has under two runs.
pub fn welch_change_pct(a: Reported, b: Reported) -> Option<Interval> {
    if a.mean == 0.0 || a.runs < 2 || b.runs < 2 {
        return None;
    }
    let side = |r: Reported| (r.std * r.std / f64::from(r.runs), f64::from(r.runs - 1));
    let scale = 100.0 / a.mean.abs();
    let est = (b.mean - a.mean) * scale;
    Some(welch(est, side(a), side(b), scale))
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
            w * x * nf * nd.pdf(x) * nd.cdf(x).powf(nf - 1.0)
        })
        .sum::<f64>()
        * h
}

/// The 97.5 % quantile of the standard normal (the half-width factor of a 95 %
/// interval).
fn z975() -> f64 {
    Normal::new(0.0, 1.0)
        .expect("standard normal")
        .inverse_cdf(1.0 - (1.0 - CONFIDENCE) / 2.0)
}

/// One side's pooled fraction of events over runs (`(k_i, n_i)`: events of the
/// class, events in all, per run) with its variance, widened by the overdispersion
/// the runs show between them: `φ = max(1, X² / (R − 1))` with Pearson's `X²` of
/// the runs against the pooled fraction (a quasi-binomial model). `None` without
/// events; `φ` is infinite (the spread unknown) with a single run.
fn pooled_fraction(runs: &[(u64, u64)]) -> Option<(f64, f64)> {
    let n: u64 = runs.iter().map(|r| r.1).sum();
    if n == 0 {
        return None;
    }
    let k: u64 = runs.iter().map(|r| r.0).sum();
    let p = k as f64 / n as f64;
    let used: Vec<&(u64, u64)> = runs.iter().filter(|r| r.1 > 0).collect();
    // The variance's p kept off 0 and 1, so that a class never seen still has a
    // width (a Wilson-like half count).
    let pv = (k as f64 + 0.5) / (n as f64 + 1.0);
    let phi = if used.len() < 2 {
        f64::INFINITY
    } else {
        let x2: f64 = used
            .iter()
            .map(|&&(ki, ni)| {
                let e = ni as f64 * pv;
                (ki as f64 - e).powi(2) / (e * (1.0 - pv))
            })
            .sum();
        (x2 / (used.len() - 1) as f64).max(1.0)
    };
    Some((p, phi * pv * (1.0 - pv) / n as f64))
}

/// The difference of two sides' pooled event fractions (`side − reference`), with a
/// [`CONFIDENCE`] interval from both sides' overdispersed binomial variances
/// (`pooled_fraction`). `None` when a side has no events; unbounded when a side
/// has a single run (its between-run spread is unknown).
pub fn fraction_difference(reference: &[(u64, u64)], side: &[(u64, u64)]) -> Option<Interval> {
    let (pr, vr) = pooled_fraction(reference)?;
    let (ps, vs) = pooled_fraction(side)?;
    let est = ps - pr;
    let hw = z975() * (vr + vs).sqrt();
    Some(if hw.is_finite() {
        Interval {
            est,
            lo: est - hw,
            hi: est + hw,
        }
    } else {
        Interval::unbounded(est)
    })
}

/// Mean and the variance of the mean of per-run values (`None` without values;
/// an infinite variance with one).
fn mean_and_var(x: &[f64]) -> Option<(f64, f64, f64)> {
    let n = x.len();
    if n == 0 {
        return None;
    }
    let m = x.iter().sum::<f64>() / n as f64;
    if n < 2 {
        return Some((m, f64::INFINITY, 0.0));
    }
    let var = x.iter().map(|v| (v - m).powi(2)).sum::<f64>() / (n - 1) as f64;
    Some((m, var / n as f64, (n - 1) as f64))
}

/// Welch's [`CONFIDENCE`] interval for the difference of the means of per-run
/// values (`side − reference`). `None` when a side has no values; unbounded when a
/// side has one (its spread unknown).
pub fn mean_difference(reference: &[f64], side: &[f64]) -> Option<Interval> {
    let (mr, vr, dr) = mean_and_var(reference)?;
    let (ms, vs, ds) = mean_and_var(side)?;
    Some(welch(ms - mr, (vr, dr), (vs, ds), 1.0))
}

/// The log-ratio of the means of per-run values, `ln(mean(side) / mean(reference))`,
/// with a [`CONFIDENCE`] interval by the delta method (the variance of a log mean
/// is that of the mean over the mean squared; Welch's degrees of freedom). Counts
/// pass `offset = 0.5` so that a side that saw none still has a ratio. `None` when a
/// side has no values or a mean (plus offset) that is not positive; unbounded when
/// a side has one value.
pub fn log_ratio(reference: &[f64], side: &[f64], offset: f64) -> Option<Interval> {
    let (mr, vr, dr) = mean_and_var(reference)?;
    let (ms, vs, ds) = mean_and_var(side)?;
    let (mr, ms) = (mr + offset, ms + offset);
    if mr <= 0.0 || ms <= 0.0 {
        return None;
    }
    Some(welch(
        (ms / mr).ln(),
        (vr / (mr * mr), dr),
        (vs / (ms * ms), ds),
        1.0,
    ))
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
    fn pooled_fractions_widen_with_the_spread_between_runs() {
        // Two sides of 5 runs × 100 events. Reference: 30 in each run (p = 0.3, no
        // spread beyond binomial: φ = 1); side: 50 in each (p = 0.5).
        let r = [(30, 100); 5];
        let s = [(50, 100); 5];
        let iv = fraction_difference(&r, &s).unwrap();
        assert!((iv.est - 0.2).abs() < 1e-12);
        // Binomial widths only: pv = 150.5/501 and 250.5/501.
        let v = |k: f64| {
            let p = (k + 0.5) / 501.0;
            p * (1.0 - p) / 500.0
        };
        let hw = 1.959964 * (v(150.0) + v(250.0)).sqrt();
        assert!((iv.hi - iv.est - hw).abs() < 1e-6, "{iv:?} {hw}");
        // The same totals spread unevenly over the runs (10, 50, 30, 20, 40): φ > 1,
        // a wider interval around the same estimate.
        let uneven = [(10, 100), (50, 100), (30, 100), (20, 100), (40, 100)];
        let w = fraction_difference(&uneven, &s).unwrap();
        assert!((w.est - 0.2).abs() < 1e-12 && w.half_width() > 1.5 * iv.half_width());
        // One run: the spread is unknown.
        let one = fraction_difference(&[(30, 100)], &s).unwrap();
        assert!(one.lo.is_infinite());
        assert_eq!(fraction_difference(&[(0, 0)], &s), None);
    }

    #[test]
    fn mean_differences_and_log_ratios_by_hand() {
        // Means 10 and 12, each over 4 runs with sample variance 2/3 ± ...:
        // x = 9, 10, 10, 11 (var 2/3), y = 11, 12, 12, 13: se² = 1/6 + 1/6, df = 6,
        // t = 2.4469: 2 ± 1.4127.
        let x = [9.0, 10.0, 10.0, 11.0];
        let y = [11.0, 12.0, 12.0, 13.0];
        let iv = mean_difference(&x, &y).unwrap();
        assert!((iv.est - 2.0).abs() < 1e-12);
        assert!(
            (iv.hi - 2.0 - 2.4469 * (1.0f64 / 3.0).sqrt()).abs() < 1e-3,
            "{iv:?}"
        );
        assert!(mean_difference(&[1.0], &y).unwrap().lo.is_infinite());
        assert_eq!(mean_difference(&[], &y), None);
        // Log-ratio: ln(12/10), the same relative spreads.
        let lr = log_ratio(&x, &y, 0.0).unwrap();
        assert!(
            (lr.est - 1.2f64.ln()).abs() < 1e-12 && lr.lo > 0.0,
            "{lr:?}"
        );
        // Counts of zero on one side: the offset keeps a ratio.
        let z = log_ratio(&[0.0, 0.0, 0.0], &[4.0, 5.0, 6.0], 0.5).unwrap();
        assert!((z.est - (5.5f64 / 0.5).ln()).abs() < 1e-12);
        assert_eq!(log_ratio(&[0.0, 0.0], &[1.0, 2.0], 0.0), None);
        // No spread on either side: a point.
        let p = log_ratio(&[2.0, 2.0], &[4.0, 4.0], 0.0).unwrap();
        assert_eq!((p.lo, p.hi), (2f64.ln(), 2f64.ln()));
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
