//! Regression tests for bugs found by running real scenarios.

use schedlab::experiment::{self, Overrides, RunOpts, Scenario};
use schedlab::workload::exec::StopReason;
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
    for rq in &sim.k.rqs {
        let pelt = schedlab::sched::pelt::rq_clock_pelt(&rq.pelt);
        assert!(
            pelt <= rq.pelt.clock_task,
            "cpu{}: pelt clock {} ahead of task clock {}",
            rq.cpu,
            pelt,
            rq.pelt.clock_task
        );
    }
    assert_eq!(sim.metrics.hists[0].count(), 1, "one timed window");
}
