//! The EEVDF fair class (v6.6, `kernel.preset = v6.6` / feature `EEVDF`) on one CPU:
//! slices end at the virtual deadline, the pick is the earliest eligible deadline,
//! shares follow weights, lag survives sleep and migration, `--check` verifies the
//! average-vruntime sums after every event.
//!
//! Tunables: on an 8-CPU machine the log factor is 4, so `base_slice` = 0.75 ms × 4
//! = 3 ms; HZ = 250, a tick every 4 ms. Without hrtick a deadline is noticed at the
//! next `update_curr`, which for CPU hogs is the tick: every run lasts a whole number
//! of ticks.

mod common;

use common::*;
use schedlab::machine::presets::test_topology;
use schedlab::machine::CpuMask;
use schedlab::sched::features::{KernelPreset, SchedFeat};
use schedlab::workload::program::Op;

fn v6_6(sc: &mut schedlab::experiment::Scenario) {
    let k = KernelPreset::by_name("v6.6").expect("v6.6 preset");
    sc.kernel_preset = k.name;
    sc.features = k.features();
}

/// Hogs pinned to CPU 0 of an 8-CPU machine under v6.6 (with `extra` features
/// applied), run for `ms`.
fn eevdf_hogs(
    tasks: &[(&str, i32)],
    ms: u64,
    extra: &[&str],
) -> schedlab::sim::Sim<schedlab::metrics::Observers> {
    let mut w = W::new();
    let p = w.prog("hog", hog_ops());
    for &(name, nice) in tasks {
        w.task(name, p, Some(CpuMask::of(0))).nice = nice;
    }
    let mut sc = scenario(no_idle(test_topology(1, 1, 8, 1)), w.build(), Some(ms));
    v6_6(&mut sc);
    for f in extra {
        sc.features.apply(f).unwrap();
    }
    let (sim, r) = run_sim(&sc);
    r.expect("run ends at its duration");
    sim
}

#[test]
fn preset_switches_the_class_and_base_slice_is_min_granularity() {
    let f = KernelPreset::by_name("v6.6").unwrap().features();
    assert!(f.has(SchedFeat::EEVDF));
    assert!(f.has(SchedFeat::RUN_TO_PARITY) && f.has(SchedFeat::PLACE_LAG));
    assert!(!KernelPreset::by_name("v6.0")
        .unwrap()
        .features()
        .has(SchedFeat::EEVDF));
    let sim = eevdf_hogs(&[("a", 0)], 1, &[]);
    assert!(sim.kernel().fair_params().eevdf);
    assert_eq!(sim.kernel().fair_params().base_slice, 3 * MS);
}

/// Two nice-0 hogs forked at t = 0 onto CPU 0. Both are placed at V = min_vruntime
/// (m0) with deadline m0 + 3 ms (`a` on an empty queue; `b` with lag 0). Equal
/// deadlines: the pick keeps the smaller vruntime/earlier-queued, `a`.
/// * 4 ms tick: a's vruntime m0+4 ≥ its deadline -> new deadline m0+7, resched.
///   V = (4 + 0)/2 = 2: a is not eligible, `b` runs.
/// * 8 ms: b at m0+4 passes m0+3 -> deadline m0+7, resched. V = 4: both eligible,
///   deadlines equal, and the running entity wins ties: `b` keeps the CPU.
/// * 12 ms: b at m0+8 -> deadline m0+11; V = 6, b ineligible: `a` (deadline m0+7).
/// * 16 ms: a at m0+8 -> m0+11; tie with b, a stays. 20 ms: a ineligible -> b ...
///
/// So after a's first 4 ms the two alternate in 8 ms stints: b [4,12), a [12,20), ...
/// In 1000 ms: 124 stints from 4 to 996 ms (62 each) and b's 63rd from 996:
/// a = 4 + 62·8 = 500 ms, b = 496 ms (+4 if the 1000 ms tick is processed before the
/// stop). Switches: idle -> a, then at 4, 12, ..., 996 ms: 1 + 125 = 126.
/// (v5.6 CFS alternates every 12 ms here: kernel_cfs.rs.)
#[test]
fn two_nice0_hogs_alternate_in_two_tick_stints() {
    let sim = eevdf_hogs(&[("a", 0), ("b", 0)], 1000, &[]);
    assert_eq!(sim.kernel().now(), 1000 * MS);
    let a = runtime(&sim, "a");
    let b = runtime(&sim, "b");
    assert_eq!(a, 500 * MS, "a ran {a}");
    assert!(b == 496 * MS || b == 500 * MS, "b ran {b}");
    assert_eq!(sim.kernel().observer().collector.switches, 126);
}

/// Shares follow weights under EEVDF too: nice 0 (1024) vs nice 5 (335) -> the nice-5
/// task gets 335/1359 of 1000 ms = 246.5 ms. EEVDF bounds each entity's lag by its
/// slice plus the request granularity; here a run can overshoot its deadline by up to
/// one tick (4 ms) of wall time, and a nice-5 slice is 3 ms of wall time: the share
/// must be within ±12 ms (three ticks) of the exact one.
#[test]
fn nice5_gets_weight_share() {
    let sim = eevdf_hogs(&[("n0", 0), ("n5", 5)], 1000, &[]);
    let a = runtime(&sim, "n0");
    let b = runtime(&sim, "n5");
    assert!(a + b <= 1000 * MS && a + b >= 992 * MS, "a {a} b {b}");
    assert!(
        (234_500_000..=258_500_000).contains(&b),
        "nice 5 ran {b} ns, expected 246.5 ms +- 12"
    );
}

/// Three nice-0 hogs: each gets a third within one 8 ms stint, whether or not
/// RUN_TO_PARITY is on (with hogs, a deadline is only renewed at a tick, so parity
/// and ineligibility both end a run there).
#[test]
fn three_hogs_get_thirds_with_and_without_run_to_parity() {
    for extra in [&[][..], &["NO_RUN_TO_PARITY"][..]] {
        let sim = eevdf_hogs(&[("a", 0), ("b", 0), ("c", 0)], 1200, extra);
        for n in ["a", "b", "c"] {
            let r = runtime(&sim, n);
            assert!((392 * MS..=408 * MS).contains(&r), "{extra:?}: {n} ran {r}");
        }
    }
}

/// `sched_yield` under EEVDF only pushes the yielder's deadline one slice back (no
/// skip buddy). Beside one hog that is not enough to give the CPU away: after the
/// yield the `pick` still runs among *eligible* entities, and while the yielder's
/// vruntime is below the average the hog is not eligible, so the yielder is picked
/// again (v6.6 as released; the yielder still cannot exceed its share). Hand trace:
/// both at m0, deadlines m0+3 ms; the hog runs to the 4 ms tick (deadline passed,
/// V = 2 ms, hog ineligible) -> yielder; each 100 us compute + yield moves its deadline
/// but it stays eligible until its vruntime reaches the average, ~4 ms later, when the
/// hog (deadline m0+7) takes over. So the two split the CPU evenly, in stints of about
/// a tick, with ~40 yields per stint that do not switch.
#[test]
fn yield_moves_the_deadline_but_not_the_share() {
    let mut w = W::new();
    let hog = w.prog("hog", hog_ops());
    let y = w.prog(
        "yielder",
        forever(vec![Op::Compute(c(100 * US)), Op::Yield]),
    );
    w.task("hog", hog, Some(CpuMask::of(0)));
    w.task("yielder", y, Some(CpuMask::of(0)));
    let mut sc = scenario(no_idle(test_topology(1, 1, 8, 1)), w.build(), Some(500));
    v6_6(&mut sc);
    let (sim, r) = run_sim(&sc);
    r.unwrap();
    let hog = runtime(&sim, "hog");
    let y = runtime(&sim, "yielder");
    assert!(hog + y > 490 * MS);
    assert!(hog.abs_diff(y) <= 8 * MS, "hog {hog} yielder {y}");
    // About 2 400 yields, but only a switch per stint (~125 stints of ~4 ms).
    let sw = sim.kernel().observer().collector.switches;
    assert!((100..=300).contains(&sw), "{sw} switches");
}

/// A periodic task (1 ms of work, 9 ms of sleep) beside a hog on one CPU. Under v5.6
/// the sleeper credit (min_vruntime − 12 ms) lets every wakeup preempt the hog at
/// once. Under EEVDF the sleeper keeps the small lag it left with: it preempts only
/// when the pick rule says so, and RUN_TO_PARITY shields a freshly picked hog. Both
/// kernels must give the periodic task its full 10 % (its demand is below its share),
/// and EEVDF's wakeup latency must stay within one base slice plus a tick.
#[test]
fn periodic_task_gets_its_demand_and_bounded_latency() {
    for eevdf in [false, true] {
        let mut w = W::new();
        let hog = w.prog("hog", hog_ops());
        let per = w.prog(
            "per",
            forever(vec![Op::Compute(c(MS)), Op::Sleep(c(9 * MS))]),
        );
        w.task("hog", hog, Some(CpuMask::of(0)));
        w.task("per", per, Some(CpuMask::of(0)));
        let mut sc = scenario(no_idle(test_topology(1, 1, 8, 1)), w.build(), Some(1000));
        if eevdf {
            v6_6(&mut sc);
        }
        let (sim, r) = run_sim(&sc);
        r.unwrap();
        let per = runtime(&sim, "per");
        // ~100 periods of 1 ms work (+ switch costs), a period stretched by waits.
        assert!(per >= 90 * MS, "eevdf={eevdf}: periodic task ran {per}");
        let lat = &sim.kernel().observer().collector.wakeup_latency;
        assert!(
            lat.percentile(100.0) <= 3 * MS + 4 * MS + 100 * US,
            "eevdf={eevdf}: max wakeup latency {} ns",
            lat.percentile(100.0)
        );
        if !eevdf {
            // Sleeper credit: every wakeup preempts at once (only switch costs).
            assert!(
                lat.percentile(100.0) < 100 * US,
                "v5.6 max latency {}",
                lat.percentile(100.0)
            );
        }
    }
}

/// Lag travels with a migrating task: hogs on two CPUs, one of them moved by load
/// balancing or wakeups; the invariant checker (`run_sim` uses `--check`) verifies
/// after every event that each runqueue's avg_vruntime/avg_load equal the sums over
/// its queued entities, and that no CPU stays idle with runnable tasks.
#[test]
fn eevdf_on_a_balanced_machine_keeps_invariants() {
    let mut w = W::new();
    let hog = w.prog("hog", hog_ops());
    let per = w.prog(
        "per",
        forever(vec![Op::Compute(c(300 * US)), Op::Sleep(c(700 * US))]),
    );
    for i in 0..6 {
        w.task(&format!("hog{i}"), hog, None);
    }
    for i in 0..6 {
        w.task(&format!("per{i}"), per, None);
    }
    let mut sc = scenario(test_topology(1, 2, 2, 2), w.build(), Some(200));
    v6_6(&mut sc);
    let (sim, r) = run_sim(&sc);
    r.unwrap();
    let total: u64 = (0..6).map(|i| runtime(&sim, &format!("hog{i}"))).sum();
    // 8 CPUs, 6 hogs + 6 tasks at 30 %: the hogs get at least 4.5 CPUs' worth.
    assert!(total > 4 * 200 * MS, "hogs ran {total}");
    let migrations: u64 = sim.kernel().observer().collector.migrations.values().sum();
    assert!(migrations > 0, "tasks moved between CPUs");
}

/// A scenario and seed give the same bytes under EEVDF as under CFS: no hidden
/// state. (The placement sums are integers; no floats in the decision.)
#[test]
fn eevdf_runs_are_deterministic() {
    let mk = || {
        let mut w = W::new();
        let per = w.prog(
            "per",
            forever(vec![
                Op::Compute(uni_us(50, 400)),
                Op::Sleep(uni_us(50, 900)),
            ]),
        );
        for i in 0..10 {
            w.task(&format!("t{i}"), per, None);
        }
        let mut sc = scenario(test_topology(1, 1, 4, 2), w.build(), Some(100));
        v6_6(&mut sc);
        sc
    };
    let a = serde_json::to_string(&run_result(&mk()).tasks).unwrap();
    let b = serde_json::to_string(&run_result(&mk()).tasks).unwrap();
    assert_eq!(a, b);
    // And it is not the v5.6 schedule.
    let mut sc = mk();
    let v56 = KernelPreset::by_name("v5.6").unwrap();
    sc.kernel_preset = v56.name;
    sc.features = v56.features();
    let c = serde_json::to_string(&run_result(&sc).tasks).unwrap();
    assert_ne!(a, c);
}

fn uni_us(lo: u64, hi: u64) -> schedlab::workload::dist::Dist {
    schedlab::workload::dist::Dist::Uniform {
        lo: lo * US,
        hi: hi * US,
    }
}
