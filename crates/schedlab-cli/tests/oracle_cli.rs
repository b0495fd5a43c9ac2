//! `schedlab oracle` without QEMU: the recorded suite checked from its bundles
//! (text, Markdown, JSON, HTML), a kept guest run compared again, and the refusals a
//! user meets before any boot (exit status 2, naming what is wrong).

mod common;

use common::ok_stdout;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn schedlab(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_schedlab"))
        .current_dir(root())
        .args(args)
        .output()
        .unwrap()
}

fn tmp(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("schedlab-oracle-cli-{}-{name}", std::process::id()))
}

#[test]
fn the_recorded_suite_for_one_topology_and_kernel() {
    let (md, json, html) = (tmp("s.md"), tmp("s.json"), tmp("s.html"));
    let o = schedlab(&[
        "oracle",
        "suite",
        "--topology",
        "1s8c1t",
        "--kernel",
        "5.10",
        "--markdown",
        md.to_str().unwrap(),
        "--json",
        json.to_str().unwrap(),
        "--report",
        html.to_str().unwrap(),
    ]);
    let out = ok_stdout(&o);
    assert!(out.contains("== 1s8c1t / 5.10 (5.10.0-32-amd64)"), "{out}");
    assert!(
        out.contains("sched domains: every CPU's chain matches"),
        "{out}"
    );
    for case in ["hog-spread", "fork-storm", "pingpong-pairs"] {
        assert!(
            out.contains(&format!(
                "-- {case} (v5.10 on the guest sysfs + costs calibrated in the guest)"
            )),
            "{case}"
        );
    }
    // Only the requested boot.
    assert!(!out.contains("6.12"), "{out}");
    let md = std::fs::read_to_string(&md).unwrap();
    assert!(md.contains("| 1s8c1t | 5.10 | fork-storm |"), "{md}");
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let boots = v.as_array().unwrap();
    assert_eq!(boots.len(), 1);
    assert_eq!(boots[0]["cases"].as_array().unwrap().len(), 3);
    assert_eq!(boots[0]["domains"]["matching_cpus"], 8);
    let html = std::fs::read_to_string(&html).unwrap();
    assert!(html.starts_with("<!DOCTYPE html>"));
    assert!(
        html.contains("<h3>pingpong-pairs — simulated as v5.10"),
        "no case heading"
    );
    assert!(html.contains("<code>wakeup.class.prev</code>"));
    for p in [tmp("s.md"), tmp("s.json"), tmp("s.html")] {
        let _ = std::fs::remove_file(p);
    }
}

#[test]
fn a_kept_guest_run_is_compared_again() {
    let dir = tmp("run");
    let _ = std::fs::remove_dir_all(&dir);
    schedlab::experiment::oracle::guest::unpack(
        &root().join("crates/schedlab/tests/data/oracle/1s4c2t-6.12.tar.gz"),
        &dir,
    )
    .unwrap();
    let json = tmp("c.json");
    let o = Command::new(env!("CARGO_BIN_EXE_schedlab"))
        .current_dir(root())
        .args(["oracle", "compare"])
        .arg(&dir)
        .args(["scenarios/oracle/hog-spread.toml", "--json"])
        .arg(&json)
        .output()
        .unwrap();
    let out = ok_stdout(&o);
    assert!(
        out.contains("== hog-spread on a real 6.12.95+deb12-amd64 (guest 6.12.95+deb12-amd64), simulated as v6.12"),
        "{out}"
    );
    assert!(
        out.contains("spread.core.ms"),
        "hogs are released from CPU 0: {out}"
    );
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(v[0]["outcome"]["real"]["spread"]["released"], true);
    assert_eq!(v[0]["outcome"]["real"]["tasks"], 8);
    // The wrong job name says which directory lacks it.
    let o = Command::new(env!("CARGO_BIN_EXE_schedlab"))
        .current_dir(root())
        .args(["oracle", "compare"])
        .arg(&dir)
        .args(["scenarios/oracle/hog-spread.toml", "--job", "nope"])
        .output()
        .unwrap();
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("jobs/nope/trace.txt"));
    let _ = std::fs::remove_dir_all(&dir);
    let _ = std::fs::remove_file(&json);
}

#[test]
fn a_boot_that_fails_to_record_keeps_the_earlier_bundle_and_fails_the_command() {
    // A cache path under /dev/null cannot be created: the boot fails before QEMU.
    let data = tmp("data");
    let _ = std::fs::remove_dir_all(&data);
    std::fs::create_dir_all(&data).unwrap();
    let bundle = "1s8c1t-5.10.tar.gz";
    let committed = root()
        .join("crates/schedlab/tests/data/oracle")
        .join(bundle);
    std::fs::copy(&committed, data.join(bundle)).unwrap();
    let o = schedlab(&[
        "oracle",
        "suite",
        "--record",
        "--topology",
        "1s8c1t",
        "--kernel",
        "5.10",
        "--cache",
        "/dev/null/cache",
        "--data",
        data.to_str().unwrap(),
    ]);
    assert_eq!(
        o.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(e.contains("oracle suite: 1s8c1t 5.10: not recorded"), "{e}");
    assert!(e.contains("recording failed for: 1s8c1t 5.10"), "{e}");
    // The earlier bundle is untouched and still checked.
    assert_eq!(
        std::fs::read(data.join(bundle)).unwrap(),
        std::fs::read(&committed).unwrap()
    );
    assert!(String::from_utf8_lossy(&o.stdout).contains("== 1s8c1t / 5.10"));
    let _ = std::fs::remove_dir_all(&data);
}

#[test]
fn refusals_before_any_boot_exit_2() {
    // A machine QEMU's x86 guests cannot be (asymmetric capacities).
    let o = schedlab(&[
        "oracle",
        "run",
        "scenarios/eas-juno.toml",
        "--kernel",
        "5.10",
    ]);
    assert_eq!(
        o.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(e.contains("cannot be a QEMU x86 guest"), "{e}");
    assert!(e.contains("--topology"), "{e}");
    // A workload with no real program in the guest.
    let o = schedlab(&[
        "oracle",
        "run",
        "scenarios/sysbench-threads.toml",
        "--topology",
        "1s2c2t",
        "--kernel",
        "5.10",
    ]);
    assert_eq!(o.status.code(), Some(2));
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(e.contains("sysbench-threads.toml"), "{e}");
    assert!(e.contains("rtapp, hackbench"), "{e}");
    // An unknown kernel, a bad topology spec, a topology not in the suite.
    let o = schedlab(&[
        "oracle",
        "run",
        "scenarios/oracle/hog-spread.toml",
        "--kernel",
        "4.19",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--kernel 4.19"));
    let o = schedlab(&[
        "oracle",
        "run",
        "scenarios/oracle/hog-spread.toml",
        "--topology",
        "2x4",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--topology 2x4"));
    let o = schedlab(&["oracle", "suite", "--topology", "9s9c"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("1s4c2t"));
}

/// Issue 39: a host without the oracle's tools (here: an empty PATH) is told what
/// to install, as an input error (`error:`, exit 2), not an internal one; so is
/// `validate host` without any of its real benchmarks.
#[test]
fn missing_host_tools_are_the_hosts_setup_exit_2() {
    let empty = tmp("empty-path");
    std::fs::create_dir_all(&empty).unwrap();
    let run = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_schedlab"))
            .current_dir(root())
            .env("PATH", &empty)
            .args(args)
            .output()
            .unwrap()
    };
    for args in [
        &[
            "oracle",
            "run",
            "scenarios/oracle/hog-spread.toml",
            "--kernel",
            "5.10",
        ][..],
        &[
            "oracle",
            "suite",
            "--record",
            "--topology",
            "1s4c2t",
            "--kernel",
            "5.10",
        ][..],
    ] {
        let o = run(args);
        let e = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {e}");
        assert!(e.starts_with("error: the QEMU oracle needs"), "{e}");
        assert!(
            e.contains("`qemu-system-x86_64` (Debian package qemu-system-x86)"),
            "{e}"
        );
        assert!(e.contains("sh tools/oracle-deps.sh"), "{e}");
        assert!(!e.contains("internal error"), "{e}");
    }
    // The sched_ext kit not built: the same, naming the script that builds it.
    let o = Command::new(env!("CARGO_BIN_EXE_schedlab"))
        .current_dir(root())
        .env("SCHEDLAB_SCX_KIT", tmp("no-kit"))
        .args([
            "oracle",
            "run",
            "scenarios/oracle/hog-spread.toml",
            "--kernel",
            "6.12-scx",
        ])
        .output()
        .unwrap();
    let e = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{e}");
    assert!(e.contains("tools/oracle-scx/build-kit.sh"), "{e}");
    let o = run(&["validate", "host", "--quick", "--runs", "1"]);
    let e = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{e}");
    assert!(
        e.contains("apt-get install rt-tests linux-perf sysbench"),
        "{e}"
    );
    let _ = std::fs::remove_dir_all(&empty);
}
