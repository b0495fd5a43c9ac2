//! The decisions of hand-written traces, counted by hand: wakeup classes,
//! migrations by level and mechanism, fork placement and the task filter, spread
//! from a release, the fixed-band verdicts; and a property: a renumbering of CPUs
//! that keeps the topology changes nothing.

use super::bands::tvd;
use super::*;
use crate::machine::presets::test_topology;
use proptest::prelude::*;

/// One line in the real kernel's layout (6 decimals, no tgid column).
fn l(cpu: usize, us: u64, who: &str, body: &str) -> String {
    format!(
        "{who:>16} [{cpu:03}] d..2. {:>5}.{:06}: {body}\n",
        us / 1_000_000,
        us % 1_000_000
    )
}

fn bench() -> DecisionOpts {
    DecisionOpts {
        filter: TaskFilter::comm_prefix("bench"),
        sample_step_ns: 0,
        ..Default::default()
    }
}

/// 2 nodes × 2 LLCs × 2 cores × 2 threads: core = cpu / 2, LLC = cpu / 4,
/// node = cpu / 8.
fn m16() -> Machine {
    test_topology(2, 2, 2, 2)
}

/// Wakeups from CPU 0 (and one from CPU 4) covering every class, two of them
/// migrating at wakeup, two balance migrations, a wakeup with no
/// `sched_waking` before it, and a kworker the filter must leave out.
fn wake_trace() -> String {
    let t0: u64 = 10_000_000;
    let mut s = String::from("# tracer: nop\n#\n");
    let w = "bench-10";
    let mut add = |cpu: usize, dt: u64, who: &str, b: &str| s.push_str(&l(cpu, t0 + dt, who, b));
    // 1: prev 0, target 0 = waker's CPU: prev (prev first).
    add(
        0,
        0,
        w,
        "sched_waking: comm=bench pid=11 prio=120 target_cpu=000",
    );
    add(
        0,
        1,
        w,
        "sched_wakeup: comm=bench pid=11 prio=120 target_cpu=000",
    );
    // 2: prev 5, target 0: waker.
    add(
        0,
        10,
        w,
        "sched_waking: comm=bench pid=12 prio=120 target_cpu=005",
    );
    add(
        0,
        11,
        w,
        "sched_migrate_task: comm=bench pid=12 prio=120 orig_cpu=5 dest_cpu=0",
    );
    add(
        0,
        12,
        w,
        "sched_wakeup: comm=bench pid=12 prio=120 target_cpu=000",
    );
    // 3: prev 8, target 1: waker_smt (wakeup migration 8 -> 1, remote).
    add(
        0,
        20,
        w,
        "sched_waking: comm=bench pid=13 prio=120 target_cpu=008",
    );
    add(
        0,
        21,
        w,
        "sched_migrate_task: comm=bench pid=13 prio=120 orig_cpu=8 dest_cpu=1",
    );
    add(
        0,
        22,
        w,
        "sched_wakeup: comm=bench pid=13 prio=120 target_cpu=001",
    );
    // 4: prev 3, target 2: waker_llc, sched_wakeup printed on the target.
    add(
        0,
        30,
        w,
        "sched_waking: comm=bench pid=14 prio=120 target_cpu=003",
    );
    add(
        0,
        31,
        w,
        "sched_migrate_task: comm=bench pid=14 prio=120 orig_cpu=3 dest_cpu=2",
    );
    add(
        2,
        32,
        "<idle>-0",
        "sched_wakeup: comm=bench pid=14 prio=120 target_cpu=002",
    );
    // 5: prev 12, target 6: waker_node.
    add(
        0,
        40,
        w,
        "sched_waking: comm=bench pid=15 prio=120 target_cpu=012",
    );
    add(
        0,
        41,
        w,
        "sched_migrate_task: comm=bench pid=15 prio=120 orig_cpu=12 dest_cpu=6",
    );
    add(
        6,
        42,
        "<idle>-0",
        "sched_wakeup: comm=bench pid=15 prio=120 target_cpu=006",
    );
    // 6: prev 2, target 9: waker_remote.
    add(
        0,
        50,
        w,
        "sched_waking: comm=bench pid=16 prio=120 target_cpu=002",
    );
    add(
        0,
        51,
        w,
        "sched_migrate_task: comm=bench pid=16 prio=120 orig_cpu=2 dest_cpu=9",
    );
    add(
        9,
        52,
        "<idle>-0",
        "sched_wakeup: comm=bench pid=16 prio=120 target_cpu=009",
    );
    // A kworker, ignored.
    add(
        3,
        55,
        "<idle>-0",
        "sched_waking: comm=kworker/3:1 pid=77 prio=120 target_cpu=003",
    );
    add(
        3,
        56,
        "<idle>-0",
        "sched_migrate_task: comm=kworker/3:1 pid=77 prio=120 orig_cpu=3 dest_cpu=11",
    );
    add(
        11,
        57,
        "<idle>-0",
        "sched_wakeup: comm=kworker/3:1 pid=77 prio=120 target_cpu=011",
    );
    // 7: waker on CPU 4, prev 0, target 0: prev.
    add(
        4,
        60,
        "bench-17",
        "sched_waking: comm=bench pid=11 prio=120 target_cpu=000",
    );
    add(
        4,
        61,
        "bench-17",
        "sched_wakeup: comm=bench pid=11 prio=120 target_cpu=000",
    );
    // Two balance migrations: 1 -> 4 (node) and 2 -> 3 (smt).
    add(
        4,
        100,
        "bench-17",
        "sched_migrate_task: comm=bench pid=13 prio=120 orig_cpu=1 dest_cpu=4",
    );
    add(
        3,
        200,
        "<idle>-0",
        "sched_migrate_task: comm=bench pid=14 prio=120 orig_cpu=2 dest_cpu=3",
    );
    // 8: no sched_waking seen (prev 0 from wakeup 2), target 1: unclassified.
    add(
        1,
        500_000,
        "<idle>-0",
        "sched_wakeup: comm=bench pid=12 prio=120 target_cpu=001",
    );
    s
}

#[test]
fn wakeup_classes_by_hand() {
    let d = Decisions::from_text(&wake_trace(), &m16(), &bench());
    assert_eq!(
        d.tasks, 6,
        "11..=16: 10 and 17 only appear in the task column"
    );
    let w = &d.wakeup;
    assert_eq!(w.count, 8);
    assert_eq!(w.unclassified, 1);
    assert_eq!(
        w.class_counts,
        WakeClasses {
            prev: 2,
            waker: 1,
            waker_smt: 1,
            waker_llc: 1,
            waker_node: 1,
            waker_remote: 1
        }
    );
    assert_eq!(w.class.prev, 2.0 / 7.0);
    assert_eq!(w.class.waker_remote, 1.0 / 7.0);
    // Target vs waker: 1, 2 same; 3 smt; 4 llc; 5, 7 node; 6 remote.
    assert_eq!(
        w.vs_waker_counts,
        PerLevel {
            same: 2,
            smt: 1,
            llc: 1,
            node: 2,
            remote: 1
        }
    );
    // Target vs prev: 1, 7 same; 4 (3->2), 8 (0->1) smt; 2 (5->0) node;
    // 3 (8->1), 5 (12->6), 6 (2->9) remote.
    assert_eq!(
        w.vs_prev_counts,
        PerLevel {
            same: 2,
            smt: 2,
            llc: 0,
            node: 1,
            remote: 3
        }
    );
    assert_eq!(w.vs_prev.remote, 3.0 / 8.0);
    assert_eq!(d.foreign_cpu, 0);
    assert_eq!(d.unparsed, 0);
}

#[test]
fn migrations_by_level_and_mechanism() {
    let d = Decisions::from_text(&wake_trace(), &m16(), &bench());
    let mg = &d.migrations;
    assert_eq!(mg.count, 7);
    // At wakeup: 5->0 node, 8->1 remote, 3->2 smt, 12->6 remote, 2->9 remote.
    assert_eq!(
        mg.wakeup,
        PerLevel {
            same: 0,
            smt: 1,
            llc: 0,
            node: 1,
            remote: 3
        }
    );
    // Balance: 1->4 node, 2->3 smt.
    assert_eq!(
        mg.balance,
        PerLevel {
            same: 0,
            smt: 1,
            llc: 0,
            node: 1,
            remote: 0
        }
    );
    // Window 10.000000 .. 10.500000: half a second.
    assert_eq!(d.window_ns, (10_000_000_000, 10_500_000_000));
    assert_eq!(mg.window_s, 0.5);
    assert_eq!(mg.rate_per_s.remote, 6.0);
    assert_eq!(mg.rate_per_s.smt, 4.0);
    assert_eq!(mg.rate_per_s.node, 4.0);
    assert_eq!(mg.wakeup_rate_per_s, 10.0);
    assert_eq!(mg.balance_rate_per_s, 4.0);
    assert_eq!(mg.wakeup_share, 5.0 / 7.0);
    assert_eq!(mg.level.remote, 3.0 / 7.0);
}

#[test]
fn fork_placement_and_the_fork_filter() {
    let mut s = String::new();
    let sh = "sh-5";
    // The shell forks 30 (later exec'ed as `hog`), which forks 31 and 32; a
    // kworker forks nothing of ours. Forks run on CPU 0 (30) and 3 (31, 32).
    s += &l(
        0,
        100,
        sh,
        "sched_process_fork: comm=sh pid=5 child_comm=sh child_pid=30",
    );
    s += &l(
        0,
        101,
        sh,
        "sched_wakeup_new: comm=sh pid=30 prio=120 target_cpu=003",
    );
    s += &l(
        3,
        110,
        "hog-30",
        "sched_process_fork: comm=hog pid=30 child_comm=hog child_pid=31",
    );
    // Printed on another CPU: the fork line's CPU (3) is the parent's.
    s += &l(
        1,
        111,
        "hog-30",
        "sched_wakeup_new: comm=hog pid=31 prio=120 target_cpu=002",
    );
    s += &l(
        3,
        120,
        "hog-30",
        "sched_process_fork: comm=hog pid=30 child_comm=hog child_pid=32",
    );
    s += &l(
        3,
        121,
        "hog-30",
        "sched_wakeup_new: comm=hog pid=32 prio=120 target_cpu=012",
    );
    s += &l(
        5,
        130,
        "kworker/5:0-40",
        "sched_process_fork: comm=kworker/5:0 pid=40 child_comm=kworker/5:0 child_pid=41",
    );
    s += &l(
        5,
        131,
        "kworker/5:0-40",
        "sched_wakeup_new: comm=kworker/5:0 pid=41 prio=120 target_cpu=005",
    );
    let m = m16();
    let opts = DecisionOpts {
        filter: TaskFilter::descendants_of(5),
        sample_step_ns: 0,
        ..Default::default()
    };
    let d = Decisions::from_text(&s, &m, &opts);
    assert_eq!(d.tasks, 4, "5, 30, 31, 32");
    let f = &d.fork;
    // 30: 0 -> 3 llc; 31: 3 -> 2 smt; 32: 3 -> 12 remote. The shell's own
    // wakeup_new is not printed.
    assert_eq!(f.count, 3);
    assert_eq!(
        f.level_counts,
        PerLevel {
            same: 0,
            smt: 1,
            llc: 1,
            node: 0,
            remote: 1
        }
    );
    // Landed on 3, 2, 12: CPUs 3/3, cores {1, 6} 2/3, LLCs {0, 3} 2/3,
    // nodes {0, 1} 2/min(3, 2).
    assert_eq!((f.reach.cpu.distinct, f.reach.cpu.ideal), (3, 3));
    assert_eq!((f.reach.core.distinct, f.reach.core.ideal), (2, 3));
    assert_eq!(f.reach.llc.ratio, 2.0 / 3.0);
    assert_eq!(
        (
            f.reach.node.distinct,
            f.reach.node.ideal,
            f.reach.node.ratio
        ),
        (2, 2, 1.0)
    );
    // By comm prefix: only `hog` (30 once exec'ed, 31, 32) and its forks.
    let d = Decisions::from_text(
        &s,
        &m,
        &DecisionOpts {
            filter: TaskFilter::comm_prefix("hog"),
            sample_step_ns: 0,
            ..Default::default()
        },
    );
    assert_eq!((d.tasks, d.fork.count), (3, 3));
    // Without following forks, an exact comm that only the kworker child has.
    let d = Decisions::from_text(
        &s,
        &m,
        &DecisionOpts {
            filter: TaskFilter {
                comms: vec!["kworker/5:0".into()],
                ..Default::default()
            },
            sample_step_ns: 0,
            ..Default::default()
        },
    );
    assert_eq!((d.tasks, d.fork.count, d.fork.level_counts.same), (2, 1, 1));
}

/// Four hogs forked on CPU 0 of a 1s2c2t machine (cores {0,1}, {2,3}), then
/// pulled away one by one: 0->2 at 1 ms, 0->3 at 3 ms, 0->1 at 6 ms.
fn hogs_trace() -> String {
    let mut s = String::new();
    let t0 = 100_000_000;
    for p in 1..=4 {
        s += &l(
            0,
            t0,
            "bash-50",
            &format!("sched_process_fork: comm=bash pid=50 child_comm=hog child_pid={p}"),
        );
        s += &l(
            0,
            t0,
            "bash-50",
            &format!("sched_wakeup_new: comm=hog pid={p} prio=120 target_cpu=000"),
        );
    }
    s += &l(0, t0, "bash-50", "sched_switch: prev_comm=bash prev_pid=50 prev_prio=120 prev_state=S ==> next_comm=hog next_pid=1 next_prio=120");
    s += &l(
        2,
        t0 + 1000,
        "<idle>-0",
        "sched_migrate_task: comm=hog pid=2 prio=120 orig_cpu=0 dest_cpu=2",
    );
    s += &l(2, t0 + 1000, "<idle>-0", "sched_switch: prev_comm=swapper/2 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=hog next_pid=2 next_prio=120");
    s += &l(
        3,
        t0 + 3000,
        "<idle>-0",
        "sched_migrate_task: comm=hog pid=3 prio=120 orig_cpu=0 dest_cpu=3",
    );
    s += &l(
        1,
        t0 + 6000,
        "<idle>-0",
        "sched_migrate_task: comm=hog pid=4 prio=120 orig_cpu=0 dest_cpu=1",
    );
    s += &l(1, t0 + 6000, "<idle>-0", "sched_switch: prev_comm=swapper/1 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=hog next_pid=4 next_prio=120");
    // Preempted (R+): still runnable; the window ends here.
    s += &l(1, t0 + 10_000, "hog-4", "sched_switch: prev_comm=hog prev_pid=4 prev_prio=120 prev_state=R+ ==> next_comm=kworker/1:0 next_pid=77 next_prio=120");
    s
}

#[test]
fn spread_of_four_hogs_on_1s2c2t() {
    let m = test_topology(1, 1, 2, 2);
    let opts = DecisionOpts {
        filter: TaskFilter::comm_prefix("hog"),
        ..Default::default()
    };
    let d = Decisions::from_text(&hogs_trace(), &m, &opts);
    let sp = &d.spread;
    assert_eq!((sp.tasks, sp.start_ns), (4, 100_000_000_000));
    let at = |u: Unit| (sp.at.get(u).after_ns, sp.at.get(u).migrations);
    // One LLC, one node: spread once all four are runnable.
    assert_eq!(at(Unit::Node), (Some(0), Some(0)));
    assert_eq!(at(Unit::Llc), (Some(0), Some(0)));
    // Cores hold 2 + 2 after the second pull.
    assert_eq!(at(Unit::Core), (Some(3_000_000), Some(2)));
    // CPUs hold one each after the third.
    assert_eq!(at(Unit::Cpu), (Some(6_000_000), Some(3)));
    assert_eq!(d.migrations.balance.llc, 2);
    assert_eq!(d.migrations.balance.smt, 1);
    assert_eq!(d.fork.level_counts.same, 4);
    // Samples at 0..=10 ms: per CPU [4,0,0,0] once, [3,0,1,0] twice,
    // [2,0,1,1] three times, [1,1,1,1] five times.
    let o = &d.occupancy;
    assert_eq!(o.samples, 11);
    assert!((o.imbalance.cpu - 16.0 / 11.0).abs() < 1e-12);
    assert!((o.imbalance.core - 8.0 / 11.0).abs() < 1e-12);
    assert_eq!((o.imbalance.llc, o.imbalance.node), (0.0, 0.0));
    // CPU 1 idle beside an overloaded CPU 0 in the first 6 samples.
    assert!((o.idle_while_overloaded - 6.0 / 11.0).abs() < 1e-12);
    assert_eq!(
        o.idle_while_overloaded_by_level.smt,
        o.idle_while_overloaded
    );
    // Restricted to core 1 (CPUs 2, 3), the CPU level counts two units.
    let d = Decisions::from_text(
        &hogs_trace(),
        &m,
        &DecisionOpts {
            cpus: Some(vec![2, 3]),
            ..opts.clone()
        },
    );
    assert_eq!(
        d.spread.at.cpu.after_ns, None,
        "4 tasks never sit 2 + 2 on CPUs 2, 3"
    );
    // A marker moves the start.
    let mut t = hogs_trace();
    t.insert_str(
        0,
        &l(0, 100_000_500, "bash-50", "tracing_mark_write: go hogs"),
    );
    let d = Decisions::from_text(
        &t,
        &m,
        &DecisionOpts {
            start_marker: Some("go hogs".into()),
            ..opts
        },
    );
    assert_eq!(d.spread.start_ns, 100_000_500_000);
    assert_eq!(d.spread.at.cpu.after_ns, Some(5_500_000));
    assert_eq!(
        d.spread.at.llc.after_ns,
        Some(0),
        "first event after the marker"
    );
}

#[test]
fn spread_counts_from_the_release_not_from_the_forks() {
    // The four hogs are forked onto CPUs 1, 2, 3, 0 at t0 − 10 ms, pinned to
    // CPU 0 at t0 − 5 ms (three migrations), then run as in `hogs_trace`. The
    // last moment CPU 0 holds all four is t0 (the pulls start at t0 + 1 ms), so
    // the spread times are those of `hogs_trace`, not 10 ms more.
    let t0 = 100_000_000;
    let mut s = String::new();
    for p in 1..=4u64 {
        s += &l(
            0,
            t0 - 10_000,
            "bash-50",
            &format!("sched_process_fork: comm=bash pid=50 child_comm=hog child_pid={p}"),
        );
        s += &l(
            0,
            t0 - 10_000,
            "bash-50",
            &format!(
                "sched_wakeup_new: comm=hog pid={p} prio=120 target_cpu={:03}",
                p % 4
            ),
        );
    }
    for p in 1..=3u64 {
        s += &l(
            0,
            t0 - 5_000,
            "bash-50",
            &format!("sched_migrate_task: comm=hog pid={p} prio=120 orig_cpu={p} dest_cpu=0"),
        );
    }
    for line in hogs_trace().lines() {
        if !line.contains("sched_process_fork") && !line.contains("sched_wakeup_new") {
            s += line;
            s.push('\n');
        }
    }
    let m = test_topology(1, 1, 2, 2);
    let opts = DecisionOpts {
        filter: TaskFilter::comm_prefix("hog"),
        ..Default::default()
    };
    let d = Decisions::from_text(&s, &m, &opts);
    assert!(d.spread.released);
    assert_eq!(d.spread.start_ns, 100_000_000_000);
    assert_eq!(d.spread.at.cpu.after_ns, Some(6_000_000));
    assert_eq!(
        d.spread.at.cpu.migrations,
        Some(3),
        "the pinning migrations are before it"
    );
    assert_eq!(d.window_ns.0, 99_990_000_000);
    // Tasks never all on one CPU: no release, and no spread rows compared.
    let mut apart = String::new();
    for p in 1..=2u64 {
        apart += &l(
            p as usize,
            t0,
            "bash-50",
            &format!("sched_wakeup_new: comm=hog pid={p} prio=120 target_cpu={p:03}"),
        );
    }
    let d = Decisions::from_text(&apart, &m, &opts);
    assert!(!d.spread.released);
    assert!(compare(&d, &d)
        .rows
        .iter()
        .all(|r| !r.statistic.starts_with("spread.")));
}

#[test]
fn options_read_from_toml() {
    let o: DecisionOpts = toml::from_str(
        "sample_step_ns = 500000\ncpus = [0, 1]\n[filter]\ncomm_prefixes = [\"hog\"]\nfollow_forks = true\n",
    )
    .unwrap();
    assert_eq!(o.filter, TaskFilter::comm_prefix("hog"));
    assert_eq!(
        (o.sample_step_ns, o.cpus, o.start_marker),
        (500_000, Some(vec![0, 1]), None)
    );
    assert!(toml::from_str::<DecisionOpts>("step = 1\n").is_err());
}

#[test]
fn verdicts_at_the_threshold_edges() {
    let b = Thresholds::default().fraction;
    assert_eq!(verdict(0.05, b), Verdict::Match);
    assert_eq!(verdict(0.0501, b), Verdict::Close);
    assert_eq!(verdict(0.15, b), Verdict::Close);
    assert_eq!(verdict(0.1501, b), Verdict::Differ);
    assert_eq!(tvd(&[1, 1], &[0, 0]), None);
    // [2,1,1,1,1,1]/7 vs [1,0,0,0,0,0]: ½((1 − 2/7) + 5/7) = 5/7.
    assert!((tvd(&[2, 1, 1, 1, 1, 1], &[7, 0, 0, 0, 0, 0]).unwrap() - 5.0 / 7.0).abs() < 1e-12);

    let m = test_topology(1, 1, 2, 2);
    let opts = DecisionOpts {
        filter: TaskFilter::comm_prefix("hog"),
        ..Default::default()
    };
    let real = Decisions::from_text(&hogs_trace(), &m, &opts);
    let c = compare(&real, &real);
    assert!(c
        .rows
        .iter()
        .all(|r| matches!(r.verdict, Verdict::Match | Verdict::NoData)));
    assert_eq!(c.count(Verdict::Differ), 0);
    let row =
        |c: &Comparison, name: &str| c.rows.iter().find(|r| r.statistic == name).unwrap().clone();
    // No wakeups on either side: n/a, not a match.
    assert_eq!(row(&c, "wakeup.class").verdict, Verdict::NoData);
    assert_eq!(row(&c, "migrations.wakeup.level").verdict, Verdict::NoData);
    let bal = row(&c, "migrations.balance.level");
    assert_eq!((bal.real_n, bal.distance), (3, Some(0.0)));
    // Spread time ×2 is still a match, ×4 close, beyond differs.
    let mut sim = real.clone();
    for (f, v) in [
        (2.0, Verdict::Match),
        (4.0, Verdict::Close),
        (4.1, Verdict::Differ),
    ] {
        sim.spread.at.cpu.after_ns = Some((6_000_000.0_f64 * f).round() as u64);
        let r = row(&compare(&real, &sim), "spread.cpu.ms");
        assert_eq!(r.verdict, v, "×{f}: {r:?}");
        assert!((r.distance.unwrap() - f64::ln(f)).abs() < 1e-9);
    }
    // Never spread in the simulation: differ, no distance.
    sim.spread.at.cpu.after_ns = None;
    let r = row(&compare(&real, &sim), "spread.cpu.ms");
    assert_eq!(
        (r.verdict, r.distance, r.sim),
        (Verdict::Differ, None, None)
    );
    // Imbalance: 16/11 vs 16/11 + 0.25 matches, + 0.3 is close.
    let mut sim = real.clone();
    sim.occupancy.imbalance.cpu += 0.25;
    assert_eq!(
        row(&compare(&real, &sim), "occupancy.imbalance.cpu").verdict,
        Verdict::Match
    );
    sim.occupancy.imbalance.cpu += 0.05;
    assert_eq!(
        row(&compare(&real, &sim), "occupancy.imbalance.cpu").verdict,
        Verdict::Close
    );
    // Migration levels: real 2 llc + 1 smt vs all smt: tvd = 2/3, differ.
    let mut sim = real.clone();
    sim.migrations.by_level = PerLevel {
        smt: 3,
        ..Default::default()
    };
    let r = row(&compare(&real, &sim), "migrations.level");
    assert!((r.distance.unwrap() - 2.0 / 3.0).abs() < 1e-12);
    assert_eq!(r.verdict, Verdict::Differ);
    let comp = compare(&real, &sim);
    let text = comp.text();
    assert!(text.lines().next().unwrap().starts_with("statistic"));
    assert!(text.contains("migrations.level.llc"));
    assert_eq!(text.lines().count(), comp.rows.len() + 2);
    let j: serde_json::Value = serde_json::from_str(&comp.json()).unwrap();
    assert_eq!(j["rows"].as_array().unwrap().len(), comp.rows.len());
    assert_eq!(j["rows"][0]["statistic"], "fork.level");
}

/// A random trace on [`m16`]: wakeups (some migrating), balance migrations,
/// switches, forks.
fn random_trace(ops: &[(u8, u8, u8, u8)], map: impl Fn(usize) -> usize) -> String {
    let mut s = String::new();
    let mut t = 1_000_000;
    for (i, &(kind, pid, a, b)) in ops.iter().enumerate() {
        let c = map((a as usize + b as usize) % 16);
        let (pid, a, b) = (
            20 + (pid % 6) as u64,
            map(a as usize % 16),
            map(b as usize % 16),
        );
        t += 100 + i as u64;
        match kind % 4 {
            0 => {
                s += &l(
                    a,
                    t,
                    "bench-9",
                    &format!("sched_waking: comm=bench pid={pid} prio=120 target_cpu={b:03}"),
                );
                s += &l(
                    a,
                    t + 1,
                    "bench-9",
                    &format!("sched_wakeup: comm=bench pid={pid} prio=120 target_cpu={b:03}"),
                );
            }
            1 => {
                s += &l(
                    a,
                    t,
                    "bench-9",
                    &format!("sched_waking: comm=bench pid={pid} prio=120 target_cpu={b:03}"),
                );
                s += &l(a, t + 1, "bench-9", &format!("sched_migrate_task: comm=bench pid={pid} prio=120 orig_cpu={b} dest_cpu={c}"));
                s += &l(
                    c,
                    t + 2,
                    "<idle>-0",
                    &format!("sched_wakeup: comm=bench pid={pid} prio=120 target_cpu={c:03}"),
                );
            }
            2 => {
                s += &l(b, t, "<idle>-0", &format!("sched_migrate_task: comm=bench pid={pid} prio=120 orig_cpu={a} dest_cpu={b}"));
            }
            _ => {
                s += &l(a, t, "bench-9", &format!("sched_switch: prev_comm=bench prev_pid={pid} prev_prio=120 prev_state=S ==> next_comm=swapper/{a} next_pid=0 next_prio=120"));
            }
        }
    }
    s
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn classes_sum_to_one_and_ignore_topology_preserving_renumbering(
        ops in proptest::collection::vec((0u8..4, 0u8..6, 0u8..16, 0u8..16), 1..60),
        mask in 0usize..16,
    ) {
        // XOR with a 4-bit mask swaps threads, cores, LLCs and nodes among
        // themselves: every CPU pair keeps its level.
        let m = m16();
        let opts = DecisionOpts { sample_step_ns: 1000, ..bench() };
        let a = Decisions::from_text(&random_trace(&ops, |c| c), &m, &opts);
        let b = Decisions::from_text(&random_trace(&ops, |c| c ^ mask), &m, &opts);
        prop_assert_eq!(&a, &b);
        let w = &a.wakeup;
        let classified: u64 = w.class_counts.values().iter().sum();
        prop_assert_eq!(classified + w.unclassified, w.count);
        if classified > 0 {
            prop_assert!((w.class.values().iter().sum::<f64>() - 1.0).abs() < 1e-9);
        }
        if w.vs_waker_counts.total() > 0 {
            let v = w.vs_waker;
            prop_assert!((v.same + v.smt + v.llc + v.node + v.remote - 1.0).abs() < 1e-9);
        }
        prop_assert_eq!(a.migrations.wakeup.total() + a.migrations.balance.total(), a.migrations.count);
    }
}

/// How long a task woken onto an idle CPU waits there, from `sched_waking` to its
/// switch-in, by class (2 CPUs; CPU 1 runs bench-21 throughout): 100 µs, 1 ms and
/// 2.5 ms on idle CPU 0 count once each; a wakeup onto busy CPU 1, one onto idle
/// CPU 0 whose task then runs on CPU 1, and one without a `sched_waking` count not.
#[test]
fn idle_wait_by_hand() {
    let sw = |prev: &str, pp: u32, st: &str, next: &str, np: u32| {
        format!("sched_switch: prev_comm={prev} prev_pid={pp} prev_prio=120 prev_state={st} ==> next_comm={next} next_pid={np} next_prio=120")
    };
    let waking =
        |p: u32, c: usize| format!("sched_waking: comm=bench pid={p} prio=120 target_cpu={c:03}");
    let wakeup =
        |p: u32, c: usize| format!("sched_wakeup: comm=bench pid={p} prio=120 target_cpu={c:03}");
    let t0: u64 = 10_000_000;
    let mut s = String::from("# tracer: nop\n#\n");
    let b = "bench-21";
    let mut add =
        |cpu: usize, us: u64, who: &str, body: String| s.push_str(&l(cpu, t0 + us, who, &body));
    add(1, 0, "<idle>-0", sw("swapper/1", 0, "R", "bench", 21));
    // pid 11 woken from CPU 1 onto idle CPU 0 at `at`, switched in `wait` later and
    // asleep again 100 µs after: 100 µs, 1 ms, 2.5 ms.
    for (at, wait) in [(100, 100), (1_000, 1_000), (3_000, 2_500)] {
        add(1, at, b, waking(11, 0));
        add(1, at + 1, b, wakeup(11, 0));
        add(
            0,
            at + wait,
            "<idle>-0",
            sw("swapper/0", 0, "R", "bench", 11),
        );
        add(
            0,
            at + wait + 100,
            "bench-11",
            sw("bench", 11, "S", "swapper/0", 0),
        );
    }
    // Onto busy CPU 1.
    add(1, 6_000, b, waking(12, 1));
    add(1, 6_001, b, wakeup(12, 1));
    add(1, 6_100, b, sw("bench", 21, "R", "bench", 12));
    add(1, 6_200, "bench-12", sw("bench", 12, "S", "bench", 21));
    // Onto idle CPU 0, run on CPU 1.
    add(1, 7_000, b, waking(13, 0));
    add(1, 7_001, b, wakeup(13, 0));
    add(1, 7_300, b, sw("bench", 21, "R", "bench", 13));
    add(1, 7_400, "bench-13", sw("bench", 13, "S", "bench", 21));
    // No sched_waking.
    add(1, 8_000, b, wakeup(14, 0));
    add(0, 8_100, "<idle>-0", sw("swapper/0", 0, "R", "bench", 14));
    let d = Decisions::from_text(&s, &test_topology(1, 1, 2, 1), &bench());
    assert_eq!(d.unparsed, 0);
    assert_eq!(
        d.wakeup.idle_wait_counts,
        IdleWait {
            under_250us: 1,
            under_2ms: 1,
            over_2ms: 1
        }
    );
    let st = super::bands::statistics(&d, false);
    let row = st.iter().find(|s| s.name == "wakeup.idle_wait").unwrap();
    assert!(matches!(&row.obs, super::bands::Obs::Dist(c) if c == &vec![1, 1, 1]));
}
