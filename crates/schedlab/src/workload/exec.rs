//! The program interpreter: runs every task's behaviour program on the simulated
//! kernel, and the run loop that drives the whole simulation.
//!
//! When a CPU's current task has finished its last demand, the kernel asks for the
//! task's next step. The interpreter then executes the task's program until an
//! operation needs CPU time (compute, spin, the cost of a system call), blocks (a read
//! from an empty pipe, a futex wait, a sleep), or the task exits or yields. System
//! calls are modelled as *cost, then effect*: the task first runs the call's kernel
//! cost as work, then the effect happens (data moves, waiters are woken with the
//! kernel's sync or non-sync flavour). A task blocked in a call re-executes it when
//! woken, as the kernel's wait loops do.
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

use std::fmt::Write as _;

use crate::engine::{EventQueue, Observer, RngStream, RngStreams, SimTime};
use crate::metrics::LatencyHist;
use crate::sched::core::{Kernel, Segment, TaskState, WORK_SHIFT};
use crate::sched::{Event, Pid, SchedEvent, WF_SYNC};
use crate::workload::ipc::{
    Barrier, ChanKind, ChanParams, Channel, CondVar, FutexTable, Mutex, Outcome, ReadOutcome, Wake,
};
use crate::workload::program::{
    LoopCount, Op, WorkloadSpec, FUTEX_BLOCKED, FUTEX_RUNNING, NO_METRIC, NR_REGS, SPIN_POLL_NS,
};

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
    loops: Vec<(usize, u64)>,
    marks: [SimTime; NR_REGS],
    /// Items taken by the last `Splice`, walked newest first by `LoopCount::Each`.
    batch: Vec<u64>,
    rng: RngStream,
    stream: String,
    nfork: u32,
    children_alive: u32,
    zombies: u32,
    waiting_child: bool,
    // rt-app ops: the task's start time (its timers' reference), the expiry an
    // `Op::Timer` sleeps until, and the last uclamp request.
    t_start: SimTime,
    timer_exp: SimTime,
    uclamp: (u16, u16),
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
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// Every task exited.
    Completed,
    /// The scenario's duration elapsed.
    Duration,
}

/// A simulation that cannot go on.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
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
    pub k: Kernel<O>,
    pub q: EventQueue<Event>,
    pub spec: WorkloadSpec,
    st: Vec<Option<Box<ProgState>>>,
    chans: Vec<Channel>,
    /// Channel kind per channel index (for costs).
    chan_kind: Vec<ChanKind>,
    /// `SIM_` the CPU of each channel's last write or read call ([`NO_CPU`] before
    /// the first), for `pipe_remote` / `unix_remote` (see [`Sim::remote_chan_cost`]).
    chan_cpu: Vec<u32>,
    futex: FutexTable,
    futex_addr: Vec<usize>,
    mutexes: Vec<Mutex>,
    barriers: Vec<Barrier>,
    conds: Vec<CondVar>,
    /// Next expiry of each periodic timer (`Op::Timer`), `None` until first used.
    timers: Vec<Option<SimTime>>,
    pub metrics: WorkloadMetrics,
    /// Shared words, lock-free lists and spin-lock holders (`WorkloadSpec::words`,
    /// `lists`, `spinlocks`).
    pub words: Vec<u64>,
    lists: Vec<Vec<u64>>,
    spin_holder: Vec<Option<Pid>>,
    wakes: Vec<Wake>,
    streams: RngStreams,
    alive: u32,
    pub check: bool,
    /// `SIM_` run-to-run noise: every system-call cost an op pays is scaled by
    /// `1 + noise × u`, `u` uniform in [−1, 1) from the run's `noise` stream (0 = the
    /// exact cost table). Real runs vary through interrupts, cache and timing
    /// effects the model does not have; without some noise a workload with no random
    /// draws gives the same result for every seed.
    pub noise: f64,
    noise_rng: RngStream,
    stop_at: Option<SimTime>,
    next_daemon_check: SimTime,
    /// Queue length past which cancelled events are purged (`Kernel::purge_cancelled`).
    purge_at: usize,
    stopped: Option<StopReason>,
    /// A program error found while executing an op.
    fail: Option<SimError>,
}

impl<O: Observer<SchedEvent>> Sim<O> {
    /// Build the system; tasks start when [`Sim::run`] runs.
    pub fn new(
        k: Kernel<O>,
        spec: WorkloadSpec,
        streams: RngStreams,
        chan_params: ChanParams,
    ) -> Self {
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
        Sim {
            k,
            q: EventQueue::with_capacity(4096),
            mutexes: (0..spec.mutexes).map(|_| Mutex::default()).collect(),
            barriers: spec.barriers.iter().map(|&n| Barrier::new(n)).collect(),
            conds: (0..spec.condvars).map(|_| CondVar::default()).collect(),
            timers: vec![None; spec.timers as usize],
            words: vec![0; spec.words as usize],
            lists: vec![Vec::new(); spec.lists as usize],
            spin_holder: vec![None; spec.spinlocks as usize],
            spec,
            st: Vec::new(),
            chan_cpu: vec![NO_CPU; chans.len()],
            chans,
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
            stopped: None,
            fail: None,
        }
    }

    /// Number of events processed so far (popped events that were still current;
    /// superseded ones, dropped by their generation check, are not counted).
    pub fn events(&self) -> u64 {
        self.q.popped() - self.k.stale_events
    }

    /// Engine counters so far.
    pub fn stats(&self) -> SimStats {
        SimStats {
            events: self.events(),
            popped: self.q.popped(),
            stale: self.k.stale_events,
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
        for i in 0..self.spec.tasks.len() {
            if self.spec.spawned.contains(&i) {
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
        while let Some((now, ev)) = self.q.pop() {
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
            .tasks
            .iter()
            .skip(1)
            .filter(|t| t.state == TaskState::Sleeping)
            .map(|t| t.name.as_str())
            .collect();
        let detail = blocked_list(&blocked);
        Err(SimError::Deadlock {
            t_ns: self.k.now,
            blocked: blocked.len(),
            detail,
        })
    }

    /// A deadlock of the non-daemon tasks while daemons or spinners keep the
    /// queue busy: every live non-daemon task either sleeps (no wakeup in flight) in
    /// an op only another task can end (no timer), or spins on a spin lock whose
    /// holder is itself stuck that way (a livelock: the spinning never ends); and the
    /// daemons only compute, so nothing can wake them.
    fn deadlock_beside_daemons(&self) -> Option<SimError> {
        if !self.all_started() {
            return None;
        }
        let pure = self.spec.daemons.iter().all(|&i| {
            self.spec.programs[self.spec.tasks[i].prog]
                .ops
                .iter()
                .all(|o| {
                    matches!(
                        o,
                        Op::Compute(_) | Op::Spin(_) | Op::Loop { .. } | Op::EndLoop { .. }
                    )
                })
        });
        if !pure {
            return None;
        }
        // Tasks blocked for good, and tasks spinning on lock `i` (pid, lock).
        let mut stuck = vec![false; self.st.len()];
        let mut blocked = Vec::new();
        let mut spinning: Vec<(usize, usize)> = Vec::new();
        for (pid, st) in self.st.iter().enumerate() {
            let Some(st) = st else { continue };
            let t = &self.k.tasks[pid];
            if st.daemon || t.state == TaskState::Dead {
                continue;
            }
            match self.spec.programs[st.prog].ops.get(st.pc) {
                Some(
                    Op::Read { .. }
                    | Op::Write { .. }
                    | Op::Poll { .. }
                    | Op::FutexWait { .. }
                    | Op::FutexAwait { .. }
                    | Op::Lock(_)
                    | Op::Barrier(_)
                    | Op::CondWait { .. }
                    | Op::WaitChild,
                ) if t.state == TaskState::Sleeping => {
                    stuck[pid] = true;
                    blocked.push(t.name.as_str());
                }
                Some(Op::SpinLock { l, slot }) if st.phase == 1 => {
                    let i = l.base as usize + st.marks[*slot as usize] as usize;
                    spinning.push((pid, i));
                }
                _ => return None,
            }
        }
        // A spinner is stuck when its lock's holder is; repeat to a fixed point
        // (chains of spinners holding each other's locks).
        let mut changed = true;
        while changed {
            changed = false;
            for &(pid, i) in &spinning {
                if !stuck[pid] && self.spin_holder[i].is_some_and(|h| stuck[h as usize]) {
                    stuck[pid] = true;
                    changed = true;
                }
            }
        }
        let mut spinners = Vec::new();
        for &(pid, _) in &spinning {
            if !stuck[pid] {
                return None;
            }
            spinners.push(self.k.tasks[pid].name.as_str());
        }
        if blocked.is_empty() {
            return None;
        }
        let mut detail = blocked_list(&blocked);
        if !spinners.is_empty() {
            let _ = write!(
                detail,
                "; spinning for good on spin locks they hold: {}",
                blocked_list(&spinners)
            );
        }
        if !self.spec.daemons.is_empty() {
            detail.push_str("; only background spinners still run");
        }
        Some(SimError::Deadlock {
            t_ns: self.k.now,
            blocked: blocked.len() + spinners.len(),
            detail,
        })
    }

    fn all_started(&self) -> bool {
        self.st.iter().flatten().count() >= self.spec.tasks.len()
    }

    fn new_state(&mut self, pid: Pid, prog: usize, instance: u32, stream: String, daemon: bool) {
        let i = pid as usize;
        if self.st.len() <= i {
            self.st.resize_with(i + 1, || None);
        }
        let rng = self.streams.stream(&stream);
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
            loops: Vec::new(),
            marks: [0; NR_REGS],
            batch: Vec::new(),
            rng,
            stream,
            nfork: 0,
            children_alive: 0,
            zombies: 0,
            waiting_child: false,
            t_start: self.k.now,
            timer_exp: 0,
            uclamp: (0, 1024),
        }));
        if !daemon {
            self.alive += 1;
        }
    }

    fn start_task(&mut self, i: usize) {
        let spec = self.spec.tasks[i].clone();
        let cpus = spec.cpus.unwrap_or(*self.k.m.all_cpus());
        let tgid = spec.process.and_then(|p| {
            self.spec.tasks[..i]
                .iter()
                .position(|t| t.process == Some(p))
                .and_then(|j| {
                    self.k
                        .tasks
                        .iter()
                        .find(|t| t.name == self.spec.tasks[j].name)
                        .map(|t| t.pid)
                })
        });
        let pid = self
            .k
            .create_task(&spec.name, None, false, spec.nice, spec.policy, cpus);
        if let Some(tg) = tgid {
            self.k.tasks[pid as usize].tgid = tg;
        }
        let daemon = self.spec.daemons.contains(&i);
        self.new_state(pid, spec.prog, spec.instance, spec.name.clone(), daemon);
        self.k.wake_up_new_task(pid, &mut self.q);
    }

    /// Run program steps and re-arm segment ends until this instant is settled.
    fn drain_steps(&mut self) -> Result<(), SimError> {
        loop {
            self.k.flush(&mut self.q);
            if self.k.need_step.is_empty() {
                return Ok(());
            }
            let mut i = 0;
            while i < self.k.need_step.len() {
                let cpu = self.k.need_step[i] as usize;
                i += 1;
                self.step(cpu)?;
            }
            self.k.need_step.clear();
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

    /// `SIM_` cross-CPU channel traffic, before a write or read call's effect on
    /// channel `i` from `cpu` (its own cost already run): when the channel's previous
    /// write or read call ran on another CPU, the call first runs `pipe_remote` /
    /// `unix_remote` (with the run's noise) as more of its cost and this returns true
    /// (the step ends; the call resumes after it). Decided once per call
    /// (`remote_paid`); [`Sim::touched_chan`] after the effect makes `cpu` the
    /// channel's last. Not a kernel function: the kernel pays this in cache misses
    /// inside the call.
    fn remote_chan_cost(&mut self, cpu: usize, i: usize, st: &mut ProgState) -> bool {
        let last = self.chan_cpu[i];
        if st.remote_paid || last == cpu as u32 || last == NO_CPU {
            return false;
        }
        let c = &self.k.m.cost;
        let ns = match self.chan_kind[i] {
            ChanKind::Pipe => c.pipe_remote,
            ChanKind::UnixStream => c.unix_remote,
            ChanKind::TcpLoopback => 0,
        };
        // Nothing drawn from the noise stream when 0: results stay byte-identical.
        if ns == 0 {
            return false;
        }
        st.remote_paid = true;
        let ns = self.noisy(ns);
        self.k
            .set_segment(cpu, Segment::Work(ns << WORK_SHIFT), &mut self.q);
        true
    }

    /// After a write or read call's effect on channel `i` (completed or blocked: a
    /// blocked call took the channel's lock too): `cpu` is the channel's last CPU,
    /// and the task's next call decides its remote cost afresh.
    #[inline]
    fn touched_chan(&mut self, cpu: usize, i: usize, st: &mut ProgState) {
        self.chan_cpu[i] = cpu as u32;
        st.remote_paid = false;
    }

    /// Start the cost segment of a system call; returns true when the task must now
    /// run it (the step ends), false when the call is free and the effect follows.
    fn cost(&mut self, cpu: usize, st_phase: &mut u8, ns: u64) -> bool {
        if *st_phase == 0 {
            *st_phase = 1;
            if ns > 0 || self.k.rqs[cpu].kernel_work > 0 {
                self.k
                    .set_segment(cpu, Segment::Work(ns << WORK_SHIFT), &mut self.q);
                return true;
            }
        }
        false
    }

    /// Execute the program of `cpu`'s current task until it needs time or blocks.
    fn step(&mut self, cpu: usize) -> Result<(), SimError> {
        let Some(pid) = self.k.rqs[cpu].curr else {
            return Ok(());
        };
        if self.k.tasks[pid as usize].seg != Segment::None || self.k.rqs[cpu].kernel_work > 0 {
            return Ok(());
        }
        let mut budget = 1_000_000u32;
        loop {
            budget -= 1;
            if budget == 0 {
                return Err(SimError::NoProgress {
                    task: self.k.tasks[pid as usize].name.clone(),
                    t_ns: self.k.now,
                });
            }
            let mut st = self.st[pid as usize]
                .take()
                .expect("running task without a program");
            let done = self.exec_op(cpu, pid, &mut st);
            if let Some(e) = self.fail.take() {
                return Err(e);
            }
            self.st[pid as usize] = Some(st);
            // Kernel work an op charged to this CPU (the waker-side cost of a wakeup, a
            // futex wake) runs before whatever the program does next: every op that
            // can block first sets a segment (its own cost, possibly zero), which the
            // CPU only starts after its pending kernel work.
            if done {
                return Ok(());
            }
        }
    }

    /// Record a program error; the run stops with it.
    fn bad_program(&mut self, pid: Pid, msg: &str) -> bool {
        self.fail = Some(SimError::BadProgram {
            task: self.k.tasks[pid as usize].name.clone(),
            t_ns: self.k.now,
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

    /// The system-call cost an op runs before its effect (`None`: the op has none, or
    /// does something else first).
    fn op_cost(&self, op: &Op, inst: u32) -> Option<u64> {
        let c = &self.k.m.cost;
        Some(match *op {
            Op::Write { ch, .. } => match self.chan_kind[ch.resolve(inst)] {
                ChanKind::Pipe => c.pipe_write,
                ChanKind::UnixStream => c.unix_write,
                ChanKind::TcpLoopback => c.tcp_write_8k,
            },
            Op::Read { ch, .. } => match self.chan_kind[ch.resolve(inst)] {
                ChanKind::Pipe => c.pipe_read,
                ChanKind::UnixStream => c.unix_read,
                ChanKind::TcpLoopback => c.tcp_read_8k,
            },
            Op::Poll { .. } | Op::WaitChild | Op::Syscall => c.syscall,
            Op::FutexWait { .. } | Op::Barrier(_) | Op::CondWait { .. } => c.futex_wait,
            Op::FutexWake { .. } | Op::CondSignal(_) | Op::CondBroadcast(_) => c.futex_wake,
            Op::Lock(_) | Op::Unlock(_) => c.mutex_fast / 2,
            Op::Fork { thread: true, .. } | Op::Spawn { .. } => c.fork / 4,
            Op::Fork { thread: false, .. } => c.fork,
            Op::Exit => c.exit,
            Op::Yield => c.yield_,
            Op::Mark { .. } | Op::Record { .. } | Op::Timer { .. } | Op::Elapsed { .. } => c.gtod,
            Op::SetAffinity { .. } | Op::SetUclamp { .. } => c.syscall,
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
            | Op::SetEpoch { .. } => return None,
            Op::Compute(_)
            | Op::Spin(_)
            | Op::Sleep(_)
            | Op::FutexSet { .. }
            | Op::Loop { .. }
            | Op::EndLoop { .. }
            | Op::Count { .. } => return None,
        })
    }

    /// Execute (part of) one op. Returns true when the step is over.
    fn exec_op(&mut self, cpu: usize, pid: Pid, st: &mut ProgState) -> bool {
        let ops = &self.spec.programs[st.prog].ops;
        let op = if st.pc < ops.len() {
            ops[st.pc]
        } else {
            Op::Exit
        };
        let inst = st.instance;
        macro_rules! next {
            () => {{
                st.phase = 0;
                st.retry = false;
                st.pc += 1;
                return false;
            }};
        }
        macro_rules! pay {
            () => {{
                // The cost may already have been run with the preceding compute.
                if st.prepaid {
                    st.prepaid = false;
                    st.phase = 1;
                }
                let ns: u64 = self.op_cost(&op, inst).map_or(0, |c| self.noisy(c));
                let mut ph = st.phase;
                let r = self.cost(cpu, &mut ph, ns);
                st.phase = ph;
                if r {
                    return true;
                }
            }};
        }
        match op {
            Op::Compute(d) => {
                if st.phase == 0 {
                    let mut w = d.sample(&mut st.rng);
                    st.phase = 1;
                    // Run the next op's system-call cost in the same segment: nothing
                    // can observe the boundary between the two, and it saves an event.
                    if let Some(next) = ops.get(st.pc + 1) {
                        if let Some(c) = self.op_cost(next, inst) {
                            w += self.noisy(c);
                            st.prepaid = true;
                        }
                    }
                    if w > 0 || self.k.rqs[cpu].kernel_work > 0 {
                        self.k
                            .set_segment(cpu, Segment::Work(w << WORK_SHIFT), &mut self.q);
                        return true;
                    }
                }
                next!()
            }
            Op::Spin(d) => {
                if st.phase == 0 {
                    let w = d.sample(&mut st.rng);
                    st.phase = 1;
                    if w > 0 {
                        let until = self.k.now.saturating_add(w);
                        self.k.set_segment(cpu, Segment::Spin(until), &mut self.q);
                        return true;
                    }
                }
                next!()
            }
            Op::Sleep(d) => {
                if st.phase == 0 && self.k.rqs[cpu].kernel_work > 0 {
                    // Finish the pending kernel work (a wakeup just issued) first.
                    self.k.set_segment(cpu, Segment::Work(0), &mut self.q);
                    return true;
                }
                if st.phase == 0 {
                    let w = d.sample(&mut st.rng);
                    st.phase = 1;
                    self.k.sleep_current(cpu, w, &mut self.q);
                    return true;
                }
                next!()
            }
            Op::Write { ch, bytes } => {
                let i = ch.resolve_at(inst, &st.marks, cpu);
                pay!();
                if self.remote_chan_cost(cpu, i, st) {
                    return true;
                }
                let r = self.chans[i].write(pid, bytes, st.retry, &mut self.wakes);
                self.touched_chan(cpu, i, st);
                self.do_wakes(cpu);
                match r {
                    Outcome::Done => next!(),
                    Outcome::Block => {
                        st.retry = true;
                        self.k.block_current(cpu, &mut self.q);
                        true
                    }
                }
            }
            Op::Read { ch, bytes } => {
                let i = ch.resolve_at(inst, &st.marks, cpu);
                pay!();
                if self.remote_chan_cost(cpu, i, st) {
                    return true;
                }
                let r = self.chans[i].read(pid, bytes - st.got, st.retry, &mut self.wakes);
                self.touched_chan(cpu, i, st);
                self.do_wakes(cpu);
                match r {
                    ReadOutcome::Done(n) => {
                        st.got += n;
                        if st.got >= bytes {
                            st.got = 0;
                            next!()
                        }
                        // A short read: the program reads again (a new call).
                        st.phase = 0;
                        st.retry = false;
                        false
                    }
                    ReadOutcome::Block => {
                        st.retry = true;
                        self.k.block_current(cpu, &mut self.q);
                        true
                    }
                }
            }
            Op::Poll { ch } => {
                pay!();
                let i = ch.resolve_at(inst, &st.marks, cpu);
                match self.chans[i].poll_readable(pid) {
                    Outcome::Done => next!(),
                    Outcome::Block => {
                        self.k.block_current(cpu, &mut self.q);
                        true
                    }
                }
            }
            Op::FutexWait { f, expected } => {
                if st.phase == 2 {
                    // Woken: forget the wakeup, or this task's next wait would return
                    // at once.
                    self.futex.forget_woken(pid);
                    next!()
                }
                pay!();
                let addr = self.futex_addr[f.resolve_at(inst, &st.marks, cpu)];
                match self.futex.futex_wait(pid, addr, expected) {
                    Outcome::Done => next!(),
                    Outcome::Block => {
                        st.phase = 2;
                        self.k.block_current(cpu, &mut self.q);
                        true
                    }
                }
            }
            Op::FutexWake { f, n } => {
                pay!();
                let addr = self.futex_addr[f.resolve_at(inst, &st.marks, cpu)];
                self.futex.futex_wake(addr, n, &mut self.wakes);
                self.do_wakes(cpu);
                next!()
            }
            Op::FutexSet { f, val } => {
                let addr = self.futex_addr[f.resolve_at(inst, &st.marks, cpu)];
                self.futex.set(addr, val);
                next!()
            }
            Op::Lock(m) => {
                if self.mutexes[m.resolve_at(inst, &st.marks, cpu)].holder() == Some(pid) {
                    return self.bad_program(pid, "locks a mutex it already holds (self-deadlock)");
                }
                pay!();
                match self.mutexes[m.resolve_at(inst, &st.marks, cpu)].lock(pid) {
                    Outcome::Done => next!(),
                    Outcome::Block => {
                        self.k.charge(cpu, self.k.m.cost.futex_wait, &mut self.q);
                        self.k.block_current(cpu, &mut self.q);
                        true
                    }
                }
            }
            Op::Unlock(m) => {
                if self.mutexes[m.resolve_at(inst, &st.marks, cpu)].holder() != Some(pid) {
                    return self.bad_program(pid, "unlocks a mutex it does not hold");
                }
                pay!();
                self.mutexes[m.resolve_at(inst, &st.marks, cpu)].unlock(pid, &mut self.wakes);
                if !self.wakes.is_empty() {
                    self.k.charge(cpu, self.k.m.cost.futex_wake, &mut self.q);
                }
                self.do_wakes(cpu);
                next!()
            }
            Op::Barrier(b) => {
                pay!();
                let r = self.barriers[b.resolve_at(inst, &st.marks, cpu)].arrive(
                    pid,
                    st.retry,
                    &mut self.wakes,
                );
                self.do_wakes(cpu);
                match r {
                    Outcome::Done => next!(),
                    Outcome::Block => {
                        st.retry = true;
                        self.k.block_current(cpu, &mut self.q);
                        true
                    }
                }
            }
            Op::CondWait { c: cv, m } => {
                // phase 1: register and release the mutex; phase 2: woken, re-lock.
                if st.phase <= 1 {
                    if self.mutexes[m.resolve_at(inst, &st.marks, cpu)].holder() != Some(pid) {
                        return self.bad_program(
                            pid,
                            "waits on a condition variable without holding its mutex",
                        );
                    }
                    pay!();
                    self.conds[cv.resolve_at(inst, &st.marks, cpu)].wait(pid);
                    self.mutexes[m.resolve_at(inst, &st.marks, cpu)].unlock(pid, &mut self.wakes);
                    self.do_wakes(cpu);
                    st.phase = 2;
                    self.k.block_current(cpu, &mut self.q);
                    return true;
                }
                if st.phase == 2 {
                    // Woken by a signal: the re-executed wait returns (and the condvar
                    // forgets the wakeup; otherwise this task's next wait would find
                    // it and never be queued). Phase 3: re-take the mutex.
                    let r = self.conds[cv.resolve_at(inst, &st.marks, cpu)].wait(pid);
                    debug_assert_eq!(r, Outcome::Done, "condvar wait woken without a signal");
                    st.phase = 3;
                }
                match self.mutexes[m.resolve_at(inst, &st.marks, cpu)].lock(pid) {
                    Outcome::Done => next!(),
                    Outcome::Block => {
                        self.k.block_current(cpu, &mut self.q);
                        true
                    }
                }
            }
            Op::CondSignal(cv) => {
                pay!();
                self.conds[cv.resolve_at(inst, &st.marks, cpu)].signal(&mut self.wakes);
                self.do_wakes(cpu);
                next!()
            }
            Op::CondBroadcast(cv) => {
                pay!();
                self.conds[cv.resolve_at(inst, &st.marks, cpu)].broadcast(&mut self.wakes);
                self.do_wakes(cpu);
                next!()
            }
            Op::Fork { prog, thread } => {
                pay!();
                if !self.k.can_create_task() {
                    return self.bad_program(pid, &task_limit_msg());
                }
                let name = self.spec.programs[prog].name.clone();
                let nice = self.k.tasks[pid as usize].nice;
                let policy = self.k.tasks[pid as usize].policy;
                let cpus = *self.k.cpus_allowed(pid);
                let child = self
                    .k
                    .create_task(&name, Some(pid), thread, nice, policy, cpus);
                st.nfork += 1;
                st.children_alive += 1;
                let stream = format!("{}/{}", st.stream, st.nfork);
                self.new_state(child, prog, st.nfork - 1, stream, st.daemon);
                self.k.wake_up_new_task(child, &mut self.q);
                next!()
            }
            Op::Spawn { task } => {
                pay!();
                if !self.k.can_create_task() {
                    return self.bad_program(pid, &task_limit_msg());
                }
                let i = task as usize;
                let spec = self.spec.tasks[i].clone();
                let cpus = spec.cpus.unwrap_or(*self.k.cpus_allowed(pid));
                let child =
                    self.k
                        .create_task(&spec.name, Some(pid), true, spec.nice, spec.policy, cpus);
                st.nfork += 1;
                st.children_alive += 1;
                let daemon = self.spec.daemons.contains(&i);
                self.new_state(child, spec.prog, spec.instance, spec.name.clone(), daemon);
                self.k.wake_up_new_task(child, &mut self.q);
                next!()
            }
            Op::WaitChild => {
                pay!();
                if st.zombies > 0 {
                    st.zombies -= 1;
                    next!()
                }
                if st.children_alive == 0 {
                    next!()
                }
                st.waiting_child = true;
                self.k.block_current(cpu, &mut self.q);
                true
            }
            Op::Exit => {
                pay!();
                self.k.tasks[pid as usize].exiting = true;
                if let Some(parent) = self.k.tasks[pid as usize].parent {
                    if let Some(ps) = self.st[parent as usize].as_mut() {
                        ps.children_alive -= 1;
                        ps.zombies += 1;
                        if ps.waiting_child {
                            ps.waiting_child = false;
                            // A process's exit wakes its parent in wait() through
                            // __wake_up_parent, a sync wakeup; a thread's exit wakes a
                            // joiner through the futex in its tid word, a plain one.
                            let thread = self.k.tasks[pid as usize].tgid
                                == self.k.tasks[parent as usize].tgid;
                            let flags = if thread { 0 } else { WF_SYNC };
                            self.k.try_to_wake_up(parent, flags, cpu, &mut self.q);
                        }
                    }
                }
                if !st.daemon {
                    self.alive -= 1;
                }
                st.pc = usize::MAX / 2;
                self.k.exit_current(cpu, &mut self.q);
                true
            }
            Op::Yield => {
                if st.phase == 2 {
                    next!()
                }
                pay!();
                st.phase = 2;
                self.k.yield_current(cpu, &mut self.q);
                true
            }
            Op::Syscall => {
                pay!();
                next!()
            }
            Op::Loop { count, end } => {
                let n = match count {
                    LoopCount::Forever => u64::MAX,
                    LoopCount::Times(d) => d.sample(&mut st.rng),
                    LoopCount::Each { slot } => {
                        let n = st.batch.len() as u64;
                        if let Some(v) = st.batch.pop() {
                            st.marks[slot as usize] = v;
                        }
                        n
                    }
                    LoopCount::While { deadline, ticket } => {
                        if self.loop_cond(st, deadline, ticket) {
                            u64::MAX
                        } else {
                            0
                        }
                    }
                };
                if n == 0 {
                    st.pc = end + 1;
                    st.phase = 0;
                    return false;
                }
                st.loops.push((st.pc, n));
                next!()
            }
            Op::EndLoop { start } => {
                let again = match self.spec.programs[st.prog].ops[start] {
                    Op::Loop {
                        count: LoopCount::While { deadline, ticket },
                        ..
                    } => self.loop_cond(st, deadline, ticket),
                    Op::Loop {
                        count: LoopCount::Each { slot },
                        ..
                    } => match st.batch.pop() {
                        Some(v) => {
                            st.marks[slot as usize] = v;
                            true
                        }
                        None => false,
                    },
                    _ => {
                        let top = st.loops.last_mut().expect("EndLoop without Loop");
                        top.1 -= 1;
                        top.1 > 0
                    }
                };
                if again {
                    st.pc = start + 1;
                    st.phase = 0;
                    return false;
                }
                st.loops.pop();
                next!()
            }
            Op::Mark { slot } => {
                pay!();
                st.marks[slot as usize] = self.k.now;
                next!()
            }
            Op::Record { metric, slot } => {
                pay!();
                let v = self.k.now - st.marks[slot as usize];
                self.metrics.hists[metric].record(v);
                next!()
            }
            Op::Count { metric } => {
                self.metrics.hists[metric].record(1);
                next!()
            }
            // ---- rt-app ops ----
            Op::Timer {
                t,
                period_us,
                offset_us,
                absolute,
                metrics,
            } => {
                let lat = (metrics != NO_METRIC).then_some(metrics as usize);
                if st.phase == 2 {
                    // Woken at (or after) the expiry: the lateness rt-app logs.
                    if let Some(m) = lat {
                        let l = self.k.now.saturating_sub(st.timer_exp);
                        self.metrics.hists[m].record(l);
                    }
                    next!()
                }
                pay!();
                if self.k.rqs[cpu].kernel_work > 0 {
                    // Finish the pending kernel work (a wakeup just issued) first.
                    self.k.set_segment(cpu, Segment::Work(0), &mut self.q);
                    return true;
                }
                let i = t.resolve(inst);
                let now = self.k.now;
                let exp = self.timers[i].unwrap_or(st.t_start + offset_us as u64 * 1000)
                    + period_us as u64 * 1000;
                self.timers[i] = Some(exp);
                if let Some(m) = lat {
                    self.metrics.hists[m + 1].record(exp.saturating_sub(now));
                }
                if now < exp {
                    st.timer_exp = exp;
                    st.phase = 2;
                    self.k.sleep_current(cpu, exp - now, &mut self.q);
                    return true;
                }
                if !absolute {
                    self.timers[i] = Some(now);
                }
                if let Some(m) = lat {
                    self.metrics.hists[m].record(0);
                }
                next!()
            }
            Op::SetAffinity { mask } => {
                if st.phase == 2 {
                    next!()
                }
                let m = self.spec.masks[mask as usize];
                if *self.k.cpus_allowed(pid) == m {
                    next!()
                }
                pay!();
                self.k.set_cpus_allowed(pid, &m);
                if m.test(cpu) {
                    next!()
                }
                // Off an allowed CPU: the task leaves this CPU and is placed again
                // through select_task_rq (SIM_: the kernel's migration_cpu_stop moves
                // it to the first allowed CPU without a wakeup).
                st.phase = 2;
                self.k.block_current(cpu, &mut self.q);
                self.k.try_to_wake_up(pid, 0, cpu, &mut self.q);
                true
            }
            Op::SetEpoch { slot } => {
                st.t_start = st.marks[slot as usize];
                next!()
            }
            Op::SetUclamp { min, max } => {
                if st.uclamp == (min, max) {
                    next!()
                }
                pay!();
                st.uclamp = (min, max);
                next!()
            }
            Op::Store { w, slot } => {
                let i = w.resolve_at(inst, &st.marks, cpu);
                self.words[i] = st.marks[slot as usize];
                next!()
            }
            Op::Load { slot, w } => {
                let i = w.resolve_at(inst, &st.marks, cpu);
                st.marks[slot as usize] = self.words[i];
                next!()
            }
            Op::FetchAdd { w, slot, add } => {
                let i = w.resolve_at(inst, &st.marks, cpu);
                st.marks[slot as usize] = self.words[i];
                self.words[i] = self.words[i].wrapping_add(add);
                next!()
            }
            Op::SetReg { slot, val } => {
                st.marks[slot as usize] = val;
                next!()
            }
            Op::AddWord { slot, w } => {
                let i = w.resolve_at(inst, &st.marks, cpu);
                let r = &mut st.marks[slot as usize];
                *r = r.wrapping_add(self.words[i]);
                next!()
            }
            Op::Elapsed { slot } => {
                pay!();
                let r = &mut st.marks[slot as usize];
                *r = self.k.now.saturating_sub(*r);
                next!()
            }
            Op::RecordReg { metric, slot, div } => {
                let v = st.marks[slot as usize] / div.max(1);
                self.metrics.hists[metric].record(v);
                next!()
            }
            Op::Push { l, item } => {
                let i = l.resolve_at(inst, &st.marks, cpu);
                let v = item.eval(inst, &st.marks, cpu);
                self.lists[i].push(v);
                next!()
            }
            Op::Splice { l } => {
                let i = l.resolve_at(inst, &st.marks, cpu);
                st.batch.append(&mut self.lists[i]);
                next!()
            }
            Op::FutexPost { f } => {
                let addr = self.futex_addr[f.resolve_at(inst, &st.marks, cpu)];
                if st.phase == 0 {
                    if self.futex.get(addr) != FUTEX_BLOCKED {
                        next!()
                    }
                    self.futex.set(addr, FUTEX_RUNNING);
                }
                let mut ph = st.phase;
                let r = self.cost(cpu, &mut ph, self.k.m.cost.futex_wake);
                st.phase = ph;
                if r {
                    return true;
                }
                self.futex.futex_wake(addr, 1, &mut self.wakes);
                self.do_wakes(cpu);
                next!()
            }
            Op::FutexAwait { f } => {
                // phase 0: check; 1: the futex_wait cost ran; 2: woken, check again.
                let addr = self.futex_addr[f.resolve_at(inst, &st.marks, cpu)];
                if st.phase != 1 {
                    if self.futex.get(addr) == FUTEX_RUNNING {
                        self.futex.set(addr, FUTEX_BLOCKED);
                        next!()
                    }
                    st.phase = 0;
                }
                let mut ph = st.phase;
                let r = self.cost(cpu, &mut ph, self.k.m.cost.futex_wait);
                st.phase = ph;
                if r {
                    return true;
                }
                match self.futex.futex_wait(pid, addr, FUTEX_BLOCKED) {
                    // The word changed before the call slept (EAGAIN): check again.
                    Outcome::Done => {
                        st.phase = 0;
                        false
                    }
                    Outcome::Block => {
                        st.phase = 2;
                        self.k.block_current(cpu, &mut self.q);
                        true
                    }
                }
            }
            Op::SpinLock { l, slot } => {
                // phase 0: pick the lock (e.g. of the CPU the task is on now);
                // phase 1: spin on that lock until a trylock succeeds, then check the
                // index again (a task that migrated while spinning releases the lock
                // and starts over, as schbench's lock_this_cpu does).
                let base = l.base as usize;
                if st.phase == 0 {
                    let i = l.resolve_at(inst, &st.marks, cpu);
                    if self.spin_holder[i] == Some(pid) {
                        return self.bad_program(pid, "spins on a spin lock it already holds");
                    }
                    st.marks[slot as usize] = (i - base) as u64;
                    st.phase = 1;
                }
                let i = base + st.marks[slot as usize] as usize;
                if self.spin_holder[i].is_some() {
                    let until = self.k.now + SPIN_POLL_NS;
                    self.k.set_segment(cpu, Segment::Spin(until), &mut self.q);
                    return true;
                }
                if l.resolve_at(inst, &st.marks, cpu) != i {
                    st.phase = 0;
                    return false;
                }
                self.spin_holder[i] = Some(pid);
                next!()
            }
            Op::SpinUnlock { l } => {
                let i = l.resolve_at(inst, &st.marks, cpu);
                if self.spin_holder[i] != Some(pid) {
                    return self.bad_program(pid, "releases a spin lock it does not hold");
                }
                self.spin_holder[i] = None;
                next!()
            }
        }
    }

    /// The condition of a `LoopCount::While` loop, checked before each iteration.
    fn loop_cond(
        &mut self,
        st: &ProgState,
        deadline: Option<(u8, u64)>,
        ticket: Option<(u32, u64)>,
    ) -> bool {
        if let Some((slot, ns)) = deadline {
            if self.k.now >= st.marks[slot as usize].saturating_add(ns) {
                return false;
            }
        }
        if let Some((w, limit)) = ticket {
            let t = self.words[w as usize];
            self.words[w as usize] = t + 1;
            if t >= limit {
                return false;
            }
        }
        true
    }
}
