//! Work classes (`[[core_kind]] work_per_clock`, `work_class` on a program): a task
//! whose work has a class the machine rates runs at that rate, not at the CPU's
//! capacity, while the scheduler keeps seeing the capacity.

mod common;

use common::*;

/// One task pinned to `cpu` computing 10 ms of reference work, with `class` (or none).
fn runtime(
    machine: &str,
    cpu: usize,
    class: Option<&str>,
) -> (u64, schedlab::experiment::RunResult) {
    let class = class.map_or(String::new(), |c| format!("work_class = \"{c}\"\n"));
    let sc = scenario_of(&format!(
        "[machine]\npreset = \"{machine}\"\n[run]\nseed = 1\n\
         [workload]\nkind = \"tasks\"\n[[workload.task]]\nname = \"t\"\ncpus = \"{cpu}\"\n{class}\
         program = [ {{ op = \"compute\", work = \"10ms\" }} ]\n"
    ));
    let (r, _) = run_ftrace(&sc, 1);
    let t = r.tasks.iter().find(|t| t.name == "t").unwrap();
    (t.runtime_ns, r)
}

/// `ns` within 5 µs of `want` (a tick more or less, 0.5 µs of kernel work each).
fn assert_about(ns: i64, want: i64) {
    assert!(
        (ns - want).abs() < 5_000,
        "{ns} ns, want {want} ns (± 5 µs)"
    );
}

/// Runtime without the class less runtime with it, on `cpu` of `machine`.
fn saved(machine: &str, cpu: usize) -> i64 {
    let (with, _) = runtime(machine, cpu, Some("sysbench-cpu"));
    let (without, _) = runtime(machine, cpu, None);
    without as i64 - with as i64
}

#[test]
fn a_classed_task_runs_at_its_class_rate_on_each_kind() {
    // juno-r0: reference frequency 1.1 GHz (the A57's top OPP). sysbench-cpu is
    // rated 624 reference cycles per clock on the A53 and 724 on the A57, so at their
    // top OPPs (performance governor) the A53 works at 624 × 850/1100 = 482 and the
    // A57 at 724, against capacities 446 and 1024. 10 ms of reference work:
    //   A53 (cpu0): 10e6 × 1024 / 482 = 21 244 814 ns with the class,
    //               10e6 × 1024 / 446 = 22 959 642 ns without: 1 714 828 ns saved;
    //   A57 (cpu1): 10e6 × 1024 / 724 = 14 143 647 ns with it, 10 000 000 without:
    //               4 143 647 ns lost.
    // Kernel work (fork, switches, ticks, exit) runs at capacity in both runs, so it
    // cancels in the difference.
    assert_about(saved("juno-r0", 0), 1_714_828);
    assert_about(saved("juno-r0", 1), -4_143_647);
    // Kernel work itself is charged at capacity: the same on both runs.
    let (with, _) = runtime("juno-r0", 1, Some("sysbench-cpu"));
    let kernel = with as i64 - 14_143_647;
    assert!((0..100_000).contains(&kernel), "{kernel}");
}

#[test]
fn a_class_the_machine_does_not_rate_runs_at_capacity() {
    // xeon-e5-40 rates no work class: the run is the classless one, event for event.
    let (a, ra) = runtime("xeon-e5-40", 3, Some("sysbench-cpu"));
    let (b, rb) = runtime("xeon-e5-40", 3, None);
    assert_eq!(a, b);
    assert_eq!(ra.events, rb.events);
    assert_eq!(ra.sim_time_ns, rb.sim_time_ns);
}

#[test]
fn one_program_has_one_class() {
    let text = "[machine]\npreset = \"juno-r0\"\n[workload]\nkind = \"tasks\"\n\
                [workload.programs]\np = [ { op = \"compute\", work = \"1ms\" } ]\n\
                [[workload.task]]\nname = \"a\"\nwork_class = \"x\"\nprogram = \"p\"\n\
                [[workload.task]]\nname = \"b\"\nwork_class = \"y\"\nprogram = \"p\"\n";
    let doc = schedlab::config::Doc::parse(text, std::path::Path::new("t.toml")).unwrap();
    let e = schedlab::experiment::Scenario::from_doc(doc, &Default::default()).unwrap_err();
    assert_eq!(e.line, Some(13), "{e}");
    assert!(
        e.msg.contains("program `p` already has work class `x`"),
        "{e}"
    );
}
