//! The `v6.12` kernel preset and `IMB_NUMA_NR` (the v5.18 NUMA imbalance allowance
//! in its v6.0 = v6.12 form), hand-computed: `imb_numa_nr` from the LLC span at
//! build time, `adjust_numa_imbalance`, the has_spare branch of
//! `calculate_imbalance` and the NUMA has_spare rule of `find_idlest_group`.

use schedlab::machine::presets;
use schedlab::sched::fair::balance::*;
use schedlab::sched::fair::group::{GroupType, MigrationType, SgLbStats};
use schedlab::sched::fair::idlest::{find_idlest_group_decide, IdlestCmp};
use schedlab::sched::features::{KernelPreset, SchedFeat};
use schedlab::sched::topology::{SchedTopology, TopologyOpts, SD_NUMA};

#[test]
fn v6_12_preset_bundles_the_version() {
    let k = KernelPreset::by_name("v6.12").expect("v6.12 preset");
    let f = k.features();
    for on in [
        "EEVDF",
        "SIS_MERGED",
        "SIS_UTIL",
        "SIS_CLUSTER",
        "IMB_NUMA_NR",
    ] {
        assert!(f.has(SchedFeat::from_name(on).unwrap()), "{on}");
    }
    for off in ["SIS_PROP", "START_DEBIT"] {
        assert!(!f.has(SchedFeat::from_name(off).unwrap()), "{off}");
    }
    assert!(k.topology_opts().cluster_level);
    // v5.6 never reads imb_numa_nr.
    assert!(!KernelPreset::by_name("v5.6")
        .unwrap()
        .features()
        .has(SchedFeat::IMB_NUMA_NR));
}

/// `imb_numa_nr` of the SD_NUMA domains of CPU 0.
fn numa_imb(m: &schedlab::machine::Machine) -> Vec<u32> {
    let t = SchedTopology::build(m, &TopologyOpts::v5_6());
    t.domains_of(0)
        .filter(|&d| t.domains[d].has(SD_NUMA))
        .map(|d| t.domains[d].imb_numa_nr)
        .collect()
}

#[test]
fn imb_numa_nr_follows_the_llcs_of_a_node() {
    // xeon-88: one LLC per 44-CPU node: an eighth of the node, 44 >> 3 = 5; the
    // NUMA level spans the reference span (88): factor 1.
    assert_eq!(numa_imb(&presets::preset("xeon-88").unwrap()), vec![5]);
    // power9-176: 88-CPU nodes of 11 LLCs (core pairs, 8 CPUs): 11.
    assert_eq!(numa_imb(&presets::preset("power9-176").unwrap()), vec![11]);
    // A single-node machine has no SD_NUMA domain.
    assert!(numa_imb(&presets::preset("epyc-192").unwrap()).is_empty());
    // Domains up to the LLC get 0.
    let m = presets::preset("xeon-88").unwrap();
    let t = SchedTopology::build(&m, &TopologyOpts::v5_6());
    let llc = t.sd_llc[0].unwrap();
    assert_eq!(t.domains[llc].imb_numa_nr, 0);
}

#[test]
fn adjust_numa_imbalance_cells() {
    // Destination would run 5 ≤ 5 tasks: imbalances up to 2 vanish.
    assert_eq!(adjust_numa_imbalance(2, 5, 5), 0);
    assert_eq!(adjust_numa_imbalance(3, 5, 5), 3);
    // 6 > 5: unchanged.
    assert_eq!(adjust_numa_imbalance(1, 6, 5), 1);
    // A negative (wrapped) imbalance is ≤ 2.
    assert_eq!(adjust_numa_imbalance(-4, 1, 5), 0);
}

fn spare(nr: u32, idle: u32, weight: u32) -> SgLbStats {
    SgLbStats {
        sum_nr_running: nr,
        sum_h_nr_running: nr,
        idle_cpus: idle,
        group_weight: weight,
        group_capacity: 1024 * weight as u64,
        group_type: GroupType::HasSpare,
        ..SgLbStats::default()
    }
}

fn inp(prefer_sibling: bool, imb_numa_nr: Option<u32>) -> SdInputs {
    SdInputs {
        idle: CpuIdleType::Idle,
        imbalance_pct: 117,
        prefer_sibling,
        sd_numa: true,
        imb_numa_nr,
        total_load: 0,
        total_capacity: 88 * 1024,
        eas_not_overutilized: false,
    }
}

#[test]
fn calculate_imbalance_numa_spare_branch() {
    let ci = |l: SgLbStats, b: SgLbStats, i: SdInputs| {
        let mut l = l;
        let (mt, imb, br) = calculate_imbalance(&mut l, &b, &i);
        assert_eq!(mt, MigrationType::Task);
        (imb, br)
    };
    // Idle CPUs 40 vs 38 (difference 2), local runs 3 (destination 4 ≤ 5): 0.
    // v5.6: (2 >> 1) = 1, busiest runs 6 > 2, so it stays 1.
    let (l, b) = (spare(3, 40, 44), spare(6, 38, 44));
    assert_eq!(
        ci(l, b, inp(false, Some(5))),
        (0, ImbBranch::SpareNumaSmall)
    );
    assert_eq!(ci(l, b, inp(false, None)), (1, ImbBranch::SpareIdleCpus));
    // Local runs 5: destination 6 > 5, difference 2 kept, halved: 1.
    let l5 = spare(5, 40, 44);
    assert_eq!(
        ci(l5, b, inp(false, Some(5))),
        (1, ImbBranch::SpareIdleCpus)
    );
    // Difference 4 > 2 is kept, halved after the test: 2.
    let l36 = spare(3, 42, 44);
    assert_eq!(
        ci(l36, b, inp(false, Some(5))),
        (2, ImbBranch::SpareIdleCpus)
    );
    // Prefer sibling: 3 − 1 = 2 tasks, destination 2 ≤ 5: 0 (v5.6: 2 >> 1 = 1, no
    // NUMA test on this branch).
    let (l1, b3) = (spare(1, 43, 44), spare(3, 41, 44));
    assert_eq!(
        ci(l1, b3, inp(true, Some(5))),
        (0, ImbBranch::SpareNumaSmall)
    );
    assert_eq!(ci(l1, b3, inp(true, None)), (1, ImbBranch::SpareNrDiff));
    // 4 − 1 = 3 > 2: kept, halved: 1.
    let b4 = spare(4, 40, 44);
    assert_eq!(ci(l1, b4, inp(true, Some(5))), (1, ImbBranch::SpareNrDiff));
    // Not a NUMA domain: the plain halved difference.
    let mut i = inp(false, Some(5));
    i.sd_numa = false;
    assert_eq!(ci(l, b, i), (1, ImbBranch::SpareIdleCpus));
}

#[test]
fn find_idlest_group_numa_spare_rule() {
    let c = |li: u32, ii: u32, lnr: u32, nr: Option<u32>| IdlestCmp {
        local_type: GroupType::HasSpare,
        idlest_type: GroupType::HasSpare,
        local_avg_load: 0,
        idlest_avg_load: 0,
        local_idle_cpus: li,
        idlest_idle_cpus: ii,
        local_max_capacity: 1024,
        idlest_max_capacity: 1024,
        imbalance_pct: 117,
        numa: true,
        local_sum_nr_running: lnr,
        imb_numa_nr: nr,
    };
    // Local 1 idle vs 4, local runs 3: |1 − 4| = 3 > 2 → not allowed → 1 < 4: go.
    // v5.6 stays (the local node has an idle CPU).
    assert!(find_idlest_group_decide(&c(1, 4, 3, Some(5))));
    assert!(!find_idlest_group_decide(&c(1, 4, 3, None)));
    // Local 0 idle vs 2, local runs 3: destination 4 ≤ 5 and 2 ≤ 2: stay
    // (v5.6 goes: no idle CPU locally).
    assert!(!find_idlest_group_decide(&c(0, 2, 3, Some(5))));
    assert!(find_idlest_group_decide(&c(0, 2, 3, None)));
    // Local runs 5: destination 6 > 5: the idle counts decide: 0 < 2, go.
    assert!(find_idlest_group_decide(&c(0, 2, 5, Some(5))));
    // A cap of 1 (one allowed CPU locally): destination 2 > 1: go.
    assert!(find_idlest_group_decide(&c(0, 2, 1, Some(1))));
}
