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

/// Parse one tracefs line as `trace_print_context` lays it out: the comm
/// right-aligned in 16 columns, `-`, the pid left-aligned in `pid_w` columns, a
/// space, `[<cpu>]`, the `nflags` latency flags, the timestamp `%5lu.%06lu`, then
/// `<event>: k=v ...`. Panics on any other layout.
fn parse(l: &str, pid_w: usize, nflags: usize) -> Line {
    assert_eq!(&l[16..17], "-", "{l}");
    let pid_col = &l[17..17 + pid_w];
    let pid: u32 = pid_col.trim_end().parse().expect(l);
    let rest = &l[17 + pid_w..];
    let rest = rest.strip_prefix(" [").expect(l);
    let (cpu, rest) = rest.split_once("] ").unwrap();
    assert_eq!(cpu.len(), 3, "{l}");
    let (flags, rest) = rest.split_at(nflags);
    assert!(flags.chars().all(|c| "dNhs.0123456789".contains(c)), "{l}");
    let mut it = rest.splitn(3, ": ");
    let ts = it.next().unwrap();
    assert!(ts.len() >= 13 && ts.starts_with(' '), "{l}");
    let event = it.next().unwrap().to_string();
    let payload = it.next().unwrap_or("");
    let (s, us) = ts.trim().split_once('.').unwrap();
    assert_eq!(us.len(), 6, "{l}");
    let fields = payload
        .split(' ')
        .filter_map(|kv| kv.split_once('='))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    Line {
        pid,
        cpu: cpu.parse().unwrap(),
        ts_ns: (s.parse::<u64>().unwrap() * 1_000_000 + us.parse::<u64>().unwrap()) * 1000,
        event,
        fields,
    }
}

#[test]
fn ftrace_text_reparses_and_matches_the_run() {
    // v5.6: four flags, `%-5d` pids; v6.6: five flags, `%-7d` pids.
    for (preset, pid_w, nflags, legend) in [
        (
            "v5.6",
            5,
            4,
            "#           TASK-PID   CPU#  ||||    TIMESTAMP  FUNCTION\n",
        ),
        (
            "v6.6",
            7,
            5,
            "#           TASK-PID     CPU#  |||||  TIMESTAMP  FUNCTION\n",
        ),
    ] {
        check_layout(preset, pid_w, nflags, legend);
    }
}

fn check_layout(preset: &str, pid_w: usize, nflags: usize, legend: &str) {
    let text = format!("[machine]\npreset = \"xeon-e5-40\"\n[kernel]\npreset = \"{preset}\"\n[run]\nseed = 1\n[workload]\nkind = \"hackbench\"\ngroups = 1\nfds = 4\nloops = 20\n");
    let (r, trace) = run_ftrace(&scenario_of(&text), 1);
    assert!(trace.starts_with("# tracer: nop\n"));
    assert!(trace.contains("#P:40"));
    assert!(trace.contains(legend), "{preset}");
    let lines: Vec<Line> = trace
        .lines()
        .filter(|l| !l.starts_with('#'))
        .map(|l| parse(l, pid_w, nflags))
        .collect();
    let n = format!("entries-in-buffer/entries-written: {0}/{0} ", lines.len());
    assert!(trace.contains(&n), "{preset}: the header counts the lines");
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
