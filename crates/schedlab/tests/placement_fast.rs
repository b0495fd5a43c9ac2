//! The wakeup fast path (`select_idle_sibling` and its scans, v5.6): a hand-computed
//! case per branch on `test_topology(1, 1, 4, 2)` (core-major: cores {0,1} {2,3}
//! {4,5} {6,7}; probe costs smt 13 / llc 32 / remote 77 ns, pinned by
//! `test_topology`), then differential tests
//! against exhaustive oracles on random small machines.

mod placement_common;
use placement_common::*;

use proptest::prelude::*;
use schedlab::machine::presets::test_topology;
use schedlab::machine::CpuMask;
use schedlab::sched::fair::idle::{avg_scan_cost_update, cpumask_next_wrap, sis_prop_nr};
use schedlab::sched::features::{Features, SchedFeat};
use schedlab::sched::Func;

fn k8() -> schedlab::sched::core::Kernel<Rec> {
    let k = kernel(test_topology(1, 1, 4, 2));
    assert_eq!(
        k.machine().smt_mask(2).iter().collect::<Vec<_>>(),
        vec![2, 3]
    );
    assert_eq!(k.machine().cost.probe_llc, 32);
    k
}

fn llc(k: &schedlab::sched::core::Kernel<Rec>, cpu: usize) -> usize {
    llc_opt(k, cpu).expect("llc domain")
}

fn llc_opt(k: &schedlab::sched::core::Kernel<Rec>, cpu: usize) -> Option<usize> {
    k.topology().sd_llc[cpu]
}

#[test]
fn target_idle_is_taken_first() {
    let mut k = k8();
    let p = sleeper_any(&mut k, 4);
    let (cpu, why, pr) = k.select_idle_sibling(p, 4, 2, 0);
    assert_eq!((cpu, why, pr.probed, pr.cost_ns), (2, "target_idle", 1, 32));
    assert_eq!(last_call(&k, Func::SelectIdleSibling), Some((1, 32)));
    // A target running only SCHED_IDLE tasks counts as idle too.
    sched_idle(&mut k, 2);
    assert_eq!(k.select_idle_sibling(p, 4, 2, 0).1, "target_idle");
}

#[test]
fn prev_idle_when_sharing_the_cache() {
    let mut k = k8();
    busy(&mut k, 2);
    let p = sleeper_any(&mut k, 5);
    let (cpu, why, pr) = k.select_idle_sibling(p, 5, 2, 1);
    // target 2 (llc of waker 1), prev 5 (llc): 2 probes.
    assert_eq!((cpu, why, pr.probed, pr.cost_ns), (5, "prev_idle", 2, 64)); // 2 × 32
}

#[test]
fn recent_used_cpu_is_swapped_with_prev() {
    let mut k = k8();
    for c in [2, 5] {
        busy(&mut k, c);
    }
    let p = sleeper_any(&mut k, 5);
    k.task_mut(p).recent_used_cpu = 7;
    let (cpu, why, pr) = k.select_idle_sibling(p, 5, 2, 0);
    assert_eq!((cpu, why, pr.probed), (7, "recent_used", 3));
    assert_eq!(k.task(p).recent_used_cpu, 5);
    // Not allowed on the recent CPU: skipped, the scans run.
    let q = sleeper(&mut k, 5, mask(&[0, 1, 2, 3, 4, 5, 6]));
    k.task_mut(q).recent_used_cpu = 7;
    let (_, why, _) = k.select_idle_sibling(q, 5, 2, 0);
    assert_ne!(why, "recent_used");
    assert_eq!(k.task(q).recent_used_cpu, 7);
}

/// v4.15 (`NO_RECENT_USED_CPU`, seed 003's base): the same wakeup as
/// `recent_used_cpu_is_swapped_with_prev` skips the recent CPU without reading it.
/// Busy 2, 5; hint set: the core scan from 2 passes {2,3} (2 busy) and {4,5} (5
/// busy) and takes core {6,7}: CPU 6, after target, prev and the four CPUs of the
/// two busy cores, then 6 and 7 (8 probes); recent_used_cpu is left alone.
#[test]
fn without_recent_used_cpu_the_scans_run() {
    let mut f = Features::v5_6();
    f.set(SchedFeat::RECENT_USED_CPU, false);
    let mut k = kernel_with(test_topology(1, 1, 4, 2), f);
    for c in [2, 5] {
        busy(&mut k, c);
    }
    assert!(k.test_idle_cores(2, false));
    let p = sleeper_any(&mut k, 5);
    k.task_mut(p).recent_used_cpu = 7;
    let (cpu, why, pr) = k.select_idle_sibling(p, 5, 2, 0);
    assert_eq!((cpu, why, pr.probed), (6, "idle_core", 8));
    assert_eq!(k.task(p).recent_used_cpu, 7);
}

#[test]
fn select_idle_core_finds_the_first_fully_idle_core() {
    let mut k = k8();
    // Busy 0, 2, 3, 4; idle 1, 5, 6, 7. Hint set (all CPUs entered idle at boot).
    for c in [0, 2, 3, 4] {
        busy(&mut k, c);
    }
    assert!(k.test_idle_cores(2, false));
    let p = sleeper_any(&mut k, 3);
    k.task_mut(p).recent_used_cpu = 3;
    let (cpu, why, pr) = k.select_idle_sibling(p, 3, 2, 0);
    // Core scan from 2: {2,3} busy, {4,5} busy (4), {6,7} idle -> 6; 6 probes there,
    // plus target and prev: 8 probes, all in the waker's LLC.
    assert_eq!((cpu, why, pr.probed, pr.cost_ns), (6, "idle_core", 8, 256)); // 8 × 32
    assert_eq!(last_call(&k, Func::SelectIdleCore), Some((6, 192))); // 6 × 32
    assert_eq!(calls(&k, Func::SelectIdleCpu), 0);
    assert!(k.test_idle_cores(2, false), "success keeps the hint");
}

#[test]
fn select_idle_core_counts_siblings_outside_the_affinity() {
    let mut k = k8();
    for c in 0..6 {
        busy(&mut k, c);
    }
    // Allowed on 0..=6 only; core {6,7} is idle, and 7 (not allowed) counts.
    let p = sleeper(&mut k, 3, mask(&[0, 1, 2, 3, 4, 5, 6]));
    let sd = llc(&k, 2);
    let (cpu, pr) = k.select_idle_core(p, sd, 2, 0);
    assert_eq!((cpu, pr.probed), (Some(6), 6));
    // A busy sibling outside the affinity spoils the core.
    busy(&mut k, 7);
    let (cpu, pr) = k.select_idle_core(p, sd, 2, 0);
    assert_eq!((cpu, pr.probed), (None, 8));
    assert!(
        !k.test_idle_cores(2, true),
        "a fruitless scan clears the hint"
    );
    // Without the hint the scan does not run.
    busy(&mut k, 7);
    k.cpu_rq_mut(7).nr_running = 0;
    k.sync_idle_bits(7);
    let (cpu, pr) = k.select_idle_core(p, sd, 2, 0);
    assert_eq!((cpu, pr.probed), (None, 0));
}

#[test]
fn idle_core_hint_set_when_a_cpu_goes_idle_with_idle_siblings() {
    let mut k = k8();
    k.set_idle_cores(0, false);
    busy(&mut k, 1);
    k.update_idle_core(0);
    assert!(!k.test_idle_cores(0, true), "sibling 1 busy: no hint");
    k.cpu_rq_mut(1).nr_running = 0;
    k.sync_idle_bits(1);
    k.update_idle_core(0);
    assert!(k.test_idle_cores(0, false), "all siblings idle: hint set");
    // The hint is per LLC: every CPU of the LLC sees it.
    assert!(k.test_idle_cores(7, false));
}

#[test]
fn select_idle_cpu_scan_and_avg_scan_cost() {
    let mut k = k8();
    for c in 0..5 {
        busy(&mut k, c);
    }
    k.set_idle_cores(0, false);
    let p = sleeper_any(&mut k, 2);
    let (cpu, why, pr) = k.select_idle_sibling(p, 2, 2, 0);
    // avg_idle = 1 ms / 512 = 1953, avg_cost = 1: nr = 8 × 1953 = 15624.
    // Scan 2 (busy), 3, 4 (busy), 5 (idle): 4 probes.
    assert_eq!((cpu, why, pr.probed), (5, "idle_cpu", 5));
    // 4 probes × 32 ns; EWMA: 0 + (4 × 32 + 20 - 0) / 8 = 18 (truncated), on the
    // waker's LLC domain.
    assert_eq!(last_call(&k, Func::SelectIdleCpu), Some((4, 128)));
    assert_eq!(k.topology().domains[llc(&k, 0)].avg_scan_cost, 18);
}

#[test]
fn select_idle_cpu_gives_up_after_nr_minus_one_probes() {
    let mut k = k8();
    for c in [0, 1, 3, 4, 5, 6, 7] {
        busy(&mut k, c);
    }
    k.set_idle_cores(0, false);
    let d = llc(&k, 0);
    // avg_cost = 100001 > span_avg / 4 = 3906: nr = 4, at most 3 CPUs examined.
    k.topology_mut().domains[d].avg_scan_cost = 100_000;
    let p = sleeper_any(&mut k, 3);
    let (cpu, why, pr) = k.select_idle_sibling(p, 3, 3, 0);
    // Scan 3, 4, 5 (busy), then the budget runs out before 6; no EWMA update.
    assert_eq!(last_call(&k, Func::SelectIdleCpu), Some((3, 96))); // 3 × 32
    assert_eq!(k.topology().domains[d].avg_scan_cost, 100_000);
    // select_idle_smt then finds sibling 2 of target 3.
    assert_eq!((cpu, why), (2, "idle_smt"));
    assert_eq!(last_call(&k, Func::SelectIdleSmt), Some((1, 32)));
    assert_eq!(pr.probed, 1 + 3 + 1);
}

#[test]
fn nothing_idle_falls_back_to_target() {
    let mut k = k8();
    for c in 0..8 {
        busy(&mut k, c);
    }
    let p = sleeper_any(&mut k, 6);
    let (cpu, why, pr) = k.select_idle_sibling(p, 6, 2, 0);
    // target, prev, core scan (8, clears the hint), cpu scan (8), smt (2).
    assert_eq!((cpu, why, pr.probed), (2, "affine_fallback", 2 + 8 + 8 + 2));
    assert!(!k.test_idle_cores(2, true));
}

#[test]
fn sis_uses_the_wakers_avg_idle() {
    let mut k = k8();
    for c in 0..7 {
        busy(&mut k, c);
    }
    k.set_idle_cores(0, false);
    // Waker 0 with avg_idle 2048 ns: avg_idle / 512 = 4, span_avg = 32 > 4 × 1:
    // nr = 32; target's rq (2) is irrelevant.
    k.cpu_rq_mut(0).avg_idle = 2048;
    k.cpu_rq_mut(2).avg_idle = 0;
    let p = sleeper_any(&mut k, 2);
    let (cpu, _, _) = k.select_idle_sibling(p, 2, 2, 0);
    assert_eq!(cpu, 7);
    // avg_idle 0 on the waker (target's rq has 1 ms): nr = 4, gives up after 2, 3, 4.
    k.cpu_rq_mut(2).avg_idle = 1_000_000;
    k.cpu_rq_mut(0).avg_idle = 0;
    let d = llc(&k, 0);
    k.topology_mut().domains[d].avg_scan_cost = 0;
    let (cpu, why, _) = k.select_idle_sibling(p, 2, 2, 0);
    assert_eq!(last_call(&k, Func::SelectIdleCpu), Some((3, 96))); // 3 × 32
    assert_eq!((cpu, why), (2, "affine_fallback"));
}

#[test]
fn sis_prop_and_ewma_arithmetic() {
    assert_eq!(sis_prop_nr(8 * 1953, 1), 15624);
    assert_eq!(sis_prop_nr(16, 4), 4); // not > 4 × avg_cost
    assert_eq!(sis_prop_nr(17, 4), 4); // 17 / 4 = 4
    assert_eq!(sis_prop_nr(100, 7), 14);
    assert_eq!(avg_scan_cost_update(0, 120), 15);
    assert_eq!(avg_scan_cost_update(100, 93), 100); // -7 / 8 truncates to 0
    assert_eq!(avg_scan_cost_update(100, 20), 90);
    assert_eq!(avg_scan_cost_update(100, 200), 112);
}

#[test]
fn next_wrap_walks_like_for_each_cpu_wrap() {
    let m = mask(&[1, 3, 5, 7]);
    let walk = |m: &CpuMask, start: usize| {
        let mut out = vec![];
        let mut c = cpumask_next_wrap(start as isize - 1, m, start, false);
        while let Some(x) = c {
            out.push(x);
            c = cpumask_next_wrap(x as isize, m, start, true);
        }
        out
    };
    assert_eq!(walk(&m, 4), vec![5, 7, 1, 3]);
    assert_eq!(walk(&m, 3), vec![3, 5, 7, 1]);
    assert_eq!(walk(&m, 0), vec![1, 3, 5, 7]);
    assert_eq!(walk(&m, 6), vec![7, 1, 3, 5]);
    assert_eq!(walk(&CpuMask::new(), 2), Vec::<usize>::new());
}

// ---------------------------------------------------------------------------
// Differential tests against exhaustive oracles.
// ---------------------------------------------------------------------------

fn wrap_order(m: &CpuMask, start: usize) -> Vec<usize> {
    let mut v: Vec<usize> = m.iter().filter(|&c| c >= start).collect();
    v.extend(m.iter().filter(|&c| c < start));
    v
}

#[derive(Debug)]
struct Case {
    llcs: usize,
    cores: usize,
    smt: usize,
    idle_bits: u64,
    allowed_bits: u64,
    target: usize,
    prev: usize,
    waker: usize,
}

fn case() -> impl Strategy<Value = Case> {
    (
        1usize..=2,
        1usize..=4,
        1usize..=2,
        any::<u64>(),
        any::<u64>(),
        any::<u64>(),
    )
        .prop_map(|(llcs, cores, smt, idle_bits, allowed_bits, pick)| {
            let n = llcs * cores * smt;
            let target = (pick % n as u64) as usize;
            let prev = ((pick >> 8) % n as u64) as usize;
            let waker = ((pick >> 16) % n as u64) as usize;
            Case {
                llcs,
                cores,
                smt,
                idle_bits,
                allowed_bits,
                target,
                prev,
                waker,
            }
        })
}

fn setup(c: &Case, feat: Features) -> (schedlab::sched::core::Kernel<Rec>, u32, CpuMask) {
    let mut k = kernel_with(test_topology(1, c.llcs, c.cores, c.smt), feat);
    let n = k.machine().nr_cpus();
    for cpu in 0..n {
        if c.idle_bits >> cpu & 1 == 0 {
            busy(&mut k, cpu);
        }
    }
    let mut allowed = CpuMask::new();
    for cpu in 0..n {
        if c.allowed_bits >> cpu & 1 == 1 {
            allowed.set(cpu);
        }
    }
    // target and prev are allowed, as in real wakeups.
    allowed.set(c.target);
    allowed.set(c.prev);
    let p = sleeper(&mut k, c.prev, allowed);
    (k, p, allowed)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    #[test]
    fn select_idle_core_matches_oracle(c in case()) {
        let (mut k, p, allowed) = setup(&c, Features::v5_6());
        k.set_idle_cores(c.target, true);
        let Some(sd) = llc_opt(&k, c.target) else { return Ok(()) };
        let span = k.topology().domains[sd].span;
        let (got, pr) = k.select_idle_core(p, sd, c.target, c.waker);
        let want = if c.smt > 1 {
            wrap_order(&span.and(&allowed), c.target)
                .into_iter()
                .find(|&x| k.machine().smt_mask(x).iter().all(|s| k.available_idle_cpu(s)))
        } else {
            None
        };
        prop_assert_eq!(got, want);
        if c.smt > 1 {
            // Probes: every sibling of every core visited up to the hit.
            prop_assert_eq!(pr.probed as usize % c.smt, 0);
            prop_assert_eq!(k.test_idle_cores(c.target, false), want.is_some());
        }
    }

    #[test]
    fn select_idle_cpu_exhaustive_matches_oracle(c in case()) {
        let mut f = Features::v5_6();
        f.apply("NO_SIS_PROP").unwrap();
        let (mut k, p, allowed) = setup(&c, f);
        let Some(sd) = llc_opt(&k, c.target) else { return Ok(()) };
        let order = wrap_order(&k.topology().domains[sd].span.and(&allowed), c.target);
        let (got, pr) = k.select_idle_cpu(p, sd, c.target, c.waker);
        let want = order.iter().copied().find(|&x| k.available_idle_cpu(x));
        prop_assert_eq!(got, want);
        let expect_probes = match want {
            Some(w) => order.iter().position(|&x| x == w).unwrap() + 1,
            None => order.len(),
        };
        prop_assert_eq!(pr.probed as usize, expect_probes);
    }

    #[test]
    fn select_idle_sibling_is_valid_and_exhaustive_without_sis_prop(c in case(), prop_on in any::<bool>()) {
        let mut f = Features::v5_6();
        if !prop_on {
            f.apply("NO_SIS_PROP").unwrap();
        }
        assert_eq!(f.has(SchedFeat::SIS_PROP), prop_on);
        let (mut k, p, allowed) = setup(&c, f);
        let llc_span = match llc_opt(&k, c.target) {
            Some(d) => k.topology().domains[d].span,
            None => CpuMask::of(c.target),
        };
        let any_idle = llc_span.and(&allowed).iter().any(|x| k.available_idle_cpu(x));
        let (got, why, _) = k.select_idle_sibling(p, c.prev, c.target, c.waker);
        prop_assert!(allowed.test(got), "cpu {} not allowed", got);
        if got != c.target {
            prop_assert!(k.available_idle_cpu(got));
            prop_assert!(k.topology().cpus_share_cache(got, c.target));
        }
        if !prop_on && any_idle {
            prop_assert!(k.available_idle_cpu(got), "idle CPU exists but got {} ({})", got, why);
        }
        if !any_idle {
            prop_assert_eq!(got, c.target);
        }
    }
}

#[test]
fn sched_idle_cpus_count_for_the_cpu_scans_but_not_the_core_scan() {
    let mut k = k8();
    for c in [0, 2, 3, 4, 6, 7] {
        busy(&mut k, c);
    }
    sched_idle(&mut k, 5); // core {4,5}: 4 busy, 5 SCHED_IDLE-only
    sched_idle(&mut k, 1); // core {0,1}
    let p = sleeper_any(&mut k, 2);
    let sd = llc(&k, 2);
    // No core is fully available_idle: the core scan fails and clears the hint.
    assert_eq!(k.select_idle_core(p, sd, 2, 0).0, None);
    assert!(!k.test_idle_cores(2, true));
    // select_idle_cpu takes the SCHED_IDLE-only CPU 5 (scan 2, 3, 4, 5).
    let (cpu, pr) = k.select_idle_cpu(p, sd, 2, 0);
    assert_eq!((cpu, pr.probed), (Some(5), 4));
    // select_idle_smt too: target 0's sibling 1.
    assert_eq!(k.select_idle_smt(p, 0, 0).0, Some(1));
}
