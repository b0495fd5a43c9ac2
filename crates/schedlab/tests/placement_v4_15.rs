//! The `v4.15` preset's slow path (`IDLEST_V4_15`, fair/idlest_v4_15.rs):
//! v4.15's `find_idlest_group` decision, hand-computed per branch on plain
//! numbers (imbalance_pct 125: imb = 256, scale = 112; 117: imb = 174, scale = 108),
//! and what it does to a fork storm of children that sleep at once (hackbench on
//! `xeon-88`) against v5.6's rework.

use schedlab::experiment::{self, Overrides, RunOpts, Scenario};
use schedlab::sched::fair::idlest_v4_15::{idlest_v4_15_decide, GroupLoad};
use std::collections::BTreeSet;
use std::path::Path;

fn g(local: bool, runnable_load: u64, avg_load: u64, max_spare_cap: u64) -> GroupLoad {
    GroupLoad {
        local,
        runnable_load,
        avg_load,
        max_spare_cap,
    }
}

#[test]
fn a_much_lighter_runnable_load_wins() {
    // Remote 0 < local 1024 − 256: go.
    let gs = [g(true, 1024, 1024, 0), g(false, 0, 0, 0)];
    assert_eq!(idlest_v4_15_decide(&gs, 125, true, 0), Some(1));
    // Remote 900 vs local 1024: within 256, and 100 × 1024 < 112 × 900 = 100 800?
    // no (102 400): the blocked-inclusive loads send it too.
    let gs = [g(true, 1024, 1024, 0), g(false, 900, 900, 0)];
    assert_eq!(idlest_v4_15_decide(&gs, 125, true, 0), Some(1));
}

#[test]
fn close_runnable_loads_are_decided_by_the_blocked_load() {
    // No runnable load anywhere: local avg 600 against remote 0: go.
    let gs = [g(true, 0, 600, 0), g(false, 0, 0, 0)];
    assert_eq!(idlest_v4_15_decide(&gs, 125, true, 0), Some(1));
    // The other way round: 100 × 0 < 112 × 600: stay.
    let gs = [g(true, 0, 0, 0), g(false, 0, 600, 0)];
    assert_eq!(idlest_v4_15_decide(&gs, 125, true, 0), None);
    // The margin: 100 × 1000 = 100 000 < 112 × 900 = 100 800: stay; with local
    // 1100 (110 000): go.
    let gs = [g(true, 0, 1000, 0), g(false, 0, 900, 0)];
    assert_eq!(idlest_v4_15_decide(&gs, 125, true, 0), None);
    let gs = [g(true, 0, 1100, 0), g(false, 0, 900, 0)];
    assert_eq!(idlest_v4_15_decide(&gs, 125, true, 0), Some(1));
    // Local runnable 200 is within 256 of the remote's 0, and the remote's
    // blocked load is heavier (100 × 200 < 112 × 500): stay.
    let gs = [g(true, 200, 200, 0), g(false, 0, 500, 0)];
    assert_eq!(idlest_v4_15_decide(&gs, 125, true, 0), None);
}

#[test]
fn among_remote_groups_the_blocked_load_can_replace_the_first() {
    // A (0, 1000) is taken first; B's runnable 100 is within 256 of 0 and
    // 100 × 1000 > 112 × 500: B. Local (2048, 2048) is far heavier: go to B.
    let gs = [
        g(true, 2048, 2048, 0),
        g(false, 0, 1000, 0),
        g(false, 100, 500, 0),
    ];
    assert_eq!(idlest_v4_15_decide(&gs, 125, true, 0), Some(2));
    // At imbalance_pct 117 (imb 174, scale 108): B's 100 is within 174 of 0 and
    // 100 000 > 54 000: B again; with B's runnable 200 (not within 174) A stays.
    assert_eq!(idlest_v4_15_decide(&gs, 117, true, 0), Some(2));
    let gs = [
        g(true, 2048, 2048, 0),
        g(false, 0, 1000, 0),
        g(false, 200, 500, 0),
    ];
    assert_eq!(idlest_v4_15_decide(&gs, 117, true, 0), Some(1));
}

#[test]
fn spare_capacity_first_except_for_a_fork() {
    // Loads say go (remote runnable 0 against 1024); util 400.
    // Local spare 300 > 200 and 112 × 300 = 33 600 > 100 × 200: stay, but a fork
    // skips the spare test and goes.
    let gs = [g(true, 1024, 1024, 300), g(false, 0, 0, 200)];
    assert_eq!(idlest_v4_15_decide(&gs, 125, false, 400), None);
    assert_eq!(idlest_v4_15_decide(&gs, 125, true, 400), Some(1));
    // Remote spare 400: 33 600 > 40 000 fails; 400 > 200: the most-spare group.
    let gs = [
        g(true, 0, 0, 300),
        g(false, 0, 5000, 400),
        g(false, 0, 0, 100),
    ];
    assert_eq!(idlest_v4_15_decide(&gs, 125, false, 400), Some(1));
    // By load alone (a fork) group 2 would win: local 0 vs 0, 100 × 0 < 112 × 0
    // is false, so go to the idlest, group 2 (avg 0 beats 5000).
    assert_eq!(idlest_v4_15_decide(&gs, 125, true, 400), Some(2));
    // Nobody has spare beyond util / 2: fall back to the loads.
    let gs = [g(true, 1024, 1024, 100), g(false, 0, 0, 150)];
    assert_eq!(idlest_v4_15_decide(&gs, 125, false, 400), Some(1));
}

/// The CPUs of the workload's forks (`sched_wakeup_new` targets) in a traced run.
fn fork_cpus(preset: &str) -> Vec<usize> {
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/seeds/003-hackbench-16.toml");
    let sets = [
        "workload.groups=4",
        "workload.loops=20",
        &format!("kernel.preset={preset}"),
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let sc = Scenario::load(
        &path,
        &Overrides {
            sets,
            ..Overrides::default()
        },
    )
    .unwrap();
    let opts = RunOpts {
        trace: true,
        ftrace: true,
        ..RunOpts::default()
    };
    let (_, t) = experiment::run(&sc, sc.seed, 0, &opts).unwrap();
    t.expect("a trace")
        .lines()
        .filter(|l| l.contains("sched_wakeup_new:"))
        .map(|l| {
            let i = l.find("target_cpu=").expect("target_cpu") + "target_cpu=".len();
            l[i..].trim().parse().unwrap()
        })
        .collect()
}

/// hackbench's 160 children block at once. v5.6 keeps them where the most CPUs
/// are idle, on the local node while it has one idle CPU: they pile onto a few
/// CPUs of node 0. v4.15's load-based choice sees the weight each child left
/// behind in its CPU's `load_avg` and spreads them over both nodes and most CPUs.
#[test]
fn a_storm_of_sleeping_children_spreads_under_v4_15() {
    let v56 = fork_cpus("v5.6");
    let v415 = fork_cpus("v4.15");
    assert_eq!((v56.len(), v415.len()), (161, 161));
    let distinct = |v: &[usize]| v.iter().collect::<BTreeSet<_>>().len();
    let node1 = |v: &[usize]| {
        v.iter()
            .filter(|&&c| (22..44).contains(&c) || c >= 66)
            .count()
    };
    assert!(distinct(&v56) <= 8, "v5.6: {}", distinct(&v56));
    assert_eq!(node1(&v56), 0);
    assert!(distinct(&v415) >= 70, "v4.15: {}", distinct(&v415));
    assert!(node1(&v415) >= 60, "v4.15 node 1: {}", node1(&v415));
}
