//! The plots of the HTML reports, drawn as inline SVG with `plotters`.
//!
//! Each function here turns numbers already computed (samples per arm, a pooled
//! CDF, per-CPU busy fractions, means and stds along a sweep axis) into one SVG
//! string: boxplots, step CDFs on a log axis, a heatmap, grouped bars and lines with
//! error bars. The SVG backend uses no system fonts (text widths are estimated, so
//! every chart keeps a right margin), and nothing depends on time or map order, so
//! the same numbers give the same bytes. Drawing is kept apart from the pages
//! ([`super::html`]) so that a page reads as a list of sections and a plot can be
//! checked on its own, and apart from the experiments, which never draw.

use super::html::esc;
use super::text::{num, Num};
use super::ArmInfo;
use crate::experiment::compare::RunDetail;
use crate::stats::{percentile_sorted, Describe};
use plotters::coord::ranged1d::{DefaultFormatting, KeyPointHint, Ranged};
use plotters::coord::Shift;
use plotters::prelude::*;
use std::collections::BTreeSet;

pub(crate) const ARM_NAMES: [&str; 2] = ["A", "B"];
pub(crate) const ARM_COLOURS: [RGBColor; 2] = [RGBColor(31, 119, 180), RGBColor(230, 120, 20)];
pub(crate) const PALETTE: [RGBColor; 8] = [
    RGBColor(31, 119, 180),
    RGBColor(230, 120, 20),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(90, 90, 90),
];
pub(crate) const FONT: &str = "sans-serif";
/// Above these, the heatmap shows only each arm's mean (the file stays small).
pub(crate) const MAX_HEATMAP_RUNS: usize = 80;
pub(crate) const MAX_HEATMAP_CELLS: usize = 40_000;

pub(crate) type Area<'a> = DrawingArea<SVGBackend<'a>, Shift>;
pub(crate) type PlotResult = Result<(), String>;

pub(crate) fn perr<E: std::fmt::Display>(e: E) -> String {
    e.to_string()
}

/// Render one SVG of `w`×`h` pixels with `draw`; a drawing error becomes a note.
pub(crate) fn svg(w: u32, h: u32, draw: impl FnOnce(&Area<'_>) -> PlotResult) -> String {
    let mut s = String::new();
    let res = {
        let root = SVGBackend::with_string(&mut s, (w, h)).into_drawing_area();
        root.fill(&WHITE)
            .map_err(perr)
            .and_then(|()| draw(&root))
            .and_then(|()| root.present().map_err(perr))
    };
    match res {
        Ok(()) => s,
        Err(e) => format!("<p class=\"err\">plot failed: {}</p>", esc(&e)),
    }
}

/// `(lo, hi)` padded by 5 % (a degenerate range gets a unit-sized one).
pub(crate) fn padded(lo: f64, hi: f64) -> (f64, f64) {
    if !(lo.is_finite() && hi.is_finite()) {
        return (0.0, 1.0);
    }
    let span = hi - lo;
    if span <= 0.0 {
        let d = if lo == 0.0 { 1.0 } else { lo.abs() * 0.05 };
        (lo - d, hi + d)
    } else {
        (lo - 0.05 * span, hi + 0.05 * span)
    }
}

/// Label of the nearest key point.
pub(crate) fn nearest_label(keys: &[f64], labels: &[String], v: f64) -> String {
    keys.iter()
        .zip(labels)
        .min_by(|a, b| (a.0 - v).abs().total_cmp(&(b.0 - v).abs()))
        .map(|(_, l)| l.clone())
        .unwrap_or_default()
}

/// A linear f64 axis whose ticks are exactly `keys` (categories, grid values).
#[derive(Clone, Debug)]
pub(crate) struct Keyed {
    lo: f64,
    hi: f64,
    keys: Vec<f64>,
}

impl Keyed {
    fn new(lo: f64, hi: f64, keys: Vec<f64>) -> Keyed {
        Keyed { lo, hi, keys }
    }
}

impl Ranged for Keyed {
    type FormatOption = DefaultFormatting;
    type ValueType = f64;
    fn map(&self, v: &f64, limit: (i32, i32)) -> i32 {
        let span = self.hi - self.lo;
        let t = if span > 0.0 {
            (v - self.lo) / span
        } else {
            0.5
        };
        limit.0 + (f64::from(limit.1 - limit.0) * t).round() as i32
    }
    fn key_points<H: KeyPointHint>(&self, _hint: H) -> Vec<f64> {
        self.keys.clone()
    }
    fn range(&self) -> std::ops::Range<f64> {
        self.lo..self.hi
    }
}

/// Boxplot statistics of one sample (numpy-linear quartiles, Tukey whiskers).
#[derive(Clone, Debug, PartialEq)]
pub struct BoxStats {
    pub q1: f64,
    pub median: f64,
    pub q3: f64,
    pub whisker_lo: f64,
    pub whisker_hi: f64,
    pub mean: f64,
    pub outliers: Vec<f64>,
}

impl BoxStats {
    pub fn of(xs: &[f64]) -> Option<BoxStats> {
        let mut s: Vec<f64> = xs.iter().copied().filter(|x| x.is_finite()).collect();
        if s.is_empty() {
            return None;
        }
        s.sort_by(f64::total_cmp);
        let (q1, median, q3) = (
            percentile_sorted(&s, 25.0),
            percentile_sorted(&s, 50.0),
            percentile_sorted(&s, 75.0),
        );
        let iqr = q3 - q1;
        let (lo_f, hi_f) = (q1 - 1.5 * iqr, q3 + 1.5 * iqr);
        let inside: Vec<f64> = s
            .iter()
            .copied()
            .filter(|&x| x >= lo_f && x <= hi_f)
            .collect();
        Some(BoxStats {
            q1,
            median,
            q3,
            whisker_lo: inside.first().copied().unwrap_or(q1),
            whisker_hi: inside.last().copied().unwrap_or(q3),
            mean: s.iter().sum::<f64>() / s.len() as f64,
            outliers: s.into_iter().filter(|&x| x < lo_f || x > hi_f).collect(),
        })
    }
}

/// Horizontal boxplots, first sample on top (as in seed 002's plots).
pub(crate) fn boxplot_svg(samples: &[(String, RGBColor, Vec<f64>)], xdesc: &str) -> String {
    let stats: Vec<(String, RGBColor, BoxStats, Vec<f64>)> = samples
        .iter()
        .filter_map(|(n, c, xs)| BoxStats::of(xs).map(|b| (n.clone(), *c, b, xs.clone())))
        .collect();
    let k = stats.len().max(1);
    let all = stats.iter().flat_map(|s| s.3.iter().copied());
    let (lo, hi) = all.fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), x| {
        (l.min(x), h.max(x))
    });
    let (x0, x1) = padded(lo, hi);
    let keys: Vec<f64> = (0..k).map(|i| (k - i) as f64 - 0.5).collect();
    let labels: Vec<String> = stats.iter().map(|s| s.0.clone()).collect();
    let h = 70 + 42 * k as u32;
    svg(560, h, |root| {
        let mut chart = ChartBuilder::on(root)
            .margin_top(8)
            .margin_left(6)
            .margin_right(30)
            .margin_bottom(4)
            .x_label_area_size(38)
            .y_label_area_size(30)
            .build_cartesian_2d(x0..x1, Keyed::new(0.0, k as f64, keys.clone()))
            .map_err(perr)?;
        grid(
            chart
                .configure_mesh()
                .disable_y_mesh()
                .x_labels(6)
                .x_label_formatter(&|v| num(*v, Num::Tick))
                .y_label_formatter(&|v| nearest_label(&keys, &labels, *v))
                .x_desc(xdesc)
                .label_style((FONT, 12))
                .axis_desc_style((FONT, 12)),
        )
        .draw()
        .map_err(perr)?;
        for (i, (_, c, b, _)) in stats.iter().enumerate() {
            let y = keys[i];
            let (y0, y1) = (y - 0.3, y + 0.3);
            let area = chart.plotting_area();
            area.draw(&Rectangle::new(
                [(b.q1, y0), (b.q3, y1)],
                c.mix(0.3).filled(),
            ))
            .map_err(perr)?;
            area.draw(&Rectangle::new([(b.q1, y0), (b.q3, y1)], c.stroke_width(1)))
                .map_err(perr)?;
            let line = |p: Vec<(f64, f64)>, w: u32| PathElement::new(p, c.stroke_width(w));
            for el in [
                line(vec![(b.median, y0), (b.median, y1)], 2),
                line(vec![(b.whisker_lo, y), (b.q1, y)], 1),
                line(vec![(b.q3, y), (b.whisker_hi, y)], 1),
                line(vec![(b.whisker_lo, y - 0.15), (b.whisker_lo, y + 0.15)], 1),
                line(vec![(b.whisker_hi, y - 0.15), (b.whisker_hi, y + 0.15)], 1),
            ] {
                area.draw(&el).map_err(perr)?;
            }
            for &o in &b.outliers {
                area.draw(&Circle::new((o, y), 3, c.stroke_width(1)))
                    .map_err(perr)?;
            }
            area.draw(&Cross::new((b.mean, y), 4, BLACK.stroke_width(1)))
                .map_err(perr)?;
        }
        Ok(())
    })
}

/// The wakeup-latency CDF of all wakeups of `runs` pooled: at each distinct value
/// `x` of any run, `Σ nᵢ·Fᵢ(x) / Σ nᵢ`, thinned to at most `max_points`.
pub(crate) fn pooled_cdf(runs: &[RunDetail], max_points: usize) -> Vec<(u64, f64)> {
    let total: u64 = runs.iter().map(|r| r.wakeup_latency_count).sum();
    if total == 0 {
        return vec![];
    }
    let xs: BTreeSet<u64> = runs
        .iter()
        .flat_map(|r| r.wakeup_latency_cdf.iter().map(|p| p.0))
        .collect();
    let mut xs: Vec<u64> = xs.into_iter().collect();
    let m = max_points.max(2);
    if xs.len() > m {
        let last = xs.len() - 1;
        xs = (0..m).map(|i| xs[i * last / (m - 1)]).collect();
    }
    xs.iter()
        .map(|&x| {
            let f: f64 = runs
                .iter()
                .map(|r| {
                    let c = &r.wakeup_latency_cdf;
                    let i = c.partition_point(|p| p.0 <= x);
                    let fi = if i == 0 { 0.0 } else { c[i - 1].1 };
                    fi * r.wakeup_latency_count as f64
                })
                .sum();
            (x, f / total as f64)
        })
        .collect()
}

/// A step path of a CDF in µs.
pub(crate) fn step_path(c: &[(u64, f64)]) -> Vec<(f64, f64)> {
    let mut p = Vec::with_capacity(2 * c.len() + 1);
    let mut prev = 0.0;
    for &(x, f) in c {
        let xu = x as f64 / 1000.0;
        p.push((xu, prev));
        p.push((xu, f));
        prev = f;
    }
    p
}

pub(crate) fn cdf_svg(arms: &[ArmInfo; 2]) -> Option<String> {
    let pooled: Vec<Vec<(u64, f64)>> = arms.iter().map(|a| pooled_cdf(&a.runs, 400)).collect();
    if pooled.iter().all(Vec::is_empty) {
        return None;
    }
    let (lo, hi) = pooled
        .iter()
        .flatten()
        .fold((u64::MAX, 0u64), |(l, h), p| (l.min(p.0), h.max(p.0)));
    let x0 = (lo as f64 / 1000.0 * 0.8).max(1e-3);
    let x1 = (hi as f64 / 1000.0 * 1.25).max(x0 * 10.0);
    Some(svg(1080, 420, |root| {
        let mut chart = ChartBuilder::on(root)
            .margin_top(10)
            .margin_left(8)
            .margin_right(40)
            .margin_bottom(6)
            .x_label_area_size(42)
            .y_label_area_size(52)
            .build_cartesian_2d((x0..x1).log_scale(), 0.0..1.0)
            .map_err(perr)?;
        chart
            .configure_mesh()
            .x_labels(10)
            .y_labels(11)
            .x_label_formatter(&|v| num(*v, Num::Tick))
            .y_label_formatter(&|v| format!("{v:.1}"))
            .x_desc("wakeup latency (µs, log scale)")
            .y_desc("fraction of wakeups ≤ x")
            .label_style((FONT, 12))
            .axis_desc_style((FONT, 13))
            .max_light_lines(2)
            .light_line_style(RGBColor(246, 246, 246))
            .bold_line_style(RGBColor(215, 215, 215))
            .draw()
            .map_err(perr)?;
        for (k, arm) in arms.iter().enumerate() {
            let c = ARM_COLOURS[k];
            for r in &arm.runs {
                let p: Vec<(f64, f64)> = step_path(&r.wakeup_latency_cdf)
                    .into_iter()
                    .map(|(x, y)| (x.max(x0), y))
                    .collect();
                chart
                    .draw_series(std::iter::once(PathElement::new(p, c.mix(0.2))))
                    .map_err(perr)?;
            }
        }
        for (k, cdf) in pooled.iter().enumerate() {
            let c = ARM_COLOURS[k];
            let p: Vec<(f64, f64)> = step_path(cdf)
                .into_iter()
                .map(|(x, y)| (x.max(x0), y))
                .collect();
            chart
                .draw_series(std::iter::once(PathElement::new(p, c.stroke_width(2))))
                .map_err(perr)?
                .label(format!("{} (all runs pooled)", ARM_NAMES[k]))
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 20, y)], c.stroke_width(2))
                });
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::LowerRight)
            .label_font((FONT, 13))
            .background_style(WHITE.mix(0.9))
            .border_style(RGBColor(180, 180, 180))
            .draw()
            .map_err(perr)?;
        Ok(())
    }))
}

/// Viridis, linearly interpolated between five stops; `v` in 0..=1.
pub(crate) fn colour_map(v: f64) -> RGBColor {
    const STOPS: [(u8, u8, u8); 5] = [
        (68, 1, 84),
        (59, 82, 139),
        (33, 145, 140),
        (94, 201, 98),
        (253, 231, 37),
    ];
    let v = if v.is_finite() {
        v.clamp(0.0, 1.0)
    } else {
        0.0
    };
    let pos = v * 4.0;
    let i = (pos.floor() as usize).min(3);
    let t = pos - i as f64;
    let (a, b) = (STOPS[i], STOPS[i + 1]);
    let mix = |x: u8, y: u8| (x as f64 + (y as f64 - x as f64) * t).round() as u8;
    RGBColor(mix(a.0, b.0), mix(a.1, b.1), mix(a.2, b.2))
}

/// CPU (x) × row (y) heatmap of busy fractions, first row on top.
pub(crate) fn heatmap_svg(rows: &[(String, Vec<f64>)]) -> String {
    let ncpu = rows.iter().map(|r| r.1.len()).max().unwrap_or(0).max(1);
    let n = rows.len().max(1);
    let keys: Vec<f64> = (0..n).map(|i| (n - i) as f64 - 0.5).collect();
    let labels: Vec<String> = rows.iter().map(|r| r.0.clone()).collect();
    let step = (ncpu / 24).max(1);
    let xkeys: Vec<f64> = (0..ncpu).step_by(step).map(|c| c as f64 + 0.5).collect();
    let label_w = labels.iter().map(|l| l.chars().count()).max().unwrap_or(4) as u32 * 7 + 14;
    let h = 80 + 15 * n as u32;
    svg(1080, h, |root| {
        let mut chart = ChartBuilder::on(root)
            .margin_top(8)
            .margin_left(6)
            .margin_right(30)
            .margin_bottom(4)
            .x_label_area_size(40)
            .y_label_area_size(label_w)
            .build_cartesian_2d(
                Keyed::new(0.0, ncpu as f64, xkeys),
                Keyed::new(0.0, n as f64, keys.clone()),
            )
            .map_err(perr)?;
        chart
            .configure_mesh()
            .disable_mesh()
            .x_label_formatter(&|v| format!("{}", v.floor() as i64))
            .y_label_formatter(&|v| nearest_label(&keys, &labels, *v))
            .x_desc("CPU")
            .label_style((FONT, 11))
            .axis_desc_style((FONT, 12))
            .draw()
            .map_err(perr)?;
        let cells = rows.iter().enumerate().flat_map(|(i, (_, busy))| {
            let y = (n - i - 1) as f64;
            busy.iter().enumerate().map(move |(c, &b)| {
                Rectangle::new(
                    [(c as f64, y + 0.04), (c as f64 + 1.0, y + 0.96)],
                    colour_map(b).filled(),
                )
            })
        });
        chart.draw_series(cells).map_err(perr)?;
        Ok(())
    })
}

/// Mean and sample std of `xs` (0 std for fewer than two values).
pub(crate) fn mean_std(xs: &[f64]) -> (f64, f64) {
    let d = Describe::of(xs);
    (d.mean, if d.n > 1 { d.std } else { 0.0 })
}

/// Horizontal grouped bars: per category, one bar per arm (mean per run, ±std).
pub(crate) fn bars_svg(cats: &[String], arms: &[Vec<(f64, f64)>], xdesc: &str) -> String {
    let k = cats.len().max(1);
    let keys: Vec<f64> = (0..k).map(|i| (k - i) as f64 - 0.5).collect();
    let hi = arms
        .iter()
        .flatten()
        .map(|(m, s)| m + s)
        .fold(0.0f64, f64::max);
    let x1 = if hi > 0.0 { hi * 1.08 } else { 1.0 };
    let label_w = cats.iter().map(|l| l.chars().count()).max().unwrap_or(4) as u32 * 7 + 14;
    let h = 80 + 34 * k as u32;
    svg(1080, h, |root| {
        let mut chart = ChartBuilder::on(root)
            .margin_top(8)
            .margin_left(6)
            .margin_right(40)
            .margin_bottom(4)
            .x_label_area_size(40)
            .y_label_area_size(label_w)
            .build_cartesian_2d(0.0..x1, Keyed::new(0.0, k as f64, keys.clone()))
            .map_err(perr)?;
        grid(
            chart
                .configure_mesh()
                .disable_y_mesh()
                .x_labels(8)
                .x_label_formatter(&|v| num(*v, Num::Tick))
                .y_label_formatter(&|v| nearest_label(&keys, cats, *v))
                .x_desc(xdesc)
                .label_style((FONT, 12))
                .axis_desc_style((FONT, 12)),
        )
        .draw()
        .map_err(perr)?;
        let na = arms.len().max(1) as f64;
        let bh = 0.8 / na;
        for (j, vals) in arms.iter().enumerate() {
            let c = ARM_COLOURS[j % 2];
            let bars = vals.iter().enumerate().map(|(i, &(m, _))| {
                let top = keys[i] + 0.4 - j as f64 * bh;
                Rectangle::new([(0.0, top - bh * 0.9), (m, top)], c.mix(0.75).filled())
            });
            chart.draw_series(bars).map_err(perr)?;
            let whiskers =
                vals.iter()
                    .enumerate()
                    .filter(|(_, v)| v.1 > 0.0)
                    .map(|(i, &(m, s))| {
                        let y = keys[i] + 0.4 - j as f64 * bh - bh * 0.45;
                        PathElement::new(
                            vec![((m - s).max(0.0), y), (m + s, y)],
                            BLACK.stroke_width(1),
                        )
                    });
            chart.draw_series(whiskers).map_err(perr)?;
        }
        Ok(())
    })
}

/// A named line of optional `(mean, std)` points, one per x position.
pub(crate) type Series = (String, Vec<Option<(f64, f64)>>);

/// Lines of `(x position, mean, std)` per series, x labelled by `xlabels` at `xpos`.
pub(crate) fn lines_svg(
    xpos: &[f64],
    xlabels: &[String],
    series: &[Series],
    xdesc: &str,
) -> String {
    let (lo, hi) = series
        .iter()
        .flat_map(|s| s.1.iter().flatten())
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), &(m, s)| {
            (l.min(m - s), h.max(m + s))
        });
    let (y0, y1) = padded(lo, hi);
    let (xl, xh) = xpos
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), &x| {
            (l.min(x), h.max(x))
        });
    let (x0, x1) = padded(xl, xh);
    let (x0, x1) = if xh > xl {
        (xl - 0.08 * (xh - xl), xh + 0.08 * (xh - xl))
    } else {
        (x0, x1)
    };

    svg(520, 300, |root| {
        let mut chart = ChartBuilder::on(root)
            .margin_top(10)
            .margin_left(6)
            .margin_right(36)
            .margin_bottom(4)
            .x_label_area_size(40)
            .y_label_area_size(62)
            .build_cartesian_2d(Keyed::new(x0, x1, xpos.to_vec()), y0..y1)
            .map_err(perr)?;
        grid(
            chart
                .configure_mesh()
                .y_labels(6)
                .x_label_formatter(&|v| nearest_label(xpos, xlabels, *v))
                .y_label_formatter(&|v| num(*v, Num::Tick))
                .x_desc(xdesc)
                .label_style((FONT, 11))
                .axis_desc_style((FONT, 12)),
        )
        .draw()
        .map_err(perr)?;
        for (j, (_, pts)) in series.iter().enumerate() {
            let c = PALETTE[j % PALETTE.len()];
            let p: Vec<(f64, f64)> = xpos
                .iter()
                .zip(pts)
                .filter_map(|(&x, v)| v.map(|(m, _)| (x, m)))
                .collect();
            chart
                .draw_series(std::iter::once(PathElement::new(
                    p.clone(),
                    c.stroke_width(2),
                )))
                .map_err(perr)?;
            chart
                .draw_series(p.iter().map(|&q| Circle::new(q, 3, c.filled())))
                .map_err(perr)?;
            let errs = xpos.iter().zip(pts).filter_map(|(&x, v)| {
                let (m, s) = (*v)?;
                (s > 0.0).then(|| PathElement::new(vec![(x, m - s), (x, m + s)], c.stroke_width(1)))
            });
            chart.draw_series(errs).map_err(perr)?;
        }
        Ok(())
    })
}

/// The grid every chart shares: one light line between bold ones, in greys.
fn grid<'a, 'b, 'm, X, Y, DB>(
    mesh: &'m mut plotters::chart::MeshStyle<'a, 'b, X, Y, DB>,
) -> &'m mut plotters::chart::MeshStyle<'a, 'b, X, Y, DB>
where
    X: Ranged,
    Y: Ranged,
    DB: DrawingBackend,
{
    mesh.max_light_lines(1)
        .light_line_style(RGBColor(245, 245, 245))
        .bold_line_style(RGBColor(222, 222, 222))
}
