//! Energy-aware scheduling: perf domains, `compute_energy` and
//! `find_energy_efficient_cpu` (fair.c, topology.c, energy_model.h, v5.6).
//!
//! On an asymmetric (big.LITTLE) machine whose CPUs all have an Energy Model and run
//! the schedutil governor, the root domain gets a list of *performance domains*, one
//! per cpufreq policy (`build_perf_domains`; also bounded by `EM_MAX_COMPLEXITY`:
//! `nr_pd × (nr_cpus + Σ capacity states) ≤ 2048`, and `sched_energy_aware = 1`). That
//! is `sched_energy_enabled()`. Then a regular wakeup (`WF_TTWU`) first asks
//! `find_energy_efficient_cpu(p, prev_cpu)`, unless the root domain is
//! *overutilized* (some CPU's `cpu_util` does not fit 80 % of its capacity: set at
//! wakeup enqueues and ticks, rewritten by root-level load balancing; see
//! fair/balance). While the root domain is not overutilized, load balancing stops at
//! once ("balanced") and placement is EAS's alone.
//!
//! `find_energy_efficient_cpu` works in the lowest SD_ASYM_CPUCAPACITY domain of the
//! waking CPU that also spans `prev_cpu` (none: the normal path). It syncs the task's
//! PELT; a task with no utilization stays on `prev_cpu`. For each perf domain it
//! computes the domain's energy without the task (`base`), then looks at the allowed
//! CPUs of the domain inside that sched domain: `cpu_util_next(cpu, p, cpu)` (the
//! CPU's util with `p` moved there, util_est included, capped at capacity_orig) must
//! fit the CPU's capacity (`fits_capacity`, the 1280/1024 margin); of those, `prev_cpu`
//! gets its energy delta, and the CPU with the most spare capacity becomes the domain's
//! candidate, whose delta is computed too. The best candidate wins if `prev_cpu` could
//! not take the task or if it saves more than 1/16 of the energy with the task on
//! `prev_cpu`: `prev_delta − best_delta > (prev_delta + base) >> 4`.
//!
//! `compute_energy(p, dst, pd)` sums, over the domain's CPUs, the utilization with `p`
//! placed on `dst` (or nowhere), and takes their maximum; `em_pd_energy` maps the
//! maximum to a frequency with schedutil's 1.25 margin (`map_util_freq` against the
//! top OPP), picks the lowest capacity state at or above it, and returns
//! `cost × sum_util / scale_cpu`, where `cost = f_max × power / f` of that state
//! (`em_create_pd`, integer arithmetic as the kernel's).
//!
//! **Simplifications.** No RT/DL/IRQ utilization and no uclamp (so
//! `schedutil_cpu_util` is `min(util, capacity)`); every CPU is online. The search's
//! own cost is charged as one state probe per CPU examined (the kernel's loop reads
//! each CPU's runqueue averages).

use crate::engine::Observer;
use crate::machine::{FreqDomain, Machine};
use crate::sched::core::Kernel;
use crate::sched::fair::group::fits_capacity;
use crate::sched::fair::wakeup::Probes;
use crate::sched::features::SchedFeat;
use crate::sched::{pelt, Pid, SchedEvent};

/// `EM_MAX_COMPLEXITY`.
pub const EM_MAX_COMPLEXITY: usize = 2048;

/// `em_cap_state.cost` of each OPP: `f_max × power / f` (integer, as `em_create_pd`).
pub(crate) fn em_costs(fd: &FreqDomain) -> Vec<u64> {
    let fmax = fd.max_freq_khz() as u64;
    fd.opps
        .iter()
        .map(|o| fmax * o.power_mw as u64 / (o.freq_khz as u64).max(1))
        .collect()
}

/// `em_pd_energy(pd, max_util, sum_util)` (energy_model.h, v5.6) for a domain whose
/// CPUs have capacity `scale_cpu`.
pub(crate) fn em_pd_energy(fd: &FreqDomain, scale_cpu: u64, max_util: u64, sum_util: u64) -> u64 {
    let top = fd.max_freq_khz() as u64;
    let freq = crate::sched::cpufreq::map_util_freq(max_util, top, scale_cpu);
    let costs = em_costs(fd);
    let i = fd
        .opps
        .iter()
        .position(|o| o.freq_khz as u64 >= freq)
        .unwrap_or(fd.opps.len() - 1);
    costs[i] * sum_util / scale_cpu.max(1)
}

/// Would `build_perf_domains` build perf domains on `m` (given the topology's
/// `sched_asym_cpucapacity` and whether every policy runs schedutil)?
pub(crate) fn perf_domains_possible(m: &Machine, asym_cpucapacity: bool, schedutil: bool) -> bool {
    if !asym_cpucapacity || !schedutil {
        return false;
    }
    if !m.has_energy_model() {
        return false;
    }
    let nr_pd = m.freq_domains.len();
    let nr_cs: usize = m.freq_domains.iter().map(|fd| fd.opps.len()).sum();
    nr_pd * (nr_cs + m.nr_cpus()) <= EM_MAX_COMPLEXITY
}

impl<O: Observer<SchedEvent>> Kernel<O> {
    /// `sched_energy_enabled()` with the root domain's perf domains present.
    #[inline]
    pub fn sched_energy_enabled(&self) -> bool {
        self.cpufreq.perf_domains
    }

    /// `cpu_util_next(cpu, p, dst_cpu)` (v5.6): `cpu`'s utilization if `p` ran on
    /// `dst` (`None`: nowhere), util_est included, capped at capacity_orig.
    pub(crate) fn cpu_util_next(&self, cpu: usize, pid: Pid, dst: Option<usize>) -> u64 {
        let t = &self.tasks[pid as usize];
        let rq = &self.rqs[cpu];
        let mut util = rq.cfs.avg.util_avg;
        let task_util = t.se.avg.util_avg;
        if t.cpu == cpu && dst != Some(cpu) {
            util = util.saturating_sub(task_util);
        } else if t.cpu != cpu && dst == Some(cpu) {
            util += task_util;
        }
        if self.feat.has(SchedFeat::UTIL_EST) {
            let mut est = rq.cfs.avg.util_est.enqueued as u64;
            if dst == Some(cpu) {
                est += pelt::task_util_est_raw(&t.se.avg) as u64;
            }
            util = util.max(est);
        }
        util.min(rq.cpu_capacity_orig)
    }

    /// `compute_energy(p, dst_cpu, pd)` (v5.6) for frequency domain `d`.
    pub fn compute_energy(&self, pid: Pid, dst: Option<usize>, d: usize) -> u64 {
        let fd = &self.m.freq_domains[d];
        let first = fd.cpus.first().unwrap_or(0);
        let cap = self.rqs[first].cpu_capacity_orig;
        let (mut max_util, mut sum_util) = (0, 0);
        for cpu in fd.cpus.iter() {
            // schedutil_cpu_util(ENERGY_UTIL / FREQUENCY_UTIL) without RT/DL/IRQ.
            let u = self.cpu_util_next(cpu, pid, dst).min(cap);
            sum_util += u;
            max_util = max_util.max(u);
        }
        em_pd_energy(fd, cap, max_util, sum_util)
    }

    /// `find_energy_efficient_cpu(p, prev_cpu)` (kernel/sched/fair.c, v5.6) run on
    /// `this_cpu`: `None` is the kernel's `-1` (use the normal path). The probes of the
    /// search are added to `pr`.
    pub fn find_energy_efficient_cpu(
        &mut self,
        pid: Pid,
        prev_cpu: usize,
        this_cpu: usize,
        pr: &mut Probes,
    ) -> Option<usize> {
        if !self.sched_energy_enabled() || self.lb.rd.overutilized {
            return None;
        }
        let mut sd = self.topo.sd_asym_cpucapacity[this_cpu];
        while let Some(s) = sd {
            if self.topo.domains[s].span.test(prev_cpu) {
                break;
            }
            sd = self.topo.domains[s].parent;
        }
        let span = self.topo.domains[sd?].span;
        self.sync_entity_load_avg(pid);
        if pelt::task_util_est(&self.tasks[pid as usize].se.avg) == 0 {
            return Some(prev_cpu);
        }
        let allowed = *self.cpus_allowed(pid);
        let mut base_energy = 0u64;
        let mut prev_delta = u64::MAX;
        let mut best_delta = u64::MAX;
        let mut best_cpu = prev_cpu;
        for d in 0..self.m.freq_domains.len() {
            let base_pd = self.compute_energy(pid, None, d);
            base_energy += base_pd;
            let mut max_spare = 0u64;
            let mut cand = None;
            let cpus = self.m.freq_domains[d].cpus.and(&span).and(&allowed);
            for cpu in cpus.iter() {
                self.probe(pr, this_cpu, cpu);
                let util = self.cpu_util_next(cpu, pid, Some(cpu));
                let cap = self.capacity_of(cpu);
                let spare = cap.saturating_sub(util);
                if !fits_capacity(util, cap) {
                    continue;
                }
                if cpu == prev_cpu {
                    prev_delta = self
                        .compute_energy(pid, Some(prev_cpu), d)
                        .saturating_sub(base_pd);
                    best_delta = best_delta.min(prev_delta);
                }
                if spare > max_spare {
                    max_spare = spare;
                    cand = Some(cpu);
                }
            }
            if let Some(c) = cand.filter(|&c| c != prev_cpu) {
                let cur = self.compute_energy(pid, Some(c), d).saturating_sub(base_pd);
                if cur < best_delta {
                    best_delta = cur;
                    best_cpu = c;
                }
            }
        }
        if prev_delta == u64::MAX
            || prev_delta - best_delta > (prev_delta.saturating_add(base_energy)) >> 4
        {
            return Some(best_cpu);
        }
        Some(prev_cpu)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::machine::presets::preset;

    #[test]
    fn juno_costs_and_pd_energy_by_hand() {
        let m = preset("juno-r0").unwrap();
        let little = &m.freq_domains[0]; // 450/33 575/46 700/61 775/76 850/93
                                         // cost = 850_000 × power / f: 62, 68, 74, 83, 93
        assert_eq!(em_costs(little), vec![62, 68, 74, 83, 93]);
        // max_util 200 on cap 446: 1.25 × 850_000 × 200 / 446 = 476_457 kHz -> 575 MHz
        // (cost 68); energy = 68 × 300 / 446 = 45.
        assert_eq!(em_pd_energy(little, 446, 200, 300), 45);
        assert!(perf_domains_possible(&m, true, true));
        assert!(!perf_domains_possible(&m, true, false));
        assert!(!perf_domains_possible(
            &preset("xeon-88").unwrap(),
            true,
            true
        ));
    }
}
