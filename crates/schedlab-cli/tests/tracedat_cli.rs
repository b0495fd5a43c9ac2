//! `schedlab run --trace X.dat`: the file is the trace-cmd `trace.dat` the library
//! writes for the same run, byte for byte.

use schedlab::experiment::{self, Overrides, RunOpts, Scenario};
use std::path::Path;
use std::process::Command;

#[test]
fn run_trace_dat_writes_the_librarys_trace_dat() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let scenario = root.join("scenarios/demo.toml");
    let out = std::env::temp_dir().join(format!("schedlab-cli-{}.dat", std::process::id()));
    let o = Command::new(env!("CARGO_BIN_EXE_schedlab"))
        .args(["run", "-q", "--set", "run.duration_ms=20", "--trace"])
        .arg(&out)
        .arg(&scenario)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let got = std::fs::read(&out).unwrap();
    let _ = std::fs::remove_file(&out);

    let ov = Overrides {
        sets: vec!["run.duration_ms=20".to_string()],
        ..Default::default()
    };
    let sc = Scenario::load(&scenario, &ov).unwrap();
    let (_, log, tasks) =
        experiment::run_logged(&sc, sc.seed, 0, &RunOpts::default(), false).unwrap();
    let want = schedlab::metrics::tracedat::render(&log, &tasks, sc.machine.nr_cpus()).unwrap();
    assert!(got.starts_with(b"\x17\x08\x44tracing6\0"));
    assert!(
        got == want,
        "the CLI's trace.dat differs from the library's"
    );
}
