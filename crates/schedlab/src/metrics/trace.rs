//! The decision trace: one line per scheduling decision, for golden tests and for
//! users asking "why did this task land there?".
//!
//! Lines are `<time ns> <event> key=value ...`, stable and diff-able. Formats for
//! external tools (Perfetto, ftrace text) are written from the same events later.

use crate::engine::{Observer, SimTime};
use crate::sched::{SchedEvent, WakeKind};
use std::fmt::Write;

/// Text trace of decisions, optionally bounded to a time window.
#[derive(Clone, Debug, Default)]
pub struct DecisionTrace {
    pub text: String,
    pub lines: u64,
    pub window: Option<(SimTime, SimTime)>,
}

fn opt(p: Option<u32>) -> String {
    p.map(|p| p.to_string()).unwrap_or_else(|| "idle".into())
}

impl Observer<SchedEvent> for DecisionTrace {
    fn observe(&mut self, now: SimTime, ev: &SchedEvent) {
        if let Some((a, b)) = self.window {
            if now < a || now > b {
                return;
            }
        }
        let t = &mut self.text;
        let _ = match *ev {
            SchedEvent::Switch {
                cpu,
                prev,
                prev_state,
                next,
            } => {
                // ftrace's letters without the preemption mark (`R+` is `R`).
                let st = prev_state.letters().trim_end_matches('+');
                writeln!(
                    t,
                    "{now} switch cpu={cpu} prev={} prev_state={st} next={}",
                    opt(prev),
                    opt(next)
                )
            }
            SchedEvent::Waking {
                pid,
                waker_cpu,
                target_cpu,
            } => {
                writeln!(
                    t,
                    "{now} waking pid={pid} waker_cpu={waker_cpu} prev_cpu={target_cpu}"
                )
            }
            SchedEvent::Wakeup { pid, cpu, new, .. } => {
                writeln!(
                    t,
                    "{now} {} pid={pid} cpu={cpu}",
                    if new { "wakeup_new" } else { "wakeup" }
                )
            }
            SchedEvent::Migrate {
                pid,
                orig_cpu,
                dest_cpu,
                level,
            } => {
                writeln!(
                    t,
                    "{now} migrate pid={pid} orig_cpu={orig_cpu} dest_cpu={dest_cpu} level={}",
                    level.name()
                )
            }
            SchedEvent::Placement {
                pid,
                kind,
                prev_cpu,
                cpu,
                reason,
            } => {
                let k = match kind {
                    WakeKind::Wakeup => "wake",
                    WakeKind::Fork => "fork",
                    WakeKind::Exec => "exec",
                    WakeKind::Balance => "balance",
                };
                writeln!(
                    t,
                    "{now} place pid={pid} kind={k} prev_cpu={prev_cpu} cpu={cpu} reason={reason}"
                )
            }
            SchedEvent::Fork { parent, child, cpu } => {
                writeln!(
                    t,
                    "{now} fork parent={} child={child} cpu={cpu}",
                    opt(parent)
                )
            }
            SchedEvent::Exit { pid, cpu } => writeln!(t, "{now} exit pid={pid} cpu={cpu}"),
            // Names are not decisions: the decision trace names no task.
            SchedEvent::Rename { .. } | SchedEvent::Marker { .. } | SchedEvent::SchedTp(_) => {
                return
            }
            SchedEvent::IdleEnter { cpu, state } => {
                writeln!(t, "{now} idle_enter cpu={cpu} state={state}")
            }
            SchedEvent::IdleExit { cpu, .. } => writeln!(t, "{now} idle_exit cpu={cpu}"),
            SchedEvent::Probe {
                cpu,
                target,
                idle,
                nr_running,
            } => writeln!(
                t,
                "{now} probe cpu={cpu} target={target} idle={} nr_running={nr_running}",
                u8::from(idle)
            ),
            SchedEvent::CpuFrequency { cpu, freq_khz } => {
                writeln!(t, "{now} cpu_frequency state={freq_khz} cpu_id={cpu}")
            }
            SchedEvent::CfsRq {
                cpu,
                nr_running,
                util_avg,
            } => writeln!(
                t,
                "{now} cfs_rq cpu={cpu} nr_running={nr_running} util_avg={util_avg}"
            ),
            SchedEvent::FuncCall {
                func,
                cpu,
                probed,
                cost_ns,
                skipped,
            } => write!(
                t,
                "{now} func {} cpu={cpu} probed={probed} cost_ns={cost_ns}",
                func.name()
            )
            .and_then(|()| match skipped {
                0 => writeln!(t),
                n => writeln!(t, " skipped={n}"),
            }),
        };
        self.lines += 1;
    }
}
