//! Decision statistics on real and simulated traces: a real 5.10 trace and real
//! domain dumps parse and give hand-checked numbers, and the simulator's own
//! ftrace text gives back the run's counters.

mod common;

use common::{run_ftrace, scenario_of};
use schedlab::experiment::oracle::decisions::{
    compare, DecisionOpts, Decisions, PerLevel, TaskFilter, Verdict,
};
use schedlab::experiment::oracle::domains::{compare_with_model, DomainDump};
use schedlab::machine::presets::test_topology;
use schedlab::sched::features::KernelPreset;
use std::path::{Path, PathBuf};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/oracle/fixtures")
        .join(name)
}

/// The real domain dump of a recorded suite run (`tests/data/oracle/<bundle>`),
/// unpacked into a fresh directory.
fn real_domains(bundle: &str) -> PathBuf {
    let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/oracle");
    let dir = std::env::temp_dir().join(format!(
        "schedlab-oracle-decisions-{}-{bundle}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    schedlab::experiment::oracle::guest::unpack(&data.join(bundle), &dir).unwrap();
    dir.join("domains")
}

#[test]
fn a_real_5_10_rtapp_trace() {
    let text = std::fs::read_to_string(fixture("real-5.10-1s4c2t-rtapp8.trace.txt")).unwrap();
    let m = test_topology(1, 1, 4, 2);
    let opts = DecisionOpts {
        filter: TaskFilter::comm_prefix("rt-app"),
        ..Default::default()
    };
    let d = Decisions::from_text(&text, &m, &opts);
    assert_eq!((d.unparsed, d.foreign_cpu), (0, 0));
    // rt-app (660) and its eight threads; not the shell (657) that forked it.
    assert_eq!(d.tasks, 9);
    // rt-app itself, forked by the shell on CPU 3 to CPU 0 (llc), and its
    // threads, forked on CPU 0 (the `rt-app-660 [000]` fork lines) to CPUs
    // 3 4 1 7 5 3 5 3: CPU 1 is CPU 0's sibling, the rest other cores.
    assert_eq!(d.fork.count, 9);
    assert_eq!(
        d.fork.level_counts,
        PerLevel {
            same: 0,
            smt: 1,
            llc: 8,
            node: 0,
            remote: 0
        }
    );
    assert_eq!((d.fork.reach.cpu.distinct, d.fork.reach.cpu.ideal), (6, 8));
    assert_eq!(d.fork.reach.core.ratio, 1.0);
    // Three migrations, all between a sched_waking and its sched_wakeup (woken
    // by thread 663 on CPU 1): 666 3->0 and 667 5->6 (llc), 668 3->2 (smt).
    let mg = &d.migrations;
    assert_eq!(mg.count, 3);
    assert_eq!(
        (mg.wakeup.llc, mg.wakeup.smt, mg.balance.total()),
        (2, 1, 0)
    );
    let w = &d.wakeup;
    assert_eq!(w.unclassified, 0);
    assert_eq!(
        w.class_counts.values().iter().sum::<u64>() + w.unclassified,
        w.count
    );
    // The same trace by root pid: the shell 657 (forked by init) and everything
    // it forked (timeout 658, 659 and rt-app with its threads), each woken new.
    let by_root = Decisions::from_text(
        &text,
        &m,
        &DecisionOpts {
            filter: TaskFilter::descendants_of(657),
            ..Default::default()
        },
    );
    assert_eq!(by_root.tasks, 12);
    assert_eq!(by_root.fork.count, 12);
    let j: serde_json::Value = serde_json::from_str(&d.json()).unwrap();
    assert_eq!(j["fork"]["level_counts"]["llc"], 8);
    assert_eq!(j["window_ns"][0], 5_610_358_000u64);
    // Compared with itself, everything with data matches.
    let c = compare(&d, &d);
    assert_eq!(c.count(Verdict::Differ) + c.count(Verdict::Close), 0);
}

#[test]
fn real_5_10_domain_dumps_match_schedlab() {
    let opts = KernelPreset::by_name("v5.12").unwrap().topology_opts();
    for (dir, m, chain) in [
        (
            "1s4c2t-5.10.tar.gz",
            test_topology(1, 1, 4, 2),
            vec!["SMT", "MC"],
        ),
        (
            "2s4c2t-2n-5.10.tar.gz",
            test_topology(2, 1, 4, 2),
            vec!["SMT", "MC", "NUMA"],
        ),
    ] {
        let real = DomainDump::read_dir(&real_domains(dir), "5.10.0-32-amd64").unwrap();
        assert_eq!(real.cpus.len(), m.nr_cpus(), "{dir}");
        let c = compare_with_model(&real, &m, &opts, "5.10.223");
        assert!(c.all_match(), "{dir}\n{}", c.text());
        assert!(c.cpus.iter().all(|x| x.real == chain), "{dir}");
        // v5.6's busy_factor (32) is not 5.10's.
        let v56 = KernelPreset::by_name("v5.6").unwrap().topology_opts();
        assert_eq!(
            compare_with_model(&real, &m, &v56, "5.10.223").matching_cpus,
            0
        );
    }
}

#[test]
fn real_6_12_domain_dumps_match_schedlab_after_the_renames() {
    let opts = KernelPreset::by_name("v6.0").unwrap().topology_opts();
    for (dir, m, chain) in [
        (
            "1s4c2t-6.12.tar.gz",
            test_topology(1, 1, 4, 2),
            vec!["SMT", "MC"],
        ),
        (
            "2s4c2t-2n-6.12.tar.gz",
            test_topology(2, 1, 4, 2),
            vec!["SMT", "MC", "NUMA"],
        ),
    ] {
        let version = "6.12.95+deb12-amd64";
        let real = DomainDump::read_dir(&real_domains(dir), version).unwrap();
        assert_eq!(real.cpus.len(), m.nr_cpus(), "{dir}");
        // SD_SHARE_LLC as printed, and the build-time level of MC above CLS.
        assert!(real.cpus[&0][1].flags.contains("SD_SHARE_LLC"), "{dir}");
        assert_eq!(real.cpus[&0][1].params["level"], 2, "{dir}");
        let c = compare_with_model(&real, &m, &opts, version);
        assert!(c.all_match(), "{dir}\n{}", c.text());
        assert!(c.cpus.iter().all(|x| x.real == chain), "{dir}");
        // Without the cluster level (v5.12's rules) MC would be level 1.
        let v512 = KernelPreset::by_name("v5.12").unwrap().topology_opts();
        let c = compare_with_model(&real, &m, &v512, version);
        assert_eq!(c.matching_cpus, 0, "{dir}");
        assert!(c.cpus[0].diffs.iter().all(|d| d.field == "level"), "{dir}");
    }
    // The hand-written fixture is the real dump, cost averages aside.
    let strip = |mut d: DomainDump| {
        for lv in d.cpus.values_mut().flatten() {
            lv.params.remove("max_newidle_lb_cost");
        }
        d
    };
    let v = "6.12.95";
    assert_eq!(
        strip(DomainDump::read_dir(&real_domains("2s4c2t-2n-6.12.tar.gz"), v).unwrap()),
        strip(DomainDump::read_dir(&fixture("domains-6.12-2s4c2t-2node"), v).unwrap())
    );
}

#[test]
fn the_simulators_trace_gives_back_its_counters() {
    let text = "[machine]\npreset = \"xeon-e5-40\"\n[run]\nseed = 3\n[workload]\nkind = \"hackbench\"\ngroups = 2\nfds = 4\nloops = 30\n";
    let sc = scenario_of(text);
    let (r, trace) = run_ftrace(&sc, 3);
    let d = Decisions::from_text(&trace, &sc.machine, &DecisionOpts::default());
    assert_eq!((d.unparsed, d.foreign_cpu), (0, 0));
    assert_eq!(d.tasks, r.tasks.len() as u64);
    // Every task is forked and woken new once.
    assert_eq!(d.fork.count, r.tasks.len() as u64);
    // Migrations by level: the run's SharedLevel names, with packages as nodes
    // on this two-socket, two-node machine.
    let by = &r.metrics.migrations;
    let get = |k: &str| by.get(k).copied().unwrap_or(0);
    let mg = &d.migrations;
    assert_eq!(mg.count, by.values().sum::<u64>());
    assert_eq!(
        (
            mg.by_level.smt,
            mg.by_level.llc,
            mg.by_level.node,
            mg.by_level.remote
        ),
        (get("smt"), get("llc"), 0, get("package") + get("numa"))
    );
    assert!(mg.count > 0);
    assert_eq!(mg.wakeup.total() + mg.balance.total(), mg.count);
    // Every simulated wakeup has its sched_waking, so none is unclassified, and
    // wakeups are the run's, less those still queued at the end (TTWU_QUEUE).
    let w = &d.wakeup;
    assert_eq!(w.unclassified, 0);
    assert!(w.count <= r.metrics.wakeups && w.count + 40 >= r.metrics.wakeups);
    assert_eq!(w.vs_waker_counts.total(), w.count);
    assert!((w.class.values().iter().sum::<f64>() - 1.0).abs() < 1e-9);
    // Comparing two seeds of the same model: the decision distributions are
    // close, and the report renders every row.
    let (_, t2) = run_ftrace(&sc, 4);
    let d2 = Decisions::from_text(&t2, &sc.machine, &DecisionOpts::default());
    let c = compare(&d, &d2);
    let class = c
        .rows
        .iter()
        .find(|r| r.statistic == "wakeup.class")
        .unwrap();
    assert!(class.verdict != Verdict::Differ, "{}", c.text());
    assert_eq!(c.text().lines().count(), c.rows.len() + 2);
}
