//! Trace replay (issue 20 item 6): a simulated run's own ftrace text, replayed on the
//! same machine, gives each task the same run and sleep totals within 2 %.

mod common;

use common::*;
use schedlab::experiment::RunResult;
use schedlab::machine::presets::test_topology;
use schedlab::workload::program::Op;
use std::path::Path;

/// Per task name: (runtime, sleep) over the run, sleep = lifetime − runtime − time
/// waiting on a runqueue.
fn totals(r: &RunResult) -> Vec<(String, u64, u64)> {
    let mut v: Vec<_> = r
        .tasks
        .iter()
        .map(|t| {
            let life = t.exit_ns.unwrap_or(r.sim_time_ns) - t.start_ns;
            let sleep = life - t.runtime_ns - t.runqueue_wait_ns;
            (t.name.clone(), t.runtime_ns, sleep)
        })
        .collect();
    v.sort();
    v
}

/// Every task of `orig` has a namesake in `replayed` with its runtime and sleep
/// within 2 %.
fn assert_same_totals(orig: &RunResult, replayed: &RunResult) {
    let (a, b) = (totals(orig), totals(replayed));
    assert_eq!(a.len(), b.len());
    for ((name, run0, sleep0), (name1, run1, sleep1)) in a.iter().zip(&b) {
        assert_eq!(name, name1);
        let close = |x: u64, y: u64| (x as f64 - y as f64).abs() <= 0.02 * x as f64;
        assert!(close(*run0, *run1), "{name}: runtime {run0} vs {run1}");
        assert!(
            close(*sleep0, *sleep1),
            "{name}: sleep {sleep0} vs {sleep1}"
        );
    }
}

#[test]
fn a_runs_own_trace_replays_to_the_same_run_and_sleep_totals() {
    // Two periodic tasks (1 ms of work, 2 ms sleeps) and a futex ping-pong pair
    // (0.5 ms of work each way) on four CPUs, 200 ms.
    let mut w = W::new();
    w.spec.futexes = 2;
    let per = w.prog(
        "periodic",
        forever(vec![Op::Compute(c(MS)), Op::Sleep(c(2 * MS))]),
    );
    w.task("periodic-a", per, None);
    w.task("periodic-b", per, None);
    let ping = w.prog(
        "ping",
        forever(vec![
            Op::Compute(c(MS / 2)),
            Op::FutexPost { f: obj(1) },
            Op::FutexAwait { f: obj(0) },
        ]),
    );
    let pong = w.prog(
        "pong",
        forever(vec![
            Op::FutexAwait { f: obj(1) },
            Op::Compute(c(MS / 2)),
            Op::FutexPost { f: obj(0) },
        ]),
    );
    w.task("ping", ping, None);
    w.task("pong", pong, None);
    let m = test_topology(1, 1, 4, 1);
    let sc = scenario(m.clone(), w.build(), Some(200));
    let (orig, trace) = run_ftrace(&sc, 1);

    let g = schedlab::workload::replay::from_text(&trace, Path::new("t.txt"), &m).unwrap();
    assert_eq!(g.spec.tasks.len(), 4);
    let rsc = scenario(m, g.spec, Some(200));
    let (replayed, _) = run_ftrace(&rsc, 1);
    assert_same_totals(&orig, &replayed);
}

#[test]
fn an_eas_run_on_juno_replays_with_its_frequencies() {
    // scenarios/eas-juno.toml (schedutil, EAS, four periodic tasks) for 100 ms: the
    // bursts are scaled back by the traced frequencies, so the replay's runtimes and
    // sleeps match (and its energy, the figure such a trace is taken for).
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/eas-juno.toml");
    let text = std::fs::read_to_string(&path).unwrap();
    let mut sc = scenario_of(&text);
    sc.duration_ns = Some(100 * MS);
    let (orig, trace) = run_ftrace(&sc, 1);
    let g = schedlab::workload::replay::from_text(&trace, Path::new("t.txt"), &sc.machine).unwrap();
    let mut rsc = sc.clone();
    rsc.workload = std::sync::Arc::new(g.spec);
    rsc.tool = Some(g.tool);
    rsc.workload_kind = "replay".into();
    let (replayed, _) = run_ftrace(&rsc, 1);
    assert_same_totals(&orig, &replayed);
    let (e0, e1) = (
        orig.metrics.energy_joules.total.unwrap(),
        replayed.metrics.energy_joules.total.unwrap(),
    );
    assert!((e0 - e1).abs() <= 0.02 * e0, "energy {e0} vs {e1}");
}
