//! The fixed scenarios of `schedlab bench` (simulator speed).
//!
//! * small: 8 CPUs (`test_topology(1, 1, 4, 2)`), 32 tasks in ping-pong pairs over
//!   pipes plus compute/sleep workers;
//! * medium: `xeon-88`, 400 communicating tasks (200 pipe ping-pong pairs with
//!   short computes);
//! * large: `synthetic-1024`, 10 000 tasks (5 000 pairs);
//! * crowd: 8 CPUs (`test_topology(1, 1, 4, 2)`), 100 000 tasks each looping
//!   compute 50 µs / sleep 100 µs (12 500 runnable per runqueue: the CFS timeline
//!   and per-task state at scale);
//! * huge: `synthetic-1024`, the same 100 000 tasks (the wakeup and balance paths
//!   on 1 024 CPUs with a crowd).
//!
//! Reports simulated events per wall second and the process's peak resident memory
//! (`VmHWM` from `/proc/self/status`).

use crate::engine::{MAX_TIME_NS, NSEC_PER_MSEC, NSEC_PER_USEC};
use crate::experiment::Scenario;
use crate::machine::{presets, Machine};
use crate::sched::features::{KernelPreset, Tunables};
use crate::workload::dist::Dist;
use crate::workload::ipc::ChanKind;
use crate::workload::program::{
    ChanDecl, IdxExpr, LoopCount, ObjRef, Op, Program, TaskSpec, WorkloadSpec,
};

/// `pairs` ping-pong pairs over pipes, each side computing ~`work_us` per message,
/// plus `workers` tasks looping compute ~exp(500us) / sleep 1ms.
pub(crate) fn pingpong_workload(pairs: u32, work_us: u64, workers: u32) -> WorkloadSpec {
    let chan = |base: u32| ObjRef {
        base,
        count: pairs,
        idx: IdxExpr::Instance { div: 1, add: 0 },
    };
    let (ping, pong) = (chan(0), chan(pairs));
    let work = Dist::Exp {
        mean: work_us * NSEC_PER_USEC,
    };
    let side = |first_write: bool| {
        let (w, r) = if first_write {
            (ping, pong)
        } else {
            (pong, ping)
        };
        let io = if first_write {
            vec![
                Op::Write { ch: w, bytes: 100 },
                Op::Read { ch: r, bytes: 100 },
            ]
        } else {
            vec![
                Op::Read { ch: r, bytes: 100 },
                Op::Write { ch: w, bytes: 100 },
            ]
        };
        let mut ops = vec![
            Op::Loop {
                count: LoopCount::Forever,
                end: 4,
            },
            Op::Compute(work),
        ];
        ops.extend(io);
        ops.push(Op::EndLoop { start: 0 });
        ops
    };
    let mut spec = WorkloadSpec {
        programs: vec![
            Program::new("ping", side(true)),
            Program::new("pong", side(false)),
            Program {
                name: "worker".into(),
                work_class: None,
                ops: vec![
                    Op::Loop {
                        count: LoopCount::Forever,
                        end: 3,
                    },
                    Op::Compute(Dist::Exp {
                        mean: 500 * NSEC_PER_USEC,
                    }),
                    Op::Sleep(Dist::Const(NSEC_PER_MSEC)),
                    Op::EndLoop { start: 0 },
                ],
            },
        ],
        channels: vec![
            ChanDecl {
                name: "ping".into(),
                kind: ChanKind::Pipe,
                count: pairs,
            },
            ChanDecl {
                name: "pong".into(),
                kind: ChanKind::Pipe,
                count: pairs,
            },
        ],
        ..WorkloadSpec::default()
    };
    for i in 0..pairs {
        for (p, name) in [(0, "ping"), (1, "pong")] {
            spec.tasks.push(TaskSpec::new(format!("{name}-{i}"), p, i));
        }
    }
    for i in 0..workers {
        spec.tasks.push(TaskSpec::new(format!("worker-{i}"), 2, i));
    }
    spec
}

/// `tasks` tasks each looping: compute `compute_us`, sleep `sleep_us` (the
/// rt-app-style periodic load of the scaling cases).
pub(crate) fn compute_sleep_workload(tasks: u32, compute_us: u64, sleep_us: u64) -> WorkloadSpec {
    let mut spec = WorkloadSpec {
        programs: vec![Program {
            name: "loop".into(),
            work_class: None,
            ops: vec![
                Op::Loop {
                    count: LoopCount::Forever,
                    end: 3,
                },
                Op::Compute(Dist::Const(compute_us * NSEC_PER_USEC)),
                Op::Sleep(Dist::Const(sleep_us * NSEC_PER_USEC)),
                Op::EndLoop { start: 0 },
            ],
        }],
        ..WorkloadSpec::default()
    };
    for i in 0..tasks {
        spec.tasks.push(TaskSpec::new(format!("loop-{i}"), 0, i));
    }
    spec
}

/// A scenario value for `machine` running `w` for `duration_ms`.
pub fn scenario(name: &str, machine: Machine, w: WorkloadSpec, duration_ms: f64) -> Scenario {
    let k = KernelPreset::by_name("v5.6").expect("v5.6");
    Scenario {
        name: name.into(),
        tunables: Tunables::v5_6(machine.nr_cpus()),
        machine,
        kernel_preset: k.name,
        features: k.features(),
        workload_kind: "tasks".into(),
        tool: None,
        noise: 0.0,
        shadow: None,
        workload: w.into(),
        duration_ns: Some(
            crate::engine::checked_ns_f64(duration_ms, NSEC_PER_MSEC).unwrap_or(MAX_TIME_NS),
        ),
        seed: 1,
        runs: 1,
    }
}

/// The names of the bench cases, in the order they run.
pub const CASES: [&str; 5] = ["small", "medium", "large", "crowd", "huge"];

/// The cases' simulated durations at scale 1 (ms), in [`CASES`] order.
const DURATIONS_MS: [f64; 5] = [2000.0, 500.0, 100.0, 20.0, 20.0];

/// Check `bench --only` names and `--scale`: every name a case, and the scale a
/// finite positive factor that keeps each case's duration within 1 ns ..=
/// [`crate::engine::MAX_TIME_NS`].
pub fn check_args(only: &[String], scale: f64) -> Result<(), crate::error::InputError> {
    use crate::error::InputError;
    if let Some(bad) = only.iter().find(|o| !CASES.contains(&o.as_str())) {
        return Err(InputError::new(format!(
            "--only: unknown bench case `{bad}` (the cases are {})",
            CASES.join(", ")
        )));
    }
    let shortest = DURATIONS_MS.iter().copied().fold(f64::INFINITY, f64::min) * scale;
    let longest = DURATIONS_MS.iter().copied().fold(0.0, f64::max) * scale;
    let ok = scale.is_finite()
        && crate::engine::checked_ns_f64(shortest, NSEC_PER_MSEC).is_some_and(|ns| ns > 0)
        && crate::engine::checked_ns_f64(longest, NSEC_PER_MSEC).is_some();
    if !ok {
        return Err(InputError::new(format!(
            "--scale {scale:?}: must be a positive number that keeps each case between 1 ns and {} s \
             of simulated time",
            crate::engine::MAX_TIME_NS / crate::engine::NSEC_PER_SEC
        )));
    }
    Ok(())
}

/// Bench case `name` (one of [`CASES`]), its simulated duration scaled by `scale`;
/// built on demand, so that `bench --only medium` does not build the crowds.
pub fn case(name: &str, scale: f64) -> Option<Scenario> {
    let i = CASES.iter().position(|c| *c == name)?;
    let synthetic = || presets::preset("synthetic-1024").expect("synthetic-1024");
    let eight = || presets::test_topology(1, 1, 4, 2);
    let (m, w) = match name {
        "small" => (eight(), pingpong_workload(12, 20, 8)),
        "medium" => (
            presets::preset("xeon-88").expect("xeon-88"),
            pingpong_workload(200, 20, 0),
        ),
        "large" => (synthetic(), pingpong_workload(5000, 20, 0)),
        "crowd" => (eight(), compute_sleep_workload(100_000, 50, 100)),
        _ => (synthetic(), compute_sleep_workload(100_000, 50, 100)),
    };
    Some(scenario(
        &format!("bench-{name}"),
        m,
        w,
        DURATIONS_MS[i] * scale,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Prefetch hints (engine/prefetch.rs) only ask for cache lines: the same
    /// run with them on every event and with none makes the same decisions, event
    /// for event.
    #[test]
    fn prefetch_hints_change_no_decision() {
        let sc = case("small", 0.2).expect("small");
        let opts = crate::experiment::RunOpts {
            trace: true,
            ..Default::default()
        };
        let run = |min_tasks: usize| {
            let mut sim = crate::experiment::build(&sc, 1, 0, &opts);
            sim.set_prefetch_min_tasks(min_tasks);
            sim.run(sc.duration_ns).expect("the bench case runs");
            let trace = sim.k.obs.trace.take().expect("a decision trace").text;
            (sim.stats().events, sim.stats().stale, trace)
        };
        let (on, off) = (run(0), run(usize::MAX));
        assert!(
            on.0 > 10_000 && on.2.lines().count() > 1_000,
            "{:?}",
            (on.0, on.1)
        );
        assert_eq!(on, off);
    }

    #[test]
    fn every_case_builds_and_the_crowds_have_their_tasks() {
        for name in CASES {
            let sc = case(name, 1.0).expect(name);
            assert_eq!(sc.name, format!("bench-{name}"));
            sc.workload.validate().expect(name);
        }
        let crowd = case("crowd", 0.5).unwrap();
        assert_eq!(
            (crowd.machine.nr_cpus(), crowd.workload.tasks.len()),
            (8, 100_000)
        );
        assert_eq!(crowd.duration_ns, Some(10 * NSEC_PER_MSEC));
        let huge = case("huge", 1.0).unwrap();
        assert_eq!(
            (huge.machine.nr_cpus(), huge.workload.tasks.len()),
            (1024, 100_000)
        );
        assert!(case("nope", 1.0).is_none());
        // The scale bounds follow the shortest and longest case.
        assert!(check_args(&[], 1e-9).is_err());
        assert!(check_args(&["huge".into()], 1.0).is_ok());
        assert!(check_args(&["giant".into()], 1.0).is_err());
    }
}
