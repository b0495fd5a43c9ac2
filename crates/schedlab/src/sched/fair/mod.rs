//! The fair scheduling class (kernel/sched/fair.c): the class hooks the core calls.
//!
//! `enqueue_task_fair` / `dequeue_task_fair` keep a CPU's `cfs_rq` (weights, counts,
//! timeline, PELT sums, util_est) in step with its runnable tasks;
//! `pick_next_task_fair` puts the previous task back and picks by vruntime and
//! buddies; `task_tick_fair` charges runtime and checks slice preemption;
//! `check_preempt_wakeup` decides whether a wakee preempts the current task;
//! `task_fork_fair` places a child's vruntime; `migrate_task_rq_fair` detaches a
//! waking task's vruntime and load from its old queue.
//!
//! PELT follows v5.6 `update_load_avg`: age the entity and the cfs_rq to the rq's PELT
//! clock, fold in load *removed* by tasks that migrated away (`remove_entity_load_avg`,
//! applied lazily at the next update), and *attach* a migrated or new task's averages
//! (`attach_entity_load_avg`) without decaying them first — which is why a wakee that
//! moved arrives with more load than a full decay would leave.
//!
//! Placement: `select_task_rq_fair` and the affine logic in [`wakeup`], the fast
//! path (`select_idle_sibling`) in [`idle`], the slow path (`find_idlest_cpu`) in
//! [`idlest`].

pub mod balance;
pub mod eas;
pub mod eevdf;
pub mod entity;
pub mod group;
pub mod idle;
pub mod idlest;
pub mod idlest_v4_15;
pub mod llc_idle_scan;
pub mod misfit;
pub mod smt_balance;
pub mod timeline;
pub mod wakeup;

use crate::engine::Observer;
use crate::sched::core::{Kernel, Policy, TaskState};
use crate::sched::features::SchedFeat;
use crate::sched::pelt::{self, SchedAvg};
use crate::sched::{Pid, SchedEvent, WF_FORK};
use entity::{
    calc_delta_fair, pick_next_entity, place_entity, sched_slice, update_min_vruntime, vdiff,
    wakeup_preempt_entity, LoadWeight,
};

pub const ENQUEUE_WAKEUP: u32 = 0x01;
/// `ENQUEUE_INITIAL` (v6.6 value): a new task's first placement.
pub const ENQUEUE_INITIAL: u32 = 0x80;
pub const ENQUEUE_MIGRATED: u32 = 0x40;
pub const DEQUEUE_SLEEP: u32 = 0x01;
/// `DEQUEUE_SPECIAL` (v6.12): a sleep that must not be delayed (here: a dying task).
pub const DEQUEUE_SPECIAL: u32 = 0x10;
/// `DEQUEUE_DELAYED` (v6.12): the final dequeue of a delayed entity.
pub const DEQUEUE_DELAYED: u32 = 0x200;

fn sub_positive(a: &mut u64, b: u64) {
    *a = a.saturating_sub(b);
}

impl<O: Observer<SchedEvent>> Kernel<O> {
    /// `activate_task`: enqueue and count the task as runnable on `cpu`.
    pub(crate) fn activate_task(&mut self, cpu: usize, pid: Pid, flags: u32) {
        if self.scx.is_some() {
            return self.enqueue_task_scx(cpu, pid, flags);
        }
        self.enqueue_task_fair(cpu, pid, flags);
    }

    /// `deactivate_task` (v6.12 `block_task`): false when DELAY_DEQUEUE kept the
    /// task queued.
    pub(crate) fn deactivate_task(&mut self, cpu: usize, pid: Pid, flags: u32) -> bool {
        if self.scx.is_some() {
            self.dequeue_task_scx(cpu, pid, flags);
            return true;
        }
        self.dequeue_task_fair(cpu, pid, flags)
    }

    /// `update_curr`: charge the current entity's runtime since `exec_start` and
    /// advance its vruntime.
    pub(crate) fn update_curr(&mut self, cpu: usize) {
        if self.scx.is_some() {
            return self.update_curr_scx(cpu);
        }
        let now = self.now;
        let rq = &mut self.rqs[cpu];
        let Some(pid) = rq.cfs.curr else { return };
        let se = &mut self.tasks[pid as usize].se;
        let delta = now as i64 - se.exec_start as i64;
        if delta <= 0 {
            return;
        }
        let delta = delta as u64;
        se.exec_start = now;
        se.sum_exec_runtime += delta;
        se.vruntime = se.vruntime.wrapping_add(calc_delta_fair(delta, &se.load));
        if self.fair.eevdf && vdiff(se.vruntime, se.deadline) >= 0 {
            // update_deadline: a new slice; reschedule if anything else is queued.
            se.slice = self.fair.base_slice;
            se.deadline = se
                .vruntime
                .wrapping_add(calc_delta_fair(se.slice, &se.load));
            if rq.cfs.nr_running > 1 {
                rq.deadline_resched = true;
                Self::clear_buddies(&mut rq.cfs, pid);
            }
        }
        let curr_v = if se.on_rq { Some(se.vruntime) } else { None };
        let left = rq.cfs.first_vruntime().map(|(p, v)| {
            debug_assert_eq!(
                v, self.tasks[p as usize].se.vruntime,
                "timeline copy of {p}"
            );
            v
        });
        update_min_vruntime(&mut rq.cfs, curr_v, left);
        if self.fair.preempt_short && !rq.deadline_resched && rq.cfs.nr_running > 1 {
            self.did_preempt_short(cpu, pid);
        }
    }

    /// v6.12 `did_preempt_short` (PREEMPT_SHORT), at the end of `update_curr`: once
    /// the running entity's slice is no longer protected (RUN_TO_PARITY's stash in
    /// `vlag` differs from its deadline), it is rescheduled as soon as it is not
    /// eligible.
    #[cold]
    #[inline(never)]
    fn did_preempt_short(&mut self, cpu: usize, pid: Pid) {
        let se = &self.tasks[pid as usize].se;
        if !se.on_rq || se.vlag == se.deadline as i64 {
            return;
        }
        let v = se.vruntime;
        if !eevdf::entity_eligible(&self.rqs[cpu].cfs, self.eevdf_curr(cpu), v) {
            let rq = &mut self.rqs[cpu];
            rq.deadline_resched = true;
            Self::clear_buddies(&mut rq.cfs, pid);
        }
    }

    fn refresh_min_vruntime(&mut self, cpu: usize) {
        let rq = &mut self.rqs[cpu];
        let curr_v = rq.cfs.curr.and_then(|c| {
            let se = &self.tasks[c as usize].se;
            se.on_rq.then_some(se.vruntime)
        });
        let left = rq.cfs.first_vruntime().map(|(p, v)| {
            debug_assert_eq!(
                v, self.tasks[p as usize].se.vruntime,
                "timeline copy of {p}"
            );
            v
        });
        update_min_vruntime(&mut rq.cfs, curr_v, left);
    }

    /// The running entity of `cpu` as the EEVDF sums see it: (vruntime, weight) while
    /// it is on the runqueue (`cfs_rq->curr && curr->on_rq`).
    fn eevdf_curr(&self, cpu: usize) -> Option<(u64, u64)> {
        let c = self.rqs[cpu].cfs.curr?;
        let se = &self.tasks[c as usize].se;
        se.on_rq.then_some((se.vruntime, se.load.weight))
    }

    /// `update_entity_lag` of `pid` on `cpu` (the value, not stored).
    fn entity_lag(&self, cpu: usize, pid: Pid) -> i64 {
        let se = &self.tasks[pid as usize].se;
        eevdf::update_entity_lag(
            &self.rqs[cpu].cfs,
            self.eevdf_curr(cpu),
            se.vruntime,
            se.slice,
            &se.load,
            self.fair.tick_nsec,
        )
    }

    /// `place_entity` of v6.6 for `pid` joining `cpu`'s runqueue (not yet counted).
    fn place_entity_eevdf(&mut self, cpu: usize, pid: Pid, initial: bool) {
        let curr = self
            .eevdf_curr(cpu)
            .filter(|_| self.rqs[cpu].cfs.curr != Some(pid));
        let se = &self.tasks[pid as usize].se;
        let pl = eevdf::place_entity(
            &self.rqs[cpu].cfs,
            curr,
            se.vlag,
            &se.load,
            self.fair.base_slice,
            initial,
            eevdf::PlaceFeat {
                place_lag: self.feat.has(SchedFeat::PLACE_LAG),
                place_deadline_initial: self.feat.has(SchedFeat::PLACE_DEADLINE_INITIAL),
            },
        );
        let se = &mut self.tasks[pid as usize].se;
        se.vruntime = pl.vruntime;
        se.deadline = pl.deadline;
        se.slice = pl.slice;
    }

    /// `pick_eevdf` on `cpu`, with `curr` competing when it is on the runqueue.
    fn pick_eevdf(&self, cpu: usize) -> Option<Pid> {
        let cfs = &self.rqs[cpu].cfs;
        let curr = cfs.curr.and_then(|c| {
            let se = &self.tasks[c as usize].se;
            se.on_rq.then_some(eevdf::Curr {
                pid: c,
                vruntime: se.vruntime,
                deadline: se.deadline,
                vlag: se.vlag,
                weight: se.load.weight,
            })
        });
        eevdf::pick_eevdf(cfs, curr, self.fair.run_to_parity)
    }

    /// An EEVDF slice end noticed by `update_curr` (`update_deadline`'s
    /// `resched_curr`), taken once.
    pub(crate) fn take_deadline_resched(&mut self, cpu: usize) -> bool {
        std::mem::take(&mut self.rqs[cpu].deadline_resched)
    }

    /// `update_cfs_rq_load_avg`: fold in removed load, then age the cfs_rq.
    fn update_cfs_rq_load_avg(&mut self, cpu: usize, now: u64) -> bool {
        let rq = &mut self.rqs[cpu];
        let cfs = &mut rq.cfs;
        let mut decayed = false;
        if cfs.removed.nr > 0 {
            let r = std::mem::take(&mut cfs.removed);
            let sa = &mut cfs.avg;
            let divider = pelt::get_pelt_divider(sa);
            sub_positive(&mut sa.load_avg, r.load_avg);
            sub_positive(&mut sa.load_sum, r.load_avg * divider);
            sub_positive(&mut sa.util_avg, r.util_avg);
            let mut us = sa.util_sum as u64;
            sub_positive(&mut us, r.util_avg * divider);
            sa.util_sum = us as u32;
            decayed = true;
        }
        let running = cfs.curr.is_some();
        let crossed = pelt::update_cfs_rq(
            now,
            &mut cfs.avg,
            cfs.load.weight,
            cfs.runnable_weight,
            running,
        );
        if crossed {
            self.tp_pelt_cfs(cpu);
        }
        decayed || crossed
    }

    /// `update_load_avg(cfs_rq, se, flags)` for task `pid` on `cpu`: age the entity
    /// (unless it is not attached yet), age the cfs_rq, attach when asked.
    fn update_load_avg(&mut self, cpu: usize, pid: Pid, attach: bool) {
        let now = pelt::rq_clock_pelt(&self.rqs[cpu].pelt);
        let running = self.rqs[cpu].cfs.curr == Some(pid);
        let se = &mut self.tasks[pid as usize].se;
        if se.avg.last_update_time != 0 {
            let crossed = entity::update_se_avg(now, se, running);
            let se = &mut self.tasks[pid as usize].se;
            // A task attached while the PELT clock was still 0 carries the stand-in
            // time 1 (see `attach_entity_load_avg`); an update at clock 0 "goes
            // backwards" and resets it to 0, which would mark it detached for good
            // (never aged again, re-attached at its next enqueue).
            if se.avg.last_update_time == 0 {
                se.avg.last_update_time = 1;
            }
            if crossed {
                self.tp_pelt_se(cpu, pid);
            }
        }
        self.update_cfs_rq_load_avg(cpu, now);
        if self.tasks[pid as usize].se.avg.last_update_time == 0 && attach {
            self.attach_entity_load_avg(cpu, pid);
        }
    }

    /// `attach_entity_load_avg`: align the task's sums with the cfs_rq and add them.
    fn attach_entity_load_avg(&mut self, cpu: usize, pid: Pid) {
        let cfs_avg = self.rqs[cpu].cfs.avg;
        let se = &mut self.tasks[pid as usize].se;
        let divider = pelt::get_pelt_divider(&cfs_avg);
        let w = se.load.weight;
        let sa: &mut SchedAvg = &mut se.avg;
        // The kernel uses the cfs_rq's last update time, which is never 0 once the
        // clock has run; start the clock at 1 ns so "attached" stays distinguishable.
        sa.last_update_time = cfs_avg.last_update_time.max(1);
        sa.period_contrib = cfs_avg.period_contrib;
        sa.util_sum = (sa.util_avg * divider) as u32;
        sa.load_sum = divider;
        if let Some(v) = (sa.load_avg * sa.load_sum).checked_div(w) {
            sa.load_sum = v;
        }
        sa.runnable_load_sum = sa.load_sum;
        let (la, ls, ua, us) = (sa.load_avg, sa.load_sum, sa.util_avg, sa.util_sum);
        let c = &mut self.rqs[cpu].cfs.avg;
        c.load_avg += la;
        c.load_sum += w * ls;
        c.util_avg += ua;
        c.util_sum = c.util_sum.wrapping_add(us);
        self.tp_pelt_cfs(cpu);
    }

    /// `remove_entity_load_avg`: sync the task to its cfs_rq's last update and queue
    /// its averages for removal at the next update of that cfs_rq.
    fn remove_entity_load_avg(&mut self, cpu: usize, pid: Pid) {
        let last = self.rqs[cpu].cfs.avg.last_update_time;
        let se = &mut self.tasks[pid as usize].se;
        let w = se.load.weight;
        if pelt::update_blocked_se(last, &mut se.avg, w, w) {
            self.tp_pelt_se(cpu, pid);
        }
        let a = self.tasks[pid as usize].se.avg;
        let r = &mut self.rqs[cpu].cfs.removed;
        r.nr += 1;
        r.util_avg += a.util_avg;
        r.load_avg += a.load_avg;
        r.runnable_sum += a.load_sum;
    }

    /// `enqueue_task_fair` → `enqueue_entity` (flat hierarchy).
    fn enqueue_task_fair(&mut self, cpu: usize, pid: Pid, flags: u32) {
        // A delayed task enqueued here is migrating (sched/affinity.rs): its
        // util_est left the old queue when it was delayed and does not come back
        // until its wakeup (`requeue_delayed_entity`).
        if self.feat.has(SchedFeat::UTIL_EST) && !self.tasks[pid as usize].se.sched_delayed {
            let sa = self.tasks[pid as usize].se.avg;
            pelt::util_est_enqueue(&mut self.rqs[cpu].cfs.avg.util_est.enqueued, &sa);
            self.tp_util_est_cfs(cpu);
        }
        let eevdf = self.fair.eevdf;
        let renorm = !eevdf && (flags & ENQUEUE_WAKEUP == 0 || flags & ENQUEUE_MIGRATED != 0);
        let is_curr = self.rqs[cpu].cfs.curr == Some(pid);
        let initial = flags & ENQUEUE_INITIAL != 0;
        if eevdf && is_curr {
            self.place_entity_eevdf(cpu, pid, initial);
        }
        if renorm && is_curr {
            let mv = self.rqs[cpu].cfs.min_vruntime;
            let se = &mut self.tasks[pid as usize].se;
            se.vruntime = se.vruntime.wrapping_add(mv);
        }
        self.update_curr(cpu);
        if renorm && !is_curr {
            let mv = self.rqs[cpu].cfs.min_vruntime;
            let se = &mut self.tasks[pid as usize].se;
            se.vruntime = se.vruntime.wrapping_add(mv);
        }
        self.update_load_avg(cpu, pid, true);
        if eevdf && !is_curr {
            // v6.6 places before account_entity_enqueue: nr_running excludes `pid`.
            self.place_entity_eevdf(cpu, pid, initial);
        }
        // enqueue_runnable_load_avg + account_entity_enqueue
        let t = &self.tasks[pid as usize];
        let w = t.se.load.weight;
        let idle = t.policy == Policy::Idle;
        let (rla, rls) = (t.se.avg.runnable_load_avg, t.se.avg.runnable_load_sum);
        let rq = &mut self.rqs[cpu];
        rq.cfs.runnable_weight += w;
        rq.cfs.avg.runnable_load_avg += rla;
        rq.cfs.avg.runnable_load_sum += w * rls;
        rq.cfs.load = LoadWeight::sum(rq.cfs.load.weight + w);
        rq.cfs.nr_running += 1;
        if !eevdf && flags & ENQUEUE_WAKEUP != 0 {
            let se = &self.tasks[pid as usize].se;
            let v = place_entity(
                &self.rqs[cpu].cfs,
                se.vruntime,
                &se.load,
                true,
                false,
                &self.fair,
            );
            self.tasks[pid as usize].se.vruntime = v;
        }
        let se = &self.tasks[pid as usize].se;
        let (v, d) = (se.vruntime, se.deadline);
        let rq = &mut self.rqs[cpu];
        if !is_curr {
            rq.cfs.timeline_insert(pid, v, w, d);
        }
        rq.cfs.h_nr_running += 1;
        if idle {
            rq.cfs.idle_h_nr_running += 1;
        }
        rq.nr_running += 1;
        self.sync_idle_bits(cpu);
        self.tasks[pid as usize].se.on_rq = true;
        self.lb_enqueued(cpu, pid, flags & ENQUEUE_WAKEUP != 0);
        self.cpufreq_update_util(cpu);
        self.report_cfs_rq(cpu);
    }

    /// `dequeue_task_fair` → `dequeue_entity`, then `util_est_dequeue`. Under
    /// DELAY_DEQUEUE (EEVDF) a sleep of a non-eligible entity only marks it
    /// `sched_delayed` and leaves it queued (returns false, as `dequeue_entities`'
    /// −1: the task stays on the runqueue); `DEQUEUE_DELAYED` is the final dequeue
    /// of such an entity, from the pick (no second `util_est_dequeue`).
    fn dequeue_task_fair(&mut self, cpu: usize, pid: Pid, flags: u32) -> bool {
        self.update_curr(cpu);
        let delayed_final = flags & DEQUEUE_DELAYED != 0;
        if self.fair.delay_dequeue
            && !delayed_final
            && flags & (DEQUEUE_SLEEP | DEQUEUE_SPECIAL) == DEQUEUE_SLEEP
            && self.try_delay_dequeue(cpu, pid)
        {
            return false;
        }
        self.update_load_avg(cpu, pid, false);
        let t = &self.tasks[pid as usize];
        let w = t.se.load.weight;
        let idle = t.policy == Policy::Idle;
        let (rla, rls) = (t.se.avg.runnable_load_avg, t.se.avg.runnable_load_sum);
        let rq = &mut self.rqs[cpu];
        rq.cfs.runnable_weight -= w;
        sub_positive(&mut rq.cfs.avg.runnable_load_avg, rla);
        sub_positive(&mut rq.cfs.avg.runnable_load_sum, w * rls);
        Self::clear_buddies(&mut rq.cfs, pid);
        if self.fair.eevdf {
            // update_entity_lag, while the entity still counts in the average.
            let lag = self.entity_lag(cpu, pid);
            self.tasks[pid as usize].se.vlag = lag;
        }
        let rq = &mut self.rqs[cpu];
        if rq.cfs.curr != Some(pid) {
            rq.cfs.timeline_remove(pid);
        }
        rq.cfs.load = LoadWeight::sum(rq.cfs.load.weight - w);
        rq.cfs.nr_running -= 1;
        rq.cfs.h_nr_running -= 1;
        if idle {
            rq.cfs.idle_h_nr_running -= 1;
        }
        rq.nr_running -= 1;
        self.sync_idle_bits(cpu);
        self.tasks[pid as usize].se.on_rq = false;
        self.lb_dequeued(cpu, pid);
        if !self.fair.eevdf && flags & DEQUEUE_SLEEP == 0 {
            let mv = self.rqs[cpu].cfs.min_vruntime;
            let se = &mut self.tasks[pid as usize].se;
            se.vruntime = se.vruntime.wrapping_sub(mv);
        }
        self.refresh_min_vruntime(cpu);
        if self.fair.delay_dequeue && self.tasks[pid as usize].se.sched_delayed {
            if delayed_final {
                self.finish_delayed_dequeue_entity(pid);
            }
        } else {
            self.util_est_dequeue_update(cpu, pid, flags & DEQUEUE_SLEEP != 0);
        }
        self.cpufreq_update_util(cpu);
        self.report_cfs_rq(cpu);
        true
    }

    /// The DELAY_DEQUEUE test of `dequeue_entity` for a sleep: a non-eligible entity
    /// is only marked `sched_delayed` (true) and stays queued.
    #[cold]
    #[inline(never)]
    fn try_delay_dequeue(&mut self, cpu: usize, pid: Pid) -> bool {
        let v = self.tasks[pid as usize].se.vruntime;
        let curr = self.eevdf_curr(cpu);
        if eevdf::entity_eligible(&self.rqs[cpu].cfs, curr, v) {
            return false;
        }
        let cfs = &mut self.rqs[cpu].cfs;
        if cfs.next == Some(pid) {
            cfs.next = None;
        }
        self.update_load_avg(cpu, pid, false);
        self.tasks[pid as usize].se.sched_delayed = true;
        self.util_est_dequeue_update(cpu, pid, true);
        self.cpufreq_update_util(cpu);
        self.report_cfs_rq(cpu);
        true
    }

    /// `finish_delayed_dequeue_entity`: DELAY_ZERO forgives a positive lag.
    #[cold]
    #[inline(never)]
    fn finish_delayed_dequeue_entity(&mut self, pid: Pid) {
        let se = &mut self.tasks[pid as usize].se;
        se.sched_delayed = false;
        if self.feat.has(SchedFeat::DELAY_ZERO) && se.vlag > 0 {
            se.vlag = 0;
        }
    }

    /// `util_est_dequeue` + `util_est_update` of a dequeue.
    #[inline(always)]
    fn util_est_dequeue_update(&mut self, cpu: usize, pid: Pid, sleep: bool) {
        if self.feat.has(SchedFeat::UTIL_EST) {
            let fastup = self.feat.has(SchedFeat::UTIL_EST_FASTUP);
            let cap = self.rqs[cpu].cpu_capacity_orig;
            let sa = self.tasks[pid as usize].se.avg;
            pelt::util_est_dequeue(&mut self.rqs[cpu].cfs.avg.util_est.enqueued, &sa);
            self.tp_util_est_cfs(cpu);
            let se = &mut self.tasks[pid as usize].se.avg;
            if pelt::util_est_update_feat(se, sleep, cap, fastup) {
                self.tp_util_est_se(cpu, pid);
            }
        }
    }

    /// `enqueue_task_fair(ENQUEUE_DELAYED)` → `requeue_delayed_entity`: the wakeup of
    /// a delayed task (`ttwu_runnable`), on the runqueue it never left. With
    /// DELAY_ZERO an entity whose lag has become positive is re-placed at the
    /// average (lag 0, a new deadline); otherwise it keeps its vruntime and deadline.
    #[cold]
    #[inline(never)]
    pub(crate) fn requeue_delayed_entity(&mut self, cpu: usize, pid: Pid) {
        debug_assert!(self.tasks[pid as usize].se.sched_delayed);
        if self.feat.has(SchedFeat::UTIL_EST) {
            let sa = self.tasks[pid as usize].se.avg;
            pelt::util_est_enqueue(&mut self.rqs[cpu].cfs.avg.util_est.enqueued, &sa);
            self.tp_util_est_cfs(cpu);
        }
        if self.feat.has(SchedFeat::DELAY_ZERO) {
            let lag = self.entity_lag(cpu, pid);
            self.tasks[pid as usize].se.vlag = lag;
            if lag > 0 {
                let is_curr = self.rqs[cpu].cfs.curr == Some(pid);
                self.rqs[cpu].cfs.nr_running -= 1;
                if !is_curr {
                    self.rqs[cpu].cfs.timeline_remove(pid);
                }
                self.tasks[pid as usize].se.vlag = 0;
                self.place_entity_eevdf(cpu, pid, false);
                let se = &self.tasks[pid as usize].se;
                let (v, w, d) = (se.vruntime, se.load.weight, se.deadline);
                if !is_curr {
                    self.rqs[cpu].cfs.timeline_insert(pid, v, w, d);
                }
                self.rqs[cpu].cfs.nr_running += 1;
            }
        }
        self.update_load_avg(cpu, pid, false);
        self.tasks[pid as usize].se.sched_delayed = false;
        self.cpufreq_update_util(cpu);
        self.report_cfs_rq(cpu);
    }

    fn clear_buddies(cfs: &mut entity::CfsRq, pid: Pid) {
        if cfs.last == Some(pid) {
            cfs.last = None;
        }
        if cfs.next == Some(pid) {
            cfs.next = None;
        }
        if cfs.skip == Some(pid) {
            cfs.skip = None;
        }
    }

    /// `put_prev_task_fair` + `pick_next_task_fair` + `set_next_entity`. Returns the
    /// task to run, or `None` to go idle.
    pub(crate) fn pick_next_task_fair(&mut self, cpu: usize, prev: Option<Pid>) -> Option<Pid> {
        let mut eevdf_pick = None;
        if self.fair.eevdf {
            // v6.6 (group scheduling built in, as distribution kernels are) picks
            // with the previous task still current: it competes as `curr`.
            if let Some(p) = prev {
                if self.tasks[p as usize].se.on_rq {
                    self.update_curr(cpu);
                }
            }
            eevdf_pick = self.pick_next_entity_eevdf(cpu);
            // v6.12 pick_next_entity: a delayed entity reached by the pick is dequeued
            // for good, and the pick starts again.
            if self.fair.delay_dequeue {
                if let Some(d) = eevdf_pick.filter(|&d| self.tasks[d as usize].se.sched_delayed) {
                    eevdf_pick = self.pick_past_delayed(cpu, d);
                }
            }
        }
        // put_prev_entity
        if let Some(p) = prev {
            if self.tasks[p as usize].se.on_rq {
                self.update_curr(cpu);
                let se = &self.tasks[p as usize].se;
                let (v, w, d) = (se.vruntime, se.load.weight, se.deadline);
                self.rqs[cpu].cfs.timeline_insert(p, v, w, d);
                self.update_load_avg(cpu, p, false);
                self.report_cfs_rq(cpu);
            }
            self.rqs[cpu].cfs.curr = None;
        }
        // Rescheduling now: a pending slice end is served.
        self.rqs[cpu].deadline_resched = false;
        let tasks = &self.tasks;
        let picked = if self.fair.eevdf {
            eevdf_pick
        } else {
            pick_next_entity(
                &self.rqs[cpu].cfs,
                |p| {
                    let se = &tasks[p as usize].se;
                    (se.vruntime, se.load)
                },
                &self.fair,
            )
        };
        let Some(next) = picked else {
            // No fair task: schedule() runs newidle_balance next (fair/balance.rs), and
            // only if that pulls nothing does the CPU go idle
            // (`update_idle_rq_clock_pelt`, in `schedule`).
            return None;
        };
        Self::clear_buddies(&mut self.rqs[cpu].cfs, next);
        // set_next_entity
        self.rqs[cpu].cfs.timeline_remove(next);
        self.update_load_avg(cpu, next, false);
        self.report_cfs_rq(cpu);
        self.rqs[cpu].cfs.curr = Some(next);
        let now = self.now;
        let se = &mut self.tasks[next as usize].se;
        se.exec_start = now;
        se.prev_sum_exec_runtime = se.sum_exec_runtime;
        if self.fair.eevdf && (prev != Some(next) || !self.fair.preempt_short) {
            // set_next_entity's stash for RUN_TO_PARITY (vlag is unused until dequeue).
            // The kernel runs set_next_entity only when the pick changes task
            // (`prev != p`); modelled so under PREEMPT_SHORT (v6.12), whose
            // did_preempt_short reads the stash. v6.6 keeps re-stashing (see §3).
            se.vlag = se.deadline as i64;
        }
        self.lb_picked(cpu, next);
        Some(next)
    }

    /// The v6.12 pick reached the delayed entity `d`: dequeue it for good
    /// (DEQUEUE_SLEEP | DEQUEUE_DELAYED) and pick again, as long as the pick lands on
    /// delayed entities.
    #[cold]
    #[inline(never)]
    fn pick_past_delayed(&mut self, cpu: usize, mut d: Pid) -> Option<Pid> {
        loop {
            self.dequeue_task_fair(cpu, d, DEQUEUE_SLEEP | DEQUEUE_DELAYED);
            let next = self.pick_next_entity_eevdf(cpu);
            match next {
                Some(n) if self.tasks[n as usize].se.sched_delayed => d = n,
                _ => return next,
            }
        }
    }

    /// `pick_next_entity` of v6.6: an eligible NEXT_BUDDY, else `pick_eevdf`.
    fn pick_next_entity_eevdf(&self, cpu: usize) -> Option<Pid> {
        let cfs = &self.rqs[cpu].cfs;
        if self.feat.has(SchedFeat::NEXT_BUDDY) {
            if let Some(n) = cfs.next {
                let v = self.tasks[n as usize].se.vruntime;
                if eevdf::entity_eligible(cfs, self.eevdf_curr(cpu), v) {
                    return Some(n);
                }
            }
        }
        self.pick_eevdf(cpu)
    }

    /// `task_tick_fair` → `entity_tick`: returns true when the slice is used up.
    pub(crate) fn task_tick_fair(&mut self, cpu: usize) -> bool {
        let Some(pid) = self.rqs[cpu].cfs.curr else {
            return false;
        };
        self.update_curr(cpu);
        self.update_load_avg(cpu, pid, false);
        self.report_cfs_rq(cpu);
        if self.fair.eevdf {
            // No tick test: the slice ends at the deadline (update_deadline).
            return self.take_deadline_resched(cpu);
        }
        if self.rqs[cpu].cfs.nr_running > 1 {
            return self.check_preempt_tick(cpu, pid);
        }
        false
    }

    /// `check_preempt_tick`.
    fn check_preempt_tick(&mut self, cpu: usize, pid: Pid) -> bool {
        let se = &self.tasks[pid as usize].se;
        let cfs = &self.rqs[cpu].cfs;
        let ideal = sched_slice(cfs, &se.load, true, &self.fair);
        let delta_exec = se.sum_exec_runtime - se.prev_sum_exec_runtime;
        if delta_exec > ideal {
            Self::clear_buddies(&mut self.rqs[cpu].cfs, pid);
            return true;
        }
        if delta_exec < self.fair.min_granularity {
            return false;
        }
        let Some(left) = cfs.first() else {
            return false;
        };
        let delta = vdiff(se.vruntime, self.tasks[left as usize].se.vruntime);
        delta > 0 && delta as u64 > ideal
    }

    /// `check_preempt_wakeup`: should the newly woken `pid` preempt `cpu`'s current
    /// task? Sets the next/last buddies as the kernel does.
    pub(crate) fn check_preempt_wakeup(&mut self, cpu: usize, pid: Pid, wake_flags: u32) -> bool {
        let Some(curr) = self.rqs[cpu].curr else {
            return true;
        };
        if curr == pid {
            return false;
        }
        if self.fair.eevdf {
            return self.check_preempt_wakeup_eevdf(cpu, curr, pid, wake_flags);
        }
        let scale = self.rqs[cpu].cfs.nr_running as u64 >= self.fair.nr_latency;
        let mut next_buddy_marked = false;
        if self.feat.has(SchedFeat::NEXT_BUDDY) && scale && wake_flags & WF_FORK == 0 {
            self.set_next_buddy(cpu, pid);
            next_buddy_marked = true;
        }
        if self.rqs[cpu].need_resched {
            return false;
        }
        let curr_policy = self.tasks[curr as usize].policy;
        let p_policy = self.tasks[pid as usize].policy;
        let preempt = if curr_policy == Policy::Idle && p_policy != Policy::Idle {
            true
        } else if p_policy != Policy::Normal || !self.feat.has(SchedFeat::WAKEUP_PREEMPTION) {
            return false;
        } else {
            self.update_curr(cpu);
            let cv = self.tasks[curr as usize].se.vruntime;
            let pse = &self.tasks[pid as usize].se;
            if wakeup_preempt_entity(cv, pse.vruntime, &pse.load, &self.fair) == 1 {
                if !next_buddy_marked {
                    self.set_next_buddy(cpu, pid);
                }
                true
            } else {
                false
            }
        };
        if preempt
            && self.tasks[curr as usize].se.on_rq
            && self.feat.has(SchedFeat::LAST_BUDDY)
            && scale
            && self.tasks[curr as usize].policy != Policy::Idle
        {
            self.rqs[cpu].cfs.last = Some(curr);
        }
        preempt
    }

    /// `check_preempt_wakeup` of v6.6: preempt iff `pick_eevdf` would now choose the
    /// wakee. A slice end found by the enqueue's `update_curr` has already asked for
    /// a reschedule (`update_deadline`), which this returns as a preemption.
    fn check_preempt_wakeup_eevdf(
        &mut self,
        cpu: usize,
        curr: Pid,
        pid: Pid,
        wake_flags: u32,
    ) -> bool {
        if self.take_deadline_resched(cpu) {
            return true;
        }
        if self.feat.has(SchedFeat::NEXT_BUDDY) && wake_flags & WF_FORK == 0 {
            self.set_next_buddy(cpu, pid);
        }
        if self.rqs[cpu].need_resched {
            return false;
        }
        let curr_policy = self.tasks[curr as usize].policy;
        let p_policy = self.tasks[pid as usize].policy;
        if curr_policy == Policy::Idle && p_policy != Policy::Idle {
            return true;
        }
        if p_policy != Policy::Normal || !self.feat.has(SchedFeat::WAKEUP_PREEMPTION) {
            return false;
        }
        self.update_curr(cpu);
        self.take_deadline_resched(cpu) || self.pick_eevdf(cpu) == Some(pid)
    }

    fn set_next_buddy(&mut self, cpu: usize, pid: Pid) {
        if self.tasks[pid as usize].policy != Policy::Idle {
            self.rqs[cpu].cfs.next = Some(pid);
        }
    }

    /// `yield_task_fair`: mark the current task as the skip buddy.
    pub(crate) fn yield_task_fair(&mut self, cpu: usize) {
        if self.rqs[cpu].nr_running == 1 {
            return;
        }
        let Some(pid) = self.rqs[cpu].curr else {
            return;
        };
        Self::clear_buddies(&mut self.rqs[cpu].cfs, pid);
        if self.fair.eevdf {
            // v6.6: no skip buddy; the yielder's deadline moves one slice back.
            self.update_curr(cpu);
            let se = &mut self.tasks[pid as usize].se;
            se.deadline = se
                .deadline
                .wrapping_add(calc_delta_fair(se.slice, &se.load));
            return;
        }
        if self.tasks[pid as usize].policy != Policy::Batch {
            self.update_curr(cpu);
        }
        self.rqs[cpu].cfs.skip = Some(pid);
    }

    /// `task_fork_fair`: the child starts from the parent's vruntime, placed with
    /// START_DEBIT on the parent's CPU, and kept relative to its `min_vruntime`.
    pub(crate) fn task_fork_fair(
        &mut self,
        pid: Pid,
        this_cpu: usize,
        parent: Option<Pid>,
        q: &mut crate::engine::EventQueue<crate::sched::Event>,
    ) {
        let now = self.now;
        self.rq_update_clock(this_cpu, now);
        // A scenario-started task has no parent to inherit from: it is placed from
        // min_vruntime alone.
        let curr = self.rqs[this_cpu].cfs.curr.filter(|&c| Some(c) == parent);
        if self.fair.eevdf {
            // v6.6: update the parent, then a provisional ENQUEUE_INITIAL placement on
            // the parent's runqueue (the enqueue on the chosen CPU places it again).
            if curr.is_some() {
                self.update_curr(this_cpu);
                if self.take_deadline_resched(this_cpu) {
                    self.resched_curr(this_cpu, this_cpu, q);
                }
            }
            self.tasks[pid as usize].se.vlag = 0;
            self.place_entity_eevdf(this_cpu, pid, true);
            return;
        }
        if let Some(c) = curr {
            self.update_curr(this_cpu);
            self.tasks[pid as usize].se.vruntime = self.tasks[c as usize].se.vruntime;
        }
        let se = &self.tasks[pid as usize].se;
        let v = place_entity(
            &self.rqs[this_cpu].cfs,
            se.vruntime,
            &se.load,
            false,
            true,
            &self.fair,
        );
        self.tasks[pid as usize].se.vruntime = v;
        if let Some(c) = curr {
            if self.tun.child_runs_first && vdiff(self.tasks[c as usize].se.vruntime, v) < 0 {
                let cv = self.tasks[c as usize].se.vruntime;
                self.tasks[c as usize].se.vruntime = v;
                self.tasks[pid as usize].se.vruntime = cv;
                self.resched_curr(this_cpu, this_cpu, q);
            }
        }
        let mv = self.rqs[this_cpu].cfs.min_vruntime;
        let se = &mut self.tasks[pid as usize].se;
        se.vruntime = se.vruntime.wrapping_sub(mv);
    }

    /// `post_init_entity_util_avg` + `attach_entity_cfs_rq` on the new task's rq.
    pub(crate) fn post_init_entity_util_avg(&mut self, pid: Pid, cpu: usize) {
        let cap = self.rqs[cpu].cpu_capacity_orig;
        let cfs_avg = self.rqs[cpu].cfs.avg;
        let w = self.tasks[pid as usize].se.load.weight;
        pelt::post_init_entity_util_avg(
            &mut self.tasks[pid as usize].se.avg,
            w,
            cap,
            &cfs_avg,
            true,
        );
        // attach_entity_cfs_rq: age the cfs_rq (the task is not attached yet), attach.
        let now = pelt::rq_clock_pelt(&self.rqs[cpu].pelt);
        self.update_cfs_rq_load_avg(cpu, now);
        self.attach_entity_load_avg(cpu, pid);
        self.report_cfs_rq(cpu);
    }

    /// `migrate_task_rq_fair` for a task leaving `old_cpu`: a waking task's vruntime
    /// becomes relative to the old queue; its load is removed from it.
    pub(crate) fn migrate_task_rq_fair(&mut self, pid: Pid, old_cpu: usize, waking: bool) {
        if waking && !self.fair.eevdf {
            let mv = self.rqs[old_cpu].cfs.min_vruntime;
            let se = &mut self.tasks[pid as usize].se;
            se.vruntime = se.vruntime.wrapping_sub(mv);
        }
        if self.lb.migrating == Some(pid) {
            // TASK_ON_RQ_MIGRATING (load balancing): detach at once.
            self.detach_entity_cfs_rq(old_cpu, pid);
        } else {
            self.remove_entity_load_avg(old_cpu, pid);
        }
        let se = &mut self.tasks[pid as usize].se;
        se.avg.last_update_time = 0;
        se.exec_start = 0;
    }

    /// `task_dead_fair`.
    pub(crate) fn task_dead_fair(&mut self, pid: Pid) {
        let cpu = self.tasks[pid as usize].cpu;
        self.remove_entity_load_avg(cpu, pid);
        debug_assert_eq!(self.tasks[pid as usize].state, TaskState::Dead);
    }

    /// `cpu_util`: the CFS utilization of `cpu`, util_est included, capped at
    /// `capacity_orig`.
    pub fn cpu_util(&self, cpu: usize) -> u64 {
        let rq = &self.rqs[cpu];
        let mut util = rq.cfs.avg.util_avg;
        if self.feat.has(SchedFeat::UTIL_EST) {
            util = util.max(rq.cfs.avg.util_est.enqueued as u64);
        }
        util.min(rq.cpu_capacity_orig)
    }
}

#[cfg(test)]
mod delay_tests;
