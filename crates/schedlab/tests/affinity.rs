//! `sched_setaffinity` in whole runs (issue 39): the v6.12 scenario that put a
//! delayed task on a CPU its affinity excluded, the `set_affinity` op of the
//! `tasks` workload with its three kinds of target, and a property test: random
//! machines (up to 16 CPUs, SMT, one or two nodes) and random programs that change
//! their own affinity and other tasks' (their children's, other groups'), sleep,
//! wake each other, fork and exit, run with every invariant checked after every
//! event (`--check`) under every kernel preset and both classes.

mod common;

use common::*;
use proptest::prelude::*;
use schedlab::machine::presets::test_topology;
use schedlab::machine::CpuMask;
use schedlab::sched::features::{KernelPreset, KERNEL_PRESETS};
use schedlab::sim::{SimError, StopReason};
use schedlab::workload::dist::Dist;
use schedlab::workload::program::{AffinityTarget, IdxExpr, ObjRef, Op};
use std::path::Path;

/// The machine file of the oracle suite the issue was found on.
fn oracle_machine() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../scenarios/oracle/machines/2s4c2t-2n.toml")
        .canonicalize()
        .unwrap()
        .display()
        .to_string()
}

/// Issue 39, as filed: eight rt-app threads pinned to CPU 0 behind a barrier, then
/// widened to CPUs 0-7, on the 2-node SMT2 guest machine under v6.12. Before the
/// fix `--check` stopped at t = 201 574 ns: a thread that pinned itself went to
/// sleep in the affinity call with negative lag, stayed queued (delayed) on CPU 8,
/// and its wakeup requeued it there.
#[test]
fn issue_39_pinned_rtapp_threads_under_v6_12_stay_inside_their_affinity() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("hogs.json");
    std::fs::write(
        &json,
        r#"{ "global": { "duration": -1, "calibration": "CPU0", "default_policy": "SCHED_OTHER" },
  "tasks": { "hog": { "instance": 8, "loop": 1, "phases": {
    "pinned": { "cpus": [0], "run": 2000, "barrier": "go" },
    "free":   { "cpus": [0, 1, 2, 3, 4, 5, 6, 7], "yield": 0, "run": 1000000 } } } } }"#,
    )
    .unwrap();
    for (preset, features) in [
        ("v6.12", ""),
        ("v6.12", "features = [\"NO_DELAY_DEQUEUE\"]\n"),
        ("v6.6", ""),
        ("v5.10", ""),
        ("v5.6", ""),
    ] {
        {
            let text = format!(
                "[machine]\nfile = {:?}\n[kernel]\npreset = \"{preset}\"\n{features}\
                 [run]\nseed = 1\n[workload]\nkind = \"rtapp\"\nfile = {:?}\n",
                oracle_machine(),
                json.display().to_string()
            );
            let sc = scenario_of(&text);
            let (sim, r) = run_sim(&sc);
            assert_eq!(r, Ok(StopReason::Completed), "{preset} {features}");
            // Every hog pinned itself to CPU 0 first: at the barrier all eight were
            // on CPU 0's queue, none elsewhere.
            let k = sim.kernel();
            let hogs = k
                .tasks()
                .iter()
                .filter(|t| t.name.starts_with("hog"))
                .count();
            assert_eq!(hogs, 8);
        }
    }
}

/// A `tasks` scenario on the 8-CPU `test` machine (1 node, 1 LLC, 4 cores, SMT2).
fn tasks_scenario(preset: &str, body: &str) -> schedlab::experiment::Scenario {
    scenario_of(&format!(
        "[machine]\npreset = \"xeon-e5-40\"\n[kernel]\npreset = \"{preset}\"\n\
         [run]\nseed = 1\nduration_ms = 50\n[workload]\nkind = \"tasks\"\n{body}"
    ))
}

/// The op's three targets, read from a scenario: a parent pins the child it just
/// forked (`task = "child"`), a controller pins every worker of a group by index
/// (`task = "worker[i]"` with its own instance), and a task pins itself. Each task
/// ends on the CPU it was given, and the controller, which moved running workers,
/// slept while the stopper did it.
#[test]
fn set_affinity_targets_self_a_child_and_a_group_member() {
    let sc = tasks_scenario(
        "v6.12",
        r#"
[workload.programs]
child = [ { op = "loop", count = 20, body = [ { op = "compute", work = "1ms" }, { op = "sleep", time = "100us" } ] } ]

[[workload.task]]
name = "worker"
count = 4
program = [ { op = "loop", body = [ { op = "compute", work = "1ms" } ] } ]

[[workload.task]]
name = "boss"
count = 4
start = "2ms"
program = [ { op = "set_affinity", cpus = "10-11", task = "worker[i]" }, { op = "sleep", time = "100ms" } ]

[[workload.task]]
name = "parent"
program = [
  { op = "fork", program = "child" },
  { op = "set_affinity", cpus = "20", task = "child" },
  { op = "set_affinity", cpus = "30" },
  { op = "loop", body = [ { op = "compute", work = "1ms" } ] },
]
"#,
    );
    let (sim, r) = run_sim(&sc);
    assert_eq!(r, Ok(StopReason::Duration));
    let k = sim.kernel();
    let t = |name: &str| k.task(pid_of(&sim, name) as u32);
    for i in 0..4 {
        let w = t(&format!("worker-{i}"));
        assert_eq!(*k.cpus_allowed(w.pid), CpuMask::from_iter([10, 11]));
        assert!([10, 11].contains(&w.cpu), "worker-{i} on {}", w.cpu);
    }
    assert_eq!(t("child").cpu, 20);
    assert_eq!(*k.cpus_allowed(t("child").pid), CpuMask::from_iter([20]));
    assert_eq!(t("parent").cpu, 30);
    // A boss that moved a running worker waited for the stopper and was woken by
    // it (its 100 ms sleep has not ended): at least the first one did, as every
    // worker was running when the bosses started.
    let waits: u64 = (0..4).map(|i| t(&format!("boss-{i}")).stats.wakeups).sum();
    assert!((1..=4).contains(&waits), "{waits}");
}

/// Bad targets and masks are input errors with the file, line and what is wrong.
#[test]
fn set_affinity_rejects_unknown_targets_and_cpus() {
    let err = |body: &str| {
        schedlab::experiment::Scenario::from_doc(
            schedlab::config::Doc::parse(
                &format!(
                    "[machine]\npreset = \"juno-r0\"\n[workload]\nkind = \"tasks\"\n\
                     [[workload.task]]\nname = \"a\"\ncount = 2\nprogram = [ {body} ]\n"
                ),
                Path::new("s.toml"),
            )
            .unwrap(),
            &Default::default(),
        )
        .unwrap_err()
        .to_string()
    };
    let e = err(r#"{ op = "set_affinity", cpus = "0", task = "b" }"#);
    assert!(
        e.contains("s.toml:8") && e.contains("unknown task group `b`"),
        "{e}"
    );
    let e = err(r#"{ op = "set_affinity", cpus = "0", task = "a[2]" }"#);
    assert!(e.contains("index 2 out of range"), "{e}");
    let e = err(r#"{ op = "set_affinity", cpus = "6" }"#);
    assert!(e.contains("must name CPUs of this 6-CPU machine"), "{e}");
    let e = err(r#"{ op = "set_affinity" }"#);
    assert!(e.contains("needs `cpus`"), "{e}");
}

// ---- the property test ----

/// One op of a random program. `Aff(mask, target)`: target 0 = self, 1 = the last
/// child, 2 + j = task j of the workload.
#[derive(Clone, Debug)]
enum Step {
    Compute(u64),
    Sleep(u64),
    Yield,
    Aff(usize, usize),
    Wake,
    Wait,
    Fork,
    Reap,
}

fn step(nr_tasks: usize) -> impl Strategy<Value = Step> {
    prop_oneof![
        3 => (20u64..2_000).prop_map(Step::Compute),
        2 => (10u64..1_000).prop_map(Step::Sleep),
        1 => Just(Step::Yield),
        5 => (0usize..4, 0usize..2 + nr_tasks).prop_map(|(m, t)| Step::Aff(m, t)),
        2 => Just(Step::Wake),
        2 => Just(Step::Wait),
        1 => Just(Step::Fork),
        1 => Just(Step::Reap),
    ]
}

/// A random task: its steps, whether it loops for ever (else 1–8 times, then it
/// exits), and its starting mask (None: all CPUs).
#[derive(Clone, Debug)]
struct Prog {
    steps: Vec<Step>,
    iterations: Option<u64>,
    start_mask: Option<usize>,
}

fn prog(nr_tasks: usize) -> impl Strategy<Value = Prog> {
    (
        prop::collection::vec(step(nr_tasks), 1..8),
        prop::option::weighted(0.6, 1u64..8),
        prop::option::weighted(0.3, 0usize..4),
    )
        .prop_map(|(steps, iterations, start_mask)| Prog {
            steps,
            iterations,
            start_mask,
        })
}

#[derive(Clone, Debug)]
struct Case {
    /// nodes, LLCs per node, cores per LLC, SMT.
    shape: (usize, usize, usize, usize),
    idle_states: bool,
    /// Seeds of the four masks (bit i: CPU i mod 64; never empty).
    masks: [u64; 4],
    progs: Vec<Prog>,
    seed: u64,
    /// Odd: an emulated machine whose busy vCPUs a host time-slices (SIM_VCPU_HOST),
    /// on `1 + host / 2 % (CPUs − 1)` host CPUs with a slice of 100 µs-3 ms.
    host: u8,
}

fn case() -> impl Strategy<Value = Case> {
    (
        (1usize..=2, 1usize..=2, 1usize..=4, 1usize..=2),
        any::<bool>(),
        any::<[u64; 4]>(),
        2usize..=6,
        0u64..1000,
        any::<u8>(),
    )
        .prop_flat_map(|(shape, idle_states, masks, n, seed, host)| {
            prop::collection::vec(prog(n), n).prop_map(move |progs| Case {
                shape,
                idle_states,
                masks,
                progs,
                seed,
                host,
            })
        })
        .prop_filter("at most 16 CPUs", |c| {
            c.shape.0 * c.shape.1 * c.shape.2 * c.shape.3 <= 16
        })
}

fn us(v: u64) -> Dist {
    Dist::Const(v * US)
}

/// The case as a workload on `nr` CPUs: task `i` runs its steps; `Wake` wakes one
/// waiter of the shared futex, `Wait` sleeps on it (a timed sleep of every task
/// keeps the run going); `Fork` forks a child that pins itself and exits.
fn build(c: &Case, nr: usize) -> schedlab::workload::program::WorkloadSpec {
    let mut w = W::new();
    for seed in c.masks {
        let m: CpuMask = (0..nr).filter(|&i| (seed >> (i % 64)) & 1 == 1).collect();
        let m = if m.is_empty() {
            CpuMask::from_iter([seed as usize % nr])
        } else {
            m
        };
        w.spec.masks.push(m);
    }
    w.spec.futexes = 1;
    let f = obj(0);
    let n = c.progs.len() as u32;
    let child = w.prog(
        "child",
        vec![
            Op::SetAffinity {
                mask: 1,
                target: AffinityTarget::Current,
            },
            Op::Compute(us(200)),
            Op::Exit,
        ],
    );
    for (i, p) in c.progs.iter().enumerate() {
        let body: Vec<Op> = p
            .steps
            .iter()
            .map(|s| match *s {
                Step::Compute(t) => Op::Compute(us(t)),
                Step::Sleep(t) => Op::Sleep(us(t)),
                Step::Yield => Op::Yield,
                Step::Aff(m, t) => Op::SetAffinity {
                    mask: m as u32,
                    target: match t {
                        0 => AffinityTarget::Current,
                        1 => AffinityTarget::LastChild,
                        j => AffinityTarget::Task(ObjRef {
                            base: 0,
                            count: n,
                            idx: IdxExpr::Const((j - 2) as u32),
                        }),
                    },
                },
                Step::Wake => Op::FutexWake { f, n: 1 },
                Step::Wait => Op::FutexWait { f, expected: 0 },
                Step::Fork => Op::Fork {
                    prog: child,
                    thread: i % 2 == 1,
                },
                Step::Reap => Op::WaitChild,
            })
            .collect();
        // Every iteration ends with a short timed sleep, so that a task waiting on
        // the futex is not the only thing left.
        let mut body = body;
        body.push(Op::Sleep(us(50)));
        let ops = match p.iterations {
            None => forever(body),
            Some(k) => {
                let mut ops = times(k, body);
                ops.push(Op::Exit);
                ops
            }
        };
        let prog = w.prog(&format!("p{i}"), ops);
        let cpus = p.start_mask.map(|m| w.spec.masks[m]);
        w.task(&format!("t{i}"), prog, cpus);
    }
    w.build()
}

/// Run `c` under `preset` with the fair class or (`ext`) the sched_ext scheduler
/// `sched`; Ok unless an invariant broke (a deadlock or an exhausted workload is an
/// outcome of the random program, not a fault).
fn check_case(c: &Case, preset: &KernelPreset, ext: Option<&str>) -> Result<(), String> {
    let mut m = test_topology(c.shape.0, c.shape.1, c.shape.2, c.shape.3);
    if !c.idle_states {
        m = no_idle(m);
    }
    let nr = m.nr_cpus();
    if c.host % 2 == 1 && nr > 1 {
        let cpus = 1 + (c.host as usize / 2) % (nr - 1);
        m.vcpu_throughput = (1..=nr)
            .map(|k| (1024 * cpus.min(k) / k).max(1) as u32)
            .collect();
        m.vcpu_host = Some(schedlab::machine::VcpuHost {
            cpus: cpus as u32,
            slice_ns: 100_000 + (c.host as u64 * 37_000) % 2_900_000,
        });
    }
    let mut sc = scenario(m, build(c, nr), Some(30));
    sc.seed = c.seed;
    sc.kernel_preset = preset.name;
    sc.features = preset.features();
    sc.tunables.ext_scheduler = ext.map(str::to_string);
    let (_, r) = run_sim(&sc);
    match r {
        Ok(_) => Ok(()),
        Err(e @ (SimError::Invariant { .. } | SimError::Internal { .. })) => {
            Err(format!("{} {}: {e}", preset.name, ext.unwrap_or("fair")))
        }
        Err(_) => Ok(()),
    }
}

/// How many cases: `PROPTEST_CASES` when set, else 32 (each case runs 14 times:
/// every preset with the fair class and with a sched_ext scheduler).
fn cases() -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(32)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(), ..ProptestConfig::default() })]

    /// No schedule the kernel could not produce: after every event of every run, a
    /// runnable or delayed task is inside its affinity (or its migration stop is on
    /// its way), and every other invariant `--check` knows holds, under every kernel
    /// preset, with the fair class and with sched_ext (the three built-in schedulers in
    /// turn), in half the cases on vCPUs a host time-slices.
    #[test]
    fn random_affinity_changes_keep_every_invariant(c in case()) {
        for (i, preset) in KERNEL_PRESETS.iter().enumerate() {
            check_case(&c, preset, None).map_err(TestCaseError::fail)?;
            let sched = ["simple", "simple-fifo", "llc-vtime"][i % 3];
            check_case(&c, preset, Some(sched)).map_err(TestCaseError::fail)?;
        }
    }
}
