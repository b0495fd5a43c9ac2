//! Misfit tasks on asymmetric CPU capacity (seed 004): one reviewable unit.
//!
//! On big.LITTLE a CPU-bound task that starts on a LITTLE CPU stays there for good
//! under v4.19's balancer: load per capacity says a LITTLE CPU running one task is
//! as busy as a big CPU running one, so nothing moves, and the wakeup path's
//! capacity checks never run for a task that never sleeps. Morten Rasmussen's series
//! (seed 004, merged in v4.20 as "sched/fair: Add group_misfit_task load-balance
//! type" and "Consider misfit tasks when load-balancing") adds a *misfit* scenario:
//!
//! 1. **The per-rq status.** `update_misfit_status` runs at every tick, pick and
//!    put of the current task: when its estimated utilization does not fit the
//!    CPU's capacity (`fits_capacity`: util × 1280 < capacity × 1024), the rq
//!    records the task's `task_h_load` in `rq->misfit_task_load`; else 0. With
//!    `NO_MISFIT` (the kernel before v4.20) the field stays 0.
//! 2. **The group statistic.** `update_sg_lb_stats` takes each non-local group's
//!    biggest misfit load at levels with `SD_ASYM_CPUCAPACITY`, and flags the root
//!    overloaded so that newly idle CPUs balance (`Kernel::update_sg_misfit`).
//! 3. **Classification and pick.** `group_classify` puts a group with a misfit
//!    load in `group_misfit_task`, above has_spare (fair/group.rs);
//!    `update_sd_pick_busiest` takes it only when the local group's CPUs are bigger
//!    (by the 25 % margin) and it has spare capacity (`misfit_pick_refused`), and
//!    between two misfit groups the bigger misfit load wins (balance/decide.rs).
//! 4. **The move.** `calculate_imbalance` asks for one misfit task
//!    (`migrate_misfit`, imbalance 1); `find_busiest_queue` picks the rq with the
//!    biggest `misfit_task_load`; `detach_tasks` moves a task only if it still does
//!    not fit its source (`Kernel::misfit_still`); `need_active_balance` always
//!    answers yes for a misfit migration, so the running task itself is pushed by
//!    the stopper.
//! 5. **The kick.** `nohz_balancer_kick` kicks an idle big CPU when a busy CPU has
//!    a misfit and a bigger CPU exists, or its own capacity is reduced
//!    (`Kernel::check_misfit_status`, v5.0); asymmetric systems then skip the LLC
//!    busy test (v5.1).
//!
//! Steps 3 and 4 are branches of the load balancer's decision tables; they stay in
//! those tables (balance/decide.rs, balance/mod.rs), where a reader of fair.c looks
//! for them, and call into this file for the misfit-specific tests. The slow path's
//! `find_idlest_group` compares `group_misfit_task` groups by capacity too (v5.5,
//! fair/idlest.rs): that is the load-balance rework's, not this series'.

use crate::engine::Observer;
use crate::sched::core::Kernel;
use crate::sched::fair::balance::SG_OVERLOAD;
use crate::sched::fair::group::{fits_capacity, GroupType, SgLbStats};
use crate::sched::features::SchedFeat;
use crate::sched::pelt;
use crate::sched::topology::SdId;
use crate::sched::{Pid, SchedEvent};

impl<O: Observer<SchedEvent>> Kernel<O> {
    /// `update_misfit_status` (kernel/sched/fair.c, v5.6): `p` is the current task.
    /// With `NO_MISFIT` (the kernel before v4.20) there is no such field: it stays 0.
    pub(crate) fn update_misfit_status(&mut self, cpu: usize, p: Option<Pid>) {
        if !self.topo.asym_cpucapacity || !self.feat.has(SchedFeat::MISFIT) {
            return;
        }
        let load = match p {
            None => 0,
            Some(p) => {
                let util = pelt::task_util_est(&self.tasks[p as usize].se.avg);
                if fits_capacity(util, self.capacity_of(cpu)) {
                    0
                } else {
                    self.task_h_load(Some(p))
                }
            }
        };
        self.rqs[cpu].misfit_task_load = load;
    }

    /// `check_misfit_status` (v5.0), for `nohz_balancer_kick` at `cpu`'s
    /// asymmetric-capacity domain `sd`: a misfit is running and either a bigger
    /// CPU exists or this CPU's capacity is reduced by other classes.
    pub(crate) fn check_misfit_status(&self, cpu: usize, sd: SdId) -> bool {
        let rq = &self.rqs[cpu];
        let pct = self.topo.domains[sd].imbalance_pct;
        rq.misfit_task_load != 0
            && (rq.cpu_capacity_orig < self.topo.max_cpu_capacity
                || self.check_cpu_capacity(cpu, pct))
    }

    /// `update_sg_lb_stats`' misfit step for CPU `cpu` of a non-local group at an
    /// `SD_ASYM_CPUCAPACITY` level: the group's biggest misfit load, which also
    /// keeps `rd->overload` set at the root.
    #[inline]
    pub(crate) fn update_sg_misfit(&self, cpu: usize, sgs: &mut SgLbStats, sg_status: &mut u32) {
        let m = self.rqs[cpu].misfit_task_load;
        if sgs.group_misfit_task_load < m {
            sgs.group_misfit_task_load = m;
            *sg_status |= SG_OVERLOAD;
        }
    }

    /// `detach_tasks`' `migrate_misfit` test: `p` still does not fit its source
    /// CPU `src` (`task_fits_capacity`), so moving it is what the misfit balance
    /// asked for.
    pub(crate) fn misfit_still(&self, p: Pid, src: usize) -> bool {
        let util = pelt::task_util_est(&self.tasks[p as usize].se.avg);
        !fits_capacity(util, self.capacity_of(src))
    }
}

/// `update_sd_pick_busiest`'s misfit gate: a `group_misfit_task` group whose CPUs
/// are not more than 25 % smaller than the local group's (`sg_max_capacity` fits
/// in `local_max_capacity`), or a local group without spare capacity, is not a
/// candidate: nothing would be gained by pulling its misfit here.
pub(crate) fn misfit_pick_refused(
    sgs: &SgLbStats,
    sg_max_capacity: u64,
    local_max_capacity: u64,
    local_type: GroupType,
) -> bool {
    sgs.group_type == GroupType::MisfitTask
        && (!fits_capacity(sg_max_capacity, local_max_capacity)
            || local_type != GroupType::HasSpare)
}
