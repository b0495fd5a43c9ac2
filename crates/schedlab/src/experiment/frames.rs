//! Results as tables: what a run, a comparison, a sweep and a machine look like to
//! pandas, polars and LISA.
//!
//! A notebook user asks table questions: which task waited longest, how the
//! wakeup-latency histogram moved, how many `sched_migrate_task` events hit CPU 3,
//! the effect of a feature per seed. This module lays each result out as one
//! [`RecordBatch`] ([`crate::frame`]) in long ("tidy") form wherever a value has
//! several keys, so a group-by answers the question without reshaping:
//!
//! - a run: its tasks, its instrumented functions (calls, CPUs probed, charged
//!   cost), its latency histograms' buckets, and its scheduler events;
//! - a comparison: one row per metric (the table `compare` prints) and one row per
//!   (arm, seed, metric);
//! - a sweep: one row per (point, seed, metric), a column per grid key (the same
//!   rows as `results.csv`);
//! - a machine: its CPUs and the sched domains v5.6 builds on it.
//!
//! The events table is the trace tools' view: the tracepoints ftrace would record
//! (built from the same records as the ftrace text, `metrics/ftrace.rs`), with
//! LISA's `__cpu`, `__pid` and `__comm` for the task running on the CPU that
//! logged the event, then each tracepoint's fields by their kernel names, null
//! where the event has no such field. Times are integer ns.

use crate::experiment::compare::{Comparison, MeanKind};
use crate::experiment::sweep::Record;
use crate::experiment::RunResult;
use crate::frame::{i64_of, Column, Frame};
use crate::machine::Machine;
use crate::metrics::ftrace::{for_each_record, FieldVal};
use crate::metrics::EventLog;
use crate::sched::core::Task;
use crate::sched::topology::{sd_flags_names, SchedTopology, TopologyOpts};
use arrow_array::RecordBatch;

/// The run's tasks, one row each (the JSON's `tasks`).
pub fn tasks(r: &RunResult) -> RecordBatch {
    let t = &r.tasks;
    Frame::new()
        .strs("name", t.iter().map(|x| x.name.as_str()))
        .uints("pid", t.iter().map(|x| u64::from(x.pid)))
        .uints("start_ns", t.iter().map(|x| x.start_ns))
        .opt_uints("exit_ns", t.iter().map(|x| x.exit_ns))
        .uints("runtime_ns", t.iter().map(|x| x.runtime_ns))
        .uints("runqueue_wait_ns", t.iter().map(|x| x.runqueue_wait_ns))
        .uints("wakeups", t.iter().map(|x| x.wakeups))
        .uints("migrations", t.iter().map(|x| x.migrations))
        .batch()
}

/// The instrumented scheduler functions that ran, one row each.
pub fn functions(r: &RunResult) -> RecordBatch {
    let f: Vec<_> = r.metrics.functions.iter().collect();
    Frame::new()
        .strs("function", f.iter().map(|(n, _)| **n))
        .uints("calls", f.iter().map(|(_, s)| s.calls))
        .uints("cpus_probed", f.iter().map(|(_, s)| s.cpus_probed))
        .uints("cpus_skipped", f.iter().map(|(_, s)| s.cpus_skipped))
        .uints("cost_ns", f.iter().map(|(_, s)| s.cost_ns))
        .batch()
}

/// Every latency histogram's buckets: metric, unit, value, count.
pub fn latency(r: &RunResult) -> RecordBatch {
    let rows: Vec<(&str, &str, u64, u64)> = r
        .latency_buckets
        .iter()
        .flat_map(|h| {
            h.buckets
                .iter()
                .map(move |&(v, n)| (h.metric.as_str(), h.unit, v, n))
        })
        .collect();
    Frame::new()
        .strs("metric", rows.iter().map(|x| x.0))
        .strs("unit", rows.iter().map(|x| x.1))
        .uints("value", rows.iter().map(|x| x.2))
        .uints("count", rows.iter().map(|x| x.3))
        .batch()
}

/// The tracepoints' fields, in the order the table gives them.
const EVENT_FIELDS: [&str; 35] = [
    "comm",
    "pid",
    "prio",
    "target_cpu",
    "orig_cpu",
    "dest_cpu",
    "prev_comm",
    "prev_pid",
    "prev_prio",
    "prev_state",
    "next_comm",
    "next_pid",
    "next_prio",
    "child_comm",
    "child_pid",
    "oldcomm",
    "newcomm",
    "oom_score_adj",
    "state",
    "cpu_id",
    "ip",
    "buf",
    "cpu",
    "path",
    "load",
    "rbl_load",
    "util",
    "update_time",
    "enqueued",
    "ewma",
    "capacity",
    "capacity_orig",
    "capacity_curr",
    "overutilized",
    "span",
];

/// The scheduler events of `log` (a run on `nr_cpus` CPUs with `tasks`), one row
/// per tracepoint hit.
pub fn events(log: &EventLog, tasks: &[Task], nr_cpus: usize) -> RecordBatch {
    let mut ts = vec![];
    let mut cpu = vec![];
    let mut pid = vec![];
    let mut comm: Vec<String> = vec![];
    let mut event = vec![];
    let string_field =
        |k: &str| k.ends_with("comm") || matches!(k, "prev_state" | "ip" | "buf" | "path" | "span");
    let mut cols: Vec<Column> = EVENT_FIELDS
        .iter()
        .map(|k| {
            if string_field(k) {
                Column::str()
            } else {
                Column::int()
            }
        })
        .collect();
    for_each_record(log, tasks, nr_cpus, |r| {
        ts.push(i64_of(r.ts));
        cpu.push(r.cpu as u64);
        pid.push(u64::from(r.pid));
        comm.push(r.comm.clone());
        event.push(r.event);
        for (i, k) in EVENT_FIELDS.iter().enumerate() {
            match (r.fields.iter().find(|(f, _)| f == k), &mut cols[i]) {
                (Some((_, FieldVal::Int(v) | FieldVal::Cpu(v))), Column::Int(b)) => {
                    b.append_value(*v)
                }
                (Some((_, FieldVal::Str(v))), Column::Str(b)) => b.append_value(v),
                (Some((_, v @ FieldVal::Hex(_))), Column::Str(b)) => b.append_value(v.to_string()),
                (Some((_, v)), c) => {
                    debug_assert!(false, "field {k} = {v} of the wrong type");
                    c.null()
                }
                (None, c) => c.null(),
            }
        }
    });
    let mut f = Frame::new()
        .ints("ts", ts)
        .uints("__cpu", cpu)
        .uints("__pid", pid)
        .strs("__comm", comm)
        .strs("event", event);
    for (k, c) in EVENT_FIELDS.iter().zip(cols) {
        f = f.column(k, c);
    }
    f.batch()
}

/// A sweep's records in long form: point, one column per grid key, seed, metric,
/// value (the rows of `results.csv`).
pub fn sweep_long(keys: &[String], records: &[Record]) -> RecordBatch {
    let rows: Vec<(&Record, &String, f64)> = records
        .iter()
        .flat_map(|r| r.metrics.iter().map(move |(m, &v)| (r, m, v)))
        .collect();
    let mut f = Frame::new().uints("point", rows.iter().map(|x| x.0.point as u64));
    for k in keys {
        f = f.strs(
            k,
            rows.iter()
                .map(|x| x.0.params.get(k).map_or("", String::as_str)),
        );
    }
    f.uints("seed", rows.iter().map(|x| x.0.seed))
        .strs("metric", rows.iter().map(|x| x.1.as_str()))
        .floats("value", rows.iter().map(|x| Some(x.2)))
        .batch()
}

/// A comparison's table: one row per metric.
pub fn compare_table(c: &Comparison) -> RecordBatch {
    let r = &c.rows;
    let p = |t: &Option<crate::stats::TestResult>| t.map(|t| t.p);
    Frame::new()
        .strs("metric", r.iter().map(|x| x.name.as_str()))
        .strs(
            "better",
            r.iter().map(|x| match x.better {
                crate::experiment::compare::Better::Lower => "lower",
                crate::experiment::compare::Better::Higher => "higher",
                crate::experiment::compare::Better::Unknown => "unknown",
            }),
        )
        .strs(
            "mean_kind",
            r.iter().map(|x| match x.mean_kind {
                MeanKind::Amean => "amean",
                MeanKind::Hmean => "hmean",
            }),
        )
        .floats("a", r.iter().map(|x| Some(x.a_centre)))
        .floats("b", r.iter().map(|x| Some(x.b_centre)))
        .floats("delta_pct", r.iter().map(|x| Some(x.delta_pct)))
        .floats("a_std", r.iter().map(|x| Some(x.a.std)))
        .floats("b_std", r.iter().map(|x| Some(x.b.std)))
        .floats("wilcoxon_p", r.iter().map(|x| p(&x.wilcoxon)))
        .floats("mann_whitney_p", r.iter().map(|x| p(&x.mann_whitney)))
        .floats(
            "change_pct",
            r.iter().map(|x| x.change_pct.map(|iv| iv.est)),
        )
        .floats("change_lo", r.iter().map(|x| x.change_pct.map(|iv| iv.lo)))
        .floats("change_hi", r.iter().map(|x| x.change_pct.map(|iv| iv.hi)))
        .strs("effect", r.iter().map(|x| x.effect().word()))
        .batch()
}

/// A comparison's runs in long form: arm, its spec, seed, metric, value.
pub fn compare_runs(c: &Comparison) -> RecordBatch {
    let v = &c.per_seed;
    let spec = |arm: &str| if arm == "a" { &c.a.spec } else { &c.b.spec };
    Frame::new()
        .strs("arm", v.iter().map(|x| x.arm))
        .strs("spec", v.iter().map(|x| spec(x.arm).as_str()))
        .uints("seed", v.iter().map(|x| x.seed))
        .strs("metric", v.iter().map(|x| x.metric.as_str()))
        .floats("value", v.iter().map(|x| Some(x.value)))
        .batch()
}

/// The machine's CPUs, one row each.
pub fn cpus(m: &Machine) -> RecordBatch {
    let c = &m.cpus;
    let u = |f: fn(&crate::machine::Cpu) -> usize| c.iter().map(move |x| f(x) as u64);
    Frame::new()
        .uints("cpu", 0..c.len() as u64)
        .uints("core", u(|x| x.core))
        .uints("cluster", u(|x| x.cluster))
        .uints("llc", u(|x| x.llc))
        .uints("package", u(|x| x.package))
        .uints("node", u(|x| x.node))
        .uints("capacity", c.iter().map(|x| u64::from(x.capacity_orig)))
        .uints("freq_domain", u(|x| x.freq_domain))
        .strs("kind", c.iter().map(|x| m.core_kinds[x.kind].name.as_str()))
        .batch()
}

/// The sched domains v5.6 builds on `m`: one row per (CPU, level), lowest first.
pub fn domains(m: &Machine) -> RecordBatch {
    let topo = SchedTopology::build(m, &TopologyOpts::v5_6());
    let sds: Vec<_> = (0..m.nr_cpus())
        .flat_map(|cpu| topo.domains_of(cpu).collect::<Vec<_>>())
        .map(|d| &topo.domains[d])
        .collect();
    Frame::new()
        .uints("cpu", sds.iter().map(|d| d.cpu as u64))
        .uints("level", sds.iter().map(|d| u64::from(d.level)))
        .strs("name", sds.iter().map(|d| d.name))
        .strs("span", sds.iter().map(|d| d.span.to_string()))
        .uints("span_weight", sds.iter().map(|d| u64::from(d.span_weight)))
        .strs("flags", sds.iter().map(|d| sd_flags_names(d.flags)))
        .uints(
            "imbalance_pct",
            sds.iter().map(|d| u64::from(d.imbalance_pct)),
        )
        .uints("min_interval", sds.iter().map(|d| d.min_interval))
        .uints("max_interval", sds.iter().map(|d| d.max_interval))
        .uints("busy_factor", sds.iter().map(|d| u64::from(d.busy_factor)))
        .batch()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiment::{run_logged, Overrides, RunOpts, Scenario};
    use arrow_array::{Array, Int64Array, StringArray};

    fn scenario() -> Scenario {
        let doc = crate::config::Doc::parse(
            r#"
[machine]
preset = "juno-r0"
[run]
duration_ms = 4
[workload]
kind = "tasks"
[[workload.task]]
name = "w"
count = 3
program = [ { op = "loop", body = [ { op = "compute", work = "200us" }, { op = "sleep", time = "300us" } ] } ]
"#,
            std::path::Path::new("t.toml"),
        )
        .unwrap();
        Scenario::from_doc(doc, &Overrides::default()).unwrap()
    }

    fn ints(b: &RecordBatch, name: &str) -> Vec<Option<i64>> {
        let a = b
            .column_by_name(name)
            .unwrap()
            .as_any()
            .downcast_ref::<Int64Array>()
            .unwrap();
        (0..a.len())
            .map(|i| (!a.is_null(i)).then(|| a.value(i)))
            .collect()
    }

    fn strs(b: &RecordBatch, name: &str) -> Vec<Option<String>> {
        let a = b
            .column_by_name(name)
            .unwrap()
            .as_any()
            .downcast_ref::<StringArray>()
            .unwrap();
        (0..a.len())
            .map(|i| (!a.is_null(i)).then(|| a.value(i).to_string()))
            .collect()
    }

    #[test]
    fn run_tables_agree_with_the_result() {
        let sc = scenario();
        let (r, log, tasks) = run_logged(&sc, 1, 0, &RunOpts::default(), false).unwrap();
        let t = super::tasks(&r);
        assert_eq!(t.num_rows(), r.tasks.len());
        assert_eq!(
            ints(&t, "wakeups").iter().map(|x| x.unwrap()).sum::<i64>(),
            r.tasks.iter().map(|x| x.wakeups as i64).sum::<i64>()
        );
        let l = latency(&r);
        let metric = strs(&l, "metric");
        let count = ints(&l, "count");
        let wake: i64 = metric
            .iter()
            .zip(&count)
            .filter(|(m, _)| m.as_deref() == Some("wakeup_latency"))
            .map(|(_, c)| c.unwrap())
            .sum();
        assert_eq!(wake as u64, r.metrics.wakeup_latency_ns.count);
        let f = functions(&r);
        assert_eq!(f.num_rows(), r.metrics.functions.len());
        // Events: the same counts as the ftrace text of the same run.
        let e = events(&log, &tasks, sc.machine.nr_cpus());
        let text = crate::metrics::ftrace::render(
            &log,
            &tasks,
            sc.machine.nr_cpus(),
            crate::metrics::ftrace::Layout::V5_6,
        );
        let names = strs(&e, "event");
        for ev in ["sched_switch", "sched_wakeup", "sched_waking", "cpu_idle"] {
            let n = names.iter().filter(|x| x.as_deref() == Some(ev)).count();
            let lines = text
                .lines()
                .filter(|l| l.contains(&format!(" {ev}: ")))
                .count();
            assert_eq!(n, lines, "{ev}");
            assert!(n > 0, "{ev}");
        }
        // A switch has prev/next fields and no wakee fields; times rise.
        let i = names
            .iter()
            .position(|x| x.as_deref() == Some("sched_switch"))
            .unwrap();
        assert!(ints(&e, "prev_pid")[i].is_some() && ints(&e, "next_prio")[i].is_some());
        assert!(ints(&e, "target_cpu")[i].is_none());
        let ts = ints(&e, "ts");
        assert!(ts.windows(2).all(|w| w[0] <= w[1]));
    }

    #[test]
    fn juno_domains_are_mc_then_die() {
        let m = crate::machine::presets::preset("juno-r0").unwrap();
        let d = domains(&m);
        let names = strs(&d, "name");
        let cpu = ints(&d, "cpu");
        let cpu0: Vec<_> = names
            .iter()
            .zip(&cpu)
            .filter(|(_, c)| **c == Some(0))
            .map(|(n, _)| n.clone().unwrap())
            .collect();
        assert_eq!(cpu0, ["MC", "DIE"]);
        assert_eq!(cpus(&m).num_rows(), 6);
    }
}
