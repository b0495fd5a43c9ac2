//! EEVDF: the fair class's pick and placement rules from Linux v6.6 (the `EEVDF` switch).
//!
//! Linux v6.6 replaced CFS's "leftmost vruntime, with wakeup/tick granularities and
//! buddies" by Earliest Eligible Virtual Deadline First (Stoica & Abdel-Wahab, 1995;
//! Peter Zijlstra's series, kernel/sched/fair.c v6.6). The runqueue still orders its
//! entities by vruntime, but what is picked is decided by two more quantities:
//!
//! * **Average vruntime** `V = Σ w_i·v_i / Σ w_i` over the queued entities *and* the
//!   running one. The kernel keeps it as `avg_vruntime = Σ w_i·(v_i − min_vruntime)`
//!   and `avg_load = Σ w_i` over the tree (curr is added when read), so the sums stay
//!   small; when `min_vruntime` advances by `d` the sum loses `d·avg_load`
//!   (`avg_vruntime_update`). `avg_vruntime()` divides with a floor (the sign trick of
//!   the kernel), so `V` never rounds up.
//! * **Lag** `vl_i = V − v_i`: positive when an entity received less than its share.
//!   An entity is **eligible** when `vl_i ≥ 0`, tested without the division as
//!   `avg_vruntime ≥ (v_i − min_vruntime)·avg_load` (`entity_eligible`).
//! * **Virtual deadline** `vd_i = v_i + slice·1024/w_i`, with `slice` the base slice
//!   (`sysctl_sched_base_slice`, 0.75 ms × the log CPU factor, the tunable that
//!   replaced `min_granularity`). When the running entity reaches its deadline it gets
//!   a new one, and the CPU is rescheduled if anything else is queued
//!   (`update_deadline`, from every `update_curr`): this is the only slice end; there
//!   is no tick preemption test any more.
//!
//! **Pick** (`pick_eevdf`): among eligible entities, the earliest deadline; the
//! running entity competes only while on the runqueue and eligible, and wins ties.
//! RUN_TO_PARITY: once picked, the running entity is kept until it gets a new deadline
//! (`set_next_entity` stashes the deadline in `vlag`; while they are equal the slice is
//! protected). NEXT_BUDDY (off) would prefer an eligible next buddy. The skip and last
//! buddies are gone: `sched_yield` pushes the deadline one slice back instead.
//!
//! **Wakeup preemption** (`check_preempt_wakeup`): preempt iff the pick rule, run now
//! with the wakee queued, would choose the wakee.
//!
//! **Placement** (`place_entity`, for every enqueue: wakeup, migration, fork): keep the
//! lag the entity had when it was dequeued (`update_entity_lag`, clamped to
//! ±max(2·slice, TICK_NSEC) in its virtual time), scaled by `(W + w)/W` so that
//! inserting it does not move `V` (PLACE_LAG), then `v = V − vl` and
//! `vd = v + vslice` (half a vslice for ENQUEUE_INITIAL with PLACE_DEADLINE_INITIAL).
//! No sleeper credit, no START_DEBIT, and no `min_vruntime` renormalisation across
//! CPUs: the lag is what a task carries from one runqueue to another.
//!
//! Fidelity: v6.6 as released, flat hierarchy. In v6.6 `wake_up_new_task` enqueues a
//! child without ENQUEUE_INITIAL, so the half-slice deadline `task_fork_fair` gives it
//! is replaced at the enqueue by a full-slice one (v6.11 passes ENQUEUE_INITIAL
//! there); modelled as in v6.6. The kernel finds the earliest eligible deadline with an
//! augmented rbtree (`min_deadline` per subtree); so does this model
//! (fair/timeline.rs, `Timeline::earliest_eligible`: one walk down over the eligible
//! prefix, eligibility being monotone in vruntime). The chosen entity is the same
//! except between *equal* deadlines, which the kernel breaks by tree shape and this
//! model by the smaller vruntime (the leftmost, as a scan in vruntime order would). Not
//! modelled: the v6.8 deadline-sorted tree, per-task slices through `sched_attr`,
//! reweighting of queued entities (`reweight_entity`; weights here never change
//! while queued).
//!
//! **v6.12** (`v6.12` preset, fair/mod.rs and core.rs; hand-computed tests in
//! fair/delay_tests.rs): DELAY_DEQUEUE keeps a task that sleeps while not eligible
//! queued (`sched_delayed`) until the pick reaches it or it is woken in place
//! (`ttwu_runnable`, no `select_task_rq`); DELAY_ZERO forgives the positive lag it
//! gathers meanwhile; PREEMPT_SHORT ends an unprotected slice at the first
//! `update_curr` that finds the running entity ineligible.

use crate::sched::fair::entity::{calc_delta_fair, vdiff, CfsRq, LoadWeight};

/// The running entity as `pick_eevdf` sees it (`cfs_rq->curr`, only while `on_rq`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Curr {
    pub pid: u32,
    pub vruntime: u64,
    pub deadline: u64,
    /// `se->vlag`, which holds the deadline stashed at pick time (RUN_TO_PARITY).
    pub vlag: i64,
    pub weight: u64,
}

/// `entity_key`: an entity's vruntime relative to the runqueue's `min_vruntime`.
#[inline]
pub(crate) fn entity_key(cfs: &CfsRq, vruntime: u64) -> i64 {
    vdiff(vruntime, cfs.min_vruntime)
}

/// The tree's sums with the running entity added, as `avg_vruntime` and
/// `entity_eligible` both form them.
#[inline]
fn sums_with_curr(cfs: &CfsRq, curr: Option<(u64, u64)>) -> (i64, i64) {
    let mut avg = cfs.avg_vruntime;
    let mut load = cfs.avg_load as i64;
    if let Some((v, w)) = curr {
        avg = avg.wrapping_add(entity_key(cfs, v).wrapping_mul(w as i64));
        load += w as i64;
    }
    (avg, load)
}

/// `avg_vruntime(cfs_rq)`: the load-weighted average vruntime `V`, floored.
/// `curr` is the running entity's (vruntime, weight) if it is on the runqueue.
pub fn avg_vruntime(cfs: &CfsRq, curr: Option<(u64, u64)>) -> u64 {
    let (mut avg, load) = sums_with_curr(cfs, curr);
    if load != 0 {
        // Truncating division rounds toward zero; shifting a negative sum down by
        // load − 1 first makes it a floor.
        if avg < 0 {
            avg -= load - 1;
        }
        avg /= load;
    }
    cfs.min_vruntime.wrapping_add(avg as u64)
}

/// `entity_eligible(cfs_rq, se)`: `V ≥ v`, i.e. lag ≥ 0, without dividing.
pub(crate) fn entity_eligible(cfs: &CfsRq, curr: Option<(u64, u64)>, vruntime: u64) -> bool {
    let (avg, load) = sums_with_curr(cfs, curr);
    vruntime_eligible(cfs, avg, load, vruntime)
}

/// The test of [`entity_eligible`] given the sums with curr (`sums_with_curr`); the
/// pick forms them once for all the entities it looks at (v6.8 `vruntime_eligible`).
#[inline]
fn vruntime_eligible(cfs: &CfsRq, avg: i64, load: i64, vruntime: u64) -> bool {
    avg >= entity_key(cfs, vruntime).wrapping_mul(load)
}

/// `update_entity_lag`: the lag an entity leaves its runqueue with, clamped to
/// ±`calc_delta_fair(max(2·slice, TICK_NSEC))`. `curr` as for [`avg_vruntime`]
/// (the entity itself when it is the running one).
pub(crate) fn update_entity_lag(
    cfs: &CfsRq,
    curr: Option<(u64, u64)>,
    vruntime: u64,
    slice: u64,
    lw: &LoadWeight,
    tick_nsec: u64,
) -> i64 {
    let lag = vdiff(avg_vruntime(cfs, curr), vruntime);
    let limit = calc_delta_fair((2 * slice).max(tick_nsec), lw) as i64;
    lag.clamp(-limit, limit)
}

/// What `place_entity` decides: the entity's vruntime, deadline and slice.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Placement {
    pub vruntime: u64,
    pub deadline: u64,
    pub slice: u64,
}

/// The EEVDF feature bits `place_entity` reads.
#[derive(Clone, Copy, Debug)]
pub struct PlaceFeat {
    pub place_lag: bool,
    pub place_deadline_initial: bool,
}

/// `place_entity(cfs_rq, se, flags)` of v6.6. `cfs` holds the other entities (the
/// placed one is not queued and not counted in `nr_running` yet); `curr` is the
/// running entity's (vruntime, weight) if it is on the runqueue; `vlag` the entity's
/// saved lag; `initial` is ENQUEUE_INITIAL.
pub(crate) fn place_entity(
    cfs: &CfsRq,
    curr: Option<(u64, u64)>,
    vlag: i64,
    lw: &LoadWeight,
    base_slice: u64,
    initial: bool,
    f: PlaceFeat,
) -> Placement {
    let v_avg = avg_vruntime(cfs, curr);
    let slice = base_slice;
    let mut vslice = calc_delta_fair(slice, lw);
    let mut lag: i64 = 0;
    if f.place_lag && cfs.nr_running > 0 {
        // Inserting weight w at lag vl moves V by −w·vl/(W + w); starting from
        // vl·(W + w)/W leaves the entity with lag vl after V has moved.
        let mut load = cfs.avg_load as i64;
        if let Some((_, w)) = curr {
            load += w as i64;
        }
        lag = vlag.wrapping_mul(load + lw.weight as i64);
        if load == 0 {
            load = 1;
        }
        lag /= load;
    }
    let vruntime = v_avg.wrapping_sub(lag as u64);
    if f.place_deadline_initial && initial {
        vslice /= 2;
    }
    Placement {
        vruntime,
        deadline: vruntime.wrapping_add(vslice),
        slice,
    }
}

/// `pick_eevdf(cfs_rq)`: the eligible entity with the earliest virtual deadline, the
/// leftmost among equal deadlines; `curr` competes first and keeps ties. The queued
/// entities' deadlines are the timeline's copies. Returns `None` only for an empty
/// runqueue.
pub(crate) fn pick_eevdf(cfs: &CfsRq, curr: Option<Curr>, run_to_parity: bool) -> Option<u32> {
    let cv = curr.map(|c| (c.vruntime, c.weight));
    let curr = curr.filter(|c| entity_eligible(cfs, cv, c.vruntime));
    if let Some(c) = curr {
        if run_to_parity && c.vlag == c.deadline as i64 {
            return Some(c.pid);
        }
    }
    let (avg, load) = sums_with_curr(cfs, cv);
    let queued = cfs.earliest_eligible(|v| vruntime_eligible(cfs, avg, load, v));
    match (curr, queued) {
        // Only a strictly earlier deadline displaces curr.
        (Some(c), Some((p, d))) if vdiff(c.deadline, d) > 0 => Some(p),
        (Some(c), _) => Some(c.pid),
        (None, Some((p, _))) => Some(p),
        // The kernel's fallback when nothing is eligible (cannot happen with exact
        // sums: the leftmost entity is never above the average).
        (None, None) => cfs.first(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nice0() -> LoadWeight {
        LoadWeight::from_nice(0)
    }

    /// A runqueue whose min_vruntime is `m`, holding (pid, vruntime, weight).
    fn rq(m: u64, ents: &[(u32, u64, u64)]) -> CfsRq {
        rq_dl(m, ents, |_| 0)
    }

    /// The same, with the deadlines `dl(pid)`.
    fn rq_dl(m: u64, ents: &[(u32, u64, u64)], dl: impl Fn(u32) -> u64) -> CfsRq {
        let mut cfs = CfsRq::default();
        cfs.min_vruntime = m;
        for &(p, v, w) in ents {
            cfs.timeline_insert(p, v, w, dl(p));
            cfs.nr_running += 1;
        }
        cfs
    }

    #[test]
    fn average_is_weighted_and_floored() {
        // Two nice-0 entities at +0 and +1000 and one of weight 2048 at +3000:
        // V = (0·1024 + 1000·1024 + 3000·2048) / 4096 = 1750.
        let cfs = rq(
            10_000,
            &[(1, 10_000, 1024), (2, 11_000, 1024), (3, 13_000, 2048)],
        );
        assert_eq!(cfs.avg_load, 4096);
        assert_eq!(avg_vruntime(&cfs, None), 11_750);
        // With curr at +5000 (weight 1024): (7 168 000 + 5 120 000) / 5120 = 2400.
        assert_eq!(avg_vruntime(&cfs, Some((15_000, 1024))), 12_400);
        // A negative average is floored, not truncated: keys −3 and 0 -> −1.5 -> −2.
        let cfs = rq(100, &[(1, 97, 1024), (2, 100, 1024)]);
        assert_eq!(avg_vruntime(&cfs, None), 98);
        // Empty runqueue: V = min_vruntime.
        assert_eq!(avg_vruntime(&rq(77, &[]), None), 77);
    }

    #[test]
    fn min_vruntime_advance_keeps_the_average() {
        let mut cfs = rq(1_000, &[(1, 1_500, 1024), (2, 2_500, 1024)]);
        let v = avg_vruntime(&cfs, None);
        assert_eq!(v, 2_000);
        crate::sched::fair::entity::update_min_vruntime(&mut cfs, None, Some(1_500));
        assert_eq!(cfs.min_vruntime, 1_500);
        assert_eq!(cfs.avg_vruntime, 1_000 * 1024);
        assert_eq!(avg_vruntime(&cfs, None), v);
    }

    #[test]
    fn eligibility_is_lag_non_negative() {
        let cfs = rq(0, &[(1, 100, 1024), (2, 300, 1024)]); // V = 200
        assert!(entity_eligible(&cfs, None, 100));
        assert!(entity_eligible(&cfs, None, 200)); // lag 0 is eligible
        assert!(!entity_eligible(&cfs, None, 201));
        // A heavy entity pulls V toward itself: weights 3072 at 100, 1024 at 300 ->
        // V = 150.
        let cfs = rq(0, &[(1, 100, 3072), (2, 300, 1024)]);
        assert!(entity_eligible(&cfs, None, 150));
        assert!(!entity_eligible(&cfs, None, 151));
    }

    #[test]
    fn pick_is_earliest_eligible_deadline() {
        // V = 200: pids 1 (v 100) and 2 (v 200) eligible, 3 (v 300) not.
        let ents = [(1, 100, 1024), (2, 200, 1024), (3, 300, 1024)];
        let dl = |p: u32| match p {
            1 => 5_000,
            2 => 4_000,
            _ => 1_000, // earliest, but not eligible
        };
        assert_eq!(pick_eevdf(&rq_dl(0, &ents, dl), None, true), Some(2));
        // Equal deadlines: the smaller vruntime.
        assert_eq!(pick_eevdf(&rq_dl(0, &ents, |_| 9), None, true), Some(1));
    }

    #[test]
    fn curr_wins_ties_and_run_to_parity_protects_it() {
        let ents = [(2, 100, 1024)];
        let c = Curr {
            pid: 1,
            vruntime: 100,
            deadline: 4_000,
            vlag: 0,
            weight: 1024,
        };
        // Same deadline as pid 2: curr stays.
        let same = rq_dl(0, &ents, |_| 4_000);
        assert_eq!(pick_eevdf(&same, Some(c), false), Some(1));
        // An earlier deadline wins without parity ...
        let earlier = rq_dl(0, &ents, |_| 3_000);
        assert_eq!(pick_eevdf(&earlier, Some(c), false), Some(2));
        // ... but not while curr still runs its first slice (vlag == deadline).
        let prot = Curr { vlag: 4_000, ..c };
        assert_eq!(pick_eevdf(&earlier, Some(prot), true), Some(1));
        // An ineligible curr loses its protection: curr at 500 vs V = 300.
        let far = Curr {
            vruntime: 500,
            vlag: 4_000,
            ..c
        };
        let later = rq_dl(0, &ents, |_| 9_000);
        assert_eq!(pick_eevdf(&later, Some(far), true), Some(2));
    }

    #[test]
    fn lag_is_kept_through_placement() {
        let f = PlaceFeat {
            place_lag: true,
            place_deadline_initial: true,
        };
        // Three nice-0 entities at V = 1000; a fourth arrives with lag +300.
        // W = 3072, w = 1024: lag scaled to 300·4096/3072 = 400, v = 600.
        let cfs = rq(0, &[(1, 900, 1024), (2, 1_000, 1024), (3, 1_100, 1024)]);
        let p = place_entity(&cfs, None, 300, &nice0(), 3_000_000, false, f);
        assert_eq!(p.vruntime, 600);
        assert_eq!(p.deadline, 600 + 3_000_000);
        // After insertion its lag is the 300 it left with: V' = (3000 + 600)/4 = 900.
        let mut cfs2 = cfs.clone();
        cfs2.timeline_insert(4, p.vruntime, 1024, p.deadline);
        assert_eq!(vdiff(avg_vruntime(&cfs2, None), p.vruntime), 300);
        // Without PLACE_LAG: at V. ENQUEUE_INITIAL halves the first deadline.
        let nolag = PlaceFeat {
            place_lag: false,
            ..f
        };
        let p = place_entity(&cfs, None, 300, &nice0(), 3_000_000, true, nolag);
        assert_eq!((p.vruntime, p.deadline), (1_000, 1_000 + 1_500_000));
        // An empty runqueue ignores the lag (nr_running == 0).
        let p = place_entity(&rq(50, &[]), None, -700, &nice0(), 3_000_000, false, f);
        assert_eq!(p.vruntime, 50);
    }

    #[test]
    fn lag_is_clamped_to_two_slices_or_a_tick() {
        let cfs = rq(0, &[(1, 0, 1024)]);
        // V = 0; an entity at −10 ms has lag 10 ms, clamped to 2 × 3 ms.
        let lag = update_entity_lag(
            &cfs,
            None,
            (-10_000_000i64) as u64,
            3_000_000,
            &nice0(),
            4_000_000,
        );
        assert_eq!(lag, 6_000_000);
        // A short slice: the tick (4 ms at HZ=250) bounds it instead.
        let lag = update_entity_lag(&cfs, None, 10_000_000, 1_000_000, &nice0(), 4_000_000);
        assert_eq!(lag, -4_000_000);
        // nice 5 (weight 335): the limit is in its virtual time, ×1024/335.
        let lag = update_entity_lag(
            &cfs,
            None,
            (-100_000_000i64) as u64,
            3_000_000,
            &LoadWeight::from_nice(5),
            4_000_000,
        );
        assert_eq!(
            lag,
            calc_delta_fair(6_000_000, &LoadWeight::from_nice(5)) as i64
        );
    }

    use proptest::prelude::*;

    proptest! {
        /// Differential: the model's pick (scan in vruntime order, stopping at the
        /// first ineligible entity; curr first and winning ties) against a brute-force
        /// oracle that computes V exactly as a rational, tests every entity's lag and
        /// takes the earliest deadline (curr first, then vruntime order). Random
        /// weights (the nice table), vruntimes around a random min_vruntime (also near
        /// the u64 wrap), deadlines, with or without a running entity.
        #[test]
        fn pick_matches_an_exhaustive_oracle(
            base in prop_oneof![Just(0u64), Just(u64::MAX - 5_000_000), 0u64..1_000_000_000_000],
            ents in prop::collection::vec((0u64..10_000_000, 0u64..20_000_000, 0usize..40), 1..12),
            curr in prop::option::of((0u64..10_000_000, 0u64..20_000_000, 0usize..40)),
        ) {
            let w = |n: usize| crate::sched::fair::entity::SCHED_PRIO_TO_WEIGHT[n];
            let mut cfs = CfsRq::default();
            cfs.min_vruntime = base;
            for (i, &(v, d, n)) in ents.iter().enumerate() {
                let pid = i as u32 + 1;
                cfs.timeline_insert(pid, base.wrapping_add(v), w(n), base.wrapping_add(v + d));
            }
            let c = curr.map(|(v, d, n)| Curr {
                pid: 100,
                vruntime: base.wrapping_add(v),
                deadline: base.wrapping_add(v + d),
                vlag: 0,
                weight: w(n),
            });
            let got = pick_eevdf(&cfs, c, false);

            // Oracle: keys relative to base; V = Σ w·k / Σ w as an exact fraction.
            let mut all: Vec<(u32, i128, i128, i128)> = Vec::new(); // pid, key, deadline key, w
            if let Some((v, d, n)) = curr {
                all.push((100, v as i128, (v + d) as i128, w(n) as i128));
            }
            let mut sorted: Vec<_> = ents.iter().enumerate().collect();
            sorted.sort_by_key(|&(i, &(v, _, _))| (v, i)); // vruntime, then arrival
            for (i, &(v, d, n)) in sorted {
                all.push((i as u32 + 1, v as i128, (v + d) as i128, w(n) as i128));
            }
            let sw: i128 = all.iter().map(|e| e.3).sum();
            let swk: i128 = all.iter().map(|e| e.3 * e.1).sum();
            let mut want: Option<(u32, i128)> = None;
            for &(pid, k, dk, _) in &all {
                if swk >= k * sw {
                    match want {
                        Some((_, bd)) if bd <= dk => {}
                        _ => want = Some((pid, dk)),
                    }
                }
            }
            prop_assert_eq!(got, want.map(|x| x.0));
        }

        /// The tree's pick against the linear scan this model used before the
        /// timeline became a tree (the eligible prefix in vruntime order, stopping at
        /// the first ineligible entity; curr first, only a strictly earlier deadline
        /// displacing the best): many entities, few distinct deadlines (ties), equal
        /// vruntimes, min_vruntime anywhere including across the u64 wrap, entities
        /// queued and dequeued (the tree's shape varies), with or without curr.
        #[test]
        fn pick_matches_the_linear_scan(
            base in prop_oneof![Just(u64::MAX - 3_000), Just((-(1i64 << 20)) as u64), any::<u64>()],
            ents in prop::collection::vec((0u64..6_000, 0u64..6, 0usize..40), 1..300),
            gone in prop::collection::vec(any::<prop::sample::Index>(), 0..20),
            curr in prop::option::of((0u64..6_000, 0u64..6, 0usize..40)),
            dl_step in prop_oneof![Just(1u64), Just(1_000_000)],
        ) {
            let w = |n: usize| crate::sched::fair::entity::SCHED_PRIO_TO_WEIGHT[n];
            let mut cfs = CfsRq::default();
            cfs.min_vruntime = base;
            let mut deadlines = std::collections::BTreeMap::new();
            for (i, &(v, d, n)) in ents.iter().enumerate() {
                let pid = i as u32 + 1;
                // Deadlines straddle the wrap too when base is near it.
                let dl = base.wrapping_add(d * dl_step);
                cfs.timeline_insert(pid, base.wrapping_add(v), w(n), dl);
                deadlines.insert(pid, dl);
            }
            for g in gone {
                let pid = g.index(ents.len()) as u32 + 1;
                if deadlines.remove(&pid).is_some() {
                    cfs.timeline_remove(pid);
                }
            }
            let c = curr.map(|(v, d, n)| Curr {
                pid: 1000,
                vruntime: base.wrapping_add(v),
                deadline: base.wrapping_add(d * dl_step),
                vlag: 0,
                weight: w(n),
            });
            // The previous implementation, verbatim but for the deadline lookup.
            let cv = c.map(|c| (c.vruntime, c.weight));
            let cc = c.filter(|c| entity_eligible(&cfs, cv, c.vruntime));
            let mut best: Option<(u32, u64)> = cc.map(|c| (c.pid, c.deadline));
            for (pid, v) in cfs.queued_with_vruntime() {
                if !entity_eligible(&cfs, cv, v) {
                    break;
                }
                let d = deadlines[&pid];
                match best {
                    Some((_, bd)) if vdiff(bd, d) <= 0 => {}
                    _ => best = Some((pid, d)),
                }
            }
            let want = best.map(|(p, _)| p).or_else(|| cfs.first());
            prop_assert_eq!(pick_eevdf(&cfs, c, false), want);
        }

        /// avg_vruntime is the floor of the exact weighted mean, whatever the sign.
        #[test]
        fn avg_vruntime_is_the_floored_exact_mean(
            base in 1_000_000u64..2_000_000,
            ents in prop::collection::vec((0u64..2_000_000, 0usize..40), 1..10),
        ) {
            let w = |n: usize| crate::sched::fair::entity::SCHED_PRIO_TO_WEIGHT[n];
            let mut cfs = CfsRq::default();
            cfs.min_vruntime = base;
            let (mut sw, mut swv) = (0i128, 0i128);
            for (i, &(v, n)) in ents.iter().enumerate() {
                cfs.timeline_insert(i as u32, v, w(n), 0); // below and above base
                sw += w(n) as i128;
                swv += w(n) as i128 * v as i128;
            }
            let exact_floor = swv.div_euclid(sw);
            prop_assert_eq!(avg_vruntime(&cfs, None) as i128, exact_floor);
        }
    }
}
