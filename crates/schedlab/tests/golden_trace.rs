//! Golden decision traces: small scenarios whose every scheduling decision is pinned.
//! A change that alters any decision fails here; update deliberately with
//! `UPDATE_GOLDEN=1 cargo test --test golden_trace` and review the diff.

use schedlab::experiment::{self, Overrides, RunOpts, Scenario};
use std::path::{Path, PathBuf};

fn check(name: &str) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden");
    let sc = Scenario::load(&dir.join(format!("{name}.toml")), &Overrides::default())
        .expect("scenario loads");
    let opts = RunOpts {
        check: true,
        trace: true,
        trace_window: None,
        ftrace: false,
        ftrace_layout: None,
        sched_tp: false,
    };
    let (_, trace) = experiment::run(&sc, sc.seed, 0, &opts).expect("run succeeds");
    let trace = trace.expect("trace requested");
    let path: PathBuf = dir.join(format!("{name}.trace"));
    if std::env::var_os("UPDATE_GOLDEN").is_some() {
        std::fs::write(&path, &trace).expect("write golden");
        return;
    }
    let want =
        std::fs::read_to_string(&path).expect("golden file exists (UPDATE_GOLDEN=1 creates it)");
    if want != trace {
        let diff = want
            .lines()
            .zip(trace.lines())
            .enumerate()
            .find(|(_, (a, b))| a != b)
            .map(|(i, (a, b))| {
                format!(
                    "first difference at line {}:\n  golden: {a}\n  now:    {b}",
                    i + 1
                )
            })
            .unwrap_or_else(|| {
                format!(
                    "lengths differ: golden {} lines, now {}",
                    want.lines().count(),
                    trace.lines().count()
                )
            });
        panic!("decision trace of `{name}` changed; {diff}");
    }
}

#[test]
fn pingpong_two_cpus() {
    check("pingpong");
}
