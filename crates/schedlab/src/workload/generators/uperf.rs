//! uperf with the `pingpong` profile over loopback TCP (`spec/workloads.md` §3.8).
//!
//! **The real tool.** uperf runs a *master* (`uperf -m profile.xml`) and a *slave*
//! (`uperf -s`), here on the same host over loopback. The published pingpong profile
//! has one group of `nthreads` strands (threads) and three transactions: connect
//! (once), then for `duration` seconds one `read` of `size` bytes and one `write` of
//! `size` bytes, then disconnect. The slave runs the mirror image (read ↔ write,
//! connect ↔ accept), so it writes first and the master's read completes. Strands
//! pass a barrier between transactions; the master's control loop enforces the
//! duration. So there are T master threads and T slave threads on T TCP
//! connections, with exactly one message in flight per connection: each side
//! alternately wakes the other with a sync wakeup (TCP data arrival), a pure
//! wake-affine / idle-CPU-search stress.
//!
//! **Model.** Channels `up[i]` (master → slave) and `down[i]` (slave → master), TCP
//! loopback. Master thread i: `connect` (a bare syscall), barrier of the T masters,
//! then forever `read(down[i], size); write(up[i], size)`. Slave thread i: `accept`,
//! barrier of the T slaves, then forever `write(down[i], size); read(up[i], size)`.
//! Every completed master read/write and slave read/write is counted (metrics
//! `master_reads`, `master_writes`, `slave_reads`, `slave_writes`), which also lets
//! tests check message conservation. The run stops at the tool's time limit
//! ([`WorkloadSpec::duration_ns`] = `duration`).
//!
//! **Output.** uperf's master prints, after the run, the aggregate summary line of
//! `print_summary()` (uperf `src/print.c`): `%-6s ` name (`Total`, uperf's aggregate
//! statistic), the bytes moved in 8
//! columns with 1024-based auto units (`B`, `KB`, `MB`, `GB`, ...; the buffer limit
//! of 8 characters truncates e.g. `173.99GB` to `173.99G`, as uperf does), `/%.2f(s) =
//! `, the throughput in 12 columns with 1000-based bit units (`49.47Gb/s`), then
//! `%10.0fop/s`. The bytes and op counts are the master strands' flowop totals
//! (reads and writes both count: a round trip moves 2 × size bytes and is 2 ops),
//! and the time is the whole run. We print the `Starting ... threads running
//! profile:pingpong` line, a 79-dash rule (80-column terminal) and the `Total` line.
//!
//! Simplifications: the master's control thread (polling the slave every second)
//! and the slave's control connection are not modelled; connect/accept is one
//! syscall each, without the TCP handshake; the per-call costs are the cost table's
//! `C_TCP_W8K` / `C_TCP_R8K`, with a copy cost proportional to the size above 8 KiB
//! added as CPU work before each call (smaller messages keep the 8 KiB cost); the
//! disconnect transaction is cut off by the time limit.

use super::{pos, Generated, Tool, ToolInput, ToolResult};
use crate::config::TableReader;
use crate::error::InputError;
use crate::machine::Machine;
use crate::workload::dist::Dist;
use crate::workload::ipc::ChanKind;
use crate::workload::program::{
    ChanDecl, IdxExpr, LoopCount, ObjRef, Op, Program, TaskSpec, WorkloadSpec,
};
use std::collections::BTreeMap;
use std::sync::Arc;

/// Options of the pingpong profile.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UperfOpts {
    pub nthreads: u32,
    pub size: u32,
    pub duration_ns: u64,
}

impl Default for UperfOpts {
    /// The published profile: 1 thread, 8 KiB, 30 s.
    fn default() -> Self {
        UperfOpts {
            nthreads: 1,
            size: 8192,
            duration_ns: 30_000_000_000,
        }
    }
}

fn inst(base: u32, count: u32) -> ObjRef {
    ObjRef {
        base,
        count,
        idx: IdxExpr::Instance { div: 1, add: 0 },
    }
}

/// Extra copy work of a `size`-byte call over the 8 KiB one the cost table holds.
fn extra(cost_8k: u64, size: u32) -> Option<Op> {
    let over = u64::from(size.saturating_sub(8192));
    (over > 0).then(|| Op::Compute(Dist::Const(cost_8k * over / 8192)))
}

/// Metric names.
pub const MASTER_READS: &str = "master_reads";
pub const MASTER_WRITES: &str = "master_writes";
pub const SLAVE_READS: &str = "slave_reads";
pub const SLAVE_WRITES: &str = "slave_writes";

/// The pingpong workload. Programs: 0 = master strand, 1 = slave strand. Channels:
/// `up[0..T]` (0..T), `down[0..T]` (T..2T). Barriers: 0 = masters, 1 = slaves. Tasks:
/// T masters (process 0) then T slaves (process 1); strand i uses connection i.
pub fn spec(o: &UperfOpts, m: &Machine) -> WorkloadSpec {
    let t = o.nthreads;
    let mut s = WorkloadSpec {
        channels: vec![
            ChanDecl {
                name: "up".into(),
                kind: ChanKind::TcpLoopback,
                count: t,
            },
            ChanDecl {
                name: "down".into(),
                kind: ChanKind::TcpLoopback,
                count: t,
            },
        ],
        barriers: vec![t, t],
        duration_ns: Some(o.duration_ns),
        ..WorkloadSpec::default()
    };
    let mr = s.metric(MASTER_READS, "count");
    let mw = s.metric(MASTER_WRITES, "count");
    let sr = s.metric(SLAVE_READS, "count");
    let sw = s.metric(SLAVE_WRITES, "count");
    let (up, down) = (inst(0, t), inst(t, t));
    let (wx, rx) = (
        extra(m.cost.tcp_write_8k, o.size),
        extra(m.cost.tcp_read_8k, o.size),
    );
    let bytes = o.size;
    let strand = |bar: u32, first: [Op; 2], second: [Op; 2]| {
        let mut ops = vec![
            Op::Syscall,
            Op::Barrier(ObjRef {
                base: bar,
                count: 1,
                idx: IdxExpr::Const(0),
            }),
            Op::Loop {
                count: LoopCount::Forever,
                end: 0,
            },
        ];
        for [call, count] in [first, second] {
            let x = if matches!(call, Op::Write { .. }) {
                wx
            } else {
                rx
            };
            ops.extend(x);
            ops.push(call);
            ops.push(count);
        }
        let end = ops.len();
        ops[2] = Op::Loop {
            count: LoopCount::Forever,
            end,
        };
        ops.push(Op::EndLoop { start: 2 });
        ops
    };
    s.programs.push(Program {
        name: "uperf-master".into(),
        work_class: None,
        ops: strand(
            0,
            [Op::Read { ch: down, bytes }, Op::Count { metric: mr }],
            [Op::Write { ch: up, bytes }, Op::Count { metric: mw }],
        ),
    });
    s.programs.push(Program {
        name: "uperf-slave".into(),
        work_class: None,
        ops: strand(
            1,
            [Op::Write { ch: down, bytes }, Op::Count { metric: sw }],
            [Op::Read { ch: up, bytes }, Op::Count { metric: sr }],
        ),
    });
    for (prog, role) in [(0, "master"), (1, "slave")] {
        for i in 0..t {
            s.tasks.push(TaskSpec {
                process: Some(prog as u32),
                ..TaskSpec::new(format!("uperf-{role}-{i}"), prog, i)
            });
        }
    }
    s
}

/// Parse `[workload]` of kind `uperf-pingpong`.
pub fn parse(w: &TableReader<'_>, m: &Machine) -> Result<Generated, InputError> {
    let d = UperfOpts::default();
    let o = UperfOpts {
        nthreads: pos(w, "nthreads", d.nthreads)?,
        size: pos(w, "size", d.size)?,
        duration_ns: super::secs_opt(w, "duration", d.duration_ns)?,
    };
    if o.nthreads > 4096 {
        return Err(w.err("nthreads", "`nthreads` must be at most 4096"));
    }
    if o.size > 1 << 30 {
        return Err(w.err("size", "`size` must be at most 1 GiB"));
    }
    Ok(Generated {
        spec: spec(&o, m),
        tool: Arc::new(UperfTool {
            nthreads: o.nthreads,
            size: o.size,
        }),
    })
}

/// uperf's `decimal_to_string` + `print_decimal`: auto units (1000-based bits with
/// `b/s`, or 1024-based bytes with `B`), two decimals, cut to `width − 1` characters
/// (uperf's buffer size) and right-aligned in `width` columns.
pub(crate) fn uperf_number(value: f64, width: usize, bits: bool) -> String {
    const SUFFIX: &[u8] = b" KMGTPEZ";
    let div = if bits { 1000.0 } else { 1024.0 };
    let s = if value == 0.0 {
        "0".to_string()
    } else {
        let mut v = value;
        let mut p = 0;
        while v > div && p < SUFFIX.len() - 1 {
            v /= div;
            p += 1;
        }
        let unit = if bits { "b/s" } else { "B" };
        if p == 0 {
            format!("{v:.2}{unit}")
        } else {
            format!("{v:.2}{}{unit}", SUFFIX[p] as char)
        }
    };
    let cut: String = s.chars().take(width.saturating_sub(1)).collect();
    format!("{cut:>width$}")
}

/// How uperf reports the pingpong run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UperfTool {
    pub nthreads: u32,
    pub size: u32,
}

impl UperfTool {
    /// The printed result for `ops` master flowops (reads + writes) in `ns`.
    pub fn result(&self, ops: u64, ns: u64) -> ToolResult {
        let bytes = ops * u64::from(self.size);
        let secs = ns as f64 / 1e9;
        let bps = bytes as f64 * 8.0 / secs;
        let ops_s = ops as f64 / secs;
        let rule = "-".repeat(79);
        let text = format!(
            "Starting {} threads running profile:pingpong ...   0.00 seconds\n{rule}\n\
             {:<6} {} /{:.2}(s) = {}  {:>10.0}op/s",
            self.nthreads,
            "Total",
            uperf_number(bytes as f64, 8, false),
            secs,
            uperf_number(bps, 12, true),
            ops_s
        );
        let mut values = BTreeMap::new();
        values.insert("throughput_gbps".to_string(), bps / 1e9);
        values.insert("ops_per_sec".to_string(), ops_s);
        values.insert("bytes".to_string(), bytes as f64);
        values.insert("time_s".to_string(), secs);
        ToolResult { text, values }
    }
}

impl Tool for UperfTool {
    /// Printed at the end of the run (the time limit).
    fn report(&self, input: &ToolInput<'_>) -> Option<ToolResult> {
        if input.sim_time_ns == 0 {
            return None;
        }
        let ops = input.hist(MASTER_READS)?.count() + input.hist(MASTER_WRITES)?.count();
        Some(self.result(ops, input.sim_time_ns))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::machine::presets;

    #[test]
    fn wiring() {
        let m = presets::preset("juno-r0").unwrap();
        let s = spec(
            &UperfOpts {
                nthreads: 3,
                ..UperfOpts::default()
            },
            &m,
        );
        s.validate().unwrap();
        assert_eq!(s.tasks.len(), 6);
        assert_eq!(s.nr_channels(), 6);
        assert_eq!(s.barriers, vec![3, 3]);
        assert_eq!(s.duration_ns, Some(30_000_000_000));
        // Master i reads down[i] (3 + i) and writes up[i] (i); slave i the reverse,
        // writing first.
        let calls = |p: usize, i: u32| -> Vec<(bool, usize)> {
            s.programs[p]
                .ops
                .iter()
                .filter_map(|o| match o {
                    Op::Read { ch, bytes: 8192 } => Some((false, ch.resolve(i))),
                    Op::Write { ch, bytes: 8192 } => Some((true, ch.resolve(i))),
                    _ => None,
                })
                .collect()
        };
        for i in 0..3 {
            assert_eq!(
                calls(0, i),
                vec![(false, 3 + i as usize), (true, i as usize)]
            );
            assert_eq!(
                calls(1, i),
                vec![(true, 3 + i as usize), (false, i as usize)]
            );
        }
        // Masters are threads of one process, slaves of another.
        assert!(s.tasks[..3]
            .iter()
            .all(|t| t.process == Some(0) && t.prog == 0));
        assert!(s.tasks[3..]
            .iter()
            .all(|t| t.process == Some(1) && t.prog == 1));
    }

    #[test]
    fn big_messages_cost_more() {
        let m = presets::preset("juno-r0").unwrap();
        let s = spec(
            &UperfOpts {
                size: 16384,
                ..UperfOpts::default()
            },
            &m,
        );
        s.validate().unwrap();
        let extra = crate::workload::generators::const_computes(&s.programs[0]);
        assert_eq!(extra, vec![m.cost.tcp_read_8k, m.cost.tcp_write_8k]);
    }

    #[test]
    fn number_format() {
        assert_eq!(uperf_number(49.47e9, 12, true), "   49.47Gb/s");
        assert_eq!(uperf_number(999.0, 12, true), "   999.00b/s");
        assert_eq!(uperf_number(1500.0, 12, true), "    1.50Kb/s");
        // 1024-based bytes; 8 columns hold at most 7 characters.
        assert_eq!(uperf_number(16384.0, 8, false), " 16.00KB");
        assert_eq!(uperf_number(0.0, 8, false), "       0");
        let b = 173.99 * 1024.0 * 1024.0 * 1024.0;
        assert_eq!(uperf_number(b, 8, false), " 173.99G");
    }

    #[test]
    fn metric_as_uperf_computes_it() {
        // 500 round trips of 8 KiB in 1 s: 1000 ops, 8 192 000 bytes (7.81 MiB),
        // 65.536 Mb/s, 1000 op/s.
        let r = UperfTool {
            nthreads: 1,
            size: 8192,
        }
        .result(1000, 1_000_000_000);
        assert_eq!(r.values["bytes"], 8_192_000.0);
        assert!((r.values["throughput_gbps"] - 0.065536).abs() < 1e-12);
        assert_eq!(r.values["ops_per_sec"], 1000.0);
        let last = r.text.lines().last().unwrap();
        assert_eq!(
            last,
            "Total    7.81MB /1.00(s) =    65.54Mb/s        1000op/s"
        );
    }
}
