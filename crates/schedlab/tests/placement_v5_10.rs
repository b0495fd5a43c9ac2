//! The `v5.10` kernel preset and its two placement switches, hand-computed:
//! `ASYM_FITS_CAPACITY` (v5.10: idle target, prev and recent CPUs the task fits come
//! before the asymmetric capacity scan) and `IDLEST_AVG_LOAD` (v5.8: the slow path
//! compares busy groups by their real `avg_load`).

mod placement_common;
use placement_common::*;

use schedlab::machine::presets::{test_asym, test_topology};
use schedlab::sched::core::Kernel;
use schedlab::sched::fair::group::GroupType;
use schedlab::sched::fair::wakeup::Probes;
use schedlab::sched::features::{Features, KernelPreset, SchedFeat};

/// 4 LITTLE (CPUs 0-3, capacity 462) + 2 big (4-5, 1024); a task fits a CPU when
/// `util × 1280 < capacity × 1024` (462 takes up to 369).
fn asym(fits_first: bool) -> Kernel<Rec> {
    let mut f = Features::v5_6();
    f.set(SchedFeat::SELECT_IDLE_CAPACITY, true);
    f.set(SchedFeat::ASYM_FITS_CAPACITY, fits_first);
    kernel_with(test_asym(2, 4, 1024, 462), f)
}

#[test]
fn v5_10_preset_bundles_the_version() {
    let k = KernelPreset::by_name("v5.10").expect("v5.10 preset");
    let f = k.features();
    for on in [
        "SELECT_IDLE_CAPACITY",
        "ASYM_FITS_CAPACITY",
        "IDLEST_AVG_LOAD",
        "IDLEST_GROUP_UTIL",
        "LEGACY_SD_FLAG",
        "SIS_PROP",
    ] {
        assert!(f.has(SchedFeat::from_name(on).unwrap()), "{on}");
    }
    for off in ["SIS_AVG_CPU", "SIS_MERGED", "SIS_UTIL", "EEVDF"] {
        assert!(!f.has(SchedFeat::from_name(off).unwrap()), "{off}");
    }
    let t = k.topology_opts();
    assert_eq!((t.imbalance_pct_default, t.busy_factor), (117, 16));
    assert!(!t.asym_balance_wake && !t.cluster_level);
    // v5.12 is v5.10 plus the merged scan.
    let mut v512 = f;
    v512.apply("SIS_MERGED").unwrap();
    assert_eq!(KernelPreset::by_name("v5.12").unwrap().features(), v512);
}

#[test]
fn a_fitting_idle_prev_comes_before_the_capacity_scan() {
    for fits_first in [false, true] {
        let mut k = asym(fits_first);
        busy(&mut k, 1);
        let p = sleeper_any(&mut k, 3);
        k.task_mut(p).se.avg.util_avg = 100;
        // Target 1 busy, prev 3 idle and LITTLE (100 fits 462).
        let (c, why, _) = k.select_idle_sibling(p, 3, 1, 1);
        if fits_first {
            assert_eq!((c, why), (3, "prev_idle"));
        } else {
            // v5.7: the scan from 1 finds 2 first.
            assert_eq!((c, why), (2, "idle_capacity"));
        }
    }
}

#[test]
fn an_idle_cpu_the_task_does_not_fit_is_passed_over() {
    let mut k = asym(true);
    let p = sleeper_any(&mut k, 2);
    k.task_mut(p).se.avg.util_avg = 700;
    // Target 1 and prev 2 are idle but 700 does not fit 462: the scan from 1 reads
    // 1, 2, 3 and takes big CPU 4.
    let (c, why, pr) = k.select_idle_sibling(p, 2, 1, 1);
    assert_eq!((c, why), (4, "idle_capacity"));
    // Probes: target 1, prev 2, recent (= prev, skipped), then the scan 1, 2, 3, 4.
    assert_eq!(pr.probed, 6);
    // An idle big target fits at once.
    let (c, why, pr) = k.select_idle_sibling(p, 2, 5, 1);
    assert_eq!((c, why, pr.probed), (5, "target_idle", 1));
    // Nothing idle anywhere: target.
    for c in 0..6 {
        busy(&mut k, c);
    }
    assert_eq!(k.select_idle_sibling(p, 2, 1, 1).1, "affine_fallback");
}

#[test]
fn a_fitting_recent_cpu_is_taken_and_replaced_by_prev() {
    let mut k = asym(true);
    busy(&mut k, 1);
    busy(&mut k, 2);
    let p = sleeper_any(&mut k, 2);
    k.task_mut(p).se.avg.util_avg = 100;
    k.task_mut(p).recent_used_cpu = 3;
    assert_eq!(k.select_idle_sibling(p, 2, 1, 1).0, 3);
    assert_eq!(k.task(p).recent_used_cpu, 2);
    // A recent CPU the task does not fit is not taken (and keeps its value).
    k.task_mut(p).se.avg.util_avg = 700;
    k.task_mut(p).recent_used_cpu = 3;
    let (c, why, pr) = k.select_idle_sibling(p, 2, 1, 1);
    // Probes: target 1, prev 2, recent 3, then the scan 1, 2, 3, 4.
    assert_eq!((c, why, pr.probed), (4, "idle_capacity", 7));
    assert_eq!(k.task(p).recent_used_cpu, 3);
}

/// 4 CPUs, two LLC groups {0, 1} and {2, 3} under one package domain.
fn two_groups(fix: bool) -> Kernel<Rec> {
    let mut f = Features::v5_6();
    f.set(SchedFeat::IDLEST_AVG_LOAD, fix);
    kernel_with(test_topology(1, 2, 2, 1), f)
}

/// CPU 0's top domain and its groups, which must be `n`.
fn top_groups(k: &Kernel<Rec>, n: usize) -> (usize, Vec<usize>) {
    let sd = k.topology().domains_of(0).last().unwrap();
    let groups = k.topology().domains[sd].groups.clone();
    assert_eq!(groups.len(), n);
    (sd, groups)
}

fn load(k: &mut Kernel<Rec>, cpu: usize, nr: u32, util: u64, load: u64) {
    busy(k, cpu);
    k.cpu_rq_mut(cpu).nr_running = nr;
    k.cpu_rq_mut(cpu).cfs.h_nr_running = nr;
    k.cpu_rq_mut(cpu).cfs.avg.util_avg = util;
    k.cpu_rq_mut(cpu).cfs.avg.load_avg = load;
}

#[test]
fn busy_groups_get_their_avg_load_from_v5_8() {
    for fix in [false, true] {
        let mut k = two_groups(fix);
        // Group {0, 1}: two tasks per CPU, full util: overloaded, load 4096 over
        // capacity 2048 → avg_load 2048. Group {2, 3}: idle, with 512 of blocked
        // load on CPU 2: has_spare, 512 × 1024 / 2048 = 256.
        load(&mut k, 0, 2, 1024, 2048);
        load(&mut k, 1, 2, 1024, 2048);
        k.cpu_rq_mut(2).cfs.avg.load_avg = 512;
        let p = sleeper_any(&mut k, 3);
        let (sd, groups) = top_groups(&k, 2);
        let mut pr = Probes::default();
        let s0 = k.update_sg_wakeup_stats(sd, groups[0], p, 0, &mut pr);
        let s1 = k.update_sg_wakeup_stats(sd, groups[1], p, 0, &mut pr);
        assert_eq!(s0.group_type, GroupType::Overloaded);
        assert_eq!(s1.group_type, GroupType::HasSpare);
        if fix {
            assert_eq!((s0.avg_load, s1.avg_load), (2048, 0));
        } else {
            assert_eq!((s0.avg_load, s1.avg_load), (0, 256));
        }
    }
}

#[test]
fn a_fork_leaves_the_heavier_overloaded_group_only_with_the_fix() {
    for fix in [false, true] {
        let mut k = two_groups(fix);
        // Local {0, 1}: avg_load 2048; other {2, 3}: 2 tasks per CPU, load 1024
        // each → 2048 × 1024 / 2048 = 1024. Both overloaded; imbalance_pct 125,
        // imb = 256: 1024 ≥ 2048 + 256 no, 100 × 2048 ≤ 125 × 1024 no → go.
        // v5.6 compares 0 with 0: 100 × 0 ≤ 125 × 0 → stay.
        for c in 0..2 {
            load(&mut k, c, 2, 1024, 2048);
        }
        for c in 2..4 {
            load(&mut k, c, 2, 1024, 1024);
        }
        let p = sleeper_any(&mut k, 0);
        let sd = k.topology().domains_of(0).last().unwrap();
        let other = k.topology().domains[sd].groups[1];
        let mut pr = Probes::default();
        let g = k.find_idlest_group(sd, p, 0, 0, &mut pr);
        assert_eq!(g, fix.then_some(other));
    }
}

/// 6 CPUs, three LLC groups {0, 1}, {2, 3}, {4, 5} under one package domain.
fn three_groups(fix: bool) -> Kernel<Rec> {
    let mut f = Features::v5_6();
    f.set(SchedFeat::IDLEST_GROUP_UTIL, fix);
    kernel_with(test_topology(1, 3, 2, 1), f)
}

#[test]
fn a_tie_of_idle_cpus_goes_to_the_lower_group_util_from_v5_9() {
    for fix in [false, true] {
        let mut k = three_groups(fix);
        // The forking task runs on CPU 0: local {0, 1} has 1 idle CPU. {2, 3} and
        // {4, 5} have 2 each; CPU 2 keeps 400 of blocked util (a thread that ran
        // and went to sleep), {4, 5} has none. Every group is has_spare.
        busy(&mut k, 0);
        k.cpu_rq_mut(2).cfs.avg.util_avg = 400;
        let p = sleeper_any(&mut k, 0);
        let (sd, groups) = top_groups(&k, 3);
        let mut pr = Probes::default();
        let stats: Vec<_> = groups
            .iter()
            .map(|&g| k.update_sg_wakeup_stats(sd, g, p, 0, &mut pr))
            .collect();
        let seen: Vec<_> = stats
            .iter()
            .map(|s| (s.group_type, s.idle_cpus, s.group_util))
            .collect();
        assert_eq!(
            seen,
            [
                (GroupType::HasSpare, 1, 0),
                (GroupType::HasSpare, 2, 400),
                (GroupType::HasSpare, 2, 0),
            ]
        );
        // v5.6 keeps the first group with the most idle CPUs, {2, 3}; v5.9 takes
        // the one whose util is lower, {4, 5}. Local has fewer idle CPUs: go.
        let g = k.find_idlest_group(sd, p, 0, 0, &mut pr);
        assert_eq!(g, Some(groups[if fix { 2 } else { 1 }]));
        // An equal util keeps the first.
        k.cpu_rq_mut(4).cfs.avg.util_avg = 400;
        assert_eq!(k.find_idlest_group(sd, p, 0, 0, &mut pr), Some(groups[1]));
    }
}
