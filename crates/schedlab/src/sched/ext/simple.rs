//! `simple`: a global queue, weighted vtime (the default, `[kernel] scheduler =
//! "simple"`) or FIFO (`"simple-fifo"`, the example's `-f`), in the style of the kernel's
//! `scx_simple` example (tools/sched_ext, v6.12; written here from its documented
//! policy, docs/design/sched-ext-6.12.md §7.1).
//!
//! A waking task goes to the CPU the built-in search picks; if that CPU is idle the
//! task is dispatched straight to its local DSQ. Otherwise it joins one shared DSQ,
//! in arrival order (FIFO) or by virtual time. Every CPU with an empty local DSQ
//! consumes the shared DSQ's head. In vtime mode a task's vtime advances by the
//! slice it used scaled by 100 / weight when it stops, and a task that slept is
//! brought up to no more than one default slice behind the global vtime, so sleeping
//! earns no more than a slice of credit.

use super::{dsq::time_before64, op, Kf, ScxOps, ScxTask, SCX_SLICE_DFL};
use crate::abi::Pid;

/// The ops of the queue-based reference schedulers (`simple`, `llc-vtime`).
pub(super) const QUEUE_OPS: u32 = op::SELECT_CPU
    | op::ENQUEUE
    | op::DISPATCH
    | op::RUNNING
    | op::STOPPING
    | op::ENABLE
    | op::INIT;

/// The built-in search's CPU, with a direct dispatch there when it is idle (both
/// `simple` and `llc-vtime` place wakeups this way).
pub(super) fn select_cpu_idle_direct(kf: &mut Kf, p: Pid, prev_cpu: i32, wake_flags: u64) -> i32 {
    let (cpu, idle) = kf.select_cpu_dfl(p, prev_cpu, wake_flags);
    if idle {
        kf.dispatch(p, super::dsq::SCX_DSQ_LOCAL, SCX_SLICE_DFL, 0);
    }
    cpu
}

/// A waking task's key: its vtime, but no more than one default slice behind the
/// clock `now` (the most credit sleeping earns).
pub(super) fn credited_vtime(v: u64, now: u64) -> u64 {
    let floor = now.wrapping_sub(SCX_SLICE_DFL);
    if time_before64(v, floor) {
        floor
    } else {
        v
    }
}

/// A stopping task's vtime: advanced by the slice it used × 100 / weight.
pub(super) fn charged_vtime(t: &ScxTask) -> u64 {
    let used = SCX_SLICE_DFL - t.slice.min(SCX_SLICE_DFL);
    t.dsq_vtime.wrapping_add(used * 100 / t.weight as u64)
}

/// The shared DSQ's id.
pub const SHARED_DSQ: u64 = 0;

/// The `simple` scheduler.
#[derive(Debug, Default)]
pub struct Simple {
    /// Vtime ordering instead of FIFO.
    pub vtime: bool,
    /// The highest vtime a running task has started with.
    pub vtime_now: u64,
}

impl Simple {
    pub fn fifo() -> Self {
        Simple::default()
    }

    pub fn weighted() -> Self {
        Simple {
            vtime: true,
            vtime_now: 0,
        }
    }
}

impl ScxOps for Simple {
    fn name(&self) -> &str {
        "simple"
    }

    fn implemented(&self) -> u32 {
        QUEUE_OPS
    }

    fn init(&mut self, kf: &mut Kf) -> Result<(), i32> {
        kf.create_dsq(SHARED_DSQ)
    }

    fn select_cpu(&mut self, kf: &mut Kf, p: Pid, prev_cpu: i32, wake_flags: u64) -> i32 {
        select_cpu_idle_direct(kf, p, prev_cpu, wake_flags)
    }

    fn enqueue(&mut self, kf: &mut Kf, p: Pid, enq_flags: u64) {
        if !self.vtime {
            kf.dispatch(p, SHARED_DSQ, SCX_SLICE_DFL, enq_flags);
            return;
        }
        let v = credited_vtime(kf.task(p).dsq_vtime, self.vtime_now);
        kf.dispatch_vtime(p, SHARED_DSQ, SCX_SLICE_DFL, v, enq_flags);
    }

    fn dispatch(&mut self, kf: &mut Kf, _cpu: i32, _prev: Option<Pid>) {
        kf.consume(SHARED_DSQ);
    }

    fn running(&mut self, kf: &mut Kf, p: Pid) {
        if self.vtime && time_before64(self.vtime_now, kf.task(p).dsq_vtime) {
            self.vtime_now = kf.task(p).dsq_vtime;
        }
    }

    fn stopping(&mut self, kf: &mut Kf, p: Pid, _runnable: bool) {
        if !self.vtime {
            return;
        }
        let v = charged_vtime(kf.task(p));
        kf.set_dsq_vtime(p, v);
    }

    fn enable(&mut self, kf: &mut Kf, p: Pid) {
        kf.set_dsq_vtime(p, self.vtime_now);
    }
}
