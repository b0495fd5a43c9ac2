//! `reproduce` in its reduced mode: every seed's headline table runs, and the
//! direction of each seed's headline effect holds where the seed's own data is
//! unambiguous (issue 8): 000 `select_idle_cpu` cheaper with `IDLE_CPU_MASK`; 001
//! energy not higher with `BREAK_EVEN` beyond noise; 002 identical decisions; 003
//! `select_idle_sibling` cheaper with `SMT_BALANCE`; 004 the longest unpinned task
//! done earlier with `MISFIT`.

use schedlab::experiment::reproduce::{reproduce, ReproOpts, DEFAULT_NOISE, SEEDS};

fn quick(seeds: &[u8], runs: u32, jobs: usize) -> schedlab::experiment::reproduce::Reproduction {
    let opts = ReproOpts {
        seeds: seeds.to_vec(),
        runs,
        jobs,
        quick: true,
        noise: DEFAULT_NOISE,
    };
    reproduce(&opts, &|_| {}).expect("reproduce runs")
}

#[test]
fn every_seed_headline_holds_in_quick_mode() {
    let r = quick(&SEEDS, 3, 2);
    for s in SEEDS {
        let hs: Vec<_> = r.headlines.iter().filter(|h| h.seed == s).collect();
        assert!(!hs.is_empty(), "seed {s} has no headline check");
        for h in hs {
            assert!(h.holds, "seed {s}: {} — {}", h.claim, h.detail);
        }
        assert!(
            r.tables.iter().any(|t| t.seed == s),
            "seed {s} has no table"
        );
    }
    // Seed 004's single runs: 4 unpinned tasks per machine and arm.
    assert_eq!(r.single_runs.len(), 4);
    assert!(r.single_runs.iter().all(|(_, _, t)| t.len() == 4));
    // Every row carries the seed's reported numbers and a verdict.
    for t in &r.tables {
        for row in &t.rows {
            assert!(row.reported.0.is_some(), "{}: {}", t.title, row.label);
            assert!(
                ["match", "MISMATCH", "n/a"].contains(&row.verdict.as_str()),
                "{}",
                row.verdict
            );
        }
        assert!(
            t.cells.iter().all(|c| c.len() == t.columns.len()),
            "{}",
            t.title
        );
    }
    let text = r.text();
    for s in [
        "Seed 000", "Seed 001", "Seed 002", "Seed 003", "Seed 004", "reported",
    ] {
        assert!(text.contains(s), "missing `{s}` in\n{text}");
    }
    let html = r.html();
    assert!(html.starts_with("<!DOCTYPE html>") && html.trim_end().ends_with("</html>"));
    assert_eq!(html.matches("<table>").count(), r.tables.len());
}

#[test]
fn the_result_does_not_depend_on_the_thread_count() {
    let a = serde_json::to_string(&quick(&[4], 2, 1).tables).unwrap();
    let b = serde_json::to_string(&quick(&[4], 2, 2).tables).unwrap();
    assert_eq!(a, b);
}
