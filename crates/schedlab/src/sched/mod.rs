//! The kernel model, laid out like `kernel/sched/`.
//!
//! [`core::Kernel`] owns the runqueues and tasks and implements the core scheduler
//! (`try_to_wake_up`, `schedule`, `scheduler_tick`, idle entry and exit); the fair
//! class lives in [`fair`]; [`topology`] builds sched domains; [`pelt`] is the load
//! tracking arithmetic; [`features`] holds `SchedFeat` and the tunables. What
//! happens is reported to an [`Observer`](crate::engine::Observer) of [`SchedEvent`]s.

pub(crate) mod affinity;
pub mod core;
pub mod cpufreq;
pub mod cpuidle;
pub mod ext;
mod ext_class;
pub mod fair;
pub mod features;
pub mod pelt;
pub mod topology;
mod vcpu_host;

use crate::machine::SharedLevel;

pub use crate::abi::{MainEvent, Pid, WF_EXEC, WF_FORK, WF_MIGRATED, WF_SYNC, WF_TTWU};

/// The placement kind a set of wake flags carries.
pub(crate) fn wake_kind_of(wake_flags: u32) -> WakeKind {
    match wake_flags & (WF_TTWU | WF_FORK | WF_EXEC) {
        WF_TTWU => WakeKind::Wakeup,
        WF_FORK => WakeKind::Fork,
        _ => WakeKind::Exec,
    }
}

/// Events of the simulated machine, for the engine's queue. Kept small (16 bytes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event {
    /// The current task's segment (or the CPU's pending kernel work) ends.
    SegDone { cpu: u32, gen: u32 },
    /// The periodic scheduler tick (stopped on an idle CPU unless the idle governor
    /// keeps it: NO_HZ idle).
    Tick { cpu: u32, gen: u32 },
    /// A reschedule request reaches `cpu` (local preemption point or IPI arrival).
    Resched { cpu: u32, gen: u32 },
    /// The wakeup IPI for `cpu`'s wake_list arrives (`sched_ttwu_pending`).
    WakeIpi { cpu: u32 },
    /// A task's hrtimer (nanosleep) expires (on the CPU that armed it).
    Timer { pid: Pid, gen: u32 },
    /// The active-balance stopper runs on `cpu` (the busiest CPU), after the IPI.
    ActiveBalance { cpu: u32 },
    /// The migration stopper runs on `cpu` for `pid`, left on a CPU its new
    /// affinity excludes (`migration_cpu_stop`, sched/affinity.rs).
    MigrationStop { cpu: u32, pid: Pid },
    /// The nohz idle-balance kick IPI reaches `cpu` (`kick_ilb`).
    IlbKick { cpu: u32 },
    /// The softlockup watchdog's per-CPU hrtimer (`watchdog_timer_fn`) fires.
    Watchdog { cpu: u32 },
    /// A sched_ext scheduler's BPF timer `id` (arming `gen`) expires on `cpu`.
    ScxTimer { cpu: u32, id: u32, gen: u32 },
    /// The sched_ext watchdog's work (`scx_watchdog_workfn`), every timeout / 2.
    ScxWatchdog,
    /// A software idle loop (`poll_idle`, powernv's `snooze_loop`) on `cpu` reaches
    /// its time limit.
    PollEnd { cpu: u32, gen: u32 },
    /// The host's slice of the vCPU that has run longest ends (an emulated
    /// machine's shared host, SIM_VCPU_HOST).
    HostSlice { gen: u32 },
    /// A workload-owned event (run deadline, ...).
    Workload { id: u32, arg: u32 },
}

/// Why a task is not running when it leaves the CPU (`prev_state` of sched_switch).
///
/// A task switched out still runnable shows `R` or `R+` by *how* `__schedule` was
/// entered, not by why the CPU picked again: `__trace_sched_switch_state(preempt, p)`
/// reports `TASK_REPORT_MAX` (`R+`) only for `__schedule(true)`, the kernel-mode
/// preemption points (`preempt_schedule*`, and `_cond_resched` / `might_resched`,
/// which go through `preempt_schedule_common`). The modelled kernels are built
/// without `CONFIG_PREEMPTION` (Debian's 5.10 and 6.12 are `PREEMPT_VOLUNTARY`), so a
/// task preempted by the tick or by a wakeup, which the model runs in user mode,
/// reschedules on its way back to user space through plain `schedule()`: `R`, as
/// the oracle's real 5.10 trace shows for its spinning `hog`s. So does `sched_yield`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum PrevState {
    /// Still runnable, switched out through `schedule()` (`R`: return to user
    /// mode with `TIF_NEED_RESCHED`, or a yield).
    Runnable,
    /// Still runnable, switched out at a kernel-mode preemption point (`R+`): in
    /// the model only a task moving itself off its CPU, preempted by the stopper
    /// at `wait_for_completion`'s `might_sleep()` (sched/affinity.rs).
    Preempted,
    Sleeping,
    Dead,
}

impl PrevState {
    /// The `prev_state` field of `sched_switch` as v5.6's
    /// `__trace_sched_switch_state` reports it: `TASK_REPORT_MAX` (0x100) for a
    /// preempted task, else `1 << (task_state_index − 1)`, or 0 for a running one:
    /// 0 for R, 1 for S (TASK_INTERRUPTIBLE), 0x10 for X (EXIT_DEAD).
    pub(crate) fn bits(self) -> i64 {
        match self {
            PrevState::Runnable => 0,
            PrevState::Preempted => 0x100,
            PrevState::Sleeping => 1,
            PrevState::Dead => 0x10,
        }
    }

    /// The same state as ftrace prints it (`R`, `R+`, `S`, `X`).
    pub(crate) fn letters(self) -> &'static str {
        match self {
            PrevState::Runnable => "R",
            PrevState::Preempted => "R+",
            PrevState::Sleeping => "S",
            PrevState::Dead => "X",
        }
    }

    /// Still on the runqueue after the switch (`R` or `R+`).
    pub fn is_runnable(self) -> bool {
        matches!(self, PrevState::Runnable | PrevState::Preempted)
    }
}

/// Kind of placement decision.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum WakeKind {
    Wakeup,
    Fork,
    Exec,
    /// A migration by the load balancer (`load_balance`, active balance).
    Balance,
}

/// Idle-search and placement functions whose calls, probes and cost are counted.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
pub enum Func {
    SelectTaskRqFair,
    SelectIdleSibling,
    SelectIdleCore,
    SelectIdleCpu,
    SelectIdleSmt,
    FindIdlestCpu,
    /// One `load_balance` pass (probed = CPUs whose statistics were gathered).
    LoadBalance,
    /// Seed 003's `smt_balance` (inclusive of its `select_idle_smt`).
    SmtBalance,
}

impl Func {
    pub const ALL: [Func; 8] = [
        Func::SelectTaskRqFair,
        Func::SelectIdleSibling,
        Func::SelectIdleCore,
        Func::SelectIdleCpu,
        Func::SelectIdleSmt,
        Func::FindIdlestCpu,
        Func::LoadBalance,
        Func::SmtBalance,
    ];
    pub fn name(self) -> &'static str {
        match self {
            Func::SelectTaskRqFair => "select_task_rq_fair",
            Func::SelectIdleSibling => "select_idle_sibling",
            Func::SelectIdleCore => "select_idle_core",
            Func::SelectIdleCpu => "select_idle_cpu",
            Func::SelectIdleSmt => "select_idle_smt",
            Func::FindIdlestCpu => "find_idlest_cpu",
            Func::LoadBalance => "load_balance",
            Func::SmtBalance => "smt_balance",
        }
    }
}

/// What the scheduler reports. Field names follow the tracepoints where one exists.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub enum SchedEvent {
    /// `sched_switch`; `None` is the idle task.
    Switch {
        cpu: usize,
        prev: Option<Pid>,
        prev_state: PrevState,
        next: Option<Pid>,
    },
    /// `sched_waking`, on the waker's CPU, before placement.
    Waking {
        pid: Pid,
        waker_cpu: usize,
        target_cpu: usize,
    },
    /// `sched_wakeup` / `sched_wakeup_new`: the task is enqueued on `cpu` by
    /// `from_cpu`, the CPU running `ttwu_do_wakeup` (the waker's, or with
    /// TTWU_QUEUE the target itself when it processes its wake_list).
    Wakeup {
        pid: Pid,
        cpu: usize,
        new: bool,
        from_cpu: usize,
    },
    /// `sched_migrate_task`.
    Migrate {
        pid: Pid,
        orig_cpu: usize,
        dest_cpu: usize,
        level: SharedLevel,
    },
    /// A placement decision and why it was taken.
    Placement {
        pid: Pid,
        kind: WakeKind,
        prev_cpu: usize,
        cpu: usize,
        #[serde(deserialize_with = "crate::engine::wire::de_static")]
        reason: crate::engine::wire::Name,
    },
    /// `sched_process_fork` (parent `None`: started by the scenario).
    Fork {
        parent: Option<Pid>,
        child: Pid,
        cpu: usize,
    },
    /// `sched_process_exit`.
    Exit { pid: Pid, cpu: usize },
    /// `task_rename`: the task running on `cpu` sets its own comm to its name
    /// (`__set_task_comm`, from rt-app's `pthread_setname_np` in `thread_body`);
    /// until then it shows the comm it inherited from its parent at fork.
    Rename { pid: Pid, cpu: usize },
    /// `cpu_idle` entry into state `state` (index into the CPU's idle table).
    IdleEnter { cpu: usize, state: usize },
    /// The CPU starts leaving its cpuidle state (an interrupt or IPI arrived, or a
    /// polling loop ended): it is awake `exit_ns` later, the state's exit latency
    /// (0 for a polling state). `cpuidle_enter_state` fires the `cpu_idle` exit
    /// (`state=4294967295`) once the state's `enter()` returns, i.e. at the end of
    /// that latency: the trace writers print it there ([`crate::metrics::EventLog::tracepoints`]).
    IdleExit { cpu: usize, exit_ns: u64 },
    /// One CPU read by a placement search running on `cpu` (only with probe logging,
    /// for `schedlab explain`): its state as the search saw it. Every `FuncCall`
    /// covers the last `probed` of these before it.
    Probe {
        cpu: usize,
        target: usize,
        idle: bool,
        nr_running: u32,
    },
    /// `cpu_frequency`: `cpu` runs at `freq_khz` from now on (one event per CPU of
    /// the policy).
    CpuFrequency { cpu: usize, freq_khz: u32 },
    /// `cpu`'s root cfs_rq after an operation that changed its `nr_running` or its
    /// PELT `util_avg` (enqueue, dequeue, put/set of the current task, tick, new-task
    /// attach, detach for a migration, blocked-load update). Only with counter logging
    /// (`crate::sched::core::Kernel::set_log_counters`, for the Perfetto counter
    /// tracks): what the bare tracepoints `sched_update_nr_running_tp` (v5.9) and
    /// `pelt_cfs_tp` (v5.2) let a module read.
    CfsRq {
        cpu: usize,
        nr_running: u32,
        util_avg: u64,
    },
    /// One call of an instrumented function: CPUs probed, simulated ns charged.
    FuncCall {
        func: Func,
        cpu: usize,
        probed: u32,
        cost_ns: u64,
        /// CPUs the call did not have to probe because an earlier scan of the same
        /// wakeup had seen them busy (seed 000, `IDLE_CPU_MASK`).
        skipped: u32,
    },
    /// A `print` event: what the task `pid` running on `cpu` wrote to tracefs'
    /// `trace_marker` (rt-app's ftrace markers, [`Marker`]).
    Marker {
        cpu: usize,
        pid: Pid,
        marker: Marker,
    },
    /// One of LISA's `sched_tp` module events, fired from the bare tracepoint the
    /// module attaches to (only with sched_tp logging:
    /// `crate::sched::core::Kernel::set_log_sched_tp`).
    SchedTp(SchedTp),
}

/// The events of LISA's `sched_tp` kernel module (`lisa/_assets/kmodules/sched_tp`,
/// `ftrace_events.h`), with the values its probes read. Signals are the kernel's
/// (`util_avg` on the 1024 scale, `load_avg`, ...); `update_time` is the PELT
/// clock (ns) of the last update. The model has no task groups: every cfs_rq is a
/// root (`path=/`) and every entity a task (`path=(null)`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum SchedTp {
    /// `sched_pelt_cfs` (`pelt_cfs_tp`): `cpu`'s root cfs_rq after a PELT update
    /// that crossed a period, or an attach or detach of an entity's load.
    PeltCfs {
        cpu: u32,
        load: u32,
        rbl_load: u32,
        util: u32,
        update_time: u64,
    },
    /// `sched_pelt_se` (`pelt_se_tp`): task `pid`'s entity on `cpu`'s cfs_rq
    /// after a PELT update that crossed a period.
    PeltSe {
        cpu: u32,
        pid: Pid,
        load: u32,
        rbl_load: u32,
        util: u32,
        update_time: u64,
    },
    /// `sched_util_est_cfs` (`sched_util_est_cfs_tp`, v5.9+): `cpu`'s root cfs_rq
    /// after a task's estimate was added or taken out.
    UtilEstCfs {
        cpu: u32,
        enqueued: u32,
        ewma: u32,
        util: u32,
    },
    /// `sched_util_est_se` (`sched_util_est_se_tp`, v5.9+): task `pid`'s estimate
    /// after `util_est_update` wrote it (`enqueued` without the unchanged flag).
    UtilEstSe {
        cpu: u32,
        pid: Pid,
        enqueued: u32,
        ewma: u32,
        util: u32,
    },
    /// `sched_cpu_capacity` (`sched_cpu_capacity_tp`, v5.10+, arm and arm64):
    /// `update_cpu_capacity` on `cpu`; `capacity_curr` is `capacity_orig` scaled
    /// by the current frequency.
    CpuCapacity {
        cpu: u32,
        capacity: u32,
        capacity_orig: u32,
        capacity_curr: u32,
    },
    /// `sched_overutilized` (`sched_overutilized_tp`): the root domain's
    /// overutilized flag written (its span is every CPU), by code running on
    /// `cpu`.
    Overutilized { cpu: u32, overutilized: bool },
}

/// Which of LISA's `sched_tp` events the modelled kernel can give: the module
/// attaches to bare tracepoints, which exist from a given release on (and
/// `sched_cpu_capacity` is built for arm and arm64 only).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct SchedTpSet {
    /// `sched_pelt_cfs`, `sched_pelt_se`, `sched_overutilized` (v5.3+).
    pub pelt: bool,
    /// `sched_util_est_cfs`, `sched_util_est_se` (v5.9+).
    pub util_est: bool,
    /// `sched_cpu_capacity` (v5.10+, arm/arm64).
    pub cpu_capacity: bool,
}

impl SchedTpSet {
    /// The events LISA's module gives on release `(major, minor)` of an arm
    /// machine (`arm`) or another.
    pub fn of(version: (u32, u32), arm: bool) -> SchedTpSet {
        SchedTpSet {
            pelt: version >= (5, 3),
            util_est: version >= (5, 9),
            cpu_capacity: arm && version >= (5, 10),
        }
    }

    /// Any event at all.
    pub fn any(&self) -> bool {
        self.pelt || self.util_est || self.cpu_capacity
    }

    /// Whether the set holds the event named `event` (a `sched_tp` event name).
    pub fn has(&self, event: &str) -> bool {
        match event {
            "sched_pelt_cfs" | "sched_pelt_se" | "sched_overutilized" => self.pelt,
            "sched_util_est_cfs" | "sched_util_est_se" => self.util_est,
            "sched_cpu_capacity" => self.cpu_capacity,
            _ => false,
        }
    }
}

/// One line rt-app writes to `trace_marker` with its `ftrace` option (rt-app's
/// `log_ftrace` calls, as LISA's `lisa.analysis.rta` reads them), with the values
/// it prints: its [`Display`](std::fmt::Display) is the line without the newline
/// the kernel appends (`tracing_mark_write` adds one when the write lacks it).
/// Times are µs, truncated as rt-app's `timespec_to_usec` does.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Marker {
    /// `rtapp_main: event=start|shutdown|end` (category `main`).
    Main(MainEvent),
    /// `rtapp_main: event=clock_ref data=<t_zero>`: thread 0 read `t_zero`
    /// (CLOCK_MONOTONIC, µs; category `task`).
    ClockRef { t_zero_us: u64 },
    /// `rtapp_task: event=start|end`: a thread passed its start barrier, or left
    /// its task loop (category `task`).
    Task { end: bool },
    /// `rtapp_loop: event=start|end thread_loop= phase= phase_loop=`: one phase
    /// iteration begins or ends (category `loop`).
    Loop {
        end: bool,
        thread_loop: u32,
        phase: u32,
        phase_loop: u32,
    },
    /// `rtapp_event: id= type= desc=`: the `id`-th event of the phase, of rt-app's
    /// `resource_t` `kind`, named `desc` (category `event`).
    Event {
        id: u32,
        kind: u32,
        #[serde(deserialize_with = "crate::engine::wire::de_static")]
        desc: crate::engine::wire::Name,
    },
    /// `rtapp_stats: period= run= wu_lat= slack= c_period= c_run=` after each phase
    /// iteration: its wall time, the measured time of its `run`/`runtime` events,
    /// the wakeup latency of its timers, the last (or summed) timer slack, and the
    /// timer periods and run times it asked for (category `stats`).
    Stats {
        period: u32,
        run: u32,
        wu_lat: u32,
        slack: i32,
        c_period: u32,
        c_run: u32,
    },
}

impl std::fmt::Display for Marker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let se = |end: bool| if end { "end" } else { "start" };
        match *self {
            Marker::Main(e) => write!(
                f,
                "rtapp_main: event={}",
                match e {
                    MainEvent::Start => "start",
                    MainEvent::Shutdown => "shutdown",
                    MainEvent::End => "end",
                }
            ),
            Marker::ClockRef { t_zero_us } => {
                write!(f, "rtapp_main: event=clock_ref data={t_zero_us}")
            }
            Marker::Task { end } => write!(f, "rtapp_task: event={}", se(end)),
            Marker::Loop {
                end,
                thread_loop,
                phase,
                phase_loop,
            } => write!(
                f,
                "rtapp_loop: event={} thread_loop={thread_loop} phase={phase} phase_loop={phase_loop}",
                se(end)
            ),
            Marker::Event { id, kind, desc } => {
                write!(f, "rtapp_event: id={id} type={kind} desc={desc}")
            }
            Marker::Stats {
                period,
                run,
                wu_lat,
                slack,
                c_period,
                c_run,
            } => write!(
                f,
                "rtapp_stats: period={period} run={run} wu_lat={wu_lat} slack={slack} c_period={c_period} c_run={c_run}"
            ),
        }
    }
}

impl SchedEvent {
    /// For a `Switch` away from a task (not from the idle task): that task and the
    /// state it left the CPU in. The one reading of `prev_state`: it means nothing
    /// when `prev` is idle.
    #[inline]
    pub fn switched_out(&self) -> Option<(Pid, PrevState)> {
        match *self {
            SchedEvent::Switch {
                prev: Some(p),
                prev_state,
                ..
            } => Some((p, prev_state)),
            _ => None,
        }
    }
}

/// An observer that keeps every event, for the kernel's hand-computed tests.
#[cfg(test)]
#[derive(Default)]
pub(crate) struct Rec(pub Vec<SchedEvent>);

#[cfg(test)]
impl crate::engine::Observer<SchedEvent> for Rec {
    fn observe(&mut self, _now: crate::engine::SimTime, ev: &SchedEvent) {
        self.0.push(*ev);
    }
}
