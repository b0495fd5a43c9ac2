//! Benchmark generators end to end: hackbench / perf-messaging / perf-pipe scenarios
//! run to completion with invariants checked; every task is created and exits; the
//! tool's time is recorded once; bad options are line-numbered errors.

use schedlab::config::Doc;
use schedlab::experiment::{self, Overrides, RunOpts, Scenario};
use std::path::Path;

fn scenario(machine: &str, body: &str) -> Result<Scenario, String> {
    let text = format!(
        "[machine]\npreset = \"{machine}\"\n[kernel]\npreset = \"v5.6\"\n[run]\nseed = 2\n[workload]\n{body}"
    );
    let doc = Doc::parse(&text, Path::new("t.toml")).map_err(|e| e.to_string())?;
    Scenario::from_doc(doc, &Overrides::default()).map_err(|e| e.to_string())
}

fn run(sc: &Scenario) -> experiment::result::RunResult {
    let opts = RunOpts {
        check: true,
        ..Default::default()
    };
    experiment::run(sc, sc.seed, 0, &opts).expect("runs").0
}

#[test]
fn hackbench_completes_on_two_machines() {
    for m in ["juno-r0", "xeon-e5-40"] {
        for extra in ["", "threads = true", "pipe = true"] {
            let sc = scenario(
                m,
                &format!("kind = \"hackbench\"\ngroups = 2\nfds = 3\nloops = 4\n{extra}\n"),
            )
            .unwrap();
            let r = run(&sc);
            // Completion means every receiver read all F·loops messages: the senders
            // write exactly that many, so messages are conserved.
            assert_eq!(
                format!("{:?}", r.workload.stop_reason),
                "Completed",
                "{m} {extra}"
            );
            // Parent + 2·F·G children.
            assert_eq!(r.tasks.len(), 13, "{m} {extra}");
            let t = &r.workload.metrics["time"];
            assert_eq!(t.summary.count, 1);
            assert!(t.summary.mean > 0.0);
            assert!(r
                .workload
                .tool_output
                .as_deref()
                .unwrap()
                .starts_with("Time: "));
        }
    }
}

#[test]
fn perf_tools_complete() {
    for body in [
        "kind = \"perf-messaging\"\ngroups = 1\nloops = 2\n",
        "kind = \"perf-pipe\"\nloops = 50\n",
        "kind = \"perf-pipe\"\nloops = 50\nthreaded = true\n",
    ] {
        let sc = scenario("juno-r0", body).unwrap();
        let r = run(&sc);
        assert_eq!(
            format!("{:?}", r.workload.stop_reason),
            "Completed",
            "{body}"
        );
        assert!(r
            .workload
            .tool_output
            .as_deref()
            .unwrap()
            .starts_with("Total time: "));
    }
    let r = run(&scenario("juno-r0", "kind = \"perf-pipe\"\nloops = 50\n").unwrap());
    let per = r.workload.tool["usecs_per_op"];
    let total = r.workload.tool["total_time_s"];
    assert!((per - total * 1e6 / 50.0).abs() < 1.0, "{per} {total}");
    // perf-pipe: parent + one forked worker; threaded: parent + two threads.
    let r = run(&scenario("juno-r0", "kind = \"perf-pipe\"\nloops = 5\n").unwrap());
    assert_eq!(r.tasks.len(), 2);
    let r = run(&scenario(
        "juno-r0",
        "kind = \"perf-pipe\"\nloops = 5\nthreaded = true\n",
    )
    .unwrap());
    assert_eq!(r.tasks.len(), 3);
}

#[test]
fn bad_options_are_line_numbered() {
    let e = scenario("juno-r0", "kind = \"hackbench\"\ngroups = 0\n").unwrap_err();
    assert!(e.contains(":9:") && e.contains("groups"), "{e}");
    let e = scenario("juno-r0", "kind = \"perf-pipe\"\nfds = 3\n").unwrap_err();
    assert!(e.contains(":9:") && e.contains("fds"), "{e}");
    let e = scenario("juno-r0", "kind = \"perf-messaging\"\nthread = 1\n").unwrap_err();
    assert!(e.contains(":9:"), "{e}");
}
