//! The fixed scenarios of `schedlab bench` (simulator speed).
//!
//! * small: 8 CPUs (`test_topology(1, 1, 4, 2)`), 32 tasks in ping-pong pairs over
//!   pipes plus compute/sleep workers;
//! * medium: `xeon-88`, 400 communicating tasks (200 pipe ping-pong pairs with
//!   short computes);
//! * large: `synthetic-1024`, 10 000 tasks (5 000 pairs).
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
        workload: w,
        duration_ns: Some(
            crate::engine::checked_ns_f64(duration_ms, NSEC_PER_MSEC).unwrap_or(MAX_TIME_NS),
        ),
        seed: 1,
        runs: 1,
    }
}

/// The names of the bench cases, in the order they run.
pub const CASES: [&str; 3] = ["small", "medium", "large"];

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
    let (shortest, longest) = (100.0 * scale, 2000.0 * scale); // ms
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

/// The three bench cases, with simulated durations scaled by `scale`.
pub fn cases(scale: f64) -> Vec<(&'static str, Scenario)> {
    let case = |name: &'static str, m: Machine, w: WorkloadSpec, duration_ms: f64| {
        let sc = scenario(&format!("bench-{name}"), m, w, duration_ms * scale);
        (name, sc)
    };
    vec![
        case(
            "small",
            presets::test_topology(1, 1, 4, 2),
            pingpong_workload(12, 20, 8),
            2000.0,
        ),
        case(
            "medium",
            presets::preset("xeon-88").expect("xeon-88"),
            pingpong_workload(200, 20, 0),
            500.0,
        ),
        case(
            "large",
            presets::preset("synthetic-1024").expect("synthetic-1024"),
            pingpong_workload(5000, 20, 0),
            100.0,
        ),
    ]
}
