//! Statistics for A/B comparisons, the way scheduler patches are judged on LKML.
//!
//! A placement change is a distribution shift over many runs, not one number: the
//! seeds report mean, stddev, percentiles and Δ% per arm (seed 002 over 15 000 runs,
//! adding a Wilcoxon test because variance hid the effect). This module gives
//!
//! * [`Describe`]: count, mean, sample standard deviation (`ddof = 1`, as pandas'
//!   `describe`), min, p50 / p75 / p99 (numpy's default linear interpolation between
//!   order statistics) and max;
//! * [`hmean`]: the harmonic mean, which mmtests uses for rates (events/s, ops/s),
//!   where the arithmetic mean would overweight fast runs;
//! * [`wilcoxon_signed_rank`]: the paired test (same seeds in both arms) — zero
//!   differences dropped, average ranks for ties, the normal approximation with the
//!   tie-corrected variance and no continuity correction (scipy's
//!   `wilcoxon(b, a, method="approx", zero_method="wilcox", correction=False)`);
//! * [`mann_whitney_u`]: the unpaired rank-sum test (scipy's
//!   `mannwhitneyu(a, b, method="asymptotic", use_continuity=True)`).
//!
//! p-values are two-sided. Exact small-sample distributions are not computed: with
//! fewer than ~10 pairs the normal approximation is rough, and `compare` says so.
//! The verdicts themselves rest on intervals, not p-values: [`verdict`] gives each
//! effect a 95 % interval from its own noise (Hodges–Lehmann over paired runs,
//! Welch over reported means and spreads) and grades two sides' effects.
//!
//! Within one run, latencies are recorded into [`LatencyHist`], an HDR histogram
//! (3 significant digits, 1 ns to 1 h, as schbench and rt-app keep theirs) with an
//! exact sum for the mean. It holds nothing before its first record, then a sparse
//! list of its buckets (a counter is one bucket), and the dense histogram only past
//! [`SPARSE_MAX`] distinct buckets; every form reports the dense histogram's
//! numbers. It lives here, on the ground floor, because the workloads' own metrics
//! (schbench's percentiles, rt-app's slack) and the kernel-side metrics (wakeup
//! latency, runqueue wait) both record into it.

pub mod verdict;

use hdrhistogram::Histogram;
use statrs::distribution::{ContinuousCDF, Normal};
use std::sync::OnceLock;

/// Summary of one sample.
#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize)]
pub struct Describe {
    pub n: usize,
    pub mean: f64,
    pub std: f64,
    pub min: f64,
    pub p50: f64,
    pub p75: f64,
    pub p99: f64,
    pub max: f64,
}

/// numpy's default (`linear`) percentile of sorted `xs`, `p` in 0..=100.
pub fn percentile_sorted(xs: &[f64], p: f64) -> f64 {
    match xs.len() {
        0 => f64::NAN,
        1 => xs[0],
        n => {
            let pos = p / 100.0 * (n - 1) as f64;
            let lo = pos.floor() as usize;
            let hi = (lo + 1).min(n - 1);
            xs[lo] + (xs[hi] - xs[lo]) * (pos - lo as f64)
        }
    }
}

impl Describe {
    pub fn of(xs: &[f64]) -> Describe {
        let n = xs.len();
        if n == 0 {
            return Describe::default();
        }
        let mut s = xs.to_vec();
        s.sort_by(f64::total_cmp);
        let mean = s.iter().sum::<f64>() / n as f64;
        // Identical values: exactly 0 (the mean's rounding would leave a residue).
        let var = if n > 1 && s[0] != s[n - 1] {
            s.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / (n - 1) as f64
        } else {
            0.0
        };
        Describe {
            n,
            mean,
            std: var.sqrt(),
            min: s[0],
            p50: percentile_sorted(&s, 50.0),
            p75: percentile_sorted(&s, 75.0),
            p99: percentile_sorted(&s, 99.0),
            max: s[n - 1],
        }
    }
}

/// Harmonic mean (NaN when a value is not positive).
pub fn hmean(xs: &[f64]) -> f64 {
    if xs.is_empty() || xs.iter().any(|&x| x <= 0.0) {
        return f64::NAN;
    }
    xs.len() as f64 / xs.iter().map(|x| 1.0 / x).sum::<f64>()
}

/// A test's statistic and two-sided p-value.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct TestResult {
    pub statistic: f64,
    pub p: f64,
}

/// Average ranks (1-based) of `xs`, and the tie term Σ (t³ − t) over tie groups.
fn ranks(xs: &[f64]) -> (Vec<f64>, f64) {
    let mut idx: Vec<usize> = (0..xs.len()).collect();
    idx.sort_by(|&a, &b| xs[a].total_cmp(&xs[b]));
    let mut r = vec![0.0; xs.len()];
    let mut ties = 0.0;
    let mut i = 0;
    while i < idx.len() {
        let mut j = i;
        while j + 1 < idx.len() && xs[idx[j + 1]] == xs[idx[i]] {
            j += 1;
        }
        let avg = (i + j) as f64 / 2.0 + 1.0;
        for &k in &idx[i..=j] {
            r[k] = avg;
        }
        let t = (j - i + 1) as f64;
        ties += t * t * t - t;
        i = j + 1;
    }
    (r, ties)
}

fn two_sided(z: f64) -> f64 {
    let n = Normal::new(0.0, 1.0).expect("standard normal");
    (2.0 * n.sf(z.abs())).min(1.0)
}

/// Wilcoxon signed-rank test of the paired differences `b[i] − a[i]`. `None` when
/// every difference is zero (or there are no pairs).
pub fn wilcoxon_signed_rank(a: &[f64], b: &[f64]) -> Option<TestResult> {
    let d: Vec<f64> = a
        .iter()
        .zip(b)
        .map(|(x, y)| y - x)
        .filter(|d| *d != 0.0)
        .collect();
    let n = d.len() as f64;
    if d.is_empty() {
        return None;
    }
    let abs: Vec<f64> = d.iter().map(|x| x.abs()).collect();
    let (r, ties) = ranks(&abs);
    let r_plus: f64 = d
        .iter()
        .zip(&r)
        .filter(|(x, _)| **x > 0.0)
        .map(|(_, r)| r)
        .sum();
    let r_minus = n * (n + 1.0) / 2.0 - r_plus;
    let mean = n * (n + 1.0) / 4.0;
    let var = n * (n + 1.0) * (2.0 * n + 1.0) / 24.0 - ties / 48.0;
    let p = if var > 0.0 {
        two_sided((r_plus - mean) / var.sqrt())
    } else {
        1.0
    };
    Some(TestResult {
        statistic: r_plus.min(r_minus),
        p,
    })
}

/// Mann-Whitney U test of `a` against `b`; the statistic is `U` of `a`.
pub fn mann_whitney_u(a: &[f64], b: &[f64]) -> Option<TestResult> {
    let (n1, n2) = (a.len() as f64, b.len() as f64);
    if a.is_empty() || b.is_empty() {
        return None;
    }
    let all: Vec<f64> = a.iter().chain(b).copied().collect();
    let (r, ties) = ranks(&all);
    let r1: f64 = r[..a.len()].iter().sum();
    let u1 = r1 - n1 * (n1 + 1.0) / 2.0;
    let n = n1 + n2;
    let mu = n1 * n2 / 2.0;
    let s = (n1 * n2 / 12.0 * ((n + 1.0) - ties / (n * (n - 1.0)))).sqrt();
    let u = u1.max(n1 * n2 - u1);
    let p = if s > 0.0 {
        two_sided((u - mu - 0.5) / s)
    } else {
        1.0
    };
    Some(TestResult { statistic: u1, p })
}

/// A latency distribution.
///
/// It holds what an HDR histogram of 3 significant digits from 1 ns to 1 h holds,
/// and answers every question with the numbers that histogram gives, in one of three
/// forms: nothing before the first record; a *sparse* list of the buckets recorded
/// so far (a bucket's lowest equivalent value and its count, rising), while there
/// are at most [`SPARSE_MAX`] of them; then the dense HDR histogram (≈ 270 KiB).
/// A counter (a metric only ever recorded with the same value) or a metric with a
/// few hundred distinct values stays sparse, so a workload with a metric or four
/// per thread costs a few KiB per thread, not a dense histogram each.
#[derive(Clone, Debug, Default)]
pub struct LatencyHist {
    repr: Repr,
    pub sum: u128,
}

/// Largest value recorded as itself (1 h in ns): larger ones saturate, as the
/// dense histogram does them.
const HIST_HIGH: u64 = 3_600_000_000_000;
/// Distinct buckets kept in the sparse form (16 bytes each: 16 KiB against the
/// dense histogram's 270 KiB) before it turns dense.
pub const SPARSE_MAX: usize = 1024;

#[derive(Clone, Debug, Default)]
enum Repr {
    #[default]
    Empty,
    Sparse(Sparse),
    Dense(Box<Histogram<u64>>),
}

#[derive(Clone, Debug)]
struct Sparse {
    /// `(lowest equivalent value of the bucket, count)`, rising, counts ≥ 1.
    buckets: Vec<(u64, u64)>,
    total: u64,
    /// The dense histogram of the same values, built when [`LatencyHist::hist`] is
    /// asked for it; dropped at the next record.
    dense: OnceLock<Box<Histogram<u64>>>,
}

/// An empty histogram of the bounds every [`LatencyHist`] uses.
fn new_hist() -> Histogram<u64> {
    Histogram::new_with_bounds(1, HIST_HIGH, 3).expect("valid histogram bounds")
}

/// A shared empty histogram of the bounds every [`LatencyHist`] uses.
fn empty_hist() -> &'static Histogram<u64> {
    static EMPTY: OnceLock<Histogram<u64>> = OnceLock::new();
    EMPTY.get_or_init(new_hist)
}

/// The bucket arithmetic (`lowest_equivalent`, `highest_equivalent`) of every
/// [`LatencyHist`]: it depends on the lowest value (1) and the significant digits
/// (3) only, so a histogram of those with the smallest upper bound (16 KiB of
/// counts, against 270 KiB) gives it for every value.
fn buckets_of() -> &'static Histogram<u64> {
    static MATH: OnceLock<Histogram<u64>> = OnceLock::new();
    MATH.get_or_init(|| Histogram::new_with_bounds(1, 2, 3).expect("valid histogram bounds"))
}

/// The lowest value of `v`'s bucket (the histograms' `lowest_equivalent`), for the
/// record path: with 1 ns units and 3 significant digits there are 2048 sub-buckets,
/// so values below 2048 have a bucket each and every doubling above halves the
/// resolution. Tested against the histogram's own arithmetic.
#[inline]
fn bucket_floor(v: u64) -> u64 {
    let shift = 53 - (v | 2047).leading_zeros();
    (v >> shift) << shift
}

impl Sparse {
    /// Count `v` (1 ..= [`HIST_HIGH`]) in its bucket; false, and nothing recorded,
    /// when that would make more than [`SPARSE_MAX`] buckets.
    #[inline]
    fn record(&mut self, v: u64) -> bool {
        let key = bucket_floor(v);
        match self.buckets.binary_search_by_key(&key, |&(k, _)| k) {
            Ok(i) => self.buckets[i].1 += 1,
            Err(_) if self.buckets.len() >= SPARSE_MAX => return false,
            Err(i) => self.buckets.insert(i, (key, 1)),
        }
        self.total += 1;
        if self.dense.get().is_some() {
            self.dense.take();
        }
        true
    }

    /// The dense histogram of these buckets. Recording each bucket's lowest
    /// value `count` times gives the same counts, total, min and max (the dense
    /// histogram reports a bucket's equivalents, never the value recorded).
    fn to_dense(&self) -> Histogram<u64> {
        let mut h = new_hist();
        for &(k, n) in &self.buckets {
            h.saturating_record_n(k, n);
        }
        h
    }
}

impl LatencyHist {
    /// An empty distribution in the dense form from the start: for the few
    /// distributions of a run recorded at every event (the kernel's wakeup latency
    /// and runqueue wait), where the sparse form's search would cost on the hot
    /// path and the 270 KiB do not matter. Reports as [`LatencyHist::default`].
    pub fn dense() -> LatencyHist {
        LatencyHist {
            repr: Repr::Dense(Box::new(new_hist())),
            sum: 0,
        }
    }

    #[inline]
    pub fn record(&mut self, v: u64) {
        self.sum += v as u128;
        let v = v.max(1);
        // The dense form first, as cheap as a plain HDR record.
        if let Repr::Dense(h) = &mut self.repr {
            return h.saturating_record(v);
        }
        self.record_not_dense(v);
    }

    /// [`LatencyHist::record`] of `v` (≥ 1) into the empty or sparse form.
    fn record_not_dense(&mut self, v: u64) {
        if v <= HIST_HIGH {
            match &mut self.repr {
                Repr::Dense(_) => {}
                Repr::Sparse(s) => {
                    if s.record(v) {
                        return;
                    }
                }
                Repr::Empty => {
                    self.repr = Repr::Sparse(Sparse {
                        buckets: vec![(bucket_floor(v), 1)],
                        total: 1,
                        dense: OnceLock::new(),
                    });
                    return;
                }
            }
        }
        self.dense_mut().saturating_record(v);
    }

    /// The dense form, made from the sparse one (or empty) if needed.
    fn dense_mut(&mut self) -> &mut Histogram<u64> {
        if !matches!(self.repr, Repr::Dense(_)) {
            let h = match &self.repr {
                Repr::Sparse(s) => s.to_dense(),
                _ => new_hist(),
            };
            self.repr = Repr::Dense(Box::new(h));
        }
        match &mut self.repr {
            Repr::Dense(h) => h,
            _ => unreachable!("made dense above"),
        }
    }

    /// Every recorded value's bucket: `(value, count)` in rising order, `value`
    /// the bucket's highest equivalent value (the histogram keeps 3 significant
    /// digits).
    pub fn buckets(&self) -> Vec<(u64, u64)> {
        match &self.repr {
            Repr::Empty => vec![],
            Repr::Sparse(s) => s
                .buckets
                .iter()
                .map(|&(k, n)| (buckets_of().highest_equivalent(k), n))
                .collect(),
            Repr::Dense(h) => h
                .iter_recorded()
                .map(|v| (v.value_iterated_to(), v.count_at_value()))
                .collect(),
        }
    }

    /// The HDR histogram (a shared empty one before the first record). A sparse
    /// distribution builds its dense histogram here, once (≈ 270 KiB kept until the
    /// next record): [`count`](Self::count), [`min`](Self::min),
    /// [`max`](Self::max), [`percentile`](Self::percentile),
    /// [`buckets`](Self::buckets) and [`summary`](Self::summary) answer without it.
    pub fn hist(&self) -> &Histogram<u64> {
        match &self.repr {
            Repr::Empty => empty_hist(),
            Repr::Sparse(s) => s.dense.get_or_init(|| Box::new(s.to_dense())),
            Repr::Dense(h) => h,
        }
    }
    /// Add `other`'s values (counts and sum) to this distribution.
    pub fn add(&mut self, other: &LatencyHist) {
        match &other.repr {
            Repr::Empty => {}
            Repr::Dense(h) => {
                self.dense_mut()
                    .add(h.as_ref())
                    .expect("histograms of equal bounds add");
            }
            Repr::Sparse(o) => match &mut self.repr {
                Repr::Empty => {
                    self.repr = Repr::Sparse(Sparse {
                        buckets: o.buckets.clone(),
                        total: o.total,
                        dense: OnceLock::new(),
                    })
                }
                Repr::Sparse(s) if merged_len(&s.buckets, &o.buckets) <= SPARSE_MAX => {
                    s.buckets = merge(&s.buckets, &o.buckets);
                    s.total += o.total;
                    s.dense.take();
                }
                _ => {
                    let h = self.dense_mut();
                    for &(k, n) in &o.buckets {
                        h.saturating_record_n(k, n);
                    }
                }
            },
        }
        self.sum += other.sum;
    }
    pub fn count(&self) -> u64 {
        match &self.repr {
            Repr::Empty => 0,
            Repr::Sparse(s) => s.total,
            Repr::Dense(h) => h.len(),
        }
    }
    /// The smallest recorded value's bucket's lowest equivalent (0 when empty), as
    /// [`Histogram::min`].
    pub fn min(&self) -> u64 {
        match &self.repr {
            Repr::Empty => 0,
            Repr::Sparse(s) => s.buckets[0].0,
            Repr::Dense(h) => h.min(),
        }
    }
    /// The largest recorded value's bucket's highest equivalent (0 when empty), as
    /// [`Histogram::max`].
    pub fn max(&self) -> u64 {
        match &self.repr {
            Repr::Empty => 0,
            Repr::Sparse(s) => buckets_of().highest_equivalent(s.buckets[s.buckets.len() - 1].0),
            Repr::Dense(h) => h.max(),
        }
    }
    /// Exact mean of the recorded values (0 when empty).
    pub fn mean(&self) -> f64 {
        if self.count() == 0 {
            0.0
        } else {
            self.sum as f64 / self.count() as f64
        }
    }
    /// The value at percentile `p`, as [`Histogram::value_at_percentile`] gives it
    /// (0 when empty).
    pub fn percentile(&self, p: f64) -> u64 {
        match &self.repr {
            Repr::Empty => 0,
            Repr::Dense(h) => {
                if h.is_empty() {
                    0
                } else {
                    h.value_at_percentile(p)
                }
            }
            Repr::Sparse(s) => {
                // The dense histogram's walk, over the non-empty buckets only.
                let q = p / 100.0;
                let q = if q > 1.0 { 1.0 } else { q };
                let target = ((q * s.total as f64).ceil() as u64).max(1);
                let mut seen = 0u64;
                for &(k, n) in &s.buckets {
                    seen += n;
                    if seen >= target {
                        return if q == 0.0 {
                            k
                        } else {
                            buckets_of().highest_equivalent(k)
                        };
                    }
                }
                0
            }
        }
    }
    /// The empirical CDF as `(value, fraction ≤ value)` at the recorded values (each
    /// histogram bucket's highest equivalent value), thinned to at most `max_points`
    /// evenly spaced points (the last, `(max, 1.0)`, always kept). Empty when empty.
    pub fn cdf_points(&self, max_points: usize) -> Vec<(u64, f64)> {
        let n = self.count();
        if n == 0 {
            return vec![];
        }
        let (h, max) = (buckets_of(), self.max());
        let mut pts = Vec::new();
        let mut cum = 0u64;
        for (v, c) in self.buckets() {
            cum += c;
            let x = h.highest_equivalent(v);
            pts.push((x.min(max), cum as f64 / n as f64));
        }
        let m = max_points.max(2);
        if pts.len() > m {
            let last = pts.len() - 1;
            pts = (0..m).map(|i| pts[i * last / (m - 1)]).collect();
        }
        pts
    }

    /// `{count, mean, p50, p90, p95, p99, p999, max}`.
    pub fn summary(&self) -> Summary {
        Summary {
            count: self.count(),
            mean: (self.mean() * 1000.0).round() / 1000.0,
            p50: self.percentile(50.0),
            p90: self.percentile(90.0),
            p95: self.percentile(95.0),
            p99: self.percentile(99.0),
            p999: self.percentile(99.9),
            max: self.max(),
        }
    }
}

/// Number of distinct buckets in the union of two sparse lists.
fn merged_len(a: &[(u64, u64)], b: &[(u64, u64)]) -> usize {
    let (mut i, mut j, mut n) = (0, 0, 0);
    while i < a.len() && j < b.len() {
        match a[i].0.cmp(&b[j].0) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => (i, j) = (i + 1, j + 1),
        }
        n += 1;
    }
    n + (a.len() - i) + (b.len() - j)
}

/// The union of two sparse lists, counts of a common bucket added.
fn merge(a: &[(u64, u64)], b: &[(u64, u64)]) -> Vec<(u64, u64)> {
    let mut out = Vec::with_capacity(merged_len(a, b));
    let (mut i, mut j) = (0, 0);
    while i < a.len() && j < b.len() {
        match a[i].0.cmp(&b[j].0) {
            std::cmp::Ordering::Less => {
                out.push(a[i]);
                i += 1;
            }
            std::cmp::Ordering::Greater => {
                out.push(b[j]);
                j += 1;
            }
            std::cmp::Ordering::Equal => {
                out.push((a[i].0, a[i].1 + b[j].1));
                (i, j) = (i + 1, j + 1);
            }
        }
    }
    out.extend_from_slice(&a[i..]);
    out.extend_from_slice(&b[j..]);
    out
}

/// Summary statistics of a distribution (values in the metric's unit).
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Summary {
    pub count: u64,
    pub mean: f64,
    pub p50: u64,
    pub p90: u64,
    pub p95: u64,
    pub p99: u64,
    pub p999: u64,
    pub max: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_histogram_is_allocated_at_its_first_record_only() {
        let mut a = LatencyHist::default();
        let b = LatencyHist::default();
        a.add(&b);
        assert!(
            matches!(a.repr, Repr::Empty),
            "adding an empty one allocates nothing"
        );
        assert_eq!((a.count(), a.summary()), (0, Summary::default()));
        assert_eq!(a.hist().len(), 0);
        a.record(0); // recorded as 1 ns, as before
        a.record(5_000_000_000_000); // above one hour: saturates
        assert_eq!(a.count(), 2);
        assert_eq!(a.hist().min(), 1);
        assert_eq!(
            a.hist().max(),
            a.hist().highest_equivalent(3_600_000_000_000)
        );
        let mut c = LatencyHist::default();
        c.add(&a);
        assert_eq!((c.count(), c.sum), (2, 5_000_000_000_000));
    }

    /// Everything a [`LatencyHist`] reports, next to what a dense HDR histogram of
    /// the same bounds, fed the same values, reports.
    fn same_as_dense(l: &LatencyHist, d: &Histogram<u64>, sum: u128) {
        assert_eq!(l.count(), d.len());
        assert_eq!(l.sum, sum);
        assert_eq!(l.min(), d.min());
        assert_eq!(l.max(), d.max());
        for p in [
            0.0, 0.1, 1.0, 25.0, 50.0, 90.0, 95.0, 99.0, 99.9, 100.0, 150.0,
        ] {
            let want = if d.is_empty() {
                0
            } else {
                d.value_at_percentile(p)
            };
            assert_eq!(l.percentile(p), want, "p{p}");
        }
        let want: Vec<(u64, u64)> = d
            .iter_recorded()
            .map(|v| (v.value_iterated_to(), v.count_at_value()))
            .collect();
        assert_eq!(l.buckets(), want);
        // The histogram itself, built from the sparse form when asked for.
        let h = l.hist();
        assert_eq!(
            (h.len(), h.min(), h.max(), h.min_nz()),
            (d.len(), d.min(), d.max(), d.min_nz())
        );
        let got: Vec<(u64, u64)> = h
            .iter_recorded()
            .map(|v| (v.value_iterated_to(), v.count_at_value()))
            .collect();
        assert_eq!(got, want);
        assert_eq!(h.mean().to_bits(), d.mean().to_bits());
        assert_eq!(l.summary().max, if d.is_empty() { 0 } else { d.max() });
    }

    /// `cdf_points` as computed on the dense histogram alone.
    fn dense_cdf(d: &Histogram<u64>, max_points: usize) -> Vec<(u64, f64)> {
        let n = d.len();
        if n == 0 {
            return vec![];
        }
        let mut pts = Vec::new();
        let mut cum = 0u64;
        for v in d.iter_recorded() {
            cum += v.count_at_value();
            let x = d.highest_equivalent(v.value_iterated_to());
            pts.push((x.min(d.max()), cum as f64 / n as f64));
        }
        let m = max_points.max(2);
        if pts.len() > m {
            let last = pts.len() - 1;
            pts = (0..m).map(|i| pts[i * last / (m - 1)]).collect();
        }
        pts
    }

    /// A dense histogram fed as `LatencyHist::record` feeds it.
    fn dense_of(values: &[u64]) -> (Histogram<u64>, u128) {
        let mut d = new_hist();
        for &v in values {
            d.saturating_record(v.max(1));
        }
        (d, values.iter().map(|&v| v as u128).sum())
    }

    #[test]
    fn the_small_histogram_has_the_bucket_arithmetic_of_the_full_one() {
        let (small, full) = (buckets_of(), new_hist());
        for b in 0..63 {
            for v in [
                (1u64 << b) - 1,
                1 << b,
                (1 << b) + 1,
                (1 << b) + (1 << b) / 3,
            ] {
                let v = v.max(1);
                assert_eq!(small.lowest_equivalent(v), full.lowest_equivalent(v), "{v}");
                assert_eq!(bucket_floor(v), full.lowest_equivalent(v), "{v}");
                assert_eq!(
                    small.highest_equivalent(v),
                    full.highest_equivalent(v),
                    "{v}"
                );
            }
        }
    }

    #[test]
    fn a_dense_distribution_reports_as_the_lazy_one() {
        let (mut d, mut l) = (LatencyHist::dense(), LatencyHist::default());
        assert_eq!(d.summary(), l.summary());
        assert_eq!((d.count(), d.min(), d.max()), (0, 0, 0));
        assert!(d.buckets().is_empty() && d.cdf_points(5).is_empty());
        for v in [5, 0, 70_000, 5, 3] {
            d.record(v);
            l.record(v);
        }
        assert!(matches!(d.repr, Repr::Dense(_)) && matches!(l.repr, Repr::Sparse(_)));
        assert_eq!(d.summary(), l.summary());
        assert_eq!(d.buckets(), l.buckets());
        assert_eq!(d.cdf_points(3), l.cdf_points(3));
        let mut e = LatencyHist::dense();
        e.add(&l);
        e.add(&LatencyHist::dense());
        assert_eq!((e.summary(), e.sum), (d.summary(), d.sum));
    }

    #[test]
    fn a_counter_stays_sparse_and_reports_as_a_histogram() {
        let mut c = LatencyHist::default();
        for _ in 0..10_000 {
            c.record(1);
        }
        assert!(matches!(&c.repr, Repr::Sparse(s) if s.buckets == [(1, 10_000)]));
        let (d, sum) = dense_of(&[1; 10_000]);
        same_as_dense(&c, &d, sum);
        assert_eq!(c.cdf_points(10), [(1, 1.0)]);
    }

    #[test]
    fn a_sparse_histogram_turns_dense_past_its_bucket_limit_and_on_huge_values() {
        // Values 1..=SPARSE_MAX each have a bucket of their own (below 2048 the
        // buckets are 1 ns wide).
        let vals: Vec<u64> = (1..=SPARSE_MAX as u64 + 1).collect();
        let mut l = LatencyHist::default();
        for &v in &vals[..SPARSE_MAX] {
            l.record(v);
        }
        assert!(matches!(l.repr, Repr::Sparse(_)));
        l.record(vals[SPARSE_MAX]);
        assert!(matches!(l.repr, Repr::Dense(_)));
        let (d, sum) = dense_of(&vals);
        same_as_dense(&l, &d, sum);
        // A value past one hour saturates as the dense histogram saturates it.
        let mut h = LatencyHist::default();
        h.record(7);
        h.record(u64::MAX / 2);
        let (d, sum) = dense_of(&[7, u64::MAX / 2]);
        same_as_dense(&h, &d, sum);
    }

    proptest::proptest! {
        /// Sparse, dense and mixed distributions, and their sums (`add`), report
        /// what one dense HDR histogram of all their values reports.
        #[test]
        fn every_form_reports_what_the_dense_histogram_reports(
            a in proptest::collection::vec(
                proptest::prop_oneof![
                    0u64..4,
                    1_000u64..1_200,
                    100_000u64..2_000_000,
                    3_599_999_999_000u64..3_600_001_000_000,
                ],
                0..300,
            ),
            b in proptest::collection::vec(0u64..5_000_000_000, 0..3_000),
            spread in 0usize..3,
        ) {
            // `spread` > 0 makes `b` cross SPARSE_MAX distinct buckets.
            let b: Vec<u64> = if spread == 0 { b.iter().map(|v| v % 64).collect() } else { b };
            let mut la = LatencyHist::default();
            let mut lb = LatencyHist::default();
            a.iter().for_each(|&v| la.record(v));
            b.iter().for_each(|&v| lb.record(v));
            let (da, sa) = dense_of(&a);
            let (db, sb) = dense_of(&b);
            same_as_dense(&la, &da, sa);
            same_as_dense(&lb, &db, sb);
            let all: Vec<u64> = a.iter().chain(&b).copied().collect();
            let (dall, sall) = dense_of(&all);
            let mut ab = la.clone();
            ab.add(&lb);
            same_as_dense(&ab, &dall, sall);
            let mut ba = lb.clone();
            ba.add(&la);
            same_as_dense(&ba, &dall, sall);
            // Recording after a `hist()` call drops the stale dense copy.
            let _ = la.hist();
            b.iter().for_each(|&v| la.record(v));
            same_as_dense(&la, &dall, sall);
            for n in [2, 50, 5_000] {
                assert_eq!(la.cdf_points(n), dense_cdf(&dall, n));
                assert_eq!(ab.cdf_points(n), dense_cdf(&dall, n));
            }
        }
    }

    // Reference values computed with scipy 1.17.1 / numpy (see the module notes for
    // the exact calls): seed-002-like hackbench times, and an integer sample with
    // many ties.
    const A: [f64; 12] = [
        0.622, 0.618, 0.631, 0.640, 0.615, 0.629, 0.622, 0.637, 0.611, 0.625, 0.633, 0.619,
    ];
    const B: [f64; 12] = [
        0.617, 0.620, 0.626, 0.632, 0.610, 0.622, 0.622, 0.630, 0.609, 0.621, 0.629, 0.615,
    ];
    const C: [f64; 15] = [3., 1., 4., 1., 5., 9., 2., 6., 5., 3., 5., 8., 9., 7., 9.];
    const D: [f64; 15] = [2., 7., 1., 8., 2., 8., 1., 8., 2., 8., 4., 5., 9., 0., 4.];

    /// Relative agreement to 1e-9: statrs' and scipy's normal tails differ in the
    /// last digits.
    fn close(a: f64, b: f64) {
        assert!((a - b).abs() < 1e-9 * b.abs().max(1.0), "{a} vs {b}");
    }

    #[test]
    fn describe_matches_numpy() {
        let d = Describe::of(&A);
        close(d.mean, 0.6251666666666666);
        close(d.std, 0.008962886439832509);
        close(d.p50, 0.6234999999999999);
        close(d.p75, 0.6315);
        close(d.p99, 0.63967);
        assert_eq!((d.min, d.max, d.n), (0.611, 0.640, 12));
        let c = Describe::of(&C);
        assert_eq!((c.p50, c.p75, c.p99), (5.0, 7.5, 9.0));
        close(c.std, 2.8250579429371676);
    }

    #[test]
    fn hmean_matches_scipy() {
        close(hmean(&A), 0.6250490880238142);
        close(hmean(&C), 3.135108235879572);
        assert!(hmean(&[1.0, 0.0]).is_nan());
    }

    #[test]
    fn wilcoxon_matches_scipy() {
        let w = wilcoxon_signed_rank(&A, &B).unwrap();
        close(w.statistic, 1.5);
        close(w.p, 0.004883305352463495);
        let w = wilcoxon_signed_rank(&D, &C).unwrap();
        close(w.statistic, 41.0);
        close(w.p, 0.4679162843737157);
        assert_eq!(wilcoxon_signed_rank(&A, &A), None);
    }

    #[test]
    fn mann_whitney_matches_scipy() {
        let m = mann_whitney_u(&A, &B).unwrap();
        close(m.statistic, 91.0);
        close(m.p, 0.2842165133209271);
        let m = mann_whitney_u(&C, &D).unwrap();
        close(m.statistic, 127.0);
        close(m.p, 0.558545276235882);
    }
}
