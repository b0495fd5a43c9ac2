//! The HTML report of a comparison or a sweep: one self-contained file.
//!
//! A scheduler patch is argued for on a mailing list with a table, but it is
//! *judged* by the distributions behind the table. Seed 002's author ran 15 000
//! iterations per arm, found the means within noise, and convinced himself with
//! boxplots that the tails had not moved the wrong way. An A/B report must therefore
//! show, side by side and from the same runs:
//!
//! * **what was compared**: each arm's SPEC, the resolved machine, the kernel preset
//!   and the complete feature set it ran with, the seeds (paired: run *i* of A and of
//!   B share a seed), and the schedlab version: without them the numbers cannot be
//!   reproduced or trusted;
//! * **the tables**, with exactly the numbers `compare` prints (centre, std, min,
//!   percentiles, max, Δ%, Wilcoxon and Mann-Whitney p-values), so the page and the
//!   mail agree;
//! * **one boxplot per metric and arm** (quartiles, 1.5 IQR whiskers, outliers, the
//!   mean as a cross), because a shift in the tail or a bimodal arm hides behind a
//!   mean and a standard deviation;
//! * **the wakeup-latency CDF** of each arm (all wakeups of all runs pooled, each run
//!   a faint line behind it): placement changes show up first as latency, and a CDF on
//!   a log axis shows the body and the tail at once;
//! * **per-CPU utilization** as a heatmap (CPU × run, plus each arm's mean): where the
//!   load went is the direct effect of a placement change — packing, spreading,
//!   asymmetric use of big and LITTLE CPUs;
//! * **migrations by topology level** and **placement reasons** (why each CPU was
//!   chosen), which explain *how* the latency and throughput changed;
//! * **energy** when the machine has an Energy Model (EAS work trades it against
//!   performance), or the reason it is absent.
//!
//! The file has inline CSS and inline SVG only: no script, no font or stylesheet to
//! fetch, so it opens offline and can be attached to a bug or mail. The plots are
//! drawn with `plotters` (SVG backend, no system fonts: text widths are estimated,
//! so every chart keeps a right margin). Every user-provided string (scenario name,
//! SPECs, sweep values) is HTML-escaped. The bytes depend only on the runs (no
//! timestamp, no map iteration order), so the same comparison gives the same file.
//!
//! A sweep's report is read back from the sweep's own `results.jsonl`, so a resumed
//! sweep reports every point: one table per point (each metric's mean ± std over the
//! seeds) and, for every numeric metric and every swept axis, the metric along that
//! axis, one line per combination of the other axes' values, with ±std error bars.

use crate::experiment::compare::{
    fmt_num, fmt_p, scalars, ArmSpec, Better, Comparison, MeanKind, MetricRow,
};
use crate::experiment::sweep::{Axis, Record};
use crate::experiment::{RunResult, Scenario};
use crate::stats::{percentile_sorted, Describe};
use plotters::coord::ranged1d::{DefaultFormatting, KeyPointHint, Ranged};
use plotters::coord::Shift;
use plotters::prelude::*;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

/// The schedlab version printed in every report.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// What the report needs from one run beyond the comparison's scalars.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct RunDetail {
    pub seed: u64,
    /// The run's scalars ([`scalars`]), the values behind the boxplots.
    pub scalars: BTreeMap<String, f64>,
    /// Busy fraction per CPU.
    pub cpu_busy: Vec<f64>,
    pub wakeup_latency_count: u64,
    /// `(ns, fraction of wakeups ≤ ns)`.
    pub wakeup_latency_cdf: Vec<(u64, f64)>,
    pub migrations: BTreeMap<String, u64>,
    pub placement_reasons: BTreeMap<String, u64>,
    pub energy_total: Option<f64>,
    pub energy_per_cluster: Vec<f64>,
    pub energy_note: Option<String>,
}

impl RunDetail {
    pub fn of(r: &RunResult) -> RunDetail {
        let m = &r.metrics;
        let owned = |x: &BTreeMap<&'static str, u64>| -> BTreeMap<String, u64> {
            x.iter().map(|(k, v)| (k.to_string(), *v)).collect()
        };
        RunDetail {
            seed: r.seed,
            scalars: scalars(r),
            cpu_busy: m.cpu_busy.clone(),
            wakeup_latency_count: m.wakeup_latency_ns.count,
            wakeup_latency_cdf: m.wakeup_latency_cdf.clone(),
            migrations: owned(&m.migrations),
            placement_reasons: owned(&m.placement_reasons),
            energy_total: m.energy_joules.total,
            energy_per_cluster: m.energy_joules.per_cluster.clone(),
            energy_note: m.energy_joules.note.clone(),
        }
    }
}

/// One arm as it ran.
#[derive(Clone, Debug, serde::Serialize)]
pub struct ArmInfo {
    pub spec: ArmSpec,
    pub machine: String,
    pub nr_cpus: usize,
    pub kernel_preset: String,
    /// The resolved feature set (`NAME` / `NO_NAME` for every feature).
    pub features: Vec<String>,
    /// Per run, in seed order.
    pub runs: Vec<RunDetail>,
}

impl ArmInfo {
    pub fn new(spec: &ArmSpec, sc: &Scenario, runs: Vec<RunDetail>) -> ArmInfo {
        ArmInfo {
            spec: spec.clone(),
            machine: sc.machine.name.clone(),
            nr_cpus: sc.machine.nr_cpus(),
            kernel_preset: sc.kernel_preset.to_string(),
            features: sc.features.resolved(),
            runs,
        }
    }
}

/// A comparison with its per-run details.
#[derive(Clone, Debug)]
pub struct CompareReport {
    pub cmp: Comparison,
    pub arms: [ArmInfo; 2],
}

const ARM_NAMES: [&str; 2] = ["A", "B"];
const ARM_COLOURS: [RGBColor; 2] = [RGBColor(31, 119, 180), RGBColor(230, 120, 20)];
const PALETTE: [RGBColor; 8] = [
    RGBColor(31, 119, 180),
    RGBColor(230, 120, 20),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(90, 90, 90),
];
const FONT: &str = "sans-serif";
/// Above these, the heatmap shows only each arm's mean (the file stays small).
const MAX_HEATMAP_RUNS: usize = 80;
const MAX_HEATMAP_CELLS: usize = 40_000;

/// HTML-escape text and attribute values.
pub fn esc(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&#39;"),
            c => o.push(c),
        }
    }
    o
}

/// A short axis tick: 4 significant digits, scientific outside [1e-3, 1e6).
fn tick(v: f64) -> String {
    let a = v.abs();
    if v == 0.0 {
        "0".into()
    } else if !(1e-3..1e6).contains(&a) {
        format!("{v:.1e}")
    } else {
        let decimals = (3 - a.log10().floor() as i32).clamp(0, 6) as usize;
        let s = format!("{v:.decimals$}");
        if s.contains('.') {
            s.trim_end_matches('0').trim_end_matches('.').to_string()
        } else {
            s
        }
    }
}

/// `(b − a) / a` in percent, as the text table prints it.
fn pct(a: f64, b: f64) -> String {
    if a != 0.0 && !a.is_nan() && !b.is_nan() {
        format!("{:+.2}%", (b - a) / a * 100.0)
    } else {
        "-".into()
    }
}

type Area<'a> = DrawingArea<SVGBackend<'a>, Shift>;
type PlotResult = Result<(), String>;

fn perr<E: std::fmt::Display>(e: E) -> String {
    e.to_string()
}

/// Render one SVG of `w`×`h` pixels with `draw`; a drawing error becomes a note.
fn svg(w: u32, h: u32, draw: impl FnOnce(&Area<'_>) -> PlotResult) -> String {
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

/// A figure wrapping a plot, marked `class="plot"` with its name.
fn figure(out: &mut String, name: &str, caption: &str, svg: &str) {
    let _ = writeln!(
        out,
        "<figure class=\"plot\" data-plot=\"{}\"><figcaption>{}</figcaption>\n{svg}</figure>",
        esc(name),
        esc(caption)
    );
}

/// A colour key in HTML (outside the plots, so it never hides data).
fn legend_html(items: &[(String, RGBColor)]) -> String {
    let mut o = String::from("<div class=\"legend\">");
    for (name, c) in items {
        let _ = write!(
            o,
            "<span><i style=\"background:#{:02x}{:02x}{:02x}\"></i>{}</span>",
            c.0,
            c.1,
            c.2,
            esc(name)
        );
    }
    o.push_str("</div>\n");
    o
}

fn arm_legend() -> String {
    legend_html(&[
        ("A".to_string(), ARM_COLOURS[0]),
        ("B".to_string(), ARM_COLOURS[1]),
    ])
}

/// `(lo, hi)` padded by 5 % (a degenerate range gets a unit-sized one).
fn padded(lo: f64, hi: f64) -> (f64, f64) {
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
fn nearest_label(keys: &[f64], labels: &[String], v: f64) -> String {
    keys.iter()
        .zip(labels)
        .min_by(|a, b| (a.0 - v).abs().total_cmp(&(b.0 - v).abs()))
        .map(|(_, l)| l.clone())
        .unwrap_or_default()
}

/// A linear f64 axis whose ticks are exactly `keys` (categories, grid values).
#[derive(Clone, Debug)]
struct Keyed {
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
fn boxplot_svg(samples: &[(String, RGBColor, Vec<f64>)], xdesc: &str) -> String {
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
        chart
            .configure_mesh()
            .disable_y_mesh()
            .x_labels(6)
            .x_label_formatter(&|v| tick(*v))
            .y_label_formatter(&|v| nearest_label(&keys, &labels, *v))
            .x_desc(xdesc)
            .label_style((FONT, 12))
            .axis_desc_style((FONT, 12))
            .max_light_lines(1)
            .light_line_style(RGBColor(245, 245, 245))
            .bold_line_style(RGBColor(222, 222, 222))
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
pub fn pooled_cdf(runs: &[RunDetail], max_points: usize) -> Vec<(u64, f64)> {
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
fn step_path(c: &[(u64, f64)]) -> Vec<(f64, f64)> {
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

fn cdf_svg(arms: &[ArmInfo; 2]) -> Option<String> {
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
            .x_label_formatter(&|v| tick(*v))
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
pub fn colour_map(v: f64) -> RGBColor {
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
fn heatmap_svg(rows: &[(String, Vec<f64>)]) -> String {
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
fn mean_std(xs: &[f64]) -> (f64, f64) {
    let d = Describe::of(xs);
    (d.mean, if d.n > 1 { d.std } else { 0.0 })
}

/// Horizontal grouped bars: per category, one bar per arm (mean per run, ±std).
fn bars_svg(cats: &[String], arms: &[Vec<(f64, f64)>], xdesc: &str) -> String {
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
        chart
            .configure_mesh()
            .disable_y_mesh()
            .x_labels(8)
            .x_label_formatter(&|v| tick(*v))
            .y_label_formatter(&|v| nearest_label(&keys, cats, *v))
            .x_desc(xdesc)
            .label_style((FONT, 12))
            .axis_desc_style((FONT, 12))
            .max_light_lines(1)
            .light_line_style(RGBColor(245, 245, 245))
            .bold_line_style(RGBColor(222, 222, 222))
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
type Series = (String, Vec<Option<(f64, f64)>>);

/// Lines of `(x position, mean, std)` per series, x labelled by `xlabels` at `xpos`.
fn lines_svg(xpos: &[f64], xlabels: &[String], series: &[Series], xdesc: &str) -> String {
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
        chart
            .configure_mesh()
            .y_labels(6)
            .x_label_formatter(&|v| nearest_label(xpos, xlabels, *v))
            .y_label_formatter(&|v| tick(*v))
            .x_desc(xdesc)
            .label_style((FONT, 11))
            .axis_desc_style((FONT, 12))
            .max_light_lines(1)
            .light_line_style(RGBColor(245, 245, 245))
            .bold_line_style(RGBColor(222, 222, 222))
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

const CSS: &str = "body{font-family:-apple-system,'Segoe UI',Helvetica,Arial,sans-serif;margin:0 auto;max-width:1160px;padding:12px 20px;color:#222;background:#fff}
h1{font-size:22px;margin:8px 0}h2{font-size:18px;border-bottom:1px solid #ccc;padding-bottom:3px;margin-top:28px}
h3{font-size:14px;margin:4px 0}
table{border-collapse:collapse;font-size:12.5px;margin:6px 0}
th,td{border:1px solid #d4d4d4;padding:2px 7px;text-align:right;vertical-align:top}
th{background:#f2f4f7}td.l,th.l{text-align:left}
td.better{background:#e3f4e3}td.worse{background:#fbe3e1}
.sig{font-weight:bold}
code{font-size:12px}
.feat{font-family:monospace;font-size:11.5px;line-height:1.5;max-width:420px;text-align:left}
mark{background:#fff2a8}
.grid{display:grid;grid-template-columns:repeat(auto-fill,minmax(540px,1fr));gap:10px}
.cards{display:grid;grid-template-columns:repeat(auto-fill,minmax(360px,1fr));gap:8px}
.card{border:1px solid #e2e2e2;padding:6px 8px;overflow-x:auto;min-width:0}
figure{margin:6px 0}figcaption{font-size:13px;font-weight:600;color:#333;margin-bottom:2px}
svg{max-width:100%;height:auto}
.cbar{height:12px;width:300px;background:linear-gradient(to right,#440154,#3b528b,#21918c,#5ec962,#fde725);display:inline-block;vertical-align:middle;margin:0 6px}
.note{color:#555;font-size:13px}
nav a{margin-right:12px;font-size:13px}
.legend{font-size:12.5px;margin:2px 0 8px}.legend span{margin-right:14px;white-space:nowrap}
.legend i{display:inline-block;width:12px;height:12px;margin-right:4px;vertical-align:-1px}
*{box-sizing:border-box}
footer{margin-top:30px;font-size:12px;color:#666;border-top:1px solid #ccc;padding-top:6px}
";

fn head(out: &mut String, title: &str) {
    let _ = writeln!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>{}</title>\n<style>\n{CSS}</style>\n</head>\n<body>",
        esc(title)
    );
}

fn footer(out: &mut String) {
    let _ = writeln!(
        out,
        "<footer>Generated by schedlab {}. Self-contained: inline CSS and SVG, no scripts, no network.</footer>\n</body>\n</html>",
        esc(VERSION)
    );
}

fn arm_label(a: &ArmSpec) -> String {
    if a.spec.is_empty() {
        "(as written)".into()
    } else {
        a.spec.clone()
    }
}

fn direction(r: &MetricRow) -> &'static str {
    match r.better {
        Better::Lower => "lower is better",
        Better::Higher => "higher is better",
        Better::Unknown => "no preferred direction",
    }
}

/// `Some(true)` when B is better by the metric's direction, `Some(false)` worse.
fn b_better(r: &MetricRow) -> Option<bool> {
    match (r.better, r.delta_pct.partial_cmp(&0.0)) {
        (Better::Lower, Some(std::cmp::Ordering::Less))
        | (Better::Higher, Some(std::cmp::Ordering::Greater)) => Some(true),
        (Better::Lower, Some(std::cmp::Ordering::Greater))
        | (Better::Higher, Some(std::cmp::Ordering::Less)) => Some(false),
        _ => None,
    }
}

fn p_cell(t: &Option<crate::stats::TestResult>) -> String {
    let text = fmt_p(t);
    match t {
        Some(t) if t.p < 0.05 => format!("<td class=\"sig\">{}</td>", esc(&text)),
        _ => format!("<td>{}</td>", esc(&text)),
    }
}

/// Per category: each arm's (mean, std) per run of `get(run)[cat]` (0 when absent).
fn per_run_counts(
    arms: &[ArmInfo; 2],
    get: impl Fn(&RunDetail) -> &BTreeMap<String, u64>,
) -> (Vec<String>, Vec<Vec<(f64, f64)>>) {
    let cats: BTreeSet<String> = arms
        .iter()
        .flat_map(|a| a.runs.iter().flat_map(|r| get(r).keys().cloned()))
        .collect();
    let cats: Vec<String> = cats.into_iter().collect();
    let vals = arms
        .iter()
        .map(|a| {
            cats.iter()
                .map(|c| {
                    let xs: Vec<f64> = a
                        .runs
                        .iter()
                        .map(|r| get(r).get(c).copied().unwrap_or(0) as f64)
                        .collect();
                    mean_std(&xs)
                })
                .collect()
        })
        .collect();
    (cats, vals)
}

/// A compact number for means and stds of counts: 6 significant digits at most.
fn short(v: f64) -> String {
    let a = v.abs();
    if v == 0.0 || !v.is_finite() {
        fmt_num(v)
    } else if !(1e-3..1e6).contains(&a) {
        format!("{v:.4e}")
    } else {
        let decimals = (5 - a.log10().floor() as i32).clamp(0, 6) as usize;
        format!("{v:.decimals$}")
    }
}

fn counts_table(out: &mut String, what: &str, cats: &[String], vals: &[Vec<(f64, f64)>]) {
    let _ = writeln!(
        out,
        "<table><tr><th class=\"l\">{}</th><th>A mean ± std per run</th><th>B mean ± std per run</th><th>Δ</th></tr>",
        esc(what)
    );
    for (i, c) in cats.iter().enumerate() {
        let (a, b) = (vals[0][i], vals[1][i]);
        let _ = writeln!(
            out,
            "<tr><td class=\"l\">{}</td><td>{} ± {}</td><td>{} ± {}</td><td>{}</td></tr>",
            esc(c),
            short(a.0),
            short(a.1),
            short(b.0),
            short(b.1),
            pct(a.0, b.0)
        );
    }
    out.push_str("</table>\n");
}

impl CompareReport {
    /// Bundle a comparison with its details (from [`crate::experiment::compare::compare_detailed`]).
    pub fn new(
        cmp: Comparison,
        sa: &Scenario,
        sb: &Scenario,
        details: [Vec<RunDetail>; 2],
    ) -> CompareReport {
        let [da, db] = details;
        let arms = [ArmInfo::new(&cmp.a, sa, da), ArmInfo::new(&cmp.b, sb, db)];
        CompareReport { cmp, arms }
    }

    /// The report as one self-contained HTML page.
    pub fn html(&self) -> String {
        let c = &self.cmp;
        let mut o = String::new();
        head(&mut o, &format!("schedlab compare: {}", c.scenario));
        let _ = writeln!(
            o,
            "<h1>schedlab compare: <code>{}</code></h1>\n<p>{} paired runs per arm (run <i>i</i> of A and of B share a seed). A = <code>{}</code>, B = <code>{}</code>. schedlab {}.</p>",
            esc(&c.scenario),
            c.seeds.len(),
            esc(&arm_label(&c.a)),
            esc(&arm_label(&c.b)),
            esc(VERSION)
        );
        if c.seeds.len() < 10 {
            o.push_str("<p class=\"note\">Fewer than 10 runs: the tests' normal approximation is rough.</p>\n");
        }
        o.push_str("<nav><a href=\"#setup\">setup</a><a href=\"#summary\">summary</a><a href=\"#boxplots\">boxplots</a><a href=\"#latency\">latency CDF</a><a href=\"#cpu\">CPU utilization</a><a href=\"#migrations\">migrations</a><a href=\"#placement\">placement reasons</a><a href=\"#energy\">energy</a><a href=\"#tables\">tables</a></nav>\n");
        self.setup(&mut o);
        self.summary(&mut o);
        self.boxplots(&mut o);
        self.latency(&mut o);
        self.cpu(&mut o);
        self.migrations(&mut o);
        self.energy(&mut o);
        self.tables(&mut o);
        footer(&mut o);
        o
    }

    fn setup(&self, o: &mut String) {
        let c = &self.cmp;
        o.push_str("<section id=\"setup\"><h2>Setup</h2>\n<table><tr><th class=\"l\"></th><th class=\"l\">A</th><th class=\"l\">B</th></tr>\n");
        let [a, b] = &self.arms;
        let row = |o: &mut String, k: &str, x: &str, y: &str| {
            let _ = writeln!(
                o,
                "<tr><th class=\"l\">{}</th><td class=\"l\"><code>{}</code></td><td class=\"l\"><code>{}</code></td></tr>",
                esc(k),
                esc(x),
                esc(y)
            );
        };
        row(o, "SPEC", &arm_label(&a.spec), &arm_label(&b.spec));
        row(
            o,
            "machine",
            &format!("{} ({} CPUs)", a.machine, a.nr_cpus),
            &format!("{} ({} CPUs)", b.machine, b.nr_cpus),
        );
        row(o, "kernel preset", &a.kernel_preset, &b.kernel_preset);
        let seeds = |x: &ArmInfo| {
            x.runs
                .iter()
                .map(|r| r.seed.to_string())
                .collect::<Vec<_>>()
                .join(" ")
        };
        row(o, "seeds", &seeds(a), &seeds(b));
        let feats = |x: &ArmInfo, other: &ArmInfo| {
            let set: BTreeSet<&String> = other.features.iter().collect();
            x.features
                .iter()
                .map(|f| {
                    if set.contains(f) {
                        esc(f)
                    } else {
                        format!("<mark>{}</mark>", esc(f))
                    }
                })
                .collect::<Vec<_>>()
                .join(" ")
        };
        let _ = writeln!(
            o,
            "<tr><th class=\"l\">features<br><span class=\"note\">(differences marked)</span></th><td class=\"feat\">{}</td><td class=\"feat\">{}</td></tr>\n</table>",
            feats(a, b),
            feats(b, a)
        );
        let _ = writeln!(
            o,
            "<p class=\"note\">Scenario <code>{}</code>; seeds {}..={}.</p></section>",
            esc(&c.scenario),
            c.seeds.first().unwrap_or(&0),
            c.seeds.last().unwrap_or(&0)
        );
    }

    fn summary(&self, o: &mut String) {
        o.push_str("<section id=\"summary\"><h2>Summary</h2>\n<p class=\"note\">Centre: amean, or hmean for rates (mmtests). Δ = (B − A) / A. Green: B better by the metric's direction, red: worse; p-values below 0.05 in bold.</p>\n<table><tr><th class=\"l\">metric</th><th class=\"l\">direction</th><th>centre</th><th>A</th><th>B</th><th>Δ</th><th>wilcoxon (paired)</th><th>mann-whitney</th></tr>\n");
        for r in &self.cmp.rows {
            let cls = match b_better(r) {
                Some(true) => " class=\"better\"",
                Some(false) => " class=\"worse\"",
                None => "",
            };
            let mk = match r.mean_kind {
                MeanKind::Amean => "amean",
                MeanKind::Hmean => "hmean",
            };
            let _ = writeln!(
                o,
                "<tr><td class=\"l\"><code>{}</code></td><td class=\"l\">{}</td><td>{mk}</td><td>{}</td><td>{}</td><td{cls}>{}</td>{}{}</tr>",
                esc(&r.name),
                direction(r),
                fmt_num(r.a_centre),
                fmt_num(r.b_centre),
                pct(r.a_centre, r.b_centre),
                p_cell(&r.wilcoxon),
                p_cell(&r.mann_whitney)
            );
        }
        o.push_str("</table></section>\n");
    }

    fn tables(&self, o: &mut String) {
        o.push_str("<section id=\"tables\"><h2>Tables</h2>\n<p class=\"note\">The same tables as the text output, in the seeds' layout.</p>\n<div class=\"cards\">\n");
        for r in &self.cmp.rows {
            let _ = writeln!(
                o,
                "<div class=\"card\"><h3><code>{}</code> ({})</h3>\n<table><tr><th></th><th>A</th><th>B</th><th>DELTA</th></tr>",
                esc(&r.name),
                direction(r)
            );
            for (k, a, b) in r.stat_rows("%") {
                let _ = writeln!(
                    o,
                    "<tr><td class=\"l\">{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                    esc(&k),
                    fmt_num(a),
                    fmt_num(b),
                    pct(a, b)
                );
            }
            let verdict = match b_better(r) {
                Some(true) => " (B better)",
                Some(false) => " (B worse)",
                None => "",
            };
            let _ = writeln!(
                o,
                "</table><div class=\"note\">wilcoxon (paired) {}  mann-whitney {}{verdict}</div></div>",
                fmt_p(&r.wilcoxon),
                fmt_p(&r.mann_whitney)
            );
        }
        o.push_str("</div></section>\n");
    }

    fn boxplots(&self, o: &mut String) {
        o.push_str("<section id=\"boxplots\"><h2>Boxplots</h2>\n<p class=\"note\">Per metric and arm, over the runs: box = quartiles, bar = median, whiskers = the furthest runs within 1.5 IQR, circles = outliers, × = mean.</p>\n<div class=\"grid\">\n");
        for (i, r) in self.cmp.rows.iter().enumerate() {
            let samples: Vec<(String, RGBColor, Vec<f64>)> = (0..2)
                .map(|k| {
                    let xs = self.arms[k]
                        .runs
                        .iter()
                        .filter_map(|d| d.scalars.get(&r.name).copied())
                        .collect();
                    (ARM_NAMES[k].to_string(), ARM_COLOURS[k], xs)
                })
                .collect();
            let s = boxplot_svg(&samples, "");
            figure(
                o,
                &format!("box-{i}"),
                &format!("{} ({})", r.name, direction(r)),
                &s,
            );
        }
        o.push_str("</div></section>\n");
    }

    fn latency(&self, o: &mut String) {
        o.push_str("<section id=\"latency\"><h2>Wakeup latency CDF</h2>\n<p class=\"note\">From <code>sched_waking</code> to the switch that runs the task. Thick: all wakeups of the arm's runs pooled; faint: each run.</p>\n");
        match cdf_svg(&self.arms) {
            Some(s) => figure(o, "latency-cdf", "wakeup latency CDF per arm", &s),
            None => o.push_str("<p class=\"note\">No wakeups were recorded in any run.</p>\n"),
        }
        o.push_str("</section>\n");
    }

    fn cpu(&self, o: &mut String) {
        o.push_str("<section id=\"cpu\"><h2>Per-CPU utilization</h2>\n<p class=\"note\">Busy fraction of each CPU: each arm's mean over its runs, then every run.</p>\n");
        let mut rows: Vec<(String, Vec<f64>)> = vec![];
        for (k, a) in self.arms.iter().enumerate() {
            let ncpu = a.runs.iter().map(|r| r.cpu_busy.len()).max().unwrap_or(0);
            let mean: Vec<f64> = (0..ncpu)
                .map(|c| {
                    let xs: Vec<f64> = a
                        .runs
                        .iter()
                        .filter_map(|r| r.cpu_busy.get(c).copied())
                        .collect();
                    xs.iter().sum::<f64>() / xs.len().max(1) as f64
                })
                .collect();
            rows.push((format!("{} mean", ARM_NAMES[k]), mean));
        }
        // Every run too, unless that would make the SVG huge (many runs × CPUs).
        let nruns: usize = self.arms.iter().map(|a| a.runs.len()).sum();
        let ncpu = rows.iter().map(|r| r.1.len()).max().unwrap_or(0);
        let per_run = nruns <= MAX_HEATMAP_RUNS && nruns * ncpu <= MAX_HEATMAP_CELLS;
        if per_run {
            for (k, a) in self.arms.iter().enumerate() {
                for r in &a.runs {
                    rows.push((
                        format!("{} seed {}", ARM_NAMES[k], r.seed),
                        r.cpu_busy.clone(),
                    ));
                }
            }
        }
        figure(
            o,
            "cpu-heatmap",
            if per_run {
                "per-CPU busy fraction (CPU × arm and run)"
            } else {
                "per-CPU busy fraction (CPU × arm; too many runs to show each)"
            },
            &heatmap_svg(&rows),
        );
        o.push_str(
            "<p class=\"note\">0 <span class=\"cbar\"></span> 1 (fully busy)</p>\n</section>\n",
        );
    }

    fn migrations(&self, o: &mut String) {
        o.push_str("<section id=\"migrations\"><h2>Migrations by level</h2>\n<p class=\"note\">Task migrations per run, by the closest topology level the two CPUs share.</p>\n");
        self.counts(
            o,
            [
                "migrations",
                "level",
                "migrations",
                "migrations per run by level (mean ± std)",
            ],
            |r| &r.migrations,
        );
        o.push_str("</section>\n<section id=\"placement\"><h2>Placement reasons</h2>\n<p class=\"note\">Why each placement chose its CPU, per run.</p>\n");
        self.counts(
            o,
            [
                "placement",
                "reason",
                "placements",
                "placement reasons per run (mean ± std)",
            ],
            |r| &r.placement_reasons,
        );
        o.push_str("</section>\n");
    }

    /// Bars (mean ± std per run) and a table of one per-run count map, or a note
    /// when no run recorded any. `[id, key column, what is counted, plot title]`.
    fn counts(
        &self,
        o: &mut String,
        [id, key, what, title]: [&str; 4],
        get: impl Fn(&RunDetail) -> &BTreeMap<String, u64>,
    ) {
        let (cats, vals) = per_run_counts(&self.arms, get);
        if cats.is_empty() {
            let _ = writeln!(o, "<p class=\"note\">No {what} recorded.</p>");
            return;
        }
        figure(
            o,
            id,
            title,
            &bars_svg(&cats, &vals, &format!("{what} per run")),
        );
        o.push_str(&arm_legend());
        counts_table(o, key, &cats, &vals);
    }

    fn energy(&self, o: &mut String) {
        o.push_str("<section id=\"energy\"><h2>Energy</h2>\n");
        let has = self
            .arms
            .iter()
            .any(|a| a.runs.iter().any(|r| r.energy_total.is_some()));
        if !has {
            let note = self
                .arms
                .iter()
                .flat_map(|a| a.runs.iter().filter_map(|r| r.energy_note.clone()))
                .next()
                .unwrap_or_else(|| "no Energy Model".into());
            let _ = writeln!(
                o,
                "<p class=\"note\">Not computed: {}</p>\n</section>",
                esc(&note)
            );
            return;
        }
        let samples: Vec<(String, RGBColor, Vec<f64>)> = (0..2)
            .map(|k| {
                let xs = self.arms[k]
                    .runs
                    .iter()
                    .filter_map(|r| r.energy_total)
                    .collect();
                (ARM_NAMES[k].to_string(), ARM_COLOURS[k], xs)
            })
            .collect();
        figure(
            o,
            "energy",
            "energy per run (J, Energy Model)",
            &boxplot_svg(&samples, "joules"),
        );
        let ncl = self
            .arms
            .iter()
            .flat_map(|a| a.runs.iter().map(|r| r.energy_per_cluster.len()))
            .max()
            .unwrap_or(0);
        let mut vals: Vec<Vec<(f64, f64)>> = vec![];
        for a in &self.arms {
            let mut v = vec![];
            let tot: Vec<f64> = a.runs.iter().filter_map(|r| r.energy_total).collect();
            v.push(mean_std(&tot));
            for cl in 0..ncl {
                let xs: Vec<f64> = a
                    .runs
                    .iter()
                    .filter_map(|r| r.energy_per_cluster.get(cl).copied())
                    .collect();
                v.push(mean_std(&xs));
            }
            vals.push(v);
        }
        let mut cats = vec!["total (J)".to_string()];
        cats.extend((0..ncl).map(|c| format!("cluster {c} (J)")));
        counts_table(o, "energy", &cats, &vals);
        if let Some(n) = self
            .arms
            .iter()
            .flat_map(|a| a.runs.iter().filter_map(|r| r.energy_note.clone()))
            .next()
        {
            let _ = writeln!(o, "<p class=\"note\">{}</p>", esc(&n));
        }
        o.push_str("</section>\n");
    }
}

/// A sweep's report from its result records (any order), for the grid `axes`.
pub fn sweep_html(title: &str, axes: &[Axis], records: &[Record]) -> String {
    let mut o = String::new();
    head(&mut o, &format!("schedlab sweep: {title}"));
    // Group runs by their parameters, in grid order (first axis slowest).
    let key_of = |params: &BTreeMap<String, String>| -> Vec<String> {
        axes.iter()
            .map(|a| params.get(&a.key).cloned().unwrap_or_default())
            .collect()
    };
    let mut by_point: BTreeMap<Vec<usize>, (Vec<String>, Vec<&Record>)> = BTreeMap::new();
    for r in records {
        let vals = key_of(&r.params);
        let idx: Vec<usize> = axes
            .iter()
            .zip(&vals)
            .map(|(a, v)| a.values.iter().position(|x| x == v).unwrap_or(usize::MAX))
            .collect();
        by_point
            .entry(idx)
            .or_insert_with(|| (vals, vec![]))
            .1
            .push(r);
    }
    for (_, rs) in by_point.values_mut() {
        rs.sort_by_key(|r| r.seed);
    }
    let metrics: BTreeSet<&String> = records.iter().flat_map(|r| r.metrics.keys()).collect();
    let _ = writeln!(
        o,
        "<h1>schedlab sweep: <code>{}</code></h1>\n<p>{} points, {} runs, {} metrics. schedlab {}.</p>\n<table><tr><th class=\"l\">axis</th><th class=\"l\">values</th></tr>",
        esc(title),
        by_point.len(),
        records.len(),
        metrics.len(),
        esc(VERSION)
    );
    for a in axes {
        let _ = writeln!(
            o,
            "<tr><td class=\"l\"><code>{}</code></td><td class=\"l\"><code>{}</code></td></tr>",
            esc(&a.key),
            esc(&a.values.join(", "))
        );
    }
    o.push_str("</table>\n<nav><a href=\"#plots\">plots</a><a href=\"#points\">points</a></nav>\n");
    // Plots: every numeric metric along every axis.
    o.push_str("<section id=\"plots\"><h2>Metrics along each axis</h2>\n<p class=\"note\">Mean over the seeds, ±std bars; one line per combination of the other axes' values.</p>\n");
    let stat = |rs: &[&Record], m: &str| -> Option<(f64, f64)> {
        let xs: Vec<f64> = rs
            .iter()
            .filter_map(|r| r.metrics.get(m).copied())
            .collect();
        (!xs.is_empty()).then(|| mean_std(&xs))
    };
    let mut n_plot = 0;
    for (ai, axis) in axes.iter().enumerate() {
        let _ = writeln!(o, "<h3>along <code>{}</code></h3>", esc(&axis.key));
        let numeric: Option<Vec<f64>> = axis.values.iter().map(|v| v.parse::<f64>().ok()).collect();
        let numeric = numeric.filter(|v| v.iter().all(|x| x.is_finite()));
        let xpos: Vec<f64> = match &numeric {
            Some(v) => v.clone(),
            None => (0..axis.values.len()).map(|i| i as f64).collect(),
        };
        // Series: the other axes' value combinations present.
        let mut combos: BTreeMap<Vec<usize>, String> = BTreeMap::new();
        for (idx, (vals, _)) in &by_point {
            let mut other = idx.clone();
            other.remove(ai);
            let label = axes
                .iter()
                .zip(vals)
                .enumerate()
                .filter(|(j, _)| *j != ai)
                .map(|(_, (a, v))| format!("{}={v}", a.key))
                .collect::<Vec<_>>()
                .join(", ");
            combos.entry(other).or_insert(label);
        }
        if combos.len() > 1 {
            let items: Vec<(String, RGBColor)> = combos
                .values()
                .enumerate()
                .map(|(j, l)| (l.clone(), PALETTE[j % PALETTE.len()]))
                .collect();
            o.push_str(&legend_html(&items));
        }
        o.push_str("<div class=\"grid\">\n");
        for m in &metrics {
            let series: Vec<Series> = combos
                .iter()
                .map(|(other, label)| {
                    let pts = (0..axis.values.len())
                        .map(|vi| {
                            let mut idx = other.clone();
                            idx.insert(ai, vi);
                            by_point.get(&idx).and_then(|(_, rs)| stat(rs, m))
                        })
                        .collect();
                    (label.clone(), pts)
                })
                .collect();
            if series.iter().all(|s| s.1.iter().all(Option::is_none)) {
                continue;
            }
            let s = lines_svg(&xpos, &axis.values, &series, &axis.key);
            figure(
                &mut o,
                &format!("sweep-{n_plot}"),
                &format!("{m} along {}", axis.key),
                &s,
            );
            n_plot += 1;
        }
        o.push_str("</div>\n");
    }
    o.push_str("</section>\n<section id=\"points\"><h2>Points</h2>\n<div class=\"cards\">\n");
    for (vals, rs) in by_point.values() {
        let label = axes
            .iter()
            .zip(vals)
            .map(|(a, v)| format!("{}={v}", a.key))
            .collect::<Vec<_>>()
            .join(", ");
        let seeds: Vec<String> = rs.iter().map(|r| r.seed.to_string()).collect();
        let _ = writeln!(
            o,
            "<div class=\"card\"><h3><code>{}</code></h3><div class=\"note\">seeds {}</div>\n<table><tr><th class=\"l\">metric</th><th>mean ± std</th><th>n</th></tr>",
            esc(&label),
            esc(&seeds.join(" "))
        );
        for m in &metrics {
            let xs: Vec<f64> = rs
                .iter()
                .filter_map(|r| r.metrics.get(*m).copied())
                .collect();
            if xs.is_empty() {
                continue;
            }
            let (mean, std) = mean_std(&xs);
            let _ = writeln!(
                o,
                "<tr><td class=\"l\"><code>{}</code></td><td>{} ± {}</td><td>{}</td></tr>",
                esc(m),
                fmt_num(mean),
                fmt_num(std),
                xs.len()
            );
        }
        o.push_str("</table></div>\n");
    }
    o.push_str("</div></section>\n");
    footer(&mut o);
    o
}

/// One guest boot in an oracle report: its domain comparison and its cases.
pub struct OracleSection<'a> {
    pub heading: String,
    pub domains: &'a super::oracle::domains::DomainComparison,
    pub cases: Vec<&'a super::oracle::CaseOutcome>,
}

/// `schedlab oracle`'s self-contained HTML page: per guest boot, the sched-domain
/// comparison, then each case's decision statistics real beside simulated, with the
/// distance and the verdict (matches green, differences red).
pub fn oracle_html(title: &str, intro: &str, sections: &[OracleSection<'_>]) -> String {
    use super::oracle::decisions::Verdict;
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
            let num = |v: Option<f64>| v.map_or("–".to_string(), short);
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Doc;
    use crate::experiment::compare::{compare, compare_detailed};
    use crate::experiment::Overrides;
    use crate::metrics::LatencyHist;
    use std::path::Path;

    fn scenario(machine: &str, arm: &ArmSpec) -> Scenario {
        let text = format!(
            "[machine]\npreset = \"{machine}\"\n[run]\nseed = 5\nnoise = 0.05\n[workload]\nkind = \"hackbench\"\ngroups = 1\nfds = 4\nloops = 20\n"
        );
        let doc = Doc::parse(&text, Path::new("tiny.toml")).unwrap();
        let ov = Overrides {
            sets: arm.sets.clone(),
            features: (!arm.features.is_empty()).then(|| arm.features.join(",")),
            seed: None,
        };
        Scenario::from_doc(doc, &ov).unwrap()
    }

    fn report(machine: &str, jobs: usize) -> CompareReport {
        let (a, b) = (ArmSpec::parse(""), ArmSpec::parse("SMT_BALANCE"));
        let (sa, sb) = (scenario(machine, &a), scenario(machine, &b));
        let (cmp, det) = compare_detailed(&sa, &sb, &a, &b, 4, jobs, &|_| {}).unwrap();
        CompareReport::new(cmp, &sa, &sb, det)
    }

    fn count(h: &str, pat: &str) -> usize {
        h.matches(pat).count()
    }

    #[test]
    fn every_section_and_plot_is_present() {
        let r = report("juno-r0", 2);
        let h = r.html();
        let rows = r.cmp.rows.len();
        assert!(rows > 5, "{rows} metrics");
        for id in [
            "setup",
            "summary",
            "tables",
            "boxplots",
            "latency",
            "cpu",
            "migrations",
            "placement",
            "energy",
        ] {
            assert!(
                h.contains(&format!("<section id=\"{id}\">")),
                "section {id}"
            );
        }
        // One boxplot per metric, the CDF, the heatmap, two bar charts, energy.
        for i in 0..rows {
            assert!(h.contains(&format!("data-plot=\"box-{i}\"")), "box-{i}");
        }
        for p in [
            "latency-cdf",
            "cpu-heatmap",
            "migrations",
            "placement",
            "energy",
        ] {
            assert!(h.contains(&format!("data-plot=\"{p}\"")), "plot {p}");
        }
        assert_eq!(count(&h, "class=\"plot\""), rows + 5);
        assert_eq!(count(&h, "<svg "), rows + 5);
        assert_eq!(count(&h, "</svg>"), rows + 5);
        assert!(!h.contains("plot failed"));
        assert_eq!(r.arms[0].runs[0].cpu_busy.len(), r.arms[0].nr_cpus);
        // Setup: machine, preset, seeds, version.
        assert!(h.contains("juno-r0 (6 CPUs)"));
        assert!(h.contains("<code>5 6 7 8</code>"));
        assert!(h.contains(&format!("schedlab {VERSION}")));
        assert!(
            h.contains("<mark>SMT_BALANCE</mark>") && h.contains("<mark>NO_SMT_BALANCE</mark>")
        );
        // Self-contained: no script, no external reference (only the SVG namespace).
        assert!(!h.contains("<script") && !h.contains("src=") && !h.contains("<link"));
        assert_eq!(
            count(&h, "http"),
            count(&h, "xmlns=\"http://www.w3.org/2000/svg\"")
        );
        // The tables carry the text output's numbers, row by row.
        let text = r.cmp.text();
        for row in &r.cmp.rows {
            for (k, a, b) in row.stat_rows("%") {
                let cells = format!(
                    "<td class=\"l\">{k}</td><td>{}</td><td>{}</td><td>{}</td>",
                    fmt_num(a),
                    fmt_num(b),
                    pct(a, b)
                );
                assert!(h.contains(&cells), "{}: {cells}", row.name);
                assert!(text.contains(&fmt_num(a)) && text.contains(&pct(a, b)));
            }
        }
        // Energy is present on juno-r0 (it has an Energy Model).
        assert!(r.arms[0].runs.iter().all(|d| d.energy_total.is_some()));
        assert!(h.contains("total (J)"));
    }

    #[test]
    fn without_energy_model_the_section_says_why_and_has_no_plot() {
        let r = report("xeon-e5-40", 1);
        let h = r.html();
        assert!(r.arms[0].runs.iter().all(|d| d.energy_total.is_none()));
        assert!(!h.contains("data-plot=\"energy\""));
        assert!(h.contains("<p class=\"note\">Not computed: "));
        assert_eq!(count(&h, "class=\"plot\""), r.cmp.rows.len() + 4);
    }

    #[test]
    fn same_runs_give_the_same_bytes_and_compare_is_unchanged() {
        let one = report("juno-r0", 1);
        let two = report("juno-r0", 2);
        assert_eq!(one.html(), two.html());
        assert_eq!(one.html(), one.html());
        // compare() is compare_detailed() without the details.
        let (a, b) = (ArmSpec::parse(""), ArmSpec::parse("SMT_BALANCE"));
        let (sa, sb) = (scenario("juno-r0", &a), scenario("juno-r0", &b));
        let c = compare(&sa, &sb, &a, &b, 4, 2, &|_| {}).unwrap();
        assert_eq!(
            serde_json::to_string(&c).unwrap(),
            serde_json::to_string(&one.cmp).unwrap()
        );
        // Details are per run, in seed order, and agree with the comparison.
        assert_eq!(
            one.arms[1].runs.iter().map(|d| d.seed).collect::<Vec<_>>(),
            c.seeds
        );
        let t = c.rows.iter().find(|r| r.name == "tool.time_s").unwrap();
        let xs: Vec<f64> = one.arms[0]
            .runs
            .iter()
            .map(|d| d.scalars["tool.time_s"])
            .collect();
        assert_eq!(Describe::of(&xs), t.a);
    }

    #[test]
    fn user_strings_are_escaped() {
        let mut r = report("xeon-e5-40", 2);
        r.cmp.scenario = "<script>alert('x')</script>&".into();
        r.arms[1].spec.spec = "\"><img src=x onerror=alert(1)>".into();
        r.arms[0].machine = "m<1>".into();
        let h = r.html();
        assert!(!h.contains("<script") && !h.contains("<img"));
        assert!(h.contains("&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;&amp;"));
        assert!(h.contains("&quot;&gt;&lt;img src=x onerror=alert(1)&gt;"));
        assert!(h.contains("m&lt;1&gt; (40 CPUs)"));
        assert_eq!(esc("a&b<c>\"'"), "a&amp;b&lt;c&gt;&quot;&#39;");
    }

    #[test]
    fn heatmap_shows_every_run_unless_there_are_too_many() {
        let mut r = report("xeon-e5-40", 2);
        let h = r.html();
        assert!(h.contains("CPU × arm and run"));
        // Row labels of the heatmap, one per run and arm (seeds 5..=8).
        assert!(h.contains(">\nA seed 5\n<") && h.contains(">\nB seed 8\n<"));
        for a in r.arms.iter_mut() {
            let one = a.runs[0].clone();
            a.runs = (0..41)
                .map(|i| RunDetail {
                    seed: 100 + i,
                    ..one.clone()
                })
                .collect();
        }
        let h = r.html();
        assert!(h.contains("too many runs to show each"));
        assert!(!h.contains(">\nA seed 100\n<") && h.contains(">\nA mean\n<"));
    }

    fn rec(point: usize, m: &str, g: &str, seed: u64, v: f64) -> Record {
        Record {
            point,
            params: [
                ("machine.preset".to_string(), m.to_string()),
                ("workload.groups".to_string(), g.to_string()),
            ]
            .into_iter()
            .collect(),
            seed,
            metrics: [("tool.time_s".to_string(), v)].into_iter().collect(),
            id: String::new(),
        }
    }

    #[test]
    fn sweep_report_has_a_table_per_point_and_a_plot_per_metric_and_axis() {
        let axes = vec![
            Axis::parse("machine.preset=juno-r0,<b>").unwrap(),
            Axis::parse("workload.groups=1,4").unwrap(),
        ];
        let mut recs = vec![];
        let mut p = 0;
        for m in ["juno-r0", "<b>"] {
            for g in ["1", "4"] {
                let base = if m == "juno-r0" { 1.0 } else { 10.0 } * g.parse::<f64>().unwrap();
                recs.push(rec(p, m, g, 1, base));
                recs.push(rec(p, m, g, 2, base + 2.0));
                p += 1;
            }
        }
        let h = sweep_html("t<1>.toml", &axes, &recs);
        // Four points; juno-r0 groups=1 ran 1.0 and 3.0: mean 2, sample std √2.
        assert_eq!(count(&h, "<div class=\"card\">"), 4);
        assert!(h.contains("<td>2.000000 ± 1.414214</td><td>2</td>"));
        assert!(h.contains("<td>41.000000 ± 1.414214</td><td>2</td>"));
        // One metric along two axes: two plots, each an SVG.
        assert_eq!(count(&h, "class=\"plot\""), 2);
        assert_eq!(count(&h, "<svg "), 2);
        assert!(h.contains("tool.time_s along workload.groups"));
        // Legends name the other axis' values (escaped).
        assert!(h.contains("machine.preset=&lt;b&gt;"));
        assert!(!h.contains("<b>") && h.contains("t&lt;1&gt;.toml"));
        // A resumed sweep's file may hold the runs in any order: same report.
        let mut shuffled = recs.clone();
        shuffled.reverse();
        assert_eq!(sweep_html("t<1>.toml", &axes, &shuffled), h);
    }

    #[test]
    fn pooled_cdf_is_the_count_weighted_mixture() {
        let run = |count: u64, cdf: Vec<(u64, f64)>| RunDetail {
            seed: 0,
            scalars: BTreeMap::new(),
            cpu_busy: vec![],
            wakeup_latency_count: count,
            wakeup_latency_cdf: cdf,
            migrations: BTreeMap::new(),
            placement_reasons: BTreeMap::new(),
            energy_total: None,
            energy_per_cluster: vec![],
            energy_note: None,
        };
        let runs = vec![
            run(2, vec![(10, 0.5), (20, 1.0)]),
            run(6, vec![(15, 0.5), (30, 1.0)]),
        ];
        // At 10: (2×0.5 + 6×0) / 8; at 15: (1 + 3) / 8; at 20: (2 + 3) / 8; at 30: 1.
        assert_eq!(
            pooled_cdf(&runs, 100),
            vec![(10, 0.125), (15, 0.5), (20, 0.625), (30, 1.0)]
        );
        let thin = pooled_cdf(&runs, 2);
        assert_eq!(thin, vec![(10, 0.125), (30, 1.0)]);
        assert!(pooled_cdf(&[run(0, vec![])], 10).is_empty());
    }

    #[test]
    fn histogram_cdf_points_end_at_the_maximum() {
        let mut h = LatencyHist::default();
        for v in 1..=1000u64 {
            h.record(v);
        }
        let all = h.cdf_points(10_000);
        assert_eq!(all.len(), 1000);
        assert_eq!(all[0], (1, 0.001));
        assert_eq!(all[499], (500, 0.5));
        let c = h.cdf_points(50);
        assert_eq!(c.len(), 50);
        assert_eq!(*c.last().unwrap(), (1000, 1.0));
        assert!(c.windows(2).all(|w| w[0].0 < w[1].0 && w[0].1 < w[1].1));
        assert!(LatencyHist::default().cdf_points(10).is_empty());
    }

    #[test]
    fn box_stats_by_hand() {
        let b = BoxStats::of(&[4.0, 1.0, 100.0, 3.0, 2.0]).unwrap();
        // numpy-linear quartiles of 1 2 3 4 100: 2, 3, 4; fences −1 and 7.
        assert_eq!((b.q1, b.median, b.q3), (2.0, 3.0, 4.0));
        assert_eq!((b.whisker_lo, b.whisker_hi), (1.0, 4.0));
        assert_eq!(b.outliers, vec![100.0]);
        assert_eq!(b.mean, 22.0);
        assert!(BoxStats::of(&[]).is_none());
    }

    #[test]
    fn colour_map_and_ticks() {
        assert_eq!(colour_map(0.0), RGBColor(68, 1, 84));
        assert_eq!(colour_map(0.5), RGBColor(33, 145, 140));
        assert_eq!(colour_map(1.0), RGBColor(253, 231, 37));
        assert_eq!(colour_map(7.0), colour_map(1.0));
        assert_eq!(tick(0.0), "0");
        assert_eq!(tick(2500.0), "2500");
        assert_eq!(tick(0.125), "0.125");
        assert_eq!(tick(520000.0), "520000");
        assert_eq!(tick(5.2e6), "5.2e6");
        assert_eq!(tick(-0.0005), "-5.0e-4");
    }
}
