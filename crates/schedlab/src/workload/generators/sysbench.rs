//! `sysbench threads` and `sysbench cpu` (sysbench 1.0, `spec/workloads.md` §3.6,
//! §3.7).
//!
//! **threads.** The main thread creates `threads` worker threads and meets them at
//! a start barrier; the run's timer starts there. `thread_locks` mutexes are shared
//! by all workers. Before each event a worker checks the time limit (`time`) and
//! claims the event against the global event limit (`events`); an event takes
//! `lock_idx = (global counter++) mod thread_locks` and repeats `thread_yields`
//! times {`lock(mutex[lock_idx])`; `sched_yield()`; `unlock`}: the lock is held across
//! the yield, so workers whose counters collide modulo the lock count convoy behind
//! the holder. The main thread joins the workers; `total time` runs from the barrier
//! to the last join.
//!
//! **cpu.** Each event counts the primes up to `cpu_max_prime` by trial division up
//! to the square root: pure computation, no communication. `groups` runs several
//! sysbench processes side by side (seed 004: one pinned hog per big CPU with a few
//! events, plus unpinned instances with more), each with its own threads, limits,
//! affinity and `total time`.
//!
//! **Model.** Workers are threads of the group's process, created by its main task
//! (fork balance applies) and pinned with the process's `cpus` (`taskset`). The
//! limits are a [`LoopCount::While`] loop checked before every event: the deadline
//! is `time` after the worker's own return from the start barrier (sysbench 1.0
//! reads one global timer started when the last party arrived; the difference is a
//! worker's wakeup latency), the event limit a fetch-and-add on a shared word. Each
//! event's latency is recorded per thread, which gives the per-event latency
//! statistics and the per-thread fairness figures (events and execution time =
//! sum of event latencies) sysbench prints. The lock index is a fetch-and-add on a
//! shared counter ([`Op::FetchAdd`]) indexing the mutex array ([`IdxExpr::Reg`]).
//!
//! **Work of a prime event.** The trial-division count is computed exactly for the
//! given `cpu_max_prime` (117 527 modulo steps and 9 998 square roots for 10 000);
//! each step is charged [`CYCLES_PER_TRIAL`] and each candidate
//! [`CYCLES_PER_CANDIDATE`] cycles of the machine's biggest CPU at its highest
//! frequency (the reference capacity): 0.91 M cycles, 0.83 ms on Juno's A57 at
//! 1.1 GHz and ≈ 1.9 ms on its A53s, close to seed 004's 1.75 s per 1 000 events on
//! a little CPU (estimate, to be fitted).
//!
//! Simplifications: sysbench's latency histogram (log-scaled buckets) is replaced by
//! the simulator's HDR histogram for the 95th percentile; the progress reports and
//! the option banner are not printed; the time limit of 0.4.x (whole seconds) is not
//! modelled.

use super::{Generated, Tool, ToolInput, ToolResult};
use crate::config::{TableReader, Val};
use crate::error::InputError;
use crate::machine::{CpuMask, Machine};
use crate::workload::dist::Dist;
use crate::workload::program::{IdxExpr, LoopCount, ObjRef, Op, Program, TaskSpec, WorkloadSpec};
use std::collections::BTreeMap;
use std::fmt::Write;
use std::sync::Arc;

/// The work class of `cpu` workers ([`crate::machine::CoreKind::work_per_clock`]):
/// the prime test's trial divisions are bound by the integer divider, whose speed
/// per clock differs between micro-architectures far less than their DMIPS do.
pub const CPU_WORK_CLASS: &str = "sysbench-cpu";

/// Reference cycles per trial division step of the prime test (estimate).
pub const CYCLES_PER_TRIAL: u64 = 6;
/// Reference cycles per candidate number (square root, loop; estimate).
pub const CYCLES_PER_CANDIDATE: u64 = 20;

/// Total time of group `g` (ns): `total_time.g{g}`.
pub(crate) fn total_metric(g: usize) -> String {
    format!("total_time.g{g}")
}

/// Event latencies of thread `t` of group `g` (ns): `event.g{g}.t{t}`.
pub(crate) fn event_metric(g: usize, t: usize) -> String {
    format!("event.g{g}.t{t}")
}

/// What each event does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Test {
    Threads { yields: u64, locks: u32 },
    Cpu { work_ns: u64 },
}

/// One sysbench process.
#[derive(Clone, Debug, PartialEq)]
pub struct Group {
    pub threads: u32,
    /// Global event limit (0 = none).
    pub events: u64,
    /// Time limit in ns (0 = none).
    pub time_ns: u64,
    pub cpus: Option<CpuMask>,
    pub test: Test,
}

/// Trial-division steps and candidates of sysbench's prime test up to `max`.
pub fn prime_steps(max: u64) -> (u64, u64) {
    let mut steps = 0;
    for c in 3..=max {
        let t = (c as f64).sqrt() as u64;
        let mut l = 2;
        while l <= t {
            steps += 1;
            if c % l == 0 {
                break;
            }
            l += 1;
        }
    }
    (steps, max.saturating_sub(2))
}

/// Reference work of one `cpu` event (ns) for `max_prime` at `khz`.
pub fn prime_work_ns(max_prime: u64, khz: u64) -> u64 {
    let (steps, cands) = prime_steps(max_prime);
    let cycles = steps * CYCLES_PER_TRIAL + cands * CYCLES_PER_CANDIDATE;
    (cycles * 1_000_000).div_ceil(khz.max(1))
}

/// Registers.
const R_T0: u8 = 0;
const R_EV: u8 = 1;
const R_LOCK: u8 = 2;

/// Build the workload for `groups`. Per group `g`: a main program and one program
/// per thread; barrier `g` (threads + 1 parties); shared words: `2g` = event
/// tickets, `2g + 1` = lock counter; mutexes `K` per threads-test group.
pub fn spec(groups: &[Group]) -> WorkloadSpec {
    let mut spec = WorkloadSpec {
        words: 2 * groups.len() as u32,
        ..WorkloadSpec::default()
    };
    for (g, gr) in groups.iter().enumerate() {
        spec.barriers.push(gr.threads + 1);
        let total = spec.metric(&total_metric(g), "ns");
        let main_prog = spec.programs.len();
        let mut main = Vec::new();
        for t in 0..gr.threads as usize {
            main.push(Op::Fork {
                prog: main_prog + 1 + t,
                thread: true,
            });
        }
        let bar = ObjRef {
            base: g as u32,
            count: 1,
            idx: IdxExpr::Const(0),
        };
        main.push(Op::Barrier(bar));
        main.push(Op::Mark { slot: R_T0 });
        for _ in 0..gr.threads {
            main.push(Op::WaitChild);
        }
        main.push(Op::Record {
            metric: total,
            slot: R_T0,
        });
        main.push(Op::Exit);
        spec.programs.push(Program {
            name: "sysbench".into(),
            work_class: None,
            ops: main,
        });
        let mutex_base = spec.mutexes;
        if let Test::Threads { locks, .. } = gr.test {
            spec.mutexes += locks;
        }
        for t in 0..gr.threads as usize {
            let ev = spec.metric(&event_metric(g, t), "ns");
            let mut w = vec![
                Op::Barrier(bar),
                Op::Mark { slot: R_T0 },
                Op::Loop {
                    count: LoopCount::While {
                        deadline: (gr.time_ns > 0).then_some((R_T0, gr.time_ns)),
                        ticket: (gr.events > 0).then_some((2 * g as u32, gr.events)),
                        unset: None,
                    },
                    end: 0,
                },
                Op::Mark { slot: R_EV },
            ];
            match gr.test {
                Test::Threads { yields, locks } => {
                    let m = ObjRef {
                        base: mutex_base,
                        count: locks,
                        idx: IdxExpr::Reg(R_LOCK),
                    };
                    w.push(Op::FetchAdd {
                        w: ObjRef {
                            base: 2 * g as u32 + 1,
                            count: 1,
                            idx: IdxExpr::Const(0),
                        },
                        slot: R_LOCK,
                        add: 1,
                    });
                    let l = w.len();
                    w.extend([
                        Op::Loop {
                            count: LoopCount::Times(Dist::Const(yields)),
                            end: l + 4,
                        },
                        Op::Lock(m),
                        Op::Yield,
                        Op::Unlock(m),
                        Op::EndLoop { start: l },
                    ]);
                }
                Test::Cpu { work_ns } => w.push(Op::Compute(Dist::Const(work_ns))),
            }
            w.push(Op::Record {
                metric: ev,
                slot: R_EV,
            });
            let end = w.len();
            w.push(Op::EndLoop { start: 2 });
            w.push(Op::Exit);
            if let Op::Loop { count, .. } = w[2] {
                w[2] = Op::Loop { count, end };
            }
            spec.programs.push(Program {
                name: "sysbench-worker".into(),
                work_class: matches!(gr.test, Test::Cpu { .. }).then(|| CPU_WORK_CLASS.into()),
                ops: w,
            });
        }
        let name = if groups.len() == 1 {
            "sysbench".into()
        } else {
            format!("sysbench.g{g}")
        };
        spec.tasks.push(TaskSpec {
            cpus: gr.cpus.map(std::sync::Arc::new),
            ..TaskSpec::new(name, main_prog, 0)
        });
    }
    spec
}

/// An option read under a name and its deprecated alias.
fn aliased<'a>(
    w: &TableReader<'a>,
    key: &'static str,
    alias: &'static str,
) -> Result<Option<(i64, &'static str)>, InputError> {
    let a = w.int(key)?;
    let b = w.int(alias)?;
    match (a, b) {
        (Some(_), Some(_)) => Err(w.err(
            alias,
            format!("give `{key}` or its old name `{alias}`, not both"),
        )),
        (Some(v), None) => Ok(Some((v, key))),
        (None, Some(v)) => Ok(Some((v, alias))),
        (None, None) => Ok(None),
    }
}

/// `threads`/`num_threads` (default `def`).
fn threads(w: &TableReader<'_>, def: u32) -> Result<u32, InputError> {
    match aliased(w, "threads", "num_threads")? {
        None => Ok(def),
        Some((v, _)) if (1..=1 << 16).contains(&v) => Ok(v as u32),
        Some((v, k)) => Err(w.err(k, format!("`{k}` must be in 1..=65536, found {v}"))),
    }
}

/// `events`/`max_requests`: 0 or negative = unlimited (sysbench 1.0 only applies
/// limits > 0).
fn events(w: &TableReader<'_>, def: u64) -> Result<u64, InputError> {
    Ok(match aliased(w, "events", "max_requests")? {
        None => def,
        Some((v, _)) => v.max(0) as u64,
    })
}

/// `time`/`max_time` in seconds (0 = unlimited), as ns.
fn time_ns(w: &TableReader<'_>, def: u64) -> Result<u64, InputError> {
    let v = match (w.get("time"), w.get("max_time")) {
        (Some(_), Some(_)) => {
            return Err(w.err(
                "max_time",
                "give `time` or its old name `max_time`, not both",
            ))
        }
        (Some(n), None) => Some(("time", n)),
        (None, Some(n)) => Some(("max_time", n)),
        (None, None) => None,
    };
    match v {
        None => Ok(def),
        Some((_, n)) => match super::secs_to_ns(&n.val) {
            Some(ns) => Ok(ns),
            None => {
                let k = if w.get("time").is_some() {
                    "time"
                } else {
                    "max_time"
                };
                Err(w.err(
                    k,
                    format!(
                        "`{k}` must be a non-negative number of seconds (at most {})",
                        crate::engine::MAX_TIME_NS / crate::engine::NSEC_PER_SEC
                    ),
                ))
            }
        },
    }
}

/// `cpus`: an array of CPU numbers or a cpulist string, inside the machine.
fn cpus(w: &TableReader<'_>, m: &Machine) -> Result<Option<CpuMask>, InputError> {
    let Some(n) = w.get("cpus") else {
        return Ok(None);
    };
    let mask = match &n.val {
        Val::Str(s) => {
            CpuMask::parse_cpulist(s).map_err(|e| w.err("cpus", format!("`cpus`: {e}")))?
        }
        Val::Array(a) => {
            let mut mk = CpuMask::new();
            for x in a {
                match x.val {
                    Val::Int(c) if c >= 0 && (c as usize) < m.nr_cpus() => mk.set(c as usize),
                    _ => {
                        return Err(w.err(
                            "cpus",
                            format!("`cpus` entries must be CPU numbers below {}", m.nr_cpus()),
                        ))
                    }
                }
            }
            mk
        }
        _ => {
            return Err(w.err(
                "cpus",
                "`cpus` must be an array of CPU numbers or a cpulist",
            ))
        }
    };
    if mask.is_empty() || !mask.is_subset(m.all_cpus()) {
        return Err(w.err(
            "cpus",
            format!("`cpus` must name CPUs of the machine (0..{})", m.nr_cpus()),
        ));
    }
    Ok(Some(mask))
}

/// Parse `[workload]` for kind `sysbench-threads` or `sysbench-cpu`.
pub fn parse(kind: &str, w: &TableReader<'_>, m: &Machine) -> Result<Generated, InputError> {
    let threads_test = kind == "sysbench-threads";
    let base_threads = threads(w, 1)?;
    let base_events = events(w, 0)?;
    let base_time = time_ns(w, 10_000_000_000)?;
    let base_cpus = cpus(w, m)?;
    let test = if threads_test {
        Test::Threads {
            yields: w.uint("thread_yields", 0, 1 << 32)?.unwrap_or(1000),
            locks: w.uint("thread_locks", 1, 1 << 20)?.unwrap_or(8) as u32,
        }
    } else {
        let p = w.uint("cpu_max_prime", 3, 10_000_000)?.unwrap_or(10_000);
        Test::Cpu {
            work_ns: prime_work_ns(p, m.ref_khz()),
        }
    };
    let mut groups = Vec::new();
    let check = |r: &TableReader<'_>, g: &Group| {
        if g.events == 0 && g.time_ns == 0 {
            return Err(r.err(
                "time",
                "sysbench needs a limit: `time` (or `max_time`) or `events` (or `max_requests`) above 0",
            ));
        }
        Ok(())
    };
    match w.array("groups")? {
        Some(items) if !threads_test => {
            if items.is_empty() {
                return Err(w.err("groups", "`groups` must list at least one group"));
            }
            for (i, item) in items.iter().enumerate() {
                let r = TableReader::new(w.doc, item, &format!("workload.groups[{i}]"))?;
                let g = Group {
                    threads: threads(&r, base_threads)?,
                    events: events(&r, base_events)?,
                    time_ns: time_ns(&r, base_time)?,
                    cpus: cpus(&r, m)?.or(base_cpus),
                    test,
                };
                check(&r, &g)?;
                r.finish()?;
                groups.push(g);
            }
        }
        Some(_) => {
            return Err(w.err("groups", "`groups` is an option of `sysbench-cpu` only"));
        }
        None => {
            let g = Group {
                threads: base_threads,
                events: base_events,
                time_ns: base_time,
                cpus: base_cpus,
                test,
            };
            check(w, &g)?;
            groups.push(g);
        }
    }
    let total_threads: u64 = groups.iter().map(|g| u64::from(g.threads)).sum();
    if total_threads > 1 << 16 {
        return Err(w.err("threads", "too many threads in total (at most 65536)"));
    }
    let nthreads = groups.iter().map(|g| g.threads as usize).collect();
    Ok(Generated {
        spec: spec(&groups),
        tool: Arc::new(SysbenchTool {
            cpu: !threads_test,
            threads: nthreads,
        }),
    })
}

/// How sysbench 1.0 prints (one block per group).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SysbenchTool {
    pub cpu: bool,
    /// Threads of each group.
    pub threads: Vec<usize>,
}

fn mean_std(v: &[f64]) -> (f64, f64) {
    if v.is_empty() {
        return (0.0, 0.0);
    }
    let n = v.len() as f64;
    let m = v.iter().sum::<f64>() / n;
    let var = v.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / n;
    (m, var.sqrt())
}

impl Tool for SysbenchTool {
    /// Printed when every group's main has joined its threads.
    fn report(&self, input: &ToolInput<'_>) -> Option<ToolResult> {
        let mut text = String::new();
        let mut values = BTreeMap::new();
        let multi = self.threads.len() > 1;
        let mut longest: f64 = 0.0;
        for (g, &nt) in self.threads.iter().enumerate() {
            let total = input.hist(&total_metric(g)).filter(|h| h.count() == 1)?;
            let secs = total.mean() / 1e9;
            longest = longest.max(secs);
            let mut lat = crate::stats::LatencyHist::default();
            let (mut evs, mut exec) = (Vec::new(), Vec::new());
            for t in 0..nt {
                let h = input.hist(&event_metric(g, t))?;
                lat.add(h);
                evs.push(h.count() as f64);
                exec.push(h.sum as f64 / 1e9);
            }
            let n = lat.count();
            let ms = |ns: f64| ns / 1e6;
            let (min, max) = if n == 0 {
                (0.0, 0.0)
            } else {
                (ms(lat.hist().min() as f64), ms(lat.hist().max() as f64))
            };
            let (ev_m, ev_s) = mean_std(&evs);
            let (ex_m, ex_s) = mean_std(&exec);
            let prefix = if multi {
                format!("g{g}.")
            } else {
                String::new()
            };
            if multi {
                let _ = writeln!(text, "[group {g}: {nt} threads]");
            }
            if self.cpu {
                let _ = writeln!(
                    text,
                    "CPU speed:\n    events per second: {:>8.2}\n",
                    if secs > 0.0 { n as f64 / secs } else { 0.0 }
                );
            }
            let _ = writeln!(text, "General statistics:");
            let _ = writeln!(text, "    total time:                          {secs:.4}s");
            let _ = writeln!(text, "    total number of events:              {n}\n");
            let _ = writeln!(text, "Latency (ms):");
            let _ = writeln!(text, "         min:{min:>40.2}");
            let _ = writeln!(text, "         avg:{:>40.2}", ms(lat.mean()));
            let _ = writeln!(text, "         max:{max:>40.2}");
            let _ = writeln!(
                text,
                "         95th percentile:{:>28.2}",
                ms(lat.percentile(95.0) as f64)
            );
            let _ = writeln!(text, "         sum:{:>40.2}\n", ms(lat.sum as f64));
            let _ = writeln!(text, "Threads fairness:");
            let _ = writeln!(
                text,
                "    events (avg/stddev):           {ev_m:.4}/{ev_s:.2}"
            );
            let _ = writeln!(
                text,
                "    execution time (avg/stddev):   {ex_m:.4}/{ex_s:.2}"
            );
            values.insert(format!("{prefix}total_time_s"), secs);
            values.insert(format!("{prefix}events"), n as f64);
            values.insert(
                format!("{prefix}events_per_s"),
                if secs > 0.0 { n as f64 / secs } else { 0.0 },
            );
            values.insert(format!("{prefix}latency_avg_ms"), ms(lat.mean()));
            values.insert(
                format!("{prefix}latency_p95_ms"),
                ms(lat.percentile(95.0) as f64),
            );
            values.insert(format!("{prefix}events_per_thread_stddev"), ev_s);
        }
        if multi {
            values.insert("max_total_time_s".into(), longest);
        }
        Some(ToolResult {
            text: text.trim_end().to_string(),
            values,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prime_steps_by_hand() {
        // 3: t=1, no step. 4: l=2 divides (1). 5: l=2 (1). 6: 1. 7: 1. 8: 1.
        // 9: t=3, l=2, l=3 divides (2). 10: 1. → 1+1+1+1+1+2+1 = 8; 8 candidates.
        assert_eq!(prime_steps(10), (8, 8));
        let (s, c) = prime_steps(10_000);
        assert_eq!(c, 9_998);
        assert!((100_000..140_000).contains(&s), "{s}");
    }

    #[test]
    fn threads_wiring() {
        let g = Group {
            threads: 3,
            events: 0,
            time_ns: 1_000_000,
            cpus: None,
            test: Test::Threads {
                yields: 5,
                locks: 2,
            },
        };
        let s = spec(&[g]);
        s.validate().unwrap();
        assert_eq!(s.programs.len(), 4);
        assert_eq!(s.mutexes, 2);
        assert_eq!(s.barriers, vec![4]);
        assert_eq!(s.tasks.len(), 1);
        // Lock index = counter value mod 2.
        let lock = s.programs[1].ops.iter().find_map(|o| match o {
            Op::Lock(m) => Some(*m),
            _ => None,
        });
        let lock = lock.unwrap();
        assert_eq!(lock.resolve_at(0, &[0, 0, 5, 0, 0, 0, 0, 0], 0), 1);
        assert_eq!(lock.resolve_at(0, &[0, 0, 6, 0, 0, 0, 0, 0], 0), 0);
    }
}
