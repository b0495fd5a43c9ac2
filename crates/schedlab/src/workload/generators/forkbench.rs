//! `forkbench`: serial fork, child exit, wait (`spec/workloads.md` §3.10).
//!
//! **The real tool (identity uncertain).** Seed 001 names "forkbench" without a
//! source. The program of that name found is the NetBSD one (from 4.4BSD's
//! `sys/tests/benchmarks/forks.c`), called as `forkbench number-of-forks sbrk-size`:
//! it reads the time of day, grows the heap by `sbrk-size` bytes and writes one byte
//! every 1 KiB of it (faulting every page in), then `number-of-forks` times: `fork`;
//! the child `_exit`s at once; the parent `wait`s until that child is reaped. It reads
//! the time of day again and prints `Time: %d microseconds.` with the elapsed
//! microseconds divided by the fork count (integer division). Each child is placed
//! by the fork-balance path (often on another, idle CPU, which must leave its idle
//! state), runs its exit, and wakes the parent from its CPU.
//!
//! **Model.** One parent process: `mark` (the first time of day), if `heap > 0` an
//! `sbrk` syscall and the page faults of touching the heap as CPU work, then `forks`
//! times: the page-table copy of the heap as CPU work, `fork` (cost `C_FORK`), `wait`.
//! The child: the page-table teardown of the heap as CPU work, then `exit` (`C_EXIT`).
//! The parent records the elapsed time once (metric `time`).
//!
//! **Heap cost (all estimates).** Pages = ⌈heap / page size⌉ with 64 KiB pages on
//! POWER (as ppc64 kernels are usually built) and 4 KiB elsewhere. Faulting a page
//! in: 500 ns + 0.125 ns per byte zeroed ([`FAULT_NS`], [`ZERO_NS_PER_KIB`]); fork
//! copies one page-table entry per page ([`PTE_COPY_NS`]) and the child's exit zaps
//! it ([`PTE_ZAP_NS`]). The parent never writes the heap after the fork, so there are
//! no copy-on-write faults.
//!
//! **Output.** Seed 001's HiKey960 figures (7.97 vs 8.05) look more like a total in
//! seconds than microseconds per fork, so both are given: the tool's own line, then
//! a line marked `[schedlab]` with the total. Values: `usecs_per_fork` (the printed
//! integer), `total_time_s`.

use super::{pos, Generated, Tool, ToolInput, ToolResult};
use crate::config::TableReader;
use crate::error::InputError;
use crate::machine::{Arch, Machine};
use crate::workload::dist::Dist;
use crate::workload::program::{LoopCount, Op, Program, TaskSpec, WorkloadSpec};
use std::collections::BTreeMap;
use std::sync::Arc;

/// Fixed cost of an anonymous page fault (ns, est.).
pub const FAULT_NS: u64 = 500;
/// Zeroing cost per KiB of a faulted page (ns, est.: 0.125 ns per byte).
pub const ZERO_NS_PER_KIB: u64 = 128;
/// Copying one page-table entry at fork (ns, est.).
pub const PTE_COPY_NS: u64 = 30;
/// Zapping one page-table entry at exit (ns, est.).
pub const PTE_ZAP_NS: u64 = 20;

/// Metric holding the elapsed time (ns).
pub const TIME_METRIC: &str = "time";

/// Options: `forks` (number-of-forks) and `heap` (sbrk-size, bytes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ForkOpts {
    pub forks: u32,
    pub heap: u64,
}

/// Page size of machine `m` (bytes).
pub(crate) fn page_size(m: &Machine) -> u64 {
    if m.arch == Arch::Power {
        65536
    } else {
        4096
    }
}

/// The forkbench workload. Programs: 0 = parent, 1 = child.
pub fn spec(o: &ForkOpts, m: &Machine) -> WorkloadSpec {
    let page = page_size(m);
    let pages = o.heap.div_ceil(page);
    let mut s = WorkloadSpec::default();
    let time = s.metric(TIME_METRIC, "ns");
    let mut p = vec![Op::Mark { slot: 0 }];
    if o.heap > 0 {
        p.push(Op::Syscall);
        p.push(Op::Compute(Dist::Const(
            pages * (FAULT_NS + ZERO_NS_PER_KIB * page / 1024),
        )));
    }
    let l = p.len();
    p.push(Op::Loop {
        count: LoopCount::Times(Dist::Const(u64::from(o.forks))),
        end: 0,
    });
    if pages > 0 {
        p.push(Op::Compute(Dist::Const(pages * PTE_COPY_NS)));
    }
    p.push(Op::Fork {
        prog: 1,
        thread: false,
    });
    p.push(Op::WaitChild);
    let end = p.len();
    p[l] = Op::Loop {
        count: LoopCount::Times(Dist::Const(u64::from(o.forks))),
        end,
    };
    p.push(Op::EndLoop { start: l });
    p.push(Op::Record {
        metric: time,
        slot: 0,
    });
    p.push(Op::Exit);
    let mut c = Vec::new();
    if pages > 0 {
        c.push(Op::Compute(Dist::Const(pages * PTE_ZAP_NS)));
    }
    c.push(Op::Exit);
    s.programs = vec![
        Program::new("forkbench", p),
        Program::new("forkbench-child", c),
    ];
    s.tasks.push(TaskSpec::main("forkbench"));
    s
}

/// Parse `[workload]` of kind `forkbench`.
pub fn parse(w: &TableReader<'_>, m: &Machine) -> Result<Generated, InputError> {
    let o = ForkOpts {
        forks: pos(w, "forks", 1000)?,
        heap: w.uint("heap", 0, 1 << 40)?.unwrap_or(0),
    };
    Ok(Generated {
        spec: spec(&o, m),
        tool: Arc::new(ForkTool { forks: o.forks }),
    })
}

/// How forkbench reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ForkTool {
    pub forks: u32,
}

impl ForkTool {
    /// The printed result for elapsed time `ns` (read as microseconds, like
    /// `gettimeofday`).
    pub fn result(&self, ns: u64) -> ToolResult {
        let us = ns / 1000;
        let per = us / u64::from(self.forks.max(1));
        let secs = us as f64 / 1e6;
        let mut values = BTreeMap::new();
        values.insert("usecs_per_fork".to_string(), per as f64);
        values.insert("total_time_s".to_string(), secs);
        ToolResult {
            text: format!(
                "Time: {per} microseconds.\n[schedlab] total: {secs:.6} s for {} forks",
                self.forks
            ),
            values,
        }
    }
}

impl Tool for ForkTool {
    /// Printed once the parent has reaped the last child.
    fn report(&self, input: &ToolInput<'_>) -> Option<ToolResult> {
        let h = input.hist(TIME_METRIC).filter(|h| h.count() == 1)?;
        Some(self.result(h.sum as u64))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::machine::presets;

    #[test]
    fn program_shape() {
        let m = presets::preset("juno-r0").unwrap();
        let s = spec(&ForkOpts { forks: 7, heap: 0 }, &m);
        s.validate().unwrap();
        assert_eq!(s.tasks.len(), 1);
        assert_eq!(
            s.programs[0].ops,
            vec![
                Op::Mark { slot: 0 },
                Op::Loop {
                    count: LoopCount::Times(Dist::Const(7)),
                    end: 4
                },
                Op::Fork {
                    prog: 1,
                    thread: false
                },
                Op::WaitChild,
                Op::EndLoop { start: 1 },
                Op::Record { metric: 0, slot: 0 },
                Op::Exit,
            ]
        );
        assert_eq!(s.programs[1].ops, vec![Op::Exit]);
    }

    #[test]
    fn heap_costs_scale_with_pages() {
        // 1 MiB: 256 pages of 4 KiB on Arm, 16 pages of 64 KiB on POWER.
        for (name, pages, page) in [("juno-r0", 256u64, 4096u64), ("power9-176", 16, 65536)] {
            let m = presets::preset(name).unwrap();
            let s = spec(
                &ForkOpts {
                    forks: 2,
                    heap: 1 << 20,
                },
                &m,
            );
            s.validate().unwrap();
            let w = crate::workload::generators::const_computes(&s.programs[0]);
            assert_eq!(
                w,
                vec![
                    pages * (FAULT_NS + ZERO_NS_PER_KIB * page / 1024),
                    pages * PTE_COPY_NS
                ],
                "{name}"
            );
            assert_eq!(
                s.programs[1].ops[0],
                Op::Compute(Dist::Const(pages * PTE_ZAP_NS))
            );
        }
    }

    #[test]
    fn metric_as_forkbench_computes_it() {
        // 1000 forks in 123 456 789 ns: 123 456 us elapsed, 123 us per fork
        // (integer division).
        let r = ForkTool { forks: 1000 }.result(123_456_789);
        assert_eq!(r.values["usecs_per_fork"], 123.0);
        assert_eq!(r.values["total_time_s"], 0.123456);
        assert_eq!(r.text.lines().next().unwrap(), "Time: 123 microseconds.");
    }
}
