//! Output paths that cannot be written fail at once, with exit status 2 and the path
//! named, before any simulation; and a sweep directory of another experiment is not
//! resumed into.

mod common;
use common::*;

use std::ffi::OsStr;
use std::fmt::Debug;
use std::path::Path;
use std::time::{Duration, Instant};

fn entries(d: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(d)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

/// Run `args`, expect exit status 2 within a few seconds (the simulations asked for
/// would take minutes) and a message naming `path`; return the message.
fn fails_fast<S: AsRef<OsStr> + Debug>(args: &[S], path: &Path) -> String {
    let t0 = Instant::now();
    let o = bin().args(args).output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
    assert!(
        t0.elapsed() < Duration::from_secs(20),
        "{args:?} simulated before checking its output path"
    );
    assert!(
        err.contains(&path.display().to_string()),
        "{args:?}: the message does not name {}: {err}",
        path.display()
    );
    err
}

#[test]
fn unwritable_output_paths_fail_before_simulating() {
    let d = tmpdir("out", "paths");
    let demo = root().join("scenarios/demo.toml");
    let demo = demo.to_str().unwrap();
    let long = "run.duration_ms=100000000";
    let missing = d.join("no/such/dir/out.json");
    let m = missing.to_str().unwrap();
    let dir = d.to_str().unwrap();

    let e = fails_fast(&["run", demo, "-q", "--set", long, "--json", m], &missing);
    assert!(e.contains("does not exist"), "{e}");
    let e = fails_fast(&["run", demo, "-q", "--set", long, "--json", dir], &d);
    assert!(e.contains("is a directory"), "{e}");
    fails_fast(&["run", demo, "-q", "--set", long, "--trace", m], &missing);

    // A comparison of 20 long paired runs, writing OPT to `m`.
    let compare = |opt: &'static str| {
        [
            "compare",
            demo,
            "--a",
            "",
            "--b",
            "NO_TTWU_QUEUE",
            "-q",
            "--set",
            long,
            opt,
            m,
        ]
    };
    for opt in ["--csv", "--json", "--report"] {
        fails_fast(&compare(opt), &missing);
    }
    // The traces of a comparison are X.a.EXT and X.b.EXT.
    fails_fast(&compare("--trace"), &d.join("no/such/dir/out.a.json"));

    fails_fast(&["reproduce", "-q", "--json", m], &missing);
    fails_fast(&["reproduce", "-q", "--report", m], &missing);

    let file = d.join("plain-file");
    std::fs::write(&file, "x").unwrap();
    let under_file = file.join("out");
    // A two-point sweep of the demo into `--out` and then `rest`.
    let sweep = |rest: &[&str]| -> Vec<String> {
        [
            "sweep",
            demo,
            "--grid",
            "machine.preset=juno-r0,hikey960",
            "-q",
            "--out",
        ]
        .iter()
        .chain(rest)
        .map(|a| a.to_string())
        .collect()
    };
    fails_fast(&sweep(&[under_file.to_str().unwrap()]), &under_file);
    let out = d.join("sweep-out");
    fails_fast(&sweep(&[out.to_str().unwrap(), "--report", m]), &missing);
    // The checks created nothing.
    assert_eq!(entries(&d), vec!["plain-file"]);
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn a_sweep_does_not_resume_into_another_experiments_directory() {
    let d = tmpdir("out", "resume");
    let demo = root().join("scenarios/demo.toml");
    let out = d.join("out");
    let sweep = |grid: &str| {
        bin()
            .arg("sweep")
            .arg(&demo)
            .args(["--grid", grid, "-q", "--jobs", "1", "--out"])
            .arg(&out)
            .output()
            .unwrap()
    };
    let o = sweep("machine.preset=juno-r0,hikey960");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let before = std::fs::read_to_string(out.join("results.jsonl")).unwrap();
    let o = sweep("machine.preset=juno-r0,pixel6");
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("results.jsonl") && err.contains("--out"),
        "{err}"
    );
    assert_eq!(
        std::fs::read_to_string(out.join("results.jsonl")).unwrap(),
        before
    );
    std::fs::remove_dir_all(&d).unwrap();
}
