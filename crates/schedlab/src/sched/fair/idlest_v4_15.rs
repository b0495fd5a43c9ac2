//! The slow path before the v5.5 rework: `find_idlest_group` and
//! `find_idlest_group_cpu` as v4.15 has them (seed 003's base), under the SIM_
//! version switch `IDLEST_V4_15` (docs/design/seed-bases.md, §2.2 item 3).
//!
//! **The concept.** Where v5.6 classifies each candidate group (has_spare,
//! fully_busy, overloaded, ...) and spreads by idle-CPU counts, v4.15 compares
//! *loads*. For every group that meets the task's affinity it sums, over its CPUs,
//! the runqueues' runnable load (`source_load`/`target_load` with
//! `forkexec_idx = wake_idx = 0`, i.e. `runnable_load_avg`: sleepers excluded) and
//! their `load_avg` (blocked load included), both scaled to the group's capacity,
//! and the largest spare capacity of one CPU (`capacity_of − cpu_util_wake`, at
//! least 0). With `imb = 1024 × (pct − 100) / 100` and `scale = 100 + (pct − 100) / 2`:
//!
//! * a remote group becomes the idlest when its runnable load is below the idlest's
//!   by more than `imb`, or, runnable loads being within `imb` of each other, when
//!   `100 × idlest.avg_load > scale × its avg_load` (the blocked load decides);
//! * the remote group with the most spare capacity is remembered too;
//! * except for a fork (a new task has no utilization yet), spare capacity decides
//!   first: stay when the local group's spare exceeds half the task's `util_avg` and,
//!   scaled by `scale`, beats the best remote spare over 100; else go to that remote
//!   group when its spare exceeds half the task's util;
//! * otherwise stay unless the idlest group is better than the local one by the same
//!   two tests (runnable load lower by more than `imb`, or close runnable loads and
//!   `100 × local.avg_load ≥ scale × idlest.avg_load`).
//!
//! A child that blocks at once keeps its weight in the `load_avg` of the CPU it
//! left, so a storm of forks that sleep alternates between the groups the blocked
//! loads make lighter, where v5.6 keeps them wherever the most CPUs are idle (and
//! on the local node while it has one idle CPU).
//!
//! **find_idlest_group_cpu** (v4.15, in fair/idlest.rs under the same switch):
//! among idle CPUs the one in the shallowest cpuidle state, ties to the latest
//! `idle_stamp` (v5.6's rule too); otherwise the least runnable load
//! (`weighted_cpuload`), a tie going to the current CPU. No SCHED_IDLE shortcut.
//!
//! **Not modelled here:** the v4.15 load balancer, `cpu_load[]` indexes (all 0 for
//! these calls, so no decay is involved) and `wake_affine_weight`
//! (docs/kernel-mapping.md, `v4.15` preset). The outer walk (`find_idlest_cpu`) is
//! v5.6's, which has the same shape.

use crate::engine::Observer;
use crate::sched::core::Kernel;
use crate::sched::fair::wakeup::Probes;
use crate::sched::topology::SD_BALANCE_FORK;
use crate::sched::{Pid, SchedEvent};

/// One candidate group's loads in v4.15's `find_idlest_group`, scaled to the
/// group's capacity (`× 1024 / sgc.capacity`), and its best spare capacity.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GroupLoad {
    pub local: bool,
    pub runnable_load: u64,
    pub avg_load: u64,
    pub max_spare_cap: u64,
}

/// The decision of v4.15's `find_idlest_group` on plain numbers: the index in
/// `groups` to descend into, or `None` to stay local. `fork` = SD_BALANCE_FORK
/// (spare capacity is not looked at), `task_util` = the task's `util_avg`.
pub fn idlest_v4_15_decide(
    groups: &[GroupLoad],
    imbalance_pct: u32,
    fork: bool,
    task_util: u64,
) -> Option<usize> {
    let imb = 1024 * u64::from(imbalance_pct - 100) / 100;
    let scale = 100 + u64::from(imbalance_pct - 100) / 2;
    let (mut min_runnable, mut min_avg) = (u64::MAX, u64::MAX);
    let (mut this_runnable, mut this_avg, mut this_spare) = (u64::MAX, u64::MAX, 0);
    let mut idlest = None;
    let (mut most_spare, mut most_spare_g) = (0, None);
    for (i, g) in groups.iter().enumerate() {
        if g.local {
            this_runnable = g.runnable_load;
            this_avg = g.avg_load;
            this_spare = g.max_spare_cap;
            continue;
        }
        if min_runnable > g.runnable_load.saturating_add(imb) {
            min_runnable = g.runnable_load;
            min_avg = g.avg_load;
            idlest = Some(i);
        } else if g.runnable_load < min_runnable.saturating_add(imb)
            && u128::from(min_avg) * 100 > u128::from(g.avg_load) * u128::from(scale)
        {
            min_avg = g.avg_load;
            idlest = Some(i);
        }
        if most_spare < g.max_spare_cap {
            most_spare = g.max_spare_cap;
            most_spare_g = Some(i);
        }
    }
    if !fork {
        if this_spare > task_util / 2 && scale * this_spare > 100 * most_spare {
            return None;
        }
        if most_spare > task_util / 2 {
            return most_spare_g;
        }
    }
    let i = idlest?;
    if min_runnable > this_runnable.saturating_add(imb) {
        return None;
    }
    if this_runnable < min_runnable.saturating_add(imb)
        && u128::from(this_avg) * 100 < u128::from(min_avg) * u128::from(scale)
    {
        return None;
    }
    Some(i)
}

impl<O: Observer<SchedEvent>> Kernel<O> {
    /// `find_idlest_group(sd, p, this_cpu, sd_flag)` (kernel/sched/fair.c, v4.15):
    /// the group to descend into, or `None` to stay in the local group. Every CPU
    /// whose loads are read is a probe by `waker`.
    pub fn find_idlest_group_v4_15(
        &self,
        sd: usize,
        pid: Pid,
        this_cpu: usize,
        sd_flag: u32,
        waker: usize,
        pr: &mut Probes,
    ) -> Option<usize> {
        let d = &self.topo.domains[sd];
        let allowed = self.cpus_allowed(pid);
        let mut ids = Vec::with_capacity(d.groups.len());
        let mut loads = Vec::with_capacity(d.groups.len());
        for &g in &d.groups {
            let grp = &self.topo.groups[g];
            if !grp.span.intersects(allowed) {
                continue;
            }
            let (mut runnable, mut avg, mut spare) = (0u64, 0u64, 0u64);
            for i in grp.span.iter() {
                self.probe(pr, waker, i);
                let cfs = &self.rqs[i].cfs.avg;
                runnable += cfs.runnable_load_avg;
                avg += cfs.load_avg;
                let s = self
                    .capacity_of(i)
                    .saturating_sub(self.cpu_util_without(i, pid));
                spare = spare.max(s);
            }
            let cap = self.topo.sgc[grp.sgc].capacity.max(1);
            ids.push(g);
            loads.push(GroupLoad {
                local: grp.span.test(this_cpu),
                runnable_load: runnable * 1024 / cap,
                avg_load: avg * 1024 / cap,
                max_spare_cap: spare,
            });
        }
        let util = self.tasks[pid as usize].se.avg.util_avg;
        idlest_v4_15_decide(
            &loads,
            d.imbalance_pct,
            sd_flag & SD_BALANCE_FORK != 0,
            util,
        )
        .map(|i| ids[i])
    }
}
