//! The simulation loop: how a simulated second advances.
//!
//! A run is a discrete-event simulation. The engine's queue holds the machine's
//! pending events (a segment of work ending, a scheduler tick, an IPI arriving, an
//! hrtimer expiring, a balance kick); [`Sim::run`] pops them in time order and hands
//! each to the kernel model (`Kernel::handle`), which runs what the kernel would
//! run at that instant (`scheduler_tick`, `schedule`, `sched_ttwu_pending`,
//! `run_rebalance_domains`, ...). The kernel knows nothing of what tasks do: when a
//! CPU's current task has finished its last demand, the kernel lists the CPU as
//! needing a step, and this loop runs the task's behaviour program (described by
//! [`crate::workload`]) until an operation needs CPU time (compute, spin, the cost of
//! a system call), blocks (a read from an empty pipe, a futex wait, a sleep), or the
//! task exits or yields. What an op asks of the kernel goes through the kernel's
//! narrow system-call surface: run this much work, spin until then, block, sleep,
//! yield, exit, fork, wake these tasks (`try_to_wake_up` with the op's `WF_SYNC`
//! hint), change affinity.
//!
//! System calls are modelled as *cost, then effect*: the task first runs the call's
//! kernel cost as work, then the effect happens (data moves, waiters are woken with
//! the kernel's sync or non-sync flavour). A task blocked in a call re-executes it
//! when woken, as the kernel's wait loops do. The interpreter is split by op family:
//! `cpu` (compute, spin, sleep, yield), `chan` (pipes and sockets), `sync`
//! (futexes, mutexes, barriers, condition variables, spin locks), `lifecycle`
//! (fork, wait, exit, affinity), `timers` (rt-app timers, clock reads, metrics)
//! and `data` (loops, registers, shared words); `deadlock` finds a run that can
//! no longer progress.
//!
//! `SIM_` **cross-CPU channel traffic.** A pipe or AF_UNIX write or read call costs
//! `pipe_write` / `unix_write` / `pipe_read` / `unix_read` wherever it runs; when the
//! channel's previous write or read call ran on a *different* CPU, the call also pays
//! `pipe_remote` / `unix_remote` as more of its cost, before its effect. That is
//! what moving the channel's buffers, lock and queue heads between caches (and, for
//! a socket, freeing the skb away from the CPU that allocated it) costs a real call;
//! the kernel has no such function, the cost is in its cache misses. The simulator
//! keeps the CPU of each channel's last call (a blocked call counts: it took the
//! lock). Both fields are 0 in every preset; `schedlab calibrate host` measures them
//! (a spinning cross-CPU ping-pong, `experiment::calibrate`). TCP loopback pays none.
//!
//! The run ends when every task has exited (daemon tasks, the background load, are
//! not waited for), when the scenario's duration elapses, or with an error when tasks
//! are left blocked with nothing left that could wake them. Beside daemons, or with
//! spin locks, the event queue never drains, so that check runs every 10 ms: it also
//! catches tasks spinning for good on a spin lock whose holder is blocked for good.

use crate::abi::{Pid, WF_SYNC};
use crate::engine::prefetch::{prefetch, PREFETCH_MIN_TASKS};
use crate::engine::{EventQueue, Observer, RngStream, RngStreams, SimTime};
use crate::sched::core::{Kernel, TaskState};
use crate::sched::{Event, SchedEvent};
use crate::stats::LatencyHist;
use crate::workload::ipc::{
    Barrier, ChanKind, ChanParams, Channel, CondVar, FutexTable, Mutex, Outcome, Wake,
};
use crate::workload::program::{ObjRef, Op, WorkloadSpec, NR_REGS};

/// Ends the current op: the program moves on to its next op (a macro so that the
/// `return` leaves the op's function).
macro_rules! next {
    ($st:ident) => {{
        $st.phase = 0;
        $st.retry = false;
        $st.pc += 1;
        return false;
    }};
}

/// Pays the current op's system-call cost ([`Sim::pay`]); the op's function returns
/// when the task must now run it.
macro_rules! pay {
    ($self:ident, $cpu:ident, $op:ident, $st:ident) => {
        if $self.pay($cpu, &$op, $st) {
            return true;
        }
    };
}

mod chan;
mod cpu;
mod data;
mod deadlock;
mod lifecycle;
mod sync;
mod timers;

/// Workload event ids (`Event::Workload { id, .. }`).
const EV_START_TASK: u32 = 1;
const EV_STOP: u32 = 2;

/// With daemon tasks (background spinners) or spin locks the event queue never
/// drains, so a deadlock of the other tasks is looked for every 10 ms of simulated
/// time instead.
const DAEMON_CHECK_NS: SimTime = 10_000_000;

/// No CPU has touched the channel yet ([`Sim::remote_chan_cost`]).
const NO_CPU: u32 = u32::MAX;

/// Interpreter state of one task.
struct ProgState {
    prog: usize,
    instance: u32,
    /// Not counted in `alive` (background load, `WorkloadSpec::daemons`).
    daemon: bool,
    pc: usize,
    phase: u8,
    retry: bool,
    /// The current op's cost already ran with the preceding compute.
    prepaid: bool,
    /// The current channel call already ran its `pipe_remote` / `unix_remote`.
    remote_paid: bool,
    got: u32,
    /// The open loops, innermost last: (the `Loop` op's index, iterations left).
    /// Two levels live inside the state itself, so a loop's end reads no other
    /// line (most programs nest one or two).
    loops: smallvec::SmallVec<[(usize, u64); 2]>,
    marks: [SimTime; NR_REGS],
    /// Items taken by the last `Splice`, walked newest first by `LoopCount::Each`.
    batch: Vec<u64>,
    rng: RngStream,
    stream: StreamName,
    nfork: u32,
    /// The last child `Op::Fork` / `Op::Spawn` created (`AffinityTarget::LastChild`).
    last_child: Option<Pid>,
    children_alive: u32,
    zombies: u32,
    waiting_child: bool,
    // rt-app ops: the task's start time (its timers' reference), the expiry an
    // `Op::Timer` sleeps until, and the last uclamp request.
    t_start: SimTime,
    timer_exp: SimTime,
    uclamp: (u16, u16),
    /// rt-app's statistics of the current phase iteration (`Op::LoopStat`).
    rta: RtaStats,
}

/// rt-app's `log_data` of one phase iteration, in its µs (each figure truncated
/// as `timespec_to_usec` does before it is summed), for the `rtapp_stats` marker.
#[derive(Clone, Copy, Debug, Default)]
struct RtaStats {
    /// When the current `run` event started.
    run_start: SimTime,
    /// The measured wall time of the iteration's `run` / `runtime` events.
    run_us: u64,
    /// Wakeup latencies of its timers (reset by a timer already late).
    wu_lat_us: u64,
    /// The last timer's slack (expiry − arrival, negative when late), and the sum.
    slack_us: i64,
    slack_sum_us: i64,
    /// The iteration's end (`t_end`).
    t_end: SimTime,
}

/// The name of a task's random stream (which its forked children's names extend):
/// a scenario task's name, kept once in the spec, or a forked child's `parent/n`.
enum StreamName {
    Spec(u32),
    Forked(Box<str>),
}

/// The first eight blocked task names, for a deadlock message.
fn blocked_list(names: &[&str]) -> String {
    let mut s = names.iter().take(8).copied().collect::<Vec<_>>().join(", ");
    if names.len() > 8 {
        s.push_str(", ...");
    }
    s
}

/// Why a run stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// Every task exited.
    Completed,
    /// The scenario's duration elapsed.
    Duration,
}

/// A simulation that cannot go on.
#[derive(Clone, Debug, PartialEq, thiserror::Error, serde::Serialize, serde::Deserialize)]
pub enum SimError {
    #[error("workload deadlocked at t={t_ns} ns: {blocked} tasks blocked ({detail})")]
    Deadlock {
        t_ns: SimTime,
        blocked: usize,
        detail: String,
    },
    #[error(
        "program of task {task} makes no progress at t={t_ns} ns (an endless loop without work?)"
    )]
    NoProgress { task: String, t_ns: SimTime },
    #[error("task {task} at t={t_ns} ns: {msg}")]
    BadProgram {
        task: String,
        t_ns: SimTime,
        msg: String,
    },
    #[error("invariant violated at t={t_ns} ns after event {event}: {msg}")]
    Invariant {
        t_ns: SimTime,
        event: u64,
        msg: String,
    },
    /// A run of a C scheduler in the sandbox (`experiment::sandbox`) ended
    /// without a result: it tried a system call the sandbox refuses, crashed, or
    /// could not be loaded.
    #[error("{msg}")]
    Sandbox { msg: String },
    /// The simulator itself went wrong (an event queue fault): a bug, reported
    /// instead of a panic.
    #[error("internal error at t={t_ns} ns after event {event}: {msg} (a schedlab bug: please report it with the scenario)")]
    Internal {
        t_ns: SimTime,
        event: u64,
        msg: String,
    },
}

impl SimError {
    /// True when the scenario's workload is at fault (a deadlock, a program that
    /// misuses a mutex or loops without work), not the simulator.
    pub fn is_input_error(&self) -> bool {
        !matches!(self, SimError::Invariant { .. } | SimError::Internal { .. })
    }
}

/// Why a fork failed at the task limit.
fn task_limit_msg() -> String {
    format!(
        "fork: the run already holds {} tasks, the limit (MAX_TASKS; see docs/limits.md)",
        crate::engine::MAX_TASKS
    )
}

/// Engine counters of a run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SimStats {
    /// Events that did something (popped minus stale).
    pub events: u64,
    pub popped: u64,
    /// Popped events superseded by a later re-arm (dropped by their generation).
    pub stale: u64,
    /// Cancelled events purged from the queue before their time.
    pub purged: u64,
    pub max_queue: usize,
}

/// Values a workload's programs recorded, by metric.
#[derive(Debug, Default)]
pub struct WorkloadMetrics {
    pub hists: Vec<LatencyHist>,
}

/// The simulated system: kernel, event queue, workload objects and interpreter.
pub struct Sim<O> {
    pub(crate) k: Kernel<O>,
    pub(crate) q: EventQueue<Event>,
    pub(crate) spec: std::sync::Arc<WorkloadSpec>,
    st: Vec<Option<Box<ProgState>>>,
    chans: Vec<Channel>,
    /// Channel kind per channel index (for costs).
    chan_kind: Vec<ChanKind>,
    /// The kind of every channel when they are all of one kind (a benchmark's
    /// channels are all pipes, or all sockets): a call's cost then needs no index.
    one_chan_kind: Option<ChanKind>,
    /// `SIM_` the CPU of each channel's last write or read call ([`NO_CPU`] before
    /// the first), for `pipe_remote` / `unix_remote` (see [`Sim::remote_chan_cost`]).
    chan_cpu: Vec<u32>,
    futex: FutexTable,
    futex_addr: Vec<usize>,
    mutexes: Vec<Mutex>,
    barriers: Vec<Barrier>,
    /// The condition variable and the count of parties still to come of each
    /// barrier used as an [`Op::CondBarrier`] (rt-app's own barriers).
    bar_conds: Vec<CondVar>,
    bar_waiting: Vec<i64>,
    conds: Vec<CondVar>,
    /// Next expiry of each periodic timer (`Op::Timer`), `None` until first used.
    timers: Vec<Option<SimTime>>,
    pub(crate) metrics: WorkloadMetrics,
    /// Shared words, lock-free lists and spin-lock holders (`WorkloadSpec::words`,
    /// `lists`, `spinlocks`).
    pub(crate) words: Vec<u64>,
    lists: Vec<Vec<u64>>,
    spin_holder: Vec<Option<Pid>>,
    wakes: Vec<Wake>,
    streams: RngStreams,
    alive: u32,
    pub(crate) check: bool,
    /// `SIM_` run-to-run noise: every system-call cost an op pays is scaled by
    /// `1 + noise × u`, `u` uniform in [−1, 1) from the run's `noise` stream (0 = the
    /// exact cost table). Real runs vary through interrupts, cache and timing
    /// effects the model does not have; without some noise a workload with no random
    /// draws gives the same result for every seed.
    pub(crate) noise: f64,
    noise_rng: RngStream,
    stop_at: Option<SimTime>,
    next_daemon_check: SimTime,
    /// Queue length past which cancelled events are purged (`Kernel::purge_cancelled`).
    purge_at: usize,
    /// Prefetch hints from this many tasks on ([`PREFETCH_MIN_TASKS`]; tests set it
    /// to show that the hints change nothing).
    prefetch_min_tasks: usize,
    stopped: Option<StopReason>,
    /// A program error found while executing an op.
    fail: Option<SimError>,
    /// Per task of the spec: the first earlier task of its process (its thread
    /// group's leader), if any.
    leader_of: Vec<Option<usize>>,
    /// The leaders' pids, once found.
    leader_pid: std::collections::HashMap<usize, Pid>,
    /// Per task of the spec: its pid once started (`AffinityTarget::Task`).
    spec_pid: Vec<Option<Pid>>,
}

impl<O: Observer<SchedEvent>> Sim<O> {
    /// Build the system; tasks start when [`Sim::run`] runs.
    pub fn new(
        k: Kernel<O>,
        spec: impl Into<std::sync::Arc<WorkloadSpec>>,
        streams: RngStreams,
        chan_params: ChanParams,
    ) -> Self {
        let spec = spec.into();
        let leader_of: Vec<Option<usize>> = {
            let mut first = std::collections::HashMap::new();
            spec.tasks
                .iter()
                .enumerate()
                .map(|(i, t)| {
                    let p = t.process?;
                    let j = *first.entry(p).or_insert(i);
                    (j < i).then_some(j)
                })
                .collect()
        };
        let mut chans = Vec::new();
        let mut chan_kind = Vec::new();
        for c in &spec.channels {
            for _ in 0..c.count {
                chans.push(Channel::new(c.kind, chan_params));
                chan_kind.push(c.kind);
            }
        }
        let mut futex = FutexTable::default();
        let futex_addr = (0..spec.futexes).map(|_| futex.alloc()).collect();
        let metrics = WorkloadMetrics {
            hists: spec
                .metrics
                .iter()
                .map(|_| LatencyHist::default())
                .collect(),
        };
        let noise_rng = streams.stream("noise");
        let nr_spec_tasks = spec.tasks.len();
        let mut k = k;
        k.set_random_placement(streams.stream("random_placement"));
        k.reserve_tasks(spec.tasks.len());
        Sim {
            k,
            q: EventQueue::with_capacity(4096),
            mutexes: (0..spec.mutexes).map(|_| Mutex::default()).collect(),
            barriers: spec.barriers.iter().map(|&n| Barrier::new(n)).collect(),
            bar_conds: spec.barriers.iter().map(|_| CondVar::default()).collect(),
            bar_waiting: spec.barriers.iter().map(|&n| i64::from(n) - 1).collect(),
            conds: (0..spec.condvars).map(|_| CondVar::default()).collect(),
            timers: vec![None; spec.timers as usize],
            words: vec![0; spec.words as usize],
            lists: vec![Vec::new(); spec.lists as usize],
            spin_holder: vec![None; spec.spinlocks as usize],
            spec,
            st: Vec::new(),
            chan_cpu: vec![NO_CPU; chans.len()],
            chans,
            one_chan_kind: match chan_kind.split_first() {
                Some((&k, rest)) if rest.iter().all(|&r| r == k) => Some(k),
                _ => None,
            },
            chan_kind,
            futex,
            futex_addr,
            metrics,
            wakes: Vec::new(),
            streams,
            alive: 0,
            check: false,
            noise: 0.0,
            noise_rng,
            stop_at: None,
            next_daemon_check: 0,
            purge_at: 0, // the first purge sets it
            prefetch_min_tasks: PREFETCH_MIN_TASKS,
            leader_of,
            leader_pid: std::collections::HashMap::new(),
            spec_pid: vec![None; nr_spec_tasks],
            stopped: None,
            fail: None,
        }
    }

    /// The kernel model being driven.
    pub fn kernel(&self) -> &Kernel<O> {
        &self.k
    }

    /// The kernel model, to configure its logging or build a test state.
    pub fn kernel_mut(&mut self) -> &mut Kernel<O> {
        &mut self.k
    }

    /// The workload as described.
    pub fn spec(&self) -> &WorkloadSpec {
        &self.spec
    }

    /// What the workload's programs recorded.
    pub fn metrics(&self) -> &WorkloadMetrics {
        &self.metrics
    }

    /// The shared words of the workload (`WorkloadSpec::words`) as they are now.
    pub fn words(&self) -> &[u64] {
        &self.words
    }

    /// Verify the scheduler's invariants after every event (`--check`).
    pub fn set_check(&mut self, on: bool) {
        self.check = on;
    }

    /// Prefetch hints from `n` tasks on (engine/prefetch.rs; 0: always, `usize::MAX`:
    /// never). They change no result, only the speed.
    pub fn set_prefetch_min_tasks(&mut self, n: usize) {
        self.prefetch_min_tasks = n;
    }

    /// `SIM_` run-to-run cost noise (see the field).
    pub fn set_noise(&mut self, noise: f64) {
        self.noise = noise;
    }

    /// Number of events processed so far (popped events that were still current;
    /// superseded ones, dropped by their generation check, are not counted).
    pub fn events(&self) -> u64 {
        self.q.popped() - self.k.stale_events()
    }

    /// Engine counters so far.
    pub fn stats(&self) -> SimStats {
        SimStats {
            events: self.events(),
            popped: self.q.popped(),
            stale: self.k.stale_events(),
            purged: self.q.purged(),
            max_queue: self.q.max_len(),
        }
    }

    /// Run until all tasks exit or `duration` (ns) elapses.
    pub fn run(&mut self, duration: Option<SimTime>) -> Result<StopReason, SimError> {
        self.stop_at = duration;
        if let Some(d) = duration {
            self.q.push(
                d,
                Event::Workload {
                    id: EV_STOP,
                    arg: 0,
                },
            );
        }
        let mut spawned = vec![false; self.spec.tasks.len()];
        for &i in &self.spec.spawned {
            if let Some(s) = spawned.get_mut(i) {
                *s = true;
            }
        }
        for (i, &by_spawn) in spawned.iter().enumerate() {
            if by_spawn {
                continue; // created by an `Op::Spawn`
            }
            let t = self.spec.tasks[i].start_ns;
            self.q.push(
                t,
                Event::Workload {
                    id: EV_START_TASK,
                    arg: i as u32,
                },
            );
        }
        self.k.start_watchdogs(&mut self.q);
        // What a sched_ext scheduler's ops.init asked for (a BPF timer started).
        self.k.scx_start(&mut self.q);
        // Events the boot-time idle entry asked for (a kept tick, a polling limit).
        self.k.flush(&mut self.q);
        // Until nothing but the kernel's own periodic timers is left (unless a
        // sched_ext task waits to run: then its watchdog is work to come).
        while self.q.len() > self.k.watchdog_events() || self.k.scx_task_waiting() {
            let Some((now, ev)) = self.q.pop() else {
                break;
            };
            if self.k.tasks().len() >= self.prefetch_min_tasks {
                self.prefetch_ahead(&ev);
            }
            if let Some(Event::Workload { id, arg }) = self.k.handle(now, ev, &mut self.q) {
                match id {
                    EV_START_TASK => self.start_task(arg as usize),
                    EV_STOP => {
                        self.stopped = Some(StopReason::Duration);
                    }
                    _ => unreachable!("unknown workload event {id}"),
                }
            }
            self.drain_steps()?;
            self.k.purge_cancelled(&mut self.q, &mut self.purge_at);
            if let Some(msg) = self.q.fault() {
                return Err(SimError::Internal {
                    t_ns: now,
                    event: self.q.popped(),
                    msg: msg.to_string(),
                });
            }
            // A failed sched_ext scheduler is unloaded and the fair class takes
            // every task, as the kernel does; the run goes on.
            if self.k.scx.is_some() && self.k.scx_error().is_some() {
                self.k.scx_disable(&mut self.q);
            }
            if self.check {
                self.k
                    .check_invariants()
                    .map_err(|msg| SimError::Invariant {
                        t_ns: now,
                        event: self.q.popped(),
                        msg,
                    })?;
            }
            if let Some(r) = self.stopped {
                return Ok(r);
            }
            if self.alive == 0 && self.all_started() {
                return Ok(StopReason::Completed);
            }
            if (!self.spec.daemons.is_empty() || self.spec.spinlocks > 0)
                && now >= self.next_daemon_check
            {
                self.next_daemon_check = now + DAEMON_CHECK_NS;
                if let Some(e) = self.deadlock_beside_daemons() {
                    return Err(e);
                }
            }
        }
        let blocked: Vec<&str> = self
            .k
            .tasks()
            .iter()
            .skip(1)
            .filter(|t| t.state == TaskState::Sleeping)
            .map(|t| t.name.as_str())
            .collect();
        let detail = blocked_list(&blocked);
        Err(SimError::Deadlock {
            t_ns: self.k.now(),
            blocked: blocked.len(),
            detail,
        })
    }

    /// Prefetch hints (engine/prefetch.rs) while `ev` is about to be handled: what
    /// the next event reads first, and for a segment end the tasks it will likely
    /// step, with their interpreter states.
    #[inline(always)]
    fn prefetch_ahead(&self, ev: &Event) {
        if let Some((_, next)) = self.q.next_hint() {
            self.k.prefetch_for(next);
        }
        if let Event::SegDone { cpu, .. } = *ev {
            for pid in self.k.segment_end_tasks(cpu as usize).into_iter().flatten() {
                self.k.prefetch_task(pid);
                if let Some(Some(st)) = self.st.get(pid as usize) {
                    prefetch(&**st);
                }
            }
        }
    }

    fn all_started(&self) -> bool {
        self.st.iter().flatten().count() >= self.spec.tasks.len()
    }

    /// The text of a stream name.
    fn stream_name<'a>(&'a self, s: &'a StreamName) -> &'a str {
        match s {
            StreamName::Spec(i) => &self.spec.tasks[*i as usize].name,
            StreamName::Forked(name) => name,
        }
    }

    fn new_state(
        &mut self,
        pid: Pid,
        prog: usize,
        instance: u32,
        stream: StreamName,
        daemon: bool,
    ) {
        let i = pid as usize;
        if self.st.len() <= i {
            self.st.resize_with(i + 1, || None);
        }
        if let Some(c) = &self.spec.programs[prog].work_class {
            self.k.set_work_class(pid, c);
        }
        let rng = self.streams.stream(self.stream_name(&stream));
        self.st[i] = Some(Box::new(ProgState {
            prog,
            instance,
            daemon,
            pc: 0,
            phase: 0,
            retry: false,
            prepaid: false,
            remote_paid: false,
            got: 0,
            loops: smallvec::SmallVec::new(),
            marks: [0; NR_REGS],
            batch: Vec::new(),
            rng,
            stream,
            nfork: 0,
            last_child: None,
            children_alive: 0,
            zombies: 0,
            waiting_child: false,
            t_start: self.k.now(),
            timer_exp: 0,
            uclamp: (0, 1024),
            rta: RtaStats::default(),
        }));
        if !daemon {
            self.alive += 1;
        }
    }

    fn start_task(&mut self, i: usize) {
        let specs = std::sync::Arc::clone(&self.spec);
        let spec = &specs.tasks[i];
        let cpus = spec.cpus_or(self.k.machine().all_cpus());
        // The leader's pid: the first task named as the leader (tasks are never
        // removed and new ones get higher pids, so once found it stays the answer).
        let tgid = self.leader_of[i].and_then(|j| {
            if let Some(&pid) = self.leader_pid.get(&j) {
                return Some(pid);
            }
            let pid = self
                .k
                .tasks()
                .iter()
                .find(|t| t.name == self.spec.tasks[j].name)
                .map(|t| t.pid)?;
            self.leader_pid.insert(j, pid);
            Some(pid)
        });
        let pid = self
            .k
            .create_task(&spec.name, None, false, spec.nice, spec.policy, cpus);
        self.spec_pid[i] = Some(pid);
        if let Some(tg) = tgid {
            self.k.set_tgid(pid, tg);
        }
        let daemon = self.spec.daemons.contains(&i);
        self.new_state(
            pid,
            spec.prog,
            spec.instance,
            StreamName::Spec(i as u32),
            daemon,
        );
        // A kernel thread from boot that starts with a sleep is asleep at the start.
        let boot = self.spec.boot.contains(&i);
        match self.spec.programs[spec.prog].ops.first() {
            Some(Op::Sleep(d)) if boot => {
                let st = self.st[pid as usize].as_mut().expect("state just made");
                let w = d.sample(&mut st.rng);
                st.phase = 1;
                self.k.start_asleep(pid, w, &mut self.q);
            }
            _ => self.k.wake_up_new_task(pid, &mut self.q),
        }
    }

    /// Run program steps and re-arm segment ends until this instant is settled.
    fn drain_steps(&mut self) -> Result<(), SimError> {
        loop {
            self.k.flush(&mut self.q);
            if self.k.need_step().is_empty() {
                return Ok(());
            }
            let mut i = 0;
            while i < self.k.need_step().len() {
                let cpu = self.k.need_step()[i] as usize;
                i += 1;
                self.step(cpu)?;
            }
            self.k.clear_need_step();
        }
    }

    /// Wake every task in `self.wakes` from `cpu`.
    fn do_wakes(&mut self, cpu: usize) {
        for j in 0..self.wakes.len() {
            let w = self.wakes[j];
            self.k
                .try_to_wake_up(w.pid, if w.sync { WF_SYNC } else { 0 }, cpu, &mut self.q);
        }
        self.wakes.clear();
    }

    /// The end of a call that sleeps until it can be tried again: `Done` moves on
    /// to the next op (false), `Block` blocks the task, to retry the call when woken
    /// (true: the step is over).
    #[inline]
    fn next_or_retry(&mut self, cpu: usize, r: Outcome, st: &mut ProgState) -> bool {
        match r {
            Outcome::Done => next!(st),
            Outcome::Block => {
                st.retry = true;
                self.k.block_current(cpu, &mut self.q);
                true
            }
        }
    }

    /// Start the cost segment of a system call; returns true when the task must now
    /// run it (the step ends), false when the call is free and the effect follows.
    fn cost(&mut self, cpu: usize, st_phase: &mut u8, ns: u64) -> bool {
        if *st_phase == 0 {
            *st_phase = 1;
            if ns > 0 || self.k.kernel_work_pending(cpu) {
                self.k.run_work(cpu, 0, ns, &mut self.q);
                return true;
            }
        }
        false
    }

    /// Execute the program of `cpu`'s current task until it needs time or blocks.
    fn step(&mut self, cpu: usize) -> Result<(), SimError> {
        let Some(pid) = self.k.curr(cpu) else {
            return Ok(());
        };
        if self.k.has_segment(pid) || self.k.kernel_work_pending(cpu) {
            return Ok(());
        }
        // The task's interpreter state is out of its slot for the whole step (no op
        // reads its own task's slot; a child's exit writes its parent's).
        let mut st = self.st[pid as usize]
            .take()
            .expect("running task without a program");
        let mut budget = 1_000_000u32;
        let r = loop {
            budget -= 1;
            if budget == 0 {
                break Err(SimError::NoProgress {
                    task: self.k.task(pid).name.clone(),
                    t_ns: self.k.now(),
                });
            }
            let done = self.exec_op(cpu, pid, &mut st);
            if let Some(e) = self.fail.take() {
                break Err(e);
            }
            // Kernel work an op charged to this CPU (the waker-side cost of a wakeup, a
            // futex wake) runs before whatever the program does next: every op that
            // can block first sets a segment (its own cost, possibly zero), which the
            // CPU only starts after its pending kernel work.
            if done {
                break Ok(());
            }
        };
        self.st[pid as usize] = Some(st);
        r
    }

    /// Record a program error; the run stops with it.
    fn bad_program(&mut self, pid: Pid, msg: &str) -> bool {
        self.fail = Some(SimError::BadProgram {
            task: self.k.task(pid).name.clone(),
            t_ns: self.k.now(),
            msg: msg.to_string(),
        });
        true
    }

    /// `ns` with the run's cost noise applied (see [`Sim::noise`]).
    #[inline]
    fn noisy(&mut self, ns: u64) -> u64 {
        if self.noise == 0.0 || ns == 0 {
            return ns;
        }
        let u = self.noise_rng.next_f64() * 2.0 - 1.0;
        (ns as f64 * (1.0 + self.noise * u)).round().max(0.0) as u64
    }

    /// The kind of the channel `ch` names for instance `inst`, as the call's cost
    /// reads it.
    #[inline]
    fn chan_kind_of(&self, ch: &ObjRef, inst: u32) -> ChanKind {
        match self.one_chan_kind {
            Some(k) => k,
            None => self.chan_kind[ch.resolve(inst)],
        }
    }

    /// The system-call cost an op runs before its effect (`None`: the op has none, or
    /// does something else first). Inlined: at most call sites the op's kind is
    /// known, and the match folds to one field of the cost table.
    #[inline(always)]
    fn op_cost(&self, op: &Op, inst: u32) -> Option<u64> {
        let c = self.k.cost();
        Some(match *op {
            Op::Write { ch, .. } => match self.chan_kind_of(&ch, inst) {
                ChanKind::Pipe => c.pipe_write,
                ChanKind::UnixStream => c.unix_write,
                ChanKind::TcpLoopback => c.tcp_write_8k,
            },
            Op::Read { ch, .. } => match self.chan_kind_of(&ch, inst) {
                ChanKind::Pipe => c.pipe_read,
                ChanKind::UnixStream => c.unix_read,
                ChanKind::TcpLoopback => c.tcp_read_8k,
            },
            Op::Poll { .. } | Op::WaitChild | Op::Syscall => c.syscall,
            Op::ThreadStart { arena: false } => c.thread_start,
            Op::ThreadStart { arena: true } => c.thread_start_arena,
            Op::FutexWait { .. }
            | Op::Barrier(_)
            | Op::CondWait { .. }
            | Op::CondBarrier { .. } => c.futex_wait,
            Op::FutexWake { .. } | Op::CondSignal(_) | Op::CondBroadcast(_) => c.futex_wake,
            Op::Lock(_) | Op::Unlock(_) => c.mutex_fast / 2,
            Op::Fork { thread: true, .. } | Op::Spawn { .. } => c.clone_thread,
            Op::Fork { thread: false, .. } => c.fork,
            Op::Exit => c.exit,
            Op::Yield => c.yield_,
            Op::Mark { .. } | Op::Record { .. } | Op::Timer { .. } | Op::Elapsed { .. } => c.gtod,
            Op::SetAffinity { .. } | Op::SetUclamp { .. } | Op::Marker(_) => c.syscall,
            // Memory operations are free; a post or an await enters the kernel only
            // on one of its paths, so it pays its futex cost itself.
            Op::Store { .. }
            | Op::Load { .. }
            | Op::FetchAdd { .. }
            | Op::SetReg { .. }
            | Op::AddWord { .. }
            | Op::RecordReg { .. }
            | Op::Push { .. }
            | Op::Splice { .. }
            | Op::FutexPost { .. }
            | Op::FutexAwait { .. }
            | Op::SpinLock { .. }
            | Op::SpinUnlock { .. }
            | Op::SetEpoch { .. }
            | Op::LoopStat(_) => return None,
            Op::Compute(_)
            | Op::Spin(_)
            | Op::Sleep(_)
            | Op::FutexSet { .. }
            | Op::Loop { .. }
            | Op::EndLoop { .. }
            | Op::Count { .. } => return None,
        })
    }

    /// Execute (part of) one op: the dispatch to its family. Returns true when the
    /// step is over.
    fn exec_op(&mut self, cpu: usize, pid: Pid, st: &mut ProgState) -> bool {
        let ops = &self.spec.programs[st.prog].ops;
        let op = if st.pc < ops.len() {
            ops[st.pc]
        } else {
            Op::Exit
        };
        match op {
            Op::Compute(_)
            | Op::Spin(_)
            | Op::Sleep(_)
            | Op::Yield
            | Op::Syscall
            | Op::ThreadStart { .. } => self.exec_cpu(cpu, op, st),
            Op::Write { .. } | Op::Read { .. } | Op::Poll { .. } => {
                self.exec_chan(cpu, pid, op, st)
            }
            Op::FutexWait { .. }
            | Op::FutexWake { .. }
            | Op::FutexSet { .. }
            | Op::FutexPost { .. }
            | Op::FutexAwait { .. } => self.exec_futex(cpu, pid, op, st),
            Op::Lock(_)
            | Op::Unlock(_)
            | Op::Barrier(_)
            | Op::CondBarrier { .. }
            | Op::CondWait { .. }
            | Op::CondSignal(_)
            | Op::CondBroadcast(_)
            | Op::SpinLock { .. }
            | Op::SpinUnlock { .. } => self.exec_lock(cpu, pid, op, st),
            Op::Fork { .. }
            | Op::Spawn { .. }
            | Op::WaitChild
            | Op::Exit
            | Op::SetAffinity { .. }
            | Op::SetUclamp { .. } => self.exec_lifecycle(cpu, pid, op, st),
            Op::Timer { .. }
            | Op::Mark { .. }
            | Op::Record { .. }
            | Op::Count { .. }
            | Op::Elapsed { .. }
            | Op::SetEpoch { .. }
            | Op::RecordReg { .. }
            | Op::Marker(_)
            | Op::LoopStat(_) => self.exec_timers(cpu, pid, op, st),
            Op::Loop { .. }
            | Op::EndLoop { .. }
            | Op::Store { .. }
            | Op::Load { .. }
            | Op::FetchAdd { .. }
            | Op::SetReg { .. }
            | Op::AddWord { .. }
            | Op::Push { .. }
            | Op::Splice { .. } => self.exec_data(cpu, op, st),
        }
    }

    /// Pay the current op's system-call cost (unless it ran with the preceding
    /// compute): true when the task must now run it (the step ends), false when the
    /// effect follows at once.
    #[inline(always)]
    fn pay(&mut self, cpu: usize, op: &Op, st: &mut ProgState) -> bool {
        if st.prepaid {
            st.prepaid = false;
            st.phase = 1;
        }
        let ns: u64 = self.op_cost(op, st.instance).map_or(0, |c| self.noisy(c));
        let mut ph = st.phase;
        let r = self.cost(cpu, &mut ph, ns);
        st.phase = ph;
        r
    }
}
