//! Regression tests for bugs found by running real scenarios.

use schedlab::experiment::{self, Overrides, RunOpts, Scenario};
use schedlab::sim::StopReason;
use std::path::Path;

/// Default hackbench on juno-r0 (400 processes): newidle balancing pulls tasks onto CPUs
/// that were about to idle. Lost PELT idle time used to be charged before the pull, so
/// `clock_pelt - lost_idle_time` underflowed (a debug-build panic). It must run to
/// completion, and every CPU's PELT clock must stay at or below its task clock.
#[test]
fn default_hackbench_runs_to_completion() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/hackbench.toml");
    let sc = Scenario::load(&path, &Overrides::default()).expect("scenario loads");
    let mut sim = experiment::build(&sc, sc.seed, 0, &RunOpts::default());
    let stop = sim.run(sc.duration_ns).expect("runs");
    assert_eq!(stop, StopReason::Completed);
    for rq in sim.kernel().rqs() {
        let pelt = schedlab::sched::pelt::rq_clock_pelt(&rq.pelt);
        assert!(
            pelt <= rq.pelt.clock_task,
            "cpu{}: pelt clock {} ahead of task clock {}",
            rq.cpu,
            pelt,
            rq.pelt.clock_task
        );
    }
    assert_eq!(sim.metrics().hists[0].count(), 1, "one timed window");
}

/// One task spinning for 10^6 s: every tick re-armed its segment end at the same far
/// time, and each cancelled copy stayed in the event queue until then (lazy
/// cancellation), so memory grew ~8 KB per simulated second (30 000 s: 240 MB).
/// The kernel now purges cancelled events once the queue outgrows what can be live:
/// the queue stays bounded however long the run, with the same result.
#[test]
fn a_long_spin_keeps_the_event_queue_bounded() {
    let text = r#"
[machine]
preset = "juno-r0"
[run]
duration_ms = 400000
[workload]
kind = "tasks"
[[workload.task]]
name = "s"
program = [ { op = "spin", time = "999999s" } ]
"#;
    let doc = schedlab::config::Doc::parse(text, Path::new("spin.toml")).unwrap();
    let sc = Scenario::from_doc(doc, &Overrides::default()).unwrap();
    let mut sim = experiment::build(&sc, sc.seed, 0, &RunOpts::default());
    sim.run(sc.duration_ns).expect("runs");
    let st = sim.stats();
    // 400 s at 250 Hz: 100 000 ticks, each cancelling one segment end.
    assert!(st.purged > 90_000, "{st:?}");
    let bound = 2
        * (schedlab::sched::core::PURGE_MIN
            + 8 * (sim.kernel().rqs().len() + sim.kernel().tasks().len()));
    assert!(st.max_queue <= bound, "{st:?} > {bound}");
}
