//! `compare`: paired arms over the same seeds; results independent of the number of
//! worker threads; run-to-run noise only when asked for, and deterministic per seed.

use schedlab::config::Doc;
use schedlab::experiment::compare::{compare_detailed, ArmSpec, Better};
use schedlab::experiment::{run, Overrides, RunOpts, Scenario};
use std::path::Path;

fn scenario(extra: &str, arm: &ArmSpec) -> Scenario {
    let text = format!(
        "[machine]\npreset = \"xeon-e5-40\"\n[run]\nseed = 3\n{extra}\n[workload]\nkind = \"hackbench\"\ngroups = 1\nfds = 4\nloops = 20\n"
    );
    let doc = Doc::parse(&text, Path::new("t.toml")).unwrap();
    let ov = Overrides {
        sets: arm.sets.clone(),
        features: (!arm.features.is_empty()).then(|| arm.features.join(",")),
        seed: None,
        native_scheduler: false,
    };
    Scenario::from_doc(doc, &ov).unwrap()
}

fn cmp(extra: &str, jobs: usize) -> schedlab::experiment::compare::Comparison {
    let (a, b) = (ArmSpec::parse(""), ArmSpec::parse("SMT_BALANCE"));
    let (sa, sb) = (scenario(extra, &a), scenario(extra, &b));
    compare_detailed(&sa, &sb, &a, &b, 6, jobs, &|_| {})
        .unwrap()
        .0
}

#[test]
fn results_do_not_depend_on_jobs_and_arms_are_paired() {
    let one = serde_json::to_string(&cmp("noise = 0.05", 1)).unwrap();
    let two = serde_json::to_string(&cmp("noise = 0.05", 2)).unwrap();
    assert_eq!(one, two);
    let c = cmp("noise = 0.05", 2);
    assert_eq!(c.seeds, vec![3, 4, 5, 6, 7, 8]);
    let t = c.rows.iter().find(|r| r.name == "tool.time_s").unwrap();
    assert_eq!(t.better, Better::Lower);
    assert_eq!(t.a.n, 6);
    // Noise makes the runs differ; each run equals a single `run` of that seed.
    assert!(t.a.std > 0.0);
    let sa = scenario("noise = 0.05", &ArmSpec::parse(""));
    let r = run(&sa, 5, 0, &RunOpts::default()).unwrap().0;
    let t5 = r.workload.tool["time_s"];
    assert!(t5 >= t.a.min && t5 <= t.a.max);
}

#[test]
fn without_noise_a_deterministic_workload_repeats_exactly() {
    let c = cmp("", 2);
    let t = c.rows.iter().find(|r| r.name == "tool.time_s").unwrap();
    assert_eq!(t.a.std, 0.0);
    assert!(c.text().contains("tool.time_s (lower is better)"));
    assert!(c.csv().lines().any(|l| l.starts_with("tool.time_s,amean,")));
}

#[test]
fn noise_is_validated() {
    let text = "[machine]\npreset = \"juno-r0\"\n[run]\nnoise = 1.5\n[workload]\nkind = \"perf-pipe\"\nloops = 5\n";
    let doc = Doc::parse(text, Path::new("t.toml")).unwrap();
    let e = Scenario::from_doc(doc, &Overrides::default())
        .unwrap_err()
        .to_string();
    assert!(e.contains("t.toml:4") && e.contains("run.noise"), "{e}");
}
