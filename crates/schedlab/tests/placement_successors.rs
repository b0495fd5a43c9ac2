//! The upstream successors of the idle-search seeds: v5.12's merged scan
//! (`SIS_MERGED`) and v6.0's utilization budget (`SIS_UTIL`), hand-computed on
//! `test_topology(1, 1, 4, 2)` (cores {0,1} {2,3} {4,5} {6,7}), the SIS_UTIL
//! formula against the example table of its posting, a differential property
//! against an exhaustive oracle, and the `v5.12` / `v6.0` kernel presets end to end.

mod placement_common;
use placement_common::*;

use proptest::prelude::*;
use schedlab::config::Doc;
use schedlab::experiment::{self, Overrides, RunOpts, Scenario};
use schedlab::machine::presets::test_topology;
use schedlab::sched::core::Kernel;
use schedlab::sched::fair::llc_idle_scan::sis_util_nr_idle_scan;
use schedlab::sched::features::{Features, KernelPreset, SchedFeat};
use schedlab::sched::Func;
use std::path::Path;

fn merged() -> Features {
    KernelPreset::by_name("v5.12").unwrap().features()
}

fn k8(f: Features) -> Kernel<Rec> {
    let mut k = kernel_with(test_topology(1, 1, 4, 2), f);
    k.cpu_rq_mut(0).avg_idle = 1_000_000;
    k
}

/// Hint set, busy {0, 2, 4}: from target 2, core {2,3} is not idle (3 is
/// remembered), core {4,5} stops at busy 4 (a CPU is already remembered), core
/// {6,7} is idle → 6. Probes 2 + 1 + 2 = 5 (v5.6: 6 in select_idle_core).
#[test]
fn merged_scan_finds_an_idle_core_and_stops_busy_cores_early() {
    let mut k = k8(merged());
    for c in [0, 2, 4] {
        busy(&mut k, c);
    }
    k.set_idle_cores(2, true);
    let p = sleeper_any(&mut k, 2);
    let (cpu, why, _) = k.select_idle_sibling(p, 2, 2, 0);
    assert_eq!((cpu, why), (6, "idle_core"));
    assert_eq!(last_call(&k, Func::SelectIdleCpu).unwrap().0, 5);
    assert_eq!(
        last_call(&k, Func::SelectIdleCore),
        None,
        "no separate core scan"
    );
    assert!(
        k.test_idle_cores(2, false),
        "a successful pass keeps the hint"
    );
}

/// Hint set, busy {0, 2, 4, 6}: no idle core; the pass remembers 3 and stops
/// every later core at its first (busy) CPU: 2 + 1 + 1 + 1 = 5 probes, clears the
/// hint, returns 3 (v5.6: 8 core probes + 2 CPU probes).
#[test]
fn merged_scan_falls_back_to_the_first_idle_cpu_and_clears_the_hint() {
    let mut k = k8(merged());
    for c in [0, 2, 4, 6] {
        busy(&mut k, c);
    }
    k.set_idle_cores(2, true);
    let p = sleeper_any(&mut k, 2);
    let (cpu, why, _) = k.select_idle_sibling(p, 2, 2, 0);
    assert_eq!((cpu, why), (3, "idle_cpu"));
    assert_eq!(last_call(&k, Func::SelectIdleCpu).unwrap().0, 5);
    assert!(!k.test_idle_cores(2, true));
}

/// A SCHED_IDLE-only sibling is remembered (and ends that core) when nothing
/// better was seen: busy {2}, 3 SCHED_IDLE-only, hint set, others busy but 6, 7.
#[test]
fn merged_scan_remembers_a_sched_idle_sibling() {
    let mut k = k8(merged());
    for c in [0, 1, 2, 4, 5] {
        busy(&mut k, c);
    }
    sched_idle(&mut k, 3);
    k.set_idle_cores(2, true);
    let p = sleeper_any(&mut k, 2);
    // {2,3}: 2 busy (nothing remembered yet, continue), 3 SCHED_IDLE → remembered,
    // break; {4,5}: 4 busy → break; {6,7}: idle core → 6.
    let (cpu, why, _) = k.select_idle_sibling(p, 2, 2, 0);
    assert_eq!((cpu, why), (6, "idle_core"));
    assert_eq!(last_call(&k, Func::SelectIdleCpu).unwrap().0, 2 + 1 + 2);
}

/// Without the hint the pass is budgeted by SIS_PROP and ends at the first idle
/// or SCHED_IDLE-only CPU; no final select_idle_smt.
#[test]
fn merged_scan_without_the_hint_is_a_budgeted_cpu_scan() {
    let mut k = k8(merged());
    for c in [0, 1, 2, 3, 4] {
        busy(&mut k, c);
    }
    k.set_idle_cores(2, false);
    let p = sleeper_any(&mut k, 2);
    let (cpu, why, _) = k.select_idle_sibling(p, 2, 2, 0);
    assert_eq!((cpu, why), (5, "idle_cpu"));
    assert_eq!(last_call(&k, Func::SelectIdleCpu).unwrap().0, 4);
    assert_eq!(last_call(&k, Func::SelectIdleSmt), None);
    // The SIS_PROP scan fed the EWMA: 4 probes within the LLC from CPU 0:
    // 2, 3, 4, 5 at probe_llc + 20 ns overhead → avg_scan_cost 0 + time/8.
    let llc = k.topology().sd_llc[0].unwrap();
    let time = 4 * k.machine().cost.probe_llc + 20;
    assert_eq!(k.topology().domains[llc].avg_scan_cost, time / 8);
}

/// The posting's table: 112 CPUs per LLC, imbalance_pct 117; utilization
/// 0/5/15/25/35/45/55/65/75/85/86 % → 112/111/108/102/93/81/65/47/25/1/0 CPUs.
#[test]
fn sis_util_budget_matches_the_posting() {
    let table = [
        (0, 112),
        (5, 111),
        (15, 108),
        (25, 102),
        (35, 93),
        (45, 81),
        (55, 65),
        (65, 47),
        (75, 25),
        (85, 1),
        (86, 0),
    ];
    for (pct_util, want) in table {
        let sum_util = pct_util * 1024 * 112 / 100;
        assert_eq!(
            sis_util_nr_idle_scan(sum_util, 112, 117),
            want,
            "{pct_util} %"
        );
    }
}

/// SIS_UTIL starts at nr_idle_scan = 0: nothing is scanned, not even for idle
/// cores; after a refresh the scan probes at most nr_idle_scan CPUs.
#[test]
fn sis_util_blocks_then_bounds_the_scan() {
    let f = KernelPreset::by_name("v6.0").unwrap().features();
    assert!(f.has(SchedFeat::SIS_UTIL) && !f.has(SchedFeat::SIS_PROP));
    let mut k = k8(f);
    for c in [0, 1, 2, 3, 4] {
        busy(&mut k, c);
    }
    k.set_idle_cores(2, true);
    let p = sleeper_any(&mut k, 2);
    let (cpu, why, _) = k.select_idle_sibling(p, 2, 2, 0);
    assert_eq!((cpu, why), (2, "affine_fallback"));
    assert_eq!(last_call(&k, Func::SelectIdleCpu).unwrap().0, 0);
    // A periodic balance at the LLC domain (MC, 8 CPUs, pct 117) with 50 %
    // utilization: x = 512, 512² × 117² / 10 240 000 = 349 → y = 675 → 675 × 8 / 1024 = 5.
    let llc = k.topology().sd_llc[0].unwrap();
    k.update_idle_cpu_scan(llc, 0, true, 512 * 8);
    let s = k.topology().sd_llc_shared[0].unwrap();
    assert_eq!(
        k.topology().shared[s].nr_idle_scan,
        0,
        "newly idle: no refresh"
    );
    k.update_idle_cpu_scan(llc, 0, false, 512 * 8);
    assert_eq!(k.topology().shared[s].nr_idle_scan, 5);
    // Hint cleared; from 2: 2, 3, 4 busy, 5 idle: 4 probes within the budget of 5.
    k.set_idle_cores(2, false);
    let (cpu, _, _) = k.select_idle_sibling(p, 2, 2, 0);
    assert_eq!(cpu, 5);
    // Budget 2 (nr = 3): 2, 3 probed, then given up.
    k.topology_mut().shared[s].nr_idle_scan = 2;
    let (cpu, _, _) = k.select_idle_sibling(p, 2, 2, 0);
    assert_eq!(cpu, 2);
    assert_eq!(last_call(&k, Func::SelectIdleCpu).unwrap().0, 2);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    /// Differential: without a scan budget (NO_SIS_PROP), the merged pass returns
    /// a fully idle core (the first in wrap order from target) when the hint is set
    /// and one exists, else an idle allowed CPU when one exists, else target.
    #[test]
    fn merged_scan_matches_an_exhaustive_oracle(
        smt in prop_oneof![Just(1usize), Just(2usize), Just(4usize)],
        cores in 1usize..6,
        busy_bits in any::<u32>(),
        allowed_bits in any::<u32>(),
        target_pick in any::<u32>(),
        hint in any::<bool>(),
    ) {
        let mut f = merged();
        f.set(SchedFeat::SIS_PROP, false);
        let mut k = kernel_with(test_topology(1, 1, cores, smt), f);
        let n = k.machine().nr_cpus();
        for c in 0..n {
            if busy_bits >> c & 1 == 1 {
                busy(&mut k, c);
            }
        }
        let target = target_pick as usize % n;
        let mut allowed = mask(&(0..n).filter(|c| allowed_bits >> c & 1 == 1).collect::<Vec<_>>());
        allowed.set(target);
        k.set_idle_cores(target, hint);
        let p = sleeper(&mut k, target, allowed);
        let (cpu, _, _) = k.select_idle_sibling(p, target, target, target);
        prop_assert!(allowed.test(cpu));
        let order: Vec<usize> = allowed.iter_wrap(target).collect();
        let any_idle = order.iter().any(|&c| k.available_idle_cpu(c));
        let idle_core = order
            .iter()
            .copied()
            .find(|&c| k.machine().smt_mask(c).iter().all(|s| k.available_idle_cpu(s)));
        if k.available_idle_cpu(target) {
            prop_assert_eq!(cpu, target);
        } else if hint && smt > 1 && idle_core.is_some() {
            prop_assert_eq!(Some(cpu), idle_core);
        } else if any_idle {
            prop_assert!(k.available_idle_cpu(cpu), "an idle CPU exists, got {}", cpu);
        } else {
            prop_assert_eq!(cpu, target);
        }
    }
}

fn scenario(preset: &str) -> Scenario {
    let text = format!(
        "[machine]\npreset = \"xeon-e5-40\"\n[kernel]\npreset = \"{preset}\"\n[run]\nseed = 1\n[workload]\nkind = \"hackbench\"\ngroups = 4\nloops = 100\n"
    );
    Scenario::from_doc(
        Doc::parse(&text, Path::new("t.toml")).unwrap(),
        &Overrides::default(),
    )
    .unwrap()
}

/// The presets end to end, invariants checked: v5.12 has no separate core or SMT
/// scan; v6.0 refreshes nr_idle_scan from periodic balancing at the LLC level
/// (every ~20 ms on the 20-CPU LLCs of `xeon-e5-40`), so some scans run.
#[test]
fn kernel_presets_run_end_to_end() {
    let opts = RunOpts {
        check: true,
        ..Default::default()
    };
    for preset in ["v5.6", "v5.12", "v6.0"] {
        let sc = scenario(preset);
        let r = experiment::run(&sc, 1, 0, &opts).unwrap().0;
        let f = &r.metrics.functions;
        assert_eq!(r.kernel.preset, preset);
        let separate = f.contains_key("select_idle_core") || f.contains_key("select_idle_smt");
        assert_eq!(separate, preset == "v5.6", "{preset}");
        assert!(f["select_idle_cpu"].calls > 100, "{preset}");
        if preset == "v6.0" {
            assert!(f["select_idle_cpu"].cpus_probed > 0, "SIS_UTIL refreshed");
            assert!(r.kernel.features.contains(&"NO_SIS_PROP".to_string()));
        }
    }
}

/// SynQuacer (24 A53, 12 clusters of 2 under one LLC) with the v6.0 topology (CLS
/// level) and the merged scan, SIS_PROP budget instead of SIS_UTIL.
fn synquacer(cluster: bool) -> Kernel<Rec> {
    let v6 = KernelPreset::by_name("v6.0").unwrap();
    let mut f = v6.features();
    f.set(SchedFeat::SIS_UTIL, false);
    f.set(SchedFeat::SIS_PROP, true);
    f.set(SchedFeat::SIS_CLUSTER, cluster);
    let m = schedlab::machine::presets::preset("synquacer-24").unwrap();
    let n = m.nr_cpus();
    let mut k = Kernel::new(
        m,
        f,
        schedlab::sched::features::Tunables::v5_6(n),
        &v6.topology_opts(),
        Rec::default(),
    );
    assert!(k.topology().sched_cluster_active());
    assert!(k.topology().cpus_share_resources(4, 5) && !k.topology().cpus_share_resources(5, 6));
    k.cpu_rq_mut(0).avg_idle = 1_000_000;
    k
}

/// Target 5 (busy) in cluster {4,5}, idle {4, 6}: the plain pass from 5 takes 6;
/// the cluster-first pass takes 4 (5, then 4 of the cluster).
#[test]
fn sis_cluster_scans_the_targets_cluster_first() {
    for (cluster, want) in [(false, 6), (true, 4)] {
        let mut k = synquacer(cluster);
        for c in (0..24).filter(|&c| c != 4 && c != 6) {
            busy(&mut k, c);
        }
        let p = sleeper_any(&mut k, 5);
        let (cpu, why, _) = k.select_idle_sibling(p, 5, 5, 0);
        assert_eq!((cpu, why), (want, "idle_cpu"), "SIS_CLUSTER={cluster}");
    }
}

/// An idle prev outside target's cluster: returned at once without SIS_CLUSTER;
/// with it, only after a fruitless pass. Waker avg_idle 0 → nr = 4: the pass
/// probes 5, 4 (the cluster) and 6, gives up, and falls back to prev 10.
#[test]
fn sis_cluster_keeps_a_foreign_idle_prev_as_a_fallback() {
    for (cluster, probes) in [(false, 2), (true, 2 + 3)] {
        let mut k = synquacer(cluster);
        for c in (0..24).filter(|&c| c != 10) {
            busy(&mut k, c);
        }
        k.cpu_rq_mut(0).avg_idle = 0;
        let p = sleeper_any(&mut k, 10);
        let (cpu, why, pr) = k.select_idle_sibling(p, 10, 5, 0);
        assert_eq!((cpu, why), (10, "prev_idle"), "SIS_CLUSTER={cluster}");
        assert_eq!(pr.probed, probes, "target + prev (+ the pass)");
    }
}
