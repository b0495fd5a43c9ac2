//! `schbench`: the old tool (2016 – early 2020, `spec/workloads.md` §3.4) and the new
//! one (2023 onwards, §3.5).
//!
//! **Old schbench.** One process: the main thread creates `m` message threads, and
//! each message thread creates its `t` worker threads. A worker spins for `cputime`
//! µs of *wall-clock* time, then marks its own futex word BLOCKED, stores `now()` as
//! its provisional wake time, pushes itself on its message thread's lock-free list,
//! posts the message thread's futex (a `futex_wake` only if that word was BLOCKED)
//! and waits on its own word. When released it takes `now()` and records
//! `now − wake_time` in µs (0 µs samples are dropped). A message thread marks its own
//! word BLOCKED, splices its whole list, takes *one* timestamp, and for every worker
//! on the list stores that timestamp as the worker's wake time and posts the worker
//! (a plain futex wakeup from the message thread's CPU); then it waits for its own
//! next post and sleeps `sleeptime + jitter` µs (`usleep`, jitter uniform in
//! `[0, sleeptime/4)`). So the measured latency runs from the message thread's
//! single timestamp to the worker's return from its futex wait: the waker's loop over
//! earlier workers of the batch, idle exit, runqueue wait and the switch.
//!
//! **New schbench.** The message thread no longer sleeps: it posts its listed
//! workers as soon as it is posted. After its wakeup a worker does a request:
//! `usleep(sleep_usec)` (the "network" think time), then, holding the spin lock of
//! the CPU it is on (spin on trylock of that CPU's lock; `no_locking` skips it), `n`
//! rounds of a naive matrix multiply over three `√(F/24)`-sized square matrices of
//! 64-bit values, and records the request latency (from before the sleep to the end
//! of the maths) and its completion.
//!
//! **Model.** Exactly that, with the behaviour-program vocabulary: per-worker futex
//! words posted with [`Op::FutexPost`] / waited with [`Op::FutexAwait`] (schbench's
//! `fpost`/`fwait`), per-worker wake-time words ([`Op::Store`]/[`Op::Load`]), one
//! lock-free list per message thread ([`Op::Push`]/[`Op::Splice`] and a
//! [`LoopCount::Each`] loop), and per-CPU spin locks indexed by [`IdxExpr::Cpu`]. The
//! run stops at `runtime` (the workload's own duration, unless `[run] duration_ms`
//! says otherwise); the tool's stop protocol (main sets `stopping`, posts and joins
//! every thread) is not modelled, and the report covers every sample recorded until
//! then.
//!
//! **µs histograms.** Programs record nanoseconds (HDR histograms, 3 significant
//! digits). The report maps every recorded bucket to microseconds by rounding its
//! median-equivalent value to the nearest µs (the tool's µs value is a difference of
//! two `gettimeofday` readings truncated to µs, whose mean is the exact difference),
//! drops 0 µs samples as the tool does, and files them in schbench's own fio-style
//! buckets: exact below 512 µs, 256 buckets per power of two above, reported at the
//! bucket middle. A percentile is the first bucket where the cumulative count
//! reaches `p %` of the samples. Below 2 ms the HDR resolution is finer than 1 µs,
//! so the µs values are those of the simulated times; above it the HDR bucket
//! (≤ 0.1 %) is narrower than schbench's (≥ 0.2 %).
//!
//! Simplifications: pipe mode (`-p`), `-R`/`-A` rate modes, warm-up and the interval
//! reports are not modelled. The matrix work is `compute` of [`MAC_NS`] reference ns
//! per multiply-add (an estimate, see the constant); cache effects of the footprint
//! are not modelled. The request-completion time recorded for the RPS figures costs
//! one extra `C_GTOD`. The spin lock retries every
//! [`crate::workload::program::SPIN_POLL_NS`] ns.

use super::{pos, Generated, Tool, ToolInput, ToolResult};
use crate::config::TableReader;
use crate::error::InputError;
use crate::machine::Machine;
use crate::stats::LatencyHist;
use crate::workload::dist::Dist;
use crate::workload::program::{
    IdxExpr, LoopCount, ObjRef, Op, Program, TaskSpec, WorkloadSpec, FUTEX_BLOCKED,
};
use std::collections::BTreeMap;
use std::fmt::Write;
use std::sync::Arc;

/// Worker wakeup latency (ns), both versions.
pub const WAKEUP_METRIC: &str = "wakeup_latency";
/// New schbench: request latency (ns).
pub const REQUEST_METRIC: &str = "request_latency";
/// New schbench: simulated time at which each request completed (ns).
pub const COMPLETION_METRIC: &str = "request_done_at";

/// Reference-capacity work of one multiply-add of the naive matrix multiply (ns).
/// Estimate: a 64-bit multiply-add with a strided column walk at ~3 cycles on a
/// 3 GHz core; the tool's README shows ≈ 17 ms per request of five 104×104 rounds on
/// the author's machine, so this is machine-dependent and meant to be fitted.
pub const MAC_NS: f64 = 1.0;

/// Options of the old schbench.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OldOpts {
    pub message_threads: u32,
    pub threads: u32,
    /// Seconds.
    pub runtime: u32,
    /// µs.
    pub sleeptime: u32,
    /// µs.
    pub cputime: u32,
}

impl Default for OldOpts {
    /// The tool's defaults (the help text claims 10 000 µs for `-s`/`-c`, the code
    /// uses 30 000).
    fn default() -> Self {
        OldOpts {
            message_threads: 2,
            threads: 16,
            runtime: 30,
            sleeptime: 30_000,
            cputime: 30_000,
        }
    }
}

/// Options of the new schbench.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NewOpts {
    pub message_threads: u32,
    pub threads: u32,
    pub runtime: u32,
    pub sleep_usec: u32,
    pub operations: u32,
    /// KiB.
    pub cache_footprint: u32,
    pub no_locking: bool,
}

impl NewOpts {
    /// Defaults on a machine of `nr_cpus` CPUs: one message thread, `nr_cpus`
    /// workers.
    pub fn defaults(nr_cpus: usize) -> Self {
        NewOpts {
            message_threads: 1,
            threads: nr_cpus.max(1) as u32,
            runtime: 30,
            sleep_usec: 100,
            operations: 5,
            cache_footprint: 256,
            no_locking: false,
        }
    }

    /// Side of the three square matrices that fill the footprint.
    pub(crate) fn matrix_size(&self) -> u64 {
        let elems = u64::from(self.cache_footprint) * 1024 / 8 / 3;
        (elems as f64).sqrt() as u64
    }

    /// Reference work of one request's maths (ns).
    pub(crate) fn math_ns(&self) -> u64 {
        let n = self.matrix_size();
        (n.pow(3) as f64 * f64::from(self.operations) * MAC_NS).round() as u64
    }
}

fn obj(base: u32, count: u32, idx: IdxExpr) -> ObjRef {
    ObjRef { base, count, idx }
}

/// Registers used by the programs.
const R_TS: u8 = 0;
const R_REQ: u8 = 1;
const R_BATCH_TS: u8 = 2;
const R_ITEM: u8 = 3;
const R_LOCK: u8 = 4;
/// Never written: `Record` against it records the absolute time.
const R_ZERO: u8 = 7;

/// Which schbench.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Version {
    Old {
        sleep_ns: u64,
        jitter_ns: u64,
        spin_ns: u64,
    },
    New {
        sleep_ns: u64,
        math_ns: u64,
        lock: bool,
    },
}

/// The dimensions and version of one build.
#[derive(Clone, Copy)]
struct Shape {
    /// Message threads.
    m: u32,
    /// Workers per message thread.
    t: u32,
    /// Workers in all (`m·t`).
    nw: u32,
    nr_cpus: usize,
    v: Version,
}

/// The metrics the workers record: wakeup latency; request and completion time (new
/// version).
#[derive(Clone, Copy)]
struct Metrics {
    wake: usize,
    req: Option<usize>,
    done: Option<usize>,
}

/// Build the workload. Programs: 0 = main; per message thread `M`: `1 + 2M` the
/// message thread, `2 + 2M` its worker. Futexes: message thread `M` owns `M`, worker
/// `k = M·t + j` owns `m + k`. Shared words: wake time of worker `k` at `k`. Lists:
/// one per message thread. Spin locks: one per CPU (new version).
fn build(m: u32, t: u32, runtime_s: u32, v: Version, nr_cpus: usize) -> WorkloadSpec {
    let nw = m * t;
    let sh = Shape {
        m,
        t,
        nw,
        nr_cpus,
        v,
    };
    let mut spec = WorkloadSpec {
        futexes: m + nw,
        words: nw,
        lists: m,
        spinlocks: match v {
            Version::New { .. } => nr_cpus as u32,
            Version::Old { .. } => 0,
        },
        duration_ns: Some(u64::from(runtime_s) * 1_000_000_000),
        ..WorkloadSpec::default()
    };
    let wake = spec.metric(WAKEUP_METRIC, "ns");
    let (req, done) = match v {
        Version::New { .. } => (
            Some(spec.metric(REQUEST_METRIC, "ns")),
            Some(spec.metric(COMPLETION_METRIC, "ns")),
        ),
        Version::Old { .. } => (None, None),
    };
    let mt = Metrics { wake, req, done };
    let mut main = Vec::new();
    for mi in 0..m {
        main.push(Op::Fork {
            prog: 1 + 2 * mi as usize,
            thread: true,
        });
    }
    // main sleeps for the runtime (the run stops then): a wait for children that
    // never exit.
    main.push(Op::WaitChild);
    main.push(Op::Exit);
    spec.programs.push(Program {
        name: "schbench".into(),
        work_class: None,
        ops: main,
    });
    for mi in 0..m {
        spec.programs.push(message_thread(sh, mi));
        spec.programs.push(worker(sh, mt, mi));
    }
    spec.tasks.push(TaskSpec::main("schbench"));
    spec
}

/// Message thread `mi`: forks its workers, then forever takes the list of waiting
/// workers, stamps and wakes each, and waits for the next to queue (the old
/// version sleeping in between).
fn message_thread(sh: Shape, mi: u32) -> Program {
    let Shape { m, t, nw, v, .. } = sh;
    let worker_futex_by_item = obj(m, nw, IdxExpr::Reg(R_ITEM));
    let wake_time_by_item = obj(0, nw, IdxExpr::Reg(R_ITEM));
    let own = obj(0, m, IdxExpr::Const(mi));
    let list = obj(0, m, IdxExpr::Const(mi));
    let mut p = Vec::new();
    for _ in 0..t {
        p.push(Op::Fork {
            prog: 2 + 2 * mi as usize,
            thread: true,
        });
    }
    let top = p.len();
    p.push(Op::Loop {
        count: LoopCount::Forever,
        end: 0,
    });
    p.push(Op::FutexSet {
        f: own,
        val: FUTEX_BLOCKED,
    });
    p.push(Op::Splice { l: list });
    p.push(Op::Mark { slot: R_BATCH_TS });
    let each = p.len();
    p.push(Op::Loop {
        count: LoopCount::Each { slot: R_ITEM },
        end: each + 3,
    });
    p.push(Op::Store {
        w: wake_time_by_item,
        slot: R_BATCH_TS,
    });
    p.push(Op::FutexPost {
        f: worker_futex_by_item,
    });
    p.push(Op::EndLoop { start: each });
    p.push(Op::FutexAwait { f: own });
    if let Version::Old {
        sleep_ns,
        jitter_ns,
        ..
    } = v
    {
        // `-s 0` skips the usleep altogether.
        if sleep_ns > 0 {
            let d = if jitter_ns == 0 {
                Dist::Const(sleep_ns)
            } else {
                Dist::Uniform {
                    lo: sleep_ns,
                    hi: sleep_ns + jitter_ns - 1,
                }
            };
            p.push(Op::Sleep(d));
        }
    }
    let end = p.len();
    p.push(Op::EndLoop { start: top });
    p[top] = Op::Loop {
        count: LoopCount::Forever,
        end,
    };
    Program {
        name: format!("msg{mi}"),
        work_class: None,
        ops: p,
    }
}

/// The workers of message thread `mi`: forever queue themselves, wake the message
/// thread, wait to be woken and record the wakeup latency (the old version spinning
/// first; the new one then serving a request).
fn worker(sh: Shape, mt: Metrics, mi: u32) -> Program {
    let Shape {
        m,
        t,
        nw,
        nr_cpus,
        v,
    } = sh;
    let own = obj(0, m, IdxExpr::Const(mi));
    let list = obj(0, m, IdxExpr::Const(mi));
    // Worker j of message thread M is fork number j: global index M·t + j.
    let me = IdxExpr::Instance {
        div: 1,
        add: mi * t,
    };
    let own_w = obj(m, nw, me);
    let my_wake = obj(0, nw, me);
    let mut w = vec![Op::Loop {
        count: LoopCount::Forever,
        end: 0,
    }];
    if let Version::Old { spin_ns, .. } = v {
        w.push(Op::Spin(Dist::Const(spin_ns)));
    }
    w.extend([
        Op::FutexSet {
            f: own_w,
            val: FUTEX_BLOCKED,
        },
        Op::Mark { slot: R_TS },
        Op::Store {
            w: my_wake,
            slot: R_TS,
        },
        Op::Push { l: list, item: me },
        Op::FutexPost { f: own },
        Op::FutexAwait { f: own_w },
        Op::Load {
            slot: R_TS,
            w: my_wake,
        },
        Op::Record {
            metric: mt.wake,
            slot: R_TS,
        },
    ]);
    if let Version::New {
        sleep_ns,
        math_ns,
        lock,
    } = v
    {
        let percpu = obj(0, nr_cpus as u32, IdxExpr::Cpu);
        w.push(Op::Mark { slot: R_REQ });
        if sleep_ns > 0 {
            w.push(Op::Sleep(Dist::Const(sleep_ns)));
        }
        if lock {
            w.push(Op::SpinLock {
                l: percpu,
                slot: R_LOCK,
            });
        }
        w.push(Op::Compute(Dist::Const(math_ns)));
        if lock {
            w.push(Op::SpinUnlock {
                l: obj(0, nr_cpus as u32, IdxExpr::Reg(R_LOCK)),
            });
        }
        w.push(Op::Record {
            metric: mt.req.expect("request metric"),
            slot: R_REQ,
        });
        w.push(Op::Record {
            metric: mt.done.expect("completion metric"),
            slot: R_ZERO,
        });
    }
    let end = w.len();
    w.push(Op::EndLoop { start: 0 });
    w[0] = Op::Loop {
        count: LoopCount::Forever,
        end,
    };
    Program {
        name: format!("worker{mi}"),
        work_class: None,
        ops: w,
    }
}

/// The old schbench workload.
pub(crate) fn old_spec(o: &OldOpts) -> WorkloadSpec {
    build(
        o.message_threads,
        o.threads,
        o.runtime,
        Version::Old {
            sleep_ns: u64::from(o.sleeptime) * 1000,
            jitter_ns: u64::from(o.sleeptime / 4) * 1000,
            spin_ns: u64::from(o.cputime) * 1000,
        },
        0,
    )
}

/// The new schbench workload on a machine of `nr_cpus` CPUs (one spin lock each).
pub(crate) fn new_spec(o: &NewOpts, nr_cpus: usize) -> WorkloadSpec {
    build(
        o.message_threads,
        o.threads,
        o.runtime,
        Version::New {
            sleep_ns: u64::from(o.sleep_usec) * 1000,
            math_ns: o.math_ns(),
            lock: !o.no_locking,
        },
        nr_cpus,
    )
}

fn reject_unmodelled(w: &TableReader<'_>, keys: &[&'static str]) -> Result<(), InputError> {
    for &k in keys {
        if w.get(k).is_some() {
            return Err(w.err(k, format!("schbench option `{k}` is not modelled")));
        }
    }
    Ok(())
}

/// Parse `[workload]` for kind `schbench` or `schbench-new`.
pub fn parse(kind: &str, w: &TableReader<'_>, m: &Machine) -> Result<Generated, InputError> {
    reject_unmodelled(w, &["pipe", "rps", "auto", "auto_rps", "warmuptime"])?;
    if kind == "schbench" {
        let d = OldOpts::default();
        let o = OldOpts {
            message_threads: pos(w, "message_threads", d.message_threads)?,
            threads: pos(w, "threads", d.threads)?,
            runtime: runtime(w, d.runtime)?,
            sleeptime: nonneg(w, "sleeptime", d.sleeptime)?,
            cputime: nonneg(w, "cputime", d.cputime)?,
        };
        check_threads(w, o.message_threads, o.threads)?;
        Ok(Generated {
            spec: old_spec(&o),
            tool: Arc::new(SchbenchTool::Old),
        })
    } else {
        let message_threads = pos(w, "message_threads", 1)?;
        let n = m.nr_cpus() as u32;
        let d = NewOpts::defaults(m.nr_cpus());
        let o = NewOpts {
            message_threads,
            threads: pos(w, "threads", n.div_ceil(message_threads))?,
            runtime: runtime(w, d.runtime)?,
            sleep_usec: nonneg(w, "sleep_usec", d.sleep_usec)?,
            operations: pos(w, "operations", d.operations)?,
            cache_footprint: pos(w, "cache_footprint", d.cache_footprint)?,
            no_locking: w.bool("no_locking")?.unwrap_or(false),
        };
        check_threads(w, o.message_threads, o.threads)?;
        Ok(Generated {
            spec: new_spec(&o, m.nr_cpus()),
            tool: Arc::new(SchbenchTool::New {
                runtime_s: o.runtime,
            }),
        })
    }
}

/// `runtime` in seconds, at most the engine's time limit.
fn runtime(w: &TableReader<'_>, def: u32) -> Result<u32, InputError> {
    let max = crate::engine::MAX_TIME_NS / crate::engine::NSEC_PER_SEC;
    Ok(w.uint("runtime", 1, max)?.map_or(def, |v| v as u32))
}

fn nonneg(w: &TableReader<'_>, key: &'static str, def: u32) -> Result<u32, InputError> {
    Ok(w.uint(key, 0, u64::from(u32::MAX / 1000))?
        .map_or(def, |v| v as u32))
}

fn check_threads(w: &TableReader<'_>, m: u32, t: u32) -> Result<(), InputError> {
    if u64::from(m) * (1 + u64::from(t)) > crate::engine::MAX_TASKS as u64 {
        return Err(w.err(
            "threads",
            format!(
                "`message_threads` × (1 + `threads`) = {m} × {} is too many tasks",
                1 + t
            ),
        ));
    }
    Ok(())
}

// ---------------------------------------------------------------------------------
// schbench's µs histogram (fio-style plat buckets) and its percentile report.
// ---------------------------------------------------------------------------------

const PLAT_BITS: u32 = 8;
const PLAT_VAL: u64 = 1 << PLAT_BITS;

/// schbench's bucket index of `us` µs.
pub(crate) fn plat_idx(us: u64) -> u64 {
    if us < 2 * PLAT_VAL {
        return us;
    }
    let msb = 63 - us.leading_zeros();
    let error_bits = msb - PLAT_BITS;
    let base = u64::from(error_bits + 1) << PLAT_BITS;
    base + ((us >> error_bits) & (PLAT_VAL - 1))
}

/// The value schbench reports for bucket `idx` (exact below 512, else the middle).
pub(crate) fn plat_val(idx: u64) -> u64 {
    if idx < 2 * PLAT_VAL {
        return idx;
    }
    let error_bits = (idx >> PLAT_BITS) - 1;
    let base = 1u64 << (error_bits + u64::from(PLAT_BITS));
    let k = idx % PLAT_VAL;
    // base + (k + 0.5) · 2^error_bits, truncated as the tool's cast does.
    base + ((2 * k + 1) << error_bits) / 2
}

/// A µs histogram in schbench's buckets.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct UsecHist {
    /// Bucket index → samples.
    pub buckets: BTreeMap<u64, u64>,
    pub samples: u64,
    pub min: u64,
    pub max: u64,
}

impl UsecHist {
    /// Add `n` samples of `us` µs (0 µs samples are dropped, as the tool does).
    pub fn add(&mut self, us: u64, n: u64) {
        if us == 0 || n == 0 {
            return;
        }
        *self.buckets.entry(plat_idx(us)).or_default() += n;
        if self.samples == 0 || us < self.min {
            self.min = us;
        }
        self.max = self.max.max(us);
        self.samples += n;
    }

    /// From a nanosecond histogram (see the module notes).
    pub(crate) fn from_ns(h: &LatencyHist) -> Self {
        let mut u = UsecHist::default();
        for v in h.hist().iter_recorded() {
            let ns = h.hist().median_equivalent(v.value_iterated_to());
            u.add((ns + 500) / 1000, v.count_at_value());
        }
        u
    }

    /// For each `p` of `plist`: the value of the first bucket where the cumulative
    /// count reaches `p %` of the samples, and the samples counted since the
    /// previous percentile. Empty when there are no samples.
    pub fn percentiles(&self, plist: &[f64]) -> Vec<(u64, u64)> {
        let mut out = Vec::new();
        if self.samples == 0 {
            return out;
        }
        let nr = self.samples as f64;
        let (mut sum, mut prev) = (0u64, 0u64);
        for (&idx, &c) in &self.buckets {
            sum += c;
            while out.len() < plist.len() && sum as f64 >= plist[out.len()] / 100.0 * nr {
                out.push((plat_val(idx), sum - prev));
                prev = sum;
            }
            if out.len() == plist.len() {
                break;
            }
        }
        out
    }
}

/// Percentiles of the old tool, with the `*` on the 99th.
const OLD_PLIST: [f64; 7] = [50.0, 75.0, 90.0, 95.0, 99.0, 99.5, 99.9];
const NEW_LAT_PLIST: [f64; 4] = [50.0, 90.0, 99.0, 99.9];
const NEW_RPS_PLIST: [f64; 3] = [20.0, 50.0, 90.0];

/// How schbench prints.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SchbenchTool {
    Old,
    New { runtime_s: u32 },
}

fn pkey(p: f64) -> String {
    format!("p{}", p.to_string().replace('.', "_"))
}

impl SchbenchTool {
    /// The 2020 tool's report for worker wakeup latencies `h`.
    pub(crate) fn old_report(h: &UsecHist) -> ToolResult {
        let mut text = String::from("Latency percentiles (usec)\n");
        let mut values = BTreeMap::new();
        for (i, (v, _)) in h.percentiles(&OLD_PLIST).into_iter().enumerate() {
            let star = if OLD_PLIST[i] == 99.0 { "*" } else { "" };
            let _ = writeln!(text, "\t{star}{:.1}th: {v}", OLD_PLIST[i]);
            values.insert(format!("{}_us", pkey(OLD_PLIST[i])), v as f64);
        }
        // The tool's minimum starts at 0 and is never raised.
        let _ = write!(text, "\tmin=0, max={}", h.max);
        values.insert("max_us".into(), h.max as f64);
        values.insert("samples".into(), h.samples as f64);
        ToolResult { text, values }
    }

    fn new_block(
        out: &mut ToolResult,
        title: &str,
        key: &str,
        runtime_s: u32,
        h: &UsecHist,
        plist: &[f64],
        star: f64,
    ) {
        let (text, values) = (&mut out.text, &mut out.values);
        let _ = writeln!(
            text,
            "{title} runtime {runtime_s} (s) ({} total samples)",
            h.samples
        );
        for (i, (v, n)) in h.percentiles(plist).into_iter().enumerate() {
            let mark = if plist[i] == star { "* " } else { "  " };
            let _ = writeln!(text, "\t{mark}{:2.1}th: {v:<10} ({n} samples)", plist[i]);
            values.insert(format!("{key}_{}", pkey(plist[i])), v as f64);
        }
        let min = if h.samples == 0 { 0 } else { h.min };
        let _ = writeln!(text, "\t  min={min}, max={}", h.max);
        values.insert(format!("{key}_samples"), h.samples as f64);
        values.insert(format!("{key}_max"), h.max as f64);
    }

    /// The new tool's report: wakeup and request latencies, RPS percentiles over the
    /// whole seconds of the run and the average rps.
    pub(crate) fn new_report(
        wake: &UsecHist,
        req: &UsecHist,
        done: &LatencyHist,
        runtime_s: u32,
        sim_time_ns: u64,
    ) -> ToolResult {
        let mut out = ToolResult::default();
        Self::new_block(
            &mut out,
            "Wakeup Latencies percentiles (usec)",
            "wakeup_us",
            runtime_s,
            wake,
            &NEW_LAT_PLIST,
            99.0,
        );
        Self::new_block(
            &mut out,
            "Request Latencies percentiles (usec)",
            "request_us",
            runtime_s,
            req,
            &NEW_LAT_PLIST,
            99.0,
        );
        // Completed requests per whole second of the run.
        let secs = (sim_time_ns / 1_000_000_000).max(1);
        let mut per_sec = vec![0u64; secs as usize];
        let mut total = 0u64;
        for v in done.hist().iter_recorded() {
            let t = done.hist().median_equivalent(v.value_iterated_to());
            total += v.count_at_value();
            if let Some(c) = per_sec.get_mut((t / 1_000_000_000) as usize) {
                *c += v.count_at_value();
            }
        }
        let mut rps = UsecHist::default();
        for &c in &per_sec {
            rps.add(c, 1);
        }
        Self::new_block(
            &mut out,
            "RPS percentiles (requests)",
            "rps",
            runtime_s,
            &rps,
            &NEW_RPS_PLIST,
            50.0,
        );
        let avg = total as f64 / (sim_time_ns as f64 / 1e9).max(1e-9);
        let _ = write!(out.text, "average rps: {avg:.2}");
        out.values.insert("average_rps".into(), avg);
        out
    }
}

impl Tool for SchbenchTool {
    /// Printed at the stop (the tool's runtime, or the scenario's duration).
    fn report(&self, input: &ToolInput<'_>) -> Option<ToolResult> {
        let wake = UsecHist::from_ns(input.hist(WAKEUP_METRIC)?);
        Some(match *self {
            SchbenchTool::Old => Self::old_report(&wake),
            SchbenchTool::New { runtime_s } => {
                let req = UsecHist::from_ns(input.hist(REQUEST_METRIC)?);
                let done = input.hist(COMPLETION_METRIC)?;
                Self::new_report(&wake, &req, done, runtime_s, input.sim_time_ns)
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plat_buckets_match_the_tool() {
        for us in 0..512 {
            assert_eq!(plat_val(plat_idx(us)), us);
        }
        // 13104 µs: msb 13, 32 µs wide buckets from 8192; the middle is printed.
        assert_eq!(plat_idx(13_104), (6 << 8) + (13_104 >> 5) % 256);
        assert_eq!(plat_val(plat_idx(13_104)), 13_104);
        assert_eq!(plat_val(plat_idx(13_090)), 13_104);
        assert_eq!(plat_val(plat_idx(13_080)), 13_072);
        // 512..1023: 2 µs buckets, middle = lower edge + 1.
        assert_eq!(plat_val(plat_idx(512)), 513);
        assert_eq!(plat_val(plat_idx(513)), 513);
        assert_eq!(plat_val(plat_idx(1023)), 1023);
        // Bucket values increase with the index.
        let mut last = 0;
        for idx in 0..(20 << 8) {
            let v = plat_val(idx);
            assert!(v >= last, "{idx}");
            last = v;
        }
    }

    #[test]
    fn percentiles_first_bucket_reaching_p() {
        let mut h = UsecHist::default();
        for us in 1..=100 {
            h.add(us, 1);
        }
        h.add(0, 5); // dropped
        assert_eq!(h.samples, 100);
        let p = h.percentiles(&OLD_PLIST);
        let vals: Vec<u64> = p.iter().map(|x| x.0).collect();
        assert_eq!(vals, vec![50, 75, 90, 95, 99, 100, 100]);
        let counts: Vec<u64> = p.iter().map(|x| x.1).collect();
        assert_eq!(counts, vec![50, 25, 15, 5, 4, 1, 0]);
        let r = SchbenchTool::old_report(&h);
        assert_eq!(
            r.text,
            "Latency percentiles (usec)\n\t50.0th: 50\n\t75.0th: 75\n\t90.0th: 90\n\t95.0th: 95\n\t*99.0th: 99\n\t99.5th: 100\n\t99.9th: 100\n\tmin=0, max=100"
        );
        assert_eq!(r.values["p99_us"], 99.0);
        assert_eq!(r.values["p99_5_us"], 100.0);
    }

    #[test]
    fn ns_to_usec_rounds_and_drops_zero() {
        let mut l = LatencyHist::default();
        l.record(400); // 0 µs: dropped
        l.record(1_600); // 2 µs
        l.record(30_000_000); // 30 ms
        let u = UsecHist::from_ns(&l);
        assert_eq!(u.samples, 2);
        assert_eq!(u.min, 2);
        assert!((29_990..=30_010).contains(&u.max), "{}", u.max);
    }

    #[test]
    fn wiring() {
        let o = OldOpts {
            message_threads: 3,
            threads: 4,
            ..OldOpts::default()
        };
        let s = old_spec(&o);
        s.validate().unwrap();
        assert_eq!(s.programs.len(), 7);
        assert_eq!(s.futexes, 15);
        assert_eq!(s.words, 12);
        assert_eq!(s.lists, 3);
        // Worker j of message thread 2 pushes item 8 + j and owns futex 3 + 8 + j.
        let w = &s.programs[6].ops;
        let push = w.iter().find_map(|o| match o {
            Op::Push { l, item } => Some((l.resolve(0), *item)),
            _ => None,
        });
        let (l, item) = push.unwrap();
        assert_eq!(l, 2);
        assert_eq!(item.eval(1, &[0; 8], 0), 9);
        let own = w.iter().find_map(|o| match o {
            Op::FutexAwait { f } => Some(f.resolve(1)),
            _ => None,
        });
        assert_eq!(own, Some(3 + 9));
        // The message thread posts the futex of the listed item: m + k.
        let posted = s.programs[5].ops.iter().find_map(|o| match o {
            Op::FutexPost { f } => Some(f.resolve_at(0, &[0, 0, 0, 9, 0, 0, 0, 0], 0)),
            _ => None,
        });
        assert_eq!(posted, Some(12));
        let n = NewOpts::defaults(8);
        assert_eq!(n.matrix_size(), 104);
        let s = new_spec(&n, 8);
        s.validate().unwrap();
        assert_eq!(s.spinlocks, 8);
    }
}
