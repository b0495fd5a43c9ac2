//! `schedlab validate host --quick`: the table has a row per benchmark (real numbers
//! or an explicit `skipped:`), the real runs stay short, and the JSON agrees.

mod common;

use common::ok_stdout;
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
    let out = ok_stdout(&o);
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
    assert_eq!(rows.len(), 7);
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
        vec![
            "validate", "host", "--kernel", "v9.9", "--quick", "--runs", "1",
        ],
    ] {
        let o = Command::new(env!("CARGO_BIN_EXE_schedlab"))
            .args(&args)
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(2), "{args:?}");
    }
}

fn tmp(name: &str) -> std::path::PathBuf {
    std::env::temp_dir().join(format!("schedlab-{}-{name}", std::process::id()))
}

/// `validate host --calibrate`: a second simulated column with its error.
#[test]
fn validate_host_quick_with_measured_costs_has_both_columns() {
    let json = tmp("validate-cal.json");
    let o = Command::new(env!("CARGO_BIN_EXE_schedlab"))
        .args([
            "validate",
            "host",
            "--quick",
            "--runs",
            "1",
            "--calibrate",
            "-q",
            "--json",
        ])
        .arg(&json)
        .output()
        .unwrap();
    let out = ok_stdout(&o);
    assert!(
        out.contains("sim, default costs") && out.contains("sim, measured costs"),
        "{out}"
    );
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert!(v["measured_costs"]
        .as_str()
        .unwrap()
        .contains("calibrated just now"));
    for r in v["rows"].as_array().unwrap() {
        assert!(
            r["skipped"].is_string()
                || (r["error_pct"].is_number() && r["error_measured_pct"].is_number()),
            "{r}"
        );
    }
    let _ = std::fs::remove_file(&json);
}

/// A malformed calibrated file is a bad input: exit 2, file and line.
#[test]
fn validate_with_a_malformed_machine_file_exits_2_with_the_line() {
    let bad = tmp("bad-cost.toml");
    let host = schedlab::machine::sysfs::import_host().unwrap();
    let text = schedlab::machine::file::machine_to_toml(&host)
        .replace("\nipi_send = 0\n", "\nipi_send = -3\n");
    assert!(text.contains("ipi_send = -3"));
    let line = text.lines().position(|l| l == "ipi_send = -3").unwrap() + 1;
    std::fs::write(&bad, text).unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_schedlab"))
        .args(["validate", "host", "--quick", "--runs", "1", "--machine"])
        .arg(&bad)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains(&format!("{}:{line}", bad.display())) && err.contains("-3"),
        "{err}"
    );
    let o = Command::new(env!("CARGO_BIN_EXE_schedlab"))
        .args(["calibrate", "host", "--runs", "0"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let _ = std::fs::remove_file(&bad);
}
