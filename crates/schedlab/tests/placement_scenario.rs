//! Scenario-level checks of the placement path: on several machines (SMT x86,
//! asymmetric Arm with v5.6 SD_BALANCE_WAKE, POWER-like, non-SMT), the demo workload
//! runs with invariants checked after every event, and the decision trace shows
//! exactly one `place` per wakeup or fork, one `select_task_rq_fair` call per
//! placement that reaches the fair class, only known reasons, and allowed CPUs.

use schedlab::config::Doc;
use schedlab::experiment::{self, Overrides, RunOpts, Scenario};
use std::path::Path;

const REASONS: [&str; 10] = [
    "target_idle",
    "prev_idle",
    "recent_used",
    "idle_core",
    "idle_cpu",
    "idle_smt",
    "affine_fallback",
    "slow_path",
    "single_cpu",
    "eas",
];

fn demo_on(preset: &str) -> Scenario {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/demo.toml");
    let text = std::fs::read_to_string(&path).expect("demo scenario");
    let text = text
        .replace("preset = \"juno-r0\"", &format!("preset = \"{preset}\""))
        .replace("duration_ms = 200", "duration_ms = 30");
    let doc = Doc::parse(&text, &path).expect("parses");
    Scenario::from_doc(doc, &Overrides::default()).expect("valid")
}

fn field<'a>(line: &'a str, key: &str) -> &'a str {
    line.split_whitespace()
        .find_map(|kv| kv.strip_prefix(key).and_then(|v| v.strip_prefix('=')))
        .unwrap_or_else(|| panic!("no {key} in `{line}`"))
}

#[test]
fn one_placement_per_decision_on_several_machines() {
    for preset in ["xeon-e5-40", "juno-r0", "hikey960", "synquacer-24"] {
        let sc = demo_on(preset);
        let opts = RunOpts {
            check: true,
            trace: true,
            trace_window: None,
            ftrace: false,
            ftrace_layout: None,
            sched_tp: false,
        };
        let (_, trace) = experiment::run(&sc, sc.seed, 0, &opts).expect("runs");
        let trace = trace.unwrap();
        let (mut place, mut decisions, mut strf, mut single) = (0, 0, 0, 0);
        let mut reasons = std::collections::BTreeSet::new();
        for l in trace.lines() {
            let ev = l.split_whitespace().nth(1).unwrap();
            match ev {
                "place" if field(l, "kind") == "balance" => {
                    // Load-balancing migrations are not wakeup/fork placements.
                    let r = field(l, "reason");
                    assert!(
                        r == "active_balance" || r.starts_with("balance:"),
                        "{preset}: bad balance reason in `{l}`"
                    );
                }
                "place" => {
                    place += 1;
                    let r = field(l, "reason");
                    assert!(REASONS.contains(&r), "{preset}: unknown reason in `{l}`");
                    if r == "single_cpu" {
                        single += 1;
                    }
                    reasons.insert(r.to_string());
                    let cpu: usize = field(l, "cpu").parse().unwrap();
                    assert!(cpu < sc.machine.nr_cpus());
                }
                "waking" | "fork" => decisions += 1,
                "func" if l.contains("select_task_rq_fair") => strf += 1,
                _ => {}
            }
        }
        assert!(place > 0, "{preset}: no placements");
        assert_eq!(place, decisions, "{preset}: one place per wakeup/fork");
        assert_eq!(
            strf,
            place - single,
            "{preset}: one select_task_rq_fair per placement"
        );
        // The asymmetric machines take the slow path for wakeups that may not be
        // affine (and for forks); every machine forks through it.
        assert!(reasons.contains("slow_path"), "{preset}: {reasons:?}");
    }
}
