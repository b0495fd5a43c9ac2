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
    fn prio(&self, p: u32) -> i32 {
        self.task(p).map_or(120, |t| 120 + t.nice)
    }
    fn curr(&self, cpu: usize) -> Option<u32> {
        self.curr.get(cpu).copied().flatten()
    }

    /// One line: `who` (idle when `None`) on `cpu` at `t`, event `ev`.
    fn line(
        &self,
        s: &mut String,
        t: SimTime,
        cpu: usize,
        who: Option<u32>,
        ev: &str,
        payload: String,
    ) {
        let (name, pid, tgid) = match who.and_then(|p| self.task(p).map(|tk| (p, tk))) {
            Some((p, tk)) => (comm(Some(tk)), p, tk.tgid),
            None => ("<idle>".to_string(), 0, 0),
        };
        let head = format!("{name}-{pid}");
        let _ = writeln!(
            s,
            "{head:>22} ({tgid:>7}) [{cpu:03}] d..2. {:>5}.{:09}: {ev}: {payload}",
            t / 1_000_000_000,
            t % 1_000_000_000
        );
    }

    /// comm, pid and prio of a task, as the wakeup, migration and exit events print
    /// them.
    fn task_fields(&self, pid: u32) -> String {
        format!(
            "comm={} pid={pid} prio={}",
            comm(self.task(pid)),
            self.prio(pid)
        )
    }

    /// The line of event `e` at `t`, if the text shows it.
    fn event(&mut self, s: &mut String, t: SimTime, e: &SchedEvent) {
        self.waker_cpu.observe(e);
        let (cpu, who, ev, payload) = match *e {
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
                self.line(
                    s,
                    t,
                    cpu,
                    prev,
                    "sched_switch",
                    format!("prev_comm={pn} prev_pid={pp} prev_prio={ppr} prev_state={st} ==> next_comm={nn} next_pid={np} next_prio={npr}"),
                );
                if cpu < self.nr_cpus {
                    self.curr[cpu] = next;
                }
                return;
            }
            SchedEvent::Waking {
                pid,
                waker_cpu: w,
                target_cpu,
            } => {
                let f = self.task_fields(pid);
                (
                    w,
                    self.curr(w),
                    "sched_waking",
                    format!("{f} target_cpu={target_cpu:03}"),
                )
            }
            SchedEvent::Wakeup { pid, cpu, new } => {
                let w = self.waker_cpu.of(pid, cpu);
                let ev = if new {
                    "sched_wakeup_new"
                } else {
                    "sched_wakeup"
                };
                let f = self.task_fields(pid);
                (w, self.curr(w), ev, format!("{f} target_cpu={cpu:03}"))
            }
            SchedEvent::Migrate {
                pid,
                orig_cpu,
                dest_cpu,
                ..
            } => (
                orig_cpu,
                self.curr(orig_cpu),
                "sched_migrate_task",
                format!(
                    "{} orig_cpu={orig_cpu} dest_cpu={dest_cpu}",
                    self.task_fields(pid)
                ),
            ),
            SchedEvent::Fork { parent, child, cpu } => {
                let (pn, pp) = match parent {
                    Some(p) => (comm(self.task(p)), p),
                    None => ("<idle>".to_string(), 0),
                };
                let payload = format!(
                    "comm={pn} pid={pp} child_comm={} child_pid={child}",
                    comm(self.task(child))
                );
                (cpu, parent, "sched_process_fork", payload)
            }
            SchedEvent::Exit { pid, cpu } => {
                (cpu, Some(pid), "sched_process_exit", self.task_fields(pid))
            }
            SchedEvent::IdleEnter { cpu, state } => {
                (cpu, None, "cpu_idle", format!("state={state} cpu_id={cpu}"))
            }
            SchedEvent::IdleExit { cpu } => (
                cpu,
                None,
                "cpu_idle",
                format!("state=4294967295 cpu_id={cpu}"),
            ),
            SchedEvent::CpuFrequency { cpu, freq_khz } => (
                cpu,
                self.curr(cpu),
                "cpu_frequency",
                format!("state={freq_khz} cpu_id={cpu}"),
            ),
            SchedEvent::Placement { .. }
            | SchedEvent::FuncCall { .. }
            | SchedEvent::Probe { .. }
            | SchedEvent::CfsRq { .. } => return,
        };
        self.line(s, t, cpu, who, ev, payload);
    }
}

/// Render `events` (in time order) of a run on `nr_cpus` CPUs with tasks `tasks`
/// (indexed by pid) as ftrace text.
pub fn render(events: &[(SimTime, SchedEvent)], tasks: &[Task], nr_cpus: usize) -> String {
    let mut s = String::new();
    header(&mut s, events, nr_cpus);
    let mut lines = Lines {
        tasks,
        nr_cpus,
        curr: vec![None; nr_cpus],
        waker_cpu: WakerCpus::new(tasks.len()),
    };
    for &(t, ref e) in events {
        lines.event(&mut s, t, e);
    }
    s
}
