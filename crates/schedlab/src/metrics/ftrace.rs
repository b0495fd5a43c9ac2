//! ftrace text: the simulated run as `/sys/kernel/tracing/trace` would print it.
//!
//! Kernel engineers read scheduler behaviour in ftrace output — directly, or through
//! the tools built on it: trappy, LISA's `TxtTraceParser`, Perfetto's text importer.
//! Those tools parse the exact column layout tracefs prints, and that layout changed
//! between the kernels schedlab models, so the writer prints the layout of the
//! modelled kernel ([`Layout`]): the `nop` tracer header with its latency-flag legend,
//! then one line per event, `<comm>-<pid> [<cpu>] <flags> <sec>.<usec>: <event>:
//! <payload>`, as `trace_print_context` formats it (`%16s-%-5d` up to v5.12,
//! `%16s-%-7d` with a fifth, migrate-disable flag since; the timestamp in seconds
//! with six decimals, the ns clock rounded to the nearest µs as `ns2usecs` does; no
//! TGID column, since `record-tgid` is off by default). The payloads are the
//! mainline raw `key=value` ones of `sched_switch` (prev_state letters, `+` for a
//! preempted task), `sched_waking`, `sched_wakeup`, `sched_wakeup_new`,
//! `sched_migrate_task`, `sched_process_fork`, `sched_process_exit`, `task_rename`
//! (`oom_score_adj` 0), `cpu_idle` (exit as `state=4294967295`) and `cpu_frequency`,
//! and a task's `trace_marker` writes (rt-app's markers) as tracefs prints a `print`
//! event: `tracing_mark_write: <line>`. The line's task is the one
//! running on that CPU at that moment (`<idle>-0` for the idle task), tracked from
//! the `sched_switch` events themselves. Comms are cut to 15 characters
//! (`TASK_COMM_LEN`) with spaces replaced, since the text readers split fields on
//! spaces. `prio` is `120 + nice` for fair tasks.
//!
//! Each event is printed where and when the kernel's tracepoint fires
//! ([`EventLog::tracepoints`]): `sched_waking` on the waker's CPU; `sched_wakeup` on
//! the CPU that runs `ttwu_do_wakeup`, the waker's, or for a wakeup queued with
//! TTWU_QUEUE the target's, when it processes its wake_list; `cpu_idle` exit once
//! the state's exit latency has passed (`cpuidle_enter_state` fires it after the
//! state's `enter()` returns); a preempted task is `R+` only when switched out at a
//! kernel preemption point, `R` when it reschedules on its way back to user mode
//! ([`PrevState`](crate::sched::PrevState)). A trace opens with the state then: each
//! CPU's `cpu_frequency` and, for a CPU in an idle state, its `cpu_idle`. A task
//! that names itself (rt-app's threads, `pthread_setname_np` at the start of
//! `thread_body`) shows its parent's comm, inherited at fork, until its
//! `task_rename` (`Comms`).
//!
//! The latency flags are those of the modelled kernels' builds (Debian's
//! `PREEMPT_VOLUNTARY`): v5.6–v5.12 have no `CONFIG_PREEMPT_COUNT`, so the
//! preempt-depth column is `.`, and scheduler and power events show `d...`, fork
//! and exit `....`, as the oracle's real 5.10 trace does; the v6 layout (6.12's
//! `PREEMPT_DYNAMIC` has the count) shows `d..2.` (interrupts off under a
//! runqueue lock) and `.....`. Simplifications: no need-resched (`N`) or
//! hardirq/softirq (`h`, `s`) flags, which real traces show on wakeups from an
//! interrupt or that preempt; the v6 preempt depth is not checked against a real
//! 6.12 trace; no `sched_stat_*` or `task_newtask` events.

use crate::engine::SimTime;
use crate::metrics::EventLog;
use crate::sched::core::Task;
use crate::sched::{SchedEvent, SchedTp};
use std::fmt::Write as _;

/// The function a `trace_marker` write's `print` event names as its `ip`: the
/// tracefs write handler, which tracefs prints in front of the buffer.
pub const MARKER_IP_SYM: &str = "tracing_mark_write";

/// A task's `comm` as the kernel keeps it (`TASK_COMM_LEN` 16: at most 15
/// characters), `<idle>` for the idle task. Shared with the Perfetto writer.
pub(crate) fn task_comm(t: Option<&Task>) -> String {
    match t {
        None => "<idle>".to_string(),
        Some(t) => t.name.chars().take(15).collect(),
    }
}

/// A comm sanitised for text traces (no spaces).
fn text(c: &str) -> String {
    c.chars()
        .map(|c| if c.is_whitespace() { '_' } else { c })
        .collect()
}

/// The comm each task shows at each point of a trace, followed event by event
/// (shared with the Perfetto writer). A task that renames itself later in the trace
/// (`SchedEvent::Rename`) shows until then the comm it inherited at fork, its
/// parent's then (`dup_task_struct` copies it); every other task shows its name.
pub(crate) struct Comms {
    /// By pid: the comm now ([`task_comm`] form; `<idle>` for pid 0).
    now: Vec<String>,
    /// By pid: renamed somewhere in the trace.
    renamed: Vec<bool>,
}

impl Comms {
    pub(crate) fn new(tasks: &[Task], events: &[(SimTime, SchedEvent)]) -> Comms {
        let mut renamed = vec![false; tasks.len()];
        for (_, e) in events {
            if let SchedEvent::Rename { pid, .. } = *e {
                if let Some(r) = renamed.get_mut(pid as usize) {
                    *r = true;
                }
            }
        }
        let name = |p: usize| task_comm(tasks.get(p).filter(|_| p != 0));
        let now = (0..tasks.len())
            .map(|p| match tasks[p].parent {
                // Forked before the trace began: its parent's name.
                Some(pp) if renamed[p] => name(pp as usize),
                _ => name(p),
            })
            .collect();
        Comms { now, renamed }
    }

    /// Follow `e`: a fork gives a child that renames itself later its parent's
    /// comm; a rename gives the task its name, and returns the comm it had.
    pub(crate) fn observe(&mut self, e: &SchedEvent, tasks: &[Task]) -> Option<String> {
        match *e {
            SchedEvent::Fork {
                parent: Some(p),
                child,
                ..
            } if self.renamed.get(child as usize) == Some(&true) => {
                let pc = self.of(p).to_string();
                self.now[child as usize] = pc;
                None
            }
            SchedEvent::Rename { pid, .. } => {
                let name = task_comm(tasks.get(pid as usize));
                let slot = self.now.get_mut(pid as usize)?;
                Some(std::mem::replace(slot, name))
            }
            _ => None,
        }
    }

    /// `pid`'s comm now (`<idle>` for the idle task or an unknown pid).
    pub(crate) fn of(&self, pid: u32) -> &str {
        match self.now.get(pid as usize) {
            Some(c) if pid != 0 => c,
            _ => "<idle>",
        }
    }
}

/// The tracefs text layout: the latency-flag columns and the pid width changed
/// between the modelled kernels, and the flags go away with `options/irq-info`
/// off (the layout LISA's text parsers and `trace-cmd report` expect).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Layout {
    pub kernel: LayoutKernel,
    /// `options/irq-info` (on by default): print the latency flags.
    pub irq_info: bool,
}

/// Which kernel's `trace_print_context`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LayoutKernel {
    /// v5.6 to v5.12: four flags (`d...`: irqs-off, need-resched,
    /// hardirq/softirq, preempt-depth), `%16s-%-5d`.
    V5_6,
    /// Recent kernels (v6.x): a fifth flag (migrate-disable, `d..2.`), the
    /// `irqs-off/BH-disabled` legend, `%16s-%-7d`.
    V6,
}

impl Layout {
    pub const V5_6: Layout = Layout {
        kernel: LayoutKernel::V5_6,
        irq_info: true,
    };
    pub const V6: Layout = Layout {
        kernel: LayoutKernel::V6,
        irq_info: true,
    };

    /// The names `--ftrace-layout` takes.
    pub const NAMES: [&'static str; 4] = ["v5.6", "v6", "v5.6-no-irq-info", "v6-no-irq-info"];

    pub fn by_name(name: &str) -> Option<Layout> {
        let (k, irq_info) = match name.strip_suffix("-no-irq-info") {
            Some(k) => (k, false),
            None => (name, true),
        };
        let kernel = match k {
            "v5.6" => LayoutKernel::V5_6,
            "v6" => LayoutKernel::V6,
            _ => return None,
        };
        Some(Layout { kernel, irq_info })
    }

    /// The layout of the kernel preset `preset` (`v5.6`, `v5.10`, `v5.12`: the
    /// four-flag one; the v6 presets: the five-flag one), irq-info on.
    pub fn of_kernel(preset: &str) -> Layout {
        if preset.starts_with("v5.") {
            Layout::V5_6
        } else {
            Layout::V6
        }
    }
}

/// The header: entry count (the events the text shows) and the column legend.
fn header(s: &mut String, n: usize, nr_cpus: usize, layout: Layout) {
    let _ = writeln!(
        s,
        "# tracer: nop\n#\n# entries-in-buffer/entries-written: {n}/{n}   #P:{nr_cpus}\n#"
    );
    s.push_str(match (layout.kernel, layout.irq_info) {
        (LayoutKernel::V5_6, false) => {
            "#           TASK-PID     CPU#   TIMESTAMP  FUNCTION\n\
             #              | |         |       |         |\n"
        }
        (LayoutKernel::V6, false) => {
            "#           TASK-PID     CPU#     TIMESTAMP  FUNCTION\n\
             #              | |         |         |         |\n"
        }
        (LayoutKernel::V5_6, true) => {
            "#                              _-----=> irqs-off\n\
             #                             / _----=> need-resched\n\
             #                            | / _---=> hardirq/softirq\n\
             #                            || / _--=> preempt-depth\n\
             #                            ||| /     delay\n\
             #           TASK-PID   CPU#  ||||    TIMESTAMP  FUNCTION\n\
             #              | |       |   ||||       |         |\n"
        }
        (LayoutKernel::V6, true) => {
            "#                                _-----=> irqs-off/BH-disabled\n\
             #                               / _----=> need-resched\n\
             #                              | / _---=> hardirq/softirq\n\
             #                              || / _--=> preempt-depth\n\
             #                              ||| / _-=> migrate-disable\n\
             #                              |||| /     delay\n\
             #           TASK-PID     CPU#  |||||  TIMESTAMP  FUNCTION\n\
             #              | |         |   |||||     |         |\n"
        }
    });
}

/// One field value of a trace event.
#[derive(Clone, Debug, PartialEq)]
pub enum FieldVal {
    Int(i64),
    /// A CPU number that tracefs prints zero-padded to three digits
    /// (`target_cpu=003`).
    Cpu(i64),
    Str(String),
    /// A bitmap as `cpumap_print_to_pagebuf` writes it (hex chunks), which the
    /// event prints after `0x` (`sched_overutilized`'s `span`).
    Hex(String),
}

impl std::fmt::Display for FieldVal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FieldVal::Int(i) => write!(f, "{i}"),
            FieldVal::Cpu(c) => write!(f, "{c:03}"),
            FieldVal::Str(s) => f.write_str(s),
            FieldVal::Hex(s) => write!(f, "0x{s}"),
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

impl TraceRecord {
    /// Whether the tracepoint fires with interrupts off (the `d` flag,
    /// `TRACE_FLAG_IRQS_OFF`): every scheduler and power event here runs under a
    /// runqueue or `pi_lock` with interrupts disabled, or in the idle loop or a
    /// cpufreq fast switch with them off; `sched_process_fork` (in `kernel_clone`)
    /// and `sched_process_exit` (in `do_exit`) run with them on, as the oracle's
    /// real 5.10 trace shows (`....`).
    pub fn irqs_off(&self) -> bool {
        !matches!(
            self.event,
            "sched_process_fork" | "sched_process_exit" | "print"
        )
    }
}

/// An event's CPU, the task running there, its name and fields.
type Rec = (
    usize,
    Option<u32>,
    &'static str,
    Vec<(&'static str, FieldVal)>,
);

/// The event lines, each attributed to (cpu, task running there).
struct Lines<'a> {
    tasks: &'a [Task],
    nr_cpus: usize,
    /// Each CPU's current task (`None`: idle).
    curr: Vec<Option<u32>>,
    comms: Comms,
}

impl<'a> Lines<'a> {
    fn comm(&self, p: u32) -> String {
        text(self.comms.of(p))
    }
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
            ("comm", FieldVal::Str(self.comm(pid))),
            ("pid", FieldVal::Int(i64::from(pid))),
            ("prio", FieldVal::Int(self.prio(pid))),
        ]
    }

    /// The record of event `e` at `t`, if the trace shows it.
    fn event(&mut self, t: SimTime, e: &SchedEvent) -> Option<TraceRecord> {
        use FieldVal::{Cpu, Int, Str};
        let old_comm = self.comms.observe(e, self.tasks);
        let (cpu, who, ev, fields) = match *e {
            SchedEvent::Switch {
                cpu, prev, next, ..
            } => {
                let st = e.switched_out().map_or("R", |(_, s)| s.letters());
                let pc = |p: Option<u32>| match p {
                    Some(p) => (self.comm(p), p, self.prio(p)),
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
            SchedEvent::Wakeup {
                pid,
                cpu,
                new,
                from_cpu: w,
            } => {
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
                let pp = parent.unwrap_or(0);
                let f = vec![
                    ("comm", Str(self.comm(pp))),
                    ("pid", Int(i64::from(pp))),
                    ("child_comm", Str(self.comm(child))),
                    ("child_pid", Int(i64::from(child))),
                ];
                (cpu, parent, "sched_process_fork", f)
            }
            SchedEvent::Exit { pid, cpu } => {
                (cpu, Some(pid), "sched_process_exit", self.task_fields(pid))
            }
            SchedEvent::Rename { pid, cpu } => {
                let f = vec![
                    ("pid", Int(i64::from(pid))),
                    ("oldcomm", Str(text(&old_comm.unwrap_or_default()))),
                    ("newcomm", Str(self.comm(pid))),
                    ("oom_score_adj", Int(0)),
                ];
                (cpu, Some(pid), "task_rename", f)
            }
            SchedEvent::IdleEnter { cpu, state } => (
                cpu,
                None,
                "cpu_idle",
                vec![("state", Int(state as i64)), ("cpu_id", Int(cpu as i64))],
            ),
            SchedEvent::IdleExit { cpu, .. } => (
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
            SchedEvent::Marker { cpu, pid, marker } => (
                cpu,
                Some(pid),
                "print",
                vec![
                    ("ip", Str(MARKER_IP_SYM.to_string())),
                    ("buf", Str(marker.to_string())),
                ],
            ),
            SchedEvent::SchedTp(tp) => self.sched_tp(tp),
            SchedEvent::Placement { .. }
            | SchedEvent::FuncCall { .. }
            | SchedEvent::Probe { .. }
            | SchedEvent::CfsRq { .. } => return None,
        };
        Some(self.record(t, cpu, who, ev, fields))
    }

    /// A LISA `sched_tp` event: its CPU, the task running there, its name and
    /// fields in its `TP_printk` order (a root cfs_rq's path is `/`, a task
    /// entity's `(null)`).
    fn sched_tp(&self, tp: SchedTp) -> Rec {
        use FieldVal::{Int, Str};
        let u = |v: u32| Int(i64::from(v));
        let (cpu, ev, fields) = match tp {
            SchedTp::PeltCfs {
                cpu,
                load,
                rbl_load,
                util,
                update_time,
            } => (
                cpu,
                "sched_pelt_cfs",
                vec![
                    ("cpu", u(cpu)),
                    ("path", Str("/".into())),
                    ("load", u(load)),
                    ("rbl_load", u(rbl_load)),
                    ("util", u(util)),
                    ("update_time", Int(update_time as i64)),
                ],
            ),
            SchedTp::PeltSe {
                cpu,
                pid,
                load,
                rbl_load,
                util,
                update_time,
            } => (
                cpu,
                "sched_pelt_se",
                vec![
                    ("cpu", u(cpu)),
                    ("path", Str("(null)".into())),
                    ("comm", Str(self.comm(pid))),
                    ("pid", u(pid)),
                    ("load", u(load)),
                    ("rbl_load", u(rbl_load)),
                    ("util", u(util)),
                    ("update_time", Int(update_time as i64)),
                ],
            ),
            SchedTp::UtilEstCfs {
                cpu,
                enqueued,
                ewma,
                util,
            } => (
                cpu,
                "sched_util_est_cfs",
                vec![
                    ("cpu", u(cpu)),
                    ("path", Str("/".into())),
                    ("enqueued", u(enqueued)),
                    ("ewma", u(ewma)),
                    ("util", u(util)),
                ],
            ),
            SchedTp::UtilEstSe {
                cpu,
                pid,
                enqueued,
                ewma,
                util,
            } => (
                cpu,
                "sched_util_est_se",
                vec![
                    ("cpu", u(cpu)),
                    ("path", Str("(null)".into())),
                    ("comm", Str(self.comm(pid))),
                    ("pid", u(pid)),
                    ("enqueued", u(enqueued)),
                    ("ewma", u(ewma)),
                    ("util", u(util)),
                ],
            ),
            SchedTp::CpuCapacity {
                cpu,
                capacity,
                capacity_orig,
                capacity_curr,
            } => (
                cpu,
                "sched_cpu_capacity",
                vec![
                    ("cpu", u(cpu)),
                    ("capacity", u(capacity)),
                    ("capacity_orig", u(capacity_orig)),
                    ("capacity_curr", u(capacity_curr)),
                ],
            ),
            SchedTp::Overutilized { cpu, overutilized } => (
                cpu,
                "sched_overutilized",
                vec![
                    ("overutilized", Int(i64::from(overutilized))),
                    ("span", FieldVal::Hex(cpumap_hex(self.nr_cpus))),
                ],
            ),
        };
        let cpu = cpu as usize;
        (cpu, self.curr(cpu), ev, fields)
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
            Some((p, tk)) => (self.comm(p), p, tk.tgid),
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

/// The CPU mask of CPUs `0..nr_cpus` as `cpumap_print_to_pagebuf` (`%*pb`) prints
/// it, without its newline: 32-bit chunks in hex, most significant first, comma
/// separated, the first zero-padded to the digits of its own width.
pub fn cpumap_hex(nr_cpus: usize) -> String {
    let mut chunks = vec![];
    let mut left = nr_cpus;
    while left > 0 {
        let n = left.min(32);
        chunks.push((n, if n == 32 { u32::MAX } else { (1u32 << n) - 1 }));
        left -= n;
    }
    // The most significant chunk is the last (partial) one.
    let mut s = String::new();
    for (i, (n, v)) in chunks.iter().rev().enumerate() {
        if i > 0 {
            s.push(',');
        }
        let w = if i == 0 { n.div_ceil(4) } else { 8 };
        let _ = write!(s, "{v:0w$x}");
    }
    s
}

/// Call `f` with the trace record of every tracepoint of `log`
/// ([`EventLog::tracepoints`]) of a run on `nr_cpus` CPUs with tasks `tasks`
/// (indexed by pid) that the trace shows.
pub fn for_each_record(
    log: &EventLog,
    tasks: &[Task],
    nr_cpus: usize,
    mut f: impl FnMut(&TraceRecord),
) {
    let events = log.tracepoints();
    let mut lines = Lines {
        tasks,
        nr_cpus,
        curr: vec![None; nr_cpus],
        comms: Comms::new(tasks, &events),
    };
    for &(t, ref e) in &events {
        if let Some(r) = lines.event(t, e) {
            f(&r);
        }
    }
}

/// One text line of `r`.
fn line(s: &mut String, r: &TraceRecord, layout: Layout) {
    // `ns2usecs`: the ns clock rounded to the nearest µs.
    let us = (r.ts + 500) / 1000;
    let (secs, usec) = (us / 1_000_000, us % 1_000_000);
    let (pid_w, flags) = match (layout.kernel, r.irqs_off()) {
        (LayoutKernel::V5_6, true) => (5, "d..."),
        (LayoutKernel::V5_6, false) => (5, "...."),
        (LayoutKernel::V6, true) => (7, "d..2."),
        (LayoutKernel::V6, false) => (7, "....."),
    };
    let _ = write!(s, "{:>16}-{:<pid_w$} [{:03}] ", r.comm, r.pid, r.cpu);
    if layout.irq_info {
        s.push_str(flags);
    }
    if r.event == "print" {
        // `trace_print_print`: the writer's symbol (`%ps`), then the buffer.
        let field = |k: &str| {
            r.fields
                .iter()
                .find(|(n, _)| *n == k)
                .map_or(String::new(), |(_, v)| v.to_string())
        };
        let _ = writeln!(s, " {secs:>5}.{usec:06}: {}: {}", field("ip"), field("buf"));
        return;
    }
    let _ = write!(s, " {secs:>5}.{usec:06}: {}:", r.event);
    for (k, v) in &r.fields {
        if *k == "next_comm" {
            s.push_str(" ==>");
        }
        let _ = write!(s, " {k}={v}");
    }
    s.push('\n');
}

/// Render the tracepoints of `log` of a run on `nr_cpus` CPUs with tasks `tasks`
/// (indexed by pid) as ftrace text in `layout`.
pub fn render(log: &EventLog, tasks: &[Task], nr_cpus: usize, layout: Layout) -> String {
    let mut body = String::new();
    let mut n = 0;
    for_each_record(log, tasks, nr_cpus, |r| {
        n += 1;
        line(&mut body, r, layout);
    });
    let mut s = String::with_capacity(body.len() + 1024);
    header(&mut s, n, nr_cpus, layout);
    s.push_str(&body);
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(ts: SimTime) -> TraceRecord {
        TraceRecord {
            ts,
            cpu: 3,
            pid: 42,
            tgid: 42,
            comm: "hackbench".into(),
            event: "sched_waking",
            fields: vec![
                ("comm", FieldVal::Str("worker".into())),
                ("pid", FieldVal::Int(7)),
                ("prio", FieldVal::Int(120)),
                ("target_cpu", FieldVal::Cpu(5)),
            ],
        }
    }

    #[test]
    fn a_marker_prints_as_tracefs_prints_a_print_event() {
        let r = TraceRecord {
            ts: 1_500_000_000,
            cpu: 1,
            pid: 4,
            tgid: 1,
            comm: "big-1".into(),
            event: "print",
            fields: vec![
                ("ip", FieldVal::Str(MARKER_IP_SYM.into())),
                (
                    "buf",
                    FieldVal::Str(
                        "rtapp_loop: event=start thread_loop=0 phase=1 phase_loop=2".into(),
                    ),
                ),
            ],
        };
        let mut s = String::new();
        line(&mut s, &r, Layout::V5_6);
        assert_eq!(
            s,
            "           big-1-4     [001] ....     1.500000: tracing_mark_write: rtapp_loop: event=start thread_loop=0 phase=1 phase_loop=2\n"
        );
    }

    #[test]
    fn lines_are_laid_out_as_trace_print_context_prints_them() {
        // 1 234.567 890 5 s: ns2usecs rounds the half up to ...891.
        let mut s = String::new();
        line(&mut s, &rec(1_234_567_890_500), Layout::V5_6);
        assert_eq!(
            s,
            "       hackbench-42    [003] d...  1234.567891: sched_waking: comm=worker pid=7 prio=120 target_cpu=005\n"
        );
        // Fork and exit fire with interrupts on.
        let mut s = String::new();
        let fork = TraceRecord {
            event: "sched_process_fork",
            ..rec(0)
        };
        line(&mut s, &fork, Layout::V5_6);
        assert!(
            s.contains("] ....     0.000000: sched_process_fork:"),
            "{s}"
        );
        let mut s = String::new();
        line(&mut s, &fork, Layout::V6);
        assert!(
            s.contains("] .....     0.000000: sched_process_fork:"),
            "{s}"
        );
        let mut s = String::new();
        line(&mut s, &rec(999), Layout::V6);
        assert_eq!(
            s,
            "       hackbench-42      [003] d..2.     0.000001: sched_waking: comm=worker pid=7 prio=120 target_cpu=005\n"
        );
        assert_eq!(Layout::of_kernel("v5.10"), Layout::V5_6);
        assert_eq!(Layout::of_kernel("v6.12"), Layout::V6);
        assert_eq!(Layout::by_name("v6"), Some(Layout::V6));
        assert_eq!(Layout::by_name("v7"), None);
    }

    #[test]
    fn the_legend_matches_the_columns() {
        // The `|` under each flag sits in the flags' columns of a line.
        for (layout, nflags) in [(Layout::V5_6, 4), (Layout::V6, 5)] {
            let mut h = String::new();
            header(&mut h, 1, 4, layout);
            let mut l = String::new();
            line(&mut l, &rec(0), layout);
            let flags_at = l.find("] ").unwrap() + 2;
            let bars = h.lines().last().unwrap();
            assert_eq!(
                &bars[flags_at..flags_at + nflags],
                &"|||||"[..nflags],
                "{layout:?}\n{h}{l}"
            );
        }
    }
}
