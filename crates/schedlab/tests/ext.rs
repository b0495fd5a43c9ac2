//! sched_ext in the run loop (issue 21): `[kernel] class = "ext"` with a built-in
//! scheduler; the class's own rules are hand-computed in `sched/ext/tests.rs`.

mod common;

use common::*;
use schedlab::machine::presets::test_topology;
use schedlab::workload::program::Op;

/// Three 50 ms CPU hogs started at t = 0 on 2 CPUs without idle states, under
/// `sched` (`simple-fifo`: a global FIFO; `simple`: weighted vtime); the ftrace text.
fn three_hogs(sched: &str) -> (schedlab::experiment::RunResult, String) {
    let mut w = W::new();
    let p = w.prog("hog", vec![Op::Compute(c(50 * MS))]);
    for n in ["a", "b", "c"] {
        w.task(n, p, None);
    }
    let mut sc = scenario(no_idle(test_topology(1, 1, 2, 1)), w.build(), None);
    sc.tunables.ext_scheduler = Some(sched.to_string());
    run_ftrace(&sc, 1)
}

/// (time ns, cpu, next pid) of every switch to a task.
fn runs(trace: &str) -> Vec<(u64, usize, u32)> {
    trace
        .lines()
        .filter(|l| l.contains("sched_switch:") && !l.contains("next_pid=0 "))
        .map(|l| {
            let ts = l.split(": ").next().unwrap().rsplit(' ').next().unwrap();
            let (s, f) = ts.split_once('.').unwrap();
            let t =
                s.trim().parse::<u64>().unwrap() * 1_000_000_000 + f.parse::<u64>().unwrap() * 1000;
            let cpu = l.split('[').nth(1).unwrap()[..3].parse().unwrap();
            (t, cpu, word_after(l, "next_pid="))
        })
        .collect()
}

#[test]
fn simple_fifo_round_robins_20_ms_slices_through_the_shared_dsq() {
    let (r, trace) = three_hogs("simple-fifo");
    let rs = runs(&trace);
    // a (pid 1): the launcher's CPU 0 is idle and claimed: straight to its local
    // DSQ. b: CPU 0 is taken; CPU 0's distribute cursor (0) finds CPU 1 next. c: no
    // idle CPU left, so prev (0) and the shared DSQ.
    assert_eq!((rs[0].1, rs[0].2), (0, 1), "{rs:?}");
    assert_eq!((rs[1].1, rs[1].2), (1, 2), "{rs:?}");
    assert!(rs[0].0 < MS && rs[1].0 < MS);
    // A slice runs out at the first tick (HZ 250) after 20 ms of running: a began
    // at t = 0 exactly, so at the 20 ms tick; b, 2 µs later (the launcher's second
    // fork), at 24 ms. CPU 0 puts a behind c and takes c, the head; at 24 ms CPU 1
    // puts b and takes a, migrating it.
    assert_eq!(rs[2], (20 * MS, 0, 3), "{rs:?}");
    assert_eq!(rs[3], (24 * MS, 1, 1), "{rs:?}");
    assert_eq!(rs[4], (40 * MS, 0, 2), "{rs:?}");
    // Every hog ran its 50 ms; every placement is the class's.
    for t in &r.tasks {
        assert!(t.runtime_ns >= 50 * MS && t.runtime_ns < 51 * MS, "{t:?}");
    }
    assert!(trace.contains("sched_migrate_task"), "a moved to CPU 1");
}

#[test]
fn simple_vtime_runs_and_is_deterministic() {
    let (a, ta) = three_hogs("simple");
    let (b, tb) = three_hogs("simple");
    assert_eq!(ta, tb);
    assert_eq!(a.events, b.events);
    for t in &a.tasks {
        assert!(t.runtime_ns >= 50 * MS, "{t:?}");
    }
}

#[test]
fn class_and_scheduler_keys_are_checked() {
    let text = |k: &str| {
        format!(
            "[machine]\npreset = \"juno-r0\"\n[kernel]\npreset = \"v5.6\"\n{k}\n\
             [workload]\nkind = \"hackbench\"\ngroups = 1\nloops = 5\n"
        )
    };
    let err = |k: &str| {
        let doc = schedlab::config::Doc::parse(&text(k), std::path::Path::new("t.toml")).unwrap();
        schedlab::experiment::Scenario::from_doc(doc, &Default::default())
            .unwrap_err()
            .to_string()
    };
    assert!(err("class = \"ext\"").contains("needs a `scheduler`"));
    assert!(
        err("class = \"ext\"\nscheduler = \"nope\"").contains("unknown sched_ext scheduler `nope`")
    );
    assert!(err("scheduler = \"simple\"").contains("needs class = \"ext\""));
    assert!(err("class = \"rt\"").contains("unknown scheduling class `rt`"));
    let ok = scenario_of(&text("class = \"ext\"\nscheduler = \"simple\""));
    assert_eq!(ok.tunables.ext_scheduler.as_deref(), Some("simple"));
}

#[test]
fn hackbench_under_ext_passes_the_checks_on_smt_and_big_little() {
    // --check runs every event: the class's invariants and the rq counts.
    for (preset, sched) in [("xeon-e5-40", "simple-fifo"), ("juno-r0", "simple")] {
        let sc = scenario_of(&format!(
            "[machine]\npreset = \"{preset}\"\n[kernel]\npreset = \"v5.6\"\nclass = \"ext\"\n\
             scheduler = \"{sched}\"\n[workload]\nkind = \"hackbench\"\ngroups = 2\nloops = 20\n"
        ));
        let r = run_result(&sc);
        assert!(r.metrics.context_switches > 0);
        assert_eq!(r.workload.stop_reason, schedlab::sim::StopReason::Completed);
    }
}
