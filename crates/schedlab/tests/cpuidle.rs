//! The idle loop around the governors (issue 20 item 1): the tick kept or stopped,
//! software loops that end on their own, and POWER9's core-level stop states.
//! The governors' own branches are hand-computed in `sched/cpuidle/tests.rs`.

mod common;

use common::*;
use schedlab::machine::presets::{preset, test_topology};
use schedlab::machine::{CpuMask, IdleKind, IdleState};
use schedlab::sched::cpuidle::IdleGovernor;
use schedlab::workload::program::Op;

/// A trace line's timestamp in ns (the text has µs).
fn ts_ns(line: &str) -> u64 {
    let ts = line.split(": ").next().unwrap().rsplit(' ').next().unwrap();
    let (s, frac) = ts.split_once('.').unwrap();
    s.trim().parse::<u64>().unwrap() * 1_000_000_000 + frac.parse::<u64>().unwrap() * 1_000
}

/// The `cpu_idle` events of the trace on `cpu`: (time ns, state; `None` = exit).
fn cpu_idle(trace: &str, cpu: usize) -> Vec<(u64, Option<u32>)> {
    let tag = format!("cpu_id={cpu}");
    trace
        .lines()
        .filter(|l| l.contains("cpu_idle:") && l.ends_with(&tag))
        .map(|l| {
            let st: u32 = word_after(l, "state=");
            (ts_ns(l), (st != u32::MAX).then_some(st))
        })
        .collect()
}

/// A task pinned to CPU 0 of the 1-CPU test machine (POLL, C1 2/2 µs, C6 133/600 µs)
/// that computes 100 µs and sleeps `sleep_ns`, for 60 ms; the trace.
fn sleeper_trace(sleep_ns: u64, gov: IdleGovernor, states: Option<Vec<IdleState>>) -> String {
    let mut w = W::new();
    let p = w.prog(
        "s",
        forever(vec![Op::Compute(c(100_000)), Op::Sleep(c(sleep_ns))]),
    );
    w.task("s", p, Some(CpuMask::of(0)));
    let mut m = test_topology(1, 1, 1, 1);
    if let Some(s) = states {
        m.idle_tables[0] = s;
    }
    let mut sc = scenario(m, w.build(), Some(60));
    sc.tunables.cpuidle = gov;
    let (_, trace) = run_ftrace(&sc, 1);
    trace
}

/// The states entered after 20 ms (the governor has learnt the pattern by then).
fn settled_states(ev: &[(u64, Option<u32>)]) -> Vec<u32> {
    ev.iter()
        .filter(|e| e.0 > 20 * MS)
        .filter_map(|e| e.1)
        .collect()
}

/// Exit latency of the test machine's states (POLL, C1, C6).
const TEST_EXIT_NS: [u64; 3] = [0, 2_000, 133_000];

/// Exits after 20 ms whose interrupt came on a tick boundary (HZ 250): idle ticks.
/// The `cpu_idle` exit fires one exit latency of the state left after it. (Before
/// 20 ms, the start's wakeup, whose short sample makes menu keep the tick once, and
/// the first tick that wakes it, are still in the history.)
fn tick_exits(ev: &[(u64, Option<u32>)]) -> usize {
    let mut state = 0;
    let mut n = 0;
    for &(t, s) in ev {
        match s {
            Some(s) => state = s as usize,
            None => {
                let woken = t - TEST_EXIT_NS[state];
                n += usize::from(woken.is_multiple_of(4 * MS) && t > 20 * MS);
            }
        }
    }
    n
}

#[test]
fn short_sleeps_take_c1_and_keep_the_tick_long_ones_c6_and_stop_it() {
    for gov in [IdleGovernor::Menu, IdleGovernor::Teo] {
        // 100 µs sleeps (150 µs with the timer slack): menu's typical interval and
        // teo's sleep length both say ~150 µs, below C6's 600 µs residency and below
        // a tick: C1 with the tick kept, so the idle CPU is woken at every tick
        // boundary that falls inside a sleep.
        let ev = cpu_idle(&sleeper_trace(100_000, gov, None), 0);
        let st = settled_states(&ev);
        assert!(
            !st.is_empty() && st.iter().all(|&s| s == 1),
            "{gov:?}: {st:?}"
        );
        assert!(
            tick_exits(&ev) >= 4,
            "{gov:?}: {} tick exits",
            tick_exits(&ev)
        );
        // 10 ms sleeps: C6, tick stopped: no exits on tick boundaries.
        let ev = cpu_idle(&sleeper_trace(10 * MS, gov, None), 0);
        let st = settled_states(&ev);
        assert!(
            !st.is_empty() && st.iter().all(|&s| s == 2),
            "{gov:?}: {st:?}"
        );
        assert_eq!(tick_exits(&ev), 0, "{gov:?}");
    }
}

#[test]
fn a_poll_round_ends_at_the_next_states_residency() {
    // POLL then C6 (133/600 µs) only, and a PM QoS limit of 50 µs that rules C6 out:
    // menu returns POLL early (the limit is below state 1's exit latency), keeping
    // the tick. poll_idle gives up after C6's target residency, 600 µs, and the idle
    // loop goes round again: a 1 ms sleep (1.05 ms with slack) is two POLL rounds,
    // the second starting exactly 600 µs after the first, unless a tick came first.
    let mut poll = IdleState {
        name: "POLL".into(),
        exit_latency_ns: 0,
        target_residency_ns: 0,
        power_mw: 0.0,
        cluster: false,
        core: false,
        kind: IdleKind::Poll,
        disable: false,
    };
    let c6 = IdleState {
        name: "C6".into(),
        exit_latency_ns: 133_000,
        target_residency_ns: 600_000,
        kind: IdleKind::Hardware,
        ..poll.clone()
    };
    poll.kind = IdleKind::Poll;
    let mut w = W::new();
    let p = w.prog(
        "s",
        forever(vec![Op::Compute(c(100_000)), Op::Sleep(c(MS))]),
    );
    w.task("s", p, Some(CpuMask::of(0)));
    let mut m = test_topology(1, 1, 1, 1);
    m.idle_tables[0] = vec![poll, c6];
    let mut sc = scenario(m, w.build(), Some(30));
    sc.tunables.cpu_dma_latency_us = Some(50);
    let (_, trace) = run_ftrace(&sc, 1);
    let ev = cpu_idle(&trace, 0);
    let enters: Vec<_> = ev.iter().filter(|e| e.1.is_some()).collect();
    assert!(enters.iter().all(|e| e.1 == Some(0)), "only POLL");
    // Each exit that is followed by an enter at the same instant is a round that
    // ended without work: 600 µs after its enter, or on a tick.
    let mut limit_rounds = 0;
    for w in ev.windows(3) {
        if let [(t0, Some(0)), (t1, None), (t2, Some(0))] = w {
            if t1 == t2 {
                assert!(
                    t1 - t0 == 600_000 || t1 % (4 * MS) == 0,
                    "a round of {} ns",
                    t1 - t0
                );
                limit_rounds += u32::from(t1 - t0 == 600_000);
            }
        }
    }
    // ~25 sleeps in 30 ms, each with one limit round (a few cut by ticks).
    assert!(limit_rounds >= 20, "{limit_rounds}");
}

/// POWER9: a thread whose core still runs a sibling reaches only its thread level:
/// asking for stop5 (200 µs) costs it stop2's 10 µs; the whole core idle costs
/// stop5's own.
#[test]
fn power9_core_states_are_coupled_over_the_threads() {
    let m = preset("power9-176").unwrap();
    let names: Vec<_> = m
        .idle_states(0)
        .iter()
        .map(|s| (s.name.as_str(), s.core))
        .collect();
    assert_eq!(
        names,
        [
            ("snooze", false),
            ("stop0_lite", false),
            ("stop0", false),
            ("stop1", false),
            ("stop2", false),
            ("stop4", true),
            ("stop5", true),
        ]
    );
    assert_eq!(m.idle_states(0)[0].kind, IdleKind::Snooze);
    assert_eq!(m.smt_mask(1).to_string(), "0-3");
    // A 30 ms sleeper on CPU 1 starting at 50 ms, with or without a hog on its
    // sibling CPU 0; the delay from the timer's expiry to its switch-in.
    let delay = |hog: bool| {
        let mut w = W::new();
        let p = w.prog("sleeper", vec![Op::Sleep(c(30 * MS))]);
        let t = w.task("sleeper", p, Some(CpuMask::of(1)));
        t.start_ns = 50 * MS;
        if hog {
            let p = w.prog("hog", hog_ops());
            w.task("hog", p, Some(CpuMask::of(0)));
            let idx = w.spec.tasks.len() - 1;
            w.spec.daemons.push(idx);
        }
        let sc = scenario(preset("power9-176").unwrap(), w.build(), None);
        let (_, trace) = run_ftrace(&sc, 1);
        // The request is stop5 (state 6) either way: the governor cannot know.
        let ev = cpu_idle(&trace, 1);
        let before_wake: Vec<_> = ev
            .iter()
            .filter(|e| e.0 > 50 * MS && e.1.is_some())
            .collect();
        assert_eq!(before_wake.first().unwrap().1, Some(6), "hog {hog}");
        let exit = ev
            .iter()
            .filter(|e| e.0 > 60 * MS && e.1.is_none())
            .map(|e| e.0)
            .next()
            .unwrap();
        let switch = trace
            .lines()
            .filter(|l| l.contains("sched_switch:") && l.contains("next_comm=sleeper"))
            .map(ts_ns)
            .find(|&t| t > 60 * MS)
            .unwrap();
        // The timer, armed as the sleeper switched out, expires 30 ms plus the
        // 50 µs slack later.
        let slept = trace
            .lines()
            .filter(|l| l.contains("sched_switch:") && l.contains("prev_comm=sleeper"))
            .map(ts_ns)
            .next()
            .unwrap();
        assert_eq!(
            switch, exit,
            "hog {hog}: the CPU runs the sleeper once awake"
        );
        exit - (slept + 30 * MS + 50_000)
    };
    let alone = delay(false);
    let beside = delay(true);
    // The interrupt at the timer's expiry; the `cpu_idle` exit fires once the
    // state's exit latency has passed (the whole core's alone, the thread's own
    // beside a busy sibling).
    assert_eq!(alone, 200_000);
    assert_eq!(beside, 10_000);
}

/// `--check` holds the idle loop to its rules after every event (a running CPU is in
/// no idle state, a stopped idle tick is not armed, only software loops carry a time
/// limit): a run of short and long sleepers under both governors keeps them, and each
/// rule, broken by hand, is reported.
#[test]
fn the_idle_loop_invariants_hold_and_catch_breakage() {
    for gov in [IdleGovernor::Menu, IdleGovernor::Teo] {
        let mut w = W::new();
        for (i, sleep) in [50_000, 300_000, 5 * MS].iter().enumerate() {
            let p = w.prog(
                &format!("s{i}"),
                times(30, vec![Op::Compute(c(80_000)), Op::Sleep(c(*sleep))]),
            );
            w.task(&format!("s{i}"), p, None);
        }
        let mut sc = scenario(preset("xeon-88").unwrap(), w.build(), None);
        sc.tunables.cpuidle = gov;
        let opts = schedlab::experiment::RunOpts {
            check: true,
            ..Default::default()
        };
        let mut sim = schedlab::experiment::build(&sc, 1, 0, &opts);
        sim.run(None).unwrap();
        let k = sim.kernel_mut();
        k.check_invariants().unwrap();
        // CPU 5 is idle: claim its stopped tick is armed.
        let rq = k.cpu_rq_mut(5);
        assert!(rq.curr.is_none() && rq.idle_state.is_some());
        let (stopped, armed) = (rq.idle_tick_stopped, rq.tick_armed);
        rq.idle_tick_stopped = true;
        rq.tick_armed = true;
        assert!(k
            .check_invariants()
            .unwrap_err()
            .contains("stopped but armed"));
        let rq = k.cpu_rq_mut(5);
        (rq.idle_tick_stopped, rq.tick_armed) = (stopped, armed);
        // A hardware state with a loop limit.
        let s = k.cpu_rq_mut(5).idle_state.unwrap();
        assert!(s > 0, "xeon-88's long-idle CPU sits in a hardware state");
        k.cpu_rq_mut(5).poll_until = 1;
        assert!(k
            .check_invariants()
            .unwrap_err()
            .contains("loop time limit"));
    }
}

/// The softlockup watchdog's hrtimer: every CPU's fires every `2 × watchdog_thresh
/// / 5` s (4 s by default) and wakes it from its idle state; `watchdog_thresh = 0`
/// turns it off. A task pinned to the 1-CPU machine sleeps 9.5 s on its own timer.
#[test]
fn the_watchdog_hrtimer_wakes_an_idle_cpu_every_period() {
    let exits = |thresh: Option<u64>| {
        let mut w = W::new();
        let p = w.prog("s", vec![Op::Compute(c(100_000)), Op::Sleep(c(9_500 * MS))]);
        w.task("s", p, Some(CpuMask::of(0)));
        let mut sc = scenario(test_topology(1, 1, 1, 1), w.build(), None);
        if let Some(t) = thresh {
            sc.tunables.watchdog_thresh = t;
        }
        // When the interrupt came: C6 is left, and the exit fires 133 µs later.
        let ev = cpu_idle(&run_ftrace(&sc, 1).1, 0);
        ev.iter()
            .filter(|e| e.1.is_none() && e.0 > 100 * MS)
            .map(|e| e.0 - TEST_EXIT_NS[2])
            .collect::<Vec<u64>>()
    };
    // Default (10 s): after the first idle tick (the start's short history keeps
    // the tick once), the interrupt at exactly 4 s and 8 s, then the task's own
    // timer (9.5 s after its sleep began, plus the 50 µs slack).
    let on = exits(None);
    assert_eq!(&on[..2], &[4_000 * MS, 8_000 * MS], "{on:?}");
    assert_eq!(on.len(), 3, "{on:?}");
    assert!(on[2] > 9_500 * MS, "{on:?}");
    // watchdog_thresh = 5: every 2 s.
    let five = exits(Some(5));
    assert_eq!(
        &five[..4],
        &[2_000 * MS, 4_000 * MS, 6_000 * MS, 8_000 * MS]
    );
    // Off: only the task's timer ends the idle period.
    let off = exits(Some(0));
    assert_eq!(off.len(), 1, "{off:?}");
    assert_eq!(off[0], on[2]);
}

/// menu's sleep length on a CPU whose only timer is the watchdog is the time to
/// that timer, so its correction factor can learn short idles there. Without it
/// (the blind spot of a model with no timers), adrestia's periodic worker on
/// HiKey960 waits on a pipe with an unbounded sleep length, menu's typical
/// interval gives up on the bimodal history of the main thread's CPU, and both
/// pick the deepest state: a wakeup pays cpu-sleep-1's 950 µs exit. With it, menu
/// leaves the start's deep equilibrium within 260 rounds (218 of them deep): the 90th percentile of
/// 5 000 rounds is a WFI wakeup.
#[test]
fn the_watchdog_bounds_menus_sleep_length_on_timerless_cpus() {
    let cost = |thresh: u64| {
        let mut sc = scenario_of(&format!(
            "[machine]\npreset = \"hikey960\"\n[kernel]\npreset = \"v5.6\"\n\
             [kernel.tunables]\nwatchdog_thresh = {thresh}\n\
             [workload]\nkind = \"adrestia\"\nthreads = 1\nloops = 5000\narrival = 10\n\
             test = \"periodic\"\n"
        ));
        sc.duration_ns = None;
        run_result(&sc).workload.tool["periodic_us"]
    };
    let with = cost(10);
    let without = cost(0);
    assert!(with < 20.0, "with the watchdog: {with} us");
    assert!(without > 900.0, "without: {without} us");
}
