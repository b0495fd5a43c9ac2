//! `schedlab validate host --quick`: the table has a row per benchmark (real numbers
//! or an explicit `skipped:`), the real runs stay short, and the JSON agrees.

use std::process::Command;
use std::time::Instant;

#[test]
fn validate_host_quick_prints_rows_and_stays_short() {
    let json = std::env::temp_dir().join(format!("schedlab-validate-{}.json", std::process::id()));
    let t0 = Instant::now();
    let o = Command::new(env!("CARGO_BIN_EXE_schedlab"))
        .args(["validate", "host", "--quick", "--runs", "1", "-q", "--json"])
        .arg(&json)
        .output()
        .unwrap();
    let wall = t0.elapsed().as_secs_f64();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let out = String::from_utf8_lossy(&o.stdout);
    for b in [
        "hackbench process socket",
        "hackbench process pipe",
        "perf bench sched messaging",
        "perf bench sched pipe",
        "sysbench threads",
    ] {
        let row = out
            .lines()
            .find(|l| l.starts_with(b))
            .unwrap_or_else(|| panic!("no `{b}` row:\n{out}"));
        assert!(
            row.contains("skipped: ") || row.trim_end().ends_with('%'),
            "row neither compared nor skipped: {row}"
        );
    }
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let rows = v["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 6);
    let mut real_s = 0.0;
    for r in rows {
        assert!(
            r["skipped"].is_string() || r["error_pct"].is_number(),
            "{r}"
        );
        real_s += r["real_wall_s"].as_f64().unwrap();
    }
    // Quick mode: a few seconds of real runs (they take ~1 s on the 2-CPU CI VM).
    assert!(real_s < 10.0, "real runs took {real_s} s");
    assert!(wall < 120.0, "validate --quick took {wall} s");
    let _ = std::fs::remove_file(&json);
}

#[test]
fn validate_rejects_zero_runs_and_other_targets() {
    for args in [
        vec!["validate", "host", "--runs", "0"],
        vec!["validate", "juno-r0"],
    ] {
        let o = Command::new(env!("CARGO_BIN_EXE_schedlab"))
            .args(&args)
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(2), "{args:?}");
    }
}
