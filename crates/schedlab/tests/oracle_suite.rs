//! The recorded oracle suites: real 5.10 and 6.12 kernels' runs in QEMU guests
//! (`scenarios/oracle/suite.toml`), and the same sched_ext schedulers on a real
//! 6.12 kernel built with sched_ext (`scenarios/oracle/scx/suite.toml`), committed
//! as bundles, checked against the simulator without QEMU.
//!
//! Two things are asserted. Every recorded guest's sched-domain chains equal
//! schedlab's on every CPU (the domain builder is right on these topologies). And
//! the verdict of every compared statistic of every case equals the committed
//! table `verdicts.txt`: a model change that moves a decision across a verdict
//! threshold fails here until the table (and docs/validation.md, which quotes it) is
//! updated with `SCHEDLAB_BLESS=1 cargo test --test oracle_suite`.

mod common;

use schedlab::experiment::oracle::suite::{self, Suite};
use std::path::PathBuf;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn recorded_real_kernels_against_the_simulator() {
    check_suite("scenarios/oracle/suite.toml", "tests/data/oracle");
}

/// Each case's real run stayed under its scheduler from before the workload to its
/// end (`compare_job` refuses one that did not), and its verdicts are the table's.
#[test]
fn recorded_sched_ext_schedulers_on_a_real_kernel_against_the_simulator() {
    if schedlab::sched::ext::bpf::find_clang().is_err() {
        eprintln!("skipped: the llc_vtime cases need clang");
        return;
    }
    check_suite("scenarios/oracle/scx/suite.toml", "tests/data/oracle-scx");
}

fn check_suite(suite_file: &str, data_dir: &str) {
    let s = Suite::load(&root().join("../..").join(suite_file)).unwrap();
    let data = root().join(data_dir);
    let (checks, missing) = suite::check(&s, &data, None, None).unwrap();
    assert!(missing.is_empty(), "bundles not recorded: {missing:?}");
    assert_eq!(checks.len(), s.topologies.len() * s.kernels.len());
    for b in &checks {
        assert!(
            b.domains.all_match(),
            "{} {}: domains differ\n{}",
            b.topology,
            b.kernel,
            b.domains.text()
        );
        for c in &b.cases {
            let at = format!("{} {} {}", b.topology, b.kernel, c.case);
            assert!(c.real.tasks > 0, "{at}: no real task");
            assert!(c.sim.tasks > 0, "{at}: no simulated task");
            assert_eq!(c.real.unparsed, 0, "{at}");
        }
    }
    let lines = suite::verdict_lines(&checks);
    let golden = data.join("verdicts.txt");
    common::check_golden(&golden, &lines, "oracle verdicts", "oracle_suite");
}
