//! `schedlab reproduce`: seed selection, bad input, and its report files.

use std::process::Command;

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_schedlab"))
}

#[test]
fn unknown_seeds_and_bad_options_exit_2() {
    for args in [
        vec!["reproduce", "005"],
        vec!["reproduce", "x"],
        vec!["reproduce", "4", "--runs", "0"],
        vec!["reproduce", "4", "--noise", "1.5"],
    ] {
        let o = bin().args(&args).output().unwrap();
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(
            err.contains("seed") || err.contains("--"),
            "{args:?}: {err}"
        );
    }
}

#[test]
fn one_seed_quick_prints_its_table_and_writes_reports() {
    let d = std::env::temp_dir().join(format!("schedlab-repro-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    let (md, html, json) = (d.join("r.md"), d.join("r.html"), d.join("r.json"));
    let o = bin()
        .args([
            "reproduce",
            "004",
            "--quick",
            "--runs",
            "2",
            "-q",
            "--report",
        ])
        .arg(&md)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains("Seed 004") && !out.contains("Seed 000"),
        "{out}"
    );
    assert!(out.contains("| Juno ") && out.contains("1.7465"), "{out}");
    assert_eq!(std::fs::read_to_string(&md).unwrap(), out);
    let o = bin()
        .args(["reproduce", "4", "--quick", "--runs", "2", "-q", "--report"])
        .arg(&html)
        .arg("--json")
        .arg(&json)
        .output()
        .unwrap();
    assert!(o.status.success());
    assert!(std::fs::read_to_string(&html).unwrap().contains("<table>"));
    let j: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(j["seeds"], serde_json::json!([4]));
    assert!(j["headlines"]
        .as_array()
        .unwrap()
        .iter()
        .all(|h| h["holds"] == true));
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn off_a_terminal_progress_is_printed_as_lines_and_out_resumes() {
    let d = std::env::temp_dir().join(format!("schedlab-repro-out-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    let args = ["reproduce", "4", "--quick", "--runs", "2", "--out"];
    // stderr is a pipe here: progress comes as plain lines, one per experiment and
    // one per tenth of the runs.
    let o = bin().args(args).arg(&d).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("reproduce: 0 of 8 runs already in"), "{err}");
    assert!(err.contains("reproduce: [1/2] 004-juno: 4 runs\n"), "{err}");
    assert!(
        err.contains("reproduce: [2/2] 004-hikey: 4 runs\n"),
        "{err}"
    );
    assert!(err.contains("reproduce: 8/8 runs ("), "{err}");
    let first = o.stdout;
    // Again: every run comes from the journal, same tables.
    let o = bin().args(args).arg(&d).output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("reproduce: 8 of 8 runs already in"), "{err}");
    assert!(
        err.contains("[1/2] 004-juno: 0 runs, 4 from the journal"),
        "{err}"
    );
    assert_eq!(o.stdout, first);
    // The verdict opens and closes the text.
    let out = String::from_utf8_lossy(&first);
    let verdict = out.lines().nth(1).unwrap();
    assert!(verdict.starts_with("verdict: "), "{out}");
    assert_eq!(out.lines().last(), Some(verdict));
    // --quiet: no progress at all.
    let o = bin().args(args).arg(&d).arg("-q").output().unwrap();
    assert_eq!(String::from_utf8_lossy(&o.stderr), "");
    let _ = std::fs::remove_dir_all(&d);
}
