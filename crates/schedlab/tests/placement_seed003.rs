//! Seed 003, `SMT_BALANCE` (Subhra Mazumdar, RFC v3, 2018): hand-computed
//! `smt_balance` cases on SMT2 (`test_topology(1, 1, 4, 2)`: cores {0,1} {2,3}
//! {4,5} {6,7}; probe costs smt 10 / llc 25 ns) and SMT4 (`test_topology(1, 1, 2,
//! 4)`: cores {0..3} {4..7}), the utilization counters against the true busy counts
//! at every event of whole runs (`--check`) on the seed-scale machines, and the
//! O(levels) cost.

mod placement_common;
use placement_common::*;

use proptest::prelude::*;
use schedlab::config::Doc;
use schedlab::experiment::{self, Overrides, RunOpts, Scenario};
use schedlab::machine::presets::test_topology;
use schedlab::sched::core::Kernel;
use schedlab::sched::features::{Features, SchedFeat};
use schedlab::sched::Func;
use std::path::Path;

fn feats() -> Features {
    let mut f = Features::v5_6();
    f.set(SchedFeat::SMT_BALANCE, true);
    f
}

/// Busy CPUs as the scheduler would leave them: `nr_running` and the group
/// utilization (through `smt_util`, as the switch to a task applies it).
fn set_busy(k: &mut Kernel<Rec>, cpus: &[usize]) {
    for &c in cpus {
        busy(k, c);
        k.smt_util(c, 0, 1);
    }
}

fn core_util(k: &Kernel<Rec>, cpu: usize) -> i32 {
    let g = k.smtb().util_groups(cpu);
    assert_eq!(g.len(), 1, "one level (MC) between the LLC and SMT");
    k.smtb().utilization[g[0]]
}

/// The MC ring seen from CPU 2 starts at its own core and wraps in CPU order.
#[test]
fn the_group_ring_starts_at_the_local_core() {
    let k = kernel_with(test_topology(1, 1, 4, 2), feats());
    let llc = k.topology().sd_llc[2].unwrap();
    let firsts: Vec<usize> = k.topology().domains[llc]
        .groups
        .iter()
        .map(|&g| k.topology().groups[g].span.first().unwrap())
        .collect();
    assert_eq!(firsts, vec![2, 4, 6, 0]);
}

/// Busy {0, 1, 2, 4}; target 2, waker 4 (rotor 0). Ring from 2: {2,3} {4,5} {6,7}
/// {0,1}; start 0 % 4 = 0 is the local group, so "there" = {4,5}. Free: here
/// 2 − 1 = 1, there 2 − 1 = 1: no move. Target busy → core {2,3} from
/// cp_array[1 % 2] = 3: idle. Probes: utilization of {2,3} (CPU 2, llc 32) and
/// {4,5} (CPU 4 = waker, smt 13), CPU 3 (llc 32): 77 ns.
#[test]
fn smt2_no_move_then_an_idle_sibling_of_the_target() {
    let mut k = kernel_with(test_topology(1, 1, 4, 2), feats());
    set_busy(&mut k, &[0, 1, 2, 4]);
    assert_eq!(
        (core_util(&k, 2), core_util(&k, 4), core_util(&k, 0)),
        (1, 1, 2)
    );
    let p = sleeper_any(&mut k, 2);
    let (cpu, why, pr) = k.select_idle_sibling(p, 2, 2, 4);
    assert_eq!((cpu, why), (3, "smt_balance"));
    assert_eq!(last_call(&k, Func::SmtBalance), Some((3, 77)));
    assert_eq!(last_call(&k, Func::SelectIdleSmt), Some((1, 32)));
    // target + prev (= target, not re-read) + smt_balance.
    assert_eq!(pr.probed, 1 + 3);
    assert_eq!(k.cpu_rq(4).rotor, 2, "two draws from the waker's rotor");
    assert_eq!(last_call(&k, Func::SelectIdleCpu), None, "no LLC scan");
}

/// Busy {0, 1, 2, 3, 4}: here {2,3} has 0 free, there {4,5} has 1: move. CPU =
/// first allowed of {4,5} from cp_array[1 % 2] = 5. The lowest domain of 5 wider
/// than 2 CPUs is MC, whose child (SMT, level 0) ends the walk. Balanced → core
/// {4,5} from cp_array[2 % 2] = 4: 4 busy, 5 idle.
#[test]
fn smt2_moves_to_the_core_with_more_free_cpus() {
    let mut k = kernel_with(test_topology(1, 1, 4, 2), feats());
    set_busy(&mut k, &[0, 1, 2, 3, 4]);
    let p = sleeper_any(&mut k, 2);
    let (cpu, why, _) = k.select_idle_sibling(p, 2, 2, 4);
    assert_eq!((cpu, why), (5, "smt_balance"));
    // Waker 4 and its sibling 5: 2 × smt 13.
    assert_eq!(last_call(&k, Func::SelectIdleSmt), Some((2, 26)));
    assert_eq!(k.cpu_rq(4).rotor, 3);
}

/// Everything busy: no group has more room, the target's core has no idle CPU:
/// the original target.
#[test]
fn smt2_nothing_free_returns_the_target() {
    let mut k = kernel_with(test_topology(1, 1, 4, 2), feats());
    set_busy(&mut k, &[0, 1, 2, 3, 4, 5, 6, 7]);
    let p = sleeper_any(&mut k, 2);
    let (cpu, why, _) = k.select_idle_sibling(p, 2, 2, 4);
    assert_eq!((cpu, why), (2, "affine_fallback"));
}

/// "There" must meet the affinity: allowed {0..3}, start at the local group →
/// {4,5} and {6,7} are passed over, {0,1} (2 free vs 0) wins; CPU from
/// cp_array[1] = 1, then core {0,1} from cp_array[0] = 0.
#[test]
fn smt2_the_other_group_must_meet_the_affinity() {
    let mut k = kernel_with(test_topology(1, 1, 4, 2), feats());
    set_busy(&mut k, &[2, 3, 4]);
    let p = sleeper(&mut k, 2, mask(&[0, 1, 2, 3]));
    let (cpu, why, _) = k.select_idle_sibling(p, 2, 2, 4);
    assert_eq!((cpu, why), (0, "smt_balance"));
}

/// When the wakee is the waker's current task, the waker's own busy CPU is not
/// counted against the group holding it: with busy {0, 1, 2, 4} "there" = {4,5}
/// counts 0 busy, so 2 free > 1 and the task moves (it stays put without the
/// discount, see `smt2_no_move_then_an_idle_sibling_of_the_target`).
#[test]
fn smt2_the_wakers_own_cpu_is_discounted() {
    let mut k = kernel_with(test_topology(1, 1, 4, 2), feats());
    set_busy(&mut k, &[0, 1, 2, 4]);
    let p = sleeper_any(&mut k, 2);
    k.cpu_rq_mut(4).curr = Some(p);
    k.sync_idle_bits(4);
    let sd = k.topology().sd_llc[2].unwrap();
    let (cpu, why, _) = k.smt_balance(p, sd, 2, 4);
    // Moved to {4,5} (cp_array[1] = 5); core {4,5} from cp_array[0] = 4 (busy) → 5.
    assert_eq!((cpu, why), (5, "smt_balance"));
}

/// SMT4, busy {0, 1, 2, 4}, target 0, waker 4. Ring from 0: {0..3} {4..7}; "there"
/// = {4..7} with 3 free > 1: move to cp_array[1 % 4] = 5; core {4..7} from
/// cp_array[2 % 4] = 6: idle.
#[test]
fn smt4_moves_and_searches_one_core_from_a_rotor_start() {
    let mut k = kernel_with(test_topology(1, 1, 2, 4), feats());
    set_busy(&mut k, &[0, 1, 2, 4]);
    assert_eq!((core_util(&k, 0), core_util(&k, 7)), (3, 1));
    let p = sleeper_any(&mut k, 0);
    let (cpu, why, _) = k.select_idle_sibling(p, 0, 0, 4);
    assert_eq!((cpu, why), (6, "smt_balance"));
    // A sibling of the waker 4: smt 13.
    assert_eq!(last_call(&k, Func::SelectIdleSmt), Some((1, 13)));
}

/// `smt_util`: the first call counts the previous state as idle; busy → idle
/// and idle → busy move the core's counter by one.
#[test]
fn smt_util_moves_the_local_group_counters() {
    let mut k = kernel_with(test_topology(1, 1, 4, 2), feats());
    assert_eq!(k.cpu_rq(3).curr_util, -1);
    k.smt_util(3, 1, 0); // uninitialised: 0 → 0, no change
    assert_eq!((core_util(&k, 3), k.cpu_rq(3).curr_util), (0, 0));
    k.smt_util(3, 0, 1);
    k.smt_util(2, 0, 1);
    assert_eq!(core_util(&k, 2), 2);
    k.smt_util(3, 1, 0);
    assert_eq!((core_util(&k, 2), core_util(&k, 4)), (1, 0));
}

/// Without SMT the feature leaves the v5.6 path untouched.
#[test]
fn no_smt_keeps_the_v5_6_scans() {
    let mut k = kernel_with(test_topology(1, 1, 4, 1), feats());
    set_busy(&mut k, &[0, 1]);
    let p = sleeper_any(&mut k, 1);
    let (cpu, why, _) = k.select_idle_sibling(p, 1, 1, 0);
    assert_eq!((cpu, why), (2, "idle_cpu"));
    assert_eq!(last_call(&k, Func::SmtBalance), None);
}

fn scenario(machine: &str, body: &str) -> Scenario {
    let text = format!(
        "[machine]\npreset = \"{machine}\"\n[kernel]\nfeatures = [\"SMT_BALANCE\"]\n[run]\nseed = 3\nduration_ms = 20\n[workload]\n{body}"
    );
    let doc = Doc::parse(&text, Path::new("t.toml")).unwrap();
    Scenario::from_doc(doc, &Overrides::default()).unwrap()
}

/// Whole runs with invariants checked after every event (which include the
/// utilization of every tracked group against its busy CPUs), on the seed 003
/// machine and the large-LLC presets; and the cost stays O(levels): at most two
/// utilization reads per level between the LLC and the core plus one core.
#[test]
fn counters_stay_exact_and_cost_is_per_level_on_big_machines() {
    for m in ["xeon-88", "spr-224", "epyc-192", "power9-176"] {
        let sc = scenario(m, "kind = \"hackbench\"\ngroups = 4\nloops = 20\n");
        let opts = RunOpts {
            check: true,
            ..Default::default()
        };
        let r = experiment::run(&sc, sc.seed, 0, &opts).unwrap().0;
        let f = &r.metrics.functions["smt_balance"];
        assert!(f.calls > 100, "{m}: smt_balance ran");
        let mach = &sc.machine;
        let cpu = 0;
        let levels = {
            let sim = experiment::build(&sc, 1, 0, &RunOpts::default());
            let k = sim.kernel();
            k.smtb().util_groups(cpu).len()
        };
        let core = mach.smt_mask(cpu).weight();
        let bound = (2 * levels + core) as f64;
        let mean = f.cpus_probed as f64 / f.calls as f64;
        assert!(mean <= bound, "{m}: {mean} probes per call > {bound}");
        assert!(!r.metrics.functions.contains_key("select_idle_cpu"), "{m}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    /// Random states on SMT2/SMT4 machines of 2–5 cores: the answer is allowed, an
    /// idle CPU whenever it differs from the target, in the target's LLC.
    #[test]
    fn smt_balance_answers_are_valid(
        smt in prop_oneof![Just(2usize), Just(4usize)],
        cores in 2usize..6,
        busy_bits in any::<u32>(),
        allowed_bits in any::<u32>(),
        target_pick in any::<u32>(),
        waker_pick in any::<u32>(),
        rotor in any::<u32>(),
    ) {
        let n = smt * cores;
        let mut k = kernel_with(test_topology(1, 1, cores, smt), feats());
        let busy_cpus: Vec<usize> = (0..n).filter(|c| busy_bits >> c & 1 == 1).collect();
        set_busy(&mut k, &busy_cpus);
        let target = target_pick as usize % n;
        let waker = waker_pick as usize % n;
        k.cpu_rq_mut(waker).rotor = rotor;
        let mut allowed = mask(&(0..n).filter(|c| allowed_bits >> c & 1 == 1).collect::<Vec<_>>());
        allowed.set(target);
        let p = sleeper(&mut k, target, allowed);
        let (cpu, _, _) = k.select_idle_sibling(p, target, target, waker);
        prop_assert!(allowed.test(cpu));
        if cpu != target {
            prop_assert!(k.available_idle_cpu(cpu) || k.idle_or_sched_idle(cpu));
        }
        if let Some((probed, _)) = last_call(&k, Func::SmtBalance) {
            prop_assert!(probed as usize <= 2 + smt);
        }
    }
}

/// `[run] shadow`, hand-computed. Busy {0, 1, 2, 3, 4} on SMT2 (cores {0,1} {2,3}
/// {4,5} {6,7}), target = prev = 2, waker 4. v5.6 with the idle-core hint clear:
/// `select_idle_cpu` from 2 finds 5; seed 003's `smt_balance` moves to {4,5} and
/// finds 5 (`smt2_moves_to_the_core_with_more_free_cpus`): the same CPU. With the
/// hint set, `select_idle_core` finds core {6,7} first (CPU 6): another core. The
/// shadow changes nothing: the waker's rotor, the hint and the reported calls are
/// those of the v5.6 scans alone.
#[test]
fn shadow_counts_the_other_arms_choice_without_effect() {
    let mut k = kernel_with(test_topology(1, 1, 4, 2), Features::v5_6());
    k.set_shadow(Some(SchedFeat::SMT_BALANCE));
    set_busy(&mut k, &[0, 1, 2, 3, 4]);
    k.set_idle_cores(2, false);
    let p = sleeper_any(&mut k, 2);
    let (cpu, why, _) = k.select_idle_sibling(p, 2, 2, 4);
    assert_eq!((cpu, why), (5, "idle_cpu"));
    let s = k.shadow_stats();
    assert_eq!((s.calls, s.reached, s.same_cpu, s.same_core), (1, 1, 1, 0));
    assert_eq!(k.cpu_rq(4).rotor, 0, "the shadow's draws are given back");
    assert_eq!(
        last_call(&k, Func::SmtBalance),
        None,
        "the shadow reports no call"
    );

    k.set_idle_cores(2, true);
    let (cpu, why, _) = k.select_idle_sibling(p, 2, 2, 4);
    assert_eq!((cpu, why), (6, "idle_core"));
    let s = k.shadow_stats();
    assert_eq!(
        (s.calls, s.reached, s.same_cpu, s.other_core()),
        (2, 2, 1, 1)
    );
}

/// The other way round: seed 003 runs, v5.6 is the shadow. Busy {0,1,2,3,4,6}
/// with the hint set: `smt_balance` moves to {4,5} (1 free against 0) and finds 5;
/// v5.6's `select_idle_core` finds no idle core and clears the hint, then
/// `select_idle_cpu` finds 5: the same CPU, and the hint is set again after it.
/// An idle target never reaches the scans.
#[test]
fn shadow_of_v5_6_restores_the_idle_core_hint() {
    let mut k = kernel_with(test_topology(1, 1, 4, 2), feats());
    k.set_shadow(Some(SchedFeat::SMT_BALANCE));
    set_busy(&mut k, &[0, 1, 2, 3, 4, 6]);
    k.set_idle_cores(2, true);
    let p = sleeper_any(&mut k, 2);
    let (cpu, why, _) = k.select_idle_sibling(p, 2, 2, 4);
    assert_eq!((cpu, why), (5, "smt_balance"));
    assert!(
        k.test_idle_cores(2, false),
        "the shadow's fruitless core scan undone"
    );
    assert_eq!(last_call(&k, Func::SelectIdleCore), None);
    let s = k.shadow_stats();
    assert_eq!((s.reached, s.same_cpu), (1, 1));
    let q = sleeper_any(&mut k, 5);
    let (cpu, why, _) = k.select_idle_sibling(q, 5, 5, 4);
    assert_eq!((cpu, why), (5, "target_idle"));
    let s = k.shadow_stats();
    assert_eq!((s.calls, s.reached), (2, 1));
}

/// A whole run with the shadow on is the run without it, byte for byte, but for
/// the shadow's counts (and the wall time): on seed 003's hackbench, where the
/// scans run tens of thousands of times and the two arms often differ.
#[test]
fn shadow_leaves_the_run_unchanged() {
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/seeds/003-hackbench-16.toml");
    let load = |extra: &[&str]| {
        let mut sets: Vec<String> = ["workload.groups=4", "workload.loops=60", "run.noise=0.05"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        sets.extend(extra.iter().map(|s| s.to_string()));
        Scenario::load(
            &path,
            &Overrides {
                sets,
                ..Overrides::default()
            },
        )
        .unwrap()
    };
    let run = |sc: &Scenario| {
        let (mut r, _) = experiment::run(sc, sc.seed, 0, &RunOpts::default()).unwrap();
        r.wall_seconds = 0.0;
        r
    };
    let plain = run(&load(&[]));
    let mut shadowed = run(&load(&["run.shadow=\"SMT_BALANCE\""]));
    let sh = shadowed.metrics.sis_shadow.take().expect("counted");
    assert_eq!(sh.feature, "SMT_BALANCE");
    assert!(sh.counts.reached > 1000, "{:?}", sh.counts);
    assert!(sh.counts.other_core() > 0, "{:?}", sh.counts);
    assert!(sh.counts.reached <= sh.counts.calls);
    assert_eq!(plain.to_json(), shadowed.to_json());
}

/// A feature that is not a scan feature is refused with the key's place.
#[test]
fn shadow_names_a_scan_feature() {
    let doc = Doc::parse(
        "[machine]\npreset = \"xeon-88\"\n[run]\nshadow = \"MISFIT\"\n[workload]\nkind = \"hackbench\"\n",
        Path::new("s.toml"),
    )
    .unwrap();
    let e = Scenario::from_doc(doc, &Overrides::default()).unwrap_err();
    let msg = e.to_string();
    assert!(
        msg.contains("s.toml") && msg.contains("run.shadow"),
        "{msg}"
    );
}
