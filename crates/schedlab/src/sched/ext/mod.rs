//! sched_ext, the extensible scheduling class of Linux v6.12 (kernel/sched/ext.c):
//! the class's own state machine, driven by the core's class hooks and by a
//! scheduler's operations.
//!
//! A sched_ext scheduler is a table of callbacks (`struct sched_ext_ops`) that the
//! class calls at fixed points: `select_cpu` when a task wakes (the CPU it will be
//! enqueued on), `enqueue` when it becomes runnable there, `dispatch` when a CPU has
//! nothing in its local queue, `runnable`/`running`/`stopping`/`quiescent` around
//! each run, `tick` at each scheduler tick. The scheduler answers through kfuncs:
//! it *dispatches* tasks into dispatch queues (DSQs: [`dsq`]) and *consumes* its own
//! queues into a CPU's local DSQ, the only queue a CPU picks from. Any op a
//! scheduler leaves out has a default: no `select_cpu` is the built-in idle-CPU
//! search ([`idle`]) with a direct dispatch to the found CPU; no `enqueue` puts the
//! task on the global DSQ, which every CPU consumes before calling `dispatch`.
//!
//! Ownership decides what is safe: between `enqueue` and its dispatch a task
//! belongs to the scheduler (`ops_state` QUEUED with a sequence number stamped at
//! the enqueue); a dispatch recorded in `dispatch` is carried out after the op
//! returns and dropped silently if the task was dequeued or enqueued again
//! meanwhile, so a scheduler can never run a task twice. A slice (20 ms by default)
//! is charged as the task runs and checked at the tick; a CPU keeps running its
//! task while it has slice left, or when nothing else was found.
//!
//! This module is the class's state and rules, free of the run loop: the core
//! calls [`Scx`]'s hooks (`select_task_rq`, `enqueue`, `dequeue`, `pick_next`,
//! `tick`, `update_idle`, ...) and carries out the [`Action`]s they leave (a
//! migration, a reschedule, a kick). Callbacks are Rust trait methods ([`ScxOps`])
//! with the kfuncs on [`Kf`]; `simple` is the reference scheduler in the style of
//! the kernel's `scx_simple`. docs/design/sched-ext-6.12.md has the semantics and
//! their sources; what is not modelled yet is listed there ("Status").

// The C ABI of natively compiled schedulers: the crate's only unsafe code.
#[allow(unsafe_code)]
pub mod bpf;
pub mod dsq;
pub mod idle;
pub mod llc_vtime;
pub mod simple;
#[cfg(test)]
mod tests;

use std::collections::BTreeMap;

use crate::abi::{Pid, WF_EXEC, WF_FORK, WF_SYNC, WF_TTWU};
use crate::machine::CpuMask;
use dsq::{
    Dsq, SCX_DSQ_FLAG_BUILTIN, SCX_DSQ_GLOBAL, SCX_DSQ_LOCAL, SCX_DSQ_LOCAL_CPU_MASK,
    SCX_DSQ_LOCAL_ON,
};
use idle::IdleTracker;

/// `SCX_SLICE_DFL`: 20 ms.
pub const SCX_SLICE_DFL: u64 = 20_000_000;
/// `SCX_SLICE_INF`.
pub const SCX_SLICE_INF: u64 = u64::MAX;
/// `SCX_DSP_DFL_MAX_BATCH`.
pub const SCX_DSP_DFL_MAX_BATCH: usize = 32;
/// `SCX_DSP_MAX_LOOPS`.
pub const SCX_DSP_MAX_LOOPS: u32 = 32;

/// `SCX_WAKE_*` as `select_cpu` receives them: v6.12's `WF_*` values.
pub const SCX_WAKE_FORK: u64 = 0x04;
pub const SCX_WAKE_TTWU: u64 = 0x08;
pub const SCX_WAKE_SYNC: u64 = 0x10;
/// v6.12's `WF_EXEC` (no SCX name).
pub const WF_EXEC_612: u64 = 0x02;

/// `SCX_ENQ_*`.
pub const SCX_ENQ_WAKEUP: u64 = 0x01;
pub const SCX_ENQ_HEAD: u64 = 0x10;
pub const SCX_ENQ_CPU_SELECTED: u64 = 0x400;
pub const SCX_ENQ_PREEMPT: u64 = 1 << 32;
pub const SCX_ENQ_REENQ: u64 = 1 << 40;
pub const SCX_ENQ_LAST: u64 = 1 << 41;
/// Internal: the insert is vtime-ordered.
pub const SCX_ENQ_DSQ_PRIQ: u64 = 1 << 57;
/// `SCX_DEQ_SLEEP`.
pub const SCX_DEQ_SLEEP: u64 = 0x01;

/// `SCX_OPS_*` flags.
pub const SCX_OPS_KEEP_BUILTIN_IDLE: u64 = 1 << 0;
pub const SCX_OPS_ENQ_LAST: u64 = 1 << 1;
pub const SCX_OPS_ENQ_EXITING: u64 = 1 << 2;
pub const SCX_OPS_SWITCH_PARTIAL: u64 = 1 << 3;

/// `SCX_WATCHDOG_MAX_TIMEOUT` (30 s): the watchdog's timeout when `ops.timeout_ms`
/// is 0, and the longest a scheduler may ask for.
pub const SCX_WATCHDOG_MAX_TIMEOUT_NS: u64 = 30_000_000_000;

/// `SCX_KICK_*`.
pub const SCX_KICK_IDLE: u64 = 1 << 0;
pub const SCX_KICK_PREEMPT: u64 = 1 << 1;
pub const SCX_KICK_WAIT: u64 = 1 << 2;

/// The ops a scheduler implements (`scx_has_op`), one bit each.
pub mod op {
    pub const SELECT_CPU: u32 = 1 << 0;
    pub const ENQUEUE: u32 = 1 << 1;
    pub const DEQUEUE: u32 = 1 << 2;
    pub const DISPATCH: u32 = 1 << 3;
    pub const TICK: u32 = 1 << 4;
    pub const RUNNABLE: u32 = 1 << 5;
    pub const RUNNING: u32 = 1 << 6;
    pub const STOPPING: u32 = 1 << 7;
    pub const QUIESCENT: u32 = 1 << 8;
    pub const YIELD: u32 = 1 << 9;
    pub const SET_WEIGHT: u32 = 1 << 10;
    pub const UPDATE_IDLE: u32 = 1 << 11;
    pub const INIT_TASK: u32 = 1 << 12;
    pub const EXIT_TASK: u32 = 1 << 13;
    pub const ENABLE: u32 = 1 << 14;
    pub const INIT: u32 = 1 << 15;
    pub const SET_CPUMASK: u32 = 1 << 16;
}

/// The kfunc context masks (`enum scx_kf_mask`): which kfuncs an op may call.
pub mod kf {
    pub const CPU_RELEASE: u32 = 1 << 0;
    pub const DISPATCH: u32 = 1 << 1;
    pub const ENQUEUE: u32 = 1 << 2;
    pub const SELECT_CPU: u32 = 1 << 3;
    pub const REST: u32 = 1 << 4;
    pub const UNLOCKED: u32 = 1 << 5;
}

/// The `select_cpu` wake flags for the model's `WF_*` (abi.rs, v5.6 + seed 002
/// values): v6.12 numbers them differently.
pub fn scx_wake_flags(wf: u32) -> u64 {
    let mut f = 0;
    if wf & WF_SYNC != 0 {
        f |= SCX_WAKE_SYNC;
    }
    if wf & WF_TTWU != 0 {
        f |= SCX_WAKE_TTWU;
    }
    if wf & WF_FORK != 0 {
        f |= SCX_WAKE_FORK;
    }
    if wf & WF_EXEC != 0 {
        f |= WF_EXEC_612;
    }
    f
}

/// `p->scx.ops_state`: who owns a queued task.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OpsState {
    /// `SCX_OPSS_NONE`: the core (on a DSQ, running, or not queued).
    None,
    /// `SCX_OPSS_QUEUEING`: `ops.enqueue` is running.
    Queueing(u64),
    /// `SCX_OPSS_QUEUED`: the scheduler holds it, since the enqueue stamped `qseq`.
    Queued(u64),
}

/// `struct sched_ext_entity`: a task as the class sees it.
#[derive(Clone, Debug)]
pub struct ScxTask {
    /// `p->scx.weight`: 1..=10000, 100 at nice 0.
    pub weight: u32,
    /// `p->scx.slice`, ns left.
    pub slice: u64,
    /// `p->scx.dsq_vtime`.
    pub dsq_vtime: u64,
    /// `p->cpus_ptr`.
    pub cpus: CpuMask,
    /// `task_cpu(p)`: the rq it is enqueued on.
    pub cpu: usize,
    pub ops_state: OpsState,
    /// A direct dispatch recorded in `select_cpu` or `enqueue`: (DSQ, flags).
    pub ddsp: Option<(u64, u64)>,
    /// The DSQ holding it.
    pub dsq: Option<u64>,
    /// `SCX_TASK_QUEUED`: runnable, as far as the class knows.
    pub queued: bool,
    /// `PF_EXITING`.
    pub exiting: bool,
    /// `p->se.sum_exec_runtime` (ns run in the class), which schedulers read.
    pub sum_exec_runtime: u64,
    /// `p->scx.runnable_at`: when it last became runnable or was put back after
    /// running (the watchdog's clock).
    pub runnable_at: u64,
}

/// Something the core carries out for the class.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    /// Move a queued task to another rq (`move_task_to_local_dsq`).
    Migrate { pid: Pid, from: usize, to: usize },
    /// `resched_curr(cpu)`.
    Resched { cpu: usize },
    /// `scx_bpf_kick_cpu(cpu, flags)` from `from` (an IPI unless `from == cpu`).
    Kick { from: usize, cpu: usize, flags: u64 },
    /// `bpf_timer_start`: timer `id` (generation `gen`) expires on `cpu` at `at`.
    TimerArm {
        cpu: usize,
        at: u64,
        id: u32,
        gen: u32,
    },
}

/// A BPF timer of the scheduler (`struct bpf_timer`): an hrtimer of the CPU that
/// started it, whose expiry runs the scheduler's callback there.
#[derive(Clone, Copy, Debug, Default)]
pub struct ScxTimer {
    pub cpu: usize,
    /// The armed expiry (`None`: not armed).
    pub at: Option<u64>,
    /// Bumped at every start and cancel: an expiry of an older arming is stale.
    pub gen: u32,
}

/// One entry of the dispatch buffer (`struct scx_dsp_buf_ent`).
#[derive(Clone, Copy, Debug)]
struct DspEntry {
    pid: Pid,
    qseq: u64,
    dsq_id: u64,
    enq_flags: u64,
}

/// Everything the class keeps but the scheduler's own data.
#[derive(Debug)]
pub struct ScxCore {
    pub now: u64,
    pub nr_cpus: usize,
    /// The scheduler's `ops.flags`.
    pub flags: u64,
    /// The ops it implements.
    pub has: u32,
    pub global: Dsq,
    pub local: Vec<Dsq>,
    /// User DSQs by id.
    pub user: BTreeMap<u64, Dsq>,
    /// By pid (`None`: not an ext task).
    pub tasks: Vec<Option<ScxTask>>,
    /// Each CPU's current ext task.
    pub curr: Vec<Option<Pid>>,
    pub idle: IdleTracker,
    /// `scx_builtin_idle_enabled`.
    pub builtin_idle: bool,
    /// The enqueue sequence (`rq->scx.ops_qseq`; one counter for all rqs here).
    qseq: u64,
    dsp_buf: Vec<DspEntry>,
    dsp_max: usize,
    /// `dspc->nr_tasks` of the running dispatch loop.
    nr_tasks: u32,
    /// The task of a running `select_cpu`/`enqueue` (`direct_dispatch_task`).
    direct: Option<Pid>,
    /// The kfunc mask of the running op.
    mask: u32,
    /// The CPU in `balance_one` (`SCX_RQ_IN_BALANCE`).
    in_balance: Option<usize>,
    pub actions: Vec<Action>,
    /// The scheduler's BPF timers, by the id its object gave them.
    pub timers: Vec<ScxTimer>,
    /// When `explain` asks: each op and kfunc of the decision, as a line.
    pub log: Option<Vec<String>>,
    /// `scx_watchdog_timeout` (ns).
    pub watchdog_timeout: u64,
    /// The first `scx_ops_error`: the scheduler is to be disabled.
    pub error: Option<String>,
}

/// A sched_ext scheduler: `struct sched_ext_ops`. Only the ops named in
/// [`implemented`](Self::implemented) are called; the others have the class's
/// defaults. Kfuncs are methods of the [`Kf`] each op gets.
pub trait ScxOps: std::fmt::Debug {
    /// `ops.name`.
    fn name(&self) -> &str;
    /// The implemented ops ([`op`] bits).
    fn implemented(&self) -> u32;
    /// `ops.flags`.
    fn flags(&self) -> u64 {
        0
    }
    /// `ops.timeout_ms` (0: the watchdog's default, 30 s).
    fn timeout_ms(&self) -> u32 {
        0
    }
    /// `ops.dispatch_max_batch` (0: the default 32).
    fn dispatch_max_batch(&self) -> usize {
        0
    }
    fn init(&mut self, _kf: &mut Kf) -> Result<(), i32> {
        Ok(())
    }
    fn select_cpu(&mut self, _kf: &mut Kf, _p: Pid, prev_cpu: i32, _wake_flags: u64) -> i32 {
        prev_cpu
    }
    fn enqueue(&mut self, _kf: &mut Kf, _p: Pid, _enq_flags: u64) {}
    fn dequeue(&mut self, _kf: &mut Kf, _p: Pid, _deq_flags: u64) {}
    fn dispatch(&mut self, _kf: &mut Kf, _cpu: i32, _prev: Option<Pid>) {}
    fn tick(&mut self, _kf: &mut Kf, _p: Pid) {}
    fn runnable(&mut self, _kf: &mut Kf, _p: Pid, _enq_flags: u64) {}
    fn running(&mut self, _kf: &mut Kf, _p: Pid) {}
    fn stopping(&mut self, _kf: &mut Kf, _p: Pid, _runnable: bool) {}
    fn quiescent(&mut self, _kf: &mut Kf, _p: Pid, _deq_flags: u64) {}
    fn yield_(&mut self, _kf: &mut Kf, _from: Pid) -> bool {
        false
    }
    fn set_weight(&mut self, _kf: &mut Kf, _p: Pid, _weight: u32) {}
    /// `ops.set_cpumask`: `p`'s affinity changed (the new mask is the task's).
    fn set_cpumask(&mut self, _kf: &mut Kf, _p: Pid) {}
    fn update_idle(&mut self, _kf: &mut Kf, _cpu: i32, _idle: bool) {}
    fn init_task(&mut self, _kf: &mut Kf, _p: Pid, _fork: bool) -> Result<(), i32> {
        Ok(())
    }
    fn exit_task(&mut self, _kf: &mut Kf, _p: Pid) {}
    fn enable(&mut self, _kf: &mut Kf, _p: Pid) {}
    /// The callback of BPF timer `id` (not an op: it runs from the timer's
    /// softirq, where no kfunc context mask is set).
    fn timer(&mut self, _kf: &mut Kf, _id: u32) {}
}

/// The kfuncs, as the op running on `cpu` sees them.
pub struct Kf<'a> {
    pub(crate) s: &'a mut ScxCore,
    /// The CPU the op runs on.
    pub cpu: usize,
}

impl Kf<'_> {
    fn allowed(&mut self, mask: u32, name: &str) -> bool {
        if self.s.mask & mask != 0 {
            true
        } else {
            self.s
                .fail(format!("kfunc {name}() called from a disallowed context"));
            false
        }
    }

    /// `bpf_ktime_get_ns`.
    pub fn now(&self) -> u64 {
        self.s.now
    }

    /// `nr_cpu_ids`.
    pub fn nr_cpus(&self) -> usize {
        self.s.nr_cpus
    }

    /// A task's class fields (read).
    pub fn task(&self, p: Pid) -> &ScxTask {
        self.s.task(p)
    }

    /// Write `p->scx.dsq_vtime` (one of the three fields BPF may write).
    pub fn set_dsq_vtime(&mut self, p: Pid, v: u64) {
        self.s.task_mut(p).dsq_vtime = v;
    }

    /// Write `p->scx.slice`.
    pub fn set_slice(&mut self, p: Pid, v: u64) {
        self.s.task_mut(p).slice = v;
    }

    /// `scx_bpf_error`.
    pub fn error(&mut self, msg: &str) {
        self.s.fail(format!("scx_bpf_error: {msg}"));
    }

    /// `scx_bpf_create_dsq(dsq_id, node)`.
    pub fn create_dsq(&mut self, id: u64) -> Result<(), i32> {
        if id & SCX_DSQ_FLAG_BUILTIN != 0 || self.s.user.contains_key(&id) {
            return Err(-22);
        }
        self.s.user.insert(id, Dsq::new(id));
        Ok(())
    }

    /// `scx_bpf_dsq_nr_queued(dsq_id)`.
    pub fn dsq_nr_queued(&self, id: u64) -> i32 {
        let n = match id {
            SCX_DSQ_LOCAL => Some(self.s.local[self.cpu].nr()),
            SCX_DSQ_GLOBAL => Some(self.s.global.nr()),
            _ if id & SCX_DSQ_LOCAL_ON == SCX_DSQ_LOCAL_ON => self
                .s
                .local
                .get((id & SCX_DSQ_LOCAL_CPU_MASK) as usize)
                .map(Dsq::nr),
            _ => self.s.user.get(&id).map(Dsq::nr),
        };
        n.map_or(-2, |n| n as i32)
    }

    /// `scx_bpf_dispatch(p, dsq_id, slice, enq_flags)`.
    pub fn dispatch(&mut self, p: Pid, dsq_id: u64, slice: u64, enq_flags: u64) {
        if !self.allowed(kf::ENQUEUE | kf::DISPATCH, "scx_bpf_dispatch") {
            return;
        }
        self.s.note(|| {
            format!(
                "scx_bpf_dsq_insert(PID {p}, {}, slice {slice} ns, enq_flags {enq_flags:#x})",
                dsq_name(dsq_id)
            )
        });
        self.s.dispatch_commit(p, dsq_id, slice, enq_flags);
    }

    /// `scx_bpf_dispatch_vtime(p, dsq_id, slice, vtime, enq_flags)`.
    pub fn dispatch_vtime(&mut self, p: Pid, dsq_id: u64, slice: u64, vtime: u64, enq_flags: u64) {
        if !self.allowed(kf::ENQUEUE | kf::DISPATCH, "scx_bpf_dispatch_vtime") {
            return;
        }
        self.s.note(|| {
            format!(
                "scx_bpf_dsq_insert_vtime(PID {p}, {}, slice {slice} ns, vtime {vtime}, enq_flags {enq_flags:#x})",
                dsq_name(dsq_id)
            )
        });
        self.s.task_mut(p).dsq_vtime = vtime;
        self.s
            .dispatch_commit(p, dsq_id, slice, enq_flags | SCX_ENQ_DSQ_PRIQ);
    }

    /// `scx_bpf_consume(dsq_id)`: move the first task of a user DSQ that can run
    /// here to this CPU's local DSQ.
    pub fn consume(&mut self, dsq_id: u64) -> bool {
        if !self.allowed(kf::DISPATCH, "scx_bpf_consume") {
            return false;
        }
        let cpu = self.cpu;
        self.s.flush_dispatch_buf(cpu);
        if !self.s.user.contains_key(&dsq_id) {
            self.s
                .fail(format!("scx_bpf_consume: invalid DSQ ID 0x{dsq_id:016x}"));
            return false;
        }
        if self.s.consume_dispatch_q(cpu, dsq_id) {
            self.s.nr_tasks += 1;
            true
        } else {
            false
        }
    }

    /// `scx_bpf_select_cpu_dfl(p, prev_cpu, wake_flags, &is_idle)`.
    pub fn select_cpu_dfl(&mut self, p: Pid, prev_cpu: i32, wake_flags: u64) -> (i32, bool) {
        if !self.allowed(kf::SELECT_CPU, "scx_bpf_select_cpu_dfl") {
            return (prev_cpu, false);
        }
        if !self.s.builtin_idle {
            self.s.fail("built-in idle tracking is disabled".into());
            return (prev_cpu, false);
        }
        let Some(prev) = self.s.valid_cpu(prev_cpu) else {
            return (prev_cpu, false);
        };
        let (c, found) = self.s.select_cpu_dfl(p, prev, wake_flags, self.cpu);
        self.s.note(|| {
            format!(
                "scx_bpf_select_cpu_dfl(prev_cpu {prev}, wake_flags {wake_flags:#x}) = CPU {c}{}",
                if found {
                    ", idle (claimed)"
                } else {
                    ", no idle CPU"
                }
            )
        });
        (c as i32, found)
    }

    /// `scx_bpf_test_and_clear_cpu_idle(cpu)`.
    pub fn test_and_clear_cpu_idle(&mut self, cpu: i32) -> bool {
        let r = match self.s.valid_cpu(cpu) {
            Some(c) if self.s.builtin_idle => self.s.idle.test_and_clear(c),
            _ => false,
        };
        self.s
            .note(|| format!("scx_bpf_test_and_clear_cpu_idle(CPU {cpu}) = {r}"));
        r
    }

    /// `scx_bpf_pick_idle_cpu(cpus_allowed, flags)`: a claimed idle CPU or -EBUSY.
    pub fn pick_idle_cpu(&mut self, allowed: &CpuMask, flags: u64) -> i32 {
        if !self.s.builtin_idle {
            self.s.fail("built-in idle tracking is disabled".into());
            return -16;
        }
        let cpu = self.cpu;
        let r = self
            .s
            .idle
            .pick_idle(allowed, flags, cpu)
            .map_or(-16, |c| c as i32);
        self.s
            .note(|| format!("scx_bpf_pick_idle_cpu(flags {flags:#x}) = {r}"));
        r
    }

    /// `scx_bpf_kick_cpu(cpu, flags)`.
    pub fn kick_cpu(&mut self, cpu: i32, flags: u64) {
        let Some(c) = self.s.valid_cpu(cpu) else {
            return;
        };
        if flags & SCX_KICK_IDLE != 0 && flags & (SCX_KICK_PREEMPT | SCX_KICK_WAIT) != 0 {
            self.s
                .fail("PREEMPT/WAIT cannot be used with SCX_KICK_IDLE".into());
            return;
        }
        let from = self.cpu;
        self.s
            .note(|| format!("scx_bpf_kick_cpu(CPU {c}, flags {flags:#x})"));
        self.s.actions.push(Action::Kick {
            from,
            cpu: c,
            flags,
        });
    }

    /// `scx_bpf_destroy_dsq(dsq_id)`: a user DSQ, which must be empty.
    pub fn destroy_dsq(&mut self, id: u64) {
        match self.s.user.get(&id).map(Dsq::nr) {
            Some(0) => {
                self.s.user.remove(&id);
            }
            Some(n) => self.s.fail(format!(
                "attempting to destroy in-use dsq 0x{id:016x} (nr={n})"
            )),
            None => {}
        }
    }

    /// `scx_bpf_dispatch_nr_slots()`: the dispatch buffer's free entries.
    pub fn dispatch_nr_slots(&mut self) -> u32 {
        if !self.allowed(kf::DISPATCH, "scx_bpf_dispatch_nr_slots") {
            return 0;
        }
        (self.s.dsp_max - self.s.dsp_buf.len()) as u32
    }

    /// `scx_bpf_dispatch_cancel()`: drop the latest buffered dispatch.
    pub fn dispatch_cancel(&mut self) {
        if !self.allowed(kf::DISPATCH, "scx_bpf_dispatch_cancel") {
            return;
        }
        if self.s.dsp_buf.pop().is_none() {
            self.s.fail("dispatch buffer underflow".into());
        }
    }

    /// `scx_bpf_pick_any_cpu(cpus_allowed, flags)`: an idle CPU claimed if there
    /// is one, else any allowed CPU (`cpumask_any_distribute`), else -EBUSY.
    pub fn pick_any_cpu(&mut self, allowed: &CpuMask, flags: u64) -> i32 {
        let cpu = self.cpu;
        if self.s.builtin_idle {
            if let Some(c) = self.s.idle.pick_idle(allowed, flags, cpu) {
                return c as i32;
            }
        }
        let all: CpuMask = (0..self.s.nr_cpus).collect();
        self.s
            .idle
            .any_and_distribute(allowed, &all, cpu)
            .map_or(-16, |c| c as i32)
    }

    /// `cpumask_any_and_distribute(a, b)` with this CPU's cursor (`None`: none).
    pub fn any_and_distribute(&mut self, a: &CpuMask, b: &CpuMask) -> Option<usize> {
        let cpu = self.cpu;
        self.s.idle.any_and_distribute(a, b, cpu)
    }

    /// `scx_bpf_get_idle_cpumask()` (`smt`: `scx_bpf_get_idle_smtmask()`).
    pub fn idle_cpumask(&mut self, smt: bool) -> CpuMask {
        if !self.s.builtin_idle {
            self.s.fail("built-in idle tracking is disabled".into());
            return CpuMask::new();
        }
        if smt {
            self.s.idle.smt
        } else {
            self.s.idle.cpu
        }
    }

    /// `scx_bpf_task_running(p)`: `p` is its rq's current task.
    pub fn task_running(&self, p: Pid) -> bool {
        let cpu = self.s.task(p).cpu;
        self.s.curr[cpu] == Some(p)
    }

    /// Whether `p` is a task of the class (`bpf_task_from_pid` finds it).
    pub fn has_task(&self, p: Pid) -> bool {
        self.s.tasks.get(p as usize).is_some_and(Option::is_some)
    }

    /// `bpf_timer_start`: arm timer `id` on this CPU to expire at `at` (ns; not
    /// before now), replacing an earlier arming.
    pub fn timer_start(&mut self, id: u32, at: u64) {
        let i = id as usize;
        if self.s.timers.len() <= i {
            self.s.timers.resize(i + 1, ScxTimer::default());
        }
        let at = at.max(self.s.now);
        let cpu = self.cpu;
        let t = &mut self.s.timers[i];
        t.gen = t.gen.wrapping_add(1);
        t.at = Some(at);
        t.cpu = cpu;
        let gen = t.gen;
        self.s.actions.push(Action::TimerArm { cpu, at, id, gen });
    }

    /// `bpf_timer_cancel`: timer `id` no longer expires.
    pub fn timer_cancel(&mut self, id: u32) {
        if let Some(t) = self.s.timers.get_mut(id as usize) {
            t.gen = t.gen.wrapping_add(1);
            t.at = None;
        }
    }

    /// `scx_bpf_exit(code, ...)`: the scheduler asks to be unloaded. The model
    /// keeps no fallback to the fair class yet, so the run reports it as it does
    /// an error.
    pub fn exit(&mut self, code: i64, msg: &str) {
        self.s.fail(format!(
            "scx_bpf_exit (SCX_EXIT_UNREG_BPF, code {code}): {msg}"
        ));
    }
}

/// A DSQ id as sched_ext names it.
pub fn dsq_name(id: u64) -> String {
    match id {
        SCX_DSQ_LOCAL => "SCX_DSQ_LOCAL".into(),
        SCX_DSQ_GLOBAL => "SCX_DSQ_GLOBAL".into(),
        _ if id & SCX_DSQ_LOCAL_ON == SCX_DSQ_LOCAL_ON => {
            format!("SCX_DSQ_LOCAL_ON | {}", id & SCX_DSQ_LOCAL_CPU_MASK)
        }
        _ => format!("DSQ {id}"),
    }
}

impl ScxCore {
    /// Record a line of the decision being explained (no cost otherwise).
    fn note(&mut self, line: impl FnOnce() -> String) {
        if let Some(l) = &mut self.log {
            l.push(line());
        }
    }

    fn fail(&mut self, msg: String) {
        if self.error.is_none() {
            self.error = Some(msg);
        }
    }

    /// `ops_cpu_valid`: an error for a CPU out of range.
    fn valid_cpu(&mut self, cpu: i32) -> Option<usize> {
        if cpu >= 0 && (cpu as usize) < self.nr_cpus {
            Some(cpu as usize)
        } else {
            self.fail(format!("invalid CPU {cpu}"));
            None
        }
    }

    pub fn task(&self, p: Pid) -> &ScxTask {
        self.tasks[p as usize].as_ref().expect("an ext task")
    }

    /// `SCX_TASK_QUEUED` of `p`, false for a task the class no longer knows.
    fn queued(&self, p: Pid) -> bool {
        self.tasks
            .get(p as usize)
            .and_then(Option::as_ref)
            .is_some_and(|t| t.queued)
    }

    pub fn task_mut(&mut self, p: Pid) -> &mut ScxTask {
        self.tasks[p as usize].as_mut().expect("an ext task")
    }

    /// `scx_dispatch_commit`: a direct dispatch when called for the task being
    /// enqueued, else an entry of the dispatch buffer.
    fn dispatch_commit(&mut self, p: Pid, dsq_id: u64, slice: u64, enq_flags: u64) {
        let t = self.task_mut(p);
        // A zero slice keeps the current one; a zero current one becomes 1 ns.
        if slice != 0 {
            t.slice = slice;
        } else if t.slice == 0 {
            t.slice = 1;
        }
        if let Some(d) = self.direct {
            if d != p {
                self.fail(format!("PID {p} is not the task being enqueued ({d})"));
                return;
            }
            if self.task(p).ddsp.is_some() {
                self.fail(format!("dispatching PID {p} twice"));
                return;
            }
            self.task_mut(p).ddsp = Some((dsq_id, enq_flags));
            return;
        }
        if self.dsp_buf.len() >= self.dsp_max {
            self.fail("dispatch buffer overflow".into());
            return;
        }
        let qseq = match self.task(p).ops_state {
            OpsState::Queued(q) | OpsState::Queueing(q) => q,
            OpsState::None => u64::MAX,
        };
        self.dsp_buf.push(DspEntry {
            pid: p,
            qseq,
            dsq_id,
            enq_flags,
        });
    }

    /// `flush_dispatch_buf`: carry out the buffered dispatches of `cpu`'s
    /// `ops.dispatch` (`finish_dispatch` each, dropping stale ones).
    fn flush_dispatch_buf(&mut self, cpu: usize) {
        let buf = std::mem::take(&mut self.dsp_buf);
        self.nr_tasks += buf.len() as u32;
        for e in &buf {
            let Some(t) = self.tasks.get(e.pid as usize).and_then(Option::as_ref) else {
                continue;
            };
            if t.ops_state != OpsState::Queued(e.qseq) {
                continue; // dequeued, requeued or dispatched meanwhile
            }
            self.task_mut(e.pid).ops_state = OpsState::None;
            self.dispatch_to(cpu, e.pid, e.dsq_id, e.enq_flags);
        }
        self.dsp_buf = buf;
        self.dsp_buf.clear();
    }

    /// Insert `p` into the DSQ `dsq_id` names, as seen from `cpu`.
    fn dispatch_to(&mut self, cpu: usize, p: Pid, dsq_id: u64, enq_flags: u64) {
        if dsq_id == SCX_DSQ_LOCAL {
            self.dispatch_to_local(cpu, p, enq_flags);
        } else if dsq_id & SCX_DSQ_LOCAL_ON == SCX_DSQ_LOCAL_ON {
            let target = (dsq_id & SCX_DSQ_LOCAL_CPU_MASK) as usize;
            if target >= self.nr_cpus {
                self.fail(format!("invalid CPU {target} in SCX_DSQ_LOCAL_ON"));
                self.enqueue_dsq(SCX_DSQ_GLOBAL, p, enq_flags);
            } else {
                self.dispatch_to_local(target, p, enq_flags);
            }
        } else if dsq_id == SCX_DSQ_GLOBAL || self.user.contains_key(&dsq_id) {
            self.enqueue_dsq(dsq_id, p, enq_flags);
        } else {
            self.fail(format!("non-existent DSQ 0x{dsq_id:x}"));
            self.enqueue_dsq(SCX_DSQ_GLOBAL, p, enq_flags);
        }
    }

    /// `dispatch_to_local_dsq`: onto `target`'s local DSQ, migrating the task
    /// there if it is queued elsewhere; the global DSQ if it may not run there.
    fn dispatch_to_local(&mut self, target: usize, p: Pid, enq_flags: u64) {
        let t = self.task(p);
        if !t.cpus.test(target) {
            self.fail(format!(
                "SCX_DSQ_LOCAL[_ON] verdict target cpu {target} not allowed for PID {p}"
            ));
            self.enqueue_dsq(SCX_DSQ_GLOBAL, p, enq_flags);
            return;
        }
        if t.cpu != target {
            let from = t.cpu;
            self.actions.push(Action::Migrate {
                pid: p,
                from,
                to: target,
            });
            self.task_mut(p).cpu = target;
        }
        self.enqueue_dsq(SCX_DSQ_LOCAL_ON | target as u64, p, enq_flags);
    }

    /// `dispatch_enqueue`: insert into a DSQ; on a local DSQ, `local_dsq_post_enq`
    /// (preempt on `SCX_ENQ_PREEMPT`; wake an idle CPU; nothing for a CPU in
    /// balance).
    fn enqueue_dsq(&mut self, id: u64, p: Pid, enq_flags: u64) {
        let head = enq_flags & (SCX_ENQ_HEAD | SCX_ENQ_PREEMPT) != 0;
        let vtime = self.task(p).dsq_vtime;
        let local = (id & SCX_DSQ_LOCAL_ON == SCX_DSQ_LOCAL_ON)
            .then_some((id & SCX_DSQ_LOCAL_CPU_MASK) as usize);
        let q = match local {
            Some(c) => &mut self.local[c],
            None if id == SCX_DSQ_GLOBAL => &mut self.global,
            None => self.user.get_mut(&id).expect("checked by the caller"),
        };
        let r = if enq_flags & SCX_ENQ_DSQ_PRIQ != 0 {
            q.insert_vtime(p, vtime)
        } else {
            q.insert_fifo(p, head)
        };
        if let Err(e) = r {
            // The kernel reports it and degrades the insert to FIFO.
            let _ = q.insert_fifo(p, head);
            self.fail(e);
        }
        self.task_mut(p).dsq = Some(id);
        // A CPU in balance is already looking for its next task.
        if let Some(c) = local.filter(|&c| self.in_balance != Some(c)) {
            match self.curr[c] {
                Some(cur) if enq_flags & SCX_ENQ_PREEMPT != 0 && cur != p => {
                    self.task_mut(cur).slice = 0;
                    self.actions.push(Action::Resched { cpu: c });
                }
                None => self.actions.push(Action::Resched { cpu: c }),
                Some(_) => {}
            }
        }
    }

    /// `dispatch_dequeue`: take `p` off its DSQ, if on one.
    fn dsq_remove(&mut self, p: Pid) {
        let Some(id) = self.task_mut(p).dsq.take() else {
            return;
        };
        let q = if id & SCX_DSQ_LOCAL_ON == SCX_DSQ_LOCAL_ON {
            &mut self.local[(id & SCX_DSQ_LOCAL_CPU_MASK) as usize]
        } else if id == SCX_DSQ_GLOBAL {
            &mut self.global
        } else {
            self.user.get_mut(&id).expect("a known DSQ")
        };
        q.remove(p);
    }

    /// `consume_dispatch_q`: the first task of DSQ `id` allowed on `cpu` moves to
    /// `cpu`'s local DSQ.
    fn consume_dispatch_q(&mut self, cpu: usize, id: u64) -> bool {
        let q = if id == SCX_DSQ_GLOBAL {
            &self.global
        } else {
            &self.user[&id]
        };
        let tasks = &self.tasks;
        let Some(p) =
            q.first_where(|p| tasks[p as usize].as_ref().is_some_and(|t| t.cpus.test(cpu)))
        else {
            return false;
        };
        self.dsq_remove(p);
        self.dispatch_to_local(cpu, p, 0);
        true
    }

    /// `scx_select_cpu_dfl`, run on `this_cpu`.
    fn select_cpu_dfl(
        &mut self,
        p: Pid,
        prev: usize,
        wake_flags: u64,
        this_cpu: usize,
    ) -> (usize, bool) {
        let sync_ok = self.local[this_cpu].nr() == 0
            && self.curr[this_cpu].is_none_or(|w| !self.task(w).exiting);
        let allowed = self.task(p).cpus;
        self.idle.select_cpu_dfl(
            &allowed,
            prev,
            wake_flags & SCX_WAKE_SYNC != 0,
            sync_ok,
            this_cpu,
        )
    }
}

/// The built-in schedulers `[kernel] scheduler = ...` names.
pub const SCHEDULERS: &[&str] = &["simple", "simple-fifo", "llc-vtime"];

/// A built-in scheduler by name, for a machine whose CPU `i` is in LLC `llc_of[i]`.
pub fn scheduler_by_name(name: &str, llc_of: &[usize]) -> Option<Box<dyn ScxOps>> {
    match name {
        "llc-vtime" => Some(Box::new(llc_vtime::LlcVtime::new(llc_of.to_vec()))),
        // scx_simple's default is weighted vtime; `-f` is FIFO.
        "simple" => Some(Box::new(simple::Simple::weighted())),
        "simple-fifo" => Some(Box::new(simple::Simple::fifo())),
        _ => None,
    }
}

/// `sched_weight_to_cgroup`: a load weight (1024 at nice 0) as sched_ext's
/// weight (100 at nice 0), rounded to the closest, within 1..=10000.
pub fn weight_to_cgroup(weight: u64) -> u32 {
    ((weight * 100 + 512) / 1024).clamp(1, 10_000) as u32
}

/// The class: a scheduler's ops and the class state.
#[derive(Debug)]
pub struct Scx {
    pub ops: Box<dyn ScxOps>,
    pub core: ScxCore,
}

impl Scx {
    /// Load `ops` on an `nr_cpus`-CPU machine whose CPU `i` is on core
    /// `core_of[i]` (`scx_ops_enable`: masks reset to all idle, `ops.init`).
    pub fn new(ops: Box<dyn ScxOps>, core_of: &[usize]) -> Self {
        let n = core_of.len();
        let has = ops.implemented();
        let flags = ops.flags();
        let batch = match ops.dispatch_max_batch() {
            0 => SCX_DSP_DFL_MAX_BATCH,
            b => b,
        };
        let mut s = Scx {
            ops,
            core: ScxCore {
                now: 0,
                nr_cpus: n,
                flags,
                has,
                global: Dsq::new(SCX_DSQ_GLOBAL),
                local: (0..n)
                    .map(|c| Dsq::new(SCX_DSQ_LOCAL_ON | c as u64))
                    .collect(),
                user: BTreeMap::new(),
                tasks: Vec::new(),
                curr: vec![None; n],
                idle: IdleTracker::new(core_of),
                builtin_idle: has & op::UPDATE_IDLE == 0 || flags & SCX_OPS_KEEP_BUILTIN_IDLE != 0,
                qseq: 0,
                dsp_buf: Vec::with_capacity(batch),
                dsp_max: batch,
                nr_tasks: 0,
                direct: None,
                mask: 0,
                in_balance: None,
                actions: Vec::new(),
                timers: Vec::new(),
                log: None,
                watchdog_timeout: SCX_WATCHDOG_MAX_TIMEOUT_NS,
                error: None,
            },
        };
        // validate_ops / scx_ops_enable: the watchdog's timeout.
        let t = u64::from(s.ops.timeout_ms()) * 1_000_000;
        if t > SCX_WATCHDOG_MAX_TIMEOUT_NS {
            s.core.fail(format!(
                "ops.timeout_ms {} exceeds the watchdog's maximum of 30000",
                t / 1_000_000
            ));
        } else if t > 0 {
            s.core.watchdog_timeout = t;
        }
        if has & op::INIT != 0 {
            if let Err(e) = s.call(0, kf::UNLOCKED, |o, k| o.init(k)) {
                s.core.fail(format!("ops.init() failed ({e})"));
            }
        }
        s
    }

    fn has(&self, o: u32) -> bool {
        self.core.has & o != 0
    }

    /// Run an op on `cpu` with kfunc mask `mask` (`SCX_CALL_OP`).
    fn call<R>(
        &mut self,
        cpu: usize,
        mask: u32,
        f: impl FnOnce(&mut dyn ScxOps, &mut Kf) -> R,
    ) -> R {
        let saved = std::mem::replace(&mut self.core.mask, mask);
        let mut k = Kf {
            s: &mut self.core,
            cpu,
        };
        let r = f(self.ops.as_mut(), &mut k);
        self.core.mask = saved;
        r
    }

    /// `scx_watchdog_workfn`: the first runnable task that has not run for longer
    /// than the timeout fails the scheduler (`SCX_EXIT_ERROR_STALL`).
    pub fn check_stalls(&mut self) {
        let (now, limit) = (self.core.now, self.core.watchdog_timeout);
        let stalled = self.core.tasks.iter().enumerate().find_map(|(p, t)| {
            let t = t.as_ref()?;
            let running = self.core.curr[t.cpu] == Some(p as Pid);
            (t.queued && !running && now.saturating_sub(t.runnable_at) > limit)
                .then_some((p, now - t.runnable_at))
        });
        if let Some((p, waited)) = stalled {
            self.core.fail(format!(
                "runnable task stall (PID {p} failed to run for {}.{:03}s)",
                waited / 1_000_000_000,
                waited / 1_000_000 % 1000
            ));
        }
    }

    /// Timer `id` of generation `gen` expires on `cpu`: the scheduler's callback,
    /// if that arming is still the timer's (false: stale).
    pub fn timer_fire(&mut self, cpu: usize, id: u32, gen: u32) -> bool {
        match self.core.timers.get_mut(id as usize) {
            Some(t) if t.gen == gen && t.at.is_some() => t.at = None,
            _ => return false,
        }
        self.call(cpu, 0, |o, k| o.timer(k, id));
        true
    }

    /// Whether timer `id` is still armed with generation `gen`.
    pub fn timer_live(&self, id: u32, gen: u32) -> bool {
        self.core
            .timers
            .get(id as usize)
            .is_some_and(|t| t.gen == gen && t.at.is_some())
    }

    /// The next expiry of a timer armed on `cpu` (for the idle governor's sleep
    /// length: an hrtimer of that CPU).
    pub fn timer_next(&self, cpu: usize) -> Option<u64> {
        self.core
            .timers
            .iter()
            .filter(|t| t.cpu == cpu)
            .filter_map(|t| t.at)
            .min()
    }

    /// The actions left by the last hooks, for the core to carry out.
    pub fn take_actions(&mut self) -> Vec<Action> {
        std::mem::take(&mut self.core.actions)
    }

    /// A new task joins the class on `cpu` (`scx_fork` / the load path):
    /// `ops.init_task`, then `ops.set_weight` and `ops.enable`. `weight` is the
    /// cgroup-style weight (100 at nice 0).
    pub fn init_task(&mut self, p: Pid, cpu: usize, weight: u32, cpus: CpuMask, fork: bool) {
        let i = p as usize;
        if self.core.tasks.len() <= i {
            self.core.tasks.resize_with(i + 1, || None);
        }
        self.core.tasks[i] = Some(ScxTask {
            weight,
            slice: SCX_SLICE_DFL,
            dsq_vtime: 0,
            cpus,
            cpu,
            ops_state: OpsState::None,
            ddsp: None,
            dsq: None,
            queued: false,
            exiting: false,
            sum_exec_runtime: 0,
            runnable_at: 0,
        });
        if self.has(op::INIT_TASK) {
            if let Err(e) = self.call(cpu, kf::UNLOCKED, |o, k| o.init_task(k, p, fork)) {
                self.core
                    .fail(format!("ops.init_task() failed ({e}) for PID {p}"));
            }
        }
        if self.has(op::SET_WEIGHT) {
            self.call(cpu, kf::REST, |o, k| o.set_weight(k, p, weight));
        }
        if self.has(op::ENABLE) {
            self.call(cpu, kf::REST, |o, k| o.enable(k, p));
        }
    }

    /// `sched_ext_free` of a dead task: `ops.exit_task`, and the class forgets it.
    pub fn exit_task(&mut self, p: Pid) {
        let cpu = self.core.task(p).cpu;
        if self.has(op::EXIT_TASK) {
            self.call(cpu, kf::REST, |o, k| o.exit_task(k, p));
        }
        self.core.tasks[p as usize] = None;
    }

    /// `select_task_rq_scx` for a wakeup with the model's `wake_flags`, run on
    /// `this_cpu`. The core calls it only for tasks allowed on more than one CPU.
    pub fn select_task_rq(
        &mut self,
        p: Pid,
        prev_cpu: usize,
        wake_flags: u32,
        this_cpu: usize,
    ) -> usize {
        let wf = scx_wake_flags(wake_flags);
        if wf & WF_EXEC_612 != 0 {
            return prev_cpu;
        }
        if self.has(op::SELECT_CPU) {
            let name = self.ops.name().to_string();
            self.core.note(|| {
                format!(
                    "ops.select_cpu of `{name}` (PID {p}, prev_cpu {prev_cpu}, wake_flags {wf:#x}) on CPU {this_cpu}:"
                )
            });
            self.core.direct = Some(p);
            let c = self.call(this_cpu, kf::ENQUEUE | kf::SELECT_CPU, |o, k| {
                o.select_cpu(k, p, prev_cpu as i32, wf)
            });
            self.core.direct = None;
            self.core
                .note(|| format!("ops.select_cpu returned CPU {c}"));
            self.core.valid_cpu(c).unwrap_or(prev_cpu)
        } else {
            let (c, found) = self.core.select_cpu_dfl(p, prev_cpu, wf, this_cpu);
            self.core.note(|| {
                format!(
                    "no ops.select_cpu: the built-in scx_select_cpu_dfl(prev_cpu {prev_cpu}, wake_flags {wf:#x}) = CPU {c}{}",
                    if found {
                        ", idle: a direct dispatch to its local DSQ"
                    } else {
                        ", no idle CPU"
                    }
                )
            });
            if found {
                let t = self.core.task_mut(p);
                t.slice = SCX_SLICE_DFL;
                t.ddsp = Some((SCX_DSQ_LOCAL, 0));
            }
            c
        }
    }

    /// `enqueue_task_scx` on `cpu`: `ops.runnable` (not for a migration), then
    /// `do_enqueue_task`. `sticky` is an enqueue of the class's own migration
    /// (straight to the local DSQ, slice kept).
    pub fn enqueue(&mut self, p: Pid, cpu: usize, enq_flags: u64, migrating: bool, sticky: bool) {
        self.core.task_mut(p).cpu = cpu;
        if !self.core.task(p).queued {
            let now = self.core.now;
            let t = self.core.task_mut(p);
            t.queued = true;
            t.runnable_at = now;
            if !migrating && self.has(op::RUNNABLE) {
                self.call(cpu, kf::REST, |o, k| o.runnable(k, p, enq_flags));
            }
        }
        self.do_enqueue_task(p, cpu, enq_flags, sticky);
    }

    /// `do_enqueue_task`.
    fn do_enqueue_task(&mut self, p: Pid, cpu: usize, enq_flags: u64, sticky: bool) {
        if sticky {
            self.core
                .enqueue_dsq(SCX_DSQ_LOCAL_ON | cpu as u64, p, enq_flags);
            return;
        }
        if let Some((dsq, f)) = self.core.task_mut(p).ddsp.take() {
            self.core.dispatch_to(cpu, p, dsq, f | enq_flags);
            return;
        }
        let t = self.core.task(p);
        if t.exiting && self.core.flags & SCX_OPS_ENQ_EXITING == 0 {
            self.core.task_mut(p).slice = SCX_SLICE_DFL;
            self.core
                .enqueue_dsq(SCX_DSQ_LOCAL_ON | cpu as u64, p, enq_flags);
            return;
        }
        if !self.has(op::ENQUEUE) {
            self.core.task_mut(p).slice = SCX_SLICE_DFL;
            self.core.enqueue_dsq(SCX_DSQ_GLOBAL, p, enq_flags);
            return;
        }
        self.core.qseq += 1;
        let q = self.core.qseq;
        self.core.task_mut(p).ops_state = OpsState::Queueing(q);
        self.core.direct = Some(p);
        self.call(cpu, kf::ENQUEUE, |o, k| o.enqueue(k, p, enq_flags));
        self.core.direct = None;
        match self.core.task_mut(p).ddsp.take() {
            Some((dsq, f)) => {
                self.core.task_mut(p).ops_state = OpsState::None;
                self.core.dispatch_to(cpu, p, dsq, f | enq_flags);
            }
            None => self.core.task_mut(p).ops_state = OpsState::Queued(q),
        }
    }

    /// `dequeue_task_scx`: the task stops being runnable (sleep, exit) or leaves for
    /// another rq (`migrating`). `current`: it is running on its CPU.
    pub fn dequeue(&mut self, p: Pid, deq_flags: u64, current: bool, migrating: bool) {
        if !self.core.task(p).queued {
            return;
        }
        let cpu = self.core.task(p).cpu;
        if let OpsState::Queued(_) = self.core.task(p).ops_state {
            if self.has(op::DEQUEUE) {
                self.call(cpu, kf::REST, |o, k| o.dequeue(k, p, deq_flags));
            }
            self.core.task_mut(p).ops_state = OpsState::None;
        }
        if current && self.has(op::STOPPING) {
            self.call(cpu, kf::REST, |o, k| o.stopping(k, p, false));
        }
        if !migrating && self.has(op::QUIESCENT) {
            self.call(cpu, kf::REST, |o, k| o.quiescent(k, p, deq_flags));
        }
        self.core.task_mut(p).queued = false;
        self.core.dsq_remove(p);
        if current {
            self.core.curr[cpu] = None;
        }
    }

    /// `update_curr_scx`: charge `delta` ns of running to the task's slice.
    pub fn update_curr(&mut self, p: Pid, delta: u64) {
        let t = self.core.task_mut(p);
        t.sum_exec_runtime += delta;
        if t.slice != SCX_SLICE_INF {
            t.slice = t.slice.saturating_sub(delta);
        }
    }

    /// `task_tick_scx` for the running `p` on `cpu`: `ops.tick`, then whether its
    /// slice ran out (`resched_curr`).
    pub fn tick(&mut self, cpu: usize, p: Pid) -> bool {
        if self.has(op::TICK) {
            self.call(cpu, kf::REST, |o, k| o.tick(k, p));
        }
        self.core.task(p).slice == 0
    }

    /// `yield_task_scx`: `ops.yield`, or a zero slice.
    pub fn yield_task(&mut self, cpu: usize, p: Pid) {
        if self.has(op::YIELD) {
            self.call(cpu, kf::REST, |o, k| o.yield_(k, p));
        } else {
            self.core.task_mut(p).slice = 0;
        }
    }

    /// `set_cpus_allowed_scx`: the task's affinity is `cpus` now (the class keeps its
    /// own copy of `p->cpus_ptr`, which every placement and consume reads), then
    /// `ops.set_cpumask`.
    pub fn set_cpumask(&mut self, p: Pid, cpus: CpuMask) {
        let Some(t) = self.core.tasks.get_mut(p as usize).and_then(Option::as_mut) else {
            return;
        };
        t.cpus = cpus;
        let cpu = t.cpu;
        if self.has(op::SET_CPUMASK) {
            self.call(cpu, kf::REST, |o, k| o.set_cpumask(k, p));
        }
    }

    /// `__scx_update_idle`: `cpu` enters (`idle`) or leaves the idle task.
    pub fn update_idle(&mut self, cpu: usize, idle: bool) {
        if self.has(op::UPDATE_IDLE) {
            self.call(cpu, kf::REST, |o, k| o.update_idle(k, cpu as i32, idle));
        }
        if self.core.builtin_idle {
            self.core.idle.update(cpu, idle);
        }
    }

    /// A kick's effect on its target when the IPI arrives (`kick_one_cpu`,
    /// `kick_one_cpu_if_idle`): whether the target reschedules.
    pub fn kick_arrives(&mut self, cpu: usize, flags: u64) -> bool {
        match self.core.curr[cpu] {
            None => true,
            Some(_) if flags & SCX_KICK_IDLE != 0 => false,
            Some(p) => {
                if flags & SCX_KICK_PREEMPT != 0 {
                    self.core.task_mut(p).slice = 0;
                }
                true
            }
        }
    }

    /// The next task of `cpu` (`balance_scx` → `pick_task_scx`, then
    /// `put_prev_task_scx` and `set_next_task_scx` when it changes). `prev` is the
    /// ext task that was running, runnable or not; `None` means the CPU goes idle.
    pub fn pick_next(&mut self, cpu: usize, prev: Option<Pid>) -> Option<Pid> {
        let keep = self.balance_one(cpu, prev);
        let next = if keep {
            let p = prev.expect("kept");
            let t = self.core.task_mut(p);
            if t.slice == 0 {
                t.slice = SCX_SLICE_DFL;
            }
            Some(p)
        } else {
            self.core.local[cpu].head()
        };
        if next == prev {
            return next;
        }
        if let Some(p) = prev {
            self.put_prev(cpu, p, next.is_none());
        }
        if let Some(n) = next {
            self.core.dsq_remove(n);
            let t = self.core.task_mut(n);
            if t.slice == 0 {
                t.slice = SCX_SLICE_DFL; // the kernel warns once
            }
            if self.has(op::RUNNING) {
                self.call(cpu, kf::REST, |o, k| o.running(k, n));
            }
        }
        self.core.curr[cpu] = next;
        next
    }

    /// `balance_one`: true when `prev` keeps the CPU; otherwise the local DSQ has
    /// the next task, or nothing was found.
    fn balance_one(&mut self, cpu: usize, prev: Option<Pid>) -> bool {
        self.core.in_balance = Some(cpu);
        let keep = self.balance_inner(cpu, prev);
        self.core.in_balance = None;
        keep
    }

    fn balance_inner(&mut self, cpu: usize, prev: Option<Pid>) -> bool {
        let prev_queued = prev.filter(|&p| self.core.queued(p));
        if let Some(p) = prev_queued {
            if self.core.task(p).slice > 0 {
                return true;
            }
        }
        if self.core.local[cpu].nr() > 0 {
            return false;
        }
        if self.core.consume_dispatch_q(cpu, SCX_DSQ_GLOBAL) {
            return false;
        }
        if self.has(op::DISPATCH) {
            let mut loops = SCX_DSP_MAX_LOOPS;
            loop {
                self.core.nr_tasks = 0;
                self.call(cpu, kf::DISPATCH, |o, k| o.dispatch(k, cpu as i32, prev));
                self.core.flush_dispatch_buf(cpu);
                if let Some(p) = prev_queued {
                    if self.core.task(p).slice > 0 {
                        return true;
                    }
                }
                if self.core.local[cpu].nr() > 0 {
                    return false;
                }
                if self.core.consume_dispatch_q(cpu, SCX_DSQ_GLOBAL) {
                    return false;
                }
                loops -= 1;
                if loops == 0 {
                    self.core.actions.push(Action::Kick {
                        from: cpu,
                        cpu,
                        flags: 0,
                    });
                    break;
                }
                if self.core.nr_tasks == 0 {
                    break;
                }
            }
        }
        prev_queued.is_some() && self.core.flags & SCX_OPS_ENQ_LAST == 0
    }

    /// `put_prev_task_scx`: a still-runnable `prev` gives up the CPU.
    fn put_prev(&mut self, cpu: usize, p: Pid, next_is_idle: bool) {
        if !self.core.queued(p) {
            return;
        }
        // SCX_TASK_RESET_RUNNABLE_AT: waiting again from now.
        self.core.task_mut(p).runnable_at = self.core.now;
        if self.has(op::STOPPING) {
            self.call(cpu, kf::REST, |o, k| o.stopping(k, p, true));
        }
        if self.core.task(p).slice > 0 {
            // Preempted by a higher class: back at the head, no ops.enqueue.
            self.core
                .enqueue_dsq(SCX_DSQ_LOCAL_ON | cpu as u64, p, SCX_ENQ_HEAD);
        } else {
            let f = if next_is_idle { SCX_ENQ_LAST } else { 0 };
            self.do_enqueue_task(p, cpu, f, false);
        }
    }

    /// The `--check` invariant: every runnable ext task is running, on exactly one
    /// DSQ, or held by the scheduler, and every DSQ entry is such a task.
    pub fn check(&self) -> Result<(), String> {
        let mut seen = vec![0u32; self.core.tasks.len()];
        let all = std::iter::once(&self.core.global)
            .chain(self.core.local.iter())
            .chain(self.core.user.values());
        for q in all {
            for e in &q.list {
                let t = self.core.tasks.get(e.pid as usize).and_then(Option::as_ref);
                match t {
                    Some(t) if t.queued && t.dsq == Some(q.id) => seen[e.pid as usize] += 1,
                    _ => {
                        return Err(format!(
                            "PID {} on DSQ 0x{:x} but not queued there",
                            e.pid, q.id
                        ))
                    }
                }
            }
        }
        for (pid, t) in self.core.tasks.iter().enumerate() {
            let Some(t) = t else { continue };
            if !t.queued {
                continue;
            }
            let running = self.core.curr.contains(&Some(pid as Pid));
            let held = matches!(t.ops_state, OpsState::Queued(_));
            let places = seen[pid] + running as u32 + held as u32;
            if places != 1 {
                return Err(format!(
                    "runnable PID {pid}: {} DSQs, running {running}, held by the scheduler {held}",
                    seen[pid]
                ));
            }
        }
        Ok(())
    }
}
