//! The ready-made seed scenarios (`scenarios/seeds/NNN-<benchmark>-<variant>.toml`):
//! every file loads and validates, names its seed in its header, uses a machine of
//! that seed and the benchmark its name says, and runs for a short simulated window
//! (the `--set run.duration_ms=2` override the CLI applies).

use schedlab::experiment::{self, Overrides, RunOpts, Scenario};
use schedlab::sim::StopReason;
use std::path::{Path, PathBuf};

fn seed_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/seeds")
}

fn seed_files() -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(seed_dir())
        .expect("scenarios/seeds exists")
        .map(|e| e.expect("readable entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .collect();
    v.sort();
    v
}

/// Machines each seed ran on (the seeds' own set-up lines).
fn seed_machines(seed: &str) -> &'static [&'static str] {
    match seed {
        "000" => &["power9-176"],
        "001" => &["synquacer-24", "hikey960"],
        "002" => &["juno-r0", "xeon-e5-40"],
        "003" => &["xeon-88"],
        "004" => &["juno-r0", "hikey960"],
        _ => &[],
    }
}

/// The workload kind a file name's benchmark word stands for.
fn kind_of(stem: &str) -> &'static str {
    let bench = &stem[4..];
    for (prefix, kind) in [
        ("schbench", "schbench"),
        ("perf-messaging", "perf-messaging"),
        ("adrestia", "adrestia"),
        ("forkbench", "forkbench"),
        ("hackbench", "hackbench"),
        ("sysbench-threads", "sysbench-threads"),
        ("sysbench-cpu", "sysbench-cpu"),
        ("uperf-pingpong", "uperf-pingpong"),
        ("oracle-tpcc", "oracle-tpcc"),
    ] {
        if bench.starts_with(prefix) {
            return kind;
        }
    }
    panic!("{stem}: no known benchmark in the file name")
}

#[test]
fn every_seed_set_up_has_a_file() {
    let names: Vec<String> = seed_files()
        .iter()
        .map(|p| p.file_stem().unwrap().to_string_lossy().into_owned())
        .collect();
    for want in [
        "000-schbench-m44-t1",
        "000-schbench-m44-t1-spinners",
        "000-perf-messaging-g1-spinners",
        "001-schbench-synquacer",
        "001-schbench-hikey960",
        "001-adrestia-periodic-synquacer",
        "001-adrestia-single-hikey960",
        "001-forkbench-hikey960",
        "002-hackbench-juno",
        "002-sysbench-threads-juno",
        "002-hackbench-l1000-xeon-e5-40",
        "002-sysbench-threads-40-xeon-e5-40",
        "003-hackbench-16",
        "003-uperf-pingpong-32",
        "003-oracle-tpcc-100",
        "004-sysbench-cpu-misfit-juno",
        "004-sysbench-cpu-misfit-hikey960",
    ] {
        assert!(names.iter().any(|n| n == want), "missing {want}.toml");
    }
}

#[test]
fn seed_scenarios_load_match_their_seed_and_run_briefly() {
    let files = seed_files();
    assert!(files.len() >= 17);
    for path in &files {
        let stem = path.file_stem().unwrap().to_string_lossy().into_owned();
        let seed = &stem[..3];
        let text = std::fs::read_to_string(path).unwrap();
        assert!(
            text.starts_with(&format!("# Seed {seed} ")),
            "{stem}: the header must quote seed {seed}"
        );

        // As written: loads and validates.
        let sc =
            Scenario::load(path, &Overrides::default()).unwrap_or_else(|e| panic!("{stem}: {e}"));
        assert!(
            seed_machines(seed).contains(&sc.machine.name.as_str()),
            "{stem}: machine {} is not one of seed {seed}'s",
            sc.machine.name
        );
        assert_eq!(sc.workload_kind, kind_of(&stem), "{stem}");
        assert!(sc.tool.is_some(), "{stem}: a benchmark generator prints");

        // A 2 ms window, as `--set run.duration_ms=2` gives.
        let ov = Overrides {
            sets: vec!["run.duration_ms=2".into()],
            ..Overrides::default()
        };
        let short = Scenario::load(path, &ov).unwrap_or_else(|e| panic!("{stem}: {e}"));
        assert_eq!(short.duration_ns, Some(2_000_000), "{stem}");
        assert_eq!(short.machine.name, sc.machine.name);
        let opts = RunOpts {
            check: true,
            trace: false,
            trace_window: None,
            ftrace: false,
            ftrace_layout: None,
            sched_tp: false,
        };
        let (r, _) =
            experiment::run(&short, short.seed, 0, &opts).unwrap_or_else(|e| panic!("{stem}: {e}"));
        assert!(r.events > 0, "{stem}: nothing happened");
        assert!(r.sim_time_ns <= 2_000_000, "{stem}: ran past the window");
        if r.workload.stop_reason == StopReason::Completed {
            assert!(
                r.tasks.iter().all(|t| t.exit_ns.is_some()),
                "{stem}: completed with live tasks"
            );
        } else {
            assert_eq!(r.sim_time_ns, 2_000_000, "{stem}");
        }
        assert_eq!(r.machine.name, sc.machine.name);
    }
}
