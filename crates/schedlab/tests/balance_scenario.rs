//! Scenario-level load-balancing tests (v5.6): CPU-bound tasks started on one CPU
//! spread to one per core; an idle CPU does not stay idle for long while another
//! CPU has two or more runnable tasks it could take (property over random small
//! machines); affinity is never violated. Every run checks the kernel invariants
//! after every event. The tests hold for any wakeup/fork placement.

mod common;

use common::task_spec;
use proptest::prelude::*;
use schedlab::engine::{Observer, RngStreams, SimTime};
use schedlab::machine::{presets, CpuMask, Machine};
use schedlab::sched::core::{Kernel, TaskState};
use schedlab::sched::features::{Features, Tunables};
use schedlab::sched::topology::TopologyOpts;
use schedlab::sched::{PrevState, SchedEvent, WakeKind};
use schedlab::sim::Sim;
use schedlab::workload::dist::Dist;
use schedlab::workload::ipc::ChanParams;
use schedlab::workload::program::{LoopCount, Op, Program, WorkloadSpec};

#[derive(Default)]
struct Rec {
    events: Vec<(SimTime, SchedEvent)>,
}

impl Observer<SchedEvent> for Rec {
    fn observe(&mut self, now: SimTime, ev: &SchedEvent) {
        self.events.push((now, *ev));
    }
}

const MS: u64 = 1_000_000;

fn compute_forever(chunk_ns: u64) -> Program {
    Program {
        name: "hog".into(),
        work_class: None,
        ops: vec![
            Op::Loop {
                count: LoopCount::Forever,
                end: 2,
            },
            Op::Compute(Dist::Const(chunk_ns)),
            Op::EndLoop { start: 0 },
        ],
    }
}

fn sim(m: Machine, w: WorkloadSpec) -> Sim<Rec> {
    let n = m.nr_cpus();
    let k = Kernel::new(
        m,
        Features::v5_6(),
        Tunables::v5_6(n),
        &TopologyOpts::v5_6(),
        Rec::default(),
    );
    let mut s = Sim::new(k, w, RngStreams::new(1, 0), ChanParams::x86_64());
    s.set_check(true);
    s
}

/// A parent spawns `n` compute-bound threads, then waits for them.
fn spawner(n: u64) -> WorkloadSpec {
    WorkloadSpec {
        programs: vec![
            Program {
                name: "parent".into(),
                work_class: None,
                ops: vec![
                    Op::Loop {
                        count: LoopCount::Times(Dist::Const(n)),
                        end: 2,
                    },
                    Op::Fork {
                        prog: 1,
                        thread: true,
                    },
                    Op::EndLoop { start: 0 },
                    Op::WaitChild,
                    Op::Exit,
                ],
            },
            compute_forever(MS),
        ],
        tasks: vec![task_spec("parent", 0, None)],
        ..WorkloadSpec::default()
    }
}

/// Children of the parent: the runnable hogs, with their CPU.
fn hogs<O>(k: &Kernel<O>) -> Vec<(u32, usize)> {
    k.tasks()
        .iter()
        .skip(2)
        .filter(|t| t.state == TaskState::Runnable)
        .map(|t| (t.pid, t.cpu))
        .collect()
}

/// CPU of every hog (pid >= 2) at time `at`, from the event stream (fork wakeups and
/// balance migrations; hogs never sleep).
fn hog_cpus_at(
    events: &[(SimTime, SchedEvent)],
    at: SimTime,
) -> std::collections::BTreeMap<u32, usize> {
    let mut cpu_of = std::collections::BTreeMap::new();
    for (t, e) in events {
        if *t > at {
            break;
        }
        match *e {
            SchedEvent::Wakeup { pid, cpu, .. }
            | SchedEvent::Placement {
                pid,
                kind: WakeKind::Balance,
                cpu,
                ..
            } if pid >= 2 => {
                cpu_of.insert(pid, cpu);
            }
            _ => {}
        }
    }
    cpu_of
}

#[test]
fn spawned_hogs_spread_one_per_core_on_xeon_88() {
    // One parent spawns one compute-bound thread per core (44). With a placement that
    // keeps forks on the parent's CPU they all start on CPU 0.
    let m = presets::preset("xeon-88").expect("xeon-88");
    let nr_cores = m.cpus.iter().map(|c| c.core).max().unwrap() + 1;
    let core_of: Vec<usize> = m.cpus.iter().map(|c| c.core).collect();
    let llc_of: Vec<usize> = (0..m.nr_cpus())
        .map(|c| m.llc_mask(c).first().unwrap())
        .collect();
    let mut s = sim(m, spawner(nr_cores as u64));
    s.run(Some(4_000 * MS)).expect("run succeeds with --check");
    let ev = &s.kernel().observer().events;
    let per_core = |at| {
        let mut pc = vec![0u32; nr_cores];
        let mut llc_of_core = vec![0usize; nr_cores];
        for (c, &core) in core_of.iter().enumerate() {
            llc_of_core[core] = llc_of[c];
        }
        let cpus = hog_cpus_at(ev, at);
        assert_eq!(cpus.len(), nr_cores, "all hogs forked");
        for &cpu in cpus.values() {
            pc[core_of[cpu]] += 1;
        }
        (pc, llc_of_core)
    };
    // Within 1 s: no core of an LLC holds two hogs while another core of that LLC
    // is idle (MC-level balancing, active balance for the running hog).
    let (pc, llc_of_core) = per_core(1_000 * MS);
    for a in 0..nr_cores {
        for b in 0..nr_cores {
            assert!(
                !(llc_of_core[a] == llc_of_core[b] && pc[a] >= 2 && pc[b] == 0),
                "at 1 s core {a} has {} hogs while core {b} of its LLC is idle: {pc:?}",
                pc[a]
            );
        }
    }
    // v5.6 fork balancing keeps new tasks on the parent's node while it has an idle
    // CPU (find_idlest_group, has_spare at SD_NUMA: "keep near the parent"), so the
    // 44 hogs first fill node 0's 44 CPUs, two per core. Every CPU of node 0 then
    // runs exactly one task, so the NUMA level can only move them by active balance
    // (after cache_nice_tries + 3 = 5 failed passes, the interval doubling after each
    // kick): node 1 fills slowly, one hog at a time.
    let node1 = |pc: &[u32]| -> u32 {
        (0..nr_cores)
            .filter(|&c| llc_of_core[c] != llc_of_core[0])
            .map(|c| pc[c])
            .sum()
    };
    let n1_at_1s = node1(&pc);
    let (pc4, _) = per_core(4_000 * MS);
    assert!(
        node1(&pc4) > n1_at_1s,
        "node 1 gains hogs over time: {n1_at_1s} -> {pc4:?}"
    );
    assert!(node1(&pc4) >= 4, "at 4 s: {pc4:?}");
    assert!(
        pc4.iter().all(|&n| n <= 2),
        "never more hogs than threads on a core: {pc4:?}"
    );
    // Every balance migration carries a balance reason.
    for (_, e) in ev {
        if let SchedEvent::Placement {
            kind: WakeKind::Balance,
            reason,
            ..
        } = e
        {
            assert!(
                reason.starts_with("balance:") || *reason == "active_balance",
                "{reason}"
            );
        }
    }
    let h = hogs(s.kernel());
    assert_eq!(h.len(), nr_cores, "all hogs alive and runnable");
}

#[test]
fn hogs_started_on_one_cpu_are_pulled_by_load_balancing() {
    // 4 cores x 2 threads; 4 hogs all pinned... no: all forked on the parent's CPU by
    // a placement that keeps forks local, or spread by one that does not. Either way
    // after 1 s no core holds two hogs while another core is idle.
    let m = presets::test_topology(1, 1, 4, 2);
    let core_of: Vec<usize> = m.cpus.iter().map(|c| c.core).collect();
    let mut s = sim(m, spawner(4));
    s.run(Some(1_000 * MS)).expect("run succeeds with --check");
    let h = hogs(s.kernel());
    assert_eq!(h.len(), 4);
    let mut per_core = [0u32; 4];
    for &(_, cpu) in &h {
        per_core[core_of[cpu]] += 1;
    }
    assert_eq!(per_core, [1, 1, 1, 1], "hogs {h:?}");
}

#[test]
fn affinity_is_respected_under_balancing() {
    // 2 nodes x 2 cores x SMT2. Six hogs pinned to CPUs {0,1}, three free, two
    // pinned to {6}; the run checks invariants (affinity included) after every
    // event, and balance placements land inside the affinity.
    let m = presets::test_topology(2, 1, 2, 2);
    let mut w = WorkloadSpec {
        programs: vec![compute_forever(MS)],
        ..WorkloadSpec::default()
    };
    let pin01 = CpuMask::parse_cpulist("0-1").unwrap();
    for i in 0..6 {
        w.tasks.push(task_spec(&format!("p{i}"), 0, Some(pin01)));
    }
    for i in 0..3 {
        w.tasks.push(task_spec(&format!("f{i}"), 0, None));
    }
    for i in 0..2 {
        w.tasks
            .push(task_spec(&format!("s{i}"), 0, Some(CpuMask::of(6))));
    }
    let mut s = sim(m, w);
    s.run(Some(500 * MS)).expect("run succeeds with --check");
    let mut balance_moves = 0;
    for (_, e) in &s.kernel().observer().events {
        if let SchedEvent::Placement {
            pid,
            kind: WakeKind::Balance,
            cpu,
            ..
        } = *e
        {
            balance_moves += 1;
            assert!(
                s.kernel().cpus_allowed(pid).test(cpu),
                "pid {pid} moved to cpu{cpu}"
            );
        }
    }
    for t in s.kernel().tasks().iter().skip(1) {
        assert!(s.kernel().cpus_allowed(t.pid).test(t.cpu));
    }
    // The free hogs do not stay on the crowded CPUs 0-1: 8 CPUs, 3 free hogs.
    for t in s.kernel().tasks().iter().skip(7).take(3) {
        assert!(t.cpu >= 2, "free hog {} stuck on cpu{}", t.pid, t.cpu);
    }
    let _ = balance_moves;
}

/// The longest time some CPU stayed idle while another CPU had two or more runnable
/// tasks allowed on it, reconstructed from the event stream.
#[allow(clippy::needless_range_loop)]
fn longest_idle_while_overloaded(
    events: &[(SimTime, SchedEvent)],
    nr_cpus: usize,
    allowed: &dyn Fn(u32, usize) -> bool,
    end: SimTime,
) -> (u64, SimTime, usize) {
    let mut on: Vec<Option<usize>> = Vec::new();
    let mut idle = vec![true; nr_cpus];
    let mut bad_since: Vec<Option<SimTime>> = vec![None; nr_cpus];
    let mut worst = (0u64, 0, 0);
    let mut i = 0;
    while i <= events.len() {
        let t = if i < events.len() { events[i].0 } else { end };
        // Evaluate the state that held up to `t`.
        for c in 0..nr_cpus {
            if let Some(s) = bad_since[c] {
                let d = t - s;
                if d > worst.0 {
                    worst = (d, s, c);
                }
            }
        }
        if i == events.len() {
            break;
        }
        // Apply every event at time t.
        while i < events.len() && events[i].0 == t {
            match events[i].1 {
                SchedEvent::Wakeup { pid, cpu, .. } => set(&mut on, pid, Some(cpu)),
                SchedEvent::Placement {
                    pid,
                    kind: WakeKind::Balance,
                    cpu,
                    ..
                } => set(&mut on, pid, Some(cpu)),
                SchedEvent::Switch { cpu, next, .. } => {
                    if let Some((p, prev_state)) = events[i].1.switched_out() {
                        if prev_state != PrevState::Preempted {
                            set(&mut on, p, None);
                        }
                    }
                    idle[cpu] = next.is_none();
                }
                _ => {}
            }
            i += 1;
        }
        for c in 0..nr_cpus {
            let overloaded_elsewhere = idle[c]
                && (0..nr_cpus).any(|j| {
                    j != c
                        && on
                            .iter()
                            .enumerate()
                            .filter(|&(p, &x)| x == Some(j) && allowed(p as u32, c))
                            .count()
                            >= 2
                });
            bad_since[c] = match (overloaded_elsewhere, bad_since[c]) {
                (true, Some(s)) => Some(s),
                (true, None) => Some(t),
                (false, _) => None,
            };
        }
    }
    worst
}

fn set(on: &mut Vec<Option<usize>>, pid: u32, v: Option<usize>) {
    let p = pid as usize;
    if on.len() <= p {
        on.resize(p + 1, None);
    }
    on[p] = v;
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 12, .. ProptestConfig::default() })]

    /// An idle CPU never stays idle longer than the balance intervals allow while
    /// another CPU has >= 2 runnable tasks it could run.
    #[test]
    fn idle_cpu_pulls_within_the_balance_interval(
        llcs in 1usize..=2,
        cores in 1usize..=3,
        smt in 1usize..=2,
        hogs in 2usize..=8,
        sleepers in 0usize..=3,
    ) {
        let m = presets::test_topology(1, llcs, cores, smt);
        let n = m.nr_cpus();
        prop_assume!(n >= 2);
        // The hogs are forked by one parent (so they start together on one CPU with
        // a placement that keeps forks local); the sleepers add wakeup noise.
        let mut w = spawner(hogs as u64);
        w.programs.push(Program {
            name: "sleeper".into(),
            work_class: None,
            ops: vec![
                Op::Loop { count: LoopCount::Forever, end: 3 },
                Op::Compute(Dist::Const(300_000)),
                Op::Sleep(Dist::Const(3 * MS)),
                Op::EndLoop { start: 0 },
            ],
        });
        for i in 0..sleepers {
            w.tasks.push(task_spec(&format!("s{i}"), 2, None));
        }
        let tick = Tunables::v5_6(n).tick_nsec();
        let mut s = sim(m, w);
        let end = 1_000 * MS;
        s.run(Some(end)).expect("run succeeds with --check");
        let (worst, since, cpu) =
            longest_idle_while_overloaded(&s.kernel().observer().events, n, &|_, _| true, end);
        if std::env::var_os("BALANCE_DEBUG").is_some() {
            eprintln!("n={n} hogs={hogs} sleepers={sleepers}: worst {worst} at {since} on cpu{cpu}");
        }
        // The relevant intervals: an idle CPU balances when its next_balance is due,
        // but the nohz ILB rewrites nohz.next_balance from the *other* idle CPUs it
        // visited; one that pulled work became busy, so the next balance kick can
        // wait for its lowest domain's busy interval (balance_interval x busy_factor,
        // the interval doubled up to max_interval). On top: the top domain's
        // max_interval a few times for cache-hot or running candidates
        // (nr_balance_failed > cache_nice_tries, active balance after
        // cache_nice_tries + 3 failures), and ticks for the kick and the IPI.
        let k = &s.kernel();
        let lowest_max = (0..n)
            .filter_map(|c| k.topology().sd[c])
            .map(|sd| k.topology().domains[sd].max_interval * k.topology().domains[sd].busy_factor as u64)
            .max()
            .unwrap_or(0);
        let top_max = 2 * n as u64;
        let bound = (lowest_max + 4 * top_max) * MS + 4 * tick;
        prop_assert!(
            worst <= bound,
            "cpu{} idle for {} ns from {} while another CPU had >= 2 runnable tasks (bound {})",
            cpu, worst, since, bound
        );
    }
}
