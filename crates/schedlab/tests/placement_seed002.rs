//! Seed 002, the streamlined `select_task_rq_fair` (Valentin Schneider, v2, March
//! 2020): the split domain walk with cached `sd_balance_*` pointers against v5.6's
//! combined walk (`LEGACY_SD_FLAG`).
//!
//! * every preset, every (CPU, prev, kind, want_affine): both walks choose the same
//!   slow-path and affine domains (the presets have no flag gap);
//! * every preset under two workloads, with the domain-walk cost set to 0 so that
//!   timing cannot diverge: byte-identical decision traces;
//! * the one corner case (spec `kernel-placement.md` §11(c)) on a topology built
//!   to show it: v5.6 keeps the last flagged domain across a gap;
//! * the cost: a fork walks one cached pointer instead of the domain chain.

mod placement_common;
use placement_common::*;

use schedlab::config::Doc;
use schedlab::engine::EventQueue;
use schedlab::experiment::{self, Overrides, RunOpts, Scenario};
use schedlab::machine::presets::{self, test_topology};
use schedlab::sched::core::Kernel;
use schedlab::sched::features::{Features, SchedFeat};
use schedlab::sched::topology::{SD_BALANCE_WAKE, SD_WAKE_AFFINE};
use schedlab::sched::{WakeKind, WF_FORK, WF_TTWU};
use std::path::Path;

fn feats(legacy: bool) -> Features {
    let mut f = Features::v5_6();
    f.set(SchedFeat::LEGACY_SD_FLAG, legacy);
    f
}

#[test]
fn legacy_is_the_v5_6_default() {
    assert!(Features::v5_6().has(SchedFeat::LEGACY_SD_FLAG));
}

#[test]
fn both_walks_choose_the_same_domains_on_every_preset() {
    for (name, _) in presets::preset_names() {
        let m = presets::preset(name).unwrap();
        let n = m.nr_cpus();
        let legacy = kernel_with(m.clone(), feats(true));
        let seed = kernel_with(m, feats(false));
        // Every CPU as the waker, a spread of prev CPUs (all of them on small
        // machines).
        let step = (n / 16).max(1);
        for cpu in 0..n {
            for prev in (0..n).step_by(step) {
                for kind in [WakeKind::Wakeup, WakeKind::Fork, WakeKind::Exec] {
                    for want_affine in [false, true] {
                        if want_affine && kind != WakeKind::Wakeup {
                            continue;
                        }
                        let a = legacy.wakeup_domain_walk(cpu, prev, kind, want_affine);
                        let b = seed.wakeup_domain_walk(cpu, prev, kind, want_affine);
                        assert_eq!(
                            (a.sd, a.affine),
                            (b.sd, b.affine),
                            "{name}: cpu {cpu} prev {prev} {kind:?} want_affine={want_affine}"
                        );
                        // The cached pointer is one load; a want_affine wakeup then
                        // walks as far as v5.6 does.
                        if want_affine {
                            assert_eq!(b.visited, a.visited + 1, "{name}");
                        } else {
                            assert_eq!(b.visited, 1, "{name}");
                            assert!(a.visited >= 1, "{name}");
                        }
                    }
                }
            }
        }
    }
}

fn scenario(machine: &str, body: &str, legacy: bool) -> Scenario {
    let f = if legacy {
        "LEGACY_SD_FLAG"
    } else {
        "NO_LEGACY_SD_FLAG"
    };
    let text = format!(
        "[machine]\npreset = \"{machine}\"\n[kernel]\nfeatures = [\"{f}\"]\n[run]\nseed = 5\n[workload]\n{body}"
    );
    let doc = Doc::parse(&text, Path::new("t.toml")).unwrap();
    let mut sc = Scenario::from_doc(doc, &Overrides::default()).unwrap();
    // The walks differ in cost only; with a free walk the runs must not diverge.
    sc.machine.cost.domain_visit = 0;
    sc
}

#[test]
fn identical_decision_traces_on_every_preset() {
    let opts = RunOpts {
        trace: true,
        ..Default::default()
    };
    for (name, _) in presets::preset_names() {
        for body in [
            "kind = \"hackbench\"\ngroups = 2\nfds = 4\nloops = 10\n",
            "kind = \"perf-pipe\"\nloops = 200\n",
        ] {
            let traces: Vec<String> = [true, false]
                .iter()
                .map(|&legacy| {
                    let sc = scenario(name, body, legacy);
                    experiment::run(&sc, sc.seed, 0, &opts).unwrap().1.unwrap()
                })
                .collect();
            let n = traces[0].lines().filter(|l| l.contains(" place ")).count();
            assert!(n >= 10, "{name} `{body}`: {n} placements in the trace");
            if traces[0] != traces[1] {
                let (i, (a, b)) = traces[0]
                    .lines()
                    .zip(traces[1].lines())
                    .enumerate()
                    .find(|(_, (a, b))| a != b)
                    .expect("traces differ in length only");
                panic!("{name} `{body}`: line {i}\n legacy: {a}\n seed:   {b}");
            }
        }
    }
}

/// The corner case. 2 nodes × 2 cores × SMT2 (SMT, MC, NUMA). With SD_WAKE_AFFINE
/// removed everywhere (so a want_affine wakeup finds no affine domain) and
/// SD_BALANCE_WAKE on SMT and NUMA but not MC: v5.6 keeps the *last* flagged
/// domain (NUMA) across the gap; seed 002 uses `highest_flag_domain` (SMT, the top
/// of the contiguous run from the bottom).
fn gap_kernel(legacy: bool) -> Kernel<Rec> {
    let mut k = kernel_with(test_topology(2, 1, 2, 2), feats(legacy));
    let names: Vec<&str> = k
        .topology()
        .domains_of(0)
        .map(|d| k.topology().domains[d].name)
        .collect();
    assert_eq!(names, vec!["SMT", "MC", "NUMA"]);
    for d in &mut k.topology_mut().domains {
        d.flags &= !SD_WAKE_AFFINE;
        if d.name == "MC" {
            d.flags &= !SD_BALANCE_WAKE;
        } else {
            d.flags |= SD_BALANCE_WAKE;
        }
    }
    k.topology_mut().update_balance_shortcuts();
    k
}

#[test]
fn the_flag_gap_corner_case() {
    let legacy = gap_kernel(true);
    let seed = gap_kernel(false);
    let name = |k: &Kernel<Rec>, d: Option<usize>| d.map(|d| k.topology().domains[d].name);
    let a = legacy.wakeup_domain_walk(0, 1, WakeKind::Wakeup, true);
    let b = seed.wakeup_domain_walk(0, 1, WakeKind::Wakeup, true);
    assert_eq!(name(&legacy, a.sd), Some("NUMA"));
    assert_eq!(name(&seed, b.sd), Some("SMT"));
    assert_eq!((a.affine, b.affine), (None, None));
    // Without want_affine both stop at the gap.
    let a = legacy.wakeup_domain_walk(0, 1, WakeKind::Wakeup, false);
    let b = seed.wakeup_domain_walk(0, 1, WakeKind::Wakeup, false);
    assert_eq!(
        (name(&legacy, a.sd), name(&seed, b.sd)),
        (Some("SMT"), Some("SMT"))
    );

    // The placement differs: node 0 (CPUs 0-3) busy, node 1 idle. A wakeup on CPU 0
    // of a task last on CPU 1: v5.6's slow path from NUMA goes to node 1; seed 002's
    // from SMT stays in core {0,1}.
    let mut got = vec![];
    for mut k in [gap_kernel(true), gap_kernel(false)] {
        let w = k.create_task(
            "w",
            None,
            false,
            0,
            schedlab::sched::core::Policy::Normal,
            all(&k),
        );
        k.task_mut(w).cpu = 0;
        k.cpu_rq_mut(0).curr = Some(w);
        for c in 0..4 {
            busy(&mut k, c);
        }
        let p = sleeper_any(&mut k, 1);
        let mut q = EventQueue::default();
        got.push(k.select_task_rq_fair(p, 1, WF_TTWU, 0, &mut q));
    }
    assert!(got[0] >= 4, "v5.6 balances across nodes: {got:?}");
    assert!(got[1] < 2, "seed 002 stays in the SMT core: {got:?}");
}

/// Fork on 2 nodes × 2 cores × SMT2: v5.6 walks SMT, MC, NUMA (all carry
/// SD_BALANCE_FORK) and one step more is not needed (the chain ends); seed 002
/// loads `sd_balance_fork`. 3 visits vs 1, at `domain_visit` = 4 ns each.
#[test]
fn a_fork_walks_one_cached_pointer() {
    let legacy = kernel_with(test_topology(2, 1, 2, 2), feats(true));
    let seed = kernel_with(test_topology(2, 1, 2, 2), feats(false));
    let a = legacy.wakeup_domain_walk(0, 0, WakeKind::Fork, false);
    let b = seed.wakeup_domain_walk(0, 0, WakeKind::Fork, false);
    assert_eq!(a.sd, b.sd);
    assert_eq!((a.visited, b.visited), (3, 1));
    // End to end: the same fork costs 8 ns less in select_task_rq_fair.
    let mut costs = vec![];
    for mut k in [legacy, seed] {
        let p = k.create_task(
            "c",
            None,
            false,
            0,
            schedlab::sched::core::Policy::Normal,
            all(&k),
        );
        let mut q = EventQueue::default();
        k.select_task_rq_fair(p, 0, WF_FORK, 0, &mut q);
        costs.push(
            last_call(&k, schedlab::sched::Func::SelectTaskRqFair)
                .unwrap()
                .1,
        );
    }
    assert_eq!(costs[0] - costs[1], 8);
}
