//! Kernel threads as background activity (`[kernel] kthreads = "guest"`).
//!
//! A real system is never only its workload. Kernel threads wake on their own: the
//! RCU grace-period kthread (`rcu_preempt`) drives grace periods, the per-CPU
//! kworkers run deferred work pinned to their CPU (vmstat updates, flushes, timer
//! work), and each node's `kcompactd` checks for proactive compaction every
//! `HPAGE_FRAG_CHECK_INTERVAL_MSEC` (500 ms). Each activation makes a CPU go through
//! `schedule()`; an idle CPU that does so runs its class's balance or dispatch path.
//! Under CFS that is one more newidle pass now and then; under a sched_ext scheduler
//! that queues work on a shared DSQ and kicks no idle CPU (scx_simple), those passes
//! are the only way queued work reaches an idle CPU: the oracle measured released hogs
//! spreading in 0.5–0.7 s on real 6.12 guests, while a simulation without these threads
//! left them on one CPU (docs/validation.md, Part 3).
//!
//! The model adds them as daemon tasks (the run does not wait for them), nice 0,
//! `SCHED_NORMAL`, as the traces show them (`prio=120`): one `rcu_preempt`,
//! unpinned; a `kworker/N:1` pinned to each CPU; a `kcompactdN` bound to each node's
//! CPUs. Each sleeps, then computes a burst, forever. The RCU and kworker intervals
//! are exponential (event-driven work), kcompactd's the fixed 500 ms after a
//! uniformly random first phase. Rates and bursts are a *profile*; the one profile,
//! `guest`, is what the recorded QEMU guests showed (docs/validation.md, "Background
//! activity in the guests"): ≈ 30 `rcu_preempt` activations a second whatever the
//! size, ≈ 1.5 a second per CPU for the kworkers, 2 a second per node for kcompactd,
//! with the guest's (TCG-inflated) burst lengths. They exist from boot
//! (`WorkloadSpec::boot`): at the start each is asleep in its first sleep on the
//! first CPU it may use, its load long decayed, not forked then; forking them all at
//! time 0 (as until 2026-12-03) woke every CPU at once just as the workload made its
//! first tasks, and fork placement saw the creator's node busy with them
//! (docs/validation.md, "Fixes over runs", 8.). Simplified: a kernel thread here
//! has an address space of its own (the kernel's borrow the previous one, so the
//! model charges an `mm_switch` the kernel does not); unbound kworkers and
//! `ksoftirqd` (under 3 activations a second in those guests) are left out.

use super::dist::Dist;
use super::program::{LoopCount, Op, Program, TaskSpec, WorkloadSpec};
use crate::machine::{CpuMask, Machine};
use std::sync::Arc;

/// Rates (mean interval, ns) and bursts (ns of work) of one background profile.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Profile {
    pub name: &'static str,
    pub rcu_interval_ns: u64,
    pub rcu_burst_ns: u64,
    pub kworker_interval_ns: u64,
    pub kworker_burst_ns: u64,
    pub kcompactd_period_ns: u64,
    pub kcompactd_burst_ns: u64,
}

/// `HPAGE_FRAG_CHECK_INTERVAL_MSEC` (mm/compaction.c), in ns.
pub const KCOMPACTD_PERIOD_NS: u64 = 500_000_000;

/// The profiles `[kernel] kthreads` knows.
pub const PROFILES: &[Profile] = &[Profile {
    // Measured in the recorded 6.12 guests (1s4c2t, 2s2c2t-2n, 4s2c2t-4n):
    // rcu_preempt 28.7–31.5 /s at 209–369 µs; per-CPU kworkers 1.2–1.8 /s per CPU
    // at 266–459 µs; kcompactd 2 /s per node at 208–981 µs.
    name: "guest",
    rcu_interval_ns: 33_000_000,
    rcu_burst_ns: 270_000,
    kworker_interval_ns: 670_000_000,
    kworker_burst_ns: 340_000,
    kcompactd_period_ns: KCOMPACTD_PERIOD_NS,
    kcompactd_burst_ns: 600_000,
}];

/// The profile named `name`.
pub fn profile(name: &str) -> Option<&'static Profile> {
    PROFILES.iter().find(|p| p.name == name)
}

/// `forever { sleep(gap); compute(burst) }`, after a first sleep of `phase`.
fn program(name: String, phase: Dist, gap: Dist, burst: u64) -> Program {
    Program::new(
        name,
        vec![
            Op::Sleep(phase),
            Op::Loop {
                count: LoopCount::Forever,
                end: 4,
            },
            Op::Compute(Dist::Const(burst)),
            Op::Sleep(gap),
            Op::EndLoop { start: 1 },
        ],
    )
}

/// Add `p`'s kernel threads for machine `m` to `spec`, as daemons.
pub fn add(spec: &mut WorkloadSpec, m: &Machine, p: &Profile) {
    let push = |spec: &mut WorkloadSpec, name: String, prog: Program, cpus: Option<CpuMask>| {
        spec.programs.push(prog);
        let mut t = TaskSpec::new(name, spec.programs.len() - 1, 0);
        t.cpus = cpus.map(Arc::new);
        spec.daemons.push(spec.tasks.len());
        spec.boot.push(spec.tasks.len());
        spec.tasks.push(t);
    };
    let exp = |mean: u64| Dist::Exp { mean };
    push(
        spec,
        "rcu_preempt".into(),
        program(
            "rcu_preempt".into(),
            exp(p.rcu_interval_ns),
            exp(p.rcu_interval_ns),
            p.rcu_burst_ns,
        ),
        None,
    );
    for cpu in 0..m.nr_cpus() {
        let name = format!("kworker/{cpu}:1");
        push(
            spec,
            name.clone(),
            program(
                name,
                exp(p.kworker_interval_ns),
                exp(p.kworker_interval_ns),
                p.kworker_burst_ns,
            ),
            Some(CpuMask::from_iter([cpu])),
        );
    }
    let nodes = m.cpus.iter().map(|c| c.node).max().map_or(0, |n| n + 1);
    for node in 0..nodes {
        let cpus: CpuMask = m
            .cpus
            .iter()
            .enumerate()
            .filter(|(_, c)| c.node == node)
            .map(|(i, _)| i)
            .collect();
        let name = format!("kcompactd{node}");
        push(
            spec,
            name.clone(),
            program(
                name,
                Dist::Uniform {
                    lo: 0,
                    hi: p.kcompactd_period_ns,
                },
                Dist::Const(p.kcompactd_period_ns),
                p.kcompactd_burst_ns,
            ),
            Some(cpus),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::machine::presets::test_topology;

    #[test]
    fn one_rcu_thread_a_kworker_per_cpu_and_a_kcompactd_per_node_as_daemons() {
        // 2 nodes × 1 package × 2 cores × 2 threads: 8 CPUs.
        let m = test_topology(2, 1, 2, 2);
        let mut spec = WorkloadSpec::default();
        add(&mut spec, &m, profile("guest").unwrap());
        spec.validate().unwrap();
        let names: Vec<&str> = spec.tasks.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names.len(), 1 + 8 + 2);
        assert_eq!(names[0], "rcu_preempt");
        assert_eq!(names[1], "kworker/0:1");
        assert_eq!(names[8], "kworker/7:1");
        assert_eq!(&names[9..], ["kcompactd0", "kcompactd1"]);
        assert_eq!(spec.daemons, (0..11).collect::<Vec<_>>());
        assert_eq!(spec.boot, spec.daemons, "every one exists from boot");
        assert!(spec.tasks[0].cpus.is_none());
        assert_eq!(
            *spec.tasks[3].cpus.as_deref().unwrap(),
            CpuMask::from_iter([2])
        );
        let node = |n: usize| -> CpuMask {
            m.cpus
                .iter()
                .enumerate()
                .filter(|(_, c)| c.node == n)
                .map(|(i, _)| i)
                .collect()
        };
        assert_eq!(*spec.tasks[10].cpus.as_deref().unwrap(), node(1));
        assert_eq!(node(1).weight(), 4);
        // kcompactd: a random phase below the period, then the period itself.
        let p = &spec.programs[spec.tasks[9].prog];
        assert_eq!(
            p.ops[0],
            Op::Sleep(Dist::Uniform {
                lo: 0,
                hi: KCOMPACTD_PERIOD_NS
            })
        );
        assert_eq!(p.ops[3], Op::Sleep(Dist::Const(KCOMPACTD_PERIOD_NS)));
        assert!(profile("none").is_none() && profile("bare").is_none());
    }
}
