//! ftrace text export: re-parsed line by line, its events match the run's own
//! counters, timestamps never go back, and each `sched_switch` is printed by the
//! task it switches out.

mod common;

use common::{assert_counts_match_run, run_ftrace, scenario_of};
use std::collections::BTreeMap;

struct Line {
    pid: u32,
    cpu: usize,
    ts_ns: u64,
    event: String,
    fields: BTreeMap<String, String>,
}

/// Parse one tracefs line: `<comm>-<pid> (<tgid>) [<cpu>] <flags> <s>.<ns>: <event>: k=v ...`.
fn parse(l: &str) -> Line {
    let (head, rest) = l.split_once(") [").expect("tgid column");
    let task = head.split(" (").next().unwrap().trim();
    let pid: u32 = task.rsplit_once('-').unwrap().1.parse().unwrap();
    let (cpu, rest) = rest.split_once("] ").unwrap();
    let mut it = rest.splitn(3, ": ");
    let flags_ts = it.next().unwrap();
    let event = it.next().unwrap().to_string();
    let payload = it.next().unwrap_or("");
    let (flags, ts) = flags_ts.trim().split_once(' ').unwrap();
    assert_eq!(flags.len(), 5, "{l}");
    let (s, ns) = ts.trim().split_once('.').unwrap();
    assert_eq!(ns.len(), 9, "{l}");
    let fields = payload
        .split(' ')
        .filter_map(|kv| kv.split_once('='))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    Line {
        pid,
        cpu: cpu.parse().unwrap(),
        ts_ns: s.parse::<u64>().unwrap() * 1_000_000_000 + ns.parse::<u64>().unwrap(),
        event,
        fields,
    }
}

#[test]
fn ftrace_text_reparses_and_matches_the_run() {
    let text = "[machine]\npreset = \"xeon-e5-40\"\n[run]\nseed = 1\n[workload]\nkind = \"hackbench\"\ngroups = 1\nfds = 4\nloops = 20\n";
    let (r, trace) = run_ftrace(&scenario_of(text), 1);
    assert!(trace.starts_with("# tracer: nop\n"));
    assert!(trace.contains("#P:40"));
    let lines: Vec<Line> = trace
        .lines()
        .filter(|l| !l.starts_with('#'))
        .map(parse)
        .collect();
    let count = |e: &str| lines.iter().filter(|l| l.event == e).count() as u64;
    assert_counts_match_run(count, &r);
    assert!(count("sched_wakeup") + count("sched_wakeup_new") >= r.metrics.wakeups);
    assert!(
        lines.windows(2).all(|w| w[0].ts_ns <= w[1].ts_ns),
        "time order"
    );
    for l in &lines {
        assert!(l.cpu < 40);
        if l.event == "sched_switch" {
            let prev: u32 = l.fields["prev_pid"].parse().unwrap();
            assert_eq!(prev, l.pid, "switch printed by the outgoing task");
            assert!(["R", "R+", "S", "X"].contains(&l.fields["prev_state"].as_str()));
            assert!(l.fields.contains_key("next_comm") && l.fields.contains_key("next_prio"));
        }
        if l.event == "cpu_idle" {
            let st: u64 = l.fields["state"].parse().unwrap();
            assert!(st < 8 || st == 4_294_967_295);
        }
    }
}
