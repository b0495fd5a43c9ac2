//! Hand-read traces: each line format, and the ops each event sequence gives.

use super::*;
use crate::machine::presets::{preset, test_topology};

#[test]
fn tracefs_lines_in_every_layout() {
    // v5.6 layout with flags.
    let l = parse_line(
        "          <idle>-0     [003] d..2     0.001500: sched_switch: prev_comm=swapper/3 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=a b next_pid=7 next_prio=110",
    )
    .unwrap();
    assert_eq!((l.pid, l.cpu, l.ts_ns, l.irq), (0, 3, 1_500_000, false));
    assert_eq!(l.event, "sched_switch");
    let s = parse_switch(l.fields).unwrap();
    assert_eq!(
        (s.prev, s.prev_state, s.next, s.next_comm),
        (0, "R", 7, "a b")
    );
    assert_eq!(s.next_prio, Some(110));
    // No flags, ns timestamps, a comm with a dash, the TGID column.
    let l = parse_line("   my-task-12 (   12) [000]   12.000000345: sched_waking: comm=x pid=9 prio=120 target_cpu=001").unwrap();
    assert_eq!((l.pid, l.cpu, l.ts_ns), (12, 0, 12_000_000_345));
    assert_eq!(parse_wakee(l.fields), Some(("x", 9)));
    // Hard-IRQ context in v6's five flags.
    let l = parse_line(
        "  <idle>-0   [001] d.h2.   5.000001: sched_waking: comm=x pid=9 prio=120 target_cpu=001",
    )
    .unwrap();
    assert!(l.irq);
    // trace-cmd report's plugin formats.
    let l = parse_line("  hackbench-42    [002]  1234.567891: sched_switch:         hackbench:42 [120] S ==> swapper/2:0 [120]").unwrap();
    let s = parse_switch(l.fields).unwrap();
    assert_eq!(
        (s.prev, s.prev_comm, s.prev_state, s.next),
        (42, "hackbench", "S", 0)
    );
    let l = parse_line("  <idle>-0   [002]  1234.600000: sched_wakeup:         hackbench:42 [120] success=1 CPU:002").unwrap();
    assert_eq!(parse_wakee(l.fields), Some(("hackbench", 42)));
    // Headers and comments are not events.
    assert!(parse_line("# tracer: nop").is_none());
    assert!(parse_line("cpus=4").is_none());
    assert!(parse_line("").is_none());
}

#[test]
fn bursts_task_wakeups_and_timer_sleeps() {
    // On a 2-CPU test machine (capacity 1024): `a` runs 100 µs (preempted once, R,
    // which does not end its burst) and blocks; `b` issues a wakeup of `a` 30 µs into
    // its burst, while `a` still runs, runs 20 µs more and sleeps; the idle task
    // wakes `b` 1 ms after it slept (a timer).
    let text = "\
  <idle>-0 [000] d..2 1.000000: sched_switch: prev_comm=swapper/0 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=a next_pid=1 next_prio=120
  <idle>-0 [001] d..2 1.000000: sched_switch: prev_comm=swapper/1 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=b next_pid=2 next_prio=125
  a-1 [000] d..2 1.000040: sched_switch: prev_comm=a prev_pid=1 prev_prio=120 prev_state=R+ ==> next_comm=swapper/0 next_pid=0 next_prio=120
  <idle>-0 [000] d..2 1.000050: sched_switch: prev_comm=swapper/0 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=a next_pid=1 next_prio=120
  a-1 [000] d..2 1.000110: sched_switch: prev_comm=a prev_pid=1 prev_prio=120 prev_state=S ==> next_comm=swapper/0 next_pid=0 next_prio=120
  b-2 [001] d..2 1.000030: sched_waking: comm=a pid=1 prio=120 target_cpu=000
  b-2 [001] d..2 1.000050: sched_switch: prev_comm=b prev_pid=2 prev_prio=125 prev_state=S ==> next_comm=swapper/1 next_pid=0 next_prio=120
  <idle>-0 [001] d..2 1.001050: sched_waking: comm=b pid=2 prio=125 target_cpu=001
";
    let m = test_topology(1, 1, 2, 1);
    let g = from_text(text, Path::new("t.txt"), &m).unwrap();
    let s = &g.spec;
    assert_eq!(s.tasks.len(), 2);
    assert_eq!(
        (s.tasks[0].name.as_str(), s.tasks[1].name.as_str()),
        ("a", "b")
    );
    assert_eq!((s.tasks[0].start_ns, s.tasks[1].start_ns), (0, 0));
    assert_eq!(s.tasks[1].nice, 5);
    assert_eq!(s.futexes, 2);
    // `a` blocked at 110 µs but `b` woke it at 30 µs (sorted by time, the waking
    // line comes first and finds `a` awake: dropped). Its two run pieces make one
    // burst of 40 + 60 = 100 µs, then its sleep is never ended: no op.
    assert_eq!(s.programs[0].ops, vec![Op::Compute(Dist::Const(100_000))]);
    // `b`: no post (the wakeup it issued found `a` awake), one 50 µs burst, then the
    // 1 ms timer sleep less the 50 µs slack the replay's timer adds.
    assert_eq!(
        s.programs[1].ops,
        vec![
            Op::Compute(Dist::Const(50_000)),
            Op::Sleep(Dist::Const(950_000)),
        ]
    );
    let t = g.tool.report(&ToolInput {
        metrics: &s.metrics,
        hists: &[],
        sim_time_ns: 0,
    });
    assert_eq!(t.unwrap().values["irq_wakeups"], 1.0);
}

#[test]
fn a_wakeup_after_the_block_is_a_futex_pair() {
    let text = "\
  <idle>-0 [000] d..2 0.000000: sched_switch: prev_comm=swapper/0 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=a next_pid=1 next_prio=120
  a-1 [000] d..2 0.000100: sched_switch: prev_comm=a prev_pid=1 prev_prio=120 prev_state=S ==> next_comm=b next_pid=2 next_prio=120
  b-2 [000] d..2 0.000130: sched_waking: comm=a pid=1 prio=120 target_cpu=000
  b-2 [000] d..2 0.000130: sched_wakeup: comm=a pid=1 prio=120 target_cpu=000
  b-2 [000] d..2 0.000150: sched_switch: prev_comm=b prev_pid=2 prev_prio=120 prev_state=X ==> next_comm=a next_pid=1 next_prio=120
  a-1 [000] d..2 0.000200: sched_process_exit: comm=a pid=1 prio=120
";
    // Juno's CPU 0 is a LITTLE (capacity 446): its bursts are that share of the
    // wall time as reference work.
    let m = preset("juno-r0").unwrap();
    let cap = u64::from(m.cpus[0].capacity_orig);
    let g = from_text(text, Path::new("t.txt"), &m).unwrap();
    let s = &g.spec;
    let w = |i: u32| ObjRef {
        base: i,
        count: 1,
        idx: IdxExpr::Const(0),
    };
    assert_eq!(
        s.programs[0].ops,
        vec![
            Op::Compute(Dist::Const(100_000 * cap / 1024)),
            Op::FutexAwait { f: w(0) },
            Op::Compute(Dist::Const(50_000 * cap / 1024)),
        ]
    );
    // `b` starts at its switch-in (100 µs), posts `a` 30 µs in, runs 20 µs, exits.
    assert_eq!(s.tasks[1].start_ns, 100_000);
    assert_eq!(
        s.programs[1].ops,
        vec![
            Op::Compute(Dist::Const(30_000 * cap / 1024)),
            Op::FutexPost { f: w(0) },
            Op::Compute(Dist::Const(20_000 * cap / 1024)),
        ]
    );
}

#[test]
fn traces_without_events_are_refused() {
    let m = test_topology(1, 1, 1, 1);
    let e = from_text("# tracer: nop\n", Path::new("t.txt"), &m).unwrap_err();
    assert!(e.msg.contains("no trace events found"), "{e}");
    let e = from_text(
        "  a-1 [000] d..2 0.000001: hrtimer_start: hrtimer=0",
        Path::new("t.txt"),
        &m,
    )
    .unwrap_err();
    assert!(e.msg.contains("no scheduler events"), "{e}");
}

#[test]
fn bursts_are_scaled_by_the_traced_frequency() {
    // Juno's CPU 1 (an A57, capacity 1024, highest OPP 1 100 MHz): a 100 µs burst
    // whose first 40 µs run at 550 MHz does 20 + 60 = 80 µs of reference work.
    let m = preset("juno-r0").unwrap();
    let fmax = u64::from(m.freq_domains[m.cpus[1].freq_domain].max_freq_khz());
    assert_eq!(m.cpus[1].capacity_orig, 1024);
    let text = format!(
        "\
  <idle>-0 [001] d..2 0.000000: cpu_frequency: state={half} cpu_id=1
  <idle>-0 [001] d..2 0.000000: sched_switch: prev_comm=swapper/1 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=a next_pid=1 next_prio=120
  a-1 [001] d..2 0.000040: cpu_frequency: state={fmax} cpu_id=1
  a-1 [001] d..2 0.000100: sched_switch: prev_comm=a prev_pid=1 prev_prio=120 prev_state=S ==> next_comm=swapper/1 next_pid=0 next_prio=120
",
        half = fmax / 2
    );
    let g = from_text(&text, Path::new("t.txt"), &m).unwrap();
    assert_eq!(
        g.spec.programs[0].ops,
        vec![Op::Compute(Dist::Const(80_000))]
    );
}

#[test]
fn cpus_beyond_nr_cpus_are_refused_with_their_line() {
    let m = test_topology(1, 1, 1, 1);
    let e = from_text(
        "# tracer: nop\n  a-1 [4096] d..2 0.000001: sched_switch: prev_comm=a prev_pid=1 prev_prio=120 prev_state=S ==> next_comm=b next_pid=2 next_prio=120\n",
        Path::new("t.txt"),
        &m,
    )
    .unwrap_err();
    assert_eq!(e.line, Some(2));
    assert!(e.msg.contains("CPU 4096 is beyond NR_CPUS (1024)"), "{e}");
}
