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
//! `avg_load = 0`.
//!
//! **Choosing** (`imb = 1024 × (imbalance_pct − 100) / 100`): the best non-local
//! group (`update_pick_idlest`: lower type; then lower avg_load for busy types,
//! more idle CPUs for has_spare, larger max capacity for misfit) against the local:
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
//! **find_idlest_group_cpu**: a SCHED_IDLE-only CPU at once; else among idle CPUs the
//! one in the shallowest cpuidle state (a CPU not inside a state only wins on a
//! later `idle_stamp` at equal or unset latency), ties to the latest `idle_stamp`;
//! else the least loaded (`cpu_load`), defaulting to the current CPU.
//!
//! **Cost.** Every CPU whose statistics are gathered and every CPU examined by
//! `find_idlest_group_cpu` is a probe (fair/wakeup.rs); one `FuncCall` for
//! `find_idlest_cpu` with the total.
//!
//! **Gaps.** No NUMA balancing (`p.numa_preferred_nid` rules off, as with
//! `CONFIG_NUMA_BALANCING` disabled); no uclamp; no asym packing producer.

use crate::engine::Observer;
use crate::sched::core::{Kernel, TaskState};
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
    pub fn cpu_util_without(&self, cpu: usize, pid: Pid) -> u64 {
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
    /// the v5.6 quirk: `avg_load` only for has_spare groups.
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
        if s.group_type < GroupType::FullyBusy {
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
        };
        find_idlest_group_decide(&cmp).then_some(ig)
    }

    /// `update_pick_idlest(idlest, idlest_sgs, group, sgs)` (v5.6); `None` stands for
    /// the initial `{overloaded, avg_load = ULONG_MAX}`.
    fn update_pick_idlest(
        &self,
        cur: Option<&(usize, SgLbStats)>,
        g: usize,
        s: &SgLbStats,
    ) -> bool {
        let (ct, cl, ci) = match cur {
            Some((_, c)) => (c.group_type, c.avg_load, c.idle_cpus),
            None => (GroupType::Overloaded, u64::MAX, 0),
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
            GroupType::HasSpare => s.idle_cpus > ci,
        }
    }

    /// `find_idlest_group_cpu(group, p, this_cpu)` (kernel/sched/fair.c, v5.6).
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
        let mut min_exit_latency = u64::MAX;
        let mut latest_idle_timestamp = 0u64;
        let mut shallowest: Option<usize> = None;
        let mut min_load = u64::MAX;
        let mut least_loaded = this_cpu;
        for i in g.span.and(self.cpus_allowed(pid)).iter() {
            self.probe(pr, waker, i);
            if self.sched_idle_cpu(i) {
                return i;
            }
            let rq = &self.rqs[i];
            if self.available_idle_cpu(i) {
                let exit = rq
                    .idle_state
                    .map(|s| self.m.idle_states(i)[s].exit_latency_ns);
                match exit {
                    Some(e) if e < min_exit_latency => {
                        min_exit_latency = e;
                        latest_idle_timestamp = rq.idle_stamp;
                        shallowest = Some(i);
                    }
                    _ if (exit.is_none() || exit == Some(min_exit_latency))
                        && rq.idle_stamp > latest_idle_timestamp =>
                    {
                        latest_idle_timestamp = rq.idle_stamp;
                        shallowest = Some(i);
                    }
                    _ => {}
                }
            } else if shallowest.is_none() {
                let load = self.cpu_load(i);
                if load < min_load {
                    min_load = load;
                    least_loaded = i;
                }
            }
        }
        shallowest.unwrap_or(least_loaded)
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
            let Some(group) = self.find_idlest_group(d, pid, cpu, this_cpu, &mut pr) else {
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
            if c.numa && c.local_idle_cpus > 0 {
                return false;
            }
            c.local_idle_cpus < c.idlest_idle_cpus
        }
    }
}
