//! Whole-simulation properties over random machines and random task sets, with the
//! kernel's structural invariants checked after every event (`RunOpts::check`), plus
//! the run loop's termination guarantees (deadlock and no-progress detection).

mod common;

use common::*;
use proptest::prelude::*;
use schedlab::experiment::RunResult;
use schedlab::machine::presets::test_topology;
use schedlab::machine::CpuMask;
use schedlab::sched::core::Policy;
use schedlab::sim::{SimError, StopReason};
use schedlab::workload::dist::Dist;
use schedlab::workload::program::{Op, WorkloadSpec};

/// One randomly drawn group of tasks.
#[derive(Clone, Debug)]
struct Group {
    kind: u8,
    /// Work / sleep scale in us.
    a: u64,
    b: u64,
    /// Affinity seed (0 = all CPUs).
    aff: u64,
    nice: i32,
    policy: u8,
}

fn uni(lo_us: u64, hi_us: u64) -> Dist {
    Dist::Uniform {
        lo: lo_us * US,
        hi: hi_us * US,
    }
}

/// Build a workload from the groups on a machine of `nr` CPUs. Kinds:
/// 0 compute/sleep loop; 1 pipe ping-pong pair; 2 compute + yield loop;
/// 3 futex waiter/waker pair; 4 three tasks sharing a mutex; 5 fork + wait loop.
/// Every construction keeps at least one way to make progress (no deadlock).
fn workload(groups: &[Group], nr: usize) -> WorkloadSpec {
    let mut w = W::new();
    let child = w.prog("child", vec![Op::Compute(uni(10, 300))]);
    let mut n = 0;
    for g in groups {
        let a = g.a.max(1);
        let b = g.b.max(1);
        let cpus = if g.aff == 0 {
            None
        } else {
            let mut m = CpuMask::new();
            for cpu in 0..nr {
                if (g.aff >> (cpu % 64)) & 1 == 1 {
                    m.set(cpu);
                }
            }
            if m.is_empty() {
                m.set((g.aff as usize) % nr);
            }
            Some(m)
        };
        let policy = match g.policy {
            0 => Policy::Batch,
            1 => Policy::Idle,
            _ => Policy::Normal,
        };
        let mut add = |w: &mut W, p: usize| {
            n += 1;
            let t = w.task(&format!("t{n}"), p, cpus);
            t.nice = g.nice;
            t.policy = policy;
            t.start_ns = (a % 7) * 100 * US;
        };
        match g.kind % 6 {
            0 => {
                let p = w.prog(
                    "cs",
                    forever(vec![Op::Compute(uni(1, a)), Op::Sleep(uni(1, b))]),
                );
                add(&mut w, p);
            }
            1 => {
                let base = w.pipes(2);
                let (ping, pong) = (obj(base), obj(base + 1));
                let p1 = w.prog(
                    "ping",
                    forever(vec![
                        Op::Compute(uni(1, a)),
                        write_to(ping, 64),
                        read_from(pong, 64),
                    ]),
                );
                let p2 = w.prog(
                    "pong",
                    forever(vec![
                        read_from(ping, 64),
                        Op::Compute(uni(1, b)),
                        write_to(pong, 64),
                    ]),
                );
                add(&mut w, p1);
                add(&mut w, p2);
            }
            2 => {
                let p = w.prog("yield", forever(vec![Op::Compute(uni(1, a)), Op::Yield]));
                add(&mut w, p);
            }
            3 => {
                let f = obj(w.spec.futexes);
                w.spec.futexes += 1;
                let waiter = w.prog(
                    "fwait",
                    forever(vec![
                        Op::FutexWait { f, expected: 0 },
                        Op::FutexSet { f, val: 0 },
                        Op::Compute(uni(1, a)),
                    ]),
                );
                let waker = w.prog(
                    "fwake",
                    forever(vec![
                        Op::Compute(uni(1, b)),
                        Op::FutexSet { f, val: 1 },
                        Op::FutexWake { f, n: 1 },
                        Op::Sleep(uni(1, a)),
                    ]),
                );
                add(&mut w, waiter);
                add(&mut w, waker);
            }
            4 => {
                let m = obj(w.spec.mutexes);
                w.spec.mutexes += 1;
                let p = w.prog(
                    "locker",
                    forever(vec![
                        Op::Lock(m),
                        Op::Compute(uni(1, a)),
                        Op::Unlock(m),
                        Op::Compute(uni(1, b)),
                    ]),
                );
                for _ in 0..3 {
                    add(&mut w, p);
                }
            }
            _ => {
                let p = w.prog(
                    "forker",
                    forever(vec![
                        Op::Fork {
                            prog: child,
                            thread: a % 2 == 0,
                        },
                        Op::WaitChild,
                        Op::Sleep(uni(1, b)),
                    ]),
                );
                add(&mut w, p);
            }
        }
    }
    w.build()
}

fn group() -> impl Strategy<Value = Group> {
    (
        0u8..6,
        1u64..2000,
        1u64..2000,
        prop_oneof![Just(0u64), any::<u64>()],
        -5i32..=5,
        0u8..8,
    )
        .prop_map(|(kind, a, b, aff, nice, policy)| Group {
            kind,
            a,
            b,
            aff,
            nice,
            policy,
        })
}

fn shape() -> impl Strategy<Value = (usize, usize, usize, usize)> {
    (1usize..=2, 1usize..=2, 1usize..=3, 1usize..=2)
}

/// The JSON of a result with the wall-clock field zeroed.
fn json_no_wall(mut r: RunResult) -> String {
    r.wall_seconds = 0.0;
    r.to_json()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    /// Invariants hold after every event; time accounting is physically possible; runs
    /// are deterministic. Under v5.6 CFS and under v6.6 EEVDF.
    #[test]
    fn random_systems_keep_invariants_and_accounting(
        sh in shape(),
        groups in prop::collection::vec(group(), 1..8),
        seed in 0u64..1000,
        eevdf in any::<bool>(),
    ) {
        let m = test_topology(sh.0, sh.1, sh.2, sh.3);
        let nr = m.nr_cpus();
        let mut sc = scenario(m, workload(&groups, nr), Some(60));
        sc.seed = seed;
        if eevdf {
            // The v6.6 class: --check also verifies its avg_vruntime sums.
            let k = schedlab::sched::features::KernelPreset::by_name("v6.6").unwrap();
            sc.kernel_preset = k.name;
            sc.features = k.features();
        }
        let (mut sim, r) = run_sim(&sc);
        // Bring the running tasks' runtimes up to the end, as results do.
        sim.kernel_mut().finish();
        // No deadlock by construction; invariant violations surface as errors here.
        prop_assert_eq!(r, Ok(StopReason::Duration));
        let now = sim.kernel().now();
        prop_assert_eq!(now, 60 * MS);
        let col = &sim.kernel().observer().collector;
        let mut total = 0u64;
        for t in sim.kernel().tasks().iter().skip(1) {
            let rt = t.se.sum_exec_runtime;
            let alive = now - t.stats.start_ns;
            // A task runs on one CPU at a time: runtime <= its lifetime, and running
            // and waiting on a runqueue are disjoint.
            prop_assert!(rt <= alive, "{} ran {} of {}", t.name, rt, alive);
            let wait = col.task_rq_wait(t.pid);
            prop_assert!(rt + wait <= alive, "{}: run {} + wait {} > {}", t.name, rt, wait, alive);
            prop_assert!(sim.kernel().cpus_allowed(t.pid).test(t.cpu) || t.state != schedlab::sched::core::TaskState::Runnable);
            total += rt;
        }
        // Runtime is charged only while current, and once brought up to date it is
        // exactly the CPUs' busy time (accounted independently, from the switch
        // events), which is at most nr * T.
        let mut busy = sim.kernel().observer().collector.busy_ns.clone();
        // Close the open busy intervals as RunResult::gather does.
        for (cpu, b) in busy.iter_mut().enumerate() {
            if sim.kernel().cpu_rq(cpu).curr.is_some() {
                *b += now - busy_since(&sim, cpu);
            }
        }
        let busy_total: u64 = busy.iter().sum();
        // Every workload kind computes: something ran.
        prop_assert!(total > 0);
        prop_assert!(total <= nr as u64 * now);
        prop_assert_eq!(total, busy_total, "runtime vs busy time");

        // The same scenario through experiment::run, twice: identical JSON (but the
        // wall time), busy fractions in [0, 1], task runtimes as above.
        let r1 = run_result(&sc);
        for &f in &r1.metrics.cpu_busy {
            prop_assert!((0.0..=1.0).contains(&f), "busy fraction {}", f);
        }
        // A CPU is never busy and in an idle state at once (fractions are rounded to
        // 1e-6 each).
        for (cpu, res) in r1.metrics.idle_residency.iter().enumerate() {
            let idle: f64 = res.values().sum();
            let total = idle + r1.metrics.cpu_busy[cpu];
            prop_assert!(total <= 1.0 + 1e-5, "cpu{}: busy + idle states = {}", cpu, total);
        }
        let sum: u64 = r1.tasks.iter().map(|t| t.runtime_ns).sum();
        prop_assert!(sum <= r1.machine.nr_cpus as u64 * r1.sim_time_ns);
        prop_assert_eq!(sum, total);
        let r2 = run_result(&sc);
        prop_assert_eq!(json_no_wall(r1), json_no_wall(r2));
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    /// Work conservation: tasks that each compute a fixed amount and exit, with random
    /// affinities and nice values on a random machine, all complete; no CPU runs
    /// faster than one reference ns per ns, so each task was current for at least its
    /// work plus its own switch-in (1000 ns) and exit (35 000 ns) costs, and the last
    /// exit comes no earlier than the total work spread over all CPUs.
    #[test]
    fn compute_only_tasks_complete_and_conserve_work(
        sh in shape(),
        tasks in prop::collection::vec((1u64..20_000, any::<u64>(), -5i32..=5), 1..12),
    ) {
        let m = test_topology(sh.0, sh.1, sh.2, sh.3);
        let nr = m.nr_cpus();
        let mut w = W::new();
        let mut total_work = 0;
        for (i, &(work_us, aff, nice)) in tasks.iter().enumerate() {
            let p = w.prog(&format!("p{i}"), vec![Op::Compute(c(work_us * US))]);
            let mut mask = CpuMask::new();
            for cpu in 0..nr {
                if (aff >> cpu) & 1 == 1 {
                    mask.set(cpu);
                }
            }
            let cpus = (!mask.is_empty() && aff % 3 != 0).then_some(mask);
            w.task(&format!("t{i}"), p, cpus).nice = nice;
            total_work += work_us * US;
        }
        let sc = scenario(m, w.build(), None);
        let (sim, r) = run_sim(&sc);
        prop_assert_eq!(r, Ok(StopReason::Completed));
        let mut last = 0;
        for (i, &(work_us, _, _)) in tasks.iter().enumerate() {
            let t = &sim.kernel().task(pid_of(&sim, &format!("t{i}")) as u32);
            let exit = t.stats.exit_ns.expect("exited");
            prop_assert!(t.se.sum_exec_runtime >= work_us * US + 1_000 + 35_000,
                "{}: ran {} for {} us of work", t.name, t.se.sum_exec_runtime, work_us);
            prop_assert!(t.se.sum_exec_runtime <= exit - t.stats.start_ns);
            last = last.max(exit);
        }
        prop_assert!(last >= total_work / nr as u64, "makespan {} for {} on {}", last, total_work, nr);
        prop_assert_eq!(sim.kernel().now(), last);
    }
}

/// Start of the open busy interval of `cpu` (the collector keeps it private): what
/// `finish` on a clone adds to the CPU's busy time.
fn busy_since(sim: &schedlab::sim::Sim<schedlab::metrics::Observers>, cpu: usize) -> u64 {
    let mut c = sim.kernel().observer().collector.clone();
    let before = c.busy_ns[cpu];
    c.finish(sim.kernel().now());
    sim.kernel().now() - (c.busy_ns[cpu] - before)
}

/// A reader on a pipe nobody writes: the run ends with a deadlock error naming it
/// (after the other task exits), instead of hanging.
#[test]
fn lonely_reader_deadlocks() {
    let mut w = W::new();
    let pipe = w.pipes(1);
    let r = w.prog("reader", vec![read_from(obj(pipe), 1)]);
    let other = w.prog("worker", vec![Op::Compute(c(2 * MS))]);
    w.task("lonely", r, None);
    w.task("worker", other, None);
    let sc = scenario(test_topology(1, 1, 2, 1), w.build(), None);
    let (sim, res) = run_sim(&sc);
    let exit = exit_ns(&sim, "worker").unwrap();
    match res {
        Err(SimError::Deadlock {
            blocked,
            detail,
            t_ns,
        }) => {
            assert_eq!(blocked, 1);
            assert_eq!(detail, "lonely");
            // Reported when the event queue runs dry: after the worker's exit (2 ms of
            // work + costs), once its CPU has stopped the tick it kept at the first
            // idle entry (see `circular_waits_deadlock`): the second tick, 8 ms.
            assert!(exit > 2 * MS && exit < 3 * MS, "{exit}");
            assert!(t_ns >= exit && t_ns <= 8 * MS, "{t_ns}");
        }
        other => panic!("expected a deadlock, got {other:?}"),
    }
    // With a duration the run simply stops at its end.
    let mut sc2 = sc.clone();
    sc2.duration_ns = Some(10 * MS);
    assert_eq!(run_sim(&sc2).1, Ok(StopReason::Duration));
}

/// Two tasks each reading the other's pipe first, and an ABBA mutex pair: both
/// deadlock with every participant named.
#[test]
fn circular_waits_deadlock() {
    let mut w = W::new();
    let base = w.pipes(2);
    let a = w.prog(
        "a",
        vec![read_from(obj(base), 1), write_to(obj(base + 1), 1)],
    );
    let b = w.prog(
        "b",
        vec![read_from(obj(base + 1), 1), write_to(obj(base), 1)],
    );
    w.task("pa", a, None);
    w.task("pb", b, None);
    let sc = scenario(test_topology(1, 1, 2, 1), w.build(), None);
    match run_sim(&sc).1 {
        Err(SimError::Deadlock {
            blocked, detail, ..
        }) => {
            assert_eq!(blocked, 2);
            assert!(detail.contains("pa") && detail.contains("pb"), "{detail}");
        }
        other => panic!("expected a deadlock, got {other:?}"),
    }

    let mut w = W::new();
    w.spec.mutexes = 2;
    let ab = w.prog(
        "ab",
        vec![Op::Lock(obj(0)), Op::Compute(c(MS)), Op::Lock(obj(1))],
    );
    let ba = w.prog(
        "ba",
        vec![Op::Lock(obj(1)), Op::Compute(c(MS)), Op::Lock(obj(0))],
    );
    w.task("m1", ab, Some(CpuMask::of(0)));
    w.task("m2", ba, Some(CpuMask::of(1)));
    let sc = scenario(test_topology(1, 1, 2, 1), w.build(), None);
    match run_sim(&sc).1 {
        Err(SimError::Deadlock {
            blocked,
            detail,
            t_ns,
        }) => {
            assert_eq!(blocked, 2);
            assert!(detail.contains("m1") && detail.contains("m2"), "{detail}");
            // Both block after ~1 ms of work; the queue runs dry once the idle CPUs
            // stop their ticks. menu's only recent sample is the short idle the
            // run started with (C6's exit, halved: 66 µs), so the first idle entry
            // keeps the tick; the 4 ms tick wakes the CPU and counts as a long idle
            // (45 ms), the two disagree, and the prediction falls back to the
            // timer-less sleep length: C6, tick stopped, at 8 ms.
            assert!((MS..=8 * MS).contains(&t_ns), "{t_ns}");
        }
        other => panic!("expected a deadlock, got {other:?}"),
    }
}

/// An endless loop that never needs CPU time cannot hang the simulator: it is
/// reported as making no progress, at the time it started.
#[test]
fn endless_zero_work_loop_is_reported() {
    let mut w = W::new();
    w.spec.futexes = 1;
    let p = w.prog("spinner", forever(vec![Op::FutexSet { f: obj(0), val: 1 }]));
    w.task("spinner", p, None);
    let sc = scenario(test_topology(1, 1, 1, 1), w.build(), Some(10));
    match run_sim(&sc).1 {
        Err(SimError::NoProgress { task, t_ns }) => {
            assert_eq!(task, "spinner");
            // Its first step comes after its CPU left the C6 state it starts in
            // (133 us) and the 1500 ns switch-in (context + mm switch).
            assert_eq!(t_ns, 133_000 + 1_500);
        }
        other => panic!("expected no-progress, got {other:?}"),
    }
}
