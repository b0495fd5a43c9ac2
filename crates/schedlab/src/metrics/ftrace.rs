//! ftrace text: the simulated run as `/sys/kernel/tracing/trace` would print it.
//!
//! Kernel engineers read scheduler behaviour in ftrace output — directly, in
//! Perfetto's text importer or in LISA's `TxtTraceParser`. This writer renders the
//! run's scheduler events in the tracefs layout (`spec/formats.md` §1.1): the `nop`
//! tracer header with the five latency-flag columns, then one line per event,
//! `<comm>-<pid> (<tgid>) [<cpu>] <flags> <sec>.<9 decimals>: <event>: <payload>`,
//! with the mainline raw `key=value` payloads of `sched_switch` (prev_state letters,
//! `+` for a preempted task), `sched_waking`, `sched_wakeup`, `sched_wakeup_new`,
//! `sched_migrate_task`, `sched_process_fork`, `sched_process_exit`, `cpu_idle`
//! (exit as `state=4294967295`) and `cpu_frequency`. The line's task is the one
//! running on that CPU at that moment (`<idle>-0` for the idle task), tracked from
//! the `sched_switch` events themselves; a wakeup is printed on the waker's CPU, as
//! `ttwu` runs there. Comms are cut to 15 characters with spaces replaced, since
//! Perfetto splits arguments on spaces. `prio` is `120 + nice` for fair tasks.
//!
//! Simplifications: the latency flags are a fixed `d..2.` for scheduler events (irqs
//! off, preempt depth 2, as `__schedule` and `ttwu` run); no `sched_stat_*` or
//! `task_newtask` events.

use crate::engine::SimTime;
use crate::metrics::WakerCpus;
use crate::sched::core::Task;
use crate::sched::SchedEvent;
use std::fmt::Write as _;

/// A task's `comm` as the kernel keeps it (`TASK_COMM_LEN` 16: at most 15
/// characters), `<idle>` for the idle task. Shared with the Perfetto writer.
pub(crate) fn task_comm(t: Option<&Task>) -> String {
    match t {
        None => "<idle>".to_string(),
        Some(t) => t.name.chars().take(15).collect(),
    }
}

/// [`task_comm`] sanitised for text traces (no spaces).
fn comm(t: Option<&Task>) -> String {
    task_comm(t)
        .chars()
        .map(|c| if c.is_whitespace() { '_' } else { c })
        .collect()
}

/// The header: entry count (the events the text shows) and the column legend.
fn header(s: &mut String, events: &[(SimTime, SchedEvent)], nr_cpus: usize) {
    let n = events
        .iter()
        .filter(|(_, e)| {
            !matches!(
                e,
                SchedEvent::Placement { .. }
                    | SchedEvent::FuncCall { .. }
                    | SchedEvent::Probe { .. }
                    | SchedEvent::CfsRq { .. }
            )
        })
        .count();
    let _ = writeln!(
        s,
        "# tracer: nop\n#\n# entries-in-buffer/entries-written: {n}/{n}   #P:{nr_cpus}\n#"
    );
    s.push_str(
        "#                                _-----=> irqs-off/BH-disabled\n\
         #                               / _----=> need-resched\n\
         #                              | / _---=> hardirq/softirq\n\
         #                              || / _--=> preempt-depth\n\
         #                              ||| / _-=> migrate-disable\n\
         #                              |||| /     delay\n\
         #           TASK-PID     CPU#  |||||  TIMESTAMP  FUNCTION\n\
         #              | |         |   |||||     |         |\n",
    );
}

/// One field value of a trace event.
#[derive(Clone, Debug, PartialEq)]
pub enum FieldVal {
    Int(i64),
    /// A CPU number that tracefs prints zero-padded to three digits
    /// (`target_cpu=003`).
    Cpu(i64),
    Str(String),
}

impl std::fmt::Display for FieldVal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FieldVal::Int(i) => write!(f, "{i}"),
            FieldVal::Cpu(c) => write!(f, "{c:03}"),
            FieldVal::Str(s) => f.write_str(s),
        }
    }
}

/// One trace event as tracefs records it: when, on which CPU, the task running
/// there (LISA's `__pid`/`__comm`), the event's name and its fields in the
/// kernel's `TP_printk` order. The text lines and the Python events table are both
/// built from these.
#[derive(Clone, Debug, PartialEq)]
pub struct TraceRecord {
    pub ts: SimTime,
    pub cpu: usize,
    /// The task running on `cpu` (0 and `<idle>` for the idle task).
    pub pid: u32,
    pub tgid: u32,
    pub comm: String,
    pub event: &'static str,
    pub fields: Vec<(&'static str, FieldVal)>,
}

/// The event lines, each attributed to (cpu, task running there).
struct Lines<'a> {
    tasks: &'a [Task],
    nr_cpus: usize,
    /// Each CPU's current task (`None`: idle).
    curr: Vec<Option<u32>>,
    /// Each task's last waker CPU.
    waker_cpu: WakerCpus,
}

impl<'a> Lines<'a> {
    fn task(&self, p: u32) -> Option<&'a Task> {
        self.tasks.get(p as usize).filter(|_| p != 0)
    }
    fn prio(&self, p: u32) -> i64 {
        self.task(p).map_or(120, |t| 120 + i64::from(t.nice))
    }
    fn curr(&self, cpu: usize) -> Option<u32> {
        self.curr.get(cpu).copied().flatten()
    }

    /// comm, pid and prio of a task, as the wakeup, migration and exit events print
    /// them.
    fn task_fields(&self, pid: u32) -> Vec<(&'static str, FieldVal)> {
        vec![
            ("comm", FieldVal::Str(comm(self.task(pid)))),
            ("pid", FieldVal::Int(i64::from(pid))),
            ("prio", FieldVal::Int(self.prio(pid))),
        ]
    }

    /// The record of event `e` at `t`, if the trace shows it.
    fn event(&mut self, t: SimTime, e: &SchedEvent) -> Option<TraceRecord> {
        use FieldVal::{Cpu, Int, Str};
        self.waker_cpu.observe(e);
        let (cpu, who, ev, fields) = match *e {
            SchedEvent::Switch {
                cpu, prev, next, ..
            } => {
                let st = e.switched_out().map_or("R", |(_, s)| s.letters());
                let pc = |p: Option<u32>| match p {
                    Some(p) => (comm(self.task(p)), p, self.prio(p)),
                    None => (format!("swapper/{cpu}"), 0, 120),
                };
                let (pn, pp, ppr) = pc(prev);
                let (nn, np, npr) = pc(next);
                let fields = vec![
                    ("prev_comm", Str(pn)),
                    ("prev_pid", Int(i64::from(pp))),
                    ("prev_prio", Int(ppr)),
                    ("prev_state", Str(st.to_string())),
                    ("next_comm", Str(nn)),
                    ("next_pid", Int(i64::from(np))),
                    ("next_prio", Int(npr)),
                ];
                let r = self.record(t, cpu, prev, "sched_switch", fields);
                if cpu < self.nr_cpus {
                    self.curr[cpu] = next;
                }
                return Some(r);
            }
            SchedEvent::Waking {
                pid,
                waker_cpu: w,
                target_cpu,
            } => {
                let mut f = self.task_fields(pid);
                f.push(("target_cpu", Cpu(target_cpu as i64)));
                (w, self.curr(w), "sched_waking", f)
            }
            SchedEvent::Wakeup { pid, cpu, new } => {
                let w = self.waker_cpu.of(pid, cpu);
                let ev = if new {
                    "sched_wakeup_new"
                } else {
                    "sched_wakeup"
                };
                let mut f = self.task_fields(pid);
                f.push(("target_cpu", Cpu(cpu as i64)));
                (w, self.curr(w), ev, f)
            }
            SchedEvent::Migrate {
                pid,
                orig_cpu,
                dest_cpu,
                ..
            } => {
                let mut f = self.task_fields(pid);
                f.push(("orig_cpu", Int(orig_cpu as i64)));
                f.push(("dest_cpu", Int(dest_cpu as i64)));
                (orig_cpu, self.curr(orig_cpu), "sched_migrate_task", f)
            }
            SchedEvent::Fork { parent, child, cpu } => {
                let (pn, pp) = match parent {
                    Some(p) => (comm(self.task(p)), p),
                    None => ("<idle>".to_string(), 0),
                };
                let f = vec![
                    ("comm", Str(pn)),
                    ("pid", Int(i64::from(pp))),
                    ("child_comm", Str(comm(self.task(child)))),
                    ("child_pid", Int(i64::from(child))),
                ];
                (cpu, parent, "sched_process_fork", f)
            }
            SchedEvent::Exit { pid, cpu } => {
                (cpu, Some(pid), "sched_process_exit", self.task_fields(pid))
            }
            SchedEvent::IdleEnter { cpu, state } => (
                cpu,
                None,
                "cpu_idle",
                vec![("state", Int(state as i64)), ("cpu_id", Int(cpu as i64))],
            ),
            SchedEvent::IdleExit { cpu } => (
                cpu,
                None,
                "cpu_idle",
                vec![
                    ("state", Int(i64::from(u32::MAX))),
                    ("cpu_id", Int(cpu as i64)),
                ],
            ),
            SchedEvent::CpuFrequency { cpu, freq_khz } => (
                cpu,
                self.curr(cpu),
                "cpu_frequency",
                vec![
                    ("state", Int(i64::from(freq_khz))),
                    ("cpu_id", Int(cpu as i64)),
                ],
            ),
            SchedEvent::Placement { .. }
            | SchedEvent::FuncCall { .. }
            | SchedEvent::Probe { .. }
            | SchedEvent::CfsRq { .. } => return None,
        };
        Some(self.record(t, cpu, who, ev, fields))
    }

    /// `who` (idle when `None`) on `cpu` at `t`, event `ev`.
    fn record(
        &self,
        t: SimTime,
        cpu: usize,
        who: Option<u32>,
        ev: &'static str,
        fields: Vec<(&'static str, FieldVal)>,
    ) -> TraceRecord {
        let (comm, pid, tgid) = match who.and_then(|p| self.task(p).map(|tk| (p, tk))) {
            Some((p, tk)) => (comm(Some(tk)), p, tk.tgid),
            None => ("<idle>".to_string(), 0, 0),
        };
        TraceRecord {
            ts: t,
            cpu,
            pid,
            tgid,
            comm,
            event: ev,
            fields,
        }
    }
}

/// Call `f` with the trace record of every event in `events` (in time order) of a
/// run on `nr_cpus` CPUs with tasks `tasks` (indexed by pid) that the trace shows.
pub fn for_each_record(
    events: &[(SimTime, SchedEvent)],
    tasks: &[Task],
    nr_cpus: usize,
    mut f: impl FnMut(&TraceRecord),
) {
    let mut lines = Lines {
        tasks,
        nr_cpus,
        curr: vec![None; nr_cpus],
        waker_cpu: WakerCpus::new(tasks.len()),
    };
    for &(t, ref e) in events {
        if let Some(r) = lines.event(t, e) {
            f(&r);
        }
    }
}

/// One text line of `r`.
fn line(s: &mut String, r: &TraceRecord) {
    let head = format!("{}-{}", r.comm, r.pid);
    let _ = write!(
        s,
        "{head:>22} ({:>7}) [{:03}] d..2. {:>5}.{:09}: {}:",
        r.tgid,
        r.cpu,
        r.ts / 1_000_000_000,
        r.ts % 1_000_000_000,
        r.event
    );
    for (k, v) in &r.fields {
        if *k == "next_comm" {
            s.push_str(" ==>");
        }
        let _ = write!(s, " {k}={v}");
    }
    s.push('\n');
}

/// Render `events` (in time order) of a run on `nr_cpus` CPUs with tasks `tasks`
/// (indexed by pid) as ftrace text.
pub fn render(events: &[(SimTime, SchedEvent)], tasks: &[Task], nr_cpus: usize) -> String {
    let mut s = String::new();
    header(&mut s, events, nr_cpus);
    for_each_record(events, tasks, nr_cpus, |r| line(&mut s, r));
    s
}
