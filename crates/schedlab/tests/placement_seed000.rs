//! Seed 000, `IDLE_CPU_MASK` (Parth Shah, "Optimize the idle CPU search", RFC,
//! July 2019): after a fruitless `select_idle_core`, `select_idle_cpu` walks only
//! the CPUs the core scan did not see busy. Hand-computed cases on SMT2
//! (`test_topology(1, 1, 4, 2)`: cores {0,1} {2,3} {4,5} {6,7}) and SMT4
//! (`test_topology(1, 1, 2, 4)`: cores {0..3} {4..7}), then a differential property
//! against the v5.6 baseline on the same runqueue state.

mod placement_common;
use placement_common::*;

use proptest::prelude::*;
use schedlab::machine::presets::test_topology;
use schedlab::sched::core::Kernel;
use schedlab::sched::features::{Features, SchedFeat};
use schedlab::sched::{Func, SchedEvent};

fn feats(idle_cpu_mask: bool) -> Features {
    let mut f = Features::v5_6();
    f.set(SchedFeat::IDLE_CPU_MASK, idle_cpu_mask);
    f
}

/// The `skipped` count of the last `select_idle_cpu` call.
fn last_skipped(k: &Kernel<Rec>) -> u32 {
    k.observer()
        .0
        .iter()
        .rev()
        .find_map(|e| match *e {
            SchedEvent::FuncCall {
                func: Func::SelectIdleCpu,
                skipped,
                ..
            } => Some(skipped),
            _ => None,
        })
        .expect("a select_idle_cpu call")
}

/// SMT2, busy {0, 2, 3, 4, 6}, idle {1, 5, 7}; waker 0, wakee last on 2 = target.
/// Core scan from 2 (hint set): cores {2,3} {4,5} {6,7} {0,1}, 8 probes, none
/// fully idle. Baseline `select_idle_cpu` from 2: 2, 3, 4 busy, 5 idle → CPU 5 in
/// 4 probes. Seed 000: the mask is {1, 5, 7}; from 2 the walk visits 5 → CPU 5 in
/// 1 probe, 5 CPUs (0, 2, 3, 4, 6) skipped.
#[test]
fn smt2_select_idle_cpu_skips_the_cpus_the_core_scan_saw_busy() {
    for (on, probes, skipped) in [(false, 4, 0), (true, 1, 5)] {
        let mut k = kernel_with(test_topology(1, 1, 4, 2), feats(on));
        for c in [0, 2, 3, 4, 6] {
            busy(&mut k, c);
        }
        k.cpu_rq_mut(0).avg_idle = 1_000_000;
        k.set_idle_cores(2, true);
        let p = sleeper_any(&mut k, 2);
        let (cpu, why, _) = k.select_idle_sibling(p, 2, 2, 0);
        assert_eq!((cpu, why), (5, "idle_cpu"), "IDLE_CPU_MASK={on}");
        assert_eq!(last_call(&k, Func::SelectIdleCore).unwrap().0, 8);
        let (probed, cost) = last_call(&k, Func::SelectIdleCpu).unwrap();
        assert_eq!(probed, probes, "IDLE_CPU_MASK={on}");
        // Waker 0 is in core {0,1}: every probed CPU here is in the LLC, outside
        // the waker's core (probe_llc = 32 ns).
        assert_eq!(cost, 32 * probes as u64);
        assert_eq!(last_skipped(&k), skipped);
    }
}

/// SMT4, busy {0, 4, 5}, idle {1, 2, 3, 6, 7}; target 4, waker 0. Core scan from 4:
/// core {4..7} (4, 5 busy), core {0..3} (0 busy): 8 probes, fruitless. Baseline
/// `select_idle_cpu` from 4: 4, 5 busy, 6 idle → 3 probes. Seed 000: mask
/// {1, 2, 3, 6, 7}, from 4 → 6 in 1 probe, 3 skipped.
#[test]
fn smt4_select_idle_cpu_skips_the_cpus_the_core_scan_saw_busy() {
    for (on, probes, skipped) in [(false, 3, 0), (true, 1, 3)] {
        let mut k = kernel_with(test_topology(1, 1, 2, 4), feats(on));
        assert_eq!(
            k.machine().smt_mask(5).iter().collect::<Vec<_>>(),
            vec![4, 5, 6, 7]
        );
        for c in [0, 4, 5] {
            busy(&mut k, c);
        }
        k.cpu_rq_mut(0).avg_idle = 1_000_000;
        k.set_idle_cores(4, true);
        let p = sleeper_any(&mut k, 4);
        let (cpu, why, _) = k.select_idle_sibling(p, 4, 4, 0);
        assert_eq!((cpu, why), (6, "idle_cpu"), "IDLE_CPU_MASK={on}");
        assert_eq!(last_call(&k, Func::SelectIdleCore).unwrap().0, 8);
        assert_eq!(last_call(&k, Func::SelectIdleCpu).unwrap().0, probes);
        assert_eq!(last_skipped(&k), skipped);
    }
}

/// Without the idle-core hint the core scan does not run, so there is no mask:
/// `select_idle_cpu` is the v5.6 scan (the spec's reading of the RFC).
#[test]
fn without_a_core_scan_the_cpu_scan_is_the_baseline() {
    let mut k = kernel_with(test_topology(1, 1, 4, 2), feats(true));
    for c in [0, 2, 3, 4, 6] {
        busy(&mut k, c);
    }
    k.cpu_rq_mut(0).avg_idle = 1_000_000;
    k.set_idle_cores(2, false);
    let p = sleeper_any(&mut k, 2);
    let (cpu, _, _) = k.select_idle_sibling(p, 2, 2, 0);
    assert_eq!(cpu, 5);
    assert_eq!(last_call(&k, Func::SelectIdleCore).unwrap().0, 0);
    assert_eq!(last_call(&k, Func::SelectIdleCpu).unwrap().0, 4);
    assert_eq!(last_skipped(&k), 0);
}

/// A SCHED_IDLE-only CPU is not `available_idle`, so the core scan clears it: the
/// baseline's `select_idle_cpu` may take it, seed 000's never does (it takes the
/// next truly idle CPU, or falls through).
#[test]
fn sched_idle_cpus_seen_by_the_core_scan_are_left_out() {
    for (on, want) in [(false, 3), (true, 5)] {
        let mut k = kernel_with(test_topology(1, 1, 4, 2), feats(on));
        for c in [0, 2, 4, 6] {
            busy(&mut k, c);
        }
        sched_idle(&mut k, 3);
        k.cpu_rq_mut(0).avg_idle = 1_000_000;
        k.set_idle_cores(2, true);
        let p = sleeper_any(&mut k, 2);
        let (cpu, _, _) = k.select_idle_sibling(p, 2, 2, 0);
        assert_eq!(cpu, want, "IDLE_CPU_MASK={on}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    /// On SMT2 and SMT4 machines with every core partly busy (so the core scan
    /// fails), the idle-core hint set and no scan budget: seed 000 picks the same
    /// CPU as the baseline (a CPU the baseline considers idle), and probes strictly
    /// fewer CPUs in `select_idle_cpu` (the busy target is never re-probed).
    #[test]
    fn idle_cpu_mask_agrees_with_the_baseline_and_probes_fewer(
        smt in prop_oneof![Just(2usize), Just(4usize)],
        cores in 2usize..6,
        idle_bits in any::<u32>(),
        busy_pick in any::<u32>(),
        target_pick in any::<u32>(),
        waker_pick in any::<u32>(),
    ) {
        let n = smt * cores;
        // Every core gets at least one busy CPU.
        let mut busy_cpus: Vec<usize> = (0..n).filter(|c| idle_bits >> c & 1 == 0).collect();
        for core in 0..cores {
            let first = core * smt;
            if !(first..first + smt).any(|c| busy_cpus.contains(&c)) {
                busy_cpus.push(first + (busy_pick as usize >> core) % smt);
            }
        }
        // The target is busy (else select_idle_sibling stops at step 1).
        let target = busy_cpus[target_pick as usize % busy_cpus.len()];
        let waker = waker_pick as usize % n;
        let mut results = vec![];
        for on in [false, true] {
            let mut f = feats(on);
            f.set(SchedFeat::SIS_PROP, false);
            let mut k = kernel_with(test_topology(1, 1, cores, smt), f);
            for &c in &busy_cpus {
                busy(&mut k, c);
            }
            k.set_idle_cores(target, true);
            let p = sleeper_any(&mut k, target);
            let (cpu, _, _) = k.select_idle_sibling(p, target, target, waker);
            let probed = last_call(&k, Func::SelectIdleCpu).map(|c| c.0);
            if cpu != target {
                prop_assert!(k.available_idle_cpu(cpu));
            }
            results.push((cpu, probed));
        }
        let (base, seed) = (results[0], results[1]);
        prop_assert_eq!(base.0, seed.0);
        prop_assert!(seed.1.unwrap() < base.1.unwrap(), "{:?} vs {:?}", seed, base);
    }
}
