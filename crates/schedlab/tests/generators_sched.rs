//! schbench, schbench-new, adrestia, sysbench-threads and sysbench-cpu end to end,
//! and the behaviour-program vocabulary they use (shared words, lists, post/await,
//! spin locks, While/Each loops).

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
fn schbench_smoke() {
    let sc = scenario(
        "juno-r0",
        "kind = \"schbench\"\nmessage_threads = 1\nthreads = 1\nruntime = 1\n",
    )
    .unwrap();
    let r = run(&sc);
    println!("{}", r.workload.tool_output.as_deref().unwrap());
    println!("{:?}", r.workload.tool);
}

#[test]
fn sysbench_smoke() {
    for body in [
        "kind = \"sysbench-threads\"\nthreads = 2\nthread_yields = 10\nthread_locks = 1\ntime = 0.01\n",
        "kind = \"sysbench-cpu\"\nthreads = 2\ntime = 0.02\n",
        "kind = \"sysbench-cpu\"\ngroups = [{threads = 1, events = 5, cpus = [1]}, {threads = 1, events = 20}]\ntime = 0\n",
    ] {
        let sc = scenario("juno-r0", body).unwrap();
        let r = run(&sc);
        println!("{}", r.workload.tool_output.as_deref().unwrap());
        println!("{:?}", r.workload.tool);
    }
}

#[test]
fn adrestia_smoke() {
    for body in [
        "kind = \"adrestia\"\nloops = 50\n",
        "kind = \"adrestia\"\nloops = 20\nthreads = 3\ntest = \"periodic\"\n",
    ] {
        let sc = scenario("hikey960", body).unwrap();
        let r = run(&sc);
        println!("{}", r.workload.tool_output.as_deref().unwrap());
        println!("{:?} {:?}", r.workload.stop_reason, r.workload.tool);
    }
}
