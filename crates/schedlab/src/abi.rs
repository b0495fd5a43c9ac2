//! The user-visible vocabulary every floor shares: what a task is called and what it
//! asks the kernel for.
//!
//! A Linux task meets the scheduler through a small ABI: its id (`pid`, a thread's
//! tid), its scheduling policy (`SCHED_OTHER`, `SCHED_BATCH`, `SCHED_IDLE`, set with
//! `sched_setscheduler`), and, when one task wakes another, the hint the waking path
//! carries in its wake flags (`WF_SYNC`: the waker is about to sleep, as a pipe
//! writer that blocks on the reply). The kernel model (`sched`), the workload
//! descriptions (`workload`: programs, generators, rt-app files) and the run loop
//! (`sim`) all speak this vocabulary, so it lives here, on the ground floor, beside
//! nothing else: this module imports nothing from the crate.
//!
//! The wake-flag values are those of seed 002 ("sched: Add WF_TTWU, WF_EXEC wakeup
//! flags", v5.8's `kernel/sched/sched.h`): the kind of placement travels in the
//! flags, not in a separate `sd_flag` argument. A task's own wakeups only ever carry
//! `WF_SYNC`; `WF_TTWU`, `WF_FORK` and `WF_EXEC` are added by the kernel's own paths
//! (`try_to_wake_up`, `wake_up_new_task`, `sched_exec`) and `WF_MIGRATED` by the
//! migration that follows a placement.

/// A task id (the kernel's `pid`; tid for threads). 0 is the idle task.
pub type Pid = u32;

/// A fair-class task's default timer slack (`current->timer_slack_ns`, 50 µs):
/// its hrtimer sleeps expire this much after the time asked for.
pub const TIMER_SLACK_NS: u64 = 50_000;

/// Scheduling policy (`sched_setscheduler`'s `SCHED_*` of the fair class).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Policy {
    /// `SCHED_OTHER` (`SCHED_NORMAL`).
    Normal,
    /// `SCHED_BATCH`: never preempts on wakeup.
    Batch,
    /// `SCHED_IDLE`: the lowest weight, and idle for placement's `sched_idle_cpu`.
    Idle,
}

/// `WF_SYNC`: the waker is about to sleep.
pub const WF_SYNC: u32 = 0x01;
/// `WF_TTWU`: a regular wakeup (`try_to_wake_up`).
pub const WF_TTWU: u32 = 0x02;
/// `WF_FORK`: a new task's first wakeup.
pub const WF_FORK: u32 = 0x04;
/// `WF_EXEC`: the "fake" wakeup of exec balancing.
pub const WF_EXEC: u32 = 0x08;
/// `WF_MIGRATED`: the wakee changed CPU.
pub const WF_MIGRATED: u32 = 0x10;

/// What rt-app's main thread reports in its `rtapp_main` ftrace markers
/// (`event=start|shutdown|end`): a line a task writes to tracefs' `trace_marker`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum MainEvent {
    Start,
    Shutdown,
    End,
}
