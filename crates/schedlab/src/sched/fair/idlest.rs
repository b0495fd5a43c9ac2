//! The wakeup slow path: `find_idlest_cpu`, `find_idlest_group`,
//! `update_sg_wakeup_stats`, `find_idlest_group_cpu` (kernel/sched/fair.c, v5.6,
//! after the v5.5 rework).
//!
//! **The concept.** Forks and execs (and, on v5.6 asymmetric systems, wakeups that
//! may not be affine) descend from the highest domain carrying the placement's
//! `sd_flag`: at each level pick the idlest group, then its idlest CPU; when that
//! CPU differs from the current one, continue in *its* hierarchy at the highest
//! flagged domain smaller than the level just used.
//!
//! **Group statistics** ignore the task being placed (`cpu_load_without`,
//! `cpu_util_without`, `idle_cpu_without`, minus its running count on its own CPU).
//! A group is classified with the shared `group_classify`; **v5.6 quirk:**
//! `avg_load = load × 1024 / capacity` is computed only for `has_spare` groups
//! (`group_type < fully_busy`), so fully_busy and overloaded groups compare with
//! `avg_load = 0`. v5.8 fixed the test (`IDLEST_AVG_LOAD`): busy groups get their
//! `avg_load`, has_spare groups (compared by idle CPUs) do not need it.
//!
//! **Choosing** (`imb = 1024 × (imbalance_pct − 100) / 100`): the best non-local
//! group (`update_pick_idlest`: lower type; then lower avg_load for busy types,
//! more idle CPUs for has_spare, larger max capacity for misfit; from v5.9,
//! `IDLEST_GROUP_UTIL`, a has_spare tie of idle CPUs goes to the lower `group_util`,
//! whose blocked part remembers a task that just slept there) against the local:
//!
//! | local vs idlest type | decision |
//! |---|---|
//! | local lower | stay (None) |
//! | local higher | idlest |
//! | both overloaded / fully_busy | stay if (NUMA and `idlest + imb ≥ local`) or `idlest ≥ local + imb` or `100 × local ≤ pct × idlest` |
//! | both imbalanced / asym_packing | stay |
//! | both misfit | stay if `local.max_capacity ≥ idlest.max_capacity` |
//! | both has_spare | NUMA: stay if local has any idle CPU (preferred-node rules need NUMA balancing: off); stay if `local.idle_cpus ≥ idlest.idle_cpus` |
//!
//! With `IMB_NUMA_NR` (v5.18 in its v6.12 form) the NUMA has_spare rule is instead:
//! stay if `adjust_numa_imbalance(|local.idle − idlest.idle|, local.nr_running + 1,
//! min(|local ∩ allowed|, sd.imb_numa_nr))` is 0, i.e. the local node would run at
//! most `imb_numa_nr` tasks and the idle-CPU difference is at most 2.
//!
//! **find_idlest_group_cpu**: a SCHED_IDLE-only CPU at once; else among idle CPUs the
//! one in the shallowest cpuidle state (a CPU not inside a state only wins on a
//! later `idle_stamp` at equal or unset latency), ties to the latest `idle_stamp`;
//! else the least loaded (`cpu_load`), defaulting to the current CPU. With
//! `BREAK_EVEN` (seed 001) an exit-latency tie goes to the earliest `rq.break_even`
//! (entry time + exit latency of the state entered) instead ([`ShallowestIdle`]).
//!
//! **Cost.** Every CPU whose statistics are gathered and every CPU examined by
//! `find_idlest_group_cpu` is a probe (fair/wakeup.rs); one `FuncCall` for
//! `find_idlest_cpu` with the total.
//!
//! With `IDLEST_V4_15` the group and CPU choices are v4.15's load-based ones
//! instead (fair/idlest_v4_15.rs); the walk stays this one.
//!
//! **Gaps.** No NUMA balancing (`p.numa_preferred_nid` rules off, as with
//! `CONFIG_NUMA_BALANCING` disabled); no uclamp; no asym packing producer.

use crate::engine::Observer;
use crate::sched::core::{Kernel, TaskState};
use crate::sched::fair::balance::adjust_numa_imbalance;
use crate::sched::fair::group::{fits_capacity, group_classify, GroupType, SgLbStats};
use crate::sched::fair::wakeup::Probes;
use crate::sched::features::SchedFeat;
use crate::sched::topology::{SD_ASYM_CPUCAPACITY, SD_BALANCE_FORK, SD_NUMA};
use crate::sched::{Func, Pid, SchedEvent};

impl<O: Observer<SchedEvent>> Kernel<O> {
    /// `task_running_on_cpu(cpu, p)` (v5.6): 1 when `p` is attached to and queued on
    /// `cpu` (a new task, not yet attached, counts nowhere).
    fn task_running_on_cpu(&self, cpu: usize, pid: Pid) -> u32 {
        let t = &self.tasks[pid as usize];
        if cpu != t.cpu || t.se.avg.last_update_time == 0 {
            return 0;
        }
        u32::from(t.se.on_rq)
    }

    /// `cpu_load_without(rq, p)` (v5.6): `cpu_load` minus `task_h_load(p)` when `p`
    /// is attached to that CPU.
    pub fn cpu_load_without(&self, cpu: usize, pid: Pid) -> u64 {
        let t = &self.tasks[pid as usize];
        let load = self.cpu_load(cpu);
        if cpu != t.cpu || t.se.avg.last_update_time == 0 {
            return load;
        }
        load.saturating_sub(self.task_h_load(Some(pid)))
    }

    /// `cpu_util_without(cpu, p)` (v5.6): the CPU's utilization without `p`'s
    /// contribution, util_est included, capped at `capacity_orig`.
    pub(crate) fn cpu_util_without(&self, cpu: usize, pid: Pid) -> u64 {
        let t = &self.tasks[pid as usize];
        if cpu != t.cpu || t.se.avg.last_update_time == 0 {
            return self.cpu_util(cpu);
        }
        let rq = &self.rqs[cpu];
        let mut util = rq.cfs.avg.util_avg.saturating_sub(t.se.avg.util_avg);
        if self.feat.has(SchedFeat::UTIL_EST) {
            let mut est = rq.cfs.avg.util_est.enqueued as u64;
            if t.se.on_rq || rq.curr == Some(pid) {
                est = est.saturating_sub(crate::sched::pelt::task_util_est_raw(&t.se.avg) as u64);
            }
            util = util.max(est);
        }
        util.min(rq.cpu_capacity_orig)
    }

    /// `idle_cpu_without(cpu, p)` (v5.6): the CPU runs the idle task or `p`, and has
    /// no pending wakeups (the caller tests `nr_running` without `p`).
    pub fn idle_cpu_without(&self, cpu: usize, pid: Pid) -> bool {
        let rq = &self.rqs[cpu];
        if rq.curr.is_some() && rq.curr != Some(pid) {
            return false;
        }
        rq.wake_list.is_empty()
    }

    /// `update_sg_wakeup_stats(sd, group, sgs, p)` (kernel/sched/fair.c, v5.6), with
    /// the v5.6 quirk: `avg_load` only for has_spare groups (`IDLEST_AVG_LOAD`, the
    /// v5.8 fix: only for fully_busy and overloaded groups).
    pub fn update_sg_wakeup_stats(
        &self,
        sd: usize,
        sg: usize,
        pid: Pid,
        waker: usize,
        pr: &mut Probes,
    ) -> SgLbStats {
        let g = &self.topo.groups[sg];
        let sgc = &self.topo.sgc[g.sgc];
        let mut s = SgLbStats::default();
        for i in g.span.iter() {
            self.probe(pr, waker, i);
            let rq = &self.rqs[i];
            s.group_load += self.cpu_load_without(i, pid);
            s.group_util += self.cpu_util_without(i, pid);
            let local = self.task_running_on_cpu(i, pid);
            s.sum_h_nr_running += rq.cfs.h_nr_running - local;
            let nr = rq.nr_running - local;
            s.sum_nr_running += nr;
            if nr == 0 && self.idle_cpu_without(i, pid) {
                s.idle_cpus += 1;
            }
        }
        let d = &self.topo.domains[sd];
        if d.has(SD_ASYM_CPUCAPACITY)
            && !fits_capacity(self.task_util_est_of(pid), sgc.max_capacity)
        {
            s.group_misfit_task_load = 1;
        }
        s.group_capacity = sgc.capacity;
        s.group_weight = g.group_weight;
        s.group_type = group_classify(d.imbalance_pct, sgc.imbalance, &s);
        // v5.6 computes it for has_spare groups only (an inverted test); v5.8 fixed
        // it to the busy types, the only ones find_idlest_group compares by load.
        let busy = matches!(s.group_type, GroupType::FullyBusy | GroupType::Overloaded);
        if busy == self.feat.has(SchedFeat::IDLEST_AVG_LOAD) {
            s.avg_load = s.group_load * 1024 / s.group_capacity;
        }
        s
    }

    /// `find_idlest_group(sd, p, this_cpu)` (kernel/sched/fair.c, v5.6): the group to
    /// descend into, or `None` to stay in the local group.
    pub fn find_idlest_group(
        &self,
        sd: usize,
        pid: Pid,
        this_cpu: usize,
        waker: usize,
        pr: &mut Probes,
    ) -> Option<usize> {
        let d = &self.topo.domains[sd];
        let allowed = self.cpus_allowed(pid);
        let mut idlest: Option<(usize, SgLbStats)> = None;
        let mut local: Option<(usize, SgLbStats)> = None;
        for &g in &d.groups {
            let span = &self.topo.groups[g].span;
            if !span.intersects(allowed) {
                continue;
            }
            let s = self.update_sg_wakeup_stats(sd, g, pid, waker, pr);
            if span.test(this_cpu) {
                local = Some((g, s));
            } else if self.update_pick_idlest(idlest.as_ref(), g, &s) {
                idlest = Some((g, s));
            }
        }
        let (ig, is) = idlest?;
        let Some((lg, ls)) = local else {
            return Some(ig);
        };
        let cmp = IdlestCmp {
            local_type: ls.group_type,
            idlest_type: is.group_type,
            local_avg_load: ls.avg_load,
            idlest_avg_load: is.avg_load,
            local_idle_cpus: ls.idle_cpus,
            idlest_idle_cpus: is.idle_cpus,
            local_max_capacity: self.topo.sgc[self.topo.groups[lg].sgc].max_capacity,
            idlest_max_capacity: self.topo.sgc[self.topo.groups[ig].sgc].max_capacity,
            imbalance_pct: d.imbalance_pct,
            numa: d.has(SD_NUMA),
            local_sum_nr_running: ls.sum_nr_running,
            // v6.12 caps it by the task's allowed CPUs in the local group whenever
            // `nr_cpus_allowed != NR_CPUS`, i.e. on every real configuration.
            imb_numa_nr: self.feat.has(SchedFeat::IMB_NUMA_NR).then(|| {
                let w = self.topo.groups[lg].span.and(allowed).weight() as u32;
                w.min(d.imb_numa_nr)
            }),
        };
        find_idlest_group_decide(&cmp).then_some(ig)
    }

    /// `update_pick_idlest(idlest, idlest_sgs, group, sgs)` (v5.6; with
    /// `IDLEST_GROUP_UTIL`, v5.9's tie-break of has_spare groups by `group_util`);
    /// `None` stands for the initial `{overloaded, avg_load = ULONG_MAX}`.
    fn update_pick_idlest(
        &self,
        cur: Option<&(usize, SgLbStats)>,
        g: usize,
        s: &SgLbStats,
    ) -> bool {
        let (ct, cl, ci, cu) = match cur {
            Some((_, c)) => (c.group_type, c.avg_load, c.idle_cpus, c.group_util),
            None => (GroupType::Overloaded, u64::MAX, 0, u64::MAX),
        };
        if s.group_type != ct {
            return s.group_type < ct;
        }
        match s.group_type {
            GroupType::Overloaded | GroupType::FullyBusy => s.avg_load < cl,
            GroupType::Imbalanced | GroupType::AsymPacking => false,
            GroupType::MisfitTask => match cur {
                Some((cg, _)) => {
                    let cap = |g: usize| self.topo.sgc[self.topo.groups[g].sgc].max_capacity;
                    cap(g) > cap(*cg)
                }
                None => true,
            },
            GroupType::HasSpare => {
                s.idle_cpus > ci
                    || (self.feat.has(SchedFeat::IDLEST_GROUP_UTIL)
                        && s.idle_cpus == ci
                        && s.group_util < cu)
            }
        }
    }

    /// `find_idlest_group_cpu(group, p, this_cpu)` (kernel/sched/fair.c, v5.6; with
    /// `IDLEST_V4_15` v4.15's: no SCHED_IDLE shortcut, the busy CPUs ranked by
    /// `runnable_load_avg` instead of `load_avg`, a tie going to `this_cpu`).
    pub fn find_idlest_group_cpu(
        &self,
        sg: usize,
        pid: Pid,
        this_cpu: usize,
        waker: usize,
        pr: &mut Probes,
    ) -> usize {
        let g = &self.topo.groups[sg];
        if g.group_weight == 1 {
            return g.span.first().expect("empty group");
        }
        let v4_15 = self.feat.has(SchedFeat::IDLEST_V4_15);
        let mut sh = ShallowestIdle::new(self.feat.has(SchedFeat::BREAK_EVEN));
        let mut min_load = u64::MAX;
        let mut least_loaded = this_cpu;
        for i in g.span.and(self.cpus_allowed(pid)).iter() {
            self.probe(pr, waker, i);
            if !v4_15 && self.sched_idle_cpu(i) {
                return i;
            }
            let rq = &self.rqs[i];
            if self.available_idle_cpu(i) {
                let exit = rq
                    .idle_state
                    .map(|s| self.m.idle_states(i)[s].exit_latency_ns);
                sh.consider(i, exit, rq.idle_stamp, rq.break_even);
            } else if sh.cpu.is_none() {
                let (load, tie) = if v4_15 {
                    (rq.cfs.avg.runnable_load_avg, i == this_cpu)
                } else {
                    (self.cpu_load(i), false)
                };
                if load < min_load || (tie && load == min_load) {
                    min_load = load;
                    least_loaded = i;
                }
            }
        }
        sh.cpu.unwrap_or(least_loaded)
    }

    /// `find_idlest_cpu(sd, p, cpu, prev_cpu, sd_flag)` (kernel/sched/fair.c, v5.6),
    /// run on `cpu`. Returns the CPU and the probes; reports one `FuncCall`.
    pub fn find_idlest_cpu(
        &mut self,
        sd: usize,
        pid: Pid,
        cpu: usize,
        prev_cpu: usize,
        sd_flag: u32,
    ) -> (usize, Probes) {
        let this_cpu = cpu;
        let mut pr = Probes::default();
        let mut cpu = cpu;
        let mut new_cpu = cpu;
        if !self.topo.domains[sd]
            .span
            .intersects(self.cpus_allowed(pid))
        {
            self.emit_func(Func::FindIdlestCpu, this_cpu, pr);
            return (prev_cpu, pr);
        }
        if sd_flag & SD_BALANCE_FORK == 0 && self.tasks[pid as usize].state != TaskState::New {
            self.sync_entity_load_avg(pid);
        }
        let mut sd = Some(sd);
        while let Some(d) = sd {
            let dom = &self.topo.domains[d];
            if dom.flags & sd_flag == 0 {
                sd = dom.child;
                continue;
            }
            let v4_15 = self.feat.has(SchedFeat::IDLEST_V4_15);
            let group = if v4_15 {
                self.find_idlest_group_v4_15(d, pid, cpu, sd_flag, this_cpu, &mut pr)
            } else {
                self.find_idlest_group(d, pid, cpu, this_cpu, &mut pr)
            };
            let Some(group) = group else {
                sd = self.topo.domains[d].child;
                continue;
            };
            new_cpu = self.find_idlest_group_cpu(group, pid, cpu, this_cpu, &mut pr);
            if new_cpu == cpu {
                sd = self.topo.domains[d].child;
                continue;
            }
            cpu = new_cpu;
            let weight = self.topo.domains[d].span_weight;
            sd = None;
            for t in self.topo.domains_of(cpu) {
                let td = &self.topo.domains[t];
                if weight <= td.span_weight {
                    break;
                }
                if td.flags & sd_flag != 0 {
                    sd = Some(t);
                }
            }
        }
        self.emit_func(Func::FindIdlestCpu, this_cpu, pr);
        (new_cpu, pr)
    }
}

/// The local-versus-idlest comparison of `find_idlest_group` on plain numbers.
#[derive(Clone, Copy, Debug)]
pub struct IdlestCmp {
    pub local_type: GroupType,
    pub idlest_type: GroupType,
    pub local_avg_load: u64,
    pub idlest_avg_load: u64,
    pub local_idle_cpus: u32,
    pub idlest_idle_cpus: u32,
    pub local_max_capacity: u64,
    pub idlest_max_capacity: u64,
    pub imbalance_pct: u32,
    pub numa: bool,
    pub local_sum_nr_running: u32,
    /// `IMB_NUMA_NR` (v6.12 form): `min(|local ∩ allowed|, sd.imb_numa_nr)`; `None`
    /// keeps v5.6's NUMA has_spare rule.
    pub imb_numa_nr: Option<u32>,
}

/// The end of `find_idlest_group` (v5.6): true = go to the idlest group, false =
/// stay local (`NULL`). NUMA balancing is off (no preferred-node rules).
pub fn find_idlest_group_decide(c: &IdlestCmp) -> bool {
    if c.local_type < c.idlest_type {
        return false;
    }
    if c.local_type > c.idlest_type {
        return true;
    }
    match c.local_type {
        GroupType::Overloaded | GroupType::FullyBusy => {
            let imbalance = 1024 * (c.imbalance_pct as u64 - 100) / 100;
            if c.numa && c.idlest_avg_load + imbalance >= c.local_avg_load {
                return false;
            }
            if c.idlest_avg_load >= c.local_avg_load + imbalance {
                return false;
            }
            if 100 * c.local_avg_load <= c.imbalance_pct as u64 * c.idlest_avg_load {
                return false;
            }
            true
        }
        GroupType::Imbalanced | GroupType::AsymPacking => false,
        GroupType::MisfitTask => c.local_max_capacity < c.idlest_max_capacity,
        GroupType::HasSpare => {
            if c.numa {
                match c.imb_numa_nr {
                    // v6.12: stay while the local node would run at most
                    // imb_numa_nr tasks and the idle-CPU difference is at most 2.
                    Some(nr) => {
                        let imb = (c.local_idle_cpus as i32 - c.idlest_idle_cpus as i32).abs();
                        let dst = c.local_sum_nr_running as i32 + 1;
                        if adjust_numa_imbalance(imb, dst, nr as i32) == 0 {
                            return false;
                        }
                    }
                    None if c.local_idle_cpus > 0 => return false,
                    None => {}
                }
            }
            c.local_idle_cpus < c.idlest_idle_cpus
        }
    }
}

/// The idle-CPU half of `find_idlest_group_cpu`: the shallowest idle CPU seen so far,
/// fed CPU by CPU in ascending order.
///
/// v5.6: a strictly smaller exit latency wins; at equal latency, or when the CPU is
/// not inside a cpuidle state (`exit = None`), a later `idle_stamp` wins.
///
/// With `BREAK_EVEN` (seed 001 v2), exactly as the patch orders its branches:
/// 1. in a state with a strictly smaller exit latency: wins, and its `break_even`
///    and `idle_stamp` become the references;
/// 2. in a state with the same exit latency: wins on a strictly smaller
///    `break_even` (the `idle_stamp` reference is not updated);
/// 3. not in a state: wins on a strictly later `idle_stamp` (references unchanged
///    otherwise).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ShallowestIdle {
    pub break_even_feat: bool,
    pub min_exit_latency: u64,
    pub min_break_even: u64,
    pub latest_idle_timestamp: u64,
    pub cpu: Option<usize>,
}

impl ShallowestIdle {
    pub fn new(break_even_feat: bool) -> Self {
        ShallowestIdle {
            break_even_feat,
            min_exit_latency: u64::MAX,
            min_break_even: u64::MAX,
            latest_idle_timestamp: 0,
            cpu: None,
        }
    }

    /// Consider idle CPU `i` (`exit`: the exit latency of the state it is in).
    pub(crate) fn consider(
        &mut self,
        i: usize,
        exit: Option<u64>,
        idle_stamp: u64,
        break_even: u64,
    ) {
        let better_stamp = idle_stamp > self.latest_idle_timestamp;
        let take = match exit {
            Some(e) if e < self.min_exit_latency => {
                self.min_exit_latency = e;
                self.min_break_even = break_even;
                self.latest_idle_timestamp = idle_stamp;
                true
            }
            // Seed 001, branch 2: same latency, earlier break-even deadline.
            Some(e) if self.break_even_feat => {
                let win = e == self.min_exit_latency && break_even < self.min_break_even;
                if win {
                    self.min_break_even = break_even;
                }
                win
            }
            // v5.6: same latency and a later idle_stamp; no state (both modes): a
            // later idle_stamp.
            Some(_) | None => {
                let win = better_stamp && exit.is_none_or(|e| e == self.min_exit_latency);
                if win {
                    self.latest_idle_timestamp = idle_stamp;
                }
                win
            }
        };
        if take {
            self.cpu = Some(i);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::ShallowestIdle;

    /// Feed `(cpu, exit latency, idle_stamp, break_even)` rows in order.
    fn run(feat: bool, rows: &[(usize, Option<u64>, u64, u64)]) -> Option<usize> {
        let mut s = ShallowestIdle::new(feat);
        for &(i, e, stamp, be) in rows {
            s.consider(i, e, stamp, be);
        }
        s.cpu
    }

    #[test]
    fn smaller_exit_latency_wins_in_both_modes() {
        // CPU 0 in a deep state (exit 1500), CPU 1 in WFI (exit 1) entered earlier.
        let rows = [(0, Some(1500), 900, 2400), (1, Some(1), 100, 101)];
        assert_eq!(run(false, &rows), Some(1));
        assert_eq!(run(true, &rows), Some(1));
        // And a deeper state after a shallower one never wins.
        let rows = [(0, Some(1), 100, 101), (1, Some(1500), 900, 2400)];
        assert_eq!(run(false, &rows), Some(0));
        assert_eq!(run(true, &rows), Some(0));
    }

    #[test]
    fn equal_exit_latency_latest_stamp_vs_earliest_break_even() {
        // Both in a state with exit 1000 ns. CPU 0: idle_stamp 3000, break_even
        // 6000 (entered its state at 5000); CPU 1: idle_stamp 5000, break_even 8000.
        // v5.6 takes the later idle_stamp (CPU 1), seed 001 the earlier break_even
        // (CPU 0).
        let rows = [(0, Some(1000), 3000, 6000), (1, Some(1000), 5000, 8000)];
        assert_eq!(run(false, &rows), Some(1), "v5.6: latest idle_stamp");
        assert_eq!(run(true, &rows), Some(0), "BREAK_EVEN: earliest break_even");
        // A later CPU with a strictly smaller break_even wins under BREAK_EVEN even
        // with an older idle_stamp; v5.6 keeps the first.
        let rows = [(0, Some(1000), 5000, 8000), (1, Some(1000), 3000, 6000)];
        assert_eq!(run(false, &rows), Some(0));
        assert_eq!(run(true, &rows), Some(1));
        // Equal break_even: the first stays (strict <) in both modes at equal stamps.
        let rows = [(0, Some(1000), 5000, 8000), (1, Some(1000), 5000, 8000)];
        assert_eq!(run(false, &rows), Some(0));
        assert_eq!(run(true, &rows), Some(0));
    }

    #[test]
    fn break_even_branch_does_not_move_the_stamp_reference() {
        // BREAK_EVEN: CPU 1 wins on break_even (branch 2) but latest_idle_timestamp
        // stays CPU 0's 9000, so a state-less CPU 2 with stamp 8000 does not win;
        // one with 9500 does.
        let rows = [
            (0, Some(1000), 9000, 12_000),
            (1, Some(1000), 1000, 11_000),
            (2, None, 8000, 0),
        ];
        assert_eq!(run(true, &rows), Some(1));
        let mut s = ShallowestIdle::new(true);
        for &(i, e, st, be) in &rows {
            s.consider(i, e, st, be);
        }
        assert_eq!(
            (
                s.min_exit_latency,
                s.min_break_even,
                s.latest_idle_timestamp
            ),
            (1000, 11_000, 9000)
        );
        s.consider(3, None, 9500, 0);
        assert_eq!(s.cpu, Some(3), "no state: later idle_stamp wins");
        // v5.6 on the same rows: CPU 0 (stamp 9000) holds against 1 and 2.
        assert_eq!(run(false, &rows), Some(0));
    }

    #[test]
    fn stateless_cpus_and_state_cpus_mix() {
        // No state first (stamp 100), then a state CPU: it wins on any latency
        // (min_exit starts at infinity), in both modes.
        let rows = [(0, None, 100, 0), (1, Some(150_000), 50, 150_050)];
        assert_eq!(run(false, &rows), Some(1));
        assert_eq!(run(true, &rows), Some(1));
        // Two state-less CPUs: the later stamp, in both modes.
        let rows = [(0, None, 100, 0), (1, None, 200, 0), (2, None, 150, 0)];
        assert_eq!(run(false, &rows), Some(1));
        assert_eq!(run(true, &rows), Some(1));
        // A state-less CPU after a state CPU with an older stamp wins in both modes.
        let rows = [(0, Some(1000), 100, 1100), (1, None, 200, 0)];
        assert_eq!(run(false, &rows), Some(1));
        assert_eq!(run(true, &rows), Some(1));
        // ...and a state CPU with the same latency after it: v5.6 compares stamps
        // (300 > 200 wins), BREAK_EVEN compares break_even with CPU 0's (1100):
        // 1300 is not smaller, so the state-less CPU 1 stays.
        let rows = [
            (0, Some(1000), 100, 1100),
            (1, None, 200, 0),
            (2, Some(1000), 300, 1300),
        ];
        assert_eq!(run(false, &rows), Some(2));
        assert_eq!(run(true, &rows), Some(1));
        // A state-less CPU with a stamp of 0 (never idled through newidle) never wins.
        assert_eq!(run(true, &[(0, None, 0, 0)]), None);
        assert_eq!(run(false, &[(0, None, 0, 0)]), None);
    }
}

#[cfg(test)]
mod kernel_tests {
    use crate::engine::NullObserver;
    use crate::machine::presets::test_topology;
    use crate::sched::core::{Kernel, Policy};
    use crate::sched::fair::wakeup::Probes;
    use crate::sched::features::{Features, SchedFeat, Tunables};
    use crate::sched::topology::TopologyOpts;

    /// 2 LLCs × 2 cores (CPUs 0-1, 2-3); idle states POLL 0, C1 2 µs, C6 133 µs.
    fn kernel(break_even: bool) -> Kernel<NullObserver> {
        let m = test_topology(1, 2, 2, 1);
        let mut f = Features::v5_6();
        f.set(SchedFeat::BREAK_EVEN, break_even);
        Kernel::new(m, f, Tunables::v5_6(4), &TopologyOpts::v5_6(), NullObserver)
    }

    #[test]
    fn enter_idle_records_break_even_and_exit_keeps_it() {
        let mut k = kernel(true);
        k.now = 1_000_000;
        // No timer, no history: the deepest state (C6, exit 133 µs).
        k.enter_idle(2);
        assert_eq!(k.rqs[2].idle_state, Some(2));
        assert_eq!(k.rqs[2].break_even, 1_000_000 + 133_000);
        k.now = 1_500_000;
        k.begin_idle_exit(2);
        assert_eq!(k.rqs[2].idle_state, None);
        assert_eq!(k.rqs[2].break_even, 1_133_000, "not cleared on exit");
    }

    #[test]
    fn find_idlest_group_cpu_tie_break_by_mode() {
        // CPUs 2 and 3 idle in C1 (exit 2 µs): CPU 2 idle_stamp 5 µs, break_even
        // 9 µs; CPU 3 idle_stamp 7 µs, break_even 10 µs. v5.6: the later stamp
        // (3); BREAK_EVEN: the earlier break_even (2). With CPU 3 in POLL (exit 0)
        // it wins in both modes.
        for (feat, want) in [(false, 3), (true, 2)] {
            let mut k = kernel(feat);
            let all = *k.m.all_cpus();
            let pid = k.create_task("t", None, false, 0, Policy::Normal, all);
            for (cpu, stamp, be) in [(2, 5_000, 9_000), (3, 7_000, 10_000)] {
                let rq = &mut k.rqs[cpu];
                rq.idle_state = Some(1);
                rq.idle_stamp = stamp;
                rq.break_even = be;
            }
            let top = k.topo.domains_of(0).last().unwrap();
            let sg = *k.topo.domains[top]
                .groups
                .iter()
                .find(|&&g| k.topo.groups[g].span.test(2))
                .unwrap();
            assert_eq!(k.topo.groups[sg].group_weight, 2);
            let mut pr = Probes::default();
            assert_eq!(
                k.find_idlest_group_cpu(sg, pid, 0, 0, &mut pr),
                want,
                "BREAK_EVEN={feat}"
            );
            k.rqs[3].idle_state = Some(0);
            assert_eq!(k.find_idlest_group_cpu(sg, pid, 0, 0, &mut pr), 3);
        }
    }
}
