//! Numbers and fixed-width tables: the text every other presentation is built from.
//!
//! A number printed by schedlab is read by a person comparing it with another
//! number, so each kind of table keeps one stable way of writing its numbers: the
//! comparison tables six decimals, the seed tables a precision by magnitude, the
//! validation table fewer digits, the measured costs fewer still, the plots' axes four significant digits. Those
//! conventions are all here, in one formatter ([`num`]) chosen by a [`Num`] style,
//! together with the Δ% and p-value cells and the pipe table renderer, so that a page
//! and a terminal print the same digits. This module knows nothing of how the
//! numbers were computed: it takes `f64`s and strings and gives strings back, which
//! is why the computing modules may call it to fill the cells of their results.

use crate::stats::TestResult;
use std::fmt::Write as _;

/// How [`num`] writes a number: one style per kind of table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Num {
    /// Comparison statistics (`compare`, the report's tables): six decimals, or
    /// four-digit scientific below 1e-3 and from 1e7; NaN is `-`.
    Stat,
    /// Seed tables (`reproduce`): 1 decimal from 1000, 2 from 10, 4 from 0.01,
    /// else three-digit scientific; non-finite is `-`.
    Seed,
    /// Validation spreads (`validate`): 1 decimal from 100, 3 from 1, else 4.
    Spread,
    /// Measured primitive costs (`calibrate`): no decimal from 100, else 2.
    Cost,
    /// Means and stds of counts: six significant digits at most (zero and
    /// non-finite as [`Num::Stat`]).
    Short,
    /// An axis tick: four significant digits, trailing zeros dropped, scientific
    /// outside [1e-3, 1e6).
    Tick,
}

/// Write `x` in `style`.
pub fn num(x: f64, style: Num) -> String {
    let a = x.abs();
    match style {
        Num::Stat => {
            if x.is_nan() {
                "-".into()
            } else if x != 0.0 && !(1e-3..1e7).contains(&a) {
                format!("{x:.4e}")
            } else {
                format!("{x:.6}")
            }
        }
        Num::Seed => {
            if !x.is_finite() {
                "-".into()
            } else if x == 0.0 {
                "0".into()
            } else if a >= 1000.0 {
                format!("{x:.1}")
            } else if a >= 10.0 {
                format!("{x:.2}")
            } else if a >= 0.01 {
                format!("{x:.4}")
            } else {
                format!("{x:.3e}")
            }
        }
        Num::Spread => {
            if x >= 100.0 {
                format!("{x:.1}")
            } else if x >= 1.0 {
                format!("{x:.3}")
            } else {
                format!("{x:.4}")
            }
        }
        Num::Cost => {
            if x >= 100.0 {
                format!("{x:.0}")
            } else {
                format!("{x:.2}")
            }
        }
        Num::Short => {
            if x == 0.0 || !x.is_finite() {
                num(x, Num::Stat)
            } else if !(1e-3..1e6).contains(&a) {
                format!("{x:.4e}")
            } else {
                let decimals = (5 - a.log10().floor() as i32).clamp(0, 6) as usize;
                format!("{x:.decimals$}")
            }
        }
        Num::Tick => {
            if x == 0.0 {
                "0".into()
            } else if !(1e-3..1e6).contains(&a) {
                format!("{x:.1e}")
            } else {
                let decimals = (3 - a.log10().floor() as i32).clamp(0, 6) as usize;
                let s = format!("{x:.decimals$}");
                if s.contains('.') {
                    s.trim_end_matches('0').trim_end_matches('.').to_string()
                } else {
                    s
                }
            }
        }
    }
}

/// An optional number in [`Num::Seed`] style, `-` when absent.
pub(crate) fn opt_num(x: Option<f64>) -> String {
    x.map(|x| num(x, Num::Seed)).unwrap_or_else(|| "-".into())
}

/// `(b − a) / a` in percent with a sign, `-` when `a` is zero or either is NaN.
pub fn pct(a: f64, b: f64) -> String {
    if a != 0.0 && !a.is_nan() && !b.is_nan() {
        format!("{:+.2}%", (b - a) / a * 100.0)
    } else {
        "-".into()
    }
}

/// A Δ already in percent, with a sign; `-` when absent or not finite.
pub fn delta_pct(x: Option<f64>) -> String {
    match x {
        Some(d) if d.is_finite() => format!("{d:+.2}%"),
        _ => "-".into(),
    }
}

/// A test's p-value as `p=0.1234` (`p=-` when the test could not run).
pub(crate) fn p_value(t: &Option<TestResult>) -> String {
    match t {
        Some(t) => format!("p={:.4}", t.p),
        None => "p=-".into(),
    }
}

/// Fixed-width rendering of one table (Markdown-compatible pipes): the first and
/// last columns left-aligned, the others right-aligned.
pub(crate) fn render_table(columns: &[String], cells: &[Vec<String>]) -> String {
    let n = columns.len();
    let mut w = vec![0usize; n];
    for row in std::iter::once(columns).chain(cells.iter().map(|c| c.as_slice())) {
        for (i, c) in row.iter().enumerate().take(n) {
            w[i] = w[i].max(c.chars().count());
        }
    }
    let line = |row: &[String]| {
        let mut s = String::from("|");
        for (i, wi) in w.iter().enumerate() {
            let c = row.get(i).map(String::as_str).unwrap_or("");
            let pad = wi - c.chars().count();
            if i == 0 || i + 1 == n {
                let _ = write!(s, " {c}{} |", " ".repeat(pad));
            } else {
                let _ = write!(s, " {}{c} |", " ".repeat(pad));
            }
        }
        s.push('\n');
        s
    };
    let mut s = line(columns);
    s.push('|');
    for (i, wi) in w.iter().enumerate() {
        let dashes = "-".repeat(*wi);
        if i == 0 || i + 1 == n {
            let _ = write!(s, "-{dashes}-|");
        } else {
            let _ = write!(s, "-{dashes}:|");
        }
    }
    s.push('\n');
    for c in cells {
        s.push_str(&line(c));
    }
    s
}

/// An interval as `est [lo, hi]` (`[unbounded]` when the data cannot bound it).
pub fn interval(x: &Option<crate::stats::verdict::Interval>) -> String {
    match x {
        Some(i) if i.lo.is_finite() && i.hi.is_finite() => format!(
            "{:+.3} [{:+.3}, {:+.3}]",
            i.est + 0.0,
            i.lo + 0.0,
            i.hi + 0.0
        ),
        Some(i) => format!("{:+.3} [unbounded]", i.est + 0.0),
        None => "-".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn styles() {
        assert_eq!(num(f64::NAN, Num::Stat), "-");
        assert_eq!(num(1.5, Num::Stat), "1.500000");
        assert_eq!(num(2e7, Num::Stat), "2.0000e7");
        assert_eq!(num(0.0, Num::Seed), "0");
        assert_eq!(num(1234.56, Num::Seed), "1234.6");
        assert_eq!(num(12.345, Num::Seed), "12.35");
        assert_eq!(num(0.001, Num::Seed), "1.000e-3");
        assert_eq!(num(f64::INFINITY, Num::Seed), "-");
        assert_eq!(num(150.0, Num::Spread), "150.0");
        assert_eq!(num(1.5, Num::Spread), "1.500");
        assert_eq!(num(0.5, Num::Spread), "0.5000");
        assert_eq!(num(150.4, Num::Cost), "150");
        assert_eq!(num(15.04, Num::Cost), "15.04");
        assert_eq!(num(12.5, Num::Short), "12.5000");
        assert_eq!(num(0.0, Num::Short), "0.000000");
        assert_eq!(num(0.0, Num::Tick), "0");
        assert_eq!(num(2500.0, Num::Tick), "2500");
        assert_eq!(num(0.125, Num::Tick), "0.125");
        assert_eq!(num(520000.0, Num::Tick), "520000");
        assert_eq!(num(5.2e6, Num::Tick), "5.2e6");
        assert_eq!(num(-0.0005, Num::Tick), "-5.0e-4");
        assert_eq!(pct(2.0, 3.0), "+50.00%");
        assert_eq!(pct(0.0, 3.0), "-");
        assert_eq!(delta_pct(Some(-1.234)), "-1.23%");
        assert_eq!(delta_pct(None), "-");
    }

    #[test]
    fn table_aligns() {
        let cols = vec!["".to_string(), "x".into(), "v".into()];
        let t = render_table(&cols, &[vec!["a".into(), "10".into(), "ok".into()]]);
        assert_eq!(t, "|   |  x | v  |\n|---|---:|----|\n| a | 10 | ok |\n");
    }
}
