//! `schedlab explain`: the replay with probe logging changes nothing, and the
//! explanation accounts for every CPU the placement read.

mod common;

use common::{scenario_of, word_after};
use schedlab::experiment::explain::{explain, TaskSel};
use schedlab::experiment::{run, RunOpts, Scenario};
use schedlab::sched::{Func, WakeKind};

fn scenario(machine: &str, body: &str) -> Scenario {
    let text = format!("[machine]\npreset = \"{machine}\"\n[run]\nseed = 4\n[workload]\n{body}");
    scenario_of(&text)
}

/// The CPUs listed in "read in order: ..." parts, ranges expanded.
fn listed(text: &str) -> usize {
    text.lines()
        .filter_map(|l| l.split("read in order: ").nth(1))
        .flat_map(|l| l.split(", "))
        .map(|item| {
            let cpus = item.split(' ').next().unwrap();
            match cpus.split_once('-') {
                Some((a, b)) => b.parse::<usize>().unwrap() - a.parse::<usize>().unwrap() + 1,
                None => 1,
            }
        })
        .sum()
}

/// The top line's count: "select_task_rq_fair: N CPUs probed".
fn top_count(text: &str) -> usize {
    let l = text
        .lines()
        .find(|l| l.trim_start().starts_with("select_task_rq_fair:"))
        .unwrap();
    word_after(l, ": ")
}

#[test]
fn a_pipe_wakeup_is_explained_step_by_step() {
    let sc = scenario("xeon-88", "kind = \"perf-pipe\"\nloops = 2000\n");
    let e = explain(&sc, &TaskSel::Pid(2), 3_000_000).unwrap().unwrap();
    // The data: one wakeup of pid 2 by another CPU, one top-level call
    // (select_task_rq_fair), and every probe of the tree read by exactly one call.
    assert_eq!((e.kind, e.pid, e.roots.len()), (WakeKind::Wakeup, 2, 1));
    assert!(e.waker_cpu.is_some());
    let root = &e.calls[e.roots[0]];
    assert_eq!(root.func, Func::SelectTaskRqFair);
    let own: usize = e.calls.iter().map(|c| c.own.len()).sum();
    assert_eq!(own, root.probed, "own probes partition the root's");
    let text = e.text();
    assert!(text.contains("wakeup of pid 2 `worker1` by CPU"), "{text}");
    assert!(text.contains("  select_task_rq_fair: "), "{text}");
    assert!(text.contains("    select_idle_sibling: "), "{text}");
    assert_eq!(listed(&text), top_count(&text), "{text}");
}

#[test]
fn every_probe_is_listed_for_scans_and_forks() {
    for (m, body, task, at) in [
        (
            "xeon-88",
            "kind = \"hackbench\"\ngroups = 2\nloops = 30\n",
            "receiver",
            1_000_000,
        ),
        (
            "xeon-88",
            "kind = \"hackbench\"\ngroups = 2\nloops = 30\n",
            "sender",
            3_000_000,
        ),
        (
            "power9-176",
            "kind = \"hackbench\"\ngroups = 1\nloops = 30\n",
            "receiver",
            2_000_000,
        ),
    ] {
        let sc = scenario(m, body);
        let text = explain(&sc, &TaskSel::Name(task.into()), at)
            .unwrap()
            .unwrap()
            .text();
        assert_eq!(listed(&text), top_count(&text), "{m} {task}: {text}");
    }
}

#[test]
fn probe_logging_changes_no_decision() {
    let sc = scenario(
        "xeon-e5-40",
        "kind = \"hackbench\"\ngroups = 1\nloops = 20\n",
    );
    let plain = run(&sc, 4, 0, &RunOpts::default()).unwrap().0;
    let mut sim = schedlab::experiment::build(&sc, 4, 0, &RunOpts::default());
    sim.kernel_mut().set_log_probes(true);
    sim.run(None).unwrap();
    assert_eq!(sim.kernel().now(), plain.sim_time_ns);
    assert_eq!(sim.events(), plain.events);
}

#[test]
fn an_unknown_task_names_the_tasks_and_a_group_name_selects_its_members() {
    use schedlab::experiment::explain::Missing;
    let sc = scenario(
        "juno-r0",
        "kind = \"tasks\"\n[[workload.task]]\nname = \"w\"\ncount = 3\nprogram = [ { op = \"loop\", body = [ { op = \"compute\", work = \"200us\" }, { op = \"sleep\", time = \"300us\" } ] } ]\n",
    );
    match explain(&sc, &TaskSel::Name("nobody".into()), 1_000_000).unwrap() {
        Err(Missing::NoTask(names)) => {
            assert_eq!(names, ["w-0..2"], "groups folded");
        }
        other => panic!("{other:?}"),
    }
    // The tasks are w-0, w-1, w-2 (pids 1..=3): `w` selects each, nothing else does.
    assert!(TaskSel::Name("w".into()).selects(2, "w-1"));
    assert!(TaskSel::Name("w-1".into()).selects(2, "w-1"));
    assert!(!TaskSel::Name("w-".into()).selects(2, "w-1"));
    assert!(!TaskSel::Name("w".into()).selects(2, "w-x"));
    assert!(!TaskSel::Name("x".into()).selects(2, "w-1"));
    let group = "w".to_string();
    assert!(explain(&sc, &TaskSel::Name(group), 1_000_000)
        .unwrap()
        .is_ok());
}
