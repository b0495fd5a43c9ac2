//! Measuring this host's primitive costs (`schedlab calibrate host`).
//!
//! sysfs says what a machine *is* (topology, idle states, frequencies), never what its
//! kernel's own work costs, so an imported host simulates with its architecture's
//! bare-metal [`CostTable`]. The standard way to get a machine's costs, the way
//! lmbench's `lat_syscall`, `lat_pipe` and `lat_ctx` do it, is to time each primitive
//! alone with a micro-benchmark, pinned, repeated, and to keep the medians. This
//! module does that (the benchmarks are in [`micro`]) and turns the timings into the
//! cost-table fields the simulator charges, then writes the imported host with those
//! costs as a machine file. `validate host` then checks the result against *other*
//! benchmarks (hackbench, perf messaging, sysbench) that measured nothing here: the
//! costs are measured on primitives, never fitted to the benchmarks they are
//! validated on.
//!
//! **The primitives** (ns per call; each repetition runs N calls after a warm-up,
//! the median over repetitions is used, min and max are reported):
//!
//! | name | benchmark |
//! |---|---|
//! | `S` | `getppid()` loop |
//! | `G` | `clock_gettime(CLOCK_MONOTONIC)` via the vDSO (`Instant::now`) loop |
//! | `M` | uncontended `Mutex` lock + unlock |
//! | `Y` | `sched_yield()` with nothing else runnable on the CPU (no switch) |
//! | `Fw`, `Fa` | `FUTEX_WAKE` with no waiter; `FUTEX_WAIT` whose value does not match (`EAGAIN`) |
//! | `P`, `Pw` | a 1-byte pipe write + read on one thread, never blocking; the same write alone, between two clock reads |
//! | `U`, `Uw` | the same on an AF_UNIX stream socketpair with 100-byte messages (hackbench's and perf messaging's size) |
//! | `Yp`, `ny` | two threads on one CPU each calling `sched_yield()`: ns per call, and switches per call |
//! | `Ts`, `ss`, `ks` | pipe ping-pong of two threads on one CPU: round trip, switches and wakeups per round trip |
//! | `Tp`, `sp`, `kp` | the same with a separate process (`cat`) as the peer: every switch changes the mm |
//! | `Tc`, `Wc`, `kc` | pipe ping-pong of two threads on two CPUs `a` and `b` (same LLC, not SMT siblings when the host allows): round trip, A's write that wakes B (between two clock reads), wakeups per round trip |
//! | `Ct` | `pthread_create` timed by its caller, 32 (quick) or 128 threads one after another, each blocking at once until all exist; the caller and its children allowed on `a` and `b`, so the fork path puts a child beside its creator, as it puts rt-app's threads on idle CPUs; median per thread |
//! | `Cs` | rt-app 1.0's thread start-up, timed by the new thread's own CPU clock: as many threads, created one at a time (the creator waits for each), each naming itself, appending a log line to a shared file and making its first buffered write into its own log file (its first `malloc`), then blocking until all exist; median per thread. Each takes an arena an exited thread left on glibc's free list |
//! | `Ca` | the same, once, by the process's first threads (as many, at most 8 per CPU less two): each creates its own arena, as rt-app's first 8 per CPU less one do |
//! | `F`, `Xp`, `Xu` | a ping-pong of two threads on CPUs `a` and `b` that never sleeps: A writes its message, then stores a round number in a shared word; B spins on the word, reads the message (it is there, so the read neither blocks nor fails), writes its answer, stores the next number; A spins, reads the answer. Median round trip with no message (`F`: the word alone), with 1 B over two pipes (`Xp`), with 100 B over two AF_UNIX socketpairs (`Xu`) |
//!
//! Switches and wakeups are counted by the kernel, not assumed: each thread's
//! `voluntary_ctxt_switches` and `nonvoluntary_ctxt_switches` (`/proc/.../status`)
//! before and after. Every switch away from A or B is a switch; every voluntary one
//! (a read that blocked) needs a wakeup later. The count matters: on an EEVDF kernel
//! a same-CPU wakee often preempts its waker at once, so a round trip has two
//! switches but only one wakeup or so.
//!
//! **The algebra.** The simulator charges a blocking `read` its whole cost before it
//! sleeps, a `write` its cost before its effect, `wakeup_local` to the waker after
//! the wakeup (`ipi_send` more when that wakeup sent an IPI to another CPU), and
//! `context_switch` (+ `mm_switch` when the mm changes) at every switch into a task;
//! a resched IPI reaches the target `ipi_latency_ns` later, then the target leaves
//! its idle state (its exit latency `X`). Written in those terms:
//!
//! ```text
//! syscall, gtod, mutex_fast, futex_wake, futex_wait = S, G, M, Fw, Fa
//! yield_         = Y
//! clone_thread   = Ct                     (the stack's mmap, clone, the child's placement)
//! thread_start   = Cs                     (the new thread's side, up to rt-app's start barrier)
//! thread_start_arena = Ca                 (the same, mapping its own malloc arena)
//! pipe_write     = Pw − G                 (the write between two clock reads, less one clock read)
//! pipe_read      = P − pipe_write
//! unix_write     = Uw − G,   unix_read = U − unix_write
//! context_switch = (Yp − Y) / ny          (a yield that switches = a yield + a switch)
//! Ts             = 2·P + ss·context_switch + ks·wakeup_local
//!   ⇒ wakeup_local = (Ts − 2·P − ss·context_switch) / ks
//! Tp             = 2·P + sp·(context_switch + mm_switch) + kp·wakeup_local
//!   ⇒ mm_switch  = (Tp − 2·P − kp·wakeup_local) / sp − context_switch
//! Xp             = F + 2·P + 4·pipe_remote      (four calls, each on a channel the other CPU touched last)
//!   ⇒ pipe_remote = (Xp − F − 2·P) / 4
//! Xu             = F + 2·U + 4·unix_remote
//!   ⇒ unix_remote = (Xu − F − 2·U) / 4
//! Wc             = Pw + pipe_remote + wakeup_local + ipi_send   (the waker's side of a cross-CPU wakeup)
//!   ⇒ ipi_send   = Wc − Pw − pipe_remote − wakeup_local
//! Tc / kc        = (2·pipe_write + 4·pipe_remote)/kc + ipi_latency_ns + X + context_switch
//!   ⇒ ipi_latency_ns = (Tc − 2·pipe_write − 4·pipe_remote) / kc − X − context_switch
//! ```
//!
//! `pipe_remote` / `unix_remote` are the simulator's `SIM_` charge for a channel
//! call on a CPU other than the one of the channel's previous call
//! (`workload::exec`). A spinning round trip has four calls (A's write and B's read
//! of one channel, B's write and A's read of the other), each on a channel whose
//! previous call ran on the other CPU; on one CPU the same four calls cost `2·P`
//! (`2·U`), and handing the word over and back costs `F` in both. Nothing in it
//! sleeps, so no wakeup and no IPI is inside (the kernel's voluntary switch counts
//! of both threads are checked: a note says when one slept). What the difference
//! holds: the cache lines of the pipe buffer or socket queue, its lock and its wait
//! queue moving between the CPUs, and for a socket the skb allocated on one CPU and
//! freed on the other; in a VM also whatever the hypervisor adds to those misses.
//!
//! The last line is the simulator's critical path of a cross-CPU round trip (with
//! `kc` = 2: each half is the wakee's write, the IPI's flight, the target's idle
//! exit and its switch into the wakee; the waker's `wakeup_local + ipi_send` and its
//! next `read` run on the waker's CPU meanwhile, off that path; each channel call
//! on the path, the write and the woken read's retry, is on a pipe the other CPU
//! touched last, so the half also pays `2·pipe_remote`). `X` is the exit
//! latency of the idle state the simulated governor picks on CPU `b` for an idle
//! period of `Tc / 2` (the deepest whose target residency fits), from the imported
//! machine. With these fields the simulator reproduces `Ts`, `Tp` and `Tc` exactly
//! when its own switch and wakeup counts equal the measured ones (a unit test
//! simulates the ping-pongs to check it).
//!
//! **What is not separable.** Pw and Wc include one clock read, which cancels in
//! `ipi_send` and is subtracted (as `G`) from `pipe_write`. A blocked read's work
//! after its wakeup (copy, return to user) is on the real critical path but is
//! charged before the sleep in the simulator: it ends up in `ipi_latency_ns` for the
//! cross-CPU case and in `wakeup_local` for the same-CPU case. The switch out of the
//! idle task (cross-CPU) is priced like a task-to-task switch. The waker's IPI cost
//! is measured with an idle (halted) target; an IPI to a busy vCPU may cost less.
//! `wakeup_remote` (a wakeup across LLCs, TTWU_QUEUE) is not measured: it would need
//! a CPU pair in different LLCs, and on a one-LLC host the simulator never charges it.
//! Not measured either, and kept at the architecture's default: `tcp_*_8k`, `fork`,
//! `exit`, `tick`, `migrate_*`, `probe_*`, `balance_per_cpu`, `domain_visit`
//! (`fork`: a process fork needs `fork()` itself, which safe Rust does not offer, and
//! its cost grows with the parent's mappings). `Ct` includes what the child's
//! placement costs its creator (`select_task_rq` on the fork path), which the
//! simulator charges apart, a few hundred ns of probes beside tens of µs (bare
//! metal) or hundreds of µs (a TCG guest).
//! The spinning ping-pong measures the cross-CPU cost of a call whose channel the
//! *other* CPU touched just before, with both CPUs busy; a channel touched by a
//! third CPU, or long ago, may cost more or less, and a real workload's calls
//! overlap with other work. Everything here is wall time on a shared machine: other jobs inflate some
//! repetitions, hence medians, and a repetition whose one-thread loops spent more
//! than 1 % of their time waiting while another task had CPU `a` (the kernel's
//! `run_delay` of the loop thread, `/proc/thread-self/schedstat`: a loop that never
//! blocks only waits for someone else) is left out of them, unless every repetition
//! did (then the report says so). A derived field that comes out negative (noise, or a
//! kernel whose paths do not split the way the model's do) is clamped to 0 and said.

#[cfg(target_os = "linux")]
pub mod micro;

use super::validate::Spread;
use crate::machine::{CostTable, Machine, VcpuHost};
use crate::report::text::{num, Num};
use serde::Serialize;
use std::fmt::Write as _;

/// One ping-pong's numbers: round trip and A's waking write in ns, switches and
/// wakeups per round trip.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct PingPong {
    pub rt: f64,
    pub write_timed: f64,
    pub switches: f64,
    pub wakeups: f64,
}

/// The primitives of one repetition, or their medians (ns unless said).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct Inputs {
    pub syscall: f64,
    pub gtod: f64,
    pub mutex_fast: f64,
    pub yield_alone: f64,
    pub futex_wake: f64,
    pub futex_wait: f64,
    pub pipe_pair: f64,
    pub pipe_write_timed: f64,
    pub unix_pair: f64,
    pub unix_write_timed: f64,
    pub yield_pp: f64,
    pub yield_pp_switches: f64,
    pub same: PingPong,
    /// `None`: `cat` could not run.
    pub process: Option<PingPong>,
    /// `None`: a single CPU.
    pub cross: Option<PingPong>,
    /// `None`: a single CPU.
    pub spin: Option<Spin>,
    /// `Ct`: `pthread_create`'s caller side, the child blocked.
    pub thread_create: f64,
    /// `Cs`: rt-app's thread start-up, the new thread's CPU time before it blocks,
    /// its first `malloc` attaching to an arena an exited thread left.
    pub thread_start: f64,
    /// `Ca`: the same for the process's first threads, each creating its arena
    /// (measured once, before the repetitions: the same value in each).
    pub thread_start_arena: f64,
}

/// The spinning cross-CPU ping-pongs (no sleep, no wakeup): round trips in ns.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct Spin {
    /// `F`: only the shared word goes over and back.
    pub flag: f64,
    /// `Xp`: each side also writes 1 B into a pipe that the other reads.
    pub pipe: f64,
    /// `Xu`: the same with 100 B over AF_UNIX stream sockets.
    pub unix: f64,
}

/// How many scalars [`Inputs`] has.
pub const NPRIM: usize = 28;

/// (key, description, unit) of each scalar of [`Inputs`], in `Inputs::scalars` order.
pub const PRIMITIVES: [(&str, &str, &str); NPRIM] = [
    ("S", "getppid()", "ns"),
    ("G", "clock_gettime via the vDSO", "ns"),
    ("M", "mutex lock + unlock, uncontended", "ns"),
    ("Y", "sched_yield, nothing else runnable", "ns"),
    ("Fw", "FUTEX_WAKE, no waiter", "ns"),
    ("Fa", "FUTEX_WAIT, value mismatch (EAGAIN)", "ns"),
    ("P", "pipe write + read, 1 B, no blocking", "ns"),
    ("Pw", "  pipe write alone (+1 clock read)", "ns"),
    ("U", "AF_UNIX write + read, 100 B, no blocking", "ns"),
    ("Uw", "  AF_UNIX write alone (+1 clock read)", "ns"),
    ("Yp", "sched_yield ping-pong, 1 CPU, per call", "ns"),
    ("ny", "  switches per call", "count"),
    ("Ts", "pipe ping-pong, 2 threads, 1 CPU: round trip", "ns"),
    ("ss", "  switches per round trip", "count"),
    ("ks", "  wakeups per round trip", "count"),
    ("Tp", "pipe ping-pong, thread + process, 1 CPU", "ns"),
    ("sp", "  switches per round trip", "count"),
    ("kp", "  wakeups per round trip", "count"),
    ("Tc", "pipe ping-pong, 2 threads, 2 CPUs", "ns"),
    ("Wc", "  the write that wakes (+1 clock read)", "ns"),
    ("sc", "  switches per round trip", "count"),
    ("kc", "  wakeups per round trip", "count"),
    ("F", "spin ping-pong, 2 CPUs, shared word only", "ns"),
    ("Xp", "  + 1 B over two pipes", "ns"),
    ("Xu", "  + 100 B over two AF_UNIX sockets", "ns"),
    ("Ct", "pthread_create, the caller's side", "ns"),
    ("Cs", "thread start-up (rt-app), its own CPU", "ns"),
    ("Ca", "  the same, creating its malloc arena", "ns"),
];

impl Inputs {
    /// Every scalar, in [`PRIMITIVES`] order (`None`: not measured).
    pub(crate) fn scalars(&self) -> [Option<f64>; NPRIM] {
        let pp = |p: &Option<PingPong>| {
            p.map_or([None; 3], |p| {
                [Some(p.rt), Some(p.switches), Some(p.wakeups)]
            })
        };
        let (pr, cr) = (pp(&self.process), self.cross);
        [
            Some(self.syscall),
            Some(self.gtod),
            Some(self.mutex_fast),
            Some(self.yield_alone),
            Some(self.futex_wake),
            Some(self.futex_wait),
            Some(self.pipe_pair),
            Some(self.pipe_write_timed),
            Some(self.unix_pair),
            Some(self.unix_write_timed),
            Some(self.yield_pp),
            Some(self.yield_pp_switches),
            Some(self.same.rt),
            Some(self.same.switches),
            Some(self.same.wakeups),
            pr[0],
            pr[1],
            pr[2],
            cr.map(|c| c.rt),
            cr.map(|c| c.write_timed),
            cr.map(|c| c.switches),
            cr.map(|c| c.wakeups),
            self.spin.map(|x| x.flag),
            self.spin.map(|x| x.pipe),
            self.spin.map(|x| x.unix),
            Some(self.thread_create),
            Some(self.thread_start),
            Some(self.thread_start_arena),
        ]
    }

    /// The inverse of [`Inputs::scalars`].
    pub(crate) fn from_scalars(v: &[Option<f64>; NPRIM]) -> Inputs {
        let g = |i: usize| v[i].unwrap_or(0.0);
        let pp = |i: usize, w: Option<f64>| -> Option<PingPong> {
            Some(PingPong {
                rt: v[i]?,
                write_timed: w.unwrap_or(0.0),
                switches: v[i + 1].unwrap_or(0.0),
                wakeups: v[i + 2].unwrap_or(0.0),
            })
        };
        Inputs {
            syscall: g(0),
            gtod: g(1),
            mutex_fast: g(2),
            yield_alone: g(3),
            futex_wake: g(4),
            futex_wait: g(5),
            pipe_pair: g(6),
            pipe_write_timed: g(7),
            unix_pair: g(8),
            unix_write_timed: g(9),
            yield_pp: g(10),
            yield_pp_switches: g(11),
            same: pp(12, None).unwrap_or_default(),
            process: pp(15, None),
            cross: v[18].map(|rt| PingPong {
                rt,
                write_timed: g(19),
                switches: g(20),
                wakeups: g(21),
            }),
            spin: v[22].map(|flag| Spin {
                flag,
                pipe: g(23),
                unix: g(24),
            }),
            thread_create: g(25),
            thread_start: g(26),
            thread_start_arena: g(27),
        }
    }

    /// Field-wise medians of several repetitions.
    pub fn median(runs: &[Inputs]) -> Inputs {
        let all: Vec<[Option<f64>; NPRIM]> = runs.iter().map(Inputs::scalars).collect();
        let mut m = [None; NPRIM];
        for (i, slot) in m.iter_mut().enumerate() {
            let xs: Vec<f64> = all.iter().filter_map(|s| s[i]).collect();
            *slot = Spread::of(&xs).map(|s| s.median);
        }
        Inputs::from_scalars(&m)
    }
}

/// One derived cost field: where its value comes from.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Derived {
    pub field: &'static str,
    pub default: u64,
    /// `None`: not measured (the default is kept).
    pub value: Option<u64>,
    pub formula: String,
}

/// The cost table `inputs` imply, on top of `base` (whose other fields are kept).
/// `exit_ns(idle_ns)` is the exit latency of the idle state the simulator would pick
/// on the cross-CPU partner for an idle period of `idle_ns`.
pub fn derive(
    inputs: &Inputs,
    base: &CostTable,
    exit_ns: &dyn Fn(f64) -> u64,
) -> (CostTable, Vec<Derived>, Vec<String>) {
    let mut c = base.clone();
    let mut d = Deriving::default();
    derive_one_cpu(inputs, &mut c, &mut d);
    derive_cross_cpu(inputs, &mut c, &mut d, exit_ns);
    (c, d.rows, d.notes)
}

/// The fields derived so far, and the notes on values clamped.
#[derive(Default)]
struct Deriving {
    rows: Vec<Derived>,
    notes: Vec<String>,
}

impl Deriving {
    /// Set `slot` (field `field`) to `v` rounded (negative or non-finite: 0, noted)
    /// and record the row; `None` keeps the default.
    fn set(&mut self, field: &'static str, slot: &mut u64, v: Option<f64>, formula: String) {
        let default = *slot;
        let value = v.map(|x| {
            if !x.is_finite() || x < 0.0 {
                self.notes.push(format!(
                    "{field} came out as {x:.0} ns ({formula}): clamped to 0"
                ));
                0
            } else {
                x.round() as u64
            }
        });
        if let Some(v) = value {
            *slot = v;
        }
        self.rows.push(Derived {
            field,
            default,
            value,
            formula,
        });
    }
}

fn div(a: f64, b: f64) -> Option<f64> {
    if b > 0.0 {
        Some(a / b)
    } else {
        None
    }
}

/// The fields measured on one CPU: system calls, IPC, context and mm switches,
/// local wakeups.
fn derive_one_cpu(i: &Inputs, c: &mut CostTable, d: &mut Deriving) {
    let mut set = |field, slot: &mut u64, v, formula| d.set(field, slot, v, formula);
    let pipe_write = i.pipe_write_timed - i.gtod;
    let unix_write = i.unix_write_timed - i.gtod;
    let cs = div(i.yield_pp - i.yield_alone, i.yield_pp_switches);
    set("syscall", &mut c.syscall, Some(i.syscall), "S".into());
    set("gtod", &mut c.gtod, Some(i.gtod), "G".into());
    set(
        "mutex_fast",
        &mut c.mutex_fast,
        Some(i.mutex_fast),
        "M".into(),
    );
    set(
        "futex_wake",
        &mut c.futex_wake,
        Some(i.futex_wake),
        "Fw".into(),
    );
    set(
        "futex_wait",
        &mut c.futex_wait,
        Some(i.futex_wait),
        "Fa".into(),
    );
    set("yield_", &mut c.yield_, Some(i.yield_alone), "Y".into());
    set(
        "clone_thread",
        &mut c.clone_thread,
        Some(i.thread_create),
        "Ct".into(),
    );
    set(
        "thread_start",
        &mut c.thread_start,
        Some(i.thread_start),
        "Cs".into(),
    );
    set(
        "thread_start_arena",
        &mut c.thread_start_arena,
        Some(i.thread_start_arena),
        "Ca".into(),
    );
    set(
        "pipe_write",
        &mut c.pipe_write,
        Some(pipe_write),
        "Pw − G".into(),
    );
    set(
        "pipe_read",
        &mut c.pipe_read,
        Some(i.pipe_pair - pipe_write),
        "P − pipe_write".into(),
    );
    set(
        "unix_write",
        &mut c.unix_write,
        Some(unix_write),
        "Uw − G".into(),
    );
    set(
        "unix_read",
        &mut c.unix_read,
        Some(i.unix_pair - unix_write),
        "U − unix_write".into(),
    );
    set(
        "context_switch",
        &mut c.context_switch,
        cs,
        "(Yp − Y) / ny".into(),
    );
    // The rest builds on the rounded fields, so that the simulator's sums (integer
    // ns) reproduce the measured round trips as closely as integers allow.
    let cs = c.context_switch as f64;
    let wl = div(
        i.same.rt - 2.0 * i.pipe_pair - i.same.switches * cs,
        i.same.wakeups,
    );
    set(
        "wakeup_local",
        &mut c.wakeup_local,
        wl,
        "(Ts − 2·P − ss·context_switch) / ks".into(),
    );
    let wl = c.wakeup_local as f64;
    let mm = i
        .process
        .and_then(|p| div(p.rt - 2.0 * i.pipe_pair - p.wakeups * wl, p.switches).map(|x| x - cs));
    set(
        "mm_switch",
        &mut c.mm_switch,
        mm,
        if i.process.is_some() {
            "(Tp − 2·P − kp·wakeup_local) / sp − context_switch".into()
        } else {
            "not measured (no `cat` to be the peer process)".into()
        },
    );
}

/// The cross-CPU fields: remote channel calls, IPI send and latency.
fn derive_cross_cpu(i: &Inputs, c: &mut CostTable, d: &mut Deriving, exit_ns: &dyn Fn(f64) -> u64) {
    let mut set = |field, slot: &mut u64, v, formula| d.set(field, slot, v, formula);
    let wl = c.wakeup_local as f64;
    let cs = c.context_switch as f64;
    // Four calls per spinning round trip, each on a channel the other CPU touched
    // last; on one CPU the same four calls cost 2·P (2·U). Derived before the IPI
    // fields: the sleeping cross-CPU ping-pong pays them too.
    let remote = |x: Option<f64>, pair: f64| {
        x.zip(i.spin)
            .map(|(x, sp)| (x - sp.flag - 2.0 * pair) / 4.0)
    };
    let one = if i.spin.is_some() {
        ""
    } else {
        "not measured (one CPU)"
    };
    let f = |s: &str| {
        if one.is_empty() {
            s.to_string()
        } else {
            one.to_string()
        }
    };
    set(
        "pipe_remote",
        &mut c.pipe_remote,
        remote(i.spin.map(|x| x.pipe), i.pipe_pair),
        f("(Xp − F − 2·P) / 4"),
    );
    set(
        "unix_remote",
        &mut c.unix_remote,
        remote(i.spin.map(|x| x.unix), i.unix_pair),
        f("(Xu − F − 2·U) / 4"),
    );
    let pr = c.pipe_remote as f64;
    let (send, lat, lat_formula) = match i.cross {
        Some(x) => {
            let exit = exit_ns(x.rt / 2.0);
            let pw = c.pipe_write as f64;
            (
                Some(x.write_timed - i.pipe_write_timed - pr - wl),
                div(x.rt - 2.0 * pw - 4.0 * pr, x.wakeups).map(|h| h - exit as f64 - cs),
                format!(
                    "(Tc − 2·pipe_write − 4·pipe_remote) / kc − X − context_switch, X = {exit} ns"
                ),
            )
        }
        None => (
            None,
            None,
            "not measured (one CPU: no cross-CPU ping-pong)".to_string(),
        ),
    };
    set(
        "ipi_send",
        &mut c.ipi_send,
        send,
        if i.cross.is_some() {
            "Wc − Pw − pipe_remote − wakeup_local".into()
        } else {
            "not measured (one CPU)".into()
        },
    );
    set("ipi_latency_ns", &mut c.ipi_latency_ns, lat, lat_formula);
}

/// The exit latency of the idle state the simulated governor picks on `cpu` for an
/// idle period of `idle_ns` (the deepest state whose target residency fits; no
/// states: 0). Mirrors `Kernel::enter_idle`.
pub(crate) fn exit_latency_for(m: &Machine, cpu: usize, idle_ns: f64) -> u64 {
    m.idle_states(cpu)
        .iter()
        .rev()
        .find(|s| (s.target_residency_ns as f64) <= idle_ns)
        .or_else(|| m.idle_states(cpu).first())
        .map_or(0, |s| s.exit_latency_ns)
}

/// A repetition whose one-thread loops waited more than this fraction of their time
/// for their CPU (another task ran there) is left out of the medians.
pub const SHARED: f64 = 0.01;

/// The medians of the repetitions that had CPU `cpu` to themselves (their one-thread
/// loops waited at most [`SHARED`] of their time), or of all of them, with a warning,
/// when none had.
pub(crate) fn robust_median(
    reps: &[Inputs],
    cpu_wait: &[f64],
    cpu: usize,
) -> (Inputs, Vec<String>) {
    let clean: Vec<Inputs> = reps
        .iter()
        .zip(cpu_wait)
        .filter(|(_, &p)| p <= SHARED)
        .map(|(r, _)| *r)
        .collect();
    let shared = reps.len() - clean.len();
    if clean.is_empty() {
        let note = format!(
            "another task shared CPU {cpu} during every repetition (the one-thread loops waited \
             for it more than {:.0} % of their time): the numbers include its run time; check \
             /proc/loadavg and run again",
            SHARED * 100.0
        );
        (Inputs::median(reps), vec![note])
    } else if shared > 0 {
        let note = format!(
            "{shared} of {} repetitions left out of the medians: another task shared CPU {cpu} \
             meanwhile (the one-thread loops waited for it more than {:.0} % of their time)",
            reps.len(),
            SHARED * 100.0
        );
        (Inputs::median(&clean), vec![note])
    } else {
        (Inputs::median(reps), Vec::new())
    }
}

/// Options of a calibration.
#[derive(Clone, Copy, Debug)]
pub struct CalibrateOpts {
    /// Repetitions of every micro-benchmark.
    pub runs: u32,
    /// About 20× fewer calls per repetition (well under a second in all).
    pub quick: bool,
    /// Also measure the work rate per busy CPU with 1, 2, ... of the allowed CPUs
    /// busy at once ([`vcpu_throughput`]): a guest whose vCPUs share host cores.
    pub vcpus: bool,
}

/// How long each thread spins per busy-CPU count and repetition of the vCPU
/// throughput measurement (quick, full).
fn busy_spin_ns(quick: bool) -> u64 {
    if quick {
        100_000_000
    } else {
        400_000_000
    }
}

/// The machine file's `vcpu_throughput` from `rates[run][k - 1]`, the mean
/// per-thread rate with `k` CPUs busy in each repetition: per `k` the median over
/// repetitions of `rate(k) / rate(1)`, on the 1024 scale (1024 for one busy CPU,
/// every entry in 1..=1024).
pub fn vcpu_throughput(rates: &[Vec<f64>]) -> Vec<u32> {
    let n = rates.iter().map(Vec::len).min().unwrap_or(0);
    (0..n)
        .map(|k| {
            if k == 0 {
                return 1024;
            }
            let mut r: Vec<f64> = rates
                .iter()
                .filter(|run| run[0] > 0.0)
                .map(|run| run[k] / run[0])
                .collect();
            r.sort_by(f64::total_cmp);
            if r.is_empty() {
                return 1024;
            }
            let med = crate::stats::percentile_sorted(&r, 50.0);
            ((med * 1024.0).round() as i64).clamp(1, 1024) as u32
        })
        .collect()
}

/// The host's time-slicing from `share[run]` = (share of the all-busy spin not
/// stalled, median spin between stalls in ns) with `n` CPUs busy: `n` × the median
/// share, rounded, host CPUs and the median stretch as their slice; `None` when
/// the vCPUs were not time-sliced (the host had a CPU for each: fewer than half a
/// CPU's time stalled in all) or no stretch was seen.
pub fn vcpu_host(share: &[(f64, f64)], n: usize) -> Option<VcpuHost> {
    let med = |f: &dyn Fn(&(f64, f64)) -> f64| {
        let mut v: Vec<f64> = share.iter().map(f).filter(|x| *x > 0.0).collect();
        v.sort_by(f64::total_cmp);
        (!v.is_empty()).then(|| crate::stats::percentile_sorted(&v, 50.0))
    };
    let cpus = (med(&|s| s.0)? * n as f64).round().max(1.0) as usize;
    let slice = med(&|s| s.1)?;
    (cpus < n).then(|| VcpuHost {
        cpus: cpus as u32,
        slice_ns: ((slice / 1000.0).round() as u64).clamp(100, 1_000_000) * 1000,
    })
}

/// Calls per repetition of each micro-benchmark: simple loops, write+read pairs,
/// one-CPU ping-pongs, the cross-CPU ping-pong.
fn counts(quick: bool) -> (u64, u64, u64, u64) {
    if quick {
        (10_000, 2_000, 1_000, 200)
    } else {
        (200_000, 50_000, 20_000, 5_000)
    }
}

/// `calibrate host`'s result.
#[derive(Clone, Debug, Serialize)]
pub struct Calibration {
    pub runs: u32,
    pub quick: bool,
    pub kernel: String,
    /// The CPU every one-CPU benchmark runs on, and the cross-CPU partner.
    pub cpu_a: usize,
    pub cpu_b: Option<usize>,
    /// The closest level `cpu_a` and `cpu_b` share (`llc`, `smt`, ...).
    pub shared: Option<String>,
    /// Every repetition.
    pub repetitions: Vec<Inputs>,
    /// Per repetition: the fraction of the one-thread loops' time their threads
    /// spent waiting while another task had CPU `cpu_a`.
    pub cpu_wait: Vec<f64>,
    pub medians: Inputs,
    pub derived: Vec<Derived>,
    pub notes: Vec<String>,
    /// Per repetition and busy-CPU count `k` (1, 2, ...): the mean per-thread work
    /// rate (chunks per µs) with `k` CPUs busy; empty unless measured.
    pub busy_rates: Vec<Vec<f64>>,
    /// [`vcpu_throughput`] of `busy_rates` (empty unless measured).
    pub vcpu_throughput: Vec<u32>,
    /// Per repetition, with every allowed CPU busy: the share of the spin time not
    /// stalled (mean over the threads) and the median spin between two stalls, ns
    /// (0 without stalls); empty unless measured.
    pub host_share: Vec<(f64, f64)>,
    /// [`vcpu_host`] of `host_share`.
    pub vcpu_host: Option<VcpuHost>,
    #[serde(skip)]
    pub cost: CostTable,
}

/// The cross-CPU partner of `a`: an allowed CPU sharing its LLC that is not an SMT
/// sibling, else one sharing the LLC, else any other allowed CPU.
pub(crate) fn partner(m: &Machine, a: usize, allowed: &[usize]) -> Option<usize> {
    let ok = |c: usize| c != a && c < m.nr_cpus() && a < m.nr_cpus();
    let others: Vec<usize> = allowed.iter().copied().filter(|&c| ok(c)).collect();
    others
        .iter()
        .copied()
        .find(|&c| m.llc_mask(a).test(c) && !m.smt_mask(a).test(c))
        .or_else(|| others.iter().copied().find(|&c| m.llc_mask(a).test(c)))
        .or_else(|| others.first().copied())
}

/// Run the micro-benchmarks on this host (whose imported description is `m`) and
/// derive its cost table. `progress` gets a line per repetition.
#[cfg(target_os = "linux")]
pub fn calibrate(
    opts: &CalibrateOpts,
    m: &Machine,
    progress: &dyn Fn(&str),
) -> Result<Calibration, String> {
    use micro as mb;
    let allowed = mb::allowed_cpus()?;
    let a = *allowed.first().ok_or("no CPU allowed")?;
    let b = partner(m, a, &allowed);
    let (n_loop, n_pair, n_pp, n_cross) = counts(opts.quick);
    // Threads created per repetition: each holds a stack mapping until the last is
    // made, so a few dozen.
    let n_threads = if opts.quick { 32 } else { 128 };
    let mut notes = Vec::new();
    let mut reps = Vec::new();
    let mut cpu_wait = Vec::new();
    // The process's first threads, before any other micro-benchmark creates many:
    // each creates its glibc arena while there are fewer than 8 per CPU (the main
    // thread's is one; a margin of one more). Once they have exited, their arenas
    // wait on glibc's free list, and every later thread of the process takes one.
    let pair: Vec<usize> = std::iter::once(a).chain(b).collect();
    let n_fresh = n_threads.min((8 * allowed.len() as u64).saturating_sub(2).max(1));
    let thread_start_arena = mb::thread_start(&pair, n_fresh)?;
    for r in 0..opts.runs.max(1) {
        // Time the one-thread loops spent waiting for CPU a, and their total.
        let (mut waited, mut total) = (0u64, 0u64);
        let mut alone = |x: mb::Alone<f64>| {
            waited += x.waited_ns;
            total += x.elapsed_ns;
            x.value
        };
        let syscall = alone(mb::syscall(a, n_loop)?);
        let gtod = alone(mb::gtod(a, n_loop)?);
        let mutex_fast = alone(mb::mutex_fast(a, n_loop)?);
        let yield_alone = alone(mb::sched_yield(a, n_loop / 2)?);
        let futex_wake = alone(mb::futex_wake(a, n_loop / 2)?);
        let futex_wait = alone(mb::futex_wait(a, n_loop / 2)?);
        let pipe = mb::pipe_write_read(a, n_pair)?;
        let unix = mb::unix_write_read(a, n_pair)?;
        waited += pipe.waited_ns + unix.waited_ns;
        total += pipe.elapsed_ns + unix.elapsed_ns;
        let p = waited as f64 / total.max(1) as f64;
        let (pipe_pair, pipe_write_timed) = pipe.value;
        let (unix_pair, unix_write_timed) = unix.value;
        let (yield_pp, yield_pp_switches) = mb::yield_pingpong(a, n_pair / 10, n_pair)?;
        let pp = |p: mb::PingPongRun| PingPong {
            rt: p.rt_ns,
            write_timed: p.write_ns,
            switches: p.switches(),
            wakeups: p.wakeups(),
        };
        let same = pp(mb::pingpong_threads(a, a, n_pp / 10, n_pp)?);
        let process = match mb::pingpong_process(a, n_pp / 10, n_pp) {
            Ok(p) => Some(pp(p)),
            Err(e) => {
                if r == 0 {
                    notes.push(format!("process ping-pong skipped: {e}"));
                }
                None
            }
        };
        let cross = match b {
            Some(b) => Some(pp(mb::pingpong_threads(a, b, n_cross / 10, n_cross)?)),
            None => None,
        };
        let spin = match b {
            Some(b) => {
                let mut x = |ch| -> Result<f64, String> {
                    let (rt, slept) = mb::spin_pingpong(a, b, ch, n_pp / 10, n_pp)?;
                    if slept > 0.01 && r == 0 {
                        notes.push(format!(
                            "the spinning ping-pong ({ch:?}) slept {slept:.3} times per round trip"
                        ));
                    }
                    Ok(rt)
                };
                Some(Spin {
                    flag: x(mb::SpinChan::None)?,
                    pipe: x(mb::SpinChan::Pipe)?,
                    unix: x(mb::SpinChan::Unix)?,
                })
            }
            None => None,
        };
        let thread_start = mb::thread_start(&pair, n_threads)?;
        let thread_create = mb::thread_create(&pair, n_threads)?;
        cpu_wait.push(p);
        reps.push(Inputs {
            syscall,
            gtod,
            mutex_fast,
            yield_alone,
            futex_wake,
            futex_wait,
            pipe_pair,
            pipe_write_timed,
            unix_pair,
            unix_write_timed,
            yield_pp,
            yield_pp_switches,
            same,
            process,
            cross,
            spin,
            thread_create,
            thread_start,
            thread_start_arena,
        });
        progress(&format!(
            "repetition {} of {} done{}",
            r + 1,
            opts.runs.max(1),
            if p > SHARED {
                format!(
                    " (CPU {a} shared: the loops waited {:.1} % of their time)",
                    p * 100.0
                )
            } else {
                String::new()
            }
        ));
    }
    let mut busy_rates = Vec::new();
    let mut host_share = Vec::new();
    if opts.vcpus {
        for r in 0..opts.runs.max(1) {
            let mut per_k = Vec::with_capacity(allowed.len());
            for k in 1..=allowed.len() {
                let spins = mb::busy_rates(&allowed[..k], busy_spin_ns(opts.quick))?;
                per_k.push(spins.iter().map(|s| s.rate).sum::<f64>() / k as f64);
                if k == allowed.len() {
                    host_share.push(share_of(&spins));
                }
            }
            progress(&format!(
                "busy-CPU rates, repetition {} of {} done",
                r + 1,
                opts.runs.max(1)
            ));
            busy_rates.push(per_k);
        }
    }
    let vcpu_throughput = vcpu_throughput(&busy_rates);
    let vcpu_host = vcpu_host(&host_share, allowed.len());
    let (medians, mut more) = robust_median(&reps, &cpu_wait, a);
    notes.append(&mut more);
    let exit = |idle: f64| b.map_or(0, |b| exit_latency_for(m, b, idle));
    let (cost, derived, mut more) = derive(&medians, &m.cost, &exit);
    notes.append(&mut more);
    if b.is_none() {
        notes.push("one CPU allowed: no cross-CPU ping-pong".into());
    }
    Ok(Calibration {
        runs: opts.runs.max(1),
        quick: opts.quick,
        kernel: std::fs::read_to_string("/proc/sys/kernel/osrelease")
            .map(|s| s.trim().to_string())
            .unwrap_or_default(),
        cpu_a: a,
        cpu_b: b,
        shared: b.map(|b| m.shared_level(a, b).name().to_string()),
        repetitions: reps,
        cpu_wait,
        medians,
        derived,
        notes,
        busy_rates,
        vcpu_throughput,
        host_share,
        vcpu_host,
        cost,
    })
}

/// The share of the spins' time not stalled (mean over the threads) and their
/// median stretch between stalls (ns, 0 without one).
#[cfg(target_os = "linux")]
fn share_of(spins: &[micro::BusySpin]) -> (f64, f64) {
    let on: f64 = spins
        .iter()
        .map(|s| 1.0 - s.stalled_ns as f64 / s.total_ns.max(1) as f64)
        .sum::<f64>()
        / spins.len().max(1) as f64;
    let mut st: Vec<f64> = spins
        .iter()
        .flat_map(|s| s.stretches.iter().map(|&x| x as f64))
        .collect();
    st.sort_by(f64::total_cmp);
    let med = if st.is_empty() {
        0.0
    } else {
        crate::stats::percentile_sorted(&st, 50.0)
    };
    (on, med)
}

/// Without Linux there is nothing to measure with.
#[cfg(not(target_os = "linux"))]
pub fn calibrate(
    _opts: &CalibrateOpts,
    _m: &Machine,
    _progress: &dyn Fn(&str),
) -> Result<Calibration, String> {
    Err("calibrate host needs Linux (sched_setaffinity, /proc)".into())
}

impl Calibration {
    /// `host` with the measured costs, named and described as calibrated.
    pub fn machine(&self, host: &Machine) -> Machine {
        let mut m = host.clone();
        m.cost = self.cost.clone();
        let shared = if self.vcpu_throughput.is_empty() {
            ""
        } else {
            // The vCPUs share the host's cores, not an SMT core's pipeline: the
            // measured table is the whole slowdown, SMT siblings add none.
            m.vcpu_throughput = self.vcpu_throughput.clone();
            m.vcpu_host = self.vcpu_host;
            for k in &mut m.core_kinds {
                k.smt_throughput.fill(1024);
            }
            "; vcpu_throughput measured (1..n CPUs busy; smt_throughput flat: the vCPUs share host cores, not SMT pipelines)"
        };
        let measured: Vec<&str> = self
            .derived
            .iter()
            .filter(|d| d.value.is_some())
            .map(|d| d.field)
            .collect();
        let sep = if m.description.is_empty() { "" } else { "; " };
        m.description = format!(
            "{}{sep}[cost] {} measured by `schedlab calibrate host` ({} run{}{}, kernel {}), the rest {}'s defaults",
            m.description,
            measured.join(", "),
            self.runs,
            if self.runs == 1 { "" } else { "s" },
            if self.quick { ", quick" } else { "" },
            self.kernel,
            format!("{:?}", m.arch).to_lowercase(),
        );
        m.description.push_str(shared);
        if self.vcpu_host.is_some() {
            m.description.push_str(
                "; vcpu_host_cpus and vcpu_host_slice_us measured (the all-busy spin's stalls)",
            );
        }
        m
    }

    /// The machine file: a comment block with the primitives, then the schema.
    pub fn machine_file(&self, host: &Machine) -> String {
        let mut s = String::new();
        let _ = writeln!(
            s,
            "# Calibrated by `schedlab calibrate host` ({} run{}{}; kernel {}; CPU {}{}).",
            self.runs,
            if self.runs == 1 { "" } else { "s" },
            if self.quick { ", quick" } else { "" },
            self.kernel,
            self.cpu_a,
            self.cpu_b.map(|b| format!(" and {b}")).unwrap_or_default()
        );
        let _ = writeln!(
            s,
            "# Primitives, median [min–max] over the runs (docs/validation.md, experiment::calibrate):"
        );
        for line in self.primitive_lines() {
            let _ = writeln!(s, "#   {line}");
        }
        let _ = writeln!(s, "# Derived [cost] fields:");
        for d in &self.derived {
            if let Some(v) = d.value {
                let _ = writeln!(s, "#   {} = {v}  ({})", d.field, d.formula);
            }
        }
        if let Some(line) = self.vcpu_line() {
            let _ = writeln!(s, "# {line}");
        }
        for n in &self.notes {
            let _ = writeln!(s, "# note: {n}");
        }
        s.push_str(&crate::machine::file::machine_to_toml(&self.machine(host)));
        s
    }

    /// The vCPU throughput table as one line (`None` unless measured).
    pub(crate) fn vcpu_line(&self) -> Option<String> {
        if self.vcpu_throughput.is_empty() {
            return None;
        }
        let t: Vec<String> = self
            .vcpu_throughput
            .iter()
            .enumerate()
            .map(|(k, &t)| format!("{}: {:.2}", k + 1, t as f64 / 1024.0))
            .collect();
        let host = match self.vcpu_host {
            Some(h) => format!(
                "; time-sliced by the host: {} host CPU{}, a {:.1} ms slice",
                h.cpus,
                if h.cpus == 1 { "" } else { "s" },
                h.slice_ns as f64 / 1e6
            ),
            None => String::new(),
        };
        Some(format!(
            "Work rate per busy CPU with k CPUs busy, relative to one (median of {}): {}{host}",
            self.busy_rates.len(),
            t.join(", ")
        ))
    }

    /// One line per primitive: key, what, unit, `median [min–max]`.
    pub(crate) fn primitive_lines(&self) -> Vec<String> {
        // The repetitions the medians were taken over (see [`robust_median`]).
        let clean = self.cpu_wait.iter().any(|&p| p <= SHARED);
        let cols: Vec<[Option<f64>; NPRIM]> = self
            .repetitions
            .iter()
            .zip(self.cpu_wait.iter().chain(std::iter::repeat(&0.0)))
            .filter(|(_, &p)| !clean || p <= SHARED)
            .map(|(r, _)| r.scalars())
            .collect();
        let mut out = Vec::new();
        for (i, (key, what, unit)) in PRIMITIVES.iter().enumerate() {
            let xs: Vec<f64> = cols.iter().filter_map(|c| c[i]).collect();
            let cell = match Spread::of(&xs) {
                Some(sp) => format!(
                    "{} [{}–{}]",
                    num(sp.median, Num::Cost),
                    num(sp.min, Num::Cost),
                    num(sp.max, Num::Cost)
                ),
                None => "not measured".into(),
            };
            out.push(format!("{key:<3} {what:<44} {unit:>5} {cell}"));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Synthetic primitives, chosen so every field has a hand-computed value.
    fn synthetic() -> Inputs {
        Inputs {
            syscall: 80.0,
            gtod: 20.0,
            mutex_fast: 15.0,
            yield_alone: 170.0,
            futex_wake: 90.0,
            futex_wait: 180.0,
            pipe_pair: 350.0,
            pipe_write_timed: 200.0,
            unix_pair: 700.0,
            unix_write_timed: 320.0,
            // (1 370 − 170) / 1.0 = 1 200 per switch.
            yield_pp: 1_370.0,
            yield_pp_switches: 1.0,
            // 2·350 + 2·1 200 + 1.25·wl = 4 100 ⇒ wl = 800.
            same: PingPong {
                rt: 4_100.0,
                write_timed: 0.0,
                switches: 2.0,
                wakeups: 1.25,
            },
            // (5 100 − 700 − 1·800) / 2 − 1 200 = 600.
            process: Some(PingPong {
                rt: 5_100.0,
                write_timed: 0.0,
                switches: 2.0,
                wakeups: 1.0,
            }),
            // ipi_send = 11 250 − 200 − 250 − 800 = 10 000;
            // ipi_latency = (81 000 − 2·180 − 4·250) / 2 − 1 000 − 1 200 = 37 620.
            cross: Some(PingPong {
                rt: 81_000.0,
                write_timed: 11_250.0,
                switches: 2.0,
                wakeups: 2.0,
            }),
            // pipe_remote = (2 100 − 400 − 2·350) / 4 = 250;
            // unix_remote = (4 200 − 400 − 2·700) / 4 = 600.
            spin: Some(Spin {
                flag: 400.0,
                pipe: 2_100.0,
                unix: 4_200.0,
            }),
            thread_create: 25_400.0,
            thread_start: 31_700.0,
            thread_start_arena: 52_900.0,
        }
    }

    #[test]
    fn algebra_gives_the_hand_computed_fields() {
        let base = CostTable::default();
        let seen = std::cell::Cell::new(0.0);
        let exit = |idle: f64| {
            seen.set(idle);
            1_000
        };
        let (c, rows, notes) = derive(&synthetic(), &base, &exit);
        assert!(notes.is_empty(), "{notes:?}");
        assert_eq!(seen.get(), 40_500.0, "idle period = Tc / 2");
        let want = [
            ("syscall", 80),
            ("gtod", 20),
            ("mutex_fast", 15),
            ("futex_wake", 90),
            ("futex_wait", 180),
            ("yield_", 170),
            ("clone_thread", 25_400),
            ("thread_start", 31_700),
            ("thread_start_arena", 52_900),
            ("pipe_write", 180),
            ("pipe_read", 170),
            ("unix_write", 300),
            ("unix_read", 400),
            ("context_switch", 1_200),
            ("wakeup_local", 800),
            ("mm_switch", 600),
            ("pipe_remote", 250),
            ("unix_remote", 600),
            ("ipi_send", 10_000),
            ("ipi_latency_ns", 37_620),
        ];
        assert_eq!(rows.len(), want.len());
        for ((field, v), row) in want.iter().zip(&rows) {
            assert_eq!((row.field, row.value), (*field, Some(*v)), "{row:?}");
        }
        assert_eq!(
            (
                c.context_switch,
                c.wakeup_local,
                c.ipi_send,
                c.ipi_latency_ns
            ),
            (1_200, 800, 10_000, 37_620)
        );
        // Fields not measured keep the base's values.
        assert_eq!(c.wakeup_remote, base.wakeup_remote);
        assert_eq!(c.fork, base.fork);
        assert_eq!(c.probe_llc, base.probe_llc);
        assert_eq!(rows[0].default, base.syscall);
    }

    #[test]
    fn missing_parts_keep_defaults_and_negatives_clamp() {
        let mut i = synthetic();
        i.process = None;
        i.cross = None;
        i.spin = None;
        // Same-CPU round trip shorter than its parts: wakeup_local < 0.
        i.same.rt = 2_000.0;
        let base = CostTable::default();
        let (c, rows, notes) = derive(&i, &base, &|_| 0);
        assert_eq!(c.wakeup_local, 0);
        assert!(
            notes.iter().any(|n| n.contains("wakeup_local came out as")),
            "{notes:?}"
        );
        for f in [
            "mm_switch",
            "ipi_send",
            "ipi_latency_ns",
            "pipe_remote",
            "unix_remote",
        ] {
            let r = rows.iter().find(|r| r.field == f).unwrap();
            assert_eq!(r.value, None, "{r:?}");
            assert!(r.formula.contains("not measured"), "{r:?}");
        }
        assert_eq!((c.mm_switch, c.ipi_send), (base.mm_switch, base.ipi_send));
        assert_eq!(c.ipi_latency_ns, base.ipi_latency_ns);
        assert_eq!((c.pipe_remote, c.unix_remote), (0, 0));
        // A cross-CPU call cheaper than a same-CPU one: clamped to 0.
        let mut j = synthetic();
        j.spin = Some(Spin {
            flag: 400.0,
            pipe: 1_000.0,
            unix: 4_200.0,
        });
        let (c, _, notes) = derive(&j, &base, &|_| 0);
        assert_eq!((c.pipe_remote, c.unix_remote), (0, 600));
        assert!(
            notes.iter().any(|n| n.contains("pipe_remote came out as")),
            "{notes:?}"
        );
        // No switches counted: the context switch cannot be derived.
        i.yield_pp_switches = 0.0;
        let (c, _, _) = derive(&i, &base, &|_| 0);
        assert_eq!(c.context_switch, base.context_switch);
    }

    #[test]
    fn scalars_round_trip_and_medians_are_field_wise() {
        let a = synthetic();
        assert_eq!(Inputs::from_scalars(&a.scalars()), a);
        let mut b = a;
        b.syscall = 100.0;
        b.cross = None;
        let mut c = a;
        c.syscall = 60.0;
        let m = Inputs::median(&[a, b, c]);
        assert_eq!(m.syscall, 80.0);
        // The cross ping-pong's median is over the runs that have one.
        assert_eq!(m.cross.unwrap().rt, 81_000.0);
        assert_eq!(Inputs::median(&[b]).cross, None);
    }

    #[test]
    fn shared_repetitions_leave_the_medians_unless_all_were_shared() {
        let a = synthetic();
        let mut b = a;
        b.syscall = 5_000.0;
        let mut c = a;
        c.syscall = 90.0;
        let (m, notes) = robust_median(&[a, b, c], &[0.0, 0.3, 0.005], 0);
        assert_eq!(m.syscall, 85.0, "median of the clean runs 80 and 90");
        assert!(
            notes[0].starts_with("1 of 3 repetitions left out"),
            "{notes:?}"
        );
        let (m, notes) = robust_median(&[a, b, c], &[0.0; 3], 0);
        assert_eq!((m.syscall, notes.len()), (90.0, 0));
        let (m, notes) = robust_median(&[a, b], &[0.02, 0.3], 0);
        assert_eq!(m.syscall, (80.0 + 5_000.0) / 2.0);
        assert!(notes[0].contains("during every repetition"), "{notes:?}");
    }

    #[test]
    fn exit_latency_is_the_governors_choice() {
        // test_topology's idle table: a shallow and a deep state.
        let m = crate::machine::presets::test_topology(1, 1, 2, 1);
        let st = m.idle_states(1).to_vec();
        assert!(st.len() >= 2);
        let deep = st.last().unwrap();
        assert_eq!(
            exit_latency_for(&m, 1, deep.target_residency_ns as f64),
            deep.exit_latency_ns
        );
        assert_eq!(exit_latency_for(&m, 1, 0.0), st[0].exit_latency_ns);
    }

    #[test]
    fn partner_prefers_the_llc_and_not_a_sibling() {
        // 1 node, 2 LLCs, 2 cores each, SMT2: CPUs 0-1 one core, 2-3 the next (LLC 0).
        let m = crate::machine::presets::test_topology(1, 2, 2, 2);
        assert!(m.smt_mask(0).test(1) && m.llc_mask(0).test(2));
        let all: Vec<usize> = (0..m.nr_cpus()).collect();
        assert_eq!(partner(&m, 0, &all), Some(2));
        assert_eq!(partner(&m, 0, &[0, 1, 5]), Some(1));
        assert_eq!(partner(&m, 0, &[0, 5]), Some(5));
        assert_eq!(partner(&m, 0, &[0]), None);
    }

    #[test]
    fn calibrated_machine_file_round_trips() {
        let host = crate::machine::presets::test_topology(1, 1, 1, 2);
        let exit = |_: f64| 1_000;
        let (cost, derived, notes) = derive(&synthetic(), &host.cost, &exit);
        let cal = Calibration {
            runs: 1,
            quick: true,
            kernel: "6.18-test".into(),
            cpu_a: 0,
            cpu_b: Some(1),
            shared: Some("llc".into()),
            repetitions: vec![synthetic()],
            cpu_wait: vec![0.0],
            medians: synthetic(),
            derived,
            notes,
            busy_rates: vec![vec![2.0, 1.5], vec![2.0, 1.4]],
            vcpu_throughput: vcpu_throughput(&[vec![2.0, 1.5], vec![2.0, 1.4]]),
            host_share: Vec::new(),
            vcpu_host: None,
            cost: cost.clone(),
        };
        let text = cal.machine_file(&host);
        assert!(
            text.starts_with("# Calibrated by `schedlab calibrate host`"),
            "{text}"
        );
        assert!(text.contains("#   ipi_send = 10000"), "{text}");
        let back = crate::machine::file::parse_machine_toml(&text, std::path::Path::new("c.toml"))
            .unwrap();
        assert_eq!(back.cost, cost);
        assert_eq!(back.cost.ipi_send, 10_000);
        assert_eq!(back.cpus, host.cpus);
        // rate(2)/rate(1): 0.75 and 0.70, median 0.725 → 742.
        assert_eq!(back.vcpu_throughput, vec![1024, 742]);
        assert!(
            text.contains("k CPUs busy, relative to one (median of 2): 1: 1.00, 2: 0.72"),
            "{text}"
        );
        assert!(back
            .core_kinds
            .iter()
            .all(|k| k.smt_throughput.iter().all(|&t| t == 1024)));
        // Four busy vCPUs on the host half of the time, stretches of 3.2-3.6 ms:
        // two host CPUs, the median slice 3.4 ms; spins that never stalled, none.
        let share = [(0.48, 3.2e6), (0.52, 3.4e6), (0.55, 3.6e6)];
        assert_eq!(
            vcpu_host(&share, 4),
            Some(VcpuHost {
                cpus: 2,
                slice_ns: 3_400_000
            })
        );
        assert_eq!(vcpu_host(&[(0.99, 0.0), (1.0, 0.0)], 2), None);
        assert_eq!(
            vcpu_host(&[(0.9, 4e6)], 2),
            None,
            "1.8 host CPUs round to 2"
        );
        // Three CPUs: the median per count, each entry clamped to 1..=1024.
        assert_eq!(
            vcpu_throughput(&[vec![2.0, 1.5, 0.8, 3.0], vec![2.0, 1.4, 0.9, 2.5]]),
            vec![1024, 742, 435, 1024]
        );
        assert!(back
            .description
            .contains("measured by `schedlab calibrate host`"));
        let t = cal.text();
        assert!(
            t.contains("context_switch") && t.contains("(Yp − Y) / ny"),
            "{t}"
        );
    }

    /// Simulated pipe ping-pong on `m`: (ns, switches, wakeups, busy CPU ns) per round trip, from
    /// the difference of a long and a short run (start-up cancels). `layout`: 0 =
    /// two threads on CPU 0, 1 = two processes on CPU 0, 2 = two processes on CPUs
    /// 0 and 1.
    fn sim_pingpong(m: &Machine, layout: u32) -> (f64, f64, f64, f64) {
        sim_pingpong_over(m, layout, "pipe")
    }

    /// [`sim_pingpong`] over channels of `kind` (`pipe` or `unix`).
    fn sim_pingpong_over(m: &Machine, layout: u32, kind: &str) -> (f64, f64, f64, f64) {
        let one = |loops: u64| {
            let groups = match layout {
                0 | 1 => format!(
                    "[[workload.task]]\nname = \"pp\"\ncount = 2\ncpus = \"0\"\nthreads = {}\n\
                     program = [{{ op = \"loop\", count = {loops}, body = [\
                     {{ op = \"read\", chan = \"c[i]\", bytes = 1 }}, {{ op = \"write\", chan = \"c[i+1]\", bytes = 1 }}] }}]\n\
                     [[workload.task]]\nname = \"start\"\ncpus = \"0\"\nprogram = [{{ op = \"write\", chan = \"c[0]\", bytes = 1 }}]\n",
                    layout == 0
                ),
                _ => format!(
                    "[[workload.task]]\nname = \"a\"\ncpus = \"0\"\n\
                     program = [{{ op = \"loop\", count = {loops}, body = [\
                     {{ op = \"write\", chan = \"c[0]\", bytes = 1 }}, {{ op = \"read\", chan = \"c[1]\", bytes = 1 }}] }}]\n\
                     [[workload.task]]\nname = \"b\"\ncpus = \"1\"\n\
                     program = [{{ op = \"loop\", count = {loops}, body = [\
                     {{ op = \"read\", chan = \"c[0]\", bytes = 1 }}, {{ op = \"write\", chan = \"c[1]\", bytes = 1 }}] }}]\n"
                ),
            };
            let text = format!(
                "[machine]\npreset = \"juno-r0\"\n[kernel]\npreset = \"v5.6\"\n[run]\nseed = 1\nduration_ms = 10000\n\
                 [workload]\nkind = \"tasks\"\n[[workload.channel]]\nname = \"c\"\nkind = \"{kind}\"\ncount = 2\n{groups}"
            );
            let doc = crate::config::Doc::parse(&text, std::path::Path::new("pp.toml")).unwrap();
            let mut sc = super::super::Scenario::from_doc(doc, &Default::default()).unwrap();
            sc.machine = m.clone();
            let (r, _) = super::super::run(&sc, 1, 0, &Default::default()).unwrap();
            let busy: f64 = r.metrics.cpu_busy.iter().sum::<f64>() * r.sim_time_ns as f64;
            (
                r.sim_time_ns as f64,
                r.metrics.context_switches as f64,
                r.metrics.wakeups as f64,
                busy,
            )
        };
        let (a, b) = (one(200), one(1_200));
        (
            (b.0 - a.0) / 1_000.0,
            (b.1 - a.1) / 1_000.0,
            (b.2 - a.2) / 1_000.0,
            (b.3 - a.3) / 1_000.0,
        )
    }

    /// The mapping is the simulator's own accounting: simulate the ping-pongs with
    /// known costs, feed the simulated round trips and counts to the algebra, and get
    /// the costs back.
    #[test]
    fn simulated_pingpongs_give_back_their_costs() {
        let mut m = crate::machine::presets::test_topology(1, 1, 2, 1);
        let truth = CostTable {
            pipe_write: 180,
            pipe_read: 170,
            context_switch: 1_200,
            mm_switch: 600,
            wakeup_local: 800,
            ipi_send: 10_000,
            ipi_latency_ns: 37_620,
            pipe_remote: 250,
            gtod: 20,
            ..CostTable::default()
        };
        m.cost = truth.clone();
        let (ts, ss, ks, _) = sim_pingpong(&m, 0);
        let (tp, sp, kp, _) = sim_pingpong(&m, 1);
        let (tc, sc, kc, _) = sim_pingpong(&m, 2);
        assert!(ss > 1.9 && ks > 0.9 && kc > 1.9, "{ss} {ks} {kc}");
        let inputs = Inputs {
            gtod: 20.0,
            pipe_pair: 350.0,
            pipe_write_timed: 200.0,
            unix_pair: 700.0,
            unix_write_timed: 320.0,
            yield_alone: 170.0,
            yield_pp: 170.0 + 1_200.0,
            yield_pp_switches: 1.0,
            same: PingPong {
                rt: ts,
                write_timed: 0.0,
                switches: ss,
                wakeups: ks,
            },
            process: Some(PingPong {
                rt: tp,
                write_timed: 0.0,
                switches: sp,
                wakeups: kp,
            }),
            cross: Some(PingPong {
                rt: tc,
                write_timed: 200.0 + 250.0 + 800.0 + 10_000.0,
                switches: sc,
                wakeups: kc,
            }),
            // (2 100 − 400 − 2·350) / 4 = 250.
            spin: Some(Spin {
                flag: 400.0,
                pipe: 2_100.0,
                unix: 400.0 + 2.0 * 700.0,
            }),
            ..Default::default()
        };
        let (c, _, notes) = derive(&inputs, &CostTable::default(), &|idle| {
            exit_latency_for(&m, 1, idle)
        });
        assert!(notes.is_empty(), "{notes:?}");
        let near = |got: u64, want: u64, tol: u64| {
            assert!(
                got.abs_diff(want) <= tol,
                "got {got}, want {want} ± {tol}: {c:?}"
            );
        };
        near(c.context_switch, 1_200, 0);
        near(c.wakeup_local, 800, 10);
        near(c.mm_switch, 600, 10);
        near(c.ipi_send, 10_000, 10);
        near(c.ipi_latency_ns, 37_620, 100);
        near(c.pipe_remote, 250, 0);
        near(c.unix_remote, 0, 0);
    }

    /// `ipi_send` is charged to the waker for a wakeup that sends an IPI (the
    /// cross-CPU ping-pong: two per round trip) and never for a same-CPU wakeup, and
    /// it stays off the wakee's critical path.
    #[test]
    fn ipi_send_is_charged_to_the_waker_of_a_cross_cpu_wakeup_only() {
        let mut m = crate::machine::presets::test_topology(1, 1, 2, 1);
        m.cost.ipi_latency_ns = 20_000;
        let same0 = sim_pingpong(&m, 0);
        let cross0 = sim_pingpong(&m, 2);
        m.cost.ipi_send = 5_000;
        let same1 = sim_pingpong(&m, 0);
        let cross1 = sim_pingpong(&m, 2);
        assert_eq!(same0, same1);
        assert!((cross1.0 - cross0.0).abs() < 1.0, "{cross0:?} {cross1:?}");
        let extra = cross1.3 - cross0.3;
        assert!(
            (extra - 2.0 * 5_000.0).abs() < 50.0,
            "busy +{extra} ns per round trip"
        );
    }

    /// `unix_remote` / `pipe_remote` are charged to every write and read call on a
    /// channel whose previous call ran on the other CPU: a ping-pong of two tasks
    /// pinned to CPUs 0 and 1 has four such calls per round trip (A's write and B's
    /// read of one channel, B's write and A's read of the other; B's read that blocks
    /// follows B's own last read, so it pays nothing), so the CPUs are busy exactly
    /// 4 × 700 ns longer per round trip; on one CPU nothing is charged.
    #[test]
    fn ipc_remote_is_charged_only_when_the_channel_changes_cpu() {
        let mut m = crate::machine::presets::test_topology(1, 1, 2, 1);
        m.cost.ipi_latency_ns = 20_000;
        // No tick cost: a longer round trip would pay more ticks.
        m.cost.tick = 0;
        for kind in ["unix", "pipe"] {
            let same0 = sim_pingpong_over(&m, 0, kind);
            let cross0 = sim_pingpong_over(&m, 2, kind);
            let mut r = m.clone();
            if kind == "unix" {
                r.cost.unix_remote = 700;
            } else {
                r.cost.pipe_remote = 700;
            }
            let same1 = sim_pingpong_over(&r, 0, kind);
            let cross1 = sim_pingpong_over(&r, 2, kind);
            assert_eq!(same0, same1, "{kind}: one CPU, nothing charged");
            let extra = cross1.3 - cross0.3;
            assert!(
                (extra - 4.0 * 700.0).abs() < 1.0,
                "{kind}: busy +{extra} ns per round trip, want 2800"
            );
            // The wakee's side is on the critical path: the round trip grows too.
            assert!(cross1.0 > cross0.0, "{cross0:?} {cross1:?}");
        }
        // The other kind's field charges nothing to this kind's channels.
        let mut r = m.clone();
        r.cost.pipe_remote = 700;
        assert_eq!(
            sim_pingpong_over(&m, 2, "unix"),
            sim_pingpong_over(&r, 2, "unix")
        );
    }
}
