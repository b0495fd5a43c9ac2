//! The one-pass LLC idle scan and its budget: what Linux did after the seeds, the
//! merged idle search of v5.12 (`SIS_MERGED`), the utilization-based scan budget of
//! v6.0 (`SIS_UTIL`) and the cluster-first order of v6.7 (`SIS_CLUSTER`), so the
//! seeds can be compared with their upstream successors (spec `kernel-placement.md`
//! §12).
//!
//! **SIS_MERGED** (Mel Gorman, v5.12; the idea of seed 000 taken further). After
//! the target / prev / recent_used checks, one pass over `span(sd_llc) ∩ p.allowed`
//! from the target replaces `select_idle_core`, `select_idle_cpu` and
//! `select_idle_smt`:
//!
//! ```text
//! has_core = SMT and the LLC's has_idle_cores hint
//! nr = ∞; idle_cpu = none
//! if SIS_PROP and not has_core: nr from avg_idle / avg_scan_cost as in v5.6
//! if SIS_UTIL: nr = nr_idle_scan + 1; if nr == 1: give up   (even with has_core)
//! for c in the mask, wrapping from target:
//!   has_core: core_probe(c): every sibling idle → return c; else remember the first
//!             allowed idle (or SCHED_IDLE-only) sibling in idle_cpu (stop the core
//!             at the first busy sibling once one is remembered) and drop the
//!             core's siblings from the mask — no budget
//!   else:     nr −= 1, give up at 0; an idle or SCHED_IDLE-only c ends the scan
//! has_core: a fruitless pass clears the hint
//! SIS_PROP and not has_core: avg_scan_cost EWMA as in v5.6
//! return idle_cpu, else target
//! ```
//!
//! SIS_AVG_CPU and the final `select_idle_smt` are gone in v5.12 and ignored here.
//!
//! **SIS_UTIL** (Chen Yu, v6.0). The LLC's `nr_idle_scan` is refreshed by periodic
//! (not newly-idle) `load_balance` at the domain whose span is the LLC:
//! `x = Σ group_util / llc_weight`, `y = 1024 − min(x²·pct² / (10000·1024), 1024)`,
//! `nr_idle_scan = y · llc_weight / 1024` (`pct` = that domain's `imbalance_pct`),
//! so the scan shrinks with load and stops at ≈ 85 % utilization (pct 117). It
//! starts at 0: nothing is scanned until the first refresh. With the v5.6 scan
//! structure (SIS_MERGED off) the same budget bounds `select_idle_cpu`.
//!
//! **SIS_CLUSTER** (Barry Song, Yicong Yang, v6.7; with SIS_MERGED, on a topology
//! whose LLC sits right above a CLS level): the pass walks target's cluster first
//! and then the rest of the LLC (same budget, same core logic), and
//! `select_idle_sibling` returns an idle prev or recent CPU at once only if it
//! shares target's cluster (`cpus_share_resources`), else keeps it as a fallback
//! for when the pass finds nothing (prev first, then recent, then target).
//!
//! **Gaps.** v5.13's `select_idle_smt(prev)` step, v5.14's `wake_avg_idle` and
//! v6.0's scan start at `target + 1` are not modelled; v6.x sets
//! `p->recent_used_cpu = prev` before the recent-CPU check, here (as in v5.6) only
//! when it qualifies. The `v5.12` / `v6.0` kernel presets bundle only what is
//! modelled (docs/kernel-mapping.md).

use crate::engine::Observer;
use crate::machine::CpuMask;
use crate::sched::core::Kernel;
use crate::sched::fair::idle::{
    avg_scan_cost_update, sis_prop_nr, SIM_SELECT_IDLE_CPU_OVERHEAD_NS,
};
use crate::sched::fair::wakeup::{reason, Probes};
use crate::sched::features::SchedFeat;
use crate::sched::topology::SdId;
use crate::sched::{Func, Pid, SchedEvent};

/// The SIS_UTIL scan budget for an LLC of `llc_weight` CPUs whose groups sum to
/// `sum_util`, balanced with `imbalance_pct` `pct` (`update_idle_cpu_scan`, v6.0).
pub fn sis_util_nr_idle_scan(sum_util: u64, llc_weight: u64, pct: u64) -> u32 {
    let x = sum_util / llc_weight.max(1);
    let tmp = (x * x * pct * pct / (10_000 * 1024)).min(1024);
    let y = 1024 - tmp;
    (y * llc_weight / 1024) as u32
}

impl<O: Observer<SchedEvent>> Kernel<O> {
    /// `update_idle_cpu_scan(env, sum_util)` (v6.0), from `update_sd_lb_stats`:
    /// only with SIS_UTIL, not for a newly-idle balance, and only at the domain
    /// whose span is the LLC of `dst_cpu`.
    pub fn update_idle_cpu_scan(&mut self, sd: SdId, dst_cpu: usize, newidle: bool, sum_util: u64) {
        if !self.feat.has(SchedFeat::SIS_UTIL) || newidle {
            return;
        }
        let llc_weight = self.topo.sd_llc_size[dst_cpu];
        let d = &self.topo.domains[sd];
        if d.span_weight != llc_weight {
            return;
        }
        let Some(s) = self.topo.sd_llc_shared[dst_cpu] else {
            return;
        };
        let y = sis_util_nr_idle_scan(sum_util, llc_weight as u64, d.imbalance_pct as u64);
        self.topo.shared[s].nr_idle_scan = y;
    }

    /// SIS_UTIL's `nr` for a scan around `target`: `Some(nr_idle_scan + 1)`, or
    /// `None` without an LLC block.
    pub(crate) fn sis_util_nr(&self, target: usize) -> Option<i64> {
        self.topo.sd_llc_shared[target].map(|s| self.topo.shared[s].nr_idle_scan as i64 + 1)
    }

    /// SIS_UTIL (v6.0) on a scan's budget `nr` around `target`: `nr` becomes
    /// [`Kernel::sis_util_nr`] where there is an LLC block; `true` when that leaves
    /// nothing to scan (`nr == 1`): the scan gives up, its call reported.
    #[inline]
    pub(crate) fn sis_util_gives_up(
        &mut self,
        target: usize,
        this_cpu: usize,
        pr: Probes,
        nr: &mut i64,
    ) -> bool {
        if self.feat.has(SchedFeat::SIS_UTIL) {
            if let Some(n) = self.sis_util_nr(target) {
                *nr = n;
                if n == 1 {
                    self.emit_func(Func::SelectIdleCpu, this_cpu, pr);
                    return true;
                }
            }
        }
        false
    }

    /// The v5.12 `select_idle_cpu(p, sd, has_idle_core, target)`: the merged scan
    /// (module notes). Returns the CPU and its reason, or `None`.
    pub(crate) fn select_idle_cpu_merged(
        &mut self,
        pid: Pid,
        sd: SdId,
        target: usize,
        this_cpu: usize,
    ) -> (Option<(usize, &'static str)>, Probes) {
        let mut pr = Probes::default();
        let has_core = self.m.has_smt() && self.test_idle_cores(target, false);
        let Some(this_sd) = self.topo.sd_llc[this_cpu] else {
            self.emit_func(Func::SelectIdleCpu, this_cpu, pr);
            return (None, pr);
        };
        let mut nr: i64 = i32::MAX as i64;
        let prop = self.feat.has(SchedFeat::SIS_PROP) && !has_core;
        if prop {
            let avg_idle = self.rqs[this_cpu].avg_idle / 512;
            let avg_cost = self.topo.domains[this_sd].avg_scan_cost + 1;
            let span_avg = self.topo.domains[sd].span_weight as u64 * avg_idle;
            nr = sis_prop_nr(span_avg, avg_cost);
        }
        if self.sis_util_gives_up(target, this_cpu, pr, &mut nr) {
            return (None, pr);
        }
        let cpus = self.topo.domains[sd].span.and(self.cpus_allowed(pid));
        let mut live = cpus;
        let mut idle_cpu: Option<usize> = None;
        let mut found = None;
        // SIS_CLUSTER (v6.7): target's cluster first, then the rest of the LLC.
        let cluster_first = (self.feat.has(SchedFeat::SIS_CLUSTER)
            && self.topo.sd_llc[target] == Some(sd))
        .then(|| self.topo.llc_cluster_domain(target))
        .flatten()
        .map(|c| self.topo.domains[c].span.and(&cpus));
        let cl = cluster_first.unwrap_or_default();
        let walk = cl
            .iter_wrap(target)
            .chain(cpus.iter_wrap(target).filter(|&c| !cl.test(c)));
        for c in walk {
            if !live.test(c) {
                continue;
            }
            if has_core {
                if let Some(core) =
                    self.core_probe(pid, c, &mut live, &mut idle_cpu, this_cpu, &mut pr)
                {
                    found = Some((core, reason::IDLE_CORE));
                    break;
                }
            } else {
                nr -= 1;
                if nr == 0 {
                    // Budget exhausted: no avg_scan_cost update.
                    self.emit_func(Func::SelectIdleCpu, this_cpu, pr);
                    return (None, pr);
                }
                self.probe(&mut pr, this_cpu, c);
                if self.idle_or_sched_idle(c) {
                    idle_cpu = Some(c);
                    break;
                }
            }
        }
        if found.is_none() {
            if has_core {
                self.set_idle_cores(target, false);
            }
            found = idle_cpu.map(|c| (c, reason::IDLE_CPU));
        }
        if prop {
            let time = pr.cost_ns + SIM_SELECT_IDLE_CPU_OVERHEAD_NS;
            let d = &mut self.topo.domains[this_sd];
            d.avg_scan_cost = avg_scan_cost_update(d.avg_scan_cost, time);
        }
        self.emit_func(Func::SelectIdleCpu, this_cpu, pr);
        (found, pr)
    }

    /// v5.12 `select_idle_core(p, core, cpus, &idle_cpu)`: the whole core idle →
    /// `Some(core)`; else remember a usable CPU in `idle_cpu` and drop the core's
    /// siblings from `live`.
    fn core_probe(
        &self,
        pid: Pid,
        core: usize,
        live: &mut CpuMask,
        idle_cpu: &mut Option<usize>,
        this_cpu: usize,
        pr: &mut Probes,
    ) -> Option<usize> {
        let allowed = self.cpus_allowed(pid);
        let mut idle = true;
        for s in self.smt_siblings(core) {
            self.probe(pr, this_cpu, s);
            if !self.available_idle_cpu(s) {
                idle = false;
                if idle_cpu.is_none() {
                    if self.sched_idle_cpu(s) && allowed.test(s) {
                        *idle_cpu = Some(s);
                        break;
                    }
                    continue;
                }
                break;
            }
            if idle_cpu.is_none() && allowed.test(s) {
                *idle_cpu = Some(s);
            }
        }
        if idle {
            return Some(core);
        }
        for s in self.smt_siblings(core) {
            live.clear(s);
        }
        None
    }
}
