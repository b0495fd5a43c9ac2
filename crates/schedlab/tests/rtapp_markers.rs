//! rt-app's ftrace markers (`global.ftrace`; rt-app's `log_ftrace` calls, as LISA's
//! `lisa.analysis.rta` reads them) on `tests/rtapp/quad.toml` (4 CPUs of capacity
//! 1024, a 1 µs WFI state), read back from the trace records: which lines each
//! thread writes in which order, and what their numbers say.

use schedlab::config::Doc;
use schedlab::experiment::{self, Overrides, RunOpts, Scenario};
use schedlab::metrics::ftrace::{for_each_record, FieldVal};
use std::collections::BTreeMap;
use std::path::Path;

/// One `print` record: time (ns), the writer's name and the line.
struct Line {
    ts: u64,
    who: String,
    text: String,
}

impl Line {
    fn num(&self, k: &str) -> i64 {
        self.text
            .split(' ')
            .find_map(|kv| kv.strip_prefix(k).and_then(|v| v.strip_prefix('=')))
            .unwrap_or_else(|| panic!("no {k} in {}", self.text))
            .parse()
            .unwrap()
    }
}

fn scenario(json_text: &str) -> Scenario {
    let dir = tempfile::tempdir().unwrap().keep();
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/rtapp/quad.toml"),
        dir.join("quad.toml"),
    )
    .unwrap();
    std::fs::write(dir.join("m.json"), json_text).unwrap();
    let text = "[machine]\nfile = \"quad.toml\"\n[run]\nseed = 3\n[workload]\nkind = \"rtapp\"\nfile = \"m.json\"\n";
    Scenario::from_doc(
        Doc::parse(text, &dir.join("t.toml")).unwrap(),
        &Overrides::default(),
    )
    .unwrap()
}

/// Every trace record of a run of `json_text`, as (event, line or fields), and
/// the `print` lines.
fn run(json_text: &str) -> (Vec<(String, String)>, Vec<Line>) {
    let sc = scenario(json_text);
    let opts = RunOpts {
        check: true,
        ..Default::default()
    };
    let (_, log, tasks) = experiment::run_logged(&sc, sc.seed, 0, &opts, false).unwrap();
    let (mut all, mut prints) = (vec![], vec![]);
    for_each_record(&log, &tasks, sc.machine.nr_cpus(), |r| {
        let f: Vec<String> = r.fields.iter().map(|(k, v)| format!("{k}={v}")).collect();
        all.push((format!("{} {} {}", r.ts, r.cpu, r.event), f.join(" ")));
        if r.event == "print" {
            let buf = r.fields.iter().find(|(k, _)| *k == "buf").unwrap();
            let FieldVal::Str(text) = &buf.1 else {
                panic!()
            };
            prints.push(Line {
                ts: r.ts,
                who: tasks[r.pid as usize].name.clone(),
                text: text.clone(),
            });
        }
    });
    (all, prints)
}

fn markers_json() -> String {
    std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/rtapp/markers.json"))
        .unwrap()
}

/// The lines rt-app's `thread_body` writes for a thread whose task loop runs
/// `thread_loops` times over `phases` (per phase: its loop count and its events'
/// `type:desc`).
fn expected(thread_loops: u32, phases: &[(u32, &[&str])]) -> Vec<String> {
    let mut v = vec!["rtapp_task: event=start".to_string()];
    for tl in 0..thread_loops {
        for (p, (loops, events)) in phases.iter().enumerate() {
            for pl in 0..*loops {
                let at = format!("thread_loop={tl} phase={p} phase_loop={pl}");
                v.push(format!("rtapp_loop: event=start {at}"));
                for (id, e) in events.iter().enumerate() {
                    let (ty, desc) = e.split_once(':').unwrap();
                    v.push(format!("rtapp_event: id={id} type={ty} desc={desc}"));
                }
                v.push(format!("rtapp_loop: event=end {at}"));
                v.push("rtapp_stats".to_string());
            }
        }
    }
    v.push("rtapp_task: event=end".to_string());
    v
}

#[test]
fn each_thread_writes_rt_apps_lines_in_rt_apps_order() {
    let (_, prints) = run(&markers_json());
    let mut by: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    for l in &prints {
        let t = if l.text.starts_with("rtapp_stats") {
            "rtapp_stats".to_string()
        } else {
            l.text.clone()
        };
        by.entry(l.who.as_str()).or_default().push(t);
    }
    // Thread 0 (`a`, the first created) reads t_zero and says so before its start.
    let a = expected(
        2,
        &[
            (2, &["6:run", "11:timer:unique"]),
            (1, &["19:runtime", "5:sleep"]),
        ],
    );
    let clock_ref = by.get_mut("a").unwrap().remove(0);
    assert!(
        clock_ref.starts_with("rtapp_main: event=clock_ref data="),
        "{clock_ref}"
    );
    assert_eq!(by["a"], a);
    // A one-phase task with a `loop`: one task iteration, the phase repeated.
    assert_eq!(by["b"], expected(1, &[(3, &["6:run", "5:sleep"])]));
    assert_eq!(
        by["c"],
        expected(1, &[(1, &["6:run", "10:timer0:c0", "10:timer1:c1"])])
    );
    // The main task: start first, end once every thread has ended.
    assert_eq!(
        by["rt-app"],
        ["rtapp_main: event=start", "rtapp_main: event=end"]
    );
    assert_eq!(prints[0].text, "rtapp_main: event=start");
    assert_eq!(prints.last().unwrap().text, "rtapp_main: event=end");
    let ends = prints
        .iter()
        .filter(|l| l.text == "rtapp_task: event=end")
        .count();
    assert_eq!(ends, 3);
}

/// `rtapp_stats` after each iteration: `period` is the iteration's wall time (its
/// loop markers bracket it, within the marker writes), `run` the measured time of
/// its run events (here on an otherwise idle CPU of capacity 1024: what was asked,
/// a `runtime` rounded up to its 32 µs chunks, at most 1 µs more), `c_run`/`c_period` what the file asks, `wu_lat` the timers'
/// lateness summed (the 50 µs timer slack and the wakeup, per timer), `slack` what was left of the
/// period. `clock_ref` is t_zero in µs, just before the line is written.
#[test]
fn stats_and_clock_ref_carry_rt_apps_numbers() {
    let (_, prints) = run(&markers_json());
    let cr = prints
        .iter()
        .find(|l| l.text.starts_with("rtapp_main: event=clock_ref"))
        .unwrap();
    let t_zero_us = cr.num("data") as u64;
    assert!(
        t_zero_us * 1000 <= cr.ts && cr.ts - t_zero_us * 1000 < 5_000,
        "{}",
        cr.text
    );
    for who in ["a", "b", "c"] {
        let mine: Vec<&Line> = prints.iter().filter(|l| l.who == who).collect();
        let mut start = None;
        let mut n = 0;
        for (i, l) in mine.iter().enumerate() {
            if l.text.starts_with("rtapp_loop: event=start") {
                start = Some(l.ts);
            }
            if !l.text.starts_with("rtapp_stats") {
                continue;
            }
            n += 1;
            let end = mine[i - 1];
            assert!(end.text.starts_with("rtapp_loop: event=end"));
            let wall_us = ((end.ts - start.unwrap()) / 1000) as i64;
            let period = l.num("period");
            assert!(
                (period - wall_us).abs() <= 3,
                "{who}: {} vs {wall_us} µs",
                l.text
            );
            // `runtime` spins in 32 µs chunks until it has lasted its value.
            let (run, c_run) = (l.num("run"), l.num("c_run"));
            let asked = if end.text.contains("phase=1") {
                (c_run + 31) / 32 * 32
            } else {
                c_run
            };
            assert!(run >= asked && run <= asked + 1, "{who}: {}", l.text);
            let timed = who == "c" || end.text.contains("phase=0") && who == "a";
            if timed {
                // Summed over the iteration's timers (c has two).
                let timers = if who == "c" { 2 } else { 1 };
                let wu = l.num("wu_lat");
                assert!(
                    (50 * timers..=60 * timers).contains(&wu),
                    "{who}: {}",
                    l.text
                );
                assert!(l.num("slack") > 0, "{who}: {}", l.text);
            } else {
                assert_eq!(
                    (l.num("wu_lat"), l.num("slack"), l.num("c_period")),
                    (0, 0, 0)
                );
            }
        }
        assert_eq!(
            n,
            [6, 3, 1][["a", "b", "c"].iter().position(|w| *w == who).unwrap()]
        );
    }
    let c = prints
        .iter()
        .find(|l| l.who == "c" && l.text.starts_with("rtapp_stats"))
        .unwrap();
    assert_eq!((c.num("c_period"), c.num("c_run")), (8000, 1000));
    // The last timer's slack: c1's expiry (t_zero + 5 ms) less its arrival, just
    // after c0's expiry (t_zero + 3 ms) and its wakeup.
    assert!((1930..=1950).contains(&c.num("slack")), "{}", c.text);
}

/// With `cumulative_slack`, `slack` sums the iteration's timers: c0's (its
/// expiry 3 ms after t_zero less an arrival after the start barrier and the 1 ms
/// run) on top of c1's, which a run without it reports alone. The schedules are
/// the same.
#[test]
fn cumulative_slack_sums_the_iterations_timers() {
    let text = markers_json();
    let stats = |json: &str| {
        let (all, prints) = run(json);
        let s = prints
            .into_iter()
            .find(|l| l.who == "c" && l.text.starts_with("rtapp_stats"))
            .unwrap();
        let sched: Vec<_> = all
            .into_iter()
            .filter(|(e, _)| !e.ends_with("print"))
            .collect();
        (s.num("slack"), sched)
    };
    let (last, s1) = stats(&text);
    let cum_json = text.replace(r#""ftrace""#, r#""cumulative_slack": true, "ftrace""#);
    let (sum, s2) = stats(&cum_json);
    assert_eq!(s1, s2);
    assert!((1900..2000).contains(&(sum - last)), "{sum} - {last}");
}

/// The markers are opt-in: without `ftrace`, with `"none"` or `""`, the run has no
/// `print` record and every other record is the same; one category writes only its
/// lines.
#[test]
fn markers_are_opt_in_and_by_category() {
    let text = markers_json();
    let with = |v: &str| text.replace(r#""main,task,loop,event,stats""#, v);
    let (base, p0) = run(&text.replace(r#", "ftrace": "main,task,loop,event,stats""#, ""));
    assert!(p0.is_empty());
    for v in [r#""none""#, r#""""#, "false"] {
        let (all, p) = run(&with(v));
        assert!(p.is_empty(), "{v}");
        assert_eq!(all, base, "{v}");
    }
    let (_, p) = run(&with(r#""loop""#));
    assert!(!p.is_empty());
    assert!(p.iter().all(|l| l.text.starts_with("rtapp_loop:")));
    assert_eq!(p.len(), 2 * (6 + 3 + 1));
}
