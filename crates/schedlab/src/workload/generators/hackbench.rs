//! `hackbench`, `perf bench sched messaging` and `perf bench sched pipe`
//! (`spec/workloads.md` §3.1–§3.3).
//!
//! **hackbench / perf-messaging.** The parent creates two channels of the data kind,
//! `ready` and `wake`. For each of `G` groups it creates `F` receivers, then `F`
//! senders (`fork` in process mode, `pthread_create` with `threads`/`thread`). Each
//! child writes one byte to `ready` and then polls `wake`. The parent reads `2·F·G`
//! bytes from `ready`, takes its start timestamp, writes one byte to `wake` (never
//! consumed, so every poller sees it readable) and reaps every child; the elapsed
//! time is the tool's result. A receiver reads `F·loops` messages of `datasize` bytes
//! from its own channel; a sender does `loops` rounds writing one message to each of
//! its group's `F` receiver channels. In process mode all senders of a group share
//! the receiver's socket end: one channel per receiver.
//!
//! **perf-pipe.** Two pipes; worker 0 writes 4 bytes to pipe 0 and reads 4 bytes from
//! pipe 1, worker 1 does the reverse, `loops` times. Process mode: the parent forks
//! worker 1 and runs worker 0 itself, then `waitpid`s; threaded: the parent creates
//! both workers as threads and joins them. Timed from before the task creation to
//! after the wait; `usecs/op = time / loops`.
//!
//! Simplifications: the parent reads the `2·F·G` ready bytes as one `read` of that
//! size (hackbench reads them one at a time); the unused socket ends each process
//! closes are not modelled; the result is printed from simulated nanoseconds
//! (`gettimeofday` has microsecond resolution).

use super::{pos, secs_ms, Generated, Tool, ToolInput, ToolResult};
use crate::config::TableReader;
use crate::error::InputError;
use crate::workload::dist::Dist;
use crate::workload::ipc::ChanKind;
use crate::workload::program::{
    ChanDecl, IdxExpr, LoopCount, ObjRef, Op, Program, TaskSpec, WorkloadSpec,
};
use std::collections::BTreeMap;
use std::sync::Arc;

/// Options of hackbench / perf bench sched messaging.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MessagingOpts {
    pub groups: u32,
    pub fds: u32,
    pub loops: u32,
    pub datasize: u32,
    pub pipe: bool,
    pub threads: bool,
}

impl MessagingOpts {
    /// hackbench's defaults.
    pub fn hackbench() -> Self {
        MessagingOpts {
            groups: 10,
            fds: 20,
            loops: 100,
            datasize: 100,
            pipe: false,
            threads: false,
        }
    }
}

/// Options of perf bench sched pipe.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PipeOpts {
    pub loops: u32,
    pub threaded: bool,
}

/// Name of the metric holding the tool's elapsed time (ns).
pub const TIME_METRIC: &str = "time";

fn c(k: u32, base: u32, count: u32) -> ObjRef {
    ObjRef {
        base,
        count,
        idx: IdxExpr::Const(k),
    }
}

fn times(n: u64) -> LoopCount {
    LoopCount::Times(Dist::Const(n))
}

/// The hackbench / perf-messaging workload. Programs: 0 = parent, then per group
/// `g` a receiver (`1 + 2g`) and a sender (`2 + 2g`) program. Channels: `ready`
/// (0), `wake` (1), `data[0..G·F]` (2..): receiver `j` of group `g` owns
/// `data[g·F + j]`.
pub(crate) fn messaging_spec(o: &MessagingOpts) -> WorkloadSpec {
    let (g_n, f) = (o.groups, o.fds);
    let kind = if o.pipe {
        ChanKind::Pipe
    } else {
        ChanKind::UnixStream
    };
    let nr_data = g_n * f;
    let mut spec = WorkloadSpec {
        channels: vec![
            ChanDecl {
                name: "ready".into(),
                kind,
                count: 1,
            },
            ChanDecl {
                name: "wake".into(),
                kind,
                count: 1,
            },
            ChanDecl {
                name: "data".into(),
                kind,
                count: nr_data,
            },
        ],
        ..WorkloadSpec::default()
    };
    let time = spec.metric(TIME_METRIC, "ns");
    let ready = c(0, 0, 1);
    let wake = c(0, 1, 1);
    let children = 2 * f * g_n;
    // Parent: create children, wait for all ready, mark, wake, reap, record.
    let mut p = Vec::new();
    for g in 0..g_n {
        for _ in 0..f {
            p.push(Op::Fork {
                prog: 1 + 2 * g as usize,
                thread: o.threads,
            });
        }
        for _ in 0..f {
            p.push(Op::Fork {
                prog: 2 + 2 * g as usize,
                thread: o.threads,
            });
        }
    }
    p.push(Op::Read {
        ch: ready,
        bytes: children,
    });
    p.push(Op::Mark { slot: 0 });
    p.push(Op::Write { ch: wake, bytes: 1 });
    let l = p.len();
    p.push(Op::Loop {
        count: times(children as u64),
        end: l + 2,
    });
    p.push(Op::WaitChild);
    p.push(Op::EndLoop { start: l });
    p.push(Op::Record {
        metric: time,
        slot: 0,
    });
    p.push(Op::Exit);
    spec.programs.push(Program::new("hackbench", p));
    for g in 0..g_n {
        // Receiver j of group g is the parent's fork number g·2F + j; its channel is
        // data[g·F + j] = (fork + (G−g)·F) mod G·F.
        let own = ObjRef {
            base: 2,
            count: nr_data,
            idx: IdxExpr::Instance {
                div: 1,
                add: (g_n - g) * f,
            },
        };
        spec.programs.push(Program {
            name: "receiver".into(),
            work_class: None,
            ops: vec![
                Op::Write {
                    ch: ready,
                    bytes: 1,
                },
                Op::Poll { ch: wake },
                Op::Loop {
                    count: times(f as u64 * o.loops as u64),
                    end: 4,
                },
                Op::Read {
                    ch: own,
                    bytes: o.datasize,
                },
                Op::EndLoop { start: 2 },
                Op::Exit,
            ],
        });
        let mut s = vec![
            Op::Write {
                ch: ready,
                bytes: 1,
            },
            Op::Poll { ch: wake },
            Op::Loop {
                count: times(o.loops as u64),
                end: 3 + f as usize,
            },
        ];
        for j in 0..f {
            s.push(Op::Write {
                ch: c(g * f + j, 2, nr_data),
                bytes: o.datasize,
            });
        }
        s.push(Op::EndLoop { start: 2 });
        s.push(Op::Exit);
        spec.programs.push(Program::new("sender", s));
    }
    spec.tasks.push(TaskSpec::main("hackbench"));
    spec
}

/// The perf bench sched pipe workload. Programs: 0 = parent, 1 = worker 0 (as a
/// thread), 2 = worker 1. Channels: `pipe[0]`, `pipe[1]`.
pub(crate) fn pipe_spec(o: &PipeOpts) -> WorkloadSpec {
    let mut spec = WorkloadSpec {
        channels: vec![ChanDecl {
            name: "pipe".into(),
            kind: ChanKind::Pipe,
            count: 2,
        }],
        ..WorkloadSpec::default()
    };
    let time = spec.metric(TIME_METRIC, "ns");
    let (p0, p1) = (c(0, 0, 2), c(1, 0, 2));
    let n = times(o.loops as u64);
    let w0 = [
        Op::Loop { count: n, end: 3 },
        Op::Write { ch: p0, bytes: 4 },
        Op::Read { ch: p1, bytes: 4 },
        Op::EndLoop { start: 0 },
    ];
    let w1 = [
        Op::Loop { count: n, end: 3 },
        Op::Read { ch: p0, bytes: 4 },
        Op::Write { ch: p1, bytes: 4 },
        Op::EndLoop { start: 0 },
    ];
    let mut p = vec![Op::Mark { slot: 0 }];
    if o.threaded {
        // Thread 0 is side A (reads first), thread 1 side B (writes first).
        p.push(Op::Fork {
            prog: 2,
            thread: true,
        });
        p.push(Op::Fork {
            prog: 1,
            thread: true,
        });
        p.push(Op::WaitChild);
        p.push(Op::WaitChild);
    } else {
        p.push(Op::Fork {
            prog: 2,
            thread: false,
        });
        // The loop indices of w0 shift by the ops before it.
        let off = p.len();
        for op in w0 {
            p.push(match op {
                Op::Loop { count, end } => Op::Loop {
                    count,
                    end: end + off,
                },
                Op::EndLoop { start } => Op::EndLoop { start: start + off },
                o => o,
            });
        }
        p.push(Op::WaitChild);
    }
    p.push(Op::Record {
        metric: time,
        slot: 0,
    });
    p.push(Op::Exit);
    let mut w0v = w0.to_vec();
    w0v.push(Op::Exit);
    let mut w1v = w1.to_vec();
    w1v.push(Op::Exit);
    spec.programs = vec![
        Program::new("sched-pipe", p),
        Program::new("worker0", w0v),
        Program::new("worker1", w1v),
    ];
    spec.tasks.push(TaskSpec::main("sched-pipe"));
    spec
}

/// `groups` × `fds` senders and as many receivers must fit the task limit.
fn check_messaging_tasks(w: &TableReader<'_>, o: &MessagingOpts) -> Result<(), InputError> {
    use crate::engine::MAX_TASKS;
    let n = 2 * u128::from(o.groups) * u128::from(o.fds);
    if n > MAX_TASKS as u128 {
        return Err(w.err(
            "groups",
            format!(
                "{} groups × {} fds × 2 = {n} tasks is more than the limit of {MAX_TASKS} (see docs/limits.md)",
                o.groups, o.fds
            ),
        ));
    }
    Ok(())
}

/// Parse `[workload]` for kind `hackbench`, `perf-messaging` or `perf-pipe`.
pub fn parse(kind: &str, w: &TableReader<'_>) -> Result<Generated, InputError> {
    let (spec, tool) = match kind {
        "hackbench" => {
            let d = MessagingOpts::hackbench();
            let o = MessagingOpts {
                groups: pos(w, "groups", d.groups)?,
                fds: pos(w, "fds", d.fds)?,
                loops: pos(w, "loops", d.loops)?,
                datasize: pos(w, "datasize", d.datasize)?,
                pipe: w.bool("pipe")?.unwrap_or(false),
                threads: w.bool("threads")?.unwrap_or(false),
            };
            check_messaging_tasks(w, &o)?;
            (messaging_spec(&o), HackbenchTool::Hackbench)
        }
        "perf-messaging" => {
            let o = MessagingOpts {
                groups: pos(w, "groups", 10)?,
                fds: 20,
                loops: pos(w, "loops", 100)?,
                datasize: 100,
                pipe: w.bool("pipe")?.unwrap_or(false),
                threads: w.bool("thread")?.unwrap_or(false),
            };
            check_messaging_tasks(w, &o)?;
            (messaging_spec(&o), HackbenchTool::PerfMessaging)
        }
        _ => {
            let o = PipeOpts {
                loops: pos(w, "loops", 1_000_000)?,
                threaded: w.bool("threaded")?.unwrap_or(false),
            };
            (pipe_spec(&o), HackbenchTool::PerfPipe { loops: o.loops })
        }
    };
    Ok(Generated {
        spec,
        tool: Arc::new(tool),
    })
}

/// How hackbench, perf bench sched messaging and perf bench sched pipe print.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HackbenchTool {
    Hackbench,
    PerfMessaging,
    PerfPipe { loops: u32 },
}

impl HackbenchTool {
    /// The tool's printed result and its numbers for elapsed time `ns`.
    pub fn result(&self, ns: u64) -> ToolResult {
        let t = secs_ms(ns);
        let secs = ns as f64 / 1e9;
        let mut values = BTreeMap::new();
        let text = match *self {
            HackbenchTool::Hackbench => {
                values.insert("time_s".to_string(), secs);
                format!("Time: {t}")
            }
            HackbenchTool::PerfMessaging => {
                values.insert("total_time_s".to_string(), secs);
                format!("Total time: {t} [sec]")
            }
            HackbenchTool::PerfPipe { loops } => {
                let us = ns / 1000;
                let loops = u64::from(loops.max(1));
                let per = us as f64 / loops as f64;
                let ops = (loops * 1_000_000).checked_div(us).unwrap_or(0);
                values.insert("total_time_s".to_string(), secs);
                values.insert("usecs_per_op".to_string(), per);
                values.insert("ops_per_sec".to_string(), ops as f64);
                format!("Total time: {t} [sec]\n\n{per:>14.6} usecs/op\n{ops:>14} ops/sec")
            }
        };
        ToolResult { text, values }
    }
}

impl Tool for HackbenchTool {
    /// Printed once the parent has reaped every child (one `time` sample).
    fn report(&self, input: &ToolInput<'_>) -> Option<ToolResult> {
        let h = input.hist(TIME_METRIC).filter(|h| h.count() == 1)?;
        Some(self.result(h.mean().round() as u64))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messaging_wiring() {
        let o = MessagingOpts {
            groups: 2,
            fds: 3,
            ..MessagingOpts::hackbench()
        };
        let s = messaging_spec(&o);
        s.validate().unwrap();
        assert_eq!(s.tasks.len(), 1);
        let forks = s.programs[0]
            .ops
            .iter()
            .filter(|o| matches!(o, Op::Fork { .. }))
            .count();
        assert_eq!(forks, 12);
        assert_eq!(s.nr_channels(), 2 + 6);
        // Receiver j of group g (fork number g*6 + j) owns data[g*3 + j].
        for g in 0..2u32 {
            let Op::Read { ch, .. } = s.programs[1 + 2 * g as usize].ops[3] else {
                panic!("receiver read")
            };
            for j in 0..3 {
                assert_eq!(ch.resolve(g * 6 + j), (2 + g * 3 + j) as usize);
            }
            let writes: Vec<usize> = s.programs[2 + 2 * g as usize]
                .ops
                .iter()
                .filter_map(|o| match o {
                    Op::Write { ch, bytes: 100 } => Some(ch.resolve(0)),
                    _ => None,
                })
                .collect();
            assert_eq!(
                writes,
                (0..3).map(|j| (2 + g * 3 + j) as usize).collect::<Vec<_>>()
            );
        }
    }

    #[test]
    fn pipe_valid() {
        for threaded in [false, true] {
            pipe_spec(&PipeOpts { loops: 5, threaded })
                .validate()
                .unwrap();
        }
    }

    #[test]
    fn output_format() {
        assert_eq!(
            HackbenchTool::Hackbench.result(1_234_567_890).text,
            "Time: 1.234"
        );
        let pipe = HackbenchTool::PerfPipe { loops: 1_000_000 }.result(2_000_000_000);
        assert_eq!(pipe.values["ops_per_sec"], 500_000.0);
        assert_eq!(
            pipe.text.lines().nth(2).unwrap().trim(),
            "2.000000 usecs/op"
        );
    }
}
