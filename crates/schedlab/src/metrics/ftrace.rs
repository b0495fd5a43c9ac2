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

/// Render `events` (in time order) of a run on `nr_cpus` CPUs with tasks `tasks`
/// (indexed by pid) as ftrace text.
pub fn render(events: &[(SimTime, SchedEvent)], tasks: &[Task], nr_cpus: usize) -> String {
    let mut s = String::new();
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
    let task = |p: u32| tasks.get(p as usize).filter(|_| p != 0);
    let prio = |p: u32| task(p).map_or(120, |t| 120 + t.nice);
    let mut curr: Vec<Option<u32>> = vec![None; nr_cpus];
    let mut waker_cpu: Vec<usize> = vec![0; tasks.len()];
    let line =
        |s: &mut String, t: SimTime, cpu: usize, who: Option<u32>, ev: &str, payload: String| {
            let (name, pid, tgid) = match who.and_then(|p| task(p).map(|tk| (p, tk))) {
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
        };
    for &(t, ref e) in events {
        match *e {
            SchedEvent::Switch {
                cpu,
                prev,
                prev_state,
                next,
            } => {
                let st = if prev.is_some() {
                    prev_state.letters()
                } else {
                    "R"
                };
                let pc = |p: Option<u32>| match p {
                    Some(p) => (comm(task(p)), p, prio(p)),
                    None => (format!("swapper/{cpu}"), 0, 120),
                };
                let (pn, pp, ppr) = pc(prev);
                let (nn, np, npr) = pc(next);
                line(
                    &mut s,
                    t,
                    cpu,
                    prev,
                    "sched_switch",
                    format!("prev_comm={pn} prev_pid={pp} prev_prio={ppr} prev_state={st} ==> next_comm={nn} next_pid={np} next_prio={npr}"),
                );
                if cpu < nr_cpus {
                    curr[cpu] = next;
                }
            }
            SchedEvent::Waking {
                pid,
                waker_cpu: w,
                target_cpu,
            } => {
                if let Some(slot) = waker_cpu.get_mut(pid as usize) {
                    *slot = w;
                }
                line(
                    &mut s,
                    t,
                    w,
                    curr.get(w).copied().flatten(),
                    "sched_waking",
                    format!(
                        "comm={} pid={pid} prio={} target_cpu={target_cpu:03}",
                        comm(task(pid)),
                        prio(pid)
                    ),
                );
            }
            SchedEvent::Wakeup { pid, cpu, new } => {
                let w = waker_cpu.get(pid as usize).copied().unwrap_or(cpu);
                line(
                    &mut s,
                    t,
                    w,
                    curr.get(w).copied().flatten(),
                    if new {
                        "sched_wakeup_new"
                    } else {
                        "sched_wakeup"
                    },
                    format!(
                        "comm={} pid={pid} prio={} target_cpu={cpu:03}",
                        comm(task(pid)),
                        prio(pid)
                    ),
                );
            }
            SchedEvent::Migrate {
                pid,
                orig_cpu,
                dest_cpu,
                ..
            } => line(
                &mut s,
                t,
                orig_cpu,
                curr.get(orig_cpu).copied().flatten(),
                "sched_migrate_task",
                format!(
                    "comm={} pid={pid} prio={} orig_cpu={orig_cpu} dest_cpu={dest_cpu}",
                    comm(task(pid)),
                    prio(pid)
                ),
            ),
            SchedEvent::Fork { parent, child, cpu } => {
                let (pn, pp) = match parent {
                    Some(p) => (comm(task(p)), p),
                    None => ("<idle>".to_string(), 0),
                };
                line(
                    &mut s,
                    t,
                    cpu,
                    parent,
                    "sched_process_fork",
                    format!(
                        "comm={pn} pid={pp} child_comm={} child_pid={child}",
                        comm(task(child))
                    ),
                );
            }
            SchedEvent::Exit { pid, cpu } => line(
                &mut s,
                t,
                cpu,
                Some(pid),
                "sched_process_exit",
                format!("comm={} pid={pid} prio={}", comm(task(pid)), prio(pid)),
            ),
            SchedEvent::IdleEnter { cpu, state } => line(
                &mut s,
                t,
                cpu,
                None,
                "cpu_idle",
                format!("state={state} cpu_id={cpu}"),
            ),
            SchedEvent::IdleExit { cpu } => line(
                &mut s,
                t,
                cpu,
                None,
                "cpu_idle",
                format!("state=4294967295 cpu_id={cpu}"),
            ),
            SchedEvent::CpuFrequency { cpu, freq_khz } => line(
                &mut s,
                t,
                cpu,
                curr.get(cpu).copied().flatten(),
                "cpu_frequency",
                format!("state={freq_khz} cpu_id={cpu}"),
            ),
            SchedEvent::Placement { .. }
            | SchedEvent::FuncCall { .. }
            | SchedEvent::Probe { .. }
            | SchedEvent::CfsRq { .. } => {}
        }
    }
    s
}
