//! Kernel threads as background load (`[kernel] kthreads = "guest"`,
//! workload/kthreads.rs) in a run.

mod common;

use common::*;

/// A 2-node, 8-CPU machine (`machines/2s2c2t-2n.toml` of the oracle suite) running one
/// 2 s hog, with the `guest` kernel threads or without; the result and ftrace text.
fn run(kthreads: &str) -> (schedlab::experiment::RunResult, String) {
    let machine = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../scenarios/oracle/machines/2s2c2t-2n.toml")
        .canonicalize()
        .unwrap();
    let sc = scenario_of(&format!(
        "[machine]\nfile = \"{}\"\n[kernel]\nkthreads = \"{kthreads}\"\n[run]\nseed = 3\n\
         [workload]\nkind = \"tasks\"\n[[workload.task]]\nname = \"hog\"\n\
         program = [ {{ op = \"compute\", work = \"2000ms\" }} ]\n",
        machine.display()
    ));
    run_ftrace(&sc, 3)
}

#[test]
fn the_guest_profile_wakes_each_thread_where_and_as_often_as_it_should() {
    let (r, t) = run("guest");
    // The hog's 2 s decide the run's end; the daemons do not keep it alive.
    assert_eq!(r.workload.stop_reason, schedlab::sim::StopReason::Completed);
    assert!(r.sim_time_ns < 2_100_000_000, "{}", r.sim_time_ns);
    let task = |n: &str| r.tasks.iter().find(|x| x.name == n).unwrap();
    // kcompactd: a first activation at a phase φ in [0, 500 ms), then every
    // 500 ms + its 600 µs burst (+ timer slack): ⌊(T − φ) / 500.65 ms⌋ + 1 of them
    // by T ≈ 2 s, i.e. 3 or 4; each computes its 600 µs.
    for n in ["kcompactd0", "kcompactd1"] {
        let k = task(n);
        let runs = k.runtime_ns / 600_000;
        assert!((3..=4).contains(&runs), "{n}: {} ns", k.runtime_ns);
    }
    // ... and only on its node's CPUs (node 0: CPUs 0-3, node 1: 4-7).
    for l in t.lines().filter(|l| l.contains("next_comm=kcompactd")) {
        let cpu: usize = l.split('[').nth(1).unwrap()[..3].parse().unwrap();
        let node = if l.contains("next_comm=kcompactd0") {
            0
        } else {
            1
        };
        assert_eq!(cpu / 4, node, "{l}");
    }
    // rcu_preempt: exponential gaps of mean 33 ms, so ≈ 60 activations in 2 s
    // (Poisson: 60 ± 3σ is 37..83).
    let rcu = task("rcu_preempt").runtime_ns / 270_000;
    assert!((37..=83).contains(&rcu), "rcu_preempt ran {rcu} bursts");
    // Each kworker runs only on its own CPU.
    for l in t.lines().filter(|l| l.contains("next_comm=kworker/")) {
        let cpu: usize = l.split('[').nth(1).unwrap()[..3].parse().unwrap();
        let n: usize = l
            .split("next_comm=kworker/")
            .nth(1)
            .unwrap()
            .split(':')
            .next()
            .unwrap()
            .parse()
            .unwrap();
        assert_eq!(cpu, n, "{l}");
    }
    assert!(
        t.contains("next_comm=kworker/7:1"),
        "every CPU's kworker runs"
    );
}

#[test]
fn without_a_profile_there_is_no_kernel_thread_and_a_wrong_name_is_refused() {
    let (r, _) = run("none");
    assert_eq!(r.tasks.len(), 1);
    let text = "[machine]\npreset = \"juno-r0\"\n[kernel]\nkthreads = \"bare-metal\"\n\
                [workload]\nkind = \"hackbench\"\n";
    let doc = schedlab::config::Doc::parse(text, std::path::Path::new("t.toml")).unwrap();
    let e = schedlab::experiment::Scenario::from_doc(doc, &Default::default()).unwrap_err();
    assert_eq!(e.line, Some(4), "{e}");
    assert!(
        e.msg
            .contains("unknown kernel-thread profile `bare-metal` (known: none, guest)"),
        "{e}"
    );
}

/// Kernel threads exist from boot: at the start they are asleep, not forked. No
/// `sched_process_fork` or `sched_wakeup_new` names one, no CPU switches to one at
/// time 0, and the hog, alone at the start, is the only task the first `sched_switch`
/// lines name; every kworker's first switch-in comes at its own phase, on its CPU.
#[test]
fn kernel_threads_are_asleep_at_the_start_not_forked() {
    let (_, t) = run("guest");
    for l in t.lines() {
        if l.contains("sched_process_fork") || l.contains("sched_wakeup_new") {
            assert!(
                !(l.contains("kworker") || l.contains("rcu_preempt") || l.contains("kcompactd")),
                "{l}"
            );
        }
    }
    let first_in = |name: &str| {
        t.lines()
            .find(|l| l.contains(&format!("next_comm={name} ")))
            .map(|l| {
                let ts = l.split("]").nth(1).unwrap().split(':').next().unwrap();
                let ts: f64 = ts.split_whitespace().last().unwrap().parse().unwrap();
                (ts * 1e9) as u64
            })
    };
    let mut firsts: Vec<u64> = (0..8)
        .map(|c| first_in(&format!("kworker/{c}:1")).expect("each kworker runs"))
        .collect();
    assert!(firsts.iter().all(|&ns| ns > 1_000), "{firsts:?}");
    // Phases are exponential draws (mean 670 ms), one per thread: not all alike.
    firsts.sort_unstable();
    firsts.dedup();
    assert_eq!(firsts.len(), 8, "{firsts:?}");
}
