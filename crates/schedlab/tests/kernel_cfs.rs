//! CFS behaviour on one CPU: fair shares by weight, tick preemption at the slice, and
//! the execution model's throughput (SMT sharing, capacity scaling).
//!
//! Tunables: on an 8-CPU machine the v5.6 log scaling factor is 1 + ilog2(8) = 4, so
//! sched_latency = 24 ms, min_granularity = 3 ms, wakeup_granularity = 4 ms,
//! nr_latency = 8. HZ = 250: a tick every 4 ms, on the global 4 ms grid.
//! Machines are used without cpuidle states ([`common::no_idle`]) except where idle
//! behaviour is part of the test, so that runs start at t = 0 on the tick grid.

mod common;

use common::*;
use schedlab::machine::presets::{preset, test_topology};
use schedlab::machine::{CpuMask, Machine};
use schedlab::sched::core::Policy;
use schedlab::workload::program::Op;

/// `n` endless hogs pinned to CPU 0 of an 8-CPU machine, with the given nice values
/// and policies, run for `ms`.
fn hogs_on_cpu0(
    tasks: &[(&str, i32, Policy)],
    ms: u64,
) -> (schedlab::sim::Sim<schedlab::metrics::Observers>, u64) {
    let mut w = W::new();
    let p = w.prog("hog", hog_ops());
    for &(name, nice, policy) in tasks {
        let t = w.task(name, p, Some(CpuMask::of(0)));
        t.nice = nice;
        t.policy = policy;
    }
    let sc = scenario(no_idle(test_topology(1, 1, 8, 1)), w.build(), Some(ms));
    let (sim, r) = run_sim(&sc);
    r.expect("run ends at its duration");
    let now = sim.kernel().now();
    (sim, now)
}

#[test]
fn tunables_scale_for_eight_cpus() {
    let sc = scenario(
        no_idle(test_topology(1, 1, 8, 1)),
        W::new().build(),
        Some(1),
    );
    // factor 1 + ilog2(8) = 4: 6 ms * 4, 0.75 ms * 4, 1 ms * 4.
    assert_eq!(sc.tunables.sched_latency_ns, 24 * MS);
    assert_eq!(sc.tunables.sched_min_granularity_ns, 3 * MS);
    assert_eq!(sc.tunables.sched_wakeup_granularity_ns, 4 * MS);
    assert_eq!(sc.tunables.tick_nsec(), 4 * MS);
}

/// Two nice-0 hogs on one CPU alternate every slice.
///
/// Both are started at t = 0 before the CPU schedules, so each is placed by
/// START_DEBIT at min_vruntime + its vslice as seen when it is forked: `a` on an empty
/// queue gets 24 ms * 1024/1024 = 23 999 994 (fixed point: the truncated inverse of
/// 1024), `b` beside `a` gets 24 ms * 1024/2048 = 11 999 994. So `b` runs first.
/// sched_slice with both queued = 11 999 994. Ticks come at 4, 8, 12 ms: at 12 ms
/// b's delta_exec = 12 000 000 > 11 999 994, so it is preempted; its vruntime is then
/// 11 999 994 + 12 000 000 = a's, and the tie goes to the earlier-queued `a`. From
/// then on they alternate every 12 ms exactly (a 12..24, b 24..36, ...).
/// In 1000 ms: switches at 12, 24, ..., 996 ms = 83, plus the initial idle -> b = 84.
/// b runs the even periods [0,12), [24,36), ..., [984,996): 42 * 12 = 504 ms.
/// a runs the 41 odd periods (492 ms) plus [996, 1000): its runtime as last charged
/// by update_curr is 492 ms, or 496 if the tick at 1000 ms runs before the stop event
/// of the same instant.
#[test]
fn two_nice0_hogs_alternate_every_slice() {
    let (sim, now) = hogs_on_cpu0(&[("a", 0, Policy::Normal), ("b", 0, Policy::Normal)], 1000);
    assert_eq!(now, 1000 * MS);
    let a = runtime(&sim, "a");
    let b = runtime(&sim, "b");
    assert_eq!(b, 504 * MS, "b ran {b}");
    assert!(a == 492 * MS || a == 496 * MS, "a ran {a}");
    assert_eq!(sim.kernel().observer().collector.switches, 84);
}

/// The same two hogs on a 2-CPU machine (factor 1 + ilog2(2) = 2): latency 12 ms,
/// slice 5 999 997 ns. With 4 ms ticks a hog is preempted at the first tick where its
/// delta_exec exceeds 5.999997 ms, i.e. after 8 ms. As above `b` is placed ahead
/// (vslice 5 999 997 against a's 11 999 997) and runs first: b 0..8, a 8..16, ...
/// In 1000 ms: switches at 8, 16, ..., 1000 -> 125 (the one at 1000 ms may or may
/// not be processed before the stop event at the same instant) plus idle -> A.
#[test]
fn slice_follows_cpu_count_scaling() {
    let mut w = W::new();
    let p = w.prog("hog", hog_ops());
    w.task("a", p, Some(CpuMask::of(0)));
    w.task("b", p, Some(CpuMask::of(0)));
    let sc = scenario(no_idle(test_topology(1, 1, 2, 1)), w.build(), Some(1000));
    assert_eq!(sc.tunables.sched_latency_ns, 12 * MS);
    let (sim, r) = run_sim(&sc);
    r.unwrap();
    let sw = sim.kernel().observer().collector.switches;
    assert!(sw == 125 || sw == 126, "{sw} switches");
    // b runs [0,8), [16,24), ..., [992,1000): 63 of the 125 8-ms periods; its last
    // one ends at the stop instant, so it is charged up to the tick at 996 ms (500 ms)
    // or, if the 1000 ms tick runs before the stop event, 504 ms. a runs the other 62
    // periods = 496 ms.
    let b = runtime(&sim, "b");
    assert!(b == 500 * MS || b == 504 * MS, "b ran {b}");
    assert_eq!(runtime(&sim, "a"), 496 * MS);
}

/// Nice 0 (weight 1024) against nice 5 (weight 335) on one CPU for 1 s.
///
/// Whatever the slices, CFS always runs the leftmost entity, so the two vruntimes
/// stay within one run's worth of virtual time of each other: d = |vA - vB| <= the
/// longest single run in vruntime. The nice-5 slice is 24 ms * 335/1359 = 5.9 ms ->
/// at most 8 ms of wall time (tick granularity) = 8 * 1024/335 = 24.5 ms of vruntime;
/// the nice-0 slice is 18.1 ms -> at most 20 ms (= 20 ms of vruntime).
/// With A = vA, B = vB * 335/1024 and A + B = T: B = 335 (T - d) / 1359.
/// T = 1000 ms, |d| <= 24.5 ms: B in [240.5, 252.5] ms (exact share 246.5 ms).
#[test]
fn nice5_gets_weight_share() {
    let (sim, now) = hogs_on_cpu0(
        &[("n0", 0, Policy::Normal), ("n5", 5, Policy::Normal)],
        1000,
    );
    let a = runtime(&sim, "n0");
    let b = runtime(&sim, "n5");
    assert!(a + b <= now && a + b >= now - 8 * MS, "a {a} b {b}");
    assert!(
        (240_500_000..=252_500_000).contains(&b),
        "nice 5 ran {b} ns, expected 246.5 ms +- 6"
    );
    // The vruntimes themselves are within the bound, plus up to one tick (4 ms) of
    // the current task's runtime not yet charged when the run stopped.
    let va = sim.kernel().task(pid_of(&sim, "n0") as u32).se.vruntime;
    let vb = sim.kernel().task(pid_of(&sim, "n5") as u32).se.vruntime;
    let d = (va.wrapping_sub(vb) as i64).unsigned_abs();
    assert!(d <= 24_500_000 + 4 * MS, "vruntime gap {d}");
}

/// Three nice-0 hogs: period 24 ms (3 <= nr_latency), slice 24 ms * 1024/3072, just
/// under 8 ms in fixed point (the inverse of 3072 truncates). Ticks are 4 ms apart on
/// the grid the first run starts on, so a run is preempted at the tick where its
/// delta_exec reaches 8 000 000: every run is exactly 8 ms. Each task gets every
/// third 8 ms period: in 1200 ms = 150 periods, 50 each = 400 ms, give or take one
/// period for where the rotation starts and how much of the last run is accounted.
#[test]
fn three_hogs_get_equal_thirds() {
    let (sim, now) = hogs_on_cpu0(
        &[
            ("a", 0, Policy::Normal),
            ("b", 0, Policy::Normal),
            ("c", 0, Policy::Normal),
        ],
        1200,
    );
    assert_eq!(now, 1200 * MS);
    for n in ["a", "b", "c"] {
        let r = runtime(&sim, n);
        assert!((392 * MS..=408 * MS).contains(&r), "{n} ran {r}");
    }
    // 150 switches between 8 ms periods (149 or 150 processed before the stop) + idle -> a.
    let sw = sim.kernel().observer().collector.switches;
    assert!(sw == 150 || sw == 151, "{sw} switches");
}

/// SCHED_IDLE (weight 3) beside a nice-0 hog for 10 s: its share is 3/1027 of the
/// CPU = 29.2 ms. Bound from the vruntime argument: a SCHED_IDLE run lasts one tick
/// at most (its slice is 24 ms * 3/1027 = 70 us), i.e. 4 ms = 4 * 1024/3 = 1365 ms of
/// vruntime; B = 3 (T - d)/1027 with |d| <= 1365 ms -> B in [25.2, 33.2] ms.
#[test]
fn sched_idle_gets_3_in_1027() {
    let (sim, _) = hogs_on_cpu0(
        &[("hog", 0, Policy::Normal), ("idle", 0, Policy::Idle)],
        10_000,
    );
    let b = runtime(&sim, "idle");
    assert!(
        (25_200_000..=33_200_000).contains(&b),
        "SCHED_IDLE task ran {b} ns, expected ~29.2 ms"
    );
    // Each of its runs is cut at the first tick, so it ran at least b / 4 ms times,
    // each run costing two switches (in and out).
    let switches = sim.kernel().observer().collector.switches;
    assert!(switches >= 2 * (b / (4 * MS)), "switches {switches}");
}

/// Two tasks each computing 10 ms of work then exiting, on the two threads of one
/// SMT2 core (test_topology(1,1,2,2): CPUs 0,1 = core 0) vs on two cores (CPUs 0, 2).
///
/// Work per task in reference ns: context switch 1000 + mm switch 500 + compute
/// 10 000 000 + ticks (500 each, charged on the busy CPU) + exit 35 000.
/// Siblings: each thread runs at 640/1024 of a lone thread, so 1 ns of work takes
/// 1.6 ns: ticks at 4, 8, 12, 16 ms fall inside the run (4 x 500) ->
/// (1500 + 10 000 000 + 2000 + 35 000) * 1.6 = 16 061 600 ns.
/// Separate cores: rate 1024, ticks at 4 and 8 ms only ->
/// 1500 + 10 000 000 + 1000 + 35 000 = 10 037 500 ns.
#[test]
fn smt_siblings_share_core_throughput() {
    for (cpus, expect) in [((0, 1), 16_061_600u64), ((0, 2), 10_037_500u64)] {
        let mut w = W::new();
        let p = w.prog("work", vec![Op::Compute(c(10 * MS))]);
        w.task("t0", p, Some(CpuMask::of(cpus.0)));
        w.task("t1", p, Some(CpuMask::of(cpus.1)));
        let sc = scenario(no_idle(test_topology(1, 1, 2, 2)), w.build(), None);
        let (sim, r) = run_sim(&sc);
        assert_eq!(r.unwrap(), schedlab::sim::StopReason::Completed);
        for n in ["t0", "t1"] {
            let t = &sim.kernel().task(pid_of(&sim, n) as u32);
            let exit = t.stats.exit_ns.unwrap();
            assert!(
                exit.abs_diff(expect) <= 4,
                "cpus {cpus:?}: {n} exited at {exit}, expected {expect}"
            );
        }
    }
}

/// (compute ms, CPU) per task, and each task's expected exit (ns).
type ExitCase<'a> = (&'a [(u64, usize)], &'a [u64]);

/// Each case's tasks, each pinned and computing, exit within 4 ns of the expected
/// times on `m`.
fn exits_are(m: &Machine, cases: &[ExitCase]) {
    exits_with(m, &[], cases)
}

/// [`exits_are`] with sched_features words (`NO_X`) applied to v5.6's.
fn exits_with(m: &Machine, features: &[&str], cases: &[ExitCase]) {
    for &(tasks, expect) in cases {
        let mut w = W::new();
        for (i, &(ms, cpu)) in tasks.iter().enumerate() {
            let p = w.prog(&format!("w{i}"), vec![Op::Compute(c(ms * MS))]);
            w.task(&format!("t{i}"), p, Some(CpuMask::of(cpu)));
        }
        let mut sc = scenario(m.clone(), w.build(), None);
        for f in features {
            sc.features.apply(f).unwrap();
        }
        let (sim, r) = run_sim(&sc);
        assert_eq!(r.unwrap(), schedlab::sim::StopReason::Completed);
        for (i, &e) in expect.iter().enumerate() {
            let exit = exit_ns(&sim, &format!("t{i}")).unwrap();
            assert!(
                exit.abs_diff(e) <= 4,
                "{tasks:?}: t{i} exited at {exit}, expected {e}"
            );
        }
    }
}

/// An emulated machine whose CPUs share a host (`vcpu_throughput = [1024, 512]`: two
/// busy CPUs each run at half rate). Work per task as above: context switch 1500 +
/// compute + ticks (500 each, on the busy CPU) + exit 35 000, in reference ns.
/// * Alone: rate 1024, ticks at 4 and 8 ms -> 1500 + 10 000 000 + 1000 + 35 000 =
///   10 037 500 ns.
/// * Both 10 ms at once on separate cores: each at 512, ~20 ms, ticks at 4 ... 20 ms
///   (5) -> 2 x (1500 + 10 000 000 + 2500 + 35 000) = 20 078 000 ns.
/// * 10 ms beside 2 ms: t1 runs at 512 with one tick (4 ms), so it exits at
///   2 x (1500 + 2 000 000 + 500 + 35 000) = 4 074 000 ns; t0 did half of that,
///   2 037 000, of its 10 038 000 (1500 + 10 000 000 + 3 ticks at 4, 8, 12 ms + 35 000),
///   and runs the remaining 8 001 000 alone at 1024: exit at 12 075 000 ns.
#[test]
fn a_shared_host_slows_every_busy_cpu() {
    let mut m = no_idle(test_topology(1, 1, 2, 1));
    m.vcpu_throughput = vec![1024, 512];
    let cases: [ExitCase; 3] = [
        (&[(10, 0)], &[10_037_500]),
        (&[(10, 0), (10, 1)], &[20_078_000, 20_078_000]),
        (&[(10, 0), (2, 1)], &[12_075_000, 4_074_000]),
    ];
    exits_are(&m, &cases);
}

/// Two vCPUs at half rate each when both are busy, on one host CPU that
/// time-slices them at 3.5 ms.
fn one_host_cpu() -> Machine {
    let mut m = no_idle(test_topology(1, 1, 2, 1));
    m.vcpu_throughput = vec![1024, 512];
    m.vcpu_host = Some(schedlab::machine::VcpuHost {
        cpus: 1,
        slice_ns: 3_500_000,
    });
    m
}

/// The host time-slices the vCPUs (SIM_VCPU_HOST): one host CPU, a 3.5 ms slice,
/// `vcpu_throughput` [1024, 512], so a vCPU on the host runs at 512 x 2 / 1 = 1024
/// and a descheduled one does nothing. Costs as above (switch 1500, tick 500, exit
/// 35 000). Both tasks are woken at 0; CPU 0's switches in first and takes the
/// host, and CPU 1's reschedule IPI reaches a halted vCPU on a full host: it waits,
/// with the IPI, for the end of CPU 0's slice at 3.5 ms (VCPU_HOST_WAIT).
/// * 10 ms on CPU 0 beside 2 ms on CPU 1: t1 runs alone on the host from 3.5 ms,
///   ticks at 4 ms and exits at 3 500 000 + 1500 + 2 000 000 + 500 + 35 000 =
///   5 537 000; CPU 0 has done 3.5 ms of its 10 036 500 + 3 ticks (its 4 ms tick
///   held until 5.537 ms, then 8 and 12 ms) = 10 038 000: exit at 5 537 000 +
///   6 538 000 = 12 075 000.
/// * 10 ms on each: CPU 0 runs [0, 3.5), [7, 10.5), [14, 17.5) ms; CPU 1 [3.5, 7),
///   [10.5, 14). A tick due while a vCPU is descheduled arrives when it runs again,
///   and the next stays on the 4 ms grid: CPU 0 ticks at 7 (held from 4), 8, 14 (held
///   from 12) and 16, and needs 10 036 500 + 2000 of run time: exit at 14 ms +
///   3 038 500 = 17 038 500. CPU 1 has run 7 ms (ticks 4, 10.5 held from 8, 12),
///   takes the host at 17 038 500 with its held tick of 16 ms, ticks at 20 ms, and
///   needs 10 036 500 + 5 x 500 - 7 000 000 = 3 039 000 more: exit at 20 077 500.
#[test]
fn a_host_cpu_time_slices_the_vcpus_and_holds_their_ticks() {
    let m = one_host_cpu();
    let cases: [ExitCase; 2] = [
        (&[(10, 0), (2, 1)], &[12_075_000, 5_537_000]),
        (&[(10, 0), (10, 1)], &[17_038_500, 20_077_500]),
    ];
    exits_are(&m, &cases);
}

/// The same with NO_VCPU_HOST_WAIT: CPU 1's IPI is taken at once and its vCPU,
/// turning busy, preempts CPU 0's, the longest running.
/// * 10 ms beside 2 ms: t1 runs alone on the host and exits at 1500 + 2 000 000 +
///   35 000 = 2 036 500 (no tick before 4 ms); CPU 0 then runs alone at 1024 from
///   2 036 500: 10 036 500 + 3 ticks (4, 8, 12 ms) = 10 038 000, exit at 12 074 500.
/// * 10 ms on each: the first case's schedule with the CPUs swapped: t1 exits at
///   17 038 500, t0 at 20 077 500.
#[test]
fn without_the_host_wait_a_waking_vcpu_preempts_the_longest_running() {
    let m = one_host_cpu();
    let cases: [ExitCase; 2] = [
        (&[(10, 0), (2, 1)], &[12_074_500, 2_036_500]),
        (&[(10, 0), (10, 1)], &[20_077_500, 17_038_500]),
    ];
    exits_with(&m, &["NO_VCPU_HOST_WAIT"], &cases);
}

/// compute(10 ms) on a little CPU of juno-r0 (cpu0, Cortex-A53, capacity 446) takes
/// 1024/446 as long as on a big one (cpu1, A57, 1024). Costs (cost_arm_big): context
/// switch 2200 + mm switch 800, tick 1000, exit from the table; all work in
/// reference ns, executed at `capacity` per 1024.
/// The wall time T satisfies T = ceil((W + ticks(T) * 1000) * 1024 / cap) where
/// ticks(T) = floor(T / 4 ms): on the little CPU 10 ms * 1024/446 = 22.96 ms -> 5
/// ticks; on the big one 10 ms -> 2 ticks.
#[test]
fn compute_scales_with_capacity() {
    let m = no_idle(preset("juno-r0").unwrap());
    assert_eq!(m.cpus[0].capacity_orig, 446);
    assert_eq!(m.cpus[1].capacity_orig, 1024);
    let cost = m.cost.clone();
    for (cpu, cap, nticks) in [(0usize, 446u64, 5u64), (1, 1024, 2)] {
        let mut w = W::new();
        let p = w.prog("work", vec![Op::Compute(c(10 * MS))]);
        w.task("t", p, Some(CpuMask::of(cpu)));
        let sc = scenario(m.clone(), w.build(), None);
        let (sim, r) = run_sim(&sc);
        r.unwrap();
        let exit = exit_ns(&sim, "t").unwrap();
        let work = cost.context_switch + cost.mm_switch + 10 * MS + nticks * cost.tick + cost.exit;
        let expect = (work * 1024).div_ceil(cap);
        assert_eq!(exit / (4 * MS), nticks, "tick count assumption");
        assert!(
            exit.abs_diff(expect) <= 4,
            "cpu{cpu}: exit at {exit}, expected {expect}"
        );
    }
}

// ---------------------------------------------------------------------------------
// PELT
// ---------------------------------------------------------------------------------

/// An always-running task alone on a CPU for 300 ms. It starts (post_init) at half
/// the spare capacity, 512, and converges to 1024 geometrically with y = 0.5^(1/32)
/// per 1024 us period: after ~293 periods the distance is 512 * y^293 < 1. The sum is
/// divided by LOAD_AVG_MAX - 1024 + period_contrib, so the ceiling is within a few
/// units of 1024 but never above it; the last update is at the 296 ms tick at most
/// 4 ms before the end, which changes nothing at this level. So util_avg in
/// [1000, 1024]; the rq's (root cfs_rq's) util_avg matches it (it is the only task).
#[test]
fn pelt_always_running_saturates() {
    let mut w = W::new();
    let p = w.prog("hog", hog_ops());
    w.task("hog", p, Some(CpuMask::of(0)));
    let sc = scenario(no_idle(test_topology(1, 1, 1, 1)), w.build(), Some(300));
    let (sim, r) = run_sim(&sc);
    r.unwrap();
    let u = sim
        .kernel()
        .task(pid_of(&sim, "hog") as u32)
        .se
        .avg
        .util_avg;
    assert!((1000..=1024).contains(&u), "util_avg {u}");
    let ru = sim.kernel().cpu_rq(0).cfs.avg.util_avg;
    assert!(ru.abs_diff(u) <= 2, "rq util {ru} vs task {u}");
}

/// A task started at t = 0 (PELT clock 0) is attached to its cfs_rq exactly once and
/// then aged: after 9 ms its averages were updated at the 8 ms tick
/// (last_update_time > 0) and the rq's load_avg, the task's load (1024 for a new
/// nice-0 task, init_entity_runnable_average) plus nothing else, is <= 1024.
/// (Regression: the stand-in attach time 1 was reset to 0 by the update at clock 0,
/// so the task was never aged again -- util_avg stuck at its initial 512 -- and, if
/// it slept, attached a second time at its next wakeup.)
#[test]
fn pelt_task_started_at_clock_zero_is_attached_once() {
    let mut w = W::new();
    let p = w.prog("hog", hog_ops());
    w.task("hog", p, Some(CpuMask::of(0)));
    let sc = scenario(no_idle(test_topology(1, 1, 1, 1)), w.build(), Some(9));
    let (sim, r) = run_sim(&sc);
    r.unwrap();
    let se = &sim.kernel().task(pid_of(&sim, "hog") as u32).se.avg;
    assert!(se.last_update_time >= 7 * MS, "{}", se.last_update_time);
    // Running since 0 from 512: util rose by (1024 - 512)(1 - y^7.8) ~ 79 -> ~591.
    assert!((560..=620).contains(&se.util_avg), "{}", se.util_avg);
    let cfs = &sim.kernel().cpu_rq(0).cfs.avg;
    assert!(cfs.load_avg <= 1024, "rq load_avg {}", cfs.load_avg);
}

/// A 25 % duty-cycle task alone on a 1-CPU test machine: compute 1 ms, sleep 3 ms.
/// One cycle: switch-in (1000 ns context switch, same mm), compute 1 000 000, sleep
/// 3 000 000 + 50 000 slack, the idle state's exit, of which 1 001 000 running (plus
/// a 500 ns tick handler in about one run in four). menu predicts the 3.05 ms timer,
/// under a tick (4 ms), so it keeps the tick and takes C6 (600 µs residency) only
/// when the next tick is further than that, else C1: a cycle is 4 184 000 ns with a
/// C6 exit (133 µs, duty 0.2392) and 4 053 000 with a C1 exit (2 µs, duty 0.2470);
/// mean util about 1024 * 0.243 = 249.
/// Within a cycle util_avg swings by about (1024 - 245)(1 - y^0.98) = 16 up while
/// running and 261 (1 - y^3.1) = 17 down while asleep, so any sample lies within
/// 245 +- 20. util_est: the task's `enqueued` is its util_avg at its last dequeue (a
/// peak, 245..265), its ewma follows the peaks (within the 1 % margin); the rq's
/// util_est.enqueued is the task's max(ewma, enqueued) while it is queued, 0 while it
/// sleeps.
#[test]
fn pelt_duty_cycle_settles_at_duty() {
    let mut w = W::new();
    let p = w.prog(
        "duty",
        forever(vec![Op::Compute(c(MS)), Op::Sleep(c(3 * MS))]),
    );
    w.task("duty", p, Some(CpuMask::of(0)));
    for stop_ms in [400, 401, 402, 403] {
        let sc = scenario(test_topology(1, 1, 1, 1), w.spec.clone(), Some(stop_ms));
        let (sim, r) = run_sim(&sc);
        r.unwrap();
        let t = &sim.kernel().task(pid_of(&sim, "duty") as u32);
        // The measured duty lies between the all-C6 and all-C1 cycles, strictly.
        let duty = t.se.sum_exec_runtime as f64 / sim.kernel().now() as f64;
        assert!((0.2392..0.2470).contains(&duty), "duty {duty}");
        let u = t.se.avg.util_avg;
        assert!((225..=265).contains(&u), "stop {stop_ms}: util_avg {u}");
        let ue = t.se.avg.util_est;
        let enq = ue.enqueued & !1;
        let ewma = ue.ewma & !1;
        assert!((240..=270).contains(&enq), "util_est.enqueued {enq}");
        assert!((235..=275).contains(&ewma), "util_est.ewma {ewma}");
        let rq_est = sim.kernel().cpu_rq(0).cfs.avg.util_est.enqueued;
        if t.se.on_rq {
            assert_eq!(rq_est, ue.ewma.max(ue.enqueued) | 1);
        } else {
            assert_eq!(rq_est, 0);
        }
    }
}

// ---------------------------------------------------------------------------------
// Fork placement
// ---------------------------------------------------------------------------------

/// A parent pinned to CPU 0 (8-CPU machine) forks a child (inheriting the affinity)
/// and computes; returns the child's total runqueue wait after 25 ms.
fn fork_child_wait(child_runs_first: bool) -> u64 {
    let mut w = W::new();
    let child = w.prog("child", vec![Op::Compute(c(10 * MS))]);
    let parent = w.prog(
        "parent",
        vec![
            Op::Fork {
                prog: child,
                thread: false,
            },
            Op::Compute(c(100 * MS)),
        ],
    );
    w.task("parent", parent, Some(CpuMask::of(0)));
    let mut sc = scenario(no_idle(test_topology(1, 1, 8, 1)), w.build(), Some(25));
    sc.tunables.child_runs_first = child_runs_first;
    let (sim, r) = run_sim(&sc);
    r.unwrap();
    let child = pid_of(&sim, "child");
    assert_eq!(
        sim.kernel().task(child as u32).cpu,
        0,
        "a fork starts on the parent's CPU"
    );
    sim.kernel().observer().collector.task_rq_wait(child as u32)
}

/// START_DEBIT: the child starts a vslice (11 999 994 with two tasks) after
/// min_vruntime, which is the parent's vruntime at the fork, so it does not preempt
/// the parent. The parent switches in at 0 (1000 + 500 ns of switch work) and pays the
/// fork (80 000 ns): the fork happens at 81 500, child vruntime = parent's + 11 999 994.
/// Tick at 12 ms: the parent's delta_exec 12 000 000 > slice 11 999 994 -> resched,
/// but it is still leftmost (12 000 000 < 81 500 + 11 999 994 past its fork-time
/// vruntime), so it is picked again (set_next_entity restarts its delta_exec: the
/// simple pick path). 16 and 20 ms: delta_exec 4 and 8 ms, vruntime lead 3.9 and
/// 7.9 ms, under the slice. 24 ms: delta_exec 12 ms > slice, the child is leftmost
/// and runs. Its wait: 24 000 000 - 81 500 = 23 918 500.
/// With sched_child_runs_first the two vruntimes are swapped and the parent is
/// rescheduled at once: the child runs at the fork instant, wait 0.
#[test]
fn fork_start_debit_and_child_runs_first() {
    assert_eq!(fork_child_wait(false), 24_000_000 - 81_500);
    assert_eq!(fork_child_wait(true), 0);
}

/// SMT re-timing: on the two threads of one core, t0 computes 10 ms and t1 2 ms.
/// Both run at 640/1024 while both are busy. t1 needs 1500 (switch) + 2 000 000 +
/// 35 000 (exit) = 2 036 500 reference ns -> 2 036 500 * 1.6 = 3 258 400 ns (no tick
/// before 4 ms), so it exits then. By that time t0 has done the same 2 036 500 of its
/// 1500 + 10 000 000 + 35 000; the rest, 8 000 000, plus the ticks at 4 and 8 ms
/// (500 each), runs at full speed: t0 exits at 3 258 400 + 8 001 000 = 11 259 400.
#[test]
fn smt_sibling_going_idle_speeds_up_the_other() {
    let mut w = W::new();
    let long = w.prog("long", vec![Op::Compute(c(10 * MS))]);
    let short = w.prog("short", vec![Op::Compute(c(2 * MS))]);
    w.task("t0", long, Some(CpuMask::of(0)));
    w.task("t1", short, Some(CpuMask::of(1)));
    let sc = scenario(no_idle(test_topology(1, 1, 2, 2)), w.build(), None);
    let (sim, r) = run_sim(&sc);
    r.unwrap();
    let e1 = exit_ns(&sim, "t1").unwrap();
    let e0 = exit_ns(&sim, "t0").unwrap();
    assert!(e1.abs_diff(3_258_400) <= 2, "t1 exit {e1}");
    assert!(e0.abs_diff(11_259_400) <= 4, "t0 exit {e0}");
}
