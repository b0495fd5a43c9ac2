//! Task placement at wakeup, fork and exec: `select_task_rq_fair` (fair.c, v5.6).
//!
//! **Currently a `SIM_` stand-in** until the v5.6 wakeup path lands: a wakeup stays
//! on `prev_cpu`, a fork or exec on the parent's CPU.

use crate::engine::Observer;
use crate::sched::core::Kernel;
use crate::sched::{Pid, SchedEvent, WakeKind};

impl<O: Observer<SchedEvent>> Kernel<O> {
    /// `SIM_` placement stand-in (replaced by the v5.6 `select_task_rq_fair`).
    pub(crate) fn select_task_rq_fair(
        &mut self,
        pid: Pid,
        prev_cpu: usize,
        kind: WakeKind,
        _wake_flags: u32,
        this_cpu: usize,
    ) -> usize {
        let (cpu, reason) = match kind {
            WakeKind::Wakeup => (prev_cpu, "SIM_prev_cpu"),
            WakeKind::Fork | WakeKind::Exec | WakeKind::Balance => (this_cpu, "SIM_parent_cpu"),
        };
        self.emit(SchedEvent::Placement {
            pid,
            kind,
            prev_cpu,
            cpu,
            reason,
        });
        cpu
    }
}
