//! The HTML pages: a comparison's report, a sweep's report and the
//! reproduction's tables, each one self-contained file (the oracle's page is in
//! [`super::oracle`], built from the same head and footer).
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
//!
//! Every page is built from the same pieces: the page head with the inline CSS,
//! the footer with the version, `esc` for every string that came from a user or a
//! file, figures around the plots of [`super::plot`], and the numbers of
//! [`super::text`]. The pages read results (a [`CompareReport`], sweep records, a
//! [`Reproduction`]); they compute nothing the text output does not print too.

use super::plot::*;
use super::summary::{arm_label, direction};
use super::text::{num, p_value, pct, Num};
use super::{ArmInfo, CompareReport, VERSION};
use crate::experiment::compare::{Comparison, MeanKind, RunDetail};
use crate::experiment::reproduce::Reproduction;
use crate::experiment::seed_tables::seed_title;
use crate::experiment::sweep::{Axis, Record};
use crate::experiment::Scenario;
use plotters::prelude::RGBColor;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

fn num_stat(x: f64) -> String {
    num(x, Num::Stat)
}

fn num_short(x: f64) -> String {
    num(x, Num::Short)
}

/// HTML-escape text and attribute values (`&`, `<`, `>`, `"` and `'`).
pub(crate) fn esc(s: &str) -> String {
    escape(s, true)
}

/// HTML-escape `s`; `apostrophe` also escapes `'` (the reproduction page, written
/// before the other pages, leaves it as it is and its bytes are kept).
pub(crate) fn escape(s: &str, apostrophe: bool) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' if apostrophe => o.push_str("&#39;"),
            c => o.push(c),
        }
    }
    o
}

/// A figure wrapping a plot, marked `class="plot"` with its name.
pub(crate) fn figure(out: &mut String, name: &str, caption: &str, svg: &str) {
    let _ = writeln!(
        out,
        "<figure class=\"plot\" data-plot=\"{}\"><figcaption>{}</figcaption>\n{svg}</figure>",
        esc(name),
        esc(caption)
    );
}

/// A colour key in HTML (outside the plots, so it never hides data).
pub(crate) fn legend_html(items: &[(String, RGBColor)]) -> String {
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

pub(crate) fn arm_legend() -> String {
    legend_html(&[
        ("A".to_string(), ARM_COLOURS[0]),
        ("B".to_string(), ARM_COLOURS[1]),
    ])
}

const CSS: &str = "body{font-family:-apple-system,'Segoe UI',Helvetica,Arial,sans-serif;margin:0 auto;max-width:1160px;padding:12px 20px;color:#222;background:#fff}
h1{font-size:22px;margin:8px 0}h2{font-size:18px;border-bottom:1px solid #ccc;padding-bottom:3px;margin-top:28px}
h3{font-size:14px;margin:4px 0}
table{border-collapse:collapse;font-size:12.5px;margin:6px 0}
th,td{border:1px solid #d4d4d4;padding:2px 7px;text-align:right;vertical-align:top}
th{background:#f2f4f7}td.l,th.l{text-align:left}
td.better{background:#e3f4e3}td.worse{background:#fbe3e1}p.verdict{font-size:1.1em;border-left:4px solid #888;padding-left:.6em}
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

pub(super) fn head(out: &mut String, title: &str) {
    let _ = writeln!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>{}</title>\n<style>\n{CSS}</style>\n</head>\n<body>",
        esc(title)
    );
}

pub(super) fn footer(out: &mut String) {
    let _ = writeln!(
        out,
        "<footer>Generated by schedlab {}. Self-contained: inline CSS and SVG, no scripts, no network.</footer>\n</body>\n</html>",
        esc(VERSION)
    );
}

fn p_cell(t: &Option<crate::stats::TestResult>) -> String {
    let text = p_value(t);
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
            num_short(a.0),
            num_short(a.1),
            num_short(b.0),
            num_short(b.1),
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
        let _ = writeln!(
            o,
            "<p class=\"verdict\"><b>{}</b></p>",
            esc(&super::summary::verdict(c))
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
        o.push_str("<section id=\"summary\"><h2>Summary</h2>\n<p class=\"note\">Centre: amean, or hmean for rates (mmtests). Δ = (B − A) / A. Green: B better by the metric's direction, red: worse, both only where the paired change is an effect (its 95 % interval excludes 0 and it is at least 1 %, in bold); the rest is neutral. The rank tests are shown for reference. The primary metric first, then by group.</p>\n<table><tr><th class=\"l\">metric</th><th class=\"l\">group</th><th class=\"l\">direction</th><th>centre</th><th>A</th><th>B</th><th>Δ</th><th>wilcoxon (paired)</th><th>mann-whitney</th></tr>\n");
        for i in self.cmp.report_order() {
            let r = &self.cmp.rows[i];
            let cls = match (r.effect().is_effect(), r.b_better()) {
                (true, Some(true)) => " class=\"better\"",
                (true, Some(false)) => " class=\"worse\"",
                _ => "",
            };
            let mk = match r.mean_kind {
                MeanKind::Amean => "amean",
                MeanKind::Hmean => "hmean",
            };
            let _ = writeln!(
                o,
                "<tr><td class=\"l\"><code>{}</code></td><td class=\"l\">{}</td><td class=\"l\">{}</td><td>{mk}</td><td>{}</td><td>{}</td><td{cls}>{}</td>{}{}</tr>",
                esc(&r.name),
                crate::experiment::compare::Group::of(&r.name).name(),
                direction(r.better),
                num_stat(r.a_centre),
                num_stat(r.b_centre),
                pct(r.a_centre, r.b_centre),
                p_cell(&r.wilcoxon),
                p_cell(&r.mann_whitney)
            );
        }
        o.push_str("</table></section>\n");
    }

    fn tables(&self, o: &mut String) {
        o.push_str("<section id=\"tables\"><h2>Tables</h2>\n<p class=\"note\">The same tables as the text output, in the seeds' layout.</p>\n<div class=\"cards\">\n");
        for i in self.cmp.report_order() {
            let r = &self.cmp.rows[i];
            let _ = writeln!(
                o,
                "<div class=\"card\"><h3><code>{}</code> ({})</h3>\n<table><tr><th></th><th>A</th><th>B</th><th>DELTA</th></tr>",
                esc(&r.name),
                direction(r.better)
            );
            for (k, a, b) in r.stat_rows("%") {
                let _ = writeln!(
                    o,
                    "<tr><td class=\"l\">{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                    esc(&k),
                    num_stat(a),
                    num_stat(b),
                    pct(a, b)
                );
            }
            let _ = writeln!(
                o,
                "</table><div class=\"note\">{}</div></div>",
                esc(&super::summary::row_note(r))
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
                &format!("{} ({})", r.name, direction(r.better)),
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

/// A sweep's points: grid indices → (axis values, the point's records by seed).
type Points<'a> = BTreeMap<Vec<usize>, (Vec<String>, Vec<&'a Record>)>;

/// Group runs by their parameters, in grid order (first axis slowest).
fn sweep_points<'a>(axes: &[Axis], records: &'a [Record]) -> Points<'a> {
    let key_of = |params: &BTreeMap<String, String>| -> Vec<String> {
        axes.iter()
            .map(|a| params.get(&a.key).cloned().unwrap_or_default())
            .collect()
    };
    let mut by_point: Points<'a> = BTreeMap::new();
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
    by_point
}

/// A sweep's report from its result records (any order), for the grid `axes`.
pub fn sweep_html(title: &str, axes: &[Axis], records: &[Record]) -> String {
    let mut o = String::new();
    head(&mut o, &format!("schedlab sweep: {title}"));
    let by_point = sweep_points(axes, records);
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
    let mut n_plot = 0;
    for ai in 0..axes.len() {
        sweep_axis_plots(&mut o, axes, ai, &by_point, &metrics, &mut n_plot);
    }
    o.push_str("</section>\n<section id=\"points\"><h2>Points</h2>\n<div class=\"cards\">\n");
    for (vals, rs) in by_point.values() {
        sweep_card(&mut o, axes, vals, rs, &metrics);
    }
    o.push_str("</div></section>\n");
    footer(&mut o);
    o
}

/// Every metric along axis `ai`: one line per combination of the other axes' values.
fn sweep_axis_plots(
    o: &mut String,
    axes: &[Axis],
    ai: usize,
    by_point: &Points<'_>,
    metrics: &BTreeSet<&String>,
    n_plot: &mut usize,
) {
    let axis = &axes[ai];
    let stat = |rs: &[&Record], m: &str| -> Option<(f64, f64)> {
        let xs: Vec<f64> = rs
            .iter()
            .filter_map(|r| r.metrics.get(m).copied())
            .collect();
        (!xs.is_empty()).then(|| mean_std(&xs))
    };
    let _ = writeln!(o, "<h3>along <code>{}</code></h3>", esc(&axis.key));
    let numeric: Option<Vec<f64>> = axis.values.iter().map(|v| v.parse::<f64>().ok()).collect();
    let numeric = numeric.filter(|v| v.iter().all(|x| x.is_finite()));
    let xpos: Vec<f64> = match &numeric {
        Some(v) => v.clone(),
        None => (0..axis.values.len()).map(|i| i as f64).collect(),
    };
    // Series: the other axes' value combinations present.
    let mut combos: BTreeMap<Vec<usize>, String> = BTreeMap::new();
    for (idx, (vals, _)) in by_point {
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
    for m in metrics {
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
            o,
            &format!("sweep-{n_plot}"),
            &format!("{m} along {}", axis.key),
            &s,
        );
        *n_plot += 1;
    }
    o.push_str("</div>\n");
}

/// One point's card: its parameters, seeds and each metric's mean ± std.
fn sweep_card(
    o: &mut String,
    axes: &[Axis],
    vals: &[String],
    rs: &[&Record],
    metrics: &BTreeSet<&String>,
) {
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
    for m in metrics {
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
            num_stat(mean),
            num_stat(std),
            xs.len()
        );
    }
    o.push_str("</table></div>\n");
}

impl Reproduction {
    /// A self-contained HTML page with the same tables.
    pub fn html(&self) -> String {
        // This page leaves `'` unescaped (its bytes predate the other pages).
        let esc = |x: &str| escape(x, false);
        let mut s = String::from(
            "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>schedlab reproduce</title>\n<style>body{font-family:sans-serif;margin:2em}table{border-collapse:collapse;margin:0.5em 0 1.5em}td,th{border:1px solid #bbb;padding:2px 6px;text-align:right}td:first-child,td:last-child{text-align:left}.MISMATCH{background:#fdd}.match{background:#dfd}.direction{background:#ffd}.agree{background:#efe}.inconclusive{background:#eee}</style>\n</head><body>\n",
        );
        let _ = writeln!(
            s,
            "<h1>schedlab {} reproduce</h1><p>{} paired runs per arm{}, noise {}. A = the seed's baseline, B = the seed's feature; Δ = (B − A) / A.</p>",
            esc(&self.version),
            self.runs,
            if self.quick { " (quick mode)" } else { "" },
            self.noise
        );
        let _ = writeln!(
            s,
            "<p><b>{}</b></p>",
            esc(&crate::report::summary::reproduction_verdict(self))
        );
        for &seed in &self.seeds {
            let _ = writeln!(s, "<h2>{}</h2>", esc(&seed_title(seed)));
            for t in self.tables.iter().filter(|t| t.seed == seed) {
                let _ = writeln!(
                    s,
                    "<h3>{}</h3><p>{}</p><table><tr>",
                    esc(&t.title),
                    esc(&t.setup)
                );
                for c in &t.columns {
                    let _ = write!(s, "<th>{}</th>", esc(c));
                }
                s.push_str("</tr>\n");
                for row in &t.cells {
                    let class = row
                        .last()
                        .map(|v| v.split(' ').next().unwrap_or(""))
                        .unwrap_or("");
                    let _ = write!(s, "<tr class=\"{}\">", esc(class));
                    for c in row {
                        let _ = write!(s, "<td>{}</td>", esc(c));
                    }
                    s.push_str("</tr>\n");
                }
                s.push_str("</table>\n");
            }
            for h in self.headlines.iter().filter(|h| h.seed == seed) {
                let _ = writeln!(
                    s,
                    "<p>[{}] {}: {}</p>",
                    if h.holds { "ok" } else { "FAILS" },
                    esc(&h.claim),
                    esc(&h.detail)
                );
            }
        }
        s.push_str("</body></html>\n");
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Doc;
    use crate::experiment::compare::compare_detailed;
    use crate::experiment::compare::ArmSpec;
    use crate::experiment::Overrides;
    use crate::metrics::LatencyHist;
    use crate::stats::Describe;
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
            native_scheduler: false,
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
                    num_stat(a),
                    num_stat(b),
                    pct(a, b)
                );
                assert!(h.contains(&cells), "{}: {cells}", row.name);
                assert!(text.contains(&num_stat(a)) && text.contains(&pct(a, b)));
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
        let (c, _) = compare_detailed(&sa, &sb, &a, &b, 4, 2, &|_| {}).unwrap();
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
    }
}
