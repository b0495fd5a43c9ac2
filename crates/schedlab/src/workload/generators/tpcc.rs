//! `oracle-tpcc`: seed 003's Oracle TPC-C as the database host sees it
//! (`spec/workloads.md` §3.11; calibration sources in docs/calibration.md §8).
//!
//! **What the seed ran.** Seed 003 reports "Oracle DB TPC-C throughput normalized to
//! baseline" for 20…220 users on the 2 × 22 × 2 Xeon and names nothing else (kit,
//! Oracle version, client host, warehouses, storage). The model follows the public
//! kit of that date, HammerDB v2.23 (June 2017), whose Oracle driver and defaults are
//! read from its source, and Oracle's documented process architecture:
//!
//! * each **user** is one client session (a HammerDB virtual user) served by one
//!   *dedicated server* process, the **shadow**: one OS process per session;
//! * the client runs on **another host** (HammerDB's documentation: "Typically the
//!   load generation server is run on a separate system from the SUT"), with **no
//!   keying or thinking time** (HammerDB's default `keyandthink = false`): a closed
//!   loop where each call waits for the previous one's answer;
//! * each transaction is **one round trip**, one PL/SQL call that commits inside; the
//!   mix is HammerDB's draw of 1…23: 10 New-Order, 10 Payment, 1 each Delivery,
//!   Stock-Level and Order-Status;
//! * a PL/SQL call waits for its redo only **once**, before it returns (asynchronous
//!   commit inside PL/SQL): New-Order, Payment and Delivery (10 commits) wait once;
//!   Stock-Level's commit writes no redo, Order-Status does not commit;
//! * the wait is Oracle's post/wait on per-process semaphores: the committer posts
//!   the log writer (LGWR) and sleeps on its own semaphore; LGWR writes all redo
//!   gathered so far in one write (group commit) and then **posts each waiting
//!   session in turn** (`semctl` one by one, one waker and one wakee each time; not a
//!   broadcast);
//! * each user keeps a **home warehouse** for the whole run; Payment updates the
//!   home warehouse's row, which stays locked until the commit: users whose homes
//!   coincide queue behind one another's commit (Oracle's row-lock wait, again a
//!   sleep on the semaphore until the holder's commit posts it).
//!
//! **Model.** Per user `u` a shadow task (its own process) with home warehouse
//! `home[u]` (a fixed pseudo-random draw in `0..warehouses`: the same layout in every
//! run and arm); one LGWR task. Per transaction of the 23-long mix cycle (the draws'
//! order fixed, their CPU times random):
//!
//! ```text
//! shadow(u): loop over the mix:
//!     sleep(U(client/2, 3·client/2))        # the answer went out; the next call arrives
//!     [Payment] lock(row[home[u]])
//!     compute(N(w_k · cpu, w_k · cpu / 2))
//!     [New-Order, Payment, Delivery]        # log file sync
//!         sem[u] = 0; push(commits, u); post(sem[lgwr]); wait(sem[u])
//!     [Payment] unlock(row[home[u]])
//!     send (one syscall); count
//! lgwr: loop: wait(sem[lgwr]); batch = take(commits)
//!       sleep(U(log_min, log_max))            # log file parallel write
//!       for s in batch: post(sem[s])          # one futex wake each
//! ```
//!
//! A post is [`Op::FutexPost`] (a `futex_wake` of one waiter, non-sync), a wait
//! [`Op::FutexAwait`]; the commit queue is a lock-free list ([`Op::Push`] /
//! [`Op::Splice`]), taken whole by LGWR before each write.
//!
//! **Parameters** (docs/calibration.md §8 gives each source and how solid it is):
//! `cpu_us` = 600, the host's CPU per transaction on an idle core (derived from a
//! published single-socket Oracle TPC-C result, scaled to 2017 cores: an estimate
//! within ±50 %), spread over the mix by weights New-Order 1.3, Payment 0.6,
//! Delivery 3.0, Stock-Level 1.5, Order-Status 0.4 (estimates; mix mean 1.04), each
//! normal with a coefficient of variation of ½; it includes the host's network
//! stack, since the derivation divides all of the host's CPU by its transactions.
//! `client_us` = 150 (estimate: network round trip and the client's own work);
//! `log_min_us`..`log_max_us` = 50..75 (Oracle's "log file parallel write" on flash,
//! a practitioner's trace); `warehouses` = 800 (HammerDB's sizing advice, 250–500
//! per socket).
//!
//! `commit_wait` = `post`: post/wait as above. `poll` is the other mode Oracle's
//! adaptive log file sync switches to (the default since 11.2.0.3): the committer
//! queues itself, posts LGWR and then sleeps `poll_us` at a time until a flag LGWR
//! sets after the write is up (a timer wakeup on the committer's own CPU each
//! time); LGWR posts nobody. `poll_us` = 62, the log write's mean (estimate: Oracle
//! derives the interval from the writes it measures; no number is published).
//!
//! `log_writers` = 1: one LGWR. 12c's scalable LGWR adds worker processes (LGnn,
//! "typically two") and switches between single and scalable mode by load;
//! `log_writers = 3` models LGWR and two workers as peers that each take the queue,
//! write and post (the workers' hand-off from LGWR is not modelled).
//!
//! Simplifications: the network arrival is a timer wakeup on the shadow's own CPU
//! (no NIC interrupt or softirq on another CPU; with receive flow steering the
//! packet is processed where the reader last ran, which this matches); latches are
//! left out (many, held for µs: rarely contended); New-Order's district row and
//! Delivery's rows are not locked; DBWn, CKPT, SMON and PMON are absent (idle or
//! periodic), and so are 12c's LGWR workers unless `log_writers` asks for them; data reads never wait on I/O (the schema is
//! cached, as HammerDB's documentation says of a sized buffer cache); the 1 % of
//! New-Orders that roll back still count as commits (Oracle's TPM counts user
//! commits and rollbacks alike).
//!
//! **Output.** Oracle's TPM (user commits and rollbacks per minute, HammerDB's
//! headline figure), NOPM (New-Orders per minute), transactions, log writes, the
//! sessions each write released, and the mean server-side response time.

use super::secs_opt;
use super::{pos, Generated, Tool, ToolInput, ToolResult};
use crate::config::TableReader;
use crate::error::InputError;
use crate::workload::dist::Dist;
use crate::workload::program::{
    IdxExpr, LoopCount, ObjRef, Op, Program, TaskSpec, WorkloadSpec, FUTEX_BLOCKED,
};
use std::collections::BTreeMap;
use std::sync::Arc;

/// Options of the model (times in µs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TpccOpts {
    pub users: u32,
    pub warehouses: u32,
    pub cpu_us: u64,
    pub client_us: u64,
    pub log_min_us: u64,
    pub log_max_us: u64,
    /// Tasks that take the commit queue, write and post: 1 = one LGWR (11g, and
    /// 12c's single mode); 3 = LGWR with 12c's two LGnn workers, modelled as peers
    /// that each take what is queued.
    pub log_writers: u32,
    /// How a committer learns its redo is written.
    pub commit_wait: CommitWait,
    pub duration_ns: u64,
}

/// How a committing session waits for LGWR (Oracle's `_use_adaptive_log_file_sync`
/// chooses between the two at run time since 11.2.0.3).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CommitWait {
    /// Post/wait: the session sleeps on its semaphore until LGWR posts it.
    Post,
    /// Polling: the session sleeps `poll_us` at a time and checks whether its redo
    /// is written; LGWR posts nobody.
    Poll { poll_us: u64 },
}

impl Default for TpccOpts {
    /// docs/calibration.md §8.
    fn default() -> Self {
        TpccOpts {
            users: 20,
            warehouses: 800,
            cpu_us: 600,
            client_us: 150,
            log_min_us: 50,
            log_max_us: 75,
            log_writers: 1,
            commit_wait: CommitWait::Post,
            duration_ns: 60_000_000_000,
        }
    }
}

/// A TPC-C transaction type of HammerDB's mix.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Txn {
    NewOrder,
    Payment,
    Delivery,
    StockLevel,
    OrderStatus,
}

impl Txn {
    /// CPU weight relative to `cpu_us` (estimates; the mix averages 1.04).
    pub fn weight_pct(self) -> u64 {
        match self {
            Txn::NewOrder => 130,
            Txn::Payment => 60,
            Txn::Delivery => 300,
            Txn::StockLevel => 150,
            Txn::OrderStatus => 40,
        }
    }

    /// User commits and rollbacks the call makes (Delivery commits per district).
    pub fn commits(self) -> u32 {
        match self {
            Txn::NewOrder | Txn::Payment | Txn::StockLevel => 1,
            Txn::Delivery => 10,
            Txn::OrderStatus => 0,
        }
    }

    /// Whether the call waits for its redo (log file sync) before it returns.
    pub fn syncs(self) -> bool {
        matches!(self, Txn::NewOrder | Txn::Payment | Txn::Delivery)
    }
}

/// One cycle of HammerDB's mix (draws 1–10 New-Order, 11–20 Payment, 21 Delivery,
/// 22 Stock-Level, 23 Order-Status), in a fixed interleaved order.
pub fn mix_cycle() -> Vec<Txn> {
    let mut v = Vec::with_capacity(23);
    for pair in 0..10 {
        v.push(Txn::NewOrder);
        v.push(Txn::Payment);
        match pair {
            2 => v.push(Txn::Delivery),
            5 => v.push(Txn::StockLevel),
            8 => v.push(Txn::OrderStatus),
            _ => {}
        }
    }
    v
}

/// Home warehouse of user `u` among `w`: a fixed pseudo-random draw (splitmix64 of
/// the user's index), the same in every run, arm and user count.
pub fn home_warehouse(u: u32, w: u32) -> u32 {
    let mut z = (u as u64).wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^= z >> 31;
    (z % w as u64) as u32
}

/// Polling mode's sleep per check: the log write's mean (estimate: Oracle derives
/// its polling interval from the log writes it measures; no number is published).
pub const DEFAULT_POLL_US: u64 = 62;

/// Metric names.
pub const TXNS: &str = "txns";
pub const COMMITS: &str = "commits";
pub const NEW_ORDERS: &str = "new_orders";
pub const RESPONSE: &str = "response_time";
pub const LOG_WRITES: &str = "log_writes";
pub const POSTS: &str = "commit_posts";

/// Register holding the posted session's index in LGWR's batch loop.
const R_ITEM: u8 = 1;
/// Registers holding the constants 0 and 1 for the polling mode's flag stores.
const R_ZERO: u8 = 2;
const R_ONE: u8 = 3;

fn c(base: u32, count: u32, k: u32) -> ObjRef {
    ObjRef {
        base,
        count,
        idx: IdxExpr::Const(k),
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

/// The workload. Programs: 0 = LGWR, 1 + u = shadow u (each its own program, for
/// its home row). Futexes: `sem[u]` = u, LGWR's = U. Mutexes: warehouse rows.
/// List 0: the commit queue. Tasks: the U shadows, then LGWR and its workers
/// (`log_writers − 1`, on the same queue and semaphore: a post wakes one of them).
pub fn spec(o: &TpccOpts) -> WorkloadSpec {
    let u = o.users;
    let poll = match o.commit_wait {
        CommitWait::Post => None,
        CommitWait::Poll { poll_us } => Some(poll_us),
    };
    let mut s = WorkloadSpec {
        futexes: u + 1,
        mutexes: o.warehouses,
        lists: 1,
        // Polling: one "redo written" flag per session.
        words: if poll.is_some() { u } else { 0 },
        duration_ns: Some(o.duration_ns),
        ..WorkloadSpec::default()
    };
    let txns = s.metric(TXNS, "count");
    let commits = s.metric(COMMITS, "count");
    let new_orders = s.metric(NEW_ORDERS, "count");
    let resp_t = s.metric(RESPONSE, "ns");
    let logw = s.metric(LOG_WRITES, "count");
    let posts = s.metric(POSTS, "count");
    let queue = c(0, 1, 0);
    let lgwr_sem = c(u, 1, 0);
    let forever = || Op::Loop {
        count: LoopCount::Forever,
        end: 0,
    };

    // LGWR.
    let by_item = ObjRef {
        base: 0,
        count: u,
        idx: IdxExpr::Reg(R_ITEM),
    };
    let mut lg = vec![forever()];
    // Post each session of the batch, or (polling) set its flag.
    let release = if poll.is_some() {
        lg.push(Op::SetReg {
            slot: R_ONE,
            val: 1,
        });
        Op::Store {
            w: by_item,
            slot: R_ONE,
        }
    } else {
        Op::FutexPost { f: by_item }
    };
    lg.extend([
        Op::FutexAwait { f: lgwr_sem },
        Op::Splice { l: queue },
        Op::Sleep(us(o.log_min_us, o.log_max_us)),
        Op::Count { metric: logw },
    ]);
    let each = lg.len();
    lg.extend([
        Op::Loop {
            count: LoopCount::Each { slot: R_ITEM },
            end: each + 3,
        },
        release,
        Op::Count { metric: posts },
        Op::EndLoop { start: each },
    ]);
    close(&mut lg, 0);
    let mut programs = vec![Program::new("lgwr", lg)];

    // Shadows.
    let client = us(o.client_us / 2, o.client_us * 3 / 2);
    for i in 0..u {
        let own = c(i, 1, 0);
        let row = c(0, o.warehouses, home_warehouse(i, o.warehouses));
        let mut sh = vec![forever()];
        for t in mix_cycle() {
            sh.push(Op::Sleep(client));
            sh.push(Op::Mark { slot: 0 });
            let locks = t == Txn::Payment;
            if locks {
                sh.push(Op::Lock(row));
            }
            let mean = o.cpu_us * 1000 * t.weight_pct() / 100;
            sh.push(Op::Compute(Dist::Normal {
                mean,
                std: mean / 2,
            }));
            if t.syncs() {
                match poll {
                    None => sh.extend([
                        Op::FutexSet {
                            f: own,
                            val: FUTEX_BLOCKED,
                        },
                        Op::Push {
                            l: queue,
                            item: IdxExpr::Const(i),
                        },
                        Op::FutexPost { f: lgwr_sem },
                        Op::FutexAwait { f: own },
                    ]),
                    Some(poll_us) => {
                        let flag = c(i, 1, 0);
                        sh.extend([
                            Op::SetReg {
                                slot: R_ZERO,
                                val: 0,
                            },
                            Op::Store {
                                w: flag,
                                slot: R_ZERO,
                            },
                            Op::Push {
                                l: queue,
                                item: IdxExpr::Const(i),
                            },
                            Op::FutexPost { f: lgwr_sem },
                        ]);
                        let l = sh.len();
                        sh.extend([
                            Op::Loop {
                                count: LoopCount::While {
                                    deadline: None,
                                    ticket: None,
                                    unset: Some(i),
                                },
                                end: l + 2,
                            },
                            Op::Sleep(Dist::Const(poll_us * 1000)),
                            Op::EndLoop { start: l },
                        ]);
                    }
                }
            }
            if locks {
                sh.push(Op::Unlock(row));
            }
            sh.push(Op::Syscall);
            sh.push(Op::Record {
                metric: resp_t,
                slot: 0,
            });
            sh.push(Op::Count { metric: txns });
            for _ in 0..t.commits() {
                sh.push(Op::Count { metric: commits });
            }
            if t == Txn::NewOrder {
                sh.push(Op::Count { metric: new_orders });
            }
        }
        close(&mut sh, 0);
        programs.push(Program::new(format!("shadow-{i}"), sh));
    }
    s.programs = programs;
    for i in 0..u {
        s.tasks
            .push(TaskSpec::new(format!("oracle-{i}"), 1 + i as usize, 0));
    }
    s.tasks.push(TaskSpec::new("ora_lgwr", 0, 0));
    for k in 1..o.log_writers {
        s.tasks
            .push(TaskSpec::new(format!("ora_lg{:02}", k - 1), 0, k));
    }
    s
}

/// Close the `Loop` at `start` (its end is the next op pushed).
fn close(ops: &mut Vec<Op>, start: usize) {
    let end = ops.len();
    if let Op::Loop { count, .. } = ops[start] {
        ops[start] = Op::Loop { count, end };
    }
    ops.push(Op::EndLoop { start });
}

/// Parse `[workload]` of kind `oracle-tpcc`.
pub fn parse(w: &TableReader<'_>) -> Result<Generated, InputError> {
    let d = TpccOpts::default();
    let t = |key: &'static str, def: u64| -> Result<u64, InputError> {
        Ok(w.uint(key, 0, 10_000_000)?.unwrap_or(def))
    };
    let o = TpccOpts {
        users: pos(w, "users", d.users)?,
        warehouses: pos(w, "warehouses", d.warehouses)?,
        cpu_us: t("cpu_us", d.cpu_us)?,
        client_us: t("client_us", d.client_us)?,
        log_min_us: t("log_min_us", d.log_min_us)?,
        log_max_us: t("log_max_us", d.log_max_us)?,
        log_writers: w
            .uint("log_writers", 1, 100)?
            .map_or(d.log_writers, |v| v as u32),
        commit_wait: match w.str("commit_wait")? {
            None | Some("post") => {
                if w.get("poll_us").is_some() {
                    return Err(w.err("poll_us", "`poll_us` needs `commit_wait = \"poll\"`"));
                }
                CommitWait::Post
            }
            Some("poll") => CommitWait::Poll {
                poll_us: w.uint("poll_us", 1, 10_000_000)?.unwrap_or(DEFAULT_POLL_US),
            },
            Some(other) => {
                return Err(w.err(
                    "commit_wait",
                    format!("`commit_wait` must be \"post\" or \"poll\", found \"{other}\""),
                ))
            }
        },
        duration_ns: secs_opt(w, "duration", d.duration_ns)?,
    };
    if o.users > 100_000 {
        return Err(w.err("users", "`users` must be at most 100000"));
    }
    if o.warehouses > 1_000_000 {
        return Err(w.err("warehouses", "`warehouses` must be at most 1000000"));
    }
    if o.log_max_us < o.log_min_us {
        return Err(w.err(
            "log_max_us",
            format!(
                "`log_max_us` = {} is below its minimum ({})",
                o.log_max_us, o.log_min_us
            ),
        ));
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

/// How the model reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TpccTool {
    pub users: u32,
}

/// Counts of one run.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct TpccCounts {
    pub txns: u64,
    pub commits: u64,
    pub new_orders: u64,
    pub log_writes: u64,
    pub posts: u64,
    /// Mean server-side response time, ns.
    pub resp_ns: f64,
}

impl TpccTool {
    /// The printed result for counts `n` over `ns`.
    pub fn result(&self, n: &TpccCounts, ns: u64) -> ToolResult {
        let secs = ns as f64 / 1e9;
        let per_min = |x: u64| x as f64 * 60.0 / secs;
        let batch = if n.log_writes == 0 {
            0.0
        } else {
            n.posts as f64 / n.log_writes as f64
        };
        let (tpm, nopm) = (per_min(n.commits), per_min(n.new_orders));
        let mut values = BTreeMap::new();
        values.insert("tpm".to_string(), tpm);
        values.insert("nopm".to_string(), nopm);
        values.insert("transactions".to_string(), n.txns as f64);
        values.insert("log_writes".to_string(), n.log_writes as f64);
        values.insert("response_time_us".to_string(), n.resp_ns / 1e3);
        values.insert("sessions_per_log_write".to_string(), batch);
        values.insert("time_s".to_string(), secs);
        let text = format!(
            "Oracle TPC-C model (schedlab; HammerDB v2.23 mix, remote clients, no think time)\n\
             users {}  elapsed {secs:.3} s  transactions {}  log writes {}\n\
             mean response {:.1} us  sessions per log write {batch:.2}\n\
             NOPM {nopm:.0}  TPM {tpm:.0}",
            self.users,
            n.txns,
            n.log_writes,
            n.resp_ns / 1e3
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
        let resp = input.hist(RESPONSE)?;
        let n = TpccCounts {
            txns: input.hist(TXNS)?.count(),
            commits: input.hist(COMMITS)?.count(),
            new_orders: input.hist(NEW_ORDERS)?.count(),
            log_writes: input.hist(LOG_WRITES)?.count(),
            posts: input.hist(POSTS)?.count(),
            resp_ns: if resp.count() == 0 {
                0.0
            } else {
                resp.sum as f64 / resp.count() as f64
            },
        };
        Some(self.result(&n, input.sim_time_ns))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mix_is_hammerdbs() {
        let m = mix_cycle();
        assert_eq!(m.len(), 23);
        let n = |t: Txn| m.iter().filter(|&&x| x == t).count();
        assert_eq!(
            [
                n(Txn::NewOrder),
                n(Txn::Payment),
                n(Txn::Delivery),
                n(Txn::StockLevel),
                n(Txn::OrderStatus)
            ],
            [10, 10, 1, 1, 1]
        );
        // 1.35 commits per transaction: (10 + 10 + 10 + 1 + 0) / 23.
        let commits: u32 = m.iter().map(|t| t.commits()).sum();
        assert_eq!(commits, 31);
        // 0.91 log file syncs per transaction: 21 of 23.
        assert_eq!(m.iter().filter(|t| t.syncs()).count(), 21);
        // Mean CPU weight 23.9 / 23 = 1.04.
        let w: u64 = m.iter().map(|t| t.weight_pct()).sum();
        assert_eq!(w, 2390);
    }

    #[test]
    fn homes_are_fixed_and_spread() {
        assert_eq!(home_warehouse(7, 800), home_warehouse(7, 800));
        let homes: Vec<u32> = (0..220).map(|u| home_warehouse(u, 800)).collect();
        assert!(homes.iter().all(|&h| h < 800));
        let mut d = homes.clone();
        d.sort_unstable();
        d.dedup();
        // 220 draws from 800: about 800 (1 − e^(−220/800)) = 193 distinct homes.
        assert!((175..=210).contains(&d.len()), "{} distinct", d.len());
    }

    #[test]
    fn wiring() {
        let o = TpccOpts {
            users: 3,
            warehouses: 2,
            ..TpccOpts::default()
        };
        let s = spec(&o);
        s.validate().unwrap();
        // 3 shadows + LGWR; each shadow its own program (its home row).
        assert_eq!(s.tasks.len(), 4);
        assert_eq!(s.programs.len(), 4);
        assert_eq!(s.futexes, 4);
        assert_eq!(s.mutexes, 2);
        for i in 0..3u32 {
            let ops = &s.programs[1 + i as usize].ops;
            // Payment locks the home row; 10 Payments per cycle.
            let locks: Vec<usize> = ops
                .iter()
                .filter_map(|o| match o {
                    Op::Lock(m) => Some(m.resolve(0)),
                    _ => None,
                })
                .collect();
            assert_eq!(locks.len(), 10);
            assert!(locks.iter().all(|&m| m == home_warehouse(i, 2) as usize));
            // 21 commits wait on the shadow's own semaphore, after posting LGWR's.
            let awaits = ops
                .iter()
                .filter(|o| matches!(o, Op::FutexAwait { f } if f.resolve(0) == i as usize))
                .count();
            assert_eq!(awaits, 21);
            let posts = ops
                .iter()
                .filter(|o| matches!(o, Op::FutexPost { f } if f.resolve(0) == 3))
                .count();
            assert_eq!(posts, 21);
        }
        // LGWR posts each session of its batch in turn, by the item's index.
        let lg = &s.programs[0].ops;
        assert!(lg.contains(&Op::Splice { l: c(0, 1, 0) }));
        assert!(lg.iter().any(|o| matches!(
            o,
            Op::FutexPost { f } if f.idx == IdxExpr::Reg(R_ITEM) && f.count == 3
        )));
        assert_eq!(s.duration_ns, Some(60_000_000_000));
        // LGWR's workers run LGWR's program on the same queue.
        let s = spec(&TpccOpts {
            users: 3,
            log_writers: 3,
            ..TpccOpts::default()
        });
        s.validate().unwrap();
        let names: Vec<&str> = s.tasks[3..].iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["ora_lgwr", "ora_lg00", "ora_lg01"]);
        assert!(s.tasks[3..].iter().all(|t| t.prog == 0));
        // Polling: one flag word per session, cleared by the session before it
        // queues itself and set by LGWR (no post to the session); the session
        // sleeps `poll_us` per check while its flag is clear.
        let s = spec(&TpccOpts {
            users: 3,
            commit_wait: CommitWait::Poll { poll_us: 40 },
            ..TpccOpts::default()
        });
        s.validate().unwrap();
        assert_eq!(s.words, 3);
        let sh = &s.programs[2].ops;
        let polls = sh
            .iter()
            .filter(|o| {
                matches!(
                    o,
                    Op::Loop {
                        count: LoopCount::While { unset: Some(1), .. },
                        ..
                    }
                )
            })
            .count();
        assert_eq!(polls, 21);
        assert!(sh.contains(&Op::Sleep(Dist::Const(40_000))));
        assert!(!sh.iter().any(|o| matches!(o, Op::FutexAwait { .. })));
        let lg = &s.programs[0].ops;
        assert!(lg.iter().any(|o| matches!(
            o,
            Op::Store { w, slot: R_ONE } if w.idx == IdxExpr::Reg(R_ITEM)
        )));
        assert!(!lg
            .iter()
            .any(|o| matches!(o, Op::FutexPost { f } if f.idx == IdxExpr::Reg(R_ITEM))));
    }

    #[test]
    fn metric_as_defined() {
        // 310 commits and 100 New-Orders in 3 s: 6200 TPM, 2000 NOPM; 60 posts over
        // 20 writes: 3 sessions per write.
        let n = TpccCounts {
            txns: 230,
            commits: 310,
            new_orders: 100,
            log_writes: 20,
            posts: 60,
            resp_ns: 2_500_000.0,
        };
        let r = TpccTool { users: 4 }.result(&n, 3_000_000_000);
        assert_eq!(r.values["tpm"], 6200.0);
        assert_eq!(r.values["nopm"], 2000.0);
        assert_eq!(r.values["sessions_per_log_write"], 3.0);
        assert_eq!(r.values["response_time_us"], 2500.0);
        assert!(r.text.starts_with("Oracle TPC-C model"));
        assert_eq!(r.text.lines().last().unwrap(), "NOPM 2000  TPM 6200");
    }
}
