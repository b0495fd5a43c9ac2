//! The text of `schedlab validate host` and `schedlab calibrate host`.
//!
//! Calibration measures primitive costs on the host ([`crate::experiment::calibrate`])
//! and derives cost-table fields from them; its report lists the primitives'
//! spreads, then each field beside its default.
//! Validation runs the same benchmarks on the host's kernel and in simulation
//! ([`crate::experiment::validate`]) and keeps the spreads (median, minimum,
//! maximum) of both, and the statistics of real and simulated ftrace traces. This
//! module prints them: the benchmark table with the error of each simulated median,
//! and the trace table with one row per statistic and per CPU. The numbers are
//! written in [`Num::Spread`] style; nothing here runs or measures anything.

use super::text::{num, Num};
use crate::experiment::calibrate::Calibration;
use crate::experiment::validate::{Spread, TraceCompare, Validation};
use crate::metrics::ftrace_stats::TraceStats;
use std::fmt::Write as _;

impl Spread {
    /// `median [min–max]`.
    pub fn text(&self) -> String {
        format!(
            "{} [{}–{}]",
            num(self.median, Num::Spread),
            num(self.min, Num::Spread),
            num(self.max, Num::Spread)
        )
    }
}

impl Validation {
    /// The table: benchmark, size, metric, real median [min–max], simulated with the
    /// default costs and its error, and (with measured costs) simulated with those
    /// and its error.
    pub fn text(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(
            s,
            "validate {}: real kernel vs simulation of {} ({} CPUs, {} run{} each, simulated noise {}{})\n",
            self.machine,
            self.kernel,
            self.nr_cpus,
            self.runs,
            if self.runs == 1 { "" } else { "s" },
            self.noise,
            if self.quick { ", quick sizes" } else { "" }
        );
        let measured = self.measured_costs.is_some();
        let mut head = vec![
            "benchmark",
            "size",
            "metric",
            "real median [min–max]",
            "sim, default costs",
            "error",
        ];
        if measured {
            head.extend(["sim, measured costs", "error"]);
        }
        let ncol = head.len();
        let pct = |e: Option<f64>| {
            e.map(|e| format!("{e:+.1}%"))
                .unwrap_or_else(|| "n/a".into())
        };
        let mut cells: Vec<Vec<String>> = vec![head.iter().map(|h| h.to_string()).collect()];
        for r in &self.rows {
            let name = if measured && !r.held_out {
                format!("{} *", r.benchmark)
            } else {
                r.benchmark.clone()
            };
            let mut c = vec![name, r.size.clone(), r.metric.clone()];
            match &r.skipped {
                Some(why) => c.push(format!("skipped: {why}")),
                None => {
                    c.push(r.real.map(|x| x.text()).unwrap_or_default());
                    c.push(r.sim.map(|x| x.text()).unwrap_or_default());
                    c.push(pct(r.error_pct));
                    if measured {
                        c.push(r.sim_measured.map(|x| x.text()).unwrap_or_default());
                        c.push(pct(r.error_measured_pct));
                    }
                }
            }
            cells.push(c);
        }
        let mut w = vec![0usize; ncol];
        for c in &cells {
            for (i, x) in c.iter().enumerate() {
                if i == 3 && x.starts_with("skipped") {
                    continue;
                }
                w[i] = w[i].max(x.chars().count());
            }
        }
        for (n, c) in cells.iter().enumerate() {
            let mut line = String::new();
            for (i, x) in c.iter().enumerate() {
                let pad = w[i].saturating_sub(x.chars().count());
                if x.starts_with("skipped") {
                    line.push_str(x);
                } else if i >= 3 {
                    line.push_str(&" ".repeat(pad));
                    line.push_str(x);
                } else {
                    line.push_str(x);
                    line.push_str(&" ".repeat(pad));
                }
                line.push_str("  ");
            }
            let _ = writeln!(s, "{}", line.trim_end());
            if n == 0 {
                let total: usize = w.iter().sum::<usize>() + 2 * (ncol - 1);
                let _ = writeln!(s, "{}", "-".repeat(total));
            }
        }
        let _ = writeln!(
            s,
            "\nerror = (simulated − real) / real of the medians. The simulated machine is this host's\n\
             sysfs topology; \"default costs\" = the default cost table of its architecture (nothing fitted)."
        );
        if let Some(src) = &self.measured_costs {
            let _ = writeln!(
                s,
                "\"measured costs\" = the same topology with the costs of `schedlab calibrate host`\n\
                 (micro-benchmarks of primitives; these benchmarks measured nothing): {src}\n\
                 * not held out: the calibration's pipe ping-pongs are this benchmark's own operations."
            );
        }
        if let Some(t) = &self.trace {
            s.push_str(&t.text());
        }
        s
    }
}

/// Rows of the trace table: name and value of one trace (besides per-CPU busy).
type StatFn = fn(&TraceStats) -> f64;
const STATS: [(&str, StatFn); 8] = [
    ("context switches", |t| t.context_switches as f64),
    ("wakeups (sched_waking)", |t| t.wakeups as f64),
    ("migrations", |t| t.migrations as f64),
    ("wakeup latency p50 (us)", |t| t.latency_p50_ns as f64 / 1e3),
    ("wakeup latency p90 (us)", |t| t.latency_p90_ns as f64 / 1e3),
    ("wakeup latency p99 (us)", |t| t.latency_p99_ns as f64 / 1e3),
    ("wakeup latency mean (us)", |t| t.latency_mean_ns / 1e3),
    ("window (ms)", |t| {
        t.window_ns.1.saturating_sub(t.window_ns.0) as f64 / 1e6
    }),
];

/// `median [min–max]` of `f` over `ts` (`-` when empty).
fn stat_cell(ts: &[TraceStats], f: &dyn Fn(&TraceStats) -> Option<f64>) -> String {
    let xs: Vec<f64> = ts.iter().filter_map(f).collect();
    match Spread::of(&xs) {
        None => "-".into(),
        Some(sp) if sp.n == 1 => num(sp.median, Num::Spread),
        Some(sp) => sp.text(),
    }
}

impl TraceCompare {
    pub fn text(&self) -> String {
        let mut s = String::new();
        let n = self.real.len().max(self.sim.len());
        let _ = writeln!(
            s,
            "\nftrace statistics: {} {}, median [min–max] over {n} run{} (real: tracefs, comm `hackbench`;\nsimulated: the run's ftrace text)\n",
            self.benchmark,
            self.size,
            if n == 1 { "" } else { "s" }
        );
        if let Some(why) = &self.skipped {
            let _ = writeln!(s, "real trace skipped: {why}");
        }
        let lost: u64 = self.real_lost_events.iter().sum();
        if lost > 0 {
            let _ = writeln!(
                s,
                "warning: the real traces lost {lost} events (buffer overflow)"
            );
        }
        let mut cols: Vec<(&str, &[TraceStats])> =
            vec![("real", &self.real), ("sim, default costs", &self.sim)];
        if !self.sim_measured.is_empty() {
            cols.push(("sim, measured costs", &self.sim_measured));
        }
        let mut rows: Vec<Vec<String>> = Vec::new();
        let mut head = vec!["statistic".to_string()];
        head.extend(cols.iter().map(|c| c.0.to_string()));
        rows.push(head);
        for (name, f) in STATS {
            let mut r = vec![name.to_string()];
            r.extend(cols.iter().map(|(_, ts)| stat_cell(ts, &|t| Some(f(t)))));
            rows.push(r);
        }
        let ncpu = cols
            .iter()
            .flat_map(|(_, ts)| ts.iter().map(|t| t.busy_ns.len()))
            .max()
            .unwrap_or(0);
        for cpu in 0..ncpu {
            let mut r = vec![format!("CPU {cpu} busy (%)")];
            r.extend(
                cols.iter().map(|(_, ts)| {
                    stat_cell(ts, &|t| t.busy_fraction().get(cpu).map(|b| b * 100.0))
                }),
            );
            rows.push(r);
        }
        let ncol = rows[0].len();
        let mut w = vec![0usize; ncol];
        for r in &rows {
            for (i, x) in r.iter().enumerate() {
                w[i] = w[i].max(x.chars().count());
            }
        }
        for r in &rows {
            let mut line = format!("{:<w0$}", r[0], w0 = w[0]);
            for (i, x) in r.iter().enumerate().skip(1) {
                let pad = w[i].saturating_sub(x.chars().count());
                line.push_str("  ");
                line.push_str(&" ".repeat(pad));
                line.push_str(x);
            }
            let _ = writeln!(s, "{line}");
        }
        s
    }
}

impl Calibration {
    /// The report: primitives, then the cost fields with their defaults.
    pub fn text(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(
            s,
            "calibrate host: primitive costs on this machine (kernel {}, {} run{} each{}; one-CPU benchmarks on CPU {}{})\n",
            self.kernel,
            self.runs,
            if self.runs == 1 { "" } else { "s" },
            if self.quick { ", quick" } else { "" },
            self.cpu_a,
            match (self.cpu_b, &self.shared) {
                (Some(b), Some(l)) => format!(", cross-CPU with CPU {b} (closest shared level: {l})"),
                _ => String::new(),
            }
        );
        let _ = writeln!(
            s,
            "{:<3} {:<44} {:>5} median [min–max]",
            "", "primitive", "unit"
        );
        for l in self.primitive_lines() {
            let _ = writeln!(s, "{l}");
        }
        let _ = writeln!(
            s,
            "\n{:<15} {:>8} {:>9}  from",
            "cost field", "default", "measured"
        );
        for d in &self.derived {
            let _ = writeln!(
                s,
                "{:<15} {:>8} {:>9}  {}",
                d.field,
                d.default,
                d.value.map_or("-".into(), |v| v.to_string()),
                d.formula
            );
        }
        let _ = writeln!(
            s,
            "\nnot measured (defaults kept): wakeup_remote, tcp_write_8k, tcp_read_8k, fork, exit, tick,\n\
             migrate_*, probe_*, balance_per_cpu, domain_visit. The algebra is in experiment::calibrate."
        );
        if let Some(line) = self.vcpu_line() {
            let _ = writeln!(s, "\n{line}");
        }
        for n in &self.notes {
            let _ = writeln!(s, "note: {n}");
        }
        s
    }
}
