//! rt-app JSON workloads (`spec/workloads.md` §4): `[workload] kind = "rtapp"`,
//! `file = "x.json"` (relative to the scenario file).
//!
//! **What rt-app does.** rt-app reads a JSON description of threads and plays it.
//! Each task object (key = name) starts `instance` identical threads. The main
//! thread creates every thread one after another (`pthread_create`); the first
//! thread reads the clock (`t_zero`), all of them wait at a start barrier
//! (`threads_barrier`, one party per thread), and the main thread sleeps for
//! `global.duration` and then stops and joins them (or, without a duration, joins
//! them as they end). A released thread sleeps until `t_zero + delay`, then runs
//! its `phases` in order, the whole list `loop` times (forever by default); each
//! phase repeats its own `loop` times. A phase is an ordered list of *events*, keys
//! matched by prefix (`run0`, `run1`, ...): `run` burns a calibrated amount of CPU
//! work (so it lasts longer on a slower CPU), `runtime` burns for a wall time in
//! 32 µs chunks, `sleep` is a relative `clock_nanosleep`, `timer` an absolute one on
//! a periodic expiry chain (shared by name between threads unless the name starts
//! with `unique`), and `lock`/`unlock`/`wait`/`signal`/`broad`/`sync`/`barrier`/
//! `suspend`/`resume` are pthread mutexes, condition variables and a barrier built
//! on them. Threads wake each other only through those objects (futex wakeups) and
//! through timers. `fork` creates a new thread running another task's definition.
//! rt-app logs one line per phase iteration per thread (timestamps, run time,
//! period, slack, wakeup latency `wu_lat`), and with `global.ftrace` writes its
//! markers to tracefs' `trace_marker` (`rtapp_main`, `rtapp_task`, `rtapp_loop`,
//! `rtapp_event`, `rtapp_stats`: the lines LISA's `rta` analysis parses).
//!
//! **How it is modelled.** The file is parsed by the `jsonc-parser` crate, whose
//! syntax tree keeps keys in order, duplicates and positions ([`json`]), validated into a task list ([`parse_file`]), and every thread
//! becomes a behaviour program ([`build`]): `run` → `compute`, `runtime` → `spin`,
//! `sleep` → `sleep`, `timer` → the periodic [`Op::Timer`], the pthread objects →
//! the glibc mutex / condvar models (a `barrier` event is rt-app's own barrier on a
//! mutex, a condvar and a count, [`Op::CondBarrier`]; rt-app's start barrier is
//! glibc's `pthread_barrier`, [`Op::Barrier`]), `fork` → a thread `spawn`, task and
//! phase `cpus` → [`Op::SetAffinity`] at each phase iteration, `util_min`/`util_max` →
//! [`Op::SetUclamp`]. Each phase iteration takes rt-app's two timestamps (`now()`)
//! and records its period, and counts itself. With `global.ftrace`, rt-app's
//! markers are [`Op::Marker`]s where rt-app writes them (the current rt-app's
//! `log_ftrace` calls: main start and end, `clock_ref` by thread 0, task start
//! after the barrier and end after the loops, loop start/end around each
//! iteration, one `rtapp_event` before each event, `rtapp_stats` from
//! [`Op::LoopStat`]'s sums). The main task `rt-app` has its own
//! program: a thread creation ([`Op::Spawn`]) per thread, then a `sleep` of
//! `global.duration` and the joins. `global.duration` stays the workload's own time
//! limit, counted from t = 0 (rt-app's main thread starts its sleep after the last
//! creation, a few tens of µs later). The tool ([`RtAppTool`]) prints a per-thread
//! summary of the logs rt-app would have written (not of the main task).
//!
//! **Simplifications** (also in `docs/scenarios.md` §4c and `docs/kernel-mapping.md`):
//! * Only fair policies (SCHED_OTHER / BATCH / IDLE, `priority` = nice); RT and
//!   deadline policies, per-phase policy changes and task groups are rejected.
//! * `runtime` spins until the first 32 µs multiple ≥ the value (the chunk
//!   boundaries of a reference-speed CPU); on a slower CPU rt-app's chunks are
//!   longer, so it may overshoot by more.
//! * `mem` and `iorun` are CPU work of 0.1 ns per byte at reference capacity
//!   (10 GB/s memset); `iorun` adds one system call (the write to `/dev/null`).
//! * `uclamp` requests are recorded only: the simulated kernel has no uclamp.
//! * A timer starts its chain at the first use (rt-app initialises it at thread
//!   start; the two differ only when threads with different delays share a timer).
//! * A barrier's parties are the instances of all tasks naming it (rt-app counts a
//!   task once per event naming it). Forked threads share their task's metrics and
//!   `unique` timers are kept per fork number of the forking thread (modulo 16).
//! * Start and end follow rt-app 1.0 (Debian's `rt-app` 1.0-1, upstream tag `v1.0`;
//!   `src/rt-app.c`: `main()`, `thread_body()`): a main task [`MAIN_TASK`] (the
//!   process's first thread, started by the scenario) creates the threads in file
//!   order ([`Op::Spawn`]: `pthread_create`, a thread fork placed from its CPU).
//!   Thread 0 reads `t_zero`; every thread waits at the start barrier (glibc's
//!   `pthread_barrier` of one party per thread); `delay` and the timers count from
//!   `t_zero` ([`Op::SetEpoch`]). The main task then sleeps for `global.duration`,
//!   or joins the threads in creation order (a futex per thread stands for the tid
//!   word the kernel clears and wakes at the thread's exit). Simplified: a thread
//!   gets its nice and policy at creation (rt-app: `setpriority` is its first call);
//!   it sets its `cpus` itself at each phase iteration, as rt-app does. A thread
//!   first runs its start-up ([`Op::ThreadStart`]: name, log line, first log
//!   write; dearer for the first 8 × CPUs − 1 threads, whose first `malloc` maps a
//!   glibc arena of their own, [`creates_arena`]). Not
//!   modelled: the kernel's own blocking while threads are created (`mmap_lock`
//!   between the creator's stack mappings and the new threads' page faults: the
//!   D-state wakeups of a real trace), and rt-app's shutdown when the duration
//!   ends (stop flag, condvar broadcasts, joins: the run simply ends); forked
//!   threads (`fork`) skip the start barrier, as in rt-app.
//! * `suspend X` / `resume X` use the condvar and mutex named X (rt-app's parser
//!   takes the value as the name; by convention it is the suspended thread's).
//! * A per-phase `cpus` change that excludes the current CPU moves the thread as
//!   the kernel does (sched/affinity.rs): it blocks for the migration stopper, and
//!   wakes placed from the destination CPU of its new mask. rt-app only sets a
//!   thread's own affinity: one thread cannot set another's.
//! * Duplicate keys are errors, except repeated event keys inside a phase, which
//!   are kept in order (rt-app's `workgen` renames them).
//! * All events stop when the duration expires (the run ends); rt-app's final
//!   unlocks are not needed.

pub mod json;

use crate::abi::{MainEvent, Policy};
use crate::config::TableReader;
use crate::engine::sat32;
use crate::error::{line_of, InputError};
use crate::machine::{CpuMask, Machine};
use crate::workload::dist::Dist;
use crate::workload::generators::{Generated, Tool, ToolInput, ToolResult};
use crate::workload::program::{
    AffinityTarget, IdxExpr, LoopCount, LoopStat, MarkerOp, ObjRef, Op, Program, TaskSpec,
    WorkloadSpec, NO_METRIC,
};
use json::{JNode, JVal};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt::Write as _;
use std::path::Path;
use std::sync::Arc;

/// Reference work of `mem`/`iorun`: ns per 10 bytes (10 GB/s at capacity 1024).
pub const MEM_NS_PER_10_BYTES: u64 = 1;
/// `runtime` busy-loop chunk (µs).
pub const RUNTIME_CHUNK_US: u64 = 32;
/// Timer slots kept per `unique` timer of a forked task.
pub const FORK_UNIQUE_SLOTS: u32 = 16;
/// Largest µs or byte value accepted: the engine's
/// [`MAX_TIME_NS`](crate::engine::MAX_TIME_NS) in µs (~11.6 days), so every ns
/// product fits in u64.
pub const MAX_VALUE: i64 = (crate::engine::MAX_TIME_NS / crate::engine::NSEC_PER_USEC) as i64;
/// Name of the phase of a task without a `phases` object.
pub const SINGLE_PHASE: &str = "phase0";
/// Name of rt-app's main thread (the process's first thread, which creates the
/// others).
pub const MAIN_TASK: &str = "rt-app";
/// Register holding `t_zero` in a thread's start protocol (slot 0 is the phase
/// iteration's start).
const TZERO_SLOT: u8 = 1;

/// Where `run` is calibrated (`global.calibration`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Calibration {
    /// `"CPUn"`: `run X` is X µs of work on CPU n at its maximum frequency.
    Cpu(usize),
    /// An integer ns per loop, taken on the fastest CPU (as LISA does).
    NsPerLoop(u64),
}

/// An rt-app event.
#[derive(Clone, Debug, PartialEq)]
pub enum Event {
    Run(u64),
    Runtime(u64),
    Sleep(u64),
    Timer {
        name: String,
        unique: bool,
        period_us: u64,
        absolute: bool,
    },
    Lock(String),
    Unlock(String),
    Wait {
        cond: String,
        mutex: String,
    },
    Signal(String),
    Broad(String),
    Sync {
        cond: String,
        mutex: String,
    },
    Barrier(String),
    Suspend(String),
    Resume(String),
    Yield,
    Fork(String),
    Mem(u64),
    Iorun(u64),
}

/// A phase: `loops` iterations (`None`: forever) of its events.
#[derive(Clone, Debug, PartialEq)]
pub struct Phase {
    pub name: String,
    pub loops: Option<u64>,
    pub cpus: Option<CpuMask>,
    pub util_min: Option<u16>,
    pub util_max: Option<u16>,
    pub events: Vec<Event>,
    /// Each event's key in the file (`run0`, `timer`, ...): rt-app's event name.
    pub keys: Vec<String>,
}

/// A task object.
#[derive(Clone, Debug, PartialEq)]
pub struct TaskDef {
    pub name: String,
    pub instances: u32,
    pub delay_us: u64,
    /// Repetitions of the phase list (`None`: forever).
    pub loops: Option<u64>,
    pub phases: Vec<Phase>,
    pub cpus: Option<CpuMask>,
    pub policy: Policy,
    pub nice: i32,
    pub util_min: Option<u16>,
    pub util_max: Option<u16>,
}

/// A validated rt-app file.
#[derive(Clone, Debug, PartialEq)]
pub struct RtAppFile {
    /// `global.duration` in seconds (`None`: until every thread is done).
    pub duration_s: Option<u64>,
    pub calibration: Calibration,
    pub tasks: Vec<TaskDef>,
    /// `global.ftrace`: the categories of markers written to `trace_marker`
    /// ([`ftrace`] bits; 0: none).
    pub ftrace: u8,
    /// `global.cumulative_slack`: `rtapp_stats` sums the iteration's timer slacks.
    pub cumulative_slack: bool,
}

// ---------------------------------------------------------------------------------
// Reading the JSON tree.
// ---------------------------------------------------------------------------------

/// Error context: the file and its text.
struct Src<'a> {
    file: &'a Path,
    text: &'a str,
}

impl Src<'_> {
    fn err(&self, pos: usize, path: &str, msg: impl std::fmt::Display) -> InputError {
        let m = if path.is_empty() {
            msg.to_string()
        } else {
            format!("{path}: {msg}")
        };
        InputError::in_file(self.file, Some(line_of(self.text, pos)), m)
    }
}

/// An object being read: rejects duplicate and unknown keys.
struct Obj<'a> {
    src: &'a Src<'a>,
    path: String,
    pos: usize,
    members: &'a [(String, usize, JNode)],
    /// Per member: read by the caller (`finish` rejects the others).
    used: std::cell::RefCell<Vec<bool>>,
}

/// Index of the first member of `members` whose key repeats an earlier key, among
/// the members `counts` selects. A set of the keys seen so far, so that an object
/// of 100 000 tasks is checked in linear time.
fn first_duplicate(
    members: &[(String, usize, JNode)],
    counts: impl Fn(&str) -> bool,
) -> Option<usize> {
    let mut seen = HashSet::with_capacity(members.len());
    members
        .iter()
        .enumerate()
        .filter(|(_, (k, _, _))| counts(k))
        .find(|(_, (k, _, _))| !seen.insert(k.as_str()))
        .map(|(i, _)| i)
}

fn child(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

impl<'a> Obj<'a> {
    fn new(src: &'a Src<'a>, node: &'a JNode, path: &str) -> Result<Obj<'a>, InputError> {
        let JVal::Object(members) = &node.val else {
            return Err(src.err(
                node.pos,
                path,
                format!("expected an object, found {}", node.val.describe()),
            ));
        };
        Ok(Obj {
            src,
            path: path.to_string(),
            pos: node.pos,
            members,
            used: std::cell::RefCell::new(vec![false; members.len()]),
        })
    }

    /// Reject duplicate keys (strict JSON; `workgen` would rename them).
    fn no_duplicates(&self) -> Result<(), InputError> {
        match first_duplicate(self.members, |_| true) {
            Some(i) => {
                let (k, kpos, _) = &self.members[i];
                Err(self.src.err(
                    *kpos,
                    &child(&self.path, k),
                    "duplicate key (number repeated events: run0, run1, ...)",
                ))
            }
            None => Ok(()),
        }
    }

    fn get(&self, key: &str) -> Option<&'a JNode> {
        let i = self.members.iter().position(|(k, _, _)| k == key)?;
        self.used.borrow_mut()[i] = true;
        Some(&self.members[i].2)
    }

    fn err(&self, n: &JNode, key: &str, msg: impl std::fmt::Display) -> InputError {
        self.src.err(n.pos, &child(&self.path, key), msg)
    }

    fn int(&self, key: &str, what: &str, lo: i64, hi: i64) -> Result<Option<i64>, InputError> {
        match self.get(key) {
            None => Ok(None),
            Some(n) => match n.val {
                JVal::Int(i) if (lo..=hi).contains(&i) => Ok(Some(i)),
                _ => Err(self.err(
                    n,
                    key,
                    format!("expected {what}, found {}", n.val.describe()),
                )),
            },
        }
    }

    fn str(&self, key: &str) -> Result<Option<&'a str>, InputError> {
        match self.get(key) {
            None => Ok(None),
            Some(n) => match &n.val {
                JVal::Str(s) => Ok(Some(s.as_str())),
                v => Err(self.err(n, key, format!("expected a string, found {}", v.describe()))),
            },
        }
    }

    fn finish(&self) -> Result<(), InputError> {
        let used = self.used.borrow();
        for (i, (k, kpos, _)) in self.members.iter().enumerate() {
            if !used[i] {
                return Err(self.src.err(*kpos, &child(&self.path, k), "unknown key"));
            }
        }
        Ok(())
    }
}

/// `loop` value: a negative count means forever.
fn loop_count(o: &Obj<'_>, def: Option<u64>) -> Result<Option<u64>, InputError> {
    Ok(
        match o.int("loop", "an integer (-1 = forever)", i64::MIN, i64::MAX)? {
            None => def,
            Some(i) if i < 0 => None,
            Some(i) => Some(i as u64),
        },
    )
}

fn cpus(o: &Obj<'_>, nr_cpus: usize) -> Result<Option<CpuMask>, InputError> {
    let Some(n) = o.get("cpus") else {
        return Ok(None);
    };
    let what = format!("an array of CPU numbers 0..{}", nr_cpus - 1);
    let JVal::Array(a) = &n.val else {
        return Err(o.err(
            n,
            "cpus",
            format!("expected {what}, found {}", n.val.describe()),
        ));
    };
    let mut m = CpuMask::new();
    for (i, c) in a.iter().enumerate() {
        match c.val {
            JVal::Int(k) if k >= 0 && (k as usize) < nr_cpus => m.set(k as usize),
            _ => {
                return Err(o.src.err(
                    c.pos,
                    &format!("{}.cpus[{i}]", o.path),
                    format!(
                        "expected a CPU number 0..{} of this machine, found {}",
                        nr_cpus - 1,
                        c.val.describe()
                    ),
                ))
            }
        }
    }
    if m.is_empty() {
        return Err(o.err(n, "cpus", "empty CPU list"));
    }
    Ok(Some(m))
}

fn util(o: &Obj<'_>, key: &str) -> Result<Option<u16>, InputError> {
    Ok(
        match o.int(key, "an integer 0..=1024 (-1 = unset)", -1, 1024)? {
            None | Some(-1) => None,
            Some(v) => Some(v as u16),
        },
    )
}

fn policy(o: &Obj<'_>, def: Policy) -> Result<Policy, InputError> {
    let Some(n) = o.get("policy") else {
        return Ok(def);
    };
    policy_value(o.src, n, &child(&o.path, "policy"))
}

fn policy_value(src: &Src<'_>, n: &JNode, path: &str) -> Result<Policy, InputError> {
    match &n.val {
        JVal::Str(s) => match s.as_str() {
            "SCHED_OTHER" => Ok(Policy::Normal),
            "SCHED_BATCH" => Ok(Policy::Batch),
            "SCHED_IDLE" => Ok(Policy::Idle),
            "SCHED_FIFO" | "SCHED_RR" | "SCHED_DEADLINE" => Err(src.err(
                n.pos,
                path,
                format!("{s} is not modelled (the simulator has the fair class only)"),
            )),
            _ => Err(src.err(
                n.pos,
                path,
                format!(
                    "unknown policy {s:?} (SCHED_OTHER, SCHED_BATCH, SCHED_IDLE, SCHED_FIFO, SCHED_RR, SCHED_DEADLINE)"
                ),
            )),
        },
        v => Err(src.err(n.pos, path, format!("expected a policy name, found {}", v.describe()))),
    }
}

/// Event kinds by key prefix, longest first where one is a prefix of another.
const EVENT_WORDS: &[&str] = &[
    "runtime", "run", "sleep", "timer", "lock", "unlock", "wait", "signal", "broad", "sync",
    "barrier", "suspend", "resume", "yield", "fork", "memrun", "mem", "iorun", "sem_post",
    "sem_wait",
];

fn event_word(key: &str) -> Option<&'static str> {
    EVENT_WORDS.iter().copied().find(|w| key.starts_with(w))
}

fn event(src: &Src<'_>, key: &str, n: &JNode, path: &str) -> Result<Event, InputError> {
    let word = event_word(key).expect("caller checked the prefix");
    let p = child(path, key);
    let us = |what: &str| -> Result<u64, InputError> {
        match n.val {
            JVal::Int(i) if (0..=MAX_VALUE).contains(&i) => Ok(i as u64),
            _ => Err(src.err(
                n.pos,
                &p,
                format!(
                    "expected a non-negative integer ({what}) up to 10^12, found {}",
                    n.val.describe()
                ),
            )),
        }
    };
    let name = || -> Result<String, InputError> {
        match &n.val {
            JVal::Str(s) => Ok(s.clone()),
            v => Err(src.err(
                n.pos,
                &p,
                format!("expected a resource name (string), found {}", v.describe()),
            )),
        }
    };
    let pair = || -> Result<(String, String), InputError> {
        let o = Obj::new(src, n, &p)?;
        o.no_duplicates()?;
        let c = o.str("ref")?.unwrap_or("unknown").to_string();
        let m = o.str("mutex")?.unwrap_or("unknown").to_string();
        o.finish()?;
        Ok((c, m))
    };
    Ok(match word {
        "run" => Event::Run(us("µs")?),
        "runtime" => Event::Runtime(us("µs")?),
        "sleep" => Event::Sleep(us("µs")?),
        "mem" => Event::Mem(us("bytes")?),
        "iorun" => Event::Iorun(us("bytes")?),
        "timer" => {
            let o = Obj::new(src, n, &p)?;
            o.no_duplicates()?;
            let name = o.str("ref")?.unwrap_or("unknown").to_string();
            let period = o
                .int("period", "a positive integer (µs)", 1, u32::MAX as i64)?
                .ok_or_else(|| src.err(n.pos, &p, "a timer needs `period` (µs)"))?;
            let absolute = match o.str("mode")? {
                None | Some("relative") => false,
                Some("absolute") => true,
                Some(m) => {
                    let mn = o.get("mode").expect("present");
                    return Err(o.err(
                        mn,
                        "mode",
                        format!("expected \"relative\" or \"absolute\", found {m:?}"),
                    ));
                }
            };
            o.finish()?;
            Event::Timer {
                unique: name.starts_with("unique"),
                name,
                period_us: period as u64,
                absolute,
            }
        }
        "lock" => Event::Lock(name()?),
        "unlock" => Event::Unlock(name()?),
        "signal" => Event::Signal(name()?),
        "broad" => Event::Broad(name()?),
        "barrier" => Event::Barrier(name()?),
        "suspend" => Event::Suspend(name()?),
        "resume" => Event::Resume(name()?),
        "fork" => Event::Fork(name()?),
        "yield" => Event::Yield,
        "wait" => {
            let (cond, mutex) = pair()?;
            Event::Wait { cond, mutex }
        }
        "sync" => {
            let (cond, mutex) = pair()?;
            Event::Sync { cond, mutex }
        }
        w => return Err(src.err(n.pos, &p, format!("the `{w}` event is not supported yet"))),
    })
}

/// Keys of a phase (or of a task without `phases`) that are not events.
const PHASE_ATTRS: &[&str] = &[
    "loop",
    "cpus",
    "util_min",
    "util_max",
    "policy",
    "priority",
    "dl-runtime",
    "dl-period",
    "dl-deadline",
    "nodes_membind",
    "taskgroup",
];

/// Events of an object, in file order; other keys must be known attributes.
/// Fork events are also listed in `forks` as (target, offset, JSON path).
/// The events of `o`, with their keys.
type Events = (Vec<Event>, Vec<String>);

fn events(o: &Obj<'_>, forks: &mut Vec<(String, usize, String)>) -> Result<Events, InputError> {
    let mut ev = Vec::new();
    let mut keys = Vec::new();
    for (i, (k, kpos, n)) in o.members.iter().enumerate() {
        if event_word(k).is_some() {
            o.used.borrow_mut()[i] = true;
            let e = event(o.src, k, n, &o.path)?;
            if let Event::Fork(t) = &e {
                forks.push((t.clone(), n.pos, child(&o.path, k)));
            }
            ev.push(e);
            keys.push(k.clone());
        } else if !PHASE_ATTRS.contains(&k.as_str())
            && !matches!(k.as_str(), "instance" | "delay" | "phases")
        {
            return Err(o.src.err(
                *kpos,
                &child(&o.path, k),
                "unknown key (not an rt-app event or attribute)",
            ));
        }
    }
    if ev.is_empty() {
        return Err(o
            .src
            .err(o.pos, &o.path, "no events (a phase needs at least one)"));
    }
    Ok((ev, keys))
}

/// Attributes rt-app accepts that the simulator ignores (read so `finish` passes).
fn ignored(o: &Obj<'_>) -> Result<(), InputError> {
    for k in ["dl-runtime", "dl-period", "dl-deadline"] {
        o.int(k, "an integer (µs)", 0, i64::MAX)?;
    }
    if let Some(n) = o.get("nodes_membind") {
        if !matches!(n.val, JVal::Array(_)) {
            return Err(o.err(n, "nodes_membind", "expected an array of NUMA nodes"));
        }
    }
    if let Some(n) = o.get("taskgroup") {
        return Err(o.err(n, "taskgroup", "task groups (cgroups) are not modelled"));
    }
    Ok(())
}

/// rt-app's ftrace marker categories (`global.ftrace`, rt-app's `FTRACE_*` bits).
pub mod ftrace {
    pub const MAIN: u8 = 0x01;
    pub const TASK: u8 = 0x02;
    pub const LOOP: u8 = 0x04;
    pub const EVENT: u8 = 0x08;
    pub const STATS: u8 = 0x10;
    /// Every category (`"ftrace": true`; rt-app's `rtapp_attrs` markers are not
    /// written).
    pub const ALL: u8 = MAIN | TASK | LOOP | EVENT | STATS;
    /// The names `global.ftrace` lists, comma-separated (`none` clears the set).
    pub const NAMES: [(&str, u8); 5] = [
        ("main", MAIN),
        ("task", TASK),
        ("loop", LOOP),
        ("event", EVENT),
        ("stats", STATS),
    ];
}

/// The categories a `global.ftrace` string lists (rt-app's `ftrace_setup`:
/// case-insensitive, `none` clears what came before), or the unknown one.
fn ftrace_categories(list: &str) -> Result<u8, String> {
    let mut mask = 0;
    for c in list.split(',').filter(|c| !c.is_empty()) {
        if c.eq_ignore_ascii_case("none") {
            mask = 0;
            continue;
        }
        match ftrace::NAMES
            .iter()
            .find(|(n, _)| c.eq_ignore_ascii_case(n))
        {
            Some((_, b)) => mask |= b,
            None => return Err(c.to_string()),
        }
    }
    Ok(mask)
}

/// What the `global` object sets.
struct Global {
    /// `duration` (s, `None` for none).
    duration_s: Option<u64>,
    calibration: Calibration,
    def_policy: Policy,
    /// `ftrace`: the marker categories ([`ftrace`]).
    ftrace: u8,
    cumulative_slack: bool,
}

/// The `global` object.
fn global(src: &Src<'_>, g: Option<&JNode>, nr_cpus: usize) -> Result<Global, InputError> {
    let mut duration_s = None;
    let mut calibration = Calibration::Cpu(0);
    let mut def_policy = Policy::Normal;
    let (mut ftrace_mask, mut cumulative_slack) = (0, false);
    let Some(g) = g else {
        return Ok(Global {
            duration_s,
            calibration,
            def_policy,
            ftrace: ftrace_mask,
            cumulative_slack,
        });
    };
    let g = Obj::new(src, g, "global")?;
    g.no_duplicates()?;
    if let Some(d) = g.int(
        "duration",
        "an integer number of seconds (-1 = none)",
        i64::MIN,
        (crate::engine::MAX_TIME_NS / crate::engine::NSEC_PER_SEC) as i64,
    )? {
        duration_s = (d > 0).then_some(d as u64);
    }
    if let Some(n) = g.get("calibration") {
        calibration = match &n.val {
            JVal::Int(i) if *i > 0 => Calibration::NsPerLoop(*i as u64),
            JVal::Str(s) if s.starts_with("CPU") => match s[3..].parse::<usize>() {
                Ok(c) if c < nr_cpus => Calibration::Cpu(c),
                _ => {
                    return Err(g.err(
                        n,
                        "calibration",
                        format!("{s:?} is not a CPU of this {nr_cpus}-CPU machine"),
                    ))
                }
            },
            v => {
                return Err(g.err(
                    n,
                    "calibration",
                    format!(
                        "expected \"CPUn\" or a positive ns-per-loop integer, found {}",
                        v.describe()
                    ),
                ))
            }
        };
    }
    if let Some(n) = g.get("default_policy") {
        def_policy = policy_value(src, n, "global.default_policy")?;
    }
    if let Some(n) = g.get("ftrace") {
        ftrace_mask = match &n.val {
            JVal::Bool(b) => {
                if *b {
                    ftrace::ALL
                } else {
                    0
                }
            }
            JVal::Str(s) => ftrace_categories(s).map_err(|c| {
                g.err(
                    n,
                    "ftrace",
                    format!("unknown category {c:?} (rt-app takes main, task, loop, event, stats or none)"),
                )
            })?,
            v => {
                return Err(g.err(
                    n,
                    "ftrace",
                    format!(
                        "expected a comma-separated list of categories or a boolean, found {}",
                        v.describe()
                    ),
                ))
            }
        };
    }
    if let Some(n) = g.get("cumulative_slack") {
        cumulative_slack = match &n.val {
            JVal::Bool(b) => *b,
            v => {
                return Err(g.err(
                    n,
                    "cumulative_slack",
                    format!("expected a boolean, found {}", v.describe()),
                ))
            }
        };
    }
    for k in [
        "pi_enabled",
        "lock_pages",
        "logdir",
        "log_basename",
        "log_size",
        "gnuplot",
        "io_device",
        "mem_buffer_size",
    ] {
        g.get(k);
    }
    g.finish()?;
    Ok(Global {
        duration_s,
        calibration,
        def_policy,
        ftrace: ftrace_mask,
        cumulative_slack,
    })
}

/// A fork of `.0` from the event at `.1` (path `.2`), checked once every task is
/// known.
type ForkRef = (String, usize, String);

/// One member of `tasks`; `threads` counts the threads of the file so far.
fn task(
    src: &Src<'_>,
    name: &str,
    tn: &JNode,
    nr_cpus: usize,
    def_policy: Policy,
    threads: &mut usize,
    forks: &mut Vec<ForkRef>,
) -> Result<TaskDef, InputError> {
    let path = format!("tasks.{name}");
    let t = Obj::new(src, tn, &path)?;
    t.no_duplicates_events()?;
    let instances = t
        .int("instance", "an integer 0..=4096", 0, 4096)?
        .unwrap_or(1) as u32;
    *threads += instances as usize;
    if *threads > crate::engine::MAX_TASKS {
        return Err(src.err(
            tn.pos,
            &path,
            format!(
                "its `instance` brings the file to {threads} threads, more than the limit of {} (see docs/limits.md)",
                crate::engine::MAX_TASKS
            ),
        ));
    }
    let delay_us = t
        .int(
            "delay",
            "a non-negative integer (µs) up to 2^32 - 1",
            0,
            u32::MAX as i64,
        )?
        .unwrap_or(0) as u64;
    let cpus_t = cpus(&t, nr_cpus)?;
    let pol = policy(&t, def_policy)?;
    let nice = t
        .int("priority", "a nice value -20..=19 (fair policies)", -20, 19)?
        .unwrap_or(0) as i32;
    let (umin, umax) = (util(&t, "util_min")?, util(&t, "util_max")?);
    ignored(&t)?;
    let (loops, phases) = match t.get("phases") {
        Some(pn) => {
            let phases = phases(src, pn, &path, nr_cpus, (pol, nice), forks)?;
            (loop_count(&t, None)?, phases)
        }
        None => {
            t.no_duplicates_events()?;
            // rt-app's one phase: with a `loop`, the phase repeats that often and
            // the task runs it once; without, the phase runs once per iteration of
            // a task loop that never ends (what its `rtapp_loop` markers count).
            let (task_loops, loops) = match t.get("loop") {
                Some(_) => (Some(1), loop_count(&t, None)?),
                None => (None, Some(1)),
            };
            let (ev, keys) = events(&t, forks)?;
            (
                task_loops,
                vec![Phase {
                    name: SINGLE_PHASE.into(),
                    loops,
                    cpus: None,
                    util_min: None,
                    util_max: None,
                    events: ev,
                    keys,
                }],
            )
        }
    };
    t.finish()?;
    if loops.is_none() && phases.iter().all(|p| p.loops == Some(0)) {
        return Err(src.err(
            tn.pos,
            &path,
            "loops forever over phases that all have `loop: 0` (nothing to do)",
        ));
    }
    Ok(TaskDef {
        name: name.to_string(),
        instances,
        delay_us,
        loops,
        phases,
        cpus: cpus_t,
        policy: pol,
        nice,
        util_min: umin,
        util_max: umax,
    })
}

/// The `phases` object of the task at `path`, whose policy and nice value
/// (`task_prio`) a phase may repeat but not change.
fn phases(
    src: &Src<'_>,
    pn: &JNode,
    path: &str,
    nr_cpus: usize,
    (pol, nice): (Policy, i32),
    forks: &mut Vec<ForkRef>,
) -> Result<Vec<Phase>, InputError> {
    let po = Obj::new(src, pn, &child(path, "phases"))?;
    po.no_duplicates()?;
    let mut phases = Vec::new();
    for (pname, _, pnode) in po.members {
        let pp = format!("{path}.phases.{pname}");
        let p = Obj::new(src, pnode, &pp)?;
        p.no_duplicates_events()?;
        let loops = loop_count(&p, Some(1))?;
        let pc = cpus(&p, nr_cpus)?;
        if let Some(n) = p.get("policy") {
            if policy_value(src, n, &child(&pp, "policy"))? != pol {
                return Err(p.err(n, "policy", "per-phase policy changes are not modelled"));
            }
        }
        if let Some(pr) = p.int("priority", "a nice value -20..=19", -20, 19)? {
            if pr as i32 != nice {
                let n = p.get("priority").expect("present");
                return Err(p.err(n, "priority", "per-phase priority changes are not modelled"));
            }
        }
        let (pmin, pmax) = (util(&p, "util_min")?, util(&p, "util_max")?);
        ignored(&p)?;
        let (ev, keys) = events(&p, forks)?;
        phases.push(Phase {
            name: pname.clone(),
            loops,
            cpus: pc,
            util_min: pmin,
            util_max: pmax,
            events: ev,
            keys,
        });
    }
    if phases.is_empty() {
        return Err(src.err(pn.pos, &child(path, "phases"), "no phases"));
    }
    Ok(phases)
}

/// Cross-references: fork targets exist and do not use barriers.
fn check_forks(src: &Src<'_>, tasks: &[TaskDef], forks: &[ForkRef]) -> Result<(), InputError> {
    if forks.is_empty() {
        return Ok(());
    }
    // The first task of each name (the names are distinct: duplicate keys are errors).
    let mut by_name = HashMap::with_capacity(tasks.len());
    for t in tasks {
        by_name.entry(t.name.as_str()).or_insert(t);
    }
    for (target, pos, path) in forks {
        let Some(ft) = by_name.get(target.as_str()) else {
            return Err(src.err(*pos, path, format!("fork of unknown task {target:?}")));
        };
        if ft
            .phases
            .iter()
            .flat_map(|p| &p.events)
            .any(|e| matches!(e, Event::Barrier(_)))
        {
            return Err(src.err(
                *pos,
                path,
                format!("task {target:?} uses a barrier and cannot be forked"),
            ));
        }
    }
    Ok(())
}

/// Parse the text of an rt-app file for a machine of `m`. A leading byte-order
/// mark is ignored, as in every input (`crate::input`).
pub fn parse_file(text: &str, file: &Path, m: &Machine) -> Result<RtAppFile, InputError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let src = Src { file, text };
    let root = json::parse(text).map_err(|e| src.err(e.pos, "", format!("JSON: {}", e.msg)))?;
    let top = Obj::new(&src, &root, "")?;
    top.no_duplicates()?;
    let nr_cpus = m.nr_cpus();
    let Global {
        duration_s,
        calibration,
        def_policy,
        ftrace,
        cumulative_slack,
    } = global(&src, top.get("global"), nr_cpus)?;
    top.get("resources");
    let tasks_node = top
        .get("tasks")
        .ok_or_else(|| src.err(0, "", "missing the `tasks` object"))?;
    let tasks_obj = Obj::new(&src, tasks_node, "tasks")?;
    tasks_obj.no_duplicates()?;
    top.finish()?;
    let mut tasks = Vec::new();
    let mut forks = Vec::new();
    let mut threads = 0usize;
    for (name, _, tn) in tasks_obj.members {
        let t = task(
            &src,
            name,
            tn,
            nr_cpus,
            def_policy,
            &mut threads,
            &mut forks,
        )?;
        tasks.push(t);
    }
    if tasks.is_empty() {
        return Err(src.err(tasks_node.pos, "tasks", "no tasks"));
    }
    if tasks.iter().all(|t| t.instances == 0) {
        return Err(src.err(
            tasks_node.pos,
            "tasks",
            "no thread starts (every `instance` is 0)",
        ));
    }
    check_forks(&src, &tasks, &forks)?;
    Ok(RtAppFile {
        duration_s,
        calibration,
        tasks,
        ftrace,
        cumulative_slack,
    })
}

impl Obj<'_> {
    /// In an object holding events, duplicate event keys are kept in file order, as
    /// rt-app's `workgen` does by renaming them; duplicate attributes are errors.
    fn no_duplicates_events(&self) -> Result<(), InputError> {
        match first_duplicate(self.members, |k| event_word(k).is_none()) {
            Some(i) => {
                let (k, kpos, _) = &self.members[i];
                Err(self.src.err(*kpos, &child(&self.path, k), "duplicate key"))
            }
            None => Ok(()),
        }
    }
}

// ---------------------------------------------------------------------------------
// Building the behaviour programs.
// ---------------------------------------------------------------------------------

/// Metric names of one thread (or of all forks of one task).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ThreadMetrics {
    pub name: String,
    /// Per phase: (phase name, loops metric, period metric, wu_lat, slack).
    pub phases: Vec<PhaseMetrics>,
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct PhaseMetrics {
    pub phase: String,
    pub loops: String,
    pub period: String,
    /// Only for phases with a timer.
    pub wu_lat: Option<String>,
    pub slack: Option<String>,
}

struct Builder<'a> {
    f: &'a RtAppFile,
    m: &'a Machine,
    spec: WorkloadSpec,
    mutexes: BTreeMap<String, u32>,
    conds: BTreeMap<String, u32>,
    /// rt-app barriers: the barrier's index and its mutex's.
    barriers: BTreeMap<String, (u32, u32)>,
    timers: BTreeMap<String, u32>,
    /// Shared timers in absolute mode (any event saying so makes the timer absolute).
    absolute: BTreeMap<String, bool>,
    masks: Vec<CpuMask>,
    /// Index of each mask in `masks`.
    mask_index: HashMap<CpuMask, u32>,
    threads: Vec<ThreadMetrics>,
    /// Names in `threads` (a fork copy and a task's single thread share one).
    thread_names: HashSet<String>,
    /// Program index of each task's fork copy.
    fork_prog: BTreeMap<String, usize>,
}

/// rt-app's start protocol for an initial thread (see [`Builder::program`]).
#[derive(Clone, Copy)]
struct StartSync {
    /// `threads_barrier`.
    barrier: ObjRef,
    /// The shared word holding `t_zero`.
    t_zero: ObjRef,
    /// The first thread (index 0): it takes `t_zero`.
    first: bool,
    /// The futex of the thread's tid word, which `pthread_join` waits on.
    join: ObjRef,
    /// The thread's first `malloc` creates its glibc arena ([`creates_arena`]).
    arena: bool,
}

/// glibc's malloc gives each new thread an arena of its own at its first `malloc`
/// (`arena_get2`: `mmap` of the heap, `munmap` of the excess, `mprotect`) while the
/// process has fewer than 8 arenas per CPU (`NARENAS_FROM_NCORES` on 64-bit, the
/// main thread's counting as the first); past that, a thread attaches to an
/// existing arena and maps nothing. `k`: the thread's creation index (0 first).
pub fn creates_arena(k: usize, nr_cpus: usize) -> bool {
    k + 1 < 8 * nr_cpus
}

/// One thread's program under construction (see [`Builder::program`]).
struct ThreadCx<'t> {
    t: &'t TaskDef,
    /// The copy run by forked threads.
    forked: bool,
    /// Unique timers of this thread, by name.
    unique: BTreeMap<String, ObjRef>,
    ops: Vec<Op>,
}

fn cref(i: u32) -> ObjRef {
    ObjRef {
        base: i,
        count: 1,
        idx: IdxExpr::Const(0),
    }
}

impl Builder<'_> {
    fn obj(map: &mut BTreeMap<String, u32>, counter: &mut u32, name: &str) -> ObjRef {
        let n = *map.entry(name.to_string()).or_insert_with(|| {
            *counter += 1;
            *counter - 1
        });
        cref(n)
    }
    fn mutex(&mut self, n: &str) -> ObjRef {
        Self::obj(&mut self.mutexes, &mut self.spec.mutexes, n)
    }
    fn cond(&mut self, n: &str) -> ObjRef {
        Self::obj(&mut self.conds, &mut self.spec.condvars, n)
    }
    fn new_timers(&mut self, count: u32) -> u32 {
        self.spec.timers += count;
        self.spec.timers - count
    }
    fn mask(&mut self, m: CpuMask) -> u32 {
        let next = self.masks.len() as u32;
        let i = *self.mask_index.entry(m).or_insert(next);
        if i == next {
            self.masks.push(m);
        }
        i
    }

    /// Reference work (ns) of `run X`.
    fn run_ns(&self, us: u64) -> u64 {
        match self.f.calibration {
            Calibration::Cpu(c) => us * 1000 * self.m.cpus[c].capacity_orig as u64 / 1024,
            Calibration::NsPerLoop(npl) => us * 1000 / npl * npl,
        }
    }

    /// The program of one thread of `t`: an initial instance (`forked` false) or the
    /// copy run by forked threads.
    ///
    /// An initial thread starts with rt-app's start protocol (`start`): the first
    /// thread takes `t_zero` (`clock_gettime`, stored in a shared word), every thread
    /// waits at the start barrier, then reads `t_zero` as its timers' reference.
    fn program(
        &mut self,
        t: &TaskDef,
        tname: &str,
        forked: bool,
        start: Option<StartSync>,
    ) -> Program {
        let mut cx = ThreadCx {
            t,
            forked,
            unique: BTreeMap::new(),
            ops: Vec::new(),
        };
        let all = *self.m.all_cpus();
        let def_mask = t.cpus.unwrap_or(all);
        // rt-app sets a thread's affinity itself at the start of every phase
        // iteration (`set_thread_affinity`: the phase's cpus, else the task's, else
        // the affinity the thread was created with); the thread inherits rt-app's.
        let phase_cpus = t.cpus.is_some() || t.phases.iter().any(|p| p.cpus.is_some());
        let has_util = t.util_min.is_some()
            || t.util_max.is_some()
            || t.phases
                .iter()
                .any(|p| p.util_min.is_some() || p.util_max.is_some());
        self.thread_start(&mut cx, has_util, start);
        let mut tm = ThreadMetrics {
            name: tname.to_string(),
            phases: Vec::new(),
        };
        let outer = cx.ops.len();
        cx.ops.push(Op::Syscall); // placeholder for the task loop
        for (i, p) in t.phases.iter().enumerate() {
            let affinity = phase_cpus.then(|| p.cpus.unwrap_or(def_mask));
            let at = PhaseAt {
                index: i as u32,
                task_loop: outer as u32,
            };
            let pm = self.phase(&mut cx, p, tname, affinity, has_util, at);
            tm.phases.push(pm);
        }
        let mut ops = cx.ops;
        let end = ops.len();
        ops[outer] = Op::Loop {
            count: count(t.loops),
            end,
        };
        ops.push(Op::EndLoop { start: outer });
        if self.f.ftrace & ftrace::TASK != 0 {
            ops.push(Op::Marker(MarkerOp::Task { end: true }));
        }
        if let Some(ss) = start {
            // pthread_exit: the kernel clears the thread's tid word and wakes its
            // joiner (`mm_release`, CLONE_CHILD_CLEARTID) before the exit is traced.
            ops.push(Op::FutexPost { f: ss.join });
        }
        ops.push(Op::Exit);
        if self.thread_names.insert(tname.to_string()) {
            self.threads.push(tm);
        }
        Program {
            name: tname.to_string(),
            work_class: None,
            ops,
        }
    }

    /// A unique timer of this thread (forked copies: one slot per fork number).
    fn unique_ref(&mut self, cx: &mut ThreadCx<'_>, name: &str) -> ObjRef {
        let forked = cx.forked;
        *cx.unique.entry(name.to_string()).or_insert_with(|| {
            if forked {
                let base = self.new_timers(FORK_UNIQUE_SLOTS);
                ObjRef {
                    base,
                    count: FORK_UNIQUE_SLOTS,
                    idx: IdxExpr::Instance { div: 1, add: 0 },
                }
            } else {
                cref(self.new_timers(1))
            }
        })
    }

    /// What a thread does before its task loop: its own start-up (`thread_body`'s
    /// name, log line and first log write: [`Op::ThreadStart`], initial and forked
    /// threads alike; a forked thread is taken to attach to an existing arena), the
    /// task's uclamp, the start protocol, the task's `delay`.
    fn thread_start(&mut self, cx: &mut ThreadCx<'_>, has_util: bool, start: Option<StartSync>) {
        let t = cx.t;
        cx.ops.push(Op::ThreadStart {
            arena: start.is_some_and(|s| s.arena),
        });
        if has_util {
            cx.ops.push(Op::SetUclamp {
                min: t.util_min.unwrap_or(0),
                max: t.util_max.unwrap_or(1024),
            });
        }
        let task_markers = self.f.ftrace & ftrace::TASK != 0;
        if let Some(ss) = start {
            if ss.first {
                cx.ops.push(Op::Mark { slot: TZERO_SLOT });
                cx.ops.push(Op::Store {
                    w: ss.t_zero,
                    slot: TZERO_SLOT,
                });
                if task_markers {
                    cx.ops
                        .push(Op::Marker(MarkerOp::ClockRef { slot: TZERO_SLOT }));
                }
            }
            cx.ops.push(Op::Barrier(ss.barrier));
            cx.ops.push(Op::Load {
                slot: TZERO_SLOT,
                w: ss.t_zero,
            });
            cx.ops.push(Op::SetEpoch { slot: TZERO_SLOT });
        }
        if task_markers {
            cx.ops.push(Op::Marker(MarkerOp::Task { end: false }));
        }
        if t.delay_us > 0 {
            let d = self.unique_ref(cx, "\0delay");
            cx.ops.push(Op::Timer {
                t: d,
                period_us: t.delay_us as u32,
                offset_us: 0,
                absolute: true,
                metrics: NO_METRIC,
            });
        }
    }

    /// One phase of the task loop: its metrics, and its loop over its events (the
    /// phase's affinity and uclamp first, the period and loop count last).
    fn phase(
        &mut self,
        cx: &mut ThreadCx<'_>,
        p: &Phase,
        tname: &str,
        affinity: Option<CpuMask>,
        has_util: bool,
        at: PhaseAt,
    ) -> PhaseMetrics {
        let t = cx.t;
        let pre = format!("{tname}/{}/", p.name);
        let has_timer = p.events.iter().any(|e| matches!(e, Event::Timer { .. }));
        let pm = PhaseMetrics {
            phase: p.name.clone(),
            loops: format!("{pre}loops"),
            period: format!("{pre}period"),
            wu_lat: has_timer.then(|| format!("{pre}wu_lat")),
            slack: has_timer.then(|| format!("{pre}slack")),
        };
        let loops_m = self.spec.metric(&pm.loops, "count");
        let period_m = self.spec.metric(&pm.period, "ns");
        // wu_lat and slack are declared together: Op::Timer finds slack at +1.
        let timer_m = match (&pm.wu_lat, &pm.slack) {
            (Some(l), Some(s)) => {
                let m = self.spec.metric(l, "ns");
                let s = self.spec.metric(s, "ns");
                debug_assert_eq!(s, m + 1);
                m as u32
            }
            _ => NO_METRIC,
        };
        let start = cx.ops.len();
        cx.ops.push(Op::Syscall); // placeholder for the phase loop
        if let Some(m) = affinity {
            let mk = self.mask(m);
            cx.ops.push(Op::SetAffinity {
                mask: mk,
                target: AffinityTarget::Current,
            });
        }
        if has_util && (p.util_min.is_some() || p.util_max.is_some()) {
            cx.ops.push(Op::SetUclamp {
                min: p.util_min.or(t.util_min).unwrap_or(0),
                max: p.util_max.or(t.util_max).unwrap_or(1024),
            });
        }
        let cats = self.f.ftrace;
        let (loops, events, stats) = (
            cats & ftrace::LOOP != 0,
            cats & ftrace::EVENT != 0,
            cats & ftrace::STATS != 0,
        );
        let loop_marker = |end| {
            Op::Marker(MarkerOp::Loop {
                end,
                phase: at.index,
                task_loop: at.task_loop,
                phase_loop: start as u32,
            })
        };
        if loops {
            cx.ops.push(loop_marker(false));
        }
        if stats {
            cx.ops.push(Op::LoopStat(LoopStat::Begin));
        }
        cx.ops.push(Op::Mark { slot: 0 });
        for (id, (e, key)) in p.events.iter().zip(&p.keys).enumerate() {
            if events {
                let (kind, desc) = event_marker(e, key);
                cx.ops.push(Op::Marker(MarkerOp::Event {
                    id: id as u32,
                    kind,
                    desc: crate::engine::wire::intern(&desc),
                }));
            }
            let run = stats && matches!(e, Event::Run(_) | Event::Runtime(_));
            if run {
                cx.ops.push(Op::LoopStat(LoopStat::RunBegin));
            }
            self.event(cx, e, timer_m);
            if run {
                cx.ops.push(Op::LoopStat(LoopStat::RunEnd));
            }
        }
        cx.ops.push(Op::Record {
            metric: period_m,
            slot: 0,
        });
        if stats {
            cx.ops.push(Op::LoopStat(LoopStat::End));
        }
        if loops {
            cx.ops.push(loop_marker(true));
        }
        if stats {
            // Sums of parsed values (each up to 10^12): saturating, as the marker's
            // 32-bit fields are.
            let (mut c_period, mut c_run) = (0u64, 0u64);
            for e in &p.events {
                match e {
                    Event::Run(us) | Event::Runtime(us) => c_run = c_run.saturating_add(*us),
                    Event::Timer { period_us, .. } => {
                        c_period = c_period.saturating_add(*period_us)
                    }
                    _ => {}
                }
            }
            cx.ops.push(Op::Marker(MarkerOp::Stats {
                c_period: sat32(c_period),
                c_run: sat32(c_run),
                cumulative_slack: self.f.cumulative_slack,
            }));
        }
        cx.ops.push(Op::Count { metric: loops_m });
        let end = cx.ops.len();
        cx.ops[start] = Op::Loop {
            count: count(p.loops),
            end,
        };
        cx.ops.push(Op::EndLoop { start });
        pm
    }

    /// The ops of one event; `timer_m` is the phase's wakeup-latency metric.
    fn event(&mut self, cx: &mut ThreadCx<'_>, e: &Event, timer_m: u32) {
        match e {
            Event::Run(us) => cx.ops.push(Op::Compute(Dist::Const(self.run_ns(*us)))),
            Event::Runtime(us) => {
                let chunks = us.div_ceil(RUNTIME_CHUNK_US).max(1);
                cx.ops
                    .push(Op::Spin(Dist::Const(chunks * RUNTIME_CHUNK_US * 1000)));
            }
            Event::Sleep(us) => cx.ops.push(Op::Sleep(Dist::Const(us * 1000))),
            Event::Timer {
                name,
                unique,
                period_us,
                absolute,
            } => {
                let op = self.timer(cx, name, *unique, *period_us, *absolute, timer_m);
                cx.ops.push(op);
            }
            Event::Lock(n) => {
                let m = self.mutex(n);
                cx.ops.push(Op::Lock(m));
            }
            Event::Unlock(n) => {
                let m = self.mutex(n);
                cx.ops.push(Op::Unlock(m));
            }
            Event::Wait { cond, mutex } => {
                let (c, m) = (self.cond(cond), self.mutex(mutex));
                cx.ops.push(Op::CondWait { c, m });
            }
            Event::Signal(n) => {
                let c = self.cond(n);
                cx.ops.push(Op::CondSignal(c));
            }
            Event::Broad(n) => {
                let c = self.cond(n);
                cx.ops.push(Op::CondBroadcast(c));
            }
            Event::Sync { cond, mutex } => {
                let (c, m) = (self.cond(cond), self.mutex(mutex));
                cx.ops.push(Op::CondSignal(c));
                cx.ops.push(Op::CondWait { c, m });
            }
            Event::Barrier(n) => {
                let (b, m) = self.barriers[n.as_str()];
                let (b, m) = (cref(b), cref(m));
                cx.ops.push(Op::Lock(m));
                cx.ops.push(Op::CondBarrier { b, m });
                cx.ops.push(Op::Unlock(m));
            }
            Event::Suspend(n) => {
                let (c, m) = (self.cond(n), self.mutex(n));
                cx.ops.push(Op::Lock(m));
                cx.ops.push(Op::CondWait { c, m });
                cx.ops.push(Op::Unlock(m));
            }
            Event::Resume(n) => {
                let (c, m) = (self.cond(n), self.mutex(n));
                cx.ops.push(Op::Lock(m));
                cx.ops.push(Op::CondBroadcast(c));
                cx.ops.push(Op::Unlock(m));
            }
            Event::Yield => cx.ops.push(Op::Yield),
            Event::Fork(target) => cx.ops.push(Op::Fork {
                prog: self.fork_prog[target.as_str()],
                thread: true,
            }),
            Event::Mem(b) => cx
                .ops
                .push(Op::Compute(Dist::Const(b / 10 * MEM_NS_PER_10_BYTES))),
            Event::Iorun(b) => {
                cx.ops.push(Op::Syscall);
                cx.ops
                    .push(Op::Compute(Dist::Const(b / 10 * MEM_NS_PER_10_BYTES)));
            }
        }
    }

    /// A `timer` event: a unique timer of the thread or one shared by name, absolute
    /// or relative as the file (or its first use) says.
    fn timer(
        &mut self,
        cx: &mut ThreadCx<'_>,
        name: &str,
        unique: bool,
        period_us: u64,
        absolute: bool,
        timer_m: u32,
    ) -> Op {
        let t = cx.t;
        let (tref, abs) = if unique {
            let key = format!("{}\0{name}", t.name);
            (
                self.unique_ref(cx, name),
                self.absolute.get(&key).copied().unwrap_or(absolute),
            )
        } else {
            let n = *self.timers.entry(name.to_string()).or_insert_with(|| {
                self.spec.timers += 1;
                self.spec.timers - 1
            });
            (
                cref(n),
                self.absolute.get(name).copied().unwrap_or(absolute),
            )
        };
        Op::Timer {
            t: tref,
            period_us: period_us as u32,
            offset_us: t.delay_us as u32,
            absolute: abs,
            metrics: timer_m,
        }
    }
}

/// Where a phase sits: its index and the index of its task loop's `Loop` op (the
/// `rtapp_loop` marker's `phase` and `thread_loop`).
#[derive(Clone, Copy)]
struct PhaseAt {
    index: u32,
    task_loop: u32,
}

/// rt-app's `resource_t` number and event name (`desc`) of event `e` under key
/// `key`, as its parser names them: the key, with the resources it uses after a
/// colon. Unique timers and `mem`/`iorun` buffers carry rt-app's per-thread
/// names there (the name plus a tag); here they show the name as written, and
/// `mem`/`iorun` their key.
fn event_marker(e: &Event, key: &str) -> (u32, String) {
    match e {
        Event::Run(_) => (6, key.to_string()),
        Event::Runtime(_) => (19, key.to_string()),
        Event::Sleep(_) => (5, key.to_string()),
        Event::Yield => (20, key.to_string()),
        Event::Mem(_) => (14, key.to_string()),
        Event::Iorun(_) => (18, key.to_string()),
        Event::Timer { name, unique, .. } => {
            (if *unique { 11 } else { 10 }, format!("{key}:{name}"))
        }
        Event::Lock(m) => (8, format!("{key}:{m}")),
        Event::Unlock(m) => (9, format!("{key}:{m}")),
        Event::Signal(c) => (3, format!("{key}:{c}")),
        Event::Broad(c) => (4, format!("{key}:{c}")),
        Event::Wait { cond, mutex } => (2, format!("{key}:{cond}:{mutex}")),
        Event::Sync { cond, mutex } => (7, format!("{key}:{cond}:{mutex}")),
        Event::Barrier(b) => (21, format!("{key}:{b}")),
        Event::Suspend(n) => (12, format!("{key}:{n}:{n}")),
        Event::Resume(n) => (13, format!("{key}:{n}:{n}")),
        Event::Fork(t) => (22, format!("{key}:{t}")),
    }
}

fn count(c: Option<u64>) -> LoopCount {
    match c {
        None => LoopCount::Forever,
        Some(n) => LoopCount::Times(Dist::Const(n)),
    }
}

/// Thread name of instance `i` of a task with `n` instances.
pub(crate) fn thread_name(task: &str, i: u32, n: u32) -> String {
    if n == 1 {
        task.to_string()
    } else {
        format!("{task}-{i}")
    }
}

/// Build the workload of a validated file on machine `m`.
pub fn build(f: &RtAppFile, m: &Machine) -> (WorkloadSpec, Vec<ThreadMetrics>) {
    let mut b = Builder {
        f,
        m,
        spec: WorkloadSpec {
            duration_ns: f.duration_s.map(|s| s * 1_000_000_000),
            ..WorkloadSpec::default()
        },
        mutexes: BTreeMap::new(),
        conds: BTreeMap::new(),
        barriers: BTreeMap::new(),
        timers: BTreeMap::new(),
        absolute: BTreeMap::new(),
        masks: Vec::new(),
        mask_index: HashMap::new(),
        threads: Vec::new(),
        thread_names: HashSet::new(),
        fork_prog: BTreeMap::new(),
    };
    // Barriers: parties = instances of every task naming them.
    let mut parties: BTreeMap<&str, u32> = BTreeMap::new();
    for t in &f.tasks {
        let mut named: Vec<&str> = Vec::new();
        for p in &t.phases {
            for e in &p.events {
                match e {
                    Event::Barrier(n) if !named.contains(&n.as_str()) => named.push(n),
                    Event::Timer {
                        name,
                        unique,
                        absolute: true,
                        ..
                    } => {
                        let key = if *unique {
                            format!("{}\0{name}", t.name)
                        } else {
                            name.clone()
                        };
                        b.absolute.insert(key, true);
                    }
                    _ => {}
                }
            }
        }
        for n in named {
            *parties.entry(n).or_insert(0) += t.instances;
        }
    }
    for (n, p) in parties {
        // rt-app's barrier resource: its own mutex, condition variable and count.
        let m = b.spec.mutexes;
        b.spec.mutexes += 1;
        b.barriers
            .insert(n.to_string(), (b.spec.barriers.len() as u32, m));
        // A barrier no started thread reaches (instance 0) never blocks anyone.
        b.spec.barriers.push(p.max(1));
    }
    // Fork copies first (programs may fork each other), then the initial threads.
    let targets: HashSet<&str> = f
        .tasks
        .iter()
        .flat_map(|x| x.phases.iter().flat_map(|p| &p.events))
        .filter_map(|e| match e {
            Event::Fork(n) => Some(n.as_str()),
            _ => None,
        })
        .collect();
    let forked: Vec<&TaskDef> = f
        .tasks
        .iter()
        .filter(|t| targets.contains(t.name.as_str()))
        .collect();
    for (i, t) in forked.iter().enumerate() {
        b.fork_prog.insert(t.name.clone(), i);
        b.spec.programs.push(Program {
            name: t.name.clone(),
            work_class: None,
            ops: Vec::new(),
        });
    }
    for (i, t) in forked.iter().enumerate() {
        let p = b.program(t, &t.name, true, None);
        b.spec.programs[i] = p;
    }
    // rt-app's main thread (task 0) creates the threads in order; they meet at the
    // start barrier (one party per thread, not the main thread).
    let nthreads: u32 = f.tasks.iter().map(|t| t.instances).sum();
    let barrier = cref(b.spec.barriers.len() as u32);
    b.spec.barriers.push(nthreads.max(1));
    let t_zero = cref(b.spec.words);
    b.spec.words += 1;
    b.spec.tasks.push(TaskSpec::main(MAIN_TASK));
    b.spec.tasks[0].process = Some(0);
    let mut main_ops = Vec::new();
    let mut joins = Vec::new();
    for t in &f.tasks {
        for i in 0..t.instances {
            let name = thread_name(&t.name, i, t.instances);
            let join = cref(b.spec.futexes);
            b.spec.futexes += 1;
            let start = StartSync {
                barrier,
                t_zero,
                first: b.spec.tasks.len() == 1,
                join,
                arena: creates_arena(b.spec.tasks.len() - 1, m.nr_cpus()),
            };
            joins.push(join);
            let p = b.program(t, &name, false, Some(start));
            b.spec.programs.push(p);
            main_ops.push(Op::Spawn {
                task: b.spec.tasks.len() as u32,
            });
            b.spec.spawned.push(b.spec.tasks.len());
            b.spec.tasks.push(TaskSpec {
                name,
                prog: b.spec.programs.len() - 1,
                instance: i,
                // Inherited from the main thread; the thread sets its own.
                cpus: None,
                nice: t.nice,
                policy: t.policy,
                start_ns: 0,
                process: Some(0),
            });
        }
    }
    // Then `sleep(duration)` and the shutdown's joins, or the joins alone.
    let main_markers = f.ftrace & ftrace::MAIN != 0;
    if main_markers {
        main_ops.insert(0, Op::Marker(MarkerOp::Main(MainEvent::Start)));
    }
    if let Some(d) = b.spec.duration_ns {
        main_ops.push(Op::Sleep(Dist::Const(d)));
        if main_markers {
            main_ops.push(Op::Marker(MarkerOp::Main(MainEvent::Shutdown)));
        }
    }
    main_ops.extend(joins.into_iter().map(|f| Op::FutexAwait { f }));
    if main_markers {
        main_ops.push(Op::Marker(MarkerOp::Main(MainEvent::End)));
    }
    main_ops.push(Op::Exit);
    b.spec.programs.push(Program {
        name: MAIN_TASK.to_string(),
        work_class: None,
        ops: main_ops,
    });
    b.spec.tasks[0].prog = b.spec.programs.len() - 1;
    b.spec.masks = b.masks;
    (b.spec, b.threads)
}

// ---------------------------------------------------------------------------------
// The tool.
// ---------------------------------------------------------------------------------

/// rt-app's report: a summary of the per-thread logs.
#[derive(Clone, Debug, PartialEq)]
pub struct RtAppTool {
    pub threads: Vec<ThreadMetrics>,
}

fn us(ns: f64) -> f64 {
    (ns / 10.0).round() / 100.0
}

impl Tool for RtAppTool {
    fn report(&self, input: &ToolInput<'_>) -> Option<ToolResult> {
        let mut text = String::new();
        let mut values = BTreeMap::new();
        let _ = writeln!(
            text,
            "{:<16} {:>8} {:>14} {:>14} {:>14}",
            "# thread", "loops", "wu_lat mean", "wu_lat max", "slack mean"
        );
        for t in &self.threads {
            let mut loops = 0;
            let (mut lat_sum, mut lat_n, mut lat_max) = (0u128, 0u64, 0u64);
            let (mut sl_sum, mut sl_n) = (0u128, 0u64);
            for p in &t.phases {
                if let Some(h) = input.hist(&p.loops) {
                    loops += h.count();
                }
                if let Some(h) = p.wu_lat.as_deref().and_then(|n| input.hist(n)) {
                    lat_sum += h.sum;
                    lat_n += h.count();
                    if h.count() > 0 && h.sum > 0 {
                        lat_max = lat_max.max(h.max());
                    }
                }
                if let Some(h) = p.slack.as_deref().and_then(|n| input.hist(n)) {
                    sl_sum += h.sum;
                    sl_n += h.count();
                }
            }
            let mean = |s: u128, n: u64| if n == 0 { 0.0 } else { s as f64 / n as f64 };
            let (lm, sm) = (us(mean(lat_sum, lat_n)), us(mean(sl_sum, sl_n)));
            let lx = us(lat_max as f64);
            values.insert(format!("{}.loops", t.name), loops as f64);
            if lat_n > 0 {
                values.insert(format!("{}.wu_lat_mean_us", t.name), lm);
                values.insert(format!("{}.wu_lat_max_us", t.name), lx);
                values.insert(format!("{}.slack_mean_us", t.name), sm);
                let _ = writeln!(
                    text,
                    "{:<16} {:>8} {:>11.2} us {:>11.2} us {:>11.2} us",
                    t.name, loops, lm, lx, sm
                );
            } else {
                let _ = writeln!(
                    text,
                    "{:<16} {:>8} {:>14} {:>14} {:>14}",
                    t.name, loops, "-", "-", "-"
                );
            }
        }
        Some(ToolResult { text, values })
    }
}

/// Parse `[workload] kind = "rtapp"`: `file` (the rt-app JSON, relative to the
/// scenario file).
pub fn parse(w: &TableReader<'_>, m: &Machine) -> Result<Generated, InputError> {
    let (path, text) = crate::workload::generators::workload_file(
        w,
        "an `rtapp` workload needs `file` (the rt-app JSON)",
        "rt-app file",
    )?;
    let f = parse_file(&text, &path, m)?;
    let (spec, threads) = build(&f, m);
    spec.validate()
        .map_err(|e| InputError::in_file(&path, None, format!("internal: {e}")))?;
    Ok(Generated {
        spec,
        tool: Arc::new(RtAppTool { threads }),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::machine::presets;

    fn juno() -> Machine {
        presets::preset("juno-r0").unwrap()
    }

    fn file(text: &str) -> RtAppFile {
        parse_file(text, Path::new("t.json"), &juno()).unwrap()
    }

    #[test]
    fn the_first_eight_per_cpu_less_one_threads_create_their_arena() {
        // glibc: the main thread's arena is the first of at most 8 per CPU.
        assert!(creates_arena(0, 1) && creates_arena(6, 1));
        assert!(!creates_arena(7, 1) && !creates_arena(200, 1));
        assert!(creates_arena(46, 6) && !creates_arena(47, 6));
        // Juno r0 has 6 CPUs: of 30 + 30 threads created in file order, the first
        // 47 create their arena (all of `a`, 17 of `b`); the fork copy of `a`
        // attaches to an existing one.
        let (spec, _) = build(
            &file(
                r#"{"tasks": {
                "a": {"instance": 30, "loop": 1, "run": 10, "fork": "c"},
                "b": {"instance": 30, "loop": 1, "run": 10},
                "c": {"instance": 0, "loop": 1, "run": 10}
            }}"#,
            ),
            &juno(),
        );
        let first = |prog: usize| spec.programs[prog].ops[0];
        let arena: Vec<bool> = spec
            .spawned
            .iter()
            .map(|&t| match first(spec.tasks[t].prog) {
                Op::ThreadStart { arena } => arena,
                o => panic!("thread {t} starts with {o:?}"),
            })
            .collect();
        assert_eq!(arena.len(), 60);
        assert_eq!(arena.iter().filter(|&&a| a).count(), 47);
        assert!(arena[..47].iter().all(|&a| a) && !arena[47]);
        assert_eq!(first(0), Op::ThreadStart { arena: false }, "the fork copy");
    }

    #[test]
    fn defaults_and_loops() {
        let f = file(
            r#"{"tasks": {
                "a": {"run0": 10},
                "b": {"loop": 3, "instance": 2, "delay": 5, "priority": -3, "run0": 10},
                "c": {"phases": {"x": {"run0": 1}, "y": {"loop": -1, "sleep0": 1}}}
            }}"#,
        );
        assert_eq!(f.calibration, Calibration::Cpu(0));
        assert_eq!(f.duration_s, None);
        let (a, b, c) = (&f.tasks[0], &f.tasks[1], &f.tasks[2]);
        // Without `phases`: one phase; without `loop` it runs once per iteration of
        // a task loop that never ends (rt-app's `parse_task_data`).
        assert_eq!((a.loops, a.phases[0].loops), (None, Some(1)));
        assert_eq!((b.loops, b.phases[0].loops), (Some(1), Some(3)));
        assert_eq!((b.instances, b.delay_us, b.nice), (2, 5, -3));
        // With `phases`: the phase list repeats forever by default, phases once.
        assert_eq!(c.loops, None);
        let names: Vec<_> = c.phases.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(names, ["x", "y"]);
        assert_eq!((c.phases[0].loops, c.phases[1].loops), (Some(1), None));
    }

    #[test]
    fn ftrace_takes_rt_app_categories_or_a_boolean() {
        let cats = |v: &str| {
            file(&format!(
                r#"{{"global": {{"ftrace": {v}}}, "tasks": {{"a": {{"run": 10}}}}}}"#
            ))
            .ftrace
        };
        assert_eq!(cats(r#""main,LOOP""#), ftrace::MAIN | ftrace::LOOP);
        assert_eq!(cats(r#""stats,none,task""#), ftrace::TASK, "none clears");
        assert_eq!(cats(r#""""#), 0);
        assert_eq!(cats("true"), ftrace::ALL);
        assert_eq!(cats("false"), 0);
        assert_eq!(file(r#"{"tasks": {"a": {"run": 10}}}"#).ftrace, 0);
        for (v, want) in [
            (r#""main,attrs""#, r#"unknown category "attrs""#),
            ("3", "found 3"),
        ] {
            let text = format!(
                "{{\"global\":\n {{\"ftrace\": {v}}}, \"tasks\": {{\"a\": {{\"run\": 10}}}}}}"
            );
            let e = parse_file(&text, Path::new("t.json"), &juno()).unwrap_err();
            assert_eq!(e.line, Some(2), "{e}");
            assert!(e.to_string().contains("global.ftrace"), "{e}");
            assert!(e.to_string().contains(want), "{e}");
        }
        let e = parse_file(
            r#"{"global": {"cumulative_slack": 1}, "tasks": {"a": {"run": 10}}}"#,
            Path::new("t.json"),
            &juno(),
        )
        .unwrap_err();
        assert!(e.to_string().contains("cumulative_slack"), "{e}");
    }

    /// With every category, a phase iteration is: loop start, then per event its
    /// `rtapp_event` before it (a `run` between the two `LoopStat` clock reads),
    /// the period's record, loop end and stats; the thread starts with
    /// `clock_ref` (thread 0) and `task start`, ends with `task end`; the main task
    /// writes `start` first and `end` after its joins.
    #[test]
    fn markers_sit_where_rt_app_writes_them() {
        let f = file(
            r#"{"global": {"calibration": 100, "ftrace": true},
                "tasks": {"a": {"loop": 2, "run0": 1000, "timer0": {"ref": "t", "period": 4000}}}}"#,
        );
        let (spec, _) = build(&f, &juno());
        let prog = &spec.programs[spec.tasks[1].prog].ops;
        let at = |want: &Op| prog.iter().position(|o| o == want).expect("present");
        let clock = at(&Op::Marker(MarkerOp::ClockRef { slot: TZERO_SLOT }));
        let start = at(&Op::Marker(MarkerOp::Task { end: false }));
        assert!(clock < at(&Op::Barrier(cref(0))) || clock < start);
        let Some(Op::Loop { .. }) = prog.get(start + 1) else {
            panic!("the task loop follows task start: {prog:?}")
        };
        let phase_loop = (start + 2) as u32;
        assert!(matches!(prog[phase_loop as usize], Op::Loop { .. }));
        let lm = |end| {
            Op::Marker(MarkerOp::Loop {
                end,
                phase: 0,
                task_loop: (start + 1) as u32,
                phase_loop,
            })
        };
        let body: Vec<Op> = prog[phase_loop as usize + 1..]
            .iter()
            .take_while(|o| !matches!(o, Op::EndLoop { .. }))
            .copied()
            .collect();
        let ev = |id, kind, desc| Op::Marker(MarkerOp::Event { id, kind, desc });
        let want = [
            lm(false),
            Op::LoopStat(LoopStat::Begin),
            Op::Mark { slot: 0 },
            ev(0, 6, "run0"),
            Op::LoopStat(LoopStat::RunBegin),
            Op::Compute(Dist::Const(1_000_000)),
            Op::LoopStat(LoopStat::RunEnd),
            ev(1, 10, "timer0:t"),
        ];
        assert_eq!(body[..want.len()], want, "{body:?}");
        let tail = &body[want.len() + 1..];
        assert_eq!(tail[0], Op::Record { metric: 1, slot: 0 });
        assert_eq!(tail[1], Op::LoopStat(LoopStat::End));
        assert_eq!(tail[2], lm(true));
        assert_eq!(
            tail[3],
            Op::Marker(MarkerOp::Stats {
                c_period: 4000,
                c_run: 1000,
                cumulative_slack: false
            })
        );
        let end = at(&Op::Marker(MarkerOp::Task { end: true }));
        assert!(matches!(prog[end - 1], Op::EndLoop { .. }));
        let main = &spec.programs[spec.tasks[0].prog].ops;
        assert_eq!(main[0], Op::Marker(MarkerOp::Main(MainEvent::Start)));
        assert_eq!(
            main[main.len() - 2],
            Op::Marker(MarkerOp::Main(MainEvent::End))
        );
        // Without `ftrace` (or with none), the programs have no marker at all.
        for g in ["", r#""global": {"ftrace": "none"},"#] {
            let f = file(&format!(
                r#"{{{g} "tasks": {{"a": {{"loop": 2, "run0": 1000}}}}}}"#
            ));
            let (spec, _) = build(&f, &juno());
            assert!(spec
                .programs
                .iter()
                .flat_map(|p| &p.ops)
                .all(|o| !matches!(o, Op::Marker(_) | Op::LoopStat(_))));
        }
    }

    /// rt-app's one-phase task: a `loop` repeats the phase inside one task
    /// iteration; without one, the task loop repeats a phase of one iteration.
    #[test]
    fn a_task_without_phases_loops_as_rt_app_does() {
        let f = file(r#"{"tasks": {"a": {"loop": 3, "run": 10}, "b": {"run": 10}}}"#);
        assert_eq!(
            (f.tasks[0].loops, f.tasks[0].phases[0].loops),
            (Some(1), Some(3))
        );
        assert_eq!(
            (f.tasks[1].loops, f.tasks[1].phases[0].loops),
            (None, Some(1))
        );
        assert_eq!(f.tasks[0].phases[0].keys, ["run"]);
    }

    #[test]
    fn a_byte_order_mark_is_ignored_and_lines_still_count() {
        let f = file("\u{feff}{\"tasks\": {\"a\": {\"run\": 10}}}");
        assert_eq!(f.tasks.len(), 1);
        let e = parse_file("\u{feff}{\n\"tasks\": 5}", Path::new("t.json"), &juno()).unwrap_err();
        assert_eq!(e.line, Some(2), "{e}");
    }

    #[test]
    fn run_is_calibrated_on_the_named_cpu() {
        let m = juno();
        // CPU0 is an A53 (446): 1000 µs there is 1000·446/1024 µs of reference work.
        let f = file(
            r#"{"global": {"calibration": "CPU0"}, "tasks": {"a": {"loop": 1, "run0": 1000}}}"#,
        );
        let (spec, _) = build(&f, &m);
        assert!(spec.programs[0]
            .ops
            .contains(&Op::Compute(Dist::Const(1_000_000 * 446 / 1024))));
        // ns-per-loop: whole loops only.
        let f =
            file(r#"{"global": {"calibration": 300}, "tasks": {"a": {"loop": 1, "run0": 1000}}}"#);
        let (spec, _) = build(&f, &m);
        assert!(spec.programs[0]
            .ops
            .contains(&Op::Compute(Dist::Const(1_000_000 / 300 * 300))));
    }

    /// `(name, unit)` of every declared metric, in order.
    fn metric_table(spec: &WorkloadSpec) -> Vec<(String, &'static str)> {
        spec.metrics
            .iter()
            .map(|m| (m.name.clone(), m.unit))
            .collect()
    }

    fn owned(v: &[(&str, &'static str)]) -> Vec<(String, &'static str)> {
        v.iter().map(|&(n, u)| (n.to_string(), u)).collect()
    }

    #[test]
    fn the_metric_table_of_a_small_file() {
        // Hand-checked: fork copies first (k), then the threads in file order; per
        // phase loops and period, and wu_lat and slack after them when the phase
        // has a timer; a task of no instance declares nothing of its own.
        let f = file(
            r#"{"tasks": {
                "a": {"instance": 2, "loop": 1, "run0": 10, "timer0": {"ref": "tick", "period": 100}},
                "b": {"phases": {"x": {"run0": 1}, "y": {"loop": 2, "sleep0": 1}}},
                "k": {"instance": 0, "loop": 1, "run": 5},
                "p": {"loop": 1, "fork0": "k"}
            }}"#,
        );
        let (spec, threads) = build(&f, &juno());
        spec.validate().unwrap();
        assert_eq!(
            metric_table(&spec),
            owned(&[
                ("k/phase0/loops", "count"),
                ("k/phase0/period", "ns"),
                ("a-0/phase0/loops", "count"),
                ("a-0/phase0/period", "ns"),
                ("a-0/phase0/wu_lat", "ns"),
                ("a-0/phase0/slack", "ns"),
                ("a-1/phase0/loops", "count"),
                ("a-1/phase0/period", "ns"),
                ("a-1/phase0/wu_lat", "ns"),
                ("a-1/phase0/slack", "ns"),
                ("b/x/loops", "count"),
                ("b/x/period", "ns"),
                ("b/y/loops", "count"),
                ("b/y/period", "ns"),
                ("p/phase0/loops", "count"),
                ("p/phase0/period", "ns"),
            ])
        );
        let names: Vec<&str> = threads.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["k", "a-0", "a-1", "b", "p"]);
        // The timer op finds wu_lat at its index and slack right after.
        let a0 = &spec.programs[spec.tasks[1].prog];
        assert!(a0
            .ops
            .iter()
            .any(|o| matches!(o, Op::Timer { metrics: 4, .. })));
        // A task both started and forked: one thread entry, one set of metrics.
        let f = file(r#"{"tasks": {"k": {"loop": 1, "run": 5}, "p": {"loop": 1, "fork0": "k"}}}"#);
        let (spec, threads) = build(&f, &juno());
        assert_eq!(
            metric_table(&spec),
            owned(&[
                ("k/phase0/loops", "count"),
                ("k/phase0/period", "ns"),
                ("p/phase0/loops", "count"),
                ("p/phase0/period", "ns"),
            ])
        );
        assert_eq!(threads.len(), 2);
    }

    /// A file of `n` task objects `t0` .. `t{n-1}`, each one thread looping
    /// { run 50, sleep 100 } pinned to CPU i mod 6 (juno-r0's six).
    fn many_threads(n: usize) -> String {
        let tasks: Vec<String> = (0..n)
            .map(|i| {
                format!(
                    r#""t{i}": {{"loop": -1, "cpus": [{}], "run0": 50, "sleep0": 100}}"#,
                    i % 6
                )
            })
            .collect();
        format!(
            r#"{{"global": {{"duration": 1}}, "tasks": {{{}}}}}"#,
            tasks.join(",\n")
        )
    }

    #[test]
    fn five_thousand_threads_parse_with_their_metrics_in_file_order() {
        let n = 5_000;
        let f = file(&many_threads(n));
        let (spec, threads) = build(&f, &juno());
        spec.validate().unwrap();
        assert_eq!(spec.tasks.len(), n + 1);
        assert_eq!(spec.spawned, (1..=n).collect::<Vec<_>>());
        let mut want = Vec::new();
        for i in 0..n {
            want.push((format!("t{i}/phase0/loops"), "count"));
            want.push((format!("t{i}/phase0/period"), "ns"));
        }
        assert_eq!(metric_table(&spec), want);
        for (i, t) in threads.iter().enumerate() {
            assert_eq!(t.name, format!("t{i}"));
            assert_eq!(spec.metrics.index_of(&t.phases[0].period), Some(2 * i + 1));
        }
        // The six masks, in order of first use, each thread's op naming its own.
        let want_masks: Vec<CpuMask> = (0..6).map(CpuMask::of).collect();
        assert_eq!(spec.masks, want_masks);
        let t4999 = &spec.programs[spec.tasks[n].prog];
        assert!(t4999.ops.contains(&Op::SetAffinity {
            mask: 4999 % 6,
            target: AffinityTarget::Current
        }));
        // A repeated task name far down the object is found, at its second use.
        let text = many_threads(n).replace(r#""t4998": "#, r#""t4997": "#);
        let e = parse_file(&text, Path::new("t.json"), &juno()).unwrap_err();
        assert_eq!(e.line, Some(4999), "{e}");
        assert!(e.to_string().contains("tasks.t4997: duplicate key"), "{e}");
    }

    proptest::proptest! {
        /// Whatever the tasks, instances and phases, the metric table lists every
        /// thread's phases in file order: loops, period, then wu_lat and slack for
        /// a phase with a timer.
        #[test]
        fn the_metric_table_follows_the_threads_and_phases(
            tasks in proptest::collection::vec(
                (0u32..4, proptest::collection::vec(proptest::bool::ANY, 1..4)),
                1..8,
            ),
        ) {
            proptest::prop_assume!(tasks.iter().any(|t| t.0 > 0));
            let mut objs = Vec::new();
            let mut want = Vec::new();
            for (i, (inst, phases)) in tasks.iter().enumerate() {
                let ph: Vec<String> = phases
                    .iter()
                    .enumerate()
                    .map(|(j, &timer)| {
                        let t = if timer { r#", "timer0": {"ref": "unique", "period": 100}"# } else { "" };
                        format!(r#""p{j}": {{"run0": 10{t}}}"#)
                    })
                    .collect();
                objs.push(format!(
                    r#""t{i}": {{"instance": {inst}, "phases": {{{}}}}}"#,
                    ph.join(", ")
                ));
                for k in 0..*inst {
                    let th = thread_name(&format!("t{i}"), k, *inst);
                    for (j, &timer) in phases.iter().enumerate() {
                        want.push((format!("{th}/p{j}/loops"), "count"));
                        want.push((format!("{th}/p{j}/period"), "ns"));
                        if timer {
                            want.push((format!("{th}/p{j}/wu_lat"), "ns"));
                            want.push((format!("{th}/p{j}/slack"), "ns"));
                        }
                    }
                }
            }
            let f = file(&format!(r#"{{"tasks": {{{}}}}}"#, objs.join(", ")));
            let (spec, threads) = build(&f, &juno());
            spec.validate().unwrap();
            proptest::prop_assert_eq!(metric_table(&spec), want);
            let nthreads: u32 = tasks.iter().map(|t| t.0).sum();
            proptest::prop_assert_eq!(threads.len(), nthreads as usize);
        }
    }

    #[test]
    fn objects_are_shared_by_name_and_unique_timers_per_thread() {
        let f = file(
            r#"{"tasks": {
                "a": {"instance": 2, "loop": 1, "barrier0": "b", "timer0": {"ref": "unique", "period": 10},
                      "timer1": {"ref": "tick", "period": 10}, "lock0": "m", "unlock0": "m"},
                "b": {"instance": 3, "loop": 1, "barrier0": "b", "barrier1": "b",
                      "timer0": {"ref": "tick", "period": 10, "mode": "absolute"}, "lock0": "m", "unlock0": "m"}
            }}"#,
        );
        let (spec, threads) = build(&f, &juno());
        spec.validate().unwrap();
        // One barrier of 2 + 3 parties (b names it twice but counts once), then
        // rt-app's start barrier (one party per thread).
        assert_eq!(spec.barriers, [5, 5]);
        // `m`, and the barrier's own mutex (rt-app's barrier resource: a mutex, a
        // condition variable and a count), taken around each arrival; the barrier's
        // is made with the barrier, before the programs name `m`.
        assert_eq!(spec.mutexes, 2);
        let (b, bm) = (cref(0), cref(0));
        assert!(spec.programs.iter().any(|p| p
            .ops
            .windows(3)
            .any(|w| w == [Op::Lock(bm), Op::CondBarrier { b, m: bm }, Op::Unlock(bm)])));
        // Shared `tick` + one unique timer per instance of a.
        assert_eq!(spec.timers, 3);
        // rt-app's main task, then the threads.
        assert_eq!(spec.tasks.len(), 6);
        assert_eq!(spec.tasks[0].name, MAIN_TASK);
        assert_eq!(spec.tasks[2].name, "a-1");
        assert_eq!(threads.len(), 5);
        // An absolute event makes the shared timer absolute for every user.
        let mut uses: BTreeMap<u32, Vec<bool>> = BTreeMap::new();
        for o in spec.programs.iter().flat_map(|p| &p.ops) {
            if let Op::Timer { t, absolute, .. } = o {
                uses.entry(t.base).or_default().push(*absolute);
            }
        }
        let counts: Vec<usize> = uses.values().map(Vec::len).collect();
        assert_eq!(counts, [1, 5, 1], "{uses:?}");
        assert_eq!(uses[&0], [false]);
        assert!(uses[&1].iter().all(|&a| a), "{uses:?}");
    }

    #[test]
    fn duration_and_fork_programs() {
        let f = file(
            r#"{"global": {"duration": 2}, "tasks": {
                "p": {"loop": 1, "fork0": "k"},
                "k": {"instance": 0, "loop": 1, "delay": 10, "timer0": {"ref": "unique", "period": 5}}
            }}"#,
        );
        let (spec, threads) = build(&f, &juno());
        assert_eq!(spec.duration_ns, Some(2_000_000_000));
        // Program 0 is k's fork copy; only p is created (by rt-app's main task).
        assert_eq!(spec.programs[0].name, "k");
        assert_eq!(spec.tasks.len(), 2);
        assert_eq!(spec.spawned, [1]);
        assert!(spec.programs[1].ops.contains(&Op::Fork {
            prog: 0,
            thread: true
        }));
        // The fork copy has no start protocol (rt-app's forked threads skip the
        // start barrier) and no join futex.
        assert!(!spec.programs[0].ops.iter().any(|o| matches!(
            o,
            Op::Barrier(_) | Op::SetEpoch { .. } | Op::FutexPost { .. }
        )));
        // k's unique timers (the delay and `unique`) are per fork number.
        assert_eq!(spec.timers, 2 * FORK_UNIQUE_SLOTS);
        assert_eq!(threads[0].name, "k");
        // The main task creates p, sleeps for the duration, then joins p.
        let main = &spec.programs[spec.tasks[0].prog];
        assert_eq!(main.name, MAIN_TASK);
        let join = ObjRef {
            base: 0,
            count: 1,
            idx: IdxExpr::Const(0),
        };
        assert_eq!(
            main.ops,
            [
                Op::Spawn { task: 1 },
                Op::Sleep(Dist::Const(2_000_000_000)),
                Op::FutexAwait { f: join },
                Op::Exit
            ]
        );
    }

    #[test]
    fn start_protocol_of_the_threads() {
        // Without a duration the main task joins the threads in creation order.
        let f = file(
            r#"{"tasks": {
                "a": {"instance": 2, "loop": 1, "delay": 7, "run": 10},
                "b": {"loop": 1, "run": 10}
            }}"#,
        );
        let (spec, threads) = build(&f, &juno());
        spec.validate().unwrap();
        assert_eq!(spec.spawned, [1, 2, 3]);
        assert_eq!(threads.len(), 3, "the main task is not an rt-app thread");
        let c = |i| ObjRef {
            base: i,
            count: 1,
            idx: IdxExpr::Const(0),
        };
        let main = &spec.programs[spec.tasks[0].prog];
        assert_eq!(
            main.ops,
            [
                Op::Spawn { task: 1 },
                Op::Spawn { task: 2 },
                Op::Spawn { task: 3 },
                Op::FutexAwait { f: c(0) },
                Op::FutexAwait { f: c(1) },
                Op::FutexAwait { f: c(2) },
                Op::Exit
            ]
        );
        // Threads inherit the main task's affinity; the start barrier has 3 parties.
        assert!(spec.tasks.iter().all(|t| t.cpus.is_none()));
        assert_eq!(spec.barriers, [3]);
        let (bar, tz, slot) = (c(0), c(0), TZERO_SLOT);
        let prologue = |p: &Program| {
            p.ops
                .iter()
                .take_while(|o| !matches!(o, Op::Loop { .. } | Op::Timer { .. }))
                .copied()
                .collect::<Vec<_>>()
        };
        // Each thread starts up (on Juno's 6 CPUs the first 47 create their malloc
        // arena); only the first takes t_zero; every thread waits at the barrier,
        // then takes t_zero as its timers' reference.
        assert_eq!(
            prologue(&spec.programs[spec.tasks[1].prog]),
            [
                Op::ThreadStart { arena: true },
                Op::Mark { slot },
                Op::Store { w: tz, slot },
                Op::Barrier(bar),
                Op::Load { slot, w: tz },
                Op::SetEpoch { slot }
            ]
        );
        let rest = [
            Op::ThreadStart { arena: true },
            Op::Barrier(bar),
            Op::Load { slot, w: tz },
            Op::SetEpoch { slot },
        ];
        assert_eq!(prologue(&spec.programs[spec.tasks[2].prog]), rest);
        assert_eq!(prologue(&spec.programs[spec.tasks[3].prog]), rest);
        // a's delay is an absolute sleep from t_zero, right after the prologue; the
        // thread wakes its joiner before it exits.
        let a1 = &spec.programs[spec.tasks[2].prog].ops;
        assert!(matches!(
            a1[4],
            Op::Timer {
                period_us: 7,
                offset_us: 0,
                absolute: true,
                ..
            }
        ));
        assert_eq!(a1[a1.len() - 2..], [Op::FutexPost { f: c(1) }, Op::Exit]);
    }
}
