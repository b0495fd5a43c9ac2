//! The recorded oracle suite (`scenarios/oracle/suite.toml`): real 5.10 and 6.12
//! kernels' runs in QEMU guests, committed as bundles, checked against the
//! simulator without QEMU.
//!
//! Two things are asserted. Every recorded guest's sched-domain chains equal
//! schedlab's on every CPU (the domain builder is right on these topologies). And
//! the verdict of every compared statistic of every case equals the committed
//! table `verdicts.txt`: a model change that moves a decision across a verdict
//! threshold fails here until the table (and docs/validation.md, which quotes it) is
//! updated with `SCHEDLAB_BLESS=1 cargo test --test oracle_suite`.

use schedlab::experiment::oracle::suite::{self, Suite};
use std::path::PathBuf;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn recorded_real_kernels_against_the_simulator() {
    let s = Suite::load(&root().join("../../scenarios/oracle/suite.toml")).unwrap();
    let data = root().join("tests/data/oracle");
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
    if std::env::var_os("SCHEDLAB_BLESS").is_some() {
        std::fs::write(&golden, &lines).unwrap();
    }
    let want = std::fs::read_to_string(&golden).unwrap_or_default();
    if want != lines {
        let diff: Vec<String> = want
            .lines()
            .zip(lines.lines())
            .filter(|(a, b)| a != b)
            .take(20)
            .map(|(a, b)| format!("  was: {a}\n  now: {b}"))
            .collect();
        panic!(
            "oracle verdicts changed ({} vs {} lines); first differences:\n{}\n(re-bless with SCHEDLAB_BLESS=1 and update docs/validation.md)",
            want.lines().count(),
            lines.lines().count(),
            diff.join("\n")
        );
    }
}
