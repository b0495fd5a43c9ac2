//! `adrestia` (Matt Fleming's wakeup-cost micro-benchmark, `spec/workloads.md` §3.9).
//!
//! **The tool.** Each worker thread owns two pipes, `start` and `result`, and a
//! time value. The main thread, per round: for each worker, takes `gettimeofday`
//! into the worker's time value and writes one byte to its `start` pipe; then for
//! each worker, reads one byte from its `result` pipe and adds the worker's time
//! value to a sum. A worker loops: read one byte from `start` (blocking), replace
//! its time value by `now − value`, write one byte to `result`. A round's sample is
//! the sum of the deltas divided by the number of workers (integer µs). The result
//! printed is the sample at index ⌊0.9·n⌋ of the sorted samples. `wakeup-single`
//! uses one worker and `loops × threads` rounds back to back; `wakeup-periodic` uses
//! `threads` workers, `loops` rounds, with `usleep(arrival)` before each round.
//! Without a test name the tool runs both, single first, each with its own threads
//! (created before the test, cancelled after it).
//!
//! **Model.** Exactly that: pipes for the two directions (sync wakeups both ways),
//! a shared word per worker for its time value ([`Op::Store`] by main,
//! [`Op::Load`] + [`Op::Elapsed`] + [`Op::Store`] by the worker), and the main
//! thread's sum in a register ([`Op::SetReg`], [`Op::AddWord`]) recorded once per
//! round ([`Op::RecordReg`]). The sum is recorded in ns; the report turns it into
//! the tool's integer µs as `⌊round(sum / 1000) / n⌋` (the tool's deltas are
//! differences of µs-truncated readings, whose mean is the exact delta).
//!
//! Simplifications: a worker runs exactly the test's number of rounds and exits
//! instead of being cancelled in its next `read`; the main thread's teardown loop of
//! `pthread_tryjoin_np` calls (a short busy-wait) is a plain join; `-s` (service
//! time) is parsed and unused, as in the tool.

use super::{pos, Generated, Tool, ToolInput, ToolResult};
use crate::config::TableReader;
use crate::error::InputError;
use crate::stats::LatencyHist;
use crate::workload::dist::Dist;
use crate::workload::ipc::ChanKind;
use crate::workload::program::{
    ChanDecl, IdxExpr, LoopCount, ObjRef, Op, Program, TaskSpec, WorkloadSpec,
};
use std::collections::BTreeMap;
use std::sync::Arc;

/// Per-round sums of the worker deltas (ns), by test.
pub const SINGLE_METRIC: &str = "single_round_sum";
pub const PERIODIC_METRIC: &str = "periodic_round_sum";

/// Options of adrestia.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AdrestiaOpts {
    pub threads: u32,
    pub loops: u32,
    /// µs.
    pub arrival: u32,
    pub single: bool,
    pub periodic: bool,
}

impl Default for AdrestiaOpts {
    fn default() -> Self {
        AdrestiaOpts {
            threads: 1,
            loops: 10_000,
            arrival: 10,
            single: true,
            periodic: true,
        }
    }
}

const R_TS: u8 = 0;
const R_SUM: u8 = 1;

fn at(base: u32, count: u32, k: u32) -> ObjRef {
    ObjRef {
        base,
        count,
        idx: IdxExpr::Const(k),
    }
}

/// The workload. Workers are the main thread's forks in creation order: the single
/// test's worker (if any) first, then the periodic test's; worker `i` owns
/// `start[i]` (channel `i`), `result[i]` (channel `N + i`) and word `i`.
pub fn spec(o: &AdrestiaOpts) -> WorkloadSpec {
    let tests: Vec<(u32, u64, bool, &str)> = [
        (
            o.single,
            1u32,
            u64::from(o.loops) * u64::from(o.threads),
            false,
            SINGLE_METRIC,
        ),
        (
            o.periodic,
            o.threads,
            u64::from(o.loops),
            true,
            PERIODIC_METRIC,
        ),
    ]
    .into_iter()
    .filter(|t| t.0)
    .map(|t| (t.1, t.2, t.3, t.4))
    .collect();
    let total: u32 = tests.iter().map(|t| t.0).sum();
    let mut spec = WorkloadSpec {
        channels: vec![
            ChanDecl {
                name: "start".into(),
                kind: ChanKind::Pipe,
                count: total,
            },
            ChanDecl {
                name: "result".into(),
                kind: ChanKind::Pipe,
                count: total,
            },
        ],
        words: total,
        ..WorkloadSpec::default()
    };
    let me = IdxExpr::Instance { div: 1, add: 0 };
    let mut main = Vec::new();
    let mut off = 0;
    spec.programs.push(Program {
        name: "adrestia".into(),
        work_class: None,
        ops: Vec::new(),
    });
    for &(n, rounds, periodic, name) in &tests {
        let metric = spec.metric(name, "ns");
        let worker = spec.programs.len();
        spec.programs.push(Program {
            name: "adrestia-worker".into(),
            work_class: None,
            ops: vec![
                Op::Loop {
                    count: LoopCount::Times(Dist::Const(rounds)),
                    end: 6,
                },
                Op::Read {
                    ch: ObjRef {
                        base: 0,
                        count: total,
                        idx: me,
                    },
                    bytes: 1,
                },
                Op::Load {
                    slot: R_TS,
                    w: ObjRef {
                        base: 0,
                        count: total,
                        idx: me,
                    },
                },
                Op::Elapsed { slot: R_TS },
                Op::Store {
                    w: ObjRef {
                        base: 0,
                        count: total,
                        idx: me,
                    },
                    slot: R_TS,
                },
                Op::Write {
                    ch: ObjRef {
                        base: total,
                        count: total,
                        idx: me,
                    },
                    bytes: 1,
                },
                Op::EndLoop { start: 0 },
                Op::Exit,
            ],
        });
        for _ in 0..n {
            main.push(Op::Fork {
                prog: worker,
                thread: true,
            });
        }
        let top = main.len();
        main.push(Op::Loop {
            count: LoopCount::Times(Dist::Const(rounds)),
            end: 0,
        });
        if periodic {
            main.push(Op::Sleep(Dist::Const(u64::from(o.arrival) * 1000)));
        }
        for i in off..off + n {
            main.push(Op::Mark { slot: R_TS });
            main.push(Op::Store {
                w: at(0, total, i),
                slot: R_TS,
            });
            main.push(Op::Write {
                ch: at(0, total, i),
                bytes: 1,
            });
        }
        main.push(Op::SetReg {
            slot: R_SUM,
            val: 0,
        });
        for i in off..off + n {
            main.push(Op::Read {
                ch: at(total, total, i),
                bytes: 1,
            });
            main.push(Op::AddWord {
                slot: R_SUM,
                w: at(0, total, i),
            });
        }
        main.push(Op::RecordReg {
            metric,
            slot: R_SUM,
            div: 1,
        });
        let end = main.len();
        main.push(Op::EndLoop { start: top });
        main[top] = Op::Loop {
            count: LoopCount::Times(Dist::Const(rounds)),
            end,
        };
        for _ in 0..n {
            main.push(Op::WaitChild);
        }
        off += n;
    }
    main.push(Op::Exit);
    spec.programs[0].ops = main;
    spec.tasks.push(TaskSpec::main("adrestia"));
    spec
}

/// Parse `[workload]` for kind `adrestia`.
pub fn parse(w: &TableReader<'_>) -> Result<Generated, InputError> {
    let d = AdrestiaOpts::default();
    let (single, periodic) = match w.str("test")? {
        None => (true, true),
        Some("single" | "wakeup-single") => (true, false),
        Some("periodic" | "wakeup-periodic") => (false, true),
        Some(t) => {
            return Err(w.err(
                "test",
                format!("unknown adrestia test `{t}` (single or periodic)"),
            ))
        }
    };
    // `-s` is parsed by the tool and never used.
    let _ = w.uint("service", 0, u64::from(u32::MAX))?;
    let o = AdrestiaOpts {
        threads: pos(w, "threads", d.threads)?,
        loops: pos(w, "loops", d.loops)?,
        arrival: w
            .uint("arrival", 0, u64::from(u32::MAX / 1000))?
            .map_or(d.arrival, |v| v as u32),
        single,
        periodic,
    };
    if u64::from(o.threads) > 1 << 16 {
        return Err(w.err("threads", "`threads` must be at most 65536"));
    }
    Ok(Generated {
        spec: spec(&o),
        tool: Arc::new(AdrestiaTool {
            threads: o.threads,
            loops: o.loops,
            arrival: o.arrival,
        }),
    })
}

/// The sample at index ⌊0.9·n⌋ of the sorted µs samples, each
/// `⌊round(sum_ns / 1000) / workers⌋`.
pub(crate) fn p90_us(h: &LatencyHist, workers: u32) -> Option<u64> {
    let n = h.count();
    if n == 0 {
        return None;
    }
    let k = 9 * n / 10;
    let mut cum = 0;
    for v in h.hist().iter_recorded() {
        cum += v.count_at_value();
        if cum > k {
            let ns = h.hist().median_equivalent(v.value_iterated_to());
            return Some((ns + 500) / 1000 / u64::from(workers.max(1)));
        }
    }
    None
}

/// How adrestia prints.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AdrestiaTool {
    pub threads: u32,
    pub loops: u32,
    pub arrival: u32,
}

impl Tool for AdrestiaTool {
    /// One line per test that finished all its rounds (the tool prints each test's
    /// line when it ends); `None` when none did.
    fn report(&self, input: &ToolInput<'_>) -> Option<ToolResult> {
        let mut lines = Vec::new();
        let mut values = BTreeMap::new();
        let single_rounds = u64::from(self.loops) * u64::from(self.threads);
        if let Some(h) = input
            .hist(SINGLE_METRIC)
            .filter(|h| h.count() == single_rounds)
        {
            let v = p90_us(h, 1)?;
            lines.push(format!("wakeup cost (single): {v}us"));
            values.insert("single_us".to_string(), v as f64);
        }
        if let Some(h) = input
            .hist(PERIODIC_METRIC)
            .filter(|h| h.count() == u64::from(self.loops))
        {
            let v = p90_us(h, self.threads)?;
            lines.push(format!("wakeup cost (periodic, {}us): {v}us", self.arrival));
            values.insert("periodic_us".to_string(), v as f64);
        }
        if lines.is_empty() {
            return None;
        }
        Some(ToolResult {
            text: lines.join("\n"),
            values,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn p90_index_and_division() {
        let mut h = LatencyHist::default();
        // Ten rounds of 1..=10 µs sums: index 9 → 10 µs; two workers → 5.
        for us in 1..=10u64 {
            h.record(us * 1000);
        }
        assert_eq!(p90_us(&h, 1), Some(10));
        assert_eq!(p90_us(&h, 2), Some(5));
        // Three samples: index 2 (the largest).
        let mut h = LatencyHist::default();
        for ns in [3_000, 9_400, 7_600] {
            h.record(ns);
        }
        assert_eq!(p90_us(&h, 1), Some(9));
        // 3 µs over two workers: integer division.
        let mut h = LatencyHist::default();
        h.record(3_000);
        assert_eq!(p90_us(&h, 2), Some(1));
    }

    #[test]
    fn wiring() {
        let o = AdrestiaOpts {
            threads: 3,
            loops: 4,
            ..AdrestiaOpts::default()
        };
        let s = spec(&o);
        s.validate().unwrap();
        // 1 single worker + 3 periodic workers.
        assert_eq!(s.nr_channels(), 8);
        assert_eq!(s.words, 4);
        let forks = s.programs[0]
            .ops
            .iter()
            .filter(|o| matches!(o, Op::Fork { .. }))
            .count();
        assert_eq!(forks, 4);
        // Periodic: main writes start[1..4] and reads result[1..4] each round.
        let writes: Vec<usize> = s.programs[0]
            .ops
            .iter()
            .filter_map(|o| match o {
                Op::Write { ch, .. } => Some(ch.resolve(0)),
                _ => None,
            })
            .collect();
        assert_eq!(writes, vec![0, 1, 2, 3]);
        let reads: Vec<usize> = s.programs[0]
            .ops
            .iter()
            .filter_map(|o| match o {
                Op::Read { ch, .. } => Some(ch.resolve(0)),
                _ => None,
            })
            .collect();
        assert_eq!(reads, vec![4, 5, 6, 7]);
        // Worker i (fork number i) reads start[i], writes result[i].
        let Op::Read { ch, .. } = s.programs[2].ops[1] else {
            panic!()
        };
        assert_eq!(ch.resolve(2), 2);
        let Op::Write { ch, .. } = s.programs[2].ops[5] else {
            panic!()
        };
        assert_eq!(ch.resolve(2), 6);
    }
}
