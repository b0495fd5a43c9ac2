//! The micro-benchmarks of `schedlab calibrate host` (Linux only).
//!
//! Each function measures one primitive on the running kernel and returns what one
//! repetition saw: a per-call time in ns, or for a ping-pong the round-trip time and
//! the context switches counted by the kernel (`/proc/thread-self/status`,
//! `voluntary_ctxt_switches` / `nonvoluntary_ctxt_switches`). Threads are pinned with
//! `sched_setaffinity` (rustix's safe wrapper: the crate stays `forbid(unsafe_code)`),
//! always on threads spawned for the purpose, so the caller's affinity never changes.
//! The algebra that turns these into cost-table fields is in the parent module.

use std::hint::black_box;
use std::io::{Read, Write};
use std::process::{Command, Stdio};
use std::sync::atomic::AtomicU32;
use std::sync::{Barrier, Mutex};
use std::time::Instant;

use rustix::thread::{futex, sched_getaffinity, sched_setaffinity, CpuSet};

/// Pin the calling thread to `cpu`.
pub(crate) fn pin(cpu: usize) -> Result<(), String> {
    pin_set(&[cpu])
}

/// Restrict the calling thread to `cpus`.
fn pin_set(cpus: &[usize]) -> Result<(), String> {
    let mut set = CpuSet::new();
    for &c in cpus {
        set.set(c);
    }
    sched_setaffinity(None, &set).map_err(|e| format!("sched_setaffinity({cpus:?}): {e}"))
}

/// The CPUs this process may run on.
pub(crate) fn allowed_cpus() -> Result<Vec<usize>, String> {
    let set = sched_getaffinity(None).map_err(|e| format!("sched_getaffinity: {e}"))?;
    Ok((0..CpuSet::MAX_CPU).filter(|&c| set.is_set(c)).collect())
}

/// What a one-thread loop measured, how long it took, and how long its thread was
/// runnable but waiting while another task had its CPU (`run_delay`, the second
/// field of `/proc/thread-self/schedstat`): a loop that never blocks only waits when
/// someone else wants the CPU, so that time is inside the timing but not the loop's.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Alone<T> {
    pub value: T,
    pub elapsed_ns: u64,
    pub waited_ns: u64,
}

/// `run_delay` (ns spent runnable on a runqueue, not running) of the calling thread.
pub(crate) fn run_delay_ns() -> Result<u64, String> {
    let p = "/proc/thread-self/schedstat";
    let t = std::fs::read_to_string(p).map_err(|e| format!("reading {p}: {e}"))?;
    t.split_whitespace()
        .nth(1)
        .and_then(|v| v.parse().ok())
        .ok_or_else(|| format!("{p}: unexpected `{}`", t.trim()))
}

/// Run `f` on a new thread pinned to `cpu`, with its time waiting for the CPU.
fn on_cpu<T: Send>(
    cpu: usize,
    f: impl FnOnce() -> Result<T, String> + Send,
) -> Result<Alone<T>, String> {
    std::thread::scope(|s| {
        s.spawn(move || {
            pin(cpu)?;
            let before = run_delay_ns()?;
            let t0 = Instant::now();
            let value = f()?;
            let elapsed_ns = t0.elapsed().as_nanos() as u64;
            let after = run_delay_ns()?;
            Ok(Alone {
                value,
                elapsed_ns,
                waited_ns: after.saturating_sub(before),
            })
        })
        .join()
        .map_err(|_| "a calibration thread panicked".to_string())?
    })
}

/// (voluntary, involuntary) context switches from a `/proc/.../status` file.
pub(crate) fn ctxt_switches(status: &str) -> Result<(u64, u64), String> {
    let text = std::fs::read_to_string(status).map_err(|e| format!("reading {status}: {e}"))?;
    parse_ctxt_switches(&text).ok_or_else(|| format!("{status}: no *_ctxt_switches lines"))
}

/// `voluntary_ctxt_switches` and `nonvoluntary_ctxt_switches` of a status text.
pub(crate) fn parse_ctxt_switches(text: &str) -> Option<(u64, u64)> {
    let field = |key: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(key))
            .and_then(|v| v.trim().parse::<u64>().ok())
    };
    Some((
        field("voluntary_ctxt_switches:")?,
        field("nonvoluntary_ctxt_switches:")?,
    ))
}

fn ns_per(n: u64, t0: Instant) -> f64 {
    t0.elapsed().as_nanos() as f64 / n as f64
}

fn median(v: &mut [u64]) -> f64 {
    v.sort_unstable();
    let xs: Vec<f64> = v.iter().map(|&x| x as f64).collect();
    crate::stats::percentile_sorted(&xs, 50.0)
}

fn io(what: &str) -> impl Fn(std::io::Error) -> String + '_ {
    move |e| format!("{what}: {e}")
}

/// `getppid()`: a bare system call round trip (ns per call).
pub fn syscall(cpu: usize, n: u64) -> Result<Alone<f64>, String> {
    on_cpu(cpu, || {
        let t0 = Instant::now();
        for _ in 0..n {
            black_box(std::os::unix::process::parent_id());
        }
        Ok(ns_per(n, t0))
    })
}

/// `pthread_create` seen from its caller (ns per thread): `n` threads created one
/// after another by a thread allowed on `cpus`, each child inheriting that mask and
/// blocking at once (a read lock the creator holds) until all exist, so that only
/// the creator's side is timed: the stack's `mmap` and guard `mprotect`, the
/// `clone` and the new task's first placement (`wake_up_new_task`). With two CPUs
/// the fork path puts most children on the one the creator is not running on, as
/// it puts rt-app's threads on idle CPUs; the median leaves out a creation that a
/// child or another task interrupted.
pub(crate) fn thread_create(cpus: &[usize], n: u64) -> Result<f64, String> {
    std::thread::scope(|s| {
        s.spawn(|| {
            pin_set(cpus)?;
            let gate = std::sync::RwLock::new(());
            let mut each = Vec::with_capacity(n as usize);
            std::thread::scope(|inner| -> Result<(), String> {
                let held = gate.write().map_err(|_| "poisoned".to_string())?;
                for _ in 0..n {
                    let t0 = Instant::now();
                    std::thread::Builder::new()
                        .spawn_scoped(inner, || drop(gate.read()))
                        .map_err(io("pthread_create"))?;
                    each.push(t0.elapsed().as_nanos() as u64);
                }
                drop(held);
                Ok(())
            })?;
            Ok(median(&mut each))
        })
        .join()
        .map_err(|_| "a calibration thread panicked".to_string())?
    })
}

/// rt-app's thread start-up seen by the new thread (ns of its own CPU time, median
/// per thread): `n` threads created one after another by a thread allowed on
/// `cpus`, each doing what rt-app 1.0's `thread_body` does before its start
/// barrier (its name, `prctl(PR_SET_NAME)`; a log line appended to a shared file,
/// as rt-app's `log_notice` writes to its stderr; a first buffered write into its
/// own log file, opened beforehand by the creator as rt-app's main thread does,
/// whose 4 KiB buffer is the thread's first `malloc`), then reading its CPU clock
/// (`CLOCK_THREAD_CPUTIME_ID`: everything the thread ran since `clone`, the
/// kernel's return from the fork and the C library's thread start included) and
/// blocking until all exist. The creator waits for each thread's number before it
/// creates the next, so no start-up overlaps another or a creation.
pub(crate) fn thread_start(cpus: &[usize], n: u64) -> Result<f64, String> {
    use rustix::time::{clock_gettime, ClockId};
    let dir = tempfile::tempdir().map_err(io("a temporary directory"))?;
    let shared = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(dir.path().join("stderr"))
        .map_err(io("the shared log"))?;
    let each = std::thread::scope(|s| {
        s.spawn(|| -> Result<Vec<u64>, String> {
            pin_set(cpus)?;
            let gate = std::sync::RwLock::new(());
            let (tx, rx) = std::sync::mpsc::channel::<u64>();
            let mut each = Vec::with_capacity(n as usize);
            std::thread::scope(|inner| -> Result<(), String> {
                let held = gate.write().map_err(|_| "poisoned".to_string())?;
                for i in 0..n {
                    let log = std::fs::File::create(dir.path().join(format!("t-{i}.log")))
                        .map_err(io("a thread's log file"))?;
                    let (tx, gate, mut shared) = (tx.clone(), &gate, &shared);
                    std::thread::Builder::new()
                        .name(format!("calib-{i}"))
                        .spawn_scoped(inner, move || {
                            let line = format!(
                                "[calib] <notice> [{i}] Using SCHED_OTHER policy with priority 0\n"
                            );
                            let _ = shared.write_all(line.as_bytes());
                            let mut out = std::io::BufWriter::with_capacity(4096, log);
                            let _ = out.write_all(b"# Policy : SCHED_OTHER priority : 0\n");
                            let t = clock_gettime(ClockId::ThreadCPUTime);
                            let ns = t.tv_sec as u64 * 1_000_000_000 + t.tv_nsec as u64;
                            let _ = tx.send(ns);
                            drop(gate.read());
                            black_box(out);
                        })
                        .map_err(io("pthread_create"))?;
                    each.push(
                        rx.recv()
                            .map_err(|_| "a start-up thread died".to_string())?,
                    );
                }
                drop(held);
                Ok(())
            })?;
            Ok(each)
        })
        .join()
        .map_err(|_| "a calibration thread panicked".to_string())?
    })?;
    let mut each = each;
    Ok(median(&mut each))
}

/// `clock_gettime(CLOCK_MONOTONIC)` through the vDSO (`Instant::now`), ns per call.
pub fn gtod(cpu: usize, n: u64) -> Result<Alone<f64>, String> {
    on_cpu(cpu, || {
        let t0 = Instant::now();
        for _ in 0..n {
            black_box(Instant::now());
        }
        Ok(ns_per(n, t0))
    })
}

/// Uncontended lock + unlock of a `std::sync::Mutex` (a futex word, no system call).
pub(crate) fn mutex_fast(cpu: usize, n: u64) -> Result<Alone<f64>, String> {
    on_cpu(cpu, || {
        let m = Mutex::new(0u64);
        let t0 = Instant::now();
        for _ in 0..n {
            *black_box(&m).lock().map_err(|_| "poisoned".to_string())? += 1;
        }
        Ok(ns_per(n, t0))
    })
}

/// `sched_yield()` with nothing else runnable on the CPU: the system call and the
/// reschedule path, no switch (ns per call).
pub fn sched_yield(cpu: usize, n: u64) -> Result<Alone<f64>, String> {
    on_cpu(cpu, || {
        let t0 = Instant::now();
        for _ in 0..n {
            std::thread::yield_now();
        }
        Ok(ns_per(n, t0))
    })
}

/// `FUTEX_WAKE` of a word nobody waits on (ns per call).
pub fn futex_wake(cpu: usize, n: u64) -> Result<Alone<f64>, String> {
    on_cpu(cpu, || {
        let w = AtomicU32::new(0);
        let t0 = Instant::now();
        for _ in 0..n {
            futex::wake(&w, futex::Flags::PRIVATE, 1).map_err(|e| format!("futex wake: {e}"))?;
        }
        Ok(ns_per(n, t0))
    })
}

/// `FUTEX_WAIT` whose expected value does not match (returns `EAGAIN` at once): the
/// wait's system call without the sleep (ns per call).
pub fn futex_wait(cpu: usize, n: u64) -> Result<Alone<f64>, String> {
    on_cpu(cpu, || {
        let w = AtomicU32::new(0);
        let t0 = Instant::now();
        for _ in 0..n {
            match futex::wait(&w, futex::Flags::PRIVATE, 1, None) {
                Err(rustix::io::Errno::AGAIN) => {}
                other => return Err(format!("futex wait returned {other:?}, not EAGAIN")),
            }
        }
        Ok(ns_per(n, t0))
    })
}

/// Two threads pinned to `cpu` call `sched_yield()` `n` times each (after `warm`):
/// every call switches to the other thread. Returns (ns per call, switches per call).
pub(crate) fn yield_pingpong(cpu: usize, warm: u64, n: u64) -> Result<(f64, f64), String> {
    let start = Barrier::new(2);
    let side = |timed: bool| -> Result<(f64, (u64, u64)), String> {
        pin(cpu)?;
        start.wait();
        for _ in 0..warm {
            std::thread::yield_now();
        }
        let before = ctxt_switches("/proc/thread-self/status")?;
        let t0 = Instant::now();
        for _ in 0..n {
            std::thread::yield_now();
        }
        let t = if timed { ns_per(n, t0) } else { 0.0 };
        let after = ctxt_switches("/proc/thread-self/status")?;
        Ok((t, (after.0 - before.0, after.1 - before.1)))
    };
    std::thread::scope(|s| {
        let b = s.spawn(|| side(false));
        let a = side(true);
        let b = b
            .join()
            .map_err(|_| "a calibration thread panicked".to_string())??;
        let a = a?;
        // Both threads' calls interleave: the time per call is half A's time per call.
        let switches = (a.1 .0 + a.1 .1 + b.1 .0 + b.1 .1) as f64 / (2 * n) as f64;
        Ok((a.0 / 2.0, switches))
    })
}

/// A write + read pair that never blocks: `n` rounds of writing `bytes` bytes and
/// reading them back on one thread. Returns (ns per write+read round, median ns of a
/// write bracketed by two clock reads, measured in a second pass).
fn write_read<W: Write, R: Read>(
    w: &mut W,
    r: &mut R,
    bytes: usize,
    n: u64,
) -> Result<(f64, f64), String> {
    let out = vec![1u8; bytes];
    let mut inb = vec![0u8; bytes];
    let t0 = Instant::now();
    for _ in 0..n {
        w.write_all(&out).map_err(io("write"))?;
        r.read_exact(&mut inb).map_err(io("read"))?;
    }
    let pair = ns_per(n, t0);
    let mut d = Vec::with_capacity(n as usize);
    for _ in 0..n {
        let a = Instant::now();
        w.write_all(&out).map_err(io("write"))?;
        d.push(a.elapsed().as_nanos() as u64);
        r.read_exact(&mut inb).map_err(io("read"))?;
    }
    Ok((pair, median(&mut d)))
}

/// A 1-byte write + read on an anonymous pipe, one thread, never blocking.
pub(crate) fn pipe_write_read(cpu: usize, n: u64) -> Result<Alone<(f64, f64)>, String> {
    on_cpu(cpu, || {
        let (mut r, mut w) = std::io::pipe().map_err(io("pipe"))?;
        write_read(&mut w, &mut r, 1, n)
    })
}

/// A 100-byte send + receive on an AF_UNIX stream socketpair (hackbench's and perf
/// messaging's message), one thread, never blocking.
pub(crate) fn unix_write_read(cpu: usize, n: u64) -> Result<Alone<(f64, f64)>, String> {
    on_cpu(cpu, || {
        let (mut a, mut b) = std::os::unix::net::UnixStream::pair().map_err(io("socketpair"))?;
        write_read(&mut a, &mut b, 100, n)
    })
}

/// What one ping-pong repetition saw.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct PingPongRun {
    /// ns per round trip (two 1-byte writes, two reads).
    pub rt_ns: f64,
    /// Median ns of side A's write (bracketed by two clock reads), which wakes B.
    pub write_ns: f64,
    /// Context switches away from A and from B per round trip, voluntary (a read
    /// that blocked) and involuntary (preempted).
    pub vol_a: f64,
    pub invol_a: f64,
    pub vol_b: f64,
    pub invol_b: f64,
}

impl PingPongRun {
    /// Switches per round trip (each switch away from A or B).
    pub fn switches(&self) -> f64 {
        self.vol_a + self.invol_a + self.vol_b + self.invol_b
    }
    /// Wakeups per round trip: every voluntary switch (a blocked read) ends in one.
    pub fn wakeups(&self) -> f64 {
        self.vol_a + self.vol_b
    }
}

fn diff(after: (u64, u64), before: (u64, u64), n: u64) -> (f64, f64) {
    (
        after.0.saturating_sub(before.0) as f64 / n as f64,
        after.1.saturating_sub(before.1) as f64 / n as f64,
    )
}

/// Two threads of this process, A pinned to `cpu_a` and B to `cpu_b`, bounce one
/// byte over two pipes `n` times (after `warm` untimed rounds). A times each of its
/// writes.
pub(crate) fn pingpong_threads(
    cpu_a: usize,
    cpu_b: usize,
    warm: u64,
    n: u64,
) -> Result<PingPongRun, String> {
    let (mut r1, mut w1) = std::io::pipe().map_err(io("pipe"))?;
    let (mut r2, mut w2) = std::io::pipe().map_err(io("pipe"))?;
    let start = Barrier::new(2);
    std::thread::scope(|s| {
        let b = s.spawn(|| -> Result<(f64, f64), String> {
            pin(cpu_b)?;
            start.wait();
            let mut x = [0u8; 1];
            let mut before = (0, 0);
            for i in 0..warm + n {
                if i == warm {
                    before = ctxt_switches("/proc/thread-self/status")?;
                }
                r1.read_exact(&mut x).map_err(io("B read"))?;
                w2.write_all(&x).map_err(io("B write"))?;
            }
            let after = ctxt_switches("/proc/thread-self/status")?;
            Ok(diff(after, before, n))
        });
        let a = (|| -> Result<PingPongRun, String> {
            pin(cpu_a)?;
            start.wait();
            let mut x = [1u8; 1];
            for _ in 0..warm {
                w1.write_all(&x).map_err(io("A write"))?;
                r2.read_exact(&mut x).map_err(io("A read"))?;
            }
            let before = ctxt_switches("/proc/thread-self/status")?;
            let mut d = Vec::with_capacity(n as usize);
            let t0 = Instant::now();
            for _ in 0..n {
                let t = Instant::now();
                w1.write_all(&x).map_err(io("A write"))?;
                d.push(t.elapsed().as_nanos() as u64);
                r2.read_exact(&mut x).map_err(io("A read"))?;
            }
            let rt_ns = ns_per(n, t0);
            let after = ctxt_switches("/proc/thread-self/status")?;
            let (vol_a, invol_a) = diff(after, before, n);
            Ok(PingPongRun {
                rt_ns,
                write_ns: median(&mut d),
                vol_a,
                invol_a,
                ..Default::default()
            })
        })();
        // On an error in A, B waits for a byte that never comes: unblock it.
        if a.is_err() {
            drop(w1);
        }
        let b = b
            .join()
            .map_err(|_| "a calibration thread panicked".to_string())?;
        let mut a = a?;
        (a.vol_b, a.invol_b) = b?;
        Ok(a)
    })
}

/// The channel a `spin_pingpong` carries its messages over, if any.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SpinChan {
    /// Only the shared word: the cost of handing a cache line over and back.
    None,
    /// 1-byte messages over two pipes (as `pipe_write_read`).
    Pipe,
    /// 100-byte messages over two AF_UNIX stream socketpairs (as `unix_write_read`).
    Unix,
}

/// A ping-pong that never sleeps: A (pinned to `cpu_a`) writes its message, then
/// publishes a round number in a shared word; B (pinned to `cpu_b`) spins on the
/// word, reads the message (it is there: no read blocks, no read fails), writes its
/// answer and publishes the next number; A spins, then reads the answer. No wakeup,
/// no IPI: the only cross-CPU traffic is the channels' own data and the word's cache
/// line. Returns (median ns of a round trip, voluntary switches of A and B per round
/// trip: 0 unless something slept). With `SpinChan::None` only the word moves.
pub(crate) fn spin_pingpong(
    cpu_a: usize,
    cpu_b: usize,
    chan: SpinChan,
    warm: u64,
    n: u64,
) -> Result<(f64, f64), String> {
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
    type Pair = (Box<dyn Read + Send>, Box<dyn Write + Send>);
    let pair = || -> Result<Option<Pair>, String> {
        Ok(match chan {
            SpinChan::None => None,
            SpinChan::Pipe => {
                let (r, w) = std::io::pipe().map_err(io("pipe"))?;
                Some((Box::new(r), Box::new(w)))
            }
            SpinChan::Unix => {
                let (a, b) = std::os::unix::net::UnixStream::pair().map_err(io("socketpair"))?;
                Some((Box::new(b), Box::new(a)))
            }
        })
    };
    let bytes = if chan == SpinChan::Unix { 100 } else { 1 };
    let (ab, ba) = (pair()?, pair()?);
    let (mut ab_r, mut ab_w) = ab.map_or((None, None), |(r, w)| (Some(r), Some(w)));
    let (mut ba_r, mut ba_w) = ba.map_or((None, None), |(r, w)| (Some(r), Some(w)));
    let word = AtomicU64::new(0);
    // Set when either side fails, so the other stops spinning.
    let stop = AtomicBool::new(false);
    let start = Barrier::new(2);
    let wait_for = |v: u64| -> Result<(), String> {
        while word.load(Ordering::Acquire) != v {
            if stop.load(Ordering::Relaxed) {
                return Err("the other side of the spin ping-pong failed".into());
            }
            std::hint::spin_loop();
        }
        Ok(())
    };
    let fail = |e: String| {
        stop.store(true, Ordering::Relaxed);
        e
    };
    std::thread::scope(|s| {
        let b = s.spawn(|| -> Result<(u64, u64), String> {
            pin(cpu_b).map_err(fail)?;
            start.wait();
            let mut x = vec![0u8; bytes];
            let mut before = (0, 0);
            for i in 0..warm + n {
                if i == warm {
                    before = ctxt_switches("/proc/thread-self/status").map_err(fail)?;
                }
                wait_for(2 * i + 1)?;
                if let (Some(r), Some(w)) = (ab_r.as_mut(), ba_w.as_mut()) {
                    r.read_exact(&mut x).map_err(io("B read")).map_err(fail)?;
                    w.write_all(&x).map_err(io("B write")).map_err(fail)?;
                }
                word.store(2 * i + 2, Ordering::Release);
            }
            let after = ctxt_switches("/proc/thread-self/status").map_err(fail)?;
            Ok((after.0 - before.0, 0))
        });
        let a = (|| -> Result<(f64, u64), String> {
            pin(cpu_a).map_err(fail)?;
            start.wait();
            let mut x = vec![1u8; bytes];
            let mut d = Vec::with_capacity(n as usize);
            let mut before = (0, 0);
            for i in 0..warm + n {
                if i == warm {
                    before = ctxt_switches("/proc/thread-self/status").map_err(fail)?;
                }
                let t = Instant::now();
                if let Some(w) = ab_w.as_mut() {
                    w.write_all(&x).map_err(io("A write")).map_err(fail)?;
                }
                word.store(2 * i + 1, Ordering::Release);
                wait_for(2 * i + 2)?;
                if let Some(r) = ba_r.as_mut() {
                    r.read_exact(&mut x).map_err(io("A read")).map_err(fail)?;
                }
                if i >= warm {
                    d.push(t.elapsed().as_nanos() as u64);
                }
            }
            let after = ctxt_switches("/proc/thread-self/status").map_err(fail)?;
            Ok((median(&mut d), after.0 - before.0))
        })();
        if a.is_err() {
            stop.store(true, Ordering::Relaxed);
        }
        let b = b
            .join()
            .map_err(|_| "a calibration thread panicked".to_string())?;
        let (rt, vol_a) = a?;
        let (vol_b, _) = b?;
        Ok((rt, (vol_a + vol_b) as f64 / n as f64))
    })
}

/// Like [`pingpong_threads`] on one CPU, with B a separate process (`cat`, whose
/// `read` of whatever is there then `write` of it is exactly B's loop), so every
/// switch changes the address space. `cat` inherits the affinity of the thread that
/// spawns it.
pub(crate) fn pingpong_process(cpu: usize, warm: u64, n: u64) -> Result<PingPongRun, String> {
    let r = on_cpu(cpu, || {
        let mut child = Command::new("cat")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .map_err(io("cannot start `cat`"))?;
        let status = format!("/proc/{}/status", child.id());
        let result = (|| {
            let mut w = child.stdin.take().ok_or("no stdin")?;
            let mut r = child.stdout.take().ok_or("no stdout")?;
            let allowed = std::fs::read_to_string(&status)
                .map_err(io("reading cat's status"))?
                .lines()
                .find_map(|l| {
                    l.strip_prefix("Cpus_allowed_list:")
                        .map(|v| v.trim().to_string())
                });
            if allowed.as_deref() != Some(cpu.to_string().as_str()) {
                return Err(format!("`cat` is not pinned to cpu{cpu}: {allowed:?}"));
            }
            let mut x = [1u8; 1];
            for _ in 0..warm {
                w.write_all(&x).map_err(io("write to cat"))?;
                r.read_exact(&mut x).map_err(io("read from cat"))?;
            }
            let before_a = ctxt_switches("/proc/thread-self/status")?;
            let before_b = ctxt_switches(&status)?;
            let mut d = Vec::with_capacity(n as usize);
            let t0 = Instant::now();
            for _ in 0..n {
                let t = Instant::now();
                w.write_all(&x).map_err(io("write to cat"))?;
                d.push(t.elapsed().as_nanos() as u64);
                r.read_exact(&mut x).map_err(io("read from cat"))?;
            }
            let rt_ns = ns_per(n, t0);
            let (vol_a, invol_a) = diff(ctxt_switches("/proc/thread-self/status")?, before_a, n);
            let (vol_b, invol_b) = diff(ctxt_switches(&status)?, before_b, n);
            Ok(PingPongRun {
                rt_ns,
                write_ns: median(&mut d),
                vol_a,
                invol_a,
                vol_b,
                invol_b,
            })
        })();
        // Closing cat's stdin ends it.
        drop(child.stdin.take());
        drop(child.stdout.take());
        let _ = child.kill();
        let _ = child.wait();
        result
    })?;
    Ok(r.value)
}

/// One spinning thread of [`busy_rates`].
#[derive(Clone, Debug, Default, PartialEq)]
pub struct BusySpin {
    /// Chunks of arithmetic per µs over the whole spin.
    pub rate: f64,
    /// Time spent in stalls: chunks that took far longer than the median chunk
    /// (their excess over it).
    pub stalled_ns: u64,
    /// Spin time between two stalls, ns (the partial stretches at the start and
    /// the end left out).
    pub stretches: Vec<u64>,
    /// The whole spin, ns.
    pub total_ns: u64,
}

/// A chunk is a stall when it takes more than this many median chunks, and more
/// than [`STALL_MIN_NS`].
const STALL_FACTOR: u64 = 4;
const STALL_MIN_NS: u64 = 100_000;

impl BusySpin {
    /// The spin's rate, stalls and stretches from each chunk's duration (ns).
    pub fn of_chunks(chunks: &[u64]) -> BusySpin {
        let total: u64 = chunks.iter().sum();
        let mut sorted = chunks.to_vec();
        sorted.sort_unstable();
        let med = sorted.get(sorted.len() / 2).copied().unwrap_or(0);
        let cut = (med * STALL_FACTOR).max(STALL_MIN_NS);
        let (mut stalled_ns, mut stretches, mut run, mut seen) = (0, Vec::new(), 0u64, false);
        for &d in chunks {
            if d > cut {
                stalled_ns += d - med;
                if seen {
                    stretches.push(run);
                }
                seen = true;
                run = 0;
            } else {
                run += d;
            }
        }
        BusySpin {
            rate: if total == 0 {
                0.0
            } else {
                chunks.len() as f64 * 1000.0 / total as f64
            },
            stalled_ns,
            stretches,
            total_ns: total,
        }
    }
}

/// Work rate with `cpus.len()` CPUs busy at once: one thread pinned on each, all
/// started together by a barrier, each spinning on a fixed chunk of arithmetic for
/// `dur_ns`; returns each thread's chunks per µs, and when its chunks stalled. On
/// hardware the rates barely depend on how many run (turbo and memory aside); in a
/// TCG guest the vCPUs are host threads sharing the host's cores, and each does
/// less the more are busy: it runs for a host slice, then waits (a stall) while
/// the others run.
pub fn busy_rates(cpus: &[usize], dur_ns: u64) -> Result<Vec<BusySpin>, String> {
    const CHUNK: u64 = 2_000;
    let barrier = Barrier::new(cpus.len());
    std::thread::scope(|s| {
        let handles: Vec<_> = cpus
            .iter()
            .map(|&cpu| {
                let barrier = &barrier;
                s.spawn(move || -> Result<BusySpin, String> {
                    pin(cpu)?;
                    barrier.wait();
                    let t0 = Instant::now();
                    let (mut last, mut x) = (0u64, 1u64);
                    let mut chunks = Vec::with_capacity(4096);
                    loop {
                        for i in 0..CHUNK {
                            x = black_box(x.wrapping_mul(6364136223846793005).wrapping_add(i));
                        }
                        let e = t0.elapsed().as_nanos() as u64;
                        chunks.push(e - last);
                        last = e;
                        if e >= dur_ns {
                            black_box(x);
                            return Ok(BusySpin::of_chunks(&chunks));
                        }
                    }
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .map_err(|_| "a calibration thread panicked".to_string())?
            })
            .collect()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ctxt_switch_lines_parse() {
        let t = "Name:\tx\nvoluntary_ctxt_switches:\t12\nnonvoluntary_ctxt_switches:\t3\n";
        assert_eq!(parse_ctxt_switches(t), Some((12, 3)));
        assert_eq!(parse_ctxt_switches("Name:\tx\n"), None);
        assert!(ctxt_switches("/proc/thread-self/status").is_ok());
        assert!(run_delay_ns().is_ok());
    }

    /// Chunks of 10 µs, stalls of 1 ms after the 3rd and the 6th and the 9th: two
    /// whole stretches of 20 µs between them (the first and the last are partial).
    #[test]
    fn a_spin_finds_its_stalls() {
        let mut c = vec![10_000u64; 12];
        for i in [3, 6, 9] {
            c[i] = 1_000_000;
        }
        let b = BusySpin::of_chunks(&c);
        assert_eq!(b.stretches, vec![20_000, 20_000]);
        assert_eq!(b.stalled_ns, 3 * 990_000);
        assert_eq!(b.total_ns, 9 * 10_000 + 3_000_000);
        assert!((b.rate - 12.0 * 1000.0 / 3_090_000.0).abs() < 1e-12);
        // Evenly slow chunks are no stall, however slow.
        let slow = BusySpin::of_chunks(&[500_000; 8]);
        assert_eq!((slow.stalled_ns, slow.stretches.len()), (0, 0));
    }

    #[test]
    fn primitives_measure_something() {
        let cpu = allowed_cpus().unwrap()[0];
        let sys = syscall(cpu, 1000).unwrap().value;
        assert!(sys > 0.0);
        // A thread's creation is several system calls (mmap, mprotect, clone3) and
        // the new task's placement: dearer than one getppid, wherever it runs.
        let all = allowed_cpus().unwrap();
        let ct = thread_create(&all[..all.len().min(2)], 16).unwrap();
        assert!(ct > 2.0 * sys, "pthread_create {ct} ns, getppid {sys} ns");
        // A thread's start-up is at least its write and its name (two system
        // calls) and the kernel's return from the fork.
        let cs = thread_start(&all[..all.len().min(2)], 16).unwrap();
        assert!(cs > 2.0 * sys, "thread start-up {cs} ns, getppid {sys} ns");
        let (pair, w) = pipe_write_read(cpu, 200).unwrap().value;
        assert!(pair > 0.0 && w > 0.0);
        let r = busy_rates(&allowed_cpus().unwrap()[..1], 2_000_000).unwrap();
        assert!(r.len() == 1 && r[0].rate > 0.0, "{r:?}");
        let p = pingpong_threads(cpu, cpu, 10, 200).unwrap();
        assert!(p.rt_ns > 0.0 && p.switches() > 0.0, "{p:?}");
        // The spinning ping-pong needs two CPUs (on one, each side spins out its slice).
        if let Some(&b) = allowed_cpus().unwrap().iter().find(|&&c| c != cpu) {
            for ch in [SpinChan::None, SpinChan::Pipe, SpinChan::Unix] {
                let (rt, _) = spin_pingpong(cpu, b, ch, 10, 200).unwrap();
                assert!(rt > 0.0, "{ch:?}");
            }
        }
    }
}
