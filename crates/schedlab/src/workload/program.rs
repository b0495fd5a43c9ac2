//! Behaviour programs: what each simulated task does, as a small instruction list.
//!
//! A benchmark is reduced to tasks that each run a *behaviour program*
//! (`spec/workloads.md` §0): compute for some work, spin until a wall time, sleep,
//! talk through pipes and sockets with their kernel wakeup rules, wait on futexes,
//! mutexes, barriers and condition variables, fork and reap children, yield, loop,
//! and record the benchmark's own measurements. Amounts are constants or
//! distributions drawn from the task's own random stream.
//!
//! Objects (channels, futexes, ...) are declared once per workload and referenced by
//! an [`ObjRef`]: a fixed index, or one chosen by the task's instance number (so a
//! group of `count = N` tasks can each own `chan[i]`, or pairs can share `chan[i/2]`).

use crate::abi::{MainEvent, Policy};
use crate::machine::CpuMask;
use crate::workload::dist::Dist;
use crate::workload::ipc::ChanKind;
use std::collections::{HashMap, HashSet};

/// Index of a program in [`WorkloadSpec::programs`].
pub type ProgId = usize;

/// Which instance of a declared object array an operation uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ObjRef {
    /// First element of the object array (global index).
    pub base: u32,
    /// Number of elements.
    pub count: u32,
    pub idx: IdxExpr,
}

/// How an [`ObjRef`] picks its element.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IdxExpr {
    Const(u32),
    /// `instance / div + add`.
    Instance {
        div: u32,
        add: u32,
    },
    /// The value held in the task's register `slot` (a counter taken with
    /// [`Op::FetchAdd`], an item of a spliced list, a lock index).
    Reg(u8),
    /// The CPU the task is running on at the moment the op executes (what
    /// `sched_getcpu()` returns); a `SpinLock` reads it when it picks its lock and
    /// again once it has taken it.
    Cpu,
}

impl ObjRef {
    /// Global object index for a task instance (wraps modulo the array size).
    /// Registers and the current CPU read as 0: use [`ObjRef::resolve_at`] at run time.
    #[inline]
    pub(crate) fn resolve(&self, instance: u32) -> usize {
        self.resolve_at(instance, &[0; NR_REGS], 0)
    }

    /// Global object index for a task instance with registers `regs`, running on `cpu`
    /// (wraps modulo the array size).
    #[inline]
    pub(crate) fn resolve_at(&self, instance: u32, regs: &[u64; NR_REGS], cpu: usize) -> usize {
        let i = self.idx.eval(instance, regs, cpu) % u64::from(self.count);
        self.base as usize + i as usize
    }
}

impl IdxExpr {
    /// The expression's value (not wrapped to an array).
    #[inline]
    pub(crate) fn eval(&self, instance: u32, regs: &[u64; NR_REGS], cpu: usize) -> u64 {
        match *self {
            IdxExpr::Const(k) => u64::from(k),
            IdxExpr::Instance { div, add } => u64::from(instance / div + add),
            IdxExpr::Reg(r) => regs[r as usize],
            IdxExpr::Cpu => cpu as u64,
        }
    }
}

/// Number of per-task registers (timestamp slots of `Mark`/`Record`, and the values
/// the shared-word, list and lock ops move around).
pub const NR_REGS: usize = 8;

/// Value of a futex word whose owner is (about to be) blocked in [`Op::FutexAwait`].
pub const FUTEX_BLOCKED: i64 = 0;
/// Value of a futex word that has been posted ([`Op::FutexPost`]).
pub const FUTEX_RUNNING: i64 = 1;

/// Polling period of a task spinning on a held [`Op::SpinLock`] (ns): the simulated
/// spinner retries its trylock this often, so it acquires a released lock up to this
/// much later than a real one would.
pub const SPIN_POLL_NS: u64 = 1_000;

/// How many times a loop runs.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum LoopCount {
    Forever,
    Times(Dist),
    /// Once per item of the batch the last [`Op::Splice`] took, newest item first (a
    /// lock-free list is a stack), with the item in register `slot`.
    Each {
        slot: u8,
    },
    /// A condition checked before every iteration (the loop ends when it fails):
    /// `deadline = (slot, ns)` runs while `now < reg[slot] + ns` (a tool's time
    /// limit); `ticket = (word, limit)` then takes a ticket with an atomic
    /// fetch-and-add of 1 on shared word `word` and runs while it is below `limit` (a
    /// global event limit shared by threads); `unset = word` runs while shared word
    /// `word` is 0 (a flag another task sets: a poller's loop).
    While {
        deadline: Option<(u8, u64)>,
        ticket: Option<(u32, u64)>,
        unset: Option<u32>,
    },
}

/// The marker an [`Op::Marker`] writes (`sched::Marker` with what is known when the
/// program is built; the rest comes from the task's state).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum MarkerOp {
    /// `rtapp_main: event=...`.
    Main(MainEvent),
    /// `rtapp_main: event=clock_ref data=...`, `t_zero` in register `slot`.
    ClockRef { slot: u8 },
    /// `rtapp_task: event=start|end`.
    Task { end: bool },
    /// `rtapp_loop`: phase `phase`; the thread and phase loop counts are the
    /// iterations done of the `Loop` ops at `task_loop` and `phase_loop`.
    Loop {
        end: bool,
        phase: u32,
        task_loop: u32,
        phase_loop: u32,
    },
    /// `rtapp_event`: the `id`-th event of its phase, rt-app type `kind`.
    Event {
        id: u32,
        kind: u32,
        desc: crate::engine::wire::Name,
    },
    /// `rtapp_stats`, with the iteration's asked-for timer periods and run times
    /// (µs); period from the iteration's start mark (register 0) to
    /// [`LoopStat::End`]; the slack is the last timer's, or with rt-app's
    /// `cumulative_slack` the sum over the iteration.
    Stats {
        c_period: u32,
        c_run: u32,
        cumulative_slack: bool,
    },
}

/// A step of rt-app's per-iteration bookkeeping ([`Op::LoopStat`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LoopStat {
    /// A phase iteration starts: clear its sums (`memset(&ldata, 0, ...)`).
    Begin,
    /// A `run` / `runtime` event starts (`clock_gettime` before it).
    RunBegin,
    /// ... and ends: its wall time adds to the iteration's `run`.
    RunEnd,
    /// The iteration's end time (`t_end`), for its `period`.
    End,
}

/// One operation of a behaviour program.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Op {
    /// `compute(w)`: CPU work in reference ns (slower on smaller or slowed CPUs).
    Compute(Dist),
    /// `spin_until(now + d)`: busy for wall time `d`, even when preempted.
    Spin(Dist),
    /// `sleep(d)`: hrtimer sleep of `d` ns (plus timer slack).
    Sleep(Dist),
    /// `chan_write(ch, n)`.
    Write {
        ch: ObjRef,
        bytes: u32,
    },
    /// `chan_read(ch, n)`: reads until `n` bytes arrived.
    Read {
        ch: ObjRef,
        bytes: u32,
    },
    /// `poll_readable(ch)`.
    Poll {
        ch: ObjRef,
    },
    FutexWait {
        f: ObjRef,
        expected: i64,
    },
    FutexWake {
        f: ObjRef,
        n: u32,
    },
    FutexSet {
        f: ObjRef,
        val: i64,
    },
    Lock(ObjRef),
    Unlock(ObjRef),
    /// Arrive at a barrier and wait for the others.
    Barrier(ObjRef),
    /// rt-app's `barrier` event, between `Lock(m)` and `Unlock(m)`: a barrier built
    /// on the mutex `m`, a condition variable and a count of the parties still to
    /// come (barrier `b`'s parties − 1 at the start). The last party to arrive
    /// broadcasts, holding `m`; each other one counts itself in, waits
    /// (`pthread_cond_wait`: releases `m`, sleeps, re-takes `m`) and counts itself
    /// out. Woken together, the waiters take `m` one after another.
    CondBarrier {
        b: ObjRef,
        m: ObjRef,
    },
    /// `pthread_cond_wait(c, m)`: release `m`, wait, re-acquire `m`.
    CondWait {
        c: ObjRef,
        m: ObjRef,
    },
    CondSignal(ObjRef),
    CondBroadcast(ObjRef),
    /// `fork` (a new process) or `spawn` (a thread of this process) running `prog`.
    Fork {
        prog: ProgId,
        thread: bool,
    },
    /// `wait()` for any child process, or `pthread_join` of the next thread in creation
    /// order: both block until a child has exited.
    WaitChild,
    Exit,
    Yield,
    /// A bare syscall (`C_SYS`).
    Syscall,
    /// A new thread's start-up before its own work: what rt-app's `thread_body`
    /// does before its start barrier (`pthread_setname_np`, a log line to stderr,
    /// the first buffered write to its log file, whose buffer is the thread's first
    /// `malloc`). Costs `thread_start_arena` when that `malloc` creates the thread's
    /// glibc arena (`arena`: `mmap`, `munmap`, `mprotect` and the new heap's page
    /// faults), else `thread_start`.
    ThreadStart {
        arena: bool,
    },
    /// Loop over the ops up to the matching `EndLoop` at `end`.
    Loop {
        count: LoopCount,
        end: usize,
    },
    EndLoop {
        start: usize,
    },
    /// Store `now()` in timestamp slot `slot` (costs `C_GTOD`).
    Mark {
        slot: u8,
    },
    /// Record `now() − mark[slot]` in `metric` (costs `C_GTOD`).
    Record {
        metric: usize,
        slot: u8,
    },
    /// Record a constant 1 in `metric` (a counter, e.g. events done).
    Count {
        metric: usize,
    },

    // ---- rt-app ops (workload/rtapp) ----
    /// rt-app `timer`: advance periodic timer `t` by `period_us` and sleep until that
    /// absolute expiry if it is still in the future (`clock_nanosleep(TIMER_ABSTIME)`).
    /// An unused timer starts at the task's start time + `offset_us`. When the expiry
    /// has already passed the task does not sleep, and unless `absolute` the chain
    /// restarts from now. Records the wakeup lateness (0 when not sleeping) in metric
    /// `metrics` and the slack (expiry − arrival, 0 when late) in `metrics + 1`, unless
    /// `metrics` is [`NO_METRIC`]. (µs and one metric index keep `Op` at 40 bytes.)
    Timer {
        t: ObjRef,
        period_us: u32,
        offset_us: u32,
        absolute: bool,
        metrics: u32,
    },
    /// `sched_setaffinity(target, masks[mask])` ([`WorkloadSpec::masks`]): free
    /// when the target's mask is already that one; a target that has not started
    /// or has exited (`ESRCH`) costs the call and changes nothing. The caller
    /// blocks while the migration stopper moves a target that is running off its
    /// now excluded CPU (sched/affinity.rs).
    SetAffinity {
        mask: u32,
        target: AffinityTarget,
    },
    /// A uclamp request (`sched_setattr`), recorded only: the kernel has no uclamp.
    SetUclamp {
        min: u16,
        max: u16,
    },
    /// `pthread_create` of task [`WorkloadSpec::tasks`]`[task]` (one of
    /// [`WorkloadSpec::spawned`]): a new thread of this task's process, child of this
    /// task, with the spec's name, program, instance, nice and policy; its affinity is
    /// the spec's `cpus` if set, else this task's (inherited). Costs a thread fork
    /// (`clone_thread`, as `Op::Fork { thread: true }`) and is placed by the fork path.
    Spawn {
        task: u32,
    },
    /// Set the task's timer reference (the start an unused `Op::Timer` chain counts
    /// from, by default the task's creation time) to `reg[slot]`: rt-app's `t_zero`.
    SetEpoch {
        slot: u8,
    },
    /// Write one of rt-app's ftrace markers to `trace_marker` (a `write` system
    /// call, cost `syscall`): the template, completed with the task's loop counts,
    /// clock and phase statistics when it runs.
    Marker(MarkerOp),
    /// Keep rt-app's per-iteration statistics (its `log_data`, for the `rtapp_stats`
    /// marker). Free: rt-app's own clock reads around a `run` are not charged.
    LoopStat(LoopStat),
    // ---- Shared words, registers, lock-free lists, post/wait, spin locks ----
    // (schbench, adrestia, sysbench: plain user-space memory operations, free unless
    // they read the clock or enter the kernel.)
    /// `word[w] = reg[slot]`: a store to shared memory.
    Store {
        w: ObjRef,
        slot: u8,
    },
    /// `reg[slot] = word[w]`: a load from shared memory.
    Load {
        slot: u8,
        w: ObjRef,
    },
    /// `reg[slot] = word[w]; word[w] += add`, atomically (`__sync_fetch_and_add`).
    FetchAdd {
        w: ObjRef,
        slot: u8,
        add: u64,
    },
    /// `reg[slot] = val`.
    SetReg {
        slot: u8,
        val: u64,
    },
    /// `reg[slot] += word[w]`.
    AddWord {
        slot: u8,
        w: ObjRef,
    },
    /// `reg[slot] = now() − reg[slot]` (costs `C_GTOD`): the time since a timestamp
    /// another task stored.
    Elapsed {
        slot: u8,
    },
    /// Record `reg[slot] / div` in `metric`.
    RecordReg {
        metric: usize,
        slot: u8,
        div: u64,
    },
    /// Push `item` on lock-free list `l` (a cmpxchg prepend).
    Push {
        l: ObjRef,
        item: IdxExpr,
    },
    /// Take every item of list `l` at once (an xchg of the head) into the task's
    /// private batch, walked by [`LoopCount::Each`].
    Splice {
        l: ObjRef,
    },
    /// Post futex word `f`: if it is [`FUTEX_BLOCKED`], set it [`FUTEX_RUNNING`] and
    /// `futex_wake` one waiter (`C_FUTEX_WAKE`); otherwise nothing (free).
    FutexPost {
        f: ObjRef,
    },
    /// Wait for a post on futex word `f`: if it is [`FUTEX_RUNNING`], set it
    /// [`FUTEX_BLOCKED`] and go on (free); otherwise `futex_wait(f, FUTEX_BLOCKED)`
    /// (`C_FUTEX_WAIT`) and check again.
    FutexAwait {
        f: ObjRef,
    },
    /// Take spin lock `l`: resolve the element (with `IdxExpr::Cpu`, the lock of the
    /// CPU the task is on), spin on it (trylock, spin [`SPIN_POLL_NS`] of wall time,
    /// retry) until it is free, take it, and resolve the element again: if it
    /// changed (the task migrated meanwhile), release it and start over, as
    /// schbench's `lock_this_cpu` does. The element, relative to `l.base`, goes in
    /// `reg[slot]` (also while spinning).
    SpinLock {
        l: ObjRef,
        slot: u8,
    },
    /// Release spin lock `l` (held by this task).
    SpinUnlock {
        l: ObjRef,
    },
}

/// Whose affinity an [`Op::SetAffinity`] sets: `sched_setaffinity`'s `pid`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AffinityTarget {
    /// The calling task (`pid` 0).
    Current,
    /// The caller's most recently forked or spawned child (the pid `fork()`
    /// returned), as a benchmark's parent pins its workers.
    LastChild,
    /// A task of [`WorkloadSpec::tasks`] (a group's tasks are consecutive there),
    /// chosen by the caller's instance like an object (`taskset -p PID`).
    Task(ObjRef),
}

/// "Record nothing" for ops with an optional metric index (`Op::Timer`).
pub const NO_METRIC: u32 = u32::MAX;

/// A named program.
#[derive(Clone, Debug, PartialEq)]
pub struct Program {
    pub name: String,
    /// The work class of its computation (e.g. `sysbench-cpu`): on a machine whose
    /// core kinds give that class a per-clock rate ([`crate::machine::CoreKind::work_per_clock`])
    /// the task's work runs at that rate instead of at the CPU's capacity. `None`:
    /// at capacity, as the scheduler assumes.
    pub work_class: Option<String>,
    pub ops: Vec<Op>,
}

impl Program {
    /// The program `name`, running `ops`.
    pub fn new(name: impl Into<String>, ops: Vec<Op>) -> Program {
        Program {
            name: name.into(),
            work_class: None,
            ops,
        }
    }
}

/// A declared channel array.
#[derive(Clone, Debug, PartialEq)]
pub struct ChanDecl {
    pub name: String,
    pub kind: ChanKind,
    pub count: u32,
}

/// A task the workload starts at time `start_ns`.
#[derive(Clone, Debug, PartialEq)]
pub struct TaskSpec {
    pub name: String,
    pub prog: ProgId,
    pub instance: u32,
    pub cpus: Option<std::sync::Arc<CpuMask>>,
    pub nice: i32,
    pub policy: Policy,
    pub start_ns: u64,
    /// Tasks with the same `process` id share an mm (threads of one process).
    pub process: Option<u32>,
}

impl TaskSpec {
    /// The task's own affinity, else `default` (the parent's, or every CPU).
    pub fn cpus_or(&self, default: &CpuMask) -> CpuMask {
        self.cpus.as_deref().copied().unwrap_or(*default)
    }

    /// The tool's main task: program 0, instance 0, unpinned, nice 0, started at 0,
    /// its own process.
    pub fn main(name: &str) -> TaskSpec {
        TaskSpec::new(name, 0, 0)
    }

    /// Instance `instance` of program `prog`, unpinned, nice 0, `SCHED_NORMAL`,
    /// started at 0, its own process.
    pub fn new(name: impl Into<String>, prog: ProgId, instance: u32) -> TaskSpec {
        TaskSpec {
            name: name.into(),
            prog,
            instance,
            cpus: None,
            nice: 0,
            policy: Policy::Normal,
            start_ns: 0,
            process: None,
        }
    }
}

/// How metrics recorded by the programs are reported.
#[derive(Clone, Debug, PartialEq)]
pub struct MetricDecl {
    pub name: String,
    /// Unit of the recorded values (`"ns"` or `"count"`).
    pub unit: &'static str,
}

/// The declared metrics: [`MetricDecl`]s in declaration order (the order of the
/// recorders' `hists` and of every output), with an index by name so that a lookup
/// costs the same whatever the number of metrics (an rt-app file declares two to
/// four per thread). Reads as a slice of declarations.
#[derive(Clone, Debug, Default)]
pub struct MetricTable {
    decls: Vec<MetricDecl>,
    by_name: HashMap<String, usize>,
}

impl MetricTable {
    /// Index of metric `name`, declaring it (with `unit`) if new; an existing
    /// metric keeps the unit of its first declaration.
    pub fn declare(&mut self, name: &str, unit: &'static str) -> usize {
        if let Some(&i) = self.by_name.get(name) {
            return i;
        }
        let i = self.decls.len();
        self.decls.push(MetricDecl {
            name: name.to_string(),
            unit,
        });
        self.by_name.insert(name.to_string(), i);
        i
    }

    /// Index of metric `name`, if declared.
    pub fn index_of(&self, name: &str) -> Option<usize> {
        self.by_name.get(name).copied()
    }
}

/// Two tables are equal when they declare the same metrics in the same order (the
/// index follows from the declarations).
impl PartialEq for MetricTable {
    fn eq(&self, other: &MetricTable) -> bool {
        self.decls == other.decls
    }
}

impl std::ops::Deref for MetricTable {
    type Target = [MetricDecl];
    fn deref(&self) -> &[MetricDecl] {
        &self.decls
    }
}

impl<'a> IntoIterator for &'a MetricTable {
    type Item = &'a MetricDecl;
    type IntoIter = std::slice::Iter<'a, MetricDecl>;
    fn into_iter(self) -> Self::IntoIter {
        self.decls.iter()
    }
}

/// Everything a workload needs: programs, initial tasks and shared objects.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct WorkloadSpec {
    pub programs: Vec<Program>,
    pub tasks: Vec<TaskSpec>,
    /// Indices into `tasks` of daemon-like tasks (background load): they run like any
    /// other task but the run completes without waiting for them (nor for children
    /// they fork).
    pub daemons: Vec<usize>,
    /// Indices into `tasks` of tasks that exist from boot (kernel threads): one
    /// whose program opens with a sleep is asleep at the start, not forked then.
    pub boot: Vec<usize>,
    pub channels: Vec<ChanDecl>,
    pub futexes: u32,
    pub mutexes: u32,
    /// Parties of each barrier.
    pub barriers: Vec<u32>,
    pub condvars: u32,
    pub metrics: MetricTable,
    /// Shared 64-bit words ([`Op::Store`], [`Op::Load`], ...), all zero at start.
    pub words: u32,
    /// Lock-free lists ([`Op::Push`], [`Op::Splice`]).
    pub lists: u32,
    /// Spin locks ([`Op::SpinLock`]).
    pub spinlocks: u32,
    /// The tool's own time limit (e.g. sysbench `--time`, rt-app `global.duration`):
    /// the run stops then unless the scenario's `[run] duration_ms` says otherwise.
    pub duration_ns: Option<u64>,
    /// Periodic timer objects (`Op::Timer`).
    pub timers: u32,
    /// Affinity masks used by `Op::SetAffinity`.
    pub masks: Vec<CpuMask>,
    /// Indices into `tasks` of tasks another task creates with [`Op::Spawn`]: they
    /// do not start at their `start_ns`.
    pub spawned: Vec<usize>,
}

impl WorkloadSpec {
    /// Total number of channel objects.
    pub fn nr_channels(&self) -> usize {
        self.channels.iter().map(|c| c.count as usize).sum()
    }

    /// Index of metric `name`, declaring it if new.
    pub fn metric(&mut self, name: &str, unit: &'static str) -> usize {
        self.metrics.declare(name, unit)
    }

    /// Check internal consistency (loop nesting, object indices).
    pub fn validate(&self) -> Result<(), String> {
        let spawned: HashSet<usize> = self.spawned.iter().copied().collect();
        for p in &self.programs {
            let mut stack = Vec::new();
            for (i, op) in p.ops.iter().enumerate() {
                match op {
                    Op::Loop { end, .. } => {
                        if *end <= i
                            || *end >= p.ops.len()
                            || p.ops[*end] != (Op::EndLoop { start: i })
                        {
                            return Err(format!(
                                "program `{}`: loop at {i} has no matching end",
                                p.name
                            ));
                        }
                        stack.push(i);
                    }
                    Op::EndLoop { start } if stack.pop() != Some(*start) => {
                        return Err(format!("program `{}`: unbalanced loop end at {i}", p.name));
                    }
                    Op::Fork { prog, .. } if *prog >= self.programs.len() => {
                        return Err(format!("program `{}` forks unknown program {prog}", p.name));
                    }
                    Op::Timer { t, .. } if t.base + t.count > self.timers || t.count == 0 => {
                        return Err(format!("program `{}` uses an undeclared timer", p.name));
                    }
                    Op::Timer { metrics, .. }
                        if *metrics != NO_METRIC && *metrics as usize + 1 >= self.metrics.len() =>
                    {
                        return Err(format!("program `{}`: timer metrics undeclared", p.name));
                    }
                    Op::SetAffinity { mask, .. } if *mask as usize >= self.masks.len() => {
                        return Err(format!("program `{}` uses an unknown cpu mask", p.name));
                    }
                    Op::SetAffinity {
                        target: AffinityTarget::Task(t),
                        ..
                    } if t.count == 0 || (t.base + t.count) as usize > self.tasks.len() => {
                        return Err(format!(
                            "program `{}` sets the affinity of a task beyond the {} declared",
                            p.name,
                            self.tasks.len()
                        ));
                    }
                    Op::Spawn { task } if !spawned.contains(&(*task as usize)) => {
                        return Err(format!(
                            "program `{}` spawns task {task}, not a spawned task",
                            p.name
                        ));
                    }
                    _ => {}
                }
                self.check_regs_and_objects(op)
                    .map_err(|e| format!("program `{}`, op {i}: {e}", p.name))?;
            }
            if !stack.is_empty() {
                return Err(format!("program `{}`: unclosed loop", p.name));
            }
        }
        if let Some(&d) = self.daemons.iter().find(|&&d| d >= self.tasks.len()) {
            return Err(format!("daemon task index {d} out of range"));
        }
        if let Some(&d) = self.spawned.iter().find(|&&d| d >= self.tasks.len()) {
            return Err(format!("spawned task index {d} out of range"));
        }
        for t in &self.tasks {
            if t.prog >= self.programs.len() {
                return Err(format!("task `{}` runs unknown program {}", t.name, t.prog));
            }
        }
        Ok(())
    }

    /// Register slots in range, and references to the shared-word, list and
    /// spin-lock arrays inside the declared counts.
    fn check_regs_and_objects(&self, op: &Op) -> Result<(), String> {
        let reg = |r: u8| {
            if (r as usize) < NR_REGS {
                Ok(())
            } else {
                Err(format!("register {r} out of range (0..{NR_REGS})"))
            }
        };
        let idx = |e: &IdxExpr| match *e {
            IdxExpr::Reg(r) => reg(r),
            _ => Ok(()),
        };
        let obj = |o: &ObjRef, n: u32, what: &str| {
            if o.count == 0 || o.base + o.count > n {
                return Err(format!(
                    "{what} reference {}..{} beyond the {n} declared",
                    o.base,
                    o.base + o.count
                ));
            }
            idx(&o.idx)
        };
        match op {
            Op::Mark { slot } | Op::Record { slot, .. } | Op::SetEpoch { slot } => reg(*slot),
            Op::SetReg { slot, .. } | Op::Elapsed { slot } | Op::RecordReg { slot, .. } => {
                reg(*slot)
            }
            Op::Store { w, slot }
            | Op::Load { slot, w }
            | Op::FetchAdd { w, slot, .. }
            | Op::AddWord { slot, w } => {
                reg(*slot)?;
                obj(w, self.words, "shared word")
            }
            Op::Push { l, item } => {
                idx(item)?;
                obj(l, self.lists, "list")
            }
            Op::Splice { l } => obj(l, self.lists, "list"),
            Op::FutexPost { f } | Op::FutexAwait { f } => obj(f, self.futexes, "futex"),
            Op::SpinLock { l, slot } => {
                reg(*slot)?;
                obj(l, self.spinlocks, "spin lock")
            }
            Op::SpinUnlock { l } => obj(l, self.spinlocks, "spin lock"),
            Op::Lock(m) | Op::Unlock(m) => idx(&m.idx),
            Op::Loop {
                count: LoopCount::Each { slot },
                ..
            } => reg(*slot),
            Op::Loop {
                count:
                    LoopCount::While {
                        deadline,
                        ticket,
                        unset,
                    },
                ..
            } => {
                if let Some((r, _)) = deadline {
                    reg(*r)?;
                }
                match (ticket, unset) {
                    (Some((w, _)), _) | (_, Some(w)) if *w >= self.words => Err(format!(
                        "loop condition word {w} beyond the {} declared",
                        self.words
                    )),
                    _ => Ok(()),
                }
            }
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metrics_keep_declaration_order_and_are_found_by_name() {
        // 200 000 names, each declared twice (the second time with another unit)
        // and interleaved with earlier ones: a lookup by linear search would make
        // this quadratic (tens of billions of comparisons), the index keeps it linear.
        let n = 100_000;
        let name = |i: usize| {
            format!(
                "t{i}/phase0/{}",
                if i.is_multiple_of(2) {
                    "loops"
                } else {
                    "period"
                }
            )
        };
        let mut s = WorkloadSpec::default();
        for i in 0..n {
            assert_eq!(s.metric(&name(i), "ns"), i);
            // A repeat of an earlier name (and of this one) finds it, keeps its unit.
            assert_eq!(s.metric(&name(i / 2), "count"), i / 2);
            assert_eq!(s.metric(&name(i), "count"), i);
        }
        assert_eq!(s.metrics.len(), n);
        for (i, m) in s.metrics.iter().enumerate() {
            assert_eq!((m.name.as_str(), m.unit), (name(i).as_str(), "ns"));
            assert_eq!(s.metrics.index_of(&m.name), Some(i));
        }
        assert_eq!(s.metrics.index_of("t0/phase0/slack"), None);
        // The slice view and the iterator give declaration order.
        let firsts: Vec<&str> = (&s.metrics)
            .into_iter()
            .take(3)
            .map(|m| m.name.as_str())
            .collect();
        assert_eq!(
            firsts,
            ["t0/phase0/loops", "t1/phase0/period", "t2/phase0/loops"]
        );
        assert_eq!(s.metrics[n - 1].name, name(n - 1));
        // Equality is by the declarations, in order.
        let mut a = MetricTable::default();
        let mut b = MetricTable::default();
        a.declare("x", "ns");
        a.declare("y", "count");
        b.declare("x", "ns");
        b.declare("x", "count");
        assert_ne!(a, b);
        b.declare("y", "count");
        assert_eq!(a, b);
        let mut c = MetricTable::default();
        c.declare("y", "count");
        c.declare("x", "ns");
        assert_ne!(a, c);
    }
}
