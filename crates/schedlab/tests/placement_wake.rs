//! `select_task_rq_fair` (v5.6): record_wakee / wake_wide, wake_affine_idle /
//! wake_affine_weight arithmetic, the domain walk (fast path vs slow path), the
//! waker's recent_used_cpu, wake_cap on an asymmetric machine, and the one
//! Placement + FuncCall per decision.

mod placement_common;
use placement_common::*;

use schedlab::engine::EventQueue;
use schedlab::machine::presets::{test_asym, test_topology};
use schedlab::sched::core::{Kernel, Policy};
use schedlab::sched::fair::wakeup::{
    wake_affine_weight_calc, wake_wide_flips, Probes, WakeAffineWeightIn,
};
use schedlab::sched::features::{Features, SchedFeat};
use schedlab::sched::{Func, Pid, SchedEvent, WF_EXEC, WF_FORK, WF_SYNC, WF_TTWU};

/// A waker task running on `cpu` (counted busy).
fn waker(k: &mut Kernel<Rec>, cpu: usize) -> Pid {
    let a = all(k);
    let w = k.create_task("w", None, false, 0, Policy::Normal, a);
    k.task_mut(w).cpu = cpu;
    k.cpu_rq_mut(cpu).curr = Some(w);
    k.cpu_rq_mut(cpu).nr_running = 1;
    k.sync_idle_bits(cpu);
    w
}

#[test]
fn wake_wide_cases() {
    // factor = sd_llc_size; wide iff slave >= factor and master >= slave × factor.
    assert!(!wake_wide_flips(100, 3, 4), "slave below the LLC size");
    assert!(!wake_wide_flips(15, 4, 4), "master < 16");
    assert!(wake_wide_flips(16, 4, 4));
    assert!(wake_wide_flips(1000, 8, 8));
    assert!(!wake_wide_flips(63, 8, 8));
    assert!(!wake_wide_flips(0, 0, 1), "slave 0 < 1");
    assert!(wake_wide_flips(1, 1, 1));
}

#[test]
fn record_wakee_counts_flips_and_decays_once_per_second() {
    let mut k = kernel(test_topology(1, 1, 4, 2));
    let w = waker(&mut k, 0);
    let a = sleeper_any(&mut k, 2);
    let b = sleeper_any(&mut k, 3);
    k.record_wakee(a, Some(w));
    k.record_wakee(a, Some(w)); // same wakee: no flip
    k.record_wakee(b, Some(w));
    k.record_wakee(a, Some(w));
    assert_eq!(k.task(w).wakee_flips, 3);
    // HZ = 250: jiffy 250 is not after decay_ts (0) + HZ; jiffy 251 is.
    let tick = k.tunables().tick_nsec();
    assert_eq!(k.tunables().hz, 250);
    k.set_clock(250 * tick);
    k.record_wakee(a, Some(w));
    assert_eq!(k.task(w).wakee_flips, 3, "no decay yet, same wakee");
    k.set_clock(251 * tick);
    k.record_wakee(b, Some(w));
    // 3 >> 1 = 1, then +1 for the new wakee.
    assert_eq!(k.task(w).wakee_flips, 2);
    assert_eq!(k.task(w).wakee_flip_decay_ts, 251);
    // Halves at most once per call even after a long gap.
    k.set_clock(10_000 * tick);
    k.record_wakee(b, Some(w));
    assert_eq!(k.task(w).wakee_flips, 1);
}

fn wa(this: u64, prev: u64, cur: Option<u64>, task: u64) -> WakeAffineWeightIn {
    WakeAffineWeightIn {
        this_load: this,
        prev_load: prev,
        current_load: cur,
        task_load: task,
        this_capacity: 1024,
        prev_capacity: 1024,
        imbalance_pct: 117,
        wa_bias: true,
        tie_affine: false,
    }
}

#[test]
fn wake_affine_weight_arithmetic() {
    // this (1024 + 1024) × 100 × 1024 = 209715200 vs (2048 - 1024) × 108 × 1024 =
    // 113246208: stay.
    assert!(!wake_affine_weight_calc(&wa(1024, 2048, None, 1024)));
    // 512 × 100 × 1024 = 52428800 < 1536 × 108 × 1024 = 169869312: pull.
    assert!(wake_affine_weight_calc(&wa(0, 2048, None, 512)));
    // prev_eff negative (100 - 500): never pull.
    assert!(!wake_affine_weight_calc(&wa(0, 100, None, 500)));
    // Sync: the waker's load above this CPU's load pulls at once.
    assert!(wake_affine_weight_calc(&wa(500, 0, Some(600), 0)));
    // Sync tie: this_eff 0 vs prev_eff 0 + 1: pull; without sync 0 < 0 is false.
    assert!(wake_affine_weight_calc(&wa(1024, 0, Some(1024), 0)));
    assert!(!wake_affine_weight_calc(&wa(0, 0, None, 0)));
    // WA_BIAS: 1050 vs 1000 loses without the bias, wins with 105000 < 108000.
    let mut i = wa(1050, 1000, None, 0);
    assert!(wake_affine_weight_calc(&i));
    i.wa_bias = false;
    assert!(!wake_affine_weight_calc(&i));
    // Capacities cross-multiply: this CPU half as big doubles prev's side.
    let mut i = wa(600, 1000, None, 0);
    i.wa_bias = false;
    assert!(wake_affine_weight_calc(&i)); // 600×1024 < 1000×1024
    i.this_capacity = 512;
    assert!(!wake_affine_weight_calc(&i)); // 600×1024 = 614400 > 1000×512
                                           // imbalance_pct 125 (DIE): factor 112.
    let mut i = wa(1100, 1000, None, 0);
    assert!(!wake_affine_weight_calc(&i)); // 110000 vs 108000
    i.imbalance_pct = 125;
    assert!(wake_affine_weight_calc(&i)); // 110000 vs 112000
}

#[test]
fn wake_affine_weight_v4_15_tie_rule() {
    // v4.15 (`tie_affine`): affine on `<=`, no +1 for sync.
    // Non-sync tie: this (0 + 0) × 100 × 1024 = 0 vs (0 − 0) × 108 × 1024 = 0:
    // v5.6 stays (0 < 0 is false), v4.15 pulls.
    let mut i = wa(0, 0, None, 0);
    assert!(!wake_affine_weight_calc(&i));
    i.tie_affine = true;
    assert!(wake_affine_weight_calc(&i));
    // An exact non-zero tie: this (540 + 0) × 100 = 54000, prev 500 × 108 = 54000.
    let mut i = wa(540, 500, None, 0);
    assert!(!wake_affine_weight_calc(&i));
    i.tie_affine = true;
    assert!(wake_affine_weight_calc(&i));
    // One unit beyond the tie stays in both: 541 × 100 = 54100 > 54000.
    let mut i = wa(541, 500, None, 0);
    i.tie_affine = true;
    assert!(!wake_affine_weight_calc(&i));
    // Sync: v5.6's +1 on prev makes a tie pull; v4.15 has no +1 and pulls on the
    // tie itself. this (1024 − 1024 + 0) = 0 vs prev 0: both pull.
    let mut i = wa(1024, 0, Some(1024), 0);
    i.tie_affine = true;
    assert!(wake_affine_weight_calc(&i));
    // Sync where only v5.6's +1 could matter: this_eff 1 × 100 × 1024 = 102400,
    // prev_eff (1 − 0) × 108 × 1024 = 110592: both pull; the +1 never decides a
    // case the `<=` does not (integers: a < b + 1 iff a <= b).
    let mut i = wa(1025, 1, Some(1024), 0);
    assert!(wake_affine_weight_calc(&i));
    i.tie_affine = true;
    assert!(wake_affine_weight_calc(&i));
    // The waker's load above its CPU's load pulls at once in both.
    let mut i = wa(500, 0, Some(600), 0);
    i.tie_affine = true;
    assert!(wake_affine_weight_calc(&i));
}

#[test]
fn wake_affine_weight_v4_15_reads_runnable_load() {
    // Two LLCs of 4 (CPUs 0-3, 4-7). The waker's CPU 0 carries 2000 of load_avg
    // but only 100 runnable (its sleepers' blocked load); prev (CPU 4) carries
    // 600 of both; the wakee's task_h_load is 200 × 600 / 601 = 199. With the top
    // domain's bias b = 100 + (imbalance_pct − 100) / 2 (108 to 112):
    // v5.6 (cpu_load = load_avg): this (2000 + 199) × 100 = 219900 vs prev
    // (600 − 199) × b ≤ 44912: stay on prev. v4.15 (runnable): (100 + 199) × 100
    // = 29900 < (600 − 199) × 108 = 43308: pull to the waker's CPU.
    let setup = |k: &mut Kernel<Rec>| {
        let w = waker(k, 0);
        let p = sleeper_any(k, 4);
        k.task_mut(p).se.avg.load_avg = 200;
        busy(k, 4);
        k.cpu_rq_mut(0).cfs.avg.load_avg = 2000;
        k.cpu_rq_mut(0).cfs.avg.runnable_load_avg = 100;
        k.cpu_rq_mut(4).cfs.avg.load_avg = 600;
        k.cpu_rq_mut(4).cfs.avg.runnable_load_avg = 600;
        (w, p)
    };
    let mut k = kernel(test_topology(1, 2, 4, 1));
    let (w, p) = setup(&mut k);
    let sd = k.topology().domains_of(0).last().unwrap();
    let mut pr = Probes::default();
    assert_eq!(
        k.wake_affine_weight(sd, p, 0, 4, false, Some(w), &mut pr),
        None
    );
    let mut f = Features::v5_6();
    f.set(SchedFeat::WA_WEIGHT_V4_15, true);
    let mut k = kernel_with(test_topology(1, 2, 4, 1), f);
    let (w, p) = setup(&mut k);
    let sd = k.topology().domains_of(0).last().unwrap();
    assert_eq!(
        k.wake_affine_weight(sd, p, 0, 4, false, Some(w), &mut pr),
        Some(0)
    );
}

#[test]
fn wake_affine_idle_rules() {
    let mut k = kernel(test_topology(1, 2, 2, 2));
    let mut pr = Probes::default();
    // CPUs 0-3 LLC 0, 4-7 LLC 1. Idle waker CPU sharing the cache: prev if idle.
    assert_eq!(k.wake_affine_idle(0, 2, false, &mut pr), Some(2));
    assert_eq!(pr.probed, 2);
    busy(&mut k, 2);
    assert_eq!(k.wake_affine_idle(0, 2, false, &mut pr), Some(0));
    // Not sharing the cache: no verdict unless sync with the waker alone.
    assert_eq!(k.wake_affine_idle(0, 5, false, &mut pr), None);
    busy(&mut k, 0);
    assert_eq!(k.wake_affine_idle(0, 5, true, &mut pr), Some(0));
    k.cpu_rq_mut(0).nr_running = 2;
    k.sync_idle_bits(0);
    assert_eq!(k.wake_affine_idle(0, 5, true, &mut pr), None);
}

fn rq_fair(k: &mut Kernel<Rec>, pid: Pid, prev: usize, flags: u32, this: usize) -> usize {
    let mut q = EventQueue::default();
    k.select_task_rq_fair(pid, prev, flags | WF_TTWU, this, &mut q)
}

#[test]
fn affine_wakeup_takes_the_fast_path_and_sets_recent_used() {
    let mut k = kernel(test_topology(1, 1, 4, 2));
    let w = waker(&mut k, 0);
    k.task_mut(w).recent_used_cpu = 6;
    let p = sleeper_any(&mut k, 4);
    let cpu = rq_fair(&mut k, p, 4, 0, 0);
    // Not sync; wake_affine_idle: waker CPU busy -> none; weight: loads 0,
    // prev_eff = -task_load × ... < this_eff -> prev; SIS(prev 4, target 4) idle.
    assert_eq!(cpu, 4);
    assert_eq!(placements(&k), vec![(p, 4, "target_idle")]);
    // Probes: affine_idle 1 (this) + affine_weight 2 + SIS 1; costs smt 13 for own
    // CPU, llc 32 otherwise: 13 + 13 + 32 + 32; plus the v5.6 domain walk up to
    // the affine domain, SMT then MC, at `domain_visit` = 4 ns each: 90 + 8 = 98.
    assert_eq!(last_call(&k, Func::SelectTaskRqFair), Some((4, 98)));
    // The search cost is kernel work on the waker's CPU (1/1024-ns work units).
    assert_eq!(k.cpu_rq(0).kernel_work, 98 << 10);
    assert_eq!(k.cpu_rq(4).kernel_work, 0);
    assert_eq!(k.task(w).recent_used_cpu, 0);
    assert_eq!(k.task(w).wakee_flips, 1);
    assert_eq!(k.task(w).last_wakee, Some(p));
    let placements_n = k
        .observer()
        .0
        .iter()
        .filter(|e| matches!(e, SchedEvent::Placement { .. }))
        .count();
    assert_eq!(placements_n, 1);
}

#[test]
fn sync_wakeup_pulls_to_a_waker_running_alone() {
    // Two LLCs: waker on 0 (LLC 0), wakee prev 5 (LLC 1). With WF_SYNC and the
    // waker alone, wake_affine_idle picks 0; SIS(prev 5, target 0): 0 busy, prev not
    // sharing, then the LLC-0 scans find 2 (idle core {2,3}).
    let mut k = kernel(test_topology(1, 2, 2, 2));
    waker(&mut k, 0);
    let p = sleeper_any(&mut k, 5);
    assert_eq!(rq_fair(&mut k, p, 5, WF_SYNC, 0), 2);
    assert_eq!(placements(&k), vec![(p, 2, "idle_core")]);
    // Without sync the weights keep prev (its load minus the task's is negative).
    let q = sleeper_any(&mut k, 5);
    assert_eq!(rq_fair(&mut k, q, 5, 0, 0), 5);
    assert_eq!(placements(&k)[1], (q, 5, "target_idle"));
}

#[test]
fn wide_wakeup_is_not_affine() {
    let mut k = kernel(test_topology(1, 2, 2, 2));
    let w = waker(&mut k, 0);
    let p = sleeper_any(&mut k, 5);
    // sd_llc_size 4: slave 4, master 16 -> wide (the flip recorded now makes 17).
    k.task_mut(w).wakee_flips = 16;
    k.task_mut(p).wakee_flips = 4;
    assert!(k.wake_wide(p, Some(w), 0));
    assert_eq!(rq_fair(&mut k, p, 5, WF_SYNC, 0), 5);
    assert_eq!(placements(&k), vec![(p, 5, "target_idle")]);
    // The waker's recent_used_cpu is untouched when not affine.
    assert_eq!(k.task(w).recent_used_cpu, 0);
}

#[test]
fn waker_cpu_outside_the_affinity_is_not_affine() {
    let mut k = kernel(test_topology(1, 2, 2, 2));
    waker(&mut k, 0);
    let p = sleeper(&mut k, 5, mask(&[4, 5, 6, 7]));
    assert_eq!(rq_fair(&mut k, p, 5, WF_SYNC, 0), 5);
}

#[test]
fn fork_takes_the_slow_path() {
    let mut k = kernel(test_topology(1, 1, 4, 2));
    let mut q = EventQueue::default();
    let a = all(&k);
    let c1 = k.create_task("c", None, false, 0, Policy::Normal, a);
    // All idle: MC level (groups = cores, 8 probes) keeps the local core; SMT level
    // ({0} vs {1}, 2 probes) keeps 0.
    assert_eq!(k.select_task_rq_fair(c1, 0, WF_FORK, 0, &mut q), 0);
    assert_eq!(
        last_call(&k, Func::FindIdlestCpu),
        Some((10, 13 + 13 + 6 * 32 + 13 + 13))
    );
    assert_eq!(placements(&k), vec![(c1, 0, "slow_path")]);
    // CPU 0 busy: core {2,3} has 2 idle CPUs vs 1 locally -> 2 (first idle, equal
    // states and stamps); then in 2's hierarchy the SMT level keeps 2.
    busy(&mut k, 0);
    let c2 = k.create_task("c", None, false, 0, Policy::Normal, a);
    assert_eq!(k.select_task_rq_fair(c2, 0, WF_FORK, 0, &mut q), 2);
    assert_eq!(last_call(&k, Func::FindIdlestCpu).unwrap().0, 8 + 2 + 2);
    // No wakee flips are recorded for a fork, and SIS never runs.
    assert_eq!(calls(&k, Func::SelectIdleSibling), 0);
    // Exec uses SD_BALANCE_EXEC the same way.
    let c3 = k.create_task("c", None, false, 0, Policy::Normal, a);
    assert_eq!(k.select_task_rq_fair(c3, 0, WF_EXEC, 0, &mut q), 2);
}

#[test]
fn wake_cap_sends_a_big_task_down_the_slow_path_on_asym() {
    // 4 little (0-3, capacity 462) + 2 big (4-5, 1024).
    let mut k = kernel(test_asym(2, 4, 1024, 462));
    assert!(k.topology().asym_cpucapacity);
    let w = waker(&mut k, 1);
    let p = sleeper_any(&mut k, 2);
    // A big task: util 700 does not fit 462 (700 × 1280 > 462 × 1024).
    k.task_mut(p).se.avg.util_avg = 700;
    assert!(k.wake_cap(p, 1, 2));
    let cpu = rq_fair(&mut k, p, 2, 0, 1);
    assert_eq!(placements(&k), vec![(p, cpu, "slow_path")]);
    assert!(cpu >= 4, "a big CPU is the idlest fit: got {cpu}");
    let _ = w;
    // A small task fits: want_affine, fast path.
    let s = sleeper_any(&mut k, 2);
    k.task_mut(s).se.avg.util_avg = 100;
    assert!(!k.wake_cap(s, 1, 2));
    let cpu = rq_fair(&mut k, s, 2, 0, 1);
    assert_eq!(placements(&k)[1], (s, cpu, "target_idle"));
    // Symmetric machines never restrict.
    let mut k2 = kernel(test_topology(1, 1, 2, 1));
    let t = sleeper_any(&mut k2, 1);
    k2.task_mut(t).se.avg.util_avg = 1000;
    assert!(!k2.wake_cap(t, 0, 1));
}

#[test]
fn asym_slow_path_wakeup_defaults_to_the_wakers_cpu() {
    // v5.6 asymmetric: DIE (the asym level) and MC carry SD_BALANCE_WAKE. A wide
    // wakeup is not affine, so the walk takes the slow path from the waker's CPU;
    // when no level finds a better group the result is the waker's CPU, not prev.
    let mut k = kernel(test_asym(2, 4, 1024, 462));
    let w = waker(&mut k, 4);
    for c in [0, 1, 2, 3, 5] {
        busy(&mut k, c);
    }
    let p = sleeper_any(&mut k, 0);
    k.task_mut(w).wakee_flips = 64;
    k.task_mut(p).wakee_flips = 8;
    assert!(k.wake_wide(p, Some(w), 4));
    assert_eq!(rq_fair(&mut k, p, 0, 0, 4), 4);
    assert_eq!(placements(&k), vec![(p, 4, "slow_path")]);
    // All 6 CPUs at DIE, then {4} and {5} at MC.
    assert_eq!(last_call(&k, Func::FindIdlestCpu).unwrap().0, 6 + 2);
    assert_eq!(calls(&k, Func::SelectIdleSibling), 0);
}

#[test]
fn find_idlest_cpu_returns_prev_when_the_domain_has_no_allowed_cpu() {
    let mut k = kernel(test_topology(2, 1, 2, 1));
    // Node 0 = {0,1}, node 1 = {2,3}; the task may only run on node 1.
    let p = sleeper(&mut k, 3, mask(&[2, 3]));
    let sd = k.topology().sd[0].unwrap();
    assert!(!k.topology().domains[sd].span.test(2));
    let (cpu, pr) = k.find_idlest_cpu(sd, p, 0, 3, schedlab::sched::topology::SD_BALANCE_WAKE);
    assert_eq!((cpu, pr.probed), (3, 0));
    // From the top (NUMA) domain the fork balance finds node 1 and an idle CPU.
    let top = k.topology().domains_of(0).last().unwrap();
    let (cpu, _) = k.find_idlest_cpu(top, p, 0, 3, schedlab::sched::topology::SD_BALANCE_FORK);
    assert_eq!(cpu, 2);
}
