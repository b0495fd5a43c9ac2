//! v5.7's asymmetric-capacity wakeups (`SELECT_IDLE_CAPACITY`): `select_idle_capacity`
//! over `sd_asym_cpucapacity`, no `wake_cap`, no SD_BALANCE_WAKE on asymmetric
//! levels. Hand-computed cases on 4 LITTLE (CPUs 0-3, capacity 462) + 2 big (4-5,
//! 1024); a task fits a CPU when `util × 1280 < capacity × 1024`.

mod placement_common;
use placement_common::*;

use schedlab::engine::EventQueue;
use schedlab::machine::presets::{test_asym, test_topology};
use schedlab::sched::core::Kernel;
use schedlab::sched::fair::wakeup::Probes;
use schedlab::sched::features::{Features, SchedFeat};
use schedlab::sched::topology::SD_BALANCE_WAKE;
use schedlab::sched::{Func, WF_TTWU};

fn asym(on: bool) -> Kernel<Rec> {
    let mut f = Features::v5_6();
    f.set(SchedFeat::SELECT_IDLE_CAPACITY, on);
    kernel_with(test_asym(2, 4, 1024, 462), f)
}

/// `select_idle_capacity` from `target` for a task of utilization `util` allowed
/// on `allowed`: (result, CPUs probed).
fn sic(k: &mut Kernel<Rec>, util: u64, allowed: &[usize], target: usize) -> (Option<usize>, u32) {
    let p = sleeper(k, target, mask(allowed));
    k.task_mut(p).se.avg.util_avg = util;
    let sd = k.topology().sd_asym_cpucapacity[target].expect("asym domain");
    let mut pr = Probes::default();
    let r = k.select_idle_capacity(p, sd, target, target, &mut pr);
    (r, pr.probed)
}

#[test]
fn the_first_idle_cpu_that_fits_wrapping_from_target() {
    let mut k = asym(true);
    let all = [0, 1, 2, 3, 4, 5];
    // A small task fits target itself: one probe.
    assert_eq!(sic(&mut k, 100, &all, 1), (Some(1), 1));
    // A big task (700 does not fit 462): 1, 2, 3 are looked at, 4 fits.
    assert_eq!(sic(&mut k, 700, &all, 1), (Some(4), 4));
    // Wrapping: from 5 a big task fits 5 at once.
    assert_eq!(sic(&mut k, 700, &all, 5), (Some(5), 1));
}

#[test]
fn no_fit_gives_the_largest_idle_capacity_and_none_when_all_busy() {
    let mut k = asym(true);
    let all = [0, 1, 2, 3, 4, 5];
    busy(&mut k, 4);
    busy(&mut k, 5);
    // Nothing fits: the largest capacity, the first of equals in scan order (1).
    assert_eq!(sic(&mut k, 700, &all, 1), (Some(1), 6));
    // RT pressure on a big CPU: capacity_of(4) = 600 no longer fits 700, but is
    // still the largest idle capacity.
    let mut k = asym(true);
    k.cpu_rq_mut(4).cpu_capacity = 600;
    busy(&mut k, 5);
    assert_eq!(sic(&mut k, 700, &all, 0), (Some(4), 6));
    // Every CPU busy: nothing.
    let mut k = asym(true);
    for c in all {
        busy(&mut k, c);
    }
    assert_eq!(sic(&mut k, 100, &all, 2), (None, 6));
}

#[test]
fn affinity_limits_the_scan() {
    let mut k = asym(true);
    // Allowed {0, 2}, from 1: 2 then 0; neither fits, 2 is the first largest.
    assert_eq!(sic(&mut k, 700, &[0, 2], 1), (Some(2), 2));
}

#[test]
fn select_idle_sibling_uses_it_on_asym_and_falls_back_to_target() {
    let mut k = asym(true);
    let p = sleeper_any(&mut k, 1);
    k.task_mut(p).se.avg.util_avg = 700;
    let (c, why, pr) = k.select_idle_sibling(p, 1, 1, 1);
    assert_eq!((c, why, pr.probed), (4, "idle_capacity", 4));
    for c in 0..6 {
        busy(&mut k, c);
    }
    let (c, why, pr) = k.select_idle_sibling(p, 1, 2, 1);
    assert_eq!((c, why, pr.probed), (2, "affine_fallback", 6));
    // Symmetric machines keep the LLC scans even with the feature on.
    let mut f = Features::v5_6();
    f.set(SchedFeat::SELECT_IDLE_CAPACITY, true);
    let mut s = kernel_with(test_topology(1, 1, 4, 1), f);
    let q = sleeper_any(&mut s, 0);
    assert_eq!(s.select_idle_sibling(q, 0, 0, 0).1, "target_idle");
}

#[test]
fn a_big_wakee_stays_on_the_fast_path_without_wake_cap() {
    for on in [false, true] {
        let mut k = asym(on);
        // SD_BALANCE_WAKE on the asymmetric levels only in v5.6.
        let wake_flag = k
            .topology()
            .domains
            .iter()
            .any(|d| d.flags & SD_BALANCE_WAKE != 0);
        assert_eq!(wake_flag, !on);
        busy(&mut k, 1);
        let p = sleeper_any(&mut k, 2);
        k.task_mut(p).se.avg.util_avg = 700;
        let mut q = EventQueue::default();
        let cpu = k.select_task_rq_fair(p, 2, WF_TTWU, 1, &mut q);
        let (_, c, why) = *placements(&k).last().unwrap();
        assert_eq!(c, cpu);
        if on {
            // Fast path: prev 2 is the affine target; the capacity scan from 2
            // passes 2, 3 (LITTLE) and takes big CPU 4.
            assert_eq!((cpu, why), (4, "idle_capacity"));
            assert_eq!(calls(&k, Func::FindIdlestCpu), 0);
        } else {
            assert_eq!(why, "slow_path");
            assert!(cpu >= 4);
        }
    }
}
