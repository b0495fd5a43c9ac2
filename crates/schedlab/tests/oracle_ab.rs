//! The recorded A/B suite (`scenarios/oracle/ab.toml`): switches flipped on real
//! 5.10 and 6.12 kernels in QEMU guests, and kernel A/Bs between them, committed
//! under `tests/data/oracle/` and checked here without QEMU.
//!
//! Asserted: every case is recorded; every run of every arm ran with its arm in
//! effect (the features file and the tunables the guest read before the run); the
//! model that predicts no effect (the negative control) gets the sign of no real
//! effect, so that the real effects are effects a check can miss; and every grade
//! of every statistic equals the committed table `ab/verdicts.txt`, so a model change
//! that turns a predicted effect around fails here until the table (and
//! docs/validation.md, which quotes it) is updated with
//! `SCHEDLAB_BLESS=1 cargo test --test oracle_ab`.

mod common;

use schedlab::experiment::oracle::ab_suite::{self, AbArms, AbSuite};
use std::path::PathBuf;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn recorded_ab_on_real_kernels_against_the_simulated_ab() {
    let s = AbSuite::load(&root().join("../../scenarios/oracle/ab.toml")).unwrap();
    let data = root().join("tests/data/oracle");
    let (checks, missing) = ab_suite::check(&s, &data, None).unwrap();
    assert!(missing.is_empty(), "not recorded: {missing:?}");
    assert_eq!(checks.len(), s.cases.len());
    for (c, case) in checks.iter().zip(&s.cases) {
        let o = &c.outcome;
        // Each arm has its runs, and a switch case checked every one of them.
        assert!(
            o.real_runs.iter().all(|&n| n >= 2),
            "{}: {:?}",
            c.case,
            o.real_runs
        );
        if let AbArms::Switches { b, .. } = &case.arms {
            let b_runs: Vec<&String> = o.arm_checks.iter().filter(|l| l.contains(".b.r")).collect();
            assert_eq!(b_runs.len(), o.real_runs[1], "{}", c.case);
            // The first switch as the check names it (a tunable without its
            // `kernel.tunables.` prefix).
            let first = b.split(',').next().unwrap().trim();
            let first = first.strip_prefix("kernel.tunables.").unwrap_or(first);
            assert!(
                b_runs
                    .iter()
                    .all(|l| l.contains(first) && l.ends_with("in effect")),
                "{}: {b_runs:?}",
                c.case
            );
        }
        // The no-effect control never has a real effect's sign.
        let k = o.control.score();
        assert_eq!(k.sign, 0, "{}: the no-effect control got {k:?}", c.case);
    }
    // The report forms carry every row: the text table, the HTML page, the JSON.
    let o = &checks[0].outcome;
    let text = o.text();
    let html = schedlab::report::ab_html("t", "i", &[o]);
    let json = serde_json::to_string(&checks[0]).unwrap();
    for r in &o.effects.rows {
        assert!(text.contains(&r.statistic), "{}", r.statistic);
        assert!(html.contains(&format!("<code>{}</code>", r.statistic)));
        assert!(json.contains(&format!("\"{}\"", r.statistic)));
    }
    assert!(text.contains("control:") && text.contains("the model that predicts no effect"));
    assert!(html.contains(&o.case) && html.contains("real Δ [95 % CI]"));
    let lines = ab_suite::verdict_lines(&checks);
    let golden = data.join("ab/verdicts.txt");
    common::check_golden(&golden, &lines, "A/B verdicts", "oracle_ab");
}
