//! CFS entities and runqueues: weights, vruntime, slices, placement and preemption.
//!
//! The completely fair scheduler gives each runnable entity a share of the CPU
//! proportional to its **weight** (nice 0 = 1024, ~1.25× per nice step, the
//! `sched_prio_to_weight` table). Each entity's **vruntime** advances by its real
//! runtime scaled by `1024 / weight` (`calc_delta_fair`, done in fixed point with the
//! precomputed inverse weights `sched_prio_to_wmult` and a 32-bit shift, exactly as
//! `__calc_delta`). The runqueue keeps its queued entities ordered by vruntime (an
//! rbtree in the kernel, a balanced tree here, a sorted vector while short, with the
//! same order and tie rule: equal keys go after the existing ones; fair/timeline.rs)
//! and a monotonic `min_vruntime`.
//!
//! * **Slice**: `sched_slice = period × w / Σw`, `period = sched_latency` for up to
//!   `sched_nr_latency` (8) entities, else `nr × min_granularity`; an entity not yet
//!   queued counts itself in.
//! * **place_entity**: a waking sleeper gets `vruntime = max(own, min_vruntime −
//!   latency/2)` (GENTLE_FAIR_SLEEPERS); a forked child starts one `vslice` after
//!   `min_vruntime` (START_DEBIT).
//! * **Wakeup preemption** (`check_preempt_wakeup`, in `fair/mod.rs`) uses
//!   `wakeup_preempt_entity`: preempt when `curr.vruntime − wakee.vruntime` exceeds the
//!   wakeup granularity converted to the wakee's virtual time.
//! * **Tick preemption** (`check_preempt_tick`): reschedule when the current entity has
//!   run longer than its slice, or (after min_granularity) is more than a slice ahead of
//!   the leftmost.
//! * **pick_next_entity**: leftmost, avoiding the skip buddy (yield) when the second is
//!   not too far ahead, then preferring the last and next buddies under the same test.
//!
//! Fidelity: exact for a flat hierarchy (no cgroups, so `h_nr_running == nr_running`
//! and every entity is a task). vruntime arithmetic wraps like the kernel's `u64` and is
//! compared through signed differences; `min_vruntime` starts at `-(1 << 20)` as in
//! `init_cfs_rq`.

use crate::sched::fair::timeline::Timeline;
use crate::sched::pelt::{self, SchedAvg};

/// `NICE_0_LOAD` at the user-visible resolution (the kernel's `scale_load_down`).
pub const NICE_0_LOAD: u64 = 1024;
/// `WMULT_SHIFT`.
const WMULT_SHIFT: u32 = 32;
/// `WMULT_CONST` (`~0U`).
const WMULT_CONST: u64 = u32::MAX as u64;
/// SCHED_IDLE weight (`WEIGHT_IDLEPRIO`).
pub const WEIGHT_IDLEPRIO: u64 = 3;

/// `sched_prio_to_weight`: nice −20 … 19.
pub const SCHED_PRIO_TO_WEIGHT: [u64; 40] = [
    88761, 71755, 56483, 46273, 36291, 29154, 23254, 18705, 14949, 11916, 9548, 7620, 6100, 4904,
    3906, 3121, 2501, 1991, 1586, 1277, 1024, 820, 655, 526, 423, 335, 272, 215, 172, 137, 110, 87,
    70, 56, 45, 36, 29, 23, 18, 15,
];

/// A load weight with its cached inverse (`struct load_weight`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LoadWeight {
    pub weight: u64,
    pub inv_weight: u32,
}

impl LoadWeight {
    /// The weight of nice level `nice`, with the table's inverse (2^32 / w).
    pub(crate) fn from_nice(nice: i32) -> LoadWeight {
        let w = SCHED_PRIO_TO_WEIGHT[(nice.clamp(-20, 19) + 20) as usize];
        LoadWeight {
            weight: w,
            inv_weight: ((1u64 << 32) / w) as u32,
        }
    }
    /// SCHED_IDLE tasks (`WEIGHT_IDLEPRIO`, `WMULT_IDLEPRIO`).
    pub(crate) fn idle_policy() -> LoadWeight {
        LoadWeight {
            weight: WEIGHT_IDLEPRIO,
            inv_weight: 1_431_655_765,
        }
    }
    /// A sum of weights (a runqueue's load); inverse computed lazily as
    /// `__update_inv_weight` does.
    pub fn sum(weight: u64) -> LoadWeight {
        LoadWeight {
            weight,
            inv_weight: 0,
        }
    }
    fn inv(&self) -> u64 {
        if self.inv_weight != 0 {
            return self.inv_weight as u64;
        }
        let w = self.weight;
        if w >= WMULT_CONST {
            1
        } else {
            WMULT_CONST.checked_div(w).unwrap_or(WMULT_CONST)
        }
    }
}

/// `__calc_delta`: `delta × weight / lw.weight` in the kernel's 32-bit fixed point.
pub(crate) fn calc_delta(delta: u64, weight: u64, lw: &LoadWeight) -> u64 {
    let mut fact = weight;
    let mut shift = WMULT_SHIFT;
    while fact >> 32 != 0 {
        fact >>= 1;
        shift -= 1;
    }
    fact *= lw.inv();
    while fact >> 32 != 0 {
        fact >>= 1;
        shift -= 1;
    }
    // mul_u64_u32_shr
    ((delta as u128 * fact as u128) >> shift) as u64
}

/// `calc_delta_fair`: real time to virtual time for an entity of weight `lw`.
#[inline]
pub(crate) fn calc_delta_fair(delta: u64, lw: &LoadWeight) -> u64 {
    if lw.weight != NICE_0_LOAD {
        calc_delta(delta, NICE_0_LOAD, lw)
    } else {
        delta
    }
}

/// `entity_before`/signed vruntime comparison: `a − b` as a signed value.
#[inline]
pub(crate) fn vdiff(a: u64, b: u64) -> i64 {
    a.wrapping_sub(b) as i64
}

#[inline]
pub(crate) fn max_vruntime(a: u64, b: u64) -> u64 {
    if vdiff(b, a) > 0 {
        b
    } else {
        a
    }
}

#[inline]
pub fn min_vruntime(a: u64, b: u64) -> u64 {
    if vdiff(b, a) < 0 {
        b
    } else {
        a
    }
}

/// `struct sched_entity` (task entities only).
#[derive(Clone, Debug, Default)]
pub struct SchedEntity {
    pub load: LoadWeight,
    pub vruntime: u64,
    pub exec_start: u64,
    pub sum_exec_runtime: u64,
    pub prev_sum_exec_runtime: u64,
    /// Queued on its cfs_rq (including while current).
    pub on_rq: bool,
    pub avg: SchedAvg,
    /// EEVDF (fair/eevdf.rs): virtual deadline, the slice it was set from, and the
    /// lag saved at dequeue (`vlag`; holds the deadline while RUN_TO_PARITY protects
    /// the running slice). Unused by the v5.6 pick.
    pub deadline: u64,
    pub slice: u64,
    pub vlag: i64,
    /// v6.12 DELAY_DEQUEUE: asleep but still queued (`se->sched_delayed`).
    pub sched_delayed: bool,
}

/// Removed-load accumulator (`cfs_rq->removed`), folded in at the next update.
#[derive(Clone, Copy, Debug, Default)]
pub struct Removed {
    pub nr: u32,
    pub load_avg: u64,
    pub util_avg: u64,
    pub runnable_sum: u64,
}

/// `struct cfs_rq` for the root of a CPU (no group scheduling).
#[derive(Clone, Debug)]
pub struct CfsRq {
    pub load: LoadWeight,
    pub runnable_weight: u64,
    pub nr_running: u32,
    pub h_nr_running: u32,
    /// Count of SCHED_IDLE entities (`idle_h_nr_running`).
    pub idle_h_nr_running: u32,
    pub min_vruntime: u64,
    /// Σ w·(vruntime − min_vruntime) and Σ w over the timeline (v6.6
    /// `avg_vruntime`/`avg_load`, fair/eevdf.rs); kept in every mode, read by EEVDF.
    pub avg_vruntime: i64,
    pub avg_load: u64,
    /// Queued entities except `curr`, ordered by (vruntime, arrival), with their
    /// weights and deadlines (`tasks_timeline`, fair/timeline.rs).
    timeline: Timeline,
    pub curr: Option<u32>,
    pub next: Option<u32>,
    pub last: Option<u32>,
    pub skip: Option<u32>,
    pub avg: SchedAvg,
    pub removed: Removed,
}

impl Default for CfsRq {
    fn default() -> Self {
        CfsRq {
            load: LoadWeight::default(),
            runnable_weight: 0,
            nr_running: 0,
            h_nr_running: 0,
            idle_h_nr_running: 0,
            // init_cfs_rq: (u64)(-(1LL << 20))
            min_vruntime: (-(1i64 << 20)) as u64,
            avg_vruntime: 0,
            avg_load: 0,
            timeline: Timeline::default(),
            curr: None,
            next: None,
            last: None,
            skip: None,
            avg: SchedAvg::default(),
            removed: Removed::default(),
        }
    }
}

impl CfsRq {
    /// `__enqueue_entity`: insert into the timeline after entities with equal
    /// vruntime, and add the entity to the average (`avg_vruntime_add`). `deadline` is
    /// the entity's EEVDF virtual deadline (kept for the pick; any value under v5.6).
    #[doc(hidden)]
    #[inline]
    pub fn timeline_insert(&mut self, pid: u32, vruntime: u64, weight: u64, deadline: u64) {
        self.timeline.insert(pid, vruntime, weight as u32, deadline);
        self.avg_vruntime = self
            .avg_vruntime
            .wrapping_add(vdiff(vruntime, self.min_vruntime).wrapping_mul(weight as i64));
        self.avg_load += weight;
    }

    /// `__dequeue_entity` (and `avg_vruntime_sub`).
    #[doc(hidden)]
    #[inline]
    pub fn timeline_remove(&mut self, pid: u32) {
        let Some((v, w)) = self.timeline.remove(pid) else {
            panic!("timeline_remove: pid {pid} not queued");
        };
        self.avg_vruntime = self
            .avg_vruntime
            .wrapping_sub(vdiff(v, self.min_vruntime).wrapping_mul(w as i64));
        self.avg_load -= w as u64;
    }

    /// `__pick_first_entity`: the leftmost queued entity (not curr).
    #[inline]
    pub fn first(&self) -> Option<u32> {
        self.timeline.first()
    }

    /// The leftmost queued entity's vruntime, from the timeline's copy.
    #[inline]
    pub(crate) fn first_vruntime(&self) -> Option<(u32, u64)> {
        self.timeline.first_entry()
    }

    /// `__pick_next_entity`: the entity after `pid` in vruntime order.
    pub(crate) fn next_after(&self, pid: u32) -> Option<u32> {
        self.timeline.next_after(pid)
    }

    /// Queued entities in vruntime order, leftmost first (for balancing and checks).
    pub fn queued(&self) -> impl Iterator<Item = u32> + '_ {
        self.timeline.iter().map(|e| e.pid)
    }

    /// Queued entities with the vruntime they were queued at, leftmost first.
    pub fn queued_with_vruntime(&self) -> impl Iterator<Item = (u32, u64)> + '_ {
        self.timeline.iter().map(|e| (e.pid, e.vruntime))
    }

    /// The leftmost entity with the earliest deadline among the queued entities for
    /// which `eligible(vruntime)` holds, which must be a prefix of the timeline (the
    /// EEVDF pick, fair/eevdf.rs); (pid, deadline).
    pub(crate) fn earliest_eligible(&self, eligible: impl Fn(u64) -> bool) -> Option<(u32, u64)> {
        self.timeline.earliest_eligible(eligible)
    }

    /// The EEVDF sums recomputed from the timeline (for `--check`).
    pub(crate) fn avg_sums_from_scratch(&self) -> (i64, u64) {
        self.timeline.iter().fold((0i64, 0u64), |(a, l), e| {
            (
                a.wrapping_add(vdiff(e.vruntime, self.min_vruntime).wrapping_mul(e.weight as i64)),
                l + e.weight as u64,
            )
        })
    }

    /// The timeline's structure (`--check`), and each queued entity's stored
    /// vruntime and deadline against the entity's own (`se_of(pid)` = (vruntime,
    /// deadline)): the tree is sorted and augmented by the copies.
    pub(crate) fn timeline_check(&self, se_of: impl Fn(u32) -> (u64, u64)) -> Result<(), String> {
        self.timeline.check()?;
        for e in self.timeline.iter() {
            let (v, d) = se_of(e.pid);
            if (v, d) != (e.vruntime, e.deadline) {
                return Err(format!(
                    "pid {} queued with vruntime {} deadline {} but has {v} and {d}",
                    e.pid, e.vruntime, e.deadline
                ));
            }
        }
        Ok(())
    }

    pub fn timeline_len(&self) -> usize {
        self.timeline.len()
    }
}

/// The tunables the fair class reads, in their scaled form.
#[derive(Clone, Copy, Debug)]
pub struct FairParams {
    pub sched_latency: u64,
    pub min_granularity: u64,
    pub wakeup_granularity: u64,
    pub nr_latency: u64,
    pub gentle_fair_sleepers: bool,
    pub start_debit: bool,
    /// The fair class is EEVDF (v6.6, fair/eevdf.rs) instead of v5.6 CFS.
    pub eevdf: bool,
    /// `sysctl_sched_base_slice` (EEVDF): v6.6 renamed `min_granularity` to it, with
    /// the same 0.75 ms × factor default.
    pub base_slice: u64,
    pub place_lag: bool,
    pub place_deadline_initial: bool,
    pub run_to_parity: bool,
    /// EEVDF with PREEMPT_SHORT (v6.12): `update_curr` runs `did_preempt_short`.
    pub preempt_short: bool,
    /// EEVDF with DELAY_DEQUEUE (v6.12).
    pub delay_dequeue: bool,
    /// `TICK_NSEC`, the floor of the EEVDF lag clamp.
    pub tick_nsec: u64,
}

/// `__sched_period`.
pub(crate) fn sched_period(nr_running: u64, p: &FairParams) -> u64 {
    if nr_running > p.nr_latency {
        nr_running * p.min_granularity
    } else {
        p.sched_latency
    }
}

/// `sched_slice`: the wall-time slice of an entity of weight `se_load` on `cfs`, with
/// `se_on_rq` telling whether it is already counted in the runqueue's load.
pub fn sched_slice(cfs: &CfsRq, se_load: &LoadWeight, se_on_rq: bool, p: &FairParams) -> u64 {
    let slice = sched_period(cfs.nr_running as u64 + u64::from(!se_on_rq), p);
    let load = if se_on_rq {
        LoadWeight::sum(cfs.load.weight)
    } else {
        LoadWeight::sum(cfs.load.weight + se_load.weight)
    };
    calc_delta(slice, se_load.weight, &load)
}

/// `sched_vslice`.
pub(crate) fn sched_vslice(
    cfs: &CfsRq,
    se_load: &LoadWeight,
    se_on_rq: bool,
    p: &FairParams,
) -> u64 {
    calc_delta_fair(sched_slice(cfs, se_load, se_on_rq, p), se_load)
}

/// `place_entity`: returns the new vruntime of an entity being placed on `cfs`.
pub(crate) fn place_entity(
    cfs: &CfsRq,
    se_vruntime: u64,
    se_load: &LoadWeight,
    se_on_rq: bool,
    initial: bool,
    p: &FairParams,
) -> u64 {
    let mut vruntime = cfs.min_vruntime;
    if initial && p.start_debit {
        vruntime = vruntime.wrapping_add(sched_vslice(cfs, se_load, se_on_rq, p));
    }
    if !initial {
        let mut thresh = p.sched_latency;
        if p.gentle_fair_sleepers {
            thresh >>= 1;
        }
        vruntime = vruntime.wrapping_sub(thresh);
    }
    max_vruntime(se_vruntime, vruntime)
}

/// `wakeup_gran`: the wakeup granularity in the wakee's virtual time.
pub(crate) fn wakeup_gran(se_load: &LoadWeight, p: &FairParams) -> u64 {
    calc_delta_fair(p.wakeup_granularity, se_load)
}

/// `wakeup_preempt_entity(curr, se)`: −1 if `se` is not ahead, 1 if `curr` is ahead
/// by more than the granularity, 0 otherwise.
pub(crate) fn wakeup_preempt_entity(
    curr_vruntime: u64,
    se_vruntime: u64,
    se_load: &LoadWeight,
    p: &FairParams,
) -> i32 {
    let d = vdiff(curr_vruntime, se_vruntime);
    if d <= 0 {
        return -1;
    }
    if d > wakeup_gran(se_load, p) as i64 {
        1
    } else {
        0
    }
}

/// `update_min_vruntime`, given the current entity's vruntime (if it is queued) and
/// the leftmost's.
pub(crate) fn update_min_vruntime(
    cfs: &mut CfsRq,
    curr_vruntime: Option<u64>,
    leftmost: Option<u64>,
) {
    let mut v = cfs.min_vruntime;
    if let Some(c) = curr_vruntime {
        v = c;
    }
    if let Some(l) = leftmost {
        v = match curr_vruntime {
            None => l,
            Some(_) => min_vruntime(v, l),
        };
    }
    // __update_min_vruntime: only forward, and the EEVDF sum follows the new base
    // (avg_vruntime_update).
    // Written without a branch: the advance is 0 when `v` is not ahead, and this runs
    // at every update_curr (a data-dependent branch here costs mispredictions).
    let adv = vdiff(v, cfs.min_vruntime).max(0);
    cfs.avg_vruntime = cfs
        .avg_vruntime
        .wrapping_sub((cfs.avg_load as i64).wrapping_mul(adv));
    cfs.min_vruntime = cfs.min_vruntime.wrapping_add(adv as u64);
}

/// `pick_next_entity(cfs_rq, NULL)` after the previous task was put back: the
/// leftmost, unless it is the skip buddy and the second is close enough; then the last
/// and next buddies, each if not too unfair to the leftmost. `vr`/`lw` look entities up.
pub(crate) fn pick_next_entity(
    cfs: &CfsRq,
    vr: impl Fn(u32) -> (u64, LoadWeight),
    p: &FairParams,
) -> Option<u32> {
    let left = cfs.first()?;
    // Every test is `wakeup_preempt_entity(candidate, left) < 1`: the candidate's lag
    // behind the leftmost, against the granularity in the leftmost's virtual time.
    let (left_v, left_lw) = vr(left);
    let mut se = left;
    if cfs.skip == Some(se) {
        if let Some(second) = cfs.next_after(se) {
            let (sv, _) = vr(second);
            if wakeup_preempt_entity(sv, left_v, &left_lw, p) < 1 {
                se = second;
            }
        }
    }
    if let Some(last) = cfs.last {
        let (lv, _) = vr(last);
        if wakeup_preempt_entity(lv, left_v, &left_lw, p) < 1 {
            se = last;
        }
    }
    if let Some(next) = cfs.next {
        let (nv, _) = vr(next);
        if wakeup_preempt_entity(nv, left_v, &left_lw, p) < 1 {
            se = next;
        }
    }
    Some(se)
}

/// PELT of an entity against its cfs_rq at `now` (pelt clock): `__update_load_avg_se`.
pub(crate) fn update_se_avg(now: u64, se: &mut SchedEntity, running: bool) -> bool {
    let w = se.load.weight;
    pelt::update_se(now, &mut se.avg, se.on_rq, running, w, w)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params() -> FairParams {
        FairParams {
            sched_latency: 24_000_000,
            min_granularity: 3_000_000,
            wakeup_granularity: 4_000_000,
            nr_latency: 8,
            gentle_fair_sleepers: true,
            start_debit: true,
            eevdf: false,
            base_slice: 3_000_000,
            place_lag: true,
            place_deadline_initial: true,
            run_to_parity: true,
            preempt_short: false,
            delay_dequeue: false,
            tick_nsec: 4_000_000,
        }
    }

    #[test]
    fn calc_delta_fair_scales_by_weight() {
        let nice0 = LoadWeight::from_nice(0);
        assert_eq!(calc_delta_fair(1_000_000, &nice0), 1_000_000);
        // nice 5 (335): 1 ms of runtime is 1024/335 ms of vruntime.
        let n5 = LoadWeight::from_nice(5);
        let v = calc_delta_fair(1_000_000, &n5);
        assert!((v as i64 - 3_056_716).abs() <= 2, "{v}");
        // nice -20 (88761)
        let v = calc_delta_fair(88_761_000, &LoadWeight::from_nice(-20));
        assert!((v as i64 - 1_024_000).abs() <= 2, "{v}");
    }

    #[test]
    fn slices_follow_period_and_weight() {
        let p = params();
        let mut cfs = CfsRq::default();
        let w = LoadWeight::from_nice(0);
        // Two nice-0 entities queued: 24 ms period, 12 ms each -- less 6 ns, because the
        // kernel divides through the truncated inverse (2^32 - 1) / 2048 = 2097151.
        cfs.nr_running = 2;
        cfs.load = LoadWeight::sum(2048);
        assert_eq!(sched_slice(&cfs, &w, true, &p), 11_999_994);
        // A third not yet queued counts itself in: 8 ms (7 999 998 in fixed point).
        assert_eq!(sched_slice(&cfs, &w, false, &p), 7_999_998);
        // Ten entities: the period stretches to 10 × 3 ms.
        cfs.nr_running = 10;
        cfs.load = LoadWeight::sum(10 * 1024);
        assert_eq!(sched_slice(&cfs, &w, true, &p), 2_999_997);
    }

    #[test]
    fn place_entity_sleeper_credit_and_start_debit() {
        let p = params();
        let mut cfs = CfsRq {
            min_vruntime: 100_000_000,
            ..CfsRq::default()
        };
        cfs.nr_running = 1;
        cfs.load = LoadWeight::sum(1024);
        let w = LoadWeight::from_nice(0);
        // A long sleeper gets min_vruntime − latency/2.
        assert_eq!(
            place_entity(&cfs, 0, &w, true, false, &p),
            100_000_000 - 12_000_000
        );
        // A recent sleeper keeps its own (larger) vruntime.
        assert_eq!(
            place_entity(&cfs, 99_000_000, &w, true, false, &p),
            99_000_000
        );
        // A forked child (not queued) starts a vslice after min_vruntime: 2 entities -> 12 ms
        // (11 999 994 ns through the fixed-point inverse).
        assert_eq!(place_entity(&cfs, 0, &w, false, true, &p), 111_999_994);
    }

    #[test]
    fn wakeup_preemption_granularity() {
        let p = params();
        let w = LoadWeight::from_nice(0);
        assert_eq!(wakeup_preempt_entity(10, 20, &w, &p), -1);
        assert_eq!(wakeup_preempt_entity(4_000_000 + 20, 20, &w, &p), 0);
        assert_eq!(wakeup_preempt_entity(4_000_001 + 20, 20, &w, &p), 1);
    }

    #[test]
    fn timeline_orders_by_vruntime_then_arrival_and_wraps() {
        let mut cfs = CfsRq::default();
        let base = (-(1i64 << 20)) as u64; // near the wrap point
        cfs.timeline_insert(1, base.wrapping_add(3_000_000), 1024, 0); // past the wrap
        cfs.timeline_insert(2, base.wrapping_add(5), 1024, 0);
        cfs.timeline_insert(3, base.wrapping_add(5), 1024, 0);
        cfs.timeline_insert(4, base, 1024, 0);
        assert_eq!(cfs.queued().collect::<Vec<_>>(), vec![4, 2, 3, 1]);
        assert_eq!(cfs.first(), Some(4));
        assert_eq!(cfs.next_after(2), Some(3));
        assert_eq!(cfs.next_after(1), None);
        cfs.timeline_remove(2);
        assert_eq!(cfs.queued().collect::<Vec<_>>(), vec![4, 3, 1]);
    }

    #[test]
    fn pick_avoids_skip_buddy_only_when_fair() {
        let p = params();
        let mut cfs = CfsRq::default();
        let vr = |pid: u32| -> (u64, LoadWeight) {
            let v = match pid {
                1 => 1_000,
                2 => 1_000 + 3_000_000, // within the 4 ms granularity of 1
                _ => 1_000 + 9_000_000, // far ahead
            };
            (v, LoadWeight::from_nice(0))
        };
        cfs.timeline_insert(1, 1_000, 1024, 0);
        cfs.timeline_insert(2, 3_001_000, 1024, 0);
        cfs.skip = Some(1);
        assert_eq!(pick_next_entity(&cfs, vr, &p), Some(2));
        let mut cfs = CfsRq::default();
        cfs.timeline_insert(1, 1_000, 1024, 0);
        cfs.timeline_insert(3, 9_001_000, 1024, 0);
        cfs.skip = Some(1);
        assert_eq!(pick_next_entity(&cfs, vr, &p), Some(1));
    }
}
