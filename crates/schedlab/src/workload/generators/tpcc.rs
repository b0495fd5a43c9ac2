//! `tpcc-proxy`: a closed-loop OLTP **proxy** for seed 003's Oracle TPC-C runs
//! (`spec/workloads.md` §3.11). Not TPC-C, not Oracle: every parameter is an estimate.
//!
//! **What it stands for.** Seed 003 reports Oracle TPC-C throughput for 20…220
//! "users" on a 2×22-core Xeon, normalised to a baseline; no source or profile is
//! available. The scheduler-relevant structure of such a run is: one client
//! connection per user driving a dedicated server ("shadow") process; each
//! transaction is a request/response exchange, some CPU work, short latch (spin-lock
//! then sleep) sections, data-block reads that sleep on I/O, and a commit that posts
//! the log writer (LGWR) and sleeps until the redo is on disk. LGWR writes whatever
//! redo has accumulated in one I/O and then wakes *every* committed user (group
//! commit: one-to-many wakeups), so the run is dominated by many short sleep/wake
//! cycles per transaction.
//!
//! **Model.** Per user `u`: a driver thread (threads of one client process) and a
//! shadow process, joined by two pipes `req[u]` and `resp[u]` (Oracle's local
//! "bequeath" connections are pipes; sync wakeups).
//!
//! ```text
//! driver(u):  loop: [sleep(exp(think_us))]; t0 = now(); write(req[u], 256)
//!                   read(resp[u], 1024); record(response_time, now() − t0); count(txns)
//! shadow(u):  loop: read(req[u], 256); compute(U(cpu_min_us, cpu_max_us))
//!                   lock(latch[u mod latches]); compute(latch_us); unlock
//!                   repeat U(0, 2·reads): sleep(U(read_min_us, read_max_us))
//!                   lock(log); post = 1; futex_wake(post); cond_wait(done, log); unlock(log)
//!                   write(resp[u], 1024)
//! lgwr:       loop: futex_wait(post, 0); post = 0; sleep(U(log_min_us, log_max_us))
//!                   lock(log); cond_broadcast(done); unlock(log); count(log_writes)
//! ```
//!
//! The `post` futex word remembers a post made while LGWR is busy, so LGWR then
//! writes again; a shadow sets it and registers on `done` under the `log` mutex,
//! which LGWR also holds to broadcast, so no commit can miss its wakeup.
//!
//! Simplifications (beyond every number being a guess): a commit posted while LGWR's
//! write is in flight is released by that write rather than the next one (there is
//! no per-batch sequence number), which shortens such commits by up to one log
//! write; latches are plain sleeping mutexes chosen by user, not by the data touched;
//! reads are sleeps (no I/O completion interrupt on another CPU); the driver has no
//! keying time; DBWR and the other background processes are absent.
//!
//! **Output.** Labelled as a proxy: users, elapsed time, transactions, log writes
//! and transactions per minute (`tpm` = transactions · 60 / elapsed seconds), the
//! mean response time and mean group-commit batch (transactions per log write).

use super::secs_opt;
use super::{pos, Generated, Tool, ToolInput, ToolResult};
use crate::config::TableReader;
use crate::error::InputError;
use crate::workload::dist::Dist;
use crate::workload::ipc::ChanKind;
use crate::workload::program::{
    ChanDecl, IdxExpr, LoopCount, ObjRef, Op, Program, TaskSpec, WorkloadSpec,
};
use std::collections::BTreeMap;
use std::sync::Arc;

/// Options of the proxy (all times in µs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TpccOpts {
    pub users: u32,
    pub think_us: u64,
    pub cpu_min_us: u64,
    pub cpu_max_us: u64,
    pub latches: u32,
    pub latch_us: u64,
    pub reads: u64,
    pub read_min_us: u64,
    pub read_max_us: u64,
    pub log_min_us: u64,
    pub log_max_us: u64,
    pub duration_ns: u64,
}

impl Default for TpccOpts {
    /// Estimates (spec §3.11): CPU U(200 µs, 2 ms), reads U(0.1, 1 ms), log write
    /// U(100, 500 µs); the rest invented.
    fn default() -> Self {
        TpccOpts {
            users: 20,
            think_us: 1000,
            cpu_min_us: 200,
            cpu_max_us: 2000,
            latches: 16,
            latch_us: 5,
            reads: 1,
            read_min_us: 100,
            read_max_us: 1000,
            log_min_us: 100,
            log_max_us: 500,
            duration_ns: 60_000_000_000,
        }
    }
}

/// Metric names.
pub const TXNS: &str = "txns";
pub const RESPONSE: &str = "response_time";
pub const LOG_WRITES: &str = "log_writes";

const REQ_BYTES: u32 = 256;
const RESP_BYTES: u32 = 1024;

fn c(base: u32, count: u32, k: u32) -> ObjRef {
    ObjRef {
        base,
        count,
        idx: IdxExpr::Const(k),
    }
}

fn inst(base: u32, count: u32) -> ObjRef {
    ObjRef {
        base,
        count,
        idx: IdxExpr::Instance { div: 1, add: 0 },
    }
}

fn us(lo: u64, hi: u64) -> Dist {
    if lo == hi {
        Dist::Const(lo * 1000)
    } else {
        Dist::Uniform {
            lo: lo * 1000,
            hi: hi * 1000,
        }
    }
}

/// Close the `Loop` at `start` (its end is the next op pushed).
fn close(ops: &mut Vec<Op>, start: usize) {
    let end = ops.len();
    if let Op::Loop { count, .. } = ops[start] {
        ops[start] = Op::Loop { count, end };
    }
    ops.push(Op::EndLoop { start });
}

/// The proxy workload. Programs: 0 = driver, 1 = shadow, 2 = lgwr. Channels:
/// `req[0..U]` (0..U), `resp[0..U]` (U..2U). Mutexes: 0 = log, 1.. = latches.
/// Futex 0 = post; condvar 0 = done. Tasks: U drivers (one process), U shadows,
/// then LGWR.
pub fn spec(o: &TpccOpts) -> WorkloadSpec {
    let u = o.users;
    let mut s = WorkloadSpec {
        channels: vec![
            ChanDecl {
                name: "req".into(),
                kind: ChanKind::Pipe,
                count: u,
            },
            ChanDecl {
                name: "resp".into(),
                kind: ChanKind::Pipe,
                count: u,
            },
        ],
        futexes: 1,
        mutexes: 1 + o.latches,
        condvars: 1,
        duration_ns: Some(o.duration_ns),
        ..WorkloadSpec::default()
    };
    let txns = s.metric(TXNS, "count");
    let resp_t = s.metric(RESPONSE, "ns");
    let logw = s.metric(LOG_WRITES, "count");
    let (req, resp) = (inst(0, u), inst(u, u));
    let log = c(0, 1, 0);
    let post = c(0, 1, 0);
    let done = c(0, 1, 0);
    let forever = || Op::Loop {
        count: LoopCount::Forever,
        end: 0,
    };

    // Driver.
    let mut d = vec![forever()];
    if o.think_us > 0 {
        d.push(Op::Sleep(Dist::Exp {
            mean: o.think_us * 1000,
        }));
    }
    d.extend([
        Op::Mark { slot: 0 },
        Op::Write {
            ch: req,
            bytes: REQ_BYTES,
        },
        Op::Read {
            ch: resp,
            bytes: RESP_BYTES,
        },
        Op::Record {
            metric: resp_t,
            slot: 0,
        },
        Op::Count { metric: txns },
    ]);
    close(&mut d, 0);

    // Shadow.
    let mut sh = vec![
        forever(),
        Op::Read {
            ch: req,
            bytes: REQ_BYTES,
        },
        Op::Compute(us(o.cpu_min_us, o.cpu_max_us)),
    ];
    if o.latches > 0 {
        let latch = inst(1, o.latches);
        sh.push(Op::Lock(latch));
        if o.latch_us > 0 {
            sh.push(Op::Compute(Dist::Const(o.latch_us * 1000)));
        }
        sh.push(Op::Unlock(latch));
    }
    if o.reads > 0 && o.read_max_us > 0 {
        let l = sh.len();
        sh.push(Op::Loop {
            count: LoopCount::Times(Dist::Uniform {
                lo: 0,
                hi: 2 * o.reads,
            }),
            end: 0,
        });
        sh.push(Op::Sleep(us(o.read_min_us, o.read_max_us)));
        close(&mut sh, l);
    }
    sh.extend([
        Op::Lock(log),
        Op::FutexSet { f: post, val: 1 },
        Op::FutexWake { f: post, n: 1 },
        Op::CondWait { c: done, m: log },
        Op::Unlock(log),
        Op::Write {
            ch: resp,
            bytes: RESP_BYTES,
        },
    ]);
    close(&mut sh, 0);

    // Log writer.
    let mut lg = vec![
        forever(),
        Op::FutexWait {
            f: post,
            expected: 0,
        },
        Op::FutexSet { f: post, val: 0 },
        Op::Sleep(us(o.log_min_us, o.log_max_us)),
        Op::Lock(log),
        Op::CondBroadcast(done),
        Op::Unlock(log),
        Op::Count { metric: logw },
    ];
    close(&mut lg, 0);

    s.programs = vec![
        Program::new("driver", d),
        Program::new("shadow", sh),
        Program::new("lgwr", lg),
    ];
    let task = |name: String, prog: usize, instance: u32, process: Option<u32>| TaskSpec {
        process,
        ..TaskSpec::new(name, prog, instance)
    };
    for i in 0..u {
        s.tasks.push(task(format!("driver-{i}"), 0, i, Some(0)));
    }
    for i in 0..u {
        s.tasks.push(task(format!("shadow-{i}"), 1, i, None));
    }
    s.tasks.push(task("lgwr".into(), 2, 0, None));
    s
}

/// Parse `[workload]` of kind `tpcc-proxy`.
pub fn parse(w: &TableReader<'_>) -> Result<Generated, InputError> {
    let d = TpccOpts::default();
    let t = |key: &'static str, def: u64| -> Result<u64, InputError> {
        Ok(w.uint(key, 0, 10_000_000)?.unwrap_or(def))
    };
    let o = TpccOpts {
        users: pos(w, "users", d.users)?,
        think_us: t("think_us", d.think_us)?,
        cpu_min_us: t("cpu_min_us", d.cpu_min_us)?,
        cpu_max_us: t("cpu_max_us", d.cpu_max_us)?,
        latches: w.uint("latches", 0, 4096)?.map_or(d.latches, |v| v as u32),
        latch_us: t("latch_us", d.latch_us)?,
        reads: w.uint("reads", 0, 1000)?.unwrap_or(d.reads),
        read_min_us: t("read_min_us", d.read_min_us)?,
        read_max_us: t("read_max_us", d.read_max_us)?,
        log_min_us: t("log_min_us", d.log_min_us)?,
        log_max_us: t("log_max_us", d.log_max_us)?,
        duration_ns: secs_opt(w, "duration", d.duration_ns)?,
    };
    if o.users > 100_000 {
        return Err(w.err("users", "`users` must be at most 100000"));
    }
    for (lo, hi, key) in [
        (o.cpu_min_us, o.cpu_max_us, "cpu_max_us"),
        (o.read_min_us, o.read_max_us, "read_max_us"),
        (o.log_min_us, o.log_max_us, "log_max_us"),
    ] {
        if hi < lo {
            return Err(w.err(key, format!("`{key}` = {hi} is below its minimum ({lo})")));
        }
    }
    if o.log_max_us == 0 {
        return Err(w.err(
            "log_max_us",
            "`log_max_us` must be positive (a log write takes time)",
        ));
    }
    Ok(Generated {
        spec: spec(&o),
        tool: Arc::new(TpccTool { users: o.users }),
    })
}

/// How the proxy reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TpccTool {
    pub users: u32,
}

impl TpccTool {
    /// The printed result for `txns` transactions and `log_writes` in `ns`, with
    /// mean response time `resp_ns`.
    pub fn result(&self, txns: u64, log_writes: u64, resp_ns: f64, ns: u64) -> ToolResult {
        let secs = ns as f64 / 1e9;
        let tpm = txns as f64 * 60.0 / secs;
        let batch = if log_writes == 0 {
            0.0
        } else {
            txns as f64 / log_writes as f64
        };
        let mut values = BTreeMap::new();
        values.insert("tpm".to_string(), tpm);
        values.insert("transactions".to_string(), txns as f64);
        values.insert("log_writes".to_string(), log_writes as f64);
        values.insert("response_time_us".to_string(), resp_ns / 1e3);
        values.insert("txns_per_log_write".to_string(), batch);
        values.insert("time_s".to_string(), secs);
        let text = format!(
            "TPC-C proxy (schedlab estimate, not a TPC-C result; every parameter invented)\n\
             users {}  elapsed {secs:.3} s  transactions {txns}  log writes {log_writes}\n\
             mean response {:.1} us  mean commit batch {batch:.2}\n\
             tpm (proxy): {tpm:.1}",
            self.users,
            resp_ns / 1e3
        );
        ToolResult { text, values }
    }
}

impl Tool for TpccTool {
    /// Printed at the end of the run (the time limit).
    fn report(&self, input: &ToolInput<'_>) -> Option<ToolResult> {
        if input.sim_time_ns == 0 {
            return None;
        }
        let txns = input.hist(TXNS)?.count();
        let logw = input.hist(LOG_WRITES)?.count();
        let resp = input.hist(RESPONSE)?;
        let mean = if resp.count() == 0 {
            0.0
        } else {
            resp.sum as f64 / resp.count() as f64
        };
        Some(self.result(txns, logw, mean, input.sim_time_ns))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wiring() {
        let o = TpccOpts {
            users: 3,
            latches: 2,
            ..TpccOpts::default()
        };
        let s = spec(&o);
        s.validate().unwrap();
        // 3 drivers + 3 shadows + LGWR.
        assert_eq!(s.tasks.len(), 7);
        assert_eq!(s.nr_channels(), 6);
        assert_eq!(s.mutexes, 3);
        assert_eq!(s.duration_ns, Some(60_000_000_000));
        // Driver i writes req[i] (i) and reads resp[i] (3 + i); shadow i the reverse.
        let chans = |p: usize, i: u32| -> Vec<(bool, usize)> {
            s.programs[p]
                .ops
                .iter()
                .filter_map(|o| match o {
                    Op::Read { ch, .. } => Some((false, ch.resolve(i))),
                    Op::Write { ch, .. } => Some((true, ch.resolve(i))),
                    _ => None,
                })
                .collect()
        };
        for i in 0..3u32 {
            let i_ = i as usize;
            assert_eq!(chans(0, i), vec![(true, i_), (false, 3 + i_)]);
            assert_eq!(chans(1, i), vec![(false, i_), (true, 3 + i_)]);
        }
        // Shadow i takes latch mutex 1 + i mod 2.
        let latch = s.programs[1]
            .ops
            .iter()
            .find_map(|o| match o {
                Op::Lock(m) if m.base == 1 => Some(*m),
                _ => None,
            })
            .unwrap();
        assert_eq!(
            (0..3).map(|i| latch.resolve(i)).collect::<Vec<_>>(),
            vec![1, 2, 1]
        );
        // The one-to-many wakeup: LGWR broadcasts `done`, every shadow waits on it.
        assert!(s.programs[2].ops.contains(&Op::CondBroadcast(c(0, 1, 0))));
        assert!(s.programs[1].ops.contains(&Op::CondWait {
            c: c(0, 1, 0),
            m: c(0, 1, 0)
        }));
    }

    #[test]
    fn metric_as_defined() {
        // 150 transactions in 3 s: 3000 tpm; 50 log writes: 3 per batch.
        let r = TpccTool { users: 4 }.result(150, 50, 2_500_000.0, 3_000_000_000);
        assert_eq!(r.values["tpm"], 3000.0);
        assert_eq!(r.values["txns_per_log_write"], 3.0);
        assert_eq!(r.values["response_time_us"], 2500.0);
        assert!(r.text.starts_with("TPC-C proxy"));
        assert_eq!(r.text.lines().last().unwrap(), "tpm (proxy): 3000.0");
    }
}
