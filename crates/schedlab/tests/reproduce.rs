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
        out: None,
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
            let words: Vec<&str> = schedlab::stats::verdict::Grade::ALL
                .iter()
                .map(|g| g.word())
                .chain(["n/a"])
                .collect();
            assert!(words.contains(&row.verdict.as_str()), "{}", row.verdict);
            // The identical-arms control never matches a row where the seed shows
            // an effect.
            if row
                .reported_change
                .is_some_and(|iv| schedlab::stats::verdict::effect(&iv, 1.0).is_effect())
            {
                assert_eq!(
                    row.control,
                    Some(schedlab::stats::verdict::Grade::Missed),
                    "{}: {}",
                    t.title,
                    row.label
                );
            }
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

/// Counts of the progress events a reproduction sends.
#[derive(Default)]
struct Seen {
    resumed: Vec<(u64, u64)>,
    runs: u64,
    experiments: Vec<(String, u64, u64)>,
}

fn quick_into(dir: &std::path::Path, seen: &std::sync::Mutex<Seen>) -> String {
    use schedlab::experiment::reproduce::Progress;
    let opts = ReproOpts {
        seeds: vec![4],
        runs: 2,
        jobs: 2,
        quick: true,
        noise: DEFAULT_NOISE,
        out: Some(dir.to_path_buf()),
    };
    let r = reproduce(&opts, &|p| {
        let mut s = seen.lock().unwrap();
        match p {
            Progress::Resumed { reused, total } => s.resumed.push((reused, total)),
            Progress::Run { .. } => s.runs += 1,
            Progress::Experiment {
                key, ran, reused, ..
            } => s.experiments.push((key, ran, reused)),
        }
    })
    .expect("reproduce runs");
    serde_json::to_string(&r.tables).unwrap()
}

#[test]
fn an_interrupted_reproduction_resumes_from_its_journal() {
    use schedlab::experiment::reproduce::JOURNAL;
    let dir = tempfile::tempdir().unwrap();
    let journal = dir.path().join(JOURNAL);
    // First run: everything runs, one journal line per run.
    let first = std::sync::Mutex::new(Seen::default());
    let tables = quick_into(dir.path(), &first);
    let first = first.into_inner().unwrap();
    let total = first.resumed[0].1;
    assert_eq!(first.resumed, vec![(0, total)]);
    assert_eq!(first.runs, total);
    let lines = std::fs::read_to_string(&journal).unwrap();
    assert_eq!(lines.lines().count() as u64, total);
    // The same command again: nothing runs, the tables are the same bytes.
    let again = std::sync::Mutex::new(Seen::default());
    assert_eq!(quick_into(dir.path(), &again), tables);
    let again = again.into_inner().unwrap();
    assert_eq!((again.resumed, again.runs), (vec![(total, total)], 0));
    assert!(again.experiments.iter().all(|(_, ran, _)| *ran == 0));
    // Killed mid-write: the last line torn, one other line gone. Exactly those
    // two runs run again, and the result is unchanged.
    let mut kept: Vec<&str> = lines.lines().collect();
    kept.remove(0);
    let last = kept.pop().unwrap();
    let torn = format!("{}\n{}", kept.join("\n"), &last[..last.len() / 2]);
    // A run of another reproduction in the same file stays, unused.
    let foreign = last.replace("\"id\":\"", "\"id\":\"0");
    std::fs::write(&journal, format!("{foreign}\n{torn}")).unwrap();
    let resumed = std::sync::Mutex::new(Seen::default());
    assert_eq!(quick_into(dir.path(), &resumed), tables);
    let resumed = resumed.into_inner().unwrap();
    assert_eq!(
        (resumed.resumed, resumed.runs),
        (vec![(total - 2, total)], 2)
    );
    let after = std::fs::read_to_string(&journal).unwrap();
    assert_eq!(after.lines().count() as u64, total + 1);
    assert!(after.starts_with(&foreign));
}

/// A table shown beside another (`counted = false`, seed 003's hackbench on the
/// `v4.15` base) is graded but left out of the verdict line's counts: the line
/// is the same with a copy of a table added uncounted, and counts its rows twice
/// with the copy counted.
#[test]
fn an_uncounted_table_stays_out_of_the_verdict_counts() {
    let r = quick(&[4], 3, 2);
    let line = |r: &schedlab::experiment::reproduce::Reproduction| {
        r.text()
            .lines()
            .find(|l| l.starts_with("verdict:"))
            .expect("a verdict line")
            .to_string()
    };
    let before = line(&r);
    let mut beside = r.clone();
    let mut t = beside.tables[0].clone();
    assert!(t.counted && !t.rows.is_empty());
    t.counted = false;
    beside.tables.push(t.clone());
    assert_eq!(line(&beside), before);
    t.counted = true;
    let mut twice = r.clone();
    twice.tables.push(t);
    assert_ne!(line(&twice), before);
}
